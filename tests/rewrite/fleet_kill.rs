//! A fleet export killed (SIGKILL) at random moments: after each kill,
//! DuckDB reading the dataset through its manifest gives the answer of
//! before the run or of after it, never a mixture; the next export then
//! removes what the dead one left and reaches the after answer, with no
//! data file the manifest does not list.
//!
//! Two kills here (about ten seconds); `scripts/check-export-kills.sh` runs a
//! dozen or more (DENDRO_EXPORT_KILLS). The seed of the moments is printed
//! and taken from DENDRO_EXPORT_KILL_SEED when set, to replay a failure.
#![cfg(feature = "cli")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::skip;
use crate::fleet_engines::{as_totals, dendro, engine, fleet, has_module, python, Totals};

/// A copy of the directory tree `from` at `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Rows and ts range per source and stream, as DuckDB reads them.
fn answer(python: &str, dataset: &Path, streams: &serde_json::Value) -> Totals {
    as_totals(&engine(python, "duckdb", dataset, streams))
}

/// Data files below `stream=` directories, relative.
fn data_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if entry.file_type().unwrap().is_dir() {
                if relative.starts_with("stream=") {
                    todo.push(path);
                }
            } else if relative.starts_with("stream=") {
                out.push(relative);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_killed_export_leaves_the_answer_before_or_after_never_a_mixture() {
    let python = python();
    if !has_module(&python, "duckdb") {
        let why = format!("{python} cannot import duckdb (scripts/setup-test.sh)");
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        skip("a_killed_export", &why);
        return;
    }
    let kills: usize = std::env::var("DENDRO_EXPORT_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(2);
    let mut seed: u64 = std::env::var("DENDRO_EXPORT_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("DENDRO_EXPORT_KILL_SEED={seed}");
    let dir = tempfile::tempdir().unwrap();
    let (archives, _held) = fleet(dir.path());
    let paths: Vec<&str> = archives.iter().map(|a| a.to_str().unwrap()).collect();
    let export = |inputs: &[&str], out: &Path| -> Vec<String> {
        let mut args = vec!["export".to_string()];
        args.extend(inputs.iter().map(|s| s.to_string()));
        args.extend(["--out".into(), out.to_str().unwrap().into()]);
        args.extend(["--target-size".into(), "64K".into()]);
        args
    };

    // Before: the fixtures and one demo archive; after: all of them.
    let before_dir = dir.path().join("before");
    let args = export(&paths[..3], &before_dir);
    dendro(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let after_dir = dir.path().join("after");
    copy_tree(&before_dir, &after_dir);
    let run = export(&paths, &after_dir);
    let started = Instant::now();
    dendro(&run.iter().map(String::as_str).collect::<Vec<_>>());
    let took = started.elapsed();
    let manifest = dendro::rewrite::read_manifest(&after_dir).unwrap();
    let streams: serde_json::Value = manifest
        .files
        .iter()
        .map(|f| (f.stream.clone(), serde_json::json!(["", null])))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let before = answer(&python, &before_dir, &streams);
    let after = answer(&python, &after_dir, &streams);
    assert_ne!(before, after, "the second run adds nothing to tell apart");

    let (mut saw_before, mut saw_after) = (0, 0);
    for k in 0..kills {
        let target = dir.path().join(format!("killed{k}"));
        copy_tree(&before_dir, &target);
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let at = Duration::from_nanos((seed >> 33) % (took.as_nanos() as u64 + 1));
        let run = export(&paths, &target);
        let mut child = Command::new(env!("CARGO_BIN_EXE_dendro"))
            .args(&run)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(at);
        let _ = child.kill();
        child.wait().unwrap();
        let got = answer(&python, &target, &streams);
        if got == before {
            saw_before += 1;
        } else if got == after {
            saw_after += 1;
        } else {
            panic!("kill {k} at {at:?}: a mixture:\n{got:?}\nbefore {before:?}\nafter {after:?}");
        }
        // The next run completes it, and leaves nothing unlisted.
        // (Its cursors are those of the uninterrupted run: the same rows.)
        dendro(&run.iter().map(String::as_str).collect::<Vec<_>>());
        let resumed = dendro::rewrite::read_manifest(&target).unwrap();
        assert_eq!(resumed.cursors, manifest.cursors, "kill {k} at {at:?}");
        let rows = |m: &dendro::rewrite::Manifest| m.files.iter().map(|f| f.rows).sum::<u64>();
        assert_eq!(rows(&resumed), rows(&manifest), "kill {k} at {at:?}");
        let mut listed: Vec<String> = resumed.files.into_iter().map(|f| f.path).collect();
        listed.sort();
        assert_eq!(data_files(&target), listed, "kill {k} at {at:?}");
        assert!(!target.join("_staging").exists(), "kill {k} at {at:?}");
        std::fs::remove_dir_all(&target).unwrap();
    }
    println!("{kills} kills in a run of {took:?}: {saw_before} before, {saw_after} after");
}

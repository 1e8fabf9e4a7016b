//! Paths built from an archive's contents (a source's uuid, stream names)
//! stay inside the export's directory whatever text the file holds, and
//! the temporary files of a rewrite that was killed are cleaned up by the
//! next run without touching those of a run still going.

use std::path::{Path, PathBuf};

use dendro::rewrite::{copy, export, CopySpec};
use dendro::Archive;

use crate::support::*;

/// Every file (not directory) below `dir`, recursively.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                todo.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

/// Stream names that would be a path, a parent, nothing, or too long for
/// one directory name if used as they are.
fn hostile_streams() -> Vec<String> {
    vec![
        "../../outside".into(),
        "a/b".into(),
        ".".into(),
        "..".into(),
        "".into(),
        "x%2F".into(),
        "x/".into(),
        "stream=y".into(),
        "é".repeat(150),
        format!("{}1", "é".repeat(150)),
    ]
}

/// One archive, one source per given uuid (set verbatim with SQL, as a
/// foreign or damaged file could hold it), each with one segment in every
/// hostile stream.
fn hostile_archive(path: &Path, uuids: &[Option<&str>]) {
    let streams = hostile_streams();
    build(path, "first", |tx, id| {
        let mut ids = vec![id];
        for _ in 1..uuids.len() {
            ids.push(
                tx.insert_source(&Default::default(), &Default::default(), 5)
                    .unwrap(),
            );
        }
        for id in ids {
            for (i, name) in streams.iter().enumerate() {
                tx.insert_segment(
                    id,
                    name,
                    0,
                    &fixture_segment(&[i as i64 * 10, 5 + i as i64 * 10]),
                )
                .unwrap();
            }
        }
    });
    let conn = rusqlite::Connection::open(path).unwrap();
    for (i, uuid) in uuids.iter().enumerate() {
        conn.execute(
            "UPDATE sources SET uuid = ?1 WHERE id = (SELECT id FROM sources ORDER BY id LIMIT 1 OFFSET ?2)",
            rusqlite::params![uuid, i as i64],
        )
        .unwrap();
    }
}

#[test]
fn hostile_uuids_and_stream_names_never_put_a_file_outside_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    hostile_archive(
        &input,
        &[
            Some("x/../../escape"),
            Some("../.."),
            None,
            Some("unknown-0-3"),
        ],
    );
    let out = dir.path().join("a").join("b").join("out");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let report = export(&[&input], &out, false).unwrap();
    let streams = hostile_streams().len();
    assert_eq!(report.sources, 4);
    assert_eq!(report.files, 4 * streams);
    for file in files_below(dir.path()) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            file.starts_with(&out) || name.starts_with("in.dendro"),
            "{} was written outside {}",
            file.display(),
            out.display()
        );
    }
    // One directory per source and per stream: no two names met in one.
    let mut source_dirs = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect::<Vec<_>>();
    source_dirs.sort();
    assert_eq!(source_dirs.len(), 4, "{source_dirs:?}");
    for source in &source_dirs {
        let stream_dirs = std::fs::read_dir(source).unwrap().count();
        assert_eq!(stream_dirs, streams, "{}", source.display());
        for stream in std::fs::read_dir(source).unwrap() {
            let name = stream.unwrap().file_name();
            assert!(name.len() < 255, "{name:?}");
        }
    }
    let catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("catalog.json")).unwrap()).unwrap();
    for source in catalog["sources"].as_array().unwrap() {
        for stream in source["streams"].as_array().unwrap() {
            let file = stream["segments"][0]["file"].as_str().unwrap();
            assert!(out.join(file).is_file(), "{file}");
        }
    }
}

#[test]
fn verify_reports_a_uuid_that_is_not_canonical() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    hostile_archive(&input, &[Some("x/../../escape")]);
    let report = Archive::open(&input).unwrap().verify().unwrap();
    assert!(!report.sound, "a uuid that is a path was called sound");
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.kind == dendro::verify::ProblemKind::Catalog
                && p.message.contains("uuid")
                && p.message.contains("x/../../escape")),
        "{:?}",
        report.problems
    );
    // A canonical uuid, and none at all, are fine.
    for uuid in [Some("0123abcd-0000-4000-8000-00000000beef"), None] {
        let path = dir.path().join(format!("ok-{}.dendro", uuid.is_some()));
        hostile_archive(&path, &[uuid]);
        let report = Archive::open(&path).unwrap().verify().unwrap();
        assert!(report.sound, "{uuid:?}: {:?}", report.problems);
    }
}

/// The id of a process that has exited (and been reaped).
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn a_killed_rewrites_partial_files_are_removed_by_the_next_run_and_a_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    many_small(&input, 3, 4);
    let dead = dead_pid();
    let live = std::os::unix::process::parent_id();
    let name = |target: &str, pid: u32, tail: &str| {
        dir.path().join(format!(".{target}.partial-{pid}{tail}"))
    };
    let stale = [
        name("out.dendro", dead, ""),
        name("out.dendro", dead, "-wal"),
    ];
    let kept = [
        name("out.dendro", live, ""),
        name("out.dendro", dead, ".mine"),
        name("other.dendro", dead, ""),
    ];
    for path in stale.iter().chain(&kept) {
        std::fs::write(path, b"left behind").unwrap();
    }
    let stale_dir = name("export", dead, "");
    std::fs::create_dir_all(stale_dir.join("source=x")).unwrap();
    std::fs::write(stale_dir.join("source=x/f"), b"half").unwrap();

    copy(&input, dir.path().join("out.dendro"), &CopySpec::default()).unwrap();
    export(&[&input], dir.path().join("export"), false).unwrap();
    for path in stale.iter().chain([&stale_dir]) {
        assert!(!path.exists(), "{} was left behind", path.display());
    }
    for path in &kept {
        assert!(path.exists(), "{} was removed", path.display());
    }
    assert_sound(&dir.path().join("out.dendro"));
}

/// The export whose placement the observer below fails.
static FAIL_PLACING: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

fn fail_placing(step: &dendro::container::Step<'_>) -> std::io::Result<()> {
    let target = FAIL_PLACING.lock().unwrap().clone();
    let hits = |p: &Path| target.as_deref() == Some(p);
    match step {
        dendro::container::Step::Rename { to, .. } if hits(to) => {}
        dendro::container::Step::Exchange { b, .. } if hits(b) => {}
        _ => return Ok(()),
    }
    Err(std::io::Error::other("the placement failed on purpose"))
}

#[test]
fn export_force_leaves_the_old_dataset_whole_when_the_new_one_cannot_be_placed() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    many_small(&input, 4, 3);
    let out = dir.path().join("export");
    export(&[&input], &out, false).unwrap();
    let before: Vec<(PathBuf, Vec<u8>)> = files_below(&out)
        .into_iter()
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();

    *FAIL_PLACING.lock().unwrap() = Some(out.clone());
    dendro::container::observe_steps(Some(fail_placing));
    let failed = export(&[&input], &out, true);
    *FAIL_PLACING.lock().unwrap() = None;
    assert!(failed.is_err(), "the placement was meant to fail");
    let after: Vec<(PathBuf, Vec<u8>)> = files_below(&out)
        .into_iter()
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    assert_eq!(after, before, "the old export was damaged");

    // Replacing for real leaves the new export and nothing beside it.
    export(&[&input], &out, true).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("in.dendro"))
        .collect();
    names.sort();
    assert_eq!(names, ["export"]);
    assert_eq!(files_below(&out).len(), before.len());
}

#[test]
fn a_copy_refuses_a_non_canonical_uuid_naming_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    hostile_archive(&input, &[Some("x/../../escape")]);
    let output = dir.path().join("out.dendro");
    let err = copy(&input, &output, &CopySpec::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("in.dendro") && text.contains("x/../../escape"),
        "{text}"
    );
    assert!(!output.exists());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("in.dendro"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn a_copy_killed_before_its_move_leaves_a_partial_file_the_next_run_removes() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.dendro");
    many_small(&input, 3, 4);
    let output = dir.path().join("out.dendro");
    let mut child =
        crate::common::child_command("copy", &[input.to_str().unwrap(), output.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let pid = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(pid) = line.strip_prefix("ready ") {
                    break pid.parse::<u32>().unwrap();
                }
            }
            other => {
                let _ = child.kill();
                panic!("the child ended before its copy was ready: {other:?}");
            }
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = dir.path().join(format!(".out.dendro.partial-{pid}"));
    assert!(partial.exists(), "the killed copy left no partial file");
    assert!(!output.exists());

    copy(&input, &output, &CopySpec::default()).unwrap();
    assert!(!partial.exists(), "{} was left behind", partial.display());
    assert_sound(&output);
}

//! The rewrite commands of `dendro`: help, refusals with exit code 2,
//! and outputs never overwritten without --force.
#![cfg(feature = "cli")]

use std::process::{Command, Output};

use crate::common::{copy_fixture, fixtures_dir};
use crate::support::*;

fn dendro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dendro"))
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn every_rewrite_command_explains_itself() {
    for command in [
        "copy",
        "combine",
        "compact",
        "project",
        "vacuum-into",
        "export",
    ] {
        let out = dendro(&[command, "--help"]);
        assert_eq!(out.status.code(), Some(0), "{command}");
        assert!(
            text(&out).contains("--force") || command == "compact",
            "{command}"
        );
    }
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    let (dir, input) = copy_fixture(&fixtures_dir().join("a_single_sealed.dendro"));
    let input = input.to_str().unwrap();
    let out_path = dir.path().join("o.dendro");
    let out = out_path.to_str().unwrap();
    for args in [
        vec!["copy", input],
        vec!["copy", input, out, "--from", "9", "--to", "3"],
        vec!["copy", input, out, "--trim"],
        vec!["copy", input, out, "--from", "soon"],
        vec!["copy", input, out, "--source", "host=nobody"],
        vec!["combine", out],
        vec![
            "compact",
            input,
            "--target-rows",
            "3",
            "--target-bytes",
            "9",
        ],
        vec!["compact", input, "--target-rows", "0"],
        vec!["project", input, out],
        vec!["project", input, out, "--columns", "nope"],
        vec!["vacuum-into", input],
        vec!["export", input],
        vec!["export", "--out", out],
        vec!["export", input, "--out", out, "--target-size", "0"],
        vec!["export", input, "--out", out, "--target-size", "12Q"],
        vec![
            "export",
            input,
            "--out",
            out,
            "--target-size",
            "99999999999G",
        ],
        vec!["export", input, "--out", out, "--force"],
        vec![
            "export",
            input,
            "--out",
            out,
            "--segments",
            "--partition-by",
            "host",
        ],
    ] {
        let result = dendro(&args);
        assert_eq!(result.status.code(), Some(2), "{args:?}: {}", text(&result));
        assert!(!text(&result).trim().is_empty(), "{args:?} says why");
        assert!(!out_path.exists(), "{args:?} left an output");
    }
}

#[test]
fn an_existing_output_is_kept_without_force_and_replaced_with_it() {
    let (dir, input) = copy_fixture(&fixtures_dir().join("b_multi_source.dendro"));
    let input = input.to_str().unwrap();
    let out_path = dir.path().join("o.dendro");
    let out = out_path.to_str().unwrap();
    for args in [
        vec!["copy", input, out],
        vec!["combine", out, input],
        vec!["project", input, out, "--columns", "value"],
        vec!["vacuum-into", input, out],
        vec!["export", input, "--out", out, "--segments"],
    ] {
        std::fs::write(&out_path, b"keep me").unwrap();
        let refused = dendro(&args);
        assert_eq!(refused.status.code(), Some(2), "{args:?}");
        assert!(text(&refused).contains("--force"), "{}", text(&refused));
        assert_eq!(std::fs::read(&out_path).unwrap(), b"keep me", "{args:?}");
        let mut forced = args.clone();
        forced.push("--force");
        let done = dendro(&forced);
        assert_eq!(done.status.code(), Some(0), "{forced:?}: {}", text(&done));
        if args[0] == "export" {
            assert!(out_path.join("catalog.json").is_file());
            std::fs::remove_dir_all(&out_path).unwrap();
        } else {
            assert_sound(&out_path);
        }
    }
}

#[test]
fn compact_and_copy_run_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.dendro");
    many_small(&path, 30, 4);
    let before = contents(&path);
    let p = path.to_str().unwrap();
    let out = dendro(&["compact", p, "--target-rows", "40"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("3 run(s) merged, 30 segment(s) now 3"),
        "{}",
        text(&out)
    );
    assert_eq!(contents(&path), before);
    let copy = dir.path().join("copy.dendro");
    let out = dendro(&[
        "copy",
        p,
        copy.to_str().unwrap(),
        "--stream",
        "s",
        "--from",
        "-5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(contents(&copy), before);
}

#[test]
fn an_export_takes_a_directory_of_archives_and_a_rerun_writes_nothing() {
    let (dir, _input) = copy_fixture(&fixtures_dir().join("b_multi_source.dendro"));
    let (_other_dir, other) = copy_fixture(&fixtures_dir().join("a_single_sealed.dendro"));
    std::fs::copy(&other, dir.path().join("a.dendro")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"not an archive").unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("dataset");
    let args = [
        "export",
        dir.path().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let first = dendro(&args);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    assert!(text(&first).contains("generation 1:"), "{}", text(&first));
    assert!(
        text(&first).contains("notes.txt"),
        "the skipped file is named"
    );
    let manifest = dendro::rewrite::read_manifest(&out).unwrap();
    let sources: std::collections::BTreeSet<_> = manifest
        .files
        .iter()
        .flat_map(|f| f.sources.iter().map(|s| s.source_uuid.clone()))
        .collect();
    assert!(sources.len() >= 3, "both archives are in it: {sources:?}");
    let again = dendro(&args);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(text(&again).contains("nothing new"), "{}", text(&again));
    assert_eq!(dendro::rewrite::read_manifest(&out).unwrap(), manifest);
}

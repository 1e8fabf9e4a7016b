//! `--schema` on `dendro copy` and `dendro combine`.

use std::process::Command;

use rusqlite::Connection;

use crate::common::fixtures_dir;

fn dendro(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dendro"))
        .args(args)
        .output()
        .unwrap()
}

fn version(path: &std::path::Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn copy_and_combine_write_the_schema_asked_and_refuse_one_they_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let four = fixtures_dir().join("g_caller_index.dendro");
    let five = fixtures_dir().join("schema5/s5a_multi_source.dendro");
    let up = dir.path().join("up.dendro");
    let out = dendro(&[
        "copy".as_ref(),
        four.as_os_str(),
        up.as_os_str(),
        "--schema".as_ref(),
        "5".as_ref(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(version(&up), 5);
    assert!(String::from_utf8_lossy(&out.stdout).contains("schema 5"));
    let both = dir.path().join("both.dendro");
    let out = dendro(&[
        "combine".as_ref(),
        both.as_os_str(),
        four.as_os_str(),
        five.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(version(&both), 5, "a schema-5 input makes the output 5");
    let down = dir.path().join("down.dendro");
    let out = dendro(&[
        "copy".as_ref(),
        five.as_os_str(),
        down.as_os_str(),
        "--schema".as_ref(),
        "4".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("down.dendro") && stderr.contains("documents"),
        "{stderr}"
    );
    assert!(!down.exists());
    let odd = dir.path().join("odd.dendro");
    let out = dendro(&[
        "copy".as_ref(),
        four.as_os_str(),
        odd.as_os_str(),
        "--schema".as_ref(),
        "6".as_ref(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("4 or 5"));
}

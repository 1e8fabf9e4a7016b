//! The `dendro` command: exit codes, the stable describe JSON, and cat.
#![cfg(all(feature = "cli", not(target_arch = "wasm32")))]

mod common;

use std::process::{Command, Output};

fn dendro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dendro"))
        .args(args)
        .output()
        .unwrap()
}

fn fixture(name: &str) -> (tempfile::TempDir, String) {
    let (dir, path) = common::copy_fixture(&common::fixtures_dir().join(name));
    (dir, path.to_str().unwrap().to_string())
}

#[test]
fn describe_json_matches_the_fixture_catalog() {
    let (_d, path) = fixture("b_multi_source.dendro");
    let out = dendro(&["describe", &path, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["file_bytes"], 65536);
    assert_eq!(json["schema_version"], 4);
    let s1 = &json["sources"][0];
    assert_eq!(s1["uuid"], "4d8dd7da-ed6f-4b1c-9040-fcebac272209");
    assert_eq!(s1["complete"], true);
    let net = &s1["streams"][2];
    assert_eq!(net["name"], "net");
    assert_eq!(net["live_rows"], 17);
    assert_eq!(net["segments"], serde_json::json!([]));
    assert_eq!(
        net["live_span"],
        serde_json::json!([1700000000000000200i64, 1700000032000000200i64])
    );
    assert_eq!(json["sources"][1]["complete"], false);
}

#[test]
fn exit_codes_say_refused_unsound_or_fine() {
    let (_d, good) = fixture("a_single_sealed.dendro");
    assert_eq!(dendro(&["verify", &good]).status.code(), Some(0));
    assert_eq!(dendro(&["sniff", &good]).status.code(), Some(0));
    for refused in [
        "i_foreign_app.sqlite",
        "i_not_sqlite.txt",
        "i_wrong_version.dendro",
        "i_empty_file.dendro",
    ] {
        let (_d, path) = fixture(refused);
        let out = dendro(&["describe", &path]);
        assert_eq!(out.status.code(), Some(2), "{refused}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&path), "names the file: {err}");
        assert_eq!(dendro(&["sniff", &path]).status.code(), Some(2));
    }
    // An archive with a self-contradicting segment: verify exits 1.
    let (_d, bad) = fixture("a_single_sealed.dendro");
    let conn = rusqlite::Connection::open(&bad).unwrap();
    conn.execute("UPDATE segments SET rows = 0 WHERE seq = 0", [])
        .unwrap();
    drop(conn);
    let out = dendro(&["verify", &bad]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn cat_prints_sealed_rows_exactly_and_counts_the_unread_tail() {
    let (_d, path) = fixture("h_negative_ts.dendro");
    let describe: serde_json::Value =
        serde_json::from_slice(&dendro(&["describe", &path, "--json"]).stdout).unwrap();
    let source = describe["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["streams"]
                .as_array()
                .unwrap()
                .iter()
                .any(|st| st["name"] == "extremes")
        })
        .unwrap();
    let id = source["id"].to_string();
    let out = dendro(&["cat", &path, "--source", &id, "--stream", "extremes"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("-9223372036854775808"), "{text}");
    assert!(text.contains("9223372036854775807"), "{text}");
    assert_eq!(text.lines().count(), 3);

    let uuid = source["uuid"].as_str().unwrap();
    let out = dendro(&[
        "cat",
        &path,
        "--source",
        uuid,
        "--stream",
        "around_zero",
        "--format",
        "csv",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(csv.starts_with("ts,value,label\n"), "{csv}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("6 live row(s)"), "{err}");

    let out = dendro(&["cat", &path, "--source", "999", "--stream", "x"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn demo_writes_a_sound_archive_with_sealed_segments_and_a_live_tail() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.dendro");
    let out = out.to_str().unwrap();
    let run = dendro(&["demo", out, "--minutes", "12", "--hosts", "2"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(dendro(&["verify", out]).status.code(), Some(0));
    let json: serde_json::Value =
        serde_json::from_slice(&dendro(&["describe", out, "--json"]).stdout).unwrap();
    let sources = json["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2);
    for source in sources {
        assert_eq!(source["metadata"]["encoder"], "dendro-demo-v1");
        let streams = source["streams"].as_array().unwrap();
        assert!(streams.len() >= 4);
        assert!(streams
            .iter()
            .any(|s| !s["segments"].as_array().unwrap().is_empty()));
        assert!(streams.iter().any(|s| s["live_rows"].as_i64().unwrap() > 0));
    }
    // It refuses to overwrite.
    assert_eq!(dendro(&["demo", out]).status.code(), Some(2));
}

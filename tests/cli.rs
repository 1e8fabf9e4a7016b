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
fn demo_refuses_zero_minutes_of_history_instead_of_writing_1970() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.dendro");
    let run = dendro(&["demo", out.to_str().unwrap(), "--minutes", "0"]);
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8(run.stderr).unwrap();
    assert!(err.contains("--minutes"), "{err}");
    assert!(!out.exists(), "nothing is written for a refused request");
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
        assert_eq!(source["metadata"]["encoder"], dendro::typed::ENCODER);
        let streams = source["streams"].as_array().unwrap();
        assert!(streams.len() >= 4);
        assert!(streams
            .iter()
            .any(|s| !s["segments"].as_array().unwrap().is_empty()));
        assert!(streams.iter().any(|s| s["live_rows"].as_i64().unwrap() > 0));
    }
    // Written with the self-describing encoder: `cat` reads the live tail
    // too, with no encoder of its own, continuing the sealed rows.
    let memory = &sources[0]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "memory")
        .unwrap();
    let sealed: i64 = memory["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|seg| seg["rows"].as_i64().unwrap())
        .sum();
    let live = memory["live_rows"].as_i64().unwrap();
    let uuid = sources[0]["uuid"].as_str().unwrap();
    let cat = dendro(&[
        "cat", out, "--source", uuid, "--stream", "memory", "--format", "csv",
    ]);
    assert_eq!(cat.status.code(), Some(0));
    assert!(
        cat.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&cat.stderr)
    );
    let csv = String::from_utf8(cat.stdout).unwrap();
    let ts: Vec<i64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ts.len() as i64, sealed + live, "every sealed and live row");
    assert!(
        ts.windows(2).all(|w| w[0] < w[1]),
        "the tail continues the segments"
    );
    // It refuses to overwrite.
    assert_eq!(dendro(&["demo", out]).status.code(), Some(2));
}

#[test]
fn describe_on_a_huge_catalog_lists_the_first_few_and_says_what_it_left_out() {
    // 150 sources, the first with a 1 MB label, 3,000 streams and a stream
    // of 20,000 segments: the listing stays short and says so.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.dendro");
    let payload = dendro::Segment {
        bytes: b"PAR1\0\0\0\0\0\0\0\0PAR1".to_vec(),
        rows: 1,
        first_ts: 0,
        last_ts: 0,
        caller_index: None,
    };
    let mut archive = dendro::ArchiveMut::create(&path).unwrap();
    let tx = archive.transaction().unwrap();
    for s in 0..150 {
        let mut labels = dendro::Labels::from([("host".to_string(), format!("h{s}"))]);
        if s == 0 {
            labels.insert("note".to_string(), "x".repeat(1 << 20));
        }
        let id = tx
            .insert_source(&labels, &dendro::Labels::new(), 0)
            .unwrap();
        let streams = if s == 0 { 3_000 } else { 1 };
        for k in 0..streams {
            tx.insert_segment(id, &format!("s{k:05}"), 0, &payload)
                .unwrap();
        }
        if s == 0 {
            for q in 1..20_000 {
                let mut seg = payload.clone();
                seg.first_ts = q;
                seg.last_ts = q;
                tx.insert_segment(id, "s00000", q, &seg).unwrap();
            }
        }
    }
    tx.commit().unwrap();
    drop(archive);
    let out = dendro(&["describe", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("150 source(s), 3149 stream(s)"),
        "{}",
        &text[..200]
    );
    assert!(text.contains("stream \"s00000\": 20000 segment(s)"));
    assert!(text.contains("… 2900 more stream(s) not shown"));
    assert!(text.contains("… 50 more source(s) not shown"));
    assert!(text.contains("x… (1048576 bytes)"), "a 1 MB label is cut");
    assert!(text.len() < 100_000, "{} bytes of listing", text.len());
    let all = dendro(&["describe", path.to_str().unwrap(), "--all"]);
    let all = String::from_utf8(all.stdout).unwrap();
    assert!(all.contains("stream \"s02999\"") && !all.contains("not shown"));
}

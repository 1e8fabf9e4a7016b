//! Schema 5 as the original's 0.6 releases write it, read here: the
//! `dendro` command says which version a file is and reads the schema-5
//! fixtures' headlines exactly (caller-index flags, documents), verify
//! names schema 5's own broken references by key, and every other
//! version, or tables that disagree with the stated one, is refused in
//! words naming the file and both versions. (The full manifest
//! comparison, in memory and from files, is `tests/fixtures.rs`.)
#![cfg(all(feature = "cli", not(target_arch = "wasm32")))]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dendro::{Archive, Error, NotArchive};
use serde_json::{json, Value};

fn dendro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dendro"))
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A private copy of a schema-5 fixture, and its manifest.
fn schema5(name: &str) -> (tempfile::TempDir, PathBuf, Value) {
    let (path, manifest) = common::schema5_fixtures()
        .into_iter()
        .find(|(p, _)| p.file_name().unwrap() == name)
        .unwrap_or_else(|| panic!("no schema-5 fixture {name}"));
    let (dir, copy) = common::copy_fixture(&path);
    (dir, copy, manifest)
}

/// Runs `sql` on the file at `path` with foreign keys off, as a hostile
/// or damaged file would have it.
fn mutate(path: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&format!("PRAGMA foreign_keys = OFF; {sql}"))
        .unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
}

/// What `dendro describe --json` says of each stream, in the shape of a
/// fixture manifest's `fixture.expect` headline.
fn headline(described: &Value) -> Value {
    let mut sources = Vec::new();
    let (mut segments_n, mut rows_n) = (0u64, 0i64);
    for source in described["sources"].as_array().unwrap() {
        let mut streams = serde_json::Map::new();
        let mut source_span: Option<(i64, i64)> = None;
        for stream in source["streams"].as_array().unwrap() {
            let segments = stream["segments"].as_array().unwrap();
            let mut span: Option<(i64, i64)> = None;
            let mut widen = |a: i64, b: i64| {
                span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
            };
            for s in segments {
                widen(
                    s["first_ts"].as_i64().unwrap(),
                    s["last_ts"].as_i64().unwrap(),
                );
            }
            if let Some(live) = stream["live_span"].as_array() {
                widen(live[0].as_i64().unwrap(), live[1].as_i64().unwrap());
            }
            let (first, last) = span.unwrap();
            source_span =
                Some(source_span.map_or((first, last), |(x, y)| (x.min(first), y.max(last))));
            segments_n += segments.len() as u64;
            rows_n +=
                stream["sealed_rows"].as_i64().unwrap() + stream["live_rows"].as_i64().unwrap();
            streams.insert(
                stream["name"].as_str().unwrap().to_string(),
                json!({
                    "caller_index_segments":
                        segments.iter().filter(|s| s["caller_index"] == true).count(),
                    "first_ts": first,
                    "last_ts": last,
                    "live_wal_rows": stream["live_rows"],
                    "rows_per_segment": segments.iter().map(|s| s["rows"].clone()).collect::<Vec<_>>(),
                    "sealed_rows": stream["sealed_rows"],
                    "sealed_segment_count": segments.len(),
                }),
            );
        }
        let (a, b) = source_span.unwrap();
        sources.push(json!({
            "complete": source["complete"],
            "labels": source["labels"],
            "span": [a, b],
            "streams": streams,
        }));
    }
    let documents = described["documents"].as_array().unwrap();
    json!({
        "schema_version": described["schema_version"],
        "segments": segments_n,
        "rows": rows_n,
        "sources": sources,
        "documents": {
            "current": documents.iter().filter(|d| d["deleted"] == false).count(),
            "revisions": documents.iter().map(|d| d["revisions"].as_u64().unwrap()).sum::<u64>(),
        },
    })
}

#[test]
fn describe_reads_each_schema_5_fixtures_headline_exactly() {
    let mut checked = 0;
    for (path, manifest) in common::schema5_fixtures() {
        let (_dir, copy) = common::copy_fixture(&path);
        let copy = copy.to_str().unwrap();
        let out = dendro(&["describe", copy, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let described: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(described["caller_indexes"], "table");
        let ours = headline(&described);
        let expect = &manifest["fixture"]["expect"];
        for key in ["schema_version", "segments", "rows", "sources", "documents"] {
            assert_eq!(ours[key], expect[key], "{}: {key}", path.display());
        }
        let spans: Vec<Value> = ours["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["span"].clone())
            .collect();
        let widest = spans.iter().fold(None::<(i64, i64)>, |w, s| {
            let (a, b) = (s[0].as_i64().unwrap(), s[1].as_i64().unwrap());
            Some(w.map_or((a, b), |(x, y)| (x.min(a), y.max(b))))
        });
        assert_eq!(
            json!([widest.unwrap().0, widest.unwrap().1]),
            expect["span"]
        );
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} schema-5 fixtures");
}

#[test]
fn sniff_and_describe_say_which_schema_and_list_the_documents() {
    let (_d, path, _) = schema5("s5a_multi_source.dendro");
    let path = path.to_str().unwrap();
    let sniffed = dendro(&["sniff", path]);
    assert_eq!(sniffed.status.code(), Some(0));
    assert!(
        text(&sniffed.stdout).contains("schema version 5"),
        "{}",
        text(&sniffed.stdout)
    );

    let out = dendro(&["describe", path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    for line in [
        "schema v5",
        "caller indexes: in the segment_indexes table (schema 5)",
        "documents: 2 current, 5 revision(s)",
        "notes.text \"ünïcødé ✓\": current revision 5 (1 revision(s))",
        "report.selection \"q3\": deleted by revision 4 (2 revision(s))",
        "viewer.view \"overview\": current revision 2 (2 revision(s))",
    ] {
        assert!(said.contains(line), "missing {line:?} in:\n{said}");
    }

    // A schema-4 file says so, and has no documents section.
    let (_d4, four) = common::copy_fixture(&common::fixtures_dir().join("g_caller_index.dendro"));
    let four = four.to_str().unwrap();
    assert!(text(&dendro(&["sniff", four]).stdout).contains("schema version 4"));
    let said = text(&dendro(&["describe", four]).stdout);
    assert!(said.contains("schema v4"), "{said}");
    assert!(
        said.contains("in the segments.caller_index column (schema 4)"),
        "{said}"
    );
    assert!(!said.contains("documents:"), "{said}");
}

#[test]
fn cat_reads_a_schema_5_stream_s_sealed_rows() {
    let (_d, path, manifest) = schema5("s5a_multi_source.dendro");
    let path = path.to_str().unwrap();
    let out = dendro(&["cat", path, "--source", "3", "--stream", "q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let q = &manifest["fixture"]["expect"]["sources"][2]["streams"]["q"];
    assert_eq!(rows.len() as u64, q["sealed_rows"].as_u64().unwrap());
    assert!(rows
        .windows(2)
        .all(|w| w[0]["ts"].as_i64() < w[1]["ts"].as_i64()));
    // The live tail is the fixture encoder's: counted, not decoded.
    assert!(
        text(&out.stderr).contains("6 live row(s)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn verify_names_orphaned_indexes_and_revisions_superseding_nothing_by_key() {
    let (_d, path, _) = schema5("s5a_multi_source.dendro");
    let p = path.to_str().unwrap();
    assert_eq!(dendro(&["verify", p]).status.code(), Some(0));
    mutate(
        &path,
        "INSERT INTO segment_indexes VALUES (2, 'gone', 7, x'0102');
         UPDATE documents SET supersedes = 42 WHERE id = 5;",
    );
    let out = dendro(&["verify", p]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let said = text(&out.stdout);
    assert!(
        said.contains(
            "source 2, stream \"gone\", seq 7 (a segment_indexes row) belongs to no segment"
        ),
        "{said}"
    );
    assert!(
        said.contains("document revision 5 supersedes revision 42"),
        "{said}"
    );
    let report = Archive::open(&path).unwrap().verify().unwrap();
    let dangling: Vec<_> = report
        .problems
        .iter()
        .filter(|p| p.kind == dendro::verify::ProblemKind::DanglingReference)
        .collect();
    assert_eq!(dangling.len(), 2, "{:#?}", report.problems);

    // A segment deleted without its index (foreign keys off): the index is
    // an orphan, named by the segment's key.
    let (_d2, path2, _) = schema5("s5b_retention.dendro");
    mutate(
        &path2,
        "DELETE FROM segments WHERE source_id = 1 AND stream = 's1' AND seq = 3;",
    );
    let report = Archive::open(&path2).unwrap().verify().unwrap();
    assert!(!report.sound);
    assert!(
        report.problems.iter().any(|p| p
            .message
            .contains("stream \"s1\", seq 3 (a segment_indexes row)")),
        "{:#?}",
        report.problems
    );
}

#[test]
fn verify_names_the_first_hundred_dangling_references_and_counts_the_rest() {
    let (_d, path, _) = schema5("s5b_retention.dendro");
    mutate(
        &path,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 105)
           INSERT INTO segment_indexes SELECT 7, 'gone', i, x'00' FROM n;",
    );
    let report = Archive::open(&path).unwrap().verify().unwrap();
    let orphans: Vec<&str> = report
        .problems
        .iter()
        .filter(|p| p.message.contains("segment_indexes row"))
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(orphans.len(), 101, "{orphans:#?}");
    assert!(
        orphans[0].contains("source 7, stream \"gone\", seq 1 "),
        "{}",
        orphans[0]
    );
    assert_eq!(
        orphans[100],
        "5 more segment_indexes row(s) belong to no segment"
    );
}

#[test]
fn versions_3_and_6_are_refused_naming_the_file_the_version_and_those_read() {
    for version in [3, 6] {
        let (_d, path, _) = schema5("s5a_multi_source.dendro");
        mutate(&path, &format!("PRAGMA user_version = {version};"));
        let p = path.to_str().unwrap();
        let err = Archive::open(&path).unwrap_err();
        assert!(
            matches!(err, Error::UnsupportedSchema { version: v, .. } if v == version),
            "{err:?}"
        );
        let words = err.to_string();
        assert!(words.starts_with(p), "{words}");
        assert!(words.contains(&format!("version {version}")), "{words}");
        assert!(words.contains("4 and 5"), "{words}");
        let bytes = std::fs::read(&path).unwrap();
        let from_bytes = Archive::from_bytes("dropped.dendro", &bytes).unwrap_err();
        assert!(
            matches!(from_bytes, Error::UnsupportedSchema { version: v, .. } if v == version),
            "{from_bytes:?}"
        );
        for command in ["sniff", "describe", "verify"] {
            let out = dendro(&[command, p]);
            assert_eq!(out.status.code(), Some(2), "{command} {version}");
            let said = text(&out.stdout) + &text(&out.stderr);
            assert!(said.contains(&format!("version {version}")), "{said}");
            assert!(said.contains("4 and 5"), "{command}: {said}");
        }
    }
}

#[test]
fn tables_that_disagree_with_the_stated_version_are_refused_not_misread() {
    let mismatch = |path: &Path, says: &str| {
        let err = Archive::open(path).unwrap_err();
        match &err {
            Error::NotAnArchive {
                cause: NotArchive::SchemaMismatch(m),
                ..
            } => assert!(m.found.contains(says), "{err}"),
            other => panic!("expected a schema mismatch, got {other:?}"),
        }
        assert!(err.to_string().contains(path.to_str().unwrap()), "{err}");
        let bytes = std::fs::read(path).unwrap();
        assert!(matches!(
            Archive::from_bytes("x", &bytes),
            Err(Error::NotAnArchive {
                cause: NotArchive::SchemaMismatch(_),
                ..
            })
        ));
    };
    // A schema-5 file patched to claim 4: its indexes and documents would
    // vanish under the schema-4 rule.
    let (_d, path, _) = schema5("s5a_multi_source.dendro");
    mutate(&path, "PRAGMA user_version = 4;");
    mismatch(&path, "segment_indexes");
    // A schema-4 file claiming 5.
    let (_d4, four) = common::copy_fixture(&common::fixtures_dir().join("g_caller_index.dendro"));
    mutate(&four, "PRAGMA user_version = 5;");
    mismatch(&four, "segment_indexes");
    // A schema-4 file that grew a documents table.
    let (_d4b, four) = common::copy_fixture(&common::fixtures_dir().join("b_multi_source.dendro"));
    mutate(
        &four,
        "CREATE TABLE documents(id INTEGER PRIMARY KEY, uuid TEXT, kind TEXT, name TEXT,
           schema TEXT, body TEXT, created_wall_ns INTEGER, supersedes INTEGER);",
    );
    mismatch(&four, "documents");
    // A schema-5 file without its documents table.
    let (_d5, path, _) = schema5("s5b_retention.dendro");
    mutate(&path, "DROP TABLE documents;");
    mismatch(&path, "documents");
}

#[test]
fn a_caller_index_is_none_without_a_row_and_empty_with_a_zero_length_one() {
    let (_d, path, _) = schema5("s5a_multi_source.dendro");
    let archive = Archive::open(&path).unwrap();
    assert_eq!(archive.layout(), dendro::catalog::Layout::SCHEMA_5);
    archive
        .read_snapshot(|s| {
            // web-02's temp: one segment with a zero-length index.
            let temp = s.caller_indexes(2, "temp")?;
            assert_eq!(temp.len(), 1);
            assert_eq!(temp[0].1.as_deref(), Some(&[][..]));
            assert_eq!(s.caller_index(2, "temp", temp[0].0)?, Some(Vec::new()));
            // web-01's cpu: no index at all.
            assert!(s
                .caller_indexes(1, "cpu")?
                .iter()
                .all(|(_, ix)| ix.is_none()));
            // web-02's disk: "labels:" and the labels.
            let disk = s.caller_indexes(2, "disk")?;
            assert!(disk
                .iter()
                .all(|(_, ix)| ix.as_deref().is_some_and(|b| b.starts_with(b"labels:"))));
            Ok(())
        })
        .unwrap();
}

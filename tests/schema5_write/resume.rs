//! Continuing an archive writes the schema it has: a schema-5 file gets
//! its new caller indexes in `segment_indexes` (and loses them with their
//! segments, by the cascade), a schema-4 file keeps them in the column.
//! The resumed schema-5 file reads in the original's 0.6.1.

use std::path::Path;

use dendro::{ClockOffset, Labels, WalRow, Writer};
use rusqlite::Connection;

use crate::common::{copy_fixture, fixture_row, fixtures_dir, FixtureEncoder};
use crate::original;

fn scalar(path: &Path, sql: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

fn rows(stream: &str, from: i64, to: i64) -> Vec<(String, WalRow)> {
    (from..=to)
        .map(|ts| {
            (
                stream.to_string(),
                WalRow {
                    ts,
                    wall_offset: 0,
                    row: fixture_row(ts, &format!("l{}", ts % 3)),
                },
            )
        })
        .collect()
}

const INDEXED: FixtureEncoder = FixtureEncoder { caller_index: true };

/// A copy of `s5a_multi_source` with a writer open on it and a new source
/// labelled `host`; also how many index rows the copy held before.
fn resumed_s5a(
    host: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    i64,
    Writer,
    dendro::SourceWriter,
) {
    let (dir, path) = copy_fixture(&fixtures_dir().join("schema5/s5a_multi_source.dendro"));
    let index_rows = scalar(&path, "SELECT COUNT(*) FROM segment_indexes");
    let writer = Writer::open(&path, INDEXED).unwrap();
    let source = writer
        .add_source(Labels::from([("host".into(), host.into())]), Labels::new())
        .unwrap();
    (dir, path, index_rows, writer, source)
}

#[test]
fn a_resumed_schema_5_archive_reads_in_0_6_1_with_our_rows_segments_indexes_and_document() {
    let test = "schema5_write::resume::a_resumed_schema_5_archive_reads_in_0_6_1";
    let (_dir, path, index_rows, writer, source) = resumed_s5a("ours");
    source.wal(rows("cpu", 1, 20)).unwrap();
    source.seal(["cpu"]).unwrap();
    source.wal(rows("cpu", 21, 25)).unwrap();
    let id = writer
        .put_document("notes.text", "ours", "notes.text/1", r#"{"by":"us"}"#)
        .unwrap();
    source
        .finalize(ClockOffset {
            ts: 25,
            offset_ns: 0,
        })
        .unwrap();
    writer.join().unwrap();
    // Ours: schema 5 still, the index in its table, no column grown.
    assert_eq!(scalar(&path, "PRAGMA user_version"), 5);
    assert_eq!(
        scalar(&path, "SELECT COUNT(*) FROM segment_indexes"),
        index_rows + 1
    );
    assert_eq!(
        scalar(
            &path,
            "SELECT COUNT(*) FROM pragma_table_info('segments') WHERE name = 'caller_index'"
        ),
        0
    );
    assert_eq!(id, 6, "the sixth revision of the file");
    let Some(described) = original::describe(test, &path) else {
        return;
    };
    assert_eq!(described["schema_version"], 5);
    assert_eq!(described["layout"]["index_layout"], "segment_indexes");
    assert_eq!(described["segment_indexes"]["rows"], index_rows + 1);
    assert_eq!(described["segment_indexes"]["orphans"], 0);
    let ours = described["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["labels"]["host"] == "ours")
        .expect("0.6.1 lists our source");
    let cpu = &ours["streams"][0];
    assert_eq!(cpu["name"], "cpu");
    assert_eq!(cpu["sealed_segment_count"], 1);
    assert_eq!(cpu["sealed_rows"], 20);
    assert_eq!(cpu["live_wal_rows"], 5);
    assert_eq!(cpu["caller_index_segments"], 1);
    assert_eq!(
        cpu["segments"][0]["caller_index"]["utf8"],
        "labels:\nl0\nl1\nl2"
    );
    assert_eq!(described["documents"]["revisions"], 6);
    let current = described["documents"]["current_documents"]
        .as_array()
        .unwrap();
    assert!(current.iter().any(|d| d["kind"] == "notes.text"
        && d["name"] == "ours"
        && d["body"] == r#"{"by":"us"}"#));
    original::assert_sound(test, &path, 5);
}

#[test]
fn retention_on_a_resumed_schema_5_archive_takes_the_evicted_segments_indexes_with_them() {
    let test = "schema5_write::resume::retention_on_a_resumed_schema_5_archive";
    let (_dir, path, before, writer, source) = resumed_s5a("kept");
    for (from, to) in [(1, 10), (11, 20), (21, 30)] {
        source.wal(rows("cpu", from, to)).unwrap();
        source.seal(["cpu"]).unwrap();
    }
    source.sync().unwrap();
    assert_eq!(
        scalar(&path, "SELECT COUNT(*) FROM segment_indexes"),
        before + 3
    );
    let evicted = source.evict_before(21).unwrap();
    assert_eq!(evicted.segments, 2);
    drop(source);
    writer.join().unwrap();
    assert_eq!(
        scalar(&path, "SELECT COUNT(*) FROM segment_indexes"),
        before + 1
    );
    let orphans =
        "SELECT COUNT(*) FROM segment_indexes i WHERE NOT EXISTS (SELECT 1 FROM segments s
                   WHERE s.source_id = i.source_id AND s.stream = i.stream AND s.seq = i.seq)";
    assert_eq!(scalar(&path, orphans), 0);
    if let Some(described) = original::describe(test, &path) {
        assert_eq!(described["segment_indexes"]["rows"], before + 1);
        assert_eq!(described["segment_indexes"]["orphans"], 0);
    }
    original::assert_sound(test, &path, 5);
}

#[test]
fn a_resumed_schema_4_archive_stays_4_with_indexes_in_the_column_and_refuses_documents() {
    let (_dir, path) = copy_fixture(&fixtures_dir().join("g_caller_index.dendro"));
    let writer = Writer::open(&path, INDEXED).unwrap();
    let source = writer
        .add_source(
            Labels::from([("host".into(), "ours".into())]),
            Labels::new(),
        )
        .unwrap();
    source.wal(rows("cpu", 1, 5)).unwrap();
    source.seal(["cpu"]).unwrap();
    source.sync().unwrap();
    let err = writer
        .put_document("notes.text", "x", "notes.text/1", "{}")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("g_caller_index.dendro") && err.contains("schema 5"),
        "{err}"
    );
    drop(source);
    writer.join().unwrap();
    assert_eq!(scalar(&path, "PRAGMA user_version"), 4);
    assert_eq!(
        scalar(
            &path,
            "SELECT COUNT(*) FROM sqlite_schema WHERE name IN ('segment_indexes', 'documents')"
        ),
        0
    );
    assert_eq!(
        scalar(
            &path,
            "SELECT COUNT(*) FROM segments s JOIN sources o ON o.id = s.source_id
             WHERE o.labels LIKE '%ours%' AND s.caller_index = CAST('labels:' || char(10) || 'l0' || char(10) || 'l1' || char(10) || 'l2' AS BLOB)"
        ),
        1
    );
}

#[test]
fn a_created_schema_5_archive_stores_absent_empty_and_full_indexes_as_0_6_1_reads_them() {
    let test = "schema5_write::resume::a_created_schema_5_archive_stores_absent_empty_and_full";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("made.dendro");
    let options = dendro::WriterOptions {
        schema: dendro::container::CreateSchema::V5,
        ..Default::default()
    };
    let writer = Writer::create_with(&path, std::sync::Arc::new(Adopting), options).unwrap();
    let source = writer
        .add_source(
            Labels::from([("host".into(), "made".into())]),
            Labels::new(),
        )
        .unwrap();
    let segment = |first: i64, index: Option<Vec<u8>>| {
        let encoded = three_rows(first);
        dendro::Segment {
            caller_index: index,
            ..encoded
        }
    };
    for (stream, index) in [
        ("none", None),
        ("empty", Some(vec![])),
        ("full", Some(b"k".to_vec())),
    ] {
        source.adopt_segment(stream, segment(1, index)).unwrap();
    }
    source
        .finalize(ClockOffset {
            ts: 3,
            offset_ns: 0,
        })
        .unwrap();
    writer.join().unwrap();
    assert_eq!(scalar(&path, "SELECT COUNT(*) FROM segment_indexes"), 2);
    assert_eq!(
        scalar(
            &path,
            "SELECT COUNT(*) FROM segment_indexes WHERE length(bytes) = 0"
        ),
        1
    );
    let Some(described) = original::describe(test, &path) else {
        return;
    };
    let indexes = original::indexes_by_stream(&described);
    let of = |name: &str| {
        indexes
            .iter()
            .find(|((_, s), _)| s == name)
            .unwrap()
            .1
            .clone()
    };
    assert_eq!(of("none"), vec![serde_json::Value::Null]);
    assert_eq!(of("empty")[0][0], 0);
    assert_eq!(of("full")[0][0], 1);
    original::assert_sound(test, &path, 5);
}

/// A replica-style encoder: it never encodes, segments are adopted.
struct Adopting;

impl dendro::SegmentEncoder for Adopting {
    fn encode(&self, _: &str, _: &[WalRow]) -> Result<Option<dendro::Segment>, String> {
        Err("adopted only".into())
    }
    fn version(&self) -> Option<String> {
        Some(crate::common::FIXTURE_ENCODER_VERSION.into())
    }
}

/// A three-row segment from `first` on, as the fixtures' encoder makes it.
fn three_rows(first: i64) -> dendro::Segment {
    let rows: Vec<WalRow> = (first..first + 3)
        .map(|ts| WalRow {
            ts,
            wall_offset: 0,
            row: fixture_row(ts, "a"),
        })
        .collect();
    dendro::SegmentEncoder::encode(&INDEXED, "s", &rows)
        .unwrap()
        .unwrap()
}

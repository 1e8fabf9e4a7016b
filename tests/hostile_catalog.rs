//! Catalogs a hostile or careless producer could hand a reader: the tables
//! there but a key, an index or a column the reading rules rely on gone,
//! counts near `i64::MAX`, and catalogs far larger than a recording's. Each
//! is refused by name or read correctly; none panics.
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

mod common;

use std::path::Path;

use dendro::{Archive, Error, NotArchive};

/// Rewrites `table` of the archive at `path` with `ddl` (same columns in
/// the same order, minus whatever the test drops), keeping its rows.
fn recreate(path: &Path, table: &str, ddl: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = OFF;
         BEGIN;
         ALTER TABLE {table} RENAME TO old_{table};
         DROP INDEX IF EXISTS segments_by_time;
         {ddl};
         INSERT INTO {table} SELECT * FROM old_{table};
         DROP TABLE old_{table};
         COMMIT;"
    ))
    .unwrap();
}

fn refusal(path: &Path) -> String {
    match Archive::open(path) {
        Err(Error::NotAnArchive {
            cause: NotArchive::IncompleteCatalog(what),
            file,
        }) => {
            assert_eq!(file, path.display().to_string(), "the error names the file");
            what
        }
        other => panic!("expected an incomplete-catalog refusal, got {other:?}"),
    }
}

#[test]
fn a_catalog_without_a_key_or_index_the_rules_rely_on_is_refused_by_name() {
    type Damage = Box<dyn Fn(&Path)>;
    let cases: [(&str, Damage); 6] = [
        (
            "segments_by_time",
            Box::new(|p| {
                rusqlite::Connection::open(p)
                    .unwrap()
                    .execute_batch("DROP INDEX segments_by_time")
                    .unwrap()
            }),
        ),
        (
            "primary key (source_id, stream, ts) of wal",
            Box::new(|p| {
                recreate(
                    p,
                    "wal",
                    "CREATE TABLE wal(source_id INTEGER NOT NULL, stream TEXT NOT NULL,
                       ts INTEGER NOT NULL, wall_offset INTEGER NOT NULL, row BLOB NOT NULL)",
                )
            }),
        ),
        (
            "primary key (source_id, stream, seq) of segments",
            Box::new(|p| {
                recreate(
                    p,
                    "segments",
                    "CREATE TABLE segments(source_id INTEGER NOT NULL, stream TEXT NOT NULL,
                       seq INTEGER NOT NULL, rows INTEGER NOT NULL, first_ts INTEGER NOT NULL,
                       last_ts INTEGER NOT NULL, bytes BLOB NOT NULL, caller_index BLOB);
                     CREATE INDEX segments_by_time ON segments(source_id, stream, last_ts)",
                )
            }),
        ),
        (
            "wal.wall_offset",
            Box::new(|p| {
                rusqlite::Connection::open(p)
                    .unwrap()
                    .execute_batch("ALTER TABLE wal DROP COLUMN wall_offset")
                    .unwrap()
            }),
        ),
        (
            "WITHOUT ROWID",
            Box::new(|p| {
                // Segment payloads are opened by rowid; a table without
                // one cannot be read that way.
                recreate(
                    p,
                    "segments",
                    "CREATE TABLE segments(source_id INTEGER NOT NULL, stream TEXT NOT NULL,
                       seq INTEGER NOT NULL, rows INTEGER NOT NULL, first_ts INTEGER NOT NULL,
                       last_ts INTEGER NOT NULL, bytes BLOB NOT NULL, caller_index BLOB,
                       PRIMARY KEY (source_id, stream, seq)) WITHOUT ROWID;
                     CREATE INDEX segments_by_time ON segments(source_id, stream, last_ts)",
                )
            }),
        ),
        (
            "partial or case-folding",
            Box::new(|p| {
                // A key that ignores case, or covers only some rows, is
                // not the key: two rows could share a timestamp.
                recreate(
                    p,
                    "wal",
                    "CREATE TABLE wal(source_id INTEGER NOT NULL, stream TEXT NOT NULL,
                       ts INTEGER NOT NULL, wall_offset INTEGER NOT NULL, row BLOB NOT NULL);
                     CREATE UNIQUE INDEX nocase ON wal(source_id, stream COLLATE NOCASE, ts);
                     CREATE UNIQUE INDEX partial ON wal(source_id, stream, ts) WHERE ts > 0",
                )
            }),
        ),
    ];
    for (expected, damage) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.dendro");
        common::sample_archive(&path);
        damage(&path);
        let what = refusal(&path);
        let named = match expected {
            "WITHOUT ROWID" => what.contains("WITHOUT ROWID"),
            "partial or case-folding" => {
                what.contains("primary key (source_id, stream, ts) of wal")
            }
            name => what.contains(name),
        };
        assert!(named, "{expected}: {what}");
    }
}

#[test]
fn an_archive_from_before_the_uuid_and_caller_index_columns_reads_them_as_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    common::sample_archive(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE sources DROP COLUMN uuid;
         ALTER TABLE segments DROP COLUMN caller_index;",
    )
    .unwrap();
    drop(conn);
    let archive = Archive::open(&path).unwrap();
    let d = dendro::read::describe(&archive).unwrap();
    assert_eq!(d.sources[0].source.uuid, None);
    let sealed = &d.sources[0]
        .streams
        .iter()
        .find(|s| s.name == "sealed")
        .unwrap();
    assert_eq!(sealed.segments.len(), 2);
    assert!(sealed.segments.iter().all(|s| !s.caller_index));
    let indexes = dendro::read::caller_indexes(&archive, 1, "sealed").unwrap();
    assert_eq!(indexes, vec![(0, None), (1, None)]);
    assert!(archive.verify().unwrap().sound);
    // A writer would have to add the columns: it refuses instead.
    drop(archive);
    let err = dendro::Writer::open(&path, common::FixtureEncoder::default()).unwrap_err();
    assert!(err.to_string().contains("predates"), "{err}");
}

#[test]
fn row_counts_near_the_top_of_i64_saturate_instead_of_overflowing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    common::sample_archive(&path);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&format!(
            "UPDATE segments SET rows = {} WHERE stream = 'sealed'",
            i64::MAX - 1
        ))
        .unwrap();
    let archive = Archive::open(&path).unwrap();
    let d = dendro::read::describe(&archive).unwrap();
    let sealed = d.sources[0]
        .streams
        .iter()
        .find(|s| s.name == "sealed")
        .unwrap();
    assert_eq!(sealed.sealed_rows, i64::MAX);
    assert!(serde_json::to_string(&d)
        .unwrap()
        .contains(&i64::MAX.to_string()));
}

#[test]
fn an_envelope_over_row_counts_summing_past_u64_saturates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    let source = common::sample_archive(&path);
    // Three segments of `i64::MAX` rows each: their sum passes u64::MAX.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&format!(
            "INSERT INTO segments SELECT source_id, stream, 2, rows, 31, 40, bytes, caller_index
               FROM segments WHERE stream = 'sealed' AND seq = 1;
             UPDATE segments SET rows = {} WHERE stream = 'sealed'",
            i64::MAX
        ))
        .unwrap();
    let archive = Archive::open(&path).unwrap();
    let request = dendro::read::range::RangeRequest {
        source_id: source,
        stream: "sealed",
        from: i64::MIN,
        to: i64::MAX,
        columns: None,
        max_points: Some(2),
        rates: None,
    };
    let mut decoded = 0;
    let envelope = dendro::read::range::read_range_with(
        &archive,
        &request,
        |record| Ok(dendro::read::stats::segment_stats(&archive, record)?.map(std::sync::Arc::new)),
        |_, _| {
            decoded += 1;
            Ok(std::sync::Arc::new(Vec::new()))
        },
    )
    .unwrap();
    assert!(decoded <= 3, "each segment decoded at most once");
    assert!(envelope.segments_read <= 3);
}

//! Compaction in place: every row kept, runs stop at a schema change
//! unless a union is asked for, the file shrinks, and a writer holding the
//! file makes it refuse.

use dendro::rewrite::{compact, CompactEvent, CompactSpec, Target};
use dendro::write::Writer;
use dendro::{Archive, Error};

use crate::common::FixtureEncoder;
use crate::support::*;

fn rows_target(n: u64) -> CompactSpec {
    CompactSpec {
        target: Target::Rows(n),
        union_fields: false,
    }
}

fn segment_count(path: &std::path::Path) -> usize {
    Archive::open(path)
        .unwrap()
        .read_snapshot(|s| s.all_segments())
        .unwrap()
        .len()
}

#[test]
fn every_row_is_kept_and_only_the_catalog_of_merged_segments_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    many_small(&path, 40, 5);
    let before = contents(&path);
    let mut events = Vec::new();
    let report = compact(&path, &rows_target(50), |e| events.push(e.clone())).unwrap();
    assert_eq!((report.segments_before, report.segments_after), (40, 4));
    assert_eq!(report.runs, 4);
    assert!(events
        .iter()
        .any(|e| matches!(e, CompactEvent::Committed { rows: 50, .. })));
    // Decoded values, live tail, caller rows and clock offsets all equal.
    assert_eq!(contents(&path), before);
    let archive = Archive::open(&path).unwrap();
    let merged = archive.read_snapshot(|s| s.segments(1, "s")).unwrap();
    assert!(
        merged.iter().all(|s| !s.caller_index),
        "an index over one input cannot describe two"
    );
    assert_eq!(
        merged.iter().map(|s| s.seq).collect::<Vec<_>>(),
        [0, 10, 20, 30]
    );
    assert_eq!((merged[0].first_ts, merged[3].last_ts), (0, 1990));
    let covered = archive.verify().unwrap();
    assert!(covered.sound, "{:?}", covered.problems);
    assert_eq!(
        covered.covered_wal_rows, 1,
        "the covered WAL row is not touched"
    );
}

#[test]
fn a_run_stops_at_the_target_and_at_a_segment_already_large() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    build(&path, "t", |tx, id| {
        let sizes = [3, 3, 3, 20, 3, 3];
        let mut ts = 0;
        for (seq, n) in sizes.into_iter().enumerate() {
            tx.insert_segment(id, "s", seq as i64, &fixture_segment(&ts_run(ts, n, 1)))
                .unwrap();
            ts += n as i64;
        }
    });
    let before = contents(&path);
    let report = compact(&path, &rows_target(7), |_| {}).unwrap();
    // 3+3 fit in 7, the third 3 starts a run alone; 20 is a barrier;
    // 3+3 after it merge.
    assert_eq!(report.runs, 2);
    let rows: Vec<i64> = Archive::open(&path)
        .unwrap()
        .read_snapshot(|s| s.segments(1, "s"))
        .unwrap()
        .iter()
        .map(|s| s.rows)
        .collect();
    assert_eq!(rows, [6, 3, 20, 6]);
    assert_eq!(contents(&path), before);
}

/// Segments alternating between `value` alone and `value` plus `extra`.
fn alternating(path: &std::path::Path, unit_of: impl Fn(usize) -> &'static str) {
    build(path, "t", |tx, id| {
        for i in 0..6 {
            let extra = (i % 2 == 1).then_some("extra");
            let seg = custom_segment(&ts_run(i as i64 * 10, 10, 1), unit_of(i), extra);
            tx.insert_segment(id, "s", i as i64, &seg).unwrap();
        }
    });
}

#[test]
fn no_run_crosses_a_change_of_columns_unless_a_union_is_asked_for_which_null_fills() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    alternating(&path, |_| "ns");
    let before = contents(&path);
    let report = compact(&path, &rows_target(1000), |_| {}).unwrap();
    assert_eq!((report.runs, report.segments_after), (0, 6));
    assert_eq!(report.schema_breaks, 5);
    assert_eq!(contents(&path), before);

    let union = CompactSpec {
        union_fields: true,
        ..rows_target(1000)
    };
    let report = compact(&path, &union, |_| {}).unwrap();
    assert_eq!((report.runs, report.segments_after), (1, 1));
    let archive = Archive::open(&path).unwrap();
    let rows = sealed_rows(&archive, 1, "s");
    assert_eq!(rows.len(), 60);
    for (i, row) in rows.iter().enumerate() {
        let ts = i as i64;
        assert_eq!(row["ts"], Some(ts.to_string()));
        assert_eq!(row["value"], Some((ts * 3).to_string()));
        let has_extra = (i / 10) % 2 == 1;
        let extra = has_extra.then(|| (ts * 5).to_string());
        assert_eq!(row["extra"], extra, "row {i}");
    }
}

#[test]
fn a_column_whose_metadata_changed_is_never_merged_even_in_a_union() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    build(&path, "t", |tx, id| {
        for i in 0..4 {
            let unit = if i < 2 { "ns" } else { "us" };
            let seg = custom_segment(&ts_run(i * 10, 10, 1), unit, None);
            tx.insert_segment(id, "s", i, &seg).unwrap();
        }
    });
    let union = CompactSpec {
        union_fields: true,
        ..rows_target(1000)
    };
    let report = compact(&path, &union, |_| {}).unwrap();
    assert_eq!((report.runs, report.segments_after), (2, 2));
    assert_eq!(report.schema_breaks, 1);
}

#[test]
fn compaction_shrinks_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    many_small(&path, 400, 10);
    let before = std::fs::metadata(&path).unwrap().len();
    let report = compact(&path, &rows_target(100_000), |_| {}).unwrap();
    let after = std::fs::metadata(&path).unwrap().len();
    assert_eq!(report.segments_after, 1);
    assert_eq!((report.bytes_before, report.bytes_after), (before, after));
    assert!(after < before, "{after} is not smaller than {before}");
    assert!(!dendro_sidecar(&path).exists(), "the sidecar is folded in");
    assert_sound(&path);
}

fn dendro_sidecar(path: &std::path::Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push("-wal");
    name.into()
}

#[test]
fn a_writer_holding_the_file_makes_compaction_refuse_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.dendro");
    many_small(&path, 4, 5);
    let writer = Writer::open(&path, FixtureEncoder::default()).unwrap();
    let err = compact(&path, &rows_target(100), |_| {}).unwrap_err();
    assert!(
        matches!(&err, Error::InUse { file } if file.contains("held.dendro")),
        "{err}"
    );
    drop(writer);
    assert_eq!(segment_count(&path), 4);
    compact(&path, &rows_target(100), |_| {}).unwrap();
    assert_eq!(segment_count(&path), 1);
}

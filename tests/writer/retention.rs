//! Retention: what eviction removes and reports, live rows lost to it
//! counted and logged, per-stream eviction, the caller-row floor, the size
//! accounting a cap needs, and free pages trickling back.
use std::collections::BTreeMap;

use crate::common;
use crate::support::*;
use dendro::write::{Evicted, RECLAIM_PAGES_PER_PASS};
use dendro::{Archive, CallerRow, ClockOffset, Labels};

/// Streams a and b with rows at 0..10 sealed and 10..20 live, clock
/// observations at 9 and 5, caller rows under a (1, 17) and under
/// `registry` (0, 3, 14).
fn populated(path: &std::path::Path) -> (dendro::Writer, dendro::SourceWriter) {
    let w = writer(path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for ts in 0..10 {
        s.wal(tick(&[("a", ts), ("b", ts)])).unwrap();
    }
    s.seal(["a"]).unwrap();
    s.seal(["b"]).unwrap();
    s.sync().unwrap();
    for ts in 10..20 {
        s.wal(tick(&[("a", ts), ("b", ts)])).unwrap();
    }
    s.clock_offset(ClockOffset {
        ts: 5,
        offset_ns: 1,
    })
    .unwrap();
    let blob = |ts: i64| CallerRow {
        ts,
        blob: vec![ts as u8; 10],
    };
    s.caller_rows("a", vec![blob(1), blob(17)]).unwrap();
    s.caller_rows("registry", vec![blob(0), blob(3), blob(14)])
        .unwrap();
    (w, s)
}

fn count(path: &std::path::Path, sql: &str) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

#[test]
fn evict_before_removes_everything_older_and_says_what_went() {
    let (_dir, path) = fresh("a.dendro");
    let (w, s) = populated(&path);
    let sizes = s.segment_sizes().unwrap();
    let nothing = s.evict_before(0).unwrap();
    assert_eq!(nothing, Evicted::default(), "nothing is older than 0");
    let gone = s.evict_before(15).unwrap();
    assert_eq!(gone.segments, 2);
    assert_eq!(
        gone.segment_bytes,
        sizes.iter().map(|s| s.bytes as u64).sum::<u64>()
    );
    assert_eq!(gone.live_rows, 10, "10..15 of a and b were in no segment");
    assert!(
        gone.wal_rows >= 10,
        "the live ones and whatever covered rows were left"
    );
    assert_eq!(gone.caller_rows, 4, "all but a@17");
    assert_eq!(gone.clock_offsets, 2, "5 and 9 are before the cutoff");
    assert!(gone.bytes >= gone.segment_bytes + 10 * 11 + 40);
    let a = Archive::open(&path).unwrap();
    assert_eq!(stream_ts(&a, 1, "a"), (15..20).collect::<Vec<_>>());
    assert_eq!(count(&path, "SELECT COUNT(*) FROM caller_rows"), 1);
    // Appending goes on; the stream has no segment now, so nothing older
    // than its rows is shadowed.
    s.wal(tick(&[("a", 20)])).unwrap();
    s.seal(["a"]).unwrap();
    s.sync().unwrap();
    drop(s);
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(segments(&a, 1, "a"), vec![(1, 15, 20, 6)]);
}

#[test]
fn live_rows_lost_to_eviction_are_counted_and_logged() {
    let logs = logs();
    let (_dir, path) = fresh("a.dendro");
    let (w, s) = populated(&path);
    assert_eq!(
        s.evict_before(5).unwrap().live_rows,
        0,
        "only sealed rows are older than 5"
    );
    assert_eq!(logs.count(&path, "no segment held"), 0);
    assert_eq!(s.evict_before(12).unwrap().live_rows, 4);
    assert_eq!(
        logs.count(&path, "deleted 4 row(s) that no segment held"),
        1
    );
    drop(s);
    w.join().unwrap();
}

#[test]
fn evict_streams_before_removes_only_what_the_predicate_accepts() {
    let (_dir, path) = fresh("a.dendro");
    let (w, s) = populated(&path);
    let gone = s
        .evict_streams_before(15, |name| name == "a" || name == "registry")
        .unwrap();
    assert_eq!(gone.segments, 1);
    assert_eq!(gone.live_rows, 5);
    assert_eq!(
        gone.caller_rows, 4,
        "a@1 and the store-only name's 0, 3, 14"
    );
    // b still holds rows from 0: clock observations are cut only below that.
    assert_eq!(gone.clock_offsets, 0);
    let a = Archive::open(&path).unwrap();
    assert_eq!(stream_ts(&a, 1, "a"), (15..20).collect::<Vec<_>>());
    assert_eq!(stream_ts(&a, 1, "b"), (0..20).collect::<Vec<_>>());
    let gone = s.evict_streams_before(15, |name| name == "b").unwrap();
    assert_eq!(gone.clock_offsets, 2, "now the oldest row held is 15");
    drop(s);
    w.join().unwrap();
    assert_sound(&path);
}

#[test]
fn a_floor_keeps_a_names_caller_rows_from_it_on() {
    let (_dir, path) = fresh("a.dendro");
    let (w, s) = populated(&path);
    // The registry entry in force at the cutoff (3) must survive it.
    let floors = BTreeMap::from([("registry".to_string(), 3)]);
    let gone = s.evict_before_with_floor(15, floors.clone()).unwrap();
    assert_eq!(
        gone.caller_rows, 2,
        "registry@0 and a@1; registry@3 is at the floor"
    );
    let kept = dendro::read::caller_rows(
        &Archive::open(&path).unwrap(),
        1,
        "registry",
        i64::MIN,
        i64::MAX,
    )
    .unwrap();
    assert_eq!(kept.iter().map(|r| r.ts).collect::<Vec<_>>(), vec![3, 14]);
    // A floor above the cutoff changes nothing: rows go below min(floor, cutoff).
    let floors = BTreeMap::from([("registry".to_string(), 100)]);
    let gone = s
        .evict_streams_before_with_floor(14, |_| true, floors)
        .unwrap();
    assert_eq!(gone.caller_rows, 1, "registry@3");
    drop(s);
    w.join().unwrap();
}

#[test]
fn segment_sizes_and_archive_bytes_serve_a_size_cap() {
    let (_dir, path) = fresh("a.dendro");
    let (w, s) = populated(&path);
    let sizes = s.segment_sizes().unwrap();
    assert_eq!(sizes.len(), 2);
    assert!(sizes
        .iter()
        .all(|z| z.rows == 10 && z.first_ts == 0 && z.last_ts == 9 && z.bytes > 0));
    let bytes = s.archive_bytes().unwrap();
    assert_eq!(bytes % 4096, 0);
    assert_eq!(bytes, w.archive_bytes().unwrap());
    assert!(bytes >= 4096 * 8);
    drop(s);
    w.join().unwrap();
}

#[test]
fn freed_pages_go_back_in_capped_passes_once_a_tenth_of_the_file_is_free() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    // About 2,000 pages of rows that do not compress, sealed in four.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for ts in 0..2000 {
        let label: String = (0..250)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("{:016x}", x)
            })
            .collect();
        let mut rows = tick(&[("a", ts)]);
        rows[0].1.row = common::fixture_row(ts, &label);
        s.wal(rows).unwrap();
        if ts % 500 == 499 {
            s.seal(["a"]).unwrap();
        }
    }
    s.sync().unwrap();
    let pages = |p: &std::path::Path| {
        let conn = rusqlite::Connection::open(p).unwrap();
        let free: i64 = conn
            .query_row("PRAGMA freelist_count", [], |r| r.get(0))
            .unwrap();
        let total: i64 = conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        (free, total)
    };
    let (_, before) = pages(&path);
    s.evict_before(1000).unwrap();
    let (free, after) = pages(&path);
    // One capped pass; truncating the file can also drop a pointer-map page.
    let pass = RECLAIM_PAGES_PER_PASS as i64;
    assert!(
        (pass..=pass + 1).contains(&(before - after)),
        "one capped pass: {before} -> {after}"
    );
    assert!(free > 0, "the rest waits for later passes");
    s.evict_before(1000).unwrap();
    let again = pages(&path).1;
    assert!(
        (pass..=pass + 1).contains(&(after - again)),
        "and one more: {after} -> {again}"
    );
    s.finalize(ClockOffset {
        ts: 1999,
        offset_ns: 0,
    })
    .unwrap();
    w.join().unwrap();
    assert_eq!(pages(&path).0, 0, "a clean close hands back the rest");
    assert_sound(&path);
}

//! Sealing: one transaction per batch with its clock observation, seqs in
//! order, the seam read without hole or duplicate, covered rows pruned, the
//! seal policy by rows, bytes, age and wall-clock alignment, an encoder
//! failure stopping the writer by name, and adopting a segment built
//! elsewhere.
use std::time::Duration;

use crate::common;
use crate::common::{rows_at, FixtureEncoder};
use crate::support::*;
use dendro::write::{Adopted, SealPolicy, Writer, WriterOptions};
use dendro::{Archive, ClockOffset, Error, Labels, WalRow};

fn clock_offsets(a: &Archive, source_id: i64) -> Vec<(i64, i64)> {
    a.read_snapshot(|s| s.clock_offsets(source_id))
        .unwrap()
        .into_iter()
        .map(|c| (c.ts, c.offset_ns))
        .collect()
}

#[test]
fn a_seal_batch_is_one_transaction_carrying_the_newest_sealed_rows_clock() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for ts in 1..=4 {
        let mut rows = tick(&[("a", ts * 10), ("b", ts * 10 + 1)]);
        rows[1].1.wall_offset = 1000 + ts;
        s.wal(rows).unwrap();
    }
    s.seal(["a", "b"]).unwrap();
    s.sync().unwrap();
    let a = Archive::open(&path).unwrap();
    assert_eq!(segments(&a, 1, "a"), vec![(0, 10, 40, 4)]);
    assert_eq!(segments(&a, 1, "b"), vec![(0, 11, 41, 4)]);
    assert_eq!(
        clock_offsets(&a, 1),
        vec![(41, 1004)],
        "one observation: the newest sealed row's own pair"
    );
    // Finalizing at a timestamp already observed keeps the first observation.
    s.finalize(ClockOffset {
        ts: 41,
        offset_ns: 5,
    })
    .unwrap();
    w.join().unwrap();
    assert_eq!(clock_offsets(&assert_sound(&path), 1), vec![(41, 1004)]);
}

#[test]
fn segments_follow_in_seq_order_and_the_seam_reads_without_hole_or_duplicate() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    let reader = Archive::open(&path).unwrap();
    for ts in 0..100 {
        s.wal(tick(&[("a", ts), ("b", ts)])).unwrap();
        if ts % 17 == 16 {
            s.seal(["a"]).unwrap();
        }
        if ts % 29 == 28 {
            s.seal(["b"]).unwrap();
        }
        // Whatever has landed, a reader sees every row exactly once.
        assert_eq!(stream_ts(&reader, 1, "a"), (0..=ts).collect::<Vec<_>>());
    }
    s.sync().unwrap();
    let seqs: Vec<i64> = segments(&reader, 1, "a").iter().map(|s| s.0).collect();
    assert_eq!(seqs, (0..5).collect::<Vec<_>>());
    drop(s);
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "b"), (0..100).collect::<Vec<_>>());
    let shadowed: i64 = a
        .read_snapshot(|s| {
            Ok(s.live_wal_span(1, "a")?.map_or(0, |l| l.rows)
                + s.live_wal_span(1, "b")?.map_or(0, |l| l.rows))
        })
        .unwrap();
    let total: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM wal", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        total, shadowed,
        "covered rows were pruned by the clean close"
    );
}

#[test]
fn covered_rows_are_pruned_while_appending_and_reads_stay_whole() {
    let (_dir, path) = fresh("a.dendro");
    let options = WriterOptions {
        prune_every: 1,
        ..Default::default()
    };
    let w = writer_with(&path, FixtureEncoder::default(), options);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let count = || -> i64 {
        conn.query_row("SELECT COUNT(*) FROM wal", [], |r| r.get(0))
            .unwrap()
    };
    // Rows of a kilobyte: four to a page.
    let big = |stream: &str, ts: i64| {
        let mut r = row(stream, ts);
        r.1.row = common::fixture_row(ts, &"x".repeat(992));
        r
    };
    for ts in 0..60 {
        s.wal(vec![big("a", ts), big("b", ts)]).unwrap();
        if ts % 10 == 9 {
            s.seal(["a", "b"]).unwrap();
            s.sync().unwrap();
        }
    }
    // Everything up to 59 is sealed, and the next append carries the
    // prune: what is left is the page still being filled, and the new row.
    s.wal(vec![big("a", 60)]).unwrap();
    assert!(count() <= 5, "{} rows left in the wal table", count());
    let reader = Archive::open(&path).unwrap();
    assert_eq!(stream_ts(&reader, 1, "a"), (0..=60).collect::<Vec<_>>());
    drop(s);
    w.join().unwrap();
    assert_sound(&path);
}

#[test]
fn a_cleanly_closed_archive_holds_no_covered_rows_however_seals_and_prunes_meet() {
    // The last seal rides on the last tick, which also carries a prune of
    // earlier seals' rows: whichever way they meet, closing the writer
    // leaves no row that a segment covers.
    for pause_us in (0..20u64).map(|i| i * 300) {
        let (_dir, path) = fresh("a.dendro");
        let options = WriterOptions {
            prune_batch_rows: 1,
            ..Default::default()
        };
        let w = writer_with(&path, FixtureEncoder::default(), options);
        let s = w.add_source(Labels::new(), Labels::new()).unwrap();
        for ts in 0..40 {
            s.wal(tick(&[("a", ts), ("b", ts)])).unwrap();
            if ts % 10 == 9 {
                s.seal(["a", "b"]).unwrap();
            }
        }
        s.wal(tick(&[("a", 40), ("b", 40)])).unwrap();
        s.seal(["a", "b"]).unwrap();
        let until = std::time::Instant::now() + Duration::from_micros(pause_us);
        while std::time::Instant::now() < until {}
        s.wal(tick(&[("c", 41)])).unwrap();
        s.finalize(ClockOffset {
            ts: 41,
            offset_ns: 0,
        })
        .unwrap();
        w.join().unwrap();
        let a = assert_sound(&path);
        let covered: i64 = a
            .read_snapshot(|snap| Ok(snap.wal_rows_total(1, "a")? + snap.wal_rows_total(1, "b")?))
            .unwrap();
        assert_eq!(
            covered, 0,
            "covered rows left after a pause of {pause_us} us"
        );
        assert_eq!(stream_ts(&a, 1, "a"), (0..=40).collect::<Vec<_>>());
    }
}

#[test]
fn a_policy_seals_by_rows() {
    let (_dir, path) = fresh("a.dendro");
    let options = WriterOptions {
        seal_policy: SealPolicy::never().rows(5),
        ..Default::default()
    };
    let w = writer_with(&path, FixtureEncoder::default(), options);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for ts in 0..12 {
        s.wal(tick(&[("a", ts)])).unwrap();
    }
    s.sync().unwrap();
    let a = Archive::open(&path).unwrap();
    assert_eq!(segments(&a, 1, "a"), vec![(0, 0, 4, 5), (1, 5, 9, 5)]);
    drop(s);
    w.join().unwrap();
}

#[test]
fn a_policy_seals_by_bytes() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    s.set_seal_policy(SealPolicy::never().bytes(100)).unwrap();
    for ts in 0..10 {
        let mut rows = tick(&[("a", ts)]);
        rows[0].1.row = common::fixture_row(ts, &"x".repeat(22)); // 30 bytes
        s.wal(rows).unwrap();
    }
    s.sync().unwrap();
    let a = Archive::open(&path).unwrap();
    assert_eq!(
        segments(&a, 1, "a"),
        vec![(0, 0, 3, 4), (1, 4, 7, 4)],
        "sealed once 120 >= 100 bytes"
    );
    drop(s);
    w.join().unwrap();
}

#[test]
fn a_policy_seals_by_age_before_a_row_would_make_the_segment_too_long() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    s.set_seal_policy(SealPolicy::never().age(Duration::from_nanos(100)))
        .unwrap();
    for ts in [0, 30, 60, 90, 100, 130, 250, 260] {
        s.wal(tick(&[("a", ts)])).unwrap();
    }
    // A quiet stream is sealed by age on its source's newer rows.
    s.wal(tick(&[("quiet", 300)])).unwrap();
    s.wal(tick(&[("a", 420)])).unwrap();
    s.sync().unwrap();
    let a = Archive::open(&path).unwrap();
    assert_eq!(
        segments(&a, 1, "a"),
        vec![(0, 0, 90, 4), (1, 100, 130, 2), (2, 250, 260, 2)]
    );
    assert_eq!(segments(&a, 1, "quiet"), vec![(0, 300, 300, 1)]);
    drop(s);
    w.join().unwrap();
}

#[test]
fn a_row_an_age_seal_of_its_own_tick_covers_is_dropped_and_counted_never_lost() {
    // The tick [40, 150] makes [0, 50] too old: the seal takes 0 and 50, and
    // 40, below the new watermark, could only be committed unreadable.
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    s.set_seal_policy(SealPolicy::never().age(Duration::from_nanos(100)))
        .unwrap();
    s.wal(tick(&[("a", 0)])).unwrap();
    s.wal(tick(&[("a", 50)])).unwrap();
    s.wal(tick(&[("a", 40), ("a", 150)])).unwrap();
    s.sync().unwrap();
    assert_eq!(s.dropped_out_of_order(), 1, "the row at 40 is reported");
    let a = assert_sound(&path);
    assert_eq!(segments(&a, 1, "a"), vec![(0, 0, 50, 2)]);
    assert_eq!(stream_ts(&a, 1, "a"), vec![0, 50, 150]);
    let wal: i64 = a.read_snapshot(|snap| snap.wal_rows_total(1, "a")).unwrap();
    assert!(wal <= 3, "no row sits unreadable in the wal table: {wal}");
    drop(s);
    w.join().unwrap();
}

#[test]
fn a_policy_aligned_to_the_wall_clock_seals_at_every_boundary() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    s.set_seal_policy(SealPolicy::never().aligned(Duration::from_nanos(1000)))
        .unwrap();
    // The wall clock is ts + wall_offset: boundaries at wall 1000, 2000...
    for (ts, offset) in [
        (100, 500),
        (300, 500),
        (495, 500),
        (505, 500),
        (900, 500),
        (1400, 700),
    ] {
        let mut rows = tick(&[("a", ts)]);
        rows[0].1.wall_offset = offset;
        s.wal(rows).unwrap();
    }
    s.sync().unwrap();
    let a = Archive::open(&path).unwrap();
    assert_eq!(
        segments(&a, 1, "a"),
        vec![(0, 100, 495, 3), (1, 505, 900, 2)],
        "wall 995 | 1005..1400 | 2100"
    );
    drop(s);
    w.join().unwrap();
}

fn encoder_failure_stops_the_writer(panic: bool) {
    let (_dir, path) = fresh("a.dendro");
    let enc = FailingEncoder {
        stream: "bad".into(),
        panic,
    };
    let w = writer_with(&path, enc, Default::default());
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for ts in 0..5 {
        s.wal(tick(&[("good", ts), ("bad", ts)])).unwrap();
    }
    s.seal(["good"]).unwrap();
    s.sync().unwrap();
    s.seal(["bad"]).unwrap();
    let later = s.sync().unwrap_err();
    assert!(
        matches!(&later, Error::WriterStopped { message, .. } if message.contains("\"bad\"")),
        "{later}"
    );
    assert!(matches!(
        s.wal(tick(&[("good", 9)])),
        Err(Error::WriterStopped { .. })
    ));
    match w.join() {
        Err(Error::Encoder {
            stream, message, ..
        }) => {
            assert_eq!(stream, "bad");
            assert!(message.contains("cannot encode bad"), "{message}");
            assert_eq!(message.contains("panicked"), panic, "{message}");
        }
        other => panic!("join should name the failing stream, got {other:?}"),
    }
    drop(s);
    // Nothing committed was lost, and the source resumes.
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "bad"), (0..5).collect::<Vec<_>>());
    assert_eq!(stream_ts(&a, 1, "good"), (0..5).collect::<Vec<_>>());
    drop(a);
    let w = Writer::open(&path, FixtureEncoder::default()).unwrap();
    let s = w.resume_source_at(1, 100).unwrap();
    s.wal(tick(&[("bad", 101)])).unwrap();
    s.seal(["bad"]).unwrap();
    s.finalize(ClockOffset {
        ts: 101,
        offset_ns: 0,
    })
    .unwrap();
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(segments(&a, 1, "bad"), vec![(0, 0, 101, 6)]);
}

#[test]
fn an_encoder_error_stops_the_writer_with_an_error_naming_the_stream() {
    encoder_failure_stops_the_writer(false);
}

#[test]
fn an_encoder_panic_stops_the_writer_with_an_error_naming_the_stream() {
    encoder_failure_stops_the_writer(true);
}

#[test]
fn sealing_a_stream_that_never_had_a_row_is_harmless_and_logged() {
    let logs = logs();
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    s.wal(tick(&[("a", 1)])).unwrap();
    s.seal(["typo"]).unwrap();
    s.sync().unwrap();
    assert_eq!(logs.count(&path, "\"typo\""), 1);
    drop(s);
    w.join().unwrap();
    assert_sound(&path);
}

fn segment_of(ts: &[i64]) -> dendro::Segment {
    dendro::segment::materialize("t", &FixtureEncoder::default(), "a", &rows_at(ts))
        .unwrap()
        .unwrap()
}

#[test]
fn an_adopted_segment_goes_in_at_the_next_seq_only_where_it_fits() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    s.wal(tick(&[("a", 1), ("a", 2)])).unwrap();
    s.seal(["a"]).unwrap();
    s.sync().unwrap();
    assert_eq!(
        s.adopt_segment("a", segment_of(&[1, 2])).unwrap(),
        Adopted::AlreadyHeld
    );
    let straddles = s.adopt_segment("a", segment_of(&[2, 3])).unwrap_err();
    assert!(
        straddles
            .to_string()
            .contains("across the stream's newest sealed row"),
        "{straddles}"
    );
    assert_eq!(
        s.adopt_segment("a", segment_of(&[3, 4])).unwrap(),
        Adopted::Inserted { seq: 1 }
    );
    s.wal(tick(&[("a", 10)])).unwrap();
    let reaches = s.adopt_segment("a", segment_of(&[5, 10])).unwrap_err();
    assert!(reaches.to_string().contains("unsealed row"), "{reaches}");
    assert_eq!(
        s.adopt_segment("b", segment_of(&[7])).unwrap(),
        Adopted::Inserted { seq: 0 },
        "a new stream"
    );
    // A row at or below an adopted segment is out of order like any other.
    s.wal(vec![(
        "b".to_string(),
        WalRow {
            ts: 7,
            wall_offset: 0,
            row: vec![0; 8],
        },
    )])
    .unwrap();
    assert_eq!(s.dropped_out_of_order(), 1);
    drop(s);
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "a"), vec![1, 2, 3, 4, 10]);
}

/// Drops the first row of every batch it is given, as an encoder may when
/// a leading run cannot be decoded on its own.
struct DropsTheFirstRow;

impl dendro::SegmentEncoder for DropsTheFirstRow {
    fn encode(&self, stream: &str, rows: &[WalRow]) -> Result<Option<dendro::Segment>, String> {
        FixtureEncoder::default().encode(stream, &rows[1.min(rows.len() - 1)..])
    }
}

#[test]
fn a_leading_run_the_encoder_dropped_leaves_nothing_unreachable() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer_with(&path, DropsTheFirstRow, WriterOptions::default());
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for ts in 1..=5 {
        s.wal(tick(&[("a", ts)])).unwrap();
    }
    s.seal(["a"]).unwrap();
    s.sync().unwrap();
    // Checked while the writer is still open, before any prune.
    let a = assert_sound(&path);
    assert_eq!(segments(&a, 1, "a"), vec![(0, 2, 5, 4)]);
    assert_eq!(stream_ts(&a, 1, "a"), vec![2, 3, 4, 5]);
    drop(s);
    w.join().unwrap();
}

#[test]
fn a_seal_asked_for_while_the_last_is_with_the_encoder_still_holds_exactly_its_rows() {
    use std::sync::Arc;
    let (_dir, path) = fresh("a.dendro");
    let gate = Arc::new(Gate::default());
    let enc = GatedEncoder {
        stream: "a".into(),
        gate: Arc::clone(&gate),
    };
    let options = WriterOptions {
        seal_policy: SealPolicy::never().rows(5),
        ..Default::default()
    };
    let w = writer_with(&path, enc, options);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for ts in 0..5 {
        s.wal(tick(&[("a", ts)])).unwrap();
    }
    gate.wait_arrival();
    let opener = {
        let gate = Arc::clone(&gate);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            gate.open();
        })
    };
    // The fifth row of the next segment waits for the first seal to land.
    for ts in 5..12 {
        s.wal(tick(&[("a", ts)])).unwrap();
    }
    opener.join().unwrap();
    s.sync().unwrap();
    let a = Archive::open(&path).unwrap();
    assert_eq!(segments(&a, 1, "a"), vec![(0, 0, 4, 5), (1, 5, 9, 5)]);
    drop(s);
    w.join().unwrap();
}

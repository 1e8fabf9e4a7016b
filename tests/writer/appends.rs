//! The append path's rules: durable and visible on return, out-of-order
//! rows dropped and counted (refused on a resumed source), a duplicate
//! costing only its own source, a lock retried and then the tick dropped,
//! and a stalled writer holding callers back instead of buffering.
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;
use crate::support::*;
use dendro::{Archive, ClockOffset, Error, Labels};

#[test]
fn an_append_is_readable_by_another_connection_when_wal_returns() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    let reader = Archive::open(&path).unwrap();
    for ts in 0..5 {
        s.wal(tick(&[("a", ts), ("b", ts)])).unwrap();
        assert_eq!(
            stream_ts(&reader, s.id(), "a"),
            (0..=ts).collect::<Vec<_>>()
        );
    }
    drop(s);
    w.join().unwrap();
}

#[test]
fn a_row_at_or_below_the_watermark_is_dropped_counted_and_logged_once_per_stream() {
    let logs = logs();
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for ts in 0..10 {
        s.wal(tick(&[("a", ts), ("c", ts)])).unwrap();
    }
    s.seal(["a", "c"]).unwrap();
    s.sync().unwrap();
    // 9 is the watermark: 9 and 5 are dropped, 10 is kept; the sibling
    // stream and a new stream take the same timestamps happily.
    s.wal(tick(&[("a", 9), ("a", 10), ("b", 5)])).unwrap();
    s.wal(tick(&[("a", 5), ("a", 11)])).unwrap();
    s.wal(tick(&[("c", 3), ("c", 12)])).unwrap();
    assert_eq!(s.dropped_out_of_order(), 3);
    assert_eq!(
        logs.count(&path, "stream \"a\": dropped a row"),
        1,
        "logged once for a"
    );
    assert_eq!(
        logs.count(&path, "stream \"c\": dropped a row"),
        1,
        "and once for c"
    );
    s.finalize(ClockOffset {
        ts: 12,
        offset_ns: 0,
    })
    .unwrap();
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(
        stream_ts(&a, 1, "a"),
        [(0..10).collect::<Vec<_>>(), vec![10, 11]].concat()
    );
    assert_eq!(stream_ts(&a, 1, "b"), vec![5]);
}

#[test]
fn a_row_already_handed_to_the_encoder_is_judged_as_if_its_seal_had_landed() {
    let (_dir, path) = fresh("a.dendro");
    let gate = Arc::new(Gate::default());
    let enc = GatedEncoder {
        stream: "a".into(),
        gate: Arc::clone(&gate),
    };
    let w = writer_with(&path, enc, Default::default());
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for ts in [10, 20, 30] {
        s.wal(tick(&[("a", ts)])).unwrap();
    }
    s.seal(["a"]).unwrap();
    gate.wait_arrival();
    // The seal of 10..=30 is with the encoder: 25 would land under it.
    s.wal(tick(&[("a", 25), ("a", 40)])).unwrap();
    assert_eq!(s.dropped_out_of_order(), 1);
    gate.open();
    s.sync().unwrap();
    drop(s);
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "a"), vec![10, 20, 30, 40]);
}

#[test]
fn a_resumed_source_refuses_an_out_of_order_row_at_the_call() {
    let (_dir, path) = fresh("a.dendro");
    {
        let w = writer(&path);
        let s = w.add_source(Labels::new(), Labels::new()).unwrap();
        s.wal(tick(&[("a", 1), ("b", 1)])).unwrap();
        drop(s);
        w.join().unwrap();
    }
    let w = dendro::Writer::open(&path, common::FixtureEncoder::default()).unwrap();
    let s = w.resume_source_at(1, 100).unwrap();
    assert_eq!(s.resumed_after(), Some(1));
    s.wal(tick(&[("a", 101), ("b", 101)])).unwrap();
    s.seal(["a"]).unwrap();
    s.sync().unwrap();
    // Not later than the previous session's newest row: refused whole.
    let err = s.wal(tick(&[("b", 102), ("c", 1)])).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TimelineBackwards {
                ts: 1,
                newest: 1,
                ..
            }
        ),
        "{err}"
    );
    // At the watermark of a stream sealed in this session: refused too.
    let err = s.wal(tick(&[("a", 101)])).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TimelineBackwards {
                ts: 101,
                newest: 101,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(s.dropped_out_of_order(), 0, "refused, not dropped");
    s.wal(tick(&[("a", 102)])).unwrap();
    drop(s);
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(
        stream_ts(&a, 1, "b"),
        vec![1, 101],
        "nothing of a refused call landed"
    );
    assert_eq!(stream_ts(&a, 1, "a"), vec![1, 101, 102]);
}

#[test]
fn a_duplicate_row_costs_only_the_colliding_source_its_tick() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let x = w
        .add_source(Labels::from([("host".into(), "x".into())]), Labels::new())
        .unwrap();
    let y = w
        .add_source(Labels::from([("host".into(), "y".into())]), Labels::new())
        .unwrap();
    let both = w
        .wal_tick(vec![
            (&x, tick(&[("a", 1), ("b", 1)])),
            (&y, tick(&[("a", 1)])),
        ])
        .unwrap();
    assert!(both.iter().all(Result::is_ok));
    // x repeats (a, 1) in a tick that also carries (b, 2): x loses the
    // whole tick, y's part commits in the same transaction.
    let outcome = w
        .wal_tick(vec![
            (&x, tick(&[("b", 2), ("a", 1)])),
            (&y, tick(&[("a", 2)])),
        ])
        .unwrap();
    assert!(
        matches!(&outcome[0], Err(Error::DuplicateRow { stream, ts: 1, .. }) if stream == "a"),
        "{:?}",
        outcome[0]
    );
    assert!(outcome[1].is_ok());
    // Through a source's own handle too, and the writer carries on.
    assert!(matches!(
        y.wal(tick(&[("a", 2)])),
        Err(Error::DuplicateRow { .. })
    ));
    x.wal(tick(&[("a", 3), ("b", 3)])).unwrap();
    y.wal(tick(&[("a", 3)])).unwrap();
    drop((x, y));
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "a"), vec![1, 3]);
    assert_eq!(
        stream_ts(&a, 1, "b"),
        vec![1, 3],
        "the tick's other row went with it"
    );
    assert_eq!(stream_ts(&a, 2, "a"), vec![1, 2, 3]);
}

/// Holds the archive's write lock from a second connection until `release`
/// says so.
fn lock_until(
    path: &std::path::Path,
    release: impl FnOnce() + Send + 'static,
) -> std::thread::JoinHandle<()> {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    std::thread::spawn(move || {
        release();
        conn.execute_batch("COMMIT").unwrap();
    })
}

/// Waits (with a guard against a hang, not a measurement) until the writer
/// of `path` has logged `n` warnings containing `needle`.
fn await_logged(path: &std::path::Path, needle: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while logs().count(path, needle) < n {
        assert!(
            Instant::now() < deadline,
            "never logged {needle:?} {n} times"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_lock_held_elsewhere_is_retried_and_then_the_tick_is_dropped_and_reported() {
    let (_dir, path) = fresh("a.dendro");
    logs();
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    s.wal(tick(&[("a", 1)])).unwrap();
    // A lock released after the writer's first retry is ridden out.
    let holder = {
        let path = path.clone();
        lock_until(&path.clone(), move || {
            await_logged(&path, "committing a tick failed", 1)
        })
    };
    s.wal(tick(&[("a", 2)])).unwrap();
    holder.join().unwrap();
    // One held through every retry: the tick is dropped and said so.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let holder = lock_until(&path, move || done_rx.recv().unwrap());
    let err = s.wal(tick(&[("a", 3)])).unwrap_err();
    done_tx.send(()).unwrap();
    holder.join().unwrap();
    assert!(
        matches!(err, Error::TickDropped { source_id: 1, .. }),
        "{err}"
    );
    assert_eq!(
        logs().count(&path, "committing a tick failed"),
        1 + 3,
        "the dropped tick was retried three times first"
    );
    // The writer is still up.
    s.wal(tick(&[("a", 4)])).unwrap();
    drop(s);
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "a"), vec![1, 2, 4]);
}

#[test]
fn calls_made_while_the_writer_waits_for_a_seal_are_all_answered_after_it() {
    // That the writer holds at most one of them meanwhile is pinned by a
    // unit test in `src/write/writer.rs`; this is the whole round trip.
    let (_dir, path) = fresh("a.dendro");
    let gate = Arc::new(Gate::default());
    let enc = GatedEncoder {
        stream: "slow".into(),
        gate: Arc::clone(&gate),
    };
    let w = Arc::new(writer_with(&path, enc, Default::default()));
    let s = Arc::new(w.add_source(Labels::new(), Labels::new()).unwrap());
    s.wal(tick(&[("slow", 1), ("a", 1)])).unwrap();
    s.seal(["slow"]).unwrap();
    gate.wait_arrival();
    let stall = {
        let w = Arc::clone(&w);
        std::thread::spawn(move || w.sync().unwrap())
    };
    // One stream per caller: their order of arrival is not the test's, and
    // rows of one stream out of order would be refused.
    let callers: Vec<_> = (2..5)
        .map(|ts| {
            let s = Arc::clone(&s);
            std::thread::spawn(move || s.wal(tick(&[(["a", "b", "c"][ts as usize - 2], ts)])))
        })
        .collect();
    gate.open();
    stall.join().unwrap();
    for caller in callers {
        caller.join().unwrap().unwrap();
    }
    drop(s);
    Arc::try_unwrap(w).unwrap().join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "a"), vec![1, 2]);
    assert_eq!(stream_ts(&a, 1, "b"), vec![3]);
    assert_eq!(stream_ts(&a, 1, "c"), vec![4]);
    assert_eq!(segments(&a, 1, "slow").len(), 1);
}

#[test]
fn a_duplicate_in_the_tick_that_carries_a_finished_seal_costs_the_seal_nothing() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for round in 0..20 {
        let base = round * 10;
        s.wal(tick(&[("b", base)])).unwrap();
        for ts in base..base + 5 {
            s.wal(tick(&[("a", ts)])).unwrap();
        }
        s.seal(["a"]).unwrap();
        // Whether the finished seal rides on this tick or lands on its
        // own, the collision costs only the tick.
        let err = s.wal(tick(&[("c", base), ("b", base)])).unwrap_err();
        assert!(matches!(err, Error::DuplicateRow { .. }), "{err}");
        s.wal(tick(&[("b", base + 5)])).unwrap();
    }
    s.sync().unwrap();
    drop(s);
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(segments(&a, 1, "a").len(), 20);
    assert!(stream_ts(&a, 1, "c").is_empty());
    assert_eq!(stream_ts(&a, 1, "a").len(), 100);
}

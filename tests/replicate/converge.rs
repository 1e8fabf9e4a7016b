//! A replica converges to its origin whatever the origin did to its own
//! file: segments merged by compaction (the replica lagging inside the
//! merged run, or holding every piece), a source without a uuid applied
//! again and again, metadata or labels changed while a subscriber is
//! connected.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use dendro::replicate::codec::Frame;
use dendro::replicate::transport::{serve_tcp, subscribe_tcp, write_catch_up};
use dendro::replicate::{Publisher, Subscriber};
use dendro::rewrite::{compact, CompactSpec, Target};
use dendro::{Archive, ClockOffset, Labels, SourceWriter, WalRow, Writer};
use serde_json::Value;

use crate::common::{fixture_row, FixtureEncoder};
use crate::round_trip::{assert_replica, replicated_view};
use crate::support::{apply_stream, catch_up_stream, decode_all, fixture_encoder};

/// Generous: the machine running the tests may be loaded.
const PATIENCE: Duration = Duration::from_secs(60);

fn origin(path: &Path) -> (Writer, SourceWriter) {
    let writer = Writer::create(path, FixtureEncoder::default()).unwrap();
    let labels: Labels = [("host".to_string(), "origin".to_string())].into();
    let source = writer.add_source(labels, Labels::new()).unwrap();
    (writer, source)
}

/// Rows `from..=to` of stream `cpu`, one per timestamp.
fn append(source: &SourceWriter, from: i64, to: i64) {
    let rows = (from..=to)
        .map(|ts| {
            (
                "cpu".to_string(),
                WalRow {
                    ts,
                    wall_offset: 3,
                    row: fixture_row(ts, "cpu"),
                },
            )
        })
        .collect();
    source.wal(rows).unwrap();
}

/// Rows `from..=to`, sealed as one segment.
fn sealed(source: &SourceWriter, from: i64, to: i64) {
    append(source, from, to);
    source.seal(["cpu"]).unwrap();
    source.sync().unwrap();
}

/// Finalizes the origin's source with its last clock observation at `ts`.
fn finalized(source: SourceWriter, ts: i64) {
    source.finalize(ClockOffset { ts, offset_ns: 3 }).unwrap();
}

fn compact_rows(path: &Path, rows: u64) {
    let spec = CompactSpec {
        target: Target::Rows(rows),
        union_fields: false,
    };
    let report = compact(path, &spec, |_| {}).unwrap();
    assert!(report.runs > 0, "{report:?}");
}

fn segment_spans(path: &Path) -> Vec<(i64, i64)> {
    Archive::open(path)
        .unwrap()
        .read_snapshot(|s| s.all_segments())
        .unwrap()
        .iter()
        .map(|r| (r.first_ts, r.last_ts))
        .collect()
}

/// What `assert_replica` compares, with `writer_sessions` left out (the
/// replica adds its own), and `None` while the replica cannot be read yet.
fn view_without_sessions(path: &Path) -> Option<Value> {
    if !path.exists() {
        return None;
    }
    let view = std::panic::catch_unwind(|| replicated_view(path)).ok()?;
    let mut view = view;
    for source in view.as_object_mut()?.values_mut() {
        source["writer_sessions"] = Value::Null;
    }
    Some(view)
}

/// Waits until the replica holds what the origin holds.
fn wait_converged(origin: &Path, replica: &Path, what: &str) {
    let start = Instant::now();
    loop {
        let want = view_without_sessions(origin);
        if want.is_some() && view_without_sessions(replica) == want {
            return;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "{what}: the replica did not converge to its origin in {PATIENCE:?}:\n{:#?}\n{:#?}",
            want,
            view_without_sessions(replica)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A publisher serving `origin` on a loopback port the system chose, and
/// the flag that stops it (and the subscriber connected to it).
fn serve(origin: &Path) -> (SocketAddr, &'static AtomicBool) {
    let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = origin.to_path_buf();
    std::thread::spawn(move || serve_tcp(&served, listener, Duration::from_millis(5), stop));
    (addr, stop)
}

/// A subscriber process: applies from `addr` into `replica` until `stop`,
/// then finishes. Any refusal fails the thread.
fn subscribe(
    replica: &Path,
    addr: SocketAddr,
    stop: &'static AtomicBool,
) -> std::thread::JoinHandle<dendro::replicate::Applied> {
    let replica = replica.to_path_buf();
    std::thread::spawn(move || {
        let mut sub = Subscriber::open(&replica, fixture_encoder()).unwrap();
        subscribe_tcp(&mut sub, addr, stop, |_, _| {}, |e| eprintln!("{e}")).unwrap();
        sub.finish().unwrap()
    })
}

fn paths(dir: &tempfile::TempDir) -> (PathBuf, PathBuf) {
    (dir.path().join("o.dendro"), dir.path().join("r.dendro"))
}

#[test]
fn a_replica_whose_watermark_lies_inside_a_merged_run_converges_over_a_catch_up_file() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = paths(&dir);
    let (writer, source) = origin(&origin_path);
    sealed(&source, 1, 10);
    sealed(&source, 11, 20);
    apply_stream(&catch_up_stream(&origin_path), &replica_path);
    sealed(&source, 21, 30);
    sealed(&source, 31, 40);
    append(&source, 41, 45);
    finalized(source, 45);
    writer.join().unwrap();
    compact_rows(&origin_path, 1000);
    assert_eq!(segment_spans(&origin_path), vec![(1, 40)]);
    // The replica's watermark (20) is inside the merged run (1..=40).
    let applied = apply_stream(&catch_up_stream(&origin_path), &replica_path);
    assert_eq!(applied.segments_replaced, 2, "{applied:?}");
    assert_replica(&origin_path, &replica_path);
    // And again: nothing changes.
    let again = apply_stream(&catch_up_stream(&origin_path), &replica_path);
    assert_eq!((again.segments, again.rows), (0, 0), "{again:?}");
    assert_replica(&origin_path, &replica_path);
}

#[test]
fn a_merged_run_holding_unshipped_segments_is_shipped_on_a_live_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = paths(&dir);
    let (writer, source) = origin(&origin_path);
    sealed(&source, 1, 10);
    sealed(&source, 11, 20);
    let mut publisher = Publisher::new(Archive::open(&origin_path).unwrap());
    let mut sub = Subscriber::open(&replica_path, fixture_encoder()).unwrap();
    for frame in publisher.poll().unwrap() {
        sub.apply(frame).unwrap();
    }
    // Two more segments the connection has not shipped, then the four
    // merged: the merged one takes seq 0, below what was shipped.
    sealed(&source, 21, 30);
    sealed(&source, 31, 40);
    append(&source, 41, 45);
    finalized(source, 45);
    writer.join().unwrap();
    compact_rows(&origin_path, 1000);
    for frame in publisher.poll().unwrap() {
        sub.apply(frame).unwrap();
    }
    let applied = sub.finish().unwrap();
    assert_eq!(applied.segments_replaced, 2, "{applied:?}");
    assert_replica(&origin_path, &replica_path);
}

#[test]
fn a_subscriber_over_tcp_converges_after_its_origin_compacts_before_and_during_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = paths(&dir);
    let (writer, source) = origin(&origin_path);
    sealed(&source, 1, 10);
    sealed(&source, 11, 20);
    append(&source, 21, 25);
    // First connection: the replica holds two segments and a live tail.
    let (addr, stop) = serve(&origin_path);
    let subscriber = subscribe(&replica_path, addr, stop);
    wait_converged(&origin_path, &replica_path, "first connection");
    stop.store(true, Ordering::Relaxed);
    subscriber.join().unwrap();
    // Offline, the origin seals on and merges a run across the replica's
    // watermark (1..=30 over a replica that holds up to 20 sealed).
    sealed(&source, 26, 30);
    sealed(&source, 31, 40);
    append(&source, 41, 45);
    finalized(source, 45);
    writer.join().unwrap();
    compact_rows(&origin_path, 30);
    assert_eq!(segment_spans(&origin_path), vec![(1, 30), (31, 40)]);
    // Second connection: the lagging replica catches up...
    let (addr, stop) = serve(&origin_path);
    let subscriber = subscribe(&replica_path, addr, stop);
    wait_converged(&origin_path, &replica_path, "after a reconnect");
    // ... and follows a compaction made while it is connected, of
    // segments it holds every piece of.
    compact_rows(&origin_path, 1000);
    assert_eq!(segment_spans(&origin_path), vec![(1, 40)]);
    wait_converged(&origin_path, &replica_path, "on a live connection");
    stop.store(true, Ordering::Relaxed);
    let applied = subscriber.join().unwrap();
    assert!(applied.segments_replaced >= 2, "{applied:?}");
    assert_replica(&origin_path, &replica_path);
    let report = Archive::open(&replica_path).unwrap().verify().unwrap();
    assert!(report.sound, "{:?}", report.problems);
}

/// An origin whose one source has no uuid, as archives written before the
/// column existed: sealed and live rows, finalized.
fn uuidless_origin(path: &Path) {
    let (writer, source) = origin(path);
    sealed(&source, 1, 10);
    append(&source, 11, 15);
    finalized(source, 15);
    writer.join().unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute("UPDATE sources SET uuid = NULL", []).unwrap();
    drop(conn);
    let archive = Archive::open(path).unwrap();
    let sources = archive.read_snapshot(|s| s.sources()).unwrap();
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0].source.uuid, None);
}

/// The replica holds exactly one source, equal to the origin's one.
fn assert_one_source_like_the_origin(origin: &Path, replica: &Path) {
    let want = view_without_sessions(origin).unwrap();
    let got = view_without_sessions(replica).unwrap();
    let (want, got) = (want.as_object().unwrap(), got.as_object().unwrap());
    assert_eq!(got.len(), 1, "the replica holds {} sources", got.len());
    assert_eq!(want.values().next(), got.values().next());
}

#[test]
fn one_catch_up_of_a_source_without_uuid_applied_three_times_gives_one_source() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = paths(&dir);
    uuidless_origin(&origin_path);
    let stream = catch_up_stream(&origin_path);
    let first = apply_stream(&stream, &replica_path);
    for _ in 0..2 {
        let again = apply_stream(&stream, &replica_path);
        assert_eq!((again.segments, again.rows), (0, 0), "{again:?}");
        assert_eq!(again.segments_held, first.segments);
        assert_eq!(again.rows_held, first.rows);
    }
    assert_one_source_like_the_origin(&origin_path, &replica_path);
}

#[test]
fn reconnecting_over_tcp_to_a_source_without_uuid_keeps_one_source() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = paths(&dir);
    uuidless_origin(&origin_path);
    // A publisher that serves one catch-up per connection and hangs up,
    // three times: the subscriber reconnects after each.
    let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = origin_path.clone();
    let server = std::thread::spawn(move || {
        for _ in 0..3 {
            let (conn, _) = listener.accept().unwrap();
            write_catch_up(&served, conn, "test").unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let mut sub = Subscriber::open(&replica_path, fixture_encoder()).unwrap();
    subscribe_tcp(&mut sub, addr, stop, |_, _| {}, |e| eprintln!("{e}")).unwrap();
    server.join().unwrap();
    let applied = sub.finish().unwrap();
    assert_eq!(applied.segments, 1, "{applied:?}");
    assert_eq!(applied.rows, 5, "{applied:?}");
    assert_one_source_like_the_origin(&origin_path, &replica_path);
}

fn replica_source(path: &Path) -> Option<dendro::SourceRecord> {
    if !path.exists() {
        return None;
    }
    let archive = Archive::open(path).ok()?;
    archive
        .read_snapshot(|s| s.sources())
        .ok()?
        .into_iter()
        .next()
}

#[test]
fn metadata_changed_at_the_origin_reaches_a_connected_replica_without_reconnect() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = paths(&dir);
    let (writer, source) = origin(&origin_path);
    sealed(&source, 1, 10);
    append(&source, 11, 15);
    let (addr, stop) = serve(&origin_path);
    let subscriber = subscribe(&replica_path, addr, stop);
    wait_converged(&origin_path, &replica_path, "catch-up");
    source
        .update_metadata([("site".to_string(), Some("lab-2".to_string()))].into())
        .unwrap();
    let start = Instant::now();
    loop {
        let held =
            replica_source(&replica_path).and_then(|s| s.source.metadata.get("site").cloned());
        if held.as_deref() == Some("lab-2") {
            break;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the replica's file still says {held:?} after {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let applied = subscriber.join().unwrap();
    assert!(applied.source_updates >= 1, "{applied:?}");
    finalized(source, 15);
    writer.join().unwrap();
}

#[test]
fn a_second_handshake_writes_labels_metadata_and_a_resume_to_the_replica_file() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = paths(&dir);
    let (writer, source) = origin(&origin_path);
    sealed(&source, 1, 10);
    finalized(source, 10);
    writer.join().unwrap();
    let frames = decode_all(&catch_up_stream(&origin_path));
    let mut sub = Subscriber::open(&replica_path, fixture_encoder()).unwrap();
    let mut restated = None;
    for frame in frames {
        if let Frame::Handshake {
            source,
            row:
                dendro::catalog::NewSource {
                    uuid,
                    labels,
                    metadata,
                    clock_anchor_wall_ns,
                    complete,
                },
        } = &frame
        {
            assert!(complete);
            let mut labels = labels.clone();
            labels.insert("host".into(), "renamed".into());
            let mut metadata = metadata.clone();
            metadata.insert("site".into(), "lab-3".into());
            restated = Some(Frame::Handshake {
                source: *source,
                row: dendro::catalog::NewSource {
                    uuid: uuid.clone(),
                    labels,
                    metadata,
                    clock_anchor_wall_ns: *clock_anchor_wall_ns,
                    complete: false,
                },
            });
        }
        sub.apply(frame).unwrap();
    }
    sub.sync().unwrap();
    assert!(replica_source(&replica_path).unwrap().source.complete);
    // The origin says it again, renamed, with a new key and resumed.
    sub.apply(restated.unwrap()).unwrap();
    sub.sync().unwrap();
    let held = replica_source(&replica_path).unwrap();
    assert_eq!(
        held.source.labels.get("host").map(String::as_str),
        Some("renamed")
    );
    assert_eq!(
        held.source.metadata.get("site").map(String::as_str),
        Some("lab-3")
    );
    assert!(
        !held.source.complete,
        "the origin resumed; the replica is not complete"
    );
    // The replica's own session is still recorded after the origin's.
    let sessions: Vec<Value> =
        serde_json::from_str(held.source.metadata.get("writer_sessions").unwrap()).unwrap();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    sub.finish().unwrap();
}

/// An origin of two sealed segments and a finalized live tail, already
/// applied to the replica; then projected to one column into `projected`.
fn projected_origin(dir: &tempfile::TempDir) -> (PathBuf, PathBuf, PathBuf) {
    let (origin_path, replica_path) = paths(dir);
    let (writer, source) = origin(&origin_path);
    sealed(&source, 1, 10);
    sealed(&source, 11, 20);
    append(&source, 21, 25);
    finalized(source, 25);
    writer.join().unwrap();
    apply_stream(&catch_up_stream(&origin_path), &replica_path);
    let projected = dir.path().join("projected.dendro");
    dendro::rewrite::project(&origin_path, &projected, &["value".to_string()], false).unwrap();
    (origin_path, replica_path, projected)
}

fn uuids(path: &Path) -> Vec<Option<String>> {
    let archive = Archive::open(path).unwrap();
    let description = dendro::read::describe(&archive).unwrap();
    description
        .sources
        .iter()
        .map(|s| s.source.uuid.clone())
        .collect()
}

#[test]
fn a_replica_follows_its_origin_rewritten_in_place_under_the_same_uuid() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path, projected) = projected_origin(&dir);
    // Same spans, other bytes, and the source's own uuid kept (as a
    // re-encode in place keeps it): each segment replaces its counterpart.
    let uuid = uuids(&origin_path).remove(0).unwrap();
    let conn = rusqlite::Connection::open(&projected).unwrap();
    conn.execute("UPDATE sources SET uuid = ?1", [&uuid])
        .unwrap();
    drop(conn);
    std::fs::rename(&projected, &origin_path).unwrap();
    let applied = apply_stream(&catch_up_stream(&origin_path), &replica_path);
    assert_eq!(applied.segments_replaced, 2, "{applied:?}");
    assert_replica(&origin_path, &replica_path);
}

#[test]
fn a_projection_moved_over_the_origin_reaches_the_replica_as_a_source_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path, projected) = projected_origin(&dir);
    let before = uuids(&origin_path);
    std::fs::rename(&projected, &origin_path).unwrap();
    let after = uuids(&origin_path);
    assert_ne!(before, after, "a projection is a source of its own");
    let applied = apply_stream(&catch_up_stream(&origin_path), &replica_path);
    assert_eq!(
        (applied.sources, applied.segments, applied.segments_replaced),
        (1, 2, 0),
        "{applied:?}"
    );
    // The replica keeps what it held and gains the projection beside it.
    let mut held = uuids(&replica_path);
    held.sort();
    let mut expected = [before, after].concat();
    expected.sort();
    assert_eq!(held, expected);
}

#[test]
fn a_replica_follows_its_origin_finalized_then_resumed_in_a_new_session() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = paths(&dir);
    let (writer, source) = origin(&origin_path);
    let uuid = source.uuid().to_string();
    sealed(&source, 1, 10);
    finalized(source, 10);
    writer.join().unwrap();
    apply_stream(&catch_up_stream(&origin_path), &replica_path);
    assert!(replica_source(&replica_path).unwrap().source.complete);
    // Resumed and still being written: the replica is no longer complete.
    let writer = Writer::open(&origin_path, FixtureEncoder::default()).unwrap();
    let source = writer.resume_source_at(uuid.as_str(), 100).unwrap();
    sealed(&source, 101, 110);
    append(&source, 111, 115);
    apply_stream(&catch_up_stream(&origin_path), &replica_path);
    assert_replica(&origin_path, &replica_path);
    assert!(!replica_source(&replica_path).unwrap().source.complete);
    // Finalized again: so is the replica.
    finalized(source, 115);
    writer.join().unwrap();
    apply_stream(&catch_up_stream(&origin_path), &replica_path);
    assert_replica(&origin_path, &replica_path);
    assert!(replica_source(&replica_path).unwrap().source.complete);
}

#[test]
fn a_replica_keeps_what_its_origin_evicted_and_goes_on_following_it() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = paths(&dir);
    let (writer, source) = origin(&origin_path);
    sealed(&source, 1, 10);
    sealed(&source, 11, 20);
    apply_stream(&catch_up_stream(&origin_path), &replica_path);
    source.evict_before(15).unwrap();
    sealed(&source, 21, 30);
    assert_eq!(segment_spans(&origin_path), vec![(11, 20), (21, 30)]);
    let applied = apply_stream(&catch_up_stream(&origin_path), &replica_path);
    assert_eq!(
        (applied.segments, applied.segments_held),
        (1, 1),
        "{applied:?}"
    );
    // No delete travels: the replica holds the evicted segment still.
    assert_eq!(
        segment_spans(&replica_path),
        vec![(1, 10), (11, 20), (21, 30)]
    );
    finalized(source, 30);
    writer.join().unwrap();
}

#[test]
fn a_replica_cut_differently_from_its_origin_converges_to_its_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = paths(&dir);
    let (writer, source) = origin(&origin_path);
    sealed(&source, 1, 10);
    sealed(&source, 11, 15);
    sealed(&source, 16, 20);
    apply_stream(&catch_up_stream(&origin_path), &replica_path);
    sealed(&source, 21, 25);
    finalized(source, 25);
    writer.join().unwrap();
    // Each side compacts on its own, cutting the stream at other places:
    // the origin's 16..=25 straddles the start of the replica's 1..=20.
    compact_rows(&replica_path, 20);
    assert_eq!(segment_spans(&replica_path), vec![(1, 20)]);
    compact_rows(&origin_path, 15);
    assert_eq!(segment_spans(&origin_path), vec![(1, 15), (16, 25)]);
    let applied = apply_stream(&catch_up_stream(&origin_path), &replica_path);
    assert_eq!(applied.segments_replaced, 1, "{applied:?}");
    // The replica's 1..=20 was cut to 1..=15 and the origin's 16..=25
    // put after it: every row once.
    assert_eq!(segment_spans(&replica_path), vec![(1, 15), (16, 25)]);
    let sealed_rows = |path: &Path| {
        Archive::open(path)
            .unwrap()
            .read_snapshot(|s| s.all_segments())
            .unwrap()
            .iter()
            .map(|r| r.rows)
            .sum::<i64>()
    };
    assert_eq!(sealed_rows(&replica_path), 25);
    // The cut segment is the replica's own encoding of the origin's rows;
    // the next catch-up replaces it by the origin's, byte for byte.
    apply_stream(&catch_up_stream(&origin_path), &replica_path);
    assert_replica(&origin_path, &replica_path);
    let report = Archive::open(&replica_path).unwrap().verify().unwrap();
    assert!(report.sound, "{:?}", report.problems);
}

//! The live path: a writer appends and seals while a publisher tails it
//! over TCP on loopback and a subscriber applies; then a soak of kills.

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::time::Duration;

use dendro::replicate::transport::{apply_stream, serve_tcp, subscribe_tcp};
use dendro::replicate::{codec::preamble, Publisher, Subscriber};
use dendro::{Archive, ClockOffset, Labels, SourceWriter, WalRow, Writer};

use crate::common::{fixture_row, FixtureEncoder};
use crate::round_trip::assert_replica;
use crate::support::fixture_encoder;

const STREAMS: [&str; 3] = ["cpu", "mem", "net"];

fn origin(path: &std::path::Path) -> (Writer, SourceWriter) {
    let writer = Writer::create(path, FixtureEncoder::default()).unwrap();
    let labels: Labels = [("host".to_string(), "live".to_string())].into();
    let source = writer.add_source(labels, Labels::new()).unwrap();
    (writer, source)
}

fn append(source: &SourceWriter, ts: i64, stream: &str) {
    source
        .wal(vec![(
            stream.to_string(),
            WalRow {
                ts,
                wall_offset: 3,
                row: fixture_row(ts, stream),
            },
        )])
        .unwrap();
}

#[test]
fn a_subscriber_over_tcp_holds_every_row_once_the_writer_finalizes() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = (dir.path().join("o.dendro"), dir.path().join("r.dendro"));
    let (writer, source) = origin(&origin_path);
    append(&source, 1, "cpu");
    let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = origin_path.clone();
    std::thread::spawn(move || serve_tcp(&served, listener, Duration::from_millis(5), stop));
    let (done_tx, done) = channel();
    let replica = replica_path.clone();
    let subscriber = std::thread::spawn(move || {
        let mut sub = Subscriber::open(&replica, fixture_encoder()).unwrap();
        let mut told = false;
        subscribe_tcp(
            &mut sub,
            addr,
            stop,
            |applied, _| {
                if applied.finalized > 0 && !told {
                    told = true;
                    let _ = done_tx.send(());
                }
            },
            |e| panic!("{e}"),
        )
        .unwrap();
        sub.finish().unwrap()
    });
    let mut ts = 1;
    for round in 0..30 {
        for _ in 0..20 {
            ts += 1;
            append(&source, ts, STREAMS[(ts % 3) as usize]);
        }
        if round % 4 == 3 {
            source.seal(STREAMS).unwrap();
            source.sync().unwrap();
        }
    }
    source.finalize(ClockOffset { ts, offset_ns: 3 }).unwrap();
    writer.join().unwrap();
    // The replica is finalized once it has applied the interval in which
    // the publisher saw the origin complete: everything up to it.
    done.recv().unwrap();
    stop.store(true, Ordering::Relaxed);
    let applied = subscriber.join().unwrap();
    assert_eq!(applied.gaps, 0);
    assert_eq!(applied.rows_skipped, 0);
    assert_replica(&origin_path, &replica_path);
}

/// A deterministic PRNG (SplitMix64).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

/// One connection's bytes: the preamble and a few polls, with the origin
/// appending and sealing between them.
fn connection(
    origin: &std::path::Path,
    source: &SourceWriter,
    rng: &mut Rng,
    ts: &mut i64,
) -> Vec<u8> {
    let mut publisher = Publisher::new(Archive::open(origin).unwrap());
    let mut bytes = preamble().to_vec();
    for _ in 0..1 + rng.below(4) {
        for _ in 0..rng.below(30) {
            *ts += 1 + rng.below(3) as i64;
            append(source, *ts, STREAMS[rng.below(3) as usize]);
        }
        if rng.below(3) == 0 {
            source.seal(STREAMS).unwrap();
            source.sync().unwrap();
        }
        for frame in publisher.poll().unwrap() {
            frame.encode_into(&mut bytes);
        }
    }
    bytes
}

#[test]
fn a_soak_of_publisher_and_subscriber_kills_loses_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = (dir.path().join("o.dendro"), dir.path().join("r.dendro"));
    let (writer, source) = origin(&origin_path);
    let mut rng = Rng(42);
    let mut ts = 0;
    let mut subscriber = Some(Subscriber::open(&replica_path, fixture_encoder()).unwrap());
    let (mut publisher_kills, mut subscriber_kills) = (0, 0);
    for _ in 0..60 {
        let bytes = connection(&origin_path, &source, &mut rng, &mut ts);
        // The publisher is killed at a random byte (or finishes its stream).
        let cut = if rng.below(4) == 0 {
            bytes.len()
        } else {
            publisher_kills += 1;
            preamble().len() + rng.below((bytes.len() - preamble().len()) as u64) as usize
        };
        // The subscriber is killed after a random number of frames (or not).
        let frames_before_kill = (rng.below(3) == 0).then(|| rng.below(40));
        let sub = subscriber
            .get_or_insert_with(|| Subscriber::open(&replica_path, fixture_encoder()).unwrap());
        let mut applied_here = 0;
        let outcome = apply_stream(sub, &bytes[..cut], "soak", |_, _| applied_here += 1);
        match outcome {
            Ok(()) => assert_eq!(cut, bytes.len()),
            Err(e) => assert!(cut < bytes.len(), "{e}"),
        }
        if frames_before_kill.is_some_and(|n| applied_here >= n) {
            // Killed: gone without finishing; the next round restarts it.
            drop(subscriber.take());
            subscriber_kills += 1;
        }
    }
    source.finalize(ClockOffset { ts, offset_ns: 3 }).unwrap();
    writer.join().unwrap();
    // A last clean connection carries what the kills left behind.
    let mut sub = subscriber
        .take()
        .unwrap_or_else(|| Subscriber::open(&replica_path, fixture_encoder()).unwrap());
    let mut publisher = Publisher::new(Archive::open(&origin_path).unwrap());
    let mut bytes = preamble().to_vec();
    for frame in publisher.poll().unwrap() {
        frame.encode_into(&mut bytes);
    }
    apply_stream(&mut sub, &bytes[..], "final", |_, _| {}).unwrap();
    sub.finish().unwrap();
    assert!(publisher_kills >= 24, "{publisher_kills} publisher kills");
    assert!(
        subscriber_kills >= 12,
        "{subscriber_kills} subscriber kills"
    );
    assert_replica(&origin_path, &replica_path);
    let replica = Archive::open(&replica_path).unwrap();
    let report = replica.verify().unwrap();
    assert!(report.sound, "{:?}", report.problems);
}

//! Real kills over the snapshot path: `dendro subscribe --connect` starts
//! a new replica from an image while `dendro publish --listen` sends it,
//! and one side or the other is SIGKILLed at a random moment of the
//! catch-up. After every kill the replica's path holds nothing or a whole
//! archive of the origin; at the end the replica equals the origin (every
//! sealed row, segment digest and caller row, each once).
//!
//! CI runs a few kills of each side (`DENDRO_SNAPSHOT_KILLS`, default 3);
//! `scripts/soak-replicate.sh` runs dozens.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use dendro::container::STAGING_SUFFIX;
use dendro::{Archive, ClockOffset, Labels, Writer};

use crate::common::FixtureEncoder;
use crate::kill::{append, dendro, kill, seal_batches, with_suffix};
use crate::round_trip::assert_replica;

/// Starts `dendro subscribe REPLICA --connect` without waiting for it;
/// its progress lines on a pipe.
fn subscriber(replica: &Path, port: u16) -> Child {
    dendro()
        .arg("subscribe")
        .arg(replica)
        .args(["--connect", &format!("127.0.0.1:{port}"), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits for `child`'s first progress line (the replica is in place).
fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

/// A small xorshift, seeded from the clock and printed, so a failing run
/// can be repeated with `DENDRO_KILL_SEED`.
struct Moments(u64);

impl Moments {
    fn new() -> Moments {
        let seed = std::env::var("DENDRO_KILL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| dendro::write::wall_clock_ns() as u64 | 1);
        eprintln!("kill moments: DENDRO_KILL_SEED={seed}");
        Moments(seed)
    }

    /// A moment in `0..=span`.
    fn within(&mut self, span: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        span.mul_f64((self.0 % 10_000) as f64 / 10_000.0)
    }
}

/// Nothing at `replica`, or an archive of the origin's one source that is
/// sound: never half of one.
fn nothing_or_whole(replica: &Path, round: usize) -> bool {
    if !replica.exists() {
        return false;
    }
    let archive = Archive::open(replica).unwrap_or_else(|e| panic!("round {round}: {e}"));
    assert!(archive.verify().unwrap().sound, "round {round}");
    let sources = archive.read_snapshot(|s| s.sources()).unwrap();
    assert_eq!(sources.len(), 1, "round {round}");
    true
}

fn remove_replica(replica: &Path) {
    for suffix in ["", "-wal", "-shm", STAGING_SUFFIX] {
        let _ = std::fs::remove_file(with_suffix(replica, suffix));
    }
}

#[test]
fn kills_of_either_side_during_a_snapshot_leave_nothing_or_a_whole_replica() {
    let kills: usize = std::env::var("DENDRO_SNAPSHOT_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let (origin, replica) = (dir.path().join("o.dendro"), dir.path().join("r.dendro"));
    let images = dir.path().join("images");
    std::fs::create_dir(&images).unwrap();
    let writer = Writer::create(&origin, FixtureEncoder::default()).unwrap();
    let source = writer
        .add_source([("host".into(), "snap".into())].into(), Labels::new())
        .unwrap();
    // A few MB of sealed segments, so an image takes a while to send.
    let mut ts = seal_batches(&source, 80);
    source.sync().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = dir.path().join("publish.log");
    let start_publisher = || publisher_in(&origin, port, &images, &log);
    let mut publishing = start_publisher();
    // One whole catch-up, timed, to spread the kills over.
    let started = Instant::now();
    let mut whole = subscriber(&replica, port);
    assert!(first_line(&mut whole).contains("\"snapshots\":1"));
    let took = started.elapsed();
    kill(&mut whole);
    assert!(nothing_or_whole(&replica, 0));
    let mut moments = Moments::new();
    let (mut nothing, mut whole_after) = (0, 0);
    for round in 1..=2 * kills {
        remove_replica(&replica);
        // The origin keeps changing between images.
        for _ in 0..30 {
            ts += 1;
            append(&source, ts);
        }
        source.sync().unwrap();
        let mut subscribing = subscriber(&replica, port);
        std::thread::sleep(moments.within(took.mul_f64(1.2)));
        if round % 2 == 0 {
            kill(&mut publishing);
            publishing = start_publisher();
            // The subscriber reconnects and finishes from a new image.
            let line = first_line(&mut subscribing);
            assert!(line.starts_with('{'), "round {round}: {line:?}");
            kill(&mut subscribing);
            assert!(nothing_or_whole(&replica, round), "round {round}: finished");
        } else {
            kill(&mut subscribing);
        }
        if nothing_or_whole(&replica, round) {
            whole_after += 1;
        } else {
            nothing += 1;
            assert!(!with_suffix(&replica, "-wal").exists(), "round {round}");
        }
    }
    eprintln!(
        "{} kills: nothing left {nothing}, a whole replica {whole_after}",
        2 * kills
    );
    // The last replica (or none) is brought up to date live, and the
    // origin's last rows and seal reach it.
    let mut subscribing = subscriber(&replica, port);
    first_line(&mut subscribing);
    for _ in 0..50 {
        ts += 1;
        append(&source, ts);
    }
    source.seal(["cpu", "mem", "net"]).unwrap();
    source.finalize(ClockOffset { ts, offset_ns: 1 }).unwrap();
    writer.join().unwrap();
    let mut lines = BufReader::new(subscribing.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    for line in lines.by_ref() {
        if line.unwrap().contains("\"finalized\":1") || Instant::now() > deadline {
            break;
        }
    }
    kill(&mut subscribing);
    kill(&mut publishing);
    assert_replica(&origin, &replica);
    assert!(Archive::open(&replica).unwrap().verify().unwrap().sound);
    // Images of killed publishers were discarded by the next one.
    let left: Vec<_> = std::fs::read_dir(&images)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "images left behind: {left:?}");
}

/// `dendro publish ORIGIN --listen` with its images made in `images` and
/// its log appended to `log`; returns once it listens.
fn publisher_in(origin: &Path, port: u16, images: &Path, log: &Path) -> Child {
    let before = std::fs::read_to_string(log).map_or(0, |t| t.matches("publishing").count());
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let child = dendro()
        .arg("publish")
        .arg(origin)
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--interval-ms",
            "10",
            "--snapshot-dir",
        ])
        .arg(images)
        .stderr(Stdio::from(out))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(log).map_or(0, |t| t.matches("publishing").count()) == before {
        assert!(Instant::now() < deadline, "the publisher did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

//! Real kills: `dendro publish --listen` and `dendro subscribe --connect`
//! run as processes and are each killed (SIGKILL) dozens of times while a
//! writer appends and seals, each restart waiting for the process to say it
//! is up rather than for time to pass. The final replica equals the origin.
//! And a subscriber catching up into a new replica is killed at moments
//! spread over the whole catch-up: its path holds nothing or a whole
//! archive, never half of one.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use dendro::container::STAGING_SUFFIX;
use dendro::{Archive, ClockOffset, Labels, SourceWriter, WalRow, Writer};

use crate::common::{fixture_row, FixtureEncoder};
use crate::round_trip::assert_replica;

pub(crate) fn dendro() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dendro"))
}

/// Starts the publisher and returns once it listens (its first line).
pub(crate) fn publisher(origin: &Path, port: u16) -> Child {
    let mut child = dendro()
        .arg("publish")
        .arg(origin)
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--interval-ms",
            "10",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("publishing"), "{line}");
    child
}

/// Starts the subscriber over TCP and returns once it has applied a
/// frame (its first progress line).
fn subscriber(replica: &Path, port: u16) -> Child {
    subscriber_with(replica, &["--connect".into(), format!("127.0.0.1:{port}")])
}

/// Starts `dendro subscribe OUT ARGS --json` and returns once it has
/// applied a frame (its first progress line).
fn subscriber_with(replica: &Path, args: &[String]) -> Child {
    let mut child = dendro()
        .arg("subscribe")
        .arg(replica)
        .args(args)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with('{'), "{line:?}");
    child
}

pub(crate) fn kill(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

pub(crate) fn append(source: &SourceWriter, ts: i64) {
    let stream = ["cpu", "mem", "net"][(ts % 3) as usize];
    let row = WalRow {
        ts,
        wall_offset: 1,
        row: fixture_row(ts, stream),
    };
    source.wal(vec![(stream.to_string(), row)]).unwrap();
}

/// Writes `batches` batches of 600 rows spread over three streams, each
/// batch sealed: enough sealed segments that a catch-up takes a while.
/// Returns the last timestamp written.
pub(crate) fn seal_batches(source: &SourceWriter, batches: usize) -> i64 {
    let mut ts = 0;
    for _ in 0..batches {
        let rows = (0..600)
            .map(|_| {
                ts += 1;
                let stream = ["cpu", "mem", "net"][(ts % 3) as usize];
                let row = WalRow {
                    ts,
                    wall_offset: 1,
                    row: fixture_row(ts, stream),
                };
                (stream.to_string(), row)
            })
            .collect();
        source.wal(rows).unwrap();
        source.seal(["cpu", "mem", "net"]).unwrap();
    }
    ts
}

#[test]
fn killed_publishers_and_subscribers_restart_into_an_equal_replica() {
    let dir = tempfile::tempdir().unwrap();
    let (origin, replica) = (dir.path().join("o.dendro"), dir.path().join("r.dendro"));
    let writer = Writer::create(&origin, FixtureEncoder::default()).unwrap();
    let source = writer
        .add_source([("host".into(), "k".into())].into(), Labels::new())
        .unwrap();
    append(&source, 1);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut publishing = publisher(&origin, port);
    let mut subscribing = subscriber(&replica, port);
    let mut ts = 1;
    for round in 0..40u64 {
        for _ in 0..(round * 7919) % 40 {
            ts += 1;
            append(&source, ts);
        }
        if round % 3 == 0 {
            source.seal(["cpu", "mem", "net"]).unwrap();
            source.sync().unwrap();
        }
        if round % 2 == 0 {
            kill(&mut subscribing);
            subscribing = subscriber(&replica, port);
        } else {
            kill(&mut publishing);
            publishing = publisher(&origin, port);
        }
    }
    kill(&mut subscribing);
    kill(&mut publishing);
    source.finalize(ClockOffset { ts, offset_ns: 1 }).unwrap();
    writer.join().unwrap();
    // What the kills left behind arrives in one last catch-up, by file.
    let stream = publish_to_file(&origin, &dir.path().join("catch-up.bin"));
    let status = dendro()
        .arg("subscribe")
        .arg(&replica)
        .arg("--from")
        .arg(&stream)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert_replica(&origin, &replica);
    assert!(Archive::open(&replica).unwrap().verify().unwrap().sound);
}

/// Runs `dendro publish ORIGIN --to STREAM` to the end: a whole catch-up
/// by file. Returns `stream`.
fn publish_to_file(origin: &Path, stream: &Path) -> std::path::PathBuf {
    let status = dendro()
        .arg("publish")
        .arg(origin)
        .arg("--to")
        .arg(stream)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "dendro publish --to {}", stream.display());
    stream.to_path_buf()
}

/// Starts `dendro subscribe OUT --from STREAM` and returns once it has
/// applied a frame (its first progress line).
fn subscriber_from(replica: &Path, stream: &Path) -> Child {
    subscriber_with(replica, &["--from".into(), stream.display().to_string()])
}

pub(crate) fn with_suffix(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    name.into()
}

fn segment_count(path: &Path) -> usize {
    Archive::open(path)
        .unwrap()
        .read_snapshot(|s| Ok(s.all_segments()?.len()))
        .unwrap()
}

#[test]
fn a_subscriber_killed_during_a_staged_catch_up_leaves_no_replica_or_a_whole_one() {
    let dir = tempfile::tempdir().unwrap();
    let (origin, replica) = (dir.path().join("o.dendro"), dir.path().join("r.dendro"));
    let staging = with_suffix(&replica, STAGING_SUFFIX);
    let writer = Writer::create(&origin, FixtureEncoder::default()).unwrap();
    let source = writer
        .add_source([("host".into(), "s".into())].into(), Labels::new())
        .unwrap();
    let mut ts = seal_batches(&source, 60);
    for _ in 0..50 {
        ts += 1;
        append(&source, ts);
    }
    source.sync().unwrap();
    source.finalize(ClockOffset { ts, offset_ns: 1 }).unwrap();
    writer.join().unwrap();
    let segments = segment_count(&origin);
    assert!(segments >= 150, "{segments}");
    let stream = publish_to_file(&origin, &dir.path().join("catch-up.bin"));
    let remove_replica = || {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(with_suffix(&replica, suffix));
        }
    };
    // One whole run, timed, to spread the kills over.
    let started = Instant::now();
    let mut whole = subscriber_from(&replica, &stream);
    assert!(whole.wait().unwrap().success());
    let took = started.elapsed();
    assert_replica(&origin, &replica);
    remove_replica();
    let (mut staged, mut promoted) = (0, 0);
    let rounds = 16u32;
    for round in 0..rounds {
        let mut child = subscriber_from(&replica, &stream);
        std::thread::sleep(took.mul_f64(f64::from(round) / f64::from(rounds)));
        kill(&mut child);
        if replica.exists() {
            // Moved into place, so whole: sound, with every segment.
            assert!(Archive::open(&replica).unwrap().verify().unwrap().sound);
            assert_eq!(segment_count(&replica), segments, "round {round}");
            promoted += 1;
            remove_replica();
        } else {
            assert!(
                staging.exists(),
                "round {round}: neither replica nor staging"
            );
            staged += 1;
        }
    }
    eprintln!("kills: {staged} during the staged catch-up, {promoted} after its move");
    assert!(
        staged > 0,
        "no kill landed in the staged catch-up ({promoted} after it)"
    );
    // Whatever the last kill left, the next run finishes the replica.
    let mut last = subscriber_from(&replica, &stream);
    assert!(last.wait().unwrap().success());
    assert!(!staging.exists(), "the staging file was left behind");
    assert_replica(&origin, &replica);
    assert!(Archive::open(&replica).unwrap().verify().unwrap().sound);
}

/// Sends `signal` to `child` and waits for it to exit, for at most a
/// generous while.
#[cfg(target_os = "linux")]
fn signal_and_wait(child: &mut Child, signal: libc::c_int) -> std::process::ExitStatus {
    // SAFETY: a plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            kill(child);
            panic!("still running a minute after signal {signal}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
#[cfg(target_os = "linux")]
fn an_interrupt_stops_a_live_subscriber_and_publisher_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (origin, replica) = (dir.path().join("o.dendro"), dir.path().join("r.dendro"));
    let writer = Writer::create(&origin, FixtureEncoder::default()).unwrap();
    let source = writer
        .add_source([("host".into(), "i".into())].into(), Labels::new())
        .unwrap();
    for ts in 1..=20 {
        append(&source, ts);
    }
    source.sync().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Killed if the test fails before it stops them.
    struct Reaped(Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut publishing = Reaped(publisher(&origin, port));
    let mut subscribing = Reaped(subscriber(&replica, port));
    let (publishing, subscribing) = (&mut publishing.0, &mut subscribing.0);
    let mut lines = BufReader::new(subscribing.stdout.take().unwrap()).lines();
    // A new replica starts from an image of the origin (or from frames).
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.contains("\"rows\":20") || line.contains("\"snapshots\":1") {
            break;
        }
    }
    // Ctrl-C: the subscriber finishes its replica and says what it holds.
    let status = signal_and_wait(subscribing, libc::SIGINT);
    assert!(status.success(), "the subscriber ended by {status}");
    let last = lines.last().expect("a last progress line").unwrap();
    assert!(
        last.contains("\"rows\":20") || last.contains("\"snapshots\":1"),
        "{last}"
    );
    let held: usize = Archive::open(&replica)
        .unwrap()
        .read_snapshot(|s| {
            let mut held = 0;
            for stream in ["cpu", "mem", "net"] {
                held += s
                    .live_wal_rows_between(1, stream, i64::MIN, i64::MAX)?
                    .len();
            }
            Ok(held)
        })
        .unwrap();
    assert_eq!(held, 20, "the replica holds the origin's 20 rows");
    assert!(Archive::open(&replica).unwrap().verify().unwrap().sound);
    // SIGTERM: the publisher stops listening and exits.
    let status = signal_and_wait(publishing, libc::SIGTERM);
    assert!(status.success(), "the publisher ended by {status}");
    drop(source);
    writer.join().unwrap();
}

//! Real kills: `dendro publish --listen` and `dendro subscribe --connect`
//! run as processes and are each killed (SIGKILL) dozens of times while a
//! writer appends and seals, each restart waiting for the process to say it
//! is up rather than for time to pass. The final replica equals the origin.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use dendro::{Archive, ClockOffset, Labels, SourceWriter, WalRow, Writer};

use crate::common::{fixture_row, FixtureEncoder};
use crate::round_trip::assert_replica;

fn dendro() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dendro"))
}

/// Starts the publisher and returns once it listens (its first line).
fn publisher(origin: &Path, port: u16) -> Child {
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

/// Starts the subscriber and returns once it has applied a frame (its
/// first progress line).
fn subscriber(replica: &Path, port: u16) -> Child {
    let mut child = dendro()
        .arg("subscribe")
        .arg(replica)
        .args(["--connect", &format!("127.0.0.1:{port}"), "--json"])
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

fn kill(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

fn append(source: &SourceWriter, ts: i64) {
    let stream = ["cpu", "mem", "net"][(ts % 3) as usize];
    let row = WalRow {
        ts,
        wall_offset: 1,
        row: fixture_row(ts, stream),
    };
    source.wal(vec![(stream.to_string(), row)]).unwrap();
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
    let stream = dir.path().join("catch-up.bin");
    let status = dendro()
        .arg("publish")
        .arg(&origin)
        .arg("--to")
        .arg(&stream)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
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

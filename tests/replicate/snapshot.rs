//! Snapshot catch-up (`WIRE.md` §6.2): a new replica starts from an image
//! of its origin and continues live; a subscriber that says nothing gets
//! frames; every bad image is refused with the peer and the cause, and
//! the replica's path is left as it was.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dendro::container::STAGING_SUFFIX;
use dendro::replicate::codec::preamble;
use dendro::replicate::snapshot::{take_image, Announcement, Hello, HELLO_BYTES};
use dendro::replicate::transport::{
    replicate_tcp, serve_tcp_with, PublishOptions, Replica, SubscribeOptions,
};
use dendro::replicate::{Frame, FrameReader};
use dendro::{Archive, ClockOffset, Error, Labels, SourceWriter, WalRow, Writer};

use crate::common::{fixture_row, FixtureEncoder};
use crate::round_trip::assert_replica;
use crate::support::fixture_encoder;

const STREAMS: [&str; 3] = ["cpu", "mem", "net"];

/// An origin with sealed segments and live rows: `rounds` seals of 300
/// rows each, then 50 live rows. Returns the writer, the source and the
/// newest ts.
pub fn origin(path: &Path, rounds: usize) -> (Writer, SourceWriter, i64) {
    let writer = Writer::create(path, FixtureEncoder::default()).unwrap();
    let labels: Labels = [("host".to_string(), "snap".to_string())].into();
    let source = writer.add_source(labels, Labels::new()).unwrap();
    let mut ts = 0;
    for round in 0..=rounds {
        let count = if round == rounds { 50 } else { 300 };
        let rows = (0..count)
            .map(|_| {
                ts += 1;
                let stream = STREAMS[(ts % 3) as usize];
                let row = WalRow {
                    ts,
                    wall_offset: 1,
                    row: fixture_row(ts, stream),
                };
                (stream.to_string(), row)
            })
            .collect();
        source.wal(rows).unwrap();
        if round < rounds {
            source.seal(STREAMS).unwrap();
        }
    }
    source.sync().unwrap();
    (writer, source, ts)
}

fn leaked_stop() -> &'static AtomicBool {
    Box::leak(Box::new(AtomicBool::new(false)))
}

/// Serves `archive` on a thread with `options`; the address and the log.
fn serve(
    archive: &Path,
    options: PublishOptions,
    stop: &'static AtomicBool,
) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let lines = Arc::clone(&log);
    let options = PublishOptions {
        interval: Duration::from_millis(10),
        log: Arc::new(move |line: &str| lines.lock().unwrap().push(line.to_string())),
        ..options
    };
    let archive = archive.to_path_buf();
    std::thread::spawn(move || serve_tcp_with(&archive, listener, &options, stop));
    (addr, log)
}

/// Follows `addr` into `replica` until `done` says so (checked after
/// every frame) or an error is reported; the result and the errors.
fn follow_until(
    replica: &mut Replica,
    addr: SocketAddr,
    options: SubscribeOptions,
    mut done: impl FnMut(&dendro::replicate::Applied) -> bool,
) -> (dendro::Result<()>, Vec<String>) {
    let stop = AtomicBool::new(false);
    let mut errors = Vec::new();
    let result = replicate_tcp(
        replica,
        addr,
        &options,
        &stop,
        |applied, _| {
            if done(applied) {
                stop.store(true, Ordering::Relaxed);
            }
        },
        |e| {
            errors.push(e.to_string());
            stop.store(true, Ordering::Relaxed);
        },
    );
    (result, errors)
}

fn staging_of(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_os_string();
    name.push(STAGING_SUFFIX);
    name.into()
}

#[test]
fn a_new_replica_starts_from_an_image_and_continues_live() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = (dir.path().join("o.dendro"), dir.path().join("r.dendro"));
    let (writer, source, mut ts) = origin(&origin_path, 6);
    let stop = leaked_stop();
    let images = dir.path().join("images");
    std::fs::create_dir(&images).unwrap();
    let options = PublishOptions {
        snapshot_dir: Some(images.clone()),
        ..PublishOptions::default()
    };
    let (addr, _log) = serve(&origin_path, options, stop);
    let mut replica = Replica::new(&replica_path, fixture_encoder());
    // Rows appended while the replica follows arrive live, after the image.
    let appender = std::thread::spawn(move || {
        for _ in 0..20 {
            ts += 1;
            let stream = STREAMS[(ts % 3) as usize];
            let row = WalRow {
                ts,
                wall_offset: 1,
                row: fixture_row(ts, stream),
            };
            source.wal(vec![(stream.to_string(), row)]).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        source.seal(STREAMS).unwrap();
        source.finalize(ClockOffset { ts, offset_ns: 2 }).unwrap();
        writer.join().unwrap();
    });
    let (result, errors) =
        follow_until(&mut replica, addr, SubscribeOptions::default(), |applied| {
            applied.finalized > 0
        });
    result.unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    appender.join().unwrap();
    assert_eq!(replica.snapshots(), 1, "the replica started from an image");
    let applied = replica.applied();
    assert!(
        applied.segments > 0,
        "the seal after the image came as a segment"
    );
    replica.finish().unwrap();
    stop.store(true, Ordering::Relaxed);
    assert_replica(&origin_path, &replica_path);
    assert!(
        Archive::open(&replica_path)
            .unwrap()
            .verify()
            .unwrap()
            .sound
    );
    assert!(!staging_of(&replica_path).exists());
    let left: Vec<_> = std::fs::read_dir(&images).unwrap().collect();
    assert!(left.is_empty(), "the image was removed: {left:?}");
}

#[test]
fn a_replica_that_exists_is_brought_up_to_date_by_frames_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = (dir.path().join("o.dendro"), dir.path().join("r.dendro"));
    let (writer, source, ts) = origin(&origin_path, 2);
    source.finalize(ClockOffset { ts, offset_ns: 2 }).unwrap();
    writer.join().unwrap();
    // The replica exists (empty) before the first connection.
    drop(Writer::create(&replica_path, FixtureEncoder::default()).unwrap());
    let (addr, _log) = serve(&origin_path, PublishOptions::default(), leaked_stop());
    let mut replica = Replica::new(&replica_path, fixture_encoder());
    let (result, errors) = follow_until(&mut replica, addr, SubscribeOptions::default(), |a| {
        a.finalized > 0
    });
    result.unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(replica.snapshots(), 0);
    replica.finish().unwrap();
    assert_replica(&origin_path, &replica_path);
}

#[test]
fn a_subscriber_that_says_nothing_gets_frames_after_the_hello_wait() {
    let dir = tempfile::tempdir().unwrap();
    let origin_path = dir.path().join("o.dendro");
    let (_writer, _source, _) = origin(&origin_path, 1);
    let options = PublishOptions {
        hello_wait: Duration::from_millis(200),
        ..PublishOptions::default()
    };
    let (addr, _log) = serve(&origin_path, options, leaked_stop());
    // As the original's subscriber does: connect and read.
    let conn = std::net::TcpStream::connect(addr).unwrap();
    let started = Instant::now();
    let mut reader = FrameReader::new(conn, "test").unwrap();
    let first = reader.next_frame().unwrap().unwrap();
    assert!(matches!(first, Frame::Handshake { .. }), "{first:?}");
    assert!(started.elapsed() >= Duration::from_millis(150));
}

#[test]
fn a_publisher_without_snapshots_gives_a_new_replica_frames() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_path, replica_path) = (dir.path().join("o.dendro"), dir.path().join("r.dendro"));
    let (writer, source, ts) = origin(&origin_path, 2);
    source.finalize(ClockOffset { ts, offset_ns: 2 }).unwrap();
    writer.join().unwrap();
    let options = PublishOptions {
        snapshot_dir: None,
        ..PublishOptions::default()
    };
    let (addr, _log) = serve(&origin_path, options, leaked_stop());
    let mut replica = Replica::new(&replica_path, fixture_encoder());
    let (result, _) = follow_until(&mut replica, addr, SubscribeOptions::default(), |a| {
        a.finalized > 0
    });
    result.unwrap();
    assert_eq!(replica.snapshots(), 0);
    replica.finish().unwrap();
    assert_replica(&origin_path, &replica_path);
}

/// A hostile publisher: accepts one connection, reads the hello, and
/// writes `bytes`, then closes. Returns its address and the hello it read.
fn fake_publisher(bytes: Vec<u8>) -> (SocketAddr, std::thread::JoinHandle<Hello>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut hello = [0u8; HELLO_BYTES];
        conn.read_exact(&mut hello).unwrap();
        let _ = conn.write_all(&bytes);
        Hello::decode(&hello).unwrap()
    });
    (addr, served)
}

/// An image of a small origin: its announcement and bytes.
fn image_of(dir: &Path) -> (Announcement, Vec<u8>) {
    let origin_path = dir.join("image-origin.dendro");
    let (writer, source, _) = origin(&origin_path, 2);
    drop(source);
    writer.join().unwrap();
    let mut image = take_image(&origin_path, dir).unwrap().unwrap();
    let mut bytes = Vec::new();
    image
        .send(|piece| {
            bytes.extend_from_slice(piece);
            Ok(())
        })
        .unwrap();
    assert_eq!(bytes.len() as u64, image.announcement.size);
    (image.announcement.clone(), bytes)
}

/// Runs a new replica against a fake publisher that sends `stream`; the
/// outcome and the errors it reported.
fn against(dir: &Path, stream: Vec<u8>) -> (PathBuf, dendro::Result<()>, Vec<String>) {
    let replica_path = dir.join("r.dendro");
    let (addr, served) = fake_publisher(stream);
    let mut replica = Replica::new(&replica_path, fixture_encoder());
    let (result, errors) = follow_until(&mut replica, addr, SubscribeOptions::default(), |_| false);
    assert!(served.join().unwrap().want_snapshot, "a new replica asks");
    assert_eq!(replica.snapshots(), 0);
    (replica_path, result, errors)
}

fn stream_with(announcement: &Announcement, image: &[u8]) -> Vec<u8> {
    let mut out = preamble().to_vec();
    out.extend_from_slice(&announcement.frame());
    out.extend_from_slice(image);
    out
}

fn assert_nothing_left(replica: &Path) {
    assert!(!replica.exists(), "nothing at the replica's path");
    assert!(!staging_of(replica).exists(), "no staging file left");
}

#[test]
fn a_snapshot_cut_short_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (announcement, image) = image_of(dir.path());
    let (replica, result, errors) = against(
        dir.path(),
        stream_with(&announcement, &image[..image.len() / 2]),
    );
    result.unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("127.0.0.1"),
        "names the peer: {}",
        errors[0]
    );
    assert!(
        errors[0].contains("ends inside a snapshot image"),
        "{}",
        errors[0]
    );
    assert_nothing_left(&replica);
}

#[test]
fn a_snapshot_whose_bytes_do_not_match_its_digest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (announcement, mut image) = image_of(dir.path());
    let at = image.len() - 100;
    image[at] ^= 0x40;
    let (replica, result, errors) = against(dir.path(), stream_with(&announcement, &image));
    result.unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("127.0.0.1"), "{}", errors[0]);
    assert!(
        errors[0].contains("do not match the digest"),
        "{}",
        errors[0]
    );
    assert_nothing_left(&replica);
}

#[test]
fn a_snapshot_of_another_archive_than_announced_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (mut announcement, image) = image_of(dir.path());
    announcement.identity = vec!["00000000-0000-4000-8000-000000000000".into()];
    let (replica, result, errors) = against(dir.path(), stream_with(&announcement, &image));
    let Err(Error::Replication { file, message }) = result else {
        panic!("{result:?} {errors:?}");
    };
    assert!(file.contains("127.0.0.1"), "{file}");
    assert!(
        message.contains("another archive than announced"),
        "{message}"
    );
    assert_nothing_left(&replica);
}

#[test]
fn a_snapshot_larger_than_the_disk_is_refused_before_a_byte_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (mut announcement, image) = image_of(dir.path());
    announcement.size = u64::MAX / 2;
    let (replica, result, errors) = against(dir.path(), stream_with(&announcement, &image));
    let Err(Error::Replication { file, message }) = result else {
        panic!("{result:?} {errors:?}");
    };
    assert!(file.contains("127.0.0.1"), "{file}");
    assert!(message.contains("does not fit"), "{message}");
    assert_nothing_left(&replica);
}

#[test]
fn a_snapshot_that_is_not_an_archive_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let image = vec![7u8; 8192];
    let announcement = Announcement {
        size: image.len() as u64,
        digest: twox_digest(&image),
        identity: vec![],
    };
    let (replica, result, errors) = against(dir.path(), stream_with(&announcement, &image));
    let Err(Error::Replication { message, .. }) = result else {
        panic!("{result:?} {errors:?}");
    };
    assert!(message.contains("not an archive"), "{message}");
    assert_nothing_left(&replica);
}

/// The announcement's digest of `bytes`, taken as the publisher takes it.
fn twox_digest(bytes: &[u8]) -> u128 {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bytes");
    std::fs::write(&path, bytes).unwrap();
    dendro::replicate::snapshot::file_digest(&path).unwrap()
}

#[test]
fn a_snapshot_sent_to_a_replica_that_exists_is_refused_and_the_replica_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (announcement, image) = image_of(dir.path());
    let replica_path = dir.path().join("r.dendro");
    let (writer, source, _) = origin(&replica_path, 1);
    drop(source);
    writer.join().unwrap();
    let before = std::fs::read(&replica_path).unwrap();
    let (addr, served) = fake_publisher(stream_with(&announcement, &image));
    let mut replica = Replica::new(&replica_path, fixture_encoder());
    let (result, _) = follow_until(&mut replica, addr, SubscribeOptions::default(), |_| false);
    assert!(
        !served.join().unwrap().want_snapshot,
        "a replica that exists does not ask"
    );
    let Err(Error::Replication { file, message }) = result else {
        panic!("{result:?}");
    };
    assert!(file.contains("127.0.0.1"), "{file}");
    assert!(message.contains("did not ask for"), "{message}");
    assert_eq!(
        std::fs::read(&replica_path).unwrap(),
        before,
        "the replica is as it was"
    );
}

#[test]
fn an_announcement_decodes_to_what_was_encoded_and_refuses_disorder() {
    let announcement = Announcement {
        size: 12_345,
        digest: 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        identity: vec!["a".into(), "b".into()],
    };
    let frame = announcement.frame();
    assert_eq!(Announcement::decode(&frame[5..]).unwrap(), announcement);
    let disordered = Announcement {
        identity: vec!["b".into(), "a".into()],
        ..announcement.clone()
    };
    assert!(Announcement::decode(&disordered.frame()[5..]).is_err());
    let mut longer = frame[5..].to_vec();
    longer.push(0);
    assert!(Announcement::decode(&longer).is_err());
    assert!(Announcement::decode(&frame[5..frame.len() - 1]).is_err());
}

#[test]
fn a_hello_is_refused_when_it_is_not_one() {
    let hello = Hello {
        want_snapshot: true,
    }
    .encode();
    assert!(Hello::decode(&hello).unwrap().want_snapshot);
    let mut other = hello;
    other[0] = b'x';
    assert!(Hello::decode(&other)
        .unwrap_err()
        .contains("not a subscriber's hello"));
    let mut later = hello;
    later[12] = 9;
    assert!(Hello::decode(&later).unwrap_err().contains("version 9"));
}

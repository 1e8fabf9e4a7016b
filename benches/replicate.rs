//! Replication (issue 10), measured: the codec's throughput, catch-up of a
//! whole archive over TCP on loopback against a plain file copy of it, and
//! the lag of a live replica. `cargo bench --bench replicate`; prints one
//! JSON line per figure on stdout and a table on stderr.
//!
//! - **codec**: encode then decode of `Segment` frames (1 MiB of Parquet
//!   each) and of `Rows` frames (1,000 rows of 64 bytes), in MB/s of frame
//!   bytes.
//! - **catch-up**: an archive of about `--mb` MB (default 100) of 1 MiB
//!   segments over 4 streams, plus a live tail, finalized. Timed: a fresh
//!   publisher serving it over a loopback socket (`write_catch_up`) to a
//!   subscriber applying it into a new archive (`apply_stream`), from the
//!   connect until the replica's writer has joined (everything durable);
//!   against `std::fs::copy` of the same file plus an fsync of the copy.
//!   Both warm (the origin's pages in the OS cache), alternated per rep.
//!   Into a new replica (the catch-up is staged beside it and moved into
//!   place) and, as a third arm, into an existing empty replica (written in
//!   place through the writer's durable transactions, as every catch-up
//!   was before staging). Also the two halves alone (publisher into a
//!   sink, subscriber from memory, new and existing) so that the
//!   end-to-end figure can be read against them.
//! - **live lag**: a writer appends a tick every 10 ms to 4 streams
//!   (timestamps are the wall clock) while `serve_tcp` publishes it with a
//!   1 s interval and a subscriber applies over TCP; for every `Rows`
//!   frame, the age of its newest row when the frame has been applied, and
//!   for every row its age then, as p50 and p99.
//!
//! `--mb N`, `--reps N` (catch-up repetitions, default 3), `--lag-secs N`
//! (default 30), `--quick` (10 MB, 1 rep, 8 s of lag), `--only
//! codec|catchup|lag`. `--origin-out PATH` only builds the catch-up origin
//! at PATH and stops, for profiling `dendro publish` and `dendro
//! subscribe --from` on it outside the bench.

mod common;
#[path = "../tests/common/splitmix.rs"]
mod splitmix;

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use common::{figure, load_average, median};
use dendro::catalog::NewSource;
use dendro::replicate::codec::preamble;
use dendro::replicate::tls::{self, ClientTls, Trust};
use dendro::replicate::transport::{
    apply_stream, replicate_tcp, serve_tcp_with, write_catch_up, PublishOptions, Replica,
    SubscribeOptions,
};
use dendro::replicate::{Frame, FrameReader, Subscriber, VerbatimOnly, WireRow};
use dendro::segment::encode_batch;
use dendro::write::{wall_clock_ns, TickRows, Writer, WriterOptions};
use dendro::{Archive, ArchiveMut, ClockOffset, Labels, Segment, SegmentEncoder, WalRow};
use splitmix::SplitMix64;

const STREAMS: usize = 4;
/// Rows per segment: two Int64 columns of noise, about 1 MiB of Parquet.
const ROWS_PER_SEGMENT: usize = 65_536;
const T0: i64 = 1_700_000_000_000_000_000;

struct Args {
    mb: f64,
    reps: usize,
    lag_secs: u64,
    only: Option<String>,
    origin_out: Option<std::path::PathBuf>,
}

fn args() -> Args {
    let mut args = Args {
        mb: 100.0,
        reps: 3,
        lag_secs: 30,
        only: None,
        origin_out: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().expect("a value after the flag");
        match arg.as_str() {
            "--mb" => args.mb = value().parse().expect("--mb N"),
            "--reps" => args.reps = value().parse().expect("--reps N"),
            "--lag-secs" => args.lag_secs = value().parse().expect("--lag-secs N"),
            "--only" => args.only = Some(value()),
            "--origin-out" => args.origin_out = Some(value().into()),
            "--quick" => {
                args.mb = 10.0;
                args.reps = 1;
                args.lag_secs = 8;
            }
            // cargo bench passes --bench; anything else is a mistake.
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    args
}

/// The `q`-quantile (0..=1) of `v`, nearest rank.
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// One segment of `stream` starting at row `first` (1 ms apart).
fn segment(noise: &mut SplitMix64, first: i64) -> Segment {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("value", DataType::Int64, false),
    ]));
    let ts: Vec<i64> = (0..ROWS_PER_SEGMENT as i64)
        .map(|i| T0 + (first + i) * 1_000_000)
        .collect();
    let values: Vec<i64> = (0..ROWS_PER_SEGMENT).map(|_| noise.next() as i64).collect();
    let (first_ts, last_ts) = (ts[0], ts[ts.len() - 1]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ts)),
        Arc::new(Int64Array::from(values)),
    ];
    let batch = RecordBatch::try_new(schema, columns).unwrap();
    Segment {
        bytes: encode_batch(&batch).unwrap(),
        rows: ROWS_PER_SEGMENT as i64,
        first_ts,
        last_ts,
        caller_index: None,
    }
}

/// The catch-up origin: `mb` MB of segments over 4 streams, 2,000 live
/// rows past them in each stream, a clock observation, finalized. Built
/// through the catalog writes directly (the writer is not the subject).
/// Returns the segment bytes.
fn build_origin(path: &Path, mb: f64) -> u64 {
    let per_stream = ((mb / STREAMS as f64).round() as usize).max(1);
    let mut archive = ArchiveMut::create(path).unwrap();
    let mut noise = SplitMix64(7);
    let mut bytes = 0u64;
    let tx = archive.transaction().unwrap();
    let source = tx
        .insert_source_with_uuid(&NewSource {
            uuid: None,
            labels: Labels::from([("host".into(), "bench".into())]),
            metadata: Labels::new(),
            complete: true,
            clock_anchor_wall_ns: T0,
        })
        .unwrap();
    tx.commit().unwrap();
    for k in 0..STREAMS {
        let stream = format!("stream-{k:02}");
        for seq in 0..per_stream {
            let segment = segment(&mut noise, (seq * ROWS_PER_SEGMENT) as i64);
            bytes += segment.bytes.len() as u64;
            let tx = archive.transaction().unwrap();
            tx.insert_segment(source, &stream, seq as i64, &segment)
                .unwrap();
            tx.commit().unwrap();
        }
        let after = (per_stream * ROWS_PER_SEGMENT) as i64;
        let live: Vec<WalRow> = (after..after + 2_000)
            .map(|i| WalRow {
                ts: T0 + i * 1_000_000,
                wall_offset: 0,
                row: noise.next().to_le_bytes().to_vec(),
            })
            .collect();
        let tx = archive.transaction().unwrap();
        tx.insert_wal_rows(source, &stream, &live).unwrap();
        tx.commit().unwrap();
    }
    let tx = archive.transaction().unwrap();
    tx.insert_clock_offset(source, T0, 0).unwrap();
    tx.commit().unwrap();
    drop(archive);
    bytes
}

fn remove(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

fn file_copy(from: &Path, to: &Path) -> f64 {
    remove(to);
    let started = Instant::now();
    std::fs::copy(from, to).unwrap();
    std::fs::File::open(to).unwrap().sync_all().unwrap();
    started.elapsed().as_secs_f64()
}

/// Where a catch-up lands: a path with nothing at it (the catch-up is
/// staged and moved into place), or an empty archive made beforehand,
/// untimed (the catch-up goes through the writer's durable transactions,
/// as every catch-up did before staging, and as a resumed replica's does).
#[derive(Clone, Copy, PartialEq)]
enum Target {
    New,
    Existing,
}

fn prepare(to: &Path, into: Target) {
    remove(to);
    if into == Target::Existing {
        Writer::create_with(to, Arc::new(VerbatimOnly), WriterOptions::default())
            .unwrap()
            .join()
            .unwrap();
    }
}

/// Publisher and subscriber over a loopback socket, through the
/// transports the CLI uses; until the replica's writer has joined.
fn catch_up(from: &Path, to: &Path, into: Target) -> f64 {
    prepare(to, into);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let origin = from.to_path_buf();
    let started = Instant::now();
    let publisher = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        write_catch_up(&origin, conn, "bench-publisher").unwrap()
    });
    let conn = TcpStream::connect(addr).unwrap();
    let mut subscriber = Subscriber::open(to, Arc::new(VerbatimOnly)).unwrap();
    assert_eq!(subscriber.staging(), into == Target::New);
    apply_stream(&mut subscriber, conn, "bench-subscriber", |_, _| {}).unwrap();
    let applied = subscriber.finish().unwrap();
    let elapsed = started.elapsed().as_secs_f64();
    publisher.join().unwrap();
    assert!(applied.segments > 0 && applied.rows > 0, "{applied:?}");
    elapsed
}

/// The subscriber alone, from a stream in memory.
fn subscribe_from_memory(stream: &[u8], to: &Path, into: Target) -> f64 {
    prepare(to, into);
    let started = Instant::now();
    let mut subscriber = Subscriber::open(to, Arc::new(VerbatimOnly)).unwrap();
    apply_stream(&mut subscriber, stream, "memory", |_, _| {}).unwrap();
    subscriber.finish().unwrap();
    started.elapsed().as_secs_f64()
}

/// Segment count and bytes, live rows: what a replica must match.
fn shape(path: &Path) -> (usize, i64, usize) {
    let archive = Archive::open(path).unwrap();
    archive
        .read_snapshot(|s| {
            let segments = s.all_segments()?;
            let bytes = segments.iter().map(|r| r.bytes).sum();
            let mut live = 0;
            for source in s.sources()? {
                for stream in s.streams(source.id)? {
                    live += s
                        .live_wal_rows_between(source.id, &stream, i64::MIN, i64::MAX)?
                        .len();
                }
            }
            Ok((segments.len(), bytes, live))
        })
        .unwrap()
}

fn catchup_figures(dir: &Path, mb: f64, reps: usize) {
    let origin = dir.join("origin.dendro");
    let copy = dir.join("copy.dendro");
    let replica = dir.join("replica.dendro");
    let started = Instant::now();
    let segment_bytes = build_origin(&origin, mb);
    let file_bytes = std::fs::metadata(&origin).unwrap().len();
    eprintln!(
        "catch-up: origin of {:.1} MB ({:.1} MB of segments) built in {:.1} s",
        file_bytes as f64 / 1e6,
        segment_bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    // The halves alone: the publisher into a sink, the subscriber from memory.
    let mut stream = Vec::new();
    let started = Instant::now();
    write_catch_up(&origin, &mut stream, "memory").unwrap();
    let publish_s = started.elapsed().as_secs_f64();
    let subscribe_s = subscribe_from_memory(&stream, &replica, Target::New);
    assert_eq!(shape(&replica), shape(&origin), "the replica differs");
    // The subscriber alone, into a new replica (staged) and into an
    // existing one (in place), alternated.
    let (mut staged, mut in_place) = (Vec::new(), Vec::new());
    for rep in 0..reps.max(3) {
        let order = if rep % 2 == 0 {
            [Target::New, Target::Existing]
        } else {
            [Target::Existing, Target::New]
        };
        for into in order {
            let s = subscribe_from_memory(&stream, &replica, into);
            assert_eq!(shape(&replica), shape(&origin), "the replica differs");
            match into {
                Target::New => staged.push(s),
                Target::Existing => in_place.push(s),
            }
        }
    }
    let stream_bytes = stream.len() as f64;
    drop(stream);
    // Over TCP: a copy, a catch-up into a new replica and one into an
    // existing replica per rep, in an order that turns around every rep
    // so that none always finds a warmer disk.
    let (mut copies, mut catchups, mut existing) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let mut arms = [0, 1, 2];
        if rep % 2 != 0 {
            arms.reverse();
        }
        for arm in arms {
            match arm {
                0 => copies.push(file_copy(&origin, &copy)),
                1 => {
                    catchups.push(catch_up(&origin, &replica, Target::New));
                    assert_eq!(shape(&replica), shape(&origin), "the replica differs");
                }
                _ => {
                    existing.push(catch_up(&origin, &replica, Target::Existing));
                    assert_eq!(shape(&replica), shape(&origin), "the replica differs");
                }
            }
        }
    }
    let ratio =
        |times: &[f64]| -> Vec<f64> { copies.iter().zip(times).map(|(c, u)| u / c).collect() };
    let (ratios, existing_ratios) = (ratio(&catchups), ratio(&existing));
    let mb_s = |s: f64| file_bytes as f64 / 1e6 / s;
    figure("catchup_archive_mb", file_bytes as f64 / 1e6, "MB");
    figure("catchup_stream_mb", stream_bytes / 1e6, "MB");
    figure("publish_to_memory_s", publish_s, "s");
    figure("subscribe_from_memory_s", subscribe_s, "s");
    figure("subscribe_from_memory_staged_s", median(staged), "s");
    figure("subscribe_from_memory_in_place_s", median(in_place), "s");
    figure("file_copy_fsync_s", median(copies.clone()), "s");
    figure("catchup_tcp_s", median(catchups.clone()), "s");
    figure("catchup_tcp_existing_s", median(existing.clone()), "s");
    figure("file_copy_mb_per_s", mb_s(median(copies)), "MB/s");
    figure("catchup_tcp_mb_per_s", mb_s(median(catchups)), "MB/s");
    figure("catchup_over_copy_ratio", median(ratios), "x");
    figure(
        "existing_catchup_over_copy_ratio",
        median(existing_ratios),
        "x",
    );
    remove(&origin);
    remove(&copy);
    remove(&replica);
}

/// Encodes and decodes `frame` `n` times; MB/s of frame bytes.
fn codec_mb_per_s(frame: &Frame, n: usize) -> f64 {
    let mut buf = Vec::new();
    frame.encode_into(&mut buf);
    let frame_bytes = buf.len();
    let mut stream = preamble().to_vec();
    let started = Instant::now();
    for _ in 0..n {
        stream.truncate(preamble().len());
        frame.encode_into(&mut stream);
        let mut reader = FrameReader::new(&stream[..], "memory").unwrap();
        let back = reader.next_frame().unwrap().unwrap();
        std::hint::black_box(&back);
    }
    let secs = started.elapsed().as_secs_f64();
    (frame_bytes * n) as f64 / 1e6 / secs
}

fn codec_figures() {
    let segment = segment(&mut SplitMix64(3), 0);
    let frame = Frame::Segment {
        source: 0,
        stream: "stream-00".into(),
        segment: dendro::Segment {
            caller_index: Some(b"labels:a\nb".to_vec()),
            ..segment
        },
    };
    let runs: Vec<f64> = (0..5).map(|_| codec_mb_per_s(&frame, 100)).collect();
    figure("codec_segment_mb_per_s", median(runs), "MB/s");
    let mut noise = SplitMix64(5);
    let rows = (0..1_000)
        .map(|i| WireRow {
            stream: format!("stream-{:02}", i % STREAMS),
            ts: T0 + i as i64,
            wall_offset: 17,
            row: (0..8).flat_map(|_| noise.next().to_le_bytes()).collect(),
        })
        .collect();
    let frame = Frame::Rows {
        source: 0,
        seq: 9,
        index_state: (1, 2),
        rows,
    };
    let runs: Vec<f64> = (0..5).map(|_| codec_mb_per_s(&frame, 2_000)).collect();
    figure("codec_rows_mb_per_s", median(runs), "MB/s");
}

/// A row is an i64 (little-endian); a segment has `ts` and `value`.
struct LagEncoder;

impl SegmentEncoder for LagEncoder {
    fn encode(&self, _: &str, rows: &[WalRow]) -> Result<Option<Segment>, String> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Int64, false),
            Field::new("value", DataType::Int64, false),
        ]));
        let values = rows
            .iter()
            .map(|r| r.row.as_slice().try_into().map(i64::from_le_bytes))
            .collect::<Result<Vec<i64>, _>>()
            .map_err(|_| "a row is not 8 bytes")?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.ts))),
            Arc::new(Int64Array::from(values)),
        ];
        let batch = RecordBatch::try_new(schema, columns).map_err(|e| e.to_string())?;
        dendro::segment::segment_of_rows(rows, &batch).map(Some)
    }

    fn version(&self) -> Option<String> {
        Some("bench-lag-i64-v1".into())
    }
}

fn lag_figures(dir: &Path, secs: u64, tls: Option<&TlsPair>) {
    let origin = dir.join("lag-origin.dendro");
    let replica = dir.join("lag-replica.dendro");
    remove(&origin);
    remove(&replica);
    let writer =
        Writer::create_with(&origin, Arc::new(LagEncoder), WriterOptions::default()).unwrap();
    let source = writer
        .add_source(Labels::from([("host".into(), "lag".into())]), Labels::new())
        .unwrap();
    let names: Vec<String> = (0..STREAMS).map(|k| format!("stream-{k:02}")).collect();
    let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = origin.clone();
    let options = PublishOptions {
        interval: Duration::from_secs(1),
        tls: tls.map(|t| Arc::clone(&t.server)),
        ..PublishOptions::default()
    };
    std::thread::spawn(move || serve_tcp_with(&served, listener, &options, stop));
    let client = tls.map(|t| t.client.clone());
    let subscriber = std::thread::spawn(move || {
        let mut sub = Subscriber::open(&replica, Arc::new(VerbatimOnly)).unwrap();
        let conn = TcpStream::connect(addr).unwrap();
        // Says no hello, as the original's subscriber: frames, after the
        // publisher's short wait for one (before the writer starts).
        let input: Box<dyn Read + Send> = match client {
            None => Box::new(conn),
            Some(client) => {
                let session =
                    rustls::ClientConnection::new(client.config, client.server_name).unwrap();
                Box::new(rustls::StreamOwned::new(session, conn))
            }
        };
        let mut reader = FrameReader::new(std::io::BufReader::new(input), "lag").unwrap();
        sub.new_connection();
        let (mut newest_ages, mut row_ages) = (Vec::new(), Vec::new());
        while let Some(frame) = reader.next_frame().unwrap() {
            let stamps: Vec<i64> = match &frame {
                Frame::Rows { rows, .. } => rows.iter().map(|r| r.ts).collect(),
                _ => Vec::new(),
            };
            sub.apply(frame).unwrap();
            let now = wall_clock_ns();
            if let Some(newest) = stamps.iter().max() {
                newest_ages.push((now - newest) as f64 / 1e6);
                row_ages.extend(stamps.iter().map(|ts| (now - ts) as f64 / 1e6));
            }
            if sub.applied().finalized > 0 {
                break;
            }
        }
        let applied = sub.finish().unwrap();
        (newest_ages, row_ages, applied)
    });
    let started = Instant::now();
    let mut last = 0i64;
    let mut appended = 0u64;
    let mut tick = 0u64;
    while started.elapsed() < Duration::from_secs(secs) {
        let ts = wall_clock_ns().max(last + 1);
        last = ts;
        let rows: TickRows = names
            .iter()
            .map(|name| {
                (
                    name.clone(),
                    WalRow {
                        ts,
                        wall_offset: 0,
                        row: (ts ^ 0x5a5a).to_le_bytes().to_vec(),
                    },
                )
            })
            .collect();
        source.wal(rows).unwrap();
        appended += STREAMS as u64;
        tick += 1;
        // A seal every 5 s, as a recording's policy would.
        if tick.is_multiple_of(500) {
            source.seal(names.iter().cloned()).unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    source
        .finalize(ClockOffset {
            ts: last,
            offset_ns: 0,
        })
        .unwrap();
    writer.join().unwrap();
    let (mut newest, mut rows, applied) = subscriber.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    // Wake the accept loop so that it sees the stop.
    let _ = TcpStream::connect(addr).map(|mut c| c.read(&mut [0u8; 1]));
    eprintln!(
        "lag: {appended} rows appended over {secs} s; replica applied {} rows and {} segments \
         ({} held) in {} Rows frames",
        applied.rows,
        applied.segments,
        applied.rows_held + applied.segments_held,
        newest.len()
    );
    let p = if tls.is_some() { "lag_tls" } else { "lag" };
    figure(
        &format!("{p}_newest_row_p50_ms"),
        quantile(&mut newest, 0.5),
        "ms",
    );
    figure(
        &format!("{p}_newest_row_p99_ms"),
        quantile(&mut newest, 0.99),
        "ms",
    );
    figure(
        &format!("{p}_every_row_p50_ms"),
        quantile(&mut rows, 0.5),
        "ms",
    );
    figure(
        &format!("{p}_every_row_p99_ms"),
        quantile(&mut rows, 0.99),
        "ms",
    );
    remove(&origin);
}

/// A self-signed pair for 127.0.0.1, as the publisher and a subscriber
/// pinning it take them.
struct TlsPair {
    server: Arc<rustls::ServerConfig>,
    client: ClientTls,
}

impl TlsPair {
    fn new(dir: &Path) -> TlsPair {
        let now = std::time::SystemTime::now();
        let made = tls::self_signed(&["127.0.0.1".into()], now - tls::DAY, now + tls::DAY).unwrap();
        let (cert, key) = (dir.join("bench.crt"), dir.join("bench.key"));
        std::fs::write(&cert, &made.cert_pem).unwrap();
        std::fs::write(&key, &made.key_pem).unwrap();
        let pin = Trust::Pin(tls::parse_fingerprint(&made.fingerprint).unwrap());
        TlsPair {
            server: tls::server_config(&cert, &key, None).unwrap(),
            client: tls::client_config(&pin, "127.0.0.1", None).unwrap(),
        }
    }
}

/// `dendro publish --listen` on a thread: its address.
fn serve_snapshots(
    origin: &Path,
    images: &Path,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let options = PublishOptions {
        snapshot_dir: Some(images.to_path_buf()),
        tls,
        ..PublishOptions::default()
    };
    let (origin, stop) = (
        origin.to_path_buf(),
        Box::leak(Box::new(AtomicBool::new(false))),
    );
    std::thread::spawn(move || serve_tcp_with(&origin, listener, &options, stop));
    addr
}

/// A new replica over TCP as `dendro subscribe --connect` makes it, from
/// the connect until it is durable at its path and holds the frames after
/// the image (the origin is finalized: until the replica is too).
fn snapshot_catch_up(addr: std::net::SocketAddr, to: &Path, tls: Option<ClientTls>) -> f64 {
    remove(to);
    let started = Instant::now();
    let mut replica = Replica::new(to, Arc::new(VerbatimOnly));
    let stop = AtomicBool::new(false);
    let options = SubscribeOptions {
        tls,
        ..SubscribeOptions::default()
    };
    let done = |a: &dendro::replicate::Applied, _| {
        if a.finalized > 0 {
            stop.store(true, Ordering::Relaxed);
        }
    };
    replicate_tcp(&mut replica, addr, &options, &stop, done, |e| panic!("{e}")).unwrap();
    assert_eq!(replica.snapshots(), 1, "the replica started from an image");
    replica.finish().unwrap();
    started.elapsed().as_secs_f64()
}

/// The original's catch-up of `origin` (`../shared/bench/original-catchup
/// run`), its `catchup_ms` in seconds; `None` when the binary is absent.
fn original_catch_up(origin: &Path, work: &Path) -> Option<f64> {
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/original-catchup");
    if !tool.exists() {
        return None;
    }
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work).unwrap();
    let out = std::process::Command::new(tool)
        .arg("run")
        .arg(origin)
        .arg(work)
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "original-catchup failed");
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let _ = std::fs::remove_dir_all(work);
    Some(line["catchup_ms"].as_f64().expect("catchup_ms") / 1e3)
}

/// Snapshot catch-up (issue 36): a new replica over TCP on loopback, plain
/// and with TLS, against `cp` + fsync of the same file and the original's
/// catch-up of it, the four arms in an order that turns every rep.
fn snapshot_figures(dir: &Path, mb: f64, reps: usize) {
    let origin = dir.join("snap-origin.dendro");
    let (copy, replica) = (
        dir.join("snap-copy.dendro"),
        dir.join("snap-replica.dendro"),
    );
    let images = dir.join("images");
    std::fs::create_dir_all(&images).unwrap();
    build_origin(&origin, mb);
    let file_bytes = std::fs::metadata(&origin).unwrap().len();
    let pair = TlsPair::new(dir);
    let plain = serve_snapshots(&origin, &images, None);
    let secure = serve_snapshots(&origin, &images, Some(Arc::clone(&pair.server)));
    let work = dir.join("original-work");
    let mut runs: [Vec<f64>; 4] = Default::default();
    for rep in 0..reps {
        let mut arms = [0, 1, 2, 3];
        arms.rotate_left(rep % 4);
        for arm in arms {
            let took = match arm {
                0 => Some(file_copy(&origin, &copy)),
                1 => Some(snapshot_catch_up(plain, &replica, None)),
                2 => Some(snapshot_catch_up(
                    secure,
                    &replica,
                    Some(pair.client.clone()),
                )),
                _ => original_catch_up(&origin, &work),
            };
            if arm > 0 && arm < 3 {
                assert_eq!(shape(&replica), shape(&origin), "the replica differs");
            }
            if let Some(took) = took {
                runs[arm].push(took);
            }
        }
    }
    let ratio =
        |a: &[f64], b: &[f64]| -> f64 { median(a.iter().zip(b).map(|(x, y)| x / y).collect()) };
    figure("snapshot_archive_mb", file_bytes as f64 / 1e6, "MB");
    figure("snapshot_copy_fsync_s", median(runs[0].clone()), "s");
    figure("snapshot_tcp_s", median(runs[1].clone()), "s");
    figure("snapshot_tls_s", median(runs[2].clone()), "s");
    figure("snapshot_over_copy_ratio", ratio(&runs[1], &runs[0]), "x");
    figure(
        "snapshot_tls_over_plain_ratio",
        ratio(&runs[2], &runs[1]),
        "x",
    );
    if !runs[3].is_empty() {
        figure("original_catchup_s", median(runs[3].clone()), "s");
        figure(
            "original_over_snapshot_ratio",
            ratio(&runs[3], &runs[1]),
            "x",
        );
    }
    remove(&origin);
    remove(&copy);
    remove(&replica);
}

fn main() {
    let args = args();
    if let Some(path) = &args.origin_out {
        let bytes = build_origin(path, args.mb);
        eprintln!(
            "origin at {}: {:.1} MB of segments",
            path.display(),
            bytes as f64 / 1e6
        );
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let wants = |part: &str| args.only.as_deref().is_none_or(|o| o == part);
    eprintln!("load average before: {}", load_average());
    if wants("codec") {
        codec_figures();
    }
    if wants("catchup") {
        catchup_figures(dir.path(), args.mb, args.reps);
    }
    if wants("snapshot") {
        snapshot_figures(dir.path(), args.mb, args.reps);
    }
    if wants("lag") {
        lag_figures(dir.path(), args.lag_secs, None);
    }
    if wants("lag-tls") {
        let pair = TlsPair::new(dir.path());
        lag_figures(dir.path(), args.lag_secs, Some(&pair));
    }
    eprintln!("load average after: {}", load_average());
}

//! The streaming writer on the reference workload (issue 3), and the seal
//! costs beside it. `cargo bench --bench writer`; prints medians.
//!
//! Reference workload: one source, 26 streams, 1,925-byte rows, one `wal`
//! commit per tick carrying one row per stream, 2,500 ticks, stream k sealed
//! when (t + k*100/26) mod 100 == 99. Bytes written are `wchar` from
//! `/proc/self/io` between create and close; a counting VFS splits them by
//! file so the `-wal` sidecar's share is reported on its own.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dendro::segment::encode_batch;
use dendro::write::{TickRows, Writer, WriterOptions};
use dendro::{ClockOffset, Labels, Segment, SegmentEncoder, WalRow};

use common::median;

const STREAMS: usize = 26;
const ROW_BYTES: usize = 1925;
const TICKS: i64 = 2500;
const COLUMNS: usize = 240;
const RUNS: usize = 3;

/// Rows are 240 little-endian i64 values and 5 flag bytes; a segment is
/// `ts` plus 241 Int64 columns. With `DENDRO_BENCH_INDEX=1` each segment
/// also carries a 64-byte caller index (so schema 4 and 5, which store it
/// in different places, can be compared: `DENDRO_BENCH_SCHEMA=5`).
struct BenchEncoder;

fn bench_index() -> bool {
    std::env::var("DENDRO_BENCH_INDEX").is_ok_and(|v| v == "1")
}

impl SegmentEncoder for BenchEncoder {
    fn encode(&self, _stream: &str, rows: &[WalRow]) -> Result<Option<Segment>, String> {
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let width = (first.row.len().saturating_sub(5)) / 8;
        let mut fields = vec![Field::new("ts", DataType::Int64, false)];
        let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.ts),
        ))];
        for c in 0..width {
            fields.push(Field::new(format!("c{c:04}"), DataType::Int64, false));
            columns.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(
                |r| i64::from_le_bytes(r.row[c * 8..c * 8 + 8].try_into().unwrap()),
            ))));
        }
        fields.push(Field::new("flags", DataType::Int64, false));
        columns.push(Arc::new(Int64Array::from_iter_values(rows.iter().map(
            |r| {
                let mut b = [0u8; 8];
                b[..5].copy_from_slice(&r.row[width * 8..width * 8 + 5]);
                i64::from_le_bytes(b)
            },
        ))));
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| e.to_string())?;
        Ok(Some(Segment {
            bytes: encode_batch(&batch)?,
            rows: rows.len() as i64,
            first_ts: first.ts,
            last_ts: rows[rows.len() - 1].ts,
            caller_index: bench_index().then(|| vec![7u8; 64]),
        }))
    }

    fn version(&self) -> Option<String> {
        Some("bench-i64x240-v1".into())
    }
}

/// A counter row for stream `k` at tick `t`: slowly increasing values, the
/// shape of telemetry counters.
fn counter_row(k: usize, t: i64, width: usize) -> Vec<u8> {
    let mut row = Vec::with_capacity(width * 8 + 5);
    let mut x = (k as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ t as u64;
    for j in 0..width {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let base = ((k * 1000 + j) as i64) * 1_000_000_000;
        let v = base + t * (j as i64 + 1) * 1_000 + (x % 1000) as i64;
        row.extend_from_slice(&v.to_le_bytes());
    }
    row.extend_from_slice(&[t as u8, k as u8, 0, 0, 1]);
    row
}

/// A telemetry-shaped row for stream `k` at tick `t`: a third of the values
/// are busy counters (steady increments with jitter), a third are counters
/// that rarely move (errors, drops), a third are gauges wandering around a
/// level. The shape of what the format was built for.
fn telemetry_row(k: usize, t: i64, width: usize) -> Vec<u8> {
    let mut row = Vec::with_capacity(width * 8 + 5);
    for j in 0..width {
        let seed = ((k * 7919 + j) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let noise = |x: u64| {
            let mut x = x ^ (t as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x ^= x >> 31;
            x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^ (x >> 29)
        };
        let v = match j % 3 {
            0 => {
                (seed % 1_000_000) as i64 * 1_000
                    + t * (1_000 + (seed % 50_000) as i64)
                    + (noise(seed) % 997) as i64
            }
            1 => (seed % 1000) as i64 + t / (200 + (seed % 800) as i64),
            _ => 500_000 + (seed % 100_000) as i64 + (noise(seed) % 2_000) as i64,
        };
        row.extend_from_slice(&v.to_le_bytes());
    }
    row.extend_from_slice(&[1, k as u8, 0, 0, (t % 4) as u8]);
    row
}

/// Which rows the reference run writes.
#[derive(Clone, Copy, PartialEq)]
enum Rows {
    Telemetry,
    Incompressible,
}

/// Incompressible rows, for sizing segments by bytes.
fn random_row(seed: u64, width: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1;
    let mut row = Vec::with_capacity(width * 8 + 5);
    for _ in 0..width {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        row.extend_from_slice(&x.to_le_bytes());
    }
    row.extend_from_slice(&[0, 0, 0, 0, 0]);
    row
}

fn wchar() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// How fast the disk under the temp folder takes a 4 KiB append and an
/// fdatasync: ticks/s is bounded by it, and on a shared host it moves.
fn fsync_rate() -> f64 {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut f = std::fs::File::create(dir.path().join("probe")).unwrap();
    let block = [0u8; 4096];
    let n = 300;
    let started = Instant::now();
    for _ in 0..n {
        f.write_all(&block).unwrap();
        f.sync_data().unwrap();
    }
    n as f64 / started.elapsed().as_secs_f64()
}

mod vfs {
    //! A pass-through VFS that counts bytes written and syncs per kind of
    //! file, so the `-wal` sidecar's traffic can be told from the main file's.

    use std::ffi::{c_char, c_int, c_void};
    use std::sync::atomic::{AtomicU64, Ordering};

    use rusqlite::ffi;

    /// Main database, `-wal` sidecar, anything else.
    pub static WRITTEN: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
    /// fsync-class calls per kind.
    pub static SYNCS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

    #[repr(C)]
    struct Extra {
        real: *const ffi::sqlite3_io_methods,
        kind: usize,
    }

    static mut REAL_SIZE: c_int = 0;

    unsafe fn extra(file: *mut ffi::sqlite3_file) -> *mut Extra {
        (file as *mut u8).add(REAL_SIZE as usize) as *mut Extra
    }

    unsafe extern "C" fn write(
        file: *mut ffi::sqlite3_file,
        buf: *const c_void,
        amt: c_int,
        off: i64,
    ) -> c_int {
        let e = extra(file);
        WRITTEN[(*e).kind].fetch_add(amt as u64, Ordering::Relaxed);
        ((*(*e).real).xWrite.unwrap())(file, buf, amt, off)
    }

    unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
        let e = extra(file);
        SYNCS[(*e).kind].fetch_add(1, Ordering::Relaxed);
        ((*(*e).real).xSync.unwrap())(file, flags)
    }

    unsafe extern "C" fn open(
        vfs: *mut ffi::sqlite3_vfs,
        name: *const c_char,
        file: *mut ffi::sqlite3_file,
        flags: c_int,
        out: *mut c_int,
    ) -> c_int {
        let real = (*vfs).pAppData as *mut ffi::sqlite3_vfs;
        let rc = ((*real).xOpen.unwrap())(real, name, file, flags, out);
        if rc == ffi::SQLITE_OK && !(*file).pMethods.is_null() {
            let kind = if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
                0
            } else if flags & ffi::SQLITE_OPEN_WAL != 0 {
                1
            } else {
                2
            };
            let mut methods = *(*file).pMethods;
            let e = extra(file);
            (*e).real = (*file).pMethods;
            (*e).kind = kind;
            methods.xWrite = Some(write);
            methods.xSync = Some(sync);
            (*file).pMethods = Box::leak(Box::new(methods));
        }
        rc
    }

    /// Installs the counting VFS as the default, once, before any open.
    pub fn install() {
        unsafe {
            let real = ffi::sqlite3_vfs_find(std::ptr::null());
            REAL_SIZE = ((*real).szOsFile + 7) & !7;
            let mut vfs = *real;
            vfs.szOsFile = REAL_SIZE + std::mem::size_of::<Extra>() as c_int;
            vfs.zName = c"counting".as_ptr();
            vfs.pAppData = real as *mut c_void;
            vfs.xOpen = Some(open);
            vfs.pNext = std::ptr::null_mut();
            ffi::sqlite3_vfs_register(Box::leak(Box::new(vfs)), 1);
        }
    }

    /// `(main, wal, other)` bytes written so far, and syncs.
    pub fn snapshot() -> ([u64; 3], [u64; 3]) {
        let w = |i: usize| WRITTEN[i].load(Ordering::Relaxed);
        let s = |i: usize| SYNCS[i].load(Ordering::Relaxed);
        ([w(0), w(1), w(2)], [s(0), s(1), s(2)])
    }
}

struct Run {
    writer_ms: f64,
    encoder_ms: f64,
    cpu_ms_per_tick: f64,
    segment_ratio: f64,
    ticks_per_s: f64,
    amplification: f64,
    wal_amplification: f64,
    main_amplification: f64,
    other_amplification: f64,
    wal_syncs: u64,
    main_syncs: u64,
    segments: usize,
    file_bytes: u64,
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU seconds per thread name, summed over the process's threads (the
/// writer's threads are named `dendro-writer` and `dendro-encoder`).
fn thread_cpu() -> std::collections::BTreeMap<String, f64> {
    let mut out = std::collections::BTreeMap::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let name = stat[open + 1..close].to_string();
            let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
            let ticks = |i: usize| {
                fields
                    .get(i)
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(0.0)
            };
            *out.entry(name).or_insert(0.0) += (ticks(11) + ticks(12)) / 100.0;
        }
    }
    out
}

fn reference_run(seal: bool, kind: Rows, options: WriterOptions) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.dendro");
    let rows: Vec<Vec<Vec<u8>>> = (0..STREAMS)
        .map(|k| {
            (0..TICKS)
                .map(|t| match kind {
                    Rows::Telemetry => telemetry_row(k, t, COLUMNS),
                    Rows::Incompressible => random_row((k as u64) << 32 | t as u64, COLUMNS),
                })
                .collect()
        })
        .collect();
    assert_eq!(rows[0][0].len(), ROW_BYTES);
    let names: Vec<String> = (0..STREAMS).map(|k| format!("s{k:02}")).collect();
    let (before_vfs, before_syncs) = vfs::snapshot();
    let before = wchar();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let writer = Writer::create_with(&path, Arc::new(BenchEncoder), options).unwrap();
    let source = writer
        .add_source(
            Labels::from([("host".to_string(), "bench".to_string())]),
            Labels::new(),
        )
        .unwrap();
    let anchor = source.clock().anchor();
    for t in 0..TICKS {
        let ts = anchor + t * 1_000_000_000;
        let tick: TickRows = (0..STREAMS)
            .map(|k| {
                (
                    names[k].clone(),
                    WalRow {
                        ts,
                        wall_offset: 1_000,
                        row: rows[k][t as usize].clone(),
                    },
                )
            })
            .collect();
        source.wal(tick).unwrap();
        if seal {
            let due: Vec<&str> = (0..STREAMS)
                .filter(|&k| (t as usize + k * 100 / STREAMS) % 100 == 99)
                .map(|k| names[k].as_str())
                .collect();
            if !due.is_empty() {
                source.seal(due).unwrap();
            }
        }
    }
    source
        .finalize(ClockOffset {
            ts: anchor + (TICKS - 1) * 1_000_000_000,
            offset_ns: 1_000,
        })
        .unwrap();
    let threads = thread_cpu();
    writer.join().unwrap();
    let elapsed = started.elapsed();
    let cpu = cpu_seconds() - cpu_before;
    let written = wchar() - before;
    let (after_vfs, after_syncs) = vfs::snapshot();
    let row_bytes = (TICKS as u64) * (STREAMS * ROW_BYTES) as u64;
    let archive = dendro::Archive::open(&path).unwrap();
    let segments = archive.read_snapshot(|s| s.all_segments()).unwrap().len();
    let file_bytes = archive.file_bytes().unwrap();
    let segment_bytes: i64 = archive
        .read_snapshot(|s| s.all_segments())
        .unwrap()
        .iter()
        .map(|s| s.bytes)
        .sum();
    let per_tick = |name: &str| threads.get(name).copied().unwrap_or(0.0) * 1e3 / TICKS as f64;
    Run {
        writer_ms: per_tick("dendro-writer"),
        encoder_ms: per_tick("dendro-encoder"),
        cpu_ms_per_tick: cpu * 1e3 / TICKS as f64,
        segment_ratio: segment_bytes as f64 / row_bytes as f64,
        ticks_per_s: TICKS as f64 / elapsed.as_secs_f64(),
        amplification: written as f64 / row_bytes as f64,
        wal_amplification: (after_vfs[1] - before_vfs[1]) as f64 / row_bytes as f64,
        main_amplification: (after_vfs[0] - before_vfs[0]) as f64 / row_bytes as f64,
        other_amplification: (after_vfs[2] - before_vfs[2]) as f64 / row_bytes as f64,
        wal_syncs: after_syncs[1] - before_syncs[1],
        main_syncs: after_syncs[0] - before_syncs[0],
        segments,
        file_bytes,
    }
}

/// Where the sidecar bytes go, by kind of transaction: every seal is
/// waited for so its commit is counted on its own.
fn diagnose(options: WriterOptions) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("diag.dendro");
    let names: Vec<String> = (0..STREAMS).map(|k| format!("s{k:02}")).collect();
    let writer = Writer::create_with(&path, Arc::new(BenchEncoder), options).unwrap();
    let source = writer.add_source(Labels::new(), Labels::new()).unwrap();
    let anchor = source.clock().anchor();
    let wal_bytes = || vfs::snapshot().0[1];
    let (mut tick_bytes, mut seal_bytes, mut ticks_n, mut seals_n) = (0u64, 0u64, 0u64, 0u64);
    let mut per_tick = Vec::new();
    for t in 0..TICKS {
        let ts = anchor + t * 1_000_000_000;
        let tick: TickRows = (0..STREAMS)
            .map(|k| {
                (
                    names[k].clone(),
                    WalRow {
                        ts,
                        wall_offset: 0,
                        row: telemetry_row(k, t, COLUMNS),
                    },
                )
            })
            .collect();
        let b = wal_bytes();
        source.wal(tick).unwrap();
        let d = wal_bytes() - b;
        tick_bytes += d;
        ticks_n += 1;
        if t >= 200 {
            per_tick.push(d);
        }
        let due: Vec<&str> = (0..STREAMS)
            .filter(|&k| (t as usize + k * 100 / STREAMS) % 100 == 99)
            .map(|k| names[k].as_str())
            .collect();
        if !due.is_empty() {
            let b = wal_bytes();
            source.seal(due).unwrap();
            source.sync().unwrap();
            seal_bytes += wal_bytes() - b;
            seals_n += 1;
        }
    }
    per_tick.sort();
    let pages = |b: u64| b as f64 / 4120.0;
    println!(
        "diag: ticks {ticks_n}: {:.1} frames/tick on average (median {:.1}, p90 {:.1}, max {:.1}); \
         seals {seals_n}: {:.1} frames each",
        pages(tick_bytes) / ticks_n as f64,
        pages(per_tick[per_tick.len() / 2]),
        pages(per_tick[per_tick.len() * 9 / 10]),
        pages(*per_tick.last().unwrap()),
        pages(seal_bytes) / seals_n as f64
    );
    drop(source);
    writer.join().unwrap();
}

fn report(name: &str, runs: Vec<Run>) {
    let m = |f: &dyn Fn(&Run) -> f64| median(runs.iter().map(f).collect());
    let tps = m(&|r| r.ticks_per_s);
    println!("{name}: median of {} runs", runs.len());
    println!(
        "  ticks/s               {tps:>10.0}   (runs: {:?})",
        runs.iter()
            .map(|r| r.ticks_per_s.round())
            .collect::<Vec<_>>()
    );
    println!("  rows/s                {:>10.0}", tps * STREAMS as f64);
    println!(
        "  bytes written / row   {:>10.2}x  (wchar, create to close)",
        m(&|r| r.amplification)
    );
    println!(
        "    into -wal sidecar   {:>10.2}x",
        m(&|r| r.wal_amplification)
    );
    println!(
        "    into main file      {:>10.2}x",
        m(&|r| r.main_amplification)
    );
    println!(
        "    into other files    {:>10.2}x  (temporary files, statement journals)",
        m(&|r| r.other_amplification)
    );
    println!(
        "  fsyncs: -wal {:.0}, main {:.0}",
        m(&|r| r.wal_syncs as f64),
        m(&|r| r.main_syncs as f64)
    );
    println!(
        "  segments {:.0} ({:.2}x of row bytes), final file {:.1} MB",
        m(&|r| r.segments as f64),
        m(&|r| r.segment_ratio),
        m(&|r| r.file_bytes as f64) / 1e6
    );
    println!(
        "  CPU per tick          {:>10.3} ms (writer thread {:.3}, encoder thread {:.3})",
        m(&|r| r.cpu_ms_per_tick),
        m(&|r| r.writer_ms),
        m(&|r| r.encoder_ms)
    );
}

/// Seal latency: from `seal` to the segment committed, for a stream whose
/// segment is about `target` bytes of incompressible data.
fn seal_latency(target: usize) -> (f64, f64, f64) {
    let rows_needed = target / (COLUMNS * 8) + 1;
    let mut total = Vec::new();
    let mut encode = Vec::new();
    let mut size = 0usize;
    for run in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seal.dendro");
        let writer = Writer::create(&path, BenchEncoder).unwrap();
        let source = writer.add_source(Labels::new(), Labels::new()).unwrap();
        let rows: Vec<WalRow> = (0..rows_needed)
            .map(|i| WalRow {
                ts: i as i64,
                wall_offset: 0,
                row: random_row((run * 1_000_000 + i) as u64, COLUMNS),
            })
            .collect();
        for chunk in rows.chunks(256) {
            source
                .wal(
                    chunk
                        .iter()
                        .map(|r| ("big".to_string(), r.clone()))
                        .collect(),
                )
                .unwrap();
        }
        let t0 = Instant::now();
        let seg = BenchEncoder.encode("big", &rows).unwrap().unwrap();
        encode.push(t0.elapsed().as_secs_f64() * 1e3);
        size = seg.bytes.len();
        let t0 = Instant::now();
        source.seal(["big"]).unwrap();
        source.sync().unwrap();
        total.push(t0.elapsed().as_secs_f64() * 1e3);
        drop(source);
        writer.join().unwrap();
    }
    (median(total), median(encode), size as f64)
}

/// In a fresh process: append then seal a 1,000-column stream, reporting
/// the peak resident set before and after the seal.
fn rss_child() {
    let width = 1000;
    let rows = 3600;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.dendro");
    let writer = Writer::create(&path, BenchEncoder).unwrap();
    let source = writer.add_source(Labels::new(), Labels::new()).unwrap();
    for chunk in (0..rows).collect::<Vec<i64>>().chunks(60) {
        source
            .wal(
                chunk
                    .iter()
                    .map(|&t| {
                        (
                            "wide".to_string(),
                            WalRow {
                                ts: t,
                                wall_offset: 0,
                                row: counter_row(7, t, width),
                            },
                        )
                    })
                    .collect(),
            )
            .unwrap();
    }
    let before = vm_hwm_kib();
    let t0 = Instant::now();
    source.seal(["wide"]).unwrap();
    source.sync().unwrap();
    let took = t0.elapsed();
    let after = vm_hwm_kib();
    let seg = source.segment_sizes().unwrap();
    drop(source);
    writer.join().unwrap();
    println!(
        "rss {before} {after} {} {} {}",
        took.as_millis(),
        seg[0].bytes,
        rows as usize * (width * 8 + 5)
    );
}

fn main() {
    vfs::install();
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--rss-child") {
        rss_child();
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let runs = if quick { 1 } else { RUNS };
    let mut options = WriterOptions::default();
    if let Some(schema) = std::env::var("DENDRO_BENCH_SCHEMA")
        .ok()
        .and_then(|v| v.parse().ok())
        .and_then(dendro::container::CreateSchema::from_version)
    {
        options.schema = schema;
        println!("archives created in schema {}", schema.version());
    }
    if let Some(rows) = std::env::var("DENDRO_BENCH_PRUNE")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        options.prune_batch_rows = rows;
    }
    if let Some(every) = std::env::var("DENDRO_BENCH_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        options.prune_every = every;
    }
    println!(
        "disk right now: {:.0} appends of 4 KiB + fdatasync per second (the issue's machine did about 6,800)",
        fsync_rate()
    );
    println!(
        "dendro writer benchmark ({} ticks x {STREAMS} streams x {ROW_BYTES} B)",
        TICKS
    );
    let only = std::env::var("DENDRO_BENCH_ONLY").unwrap_or_default();
    let workloads = [
        (
            "reference",
            "reference workload, telemetry rows (staggered seals)",
            true,
            Rows::Telemetry,
        ),
        (
            "random",
            "reference workload, incompressible rows (staggered seals)",
            true,
            Rows::Incompressible,
        ),
        (
            "never",
            "never sealing, telemetry rows",
            false,
            Rows::Telemetry,
        ),
    ];
    for (key, title, seal, rows) in workloads {
        if only.is_empty() || only == key {
            report(
                title,
                (0..runs)
                    .map(|_| reference_run(seal, rows, options.clone()))
                    .collect(),
            );
        }
    }
    if only == "diag" {
        diagnose(options.clone());
    }
    if !only.is_empty() {
        return;
    }
    for target in [1usize << 20, 8 << 20] {
        let (total, encode, size) = seal_latency(target);
        println!(
            "seal latency, {:.1} MiB segment: {total:.1} ms seal-to-commit (encode alone {encode:.1} ms), median of 5",
            size / (1 << 20) as f64
        );
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .arg("--rss-child")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if let Some(line) = text.lines().find(|l| l.starts_with("rss ")) {
        let v: Vec<u64> = line[4..].split(' ').map(|x| x.parse().unwrap()).collect();
        println!(
            "wide stream (1,000 Int64 columns, 3,600 rows, {:.1} MB of rows -> {:.1} MB segment): \
             peak RSS {:.0} MB before the seal, {:.0} MB after; seal took {} ms",
            v[4] as f64 / 1e6,
            v[3] as f64 / 1e6,
            v[0] as f64 / 1024.0,
            v[1] as f64 / 1024.0,
            v[2]
        );
    } else {
        println!(
            "wide stream: the child failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = Duration::ZERO;
}

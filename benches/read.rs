//! The read path on the original implementation's read workload (issue 14),
//! so the two can be run back to back (`../shared/bench/original-bench read`)
//! and compared as ratios. `cargo bench --bench read`; prints medians, one
//! JSON line per figure on stdout and a table on stderr.
//!
//! The workload: one source, 4 streams, segments of about 1 MiB (columns
//! `ts` Int64, `value` Float64, `label` Utf8, LZ4_RAW, no dictionary) up to
//! about 100 MB of segment bytes, written by the streaming writer, which is
//! then closed. Timed warm: the catalog and `describe` (open included and on
//! an open handle), `read_archive`, `read_archive` plus decoding every
//! segment to Arrow, and decoding alone; then one cold `read_archive` after
//! the file's pages are dropped from the OS cache. The catalog figures are
//! repeated with 1,000 and 100,000 covered-but-unpruned rows in one stream,
//! as a kill leaves them, and `describe` is timed on catalogs far wider than
//! a recording's (100,000 segments, 10,000 streams, 1,000 sources with 1 MB
//! labels). The plans SQLite chose for the catalog's statements are printed.
//!
//! `--mb N` changes the size, `--reps N` the repetitions of the slow
//! figures, `--quick` runs a small version, `--core` only the figures the
//! original's `read` workload reports (for alternating runs beside it),
//! `--keep DIR` keeps the built archive in DIR for the next run, and
//! `--loop-read N` (with `--keep`) only reads it whole N times, for a
//! profiler.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use dendro::read::{self, Tail};
use dendro::segment::segment_of_rows;
use dendro::write::{TickRows, Writer, WriterOptions};
use dendro::{Archive, ArchiveMut, ClockOffset, Labels, Segment, SegmentEncoder, WalRow};

use common::{median_ms, median_of};

const STREAMS: usize = 4;
/// Rows per segment: about 1 MiB each with this encoding.
const ROWS_PER_SEGMENT: u64 = 47_476;
/// Rows per stream per tick while building (throughput, not the subject).
const ROWS_PER_TICK: i64 = 2_000;

/// A row is a little-endian f64 then a UTF-8 label.
struct TableEncoder;

impl SegmentEncoder for TableEncoder {
    fn encode(&self, _stream: &str, rows: &[WalRow]) -> Result<Option<Segment>, String> {
        if rows.is_empty() {
            return Ok(None);
        }
        let mut values = Vec::with_capacity(rows.len());
        let mut labels = Vec::with_capacity(rows.len());
        for row in rows {
            let (value, label) = row.row.split_at(8);
            values.push(f64::from_le_bytes(
                value.try_into().map_err(|_| "short row")?,
            ));
            labels.push(std::str::from_utf8(label).map_err(|e| e.to_string())?);
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Int64, false),
            Field::new("value", DataType::Float64, false),
            Field::new("label", DataType::Utf8, false),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.ts))),
            Arc::new(Float64Array::from(values)),
            Arc::new(StringArray::from(labels)),
        ];
        let batch = RecordBatch::try_new(schema, columns).map_err(|e| e.to_string())?;
        segment_of_rows(rows, &batch).map(Some)
    }

    fn version(&self) -> Option<String> {
        Some("bench-table-f64-utf8-v1".into())
    }
}

fn row(stream: usize, t: i64) -> WalRow {
    let mut x = (t as u64 ^ (stream as u64) << 40).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 29;
    let value = (t as f64) * 0.25 + (x % 1000) as f64 / 100.0;
    let mut bytes = value.to_le_bytes().to_vec();
    bytes.extend_from_slice(format!("host-{:02}/cpu{}/{:07x}", stream, x % 16, x >> 36).as_bytes());
    WalRow {
        ts: 1_700_000_000_000_000_000 + t * 1_000_000,
        wall_offset: 0,
        row: bytes,
    }
}

/// Writes the workload with the streaming writer and closes it.
fn build(path: &Path, mb: f64) -> f64 {
    let segments_per_stream = ((mb / STREAMS as f64).round() as u64).max(1);
    let rows_per_stream = segments_per_stream * ROWS_PER_SEGMENT;
    let started = Instant::now();
    let writer =
        Writer::create_with(path, Arc::new(TableEncoder), WriterOptions::default()).unwrap();
    let source = writer
        .add_source(
            Labels::from([("host".into(), "bench".into())]),
            Labels::new(),
        )
        .unwrap();
    let names: Vec<String> = (0..STREAMS).map(|k| format!("stream-{k:02}")).collect();
    let mut t = 0i64;
    while (t as u64) < rows_per_stream {
        // Ticks end on segment boundaries, where every stream is sealed.
        let boundary = (t as u64 / ROWS_PER_SEGMENT + 1) * ROWS_PER_SEGMENT;
        let n = ROWS_PER_TICK.min(boundary as i64 - t);
        let mut tick: TickRows = Vec::with_capacity(n as usize * STREAMS);
        for (k, name) in names.iter().enumerate() {
            for i in t..t + n {
                tick.push((name.clone(), row(k, i)));
            }
        }
        source.wal(tick).unwrap();
        t += n;
        if (t as u64).is_multiple_of(ROWS_PER_SEGMENT) {
            source.seal(names.iter().cloned()).unwrap();
        }
    }
    let last = row(0, t - 1).ts;
    source
        .finalize(ClockOffset {
            ts: last,
            offset_ns: 0,
        })
        .unwrap();
    writer.join().unwrap();
    started.elapsed().as_secs_f64()
}

/// The catalog: every question about sources, streams, segments and live
/// tails answered in one snapshot, no payload read.
fn catalog(archive: &Archive) -> usize {
    archive
        .read_snapshot(dendro::read::describe_sources)
        .unwrap()
        .iter()
        .map(|s| s.streams.len())
        .sum()
}

struct Figures {
    out: Vec<(String, f64, &'static str)>,
}

impl Figures {
    fn add(&mut self, name: impl Into<String>, value: f64, unit: &'static str) {
        let name = name.into();
        common::figure_json(&name, value, unit);
        self.out.push((name, value, unit));
    }
}

/// Drops the file's pages from the OS cache, so the next read is cold.
fn drop_from_cache(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    // SAFETY: a plain advisory call on a file descriptor this scope owns.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
}

fn catalog_figures(figures: &mut Figures, path: &Path, label: &str, reps: usize) {
    let at = |name: &str| format!("{name}{label}");
    // Closing is timed in `open_ms` only.
    let open = || Archive::open(path).unwrap();
    figures.add(at("open_ms"), median_ms(reps, || drop(open())), "ms");
    let value = median_ms(reps, || {
        let archive = open();
        (catalog(&archive), archive)
    });
    figures.add(at("catalog_ms_incl_open"), value, "ms");
    let archive = open();
    let value = median_ms(reps, || catalog(&archive));
    figures.add(at("catalog_ms_open_handle"), value, "ms");
    let value = median_ms(reps, || {
        let archive = open();
        (read::describe(&archive).unwrap(), archive)
    });
    figures.add(at("describe_ms_incl_open"), value, "ms");
}

/// Adds `n` rows the first segment of `stream-00` covers to the `wal`
/// table, as a kill between a seal and its prune would leave them.
fn add_covered_rows(path: &Path, n: i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let (first, last): (i64, i64) = conn
        .query_row(
            "SELECT first_ts, last_ts FROM segments WHERE stream = 'stream-00' AND seq = 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let step = ((last - first) / n).max(1);
    conn.execute_batch("BEGIN").unwrap();
    {
        let mut insert = conn
            .prepare("INSERT OR IGNORE INTO wal VALUES (1, 'stream-00', ?1, 0, ?2)")
            .unwrap();
        for i in 0..n {
            insert
                .execute(rusqlite::params![first + i * step, row(0, i).row])
                .unwrap();
        }
    }
    conn.execute_batch("COMMIT").unwrap();
}

/// `describe` on catalogs far wider than a recording's, built directly
/// through the catalog's transaction API with tiny stand-in payloads.
fn wide_catalogs(figures: &mut Figures, dir: &Path, quick: bool) {
    let scale = if quick { 10 } else { 1 };
    let payload = Segment {
        bytes: b"PAR1\0\0\0\0\0\0\0\0PAR1".to_vec(),
        rows: 1,
        first_ts: 0,
        last_ts: 0,
        caller_index: None,
    };
    let cases: [(&str, usize, usize, usize, usize); 3] = [
        ("describe_ms_100k_segments", 1, 1, 100_000 / scale, 0),
        ("describe_ms_10k_streams", 1, 10_000 / scale, 1, 0),
        (
            "describe_ms_1k_sources_1mb_labels",
            1_000 / scale,
            1,
            1,
            1 << 20,
        ),
    ];
    for (name, sources, streams, segments, label_bytes) in cases {
        let path = dir.join(format!("{name}.dendro"));
        let mut archive = ArchiveMut::create(&path).unwrap();
        let tx = archive.transaction().unwrap();
        for s in 0..sources {
            let mut labels = Labels::from([("host".to_string(), format!("h{s}"))]);
            if label_bytes > 0 {
                labels.insert("note".into(), "x".repeat(label_bytes));
            }
            let id = tx.insert_source(&labels, &Labels::new(), 0).unwrap();
            for k in 0..streams {
                for q in 0..segments {
                    let mut seg = payload.clone();
                    seg.first_ts = q as i64 * 10;
                    seg.last_ts = q as i64 * 10 + 5;
                    tx.insert_segment(id, &format!("s{k:05}"), q as i64, &seg)
                        .unwrap();
                }
            }
        }
        tx.commit().unwrap();
        drop(archive);
        let bytes = std::fs::metadata(&path).unwrap().len();
        let value = median_ms(3, || {
            let archive = Archive::open(&path).unwrap();
            (read::describe(&archive).unwrap(), archive)
        });
        eprintln!("{name}: a {:.1} MB catalog", bytes as f64 / 1e6);
        figures.add(name, value, "ms");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<f64>().ok())
    };
    let quick = args.iter().any(|a| a == "--quick");
    let core = args.iter().any(|a| a == "--core");
    let mb = arg("--mb").unwrap_or(if quick { 8.0 } else { 100.0 });
    let reps = arg("--reps").map_or(if quick { 3 } else { 7 }, |r| r as usize);
    let meta_reps = 21;

    // `--keep DIR` builds the archive into DIR once and reuses it after;
    // `--loop-read N` then only runs N whole-archive reads (for a profiler).
    let keep = args
        .iter()
        .position(|a| a == "--keep")
        .and_then(|i| args.get(i + 1));
    let dir = tempfile::tempdir().unwrap();
    let path = match keep {
        Some(kept) => {
            std::fs::create_dir_all(kept).unwrap();
            Path::new(kept).join(format!("read-{mb}mb.dendro"))
        }
        None => dir.path().join("read.dendro"),
    };
    let build_s = if path.exists() { 0.0 } else { build(&path, mb) };
    let archive = Archive::open(&path).unwrap();
    if let Some(n) = arg("--loop-read") {
        for _ in 0..n as usize {
            std::hint::black_box(read::read_archive(&archive, &TableEncoder).unwrap());
        }
        return;
    }
    let description = read::describe(&archive).unwrap();
    let segments: Vec<_> = description.sources[0]
        .streams
        .iter()
        .flat_map(|s| s.segments.iter())
        .collect();
    let segment_bytes: i64 = segments.iter().map(|s| s.bytes).sum();
    let rows: i64 = segments.iter().map(|s| s.rows).sum();
    let file_bytes = description.file_bytes;
    let wal_rows: i64 = archive
        .read_snapshot(|s| s.wal_rows_total(1, "stream-00"))
        .unwrap();
    eprintln!(
        "built {} segments, {rows} rows, {:.1} MB of segment bytes, a {:.1} MB file, in {build_s:.1} s; \
         {wal_rows} rows left in stream-00's wal",
        segments.len(),
        segment_bytes as f64 / 1e6,
        file_bytes as f64 / 1e6,
    );
    let mut figures = Figures { out: Vec::new() };
    figures.add("file_bytes", file_bytes as f64, "bytes");
    figures.add("segment_bytes", segment_bytes as f64, "bytes");
    figures.add(
        "file_over_segment_bytes",
        file_bytes as f64 / segment_bytes as f64,
        "ratio",
    );

    eprintln!("query plans of the catalog's per-stream statements:");
    for (what, sql) in dendro::catalog::PLANNED_STATEMENTS {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let unbound = vec![rusqlite::types::Null; stmt.parameter_count()];
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(unbound), |r| r.get(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        eprintln!("  {what}: {}", plan.join("; "));
    }

    catalog_figures(&mut figures, &path, "", meta_reps);

    let whole = |decode: bool| {
        let started = Instant::now();
        let sources = read::read_archive(&archive, &TableEncoder).unwrap();
        let mut decoded = 0usize;
        for stream in &sources[0].streams {
            assert!(matches!(stream.tail, Tail::Empty));
            if decode {
                for (record, bytes) in &stream.sealed {
                    for batch in read::decode(&archive, record, bytes.clone(), None).unwrap() {
                        decoded += batch.num_rows();
                    }
                }
            }
        }
        std::hint::black_box(decoded);
        started.elapsed().as_secs_f64()
    };
    let read_s = median_of(reps, || whole(false));
    figures.add("read_archive_s", read_s, "s");
    figures.add(
        "read_archive_segment_mb_per_s",
        segment_bytes as f64 / 1e6 / read_s,
        "MB/s",
    );
    figures.add("read_archive_rows_per_s", rows as f64 / read_s, "rows/s");
    let read_decode_s = median_of(reps, || whole(true));
    figures.add("read_and_decode_s", read_decode_s, "s");
    figures.add(
        "read_and_decode_rows_per_s",
        rows as f64 / read_decode_s,
        "rows/s",
    );
    let payloads = read::read_archive(&archive, &TableEncoder).unwrap();
    let decode_s = median_of(reps, || {
        let started = Instant::now();
        for stream in &payloads[0].streams {
            for (record, bytes) in &stream.sealed {
                std::hint::black_box(read::decode(&archive, record, bytes.clone(), None).unwrap());
            }
        }
        started.elapsed().as_secs_f64()
    });
    drop(payloads);
    figures.add(
        "decode_segment_mb_per_s",
        segment_bytes as f64 / 1e6 / decode_s,
        "MB/s",
    );
    figures.add("decode_rows_per_s", rows as f64 / decode_s, "rows/s");
    drop(archive);
    if drop_from_cache(&path) {
        let started = Instant::now();
        let archive = Archive::open(&path).unwrap();
        std::hint::black_box(read::read_archive(&archive, &TableEncoder).unwrap());
        let cold_s = started.elapsed().as_secs_f64();
        figures.add(
            "read_archive_cold_file_mb_per_s",
            file_bytes as f64 / 1e6 / cold_s,
            "MB/s",
        );
    }

    for covered in [1_000, 100_000].into_iter().filter(|_| !core) {
        let copy = dir.path().join(format!("covered-{covered}.dendro"));
        std::fs::copy(&path, &copy).unwrap();
        add_covered_rows(&copy, covered);
        catalog_figures(
            &mut figures,
            &copy,
            &format!("_{}k_covered", covered / 1000),
            meta_reps,
        );
    }

    if !core {
        wide_catalogs(&mut figures, dir.path(), quick);
    }

    eprintln!("\n{:<44} {:>14}", "figure", "median");
    for (name, value, unit) in &figures.out {
        eprintln!("{name:<44} {value:>14.3} {unit}");
    }
}

//! Compaction (issue 11), measured on the original implementation's
//! `compact` workload so the two can be run alternately
//! (`../shared/bench/original-bench compact --arms 50,20000`) and compared
//! as ratios. `cargo bench --bench compact`; one JSON line per figure on
//! stdout, a table on stderr.
//!
//! The workload: one source, one stream of 20,000 rows of 50 Int64 columns
//! (`ts` and `c01`..`c49`), written by the streaming writer in ticks of 50
//! rows and sealed after every tick (400 segments of 50 rows: the "fine"
//! archive), then the writer closed. A "coarse" archive holds the same rows
//! sealed once (one segment). Then a copy of the fine archive is compacted
//! in place by the crate (`rewrite::compact`, target 20,000 rows: one
//! segment). Timed, warm, on an open handle, alternating the archives each
//! repetition: reading the stream's segments and parsing their Parquet
//! footers (`read_parse`, the original's `read_parse_ms`), and reading them
//! and decoding every column to Arrow (`read_decode`). Sizes are the main
//! file's bytes after the writer closed. Compaction throughput is the
//! input segments' bytes over the time of `compact` (reclaim and final
//! checkpoint included), median of the repetitions.
//!
//! `--rows N`, `--columns N`, `--fine N` (rows per fine segment, 50),
//! `--reps N` (7), `--quick` (3 reps).

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dendro::read;
use dendro::rewrite::{compact, CompactSpec, Target};
use dendro::segment::{segment_of_rows, segment_schema};
use dendro::write::{TickRows, Writer, WriterOptions};
use dendro::{Archive, ClockOffset, Labels, Segment, SegmentEncoder, SegmentRecord, WalRow};

use common::{figure, load_average, median, ms};

const T0: i64 = 1_700_000_000_000_000_000;

struct Args {
    rows: usize,
    columns: usize,
    fine: usize,
    reps: usize,
}

fn args() -> Args {
    let mut args = Args {
        rows: 20_000,
        columns: 50,
        fine: 50,
        reps: 7,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().expect("a value after the flag");
        match arg.as_str() {
            "--rows" => args.rows = value().parse().expect("--rows N"),
            "--columns" => args.columns = value().parse().expect("--columns N"),
            "--fine" => args.fine = value().parse().expect("--fine N"),
            "--reps" => args.reps = value().parse().expect("--reps N"),
            "--quick" => args.reps = 3,
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    args
}

/// A row is `columns - 1` little-endian i64 values; the segment has `ts`
/// then one Int64 column per value.
struct WideEncoder {
    columns: usize,
}

impl SegmentEncoder for WideEncoder {
    fn encode(&self, _: &str, rows: &[WalRow]) -> Result<Option<Segment>, String> {
        let values = self.columns - 1;
        let mut fields = vec![Field::new("ts", DataType::Int64, false)];
        fields.extend((1..=values).map(|c| Field::new(format!("c{c:02}"), DataType::Int64, false)));
        let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.ts),
        ))];
        for c in 0..values {
            let column = rows
                .iter()
                .map(|r| {
                    r.row
                        .get(c * 8..c * 8 + 8)
                        .and_then(|b| b.try_into().ok())
                        .map(i64::from_le_bytes)
                        .ok_or_else(|| format!("a row of {} bytes", r.row.len()))
                })
                .collect::<Result<Vec<i64>, String>>()?;
            columns.push(Arc::new(Int64Array::from(column)));
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| e.to_string())?;
        segment_of_rows(rows, &batch).map(Some)
    }

    fn version(&self) -> Option<String> {
        Some(format!("bench-wide-i64x{}-v1", self.columns - 1))
    }
}

/// Row `t`: a counter per column (`base + t * rate`), as the original's
/// workload writes them, so the columns compress like a recording's.
fn row(t: usize, columns: usize) -> WalRow {
    let mut bytes = Vec::with_capacity((columns - 1) * 8);
    for c in 1..columns as i64 {
        bytes.extend_from_slice(&(c * 1_000_000 + t as i64 * c).to_le_bytes());
    }
    WalRow {
        ts: T0 + t as i64 * 1_000_000,
        wall_offset: 0,
        row: bytes,
    }
}

/// Writes `rows` rows in ticks of `seal_every` rows, sealing after each
/// (or once at the end when `seal_every >= rows`), then closes the writer.
fn build(path: &Path, rows: usize, columns: usize, seal_every: usize) -> f64 {
    let started = Instant::now();
    let writer = Writer::create_with(
        path,
        Arc::new(WideEncoder { columns }),
        WriterOptions::default(),
    )
    .unwrap();
    let source = writer
        .add_source(
            Labels::from([("host".into(), "bench".into())]),
            Labels::new(),
        )
        .unwrap();
    let tick_rows = seal_every.min(50);
    let mut t = 0;
    while t < rows {
        let n = tick_rows.min(rows - t);
        let tick: TickRows = (t..t + n)
            .map(|i| ("wide".to_string(), row(i, columns)))
            .collect();
        source.wal(tick).unwrap();
        t += n;
        if t % seal_every == 0 || t == rows {
            source.seal(["wide"]).unwrap();
        }
    }
    source
        .finalize(ClockOffset {
            ts: row(rows - 1, columns).ts,
            offset_ns: 0,
        })
        .unwrap();
    writer.join().unwrap();
    started.elapsed().as_secs_f64()
}

/// Reads every segment of the stream and hands it to `each`, which returns
/// the rows it counts; the time in ms and the rows.
fn read_each(archive: &Archive, each: impl Fn(&SegmentRecord, Vec<u8>) -> i64) -> (f64, i64) {
    let started = Instant::now();
    let range = read::stream_range(archive, 1, "wide", i64::MIN, i64::MAX, None).unwrap();
    let mut rows = 0;
    for record in &range.segments {
        let bytes = read::segment_bytes(archive, 1, "wide", record.seq).unwrap();
        rows += each(record, bytes);
    }
    (ms(started), rows)
}

/// The stream's segments read and their footers parsed; rows claimed.
fn read_parse(archive: &Archive) -> (f64, i64) {
    read_each(archive, |record, bytes| {
        std::hint::black_box(segment_schema(&bytes).unwrap());
        record.rows
    })
}

/// The stream's segments read and every column decoded; rows decoded.
fn read_decode(archive: &Archive) -> (f64, i64) {
    read_each(archive, |record, bytes| {
        let batches = read::decode(archive, record, bytes, None).unwrap();
        batches.iter().map(|b| b.num_rows() as i64).sum()
    })
}

struct Arm {
    name: &'static str,
    archive: Archive,
    file_bytes: u64,
    segments: usize,
    parse: Vec<f64>,
    decode: Vec<f64>,
}

impl Arm {
    fn new(name: &'static str, path: &Path) -> Arm {
        let archive = Archive::open(path).unwrap();
        let segments = archive.read_snapshot(|s| s.all_segments()).unwrap().len();
        Arm {
            name,
            archive,
            file_bytes: std::fs::metadata(path).unwrap().len(),
            segments,
            parse: Vec::new(),
            decode: Vec::new(),
        }
    }

    fn rep(&mut self, rows: usize) {
        let (parse_ms, parsed) = read_parse(&self.archive);
        let (decode_ms, decoded) = read_decode(&self.archive);
        assert_eq!(parsed as usize, rows, "{}: rows claimed", self.name);
        assert_eq!(decoded as usize, rows, "{}: rows decoded", self.name);
        self.parse.push(parse_ms);
        self.decode.push(decode_ms);
    }

    /// The two reads timed, by the name the figures give them.
    fn reads(&self) -> [(&'static str, &Vec<f64>); 2] {
        [("parse", &self.parse), ("decode", &self.decode)]
    }
}

fn remove(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

fn main() {
    let args = args();
    eprintln!("load average before: {}", load_average());
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let fine = dir.path().join("fine.dendro");
    let coarse = dir.path().join("coarse.dendro");
    let compacted = dir.path().join("compacted.dendro");
    let built = build(&fine, args.rows, args.columns, args.fine);
    eprintln!("fine archive built in {built:.1} s");
    let built = build(&coarse, args.rows, args.columns, args.rows);
    eprintln!("coarse archive built in {built:.1} s");

    // Compaction, repeated on fresh copies of the fine archive.
    let input_bytes: i64 = Archive::open(&fine)
        .unwrap()
        .read_snapshot(|s| s.all_segments())
        .unwrap()
        .iter()
        .map(|r| r.bytes)
        .sum();
    let spec = CompactSpec {
        target: Target::Rows(args.rows as u64),
        union_fields: false,
    };
    let mut compact_ms = Vec::new();
    let mut report = None;
    for _ in 0..args.reps.min(5) {
        remove(&compacted);
        std::fs::copy(&fine, &compacted).unwrap();
        let started = Instant::now();
        report = Some(compact(&compacted, &spec, |_| {}).unwrap());
        compact_ms.push(ms(started));
    }
    let report = report.expect("at least one compaction");
    assert_eq!(report.segments_after, 1, "{report:?}");

    let mut arms = [
        Arm::new("fine", &fine),
        Arm::new("coarse", &coarse),
        Arm::new("compacted", &compacted),
    ];
    for rep in 0..args.reps {
        // Rotate which arm goes first.
        for k in 0..arms.len() {
            let i = (rep + k) % arms.len();
            arms[i].rep(args.rows);
        }
    }
    for arm in &arms {
        eprintln!(
            "{}: {} segments, {} bytes",
            arm.name, arm.segments, arm.file_bytes
        );
        figure(&format!("{}_segments", arm.name), arm.segments as f64, "");
        figure(
            &format!("{}_file_bytes", arm.name),
            arm.file_bytes as f64,
            "B",
        );
        for (what, times) in arm.reads() {
            let name = format!("{}_read_{what}_ms", arm.name);
            figure(&name, median(times.clone()), "ms");
        }
    }
    // The fine archive against each single-segment one: the median of the
    // per-repetition read ratios, and the size ratio.
    let [fine_arm, rest @ ..] = &arms;
    for other in rest {
        for ((what, fine), (_, times)) in fine_arm.reads().into_iter().zip(other.reads()) {
            let ratios = fine.iter().zip(times).map(|(x, y)| x / y);
            figure(
                &format!("read_{what}_ratio_fine_over_{}", other.name),
                median(ratios.collect()),
                "x",
            );
        }
        figure(
            &format!("size_ratio_fine_over_{}", other.name),
            fine_arm.file_bytes as f64 / other.file_bytes as f64,
            "x",
        );
    }
    let compact_ms = median(compact_ms);
    figure("compact_ms", compact_ms, "ms");
    figure(
        "compact_mb_per_s",
        input_bytes as f64 / 1e6 / (compact_ms / 1e3),
        "MB/s",
    );
    figure(
        "compact_raw_mb_per_s",
        (args.rows * args.columns * 8) as f64 / 1e6 / (compact_ms / 1e3),
        "MB/s",
    );
    eprintln!("load average after: {}", load_average());
}

//! Writes the archives of histogram columns the viewer's distribution
//! tests (`www/tests/distributions.test.mjs`) and the browser benchmark
//! (`benches/browser/distributions-page.mjs`) open, into a folder (default
//! `target/bench-distributions`), each unless it is there:
//!
//! - `dist.dendro`: one stream `api` of one hour at 1 s (3,600 rows, 12
//!   segments of 300) with a gap of five minutes without rows: `latency`,
//!   a 16-bucket histogram of per-interval counts (base-2 edges from 1 µs)
//!   with a tail event (ten minutes in, thirty seconds of slow requests);
//!   `latency_total`, the same counts as a cumulative histogram that
//!   resets once (the producer restarted); `requests`, a counter that
//!   resets at the same row; `queue`, a gauge.
//! - `heat86k.dendro` (`--bench`): one stream `api` of 24 hours at 1 s
//!   (86,400 rows, 24 segments of 3,600), `latency` a 64-bucket histogram.
//! - `region10m.dendro` (`--bench`): one stream `metrics` of 10,000,000
//!   rows 1 ms apart (100 segments of 100,000), a gauge and a counter.
//!
//! `cargo run --release --example distributions_archive -- [DIR] [--bench]`

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{FixedSizeListBuilder, UInt64Builder};
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dendro::{ArchiveMut, Labels};

mod support;
use support::{batch_segment, make, START_NS};

const SECOND: i64 = 1_000_000_000;

/// A small deterministic generator (xorshift), so every run writes the same rows.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A histogram field: `buckets` UInt64 counts a row, its edges and kind in
/// the field metadata as the self-describing encoder writes them.
fn histogram_field(name: &str, bounds: &[f64], kind: &str, unit: &str) -> Field {
    let item = Arc::new(Field::new("item", DataType::UInt64, false));
    let metadata: HashMap<String, String> = [
        (
            "dendro.bounds".to_string(),
            serde_json::to_string(bounds).expect("edges as JSON"),
        ),
        ("dendro.kind".to_string(), kind.to_string()),
        ("dendro.unit".to_string(), unit.to_string()),
    ]
    .into();
    Field::new(
        name,
        DataType::FixedSizeList(item, (bounds.len() - 1) as i32),
        true,
    )
    .with_metadata(metadata)
}

fn marked(field: Field, kind: &str) -> Field {
    let metadata: HashMap<String, String> = [("dendro.kind".to_string(), kind.to_string())].into();
    field.with_metadata(metadata)
}

fn histogram_array(rows: &[Vec<u64>], buckets: usize) -> ArrayRef {
    let mut b = FixedSizeListBuilder::new(UInt64Builder::new(), buckets as i32)
        .with_field(Arc::new(Field::new("item", DataType::UInt64, false)));
    for row in rows {
        b.values().append_slice(row);
        b.append(true);
    }
    Arc::new(b.finish())
}

/// Base-2 edges from `first`: `buckets` buckets.
fn exponential(first: f64, buckets: usize) -> Vec<f64> {
    (0..=buckets).map(|i| first * 2f64.powi(i as i32)).collect()
}

/// One interval's latency counts: about `n` requests around bucket
/// `centre`, spread over its neighbours.
fn latency_counts(rng: &mut Rng, buckets: usize, centre: f64, n: f64) -> Vec<u64> {
    let mut out = vec![0u64; buckets];
    for (b, slot) in out.iter_mut().enumerate() {
        let d = (b as f64 - centre) / 1.6;
        let mean = n * (-0.5 * d * d).exp();
        *slot = (mean * (0.7 + 0.6 * rng.next())).floor() as u64;
    }
    out
}

fn insert(path: &Path, stream: &str, segments: Vec<(i64, RecordBatch)>, row_ns: i64) {
    let mut archive = ArchiveMut::create(path).expect("create the archive");
    let tx = archive.transaction().expect("begin");
    let labels: Labels = [("host".to_string(), "bench-distributions".to_string())].into();
    let source = tx
        .insert_source(&labels, &Labels::new(), START_NS)
        .expect("insert the source");
    for (seq, (first_ts, batch)) in segments.into_iter().enumerate() {
        let mut segment = batch_segment(&batch, first_ts, row_ns);
        let ts = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ts");
        segment.last_ts = ts.value(ts.len() - 1);
        tx.insert_segment(source, stream, seq as i64, &segment)
            .expect("insert a segment");
    }
    tx.commit().expect("commit");
}

/// The test archive (see the module's comment).
fn write_dist(path: &Path) {
    const ROWS: i64 = 3_600;
    const SEG: i64 = 300;
    const GAP: std::ops::Range<i64> = 1_800..2_100;
    const TAIL: std::ops::Range<i64> = 600..630;
    const RESET: i64 = 2_700;
    let bounds = exponential(1.0, 16);
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        histogram_field("latency", &bounds, "delta", "us"),
        histogram_field("latency_total", &bounds, "counter", "us"),
        marked(Field::new("requests", DataType::Int64, true), "counter"),
        marked(Field::new("queue", DataType::Float64, true), "gauge"),
    ]));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut total = vec![0u64; 16];
    let mut requests = 0i64;
    let mut segments = Vec::new();
    let mut start = 0;
    while start < ROWS {
        let rows: Vec<i64> = (start..(start + SEG).min(ROWS))
            .filter(|i| !GAP.contains(i))
            .collect();
        start += SEG;
        if rows.is_empty() {
            continue;
        }
        let (mut delta, mut cumul, mut reqs, mut queue) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for &i in &rows {
            let slow = TAIL.contains(&i);
            let mut counts = latency_counts(&mut rng, 16, 5.0 + (i as f64 / 400.0).sin(), 40.0);
            if slow {
                for (b, c) in latency_counts(&mut rng, 16, 13.5, 12.0)
                    .into_iter()
                    .enumerate()
                {
                    counts[b] += c;
                }
            }
            if i == RESET {
                total = vec![0; 16];
                requests = 0;
            }
            for (t, c) in total.iter_mut().zip(&counts) {
                *t += c;
            }
            requests += counts.iter().sum::<u64>() as i64;
            delta.push(counts);
            cumul.push(total.clone());
            reqs.push(requests);
            queue.push(
                3.0 + 2.0 * (i as f64 / 90.0).sin() + rng.next() + if slow { 20.0 } else { 0.0 },
            );
        }
        let ts = Int64Array::from_iter_values(rows.iter().map(|&i| START_NS + i * SECOND));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(ts),
            histogram_array(&delta, 16),
            histogram_array(&cumul, 16),
            Arc::new(Int64Array::from(reqs)),
            Arc::new(Float64Array::from(queue)),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns).expect("columns match");
        segments.push((START_NS + rows[0] * SECOND, batch));
    }
    insert(path, "api", segments, SECOND);
}

/// 24 hours at 1 s of a 64-bucket histogram.
fn write_heat(path: &Path) {
    const ROWS: i64 = 86_400;
    const SEG: i64 = 3_600;
    let bounds = exponential(1.0, 64)
        .iter()
        .map(|b| b / 1024.0)
        .collect::<Vec<_>>();
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        histogram_field("latency", &bounds, "delta", "us"),
    ]));
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let segments = (0..ROWS)
        .step_by(SEG as usize)
        .map(|start| {
            let rows: Vec<i64> = (start..start + SEG).collect();
            let counts: Vec<Vec<u64>> = rows
                .iter()
                .map(|&i| {
                    latency_counts(
                        &mut rng,
                        64,
                        24.0 + 4.0 * (i as f64 / 7_200.0).sin()
                            + if i % 9_000 < 60 { 14.0 } else { 0.0 },
                        300.0,
                    )
                })
                .collect();
            let ts = Int64Array::from_iter_values(rows.iter().map(|&i| START_NS + i * SECOND));
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(ts), histogram_array(&counts, 64)],
            )
            .expect("columns match");
            (START_NS + start * SECOND, batch)
        })
        .collect();
    insert(path, "api", segments, SECOND);
}

/// 10,000,000 rows 1 ms apart: a gauge and a counter.
fn write_region(path: &Path) {
    const ROWS: i64 = 10_000_000;
    const SEG: i64 = 100_000;
    const MS: i64 = 1_000_000;
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        marked(Field::new("value", DataType::Float64, false), "gauge"),
        marked(Field::new("bytes", DataType::Int64, false), "counter"),
    ]));
    let segments = (0..ROWS)
        .step_by(SEG as usize)
        .map(|start| {
            let rows = start..start + SEG;
            let ts = Int64Array::from_iter_values(rows.clone().map(|i| START_NS + i * MS));
            let value = Float64Array::from_iter_values(
                rows.clone()
                    .map(|i| 50.0 + 30.0 * (i as f64 / 250_000.0).sin() + (i % 17) as f64),
            );
            let bytes = Int64Array::from_iter_values(rows.map(|i| i * 1_460 + (i % 13) * 7));
            let columns: Vec<ArrayRef> = vec![Arc::new(ts), Arc::new(value), Arc::new(bytes)];
            (
                START_NS + start * MS,
                RecordBatch::try_new(schema.clone(), columns).expect("columns match"),
            )
        })
        .collect();
    insert(path, "metrics", segments, MS);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let dir = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-distributions")
        });
    std::fs::create_dir_all(&dir).expect("create the output folder");
    let tool = "distributions inputs";
    make(tool, &dir, "dist.dendro", write_dist);
    if bench {
        make(tool, &dir, "heat86k.dendro", write_heat);
        make(tool, &dir, "region10m.dendro", write_region);
    }
}

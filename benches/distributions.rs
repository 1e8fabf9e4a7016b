//! The exact answers over a window (`src/read/distribution.rs`,
//! `src/read/region.rs`): a heatmap of 24 hours at one row a second of a
//! 64-bucket cumulative histogram (86,400 rows in 24 sealed segments),
//! decoded and summed, and summed alone once decoded (the part after the
//! segments are decoded, which the viewer's 300 ms target is about); and
//! region statistics over 10 million rows of a gauge and a counter held
//! decoded. Medians of this thread's CPU time (the machine is shared) and
//! of wall time.
//!
//! `cargo bench --bench distributions -- [REPS]`. It also leaves the
//! histogram archive at `target/bench-distributions.dendro` for
//! `benches/browser/distributions.mjs` (the same in the wasm engine under
//! Node).
mod common;

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use dendro::read::distribution::heatmap;
use dendro::read::range::decode_for_range;
use dendro::read::region::region_stats;
use dendro::read::window::{read_window, Piece};
use dendro::typed::histogram::Cumulation;
use dendro::typed::{self, Column, RowEncoder, Schema, TypedEncoder, Value};
use dendro::write::Writer;
use dendro::{Archive, Labels, WalRow};

const T0: i64 = 1_700_000_000_000_000_000;
const DAY: usize = 86_400;
const BUCKETS: usize = 64;

/// Writes a day of a 64-bucket latency histogram (running totals), sealed
/// every hour, with a burst of slow requests at noon.
fn write_day(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let bounds: Vec<f64> = (0..=BUCKETS)
        .map(|i| (1e3 * 2f64.powf(i as f64 / 2.0)).round())
        .collect();
    let schema = Schema::new(vec![Column::histogram(
        "latency_ns",
        bounds,
        Cumulation::Counter,
    )]);
    let encoder = TypedEncoder::new();
    let id = encoder.register(&schema).unwrap();
    let mut metadata = Labels::new();
    let listed = typed::with_schema(&metadata, "http", &schema).unwrap();
    metadata.insert(typed::SCHEMAS_KEY.into(), listed);
    let writer = Writer::create(path, encoder).unwrap();
    let source = writer.add_source(Labels::new(), metadata).unwrap();
    let mut rows = RowEncoder::new(id, schema).unwrap();
    let mut totals = vec![0u64; BUCKETS];
    let mut minute = Vec::with_capacity(60);
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..DAY {
        for _ in 0..200 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let slow = (43_200..43_260).contains(&i) && s.is_multiple_of(5);
            let b = if slow {
                50 + (s % 6) as usize
            } else {
                20 + (s % 9) as usize
            };
            totals[b] += 1;
        }
        let row = rows.encode(&[Value::Histogram(totals.clone())]).unwrap();
        let ts = T0 + i as i64 * 1_000_000_000;
        // A minute a commit: the rows are what is measured, not the writer.
        minute.push((
            "http".to_string(),
            WalRow {
                ts,
                wall_offset: 0,
                row,
            },
        ));
        if i % 60 == 59 {
            source.wal(std::mem::take(&mut minute)).unwrap();
        }
        if i % 3600 == 3599 {
            source.seal(["http"]).unwrap();
        }
    }
    drop(source);
    writer.join().unwrap();
}

/// `rows` rows of a gauge and a counter (with a reset every million), in
/// batches of 100,000.
fn ten_million(rows: usize) -> Vec<Piece> {
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("g", DataType::Float64, true).with_metadata(std::collections::HashMap::from([
            ("dendro.kind".to_string(), "gauge".to_string()),
        ])),
        Field::new("c", DataType::Int64, true).with_metadata(std::collections::HashMap::from([(
            "dendro.kind".to_string(),
            "counter".to_string(),
        )])),
    ]));
    (0..rows.div_ceil(100_000))
        .map(|b| {
            let range = b * 100_000..((b + 1) * 100_000).min(rows);
            let ts = Int64Array::from_iter_values(range.clone().map(|i| T0 + i as i64 * 1_000_000));
            let g =
                Float64Array::from_iter_values(range.clone().map(|i| ((i % 977) as f64).sqrt()));
            let c = Int64Array::from_iter_values(range.map(|i| ((i % 1_000_000) * 3) as i64));
            let columns: Vec<ArrayRef> = vec![Arc::new(ts), Arc::new(g), Arc::new(c)];
            Piece {
                segment: Some(b as i64),
                batches: Arc::new(vec![RecordBatch::try_new(schema.clone(), columns).unwrap()]),
            }
        })
        .collect()
}

/// Median CPU and wall milliseconds of `f` over `reps` runs.
fn timed<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, f64) {
    let mut cpu = Vec::new();
    let mut wall = Vec::new();
    for _ in 0..reps {
        let (c0, w0) = (common::thread_cpu_s(), Instant::now());
        std::hint::black_box(f());
        cpu.push((common::thread_cpu_s() - c0) * 1e3);
        wall.push(common::ms(w0));
    }
    (common::median(cpu), common::median(wall))
}

fn report(name: &str, (cpu, wall): (f64, f64)) {
    common::figure(&format!("{name}_cpu"), cpu, "ms");
    common::figure(&format!("{name}_wall"), wall, "ms");
}

fn main() {
    let reps: usize = std::env::args()
        .skip(1)
        .find(|a| a != "--bench")
        .and_then(|a| a.parse().ok())
        .unwrap_or(9);
    eprintln!("load average {}", common::load_average());
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-distributions.dendro");
    write_day(&path);
    let archive = Archive::open(&path).unwrap();
    let window = (T0, T0 + DAY as i64 * 1_000_000_000 - 1);
    let column = ["latency_ns".to_string()];
    let read = || {
        read_window(&archive, 1, "http", window, Some(&column), |r, c| {
            decode_for_range(&archive, r, c)
        })
        .unwrap()
    };
    report(
        "heatmap_day_64_buckets_decode_and_sum_1000px",
        timed(reps, || {
            heatmap(&read(), "http", "latency_ns", window, 1000).unwrap()
        }),
    );
    let pieces = read();
    for pixels in [1000, 4000] {
        report(
            &format!("heatmap_day_64_buckets_sum_only_{pixels}px"),
            timed(reps, || {
                heatmap(&pieces, "http", "latency_ns", window, pixels).unwrap()
            }),
        );
    }
    report(
        "region_stats_day_64_buckets_sum_only",
        timed(reps, || {
            region_stats(&pieces, "http", None, window).unwrap()
        }),
    );
    let map = heatmap(&pieces, "http", "latency_ns", window, 1000).unwrap();
    assert_eq!(map.rows, DAY as u64 - 1, "every row but the baseline");
    drop(pieces);
    let big = ten_million(10_000_000);
    let all = (i64::MIN, i64::MAX);
    report(
        "region_stats_10M_rows_gauge_and_counter",
        timed(reps.min(5), || region_stats(&big, "s", None, all).unwrap()),
    );
    let one = ["g".to_string()];
    report(
        "region_stats_10M_rows_one_gauge",
        timed(reps.min(5), || {
            region_stats(&big, "s", Some(&one), all).unwrap()
        }),
    );
}

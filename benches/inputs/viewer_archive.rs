//! Writes the archive `benches/browser/viewer.mjs` pans a plot of 1M rows
//! in, into a folder (default `target/bench-viewer`), unless it is there:
//! `plot3m.dendro`, one source, one stream `metrics` of 3,000,000 rows one
//! millisecond apart (50 minutes) in 50 segments of 60,000 rows, four
//! numeric columns. The benchmark opens it with a window of 1,000,000 rows
//! and pans that window, so there is data on both sides of it. (Its other
//! archives come from `dendro demo --size`.)
//!
//! `cargo run --release --example viewer_archive -- [DIR]`

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dendro::{ArchiveMut, Labels};

mod support;
use support::{batch_segment, make, START_NS};

/// Rows are one millisecond apart.
const ROW_NS: i64 = 1_000_000;
const PLOT_ROWS: usize = 3_000_000;
const SEGMENT_ROWS: usize = 60_000;

/// Rows `first..first + n` of the plot stream: a CPU figure that swings
/// over minutes with jitter, a memory figure climbing in steps, a byte
/// counter, and a temperature that drifts slowly.
fn plot_batch(first: usize, n: usize) -> RecordBatch {
    let mut seed = 0x2545_f491_4f6c_dd1du64 ^ (first as u64).wrapping_mul(0x9e37_79b9);
    let mut jitter = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let rows: Vec<i64> = (first as i64..(first + n) as i64).collect();
    let ts = Int64Array::from_iter_values(rows.iter().map(|&i| START_NS + i * ROW_NS));
    let cpu = Float64Array::from_iter_values(
        rows.iter()
            .map(|&i| 45.0 + 25.0 * (i as f64 / 90_000.0).sin() + 12.0 * jitter()),
    );
    let mem = Float64Array::from_iter_values(
        rows.iter()
            .map(|&i| 2.0e9 + (i / 20_000) as f64 * 1.5e6 + 4.0e5 * jitter()),
    );
    let net = Int64Array::from_iter_values(rows.iter().map(|&i| i * 1_420 + (i % 11) * 37));
    let temp = Float64Array::from_iter_values(
        rows.iter()
            .map(|&i| 52.0 + 6.0 * (i as f64 / 700_000.0).cos() + 0.3 * jitter()),
    );
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("cpu_percent", DataType::Float64, false),
        Field::new("mem_bytes", DataType::Float64, false),
        Field::new("net_bytes", DataType::Int64, false),
        Field::new("temp_celsius", DataType::Float64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(ts),
        Arc::new(cpu),
        Arc::new(mem),
        Arc::new(net),
        Arc::new(temp),
    ];
    RecordBatch::try_new(schema, columns).expect("columns match the schema")
}

fn write_plot_archive(path: &Path) {
    let mut archive = ArchiveMut::create(path).expect("create the plot archive");
    let tx = archive.transaction().expect("begin");
    let labels: Labels = [
        ("host".to_string(), "bench-viewer".to_string()),
        ("role".to_string(), "plot".to_string()),
    ]
    .into();
    let source = tx
        .insert_source(&labels, &Labels::new(), START_NS)
        .expect("insert the source");
    for (seq, first) in (0..PLOT_ROWS).step_by(SEGMENT_ROWS).enumerate() {
        let n = SEGMENT_ROWS.min(PLOT_ROWS - first);
        let segment = batch_segment(
            &plot_batch(first, n),
            START_NS + first as i64 * ROW_NS,
            ROW_NS,
        );
        tx.insert_segment(source, "metrics", seq as i64, &segment)
            .expect("insert a segment");
    }
    tx.commit().expect("commit");
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-viewer"));
    std::fs::create_dir_all(&dir).expect("create the output folder");
    make(
        "bench-viewer inputs",
        &dir,
        "plot3m.dendro",
        write_plot_archive,
    );
}

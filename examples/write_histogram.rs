//! Write a latency histogram with the self-describing encoder: one host,
//! ten minutes at one row a second, request latency counted into
//! HdrHistogram-like log-linear buckets as running totals (what most
//! agents export), with a minute of slow requests in the middle. The
//! viewer draws it as a heatmap with quantile lines; `dendro stats` gives
//! a region's summed distribution.
//!
//! ```sh
//! cargo run --example write_histogram -- latency.dendro
//! dendro stats latency.dendro --source 1 --stream http
//! ```

use dendro::typed::histogram::{log_linear_bounds, Cumulation};
use dendro::typed::{self, Column, RowEncoder, Schema, TypedEncoder, Value};
use dendro::write::Writer;
use dendro::{Labels, WalRow};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: write_histogram OUT.dendro")?;

    // Bucket edges are fixed in the schema: 0 to 2^30 ns (about a second),
    // each power of two split into 4 buckets.
    let bounds = log_linear_bounds(1e9, 4)?;
    let schema = Schema::new(vec![Column::histogram(
        "latency_ns",
        bounds.clone(),
        Cumulation::Counter,
    )
    .unit("ns")]);
    let encoder = TypedEncoder::new();
    let id = encoder.register(&schema)?;
    let mut metadata = Labels::new();
    metadata.insert(
        typed::SCHEMAS_KEY.into(),
        typed::with_schema(&metadata, "http", &schema)?,
    );
    // RowEncoder checks every row against the previous one: the wrong
    // number of counts, or totals going back without a reset, is refused.
    let mut rows = RowEncoder::new(id, schema)?;

    let writer = Writer::create(&path, encoder)?;
    let source = writer.add_source(Labels::from([("host".into(), "web-01".into())]), metadata)?;
    let (start, wall_offset) = source.clock().now();
    let mut totals = vec![0u64; bounds.len() - 1];
    let bucket_of = |v: f64| {
        bounds
            .partition_point(|&e| e <= v)
            .clamp(1, bounds.len() - 1)
            - 1
    };
    for second in 0..600u32 {
        // 200 requests a second around 3 ms; from 300 s to 360 s a quarter
        // of them take half a second.
        for r in 0..200u32 {
            let spread = 1.0 + f64::from((r * 7919 + second * 31) % 100) / 100.0;
            let slow = (300..360).contains(&second) && r % 4 == 0;
            let ns = if slow { 5e8 * spread } else { 2e6 * spread };
            totals[bucket_of(ns)] += 1;
        }
        let row = rows.encode(&[Value::Histogram(totals.clone())])?;
        let ts = start + i64::from(second) * 1_000_000_000;
        source.wal(vec![(
            "http".into(),
            WalRow {
                ts,
                wall_offset,
                row,
            },
        )])?;
    }
    source.seal(["http"])?;
    let mut last = source.clock().offset_now();
    last.ts = last.ts.max(start + 600 * 1_000_000_000);
    source.finalize(last)?;
    writer.join()?;
    println!(
        "wrote 600 rows of a {}-bucket latency histogram to {path}",
        bounds.len() - 1
    );
    Ok(())
}

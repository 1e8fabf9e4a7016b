//! Decode cost of nullable segments as dendro writes them (LZ4_RAW, v1
//! pages, levels compressed with the values), the case the decoder's page
//! check walks (`src/segment/guard.rs`). Prints, per share of nulls, the
//! median CPU time of this thread to decode 20 segments of 50,000 rows
//! (CPU time: the machine is shared). Build it on two revisions and
//! alternate them.
//!
//! `cargo bench --bench decode_nullable -- [REPS]`
mod common;

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

fn batch(n: usize, null_every: usize) -> RecordBatch {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let ts = Int64Array::from_iter_values(
        (0..n as i64).map(|i| 1_700_000_000_000_000_000 + i * 1_000_000),
    );
    let null = |i: usize| null_every > 0 && i.is_multiple_of(null_every);
    let cpu =
        Float64Array::from_iter((0..n).map(|i| (!null(i)).then(|| (noise() >> 11) as f64 / 1e10)));
    let mem =
        Float64Array::from_iter((0..n).map(|i| (!null(i + 1)).then_some(1e9 + (i / 1000) as f64)));
    let net = Int64Array::from_iter((0..n).map(|i| (!null(i + 2)).then(|| i as i64 * 1500)));
    let host = StringArray::from_iter(
        (0..n).map(|i| (!null(i + 3)).then(|| ["web-01", "db-02", "edge-01"][i % 3])),
    );
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("cpu", DataType::Float64, true),
        Field::new("mem", DataType::Float64, true),
        Field::new("net", DataType::Int64, true),
        Field::new("host", DataType::Utf8, true),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(ts),
        Arc::new(cpu),
        Arc::new(mem),
        Arc::new(net),
        Arc::new(host),
    ];
    RecordBatch::try_new(schema, cols).unwrap()
}

fn main() {
    // `cargo bench` passes `--bench`; REPS is what follows it.
    let reps: usize = std::env::args()
        .skip(1)
        .find(|a| a != "--bench")
        .and_then(|a| a.parse().ok())
        .unwrap_or(15);
    for (what, null_every) in [
        ("no nulls", 0usize),
        ("1 in 7 null", 7),
        ("1 in 1000 null", 1000),
    ] {
        let segs: Vec<bytes::Bytes> = (0..20)
            .map(|_| {
                bytes::Bytes::from(
                    dendro::segment::encode_batch(&batch(50_000, null_every)).unwrap(),
                )
            })
            .collect();
        let total: usize = segs.iter().map(|s| s.len()).sum();
        let mut times = Vec::new();
        for _ in 0..reps {
            let t = common::thread_cpu_s();
            let mut rows = 0;
            for s in &segs {
                for b in dendro::segment::decode_segment(s.clone(), None).unwrap() {
                    rows += b.num_rows();
                }
            }
            std::hint::black_box(rows);
            times.push(common::thread_cpu_s() - t);
        }
        times.sort_by(f64::total_cmp);
        let m = times[reps / 2];
        println!(
            "{what}: {:.1} MB of segments, 1.0 M rows: median {:.1} ms CPU, {:.1} M rows/s, {:.0} MB/s",
            total as f64 / 1e6,
            m * 1e3,
            1.0 / m,
            total as f64 / 1e6 / m
        );
    }
}

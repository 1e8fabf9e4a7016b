//! Writes an archive of a chosen size, for opening archives larger than
//! memory (and past 4 GiB) in the browser (`scripts/test-big-archive.mjs`,
//! `scripts/bench-lazy.mjs`): one source, one stream "metrics" of about
//! 1 MiB segments, inserted through the transaction API until the file
//! reaches the size. Each segment is a real Parquet file whose catalog
//! entry agrees with its rows (a ramp with noise that does not compress),
//! so the archive verifies as sound and any segment plots, the last one
//! included.
//!
//! `cargo run --release --example big_archive -- OUT SIZE_MB`
//! (about a minute per 5 GB here; it skips an OUT that exists).

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dendro::segment::encode_batch;
use dendro::{ArchiveMut, Labels, Segment};

/// 2026-01-01T00:00:00Z in nanoseconds.
const START_NS: i64 = 1_767_225_600_000_000_000;
/// Rows 10 ms apart.
const ROW_NS: i64 = 10_000_000;
/// Rows per segment: with incompressible values, about 1 MiB of Parquet.
const SEGMENT_ROWS: i64 = 128 * 1024;
/// Segments per transaction.
const BATCH: i64 = 64;

/// Segment `seq`: a slow ramp per segment plus noise from a small
/// generator, so values differ from segment to segment and do not compress.
fn segment(seq: i64) -> Segment {
    let first_ts = START_NS + seq * SEGMENT_ROWS * ROW_NS;
    let ts: Vec<i64> = (0..SEGMENT_ROWS).map(|i| first_ts + i * ROW_NS).collect();
    let mut state = (seq as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let value: Vec<f64> = (0..SEGMENT_ROWS)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let noise = (state >> 11) as f64 / (1u64 << 53) as f64;
            (seq % 100) as f64 + i as f64 / SEGMENT_ROWS as f64 + noise
        })
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("value", DataType::Float64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ts)),
        Arc::new(Float64Array::from(value)),
    ];
    let batch = RecordBatch::try_new(schema, columns).expect("columns match the schema");
    Segment {
        bytes: encode_batch(&batch).expect("encode a segment"),
        rows: SEGMENT_ROWS,
        first_ts,
        last_ts: first_ts + (SEGMENT_ROWS - 1) * ROW_NS,
        caller_index: None,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(out), Some(size_mb)) = (args.next(), args.next()) else {
        eprintln!("usage: big_archive OUT SIZE_MB");
        std::process::exit(2);
    };
    let out = PathBuf::from(out);
    let target: u64 = size_mb.parse::<u64>().expect("SIZE_MB is a whole number") << 20;
    if out.exists() {
        eprintln!("big archive: {} is there", out.display());
        return;
    }
    let tmp = PathBuf::from(format!("{}.partial", out.display()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", tmp.display()));
    }
    let mut archive = ArchiveMut::create(&tmp).expect("create the archive");
    let mut labels = Labels::new();
    labels.insert("host".into(), "big-archive".into());
    let source = {
        let tx = archive.transaction().expect("begin");
        let id = tx
            .insert_source(&labels, &Labels::new(), START_NS)
            .expect("insert the source");
        tx.commit().expect("commit");
        id
    };
    let mut seq = 0i64;
    let mut written = 0u64;
    while written < target {
        let tx = archive.transaction().expect("begin");
        for _ in 0..BATCH {
            let s = segment(seq);
            written += s.bytes.len() as u64;
            tx.insert_segment(source, "metrics", seq, &s)
                .expect("insert a segment");
            seq += 1;
        }
        tx.commit().expect("commit");
        eprint!("\rbig archive: {} MB, {seq} segments", written >> 20);
    }
    {
        let tx = archive.transaction().expect("begin");
        tx.set_complete(source, true).expect("complete");
        tx.commit().expect("commit");
    }
    drop(archive);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", tmp.display()));
    }
    std::fs::rename(&tmp, &out).expect("move the archive into place");
    eprintln!("\nbig archive: wrote {} ({seq} segments)", out.display());
}

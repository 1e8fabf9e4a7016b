//! Writes an archive of a chosen size, for opening archives larger than
//! memory (and past 4 GiB) in the browser (`scripts/test-big-archive.mjs`,
//! `benches/browser/in-place.mjs`): one source, one stream "metrics" of about
//! 1 MiB segments, inserted through the transaction API until the file
//! reaches the size. Each segment is a real Parquet file whose catalog
//! entry agrees with its rows (a ramp with noise that does not compress),
//! so the archive verifies as sound and any segment plots, the last one
//! included.
//!
//! `cargo run --release --example big_archive -- OUT SIZE_MB`
//! (about a minute per 5 GB here; it skips an OUT that exists).

use std::path::{Path, PathBuf};

use dendro::{ArchiveMut, Labels, Segment};

mod support;
use support::{make, ts_value_segment, START_NS};

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
    ts_value_segment(first_ts, ROW_NS, value)
}

/// Segments until the file holds `target` bytes of them.
fn write_big(path: &Path, target: u64) {
    let mut archive = ArchiveMut::create(path).expect("create the archive");
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
    let tx = archive.transaction().expect("begin");
    tx.set_complete(source, true).expect("complete");
    tx.commit().expect("commit");
    eprintln!();
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(out), Some(size_mb)) = (args.next(), args.next()) else {
        eprintln!("usage: big_archive OUT SIZE_MB");
        std::process::exit(2);
    };
    let out = PathBuf::from(out);
    let target: u64 = size_mb.parse::<u64>().expect("SIZE_MB is a whole number") << 20;
    let dir = out.parent().unwrap_or(Path::new("."));
    let name = out.file_name().expect("OUT names a file").to_string_lossy();
    make("big archive", dir, &name, |path| write_big(path, target));
}

//! The native side of the browser-engine benchmark (`benches/browser/engine.mjs`).
//!
//! Writes the benchmark's inputs into a folder (default
//! `target/bench-wasm`), unless they are already there, then times what the
//! browser run is compared with, printing one JSON object on stdout:
//!
//! - `seg8m.parquet`: one segment of about 8 MiB; its native decode time.
//! - `demo10.dendro` and `demo100.dendro`: what `dendro demo` writes
//!   (`dendro::demo`, sized to 10 MB and 100 MB), for open + describe.
//! - `a10.dendro` (about 10 MB, 100 segments) and `a100.dendro` (about
//!   100 MB, 1,000 segments of 5,200 rows, one stream): for describe at
//!   1,000 segments and a window of 1M rows.
//!
//! Native open-from-bytes and describe times are printed for reference.
//!
//! `cargo bench --bench decode -- [--dir DIR]`

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use dendro::segment::{decode_segment, encode_batch};
use dendro::{Archive, ArchiveMut, Labels, Segment};

/// Timestamps start here (2023-11-14), one row per millisecond.
const T0: i64 = 1_700_000_000_000_000_000;
const STEP: i64 = 1_000_000;
/// Rows of the single segment: about 8 MiB of Parquet.
const SEGMENT_ROWS: usize = 440_000;
/// Rows per segment of the archives: about 100 KB each.
const ROWS_PER_SEGMENT: usize = 5_200;
const HOSTS: [&str; 8] = [
    "web-01", "web-02", "web-03", "db-01", "db-02", "cache-01", "queue-01", "edge-01",
];

/// A deterministic, telemetry-like run of rows: a noisy CPU figure, a
/// slowly drifting memory figure, a byte counter, and a host label.
fn rows(start: i64, n: usize) -> RecordBatch {
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ start as u64;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let i = (start..start + n as i64).collect::<Vec<_>>();
    let ts = Int64Array::from_iter_values(i.iter().map(|&i| T0 + i * STEP));
    let cpu = Float64Array::from_iter_values(
        i.iter()
            .map(|&i| 40.0 + 30.0 * ((i as f64) / 50_000.0).sin() + 10.0 * noise()),
    );
    let mem = Float64Array::from_iter_values(i.iter().map(|&i| 1e9 + (i / 1000) as f64 * 4096.0));
    let net = Int64Array::from_iter_values(i.iter().map(|&i| i * 1500 + (i % 7) * 13));
    let host = StringArray::from_iter_values(i.iter().map(|&i| HOSTS[(i % 8) as usize]));
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("cpu", DataType::Float64, false),
        Field::new("mem", DataType::Float64, false),
        Field::new("net_bytes", DataType::Int64, false),
        Field::new("host", DataType::Utf8, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(ts),
        Arc::new(cpu),
        Arc::new(mem),
        Arc::new(net),
        Arc::new(host),
    ];
    RecordBatch::try_new(schema, columns).unwrap()
}

fn segment(start: i64, n: usize) -> Segment {
    Segment {
        bytes: encode_batch(&rows(start, n)).unwrap(),
        rows: n as i64,
        first_ts: T0 + start * STEP,
        last_ts: T0 + (start + n as i64 - 1) * STEP,
        caller_index: None,
    }
}

/// An archive with one source and one stream `metrics` of `segments`
/// segments of `per_segment` rows.
fn write_archive(path: &Path, segments: usize, per_segment: usize) {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    {
        let mut archive = ArchiveMut::create(&tmp).unwrap();
        let tx = archive.transaction().unwrap();
        let labels: Labels = [("host".to_string(), "bench".to_string())].into();
        let id = tx.insert_source(&labels, &Labels::new(), T0).unwrap();
        for seq in 0..segments {
            let start = (seq * per_segment) as i64;
            tx.insert_segment(id, "metrics", seq as i64, &segment(start, per_segment))
                .unwrap();
        }
        tx.commit().unwrap();
    }
    for sidecar in ["-wal", "-shm"] {
        let mut p = tmp.clone().into_os_string();
        p.push(sidecar);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
    std::fs::rename(&tmp, path).unwrap();
}

/// One warm-up run, then the median of `runs` timed ones (ms).
fn time(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    common::median_ms(runs, f)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args
        .iter()
        .position(|a| a == "--dir")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-wasm"));
    std::fs::create_dir_all(&dir).unwrap();

    // Inputs are rewritten when their recipe changes.
    let stamp = dir.join(format!("inputs-{SEGMENT_ROWS}-{ROWS_PER_SEGMENT}"));
    if !stamp.exists() {
        for f in ["seg8m.parquet", "a10.dendro", "a100.dendro"] {
            let _ = std::fs::remove_file(dir.join(f));
        }
    }
    let seg_path = dir.join("seg8m.parquet");
    if !seg_path.exists() {
        std::fs::write(&seg_path, segment(0, SEGMENT_ROWS).bytes).unwrap();
    }
    for (name, segments) in [("a10.dendro", 100), ("a100.dendro", 1000)] {
        if !dir.join(name).exists() {
            eprintln!("bench: writing {name}");
            write_archive(&dir.join(name), segments, ROWS_PER_SEGMENT);
        }
    }
    for (name, bytes) in [
        ("demo10.dendro", 10_000_000),
        ("demo100.dendro", 100_000_000),
    ] {
        let path = dir.join(name);
        if !path.exists() {
            eprintln!("bench: writing {name} (dendro demo)");
            let tmp = dir.join(format!("{name}.tmp"));
            let _ = std::fs::remove_file(&tmp);
            dendro::demo::write_demo(&tmp, dendro::demo::DemoOptions::sized(bytes)).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        }
    }
    std::fs::write(&stamp, b"").unwrap();

    let seg = std::fs::read(&seg_path).unwrap();
    let mut rows = 0;
    let decode_ms = time(31, || {
        let batches = decode_segment(seg.to_vec(), None).unwrap();
        rows = batches.iter().map(|b| b.num_rows()).sum::<usize>();
    });
    let mut out = vec![
        format!("\"dir\":{:?}", dir.display().to_string()),
        format!("\"segment_bytes\":{}", seg.len()),
        format!("\"segment_rows\":{rows}"),
        format!("\"native_decode_ms\":{decode_ms:.3}"),
        format!(
            "\"native_decode_mb_s\":{:.1}",
            seg.len() as f64 / 1e6 / (decode_ms / 1e3)
        ),
    ];
    for name in ["demo10", "demo100", "a10", "a100"] {
        let bytes = std::fs::read(dir.join(format!("{name}.dendro"))).unwrap();
        let open_ms = time(5, || {
            Archive::from_bytes(name, &bytes).unwrap();
        });
        let archive = Archive::from_bytes(name, &bytes).unwrap();
        let describe_ms = time(9, || {
            dendro::read::describe(&archive).unwrap();
        });
        out.push(format!("\"{name}_bytes\":{}", bytes.len()));
        out.push(format!("\"{name}_native_open_ms\":{open_ms:.3}"));
        out.push(format!("\"{name}_native_describe_ms\":{describe_ms:.3}"));
    }
    println!("{{{}}}", out.join(","));
}

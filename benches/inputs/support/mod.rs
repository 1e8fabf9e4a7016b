//! What the programs that write benchmark and test inputs share: how a
//! synthetic segment is built and how an input file is put in place.
// Each example uses part of this module.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dendro::segment::encode_batch;
use dendro::Segment;

/// 2026-01-01T00:00:00Z in nanoseconds: where every synthetic input starts.
pub const START_NS: i64 = 1_767_225_600_000_000_000;

/// A segment holding `batch`, whose rows are `row_ns` apart from `first_ts`.
pub fn batch_segment(batch: &RecordBatch, first_ts: i64, row_ns: i64) -> Segment {
    let rows = batch.num_rows() as i64;
    Segment {
        bytes: encode_batch(batch).expect("encode a segment"),
        rows,
        first_ts,
        last_ts: first_ts + (rows - 1).max(0) * row_ns,
        caller_index: None,
    }
}

/// A segment of two columns, `ts` and `value`, one row per value, the rows
/// `row_ns` apart from `first_ts`.
pub fn ts_value_segment(first_ts: i64, row_ns: i64, values: Vec<f64>) -> Segment {
    let ts = Int64Array::from_iter_values((0..values.len() as i64).map(|i| first_ts + i * row_ns));
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("value", DataType::Float64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![Arc::new(ts), Arc::new(Float64Array::from(values))];
    let batch = RecordBatch::try_new(schema, columns).expect("columns match the schema");
    batch_segment(&batch, first_ts, row_ns)
}

/// Writes `name` in `dir` through `write` into a temporary name, then moves
/// it into place, so an interrupted run never leaves a half-written input
/// behind; an input already there is kept. `tool` names the program in its
/// progress lines.
pub fn make(tool: &str, dir: &Path, name: &str, write: impl FnOnce(&Path)) {
    let path = dir.join(name);
    if path.exists() {
        eprintln!("{tool}: {name} is there");
        return;
    }
    let tmp = dir.join(format!("{name}.partial"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", tmp.display()));
    }
    eprintln!("{tool}: writing {name}");
    write(&tmp);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", tmp.display()));
    }
    std::fs::rename(&tmp, &path).expect("move the archive into place");
}

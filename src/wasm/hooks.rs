//! Calls for the engine's tests and benchmarks only (feature
//! `test-hooks`, never in the viewer a user is served): a trap on purpose,
//! a bare decode and unpack to time, and an envelope of rows no fixture
//! holds.

use wasm_bindgen::prelude::*;

use super::{convert, engine::unpack_js, js, JsResult, DECODING};

/// Traps the module as a hostile segment that got past validation would,
/// noting `what` as the segment being decoded. For testing the worker's
/// recovery only (feature `test-hooks`).
#[wasm_bindgen(js_name = __crashForTests)]
pub fn crash_for_tests(what: String) {
    DECODING.with(|d| d.set(Some(what)));
    panic!("crash requested by a test");
}

/// Decodes one segment's Parquet bytes and counts its rows, with nothing
/// around it (no SQLite, no JS conversion): the figure to compare with a
/// native decode of the same bytes (`benches/decode.rs`). Feature
/// `test-hooks`.
#[wasm_bindgen(js_name = __decodeForBench)]
pub fn decode_for_bench(bytes: &[u8]) -> JsResult<f64> {
    let batches = crate::segment::decode_segment(bytes.to_vec(), None)
        .map_err(|cause| js::error("Segment", &cause))?;
    Ok(batches.iter().map(|b| b.num_rows() as f64).sum())
}

/// Unpacks what `decodePacked` returned, as `RangeJob.supply` does,
/// counting the rows: with `__decodeForBench` and `decodePacked`, what
/// decoding in a second instance adds (`benches/browser/engine.mjs`). Feature
/// `test-hooks`.
#[wasm_bindgen(js_name = __unpackForBench)]
pub fn unpack_for_bench(packed: js_sys::Array) -> JsResult<f64> {
    let mut rows = 0.0;
    for p in packed.iter() {
        let batch = unpack_js(&p).map_err(|cause| js::error("Segment", &cause))?;
        rows += batch.num_rows() as f64;
    }
    Ok(rows)
}

/// Reduces decoded batches to an envelope exactly as `readRange` does,
/// returning the JS value `readRange` would. For tests that feed rows no
/// archive in a test fixture holds (a million rows with one spike).
/// Feature `test-hooks`.
pub fn envelope_of_batches(
    batches: &[arrow_array::RecordBatch],
    from: i64,
    to: i64,
    max_points: Option<usize>,
) -> JsValue {
    let mut builder = crate::read::envelope::EnvelopeBuilder::new(from, to, max_points, None, None);
    for b in batches {
        builder.push(b);
    }
    convert::envelope(&builder.finish(0))
}

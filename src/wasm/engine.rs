//! The engine's free functions: the decoder instance's half of a range
//! read (`decodePacked`, `decodeBatch`), the warm-up archive, the shared
//! cache's budget and counters, the in-place reader's switches a benchmark
//! flips, and what a trap leaves to report.

use std::sync::Arc;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use super::{convert, fail, js, normalized, JsResult, CACHE, DECODING};
use crate::error::Error;

/// The decoder's half of `readRange`: decodes one segment's bytes keeping
/// `columns` and the time axis, and packs the rows an envelope reads into
/// one buffer per batch (see `read::packed`), each a fresh copy free to
/// transfer. Runs in an instance that holds no archive; an error is the
/// decoder's own words, for `RangeJob.fail` to attach to the segment.
#[wasm_bindgen(js_name = decodePacked)]
pub fn decode_packed(bytes: Vec<u8>, columns: Option<Vec<String>>) -> JsResult<js_sys::Array> {
    let columns = normalized(columns);
    let batches = crate::read::range::decode_range_bytes(bytes, columns.as_deref())
        .map_err(|cause| js::error("Segment", &cause))?;
    let out = js_sys::Array::new();
    for batch in &batches {
        // Each section is copied once, from the batch straight into JS memory.
        let parts = crate::read::packed::pack_parts(batch);
        let total = parts.iter().map(|p| p.bytes().len()).sum::<usize>();
        let packed = Uint8Array::new_with_length(total as u32);
        let mut at = 0u32;
        for part in &parts {
            let bytes = part.bytes();
            packed
                .subarray(at, at + bytes.len() as u32)
                .copy_from(bytes);
            at += bytes.len() as u32;
        }
        out.push(&packed);
    }
    Ok(out)
}

/// A packed buffer from JS, copied once into aligned memory and unpacked
/// there (the arrays share that copy).
pub(super) fn unpack_js(packed: &JsValue) -> Result<arrow_array::RecordBatch, String> {
    let packed = Uint8Array::new(packed);
    let mut buffer = arrow_buffer::MutableBuffer::from_len_zeroed(packed.length() as usize);
    packed.copy_to(buffer.as_slice_mut());
    crate::read::packed::unpack(&buffer.into())
}

/// The decoder's half of `readSegment`: one segment's bytes decoded to the
/// `DecodedBatch` of types.ts (`columns` only, when given).
#[wasm_bindgen(js_name = decodeBatch)]
pub fn decode_batch(bytes: Vec<u8>, columns: Option<Vec<String>>) -> JsResult<JsValue> {
    let columns = normalized(columns);
    let batches = crate::segment::decode_segment(bytes, columns.as_deref())
        .map_err(|cause| js::error("Segment", &cause))?;
    batch_value(&batches).map_err(|cause| js::error("Segment", &cause))
}

/// Decoded batches as one `DecodedBatch`.
pub(super) fn batch_value(batches: &[arrow_array::RecordBatch]) -> Result<JsValue, String> {
    let Some(first) = batches.first() else {
        return Ok(convert::batch(&arrow_array::RecordBatch::new_empty(
            Arc::new(arrow_schema::Schema::empty()),
        )));
    };
    let one = crate::segment::concat(&first.schema(), batches)?;
    Ok(convert::batch(&one))
}

/// The bytes of a small archive laid down in memory (one source, three
/// catalog rows, payloads never read). The worker opens
/// them in place once when it starts, before any archive is dropped: the
/// first open otherwise pays for compiling the code it runs (SQLite's open
/// and queries, the in-place reader, describe), a hundred milliseconds
/// and more of a drop-to-overview.
#[wasm_bindgen(js_name = warmUpArchive)]
pub fn warm_up_archive() -> JsResult<Vec<u8>> {
    crate::container::warm_up_archive().map_err(|e| {
        fail(Error::Invalid {
            file: "the warm-up archive".into(),
            message: format!("cannot lay it down in memory: {e}"),
        })
    })
}

/// Turns the in-place reader's walk hints ([`crate::pager::expect_walk`])
/// on or off for this instance: off reads a BLOB's overflow chain with read
/// heads alone, as before the hints, for a benchmark's comparison.
#[wasm_bindgen(js_name = setWalkHints)]
pub fn set_walk_hints(on: bool) {
    crate::pager::set_walk_hints(on);
}

/// Turns reading payloads by range ([`crate::pager::set_in_place_payloads`])
/// on or off for this instance: off reads every payload of an archive read
/// in place through SQLite, as before, for a benchmark's comparison.
#[wasm_bindgen(js_name = setInPlacePayloads)]
pub fn set_in_place_payloads(on: bool) {
    crate::pager::set_in_place_payloads(on);
}

/// Chooses the decoded-segment cache's budget in bytes, evicting as needed
/// and overriding the default ([`crate::read::cache::default_budget`] of
/// what is open) for good; 0 turns caching off, footer summaries included.
#[wasm_bindgen(js_name = setCacheBytes)]
pub fn set_cache_bytes(bytes: f64) {
    let bytes = if bytes.is_finite() && bytes > 0.0 {
        bytes as usize
    } else {
        0
    };
    CACHE.with(|c| c.borrow_mut().choose_budget(bytes));
}

/// `{ entries, bytes, budget }` of the decoded-segment cache.
#[wasm_bindgen(js_name = cacheStats)]
pub fn cache_stats() -> JsValue {
    CACHE.with(|c| {
        let c = c.borrow();
        let (entries, bytes) = c.usage();
        js::Obj::new()
            .set("entries", entries as u32)
            .set("bytes", JsValue::from_f64(bytes as f64))
            .set("budget", JsValue::from_f64(c.budget() as f64))
            .build()
    })
}

/// Classifies a file from its first bytes, as an open would before it
/// touches SQLite (`container::sniff_bytes`; give at least the first 100
/// bytes): `{ readable, archive, text }`, `text` the verdict in words
/// ("not a dendro archive: ..."). The viewer sorts a dropped folder with
/// it, so a thousand files cost a thousand 100-byte reads, not opens.
#[wasm_bindgen(js_name = sniffHeader)]
pub fn sniff_header(bytes: &[u8]) -> JsValue {
    let kind = crate::container::sniff_bytes(bytes);
    js::Obj::new()
        .set("readable", kind.is_readable())
        .set(
            "archive",
            matches!(kind, crate::container::FileKind::Archive { .. }),
        )
        .set("text", kind.to_string())
        .build()
}

/// The segment whose decoding was cut short by a trap, named for a person
/// ("segment 3 of stream \"cpu\" (source 1) of run.dendro"), or
/// `undefined`. Call it once after a `WebAssembly.RuntimeError`, before
/// discarding the instance: nothing else is safe to call then.
#[wasm_bindgen(js_name = decodingNow)]
pub fn decoding_now() -> Option<String> {
    DECODING.with(|d| d.take())
}

/// This crate's version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

//! The JavaScript API of the reader, for `wasm32-unknown-unknown` (built
//! with `wasm-pack build --target web`; the viewer runs it in a Web Worker
//! through `www/src/engine/`).
//!
//! This module is glue: argument checks, calls into [`crate::read`], and
//! conversion of the answers into JS values (timestamps as `BigInt`,
//! counts as numbers, columns as typed arrays). Errors are JS `Error`s with
//! a `kind` property naming the kind of refusal. The JS `Archive` class is
//! in `archive.rs` (its range reads in `range.rs`, its read-ahead plans in
//! `prefetch.rs`), the free engine functions in `engine.rs`, and the hooks
//! only tests and benchmarks call in `hooks.rs` (feature `test-hooks`).
//!
//! Decoded segments are kept in one bounded LRU shared by every open
//! archive ([`crate::read::cache`]), so panning and zooming over the same
//! window decode each segment once.

mod archive;
mod compare;
mod convert;
mod distribution;
mod engine;
#[cfg(feature = "test-hooks")]
mod hooks;
mod input;
mod js;
mod prefetch;
mod range;
mod sample;
mod vfs;

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use wasm_bindgen::prelude::*;

pub use archive::JsArchive;
pub use compare::*;
pub use engine::*;
#[cfg(feature = "test-hooks")]
pub use hooks::*;
pub use prefetch::JsPrefetch;
pub use range::RangeJob;

use crate::catalog::SegmentRecord;
use crate::container::Archive;
use crate::error::Error;
use crate::read::cache::{identity_of, Batches, DecodeKey, ReaderCache, SegmentKey};
use crate::read::range::Stats;

thread_local! {
    /// Decoded segments and footer summaries of every open archive.
    static CACHE: RefCell<ReaderCache> = RefCell::new(ReaderCache::default());
    static NEXT_ID: Cell<u32> = const { Cell::new(1) };
    /// The segment being decoded, if any. Read back after a trap (a
    /// panic aborts in wasm32), so the page can say which segment did it.
    static DECODING: Cell<Option<String>> = const { Cell::new(None) };
}

/// Runs a decode of the segment `what` describes, noting it in `DECODING`
/// for as long as it runs. A trap leaves the note in place.
fn noting<T>(what: impl FnOnce() -> String, decode: impl FnOnce() -> T) -> T {
    DECODING.with(|d| d.set(Some(what())));
    let out = decode();
    DECODING.with(|d| d.set(None));
    out
}

type JsResult<T> = Result<T, JsValue>;

/// A crate error as a JS `Error`; a SQLite I/O error caused by a lazily
/// read source is reported as that source's failure.
fn fail(err: Error) -> JsValue {
    js::from_error(&vfs::explain(err))
}

/// A new id for an open archive, and the decoded-segment cache told how
/// much it should weigh.
fn opened(weight: u64) -> u32 {
    let id = NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id.wrapping_add(1));
        id
    });
    CACHE.with(|c| c.borrow_mut().opened(id, weight));
    id
}

/// What an archive read in place weighs in the decoded-segment cache's
/// default budget (a quarter of what is open): not its size, which may be
/// far past memory, but at most this.
const LAZY_CACHE_WEIGHT: u64 = 256 << 20;

/// A JS number that must be a whole id (source id or seq).
fn whole(what: &str, file: &str, v: f64) -> JsResult<i64> {
    if v.fract() == 0.0 && v.abs() <= 9_007_199_254_740_991.0 {
        Ok(v as i64)
    } else {
        Err(js::error(
            "NotFound",
            &format!("{file}: {what} {v} not found: ids are whole numbers"),
        ))
    }
}

/// Sorted, de-duplicated column names, so equal requests share a cache entry.
fn normalized(columns: Option<Vec<String>>) -> Option<Vec<String>> {
    columns.map(|mut c| {
        c.sort();
        c.dedup();
        c
    })
}

/// Byte ranges as JS gets them: `[offset, length, ...]`.
fn flat(ranges: Vec<(u64, u64)>) -> Vec<f64> {
    ranges
        .into_iter()
        .flat_map(|(offset, len)| [offset as f64, len as f64])
        .collect()
}

/// The cache key of a segment decoded for an envelope.
fn range_key(archive: u32, record: &SegmentRecord, columns: Option<&[String]>) -> DecodeKey {
    DecodeKey {
        archive,
        source_id: record.source_id,
        stream: record.stream.clone(),
        seq: record.seq,
        identity: identity_of(record),
        columns: columns.map(<[String]>::to_vec),
        with_time_axis: true,
    }
}

/// The cache key of a segment's footer summary.
fn stats_key(archive: u32, record: &SegmentRecord) -> SegmentKey {
    SegmentKey {
        archive,
        source_id: record.source_id,
        stream: record.stream.clone(),
        seq: record.seq,
        identity: identity_of(record),
    }
}

/// A segment's footer summary, from the cache or read now.
fn cached_stats(
    archive_id: u32,
    archive: &Archive,
    record: &SegmentRecord,
) -> crate::error::Result<Option<Stats>> {
    let key = stats_key(archive_id, record);
    if let Some(hit) = CACHE.with(|c| c.borrow().stats(&key)) {
        return Ok(hit);
    }
    let summary = noting(
        || {
            format!(
                "the footer of {}",
                describe_segment(archive.file(), record.source_id, &record.stream, record.seq)
            )
        },
        || crate::read::stats::segment_stats(archive, record),
    )?
    .map(Arc::new);
    CACHE.with(|c| c.borrow_mut().keep_stats(key, summary.clone()));
    Ok(summary)
}

/// Looks `key` up in the shared cache, decoding on a miss. The cache is
/// not borrowed while `load` runs.
fn cached(
    key: DecodeKey,
    load: impl FnOnce() -> crate::error::Result<Batches>,
) -> crate::error::Result<Batches> {
    if let Some(hit) = CACHE.with(|c| c.borrow_mut().decoded(&key)) {
        return Ok(hit);
    }
    let batches = load()?;
    CACHE.with(|c| c.borrow_mut().keep_decoded(key, Arc::clone(&batches)));
    Ok(batches)
}

fn describe_segment(file: &str, source: i64, stream: &str, seq: i64) -> String {
    format!("segment {seq} of stream {stream:?} (source {source}) of {file}")
}

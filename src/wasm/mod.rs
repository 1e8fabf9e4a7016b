//! The JavaScript API of the reader, for `wasm32-unknown-unknown` (built
//! with `wasm-pack build --target web`; the viewer runs it in a Web Worker
//! through `www/src/engine/`).
//!
//! This module is glue: argument checks, calls into [`crate::read`], and
//! conversion of the answers into JS values (timestamps as `BigInt`,
//! counts as numbers, columns as typed arrays). Errors are JS `Error`s with
//! a `kind` property naming the kind of refusal.
//!
//! Decoded segments are kept in one bounded LRU shared by every open
//! archive ([`crate::read::cache`]), so panning and zooming over the same
//! window decode each segment once.

mod convert;
mod input;
mod js;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use crate::container::Archive;
use crate::error::Error;
use crate::read::cache::{Batches, SegmentCache};
use crate::read::envelope::{decode_for_range, read_range_with, RangeRequest, Stats};

/// The largest archive the engine accepts: SQLite's own ceiling for one
/// allocation (`SQLITE_MAX_ALLOCATION_SIZE`), which holds the whole file.
pub const MAX_ARCHIVE_BYTES: u64 = 2_147_483_391;

/// Default budget of the decoded-segment cache, in bytes of Arrow memory.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;

/// Which decode a cache entry holds: the columns as asked for
/// (`readSegment`), or those plus the time axis (`readRange`).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    archive: u32,
    source_id: i64,
    stream: String,
    seq: i64,
    columns: Option<Vec<String>>,
    with_time_axis: bool,
}

/// A segment, for the footer-statistics cache: its summary does not
/// depend on which columns are asked for.
#[derive(Clone, PartialEq, Eq, Hash)]
struct SegmentKey {
    archive: u32,
    source_id: i64,
    stream: String,
    seq: i64,
}

/// Footer summaries kept at most: a few hundred bytes each.
const MAX_STATS_ENTRIES: usize = 1 << 16;

thread_local! {
    static CACHE: RefCell<SegmentCache<Key>> = RefCell::new(SegmentCache::new(DEFAULT_CACHE_BYTES));
    /// Footer summaries by segment (`None`: the footer says nothing exact).
    static STATS: RefCell<HashMap<SegmentKey, Option<Stats>>> = RefCell::new(HashMap::new());
    /// Whether caching is on at all (`setCacheBytes(0)` turns both off).
    static CACHING: Cell<bool> = const { Cell::new(true) };
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

fn fail(err: Error) -> JsValue {
    js::from_error(&err)
}

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

/// An archive open in this engine: read-only, in memory.
#[wasm_bindgen(js_name = Archive)]
pub struct JsArchive {
    id: u32,
    archive: Archive,
}

#[wasm_bindgen(js_class = Archive)]
impl JsArchive {
    /// Opens an archive from its bytes. The header is checked before SQLite
    /// sees anything; the bytes are then copied once, straight from `bytes`
    /// into SQLite's read-only in-memory database, so the caller may drop
    /// its copy. `name` appears in every message about this archive.
    pub fn open(bytes: &Uint8Array, name: &str) -> JsResult<JsArchive> {
        console_error_panic_hook::set_once();
        let len = bytes.length() as u64;
        if len > MAX_ARCHIVE_BYTES {
            return Err(js::error(
                "TooLarge",
                &format!(
                    "{name}: the file is {} MB; the engine holds archives up to {} MB in memory",
                    len >> 20,
                    MAX_ARCHIVE_BYTES >> 20
                ),
            ));
        }
        let reader = input::JsBytes::new(bytes.clone());
        let archive = Archive::from_reader(name, reader, len as usize).map_err(fail)?;
        let id = NEXT_ID.with(|n| {
            let id = n.get();
            n.set(id.wrapping_add(1));
            id
        });
        Ok(JsArchive { id, archive })
    }

    /// The name given at open.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.archive.file().to_string()
    }

    /// What the archive holds, from the catalog alone: the shape of
    /// `dendro describe --json` plus `caller_row_names` and
    /// `caller_row_counts`.
    pub fn describe(&self) -> JsResult<JsValue> {
        let d = crate::read::describe(&self.archive).map_err(fail)?;
        Ok(convert::description(&d))
    }

    /// The columns of the stream's first sealed segment, from its footer.
    pub fn schema(&self, source: f64, stream: &str) -> JsResult<JsValue> {
        let file = self.archive.file();
        let source = whole("source", file, source)?;
        self.require_stream(source, stream)?;
        match crate::read::probe(&self.archive, source, stream).map_err(fail)? {
            None => Ok(convert::schema(None)),
            Some((record, bytes)) => {
                let schema = crate::segment::segment_schema(&bytes).map_err(|cause| {
                    fail(Error::Segment {
                        file: file.to_string(),
                        source_id: source,
                        stream: stream.to_string(),
                        seq: record.seq,
                        cause,
                    })
                })?;
                Ok(convert::schema(Some(&schema)))
            }
        }
    }

    /// One sealed segment decoded: `columns` only when given.
    #[wasm_bindgen(js_name = readSegment)]
    pub fn read_segment(
        &self,
        source: f64,
        stream: &str,
        seq: f64,
        columns: Option<Vec<String>>,
    ) -> JsResult<JsValue> {
        let file = self.archive.file();
        let source = whole("source", file, source)?;
        let seq = whole("segment", file, seq)?;
        let columns = normalized(columns);
        let key = Key {
            archive: self.id,
            source_id: source,
            stream: stream.to_string(),
            seq,
            columns: columns.clone(),
            with_time_axis: false,
        };
        let batches = cached(key, || {
            let bytes = crate::read::segment_bytes(&self.archive, source, stream, seq)?;
            let record = crate::catalog::SegmentRecord {
                source_id: source,
                stream: stream.to_string(),
                seq,
                rows: 0,
                first_ts: 0,
                last_ts: 0,
                bytes: 0,
                caller_index: false,
            };
            let batches = noting(
                || describe_segment(file, source, stream, seq),
                || crate::read::decode(&self.archive, &record, bytes, columns.as_deref()),
            )?;
            Ok(Arc::new(batches))
        })
        .map_err(fail)?;
        let Some(first) = batches.first() else {
            return Ok(convert::batch(&arrow_array::RecordBatch::new_empty(
                Arc::new(arrow_schema::Schema::empty()),
            )));
        };
        let one = crate::segment::concat(&first.schema(), &batches).map_err(|cause| {
            fail(Error::Segment {
                file: file.to_string(),
                source_id: source,
                stream: stream.to_string(),
                seq,
                cause,
            })
        })?;
        Ok(convert::batch(&one))
    }

    /// A window `[from, to]` of the stream's sealed segments. Only segments
    /// overlapping the window are decoded. With `max_points`, numeric
    /// columns become a min/max envelope per time bucket, at most
    /// `max_points` points, whatever the row count.
    #[wasm_bindgen(js_name = readRange)]
    pub fn read_range(
        &self,
        source: f64,
        stream: &str,
        from: i64,
        to: i64,
        columns: Option<Vec<String>>,
        max_points: Option<u32>,
    ) -> JsResult<JsValue> {
        let source = whole("source", self.archive.file(), source)?;
        let columns = normalized(columns);
        let request = RangeRequest {
            source_id: source,
            stream,
            from,
            to,
            columns: columns.as_deref(),
            max_points: max_points.map(|n| n as usize),
        };
        let file = self.archive.file();
        let stats = |record: &crate::catalog::SegmentRecord| {
            let key = SegmentKey {
                archive: self.id,
                source_id: record.source_id,
                stream: record.stream.clone(),
                seq: record.seq,
            };
            if let Some(hit) = STATS.with(|s| s.borrow().get(&key).cloned()) {
                return Ok(hit);
            }
            let summary = noting(
                || {
                    format!(
                        "the footer of {}",
                        describe_segment(file, record.source_id, &record.stream, record.seq)
                    )
                },
                || crate::read::stats::segment_stats(&self.archive, record),
            )?
            .map(Arc::new);
            if CACHING.with(Cell::get) {
                STATS.with(|s| {
                    let mut s = s.borrow_mut();
                    if s.len() >= MAX_STATS_ENTRIES {
                        s.clear();
                    }
                    s.insert(key, summary.clone());
                });
            }
            Ok(summary)
        };
        let envelope = read_range_with(&self.archive, &request, stats, |record, columns| {
            let key = Key {
                archive: self.id,
                source_id: record.source_id,
                stream: record.stream.clone(),
                seq: record.seq,
                columns: columns.map(<[String]>::to_vec),
                with_time_axis: true,
            };
            cached(key, || {
                noting(
                    || {
                        describe_segment(
                            self.archive.file(),
                            record.source_id,
                            &record.stream,
                            record.seq,
                        )
                    },
                    || decode_for_range(&self.archive, record, columns),
                )
            })
        })
        .map_err(fail)?;
        Ok(convert::envelope(&envelope))
    }

    /// Rows committed past the last seal: this reader has no encoder for
    /// them, so it reports their count and span as data not read.
    #[wasm_bindgen(js_name = liveTail)]
    pub fn live_tail(&self, source: f64, stream: &str) -> JsResult<JsValue> {
        let source = whole("source", self.archive.file(), source)?;
        self.require_stream(source, stream)?;
        let span = crate::read::live_wal_span(&self.archive, source, stream).map_err(fail)?;
        Ok(match span {
            Some(s) => js::Obj::new()
                .set("rows", js::num(s.rows))
                .set("first_ts", js::big(s.first_ts))
                .set("last_ts", js::big(s.last_ts)),
            None => js::Obj::new()
                .set("rows", 0)
                .set("first_ts", JsValue::NULL)
                .set("last_ts", JsValue::NULL),
        }
        .build())
    }

    /// The caller's index stored beside segment `seq`, or `null`.
    #[wasm_bindgen(js_name = callerIndex)]
    pub fn caller_index(
        &self,
        source: f64,
        stream: &str,
        seq: f64,
    ) -> JsResult<Option<Uint8Array>> {
        let file = self.archive.file();
        let source = whole("source", file, source)?;
        let seq = whole("segment", file, seq)?;
        let all = crate::read::caller_indexes(&self.archive, source, stream).map_err(fail)?;
        match all.into_iter().find(|(s, _)| *s == seq) {
            Some((_, index)) => Ok(index.map(|bytes| Uint8Array::from(&bytes[..]))),
            None => Err(js::error(
                "NotFound",
                &format!("{file}: segment {seq} of stream {stream:?} in source {source} not found"),
            )),
        }
    }

    /// Caller rows stored under `name` with `from <= ts <= to`, in
    /// (ts, insertion) order: `{ ts: bigint, blob: Uint8Array }[]`.
    #[wasm_bindgen(js_name = callerRows)]
    pub fn caller_rows(&self, source: f64, name: &str, from: i64, to: i64) -> JsResult<JsValue> {
        let source = whole("source", self.archive.file(), source)?;
        let rows = crate::read::caller_rows(&self.archive, source, name, from, to).map_err(fail)?;
        let out = js_sys::Array::new_with_length(rows.len() as u32);
        for (i, row) in rows.iter().enumerate() {
            let row = js::Obj::new()
                .set("ts", js::big(row.ts))
                .set("blob", Uint8Array::from(&row.blob[..]))
                .build();
            out.set(i as u32, row);
        }
        Ok(out.into())
    }

    /// The full soundness check, as data.
    pub fn verify(&self) -> JsResult<JsValue> {
        let report = self.archive.verify().map_err(fail)?;
        Ok(convert::verify(&report))
    }
}

impl JsArchive {
    /// The reader underneath, for Rust callers (tests compare it with the
    /// fixture manifests through the same code as the native tests).
    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// Refuses a stream the source does not have (neither segments nor
    /// live rows), so a typo is not mistaken for an empty stream.
    fn require_stream(&self, source: i64, stream: &str) -> JsResult<()> {
        let known = self
            .archive
            .read_snapshot(|s| {
                s.source(source)?;
                s.streams(source)
            })
            .map_err(fail)?;
        if known.iter().any(|s| s == stream) {
            Ok(())
        } else {
            Err(js::error(
                "NotFound",
                &format!(
                    "{}: stream {stream:?} not found in source {source}",
                    self.archive.file()
                ),
            ))
        }
    }
}

impl Drop for JsArchive {
    fn drop(&mut self) {
        let id = self.id;
        CACHE.with(|c| c.borrow_mut().remove_where(|k| k.archive == id));
        STATS.with(|s| s.borrow_mut().retain(|k, _| k.archive != id));
    }
}

/// Looks `key` up in the shared cache, decoding on a miss. The cache is
/// not borrowed while `load` runs.
fn cached(
    key: Key,
    load: impl FnOnce() -> crate::error::Result<Batches>,
) -> crate::error::Result<Batches> {
    if let Some(hit) = CACHE.with(|c| c.borrow_mut().get(&key)) {
        return Ok(hit);
    }
    let batches = load()?;
    CACHE.with(|c| c.borrow_mut().insert(key, Arc::clone(&batches)));
    Ok(batches)
}

/// Sets the decoded-segment cache's budget in bytes (default 256 MiB),
/// evicting as needed; 0 turns caching off, footer summaries included.
#[wasm_bindgen(js_name = setCacheBytes)]
pub fn set_cache_bytes(bytes: f64) {
    let bytes = if bytes.is_finite() && bytes > 0.0 {
        bytes as usize
    } else {
        0
    };
    CACHE.with(|c| c.borrow_mut().set_budget(bytes));
    CACHING.with(|c| c.set(bytes > 0));
    if bytes == 0 {
        STATS.with(|s| s.borrow_mut().clear());
    }
}

/// `{ entries, bytes }` held by the decoded-segment cache.
#[wasm_bindgen(js_name = cacheStats)]
pub fn cache_stats() -> JsValue {
    CACHE.with(|c| {
        let c = c.borrow();
        js::Obj::new()
            .set("entries", c.len() as u32)
            .set("bytes", JsValue::from_f64(c.used() as f64))
            .build()
    })
}

fn describe_segment(file: &str, source: i64, stream: &str, seq: i64) -> String {
    format!("segment {seq} of stream {stream:?} (source {source}) of {file}")
}

/// The segment whose decoding was cut short by a trap, named for a person
/// ("segment 3 of stream \"cpu\" (source 1) of run.dendro"), or
/// `undefined`. Call it once after a `WebAssembly.RuntimeError`, before
/// discarding the instance: nothing else is safe to call then.
#[wasm_bindgen(js_name = decodingNow)]
pub fn decoding_now() -> Option<String> {
    DECODING.with(|d| d.take())
}

/// Traps the module as a hostile segment that got past validation would,
/// noting `what` as the segment being decoded. For testing the worker's
/// recovery only.
#[doc(hidden)]
#[wasm_bindgen(js_name = __crashForTests)]
pub fn crash_for_tests(what: String) {
    DECODING.with(|d| d.set(Some(what)));
    panic!("crash requested by a test");
}

/// Decodes one segment's Parquet bytes and counts its rows, with nothing
/// around it (no SQLite, no JS conversion): the figure to compare with a
/// native decode of the same bytes (`benches/decode.rs`).
#[doc(hidden)]
#[wasm_bindgen(js_name = __decodeForBench)]
pub fn decode_for_bench(bytes: &[u8]) -> JsResult<f64> {
    let batches = crate::segment::decode_segment(bytes.to_vec(), None)
        .map_err(|cause| js::error("Segment", &cause))?;
    Ok(batches.iter().map(|b| b.num_rows() as f64).sum())
}

/// This crate's version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Reduces decoded batches to an envelope exactly as `readRange` does,
/// returning the JS value `readRange` would. For tests that feed rows no
/// archive in a test fixture holds (a million rows with one spike).
#[doc(hidden)]
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

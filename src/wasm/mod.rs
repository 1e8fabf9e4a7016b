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
mod vfs;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use crate::catalog::{Listing, SegmentRecord};
use crate::container::Archive;
use crate::error::Error;
use crate::read::cache::{identity_of, Batches, DecodeKey, ReaderCache, SegmentKey};
use crate::read::range::{
    decode_for_range, RangeReader, RangeRequest, Stats, VIEWER_SEGMENT_BUDGET,
};

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

/// The columns and counters a range call names (`readRange`,
/// `beginRange`, `footerPlan`), normalized once and owned here, so the
/// request that borrows them lives as long as they do.
struct RangeAsk {
    columns: Option<Vec<String>>,
    rates: Option<Vec<String>>,
}

impl RangeAsk {
    fn new(columns: Option<Vec<String>>, rates: Option<Vec<String>>) -> RangeAsk {
        RangeAsk {
            columns: normalized(columns),
            rates: normalized(rates),
        }
    }

    /// The reader's request from the call's JS arguments: a whole source
    /// id, the window, these columns, and these counters read as rates.
    fn request<'a>(
        &'a self,
        file: &str,
        (source, stream): (f64, &'a str),
        (from, to): (i64, i64),
        max_points: Option<u32>,
    ) -> JsResult<RangeRequest<'a>> {
        Ok(RangeRequest {
            source_id: whole("source", file, source)?,
            stream,
            from,
            to,
            columns: self.columns.as_deref(),
            max_points: max_points.map(|n| n as usize),
            rates: self.rates.as_deref().filter(|r| !r.is_empty()),
        })
    }
}

/// Where an outline's prefetch (`outlinePlan`) has got to.
enum OutlineWalk {
    NotStarted,
    /// The sources table and the primary key's index on `segments`.
    Trees(crate::pager::TreeWalk),
    /// The table's pages toward each stream's first segment.
    Rows(crate::pager::TreeWalk),
    Done,
}

/// An archive open in this engine, read-only: held in memory, or read in
/// place through a byte source (`openLazy`).
#[wasm_bindgen(js_name = Archive)]
pub struct JsArchive {
    id: u32,
    /// The namespace its range reads' decoded segments and footer
    /// summaries are cached under: its own id, or an earlier image's of the
    /// same archive ([`JsArchive::share_cache`]).
    cache_id: u32,
    archive: Rc<Archive>,
    /// The file read in place, for an archive opened with `openLazy`.
    lazy: Option<vfs::SharedFile>,
    /// Whether a decode fetches only the chunks of the columns it keeps:
    /// for a local file read in place, where a read costs about the same
    /// whatever its size. Over HTTP each read is a round trip, and a
    /// segment's chunks spread over it cost several where the whole
    /// segment is one; held in memory, nothing is fetched at all.
    sparse_reads: bool,
    /// The catalog prefetch under way (`prefetchPlan`), once started.
    walk: RefCell<Option<crate::pager::TreeWalk>>,
    /// The outline's prefetch (`outlinePlan`), where it has got to.
    outline_walk: RefCell<OutlineWalk>,
    /// How many segments the image holds, once counted (see
    /// [`JsArchive::segment_count`]): the outline's plan and the outline
    /// both ask, and counting scans an index.
    segments_counted: std::cell::Cell<Option<f64>>,
    /// Every segment of this image, once listed: describe, the footer
    /// plan and every range read take their segments from it instead of
    /// listing the catalog again. An image held here never changes (a
    /// buffer, a dropped file, one image of a URL, whose source refuses
    /// reads once the file is another), and a followed archive's newer
    /// image is another `JsArchive` with its own listing, so this is
    /// never stale. It is per image, never per `cache_id`, which images
    /// of one followed archive share.
    listing: RefCell<Option<Rc<Listing>>>,
    /// The rows (by rowid in the listing) whose footers a prefetch round
    /// found wholly cached: later rounds leave them out, so a read after a
    /// prefetch does not run the footer's read on the cache again for
    /// every segment of the window (some 60 ms for 640 segments). A block
    /// evicted since costs that read a fetch, never a wrong byte.
    footers_held: RefCell<std::collections::HashSet<i64>>,
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
        let reader = input::JsBytes::new(bytes.clone());
        let archive = Archive::from_reader(name, reader, len as usize).map_err(fail)?;
        let id = opened(len);
        Ok(JsArchive {
            id,
            cache_id: id,
            archive: Rc::new(archive),
            lazy: None,
            sparse_reads: false,
            walk: RefCell::new(None),
            outline_walk: RefCell::new(OutlineWalk::NotStarted),
            segments_counted: Default::default(),
            listing: RefCell::new(None),
            footers_held: RefCell::default(),
        })
    }

    /// Opens an archive in place: SQLite reads it through `source`,
    /// `{ size: number, read(offset: number, length: number): Uint8Array }`,
    /// a range at a time, through a bounded cache, so its size is not
    /// limited by memory (offsets are 64-bit). Opening reads the header
    /// and the catalog's pages; a segment's pages are read when it is
    /// decoded. `http` tunes the read-ahead for a network source. `read`
    /// throws an `Error` with `kind` "Changed" when the file is no longer
    /// the one opened; every later read of the archive then fails with
    /// that kind. `headBytes` (optional) of the file's start are read
    /// first in one read: the header, the schema and the catalog's root
    /// pages that follow it, for a catalog prefetch to start from.
    #[wasm_bindgen(js_name = openLazy)]
    pub fn open_lazy(
        source: JsValue,
        name: &str,
        http: bool,
        head_bytes: Option<f64>,
    ) -> JsResult<JsArchive> {
        console_error_panic_hook::set_once();
        let head = head_bytes
            .filter(|b| b.is_finite() && *b > 0.0)
            .map_or(0, |b| b as u64);
        let (archive, file) = vfs::open(name, source, http, head).map_err(fail)?;
        let weight = file.borrow().len().min(LAZY_CACHE_WEIGHT);
        let id = opened(weight);
        Ok(JsArchive {
            id,
            cache_id: id,
            archive: Rc::new(archive),
            lazy: Some(file),
            sparse_reads: !http,
            walk: RefCell::new(None),
            outline_walk: RefCell::new(OutlineWalk::NotStarted),
            segments_counted: Default::default(),
            listing: RefCell::new(None),
            footers_held: RefCell::default(),
        })
    }

    /// This archive is a later image of `earlier` (a followed archive that
    /// a writer appended to): range reads share its decoded segments and
    /// footer summaries, keyed by each segment's seq and catalog identity,
    /// so a sealed segment is decoded once however many images follow.
    #[wasm_bindgen(js_name = shareCache)]
    pub fn share_cache(&mut self, earlier: &JsArchive) {
        if self.cache_id != self.id {
            return;
        }
        self.cache_id = earlier.cache_id;
        CACHE.with(|c| c.borrow_mut().joined(self.cache_id));
    }

    /// The next ranges a catalog prefetch wants, as `[offset, length, ...]`
    /// (file order, adjacent pages merged); empty when it is done, and
    /// always for an archive held in memory. The first call starts it
    /// from the roots of the tables listing reads. The caller fetches the
    /// ranges its own way (all at once, in parallel or as one multi-range
    /// request), hands each to `prefetchFill`, and asks again: one round
    /// per level of the catalog's b-trees. SQLite's own reads then find
    /// the catalog cached instead of missing once per scattered page.
    #[wasm_bindgen(js_name = prefetchPlan)]
    pub fn prefetch_plan(&self) -> Vec<f64> {
        let Some(file) = &self.lazy else {
            return Vec::new();
        };
        let mut walk = self.walk.borrow_mut();
        if walk.is_none() {
            let roots = vfs::prefetch_roots(&self.archive);
            *walk = file.borrow().tree_walk(&roots);
        }
        let Some(walk) = walk.as_mut() else {
            return Vec::new();
        };
        flat(file.borrow_mut().walk_step(walk))
    }

    /// The next ranges an outline (`describeOutline`) wants, as
    /// `[offset, length, ...]`, to be fetched and handed to `prefetchFill`
    /// as `prefetchPlan`'s are; empty when it is done, and always for an
    /// archive held in memory. First the pages of the sources table and of
    /// the primary key's index on `segments`, a round per level; then, where the
    /// archive has at least `minSegments` segments (an outline will be
    /// drawn), the table's pages holding each stream's first segment.
    #[wasm_bindgen(js_name = outlinePlan)]
    pub fn outline_plan(&self, min_segments: f64) -> Vec<f64> {
        let Some(file) = &self.lazy else {
            return Vec::new();
        };
        let mut state = self.outline_walk.borrow_mut();
        loop {
            match &mut *state {
                OutlineWalk::NotStarted => {
                    let roots = vfs::outline_roots(&self.archive);
                    *state = match file.borrow().tree_walk(&roots) {
                        Some(walk) => OutlineWalk::Trees(walk),
                        None => OutlineWalk::Done,
                    };
                }
                OutlineWalk::Trees(walk) => {
                    let plan = file.borrow_mut().walk_step(walk);
                    if !plan.is_empty() {
                        return flat(plan);
                    }
                    // The primary key's index is held: which rows are
                    // first is its to say, at no read. (Each stream's newest
                    // timestamp is a seek of `segments_by_time`, a page or
                    // two a stream that SQLite reads as it asks.)
                    let rows = if self.segment_count() >= min_segments {
                        self.archive
                            .read_snapshot(|s| s.first_segment_rowids())
                            .unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    let (table, _) = vfs::lookup_roots(&self.archive);
                    let walk = match table {
                        Some(root) if !rows.is_empty() => file.borrow().row_walk(root, rows),
                        _ => None,
                    };
                    *state = walk.map_or(OutlineWalk::Done, OutlineWalk::Rows);
                }
                OutlineWalk::Rows(walk) => {
                    let plan = file.borrow_mut().walk_step(walk);
                    if plan.is_empty() {
                        *state = OutlineWalk::Done;
                    }
                    return flat(plan);
                }
                OutlineWalk::Done => return Vec::new(),
            }
        }
    }

    /// How many segments the archive holds, counted on an index (none where
    /// that fails: the listing then says why). A listing of fewer than an
    /// outline's `minSegments` is read about as soon as the outline.
    fn segment_count(&self) -> f64 {
        if let Some(n) = self.segments_counted.get() {
            return n;
        }
        let n = self
            .archive
            .read_snapshot(|s| s.segment_count())
            .map_or(0.0, |n| n as f64);
        self.segments_counted.set(Some(n));
        n
    }

    /// A first description of an archive read in place, from its catalog's
    /// small trees (`Outline` in src/read.rs): sources and streams with no
    /// segments listed, each stream's count and sealed span in its
    /// `outline`. `null` for an archive held in memory or one with fewer
    /// than `minSegments` segments, whose full description is as quick.
    #[wasm_bindgen(js_name = describeOutline)]
    pub fn describe_outline(&self, min_segments: f64) -> JsResult<JsValue> {
        if self.lazy.is_none() || self.segment_count() < min_segments {
            return Ok(JsValue::NULL);
        }
        let outline = crate::read::outline(&self.archive).map_err(fail)?;
        Ok(convert::packed_outline(&outline))
    }

    /// The byte ranges the footers a `readRange` with these arguments
    /// reads lie in and that are not cached yet, as `[offset, length, ...]`
    /// (each footer's last pages and the pointer-map pages that prove
    /// them); empty for an archive held in memory. With `preview`, also
    /// the footers a preview of the window reads (`previewRange`, or
    /// `RangeJob.preview`): every segment's the read covers. The caller
    /// fetches them its own way, all at once, hands each to
    /// `prefetchFill`, and asks again until the plan is empty: the footers
    /// then cost no read each. Where the rows of those segments are not
    /// cached, the first rounds are the table's pages that lead to them
    /// and hold them (small payloads lie in those leaves whole): looking
    /// each row up would read its leaf alone, one read per footer.
    #[wasm_bindgen(js_name = footerPlan)]
    #[allow(clippy::too_many_arguments)]
    pub fn footer_plan(
        &self,
        source: f64,
        stream: &str,
        from: i64,
        to: i64,
        columns: Option<Vec<String>>,
        max_points: Option<u32>,
        rates: Option<Vec<String>>,
        preview: Option<bool>,
    ) -> JsResult<Vec<f64>> {
        let Some(file) = &self.lazy else {
            return Ok(Vec::new());
        };
        let ask = RangeAsk::new(columns, rates);
        let request = ask.request(
            self.archive.file(),
            (source, stream),
            (from, to),
            max_points,
        )?;
        // The footers the read will ask for: the reader run with none
        // known, noting those not summarized yet. It spans the live tail
        // from the index rather than reading it: the tail's rows are
        // fetched ahead too, once the footers are in.
        let mut asked = Vec::new();
        let uncached = |record: &SegmentRecord| {
            let key = stats_key(self.cache_id, record);
            CACHE.with(|c| c.borrow().stats(&key)).is_none()
        };
        let listing = self.listing()?;
        let budget = Some(VIEWER_SEGMENT_BUDGET);
        let reader =
            RangeReader::planned(&self.archive, &request, budget, Some(&listing), |record| {
                if uncached(record) {
                    asked.push(record.clone());
                }
                Ok(None)
            })
            .map_err(fail)?;
        if preview == Some(true) && request.max_points.is_some() {
            asked = reader
                .segments()
                .iter()
                .filter(|r| uncached(r))
                .cloned()
                .collect();
        }
        // The live tail's rounds go along with the footers' (neither needs
        // the other's pages), rather than after them.
        let mut pages = self.footer_pages(file, &listing, &asked)?;
        pages.extend(self.tail_pages(file, &request));
        Ok(flat(pages))
    }

    /// Keeps `bytes`, fetched from `offset` for `prefetchPlan`, in the
    /// in-place reader's cache.
    #[wasm_bindgen(js_name = prefetchFill)]
    pub fn prefetch_fill(&self, offset: f64, bytes: &[u8]) {
        if let Some(file) = &self.lazy {
            if offset >= 0.0 && offset.fract() == 0.0 {
                file.borrow_mut().prime(offset as u64, bytes);
            }
        }
    }

    /// "lazy" for an archive read in place, "memory" for one held whole.
    #[wasm_bindgen(getter)]
    pub fn mode(&self) -> String {
        if self.lazy.is_some() {
            "lazy"
        } else {
            "memory"
        }
        .to_string()
    }

    /// The traffic of an archive read in place: `{ size, fetches, primed,
    /// fetchedBytes, hits, misses, cachedBytes }`, or `null`
    /// for one held in memory.
    #[wasm_bindgen(js_name = lazyStats)]
    pub fn lazy_stats(&self) -> JsValue {
        let Some(file) = &self.lazy else {
            return JsValue::NULL;
        };
        let file = file.borrow();
        let s = file.stats();
        js::Obj::new()
            .set("size", JsValue::from_f64(file.len() as f64))
            .set("fetches", JsValue::from_f64(s.fetches as f64))
            .set("primed", JsValue::from_f64(s.primed as f64))
            .set("fetchedBytes", JsValue::from_f64(s.fetched_bytes as f64))
            .set("hits", JsValue::from_f64(s.hits as f64))
            .set("misses", JsValue::from_f64(s.misses as f64))
            .set("cachedBytes", JsValue::from_f64(s.cached_bytes as f64))
            .build()
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
        let listing = self.listing()?;
        let d = crate::read::describe_with(&self.archive, Some(&listing)).map_err(fail)?;
        Ok(convert::description(&d))
    }

    /// `describe`, shaped for the trip to the page: every segment in one
    /// typed array per field (`PackedDescription` of
    /// www/src/engine/packing.ts, which the client unpacks), built here
    /// instead of as one object per segment first.
    #[wasm_bindgen(js_name = describePacked)]
    pub fn describe_packed(&self) -> JsResult<JsValue> {
        let listing = self.listing()?;
        let d = crate::read::describe_with(&self.archive, Some(&listing)).map_err(fail)?;
        Ok(convert::packed_description(&d))
    }

    /// The columns of the stream's first sealed segment, from its footer;
    /// for a stream with nothing sealed, from the self-describing
    /// encoder's schemas when the source lists them.
    pub fn schema(&self, source: f64, stream: &str) -> JsResult<JsValue> {
        let file = self.archive.file();
        let source = whole("source", file, source)?;
        self.require_stream(source, stream)?;
        // The footer is parsed inside: a trap there names the stream's
        // first segment, which the listing gives (a probe of the catalog
        // would list every segment of the stream to take one).
        let what = || {
            format!(
                "the footer of the first segment of stream {stream:?} (source {source}) of {file}"
            )
        };
        let listing = self.listing()?;
        let probed = noting(what, || {
            crate::read::probe_listed(&self.archive, source, stream, Some(&listing))
        });
        match probed.map_err(fail)? {
            None => {
                let metadata = self
                    .archive
                    .read_snapshot(|s| s.source(source))
                    .map_err(fail)?
                    .source
                    .metadata;
                let typed = crate::typed::stream_schema(&metadata, stream).map_err(|message| {
                    fail(Error::Encoder {
                        file: file.to_string(),
                        stream: stream.to_string(),
                        message,
                    })
                })?;
                Ok(convert::schema(typed.as_ref()))
            }
            Some((record, schema)) => {
                let schema = schema.map_err(|cause| {
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
        let key = DecodeKey {
            archive: self.id,
            source_id: source,
            stream: stream.to_string(),
            seq,
            identity: (0, 0, 0, 0),
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
        batch_value(&batches).map_err(|cause| {
            fail(Error::Segment {
                file: file.to_string(),
                source_id: source,
                stream: stream.to_string(),
                seq,
                cause,
            })
        })
    }

    /// A window `[from, to]` of the stream: its sealed segments, then its
    /// live tail when the source was written with the self-describing
    /// encoder. Only segments overlapping the window are decoded. With
    /// `max_points`, numeric columns become a min/max envelope per time
    /// bucket, at most `max_points` points, whatever the row count.
    /// Columns named in `rates` are counters, read as per-second rates
    /// before any bucketing.
    #[wasm_bindgen(js_name = readRange)]
    #[allow(clippy::too_many_arguments)]
    pub fn read_range(
        &self,
        source: f64,
        stream: &str,
        from: i64,
        to: i64,
        columns: Option<Vec<String>>,
        max_points: Option<u32>,
        rates: Option<Vec<String>>,
    ) -> JsResult<JsValue> {
        let ask = RangeAsk::new(columns, rates);
        let request = ask.request(
            self.archive.file(),
            (source, stream),
            (from, to),
            max_points,
        )?;
        let stats = |record: &SegmentRecord| cached_stats(self.cache_id, &self.archive, record);
        let envelope = self
            .range_reader(&request, stats)?
            .decode_all(request.columns, |record, columns| {
                cached(range_key(self.cache_id, record, columns), || {
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

    /// A first answer for the window `readRange` with the same arguments
    /// reads, from the segments' footer statistics alone, decoding
    /// nothing: the envelope's shape with `preview: true`, each bucket's
    /// band holding the exact envelope's wherever every segment under it
    /// has statistics for the column (see `Preview` in
    /// `src/read/envelope.rs`). Counters named in `rates` are left out
    /// (a rate needs the rows). `undefined` without `max_points`.
    #[wasm_bindgen(js_name = previewRange)]
    #[allow(clippy::too_many_arguments)]
    pub fn preview_range(
        &self,
        source: f64,
        stream: &str,
        from: i64,
        to: i64,
        columns: Option<Vec<String>>,
        max_points: Option<u32>,
        rates: Option<Vec<String>>,
    ) -> JsResult<JsValue> {
        let ask = RangeAsk::new(columns, rates);
        let request = ask.request(
            self.archive.file(),
            (source, stream),
            (from, to),
            max_points,
        )?;
        let mut stats = |record: &SegmentRecord| cached_stats(self.cache_id, &self.archive, record);
        let reader = self.range_reader(&request, &mut stats)?;
        let preview = reader.preview(stats).map_err(fail)?;
        Ok(preview.map_or(JsValue::UNDEFINED, |p| convert::preview(&p)))
    }

    /// `readRange` in steps, for decoding in another instance (the viewer's
    /// decoder worker): the returned job names each segment it needs with
    /// its bytes (`next`), takes the decoded rows back packed (`supply`),
    /// and gives the envelope `readRange` would (`finish`). Footers,
    /// cached segments and the reduction stay here.
    #[wasm_bindgen(js_name = beginRange)]
    #[allow(clippy::too_many_arguments)]
    pub fn begin_range(
        &self,
        source: f64,
        stream: &str,
        from: i64,
        to: i64,
        columns: Option<Vec<String>>,
        max_points: Option<u32>,
        rates: Option<Vec<String>>,
    ) -> JsResult<RangeJob> {
        let ask = RangeAsk::new(columns, rates);
        let request = ask.request(
            self.archive.file(),
            (source, stream),
            (from, to),
            max_points,
        )?;
        let reader = self.range_reader(&request, |record| {
            cached_stats(self.cache_id, &self.archive, record)
        })?;
        Ok(RangeJob {
            archive_id: self.cache_id,
            archive: Rc::clone(&self.archive),
            reader: Some(reader),
            columns: ask.columns,
            waiting: Vec::new(),
            sparse_reads: self.sparse_reads,
        })
    }

    /// One sealed segment's Parquet bytes, copied out for a decoder.
    #[wasm_bindgen(js_name = segmentBytes)]
    pub fn segment_bytes(&self, source: f64, stream: &str, seq: f64) -> JsResult<Uint8Array> {
        let file = self.archive.file();
        let source = whole("source", file, source)?;
        let seq = whole("segment", file, seq)?;
        let bytes = crate::read::segment_bytes(&self.archive, source, stream, seq).map_err(fail)?;
        Ok(Uint8Array::from(&bytes[..]))
    }

    /// The error `readSegment` gives for a segment a decoder could not
    /// decode, naming the segment and the decoder's `cause`.
    #[wasm_bindgen(js_name = segmentError)]
    pub fn segment_error(&self, source: f64, stream: &str, seq: f64, cause: String) -> JsValue {
        fail(Error::Segment {
            file: self.archive.file().to_string(),
            source_id: source as i64,
            stream: stream.to_string(),
            seq: seq as i64,
            cause,
        })
    }

    /// "segment 3 of stream \"cpu\" (source 1) of run.dendro", for messages.
    #[wasm_bindgen(js_name = describeSegment)]
    pub fn describe_segment(&self, source: f64, stream: &str, seq: f64) -> String {
        describe_segment(self.archive.file(), source as i64, stream, seq as i64)
    }

    /// Rows committed past the last seal: their count and span, and
    /// whether this reader can decode them (`readable`: the source was
    /// written with the self-describing encoder, and `readRange` plots
    /// them after the segments). Other encoders' rows are data not read.
    #[wasm_bindgen(js_name = liveTail)]
    pub fn live_tail(&self, source: f64, stream: &str) -> JsResult<JsValue> {
        let source = whole("source", self.archive.file(), source)?;
        self.require_stream(source, stream)?;
        let (span, readable) = self
            .archive
            .read_snapshot(|s| {
                let record = s.source(source)?;
                let readable = crate::typed::reader_for(&record.source.metadata).is_some();
                Ok((s.live_wal_span(source, stream)?, readable))
            })
            .map_err(fail)?;
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
        .set("readable", readable)
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

    /// Every segment of this image, listed on first use and kept (see the
    /// `listing` field). A failed listing is not kept: the next call
    /// tries again.
    pub fn listing(&self) -> JsResult<Rc<Listing>> {
        if let Some(listing) = self.listing.borrow().as_ref() {
            return Ok(Rc::clone(listing));
        }
        let listing = Rc::new(self.archive.read_snapshot(Listing::read).map_err(fail)?);
        *self.listing.borrow_mut() = Some(Rc::clone(&listing));
        Ok(listing)
    }

    /// A round of the footer prefetch ([`Self::footer_plan`]) for the
    /// footers of `asked`: first the `segments` leaves holding their rows
    /// (and the primary key's index each lookup goes through), then each
    /// footer's last pages; empty once all are cached.
    fn footer_pages(
        &self,
        file: &vfs::SharedFile,
        listing: &Listing,
        asked: &[SegmentRecord],
    ) -> JsResult<Vec<(u64, u64)>> {
        let asked: Vec<SegmentRecord> = {
            let held = self.footers_held.borrow();
            asked
                .iter()
                .filter(|r| listing.rowid(r).is_none_or(|row| !held.contains(&row)))
                .cloned()
                .collect()
        };
        if asked.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<i64> = asked.iter().filter_map(|r| listing.rowid(r)).collect();
        let (table, index) = vfs::lookup_roots(&self.archive);
        let walks: Vec<_> = {
            let file = file.borrow();
            let toward = table.and_then(|root| file.row_walk(root, rows));
            toward
                .into_iter()
                .chain(index.and_then(|root| file.tree_walk(&[root])))
                .collect()
        };
        let mut pages = Vec::new();
        for mut walk in walks {
            pages.extend(file.borrow_mut().walk_step(&mut walk));
        }
        if !pages.is_empty() {
            return Ok(pages);
        }
        let mut out = Vec::new();
        let mut held = self.footers_held.borrow_mut();
        let per_record = vfs::footer_ranges(&self.archive, &asked).map_err(fail)?;
        for (record, ranges) in asked.iter().zip(per_record) {
            // A footer's read that would fetch nothing names nothing.
            match listing.rowid(record) {
                Some(row) if ranges.is_empty() => {
                    held.insert(row);
                }
                _ => out.extend(ranges),
            }
        }
        // Records share pointer-map pages and neighbouring blocks, which
        // one batch asks for once, in order.
        Ok(file.borrow().uncached(&out))
    }

    /// A round of the live tail's prefetch, beside the footers': the `wal`
    /// primary key's index is fetched, the rows a read of `request`
    /// decodes from the tail are found in it (no row is read), then the
    /// `wal` leaves holding them are fetched, then their overflow pages. A writer's rows lie wherever
    /// its inserts found free pages, a page or two each: read by SQLite one
    /// miss at a time, a demo stream's tail of 51 rows took a hundred
    /// reads. Empty once all are cached, for a tail no reader here decodes
    /// (nothing of it is read), and wherever the file does not parse as
    /// this expects (SQLite then reads the rows itself).
    fn tail_pages(&self, file: &vfs::SharedFile, request: &RangeRequest<'_>) -> Vec<(u64, u64)> {
        let Some(table) = vfs::wal_rows_table(&self.archive) else {
            return Vec::new();
        };
        // The primary key's index first: the rowids are read from it.
        let index = vfs::wal_key_root(&self.archive);
        let walk = index.and_then(|root| file.borrow().tree_walk(&[root]));
        if let Some(mut walk) = walk {
            let pages = file.borrow_mut().walk_step(&mut walk);
            if !pages.is_empty() {
                return pages;
            }
        }
        let rowids = self.archive.read_snapshot(|s| {
            let source = s.source(request.source_id)?;
            if crate::typed::reader_for(&source.source.metadata).is_none() {
                return Ok(Vec::new());
            }
            s.live_wal_rowids_between(request.source_id, request.stream, request.from, request.to)
        });
        let rowids = match rowids {
            Ok(mut rowids) if !rowids.is_empty() => {
                // The walk goes toward rows in rowid order.
                rowids.sort_unstable();
                rowids
            }
            _ => return Vec::new(),
        };
        let walk = file.borrow().row_walk(table.root, rowids.clone());
        if let Some(mut walk) = walk {
            let pages = file.borrow_mut().walk_step(&mut walk);
            if !pages.is_empty() {
                return pages;
            }
        }
        let mut ranges = Vec::new();
        for (rowid, len, head) in vfs::wal_row_heads(&self.archive, &rowids) {
            match file.borrow_mut().payload_ranges(table, rowid, len, &head) {
                Ok(found) => ranges.extend(found),
                Err(_) => return Vec::new(),
            }
        }
        file.borrow().uncached(&ranges)
    }

    fn range_reader(
        &self,
        request: &RangeRequest<'_>,
        stats: impl FnMut(&SegmentRecord) -> crate::error::Result<Option<Stats>>,
    ) -> JsResult<RangeReader> {
        let listing = self.listing()?;
        let budget = Some(VIEWER_SEGMENT_BUDGET);
        RangeReader::listed(&self.archive, request, budget, Some(&listing), stats).map_err(fail)
    }

    /// Refuses a stream the source does not have (neither segments nor
    /// live rows), so a typo is not mistaken for an empty stream.
    fn require_stream(&self, source: i64, stream: &str) -> JsResult<()> {
        // A stream with segments is in the listing; only one without is
        // looked for among the catalog's streams (a scan of the index).
        let listed = !self.listing()?.stream(source, stream).is_empty();
        let known = self
            .archive
            .read_snapshot(|s| {
                s.source(source)?;
                Ok(listed || s.streams(source)?.iter().any(|s| s == stream))
            })
            .map_err(fail)?;
        if known {
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
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            c.closed(self.id);
            if self.cache_id != self.id {
                c.left(self.cache_id);
            }
        });
    }
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

/// A `readRange` answered in steps ([`JsArchive::begin_range`]).
#[wasm_bindgen]
pub struct RangeJob {
    archive_id: u32,
    archive: Rc<Archive>,
    /// `None` once finished.
    reader: Option<RangeReader>,
    columns: Option<Vec<String>>,
    /// Segments handed out and not yet supplied, by index.
    waiting: Vec<(usize, SegmentRecord)>,
    /// Fetch only the kept columns' chunks ([`JsArchive`]'s `sparse_reads`).
    sparse_reads: bool,
}

#[wasm_bindgen]
impl RangeJob {
    /// The next segment to decode, as `{ index, seq, what, bytes }`
    /// (`bytes` a fresh copy, free to transfer), or `undefined` when no
    /// more are needed. Segments already in the cache are taken from it
    /// here and never handed out.
    #[wasm_bindgen(js_name = next)]
    pub fn next_segment(&mut self) -> JsResult<JsValue> {
        let Some(reader) = self.reader.as_mut() else {
            return Ok(JsValue::UNDEFINED);
        };
        while let Some((index, record)) = reader.next_to_decode() {
            let key = range_key(self.archive_id, &record, self.columns.as_deref());
            if let Some(hit) = CACHE.with(|c| c.borrow_mut().decoded(&key)) {
                reader.supply(index, hit);
                continue;
            }
            // Read in place, only the chunks the decoder will read are
            // fetched; held in memory, a whole segment is one copy.
            let bytes = crate::read::range::range_segment_bytes(
                &self.archive,
                &record,
                self.columns.as_deref().filter(|_| self.sparse_reads),
            )
            .map_err(fail)?;
            let what = describe_segment(
                self.archive.file(),
                record.source_id,
                &record.stream,
                record.seq,
            );
            let out = js::Obj::new()
                .set("index", index as u32)
                .set("seq", js::num(record.seq))
                .set("what", what)
                .set("bytes", Uint8Array::from(&bytes[..]))
                .build();
            self.waiting.push((index, record));
            return Ok(out);
        }
        Ok(JsValue::UNDEFINED)
    }

    /// What `previewRange` answers for this window, from the footers of
    /// the segments this job reads (listed once, for both answers);
    /// `undefined` where `previewRange` has none, once finished, and when
    /// every segment's rows are cached already (the exact answer is then
    /// as quick). Call it before the first `next` to show something while
    /// segments decode.
    pub fn preview(&self) -> JsResult<JsValue> {
        let Some(reader) = self.reader.as_ref() else {
            return Ok(JsValue::UNDEFINED);
        };
        let cached = reader.segments().iter().all(|record| {
            let key = range_key(self.archive_id, record, self.columns.as_deref());
            CACHE.with(|c| c.borrow_mut().decoded(&key)).is_some()
        });
        if cached {
            return Ok(JsValue::UNDEFINED);
        }
        let stats = |record: &SegmentRecord| cached_stats(self.archive_id, &self.archive, record);
        let preview = reader.preview(stats).map_err(fail)?;
        Ok(preview.map_or(JsValue::UNDEFINED, |p| convert::preview(&p)))
    }

    /// The columns a decoder keeps (with the time axis), or `undefined`
    /// for every column.
    #[wasm_bindgen(getter)]
    pub fn columns(&self) -> Option<Vec<String>> {
        self.columns.clone()
    }

    /// The rows of segment `index`, as `decodePacked` returned them (one
    /// buffer per batch). They are cached like rows decoded here.
    pub fn supply(&mut self, index: u32, packed: js_sys::Array) -> JsResult<()> {
        let index = index as usize;
        let Some(at) = self.waiting.iter().position(|(i, _)| *i == index) else {
            return Err(js::error(
                "Internal",
                &format!("segment {index} of this window was not handed out"),
            ));
        };
        let (_, record) = self.waiting.swap_remove(at);
        let batches = packed
            .iter()
            .map(|p| unpack_js(&p))
            .collect::<Result<Vec<_>, String>>()
            .map_err(|cause| self.segment_failure(&record, cause))?;
        let batches = Arc::new(batches);
        let key = range_key(self.archive_id, &record, self.columns.as_deref());
        CACHE.with(|c| c.borrow_mut().keep_decoded(key, Arc::clone(&batches)));
        if let Some(reader) = self.reader.as_mut() {
            reader.supply(index, batches);
        }
        Ok(())
    }

    /// The error for segment `index`, which a decoder could not decode:
    /// `cause` is what it said.
    pub fn fail(&self, index: u32, cause: String) -> JsValue {
        match self.waiting.iter().find(|(i, _)| *i == index as usize) {
            Some((_, record)) => self.segment_failure(record, cause),
            None => js::error("Segment", &cause),
        }
    }

    /// The envelope, as `readRange` returns it.
    pub fn finish(&mut self) -> JsResult<JsValue> {
        if !self.waiting.is_empty() {
            return Err(js::error(
                "Internal",
                "a window was finished with segments still being decoded",
            ));
        }
        match self.reader.take() {
            Some(reader) => Ok(convert::envelope(&reader.finish())),
            None => Err(js::error("Internal", "this window was already finished")),
        }
    }
}

impl RangeJob {
    fn segment_failure(&self, record: &SegmentRecord, cause: String) -> JsValue {
        fail(Error::Segment {
            file: self.archive.file().to_string(),
            source_id: record.source_id,
            stream: record.stream.clone(),
            seq: record.seq,
            cause,
        })
    }
}

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
fn unpack_js(packed: &JsValue) -> Result<arrow_array::RecordBatch, String> {
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
fn batch_value(batches: &[arrow_array::RecordBatch]) -> Result<JsValue, String> {
    let Some(first) = batches.first() else {
        return Ok(convert::batch(&arrow_array::RecordBatch::new_empty(
            Arc::new(arrow_schema::Schema::empty()),
        )));
    };
    let one = crate::segment::concat(&first.schema(), batches)?;
    Ok(convert::batch(&one))
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
/// recovery only (feature `test-hooks`).
#[cfg(feature = "test-hooks")]
#[wasm_bindgen(js_name = __crashForTests)]
pub fn crash_for_tests(what: String) {
    DECODING.with(|d| d.set(Some(what)));
    panic!("crash requested by a test");
}

/// Decodes one segment's Parquet bytes and counts its rows, with nothing
/// around it (no SQLite, no JS conversion): the figure to compare with a
/// native decode of the same bytes (`benches/decode.rs`). Feature
/// `test-hooks`.
#[cfg(feature = "test-hooks")]
#[wasm_bindgen(js_name = __decodeForBench)]
pub fn decode_for_bench(bytes: &[u8]) -> JsResult<f64> {
    let batches = crate::segment::decode_segment(bytes.to_vec(), None)
        .map_err(|cause| js::error("Segment", &cause))?;
    Ok(batches.iter().map(|b| b.num_rows() as f64).sum())
}

/// Unpacks what `decodePacked` returned, as `RangeJob.supply` does,
/// counting the rows: with `__decodeForBench` and `decodePacked`, what
/// decoding in a second instance adds (`scripts/bench-wasm.mjs`). Feature
/// `test-hooks`.
#[cfg(feature = "test-hooks")]
#[wasm_bindgen(js_name = __unpackForBench)]
pub fn unpack_for_bench(packed: js_sys::Array) -> JsResult<f64> {
    let mut rows = 0.0;
    for p in packed.iter() {
        let batch = unpack_js(&p).map_err(|cause| js::error("Segment", &cause))?;
        rows += batch.num_rows() as f64;
    }
    Ok(rows)
}

/// This crate's version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Reduces decoded batches to an envelope exactly as `readRange` does,
/// returning the JS value `readRange` would. For tests that feed rows no
/// archive in a test fixture holds (a million rows with one spike).
/// Feature `test-hooks`.
#[cfg(feature = "test-hooks")]
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

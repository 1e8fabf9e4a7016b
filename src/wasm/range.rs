//! The JS `Archive` class's reads of a window (`readRange`, `previewRange`,
//! `beginRange`) and `RangeJob`, the window read in steps for a decoder in
//! another instance.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use super::{
    cached, cached_stats, convert, describe_segment, engine::unpack_js, fail, js, normalized,
    noting, range_key, whole, JsArchive, JsResult, CACHE,
};
use crate::catalog::{Listing, SegmentRecord, WindowEntries};
use crate::container::Archive;
use crate::error::Error;
use crate::read::prefetch::WindowAsk;
use crate::read::range::{decode_for_range, RangeReader, RangeRequest, VIEWER_SEGMENT_BUDGET};

#[wasm_bindgen(js_class = Archive)]
impl JsArchive {
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
        let ask = self.window(source, stream, (from, to), columns, max_points, rates)?;
        let request = ask.request();
        let envelope = self
            .range_reader(&request)?
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
    ///
    /// With `sample` (k), from the footers of k of the window's segments
    /// spread evenly through it instead (`WindowSample` in contract.ts):
    /// the answer's `sample` says `{ taken, of }`, `segments_left_out`
    /// counts the rest and `rows_in_window` the sample's rows.
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
        sample: Option<u32>,
    ) -> JsResult<JsValue> {
        let ask = self.window(source, stream, (from, to), columns, max_points, rates)?;
        let request = ask.request();
        let stats = |record: &SegmentRecord| cached_stats(self.cache_id, &self.archive, record);
        let Some(k) = sample else {
            let preview = self.range_reader(&request)?.preview(stats).map_err(fail)?;
            return Ok(preview.map_or(JsValue::UNDEFINED, |p| convert::preview(&p)));
        };
        let (listing, of) = self.sampled(&ask, k as usize)?;
        let mut reader = RangeReader::listed(&self.archive, &request, None, Some(&listing), stats)
            .map_err(fail)?;
        // The rows of the segments not in the sample, estimated from the
        // sample's mean: what makes the window one of bucketed rows.
        let taken = listing.all().len();
        let rows: u64 = listing.all().iter().map(|r| r.rows.max(0) as u64).sum();
        let left = of.saturating_sub(taken);
        reader.leave_out(
            left,
            (rows / taken.max(1) as u64).saturating_mul(left as u64),
        );
        let Some(preview) = reader.preview(stats).map_err(fail)? else {
            return Ok(JsValue::UNDEFINED);
        };
        let out = convert::preview(&preview);
        let sample = js::Obj::new()
            .set("taken", taken as u32)
            .set("of", of as u32)
            .build();
        js_sys::Reflect::set(&out, &"sample".into(), &sample)
            .map_err(|_| js::error("Internal", "cannot label a sampled preview"))?;
        Ok(out)
    }

    /// How many of the stream's segments overlap `[from, to]`
    /// (`WindowSegments` in contract.ts), counted from the time index
    /// alone, or from the whole listing where it is held; kept for the
    /// plan and read of the same window.
    #[wasm_bindgen(js_name = windowSegments)]
    pub fn window_segments(
        &self,
        source: f64,
        stream: &str,
        from: i64,
        to: i64,
    ) -> JsResult<JsValue> {
        let ask = self.window(source, stream, (from, to), None, None, None)?;
        let total = match self.listing_held() {
            Some(listing) => listing.overlapping(ask.source_id, stream, from, to).len(),
            None => self.window_entries(&ask)?.len(),
        };
        Ok(js::Obj::new().set("total", total as u32).build())
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
        let ask = self.window(source, stream, (from, to), columns, max_points, rates)?;
        let request = ask.request();
        let reader = self.range_reader(&request)?;
        Ok(RangeJob {
            archive_id: self.cache_id,
            archive: Rc::clone(&self.archive),
            reader: Some(reader),
            columns: ask.columns,
            waiting: Vec::new(),
            sparse_reads: self.sparse_reads,
        })
    }
}

impl JsArchive {
    /// The window a range call names (`readRange`, `previewRange`,
    /// `beginRange`, `prefetchWindow`), from its JS arguments: a whole
    /// source id, and the columns and counters normalized, so equal
    /// requests share a cache entry. Owned, so a plan made of it outlives
    /// the call.
    pub(super) fn window(
        &self,
        source: f64,
        stream: &str,
        (from, to): (i64, i64),
        columns: Option<Vec<String>>,
        max_points: Option<u32>,
        rates: Option<Vec<String>>,
    ) -> JsResult<WindowAsk> {
        Ok(WindowAsk {
            source_id: whole("source", self.archive.file(), source)?,
            stream: stream.to_string(),
            from,
            to,
            columns: normalized(columns),
            max_points: max_points.map(|n| n as usize),
            rates: normalized(rates).filter(|r| !r.is_empty()),
            preview: false,
        })
    }

    /// The window's entries in the time index, listed once and kept.
    pub(super) fn window_entries(&self, ask: &WindowAsk) -> JsResult<Rc<WindowEntries>> {
        entries_in(&self.archive, &self.windows, ask).map_err(fail)
    }

    /// The segments a read of `ask`'s window takes: the whole listing's
    /// where it is held, else the window's, listed from the time index
    /// once and kept for the plan and the read ([`Windows`]).
    pub(super) fn window_listing(&self, ask: &WindowAsk) -> JsResult<Rc<Listing>> {
        match self.listing_held() {
            Some(listing) => Ok(listing),
            None => listing_in(&self.archive, &self.windows, ask).map_err(fail),
        }
    }

    /// A listing of `k` of the window's segments spread evenly through it
    /// (`WindowEntries::sample`), and how many the window holds.
    pub(super) fn sampled(&self, ask: &WindowAsk, k: usize) -> JsResult<(Rc<Listing>, usize)> {
        sample_in(&self.archive, &self.windows, ask, k).map_err(fail)
    }

    /// The reader of a window, its segments taken from this image's
    /// listing (or the window's) and their footer summaries from the
    /// shared cache.
    fn range_reader(&self, request: &RangeRequest<'_>) -> JsResult<RangeReader> {
        let ask = WindowAsk {
            source_id: request.source_id,
            stream: request.stream.to_string(),
            from: request.from,
            to: request.to,
            columns: None,
            max_points: None,
            rates: None,
            preview: false,
        };
        let listing = self.window_listing(&ask)?;
        let budget = Some(VIEWER_SEGMENT_BUDGET);
        let stats = |record: &SegmentRecord| cached_stats(self.cache_id, &self.archive, record);
        RangeReader::listed(&self.archive, request, budget, Some(&listing), stats).map_err(fail)
    }
}

/// The windows of one image listed from its time index, the newest few:
/// a window's plan, preview and read list it once between them.
#[derive(Default)]
pub struct Windows {
    held: Vec<Window>,
}

/// One window's listing ([`Windows`]).
pub(super) struct Window {
    key: (i64, String, i64, i64),
    entries: Rc<WindowEntries>,
    /// Every record of the window, once a read asked for them.
    listing: Option<Rc<Listing>>,
}

/// How many windows an image keeps listed: a plot's window, the one
/// before a pan or zoom, and a few streams' at once.
const WINDOWS_KEPT: usize = 8;

impl Windows {
    fn key(ask: &WindowAsk) -> (i64, String, i64, i64) {
        (ask.source_id, ask.stream.clone(), ask.from, ask.to)
    }

    fn find(&self, key: &(i64, String, i64, i64)) -> Option<&Window> {
        self.held.iter().find(|w| &w.key == key)
    }

    fn find_mut(&mut self, key: &(i64, String, i64, i64)) -> Option<&mut Window> {
        self.held.iter_mut().find(|w| &w.key == key)
    }

    /// Keeps `entries` for `key` (the newest last), dropping the oldest
    /// window past [`WINDOWS_KEPT`].
    fn keep(&mut self, key: (i64, String, i64, i64), entries: Rc<WindowEntries>) {
        if let Some(at) = self.held.iter().position(|w| w.key == key) {
            let w = self.held.remove(at);
            self.held.push(w);
            return;
        }
        if self.held.len() >= WINDOWS_KEPT {
            self.held.remove(0);
        }
        self.held.push(Window {
            key,
            entries,
            listing: None,
        });
    }
}

/// `ask`'s window's entries in the time index, from `windows` or listed
/// and kept there.
pub(super) fn entries_in(
    archive: &Archive,
    windows: &RefCell<Windows>,
    ask: &WindowAsk,
) -> crate::Result<Rc<WindowEntries>> {
    let key = Windows::key(ask);
    if let Some(held) = windows.borrow().find(&key) {
        return Ok(Rc::clone(&held.entries));
    }
    let (id, stream, from, to) = (ask.source_id, ask.stream.as_str(), ask.from, ask.to);
    let entries = Rc::new(archive.read_snapshot(|s| s.window_entries(id, stream, from, to))?);
    windows.borrow_mut().keep(key, Rc::clone(&entries));
    Ok(entries)
}

/// Every record of `ask`'s window, from `windows` or listed through the
/// time index and kept there.
pub(super) fn listing_in(
    archive: &Archive,
    windows: &RefCell<Windows>,
    ask: &WindowAsk,
) -> crate::Result<Rc<Listing>> {
    let key = Windows::key(ask);
    if let Some(listing) = windows.borrow().find(&key).and_then(|w| w.listing.clone()) {
        return Ok(listing);
    }
    let entries = entries_in(archive, windows, ask)?;
    let (id, stream, from, to) = (ask.source_id, ask.stream.as_str(), ask.from, ask.to);
    let listing = Rc::new(archive.read_snapshot(|s| s.window_listing(id, stream, from, to))?);
    let mut windows = windows.borrow_mut();
    windows.keep(key.clone(), entries);
    if let Some(w) = windows.find_mut(&key) {
        w.listing = Some(Rc::clone(&listing));
    }
    Ok(listing)
}

/// `k` of `ask`'s window's segments spread evenly through it, looked up
/// by rowid, and how many the window holds.
pub(super) fn sample_in(
    archive: &Archive,
    windows: &RefCell<Windows>,
    ask: &WindowAsk,
    k: usize,
) -> crate::Result<(Rc<Listing>, usize)> {
    let entries = entries_in(archive, windows, ask)?;
    let rows = archive.read_snapshot(|s| s.segments_at(&entries.sample(k)))?;
    Ok((Rc::new(Listing::with_rowids(rows)), entries.len()))
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

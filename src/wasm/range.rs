//! The JS `Archive` class's reads of a window (`readRange`, `previewRange`,
//! `beginRange`) and `RangeJob`, the window read in steps for a decoder in
//! another instance.

use std::rc::Rc;
use std::sync::Arc;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use super::{
    cached, cached_stats, convert, describe_segment, engine::unpack_js, fail, js, normalized,
    noting, range_key, whole, JsArchive, JsResult, CACHE,
};
use crate::catalog::SegmentRecord;
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
        let ask = self.window(source, stream, (from, to), columns, max_points, rates)?;
        let request = ask.request();
        let stats = |record: &SegmentRecord| cached_stats(self.cache_id, &self.archive, record);
        let preview = self.range_reader(&request)?.preview(stats).map_err(fail)?;
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
            budget: VIEWER_SEGMENT_BUDGET,
        })
    }

    /// The reader of a window, its segments taken from this image's
    /// listing and their footer summaries from the shared cache.
    fn range_reader(&self, request: &RangeRequest<'_>) -> JsResult<RangeReader> {
        let listing = self.listing()?;
        let budget = Some(VIEWER_SEGMENT_BUDGET);
        let stats = |record: &SegmentRecord| cached_stats(self.cache_id, &self.archive, record);
        RangeReader::listed(&self.archive, request, budget, Some(&listing), stats).map_err(fail)
    }
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

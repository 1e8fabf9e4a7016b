//! The JS `Archive` class: an archive open in this engine, held in memory
//! or read in place, and the calls that describe it and read its segments.
//! Its range reads are in `range.rs` and its read-ahead plans in
//! `prefetch.rs`, as further `impl` blocks of the same class.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

use super::{
    cached, convert, describe_segment, engine::batch_value, fail, input, js, normalized, noting,
    opened, vfs, whole, JsPrefetch, JsResult, CACHE, LAZY_CACHE_WEIGHT,
};
use crate::catalog::Listing;
use crate::container::Archive;
use crate::error::Error;
use crate::read::cache::DecodeKey;
use crate::read::prefetch::Notes;

/// An archive open in this engine, read-only: held in memory, or read in
/// place through a byte source (`openLazy`).
#[wasm_bindgen(js_name = Archive)]
pub struct JsArchive {
    pub(super) id: u32,
    /// The namespace its range reads' decoded segments and footer
    /// summaries are cached under: its own id, or an earlier image's of the
    /// same archive ([`JsArchive::share_cache`]).
    pub(super) cache_id: u32,
    pub(super) archive: Rc<Archive>,
    /// The file read in place, for an archive opened with `openLazy`.
    pub(super) lazy: Option<vfs::SharedFile>,
    /// Whether a decode fetches only the chunks of the columns it keeps:
    /// for a local file read in place, where a read costs about the same
    /// whatever its size. Over HTTP each read is a round trip, and a
    /// segment's chunks spread over it cost several where the whole
    /// segment is one; held in memory, nothing is fetched at all.
    pub(super) sparse_reads: bool,
    /// The catalog's read-ahead plan (`prefetchCatalog`), once started:
    /// one for the image, so a second ask goes on where the first stopped.
    pub(super) catalog_plan: RefCell<Option<JsPrefetch>>,
    /// The outline's read-ahead plan (`prefetchOutline`), once started.
    pub(super) outline_plan: RefCell<Option<JsPrefetch>>,
    /// What this image's plans and outline learn once and keep: its
    /// segment count (the outline's plan and the outline both ask, and
    /// counting scans an index) and the footers found held.
    pub(super) notes: Rc<Notes>,
    /// Every segment of this image, once listed: describe, the footer
    /// plan and every range read take their segments from it instead of
    /// listing the catalog again. An image held here never changes (a
    /// buffer, a dropped file, one image of a URL, whose source refuses
    /// reads once the file is another), and a followed archive's newer
    /// image is another `JsArchive` with its own listing, so this is
    /// never stale. It is per image, never per `cache_id`, which images
    /// of one followed archive share.
    listing: RefCell<Option<Rc<Listing>>>,
    /// The windows listed from the time index, for an image whose whole
    /// listing is not read yet (see `range.rs`).
    pub(super) windows: Rc<RefCell<super::range::Windows>>,
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
            catalog_plan: RefCell::new(None),
            outline_plan: RefCell::new(None),
            notes: Rc::default(),
            listing: RefCell::new(None),
            windows: Rc::default(),
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
            catalog_plan: RefCell::new(None),
            outline_plan: RefCell::new(None),
            notes: Rc::default(),
            listing: RefCell::new(None),
            windows: Rc::default(),
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

    /// A first description of an archive read in place, from its catalog's
    /// small trees (`Outline` in src/read.rs): sources and streams with no
    /// segments listed, each stream's count and sealed span in its
    /// `outline`. `null` for an archive held in memory or one with fewer
    /// than `minSegments` segments, whose full description is as quick.
    #[wasm_bindgen(js_name = describeOutline)]
    pub fn describe_outline(&self, min_segments: f64) -> JsResult<JsValue> {
        let count = self.notes.segment_count(&self.archive) as f64;
        if self.lazy.is_none() || count < min_segments {
            return Ok(JsValue::NULL);
        }
        let outline = crate::read::outline(&self.archive).map_err(fail)?;
        Ok(convert::packed_outline(&outline))
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
    /// fetchedBytes, hits, misses, cachedBytes, sqlitePayloads }`, or `null`
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
            .set(
                "sqlitePayloads",
                JsValue::from_f64(s.sqlite_payloads as f64),
            )
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
        // The first segment is a seek of the primary key where the whole
        // listing is not held: a plot's schema never waits for it.
        let listing = match self.listing_held() {
            Some(listing) => listing,
            None => Rc::new(Listing::from_records(
                self.archive
                    .read_snapshot(|s| s.first_segment(source, stream))
                    .map_err(fail)?
                    .into_iter()
                    .collect(),
            )),
        };
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

    /// Every revision of the document `(kind, name)`, oldest first, bodies
    /// included (`DocumentRevision[]` of types.ts): what the viewer shows
    /// when a document is opened. Empty for a document the archive does not
    /// hold, and for every document of a schema-4 archive.
    #[wasm_bindgen(js_name = documentHistory)]
    pub fn document_history(&self, kind: &str, name: &str) -> JsResult<JsValue> {
        let revisions = self
            .archive
            .read_snapshot(|s| s.document_history(kind, name))
            .map_err(fail)?;
        Ok(convert::document_history(&revisions))
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

    /// The whole listing, when this image has read it already.
    pub(super) fn listing_held(&self) -> Option<Rc<Listing>> {
        self.listing.borrow().clone()
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

    /// Refuses a stream the source does not have (neither segments nor
    /// live rows), so a typo is not mistaken for an empty stream.
    pub(super) fn require_stream(&self, source: i64, stream: &str) -> JsResult<()> {
        // A stream with segments is in the listing (or found by a seek of
        // the primary key, where it is not read); only one without is
        // looked for among the catalog's streams (a scan of the index).
        let listed = match self.listing_held() {
            Some(listing) => !listing.stream(source, stream).is_empty(),
            None => self
                .archive
                .read_snapshot(|s| s.first_segment(source, stream))
                .map_err(fail)?
                .is_some(),
        };
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

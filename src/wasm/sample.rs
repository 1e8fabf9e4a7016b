//! The first, sampled picture of a window (`previewSample`,
//! `prefetchSample`): footer statistics of a few dozen of the window's
//! segments, spread evenly in time, in as many coarse buckets. A window
//! over thousands of segments read in place waits seconds for all their
//! footers (a scattered read each); this picture costs a bounded number of
//! reads whatever the archive's size, and the page labels it a sample
//! until the preview of every footer and then the exact envelope replace
//! it.

use wasm_bindgen::prelude::*;

use super::prefetch::JsPrefetch;
use super::{cached_stats, convert, fail, JsArchive, JsResult};
use crate::catalog::SegmentRecord;
use crate::read::prefetch::WindowAsk;
use crate::read::range::RangeReader;

/// How many of a window's segments the sampled picture reads, and its
/// buckets: with one segment a bucket, about twice as many footers at
/// most (the reader also takes the first segment starting in each bucket).
pub const SAMPLE_SEGMENTS: u32 = 64;

#[wasm_bindgen(js_class = Archive)]
impl JsArchive {
    /// The sampled picture of the window `readRange` with these arguments
    /// reads: the shape of `previewRange`'s answer in `SAMPLE_SEGMENTS`
    /// buckets, from the footers of a spread sample of the window's
    /// segments (`segments_from_stats` of them, `segments_left_out` not
    /// read). Each bucket's band is what the sampled segments in it hold:
    /// the data's extremes may lie outside it. `undefined` when the window
    /// has too few rows for buckets; counters read as rates are left out.
    #[wasm_bindgen(js_name = previewSample)]
    pub fn preview_sample(
        &self,
        source: f64,
        stream: &str,
        from: i64,
        to: i64,
        columns: Option<Vec<String>>,
        rates: Option<Vec<String>>,
    ) -> JsResult<JsValue> {
        let ask = self.sample_ask(source, stream, (from, to), columns, rates)?;
        let request = ask.request();
        let listing = self.listing()?;
        let stats = |record: &SegmentRecord| cached_stats(self.cache_id, &self.archive, record);
        let budget = Some(ask.budget);
        let reader = RangeReader::listed(&self.archive, &request, budget, Some(&listing), stats)
            .map_err(fail)?;
        let preview = reader.preview(stats).map_err(fail)?;
        Ok(preview.map_or(JsValue::UNDEFINED, |p| convert::preview(&p)))
    }

    /// The read-ahead of `previewSample` with these arguments: the sampled
    /// segments' footers, in a bounded number of rounds.
    #[wasm_bindgen(js_name = prefetchSample)]
    pub fn prefetch_sample(
        &self,
        source: f64,
        stream: &str,
        from: i64,
        to: i64,
        columns: Option<Vec<String>>,
        rates: Option<Vec<String>>,
    ) -> JsResult<JsPrefetch> {
        let ask = self.sample_ask(source, stream, (from, to), columns, rates)?;
        self.plan_window(ask)
    }
}

impl JsArchive {
    /// The window of a sampled picture: `SAMPLE_SEGMENTS` buckets, as
    /// many segments read, every footer of those a preview.
    fn sample_ask(
        &self,
        source: f64,
        stream: &str,
        window: (i64, i64),
        columns: Option<Vec<String>>,
        rates: Option<Vec<String>>,
    ) -> JsResult<WindowAsk> {
        let mut ask = self.window(
            source,
            stream,
            window,
            columns,
            Some(SAMPLE_SEGMENTS),
            rates,
        )?;
        ask.preview = true;
        ask.budget = SAMPLE_SEGMENTS as usize;
        Ok(ask)
    }
}

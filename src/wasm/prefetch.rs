//! The JS face of the read-ahead planner ([`crate::read::prefetch`]): an
//! `Archive` starts a plan of a kind (`prefetchCatalog`, `prefetchOutline`,
//! `prefetchWindow`), and the worker drives every kind with one loop —
//! `next()` gives the ranges of a round as `[offset, length, ...]` (or
//! `undefined` when done), the worker fetches them its own way (all at
//! once, in parallel or as one multi-range request) and hands each to
//! `fill`. Nothing is planned for an archive held in memory.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::vfs::JsSource;
use super::{fail, flat, stats_key, JsArchive, JsResult, CACHE};
use crate::catalog::SegmentRecord;
use crate::read::prefetch::{Need, Prefetch};

/// A read-ahead plan under way; done at once for an archive held in
/// memory.
#[wasm_bindgen(js_name = Prefetch)]
#[derive(Clone)]
pub struct JsPrefetch {
    plan: Option<Rc<RefCell<Prefetch<JsSource>>>>,
}

#[wasm_bindgen(js_class = Prefetch)]
impl JsPrefetch {
    /// The ranges of the next round, as `[offset, length, ...]` (file
    /// order, adjacent pages merged), or `undefined` once the plan is
    /// done. A plan ends after a bounded number of rounds.
    pub fn next(&self) -> JsResult<Option<Vec<f64>>> {
        let Some(plan) = &self.plan else {
            return Ok(None);
        };
        match plan.borrow_mut().next().map_err(fail)? {
            Need::Ranges(ranges) => Ok(Some(flat(ranges))),
            Need::Done => Ok(None),
        }
    }

    /// Keeps `bytes`, fetched from `offset` for this plan, in the in-place
    /// reader's cache.
    pub fn fill(&self, offset: f64, bytes: &[u8]) {
        if let Some(plan) = &self.plan {
            if offset >= 0.0 && offset.fract() == 0.0 {
                plan.borrow_mut().fill(offset as u64, bytes);
            }
        }
    }
}

impl JsPrefetch {
    fn of(plan: Option<Prefetch<JsSource>>) -> JsPrefetch {
        JsPrefetch {
            plan: plan.map(|p| Rc::new(RefCell::new(p))),
        }
    }
}

#[wasm_bindgen(js_class = Archive)]
impl JsArchive {
    /// The catalog's read-ahead ([`Prefetch::catalog`]): the pages listing
    /// reads, a round per level of its b-trees, so that SQLite's own reads
    /// then find them cached instead of missing once per scattered page.
    /// One plan for the image: asked again, it goes on where it stopped.
    #[wasm_bindgen(js_name = prefetchCatalog)]
    pub fn prefetch_catalog(&self) -> JsPrefetch {
        let mut kept = self.catalog_plan.borrow_mut();
        kept.get_or_insert_with(|| {
            JsPrefetch::of(
                self.lazy
                    .as_ref()
                    .map(|file| Prefetch::catalog(Rc::clone(&self.archive), Rc::clone(file))),
            )
        })
        .clone()
    }

    /// An outline's read-ahead ([`Prefetch::outline`]): the pages
    /// `describeOutline` reads, and each stream's first segment where the
    /// archive has at least `minSegments` segments. One plan for the
    /// image, as `prefetchCatalog`.
    #[wasm_bindgen(js_name = prefetchOutline)]
    pub fn prefetch_outline(&self, min_segments: f64) -> JsPrefetch {
        // A count is whole: at least `minSegments` is at least its ceiling.
        let min_segments = if min_segments.is_nan() {
            u64::MAX
        } else {
            min_segments.ceil().max(0.0) as u64
        };
        let mut kept = self.outline_plan.borrow_mut();
        kept.get_or_insert_with(|| {
            JsPrefetch::of(self.lazy.as_ref().map(|file| {
                let archive = Rc::clone(&self.archive);
                let notes = Rc::clone(&self.notes);
                Prefetch::outline(archive, Rc::clone(file), min_segments, notes)
            }))
        })
        .clone()
    }

    /// The read-ahead of a `readRange` with these arguments
    /// ([`Prefetch::window`]): the footers it reads that are not
    /// summarized yet, after the table's pages leading to their rows, and
    /// its live tail's rows. With `preview`, also the footers a preview of
    /// the window reads (`previewRange`, or `RangeJob.preview`). The
    /// footers then cost no read each.
    #[wasm_bindgen(js_name = prefetchWindow)]
    #[allow(clippy::too_many_arguments)]
    pub fn prefetch_window(
        &self,
        source: f64,
        stream: &str,
        from: i64,
        to: i64,
        columns: Option<Vec<String>>,
        max_points: Option<u32>,
        rates: Option<Vec<String>>,
        preview: Option<bool>,
    ) -> JsResult<JsPrefetch> {
        let mut ask = self.window(source, stream, (from, to), columns, max_points, rates)?;
        ask.preview = preview == Some(true);
        self.plan_window(ask)
    }
}

impl JsArchive {
    /// The read-ahead of the window `ask` names ([`Prefetch::window`]).
    pub(super) fn plan_window(
        &self,
        ask: crate::read::prefetch::WindowAsk,
    ) -> JsResult<JsPrefetch> {
        let Some(file) = &self.lazy else {
            return Ok(JsPrefetch::of(None));
        };
        let listing = self.listing()?;
        let cache_id = self.cache_id;
        let summarized = Box::new(move |record: &SegmentRecord| {
            let key = stats_key(cache_id, record);
            CACHE.with(|c| c.borrow().stats(&key)).is_some()
        });
        let archive = Rc::clone(&self.archive);
        let notes = Rc::clone(&self.notes);
        let plan = Prefetch::window(archive, Rc::clone(file), ask, listing, notes, summarized);
        Ok(JsPrefetch::of(Some(plan)))
    }
}

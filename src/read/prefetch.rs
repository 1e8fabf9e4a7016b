//! Reading ahead for an archive read in place: one planner that says which
//! byte ranges a read is about to need, so that the caller fetches them in
//! a few batched rounds before SQLite and the payload reader ask for them
//! one synchronous miss at a time.
//!
//! The planner fetches nothing itself. Its caller asks [`Prefetch::next`],
//! gets the ranges of one round (or [`Need::Done`]), fetches them however
//! its source does that best (parallel `Blob` reads, one multi-range HTTP
//! request), hands each back with [`Prefetch::fill`], and asks again. So
//! the plans are plain Rust over [`crate::pager`], tested
//! natively, and the browser's worker drives every kind of plan with one
//! loop. Three kinds, one constructor each:
//!
//! - [`Prefetch::catalog`]: the pages listing the catalog reads (the
//!   `segments` table, its primary key's index, `sources`), a round per
//!   level of their b-trees.
//! - [`Prefetch::outline`]: the small trees an outline reads, then the
//!   table's pages holding each stream's first segment.
//! - [`Prefetch::window`]: the footers (and live tail) a range read of one
//!   window takes, after the table's pages that lead to those segments.
//!
//! A plan only saves time: a page it did not bring in is read when it is
//! needed, as before, and a failure to plan is left for that read to
//! report in its own words.

mod trees;

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;

use crate::catalog::{Listing, SegmentRecord};
use crate::container::Archive;
use crate::error::Result;
use crate::pager::{ByteSource, LazyFile, TreeWalk};
#[cfg(doc)]
use crate::read::range::VIEWER_SEGMENT_BUDGET;
use crate::read::range::{RangeReader, RangeRequest};

/// A lazily read file shared by the planner, the VFS SQLite reads it
/// through, and the payload reader.
pub type SharedFile<S> = Rc<RefCell<LazyFile<S>>>;

/// What a plan needs next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Fetch these `(offset, length)` ranges (file order, adjacent pages
    /// merged), hand each to [`Prefetch::fill`], and ask again.
    Ranges(Vec<(u64, u64)>),
    /// Nothing more: the read this plan was for finds what it needs held.
    Done,
}

/// The most rounds a catalog or outline plan answers: a round per level
/// of the b-trees walked, with room to spare; the bound only guards
/// against a plan that does not shrink.
const TREE_ROUNDS: u32 = 16;

/// The most rounds a window plan answers: a round per level of the
/// catalog's b-tree, then a few to follow fragmented chains to their
/// footers.
const WINDOW_ROUNDS: u32 = 12;

/// What the plans of one image of an archive learn and keep for the next
/// plan and read of the same image (an image never changes, so neither
/// goes stale).
#[derive(Debug, Default)]
pub struct Notes {
    /// How many segments the image holds, once counted.
    segments: Cell<Option<u64>>,
    /// The rows (by rowid in the listing) whose footers a round found
    /// wholly cached: later rounds leave them out, so a read after a
    /// prefetch does not run the footer's read on the cache again for
    /// every segment of the window (some 60 ms for 640 segments). A block
    /// evicted since costs that read a fetch, never a wrong byte.
    footers_held: RefCell<HashSet<i64>>,
}

impl Notes {
    /// How many segments `archive` holds, counted on an index once (none
    /// where that fails: the listing then says why). An outline asks, and
    /// so does its plan.
    pub fn segment_count(&self, archive: &Archive) -> u64 {
        if let Some(n) = self.segments.get() {
            return n;
        }
        let n = archive
            .read_snapshot(|s| s.segment_count())
            .map_or(0, |n| n.max(0) as u64);
        self.segments.set(Some(n));
        n
    }
}

/// The window a [`Prefetch::window`] plans for: a range read's arguments,
/// owned, since the plan outlives the call that made it.
#[derive(Debug, Clone)]
pub struct WindowAsk {
    /// The source.
    pub source_id: i64,
    /// The stream.
    pub stream: String,
    /// First timestamp of the window, inclusive.
    pub from: i64,
    /// Last timestamp of the window, inclusive.
    pub to: i64,
    /// Numeric columns kept; `None` keeps all.
    pub columns: Option<Vec<String>>,
    /// At most this many points.
    pub max_points: Option<usize>,
    /// Counters read as rates.
    pub rates: Option<Vec<String>>,
    /// Whether a preview of the window is read too: every segment's
    /// footer the read covers, not only those it reads.
    pub preview: bool,
    /// How many of the window's segments the read takes at most
    /// ([`RangeReader::bounded`]): [`VIEWER_SEGMENT_BUDGET`] for the
    /// viewer's reads, fewer for its first, sampled picture.
    pub budget: usize,
}

impl WindowAsk {
    /// The range reader's request for this window.
    pub fn request(&self) -> RangeRequest<'_> {
        RangeRequest {
            source_id: self.source_id,
            stream: &self.stream,
            from: self.from,
            to: self.to,
            columns: self.columns.as_deref(),
            max_points: self.max_points,
            rates: self.rates.as_deref(),
        }
    }
}

/// Whether a segment's footer summary is known already (its footer then
/// need not be fetched): the caller's cache of summaries.
pub type Summarized = Box<dyn Fn(&SegmentRecord) -> bool>;

/// A window plan's inputs.
struct Window {
    ask: WindowAsk,
    listing: Rc<Listing>,
    notes: Rc<Notes>,
    summarized: Summarized,
}

/// Where a catalog plan has got to.
enum Walking {
    NotStarted,
    Trees(TreeWalk),
    Done,
}

/// Where an outline plan has got to.
enum Outlining {
    NotStarted,
    /// The sources table and the primary key's index on `segments`.
    Trees(TreeWalk),
    /// The table's pages toward each stream's first segment.
    Rows(TreeWalk),
    Done,
}

enum Plan {
    Catalog(Walking),
    Outline {
        min_segments: u64,
        notes: Rc<Notes>,
        state: Outlining,
    },
    Window(Box<Window>),
}

/// One read-ahead plan over an archive read in place (see the module's
/// comment): ask [`Prefetch::next`], fetch, [`Prefetch::fill`], repeat.
pub struct Prefetch<S> {
    archive: Rc<Archive>,
    file: SharedFile<S>,
    plan: Plan,
    /// Rounds answered with ranges so far.
    rounds: u32,
    done: bool,
}

impl<S: ByteSource> Prefetch<S> {
    fn new(archive: Rc<Archive>, file: SharedFile<S>, plan: Plan) -> Prefetch<S> {
        Prefetch {
            archive,
            file,
            plan,
            rounds: 0,
            done: false,
        }
    }

    /// The pages listing the catalog reads (`describe` scans `segments` in
    /// key order through its primary key's index, then looks each row up;
    /// and `sources`), from the trees' roots: one round per level. SQLite's
    /// own reads then find the catalog held instead of missing once per
    /// scattered page.
    pub fn catalog(archive: Rc<Archive>, file: SharedFile<S>) -> Prefetch<S> {
        Prefetch::new(archive, file, Plan::Catalog(Walking::NotStarted))
    }

    /// The pages an outline reads: first the sources table's and the
    /// primary key's index on `segments`, a round per level; then, where
    /// the archive has at least `min_segments` segments (an outline will
    /// be drawn), the table's pages holding each stream's first segment.
    pub fn outline(
        archive: Rc<Archive>,
        file: SharedFile<S>,
        min_segments: u64,
        notes: Rc<Notes>,
    ) -> Prefetch<S> {
        let plan = Plan::Outline {
            min_segments,
            notes,
            state: Outlining::NotStarted,
        };
        Prefetch::new(archive, file, plan)
    }

    /// The byte ranges the footers a range read of `ask` reads lie in (each
    /// footer's last pages and the pointer-map pages that prove them),
    /// leaving out those `summarized` says are known; with `ask.preview`,
    /// every segment's the read covers. Where the rows of those segments
    /// are not held, the first rounds are the table's pages that lead to
    /// them and hold them (small payloads lie in those leaves whole):
    /// looking each row up would read its leaf alone, one read per footer.
    /// The live tail's rows go along in the same rounds.
    pub fn window(
        archive: Rc<Archive>,
        file: SharedFile<S>,
        ask: WindowAsk,
        listing: Rc<Listing>,
        notes: Rc<Notes>,
        summarized: Summarized,
    ) -> Prefetch<S> {
        let window = Window {
            ask,
            listing,
            notes,
            summarized,
        };
        Prefetch::new(archive, file, Plan::Window(Box::new(window)))
    }

    /// The ranges of the next round, or [`Need::Done`]. Once done, done
    /// for good; a plan also ends after a bounded number of rounds. (Named
    /// as the push decoders it follows name it; not an iterator, since a
    /// round must be filled before the next is asked for.)
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Need> {
        let cap = match self.plan {
            Plan::Window(_) => WINDOW_ROUNDS,
            _ => TREE_ROUNDS,
        };
        if self.done || self.rounds >= cap {
            self.done = true;
            return Ok(Need::Done);
        }
        let ranges = match &mut self.plan {
            Plan::Catalog(state) => catalog_round(&self.archive, &self.file, state),
            Plan::Outline {
                min_segments,
                notes,
                state,
            } => outline_round(&self.archive, &self.file, *min_segments, notes, state),
            Plan::Window(window) => window.round(&self.archive, &self.file)?,
        };
        if ranges.is_empty() {
            self.done = true;
            return Ok(Need::Done);
        }
        self.rounds += 1;
        Ok(Need::Ranges(ranges))
    }

    /// Keeps `bytes`, the file's bytes fetched from `offset` for this plan,
    /// in the lazy file's cache.
    pub fn fill(&mut self, offset: u64, bytes: &[u8]) {
        self.file.borrow_mut().prime(offset, bytes);
    }

    /// Rounds answered with ranges so far.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }
}

/// A round of the catalog plan.
fn catalog_round<S: ByteSource>(
    archive: &Archive,
    file: &SharedFile<S>,
    state: &mut Walking,
) -> Vec<(u64, u64)> {
    if let Walking::NotStarted = state {
        let roots = trees::catalog_roots(archive);
        *state = match file.borrow().tree_walk(&roots) {
            Some(walk) => Walking::Trees(walk),
            None => Walking::Done,
        };
    }
    match state {
        Walking::Trees(walk) => file.borrow_mut().walk_step(walk),
        _ => Vec::new(),
    }
}

/// A round of the outline plan.
fn outline_round<S: ByteSource>(
    archive: &Archive,
    file: &SharedFile<S>,
    min_segments: u64,
    notes: &Notes,
    state: &mut Outlining,
) -> Vec<(u64, u64)> {
    loop {
        match state {
            Outlining::NotStarted => {
                let roots = trees::outline_roots(archive);
                *state = match file.borrow().tree_walk(&roots) {
                    Some(walk) => Outlining::Trees(walk),
                    None => Outlining::Done,
                };
            }
            Outlining::Trees(walk) => {
                let plan = file.borrow_mut().walk_step(walk);
                if !plan.is_empty() {
                    return plan;
                }
                // The primary key's index is held: which rows are first is
                // its to say, at no read. (Each stream's newest timestamp
                // is a seek of `segments_by_time`, a page or two a stream
                // that SQLite reads as it asks.)
                let rows = if notes.segment_count(archive) >= min_segments {
                    archive
                        .read_snapshot(|s| s.first_segment_rowids())
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                let (table, _) = trees::lookup_roots(archive);
                let walk = match table {
                    Some(root) if !rows.is_empty() => file.borrow().row_walk(root, rows),
                    _ => None,
                };
                *state = walk.map_or(Outlining::Done, Outlining::Rows);
            }
            Outlining::Rows(walk) => {
                let plan = file.borrow_mut().walk_step(walk);
                if plan.is_empty() {
                    *state = Outlining::Done;
                }
                return plan;
            }
            Outlining::Done => return Vec::new(),
        }
    }
}

impl Window {
    /// A round of the window plan: the footers' and the live tail's
    /// together (neither needs the other's pages), made afresh each time
    /// from what the cache holds now.
    fn round<S: ByteSource>(
        &self,
        archive: &Archive,
        file: &SharedFile<S>,
    ) -> Result<Vec<(u64, u64)>> {
        let request = self.ask.request();
        // The footers the read will ask for: the reader run with none
        // known, noting those not summarized yet. It spans the live tail
        // from the index rather than reading it: the tail's rows are
        // fetched ahead too, once the footers are in.
        let mut asked = Vec::new();
        let uncached = |record: &SegmentRecord| !(self.summarized)(record);
        let budget = Some(self.ask.budget);
        let listing = Some(&*self.listing);
        let reader = RangeReader::planned(archive, &request, budget, listing, |record| {
            if uncached(record) {
                asked.push(record.clone());
            }
            Ok(None)
        })?;
        if self.ask.preview && request.max_points.is_some() {
            asked = reader
                .segments()
                .iter()
                .filter(|r| uncached(r))
                .cloned()
                .collect();
        }
        let mut pages = self.footer_pages(archive, file, &asked)?;
        pages.extend(tail_pages(archive, file, &request));
        Ok(pages)
    }

    /// The footers' part of a round for `asked`: first the `segments`
    /// leaves holding their rows (and the primary key's index each lookup
    /// goes through), then each footer's last pages; empty once all are
    /// held.
    fn footer_pages<S: ByteSource>(
        &self,
        archive: &Archive,
        file: &SharedFile<S>,
        asked: &[SegmentRecord],
    ) -> Result<Vec<(u64, u64)>> {
        let listing = &self.listing;
        let asked: Vec<SegmentRecord> = {
            let held = self.notes.footers_held.borrow();
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
        let (table, index) = trees::lookup_roots(archive);
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
        let per_record = trees::footer_ranges(archive, &asked)?;
        let mut held = self.notes.footers_held.borrow_mut();
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
}

/// The live tail's part of a window round: the `wal` primary key's index
/// is fetched, the rows a read of `request` decodes from the tail are
/// found in it (no row is read), then the `wal` leaves holding them, then
/// their overflow pages. A writer's rows lie wherever its inserts found
/// free pages, a page or two each: read by SQLite one miss at a time, a
/// demo stream's tail of 51 rows took a hundred reads. Empty once all are
/// held, for a tail no reader here decodes (nothing of it is read), and
/// wherever the file does not parse as this expects (SQLite then reads the
/// rows itself).
fn tail_pages<S: ByteSource>(
    archive: &Archive,
    file: &SharedFile<S>,
    request: &RangeRequest<'_>,
) -> Vec<(u64, u64)> {
    let Some(table) = trees::wal_rows_table(archive) else {
        return Vec::new();
    };
    // The primary key's index first: the rowids are read from it.
    let index = trees::wal_key_root(archive);
    let walk = index.and_then(|root| file.borrow().tree_walk(&[root]));
    if let Some(mut walk) = walk {
        let pages = file.borrow_mut().walk_step(&mut walk);
        if !pages.is_empty() {
            return pages;
        }
    }
    let rowids = archive.read_snapshot(|s| {
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
    for (rowid, len, head) in trees::wal_row_heads(archive, &rowids) {
        match file.borrow_mut().payload_ranges(table, rowid, len, &head) {
            Ok(found) => ranges.extend(found),
            Err(_) => return Vec::new(),
        }
    }
    file.borrow().uncached(&ranges)
}

#[cfg(all(test, feature = "write"))]
mod tests;

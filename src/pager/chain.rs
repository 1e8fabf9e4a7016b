//! An overflow chain's pages, found and proven outside SQLite.
//!
//! A payload larger than its b-tree cell spills into a chain of overflow
//! pages, each starting with the next one's number (SQLite file format
//! §1.6, §1.7). Chains written into a growing file are contiguous; chains
//! written where pages were freed before (a prune, retention, the sealed
//! rows of a recording) reuse them and break wherever a freed run ends,
//! in a recorded archive every few pages. An archive's file (auto-vacuum)
//! has pointer-map pages giving each overflow page's predecessor, and
//! SQLite skips along a chain by them: the next page is taken to be the
//! following one when that page's entry names the page before. Here the
//! same kind of evidence is taken one step further: where the following
//! page's entry does not name it, the page whose entry does is next, so a
//! read of a chain's tail costs the pointer map and the tail's own pages,
//! however the chain is broken up. Only where no entry names the page
//! before (or two do) is that page read for its pointer, as SQLite reads
//! it. Every page read is checked against its pointer all the same, and
//! a disagreement is followed as SQLite follows it.
//!
//! So for a file whose map and pointers agree (every file SQLite wrote
//! and nothing damaged since) the bytes are SQLite's. Where damage makes
//! them disagree on a page a read skips, a read by range gives the chain
//! the map describes and SQLite the one the pointer does; the file fails
//! SQLite's integrity check, which `verify` runs, either way. Reading the
//! page before every break to agree with SQLite there too cost a
//! recorded archive's footer about as much as its whole payload.

use std::rc::Rc;

use super::btree::page;
use super::encoding::be32;
use super::{ByteSource, Geometry, LazyFile, SourceFailure};

/// Pointer-map entry type of an overflow page after a chain's first.
pub(super) const PTRMAP_OVERFLOW2: u8 = 4;

/// Runs of physically adjacent pages, in chain order: `(first page, count)`.
type Runs = Vec<(u32, u32)>;

/// One payload's overflow chain: its pages as far as they are known or
/// guessed, and how far they are proven.
#[derive(Debug, Clone)]
pub(crate) struct Chain {
    geometry: Geometry,
    /// The chain's pages as far as they are known or guessed: where a
    /// page's successor is not known, the guess is SQLite's, the next page
    /// that is neither a pointer-map page nor the lock-byte page. It may
    /// stop short of [`Chain::pages`] at the file's end.
    runs: Runs,
    /// How many pages the chain has (from the payload's size).
    pages: u32,
    /// Chain pages `0..=proven` are known to be the chain's (page 0 from
    /// the cell; the others by their pointer-map entries or the next
    /// pointer of the page before, read).
    proven: u32,
}

impl Chain {
    /// No chain: a payload that fits its cell.
    pub(super) fn none(geometry: Geometry) -> Chain {
        Chain {
            geometry,
            runs: Runs::new(),
            pages: 0,
            proven: 0,
        }
    }

    /// SQLite's guess of a chain of `pages` pages from `first` (named by
    /// the cell, so proven); `None` as for [`guessed_chain`] or when no
    /// file holds that many pages.
    pub(super) fn guessed(geometry: Geometry, first: u32, pages: u64) -> Option<Chain> {
        Some(Chain {
            runs: guessed_chain(&geometry, first, pages)?,
            pages: u32::try_from(pages).ok()?,
            geometry,
            proven: 0,
        })
    }

    /// The layout of the file the chain lies in.
    pub(super) fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// How many pages the chain has.
    pub(super) fn pages(&self) -> u32 {
        self.pages
    }

    /// The last chain page known to be the chain's.
    pub(super) fn proven(&self) -> u32 {
        self.proven
    }

    /// Counts chain pages up to `index` as proven (a page read named the
    /// next one, or every page read was named by the one before).
    pub(super) fn mark_proven(&mut self, index: u32) {
        self.proven = self.proven.max(index);
    }

    /// The runs of physically adjacent pages, in chain order.
    #[cfg(all(test, feature = "write"))]
    pub(super) fn runs(&self) -> &[(u32, u32)] {
        &self.runs
    }

    /// Replaces the chain from page `index` on (never a proven one) by
    /// SQLite's guess from `next`, the page a read of the page before
    /// names. `false` when `next` cannot be a chain page.
    pub(super) fn rechain(&mut self, index: u32, next: u32) -> bool {
        if index <= self.proven || index >= self.pages {
            return false;
        }
        let Some(rest) = guessed_chain(&self.geometry, next, u64::from(self.pages - index)) else {
            return false;
        };
        let Some(mut runs) = self.first_pages(index) else {
            return false;
        };
        runs.extend(rest);
        self.runs = runs;
        true
    }

    /// The runs of the chain's first `count` pages, if it has them.
    fn first_pages(&self, count: u32) -> Option<Runs> {
        let mut kept = 0;
        let mut runs = Runs::new();
        for &(first, n) in &self.runs {
            if kept == count {
                break;
            }
            let take = n.min(count - kept);
            runs.push((first, take));
            kept += take;
        }
        (kept == count).then_some(runs)
    }

    /// The page at `index` of the chain.
    pub(super) fn page_at(&self, mut index: u32) -> Option<u32> {
        for &(first, count) in &self.runs {
            if index < count {
                return Some(first + index);
            }
            index -= count;
        }
        None
    }

    /// How many physical pages from chain page `index`'s one a single read
    /// should take to cover chain pages `index..=last`, as far as they lie
    /// in ascending order with at most [`GAP_PAGES`] between two (the pages
    /// a chain skips, or free pages it jumped over), and at most `cap`.
    pub(super) fn stretch(&self, index: u32, last: u32, cap: u32) -> u32 {
        let Some(start) = self.page_at(index) else {
            return 1;
        };
        let mut end = start;
        for i in index + 1..=last {
            match self.page_at(i) {
                Some(p) if p > end && p - end <= GAP_PAGES && p - start < cap => end = p,
                _ => break,
            }
        }
        end - start + 1
    }
}

/// The pages a contiguous chain of `pages` pages from `first` would take,
/// skipping what SQLite skips, as far as the file goes (a fragmented
/// chain's guess may run past its end, where it is wrong anyway); `None`
/// when `first` cannot be a chain page or no file holds `pages` pages.
fn guessed_chain(g: &Geometry, first: u32, pages: u64) -> Option<Runs> {
    if !g.can_chain(first) {
        return None;
    }
    if pages > u64::from(g.pages) {
        return None;
    }
    let mut runs: Runs = vec![(first, 1)];
    let mut last = first;
    for _ in 1..pages {
        let next = g.next_after(last)?;
        if next > g.pages {
            break;
        }
        match runs.last_mut() {
            Some(run) if run.0 + run.1 == next => run.1 += 1,
            _ => runs.push((next, 1)),
        }
        last = next;
    }
    Some(runs)
}

/// How far apart (in pages) two pages a read needs may lie and still be
/// fetched in one read: the pages between cost less than another read.
const GAP_PAGES: u32 = 32;
/// The most pointer-map pages one look ahead along a chain reads.
const FORESEE_MAPS: usize = 64;

/// Each pointer-map page read for a look ahead, turned round: for each
/// page, the overflow page whose entry names it as the page before.
#[derive(Default)]
pub(super) struct Successors {
    /// The pointer-map pages this look ahead has consulted.
    by_map: std::collections::HashMap<u32, Rc<Turned>>,
    /// Look only in pointer-map pages already held, fetching none.
    held_only: bool,
}

impl Successors {
    /// A look ahead that reads only the pointer-map pages already held
    /// when `held_only`, fetching none.
    pub(super) fn new(held_only: bool) -> Successors {
        Successors {
            held_only,
            ..Successors::default()
        }
    }

    /// Lets the look ahead fetch the pointer-map pages it needs from now
    /// on (a page's pointer showed a break).
    pub(super) fn fetch_as_needed(&mut self) {
        self.held_only = false;
    }

    /// The page whose pointer-map entry says "overflow page after
    /// `page`", looked for in `page`'s own pointer-map page and the next
    /// one (where nearly every chain continues: SQLite hands out free
    /// pages near the one before), then in every pointer-map page held.
    /// `None` when none says.
    pub(super) fn after<S: ByteSource>(
        &mut self,
        file: &mut LazyFile<S>,
        g: &Geometry,
        page: u32,
    ) -> Result<Option<u32>, SourceFailure> {
        let per = g.usable / 5 + 1;
        let here = g.ptrmap_of(page);
        let later = page
            .checked_add(per)
            .filter(|&p| p <= g.pages)
            .map(|p| g.ptrmap_of(p));
        for map in std::iter::once(here).chain(later) {
            if !self.by_map.contains_key(&map) && self.by_map.len() >= FORESEE_MAPS {
                return Ok(None);
            }
            if let Some(next) = self.named_in(file, g, map, page, !self.held_only)? {
                return Ok(Some(next));
            }
        }
        // Any other pointer-map page read already may know.
        if let Some(next) = self.by_map.values().find_map(|m| m.get(&page).copied()) {
            return Ok(Some(next));
        }
        // Then every pointer-map page held, which costs no read: a chain
        // broken far away is foreseen whole once a plan has brought them
        // in (a plan then fetches its breaks in one round rather than one
        // a round, and the read after it foresees what the plan did).
        for map in every_ptrmap(g).unwrap_or_default() {
            if self.by_map.contains_key(&map) {
                continue;
            }
            if let Some(next) = self.named_in(file, g, map, page, false)? {
                return Ok(Some(next));
            }
        }
        Ok(None)
    }

    /// What pointer-map page `map` names as following `page`; a page not
    /// consulted yet is looked in only when it is held or `fetch` allows
    /// reading it.
    fn named_in<S: ByteSource>(
        &mut self,
        file: &mut LazyFile<S>,
        g: &Geometry,
        map: u32,
        page: u32,
        fetch: bool,
    ) -> Result<Option<u32>, SourceFailure> {
        if !fetch && !self.by_map.contains_key(&map) && !held_page(file, g, map) {
            return Ok(None);
        }
        Ok(self.turned(file, g, map)?.get(&page).copied())
    }

    /// Pointer-map page `map` turned round: read and turned the first
    /// time any read of the file needs it, then kept with the file.
    fn turned<S: ByteSource>(
        &mut self,
        file: &mut LazyFile<S>,
        g: &Geometry,
        map: u32,
    ) -> Result<Rc<Turned>, SourceFailure> {
        if let Some(kept) = self.by_map.get(&map) {
            return Ok(Rc::clone(kept));
        }
        let turned = match file.turned_maps().get(&map) {
            Some(kept) => Rc::clone(kept),
            None => match self::page(file, g, map)? {
                Some(bytes) => {
                    let turned = Rc::new(turned_round(g, map, &bytes));
                    let kept = file.turned_maps();
                    if kept.len() >= TURNED_MAPS_KEPT {
                        kept.clear();
                    }
                    kept.insert(map, Rc::clone(&turned));
                    turned
                }
                None => Rc::default(),
            },
        };
        self.by_map.insert(map, Rc::clone(&turned));
        Ok(turned)
    }
}

/// One pointer-map page turned round: for each page, the overflow page
/// whose entry names it as the page before.
pub(crate) type Turned = std::collections::HashMap<u32, u32>;

/// The pointer-map pages a file's reads have turned round, by page
/// number. Kept with the file, whose bytes never change under its reader:
/// a plan's rounds and the reads after it would otherwise turn the same
/// pages round once per payload per round (most of a footer plan's time
/// over a fragmented archive).
pub(crate) type TurnedMaps = std::collections::HashMap<u32, Rc<Turned>>;

/// The most pointer-map pages a file keeps turned round (each about 20
/// KiB as a map of 4 KiB pages' entries): all of them for a file of up to
/// about 800 MiB, as a plan fetches them ([`PLAN_EVERY_MAP`]); a larger
/// file starts again when they are used up, so a read of every payload of
/// a 5 GB file does not keep 30 MB of them.
const TURNED_MAPS_KEPT: usize = PLAN_EVERY_MAP as usize;

/// Whether page `number` is held whole in the cache (reading it fetches
/// nothing).
fn held_page<S: ByteSource>(file: &LazyFile<S>, g: &Geometry, number: u32) -> bool {
    file.holds(g.offset(number), u64::from(g.page_bytes))
}

/// The "overflow page after" entries of pointer-map page `map`, keyed by
/// the page before.
fn turned_round(g: &Geometry, map: u32, bytes: &[u8]) -> Turned {
    let mut out = std::collections::HashMap::new();
    let entries = (g.usable / 5) as usize;
    for i in 0..entries {
        let at = 5 * i;
        if bytes.get(at) == Some(&PTRMAP_OVERFLOW2) {
            if let (Some(parent), Some(page)) = (be32(bytes, at + 1), map.checked_add(1 + i as u32))
            {
                // Two entries naming one page before: the map says
                // nothing of what follows it (0 names no page).
                if out.insert(parent, page).is_some() {
                    out.insert(parent, 0);
                }
            }
        }
    }
    out
}

/// Replaces the guess for chain pages `proven + 1..=upto` by where the
/// pointer map says the chain goes, as far as it says (the rest keeps the
/// guess of contiguous pages). A plan of what to fetch and read: [`prove`]
/// takes each page on the map's word again, and [`super::payload::read`] checks the
/// pointer of every page it reads, so where a page read disagrees with
/// the map the chain follows the page.
pub(super) fn foresee<S: ByteSource>(
    file: &mut LazyFile<S>,
    chain: &mut Chain,
    successors: &mut Successors,
    upto: u32,
) -> Result<(), SourceFailure> {
    let g = chain.geometry;
    let upto = upto.min(chain.pages.saturating_sub(1));
    if !g.ptrmap || upto <= chain.proven {
        return Ok(());
    }
    let Some(mut runs) = chain.first_pages(chain.proven + 1) else {
        return Ok(());
    };
    let Some(mut at) = chain.page_at(chain.proven) else {
        return Ok(());
    };
    let mut index = chain.proven + 1;
    while index <= upto {
        let Some(next) = successors.after(file, &g, at)? else {
            break;
        };
        if !g.can_chain(next) {
            break;
        }
        match runs.last_mut() {
            Some(run) if run.0 + run.1 == next => run.1 += 1,
            _ => runs.push((next, 1)),
        }
        at = next;
        index += 1;
    }
    if index < chain.pages {
        // Past what the map told, SQLite's guess from the last page told.
        if let Some(rest) = g
            .next_after(at)
            .and_then(|first| guessed_chain(&g, first, u64::from(chain.pages - index)))
        {
            runs.extend(rest);
        }
    }
    chain.runs = runs;
    Ok(())
}

thread_local! {
    static MAP_AT_BREAKS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Takes the pointer map's word for the page after a break (the default),
/// or reads the page before each break for its pointer, as SQLite does:
/// the two differ only on a file whose map and pointers disagree, and a
/// differential test of a damaged file compares them (see
/// `tests/fuzz_entry`).
pub fn set_map_at_breaks(on: bool) {
    MAP_AT_BREAKS.with(|m| m.set(on));
}

/// Proves chain pages `1..=upto` as SQLite's own skip along the chain
/// finds them, and further: the guessed page is the chain's when its
/// pointer-map entry says "overflow page after" the page before; where it
/// does not, the page whose entry says so is, and only where none (or
/// more than one) says is the page before read and its next pointer
/// followed (so a file without a pointer map costs a read per break).
/// The rest of the chain is foreseen again from each page found. `false`
/// when a page cannot be read or a pointer names no page a chain can use.
pub(super) fn prove<S: ByteSource>(
    file: &mut LazyFile<S>,
    chain: &mut Chain,
    upto: u32,
) -> Result<bool, SourceFailure> {
    if upto <= chain.proven {
        return Ok(true);
    }
    if upto >= chain.pages {
        return Ok(false);
    }
    let g = chain.geometry;
    // The chain is foreseen from the map at the first break, not before:
    // a chain in one run (most) needs no look ahead, and its pages are
    // each taken on the guess's entry.
    let mut successors = Successors::default();
    let mut held: Option<(u32, Vec<u8>)> = None;
    for index in chain.proven + 1..=upto {
        let Some(parent) = chain.page_at(index - 1) else {
            return Ok(false);
        };
        // SQLite's guess is the next page a chain can use, whatever the
        // look ahead foresaw.
        let guess = g.next_after(parent).filter(|&p| p <= g.pages);
        let mut by_map = false;
        if let (Some(page_no), true) = (guess, g.ptrmap) {
            let ptrmap = g.ptrmap_of(page_no);
            if held.as_ref().map(|h| h.0) != Some(ptrmap) {
                let Some(bytes) = page(file, &g, ptrmap)? else {
                    return Ok(false);
                };
                held = Some((ptrmap, bytes));
            }
            let entries = held.as_ref().map_or(&[][..], |h| &h.1[..]);
            let at = 5 * (page_no - ptrmap - 1) as usize;
            let entry = entries.get(at).filter(|_| at + 5 <= g.usable as usize);
            // An entry of no known type is damage SQLite reports when it
            // looks: leave the read to it.
            if !entry.is_some_and(|t| (1..=5).contains(t)) {
                return Ok(false);
            }
            by_map = entry == Some(&PTRMAP_OVERFLOW2) && be32(entries, at + 1) == Some(parent);
        }
        // Where the guess is not the next page, the page whose own entry
        // names `parent` as the page before is, as the guess's entry is
        // taken above; only where no entry (or more than one) says is the
        // page before read for its pointer.
        let named = match (by_map, g.ptrmap && MAP_AT_BREAKS.with(|m| m.get())) {
            (false, true) => successors
                .after(file, &g, parent)?
                .filter(|&p| g.can_chain(p)),
            _ => None,
        };
        let next = match (by_map, guess, named) {
            (true, Some(guess), _) => guess,
            (_, _, Some(named)) => named,
            _ => match page(file, &g, parent)?.and_then(|bytes| be32(&bytes, 0)) {
                Some(next) => next,
                None => return Ok(false),
            },
        };
        if chain.page_at(index) != Some(next) {
            // Not where the map foresaw: look ahead again from here.
            if !chain.rechain(index, next) {
                return Ok(false);
            }
            chain.proven = index;
            foresee(file, chain, &mut successors, upto)?;
        }
        chain.proven = index;
    }
    Ok(true)
}

/// The most pointer-map pages a plan asks for all at once: one per about
/// 3 MiB of a file of 4 KiB pages, so about 800 MiB of file.
const PLAN_EVERY_MAP: u32 = 256;

/// Every pointer-map page of the file, when it has some and not more than
/// [`PLAN_EVERY_MAP`].
pub(super) fn every_ptrmap(g: &Geometry) -> Option<Vec<u32>> {
    if !g.ptrmap {
        return None;
    }
    let per = g.usable / 5 + 1;
    let count = g.pages.saturating_sub(2) / per + 1;
    if count > PLAN_EVERY_MAP {
        return None;
    }
    let maps = (0..count).map(|i| g.ptrmap_of(2 + i * per));
    Some(maps.filter(|&p| p <= g.pages).collect())
}

#[cfg(test)]
mod tests;

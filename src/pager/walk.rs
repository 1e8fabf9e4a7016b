//! A catalog prefetch for a lazily read archive: the pages of chosen
//! b-trees (the `segments` table, `sources`), found by reading the trees'
//! interior pages ourselves, so that they can be fetched in a few batched
//! or parallel reads before SQLite asks for them one at a time.
//!
//! Why: each row of `segments` carries a payload of about a MiB that
//! spills into overflow pages right after the leaf holding the row, so the
//! table's leaves lie a MiB apart through the file. Listing the catalog
//! touches every one; read one synchronous miss at a time, a 5 GB archive
//! costs thousands of round trips. Read ahead cannot help (the leaves are
//! not sequential); knowing the tree can.
//!
//! The walk goes level by level over every tree at once: it parses the
//! pages already cached, collects the children of interior pages, and
//! returns the pages it still needs as runs of adjacent blocks; the caller
//! fetches them however its source does that best (parallel `Blob` reads,
//! one multi-range HTTP request) and hands them back with
//! [`super::LazyFile::prime`], then asks again. A tree of depth three costs
//! three rounds. Nothing here trusts the bytes: a page that does not parse
//! as a b-tree page is left for SQLite, which reports it in its own words;
//! the walk only fetches fewer pages.

use std::collections::HashSet;

use super::btree::{INTERIOR_INDEX, INTERIOR_TABLE};

/// A page run to fetch: `pages` pages from page number `first` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRun {
    /// The run's first page number (1-based, as SQLite counts).
    pub first: u32,
    /// How many adjacent pages.
    pub pages: u32,
}

/// The state of one prefetch: the pages of the next level not yet parsed.
pub struct TreeWalk {
    page_bytes: usize,
    page_count: u32,
    /// Pages to parse (or fetch, then parse) on the next step, each with
    /// the part of `rows` that lies under it.
    frontier: Vec<(u32, std::ops::Range<usize>)>,
    /// For a walk toward some rows of one table ([`TreeWalk::toward_rows`]):
    /// their rowids, ascending. Empty: every page of the trees.
    rows: Vec<i64>,
    seen: HashSet<u32>,
    /// Pages this walk may still add (the byte budget, in pages).
    budget: usize,
    /// Whether only pages not cached count against `budget`: a walk
    /// toward rows is made afresh for each round of a footer plan, and the
    /// pages earlier rounds brought in must not use up what the next one
    /// may fetch.
    only_fetched: bool,
    /// Interior and leaf pages parsed so far.
    parsed: u64,
    /// The pages parsed since [`TreeWalk::take_parsed`] last took them.
    parsed_pages: Vec<u32>,
}

impl TreeWalk {
    /// A walk of the trees rooted at `roots`, in a file of `page_count`
    /// pages of `page_bytes`, adding at most `max_pages` pages (the roots
    /// included) to what is fetched.
    pub fn new(roots: &[u32], page_bytes: usize, page_count: u32, max_pages: usize) -> TreeWalk {
        let mut walk = TreeWalk {
            page_bytes,
            page_count,
            frontier: Vec::new(),
            rows: Vec::new(),
            seen: HashSet::new(),
            budget: max_pages,
            only_fetched: false,
            parsed: 0,
            parsed_pages: Vec::new(),
        };
        for &root in roots {
            walk.add(root, 0..0);
        }
        walk
    }

    /// A walk of the table b-tree rooted at `root` toward the leaves that
    /// hold `rows` (rowids) only: an interior page's child is followed when
    /// a wanted rowid falls in its key range. The leaves of a few thousand
    /// scattered rows of a large table are then fetched in one batch,
    /// where looking each row up would read its leaf alone.
    pub fn toward_rows(
        root: u32,
        mut rows: Vec<i64>,
        page_bytes: usize,
        page_count: u32,
        max_pages: usize,
    ) -> TreeWalk {
        rows.sort_unstable();
        rows.dedup();
        let mut walk = TreeWalk::new(&[], page_bytes, page_count, max_pages);
        walk.only_fetched = true;
        if !rows.is_empty() {
            // The root is one page, cached after the first round: free.
            walk.add_costing(root, 0..rows.len(), false);
            walk.rows = rows;
        }
        walk
    }

    /// Pages parsed so far.
    pub fn parsed(&self) -> u64 {
        self.parsed
    }

    /// The pages parsed since the last call: the cached pages the walk
    /// used, for the cache to count as used.
    pub fn take_parsed(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.parsed_pages)
    }

    /// Whether nothing is left to parse.
    pub fn is_done(&self) -> bool {
        self.frontier.is_empty()
    }

    fn add(&mut self, page: u32, rows: std::ops::Range<usize>) {
        self.add_costing(page, rows, true);
    }

    /// Queues `page`, counting it against the budget when `costs`.
    fn add_costing(&mut self, page: u32, rows: std::ops::Range<usize>, costs: bool) {
        if page == 0 || page > self.page_count || (costs && self.budget == 0) {
            return;
        }
        if !self.seen.insert(page) {
            return;
        }
        if costs {
            self.budget -= 1;
        }
        self.frontier.push((page, rows));
    }

    /// Queues the children of the parsed page `page`: all of them, or in a
    /// walk toward rows those whose key range holds one of `rows`.
    fn add_children<'c>(
        &mut self,
        bytes: &[u8],
        page: u32,
        rows: std::ops::Range<usize>,
        cached: &mut impl FnMut(u32) -> Option<&'c [u8]>,
    ) {
        if self.rows.is_empty() {
            for child in children(bytes, page, self.page_bytes) {
                self.add(child, 0..0);
            }
            return;
        }
        // A table interior cell's key is the largest rowid under its left
        // child; the right-most child holds the rest. Keys out of order
        // (a damaged page) only send rows to the wrong child: SQLite then
        // reads what the walk did not fetch.
        let mut from = rows.start;
        for (child, key) in keyed_children(bytes, page, self.page_bytes) {
            let end = match key {
                Some(key) => from + self.rows[from..rows.end].partition_point(|&r| r <= key),
                None => rows.end,
            };
            if end > from {
                let costs = !(self.only_fetched && cached(child).is_some());
                self.add_costing(child, from..end, costs);
            }
            from = end;
        }
    }

    /// One step: parses every frontier page `cached` returns, queueing
    /// the children of interior pages, until what is left cannot be parsed
    /// without fetching. Returns the pages to fetch, as runs of adjacent
    /// pages in file order; empty when the walk is done.
    pub fn step<'c>(&mut self, mut cached: impl FnMut(u32) -> Option<&'c [u8]>) -> Vec<PageRun> {
        loop {
            let mut missing = Vec::new();
            let mut progressed = false;
            // Children are queued into the (emptied) frontier as pages parse.
            for (page, rows) in std::mem::take(&mut self.frontier) {
                match cached(page) {
                    Some(bytes) => {
                        progressed = true;
                        self.parsed += 1;
                        self.parsed_pages.push(page);
                        self.add_children(bytes, page, rows, &mut cached);
                    }
                    None => missing.push((page, rows)),
                }
            }
            self.frontier.extend(missing);
            // Children just queued may be cached already (read ahead, or
            // another tree's pages): parse them before asking for anything.
            // Each page parses once, so this ends.
            if !progressed {
                break;
            }
        }
        let pages: Vec<u32> = self.frontier.iter().map(|(page, _)| *page).collect();
        runs(&pages)
    }
}

/// An interior b-tree page taken apart: its type, each cell's left child
/// with the cell's bytes after it, and the right-most child.
struct Interior<'a> {
    kind: u8,
    cells: Vec<(u32, &'a [u8])>,
    right: u32,
}

/// `bytes` as an [`Interior`] page; `None` for a leaf or for bytes that
/// are not a b-tree page. `page` is 1-based: page 1 holds the 100-byte
/// file header before its b-tree header.
fn interior_cells(bytes: &[u8], page: u32, page_bytes: usize) -> Option<Interior<'_>> {
    let bytes = &bytes[..bytes.len().min(page_bytes)];
    let at = if page == 1 { 100 } else { 0 };
    let header = bytes.get(at..at + 12)?;
    if !matches!(header[0], INTERIOR_INDEX | INTERIOR_TABLE) {
        // Leaves (0x0a, 0x0d) have no children; anything
        // else is not a b-tree page and not ours to judge.
        return None;
    }
    let count = u16::from_be_bytes([header[3], header[4]]) as usize;
    let right = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
    let pointers = at + 12;
    let mut cells = Vec::with_capacity(count);
    for i in 0..count {
        let Some(p) = bytes.get(pointers + 2 * i..pointers + 2 * i + 2) else {
            break;
        };
        let cell = u16::from_be_bytes([p[0], p[1]]) as usize;
        // Every interior cell starts with its left child's page number.
        if let Some(c) = bytes.get(cell..cell + 4) {
            let child = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            cells.push((child, &bytes[cell + 4..]));
        }
    }
    Some(Interior {
        kind: header[0],
        cells,
        right,
    })
}

/// The child page numbers of an interior b-tree page (none for a leaf or
/// for bytes that are not a b-tree page).
fn children(bytes: &[u8], page: u32, page_bytes: usize) -> Vec<u32> {
    let Some(page) = interior_cells(bytes, page, page_bytes) else {
        return Vec::new();
    };
    let lefts = page.cells.iter().map(|(child, _)| *child);
    lefts.chain([page.right]).collect()
}

/// The children of a table interior page with each one's key (the largest
/// rowid under it; `None` for the right-most child, which has none). None
/// for any other page, and a cell whose key does not parse is skipped.
fn keyed_children(bytes: &[u8], page: u32, page_bytes: usize) -> Vec<(u32, Option<i64>)> {
    let page = interior_cells(bytes, page, page_bytes);
    let Some(page) = page.filter(|p| p.kind == INTERIOR_TABLE) else {
        return Vec::new();
    };
    // A table interior cell: the left child, then the key as a varint.
    let key = |rest: &[u8]| Some(super::encoding::varint(rest)?.0 as i64);
    let lefts = page
        .cells
        .iter()
        .filter_map(|(child, rest)| Some((*child, Some(key(rest)?))));
    lefts.chain([(page.right, None)]).collect()
}

/// `pages` as runs of adjacent page numbers, in file order.
fn runs(pages: &[u32]) -> Vec<PageRun> {
    let mut sorted = pages.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<PageRun> = Vec::new();
    for page in sorted {
        match out.last_mut() {
            Some(run) if run.first + run.pages == page => run.pages += 1,
            _ => out.push(PageRun {
                first: page,
                pages: 1,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::btree::LEAF_TABLE;
    use super::*;
    use std::collections::HashMap;

    const PAGE: usize = 512;

    /// An interior table page whose cells point at `kids` (the last as the
    /// right-most pointer).
    fn interior(kids: &[u32], first_page: bool) -> Vec<u8> {
        let mut page = vec![0u8; PAGE];
        let at = if first_page { 100 } else { 0 };
        let (cells, right) = kids.split_at(kids.len() - 1);
        page[at] = INTERIOR_TABLE;
        page[at + 3..at + 5].copy_from_slice(&(cells.len() as u16).to_be_bytes());
        page[at + 8..at + 12].copy_from_slice(&right[0].to_be_bytes());
        let mut content = PAGE;
        for (i, kid) in cells.iter().enumerate() {
            // A cell: left child, then a one-byte rowid varint.
            content -= 5;
            page[content..content + 4].copy_from_slice(&kid.to_be_bytes());
            page[content + 4] = i as u8;
            let ptr = at + 12 + 2 * i;
            page[ptr..ptr + 2].copy_from_slice(&(content as u16).to_be_bytes());
        }
        page
    }

    fn leaf() -> Vec<u8> {
        let mut page = vec![0u8; PAGE];
        page[0] = LEAF_TABLE;
        page
    }

    /// Runs the walk to its end against `pages`, fetching what it asks for;
    /// returns the rounds of fetches.
    fn walk_all(walk: &mut TreeWalk, pages: &HashMap<u32, Vec<u8>>) -> Vec<Vec<PageRun>> {
        let mut cache: HashMap<u32, Vec<u8>> = HashMap::new();
        let mut rounds = Vec::new();
        loop {
            let want = walk.step(|p| cache.get(&p).map(|v| v.as_slice()));
            if want.is_empty() {
                break;
            }
            for run in &want {
                for p in run.first..run.first + run.pages {
                    cache.insert(p, pages.get(&p).cloned().unwrap_or_else(|| vec![0; PAGE]));
                }
            }
            rounds.push(want);
            assert!(rounds.len() < 20, "the walk does not end");
        }
        rounds
    }

    #[test]
    fn a_tree_is_fetched_level_by_level_in_runs_of_adjacent_pages() {
        // Root 2 → interior 3 and 9 → leaves 4, 5, 6 and 10, 20.
        let mut pages = HashMap::new();
        pages.insert(2, interior(&[3, 9], false));
        pages.insert(3, interior(&[4, 5, 6], false));
        pages.insert(9, interior(&[10, 20], false));
        for p in [4, 5, 6, 10, 20] {
            pages.insert(p, leaf());
        }
        let mut walk = TreeWalk::new(&[2], PAGE, 100, 1000);
        let rounds = walk_all(&mut walk, &pages);
        let run = |first, pages| PageRun { first, pages };
        assert_eq!(
            rounds,
            vec![
                vec![run(2, 1)],
                vec![run(3, 1), run(9, 1)],
                vec![run(4, 3), run(10, 1), run(20, 1)]
            ]
        );
        assert_eq!(walk.parsed(), 8);
        assert!(walk.is_done());
    }

    #[test]
    fn page_one_is_read_past_the_file_header_and_cached_pages_cost_no_round() {
        let mut pages = HashMap::new();
        pages.insert(1, interior(&[7, 8], true));
        pages.insert(7, leaf());
        pages.insert(8, leaf());
        let mut walk = TreeWalk::new(&[1], PAGE, 10, 1000);
        let first = pages[&1].clone();
        // Page 1 cached already: the first step asks for the leaves at once.
        let want = walk.step(|p| (p == 1).then_some(first.as_slice()));
        assert_eq!(want, vec![PageRun { first: 7, pages: 2 }]);
    }

    #[test]
    fn the_budget_bounds_the_pages_and_bad_pointers_are_skipped() {
        let mut pages = HashMap::new();
        // Children past the file's end and page 0 are not fetched.
        pages.insert(2, interior(&[0, 3, 4, 5, 6, 7, 999], false));
        let mut walk = TreeWalk::new(&[2], PAGE, 50, 3);
        let rounds = walk_all(&mut walk, &pages);
        let fetched: u32 = rounds.iter().flatten().map(|r| r.pages).sum();
        assert_eq!(fetched, 3, "the root and two children, as the budget says");
    }

    /// A table interior page whose cells point at `kids` under keys
    /// `keys` (one fewer: the last kid is the right-most pointer).
    fn keyed(kids: &[u32], keys: &[u8]) -> Vec<u8> {
        let mut page = interior(kids, false);
        for (i, key) in keys.iter().enumerate() {
            let cell = u16::from_be_bytes([page[12 + 2 * i], page[13 + 2 * i]]) as usize;
            page[cell + 4] = *key;
        }
        page
    }

    /// Root 2: rowids <= 40 under 3, <= 80 under 9, the rest under 30.
    /// 3: <= 10 in leaf 4, <= 20 in 5, the rest in 6; 9: <= 60 in 10, the
    /// rest in 11; 30: <= 100 in 31, the rest in 32.
    fn three_level_tree() -> HashMap<u32, Vec<u8>> {
        let mut pages = HashMap::new();
        pages.insert(2, keyed(&[3, 9, 30], &[40, 80]));
        pages.insert(3, keyed(&[4, 5, 6], &[10, 20]));
        pages.insert(9, keyed(&[10, 11], &[60]));
        pages.insert(30, keyed(&[31, 32], &[100]));
        for p in [4, 5, 6, 10, 11, 31, 32] {
            pages.insert(p, leaf());
        }
        pages
    }

    #[test]
    fn a_walk_toward_rows_fetches_only_the_leaves_that_hold_them() {
        let mut pages = three_level_tree();
        let run = |first, pages| PageRun { first, pages };
        // Rows at the keys' edges, out of order and repeated.
        let rows = vec![127, 20, 11, 10, 20, 41];
        let mut walk = TreeWalk::toward_rows(2, rows, PAGE, 100, 1000);
        assert_eq!(
            walk_all(&mut walk, &pages),
            vec![
                vec![run(2, 1)],
                vec![run(3, 1), run(9, 1), run(30, 1)],
                vec![run(4, 2), run(10, 1), run(32, 1)]
            ]
        );
        // A row past every key goes right at each level; no rows, no walk.
        let mut walk = TreeWalk::toward_rows(2, vec![i64::MAX], PAGE, 100, 1000);
        let rounds = walk_all(&mut walk, &pages);
        assert_eq!(rounds.last(), Some(&vec![run(32, 1)]));
        let mut walk = TreeWalk::toward_rows(2, Vec::new(), PAGE, 100, 1000);
        assert!(walk_all(&mut walk, &pages).is_empty());
        // Garbage where an interior page should be: the walk stops there.
        let mut junk = vec![0xffu8; PAGE];
        junk[0] = INTERIOR_TABLE;
        pages.insert(2, junk);
        let mut walk = TreeWalk::toward_rows(2, vec![5, 50], PAGE, 100, 1000);
        walk_all(&mut walk, &pages);
        assert!(walk.is_done());
    }

    #[test]
    fn a_walk_toward_rows_spends_its_budget_on_what_it_fetches_alone() {
        let pages = three_level_tree();
        // The interior pages are cached; rows in leaves 4, 5, 10 and 32.
        let mut cache: HashMap<u32, Vec<u8>> = [2, 3, 9, 30]
            .into_iter()
            .map(|p| (p, pages[&p].clone()))
            .collect();
        let rows = vec![5, 15, 41, 127];
        let mut fetched = Vec::new();
        // A fresh walk each round, as the footer plan makes: two pages a
        // round, and the pages of earlier rounds cost nothing.
        for _ in 0..3 {
            let mut walk = TreeWalk::toward_rows(2, rows.clone(), PAGE, 100, 2);
            let want = walk.step(|p| cache.get(&p).map(|v| v.as_slice()));
            let got: Vec<u32> = want
                .iter()
                .flat_map(|r| r.first..r.first + r.pages)
                .collect();
            assert!(got.len() <= 2, "{got:?}");
            for p in &got {
                cache.insert(*p, pages[p].clone());
            }
            fetched.extend(got);
        }
        fetched.sort_unstable();
        assert_eq!(fetched, [4, 5, 10, 32]);
    }

    #[test]
    fn garbage_and_cycles_end_the_walk() {
        let mut pages = HashMap::new();
        // A cycle: 2 → 3 → 2.
        pages.insert(2, interior(&[3], false));
        pages.insert(3, interior(&[2], false));
        // Random bytes with an interior type and a huge cell count.
        let mut junk = vec![0xffu8; PAGE];
        junk[0] = INTERIOR_TABLE;
        pages.insert(4, junk);
        let mut walk = TreeWalk::new(&[2, 4], PAGE, 10, 1000);
        walk_all(&mut walk, &pages);
        assert!(walk.is_done());
    }
}

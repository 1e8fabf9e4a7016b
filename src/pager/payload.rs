//! Where one segment's payload lies in a file read in place, found and
//! proven outside SQLite, so that its bytes can be read by range: a footer
//! as the last page or two of the payload's chain instead of a walk along
//! it, a whole payload as one read instead of a page at a time through two
//! caches.
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
//!
//! Every byte here is untrusted. A page that does not parse, a count out
//! of bounds, keys out of order, a pointer that disagrees: the answer is
//! "not here" (`None`, `false`) and the caller reads through SQLite, which
//! reports a damaged file in its own words. Only a failing source is an
//! error.

use std::rc::Rc;

use super::{ByteSource, LazyFile, SourceFailure};

/// Byte offset of SQLite's lock-byte ("pending byte") page, never used.
const PENDING_BYTE: u64 = 0x4000_0000;
/// Table b-tree page types (first byte of the page header).
const INTERIOR_TABLE: u8 = 0x05;
const LEAF_TABLE: u8 = 0x0d;
/// Pointer-map entry type of an overflow page after a chain's first.
const PTRMAP_OVERFLOW2: u8 = 4;
/// Deeper than any b-tree a file of 2^31 pages can hold: a cycle ends here.
const MAX_DEPTH: usize = 40;
/// Reads up to this size go through the block cache (a footer, the head);
/// larger ones (a whole payload) straight from the source, in chunks of
/// at most [`DIRECT_CHUNK`], without pushing the cache's blocks out.
const CACHED_READ: u64 = 64 << 10;
/// The largest single source read of a direct payload read.
const DIRECT_CHUNK: u64 = 8 << 20;

/// The file's page layout, from its 100-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Page size in bytes (512 to 65536, a power of two).
    pub page_bytes: u32,
    /// Bytes of a page in use (page size less the reserved tail).
    pub usable: u32,
    /// Pages the file holds (the header's count when valid, never past the file).
    pub pages: u32,
    /// Whether the file has pointer-map pages (auto-vacuum).
    pub ptrmap: bool,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// SQLite's variable-length integer (1 to 9 bytes, big-endian) at the
/// start of `b`, and its length.
pub(crate) fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for i in 0..8 {
        let byte = *b.get(i)?;
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte < 0x80 {
            return Some((value, i + 1));
        }
    }
    Some(((value << 8) | u64::from(*b.get(8)?), 9))
}

impl Geometry {
    /// The layout of a file of `file_len` bytes whose header is `head`;
    /// `None` for a header this reader does not take apart.
    pub fn from_header(head: &[u8], file_len: u64) -> Option<Geometry> {
        let h = head.get(..100)?;
        if &h[..16] != b"SQLite format 3\0" {
            return None;
        }
        let page_bytes = match be16(h, 16)? {
            1 => 65536,
            n => u32::from(n),
        };
        if !(512..=65536).contains(&page_bytes) || !page_bytes.is_power_of_two() {
            return None;
        }
        let usable = page_bytes - u32::from(h[20]);
        if usable < 480 {
            return None;
        }
        // As SQLite's pager counts them: a partial last page is a page.
        let in_file = u32::try_from(file_len.div_ceil(u64::from(page_bytes))).unwrap_or(u32::MAX);
        let declared = be32(h, 28)?;
        // The header's page count holds only when the change counter and
        // the "version valid for" number agree (format §1.3.7).
        let pages = if declared != 0 && h[24..28] == h[92..96] {
            declared.min(in_file)
        } else {
            in_file
        };
        Some(Geometry {
            page_bytes,
            usable,
            pages,
            ptrmap: be32(h, 52)? != 0,
        })
    }

    fn pending_page(&self) -> u32 {
        (PENDING_BYTE / u64::from(self.page_bytes)) as u32 + 1
    }

    /// The pointer-map page holding `page`'s entry (`page` >= 3), as
    /// SQLite places them: page 2, then every `usable / 5 + 1` pages, one
    /// further on where that would be the lock-byte page.
    fn ptrmap_of(&self, page: u32) -> u32 {
        let per = self.usable / 5 + 1;
        let at = (page - 2) / per * per + 2;
        if at == self.pending_page() {
            at + 1
        } else {
            at
        }
    }

    /// Whether `page` can be an overflow page at all: in the file, and
    /// neither page 1, a pointer-map page nor the lock-byte page.
    fn can_chain(&self, page: u32) -> bool {
        page >= 2 && page <= self.pages && !self.is_ptrmap(page) && page != self.pending_page()
    }

    fn is_ptrmap(&self, page: u32) -> bool {
        self.ptrmap && page >= 2 && self.ptrmap_of(page) == page
    }

    /// The page SQLite guesses follows `page` in a contiguous chain: the
    /// next one that is neither a pointer-map page nor the lock-byte page.
    fn next_after(&self, page: u32) -> Option<u32> {
        let mut next = page.checked_add(1)?;
        while self.is_ptrmap(next) || next == self.pending_page() {
            next = next.checked_add(1)?;
        }
        Some(next)
    }

    /// Byte offset of `page` (1-based).
    pub fn offset(&self, page: u32) -> u64 {
        u64::from(page - 1) * u64::from(self.page_bytes)
    }

    /// How much of a table leaf cell's payload of `payload` bytes stays in
    /// the cell (format §1.6).
    fn local_bytes(&self, payload: u64) -> u64 {
        let u = u64::from(self.usable);
        let max_local = u - 35;
        if payload <= max_local {
            return payload;
        }
        let min_local = (u - 12) * 32 / 255 - 23;
        let surplus = min_local + (payload - min_local) % (u - 4);
        if surplus <= max_local {
            surplus
        } else {
            min_local
        }
    }
}

/// Which table and column hold the payloads (the `segments` table's root
/// page and the position of `bytes` in its records).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadTable {
    /// Root page of the table's b-tree.
    pub root: u32,
    /// The column's index in each record.
    pub column: usize,
}

/// Runs of physically adjacent pages, in chain order: `(first page, count)`.
type Runs = Vec<(u32, u32)>;

/// One payload column's place in the file.
#[derive(Debug, Clone)]
pub struct PayloadMap {
    geometry: Geometry,
    /// The payload's bytes kept in its cell.
    local: Vec<u8>,
    /// The chain's pages as far as they are known or guessed: where a
    /// page's successor is not known, the guess is SQLite's, the next page
    /// that is neither a pointer-map page nor the lock-byte page. It may
    /// stop short of [`PayloadMap::pages`] at the file's end.
    chain: Runs,
    /// How many pages the chain has (from the payload's size).
    pages: u32,
    /// Chain pages `0..=proven` are known to be the chain's (page 0 from
    /// the cell; the others by their pointer-map entries or the next
    /// pointer of the page before, read).
    proven: u32,
    /// Where the column starts in the payload, and its length.
    column: u64,
    len: u64,
}

impl PayloadMap {
    /// The column's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the column is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Replaces the chain from page `index` on (never a proven one) by
    /// SQLite's guess from `next`, the page a read of the page before
    /// names. `false` when `next` cannot be a chain page.
    fn rechain(&mut self, index: u32, next: u32) -> bool {
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
        self.chain = runs;
        true
    }

    /// The runs of the chain's first `count` pages, if it has them.
    fn first_pages(&self, count: u32) -> Option<Runs> {
        let mut kept = 0;
        let mut runs = Runs::new();
        for &(first, n) in &self.chain {
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
    fn page_at(&self, mut index: u32) -> Option<u32> {
        for &(first, count) in &self.chain {
            if index < count {
                return Some(first + index);
            }
            index -= count;
        }
        None
    }
}

/// Finds where `rowid`'s value of `table.column` lies, expecting a BLOB of
/// `len` bytes that starts with `head` (both as SQLite read them). `None`
/// when anything does not parse or does not agree.
pub fn locate<S: ByteSource>(
    file: &mut LazyFile<S>,
    table: PayloadTable,
    rowid: i64,
    len: u64,
    head: &[u8],
) -> Result<Option<PayloadMap>, SourceFailure> {
    let mut first = vec![0u8; 100];
    if file.read(&mut first, 0)? < 100 {
        return Ok(None);
    }
    let Some(geometry) = Geometry::from_header(&first, file.len()) else {
        return Ok(None);
    };
    let Some((page, cell)) = find_row(file, &geometry, table.root, rowid)? else {
        return Ok(None);
    };
    Ok(map_cell(&geometry, &page, cell, table.column, len, head))
}

/// Page `number` whole, through the block cache; `None` past the file.
fn page<S: ByteSource>(
    file: &mut LazyFile<S>,
    g: &Geometry,
    number: u32,
) -> Result<Option<Vec<u8>>, SourceFailure> {
    if number == 0 || number > g.pages {
        return Ok(None);
    }
    let mut bytes = vec![0u8; g.page_bytes as usize];
    let n = file.read(&mut bytes, g.offset(number))?;
    Ok((n == bytes.len()).then_some(bytes))
}

/// The key of each cell of a table b-tree page, in cell order, with the
/// cell's offset; `None` when a pointer or key does not parse or the keys
/// do not ascend strictly (then no search could be trusted to find what
/// SQLite's finds).
fn keys(bytes: &[u8], header: usize, interior: bool, usable: usize) -> Option<Vec<(i64, usize)>> {
    let cells = usize::from(be16(bytes, header + 3)?);
    let pointers = header + if interior { 12 } else { 8 };
    let mut out: Vec<(i64, usize)> = Vec::with_capacity(cells);
    for i in 0..cells {
        let cell = usize::from(be16(bytes, pointers + 2 * i)?);
        if cell < pointers + 2 * cells || cell >= usable {
            return None;
        }
        let body = bytes.get(cell..usable)?;
        let key = if interior {
            varint(body.get(4..)?)?.0
        } else {
            let (_, n) = varint(body)?;
            varint(body.get(n..)?)?.0
        } as i64;
        if out.last().is_some_and(|&(last, _)| last >= key) {
            return None;
        }
        out.push((key, cell));
    }
    Some(out)
}

/// The leaf page holding `rowid` in the table b-tree at `root`, and its
/// cell's offset. Keys are checked to ascend in every page on the way, so
/// the descent is the only one any search can make.
fn find_row<S: ByteSource>(
    file: &mut LazyFile<S>,
    g: &Geometry,
    root: u32,
    rowid: i64,
) -> Result<Option<(Vec<u8>, usize)>, SourceFailure> {
    let usable = g.usable as usize;
    let mut number = root;
    for _ in 0..MAX_DEPTH {
        let Some(bytes) = page(file, g, number)? else {
            return Ok(None);
        };
        let header = if number == 1 { 100 } else { 0 };
        match bytes[header] {
            INTERIOR_TABLE => {
                let Some(cells) = keys(&bytes, header, true, usable) else {
                    return Ok(None);
                };
                // The first cell whose key is at least `rowid` leads to it;
                // past every key, the right-most pointer does.
                let at = cells.partition_point(|&(key, _)| key < rowid);
                let child = match cells.get(at) {
                    Some(&(_, cell)) => be32(&bytes, cell),
                    None => be32(&bytes, header + 8),
                };
                match child {
                    Some(child) => number = child,
                    None => return Ok(None),
                }
            }
            LEAF_TABLE => {
                let Some(cells) = keys(&bytes, header, false, usable) else {
                    return Ok(None);
                };
                return Ok(cells
                    .binary_search_by_key(&rowid, |&(key, _)| key)
                    .ok()
                    .map(|i| (bytes, cells[i].1)));
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// Bytes a record value of serial type `t` takes (format §2.1); `None` for
/// the reserved types.
fn serial_bytes(t: u64) -> Option<u64> {
    Some(match t {
        0 | 8 | 9 => 0,
        1..=4 => t,
        5 => 6,
        6 | 7 => 8,
        10 | 11 => return None,
        t => (t - 12) / 2,
    })
}

/// The map of the cell at `cell` of leaf `page`, for its column `column`.
fn map_cell(
    g: &Geometry,
    page: &[u8],
    cell: usize,
    column: usize,
    len: u64,
    head: &[u8],
) -> Option<PayloadMap> {
    let usable = g.usable as usize;
    let body = page.get(cell..usable)?;
    let (payload, a) = varint(body)?;
    let (_, b) = varint(body.get(a..)?)?;
    // No payload is larger than the file that holds it.
    if payload > u64::from(g.pages) * u64::from(g.usable) {
        return None;
    }
    let local_len = g.local_bytes(payload) as usize;
    let local = body.get(a + b..a + b + local_len)?.to_vec();
    let mut chain = Runs::new();
    let mut pages = 0;
    if payload > local_len as u64 {
        let first = be32(body, a + b + local_len)?;
        let count = (payload - local_len as u64).div_ceil(u64::from(g.usable - 4));
        chain = guessed_chain(g, first, count)?;
        pages = u32::try_from(count).ok()?;
    }
    // The record header, in the cell: its length, then each value's type.
    let (header_len, mut at) = varint(&local)?;
    let header_len = usize::try_from(header_len).ok()?;
    let types = local.get(..header_len)?;
    let mut offset = header_len as u64;
    let mut found = None;
    for index in 0..=column {
        let (t, n) = varint(types.get(at..)?)?;
        at += n;
        let size = serial_bytes(t)?;
        if index == column {
            // A BLOB (even type from 12) of the length SQLite reported.
            found = (t >= 12 && t % 2 == 0 && size == len).then_some(offset);
        }
        offset = offset.checked_add(size)?;
    }
    let column_at = found?;
    if column_at.checked_add(len)? > payload {
        return None;
    }
    let map = PayloadMap {
        geometry: *g,
        local,
        chain,
        pages,
        proven: 0,
        column: column_at,
        len,
    };
    // The head SQLite read must be the head this map finds.
    let local_head = map.local.get(column_at as usize..).unwrap_or(&[]);
    let shared = head.len().min(local_head.len());
    (head[..shared] == local_head[..shared]).then_some(map)
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
struct Successors {
    /// The pointer-map pages this look ahead has consulted.
    by_map: std::collections::HashMap<u32, Rc<Turned>>,
    /// Look only in pointer-map pages already held, fetching none.
    held_only: bool,
}

impl Successors {
    /// The page whose pointer-map entry says "overflow page after
    /// `page`", looked for in `page`'s own pointer-map page and the next
    /// one (where nearly every chain continues: SQLite hands out free
    /// pages near the one before), then in every pointer-map page held.
    /// `None` when none says.
    fn after<S: ByteSource>(
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
/// takes each page on the map's word again, and [`read`] checks the
/// pointer of every page it reads, so where a page read disagrees with
/// the map the chain follows the page.
fn foresee<S: ByteSource>(
    file: &mut LazyFile<S>,
    map: &mut PayloadMap,
    successors: &mut Successors,
    upto: u32,
) -> Result<(), SourceFailure> {
    let g = map.geometry;
    let upto = upto.min(map.pages.saturating_sub(1));
    if !g.ptrmap || upto <= map.proven {
        return Ok(());
    }
    let Some(mut runs) = map.first_pages(map.proven + 1) else {
        return Ok(());
    };
    let Some(mut at) = map.page_at(map.proven) else {
        return Ok(());
    };
    let mut index = map.proven + 1;
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
    if index < map.pages {
        // Past what the map told, SQLite's guess from the last page told.
        if let Some(rest) = g
            .next_after(at)
            .and_then(|first| guessed_chain(&g, first, u64::from(map.pages - index)))
        {
            runs.extend(rest);
        }
    }
    map.chain = runs;
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
fn prove<S: ByteSource>(
    file: &mut LazyFile<S>,
    map: &mut PayloadMap,
    upto: u32,
) -> Result<bool, SourceFailure> {
    if upto <= map.proven {
        return Ok(true);
    }
    if upto >= map.pages {
        return Ok(false);
    }
    let g = map.geometry;
    // The chain is foreseen from the map at the first break, not before:
    // a chain in one run (most) needs no look ahead, and its pages are
    // each taken on the guess's entry.
    let mut successors = Successors::default();
    let mut held: Option<(u32, Vec<u8>)> = None;
    for index in map.proven + 1..=upto {
        let Some(parent) = map.page_at(index - 1) else {
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
        if map.page_at(index) != Some(next) {
            // Not where the map foresaw: look ahead again from here.
            if !map.rechain(index, next) {
                return Ok(false);
            }
            map.proven = index;
            foresee(file, map, &mut successors, upto)?;
        }
        map.proven = index;
    }
    Ok(true)
}

/// Notes, for a plan, the runs of physical pages chain pages
/// `first..=last` take as foreseen, where the cache lacks any of them.
fn plan_runs<S: ByteSource>(file: &mut LazyFile<S>, map: &PayloadMap, first: u32, last: u32) {
    let g = map.geometry;
    let chunk_pages = (DIRECT_CHUNK / u64::from(g.page_bytes)).max(1) as u32;
    let mut index = first;
    while index <= last {
        let Some(page_no) = map.page_at(index) else {
            return;
        };
        let n = stretch(map, index, last, chunk_pages);
        let (offset, len) = (g.offset(page_no), u64::from(n) * u64::from(g.page_bytes));
        if !file.holds(offset, len) {
            let _ = file.read_ahead(offset, len);
        }
        // The chain pages that run covers.
        let end = page_no + n - 1;
        while index <= last && map.page_at(index).is_some_and(|p| p >= page_no && p <= end) {
            index += 1;
        }
    }
}

/// How many physical pages from chain page `index`'s one a single read
/// should take to cover chain pages `index..=last`, as far as they lie
/// in ascending order with at most [`GAP_PAGES`] between two (the pages
/// a chain skips, or free pages it jumped over), and at most `cap`.
fn stretch(map: &PayloadMap, index: u32, last: u32, cap: u32) -> u32 {
    let Some(start) = map.page_at(index) else {
        return 1;
    };
    let mut end = start;
    for i in index + 1..=last {
        match map.page_at(i) {
            Some(p) if p > end && p - end <= GAP_PAGES && p - start < cap => end = p,
            _ => break,
        }
    }
    end - start + 1
}

/// Fills `buf` with the column's bytes from `offset`, reading the pages
/// that hold them by range and following each page's next pointer, as a
/// walk through SQLite would. `false` (nothing trusted) when the range is
/// past the column, a skip to it cannot be proven, or the pointers
/// disagree with what is proven: read through SQLite instead.
pub fn read<S: ByteSource>(
    file: &mut LazyFile<S>,
    map: &mut PayloadMap,
    offset: u64,
    buf: &mut [u8],
) -> Result<bool, SourceFailure> {
    let Some(end) = offset.checked_add(buf.len() as u64) else {
        return Ok(false);
    };
    if end > map.len {
        return Ok(false);
    }
    if buf.is_empty() {
        return Ok(true);
    }
    let (start, end) = (map.column + offset, map.column + end);
    let local = map.local.len() as u64;
    let mut done = 0usize;
    if start < local {
        let upto = end.min(local);
        let piece = &map.local[start as usize..upto as usize];
        buf[..piece.len()].copy_from_slice(piece);
        done = piece.len();
    }
    if end <= local {
        return Ok(true);
    }
    let body = u64::from(map.geometry.usable - 4);
    let from = start.max(local) - local;
    let to = end - local;
    let (first, last) = ((from / body) as u32, ((to - 1) / body) as u32);
    if last >= map.pages {
        return Ok(false);
    }
    // Pages skipped to reach `first` are found as SQLite's skip finds them;
    // the ones read are planned from the pointer map where it says more
    // than the guess.
    if first > 0 && !prove(file, map, first)? {
        return Ok(false);
    }
    // The look ahead starts from the pointer-map pages already held: most
    // chains are one run, SQLite's guess is right for them, and fetching
    // the map's pages would cost a read each for nothing (a whole payload
    // read in place took 2.4 reads where 1 will do). Once a page's pointer
    // shows a break, it reads the map as it needs. A plan looks as far as
    // it can.
    let mut successors = Successors {
        held_only: !file.planning(),
        ..Successors::default()
    };
    foresee(file, map, &mut successors, last)?;
    let g = map.geometry;
    if file.planning() {
        // A plan notes every run of the pages foreseen at once rather
        // than one a round; the real read checks each page's pointer.
        plan_runs(file, map, first, last);
        return Ok(false);
    }
    let page_bytes = g.page_bytes as usize;
    let small = u64::from(last - first + 1) * u64::from(g.page_bytes) <= CACHED_READ;
    let chunk_pages = (DIRECT_CHUNK / u64::from(g.page_bytes)).max(1) as u32;
    let mut raw = Vec::new();
    // The physical pages `raw` holds: the first and how many.
    let mut held = (0u32, 0u32);
    for index in first..=last {
        let Some(page_no) = map.page_at(index) else {
            return Ok(false);
        };
        if page_no < held.0 || page_no - held.0 >= held.1 {
            // One read spans the pages a chain skips (a pointer-map page
            // every few MiB) rather than stopping at them.
            let n = stretch(map, index, last, chunk_pages);
            raw.resize(n as usize * page_bytes, 0);
            let offset = g.offset(page_no);
            // A large run a prefetch already brought in (a footer fetched
            // ahead) is read from the cache, not fetched again.
            if small || file.holds(offset, raw.len() as u64) {
                if file.read(&mut raw, offset)? < raw.len() {
                    return Ok(false);
                }
            } else if !file.read_direct(offset, &mut raw)? {
                return Ok(false);
            }
            held = (page_no, n);
        }
        let at = (page_no - held.0) as usize * page_bytes;
        let page = &raw[at..at + page_bytes];
        // Each page names the next; where that is not the guess, the
        // chain continues where the page says (never against a proven one).
        let pointer = be32(page, 0);
        let expected = if index + 1 == map.pages {
            Some(0)
        } else {
            map.page_at(index + 1)
        };
        if pointer != expected {
            match pointer {
                Some(next) if index + 1 < map.pages && map.rechain(index + 1, next) => {
                    // The page is named by the one read before it.
                    map.proven = index + 1;
                    successors.held_only = false;
                    foresee(file, map, &mut successors, last)?;
                }
                _ => return Ok(false),
            }
        }
        let page_start = u64::from(index) * body;
        let lo = from.max(page_start) - page_start;
        let hi = to.min(page_start + body) - page_start;
        let piece = &page[4 + lo as usize..4 + hi as usize];
        buf[done..done + piece.len()].copy_from_slice(piece);
        done += piece.len();
    }
    // Every page read was named by the one before it.
    map.proven = map.proven.max(last);
    Ok(done == buf.len())
}

/// The byte ranges (`offset`, `length`) of the pages a read of the last
/// `tail` bytes of the column would take, and of the pointer-map pages
/// that prove them, for a caller that fetches many at once before the
/// reads; empty when the map has no chain.
pub fn tail_ranges(map: &PayloadMap, tail: u64) -> Vec<(u64, u64)> {
    let pages = map.pages;
    let local = map.local.len() as u64;
    let end = map.column + map.len;
    if pages == 0 || end <= local {
        return Vec::new();
    }
    let g = map.geometry;
    let body = u64::from(g.usable - 4);
    let start = end.saturating_sub(tail).max(local);
    let first = ((start - local) / body) as u32;
    let mut out = Vec::new();
    if first > 0 && !g.ptrmap {
        // Nothing would prove the skip: the read goes through SQLite.
        return out;
    }
    if first > 0 {
        let mut last_map = 0;
        for index in map.proven + 1..=first {
            if let Some(p) = map.page_at(index) {
                let m = g.ptrmap_of(p);
                if m != last_map {
                    out.push((g.offset(m), u64::from(g.page_bytes)));
                    last_map = m;
                }
            }
        }
    }
    if let (Some(a), Some(b)) = (map.page_at(first), map.page_at(pages - 1)) {
        out.push((g.offset(a), u64::from(b - a + 1) * u64::from(g.page_bytes)));
    }
    out
}

/// What a read of the column's last `tail` bytes would fetch that the
/// cache does not hold, found by running that very read on the cache
/// alone ([`LazyFile::plan_misses`]): the reads ahead it would make and
/// the first range it would wait for, and with them SQLite's guess
/// ([`tail_ranges`]: right at once for a chain in one run, so a copied or
/// compacted archive's footers come in one round, one request over HTTP)
/// and every pointer-map page of the file, when it has few enough (the
/// next round's read then foresees any other chain whole, however it is
/// broken up, and names exactly its tail's pages). Empty once the read
/// would fetch nothing.
pub fn tail_plan<S: ByteSource>(
    file: &mut LazyFile<S>,
    map: &PayloadMap,
    tail: u64,
) -> Vec<(u64, u64)> {
    let tail = tail.min(map.len);
    if tail == 0 {
        return Vec::new();
    }
    let mut scratch = map.clone();
    let mut buf = vec![0u8; tail as usize];
    let (_, mut missed) = file.plan_misses(|f| read(f, &mut scratch, map.len - tail, &mut buf));
    if missed.is_empty() {
        return missed;
    }
    let g = map.geometry;
    missed.extend(tail_ranges(map, tail));
    let maps = every_ptrmap(&g).unwrap_or_default();
    missed.extend(
        maps.into_iter()
            .map(|p| (g.offset(p), u64::from(g.page_bytes))),
    );
    missed
}

/// The most pointer-map pages a plan asks for all at once: one per about
/// 3 MiB of a file of 4 KiB pages, so about 800 MiB of file.
const PLAN_EVERY_MAP: u32 = 256;

/// Every pointer-map page of the file, when it has some and not more than
/// [`PLAN_EVERY_MAP`].
fn every_ptrmap(g: &Geometry) -> Option<Vec<u32>> {
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

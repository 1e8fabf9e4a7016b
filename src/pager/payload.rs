//! Where one segment's payload lies in a file read in place, found and
//! proven outside SQLite, so that its bytes can be read by range: a footer
//! as the last page or two of the payload's chain instead of a walk along
//! it, a whole payload as one read instead of a page at a time through two
//! caches.
//!
//! Every byte here is untrusted. A page that does not parse, a count out
//! of bounds, keys out of order, a pointer that disagrees: the answer is
//! "not here" (`None`, `false`) and the caller reads through SQLite, which
//! reports a damaged file in its own words. Only a failing source is an
//! error.

use super::btree::find_row;
use super::chain::{self, Chain, Successors};
use super::encoding::{be32, serial_bytes, varint};
use super::{ByteSource, Geometry, LazyFile, SourceFailure};

/// Reads up to this size go through the block cache (a footer, the head);
/// larger ones (a whole payload) straight from the source, in chunks of
/// at most [`DIRECT_CHUNK`], without pushing the cache's blocks out.
const CACHED_READ: u64 = 64 << 10;
/// The largest single source read of a direct payload read.
const DIRECT_CHUNK: u64 = 8 << 20;

/// Which table and column hold the payloads (the `segments` table's root
/// page and the position of `bytes` in its records).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadTable {
    /// Root page of the table's b-tree.
    pub root: u32,
    /// The column's index in each record.
    pub column: usize,
}

/// One payload column's place in the file: the bytes its cell keeps and
/// the overflow chain holding the rest.
#[derive(Debug, Clone)]
pub struct PayloadMap {
    /// The payload's bytes kept in its cell.
    local: Vec<u8>,
    /// The pages past the cell.
    chain: Chain,
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
    let mut chain = Chain::none(*g);
    if payload > local_len as u64 {
        let first = be32(body, a + b + local_len)?;
        let count = (payload - local_len as u64).div_ceil(u64::from(g.usable - 4));
        chain = Chain::guessed(*g, first, count)?;
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
        local,
        chain,
        column: column_at,
        len,
    };
    // The head SQLite read must be the head this map finds.
    let local_head = map.local.get(column_at as usize..).unwrap_or(&[]);
    let shared = head.len().min(local_head.len());
    (head[..shared] == local_head[..shared]).then_some(map)
}

/// Notes, for a plan, the runs of physical pages chain pages
/// `first..=last` take as foreseen, where the cache lacks any of them.
fn plan_runs<S: ByteSource>(file: &mut LazyFile<S>, map: &PayloadMap, first: u32, last: u32) {
    let g = map.chain.geometry();
    let chunk_pages = (DIRECT_CHUNK / u64::from(g.page_bytes)).max(1) as u32;
    let mut index = first;
    while index <= last {
        let Some(page_no) = map.chain.page_at(index) else {
            return;
        };
        let n = map.chain.stretch(index, last, chunk_pages);
        let (offset, len) = (g.offset(page_no), u64::from(n) * u64::from(g.page_bytes));
        if !file.holds(offset, len) {
            let _ = file.read_ahead(offset, len);
        }
        // The chain pages that run covers.
        let end = page_no + n - 1;
        while index <= last
            && map
                .chain
                .page_at(index)
                .is_some_and(|p| p >= page_no && p <= end)
        {
            index += 1;
        }
    }
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
    let body = u64::from(map.chain.geometry().usable - 4);
    let from = start.max(local) - local;
    let to = end - local;
    let (first, last) = ((from / body) as u32, ((to - 1) / body) as u32);
    if last >= map.chain.pages() {
        return Ok(false);
    }
    // Pages skipped to reach `first` are found as SQLite's skip finds them;
    // the ones read are planned from the pointer map where it says more
    // than the guess.
    if first > 0 && !chain::prove(file, &mut map.chain, first)? {
        return Ok(false);
    }
    // The look ahead starts from the pointer-map pages already held: most
    // chains are one run, SQLite's guess is right for them, and fetching
    // the map's pages would cost a read each for nothing (a whole payload
    // read in place took 2.4 reads where 1 will do). Once a page's pointer
    // shows a break, it reads the map as it needs. A plan looks as far as
    // it can.
    let mut successors = Successors::new(!file.planning());
    chain::foresee(file, &mut map.chain, &mut successors, last)?;
    let g = map.chain.geometry();
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
        let Some(page_no) = map.chain.page_at(index) else {
            return Ok(false);
        };
        if page_no < held.0 || page_no - held.0 >= held.1 {
            // One read spans the pages a chain skips (a pointer-map page
            // every few MiB) rather than stopping at them.
            let n = map.chain.stretch(index, last, chunk_pages);
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
        let expected = if index + 1 == map.chain.pages() {
            Some(0)
        } else {
            map.chain.page_at(index + 1)
        };
        if pointer != expected {
            match pointer {
                Some(next)
                    if index + 1 < map.chain.pages() && map.chain.rechain(index + 1, next) =>
                {
                    // The page is named by the one read before it.
                    map.chain.mark_proven(index + 1);
                    successors.fetch_as_needed();
                    chain::foresee(file, &mut map.chain, &mut successors, last)?;
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
    map.chain.mark_proven(last);
    Ok(done == buf.len())
}

/// The byte ranges (`offset`, `length`) of the pages a read of the last
/// `tail` bytes of the column would take, and of the pointer-map pages
/// that prove them, for a caller that fetches many at once before the
/// reads; empty when the map has no chain.
pub fn tail_ranges(map: &PayloadMap, tail: u64) -> Vec<(u64, u64)> {
    let pages = map.chain.pages();
    let local = map.local.len() as u64;
    let end = map.column + map.len;
    if pages == 0 || end <= local {
        return Vec::new();
    }
    let g = map.chain.geometry();
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
        for index in map.chain.proven() + 1..=first {
            if let Some(p) = map.chain.page_at(index) {
                let m = g.ptrmap_of(p);
                if m != last_map {
                    out.push((g.offset(m), u64::from(g.page_bytes)));
                    last_map = m;
                }
            }
        }
    }
    if let (Some(a), Some(b)) = (map.chain.page_at(first), map.chain.page_at(pages - 1)) {
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
    let g = map.chain.geometry();
    missed.extend(tail_ranges(map, tail));
    let maps = chain::every_ptrmap(&g).unwrap_or_default();
    missed.extend(
        maps.into_iter()
            .map(|p| (g.offset(p), u64::from(g.page_bytes))),
    );
    missed
}

#[cfg(test)]
mod tests;

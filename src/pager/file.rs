//! An archive read in place, a range at a time, instead of copied whole
//! into memory: the browser's way to open a file larger than its memory
//! (a dropped `File`, a URL answered with HTTP ranges). SQLite sees a
//! read-only file through a VFS (`src/wasm/vfs.rs`, wasm32 only); every
//! read it makes lands here, in [`LazyFile`], which serves it from a
//! bounded cache of blocks and fetches misses from a [`ByteSource`] with
//! read-ahead that grows along sequential walks.
//!
//! Everything here is plain Rust over a trait, so it is tested natively
//! with a mock source that claims more than wasm32 could address.
//! Offsets are `u64` throughout: only what is cached must fit in memory.

use super::cache::BlockCache;
use super::chain::TurnedMaps;
use super::heads::ReadHeads;
use super::payload::{self, PayloadTable};
use super::walk::TreeWalk;
use super::{hints, ByteSource, LazyConfig, LazyStats, SourceFailure};

/// A read-only file served from a [`ByteSource`] through a block cache.
pub struct LazyFile<S> {
    source: S,
    len: u64,
    cache: BlockCache,
    heads: ReadHeads,
    max_span: u64,
    failed: Option<SourceFailure>,
    stats: LazyStats,
    /// While a plan is made ([`LazyFile::plan_misses`]): the ranges reads
    /// needed and did not find held; nothing is fetched meanwhile.
    planning: Option<Vec<(u64, u64)>>,
    /// Pointer-map pages turned round by the payload reader, kept for
    /// every later read (see [`super::chain::TurnedMaps`]).
    turned_maps: TurnedMaps,
}

impl<S: ByteSource> LazyFile<S> {
    /// Serves `source` with `config`'s cache and read-ahead.
    pub fn new(source: S, config: LazyConfig) -> LazyFile<S> {
        let block = config.block_bytes.max(512);
        let min_span = config.min_read_bytes.div_ceil(block).max(1);
        // A fetch larger than a quarter of the budget would push out the
        // very blocks it walks past.
        let max_span = config
            .max_read_bytes
            .min(config.cache_bytes as u64 / 4)
            .div_ceil(block)
            .max(min_span);
        LazyFile {
            len: source.len(),
            source,
            cache: BlockCache::new(block, config.cache_bytes),
            heads: ReadHeads::new(config.heads, min_span, max_span),
            max_span,
            failed: None,
            stats: LazyStats::default(),
            planning: None,
            turned_maps: Default::default(),
        }
    }

    /// The pointer-map pages turned round so far, which the payload
    /// reader keeps here because they hold for as long as the file.
    pub(crate) fn turned_maps(&mut self) -> &mut TurnedMaps {
        &mut self.turned_maps
    }

    /// Runs `work` on the cache alone: a read that would fetch notes the
    /// range it needed and fails, a read ahead only notes its range, and
    /// the file itself is left as it was (no failure kept). Answers what
    /// `work` answered and the ranges noted: what a caller fetching ahead
    /// brings in so that the same work, run for real, waits on no read.
    pub(crate) fn plan_misses<R>(
        &mut self,
        work: impl FnOnce(&mut Self) -> R,
    ) -> (R, Vec<(u64, u64)>) {
        let outer = self.planning.replace(Vec::new());
        let answer = work(self);
        let missed = std::mem::replace(&mut self.planning, outer).unwrap_or_default();
        (answer, missed)
    }

    /// Whether a plan is being made ([`LazyFile::plan_misses`]).
    pub(crate) fn planning(&self) -> bool {
        self.planning.is_some()
    }

    /// Notes `(offset, len)` as needed when a plan is being made; the
    /// failure a read then answers, which nothing reports.
    fn planned_miss(&mut self, offset: u64, len: u64) -> Option<SourceFailure> {
        let missed = self.planning.as_mut()?;
        missed.push((offset, len));
        Some(SourceFailure::Unreadable(
            "not held yet (a plan is being made)".into(),
        ))
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The failure that stopped this file, if one has.
    pub fn failure(&self) -> Option<&SourceFailure> {
        self.failed.as_ref()
    }

    /// Counts a payload read through SQLite's pager instead of by range.
    pub(crate) fn note_sqlite_payload(&mut self) {
        self.stats.sqlite_payloads += 1;
    }

    /// Traffic so far.
    pub fn stats(&self) -> LazyStats {
        LazyStats {
            cached_bytes: self.cache.bytes() as u64,
            ..self.stats
        }
    }

    /// Reads up to `buf.len()` bytes at `offset`, returning how many: fewer
    /// only at the end of the file. The WAL marker of the header (bytes 18
    /// and 19) reads as a rollback journal's, since this file has no
    /// sidecars and SQLite must not look for them.
    pub fn read(&mut self, buf: &mut [u8], offset: u64) -> Result<usize, SourceFailure> {
        if let Some(failed) = &self.failed {
            return Err(failed.clone());
        }
        if offset >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let want = (buf.len() as u64).min(self.len - offset) as usize;
        let block_bytes = self.cache.block_bytes();
        let mut done = 0usize;
        while done < want {
            let at = offset + done as u64;
            let index = at / block_bytes;
            let within = (at % block_bytes) as usize;
            if let Some(block) = self.cache.get(index) {
                self.stats.hits += 1;
                let n = (block.len() - within).min(want - done);
                buf[done..done + n].copy_from_slice(&block[within..within + n]);
                done += n;
                continue;
            }
            if let Some(planned) = self.planned_miss(index * block_bytes, block_bytes) {
                return Err(planned);
            }
            let fetched = match self.fetch_from(index) {
                Ok(fetched) => fetched,
                Err(failure) => {
                    self.failed = Some(failure.clone());
                    return Err(failure);
                }
            };
            // Copy what was asked straight from the fetch, then keep it:
            // the copy does not depend on the cache keeping the blocks.
            let n = (fetched.len() - within).min(want - done);
            buf[done..done + n].copy_from_slice(&fetched[within..within + n]);
            done += n;
            for (i, block) in fetched.chunks(block_bytes as usize).enumerate() {
                self.cache.insert(index + i as u64, block);
            }
        }
        Ok(want)
    }

    /// Fetches the file's first `bytes` (at most a quarter of the cache's
    /// budget, whole blocks, never past the end) in one source read and
    /// keeps them, unless the first block is held already. Why: opening an
    /// archive reads the header, then the schema, then each b-tree's root
    /// page, and an auto-vacuum file keeps every root page right after
    /// the schema; read one miss at a time, these are a few synchronous
    /// reads, and a catalog prefetch started without its roots cached
    /// spends an asynchronous round on them. A failure stops the file, as
    /// in [`LazyFile::read`].
    pub fn read_head(&mut self, bytes: u64) -> Result<(), SourceFailure> {
        if let Some(failed) = &self.failed {
            return Err(failed.clone());
        }
        let block_bytes = self.cache.block_bytes();
        let cap = (self.cache.budget() as u64 / 4).max(block_bytes);
        let want = bytes.min(cap).div_ceil(block_bytes) * block_bytes;
        let want = want.min(self.len);
        if want == 0 || self.cache.contains(0) {
            return Ok(());
        }
        let mut data = vec![0u8; want as usize];
        if let Err(failure) = self.source.read_exact_at(0, &mut data) {
            self.failed = Some(failure.clone());
            return Err(failure);
        }
        self.prime(0, &data);
        Ok(())
    }

    /// A prefetch of the b-trees rooted at `roots` (page numbers), or
    /// `None` when the header is not cached yet or SQLite's page size is
    /// not the cache's block size. It may add up to half the cache's
    /// budget, so what it brings in is not pushed out by itself.
    pub fn tree_walk(&self, roots: &[u32]) -> Option<TreeWalk> {
        let (page_bytes, pages, budget) = self.walk_shape()?;
        Some(TreeWalk::new(roots, page_bytes, pages, budget))
    }

    /// [`Self::tree_walk`] of the table b-tree at `root` toward the leaves
    /// holding `rows` alone ([`TreeWalk::toward_rows`]).
    pub fn row_walk(&self, root: u32, rows: Vec<i64>) -> Option<TreeWalk> {
        let (page_bytes, pages, budget) = self.walk_shape()?;
        Some(TreeWalk::toward_rows(root, rows, page_bytes, pages, budget))
    }

    /// A walk's page size, page count and budget in pages (half the
    /// cache's): `None` as for [`Self::tree_walk`].
    fn walk_shape(&self) -> Option<(usize, u32, usize)> {
        let block_bytes = self.cache.block_bytes();
        let head = self.cache.peek(0)?;
        let page_bytes = match u16::from_be_bytes([*head.get(16)?, *head.get(17)?]) {
            1 => 65536,
            n => u64::from(n),
        };
        if page_bytes != block_bytes {
            return None;
        }
        let pages = u32::try_from(self.len.div_ceil(page_bytes)).ok()?;
        let budget = self.cache.budget() / 2 / block_bytes as usize;
        Some((page_bytes as usize, pages, budget))
    }

    /// The next byte ranges `walk` needs, `(offset, length)` in file order
    /// (adjacent pages merged); empty when it is done, or when this file
    /// has failed. Fetch them and hand them to [`LazyFile::prime`].
    pub fn walk_step(&mut self, walk: &mut TreeWalk) -> Vec<(u64, u64)> {
        if self.failed.is_some() {
            return Vec::new();
        }
        let block_bytes = self.cache.block_bytes();
        let len = self.len;
        let cache = &self.cache;
        let runs = walk.step(|page| cache.peek(u64::from(page) - 1));
        // The cached pages the walk went through are in use: what this
        // round fetches must not push them out before the reads they lead
        // to (a walk made afresh next round would fetch them again).
        for page in walk.take_parsed() {
            self.cache.get(u64::from(page) - 1);
        }
        runs.into_iter()
            .map(|run| {
                let start = u64::from(run.first - 1) * block_bytes;
                let end = (start + u64::from(run.pages) * block_bytes).min(len);
                (start, end - start)
            })
            .collect()
    }

    /// The blocks of `ranges` not held yet, as byte ranges of adjacent
    /// blocks in file order, up to a quarter of the cache's budget (what
    /// a batch of reads ahead may bring in without pushing out what it is
    /// for): a prefetch's plan.
    pub fn uncached(&self, ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let block = self.cache.block_bytes();
        let mut blocks: Vec<u64> = ranges
            .iter()
            .filter(|&&(offset, len)| len > 0 && offset < self.len)
            .flat_map(|&(offset, len)| {
                let end = (offset + len).min(self.len);
                offset / block..end.div_ceil(block)
            })
            .filter(|&b| !self.cache.contains(b))
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        blocks.truncate(self.cache.budget() / 4 / block as usize);
        let mut out: Vec<(u64, u64)> = Vec::new();
        for b in blocks {
            let start = b * block;
            let len = block.min(self.len - start);
            match out.last_mut() {
                Some(run) if run.0 + run.1 == start => run.1 += len,
                _ => out.push((start, len)),
            }
        }
        out
    }

    /// Whether every block of `len` bytes at `offset` is held (a read of
    /// them would fetch nothing).
    pub(crate) fn holds(&self, offset: u64, len: u64) -> bool {
        let block = self.cache.block_bytes();
        let end = offset.saturating_add(len).min(self.len);
        (offset / block..end.div_ceil(block)).all(|b| self.cache.contains(b))
    }

    /// The byte ranges (`offset`, `length`) of the overflow pages holding
    /// `rowid`'s value of `table.column` past its cell, a BLOB of `len`
    /// bytes starting with `head` (as SQLite read them), for a caller that
    /// fetches many rows' at once before SQLite reads them; empty when the
    /// value has no overflow pages or its place is not proven (SQLite then
    /// reads it as ever). Walks the table from the cache: its pages
    /// toward the row should be there already.
    pub fn payload_ranges(
        &mut self,
        table: PayloadTable,
        rowid: i64,
        len: u64,
        head: &[u8],
    ) -> Result<Vec<(u64, u64)>, SourceFailure> {
        Ok(match payload::locate(self, table, rowid, len, head)? {
            Some(map) => payload::tail_ranges(&map, len),
            None => Vec::new(),
        })
    }

    /// Keeps `data`, the file's bytes from `offset` (a block boundary) on,
    /// as fetched by the caller outside SQLite's reads (a prefetch); a
    /// partial last block is kept only at the file's end. Counts as one
    /// fetch.
    pub fn prime(&mut self, offset: u64, data: &[u8]) {
        let block_bytes = self.cache.block_bytes();
        if self.failed.is_some() || !offset.is_multiple_of(block_bytes) || offset >= self.len {
            return;
        }
        let data = &data[..data.len().min((self.len - offset) as usize)];
        self.stats.fetches += 1;
        self.stats.primed += 1;
        self.stats.fetched_bytes += data.len() as u64;
        self.keep(offset, data);
    }

    /// Fetches `len` bytes at `offset` (a block boundary) in one source
    /// read and keeps them, for a reader that knows which pages it will
    /// read next and where they lie. `false` past the file's end. A
    /// failure stops the file, as in [`LazyFile::read`].
    pub(crate) fn read_ahead(&mut self, offset: u64, len: u64) -> Result<bool, SourceFailure> {
        if self.planned_miss(offset, len).is_some() {
            return Ok(false);
        }
        let mut data = vec![0u8; len as usize];
        if !offset.is_multiple_of(self.cache.block_bytes())
            || !self.read_direct(offset, &mut data)?
        {
            return Ok(false);
        }
        self.keep(offset, &data);
        Ok(true)
    }

    /// Keeps whole blocks of `data`, the file's bytes from `offset` on.
    fn keep(&mut self, offset: u64, data: &[u8]) {
        let block_bytes = self.cache.block_bytes();
        let first = offset / block_bytes;
        for (i, block) in data.chunks(block_bytes as usize).enumerate() {
            let at = offset + (i as u64) * block_bytes;
            let whole = block.len() as u64 == block_bytes || at + block.len() as u64 == self.len;
            if !whole {
                break;
            }
            if at == 0 {
                let mut head = block.to_vec();
                as_rollback_header(&mut head);
                self.cache.insert(first + i as u64, &head);
            } else {
                self.cache.insert(first + i as u64, block);
            }
            self.stats.misses += 1;
        }
    }

    /// Fills `buf` from `offset` straight from the source, past the cache:
    /// a whole payload read by range, whose pages are used once and must
    /// not push the catalog's out. `false` for a range past the file's
    /// end. A failure stops the file, as in [`LazyFile::read`].
    pub(crate) fn read_direct(
        &mut self,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<bool, SourceFailure> {
        if let Some(failed) = &self.failed {
            return Err(failed.clone());
        }
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.len)
        {
            return Ok(false);
        }
        if let Some(planned) = self.planned_miss(offset, buf.len() as u64) {
            return Err(planned);
        }
        if let Err(failure) = self.source.read_exact_at(offset, buf) {
            self.failed = Some(failure.clone());
            return Err(failure);
        }
        self.stats.fetches += 1;
        self.stats.fetched_bytes += buf.len() as u64;
        Ok(true)
    }

    /// Fetches a run of blocks from `index` on: as many as the read heads
    /// plan, stopping at the file's end and before a block already held.
    fn fetch_from(&mut self, index: u64) -> Result<Vec<u8>, SourceFailure> {
        let block_bytes = self.cache.block_bytes();
        let hint = hints::take_expected_walk();
        // A page holds its size less the 4-byte next pointer of the chain.
        let hinted = hint.div_ceil(block_bytes.saturating_sub(4).max(1));
        let planned = self.heads.plan_at_least(index, hinted).min(self.max_span);
        let mut span = 1;
        while span < planned && !self.cache.contains(index + span) {
            span += 1;
        }
        let start = index * block_bytes;
        let end = (start + span * block_bytes).min(self.len);
        let mut data = vec![0u8; (end - start) as usize];
        self.source.read_exact_at(start, &mut data)?;
        self.stats.fetches += 1;
        self.stats.misses += span;
        self.stats.fetched_bytes += data.len() as u64;
        if start == 0 {
            as_rollback_header(&mut data);
        }
        Ok(data)
    }
}

/// Marks a header that says WAL (format bytes 18 and 19 = 2) as a rollback
/// journal's (1), so SQLite reads the main file alone, as it does for an
/// archive opened from memory.
fn as_rollback_header(head: &mut [u8]) {
    for at in [18, 19] {
        if let Some(byte) = head.get_mut(at) {
            if *byte == 2 {
                *byte = 1;
            }
        }
    }
}

#[cfg(test)]
mod tests;

//! How a lazy file caches and reads ahead, and what it counts: the knobs
//! and the meter of [`super::LazyFile`], apart from its mechanism.

/// How a lazy file caches and reads ahead.
#[derive(Debug, Clone, Copy)]
pub struct LazyConfig {
    /// The cache's unit: SQLite's page size, so one page is one block.
    pub block_bytes: u64,
    /// The cache's budget in bytes.
    pub cache_bytes: usize,
    /// How many sequential walks are followed at once.
    pub heads: usize,
    /// The smallest fetch, in bytes (a random page read).
    pub min_read_bytes: u64,
    /// The largest fetch a walk grows to, in bytes.
    pub max_read_bytes: u64,
}

impl LazyConfig {
    /// A file on the reader's own machine: a read costs little more than
    /// its bytes, so walks grow fast and the ceiling is high.
    pub const LOCAL_FILE: LazyConfig = LazyConfig::archive(32 << 20, 4 << 10);

    /// A file behind HTTP: every request costs a round trip, so a miss
    /// fetches several pages and a walk grows to a few MiB.
    pub const HTTP: LazyConfig = LazyConfig::archive(48 << 20, 16 << 10);

    /// An archive's file, one page a block, four walks followed at once
    /// and each grown to 4 MiB at most: what the sources share; they
    /// differ in the budget and in what a random miss fetches.
    const fn archive(cache_bytes: usize, min_read_bytes: u64) -> LazyConfig {
        LazyConfig {
            block_bytes: crate::format::PAGE_SIZE as u64,
            cache_bytes,
            heads: 4,
            min_read_bytes,
            max_read_bytes: 4 << 20,
        }
    }
}

/// Counters of a lazy file's traffic, for benchmarks and the page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LazyStats {
    /// Reads asked of the source (HTTP requests, `Blob.slice` reads).
    pub fetches: u64,
    /// Of those, the ranges a caller fetched ahead its own way and handed
    /// over ([`LazyFile::prime`](super::LazyFile::prime)); the rest were reads SQLite or a payload
    /// read waited for (in the browser, each a synchronous read).
    pub primed: u64,
    /// Bytes those reads returned.
    pub fetched_bytes: u64,
    /// Blocks served from the cache.
    pub hits: u64,
    /// Blocks that had to be fetched.
    pub misses: u64,
    /// Bytes the cache holds now.
    pub cached_bytes: u64,
    /// Payloads (segments) of which some part was read through SQLite's
    /// pager, a page at a time, instead of by range: where the payload's
    /// place was not proven, or reads by range are off. A writer-made
    /// archive reads none so.
    pub sqlite_payloads: u64,
}

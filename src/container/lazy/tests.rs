//! The lazy file against a mock source claiming 6 GiB: offsets past 4 GiB,
//! the cache's budget, read-ahead along walks, and failures that stick.

use super::*;

const GIB: u64 = 1 << 30;
const PAGE: u64 = 4096;

/// A file of `len` bytes whose byte at `offset` is [`byte_at`], except a
/// SQLite header saying WAL at the start; it records every read and can
/// be made to change.
struct MockSource {
    len: u64,
    reads: Vec<(u64, usize)>,
    changed: bool,
}

fn byte_at(offset: u64) -> u8 {
    (offset ^ (offset >> 11) ^ (offset >> 32).wrapping_mul(31)) as u8
}

fn header_byte(offset: u64) -> u8 {
    match offset {
        18 | 19 => 2,
        o if o < 16 => b"SQLite format 3\0"[o as usize],
        o => byte_at(o),
    }
}

impl MockSource {
    fn new(len: u64) -> MockSource {
        MockSource {
            len,
            reads: Vec::new(),
            changed: false,
        }
    }
}

impl ByteSource for MockSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), SourceFailure> {
        assert!(offset + buf.len() as u64 <= self.len, "read past the end");
        if self.changed {
            return Err(SourceFailure::Changed("ETag \"b\" is not \"a\"".into()));
        }
        self.reads.push((offset, buf.len()));
        for (i, b) in buf.iter_mut().enumerate() {
            *b = header_byte(offset + i as u64);
        }
        Ok(())
    }
}

fn six_gib(config: LazyConfig) -> LazyFile<MockSource> {
    LazyFile::new(MockSource::new(6 * GIB), config)
}

fn read(file: &mut LazyFile<MockSource>, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let n = file.read(&mut buf, offset).expect("read");
    buf.truncate(n);
    buf
}

fn expected(offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| header_byte(offset + i)).collect()
}

#[test]
fn reads_past_4_gib_return_the_bytes_at_their_64_bit_offsets() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    assert_eq!(file.len(), 6 * GIB);
    for offset in [5 * GIB + 123, 4 * GIB - 1000, 6 * GIB - PAGE] {
        assert_eq!(read(&mut file, offset, 3000), expected(offset, 3000));
    }
    // A read across a block boundary and the 4 GiB line.
    let across = 4 * GIB - 10;
    assert_eq!(read(&mut file, across, 9000), expected(across, 9000));
    assert!(file.source.reads.iter().any(|(o, _)| *o >= 5 * GIB));
}

#[test]
fn a_read_at_the_end_is_short_and_past_the_end_is_empty() {
    let mut file = six_gib(LazyConfig::HTTP);
    assert_eq!(read(&mut file, 6 * GIB - 10, 100).len(), 10);
    assert!(read(&mut file, 6 * GIB, 100).is_empty());
    assert!(read(&mut file, 7 * GIB, 100).is_empty());
    assert!(
        file.source
            .reads
            .iter()
            .all(|(o, n)| o + *n as u64 <= 6 * GIB),
        "no fetch reaches past the end"
    );
}

#[test]
fn the_wal_marker_reads_as_a_rollback_journal() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    let header = read(&mut file, 0, 100);
    assert_eq!(&header[..16], b"SQLite format 3\0");
    assert_eq!((header[18], header[19]), (1, 1));
    // Again from the cache, and as part of page 1.
    let page = read(&mut file, 0, PAGE as usize);
    assert_eq!((page[18], page[19]), (1, 1));
    assert_eq!(page[20..], expected(20, PAGE as usize - 20)[..]);
}

#[test]
fn a_segment_walk_costs_a_handful_of_fetches() {
    let mut file = six_gib(LazyConfig::HTTP);
    let start = 5 * GIB + 7 * PAGE;
    let pages = 1024; // 4 MiB read one page at a time, as SQLite reads overflow pages
    for p in 0..pages {
        let offset = start + p * PAGE;
        assert_eq!(
            read(&mut file, offset, PAGE as usize),
            expected(offset, PAGE as usize)
        );
    }
    let stats = file.stats();
    assert!(stats.fetches <= 12, "{} fetches for 4 MiB", stats.fetches);
    assert!(
        stats.fetched_bytes <= 2 * pages * PAGE,
        "{} bytes fetched for 4 MiB",
        stats.fetched_bytes
    );
    let largest = file.source.reads.iter().map(|(_, n)| *n).max().unwrap();
    assert!(largest as u64 <= LazyConfig::HTTP.max_read_bytes);
}

#[test]
fn random_page_reads_fetch_one_smallest_read_each() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    for i in 0..50u64 {
        // Far apart and out of order: no walk to follow.
        let page = (i * 7_919 + 13) % 1_000 * 1_000 + (i % 3) * 300_000;
        read(&mut file, page * PAGE, PAGE as usize);
    }
    let stats = file.stats();
    assert_eq!(stats.fetches, 50);
    assert_eq!(
        stats.fetched_bytes,
        50 * LazyConfig::LOCAL_FILE.min_read_bytes
    );
}

#[test]
fn what_is_cached_is_not_fetched_again() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    let offset = 5 * GIB;
    read(&mut file, offset, 64 << 10);
    let before = file.stats();
    assert_eq!(
        read(&mut file, offset + 100, 60 << 10),
        expected(offset + 100, 60 << 10)
    );
    let after = file.stats();
    assert_eq!(after.fetches, before.fetches);
    assert!(after.hits > before.hits);
}

#[test]
fn a_fetch_stops_before_a_block_already_held() {
    let mut file = six_gib(LazyConfig::HTTP);
    let base = 5 * GIB;
    read(&mut file, base + 2 * PAGE, 100); // fetches blocks 2..6 (16 KiB)
    read(&mut file, base, 100); // a new walk from block 0 would take 0..4
    assert_eq!(
        file.source.reads.last(),
        Some(&(base, 2 * PAGE as usize)),
        "the second fetch ends where the held blocks begin"
    );
}

#[test]
fn memory_stays_within_the_budget_whatever_is_read() {
    let config = LazyConfig {
        cache_bytes: 1 << 20,
        ..LazyConfig::HTTP
    };
    let mut file = six_gib(config);
    // 64 MiB in a walk and a scatter of pages: the cache never outgrows 1 MiB.
    for p in 0..(16 * 1024u64) {
        read(&mut file, 3 * GIB + p * PAGE, PAGE as usize);
        assert!(file.stats().cached_bytes <= 1 << 20);
    }
    for i in 0..2000u64 {
        read(&mut file, (i * 104_729 % 1_500_000) * PAGE, 100);
        assert!(file.stats().cached_bytes <= 1 << 20);
    }
    let largest = file.source.reads.iter().map(|(_, n)| *n).max().unwrap();
    assert!(
        largest <= 256 << 10,
        "a fetch is at most a quarter of the budget"
    );
}

#[test]
fn a_file_that_changed_fails_this_read_and_every_later_one() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    read(&mut file, 5 * GIB, 100);
    file.source.changed = true;
    let mut buf = [0u8; 100];
    let first = file.read(&mut buf, GIB).unwrap_err();
    assert!(matches!(first, SourceFailure::Changed(_)));
    assert!(first
        .to_string()
        .contains("changed while it was being read"));
    // Even a block still cached from before is not served any more.
    file.source.changed = false;
    assert_eq!(file.read(&mut buf, 5 * GIB), Err(first.clone()));
    assert_eq!(file.failure(), Some(&first));
}

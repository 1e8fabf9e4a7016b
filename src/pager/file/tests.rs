//! The lazy file against a mock source claiming 6 GiB: offsets past 4 GiB,
//! the cache's budget, read-ahead along walks, and failures that stick.

use super::*;
use crate::pager::mock::{header_page, interior_page, Pages, Synthetic};
use crate::pager::{expect_walk, LazyConfig};

const GIB: u64 = 1 << 30;
const PAGE: u64 = 4096;

fn six_gib(config: LazyConfig) -> LazyFile<Synthetic> {
    LazyFile::new(Synthetic::new(6 * GIB), config)
}

fn read(file: &mut LazyFile<Synthetic>, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let n = file.read(&mut buf, offset).expect("read");
    buf.truncate(n);
    buf
}

fn expected(offset: u64, len: usize) -> Vec<u8> {
    Synthetic::expected(offset, len)
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

/// A sparse 6 GiB file of 4 KiB pages: the pages in `pages` as given,
/// zeros elsewhere.
fn tree_source(pages: std::collections::HashMap<u64, Vec<u8>>) -> Pages {
    Pages::new(6 * GIB, PAGE, pages)
}

#[test]
fn a_tree_walk_primes_scattered_leaves_past_4_gib_in_one_round_per_level() {
    // Page 1: an empty leaf (the schema, not walked here), saying WAL.
    let mut first = header_page(PAGE as u16);
    first[18] = 2;
    first[19] = 2;
    // Root past 4 GiB → two interior pages → leaves a MiB (256 pages) apart.
    let root = 1_100_000u32;
    let leaves: Vec<u32> = (0..40).map(|i| 1_200_000 + i * 256).collect();
    let mut pages = std::collections::HashMap::new();
    pages.insert(1, first);
    pages.insert(
        u64::from(root),
        interior_page(&[1_150_000, 1_150_001], PAGE as usize),
    );
    pages.insert(1_150_000, interior_page(&leaves[..20], PAGE as usize));
    pages.insert(1_150_001, interior_page(&leaves[20..], PAGE as usize));
    for (i, &leaf) in leaves.iter().enumerate() {
        let mut page = vec![0u8; PAGE as usize];
        page[0] = 0x0d;
        page[100] = i as u8;
        pages.insert(u64::from(leaf), page);
    }
    let mut file = LazyFile::new(tree_source(pages), LazyConfig::HTTP);
    assert!(
        file.tree_walk(&[root]).is_none(),
        "the header is not cached yet"
    );
    read_tree(&mut file, 0, 100);
    let mut walk = file.tree_walk(&[root]).expect("4 KiB pages");
    let mut rounds = 0;
    loop {
        let want = file.walk_step(&mut walk);
        if want.is_empty() {
            break;
        }
        rounds += 1;
        for (offset, len) in want {
            assert!(offset.is_multiple_of(PAGE) && offset > 4 * GIB);
            let mut data = vec![0u8; len as usize];
            file.source.read_exact_at(offset, &mut data).unwrap();
            file.prime(offset, &data);
        }
    }
    assert_eq!(rounds, 3, "root, interior level, leaves");
    assert_eq!(walk.parsed(), 43);
    // SQLite's reads of every leaf now cost nothing.
    let before = file.source.reads;
    for (i, &leaf) in leaves.iter().enumerate() {
        let page = read_tree(&mut file, u64::from(leaf - 1) * PAGE, PAGE as usize);
        assert_eq!((page[0], page[100]), (0x0d, i as u8));
    }
    assert_eq!(file.source.reads, before, "no read went to the source");
}

#[test]
fn a_primed_header_reads_as_rollback_and_partial_blocks_are_dropped() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    let mut head = expected(0, PAGE as usize + 100);
    head[18] = 2;
    file.prime(0, &head);
    assert_eq!(file.source.reads.len(), 0);
    let page = read(&mut file, 0, PAGE as usize);
    assert_eq!((page[18], page[19]), (1, 1));
    // The 100 bytes past page 1 were not kept as a block: reading there fetches.
    read(&mut file, PAGE, 10);
    assert_eq!(file.source.reads.len(), 1);
    // Unaligned offsets are ignored rather than misfiled.
    file.prime(5 * GIB + 1, &[0u8; PAGE as usize]);
    read(&mut file, 5 * GIB, 10);
    assert_eq!(file.source.reads.len(), 2);
}

fn read_tree(file: &mut LazyFile<Pages>, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let n = file.read(&mut buf, offset).expect("read");
    buf.truncate(n);
    buf
}

#[test]
fn a_walk_said_in_advance_is_fetched_in_one_read() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    let start = 5 * GIB + 3 * PAGE;
    let pages = 256; // a 1 MiB BLOB's chain, read a page at a time
    expect_walk(pages * (PAGE - 4));
    for p in 0..pages {
        let offset = start + p * PAGE;
        assert_eq!(
            read(&mut file, offset, PAGE as usize),
            expected(offset, PAGE as usize)
        );
    }
    expect_walk(0);
    assert_eq!(file.stats().fetches, 1, "{:?}", file.source.reads);
    // The hint is spent: the next random miss reads the smallest span.
    read(&mut file, GIB, 10);
    assert_eq!(
        file.source.reads.last().unwrap().1 as u64,
        LazyConfig::LOCAL_FILE.min_read_bytes
    );
}

#[test]
fn a_prefetch_plan_leaves_out_held_blocks_and_keeps_to_a_quarter_of_the_budget() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    let base = 5 * GIB;
    read(&mut file, base + PAGE, 10); // holds blocks 1..=1 (4 KiB)
    let plan = file.uncached(&[
        (base, 3 * PAGE),           // blocks 0, 1, 2: 1 is held
        (base + 2 * PAGE + 5, 100), // inside block 2 again
        (base + 3 * PAGE, 1),       // block 3: adjacent to 2
        (7 * GIB, PAGE),            // past the end
        (base + 100 * PAGE, 0),     // empty
    ]);
    assert_eq!(plan, vec![(base, PAGE), (base + 2 * PAGE, 2 * PAGE)]);
    // A plan larger than a quarter of the budget is cut there.
    let huge = file.uncached(&[(GIB, 1 << 30)]);
    let total: u64 = huge.iter().map(|r| r.1).sum();
    assert_eq!(total, LazyConfig::LOCAL_FILE.cache_bytes as u64 / 4);
    // The end of the file is a partial block at most.
    assert_eq!(
        file.uncached(&[(6 * GIB - 10, 100)]),
        vec![(6 * GIB - PAGE, PAGE)]
    );
}

#[test]
fn the_head_is_read_in_one_read_and_then_costs_nothing() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    // 10 bytes past a block boundary: rounded up to whole blocks.
    file.read_head(16 * PAGE + 10).expect("head");
    assert_eq!(file.source.reads, vec![(0, 17 * PAGE as usize)]);
    for offset in [0, 100, 5 * PAGE + 7, 16 * PAGE] {
        let got = read(&mut file, offset, 1000);
        let mut want = expected(offset, 1000);
        if offset == 0 {
            (want[18], want[19]) = (1, 1);
        }
        assert_eq!(got, want, "at {offset}");
    }
    assert_eq!(file.source.reads.len(), 1, "every read served by the head");
    // Held already: a second head read fetches nothing.
    file.read_head(64 << 10).expect("head");
    assert_eq!(file.source.reads.len(), 1);
}

#[test]
fn the_head_keeps_to_a_quarter_of_the_budget_and_the_file() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    file.read_head(1 << 40).expect("head");
    assert_eq!(
        file.source.reads,
        vec![(0, LazyConfig::LOCAL_FILE.cache_bytes / 4)]
    );
    // A file shorter than the head: read to its end, the last block kept.
    let mut small = LazyFile::new(Synthetic::new(PAGE + 100), LazyConfig::LOCAL_FILE);
    small.read_head(64 << 10).expect("head");
    assert_eq!(small.source.reads, vec![(0, PAGE as usize + 100)]);
    assert_eq!(read(&mut small, PAGE, 200), expected(PAGE, 100));
    assert_eq!(small.source.reads.len(), 1);
    // Nothing asked, nothing read.
    let mut none = six_gib(LazyConfig::LOCAL_FILE);
    none.read_head(0).expect("head");
    assert!(none.source.reads.is_empty());
}

#[test]
fn a_head_read_that_fails_stops_the_file() {
    let mut file = six_gib(LazyConfig::LOCAL_FILE);
    file.source.changed = true;
    let failure = file.read_head(64 << 10).unwrap_err();
    assert!(matches!(failure, SourceFailure::Changed(_)));
    file.source.changed = false;
    let mut buf = [0u8; 10];
    assert_eq!(file.read(&mut buf, 0), Err(failure));
}

#[test]
fn with_the_roots_in_the_head_a_walk_starts_a_level_down() {
    let first = header_page(PAGE as u16);
    // Root 4 (inside the head) → leaves far out.
    let leaves: Vec<u32> = (0..10).map(|i| 1_200_000 + i * 256).collect();
    let mut pages = std::collections::HashMap::new();
    pages.insert(1, first);
    pages.insert(4, interior_page(&leaves, PAGE as usize));
    let mut file = LazyFile::new(tree_source(pages), LazyConfig::LOCAL_FILE);
    file.read_head(64 << 10).expect("head");
    let mut walk = file.tree_walk(&[4]).expect("4 KiB pages");
    let want = file.walk_step(&mut walk);
    assert_eq!(want.len(), 10, "the leaves at once: {want:?}");
    assert!(want.iter().all(|&(offset, _)| offset > GIB));
    assert_eq!(file.source.reads, 1);
}

#[test]
fn the_cached_pages_a_walk_goes_through_outlast_older_ones() {
    // A cache of eight pages: the header, a root, then six other pages,
    // the root now older than all six.
    let config = LazyConfig {
        block_bytes: PAGE,
        cache_bytes: 8 * PAGE as usize,
        heads: 1,
        min_read_bytes: PAGE,
        max_read_bytes: PAGE,
    };
    let first = header_page(PAGE as u16);
    let root = 10u32;
    let mut pages = std::collections::HashMap::new();
    pages.insert(1, first);
    pages.insert(u64::from(root), interior_page(&[20, 21], PAGE as usize));
    let mut file = LazyFile::new(tree_source(pages), config);
    read_tree(&mut file, 0, 100);
    read_tree(&mut file, u64::from(root - 1) * PAGE, PAGE as usize);
    for page in 50..56u64 {
        read_tree(&mut file, (page - 1) * PAGE, PAGE as usize);
    }
    let mut walk = file.tree_walk(&[root]).expect("4 KiB pages");
    let want = file.walk_step(&mut walk);
    assert_eq!(want, vec![(19 * PAGE, 2 * PAGE)], "the two leaves");
    for (offset, len) in want {
        file.prime(offset, &vec![0x0d; len as usize]);
    }
    // The two leaves pushed out the two pages used longest ago: the
    // header and the first of the six, no longer the root the walk went
    // through.
    assert!(file.cache.contains(u64::from(root - 1)), "the root is kept");
    assert!(!file.cache.contains(0) && !file.cache.contains(49));
    assert!(file.cache.contains(50));
}

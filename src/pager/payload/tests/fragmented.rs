//! Fragmented chains (payloads written into pages others freed): read by
//! range with their breaks found from the pointer map, damage at a break,
//! and a tail plan that leaves the reads nothing to fetch.

use super::*;
use crate::pager::chain::PTRMAP_OVERFLOW2;
use crate::pager::mock::write_fragmented;
use crate::pager::set_map_at_breaks;

#[test]
fn fragmented_chains_read_by_range_their_breaks_fetched_together() {
    let dir = tempfile::tempdir().unwrap();
    let (path, image, payloads) = write_fragmented(dir.path());
    let (g, map) = map_of(&path, &image, 100);
    // The map as first found is SQLite's guess; prove it to learn the runs.
    let map = {
        let s = serve(&path, image.clone());
        let mut map = map;
        let last = map.chain.pages() - 1;
        assert!(chain::prove(&mut s.file.borrow_mut(), &mut map.chain, last).unwrap());
        map
    };
    assert!(
        map.chain.runs().len() > 3,
        "the chain reuses freed runs: {:?}",
        map.chain.runs()
    );
    let s = serve(&path, image.clone());
    let in_place = |seq: i64, offset: usize, n: usize| {
        s.archive
            .read_snapshot(|snap| {
                let payload = snap.segment_payload(1, "m", seq)?;
                let mut buf = vec![0u8; n];
                let read = payload
                    .in_place()
                    .expect("read in place")
                    .read_at(offset as u64, &mut buf)
                    .unwrap();
                Ok((read, buf))
            })
            .unwrap()
    };
    for &(seq, len) in &payloads {
        for (offset, n) in ranges(len) {
            if offset + n > len {
                continue;
            }
            let (read, bytes) = in_place(seq, offset, n);
            assert!(read, "seq {seq} at {offset}+{n}: read by range");
            assert_eq!(bytes, payload_of(seq, len)[offset..offset + n]);
        }
    }
    // A tail costs the pointer-map pages and its own pages: where the
    // chain breaks, the pointer map names the next page, so no page
    // before a break is read (it once cost a read each, then a read of
    // nearly the whole chain fetched together).
    let breaks = map.chain.runs().len() as u64 - 1;
    assert!(breaks >= 4, "{:?}", map.chain);
    let s = serve(&path, image.clone());
    via_catalog(&s.archive, 100, 0, 4).unwrap();
    let before = (s.image.reads(), s.image.read_bytes());
    let tail = via_catalog(&s.archive, 100, 200_000 - 8, 8).unwrap();
    assert_eq!(tail, payload_of(100, 200_000)[200_000 - 8..]);
    let (reads, bytes) = (s.image.reads() - before.0, s.image.read_bytes() - before.1);
    assert!(
        reads <= 3 && reads < breaks,
        "{reads} reads for a tail of a chain of {} pages with {breaks} breaks",
        map.chain.pages()
    );
    let maps = chain::every_ptrmap(&g).unwrap().len() as u64;
    assert!(
        bytes <= (maps + 2) * u64::from(g.page_bytes) + (64 << 10),
        "{bytes} bytes for an 8-byte tail"
    );
    drop(s);
    assert!(same_as_sqlite_at(dir.path(), image.clone(), &payloads) > 0);

    // Damage to the pointer of a page before a break, where the map names
    // the next page: the read by range takes the map's word, as SQLite
    // takes it for the page right after, and reads the payload as it was
    // written, where SQLite follows the damaged pointer. The file is
    // damaged either way, and SQLite's integrity check (which verify
    // runs) says so.
    let k = map.chain.runs()[0].1 - 1;
    for wrong in [0xffff_ff00, map.chain.page_at(k + 2).unwrap()] {
        let mut damaged = image.clone();
        put32(&mut damaged, g.offset(map.chain.page_at(k).unwrap()), wrong);
        reads_as_written_and_fails_the_integrity_check(dir.path(), damaged, &payloads);
    }
    // Damage to the map itself at that break: the page before is read,
    // as SQLite reads it.
    let mut unnamed = image.clone();
    damaged_entry(&mut unnamed, &g, map.chain.page_at(k + 1).unwrap(), 2);
    same_as_sqlite_at(dir.path(), unnamed, &payloads);
    // Two entries naming the one page before: the map tells nothing there.
    let mut twice = image;
    // (the last such page: one after the true successor, whose entry the
    // map would otherwise take)
    let other = (2..=g.pages)
        .rev()
        .find(|&p| g.can_chain(p) && !map.chain.runs().iter().any(|r| p >= r.0 && p < r.0 + r.1))
        .unwrap();
    let named = map.chain.page_at(k).unwrap();
    let at = ptrmap_entry(&g, other) as usize;
    twice[at] = PTRMAP_OVERFLOW2;
    twice[at + 1..at + 5].copy_from_slice(&named.to_be_bytes());
    same_as_sqlite_at(dir.path(), twice, &payloads);
}

/// Sets the pointer-map entry of `page` to type `kind`.
fn damaged_entry(image: &mut [u8], g: &Geometry, page: u32, kind: u8) {
    image[ptrmap_entry(g, page) as usize] = kind;
}

/// Every range of every payload of `image` reads by range either as
/// written (a range that skips the damaged page, taken at the map's word)
/// or as SQLite reads it (one that reads the damaged page, taken at its
/// pointer); some read as written where SQLite does not; and SQLite's
/// integrity check does not pass the file.
fn reads_as_written_and_fails_the_integrity_check(
    dir: &Path,
    image: Vec<u8>,
    payloads: &[(i64, usize)],
) {
    let path = dir.join("damaged.dendro");
    std::fs::write(&path, &image).unwrap();
    let _ = std::fs::remove_file(dir.join("damaged.dendro-wal"));
    let _ = std::fs::remove_file(dir.join("damaged.dendro-shm"));
    let s = serve(&path, image);
    let mut by_the_map = 0;
    for &(seq, len) in payloads {
        for (offset, n) in ranges(len) {
            if offset + n > len {
                continue;
            }
            let direct = via_catalog(&s.archive, seq, offset, n).ok();
            set_in_place_payloads(false);
            let sqlite = via_catalog(&s.archive, seq, offset, n).ok();
            set_in_place_payloads(true);
            let written = &payload_of(seq, len)[offset..offset + n];
            if direct == sqlite {
                continue;
            }
            assert_eq!(
                direct.as_deref(),
                Some(written),
                "seq {seq} at {offset}+{n}: neither as written nor as SQLite reads it"
            );
            // Without the map's word at breaks, as SQLite reads it.
            set_map_at_breaks(false);
            let strict = via_catalog(&s.archive, seq, offset, n).ok();
            set_map_at_breaks(true);
            assert_eq!(
                strict, sqlite,
                "seq {seq} at {offset}+{n}: the map's word off"
            );
            by_the_map += 1;
        }
    }
    assert!(by_the_map > 0, "no range skipped the damaged page");
    let check: String = s
        .archive
        .conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_ne!(check, "ok", "the integrity check passes a damaged file");
}

/// The footer prefetch's plan for fragmented chains: asked again after
/// each round of fetching what it named, it comes to nothing after two
/// rounds (the pointer map with the guess, then the pages the map names),
/// and then the tails it was made for are read without one read of the
/// source. Its guess alone (the pages a contiguous chain would take)
/// leaves such tails to be read one break at a time.
#[test]
fn a_tail_plan_of_fragmented_chains_leaves_their_reads_nothing_to_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let (path, image, payloads) = write_fragmented(dir.path());
    let s = serve(&path, image.clone());
    // The table's pages toward every row, as the engine's rounds before
    // the footers' bring them in.
    for &(seq, _) in &payloads {
        via_catalog(&s.archive, seq, 0, 4).unwrap();
    }
    // Half of each payload: read through the cache for the small ones,
    // and for the 200 KB ones a run past what a read takes from the cache
    // unless all of it is held (the footer of a stream of many columns).
    let tail = |len: usize| len / 2;
    let plan = || {
        s.archive
            .read_snapshot(|snap| {
                let mut ranges = Vec::new();
                for &(seq, len) in &payloads {
                    let payload = snap.segment_payload(1, "m", seq)?;
                    let direct = payload.in_place().expect("read in place");
                    ranges.extend(direct.tail_ranges(tail(len) as u64).unwrap());
                }
                Ok(ranges)
            })
            .unwrap()
    };
    let before = s.image.reads();
    let mut rounds = 0;
    loop {
        let asked = plan();
        let wanted = s.file.borrow().uncached(&asked);
        if wanted.is_empty() {
            break;
        }
        rounds += 1;
        assert!(rounds <= 2, "round {rounds} still asks for {wanted:?}");
        for (offset, len) in wanted {
            let bytes = &image[offset as usize..(offset + len) as usize];
            s.file.borrow_mut().prime(offset, bytes);
        }
    }
    assert_eq!(
        s.image.reads(),
        before,
        "making the plan read nothing itself"
    );
    assert!(s.file.borrow().failure().is_none());
    for &(seq, len) in &payloads {
        let n = tail(len);
        let got = via_catalog(&s.archive, seq, len - n, n).unwrap();
        assert_eq!(got, payload_of(seq, len)[len - n..], "seq {seq}");
    }
    assert_eq!(
        s.image.reads(),
        before,
        "the planned tails waited on no read"
    );
}

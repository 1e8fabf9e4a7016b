//! Damaged archives: chains cut, cycled or swapped, pointer maps that
//! lie, catalog keys out of order, random bit flips; a read by range must
//! read as SQLite reads them or leave the read to SQLite.

use super::*;
use crate::pager::btree::{INTERIOR_TABLE, LEAF_TABLE};
use crate::pager::mock::write_archive;

#[test]
fn damaged_chains_and_lying_pointer_maps_read_as_sqlite_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = [3_600_000, 200_000, 20_000];
    let (path, clean) = write_archive(dir.path(), "a.dendro", &sizes);
    let (g, map) = map_of(&path, &clean, 0);
    assert!(
        map.chain.runs().len() >= 2,
        "the big chain crosses a pointer-map page: {:?}",
        map.chain.runs()
    );
    let n = map.chain.pages();
    let page = |i| map.chain.page_at(i).unwrap();
    let tail = |image: &[u8]| {
        let s = serve(&path, image.to_vec());
        let mut m = locate_seq(&s, 0, sizes[0]).unwrap();
        let mut tail = [0u8; 8];
        let mut whole = vec![0u8; sizes[0]];
        m.as_mut().map(|m| {
            let f = &mut s.file.borrow_mut();
            (
                read(f, m, sizes[0] as u64 - 8, &mut tail).unwrap(),
                read(f, m, 0, &mut whole).unwrap(),
            )
        })
    };
    assert_eq!(
        tail(&clean),
        Some((true, true)),
        "the clean chain reads by range"
    );

    // Each damage made to a copy of the clean file: what a tail and a
    // whole read by range make of it, and every range as SQLite reads it.
    let damaged = |damage: &dyn Fn(&mut [u8]), expected: Option<(bool, bool)>, why: &str| {
        let mut image = clean.clone();
        damage(&mut image);
        assert_eq!(tail(&image), expected, "{why}");
        same_as_sqlite(dir.path(), image, &sizes);
    };

    // A pointer-map entry that no longer says "overflow page after (k-1)".
    let k = n / 2;
    damaged(
        &|image| image[ptrmap_entry(&g, page(k)) as usize] = 2,
        Some((true, true)),
        "a skip the map does not prove reads the page before, as SQLite does",
    );
    // An entry of no type at all is damage SQLite reports when it looks.
    damaged(
        &|image| image[ptrmap_entry(&g, page(k)) as usize] = 0,
        Some((false, true)),
        "SQLite's to report",
    );
    damaged(
        &|image| put32(image, ptrmap_entry(&g, page(k)) + 1, page(k - 1) + 7),
        Some((true, true)),
        "a pointer-map entry naming another page before",
    );

    // A cycle: page k names the chain's first page as its next.
    damaged(
        &|image| put32(image, g.offset(page(k)), page(0)),
        Some((true, false)),
        "the walk that reads it disagrees",
    );

    // Two pages swapped, pointers telling the truth, the map lying.
    let mut swapped = clean.clone();
    let (a, b) = (g.offset(page(k)) as usize, g.offset(page(k + 1)) as usize);
    let ps = g.page_bytes as usize;
    let body_a = clean[a..a + ps].to_vec();
    let body_b = clean[b..b + ps].to_vec();
    swapped[a..a + ps].copy_from_slice(&body_b);
    swapped[b..b + ps].copy_from_slice(&body_a);
    put32(&mut swapped, g.offset(page(k - 1)), page(k + 1));
    put32(&mut swapped, g.offset(page(k + 1)), page(k));
    put32(&mut swapped, g.offset(page(k)), page(k + 2));
    assert_eq!(
        tail(&swapped).map(|t| t.1),
        Some(false),
        "the whole walk sees the swap"
    );
    same_as_sqlite(dir.path(), swapped, &sizes);

    // The first overflow page out of the file.
    let (leaf_offset, first_at) = first_pointer(&clean, &g, &map);
    damaged(
        &|image| put32(image, leaf_offset + first_at, 0xffff_ff00),
        None,
        "not located",
    );

    // A last page that names a next one.
    damaged(
        &|image| put32(image, g.offset(page(n - 1)), page(0)),
        Some((false, false)),
        "a last page that names a next one",
    );
}

/// Where the cell of `map`'s row keeps its first overflow page number:
/// the leaf's offset in the file, and the pointer's offset in the leaf.
fn first_pointer(image: &[u8], g: &Geometry, map: &PayloadMap) -> (u64, u64) {
    let first = map.chain.page_at(0).unwrap().to_be_bytes();
    for p in 2..=g.pages {
        let at = g.offset(p) as usize;
        let page = &image[at..at + g.page_bytes as usize];
        if page[0] != LEAF_TABLE {
            continue;
        }
        let needle: Vec<u8> = map.local[map.local.len() - 16..]
            .iter()
            .copied()
            .chain(first)
            .collect();
        if let Some(i) = page.windows(needle.len()).position(|w| w == needle) {
            return (at as u64, (i + 16) as u64);
        }
    }
    panic!("the cell was not found");
}

#[test]
fn keys_out_of_order_in_a_catalog_page_are_not_searched() {
    let dir = tempfile::tempdir().unwrap();
    // Enough rows for an interior root: cells of ~500 bytes, eight a leaf.
    let sizes: Vec<usize> = (0..60).map(|i| 5000 + i * 10).collect();
    let (path, clean) = write_archive(dir.path(), "a.dendro", &sizes);
    let s = serve(&path, clean.clone());
    let root = map_root(&s.archive);
    let g = Geometry::from_header(&clean, clean.len() as u64).unwrap();
    let at = g.offset(root) as usize;
    assert_eq!(clean[at], INTERIOR_TABLE, "an interior root");
    drop(s);
    // Swap the first two cell pointers: keys no longer ascend.
    let mut bad = clean.clone();
    bad.copy_within(at + 12..at + 14, at + 200);
    bad.copy_within(at + 14..at + 16, at + 12);
    bad.copy_within(at + 200..at + 202, at + 14);
    bad[at + 200..at + 202].copy_from_slice(&clean[at + 200..at + 202]);
    let s = serve(&path, bad.clone());
    let found = locate_seq(&s, 3, sizes[3]).unwrap();
    assert!(found.is_none());
    drop(s);
    same_as_sqlite(dir.path(), bad, &sizes);
}

/// A small generator for the damage sweep.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn random_damage_to_catalog_map_and_chain_pages_reads_as_sqlite_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let sizes: Vec<usize> = (0..24).map(|i| 3000 + i * 1700).collect();
    let (_, clean) = write_archive(dir.path(), "a.dendro", &sizes);
    let g = Geometry::from_header(&clean, clean.len() as u64).unwrap();
    // Pages worth damaging: b-tree pages, the pointer map, the heads of chain pages.
    let mut targets = Vec::new();
    for p in 2..=g.pages {
        let at = g.offset(p) as usize;
        if g.is_ptrmap(p) {
            targets.push((at, g.usable as usize));
        } else if matches!(clean[at], INTERIOR_TABLE | LEAF_TABLE) {
            targets.push((at, g.page_bytes as usize));
        } else {
            targets.push((at, 8));
        }
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut by_range = 0;
    for _ in 0..120 {
        let mut image = clean.clone();
        for _ in 0..1 + next(&mut state) % 3 {
            let (at, span) = targets[(next(&mut state) % targets.len() as u64) as usize];
            let i = at + (next(&mut state) % span as u64) as usize;
            image[i] ^= 1 << (next(&mut state) % 8);
        }
        by_range += same_as_sqlite(dir.path(), image, &sizes);
    }
    assert!(by_range > 0, "the damaged files were read by range too");
}

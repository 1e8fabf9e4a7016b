//! Where SQLite puts the pages a chain may not use, what a chain's guess
//! takes, and what a pointer-map page says once turned round, on headers
//! made by hand (the reads of whole archives are `payload`'s tests).

use super::*;
use crate::pager::Geometry;

fn header(page_bytes: u16, reserved: u8, pages: u32, auto_vacuum: bool) -> Vec<u8> {
    let mut h = vec![0u8; 100];
    h[..16].copy_from_slice(b"SQLite format 3\0");
    h[16..18].copy_from_slice(&page_bytes.to_be_bytes());
    h[20] = reserved;
    h[24..28].copy_from_slice(&7u32.to_be_bytes());
    h[92..96].copy_from_slice(&7u32.to_be_bytes());
    h[28..32].copy_from_slice(&pages.to_be_bytes());
    if auto_vacuum {
        h[52..56].copy_from_slice(&3u32.to_be_bytes());
    }
    h
}

#[test]
fn pointer_map_pages_and_the_lock_byte_page_are_where_sqlite_puts_them() {
    // 4 KiB pages: each pointer-map page covers 819 pages.
    let g = Geometry::from_header(&header(4096, 0, 2_000_000, true), 1 << 40).unwrap();
    assert_eq!(
        g.pages, 2_000_000,
        "the header's count, the file being larger"
    );
    assert!(g.is_ptrmap(2) && g.is_ptrmap(822) && g.is_ptrmap(1642));
    assert!(!g.is_ptrmap(3) && !g.is_ptrmap(821) && !g.is_ptrmap(823));
    assert_eq!(g.ptrmap_of(821), 2);
    assert_eq!(g.ptrmap_of(823), 822);
    assert_eq!(g.next_after(821), Some(823), "a chain skips the map");
    // The lock-byte page (1 GiB in) is skipped; so is a map that falls there.
    assert_eq!(g.pending_page(), 262_145);
    assert_eq!(g.next_after(262_144), Some(262_146));
    let small = Geometry::from_header(&header(512, 0, 3_000_000, true), 1 << 40).unwrap();
    let per = 512 / 5 + 1;
    let pending = small.pending_page();
    assert_eq!(pending, 2_097_153);
    // A map due on the lock-byte page moves one page on.
    let due = (pending - 2) / per * per + 2;
    if due == pending {
        assert!(small.is_ptrmap(pending + 1));
    }
    assert!(!small.is_ptrmap(pending));
    let chain = guessed_chain(&small, pending - 2, 6).unwrap();
    assert!(chain
        .iter()
        .all(|&(p, n)| (p..p + n).all(|q| q != pending && !small.is_ptrmap(q))));
    // Without auto-vacuum nothing is a map page.
    let plain = Geometry::from_header(&header(4096, 0, 100, false), 1 << 30).unwrap();
    assert!(!plain.is_ptrmap(2) && !plain.is_ptrmap(822));
}

#[test]
fn a_header_out_of_bounds_is_not_taken_apart() {
    assert!(Geometry::from_header(&header(1000, 0, 10, true), 1 << 20).is_none());
    assert!(Geometry::from_header(&header(512, 40, 10, true), 1 << 20).is_none());
    assert!(Geometry::from_header(&header(4096, 0, 10, true)[..99], 1 << 20).is_none());
    // An invalid count (change counter disagrees): the file's size decides.
    let mut h = header(4096, 0, 10, true);
    h[95] = 9;
    assert_eq!(Geometry::from_header(&h, 40 * 4096).unwrap().pages, 40);
    // A partial last page counts, as SQLite's pager counts it.
    assert_eq!(Geometry::from_header(&h, 40 * 4096 + 1).unwrap().pages, 41);
    // A count past the file is held to the file.
    assert_eq!(
        Geometry::from_header(&header(4096, 0, 99, true), 40 * 4096)
            .unwrap()
            .pages,
        40
    );
    assert_eq!(
        Geometry::from_header(&header(1, 0, 3, true), 3 << 16)
            .unwrap()
            .page_bytes,
        65536
    );
}

#[test]
fn a_chain_guess_stops_at_the_file_end_and_one_that_starts_nowhere_is_not_made() {
    let g = Geometry::from_header(&header(4096, 0, 1000, true), 1000 * 4096).unwrap();
    assert_eq!(guessed_chain(&g, 990, 20).unwrap(), vec![(990, 11)]);
    assert!(guessed_chain(&g, 0, 1).is_none());
    assert!(guessed_chain(&g, 1, 1).is_none());
    assert!(guessed_chain(&g, 822, 1).is_none(), "a map page");
    assert!(guessed_chain(&g, 3, u64::from(u32::MAX) + 5).is_none());
    assert_eq!(
        guessed_chain(&g, 800, 30).unwrap(),
        vec![(800, 22), (823, 8)]
    );
}

/// A pointer-map page turned round names, for each page, the overflow
/// page whose entry calls it the page before; two entries calling one
/// page that leave it unnamed (0), as do entries of other types. And
/// neither a map page, page 1 nor the lock-byte page can be named into a
/// chain.
#[test]
fn a_turned_map_names_each_successor_once_and_only_chain_pages() {
    let g = Geometry::from_header(&header(4096, 0, 2_000_000, true), 1 << 40).unwrap();
    let mut map = vec![0u8; 4096];
    let mut entry = |page: u32, kind: u8, parent: u32| {
        let at = 5 * (page - 2 - 1) as usize;
        map[at] = kind;
        map[at + 1..at + 5].copy_from_slice(&parent.to_be_bytes());
    };
    entry(10, PTRMAP_OVERFLOW2, 500);
    entry(11, PTRMAP_OVERFLOW2, 10);
    entry(20, PTRMAP_OVERFLOW2, 77);
    entry(30, PTRMAP_OVERFLOW2, 77);
    entry(40, 3, 600);
    let turned = turned_round(&g, 2, &map);
    assert_eq!(turned.get(&500), Some(&10));
    assert_eq!(turned.get(&10), Some(&11));
    assert_eq!(turned.get(&77), Some(&0), "named twice: unnamed");
    assert_eq!(turned.get(&600), None, "not an overflow entry");
    assert!(g.can_chain(3) && g.can_chain(821) && g.can_chain(2_000_000));
    assert!(!g.can_chain(1) && !g.can_chain(2) && !g.can_chain(822));
    assert!(!g.can_chain(g.pending_page()) && !g.can_chain(2_000_001));
}

//! Archives written here and read back by range through a lazy file over
//! their bytes, compared with SQLite's own reads of the same file.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};

use super::*;
use crate::container::lazy::LazyConfig;
use crate::container::lazy::{serve_payloads, set_in_place_payloads, InPlace};
use crate::container::{Archive, ArchiveMut};
use crate::segment::Segment;
use crate::Labels;

/// A file image as a byte source, that can be made to change and counts
/// what it is asked.
struct Image {
    bytes: Rc<Vec<u8>>,
    changed: Rc<Cell<bool>>,
    reads: Rc<Cell<u64>>,
    read_bytes: Rc<Cell<u64>>,
}

impl ByteSource for Image {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), SourceFailure> {
        if self.changed.get() {
            return Err(SourceFailure::Changed("ETag \"2\" is not \"1\"".into()));
        }
        let at = offset as usize;
        buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
        self.reads.set(self.reads.get() + 1);
        self.read_bytes
            .set(self.read_bytes.get() + buf.len() as u64);
        Ok(())
    }
}

/// The payload of segment `seq`: `len` bytes that differ from page to page.
fn payload_of(seq: i64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u64)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seq as u64 * 97) as u8
                ^ (i >> 12) as u8
        })
        .collect()
}

/// Writes an archive whose segments (seq 0, 1, ...) hold payloads of
/// `sizes` bytes; even ones carry a caller index (a column after the
/// payload). Returns its path and image.
fn write(dir: &Path, name: &str, sizes: &[usize]) -> (PathBuf, Vec<u8>) {
    let path = dir.join(name);
    {
        let mut archive = ArchiveMut::create(&path).unwrap();
        let tx = archive.transaction().unwrap();
        let source = tx.insert_source(&Labels::new(), &Labels::new(), 0).unwrap();
        assert_eq!(source, 1);
        for (seq, &len) in sizes.iter().enumerate() {
            let seq = seq as i64;
            let segment = Segment {
                bytes: payload_of(seq, len),
                rows: 1,
                first_ts: seq * 10,
                last_ts: seq * 10 + 5,
                caller_index: (seq % 2 == 0).then(|| vec![seq as u8; 40]),
            };
            tx.insert_segment(1, "m", seq, &segment).unwrap();
        }
        tx.commit().unwrap();
    }
    let image = std::fs::read(&path).unwrap();
    (path, image)
}

struct Served {
    archive: Archive,
    file: Rc<RefCell<LazyFile<Image>>>,
    changed: Rc<Cell<bool>>,
    reads: Rc<Cell<u64>>,
    read_bytes: Rc<Cell<u64>>,
}

/// Opens `path` with SQLite and registers a lazy file over `image` as the
/// file it reads in place (natively SQLite reads the file on disk itself,
/// so only reads by range reach the image).
fn serve(path: &Path, image: Vec<u8>) -> Served {
    let archive = Archive::open(path).unwrap();
    let changed = Rc::new(Cell::new(false));
    let reads = Rc::new(Cell::new(0));
    let read_bytes = Rc::new(Cell::new(0));
    let source = Image {
        bytes: Rc::new(image),
        changed: Rc::clone(&changed),
        reads: Rc::clone(&reads),
        read_bytes: Rc::clone(&read_bytes),
    };
    let file = Rc::new(RefCell::new(LazyFile::new(source, LazyConfig::LOCAL_FILE)));
    let weak: Weak<dyn InPlace> = Rc::downgrade(&file) as _;
    assert!(serve_payloads(&archive, weak));
    Served {
        archive,
        file,
        changed,
        reads,
        read_bytes,
    }
}

fn via_catalog(archive: &Archive, seq: i64, offset: usize, len: usize) -> crate::Result<Vec<u8>> {
    archive.read_snapshot(|s| {
        let payload = s.segment_payload(1, "m", seq)?;
        let mut buf = vec![0u8; len];
        payload.read_at(offset, &mut buf)?;
        Ok(buf)
    })
}

/// The ranges each payload is read at: whole, head, tail, a footer's
/// worth of tail, the middle, one byte past the end.
fn ranges(len: usize) -> Vec<(usize, usize)> {
    let mut out = vec![(0, len), (0, len.min(4)), (len / 3, len / 3)];
    if len >= 8 {
        out.push((len - 8, 8));
    }
    let footer = len.min(3000);
    out.push((len - footer, footer));
    out.push((len.saturating_sub(4), 5));
    out
}

const SIZES: [usize; 11] = [
    3_600_000, 10, 0, 400, 3000, 4100, 9000, 70_000, 1_000_000, 50, 8200,
];

#[test]
fn every_range_of_every_payload_reads_as_written_and_by_range() {
    let dir = tempfile::tempdir().unwrap();
    let (path, image) = write(dir.path(), "a.dendro", &SIZES);
    let s = serve(&path, image);
    for (seq, &len) in SIZES.iter().enumerate() {
        let seq = seq as i64;
        let expected = payload_of(seq, len);
        for (offset, n) in ranges(len) {
            let touched = |s: &Served| s.reads.get() + s.file.borrow().stats().hits;
            let before = touched(&s);
            let got = via_catalog(&s.archive, seq, offset, n);
            if offset + n > len {
                assert!(got.is_err(), "seq {seq}: a range past the end is refused");
                continue;
            }
            assert_eq!(
                got.unwrap(),
                expected[offset..offset + n],
                "seq {seq} at {offset}+{n}"
            );
            // Past the cell, the bytes came by range (natively SQLite never reads the image).
            if len > 4000 && offset > 4000 {
                assert!(
                    touched(&s) > before || n == 0,
                    "seq {seq} at {offset}: read by range"
                );
            }
        }
    }
}

#[test]
fn a_tail_costs_the_last_pages_and_their_maps_and_a_whole_payload_one_read() {
    let dir = tempfile::tempdir().unwrap();
    let (path, image) = write(dir.path(), "a.dendro", &SIZES);
    let s = serve(&path, image);
    let len = SIZES[0];
    // Warm the header and the catalog's pages, as the open does.
    via_catalog(&s.archive, 0, 0, 4).unwrap();
    let before = s.read_bytes.get();
    assert_eq!(
        via_catalog(&s.archive, 0, len - 8, 8).unwrap(),
        payload_of(0, len)[len - 8..]
    );
    let tail = s.read_bytes.get() - before;
    assert!(
        tail <= 24 << 10,
        "{tail} bytes read for an 8-byte tail of {len}"
    );
    // The whole payload, its chain crossing a pointer-map page: one read.
    let (reads, bytes) = (s.reads.get(), s.read_bytes.get());
    assert_eq!(
        via_catalog(&s.archive, 0, 0, len).unwrap(),
        payload_of(0, len)
    );
    assert_eq!(s.reads.get() - reads, 1, "one read for the whole chain");
    assert!(s.read_bytes.get() - bytes <= len as u64 + len as u64 / 50 + (16 << 10));
    // None of it went through the cache.
    assert!(s.file.borrow().stats().cached_bytes < 64 << 10);
}

/// A whole payload in one run is read with one read, the pointer map not
/// fetched to look ahead: SQLite's guess of the next page is right all
/// along, as each page's pointer shows.
#[test]
fn a_whole_payload_in_one_run_costs_one_read_and_no_pointer_map_page() {
    let dir = tempfile::tempdir().unwrap();
    let (path, image) = write(dir.path(), "a.dendro", &SIZES);
    let s = serve(&path, image);
    let len = SIZES[0];
    // The row's catalog pages, as the open's prefetch brings them in.
    via_catalog(&s.archive, 0, 0, 4).unwrap();
    let reads = s.reads.get();
    assert_eq!(
        via_catalog(&s.archive, 0, 0, len).unwrap(),
        payload_of(0, len)
    );
    assert_eq!(
        s.reads.get() - reads,
        1,
        "one read for a chain of {len} bytes"
    );
}

#[test]
fn a_file_that_changes_mid_read_is_an_error_for_every_later_read() {
    let dir = tempfile::tempdir().unwrap();
    let (path, image) = write(dir.path(), "a.dendro", &SIZES);
    let s = serve(&path, image);
    via_catalog(&s.archive, 0, 0, 100).unwrap();
    s.changed.set(true);
    let err = via_catalog(&s.archive, 8, 500_000, 1000).unwrap_err();
    assert!(
        matches!(
            &err,
            crate::Error::Source {
                cause: SourceFailure::Changed(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("changed while it was being read"),
        "{err}"
    );
    // Even with the source answering again, the file stays failed.
    s.changed.set(false);
    let again = via_catalog(&s.archive, 0, SIZES[0] - 8, 8).unwrap_err();
    assert!(matches!(again, crate::Error::Source { .. }), "{again:?}");
}

#[test]
fn with_reads_by_range_off_nothing_reaches_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let (path, image) = write(dir.path(), "a.dendro", &SIZES);
    let s = serve(&path, image);
    set_in_place_payloads(false);
    let got = via_catalog(&s.archive, 0, 0, SIZES[0]);
    set_in_place_payloads(true);
    assert_eq!(got.unwrap(), payload_of(0, SIZES[0]));
    assert_eq!(s.reads.get(), 0);
}

/// The map of segment `seq` in `image` (a clean one), for finding pages to damage.
fn map_of(path: &Path, image: &[u8], seq: i64) -> (Geometry, PayloadMap) {
    let s = serve(path, image.to_vec());
    let (rowid, len): (i64, i64) = s
        .archive
        .conn
        .query_row(
            "SELECT rowid, length(bytes) FROM segments WHERE seq = ?1",
            [seq],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let table = PayloadTable {
        root: s
            .archive
            .conn
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'segments'",
                [],
                |r| r.get(0),
            )
            .unwrap(),
        column: 6,
    };
    let len = len as u64;
    let map = locate(
        &mut s.file.borrow_mut(),
        table,
        rowid,
        len,
        &payload_of(seq, len as usize)[..4],
    )
    .unwrap()
    .expect("a clean archive's payload is found");
    (map.geometry, map)
}

/// Writes `image` beside the clean file and checks that every range of
/// every payload reads the same with reads by range on as SQLite alone
/// reads it (or fails with both). Returns how many reads went by range.
fn same_as_sqlite(dir: &Path, image: Vec<u8>, sizes: &[usize]) -> u64 {
    let payloads: Vec<(i64, usize)> = sizes
        .iter()
        .enumerate()
        .map(|(seq, &len)| (seq as i64, len))
        .collect();
    same_as_sqlite_at(dir, image, &payloads)
}

/// [`same_as_sqlite`] for payloads named by `(seq, length)`.
fn same_as_sqlite_at(dir: &Path, image: Vec<u8>, payloads: &[(i64, usize)]) -> u64 {
    let path = dir.join("damaged.dendro");
    std::fs::write(&path, &image).unwrap();
    let _ = std::fs::remove_file(dir.join("damaged.dendro-wal"));
    let _ = std::fs::remove_file(dir.join("damaged.dendro-shm"));
    let Ok(archive) = Archive::open(&path) else {
        return 0;
    };
    drop(archive);
    let s = serve(&path, image);
    for &(seq, len) in payloads {
        for (offset, n) in ranges(len) {
            let direct = via_catalog(&s.archive, seq, offset, n);
            set_in_place_payloads(false);
            let sqlite = via_catalog(&s.archive, seq, offset, n);
            set_in_place_payloads(true);
            match (&direct, &sqlite) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "seq {seq} at {offset}+{n}"),
                (Err(_), Err(_)) => {}
                _ => panic!("seq {seq} at {offset}+{n}: by range {direct:?}, SQLite {sqlite:?}"),
            }
        }
    }
    s.reads.get()
}

fn put32(image: &mut [u8], at: u64, value: u32) {
    let at = at as usize;
    image[at..at + 4].copy_from_slice(&value.to_be_bytes());
}

fn ptrmap_entry(g: &Geometry, page: u32) -> u64 {
    let m = g.ptrmap_of(page);
    g.offset(m) + 5 * u64::from(page - m - 1)
}

#[test]
fn damaged_chains_and_lying_pointer_maps_read_as_sqlite_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = [3_600_000, 200_000, 20_000];
    let (path, clean) = write(dir.path(), "a.dendro", &sizes);
    let (g, map) = map_of(&path, &clean, 0);
    assert!(
        map.chain.len() >= 2,
        "the big chain crosses a pointer-map page: {:?}",
        map.chain
    );
    let n = map.pages;
    let page = |i| map.page_at(i).unwrap();
    let tail = |image: &[u8]| {
        let s = serve(&path, image.to_vec());
        let rowid: i64 = s
            .archive
            .conn
            .query_row("SELECT rowid FROM segments WHERE seq = 0", [], |r| r.get(0))
            .unwrap();
        let table = PayloadTable {
            root: map_root(&s.archive),
            column: 6,
        };
        let mut m = locate(
            &mut s.file.borrow_mut(),
            table,
            rowid,
            sizes[0] as u64,
            &payload_of(0, sizes[0])[..4],
        )
        .unwrap();
        let mut tail = [0u8; 8];
        let mut whole = vec![0u8; sizes[0]];
        m.as_mut().map(|m| {
            let f = &mut s.file.borrow_mut();
            (
                super::super::read(f, m, sizes[0] as u64 - 8, &mut tail).unwrap(),
                super::super::read(f, m, 0, &mut whole).unwrap(),
            )
        })
    };
    assert_eq!(
        tail(&clean),
        Some((true, true)),
        "the clean chain reads by range"
    );

    // A pointer-map entry that no longer says "overflow page after (k-1)".
    let k = n / 2;
    let mut wrong_type = clean.clone();
    wrong_type[ptrmap_entry(&g, page(k)) as usize] = 2;
    assert_eq!(
        tail(&wrong_type),
        Some((true, true)),
        "a skip the map does not prove reads the page before, as SQLite does"
    );
    same_as_sqlite(dir.path(), wrong_type, &sizes);
    // An entry of no type at all is damage SQLite reports when it looks.
    let mut no_type = clean.clone();
    no_type[ptrmap_entry(&g, page(k)) as usize] = 0;
    assert_eq!(tail(&no_type), Some((false, true)), "SQLite's to report");
    same_as_sqlite(dir.path(), no_type, &sizes);
    let mut wrong_parent = clean.clone();
    put32(
        &mut wrong_parent,
        ptrmap_entry(&g, page(k)) + 1,
        page(k - 1) + 7,
    );
    assert_eq!(tail(&wrong_parent), Some((true, true)));
    same_as_sqlite(dir.path(), wrong_parent, &sizes);

    // A cycle: page k names the chain's first page as its next.
    let mut cycle = clean.clone();
    put32(&mut cycle, g.offset(page(k)), page(0));
    assert_eq!(
        tail(&cycle),
        Some((true, false)),
        "the walk that reads it disagrees"
    );
    same_as_sqlite(dir.path(), cycle, &sizes);

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
    let mut out_of_file = clean.clone();
    put32(&mut out_of_file, leaf_offset + first_at, 0xffff_ff00);
    assert_eq!(tail(&out_of_file), None, "not located");
    same_as_sqlite(dir.path(), out_of_file, &sizes);

    // A last page that names a next one.
    let mut longer = clean.clone();
    put32(&mut longer, g.offset(page(n - 1)), page(0));
    assert_eq!(tail(&longer), Some((false, false)));
    same_as_sqlite(dir.path(), longer, &sizes);
}

fn map_root(archive: &Archive) -> u32 {
    archive
        .conn
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 'segments'",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

/// Where the cell of `map`'s row keeps its first overflow page number:
/// the leaf's offset in the file, and the pointer's offset in the leaf.
fn first_pointer(image: &[u8], g: &Geometry, map: &PayloadMap) -> (u64, u64) {
    let first = map.page_at(0).unwrap().to_be_bytes();
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
    let (path, clean) = write(dir.path(), "a.dendro", &sizes);
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
    let rowid: i64 = s
        .archive
        .conn
        .query_row("SELECT rowid FROM segments WHERE seq = 3", [], |r| r.get(0))
        .unwrap();
    let table = PayloadTable { root, column: 6 };
    let found = locate(
        &mut s.file.borrow_mut(),
        table,
        rowid,
        sizes[3] as u64,
        &payload_of(3, sizes[3])[..4],
    )
    .unwrap();
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
    let (_, clean) = write(dir.path(), "a.dendro", &sizes);
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

/// Writes an archive whose later payloads reuse the pages earlier ones
/// freed: 40 payloads of 30 kB, every other one deleted, then payloads of
/// 200 kB that take the free pages first (SQLite hands out free-list
/// pages before growing the file), so their chains break wherever one
/// freed run ends. Returns its path, image and the payloads' seqs and
/// sizes.
fn write_fragmented(dir: &Path) -> (PathBuf, Vec<u8>, Vec<(i64, usize)>) {
    let path = dir.join("fragmented.dendro");
    let mut kept = Vec::new();
    {
        let mut archive = ArchiveMut::create(&path).unwrap();
        let put = |archive: &mut ArchiveMut, seqs: std::ops::Range<i64>, len: usize| {
            let tx = archive.transaction().unwrap();
            for seq in seqs {
                let segment = Segment {
                    bytes: payload_of(seq, len),
                    rows: 1,
                    first_ts: seq * 10,
                    last_ts: seq * 10 + 5,
                    caller_index: None,
                };
                tx.insert_segment(1, "m", seq, &segment).unwrap();
            }
            tx.commit().unwrap();
        };
        let tx = archive.transaction().unwrap();
        tx.insert_source(&Labels::new(), &Labels::new(), 0).unwrap();
        tx.commit().unwrap();
        put(&mut archive, 0..40, 30_000);
        archive
            .conn
            .execute("DELETE FROM segments WHERE seq % 2 = 1", [])
            .unwrap();
        put(&mut archive, 100..106, 200_000);
        kept.extend((0..40).step_by(2).map(|seq| (seq, 30_000)));
        kept.extend((100..106).map(|seq| (seq, 200_000)));
    }
    let image = std::fs::read(&path).unwrap();
    (path, image, kept)
}

#[test]
fn fragmented_chains_read_by_range_their_breaks_fetched_together() {
    let dir = tempfile::tempdir().unwrap();
    let (path, image, payloads) = write_fragmented(dir.path());
    let (g, map) = map_of(&path, &image, 100);
    // The map as first found is SQLite's guess; prove it to learn the runs.
    let map = {
        let s = serve(&path, image.clone());
        let mut map = map;
        let last = map.pages - 1;
        assert!(super::super::prove(&mut s.file.borrow_mut(), &mut map, last).unwrap());
        map
    };
    assert!(
        map.chain.len() > 3,
        "the chain reuses freed runs: {:?}",
        map.chain
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
    let breaks = map.chain.len() as u64 - 1;
    assert!(breaks >= 4, "{:?}", map.chain);
    let s = serve(&path, image.clone());
    via_catalog(&s.archive, 100, 0, 4).unwrap();
    let before = (s.reads.get(), s.read_bytes.get());
    let tail = via_catalog(&s.archive, 100, 200_000 - 8, 8).unwrap();
    assert_eq!(tail, payload_of(100, 200_000)[200_000 - 8..]);
    let (reads, bytes) = (s.reads.get() - before.0, s.read_bytes.get() - before.1);
    assert!(
        reads <= 3 && reads < breaks,
        "{reads} reads for a tail of a chain of {} pages with {breaks} breaks",
        map.pages
    );
    let maps = every_ptrmap(&g).unwrap().len() as u64;
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
    let k = map.chain[0].1 - 1;
    for wrong in [0xffff_ff00, map.page_at(k + 2).unwrap()] {
        let mut damaged = image.clone();
        put32(&mut damaged, g.offset(map.page_at(k).unwrap()), wrong);
        reads_as_written_and_fails_the_integrity_check(dir.path(), damaged, &payloads);
    }
    // Damage to the map itself at that break: the page before is read,
    // as SQLite reads it.
    let mut unnamed = image.clone();
    damaged_entry(&mut unnamed, &g, map.page_at(k + 1).unwrap(), 2);
    same_as_sqlite_at(dir.path(), unnamed, &payloads);
    // Two entries naming the one page before: the map tells nothing there.
    let mut twice = image;
    // (the last such page: one after the true successor, whose entry the
    // map would otherwise take)
    let other = (2..=g.pages)
        .rev()
        .find(|&p| g.can_chain(p) && !map.chain.iter().any(|r| p >= r.0 && p < r.0 + r.1))
        .unwrap();
    let named = map.page_at(k).unwrap();
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
    let before = s.reads.get();
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
    assert_eq!(s.reads.get(), before, "making the plan read nothing itself");
    assert!(s.file.borrow().failure().is_none());
    for &(seq, len) in &payloads {
        let n = tail(len);
        let got = via_catalog(&s.archive, seq, len - n, n).unwrap();
        assert_eq!(got, payload_of(seq, len)[len - n..], "seq {seq}");
    }
    assert_eq!(s.reads.get(), before, "the planned tails waited on no read");
}

/// The live rows' prefetch (the browser engine's tail plan) names each
/// `wal` row's overflow pages by [`LazyFile::payload_ranges`]: exactly the
/// pages of the row's chain, as its pointers link them, and nothing for
/// a row that fits its cell.
#[test]
fn a_wal_rows_overflow_pages_are_named_as_its_chain_links_them() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write(dir.path(), "w.dendro", &[10]);
    // A 4 KiB page holds a cell of up to 4,061 bytes: the first two fit.
    let sizes = [10usize, 3900, 5000, 9000, 70_000, 300];
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        for (i, &len) in sizes.iter().enumerate() {
            conn.execute(
                "INSERT INTO wal(source_id, stream, ts, wall_offset, row) VALUES (1, 'm', ?1, 0, ?2)",
                rusqlite::params![1000 + i as i64, payload_of(i as i64 + 7, len)],
            )
            .unwrap();
        }
    }
    let image = std::fs::read(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (root, column): (i64, i64) = conn
        .query_row(
            "SELECT s.rootpage, p.cid FROM sqlite_schema AS s, pragma_table_info('wal') AS p \
             WHERE s.name = 'wal' AND p.name = 'row'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let table = PayloadTable {
        root: root as u32,
        column: column as usize,
    };
    let g = Geometry::from_header(&image[..100], image.len() as u64).unwrap();
    let page_bytes = u64::from(g.page_bytes);
    let mut file = LazyFile::new(
        Image {
            bytes: Rc::new(image.clone()),
            changed: Rc::new(Cell::new(false)),
            reads: Rc::new(Cell::new(0)),
            read_bytes: Rc::new(Cell::new(0)),
        },
        LazyConfig::LOCAL_FILE,
    );
    let mut spilled = 0;
    for (i, &len) in sizes.iter().enumerate() {
        let rowid: i64 = conn
            .query_row(
                "SELECT rowid FROM wal WHERE ts = ?1",
                [1000 + i as i64],
                |r| r.get(0),
            )
            .unwrap();
        let row = payload_of(i as i64 + 7, len);
        let head = &row[..len.min(16)];
        let ranges = file.payload_ranges(table, rowid, len as u64, head).unwrap();
        let named: Vec<u32> = ranges
            .iter()
            .flat_map(|&(offset, n)| {
                assert!(
                    offset % page_bytes == 0 && n % page_bytes == 0,
                    "{ranges:?}"
                );
                (0..n / page_bytes).map(move |k| (offset / page_bytes + k) as u32 + 1)
            })
            .collect();
        if len < 4000 {
            assert!(
                named.is_empty(),
                "row {i} of {len} bytes fits its cell: {named:?}"
            );
            continue;
        }
        spilled += 1;
        // Follow the chain from the first page named: each overflow page
        // starts with the number of the next, 0 at the end.
        let mut chain = vec![named[0]];
        loop {
            let at = g.offset(*chain.last().unwrap()) as usize;
            let next = u32::from_be_bytes(image[at..at + 4].try_into().unwrap());
            if next == 0 {
                break;
            }
            chain.push(next);
            assert!(
                chain.len() <= named.len(),
                "row {i}: the chain is longer than named"
            );
        }
        let mut sorted = named.clone();
        sorted.sort_unstable();
        sorted.dedup();
        chain.sort_unstable();
        assert_eq!(sorted, chain, "row {i} of {len} bytes");
    }
    assert_eq!(spilled, 3);
}

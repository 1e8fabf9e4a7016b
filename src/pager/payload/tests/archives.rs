//! Archives read back by range whole: every range of every payload, what
//! a tail and a whole payload cost, a file that changes under the reader,
//! and the overflow pages a live row's prefetch names.

use super::*;
use crate::pager::mock::{write_archive, Image};
use crate::pager::{LazyConfig, SourceFailure};

/// An archive of payloads of [`SIZES`] bytes, served by range.
fn served(dir: &Path) -> Served {
    let (path, image) = write_archive(dir, "a.dendro", &SIZES);
    serve(&path, image)
}

/// [`served`], with the header and segment 0's catalog pages held, as
/// the open and its prefetch leave them.
fn warmed(dir: &Path) -> Served {
    let s = served(dir);
    via_catalog(&s.archive, 0, 0, 4).unwrap();
    s
}

/// Reads segment 0 whole through the catalog and checks its bytes; the
/// reads and bytes that cost the image.
fn read_first_whole(s: &Served) -> (u64, u64) {
    let len = SIZES[0];
    let (reads, bytes) = (s.image.reads(), s.image.read_bytes());
    assert_eq!(
        via_catalog(&s.archive, 0, 0, len).unwrap(),
        payload_of(0, len)
    );
    (s.image.reads() - reads, s.image.read_bytes() - bytes)
}

#[test]
fn every_range_of_every_payload_reads_as_written_and_by_range() {
    let dir = tempfile::tempdir().unwrap();
    let s = served(dir.path());
    for (seq, &len) in SIZES.iter().enumerate() {
        let seq = seq as i64;
        let expected = payload_of(seq, len);
        for (offset, n) in ranges(len) {
            let touched = |s: &Served| s.image.reads() + s.file.borrow().stats().hits;
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
    let s = warmed(dir.path());
    let len = SIZES[0];
    let before = s.image.read_bytes();
    assert_eq!(
        via_catalog(&s.archive, 0, len - 8, 8).unwrap(),
        payload_of(0, len)[len - 8..]
    );
    let tail = s.image.read_bytes() - before;
    assert!(
        tail <= 24 << 10,
        "{tail} bytes read for an 8-byte tail of {len}"
    );
    // The whole payload, its chain crossing a pointer-map page: one read.
    let (reads, bytes) = read_first_whole(&s);
    assert_eq!(reads, 1, "one read for the whole chain");
    assert!(bytes <= len as u64 + len as u64 / 50 + (16 << 10));
    // None of it went through the cache.
    assert!(s.file.borrow().stats().cached_bytes < 64 << 10);
}

/// A whole payload in one run is read with one read, the pointer map not
/// fetched to look ahead: SQLite's guess of the next page is right all
/// along, as each page's pointer shows.
#[test]
fn a_whole_payload_in_one_run_costs_one_read_and_no_pointer_map_page() {
    let dir = tempfile::tempdir().unwrap();
    let s = warmed(dir.path());
    let len = SIZES[0];
    let (reads, _) = read_first_whole(&s);
    assert_eq!(reads, 1, "one read for a chain of {len} bytes");
}

#[test]
fn a_file_that_changes_mid_read_is_an_error_for_every_later_read() {
    let dir = tempfile::tempdir().unwrap();
    let s = served(dir.path());
    via_catalog(&s.archive, 0, 0, 100).unwrap();
    s.image.set_changed(true);
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
    s.image.set_changed(false);
    let again = via_catalog(&s.archive, 0, SIZES[0] - 8, 8).unwrap_err();
    assert!(matches!(again, crate::Error::Source { .. }), "{again:?}");
}

#[test]
fn with_reads_by_range_off_nothing_reaches_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let s = served(dir.path());
    set_in_place_payloads(false);
    let got = via_catalog(&s.archive, 0, 0, SIZES[0]);
    set_in_place_payloads(true);
    assert_eq!(got.unwrap(), payload_of(0, SIZES[0]));
    assert_eq!(s.image.reads(), 0);
    // Read through SQLite, the payload is counted as such, once.
    assert_eq!(s.file.borrow().stats().sqlite_payloads, 1);
}

/// The live rows' prefetch (the browser engine's tail plan) names each
/// `wal` row's overflow pages by [`LazyFile::payload_ranges`]: exactly the
/// pages of the row's chain, as its pointers link them, and nothing for
/// a row that fits its cell.
#[test]
fn a_wal_rows_overflow_pages_are_named_as_its_chain_links_them() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_archive(dir.path(), "w.dendro", &[10]);
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
    let mut file = Image::new(image.clone()).lazy(LazyConfig::LOCAL_FILE);
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

/// A writer-made archive as its writer left it (seals and prunes reuse
/// freed pages, so its chains break every few pages): the footers, the
/// column chunks and the whole payload of every segment read by range,
/// none through SQLite's pager; with reads by range off, every one is
/// counted as read through it.
#[cfg(feature = "demo")]
#[test]
fn no_segment_of_a_writer_made_archive_is_read_through_sqlite() {
    use crate::demo::{write_demo, DemoOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.dendro");
    let options = DemoOptions {
        hosts: 1,
        duration: std::time::Duration::from_secs(1200),
        seal_every: std::time::Duration::from_secs(60),
        ..DemoOptions::default()
    };
    write_demo(&path, options).unwrap();
    let records = Archive::open(&path)
        .unwrap()
        .read_snapshot(|s| s.all_segments())
        .unwrap();
    assert!(records.len() >= 40, "{} segments", records.len());
    let read_all = |s: &Served| {
        for r in &records {
            let stats = crate::read::stats::segment_stats(&s.archive, r).unwrap();
            assert!(stats.is_some(), "segment {} of {}", r.seq, r.stream);
            let columns = ["user".to_string()];
            crate::read::range::range_segment_bytes(&s.archive, r, Some(&columns)).unwrap();
            let whole = s
                .archive
                .read_snapshot(|snap| snap.segment_bytes(r.source_id, &r.stream, r.seq))
                .unwrap();
            assert_eq!(whole.len() as i64, r.bytes);
        }
    };
    let image = std::fs::read(&path).unwrap();
    let s = crate::pager::mock::serve(&path, image.clone());
    read_all(&s);
    assert_eq!(s.file.borrow().stats().sqlite_payloads, 0);
    // The counter counts: with reads by range off, every payload.
    let off = crate::pager::mock::serve(&path, image);
    set_in_place_payloads(false);
    read_all(&off);
    set_in_place_payloads(true);
    assert_eq!(
        off.file.borrow().stats().sqlite_payloads,
        3 * records.len() as u64
    );
}

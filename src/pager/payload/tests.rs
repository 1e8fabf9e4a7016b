//! The payload reader against SQLite itself: archives written here, read
//! by range through a lazy file over the same bytes, must give what SQLite
//! gives for every range, also when pages are damaged or lie, save where
//! damage to a pointer the map contradicts lies on a page a read skips
//! (then the bytes as written, and a file the integrity check fails).
//! The helpers every part shares are here; the archives come from
//! [`crate::pager::mock`].

#![cfg(feature = "write")]

use std::path::Path;

use super::*;
use crate::container::Archive;
use crate::pager::mock::{payload_of, serve, Served};
use crate::pager::set_in_place_payloads;

mod archives;
mod damage;
mod fragmented;

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

/// The map of segment `seq` in `image` (a clean one), for finding pages to damage.
fn map_of(path: &Path, image: &[u8], seq: i64) -> (Geometry, PayloadMap) {
    let s = serve(path, image.to_vec());
    let len: i64 = s
        .archive
        .conn
        .query_row(
            "SELECT length(bytes) FROM segments WHERE seq = ?1",
            [seq],
            |r| r.get(0),
        )
        .unwrap();
    let map = locate_seq(&s, seq, len as usize)
        .unwrap()
        .expect("a clean archive's payload is found");
    (map.chain.geometry(), map)
}

/// Where segment `seq` of `len` bytes lies in the image `s` reads by
/// range, found as a read by range finds it (the row's rowid and the
/// table's root as SQLite reads them from the file on disk).
fn locate_seq(s: &Served, seq: i64, len: usize) -> Result<Option<PayloadMap>, SourceFailure> {
    let rowid: i64 = s
        .archive
        .conn
        .query_row("SELECT rowid FROM segments WHERE seq = ?1", [seq], |r| {
            r.get(0)
        })
        .unwrap();
    let table = PayloadTable {
        root: map_root(&s.archive),
        column: 6,
    };
    let head = &payload_of(seq, len)[..4];
    locate(&mut s.file.borrow_mut(), table, rowid, len as u64, head)
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
    s.image.reads()
}

fn put32(image: &mut [u8], at: u64, value: u32) {
    let at = at as usize;
    image[at..at + 4].copy_from_slice(&value.to_be_bytes());
}

fn ptrmap_entry(g: &Geometry, page: u32) -> u64 {
    let m = g.ptrmap_of(page);
    g.offset(m) + 5 * u64::from(page - m - 1)
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

//! How many source reads it takes to reach an archive's payloads in place:
//! every segment's footer (its last 8 bytes, then the footer they name)
//! and then every whole payload, through a lazy file over the archive's
//! bytes, counting the reads by range and the ones left to SQLite (which,
//! in the browser, walk the chain a page at a time).
//!
//!     cargo bench --bench chain_reads -- ARCHIVE.dendro
//!
//! Natively SQLite reads the file on disk itself, so every read the lazy
//! file counts is a read by range.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use dendro::container::serve_payloads;
use dendro::pager::{ByteSource, InPlace, LazyConfig, LazyFile, SourceFailure};
use dendro::Archive;

/// The archive's bytes as the lazy file's source (the file counts reads).
struct Image(Vec<u8>);

impl ByteSource for Image {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), SourceFailure> {
        let at = offset as usize;
        buf.copy_from_slice(&self.0[at..at + buf.len()]);
        Ok(())
    }
}

#[derive(Default)]
struct Tally {
    by_range: u64,
    via_sqlite: u64,
}

fn main() -> dendro::Result<()> {
    // `cargo bench` passes `--bench`; the archive is what follows it.
    let path = std::env::args()
        .skip(1)
        .find(|a| a != "--bench")
        .expect("usage: chain_reads ARCHIVE");
    let archive = Archive::open(&path)?;
    let image = Image(std::fs::read(&path).expect("readable archive"));
    let file = Rc::new(RefCell::new(LazyFile::new(image, LazyConfig::LOCAL_FILE)));
    let weak: Weak<dyn InPlace> = Rc::downgrade(&file) as _;
    assert!(
        serve_payloads(&archive, weak),
        "the catalog says where payloads are"
    );
    let records = archive.read_snapshot(|s| s.all_segments())?;
    for whole in [false, true] {
        let before = file.borrow().stats();
        let mut tally = Tally::default();
        let started = std::time::Instant::now();
        archive.read_snapshot(|s| {
            for r in &records {
                let payload = s.segment_payload(r.source_id, &r.stream, r.seq)?;
                let len = payload.len();
                let Some(direct) = payload.in_place() else {
                    tally.via_sqlite += 1;
                    continue;
                };
                let mut ok = true;
                if whole {
                    let mut buf = vec![0u8; len];
                    ok &= direct.read_at(0, &mut buf).unwrap_or(false);
                } else if len >= 8 {
                    let mut trailer = [0u8; 8];
                    ok &= direct
                        .read_at(len as u64 - 8, &mut trailer)
                        .unwrap_or(false);
                    let footer = u64::from(u32::from_le_bytes(trailer[..4].try_into().unwrap()));
                    let footer = footer.min(len as u64 - 8);
                    let mut buf = vec![0u8; footer as usize];
                    ok &= direct
                        .read_at(len as u64 - 8 - footer, &mut buf)
                        .unwrap_or(false);
                }
                if ok {
                    tally.by_range += 1;
                } else {
                    tally.via_sqlite += 1;
                }
            }
            Ok(())
        })?;
        println!(
            "{}: {} payloads by range, {} left to SQLite; {} source reads, {:.1} MB, {:?}",
            if whole { "whole payloads" } else { "footers" },
            tally.by_range,
            tally.via_sqlite,
            file.borrow().stats().fetches - before.fetches,
            (file.borrow().stats().fetched_bytes - before.fetched_bytes) as f64 / 1e6,
            started.elapsed()
        );
    }
    Ok(())
}

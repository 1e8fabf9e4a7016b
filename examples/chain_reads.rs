//! How many source reads it takes to reach an archive's payloads in place:
//! every segment's footer (its last 8 bytes, then the footer they name)
//! and then every whole payload, through a lazy file over the archive's
//! bytes, counting the reads by range and the ones left to SQLite (which,
//! in the browser, walk the chain a page at a time).
//!
//!     cargo run --release --example chain_reads -- ARCHIVE.dendro
//!
//! Natively SQLite reads the file on disk itself, so every read the lazy
//! file counts is a read by range.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use dendro::container::lazy::{
    serve_payloads, ByteSource, InPlace, LazyConfig, LazyFile, SourceFailure,
};
use dendro::Archive;

struct Image {
    bytes: Vec<u8>,
    reads: Rc<Cell<u64>>,
    read_bytes: Rc<Cell<u64>>,
}

impl ByteSource for Image {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), SourceFailure> {
        let at = offset as usize;
        buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
        self.reads.set(self.reads.get() + 1);
        self.read_bytes
            .set(self.read_bytes.get() + buf.len() as u64);
        Ok(())
    }
}

#[derive(Default)]
struct Tally {
    by_range: u64,
    via_sqlite: u64,
}

fn main() -> dendro::Result<()> {
    let path = std::env::args().nth(1).expect("usage: chain_reads ARCHIVE");
    let archive = Archive::open(&path)?;
    let reads = Rc::new(Cell::new(0));
    let read_bytes = Rc::new(Cell::new(0));
    let image = Image {
        bytes: std::fs::read(&path).expect("readable archive"),
        reads: Rc::clone(&reads),
        read_bytes: Rc::clone(&read_bytes),
    };
    let file = Rc::new(RefCell::new(LazyFile::new(image, LazyConfig::LOCAL_FILE)));
    let weak: Weak<dyn InPlace> = Rc::downgrade(&file) as _;
    assert!(
        serve_payloads(&archive, weak),
        "the catalog says where payloads are"
    );
    let records = archive.read_snapshot(|s| s.all_segments())?;
    for whole in [false, true] {
        let (r0, b0) = (reads.get(), read_bytes.get());
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
            reads.get() - r0,
            (read_bytes.get() - b0) as f64 / 1e6,
            started.elapsed()
        );
    }
    Ok(())
}

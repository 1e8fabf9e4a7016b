//! Byte sources for tests, so that everything above a [`ByteSource`] (the
//! lazy file, the payload reader, a prefetch planner) is tested natively,
//! with every read it makes counted: an archive's image held in memory
//! ([`Image`]), a patterned file larger than wasm32 could address
//! ([`Synthetic`]), and a sparse file of hand-made pages ([`Pages`]),
//! with the page builders those use. Behind `cfg(test)` or the
//! `test-hooks` feature: nothing here ships in the viewer a user is served.
//!
//! Under `cfg(test)` with the `write` feature, the archive builders the
//! payload reader's tests use are here too (`write_archive`,
//! `write_fragmented`, `payload_of`, `serve`), for any test in the crate.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use super::{ByteSource, LazyConfig, LazyFile, SourceFailure};

/// A file image in memory as a byte source, counting what it is asked and
/// able to act as a file that changed under its reader. Clones share the
/// bytes, the counters and the switch, so a test keeps one while the lazy
/// file owns another.
#[derive(Clone)]
pub struct Image {
    bytes: Rc<Vec<u8>>,
    changed: Rc<Cell<bool>>,
    reads: Rc<Cell<u64>>,
    read_bytes: Rc<Cell<u64>>,
    log: Rc<RefCell<Vec<(u64, usize)>>>,
}

impl Image {
    /// An image of `bytes` that has served nothing yet.
    pub fn new(bytes: Vec<u8>) -> Image {
        Image {
            bytes: Rc::new(bytes),
            changed: Rc::default(),
            reads: Rc::default(),
            read_bytes: Rc::default(),
            log: Rc::default(),
        }
    }

    /// A lazy file over (a clone of) this image, which shares its counters.
    pub fn lazy(&self, config: LazyConfig) -> LazyFile<Image> {
        LazyFile::new(self.clone(), config)
    }

    /// The whole image, read without counting (what a test compares with).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// `len` bytes at `offset`, counted as one read: what a caller that
    /// fetches a planned range itself (then primes a lazy file) costs.
    pub fn fetch(&self, offset: u64, len: u64) -> Result<Vec<u8>, SourceFailure> {
        let mut buf = vec![0u8; len as usize];
        self.read_into(offset, &mut buf)?;
        Ok(buf)
    }

    /// Reads served so far, by this image and every clone.
    pub fn reads(&self) -> u64 {
        self.reads.get()
    }

    /// Bytes those reads returned.
    pub fn read_bytes(&self) -> u64 {
        self.read_bytes.get()
    }

    /// Every read served, `(offset, length)` in the order asked.
    pub fn log(&self) -> Vec<(u64, usize)> {
        self.log.borrow().clone()
    }

    /// Makes every later read fail as a file that changed would (`true`),
    /// or answer again (`false`).
    pub fn set_changed(&self, changed: bool) {
        self.changed.set(changed);
    }

    fn read_into(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceFailure> {
        if self.changed.get() {
            return Err(SourceFailure::Changed("ETag \"2\" is not \"1\"".into()));
        }
        let at = offset as usize;
        buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
        self.reads.set(self.reads.get() + 1);
        self.read_bytes
            .set(self.read_bytes.get() + buf.len() as u64);
        self.log.borrow_mut().push((offset, buf.len()));
        Ok(())
    }
}

impl ByteSource for Image {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), SourceFailure> {
        self.read_into(offset, buf)
    }
}

/// A file of `len` bytes whose byte at each offset follows a pattern
/// ([`Synthetic::expected`]), except a SQLite header saying WAL at the
/// start; it records every read and can be made to change. Nothing is
/// held, so it can claim more than wasm32 could address.
pub struct Synthetic {
    len: u64,
    /// Every read served, `(offset, length)`.
    pub reads: Vec<(u64, usize)>,
    /// Whether reads now fail as a file that changed.
    pub changed: bool,
}

impl Synthetic {
    /// A patterned file of `len` bytes.
    pub fn new(len: u64) -> Synthetic {
        Synthetic {
            len,
            reads: Vec::new(),
            changed: false,
        }
    }

    /// The file's `len` bytes at `offset`, as a read returns them.
    pub fn expected(offset: u64, len: usize) -> Vec<u8> {
        (0..len as u64).map(|i| header_byte(offset + i)).collect()
    }
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

impl ByteSource for Synthetic {
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

/// A sparse file of `len` bytes in pages of `page_bytes`: the pages given
/// (by 1-based number), zeros elsewhere. Counts its reads.
pub struct Pages {
    len: u64,
    page_bytes: u64,
    /// The pages that are not zeros, by page number.
    pub pages: HashMap<u64, Vec<u8>>,
    /// Reads served so far.
    pub reads: usize,
}

impl Pages {
    /// A file of `len` bytes holding `pages` of `page_bytes` each.
    pub fn new(len: u64, page_bytes: u64, pages: HashMap<u64, Vec<u8>>) -> Pages {
        Pages {
            len,
            page_bytes,
            pages,
            reads: 0,
        }
    }
}

impl ByteSource for Pages {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), SourceFailure> {
        self.reads += 1;
        for (i, b) in buf.iter_mut().enumerate() {
            let at = offset + i as u64;
            *b = self
                .pages
                .get(&(at / self.page_bytes + 1))
                .map_or(0, |p| p[(at % self.page_bytes) as usize]);
        }
        Ok(())
    }
}

/// Page 1 of a file of `page_bytes` pages: the header (rollback journal,
/// no pointer map) and an empty table leaf after it, as the schema's root.
pub fn header_page(page_bytes: u16) -> Vec<u8> {
    let mut page = vec![0u8; usize::from(page_bytes).max(512)];
    page[..16].copy_from_slice(b"SQLite format 3\0");
    page[16..18].copy_from_slice(&page_bytes.to_be_bytes());
    page[100] = super::btree::LEAF_TABLE;
    page
}

/// A table interior page of `page_bytes` pointing at `kids` (the last as
/// the right-most pointer), each cell's key its index.
pub fn interior_page(kids: &[u32], page_bytes: usize) -> Vec<u8> {
    let mut page = vec![0u8; page_bytes];
    let (cells, right) = kids.split_at(kids.len() - 1);
    page[0] = super::btree::INTERIOR_TABLE;
    page[3..5].copy_from_slice(&(cells.len() as u16).to_be_bytes());
    page[8..12].copy_from_slice(&right[0].to_be_bytes());
    for (i, kid) in cells.iter().enumerate() {
        let cell = page_bytes - 8 * (i + 1);
        page[cell..cell + 4].copy_from_slice(&kid.to_be_bytes());
        page[12 + 2 * i..14 + 2 * i].copy_from_slice(&(cell as u16).to_be_bytes());
    }
    page
}

#[cfg(all(test, feature = "write"))]
pub(crate) use archive::{payload_of, serve, serve_with, write_archive, write_fragmented, Served};

// A test module (`cfg(test)` outside, so tools that skip test modules
// skip it) that exists only where the writer is built (`cfg` inside).
#[allow(clippy::mixed_attributes_style)]
#[cfg(test)]
mod archive {
    // Archives written with the crate's own writer, for tests of what
    // reads them by range. Above the pager in every way (they open SQLite
    // and write), so test-only, and only where the writer is built.
    #![cfg(feature = "write")]

    use std::cell::RefCell;
    use std::path::{Path, PathBuf};
    use std::rc::{Rc, Weak};

    use super::Image;
    use crate::container::{serve_payloads, Archive, ArchiveMut, Transaction};
    use crate::pager::{InPlace, LazyConfig, LazyFile};
    use crate::segment::Segment;
    use crate::Labels;

    /// The payload of segment `seq`: `len` bytes that differ from page to page.
    pub(crate) fn payload_of(seq: i64, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| {
                (i as u64)
                    .wrapping_mul(2_654_435_761)
                    .wrapping_add(seq as u64 * 97) as u8
                    ^ (i >> 12) as u8
            })
            .collect()
    }

    /// Inserts segments `seqs` of stream "m" of source 1, each holding
    /// [`payload_of`] `len` bytes; even ones carry a caller index (a
    /// column after the payload) when `indexed`.
    fn put(tx: &Transaction<'_>, seqs: impl Iterator<Item = (i64, usize)>, indexed: bool) {
        for (seq, len) in seqs {
            let segment = Segment {
                bytes: payload_of(seq, len),
                rows: 1,
                first_ts: seq * 10,
                last_ts: seq * 10 + 5,
                caller_index: (indexed && seq % 2 == 0).then(|| vec![seq as u8; 40]),
            };
            tx.insert_segment(1, "m", seq, &segment).unwrap();
        }
    }

    /// Writes an archive whose segments (seq 0, 1, ...) hold payloads of
    /// `sizes` bytes; even ones carry a caller index (a column after the
    /// payload). Returns its path and image.
    pub(crate) fn write_archive(dir: &Path, name: &str, sizes: &[usize]) -> (PathBuf, Vec<u8>) {
        let path = dir.join(name);
        {
            let mut archive = ArchiveMut::create(&path).unwrap();
            let tx = archive.transaction().unwrap();
            let source = tx.insert_source(&Labels::new(), &Labels::new(), 0).unwrap();
            assert_eq!(source, 1);
            let seqs = sizes
                .iter()
                .enumerate()
                .map(|(seq, &len)| (seq as i64, len));
            put(&tx, seqs, true);
            tx.commit().unwrap();
        }
        let image = std::fs::read(&path).unwrap();
        (path, image)
    }

    /// Writes an archive whose later payloads reuse the pages earlier ones
    /// freed: 40 payloads of 30 kB, every other one deleted, then payloads of
    /// 200 kB that take the free pages first (SQLite hands out free-list
    /// pages before growing the file), so their chains break wherever one
    /// freed run ends. Returns its path, image and the payloads' seqs and
    /// sizes.
    pub(crate) fn write_fragmented(dir: &Path) -> (PathBuf, Vec<u8>, Vec<(i64, usize)>) {
        let path = dir.join("fragmented.dendro");
        let mut kept = Vec::new();
        {
            let mut archive = ArchiveMut::create(&path).unwrap();
            let tx = archive.transaction().unwrap();
            tx.insert_source(&Labels::new(), &Labels::new(), 0).unwrap();
            tx.commit().unwrap();
            let tx = archive.transaction().unwrap();
            put(&tx, (0..40).map(|seq| (seq, 30_000)), false);
            tx.commit().unwrap();
            archive
                .conn
                .execute("DELETE FROM segments WHERE seq % 2 = 1", [])
                .unwrap();
            let tx = archive.transaction().unwrap();
            put(&tx, (100..106).map(|seq| (seq, 200_000)), false);
            tx.commit().unwrap();
            kept.extend((0..40).step_by(2).map(|seq| (seq, 30_000)));
            kept.extend((100..106).map(|seq| (seq, 200_000)));
        }
        let image = std::fs::read(&path).unwrap();
        (path, image, kept)
    }

    /// An archive opened with SQLite, and a lazy file over its image
    /// registered as the file it reads in place.
    pub(crate) struct Served {
        /// The archive, SQLite reading its file on disk.
        pub(crate) archive: Rc<Archive>,
        /// The lazy file its payloads are read by range through.
        pub(crate) file: Rc<RefCell<LazyFile<Image>>>,
        /// The image under the lazy file: its counters and switch.
        pub(crate) image: Image,
    }

    /// Opens `path` with SQLite and registers a lazy file over `image` as the
    /// file it reads in place (natively SQLite reads the file on disk itself,
    /// so only reads by range reach the image).
    pub(crate) fn serve(path: &Path, image: Vec<u8>) -> Served {
        serve_with(path, image, LazyConfig::LOCAL_FILE, 0)
    }

    /// [`serve`] with the lazy file's `config`, its first `head` bytes
    /// read at once as the browser's engine reads them at open.
    pub(crate) fn serve_with(path: &Path, image: Vec<u8>, config: LazyConfig, head: u64) -> Served {
        let archive = Rc::new(Archive::open(path).unwrap());
        let image = Image::new(image);
        let file = Rc::new(RefCell::new(image.lazy(config)));
        if head > 0 {
            file.borrow_mut().read_head(head).unwrap();
        }
        let weak: Weak<dyn InPlace> = Rc::downgrade(&file) as _;
        assert!(serve_payloads(&archive, weak));
        Served {
            archive,
            file,
            image,
        }
    }
}

//! An image's bytes: [`CHUNK`]-sized pieces, each shared with the image
//! taken before it wherever the bytes did not change, so that following
//! a large archive holds one copy of it plus what the writer changed. The
//! [`Chunker`] builds a new image's pieces from its bytes in order,
//! comparing each with the previous image's and noting the units that
//! differ; the steps between images keep those notes (`changes.rs`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::changes::changed;

/// The unit `Dendro-Changed` counts in (bytes).
pub const UNIT: usize = 4096;

/// The size of an image's pieces (bytes): a multiple of every SQLite page
/// size and of [`UNIT`], so a page never straddles two.
pub const CHUNK: usize = 64 << 10;

/// One committed state of the archive, in pieces shared with the images
/// taken before and after it wherever the bytes are the same.
pub struct Image {
    pub etag: String,
    /// Each [`CHUNK`] bytes but the last; chunk `k` starts at `k * CHUNK`.
    pub(super) chunks: Vec<Arc<[u8]>>,
    pub(super) len: usize,
    /// When a reader last asked for it.
    used: Mutex<Instant>,
    /// Ranged reads naming it (`If-Match`): an image only offered to a
    /// prober has none, and goes before one being read.
    pub(super) reads: AtomicU32,
    /// Its place in the order images were taken (1 is the first).
    pub(super) number: u64,
}

impl Image {
    /// The image of `chunks` (`len` bytes in all), the `number`th taken,
    /// first asked for at `now`.
    pub(super) fn new(
        etag: String,
        chunks: Vec<Arc<[u8]>>,
        len: usize,
        now: Instant,
        number: u64,
    ) -> Image {
        Image {
            etag,
            chunks,
            len,
            used: Mutex::new(now),
            reads: AtomicU32::new(0),
            number,
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes `start..end` of it (cut to its length): the HTTP layer
    /// answers a chunk at a time from these.
    pub fn read_range(&self, start: usize, end: usize) -> Vec<u8> {
        let end = end.min(self.len);
        let mut out = Vec::with_capacity(end.saturating_sub(start));
        let mut at = start;
        while at < end {
            let chunk = &self.chunks[at / CHUNK];
            let from = at % CHUNK;
            let to = chunk.len().min(from + (end - at));
            out.extend_from_slice(&chunk[from..to]);
            at += to - from;
        }
        out
    }

    /// Bytes of its chunks that `next` (an image taken later) does not
    /// share: what dropping this image would free, were `next` kept.
    pub(super) fn unshared_with(&self, next: Option<&Image>) -> usize {
        self.chunks
            .iter()
            .enumerate()
            .filter(|(k, c)| {
                !next
                    .and_then(|n| n.chunks.get(*k))
                    .is_some_and(|d| Arc::ptr_eq(c, d))
            })
            .map(|(_, c)| c.len())
            .sum()
    }

    pub(super) fn last_used(&self) -> Instant {
        // A poisoned lock still holds a time; none is ever left half-written.
        *self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn read_by_someone(&self) -> bool {
        self.reads.load(Ordering::Relaxed) > 0
    }

    pub(super) fn touch(&self, now: Instant) {
        let mut t = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if now > *t {
            *t = now;
        }
    }
}

/// A new image's chunks, and the units where it differs from the image
/// before it (`None` when too many to list).
pub(super) struct Taken {
    pub(super) chunks: Vec<Arc<[u8]>>,
    pub(super) len: usize,
    pub(super) units: Option<Vec<(usize, usize)>>,
}

/// Builds an image's chunks from its bytes in order, sharing each chunk
/// that equals the previous image's at the same place and listing the
/// units that do not: at most one chunk of new bytes is buffered.
pub(super) struct Chunker<'a> {
    previous: Option<&'a Image>,
    /// The length the bytes pushed must add up to.
    len: usize,
    chunks: Vec<Arc<[u8]>>,
    buffer: Vec<u8>,
    units: Option<Vec<(usize, usize)>>,
}

impl<'a> Chunker<'a> {
    pub(super) fn new(previous: Option<&'a Image>, len: usize) -> Chunker<'a> {
        Chunker {
            previous,
            len,
            chunks: Vec::with_capacity(len.div_ceil(CHUNK)),
            buffer: Vec::with_capacity(CHUNK.min(len)),
            units: Some(Vec::new()),
        }
    }

    pub(super) fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n = bytes.len().min(CHUNK - self.buffer.len());
            self.buffer.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.buffer.len() == CHUNK {
                self.flush();
            }
        }
    }

    /// The buffered chunk: the previous image's, when the same.
    fn flush(&mut self) {
        let k = self.chunks.len();
        let old = self.previous.and_then(|p| p.chunks.get(k));
        if let Some(old) = old.filter(|o| o[..] == self.buffer[..]) {
            self.chunks.push(Arc::clone(old));
        } else {
            let first = k * CHUNK / UNIT;
            for (i, unit) in self.buffer.chunks(UNIT).enumerate() {
                let a = i * UNIT;
                let same = old.is_some_and(|o| o.get(a..a + unit.len()) == Some(unit));
                if !same {
                    changed(&mut self.units, first + i);
                }
            }
            self.chunks.push(Arc::from(&self.buffer[..]));
        }
        self.buffer.clear();
    }

    pub(super) fn finish(mut self) -> Result<Taken, String> {
        if !self.buffer.is_empty() {
            self.flush();
        }
        let got: usize = self.chunks.iter().map(|c| c.len()).sum();
        if got != self.len {
            return Err(format!("read {got} bytes of a database of {}", self.len));
        }
        Ok(Taken {
            chunks: self.chunks,
            len: self.len,
            units: self.units,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::changes::{listed, MAX_RANGES};
    use super::*;

    #[test]
    fn changed_units_are_listed_as_ranges() {
        let old = vec![0u8; UNIT * 6];
        let mut new = old.clone();
        new[UNIT + 5] = 1;
        new[UNIT * 3] = 1;
        new[UNIT * 4 + 1] = 1;
        new.extend_from_slice(&[7u8; 10]);
        let list = |old: &[u8], new: &[u8]| changed_ranges(old, new).map(|r| listed(&r));
        assert_eq!(list(&old, &new).as_deref(), Some("1,3-4,6"));
        assert_eq!(list(&old, &old).as_deref(), Some(""));
        // A shorter image: only what it holds is listed.
        assert_eq!(list(&new, &old[..UNIT * 2]).as_deref(), Some("1"));
    }

    #[test]
    fn an_image_reads_ranges_across_its_chunks() {
        let bytes: Vec<u8> = (0..CHUNK * 2 + 1000).map(|i| (i * 7 % 251) as u8).collect();
        let (image, _) = image_from(None, &bytes);
        assert_eq!(image.len(), bytes.len());
        // Ranges of an odd size straddle every chunk's end.
        let mut got = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let end = (at + 3001).min(bytes.len());
            got.extend_from_slice(&image.read_range(at, end));
            at = end;
        }
        assert!(got == bytes);
        let from = bytes.len() - 10 - CHUNK;
        assert_eq!(image.read_range(from, from + 20), &bytes[from..from + 20]);
        // A range past the end is cut to the image's length.
        assert_eq!(image.read_range(bytes.len() - 5, bytes.len() + 50).len(), 5);
        assert!(image
            .read_range(bytes.len() + 5, bytes.len() + 9)
            .is_empty());
    }

    #[test]
    fn too_many_changes_are_not_listed() {
        let old = vec![0u8; UNIT * (2 * MAX_RANGES + 4)];
        let mut new = old.clone();
        for u in (0..new.len() / UNIT).step_by(2) {
            new[u * UNIT] = 1;
        }
        assert_eq!(changed_ranges(&old, &new), None);
    }

    /// the units listed as changed.
    fn image_from(previous: Option<&Image>, bytes: &[u8]) -> (Image, Option<Vec<(usize, usize)>>) {
        let mut chunker = Chunker::new(previous, bytes.len());
        chunker.push(bytes);
        let taken = chunker.finish().unwrap();
        let image = Image::new(String::new(), taken.chunks, taken.len, Instant::now(), 0);
        (image, taken.units)
    }

    fn changed_ranges(old: &[u8], new: &[u8]) -> Option<Vec<(usize, usize)>> {
        let (old, _) = image_from(None, old);
        image_from(Some(&old), new).1
    }
}

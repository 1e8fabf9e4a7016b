//! A segment's payload read by range, through SQLite's incremental blob
//! I/O or, for an archive read in place, straight from the file's pages.

use crate::error::{Error, Result, SqlContext};

/// A segment's payload open for reading byte ranges
/// ([`super::Snapshot::segment_payload`]). Lives as long as the snapshot.
pub struct Payload<'s> {
    pub(super) blob: rusqlite::blob::Blob<'s>,
    pub(super) file: &'s str,
    /// For an archive read in place: the payload read by range, outside
    /// SQLite, where its place in the file is proven.
    pub(super) in_place: Option<crate::pager::InPlacePayload>,
}

impl Payload<'_> {
    /// The payload's length in bytes.
    pub fn len(&self) -> usize {
        self.blob.len()
    }

    /// Whether the payload has no bytes.
    pub fn is_empty(&self) -> bool {
        self.blob.is_empty()
    }

    /// The payload's reader by range, when its archive is read in place.
    pub fn in_place(&self) -> Option<&crate::pager::InPlacePayload> {
        self.in_place.as_ref()
    }

    /// Fills `buf` from `offset`; a range past the end is an error.
    pub fn read_at(&self, offset: usize, buf: &mut [u8]) -> Result<()> {
        if let Some(direct) = &self.in_place {
            match direct.read_at(offset as u64, buf) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(cause) => {
                    return Err(Error::Source {
                        file: self.file.to_string(),
                        cause,
                    })
                }
            }
        }
        if let Some(direct) = &self.in_place {
            direct.read_through_sqlite();
        }
        // A read from the start walks the payload's overflow chain: an
        // archive read in place may fetch that walk at once. A read further
        // on skips the pages before it by their pointer-map entries.
        let walk = if offset == 0 { buf.len() as u64 } else { 0 };
        crate::pager::expect_walk(walk);
        let read = self
            .blob
            .read_at_exact(buf, offset)
            .ctx(self.file, "cannot read a segment's payload");
        crate::pager::expect_walk(0);
        read
    }
}

//! The file's page layout, read from its 100-byte header (file format
//! §1.3): page size, usable bytes, page count, and where SQLite puts the
//! pages no chain may use (pointer-map pages, the lock-byte page). The
//! payload reader checks every page number it follows against this.

use super::encoding::{be16, be32};

/// Byte offset of SQLite's lock-byte ("pending byte") page, never used.
const PENDING_BYTE: u64 = 0x4000_0000;

/// The file's page layout, from its 100-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Page size in bytes (512 to 65536, a power of two).
    pub page_bytes: u32,
    /// Bytes of a page in use (page size less the reserved tail).
    pub usable: u32,
    /// Pages the file holds (the header's count when valid, never past the file).
    pub pages: u32,
    /// Whether the file has pointer-map pages (auto-vacuum).
    pub ptrmap: bool,
}

impl Geometry {
    /// The layout of a file of `file_len` bytes whose header is `head`;
    /// `None` for a header this reader does not take apart.
    pub fn from_header(head: &[u8], file_len: u64) -> Option<Geometry> {
        let h = head.get(..100)?;
        if &h[..16] != b"SQLite format 3\0" {
            return None;
        }
        let page_bytes = match be16(h, 16)? {
            1 => 65536,
            n => u32::from(n),
        };
        if !(512..=65536).contains(&page_bytes) || !page_bytes.is_power_of_two() {
            return None;
        }
        let usable = page_bytes - u32::from(h[20]);
        if usable < 480 {
            return None;
        }
        // As SQLite's pager counts them: a partial last page is a page.
        let in_file = u32::try_from(file_len.div_ceil(u64::from(page_bytes))).unwrap_or(u32::MAX);
        let declared = be32(h, 28)?;
        // The header's page count holds only when the change counter and
        // the "version valid for" number agree (format §1.3.7).
        let pages = if declared != 0 && h[24..28] == h[92..96] {
            declared.min(in_file)
        } else {
            in_file
        };
        Some(Geometry {
            page_bytes,
            usable,
            pages,
            ptrmap: be32(h, 52)? != 0,
        })
    }

    pub(super) fn pending_page(&self) -> u32 {
        (PENDING_BYTE / u64::from(self.page_bytes)) as u32 + 1
    }

    /// The pointer-map page holding `page`'s entry (`page` >= 3), as
    /// SQLite places them: page 2, then every `usable / 5 + 1` pages, one
    /// further on where that would be the lock-byte page.
    pub(super) fn ptrmap_of(&self, page: u32) -> u32 {
        let per = self.usable / 5 + 1;
        let at = (page - 2) / per * per + 2;
        if at == self.pending_page() {
            at + 1
        } else {
            at
        }
    }

    /// Whether `page` can be an overflow page at all: in the file, and
    /// neither page 1, a pointer-map page nor the lock-byte page.
    pub(super) fn can_chain(&self, page: u32) -> bool {
        page >= 2 && page <= self.pages && !self.is_ptrmap(page) && page != self.pending_page()
    }

    pub(super) fn is_ptrmap(&self, page: u32) -> bool {
        self.ptrmap && page >= 2 && self.ptrmap_of(page) == page
    }

    /// The page SQLite guesses follows `page` in a contiguous chain: the
    /// next one that is neither a pointer-map page nor the lock-byte page.
    pub(super) fn next_after(&self, page: u32) -> Option<u32> {
        let mut next = page.checked_add(1)?;
        while self.is_ptrmap(next) || next == self.pending_page() {
            next = next.checked_add(1)?;
        }
        Some(next)
    }

    /// Byte offset of `page` (1-based).
    pub fn offset(&self, page: u32) -> u64 {
        u64::from(page - 1) * u64::from(self.page_bytes)
    }

    /// How much of a table leaf cell's payload of `payload` bytes stays in
    /// the cell (format §1.6).
    pub(super) fn local_bytes(&self, payload: u64) -> u64 {
        let u = u64::from(self.usable);
        let max_local = u - 35;
        if payload <= max_local {
            return payload;
        }
        let min_local = (u - 12) * 32 / 255 - 23;
        let surplus = min_local + (payload - min_local) % (u - 4);
        if surplus <= max_local {
            surplus
        } else {
            min_local
        }
    }
}

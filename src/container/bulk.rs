//! Reading most of a file at once: memory that a whole-archive read fills
//! at the cost of a copy per byte and little else.
//!
//! A whole-archive read walks every BLOB's overflow chain, one 4 KiB page
//! at a time, and copies each page into the caller's memory. Once SQLite
//! reads through a memory map, the copy itself is cheap and what remains
//! is the destination: measured, a page fault for every 4 KiB of freshly
//! allocated memory cost more than the copy (DESIGN.md, "Reading a whole
//! archive"). The hint here is to the kernel, about memory, never about
//! the file; where it is unsupported the read is merely slower.

use crate::error::{Error, Result};

/// Room for `len` bytes of payloads that are about to be copied in whole:
/// an empty vector with exactly that capacity, none of it touched yet. A
/// large one asks for transparent huge pages before anything is written,
/// so filling it takes one fault per 2 MiB instead of one per 4 KiB; the
/// caller writes through [`Vec::spare_capacity_mut`], so nothing is zeroed
/// first either.
///
/// `len` comes from the catalog, so an allocation that cannot be had is a
/// typed error naming `file`, never an abort.
pub(crate) fn payload_buffer(file: &str, len: usize) -> Result<Vec<u8>> {
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(len).map_err(|_| {
        Error::io(
            file,
            &format!("cannot hold {len} bytes of segments in memory"),
            std::io::ErrorKind::OutOfMemory.into(),
        )
    })?;
    advise_huge_pages(buffer.spare_capacity_mut());
    Ok(buffer)
}

/// Below this a buffer cannot hold an aligned huge page.
#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

#[cfg(target_os = "linux")]
fn advise_huge_pages(buffer: &mut [std::mem::MaybeUninit<u8>]) {
    let start = buffer.as_mut_ptr() as usize;
    let aligned = start.next_multiple_of(HUGE_PAGE);
    let end = (start + buffer.len()) / HUGE_PAGE * HUGE_PAGE;
    if end > aligned {
        // SAFETY: the range lies inside `buffer`, which this scope borrows
        // mutably; MADV_HUGEPAGE changes how the kernel backs the pages, never
        // what they hold, and its failure leaves ordinary pages.
        unsafe {
            libc::madvise(
                aligned as *mut libc::c_void,
                end - aligned,
                libc::MADV_HUGEPAGE,
            );
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_buffer: &mut [std::mem::MaybeUninit<u8>]) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_buffer_has_room_for_exactly_what_was_asked() {
        for len in [0, 1, 4095, (5 << 20) + 17] {
            let buffer = payload_buffer("t.dendro", len).unwrap();
            assert!(buffer.is_empty());
            assert_eq!(buffer.capacity(), len);
        }
    }

    #[test]
    fn a_buffer_that_cannot_be_had_is_an_error_naming_the_file() {
        let err = payload_buffer("huge.dendro", usize::MAX).unwrap_err();
        assert!(err.to_string().contains("huge.dendro"), "{err}");
    }
}

//! Reading most of a file at once: the hints that make a whole-archive read
//! cost a copy per byte and little else.
//!
//! A whole-archive read walks every BLOB's overflow chain, one 4 KiB page
//! at a time, and copies each page into the caller's memory. Two costs
//! dominate once the copy itself is cheap (DESIGN.md, "Reading a whole
//! archive"): a page fault per 4 KiB of freshly allocated destination, and,
//! with a cold cache, a synchronous disk read per fault on SQLite's memory
//! map, since the kernel does not read ahead for a mapping it was not told
//! is read in order. Both are hints to the kernel, not changes to the
//! file; where they are unsupported the read is merely slower.

use crate::error::{Error, Result};

/// Memory for `len` bytes of payloads that are about to be copied in
/// whole, zeroed. A large buffer asks for transparent huge pages, so
/// filling it takes one fault per 2 MiB instead of one per 4 KiB (glibc
/// takes a buffer this size straight from `mmap`, already zero, so the
/// zeroing costs nothing until a page is touched).
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
    buffer.resize(len, 0);
    advise_huge_pages(&mut buffer);
    Ok(buffer)
}

/// Below this a buffer cannot hold an aligned huge page.
#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

#[cfg(target_os = "linux")]
fn advise_huge_pages(buffer: &mut [u8]) {
    let start = buffer.as_mut_ptr() as usize;
    let aligned = start.next_multiple_of(HUGE_PAGE);
    let end = (start + buffer.len()) / HUGE_PAGE * HUGE_PAGE;
    if end > aligned {
        // SAFETY: the range lies inside `buffer`, which this scope borrows
        // mutably; MADV_HUGEPAGE changes how the kernel backs the pages, never
        // their contents, and its failure leaves ordinary pages.
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
fn advise_huge_pages(_buffer: &mut [u8]) {}

/// Tells the kernel that the whole file at `path` is about to be read, so
/// a cold read is served by large read-ahead rather than a disk round trip
/// per fault. A no-op for pages already cached, and for a file it cannot
/// open (the read that follows reports that in its own words).
#[cfg(target_os = "linux")]
pub(crate) fn advise_whole_file(path: &std::path::Path) {
    use std::os::fd::AsRawFd;
    if let Ok(file) = std::fs::File::open(path) {
        // SAFETY: an advisory call on a descriptor this scope owns; it reads
        // ahead into the page cache and never writes the file.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED);
        }
    }
}

#[cfg(all(not(target_os = "linux"), not(target_arch = "wasm32")))]
pub(crate) fn advise_whole_file(_path: &std::path::Path) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_buffer_is_zeroed_and_exactly_as_long_as_asked() {
        for len in [0, 1, 4095, (5 << 20) + 17] {
            let buffer = payload_buffer("t.dendro", len).unwrap();
            assert_eq!(buffer.len(), len);
            assert!(buffer.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn a_buffer_that_cannot_be_had_is_an_error_naming_the_file() {
        let err = payload_buffer("huge.dendro", usize::MAX).unwrap_err();
        assert!(err.to_string().contains("huge.dendro"), "{err}");
    }
}

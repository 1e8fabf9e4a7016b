//! The one way bytes reach the pager, and how it fails: a source read by
//! 64-bit offset (a dropped `File`, a URL answered with HTTP ranges, a
//! test's image). Its implementations live with their platform
//! (`src/wasm/vfs.rs` in the browser, `pager::mock` for tests), so the
//! pager itself is plain Rust that any platform compiles.

// Why a source fails is an error of the archive's reader, defined with
// the other errors on the ground floor.
pub use crate::error::SourceFailure;

/// Where a lazy file's bytes come from: random access by 64-bit offset.
pub trait ByteSource {
    /// The file's length in bytes, fixed when it was opened.
    fn len(&self) -> u64;

    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills all of `buf` from `offset`; the caller keeps the range inside
    /// [`ByteSource::len`].
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), SourceFailure>;
}

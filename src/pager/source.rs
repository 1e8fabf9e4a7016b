//! The one way bytes reach the pager, and how it fails: a source read by
//! 64-bit offset (a dropped `File`, a URL answered with HTTP ranges, a
//! test's image). Its implementations live with their platform
//! (`src/wasm/vfs.rs` in the browser, `pager::mock` for tests), so the
//! pager itself is plain Rust that any platform compiles.

/// Why a lazily read file could not serve a read. Once a source fails,
/// its file fails every later read the same way: a file that changed
/// under the reader must not be read as half one version, half another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceFailure {
    /// The file is no longer the one opened: its length or version tag
    /// (an HTTP `ETag`) differs, or the browser says it was modified.
    Changed(String),
    /// A read could not be served at all: the file went away, the server
    /// stopped answering, or it answered without the range asked for.
    Unreadable(String),
}

impl std::fmt::Display for SourceFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceFailure::Changed(why) => write!(
                f,
                "the file changed while it was being read ({why}); open it again to see the new version"
            ),
            SourceFailure::Unreadable(why) => write!(f, "a part of the file could not be read ({why})"),
        }
    }
}

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

//! The names an archive's file goes by besides its own: its sidecars and
//! the `file:` URI SQLite opens it through. Apart from the handles and
//! the sniffing that both use them, so neither imports the other.

use std::path::{Path, PathBuf};

/// `path` with `suffix` appended to its name: where SQLite keeps the
/// file's `-wal`, `-shm` and `-journal` sidecars, and the staging name.
pub(crate) fn sidecar_path(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// A `file:` URI for `path`, percent-encoding what a URI would misread.
pub(super) fn file_uri(path: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut uri = String::from("file:");
    for byte in absolute.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

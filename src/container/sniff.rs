//! Recognising an archive by the first 100 bytes of the file (format §2).
//!
//! Nothing here opens SQLite: the header stamp is the identity, so a file is
//! classified before a single pragma could touch it.

use super::APPLICATION_ID;
use crate::error::{Error, NotArchive, Result};
use crate::format::is_readable_version;

/// The SQLite header's first sixteen bytes.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// How many bytes of the file a sniff reads.
pub const HEADER_BYTES: usize = 100;

/// What a file is, judged from its header alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    /// Stamped with dendro's application id. `version` is the header's
    /// `user_version`, which this build may or may not read.
    Archive {
        /// The schema version in the header.
        version: u32,
    },
    /// Anything else, and why.
    NotAnArchive(NotArchive),
}

impl FileKind {
    /// Whether this build can open the file.
    pub fn is_readable(&self) -> bool {
        matches!(self, FileKind::Archive { version } if is_readable_version(*version))
    }

    /// Turns a classification into the error an open returns, or the
    /// schema version when the header is one this build reads.
    pub fn require_readable(&self, file: &str) -> Result<u32> {
        match self {
            FileKind::Archive { version } if is_readable_version(*version) => Ok(*version),
            FileKind::Archive { version } => Err(Error::UnsupportedSchema {
                file: file.to_string(),
                version: *version,
            }),
            FileKind::NotAnArchive(cause) => Err(Error::NotAnArchive {
                file: file.to_string(),
                cause: cause.clone(),
            }),
        }
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileKind::Archive { version } if is_readable_version(*version) => {
                write!(f, "a dendro archive, schema version {version}")
            }
            FileKind::Archive { version } => write!(
                f,
                "a dendro archive of schema version {version}, which this build does not read \
                 (it reads schema versions {})",
                crate::format::layout::readable_versions_in_words()
            ),
            FileKind::NotAnArchive(cause) => write!(f, "not a dendro archive: {cause}"),
        }
    }
}

fn be_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_be_bytes(word)
}

/// Classifies a file from its leading bytes (at least the first 100 for a
/// verdict other than "too short").
pub fn sniff_bytes(bytes: &[u8]) -> FileKind {
    let kind = |cause| FileKind::NotAnArchive(cause);
    if bytes.is_empty() {
        return kind(NotArchive::Empty);
    }
    let magic_len = bytes.len().min(SQLITE_MAGIC.len());
    if bytes[..magic_len] != SQLITE_MAGIC[..magic_len] {
        return kind(NotArchive::NotSqlite);
    }
    if bytes.len() < HEADER_BYTES {
        return kind(NotArchive::TooShort(bytes.len() as u64));
    }
    match be_u32(bytes, 68) {
        APPLICATION_ID => FileKind::Archive {
            version: be_u32(bytes, 60),
        },
        0 => kind(NotArchive::UnstampedSqlite),
        other => kind(NotArchive::ForeignApplication(other)),
    }
}

/// Classifies the file at `path` by reading its first 100 bytes.
#[cfg(not(target_arch = "wasm32"))]
pub fn sniff(path: impl AsRef<std::path::Path>) -> Result<FileKind> {
    use std::io::Read;
    let path = path.as_ref();
    let file = path.display().to_string();
    let mut handle = std::fs::File::open(path).map_err(|e| Error::io(&file, "cannot open", e))?;
    let mut header = Vec::with_capacity(HEADER_BYTES);
    handle
        .by_ref()
        .take(HEADER_BYTES as u64)
        .read_to_end(&mut header)
        .map_err(|e| Error::io(&file, "cannot read the header", e))?;
    Ok(sniff_bytes(&header))
}

/// The check every open of a file on disk makes before SQLite may act on
/// it: the header must be a readable archive's. One exception: when the
/// header says otherwise but a non-empty `-wal` sidecar lies beside it, the
/// stamp is read again the way SQLite sees the file, log included. A power
/// cut during a checkpoint can leave page 1 of the main file garbled while
/// the log still holds it whole, and SQLite recovers such a file; refusing
/// it would lose an intact archive. Only the stamp SQLite reads decides,
/// and the first refusal stands when SQLite cannot read one.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn require_readable_file(path: &std::path::Path, file: &str) -> Result<()> {
    let refusal = match sniff(path)?.require_readable(file) {
        Ok(_) => return Ok(()),
        Err(refusal) => refusal,
    };
    let sidecar = super::paths::sidecar_path(path, "-wal");
    if !std::fs::metadata(&sidecar).is_ok_and(|m| m.len() > 0) {
        return Err(refusal);
    }
    match stamp_through_log(path) {
        Some(kind) if kind.is_readable() => Ok(()),
        _ => Err(refusal),
    }
}

/// The stamp as SQLite reads it through a read-only connection, which
/// replays the `-wal` sidecar; `None` when SQLite cannot read one.
#[cfg(not(target_arch = "wasm32"))]
fn stamp_through_log(path: &std::path::Path) -> Option<FileKind> {
    use rusqlite::OpenFlags;
    let conn = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()?;
    stamp_of(&conn).ok()
}

/// The stamp of the database `conn` has open, as SQLite reads it (through
/// the log, for a file in WAL mode), classified like a header.
pub(crate) fn stamp_of(conn: &rusqlite::Connection) -> rusqlite::Result<FileKind> {
    let (app, version): (i64, i64) = conn.query_row(
        "SELECT application_id, user_version FROM pragma_application_id, pragma_user_version",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut header = [0u8; HEADER_BYTES];
    header[..16].copy_from_slice(SQLITE_MAGIC);
    header[60..64].copy_from_slice(&(version as u32).to_be_bytes());
    header[68..72].copy_from_slice(&(app as u32).to_be_bytes());
    Ok(sniff_bytes(&header))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(app: u32, version: u32) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_BYTES];
        h[..16].copy_from_slice(SQLITE_MAGIC);
        h[60..64].copy_from_slice(&version.to_be_bytes());
        h[68..72].copy_from_slice(&app.to_be_bytes());
        h
    }

    #[test]
    fn the_stamp_and_version_are_read_big_endian() {
        assert_eq!(
            sniff_bytes(&header(0x6465_6e64, 4)),
            FileKind::Archive { version: 4 }
        );
        assert_eq!(
            sniff_bytes(&header(0x6465_6e64, 5)),
            FileKind::Archive { version: 5 }
        );
        assert!(sniff_bytes(&header(0x6465_6e64, 5)).is_readable());
    }

    #[test]
    fn versions_four_and_five_are_read_and_others_refused_naming_both() {
        for version in [4, 5] {
            assert!(sniff_bytes(&header(0x6465_6e64, version))
                .require_readable("f.dendro")
                .is_ok());
        }
        for version in [3, 6] {
            let kind = sniff_bytes(&header(0x6465_6e64, version));
            assert!(!kind.is_readable());
            let said = kind.to_string();
            assert!(
                said.contains(&format!("schema version {version}")),
                "{said}"
            );
            assert!(said.contains("4 and 5"), "{said}");
            let refused = kind.require_readable("f.dendro").unwrap_err();
            assert!(matches!(refused, Error::UnsupportedSchema { version: v, .. } if v == version));
            let words = refused.to_string();
            assert!(words.starts_with("f.dendro: "), "{words}");
            assert!(words.contains(&format!("version {version}")), "{words}");
            assert!(words.contains("4 and 5"), "{words}");
        }
    }

    #[test]
    fn application_id_zero_is_plain_sqlite_not_an_archive() {
        assert_eq!(
            sniff_bytes(&header(0, 4)),
            FileKind::NotAnArchive(NotArchive::UnstampedSqlite)
        );
    }

    #[test]
    fn another_applications_id_is_named() {
        assert_eq!(
            sniff_bytes(&header(0x1234_5678, 4)),
            FileKind::NotAnArchive(NotArchive::ForeignApplication(0x1234_5678))
        );
    }

    #[test]
    fn short_empty_and_foreign_files_are_refused() {
        assert_eq!(sniff_bytes(b""), FileKind::NotAnArchive(NotArchive::Empty));
        assert_eq!(
            sniff_bytes(&header(0x6465_6e64, 4)[..64]),
            FileKind::NotAnArchive(NotArchive::TooShort(64))
        );
        assert_eq!(
            sniff_bytes(b"hello, world"),
            FileKind::NotAnArchive(NotArchive::NotSqlite)
        );
        assert_eq!(
            sniff_bytes(b"SQL"),
            FileKind::NotAnArchive(NotArchive::TooShort(3))
        );
    }
}

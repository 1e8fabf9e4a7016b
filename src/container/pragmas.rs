//! Per-connection settings. None of them persist in the file; each
//! connection applies the ones its role needs (format §2.1).

use rusqlite::Connection;

use super::PAGE_SIZE;
use crate::error::{Result, SqlContext};

/// The size-based checkpoint threshold: bounds the `-wal` sidecar's size.
pub const AUTOCHECKPOINT_BYTES: u32 = 4 * 1024 * 1024;
/// Page cache for read connections, in KiB (SQLite's negative `cache_size`).
pub const READER_CACHE_KIB: i64 = 8 * 1024;
/// Page cache for the writing connection, in KiB. Larger: seals rewrite many pages.
pub const WRITER_CACHE_KIB: i64 = 64 * 1024;

/// How much of a file a whole-archive read maps into memory
/// (`Archive::prepare_bulk_read`): address space, not memory.
pub const BULK_READ_MAP_BYTES: i64 = 1 << 30;

/// A reader sets its cache and forbids writes on its own connection.
pub fn apply_reader(conn: &Connection, file: &str) -> Result<()> {
    conn.execute_batch(&format!(
        "PRAGMA cache_size = -{READER_CACHE_KIB}; PRAGMA query_only = ON;"
    ))
    .ctx(file, "cannot configure the read connection")
}

/// A writer commits durably, checkpoints by size and enforces references.
pub fn apply_writer(conn: &Connection, file: &str) -> Result<()> {
    conn.execute_batch(&format!(
        "PRAGMA synchronous = FULL;
         PRAGMA wal_autocheckpoint = {};
         PRAGMA foreign_keys = ON;
         PRAGMA cache_size = -{WRITER_CACHE_KIB};",
        AUTOCHECKPOINT_BYTES / PAGE_SIZE
    ))
    .ctx(file, "cannot configure the write connection")
}

//! The archive file's fixed numbers (format §2): how a reader recognises
//! the file, which catalog it expects, the page geometry the writer lays
//! down, and the most a reader holds in memory. Kept apart from the code
//! that opens files so that errors and the browser engine can quote them.

use std::collections::BTreeMap;

/// `application_id` of every archive: the ASCII bytes `dend`.
pub const APPLICATION_ID: u32 = 0x6465_6e64;
/// The catalog schema version this build creates by default (`user_version`):
/// schema 4, which every release of the original reads. The versions it
/// reads are [`super::READABLE_SCHEMA_VERSIONS`].
pub const SCHEMA_VERSION: u32 = 4;
/// The largest archive [`crate::Archive::from_reader`] opens: SQLite's
/// ceiling for one allocation (`SQLITE_MAX_ALLOCATION_SIZE`), which must
/// hold the whole file.
pub const MAX_IN_MEMORY_BYTES: u64 = 2_147_483_391;
/// Page size fixed at creation; the cheapest per-append sidecar traffic.
pub const PAGE_SIZE: u32 = 4096;

/// A string-to-string map: a source's labels or metadata (format §3.1).
/// Ordered by key, which is the order the catalog's JSON and the wire's
/// maps are written in, so equal maps are equal bytes.
pub type Labels = BTreeMap<String, String>;

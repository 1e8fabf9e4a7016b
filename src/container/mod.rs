//! The SQLite file: recognising it, creating it, opening it for reading or
//! writing, and the per-connection settings (format §2).
//!
//! Two handles, by design: [`Archive`] reads and can never write, and
//! [`ArchiveMut`] (feature `write`) holds the file exclusively for catalog
//! writes. The streaming writer opens its own connection (see `write`).

mod bulk;
mod handle;
mod in_place;
#[cfg(not(target_arch = "wasm32"))]
mod paths;
#[cfg(feature = "write")]
pub(crate) mod place;
pub mod pragmas;
mod schema;
mod sniff;
#[cfg(feature = "write")]
pub(crate) mod staging;
#[cfg(feature = "write")]
mod transaction;

pub(crate) use bulk::payload_buffer;
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub use handle::ArchiveMut;
#[cfg(feature = "write")]
pub(crate) use handle::{create_file, open_streaming};
pub use handle::{Archive, Snapshot};
pub use in_place::serve_payloads;
#[cfg(feature = "write")]
pub(crate) use paths::sidecar_path;
#[cfg(feature = "write")]
#[doc(hidden)]
pub use place::{observe_steps, Step, StepObserver};
#[cfg(any(target_arch = "wasm32", test))]
pub(crate) use schema::warm_up_archive;
pub use schema::{CatalogShape, CATALOG_TABLES, SCHEMA_SQL};
#[cfg(not(target_arch = "wasm32"))]
pub use sniff::sniff;
pub use sniff::{sniff_bytes, FileKind, HEADER_BYTES, SQLITE_MAGIC};
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub use staging::STAGING_SUFFIX;
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub use transaction::Transaction;

/// `application_id` of every archive: the ASCII bytes `dend`.
pub const APPLICATION_ID: u32 = 0x6465_6e64;
/// The catalog schema version this build reads and writes (`user_version`).
pub const SCHEMA_VERSION: u32 = 4;
/// The largest archive [`Archive::from_reader`] opens: SQLite's ceiling for
/// one allocation (`SQLITE_MAX_ALLOCATION_SIZE`), which must hold the whole
/// file.
pub const MAX_IN_MEMORY_BYTES: u64 = 2_147_483_391;
/// Page size fixed at creation; the cheapest per-append sidecar traffic.
pub const PAGE_SIZE: u32 = 4096;

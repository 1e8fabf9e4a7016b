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
mod schema5;
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
#[cfg(feature = "write")]
pub(crate) use schema5::stores_index_table;
pub use schema5::{CreateSchema, SCHEMA5_SQL};
#[cfg(not(target_arch = "wasm32"))]
pub use sniff::sniff;
pub use sniff::{sniff_bytes, FileKind, HEADER_BYTES, SQLITE_MAGIC};
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub use staging::STAGING_SUFFIX;
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub use transaction::Transaction;

// The file's fixed numbers (format §2) are the ground floor's; named here
// too, since this is the chapter that stamps and checks them.
pub use crate::format::{APPLICATION_ID, MAX_IN_MEMORY_BYTES, PAGE_SIZE, SCHEMA_VERSION};

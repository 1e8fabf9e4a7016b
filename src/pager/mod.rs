//! SQLite's file format read by range, outside SQLite: the browser's way
//! to open an archive larger than its memory (a dropped `File`, a URL
//! answered with HTTP ranges). SQLite reads the file through a VFS
//! (`src/wasm/vfs.rs`) that lands every read in a [`LazyFile`]; the
//! catalog reads payloads and the engine plans its prefetches here by
//! taking the file's pages apart itself. This layer never opens SQLite
//! and imports nothing above it, so all of it is tested natively against
//! the sources of `pager::mock`.
//!
//! One mechanism per file: the byte source, the block cache, the read
//! heads, the walk hints, the lazy file composing them; the header's
//! geometry, the encodings, the b-tree descent, the prefetch walk, the
//! overflow chain, the payload reader, and the registry of files read in
//! place.

mod btree;
mod cache;
mod chain;
mod config;
mod encoding;
mod file;
mod geometry;
mod heads;
mod hints;
mod in_place;
#[cfg(any(test, feature = "test-hooks"))]
#[doc(hidden)]
pub mod mock;
mod payload;
mod source;
mod walk;

pub use chain::set_map_at_breaks;
pub use config::{LazyConfig, LazyStats};
pub use file::LazyFile;
pub use geometry::Geometry;
pub use hints::{expect_walk, set_walk_hints};
pub use in_place::{in_place_payload, serve_file, set_in_place_payloads, InPlace, InPlacePayload};
pub use payload::{PayloadMap, PayloadTable};
pub use source::{ByteSource, SourceFailure};
pub use walk::{PageRun, TreeWalk};

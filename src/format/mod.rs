//! The ground floor: the numbers and names `FORMAT.md` and `WIRE.md` fix,
//! and nothing else. Every layer above reads them from here, so a rule of
//! the specification that is a number has one definition, and the error
//! type can name a limit without importing the code that enforces it.
//!
//! - [`archive`]: the file's identity and geometry (format §2), and the
//!   shape of a source's labels and metadata (§3.1).
//! - [`layout`]: what a file of each readable schema version holds
//!   (format §2, §3): where its caller indexes live, whether it has
//!   documents, decided from its tables.
//! - [`keys`]: the reserved metadata keys (§6).
//! - [`wire`]: the replication stream's preamble, kinds and limits
//!   (`WIRE.md` §1, §2, §4), with the frame-size arithmetic the writer,
//!   compaction and publisher share.

pub mod archive;
pub mod keys;
pub mod layout;
pub mod wire;

pub use archive::{Labels, APPLICATION_ID, MAX_IN_MEMORY_BYTES, PAGE_SIZE, SCHEMA_VERSION};
pub use layout::{
    is_readable_version, IndexPlace, Layout, LayoutFacts, READABLE_SCHEMA_VERSIONS, SCHEMA_4,
    SCHEMA_5,
};
pub use wire::{
    frame_fits, row_wire_len, segment_frame_len, MAGIC, MAX_FRAME_BYTES, MAX_ROW_BYTES,
    MAX_SEGMENT_BYTES, PREAMBLE_BYTES, PROTOCOL_VERSION, ROWS_FRAME_OVERHEAD, ROWS_FRAME_TARGET,
};

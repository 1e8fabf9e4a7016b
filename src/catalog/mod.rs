//! The catalog (format §3): the tables of an archive's file, one file
//! each, named after its table: the five of schema 4, and the two schema 5
//! adds (`segment_indexes`, `documents`). What a file is (its version and
//! where its caller indexes live) is decided once, when it is opened
//! ([`Layout`], asked as [`Snapshot::layout`]); every read follows it. Each holds the table's row type, its reads
//! and its inserts:
//!
//! - reads are methods of [`Snapshot`], the read transaction, so that a set
//!   of answers is consistent;
//! - inserts are methods of [`crate::container::Transaction`] (feature
//!   `write`), the write transaction; the container only begins and
//!   commits it.
//!
//! `streams` answers what `segments` and `wal` say together; `listing` and
//! `outline` are views derived from `segments` for readers of an image that
//! cannot change.
//!
//! The rule at this seam: only a holder of a write transaction writes rows
//! (an [`crate::container::ArchiveMut`] assembling, copying or recovering,
//! and the streaming writer on its own connection), and only through the
//! inserts here; the reader build has none. The live-WAL rule (§3.3) lives
//! in the reads, once, in `wal` ([`live_floor`]): an insert does not apply
//! it, since a WAL row a segment covers is shadowed whether or not it is
//! there. Refusing a row at or below the watermark is the writer's.

mod caller_rows;
mod clock_offsets;
mod documents;
mod labels;
mod listing;
mod outline;
mod payload;
mod query;
#[cfg(feature = "write")]
mod revisions;
mod segment_indexes;
mod segments;
mod sources;
mod streams;
#[cfg(test)]
mod testing;
mod wal;

pub use caller_rows::CallerRow;
pub use clock_offsets::ClockOffset;
pub use documents::{DocumentCounts, DocumentEntry, DocumentRevision, RESERVED_KIND_PREFIX};
pub use labels::Labels;
pub use listing::{Listing, WindowEntries, MAX_WINDOW_SAMPLE};
pub use outline::SealedOutline;
pub use payload::Payload;
pub use segments::{Segment, SegmentRecord};
pub use sources::{is_canonical_uuid, NewSource, SourceRecord};
pub use wal::{live_floor, Span, WalRow, LIVE_WAL_RANGE, PLANNED_STATEMENTS};

pub use crate::container::{CatalogShape, Snapshot};
pub use crate::format::{IndexPlace, Layout, READABLE_SCHEMA_VERSIONS};

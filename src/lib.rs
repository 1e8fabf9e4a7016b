#![doc = include_str!("../README.md")]
//!
//! ## The crate's modules
//!
//! Rows land in a durable, readable WAL table; a stream's rows are sealed
//! into immutable Parquet segments stored as BLOBs; a reader sees the
//! sealed segments plus the live tail while a writer keeps writing from
//! another process. The file format is described in `FORMAT.md`.
//!
//! - [`format`](mod@format): the numbers and names the specification fixes (the
//!   ground floor every other module reads them from), and the reserved
//!   metadata keys ([`format::keys`]).
//! - [`container`]: the SQLite file, its stamps, the read and write handles.
//! - [`catalog`]: typed reads of the five tables, and the live-WAL rule.
//! - [`segment`]: the encoder boundary and Parquet settings.
//! - [`typed`] (in [`segment`]): the self-describing encoder, for writers
//!   without their own.
//! - [`read`]: describing an archive and reading streams.
//! - [`verify`]: the soundness check.
//! - [`reserved`]: the JSON some reserved metadata keys hold, parsed.
//! - [`replicate`]: the replication wire, its publisher and subscriber.
//! - `write` (feature `write`): the streaming writer, sealing, retention.
//! - `rewrite` (feature `write`): copy, combine, compact, project,
//!   exact copies of a live file.
//! - `demo` (feature `demo`): realistic demo archives and their encoder.
//!
//! With the default `write` feature off, the crate is a reader with no
//! thread and no writer code, which is what compiles to wasm32.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod catalog;
pub mod container;
#[cfg(feature = "demo")]
#[cfg_attr(docsrs, doc(cfg(feature = "demo")))]
pub mod demo;
pub mod error;
pub mod format;
pub mod pager;
pub mod read;
pub mod replicate;
pub mod reserved;
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub mod rewrite;
pub mod segment;
pub mod verify;
#[cfg(target_arch = "wasm32")]
pub mod wasm;
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub mod write;

pub use bytes::Bytes;
pub use catalog::{CallerRow, ClockOffset, Labels, SegmentRecord, SourceRecord, Span, WalRow};
pub use container::Archive;
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub use container::{ArchiveMut, Transaction};
pub use error::{EngineKind, Error, NotArchive, ReadOnly, Result, WireProblem};
pub use segment::{typed, Segment, SegmentEncoder};
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub use write::{Evicted, SealPolicy, SourceWriter, Writer, WriterOptions};

//! The streaming writer (feature `write`): durable appends, sealing,
//! retention and writer sessions, through one thread that owns the only
//! writing connection (format §3.3, §3.4, §5, §6, §7).
//!
//! How the pieces fit:
//! - [`Writer`] starts the writer thread and hands out one [`SourceWriter`]
//!   per source. Every mutation travels to the thread through a channel with
//!   a single slot for the whole archive, so a slow disk slows the caller
//!   instead of growing a queue, and an unclean kill can lose at most the
//!   message in the slot and the one being committed.
//! - An append ([`SourceWriter::wal`]) is one transaction and returns once it
//!   is durable; other processes read it at once.
//! - A seal reads a stream's live rows, encodes them on a second thread (so
//!   the appends keep committing while the encoder works), then inserts the
//!   segment and its clock observation in one transaction, normally the
//!   next append's. The rows the segment covers are deleted later, a page
//!   at a time, also riding on an append's transaction; until then the
//!   live-WAL rule already hides them.
//! - Retention, checkpoints and page reclaim run on the same thread.
//!
//! The files, leaves first: `retry` (what to retry and how), `policy` and
//! `options` (settings), `streams` (what the thread knows of every stream)
//! and `pages` (which rows share a page); `reencode` (trimming and
//! projecting one segment, which the rewrites use too); `prune`
//! (`Pruner`), `seal` (the `Sealer` and its encoder thread), `adopt`
//! (placing segments encoded elsewhere: a copy's, a replica's),
//! `retention` and `session` (the open sources and their metadata), each
//! taking the connection and the stream table as arguments; `append` (a tick's rules and transaction);
//! `channel` (the messages); `thread` (the one type that composes them);
//! `writer` and `source` (the handles). No file imports one above it.
//!
//! The writer imports no layer above it: the limits a seal obeys so that
//! every segment fits one replication frame are the ground floor's
//! (`format::wire`), not the replication code's.
//!
//! `DESIGN.md` explains the choices and what they were measured to cost.

mod adopt;
mod append;
mod channel;
mod checkpoint;
mod options;
mod pages;
mod policy;
mod prune;
mod reencode;
mod retention;
mod retry;
mod seal;
mod session;
mod source;
mod streams;
mod thread;
mod writer;

pub use adopt::Adopted;
pub use append::{TickRow, TickRows};
pub(crate) use checkpoint::reclaim_free_pages;
pub use checkpoint::{CheckpointReport, RECLAIM_FREE_DIVISOR, RECLAIM_PAGES_PER_PASS};
pub use options::{WriterOptions, CHECKPOINT_INTERVAL};
pub use policy::SealPolicy;
/// Trimming and projecting one segment, for the rewrites' copies.
pub(crate) use reencode::{reencode, Reencode};
pub use retention::Evicted;
pub use session::{Event, SourceRef};
pub use source::{wall_clock_ns, SourceClock, SourceWriter};
pub use writer::Writer;

pub use crate::catalog::NewSource;

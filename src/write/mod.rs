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
//! `DESIGN.md` explains the choices and what they were measured to cost.

mod append;
mod checkpoint;
pub mod demo;
mod pages;
mod prune;
mod retention;
mod seal;
mod session;
mod source;
mod streams;
mod thread;
mod writer;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

pub use checkpoint::{CheckpointReport, RECLAIM_FREE_DIVISOR, RECLAIM_PAGES_PER_PASS};
pub use retention::Evicted;
pub use seal::{Adopted, SealPolicy};
pub use session::Event;
pub use source::{SourceClock, SourceRef, SourceWriter};
pub use writer::Writer;

pub use crate::container::NewSource;

use crate::catalog::{CallerRow, ClockOffset, WalRow};
use crate::error::Result;
use crate::segment::Segment;

/// The longest a plain copy of the main file may lag the writer: the writer
/// checkpoints at least this often, even when nothing else happens, because
/// a quiet source never reaches the size-based checkpoint.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(10);

/// Settings for one writer. The defaults are what production wants; tests
/// shorten the intervals to observe them.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// The time-based checkpoint cadence; see [`CHECKPOINT_INTERVAL`].
    pub checkpoint_interval: Duration,
    /// The seal policy every source starts with (explicit seals only, by
    /// default). [`SourceWriter::set_seal_policy`] changes one source's.
    pub seal_policy: SealPolicy,
    /// Covered rows (sealed, not yet deleted from the `wal` table) past
    /// which every one of them is deleted at the next append. Below it, a
    /// row goes only once every row sharing its page is covered, so a page
    /// is written once on its way out; see `prune.rs` and `DESIGN.md`.
    pub prune_batch_rows: u64,
    /// Appends between two prunes of fully covered pages (1: every append
    /// carries the deletes that became possible since the last).
    pub prune_every: u32,
    /// How long SQLite itself waits on a lock before the writer's own
    /// retries take over.
    pub busy_timeout: Duration,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            checkpoint_interval: CHECKPOINT_INTERVAL,
            seal_policy: SealPolicy::default(),
            prune_batch_rows: 16_384,
            prune_every: 4,
            busy_timeout: Duration::from_millis(20),
        }
    }
}

/// One row of a tick: the stream it belongs to, and the row.
pub type TickRow = (String, WalRow);

/// Rows of one tick for one source.
pub type TickRows = Vec<TickRow>;

/// What a reply carries back to a waiting handle.
pub(crate) type Reply<T> = SyncSender<Result<T>>;

/// Which streams a retention pass removes from; `None` is every stream.
pub(crate) type StreamPredicate = Box<dyn Fn(&str) -> bool + Send>;

/// A retention request, as it crosses to the writer thread.
pub(crate) struct EvictRequest {
    pub cutoff: i64,
    pub streams: Option<StreamPredicate>,
    pub floors: BTreeMap<String, i64>,
}

/// What the writer thread answers an add or a resume with.
pub(crate) struct Opened {
    pub source_id: i64,
    pub uuid: String,
    pub floor: Option<i64>,
    pub dropped: Arc<AtomicU64>,
}

/// The protocol between the handles and the writer thread. Everything that
/// changes the file is one of these.
pub(crate) enum Msg {
    AddSource {
        source: NewSource,
        reply: Reply<Opened>,
    },
    Resume {
        source: SourceRef,
        anchor: i64,
        reply: Reply<Opened>,
    },
    /// One tick for one or more sources: one transaction.
    Wal {
        ticks: Vec<(i64, TickRows)>,
        reply: Reply<Vec<Result<()>>>,
    },
    /// Seal these streams now. Not waited on: the caller learns of a failure
    /// on its next call.
    Seal {
        source_id: i64,
        streams: Vec<String>,
    },
    SetPolicy {
        source_id: i64,
        policy: SealPolicy,
    },
    Finalize {
        source_id: i64,
        last: ClockOffset,
        reply: Reply<()>,
    },
    /// A handle was dropped without finalizing.
    Release {
        source_id: i64,
    },
    UpdateMetadata {
        source_id: i64,
        patch: BTreeMap<String, Option<String>>,
        reply: Reply<()>,
    },
    AppendEvent {
        source_id: i64,
        event: Event,
        reply: Reply<()>,
    },
    CallerRows {
        source_id: i64,
        name: String,
        rows: Vec<CallerRow>,
        reply: Reply<()>,
    },
    ClockOffset {
        source_id: i64,
        offset: ClockOffset,
        reply: Reply<()>,
    },
    Adopt {
        source_id: i64,
        stream: String,
        segment: Segment,
        reply: Reply<Adopted>,
    },
    Evict {
        source_id: i64,
        request: EvictRequest,
        reply: Reply<Evicted>,
    },
    SegmentSizes {
        source_id: i64,
        reply: Reply<Vec<crate::catalog::SegmentRecord>>,
    },
    ArchiveBytes {
        reply: Reply<u64>,
    },
    /// Answered once everything before it, in-flight seals included, is
    /// committed.
    Sync {
        reply: Reply<()>,
    },
    Checkpoint {
        reply: Reply<CheckpointReport>,
    },
    /// The encoder thread finished a job; nothing to do but look.
    Wake,
    Shutdown,
}

/// State the handles share with the writer thread: how it ended, once it has.
pub(crate) struct Shared {
    pub file: String,
    state: Mutex<Ending>,
    ended: Condvar,
}

#[derive(Default)]
struct Ending {
    failure: Option<String>,
    finished: bool,
}

impl Shared {
    pub(crate) fn new(file: String) -> Shared {
        Shared {
            file,
            state: Mutex::new(Ending::default()),
            ended: Condvar::new(),
        }
    }

    /// Called by the writer thread last of all, after it has stopped taking
    /// messages: handles that find the channel closed read this.
    pub(crate) fn finish(&self, failure: Option<String>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.failure = failure;
        state.finished = true;
        self.ended.notify_all();
    }

    /// The error a handle reports once the thread is gone: the thread's own
    /// failure when it had one. Waits (briefly) for the thread to record it,
    /// since a handle can see the channel close a moment before that.
    pub(crate) fn stopped(&self) -> crate::Error {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !state.finished {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .ended
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        crate::Error::WriterStopped {
            file: self.file.clone(),
            message: state
                .failure
                .clone()
                .unwrap_or_else(|| "the writer has been joined".to_string()),
        }
    }
}

/// Sends `msg` and waits for its reply, turning a closed channel on either
/// side into the writer's own failure.
pub(crate) fn request<T>(
    tx: &SyncSender<Msg>,
    shared: &Shared,
    make: impl FnOnce(Reply<T>) -> Msg,
) -> Result<T> {
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    tx.send(make(reply)).map_err(|_| shared.stopped())?;
    answer.recv().map_err(|_| shared.stopped())?
}

/// The wall clock in nanoseconds since the epoch (negative before 1970).
pub fn wall_clock_ns() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

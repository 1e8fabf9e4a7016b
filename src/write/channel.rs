//! The protocol between the handles ([`super::Writer`],
//! [`super::SourceWriter`]) and the writer thread: every change to the file
//! is one [`Msg`], sent through a channel with a single slot, answered on a
//! reply channel of its own.

use std::collections::BTreeMap;
use std::sync::mpsc::SyncSender;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use super::adopt::Adopted;
use super::append::TickRows;
use super::checkpoint::CheckpointReport;
use super::policy::SealPolicy;
use super::retention::{EvictRequest, Evicted};
use super::session::{Event, Opened, SourceRef};
use crate::catalog::NewSource;
use crate::catalog::{CallerRow, ClockOffset, SegmentRecord};
use crate::error::Result;
use crate::segment::Segment;

/// What a reply carries back to a waiting handle.
pub(super) type Reply<T> = SyncSender<Result<T>>;

/// The protocol between the handles and the writer thread. Everything that
/// changes the file is one of these.
pub(super) enum Msg {
    AddSource {
        source: NewSource,
        reply: Reply<Opened>,
    },
    /// Open a replica of a source written elsewhere.
    Mirror {
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
        last: Option<ClockOffset>,
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
    /// A replica's source row brought up to what its origin says.
    Restate {
        source_id: i64,
        source: NewSource,
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
        segments: Vec<(String, Segment)>,
        reply: Reply<Vec<Adopted>>,
    },
    Evict {
        source_id: i64,
        request: EvictRequest,
        reply: Reply<Evicted>,
    },
    SegmentSizes {
        source_id: i64,
        reply: Reply<Vec<SegmentRecord>>,
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
    /// A document revision appended (schema 5): `Some((schema, body))`
    /// puts, `None` deletes. Answers the revision's id.
    Document {
        kind: String,
        name: String,
        content: Option<(String, String)>,
        reply: Reply<i64>,
    },
    /// The encoder thread finished a job; nothing to do but look.
    Wake,
    Shutdown,
}

/// State the handles share with the writer thread: how it ended, once it has.
pub(super) struct Shared {
    file: String,
    state: Mutex<Ending>,
    ended: Condvar,
}

#[derive(Default)]
struct Ending {
    failure: Option<String>,
    finished: bool,
}

impl Shared {
    pub fn new(file: String) -> Shared {
        Shared {
            file,
            state: Mutex::new(Ending::default()),
            ended: Condvar::new(),
        }
    }

    /// The archive's name, for messages.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Called by the writer thread last of all, after it has stopped taking
    /// messages: handles that find the channel closed read this.
    pub fn finish(&self, failure: Option<String>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.failure = failure;
        state.finished = true;
        self.ended.notify_all();
    }

    /// The error a handle reports once the thread is gone: the thread's own
    /// failure when it had one. Waits (briefly) for the thread to record it,
    /// since a handle can see the channel close a moment before that.
    pub fn stopped(&self) -> crate::Error {
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
pub(super) fn request<T>(
    tx: &SyncSender<Msg>,
    shared: &Shared,
    make: impl FnOnce(Reply<T>) -> Msg,
) -> Result<T> {
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    tx.send(make(reply)).map_err(|_| shared.stopped())?;
    answer.recv().map_err(|_| shared.stopped())?
}

//! One source's handle onto the writer, and its clock.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::Instant;

use super::adopt::Adopted;
use super::append::TickRows;
use super::channel::{request, Msg, Shared};
use super::policy::SealPolicy;
use super::retention::{EvictRequest, Evicted, Floors};
use super::session::{Event, Opened, SourceRef};
use crate::catalog::NewSource;
use crate::catalog::{CallerRow, ClockOffset};
use crate::error::Result;
use crate::segment::Segment;

/// The wall clock in nanoseconds since the epoch (negative before 1970).
pub fn wall_clock_ns() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

/// A source's timeline (format §5): timestamps count monotonic time from the
/// wall clock read once when the session started, so they keep increasing
/// through a wall-clock step; the row's wall offset records the difference.
#[derive(Debug, Clone, Copy)]
pub struct SourceClock {
    anchor_wall_ns: i64,
    started: Instant,
}

impl SourceClock {
    /// A clock whose timeline starts at `anchor_wall_ns` now.
    pub fn new(anchor_wall_ns: i64) -> SourceClock {
        SourceClock {
            anchor_wall_ns,
            started: Instant::now(),
        }
    }

    /// The session's anchor.
    pub fn anchor(&self) -> i64 {
        self.anchor_wall_ns
    }

    /// The timestamp of this instant, and the wall clock's offset from it.
    pub fn now(&self) -> (i64, i64) {
        let elapsed = i64::try_from(self.started.elapsed().as_nanos()).unwrap_or(i64::MAX);
        let ts = self.anchor_wall_ns.saturating_add(elapsed);
        (ts, wall_clock_ns().saturating_sub(ts))
    }

    /// [`SourceClock::now`] as a clock observation, for `finalize`.
    pub fn offset_now(&self) -> ClockOffset {
        let (ts, offset_ns) = self.now();
        ClockOffset { ts, offset_ns }
    }
}

/// Appends to one source. Every call goes through the archive's single
/// writer thread, in order with every other handle's calls.
///
/// Dropping the handle without [`SourceWriter::finalize`] leaves the source
/// `complete = 0`: what an unclean stop looks like, and resumable.
pub struct SourceWriter {
    tx: SyncSender<Msg>,
    shared: Arc<Shared>,
    source_id: i64,
    uuid: String,
    clock: SourceClock,
    floor: Option<i64>,
    dropped: Arc<AtomicU64>,
    released: bool,
}

impl std::fmt::Debug for SourceWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceWriter")
            .field("file", &self.shared.file())
            .field("source_id", &self.source_id)
            .field("uuid", &self.uuid)
            .finish_non_exhaustive()
    }
}

impl SourceWriter {
    /// The handle onto a source the writer thread has just opened.
    pub(super) fn new(
        tx: SyncSender<Msg>,
        shared: Arc<Shared>,
        opened: Opened,
        clock: SourceClock,
    ) -> SourceWriter {
        SourceWriter {
            tx,
            shared,
            source_id: opened.source_id,
            uuid: opened.uuid,
            clock,
            floor: opened.floor,
            dropped: opened.dropped,
            released: false,
        }
    }

    /// The source's id in this file.
    pub fn id(&self) -> i64 {
        self.source_id
    }

    /// The source's uuid.
    pub fn uuid(&self) -> &str {
        &self.uuid
    }

    /// This session's clock: timestamps for rows, offsets for `finalize`.
    pub fn clock(&self) -> &SourceClock {
        &self.clock
    }

    /// On a resumed source, the newest row the previous session left: every
    /// row of this session must be later.
    pub fn resumed_after(&self) -> Option<i64> {
        self.floor
    }

    /// Appends one tick: one transaction, durable when this returns (the
    /// connection runs `synchronous=FULL`) and readable by other processes
    /// at once. Blocks while the writer is busy: that is the backpressure.
    ///
    /// A row at or below its stream's watermark is dropped and counted
    /// ([`SourceWriter::dropped_out_of_order`]); on a resumed source the
    /// whole call is refused with [`crate::Error::TimelineBackwards`] instead. A
    /// repeated `(stream, ts)` refuses the call with [`crate::Error::DuplicateRow`],
    /// and a lock or full disk that outlasts the retries with
    /// [`crate::Error::TickDropped`]; after either the writer carries on.
    pub fn wal(&self, rows: TickRows) -> Result<()> {
        let mut outcomes = request(&self.tx, &self.shared, |reply| Msg::Wal {
            ticks: vec![(self.source_id, rows)],
            reply,
        })?;
        outcomes.pop().unwrap_or(Ok(()))
    }

    /// Seals `streams` now, as one batch (one transaction). Returns once the
    /// request is queued; the encoding runs beside later appends, and a
    /// failure surfaces on a later call. [`SourceWriter::sync`] waits for it.
    pub fn seal<S: Into<String>>(&self, streams: impl IntoIterator<Item = S>) -> Result<()> {
        let streams: Vec<String> = streams.into_iter().map(Into::into).collect();
        if streams.is_empty() {
            return Ok(());
        }
        self.tx
            .send(Msg::Seal {
                source_id: self.source_id,
                streams,
            })
            .map_err(|_| self.shared.stopped())
    }

    /// Replaces this source's automatic seal policy.
    pub fn set_seal_policy(&self, policy: SealPolicy) -> Result<()> {
        self.tx
            .send(Msg::SetPolicy {
                source_id: self.source_id,
                policy,
            })
            .map_err(|_| self.shared.stopped())
    }

    /// Waits until everything sent so far is committed, seals included.
    pub fn sync(&self) -> Result<()> {
        request(&self.tx, &self.shared, |reply| Msg::Sync { reply })
    }

    /// Ends the session cleanly: waits for seals in flight, records `last`
    /// as the final clock observation and sets `complete`. Rows not yet
    /// sealed stay in the live tail, where every reader finds them.
    pub fn finalize(mut self, last: ClockOffset) -> Result<()> {
        let source_id = self.source_id;
        let done = request(&self.tx, &self.shared, |reply| Msg::Finalize {
            source_id,
            last: Some(last),
            reply,
        });
        self.released = done.is_ok();
        done
    }

    /// Ends a replica's session ([`crate::Writer::mirror_source`]) as its
    /// origin stands: `complete` finalizes it (with `last`, the newest
    /// clock observation the origin sent, if any) and otherwise the handle
    /// is released and the source stays as it is.
    pub fn finish_replica(mut self, complete: bool, last: Option<ClockOffset>) -> Result<()> {
        if !complete {
            return Ok(());
        }
        let source_id = self.source_id;
        let done = request(&self.tx, &self.shared, |reply| Msg::Finalize {
            source_id,
            last,
            reply,
        });
        self.released = done.is_ok();
        done
    }

    /// Sets (`Some`) or removes (`None`) metadata keys, in order with the
    /// ticks around it. `writer_sessions` and `encoder` are dendro's and
    /// refused; use [`SourceWriter::append_event`] for `events`.
    pub fn update_metadata(&self, patch: BTreeMap<String, Option<String>>) -> Result<()> {
        let source_id = self.source_id;
        request(&self.tx, &self.shared, |reply| Msg::UpdateMetadata {
            source_id,
            patch,
            reply,
        })
    }

    /// On a replica ([`crate::Writer::mirror_source`]): makes its source
    /// row say what the origin's latest handshake says, durably — labels,
    /// metadata (the origin's `writer_sessions`, then the replica's own),
    /// and `complete` cleared if the origin resumed. Refused on a source
    /// that is not a replica.
    pub fn restate_replica(&self, source: NewSource) -> Result<()> {
        let source_id = self.source_id;
        request(&self.tx, &self.shared, |reply| Msg::Restate {
            source_id,
            source,
            reply,
        })
    }

    /// Appends an event to the source's `events` key, keeping the others.
    pub fn append_event(&self, event: Event) -> Result<()> {
        let source_id = self.source_id;
        request(&self.tx, &self.shared, |reply| Msg::AppendEvent {
            source_id,
            event,
            reply,
        })
    }

    /// Stores rows in the caller's time-keyed store under `name`.
    pub fn caller_rows(&self, name: &str, rows: Vec<CallerRow>) -> Result<()> {
        let source_id = self.source_id;
        let name = name.to_string();
        request(&self.tx, &self.shared, |reply| Msg::CallerRows {
            source_id,
            name,
            rows,
            reply,
        })
    }

    /// Records a clock observation; the first at a timestamp wins.
    pub fn clock_offset(&self, offset: ClockOffset) -> Result<()> {
        let source_id = self.source_id;
        request(&self.tx, &self.shared, |reply| Msg::ClockOffset {
            source_id,
            offset,
            reply,
        })
    }

    /// Inserts a segment built elsewhere at the stream's next seq. Refused
    /// if it straddles the watermark or reaches an unsealed row; one the
    /// stream already covers is reported as [`Adopted::AlreadyHeld`].
    pub fn adopt_segment(&self, stream: &str, segment: Segment) -> Result<Adopted> {
        let mut outcomes = self.adopt_segments(vec![(stream.to_string(), segment)])?;
        Ok(outcomes.pop().expect("one outcome per segment"))
    }

    /// [`SourceWriter::adopt_segment`] for many segments, in order, as one
    /// transaction (one commit for all of them). Either every segment is
    /// adopted or held, or none is written and the first that does not fit
    /// is named in the error.
    pub fn adopt_segments(&self, segments: Vec<(String, Segment)>) -> Result<Vec<Adopted>> {
        if segments.is_empty() {
            return Ok(Vec::new());
        }
        let source_id = self.source_id;
        request(&self.tx, &self.shared, |reply| Msg::Adopt {
            source_id,
            segments,
            reply,
        })
    }

    fn evict(&self, request_: EvictRequest) -> Result<Evicted> {
        let source_id = self.source_id;
        request(&self.tx, &self.shared, |reply| Msg::Evict {
            source_id,
            request: request_,
            reply,
        })
    }

    /// Removes everything of this source wholly older than `cutoff`:
    /// segments ending before it, WAL rows and caller rows before it, clock
    /// observations before it. Live rows lost this way are counted and logged.
    pub fn evict_before(&self, cutoff: i64) -> Result<Evicted> {
        self.evict_before_with_floor(cutoff, Floors::new())
    }

    /// [`SourceWriter::evict_before`] restricted to the streams (and
    /// caller-row names) `evict` accepts: the predicate picks what goes.
    pub fn evict_streams_before(
        &self,
        cutoff: i64,
        evict: impl Fn(&str) -> bool + Send + 'static,
    ) -> Result<Evicted> {
        self.evict_streams_before_with_floor(cutoff, evict, Floors::new())
    }

    /// [`SourceWriter::evict_before`], keeping each named caller-row series
    /// from `floors[name]` on: its rows go only below `min(floor, cutoff)`,
    /// so the entry in force at the cutoff survives.
    pub fn evict_before_with_floor(
        &self,
        cutoff: i64,
        floors: BTreeMap<String, i64>,
    ) -> Result<Evicted> {
        self.evict(EvictRequest {
            cutoff,
            streams: None,
            floors,
        })
    }

    /// Both restrictions at once.
    pub fn evict_streams_before_with_floor(
        &self,
        cutoff: i64,
        evict: impl Fn(&str) -> bool + Send + 'static,
        floors: BTreeMap<String, i64>,
    ) -> Result<Evicted> {
        self.evict(EvictRequest {
            cutoff,
            streams: Some(Box::new(evict)),
            floors,
        })
    }

    /// Rows of this source dropped for arriving at or below their stream's
    /// watermark, in this session. Worth asserting is zero.
    pub fn dropped_out_of_order(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// This source's sealed segments and their sizes, oldest first.
    pub fn segment_sizes(&self) -> Result<Vec<crate::catalog::SegmentRecord>> {
        let source_id = self.source_id;
        request(&self.tx, &self.shared, |reply| Msg::SegmentSizes {
            source_id,
            reply,
        })
    }

    /// The archive's size in bytes (pages times page size).
    pub fn archive_bytes(&self) -> Result<u64> {
        request(&self.tx, &self.shared, |reply| Msg::ArchiveBytes { reply })
    }
}

impl Drop for SourceWriter {
    fn drop(&mut self) {
        if !self.released {
            let _ = self.tx.send(Msg::Release {
                source_id: self.source_id,
            });
        }
    }
}

impl From<&SourceWriter> for SourceRef {
    fn from(writer: &SourceWriter) -> Self {
        SourceRef::Id(writer.source_id)
    }
}

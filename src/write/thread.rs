//! The writer thread: owns the only writing connection and serves the
//! channel, one message at a time, in the order the callers sent them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::warn;
use rusqlite::Connection;

use super::pages::PageTracker;
use super::seal::{SealPolicy, Sealer};
use super::streams::StreamCache;
use super::{Msg, Shared, WriterOptions};
use crate::error::{Error, Result};
use crate::segment::SegmentEncoder;

/// With covered rows waiting and nothing arriving for this long, the writer
/// prunes them on its own transaction rather than waiting for a tick.
const IDLE_PRUNE_AFTER: Duration = Duration::from_secs(1);

/// A finished seal waits this long for an append to ride on before it
/// commits on its own: appends back to back carry it for free, and a
/// source ticking once a second does not leave it waiting.
const SEAL_RIDE_WAIT: Duration = Duration::from_millis(2);

/// A source this writer is appending to.
pub(super) struct SourceState {
    pub policy: SealPolicy,
    /// Resumed by this writer: rows the rules would drop are refused instead.
    pub resumed: bool,
    /// On a resumed source: the newest row the previous session left. Every
    /// row of this session must be later.
    pub floor: Option<i64>,
    /// Rows dropped as out of order, shared with the source's handle.
    pub dropped: Arc<AtomicU64>,
}

/// Everything the writer thread owns.
pub(crate) struct WriterThread {
    pub(super) conn: Connection,
    pub(super) file: String,
    pub(super) encoder: Arc<dyn SegmentEncoder>,
    pub(super) options: WriterOptions,
    pub(super) streams: StreamCache,
    pub(super) sources: HashMap<i64, SourceState>,
    pub(super) sealer: Sealer,
    pub(super) consecutive_drops: u32,
    pub(super) warned_collisions: HashSet<i64>,
    /// Sources opened and finalized in this session: a close reclaims free
    /// pages only when every one it opened was finalized.
    pub(super) opened: usize,
    /// Every source added or resumed in this session, finalized or not: a
    /// clean close deletes their covered rows. Others keep their file as
    /// it was.
    pub(super) written: HashSet<i64>,
    pub(super) finalized: usize,
    /// Which rows share table pages, for the prune (see `prune.rs`).
    pub(super) pages: PageTracker,
    /// Rows of fully covered pages, to delete in the next transaction.
    pub(super) pending_prune: Vec<(i64, String, i64)>,
    pub(super) appends_since_prune: u32,
    last_checkpoint: Instant,
    last_activity: Instant,
    shared: Arc<Shared>,
}

impl WriterThread {
    pub(super) fn new(
        conn: Connection,
        file: String,
        encoder: Arc<dyn SegmentEncoder>,
        options: WriterOptions,
        streams: StreamCache,
        sealer: Sealer,
        shared: Arc<Shared>,
    ) -> WriterThread {
        WriterThread {
            conn,
            file,
            encoder,
            options,
            streams,
            sources: HashMap::new(),
            sealer,
            consecutive_drops: 0,
            warned_collisions: HashSet::new(),
            opened: 0,
            written: HashSet::new(),
            finalized: 0,
            pages: PageTracker::default(),
            pending_prune: Vec::new(),
            appends_since_prune: 0,
            last_checkpoint: Instant::now(),
            last_activity: Instant::now(),
            shared,
        }
    }

    /// The thread's body. Records how it ended where the handles can read
    /// it, then closes the connection (SQLite checkpoints and removes the
    /// sidecars when it was the last one).
    pub(super) fn run(mut self, rx: Receiver<Msg>) -> Result<()> {
        let outcome = self.serve(&rx);
        let failure = outcome.as_ref().err().map(|e| e.to_string());
        if let Some(message) = &failure {
            warn!("{}: the writer stopped: {message}", self.file);
        }
        self.sealer.stop();
        let shared = Arc::clone(&self.shared);
        drop(self);
        drop(rx);
        shared.finish(failure);
        outcome
    }

    fn serve(&mut self, rx: &Receiver<Msg>) -> Result<()> {
        loop {
            match rx.recv_timeout(self.next_wakeup()) {
                Ok(Msg::Shutdown) | Err(RecvTimeoutError::Disconnected) => return self.close(),
                Ok(msg) => {
                    self.last_activity = Instant::now();
                    self.handle(msg)?;
                }
                Err(RecvTimeoutError::Timeout) => self.idle()?,
            }
            self.collect_seals()?;
            self.checkpoint_if_due();
        }
    }

    /// How long the loop may wait for a message before it has work of its own.
    fn next_wakeup(&self) -> Duration {
        let checkpoint = self
            .options
            .checkpoint_interval
            .saturating_sub(self.last_checkpoint.elapsed());
        let mut wait = checkpoint;
        if self.sealer.has_sealed() {
            wait = wait.min(SEAL_RIDE_WAIT.saturating_sub(self.last_activity.elapsed()));
        }
        if self.streams.covered_rows() > 0 && !self.sealer.busy() {
            wait = wait.min(IDLE_PRUNE_AFTER.saturating_sub(self.last_activity.elapsed()));
        }
        wait
    }

    fn idle(&mut self) -> Result<()> {
        if self.sealer.has_sealed() && self.last_activity.elapsed() >= SEAL_RIDE_WAIT {
            self.commit_sealed()?;
        }
        if self.last_activity.elapsed() >= IDLE_PRUNE_AFTER && !self.sealer.busy() {
            if let Err(e) = self.prune_now() {
                warn!(
                    "{}: pruning sealed rows while idle failed ({e}); will retry",
                    self.file
                );
            }
        }
        Ok(())
    }

    /// The time-based checkpoint: best effort, since a reader holding an
    /// old snapshot can stop it moving pages, and that is no reason to stop
    /// recording.
    fn checkpoint_if_due(&mut self) {
        if self.last_checkpoint.elapsed() < self.options.checkpoint_interval {
            return;
        }
        if let Err(e) = super::checkpoint::passive(&self.conn, &self.file) {
            warn!("{}: the periodic checkpoint failed ({e})", self.file);
        }
        self.last_checkpoint = Instant::now();
    }

    /// Deletes the covered rows of every source this session wrote, in one
    /// transaction, by watermark rather than by the prune's counts.
    fn prune_written(&mut self) -> Result<()> {
        let mut sources: Vec<i64> = self.written.iter().copied().collect();
        sources.sort_unstable();
        super::append::with_retries(&self.file, "pruning sealed rows", || {
            let tx = crate::container::Transaction::begin(&self.conn, &self.file)?;
            for &source_id in &sources {
                self.prune_source_in(tx.sql(), source_id)
                    .map_err(|e| Error::sqlite(&self.file, "cannot prune sealed rows", e))?;
            }
            tx.commit()
        })?;
        for source_id in sources {
            self.source_pruned(source_id);
        }
        Ok(())
    }

    /// A clean stop: every seal in flight lands, covered rows are pruned, and
    /// when every source this session opened was finalized, free pages go
    /// back to the filesystem (bounded in time).
    fn close(&mut self) -> Result<()> {
        self.drain_seals()?;
        if let Err(e) = self.prune_written() {
            warn!("{}: pruning sealed rows at close failed ({e})", self.file);
        }
        if self.opened > 0 && self.finalized == self.opened {
            if let Err(e) = super::checkpoint::reclaim_at_close(&self.conn, &self.file) {
                warn!("{}: reclaiming free pages at close failed ({e})", self.file);
            }
        }
        Ok(())
    }

    pub(super) fn not_open(&self, source_id: i64) -> Error {
        Error::Invalid {
            file: self.file.clone(),
            message: format!("source {source_id} is not open for writing in this writer"),
        }
    }

    /// Fails unless `source_id` is being written by this writer.
    pub(super) fn require_open(&self, source_id: i64) -> Result<()> {
        if self.sources.contains_key(&source_id) {
            Ok(())
        } else {
            Err(self.not_open(source_id))
        }
    }

    fn handle(&mut self, msg: Msg) -> Result<()> {
        match msg {
            Msg::AddSource { source, reply } => {
                let _ = reply.send(self.add_source(source));
            }
            Msg::Resume {
                source,
                anchor,
                reply,
            } => {
                self.drain_seals()?;
                let _ = reply.send(self.resume(source, anchor));
            }
            Msg::Wal { ticks, reply } => {
                let outcomes = self.commit_tick(ticks)?;
                let _ = reply.send(Ok(outcomes));
            }
            Msg::Seal { source_id, streams } => {
                if self.sources.contains_key(&source_id) {
                    self.dispatch_seal(source_id, &streams)?;
                } else {
                    warn!(
                        "{}: a seal for source {source_id}, which is not open, was ignored",
                        self.file
                    );
                }
            }
            Msg::SetPolicy { source_id, policy } => {
                if let Some(source) = self.sources.get_mut(&source_id) {
                    source.policy = policy;
                }
            }
            Msg::Finalize {
                source_id,
                last,
                reply,
            } => {
                self.drain_seals()?;
                let _ = reply.send(self.finalize(source_id, last));
            }
            Msg::Release { source_id } => {
                self.sources.remove(&source_id);
                self.pages.stop_waiting(source_id, None, i64::MAX);
            }
            Msg::UpdateMetadata {
                source_id,
                patch,
                reply,
            } => {
                let _ = reply.send(self.update_metadata(source_id, &patch));
            }
            Msg::AppendEvent {
                source_id,
                event,
                reply,
            } => {
                let _ = reply.send(self.append_event(source_id, &event));
            }
            Msg::CallerRows {
                source_id,
                name,
                rows,
                reply,
            } => {
                let _ = reply.send(self.caller_rows(source_id, &name, &rows));
            }
            Msg::ClockOffset {
                source_id,
                offset,
                reply,
            } => {
                let _ = reply.send(self.clock_offset(source_id, offset));
            }
            Msg::Adopt {
                source_id,
                stream,
                segment,
                reply,
            } => {
                self.drain_seals()?;
                let _ = reply.send(self.adopt(source_id, &stream, segment));
            }
            Msg::Evict {
                source_id,
                request,
                reply,
            } => {
                self.drain_seals()?;
                let _ = reply.send(self.evict(source_id, request));
            }
            Msg::SegmentSizes { source_id, reply } => {
                let _ = reply.send(self.segment_sizes(source_id));
            }
            Msg::ArchiveBytes { reply } => {
                let _ = reply.send(super::checkpoint::archive_bytes(&self.conn, &self.file));
            }
            Msg::Sync { reply } => {
                self.drain_seals()?;
                let _ = reply.send(Ok(()));
            }
            Msg::Checkpoint { reply } => {
                let report = super::checkpoint::passive(&self.conn, &self.file);
                self.last_checkpoint = Instant::now();
                let _ = reply.send(report);
            }
            Msg::Wake => {}
            Msg::Shutdown => unreachable!("handled by the loop"),
        }
        Ok(())
    }
}

//! The writer thread: owns the only writing connection and serves the
//! channel, one message at a time, in the order the callers sent them.
//!
//! It holds the writer's parts privately and lends each the connection and
//! the stream table for one call: the [`Sessions`] of open sources, the
//! [`Sealer`] and its encoder thread, the [`Pruner`], the append path's
//! [`Drops`]. What needs more than one part (a tick, a finalize, a close)
//! is put together here.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::warn;
use rusqlite::Connection;

use super::adopt;
use super::append::{self, Drops, Part, TickRows};
use super::channel::{Msg, Shared};
use super::checkpoint;
use super::options::WriterOptions;
use super::prune::Pruner;
use super::retention;
use super::retry::{is_transient, with_retries};
use super::seal::Sealer;
use super::session::Sessions;
use super::streams::StreamCache;
use crate::catalog::ClockOffset;
use crate::container::Transaction;
use crate::error::{Error, Result};
use crate::segment::SegmentEncoder;

/// With covered rows waiting and nothing arriving for this long, the writer
/// prunes them on its own transaction rather than waiting for a tick.
const IDLE_PRUNE_AFTER: Duration = Duration::from_secs(1);

/// A finished seal waits this long for an append to ride on before it
/// commits on its own: appends back to back carry it for free, and a
/// source ticking once a second does not leave it waiting.
const SEAL_RIDE_WAIT: Duration = Duration::from_millis(2);

/// Everything the writer thread owns.
pub(super) struct WriterThread {
    conn: Connection,
    file: String,
    encoder: Arc<dyn SegmentEncoder>,
    checkpoint_interval: Duration,
    streams: StreamCache,
    sessions: Sessions,
    sealer: Sealer,
    pruner: Pruner,
    drops: Drops,
    last_checkpoint: Instant,
    last_activity: Instant,
    shared: Arc<Shared>,
}

impl WriterThread {
    /// The thread's state over `conn`, its stream table seeded from the file.
    pub fn new(
        conn: Connection,
        file: String,
        encoder: Arc<dyn SegmentEncoder>,
        options: WriterOptions,
        sealer: Sealer,
        shared: Arc<Shared>,
    ) -> Result<WriterThread> {
        let streams = StreamCache::seed(&conn, &file)?;
        Ok(WriterThread {
            conn,
            file,
            encoder,
            checkpoint_interval: options.checkpoint_interval,
            streams,
            sessions: Sessions::new(options.seal_policy),
            sealer,
            pruner: Pruner::new(options.prune_batch_rows, options.prune_every),
            drops: Drops::default(),
            last_checkpoint: Instant::now(),
            last_activity: Instant::now(),
            shared,
        })
    }

    /// The thread's body. Records how it ended where the handles can read
    /// it, then closes the connection (SQLite checkpoints and removes the
    /// sidecars when it was the last one).
    pub fn run(mut self, rx: Receiver<Msg>) -> Result<()> {
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
            self.sealer.collect(&mut self.streams)?;
            self.checkpoint_if_due();
        }
    }

    /// How long the loop may wait for a message before it has work of its own.
    fn next_wakeup(&self) -> Duration {
        let mut wait = self
            .checkpoint_interval
            .saturating_sub(self.last_checkpoint.elapsed());
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
            self.sealer
                .commit_ready(&self.conn, &mut self.streams, &mut self.pruner)?;
        }
        if self.last_activity.elapsed() >= IDLE_PRUNE_AFTER && !self.sealer.busy() {
            if let Err(e) = self
                .pruner
                .prune_now(&self.conn, &self.file, &mut self.streams)
            {
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
        if self.last_checkpoint.elapsed() < self.checkpoint_interval {
            return;
        }
        if let Err(e) = checkpoint::passive(&self.conn, &self.file) {
            warn!("{}: the periodic checkpoint failed ({e})", self.file);
        }
        self.last_checkpoint = Instant::now();
    }

    /// Every seal in flight lands: the barrier before anything that must
    /// see sealed state settled.
    fn drain_seals(&mut self) -> Result<()> {
        self.sealer
            .drain(&self.conn, &mut self.streams, &mut self.pruner)
    }

    /// A clean stop: every seal in flight lands, the covered rows of every
    /// source this session wrote are deleted, and when every source it
    /// opened was finalized, free pages go back to the filesystem (bounded
    /// in time).
    fn close(&mut self) -> Result<()> {
        self.drain_seals()?;
        if let Err(e) = self.prune_written() {
            warn!("{}: pruning sealed rows at close failed ({e})", self.file);
        }
        if self.sessions.all_finalized() {
            if let Err(e) = checkpoint::reclaim_at_close(&self.conn, &self.file) {
                warn!("{}: reclaiming free pages at close failed ({e})", self.file);
            }
        }
        Ok(())
    }

    /// Deletes the covered rows of every source this session wrote, in one
    /// transaction, by watermark rather than by the prune's counts.
    fn prune_written(&mut self) -> Result<()> {
        let sources = self.sessions.written();
        let (conn, file, streams, pruner) = (&self.conn, &self.file, &self.streams, &self.pruner);
        with_retries(file, "pruning sealed rows", || {
            let tx = Transaction::begin(conn, file)?;
            for &source_id in &sources {
                pruner
                    .source_in(tx.sql(), streams, source_id)
                    .map_err(|e| Error::sqlite(file, "cannot prune sealed rows", e))?;
            }
            tx.commit()
        })?;
        for source_id in sources {
            self.pruner.source_committed(&mut self.streams, source_id);
        }
        Ok(())
    }

    /// Commits one tick for one or more sources. The outer `Err` is fatal to
    /// the writer; each source's own outcome is in the returned list.
    fn commit_tick(&mut self, ticks: Vec<(i64, TickRows)>) -> Result<Vec<Result<()>>> {
        let mut outcomes: Vec<Result<()>> = (0..ticks.len()).map(|_| Ok(())).collect();
        let parts: Vec<Part> = ticks
            .into_iter()
            .enumerate()
            .map(|(i, (source_id, rows))| (i, source_id, rows))
            .collect();
        let mut parts = self.screen(parts, &mut outcomes);
        if parts.is_empty() {
            return Ok(outcomes);
        }
        let mut sealing = false;
        for (_, source_id, rows) in &parts {
            sealing |= self.seal_due_by_time(*source_id, rows)?;
        }
        if sealing {
            // The seal just handed to the encoder moved its streams'
            // watermarks: a row of this tick at or below one would be
            // hidden by the segment without being in it. Judge it again.
            parts = self.screen(parts, &mut outcomes);
            if parts.is_empty() {
                return Ok(outcomes);
            }
        }
        parts.retain(|(i, source_id, rows)| {
            match append::in_order(&self.file, &self.sessions, &self.streams, *source_id, rows) {
                Ok(()) => true,
                Err(e) => {
                    outcomes[*i] = Err(e);
                    false
                }
            }
        });
        if parts.is_empty() {
            return Ok(outcomes);
        }
        let prune = self.pruner.due(&self.streams);
        let inserted = with_retries(&self.file, "committing a tick", || {
            append::insert_tick(
                &self.conn,
                &self.file,
                &parts,
                &self.streams,
                &self.sealer,
                &self.pruner,
                prune,
            )
        });
        let inserted = match inserted {
            Ok(inserted) => inserted,
            Err(e) if is_transient(&e) => {
                self.drops.dropped(&self.file, &e)?;
                for (i, source_id, _) in &parts {
                    outcomes[*i] = Err(Error::TickDropped {
                        file: self.file.clone(),
                        source_id: *source_id,
                        cause: e.to_string(),
                    });
                }
                return Ok(outcomes);
            }
            Err(e) => return Err(e),
        };
        self.drops.committed();
        self.pruner.tick_committed();
        if inserted.sealed {
            self.sealer
                .ready_committed(&mut self.streams, &mut self.pruner);
        }
        self.pruner
            .committed(&mut self.streams, inserted.prune, &inserted.pruned);
        for ((i, source_id, rows), collision) in parts.iter().zip(inserted.collisions) {
            if let Some(err) = collision {
                self.drops.collision(*source_id, &err);
                outcomes[*i] = Err(err);
                continue;
            }
            let policy = self
                .sessions
                .get(*source_id)
                .map(|s| s.policy().clone())
                .unwrap_or_default();
            let mut due: Vec<String> = Vec::new();
            for (stream, row) in rows {
                self.pruner
                    .appended(*source_id, stream, row.ts, row.wall_offset, row.row.len());
                let st = self.streams.get_mut(*source_id, stream);
                st.committed(row.ts, row.wall_offset, row.row.len());
                if policy.due_by_size(st.unsealed_rows, st.unsealed_bytes) && !due.contains(stream)
                {
                    due.push(stream.clone());
                }
            }
            if !due.is_empty() {
                self.dispatch_seal(*source_id, &due)?;
            }
        }
        Ok(outcomes)
    }

    /// Screens each part (see [`append::screen`]), recording refusals in
    /// `outcomes` and keeping the parts with rows left.
    fn screen(&mut self, parts: Vec<Part>, outcomes: &mut [Result<()>]) -> Vec<Part> {
        let mut kept = Vec::with_capacity(parts.len());
        for (i, source_id, rows) in parts {
            match append::screen(
                &self.file,
                &self.sessions,
                &mut self.streams,
                source_id,
                rows,
            ) {
                Ok(rows) if rows.is_empty() => {}
                Ok(rows) => kept.push((i, source_id, rows)),
                Err(e) => outcomes[i] = Err(e),
            }
        }
        kept
    }

    /// Seals the source's streams whose unsealed rows this tick would make
    /// too old, or would carry across an alignment boundary. Whether it
    /// handed any to the encoder.
    fn seal_due_by_time(&mut self, source_id: i64, rows: &TickRows) -> Result<bool> {
        let Some(policy) = self.sessions.get(source_id).map(|s| s.policy()) else {
            return Ok(false);
        };
        if !policy.has_time_limit() {
            return Ok(false);
        }
        let Some((now_ts, now_wall)) = rows
            .iter()
            .map(|(_, r)| (r.ts, r.ts.saturating_add(r.wall_offset)))
            .max()
        else {
            return Ok(false);
        };
        let due: Vec<String> = self
            .streams
            .of_source(source_id)
            .filter(|(_, st)| policy.due_by_time(st.first_unsealed, now_ts, now_wall))
            .map(|(name, _)| name.clone())
            .collect();
        if due.is_empty() {
            return Ok(false);
        }
        self.dispatch_seal(source_id, &due)?;
        Ok(true)
    }

    fn dispatch_seal(&mut self, source_id: i64, names: &[String]) -> Result<()> {
        self.sealer.dispatch(
            &self.conn,
            &mut self.streams,
            &mut self.pruner,
            source_id,
            names,
        )
    }

    fn finalize(&mut self, source_id: i64, last: Option<ClockOffset>) -> Result<()> {
        self.sessions.finalize(
            &self.conn,
            &self.file,
            &mut self.streams,
            &mut self.pruner,
            source_id,
            last,
        )
    }

    fn handle(&mut self, msg: Msg) -> Result<()> {
        let (conn, file) = (&self.conn, self.file.as_str());
        match msg {
            Msg::AddSource { source, reply } => {
                let _ =
                    reply.send(
                        self.sessions
                            .add_source(conn, file, self.encoder.as_ref(), source),
                    );
            }
            Msg::Mirror { source, reply } => {
                self.drain_seals()?;
                let opened = self.sessions.mirror(
                    &self.conn,
                    &self.file,
                    self.encoder.as_ref(),
                    &mut self.streams,
                    source,
                );
                let _ = reply.send(opened);
            }
            Msg::Resume {
                source,
                anchor,
                reply,
            } => {
                self.drain_seals()?;
                let opened = self.sessions.resume(
                    &self.conn,
                    &self.file,
                    self.encoder.as_ref(),
                    &mut self.streams,
                    source,
                    anchor,
                );
                let _ = reply.send(opened);
            }
            Msg::Wal { ticks, reply } => {
                let outcomes = self.commit_tick(ticks)?;
                let _ = reply.send(Ok(outcomes));
            }
            Msg::Seal { source_id, streams } => {
                if self.sessions.get(source_id).is_some() {
                    self.dispatch_seal(source_id, &streams)?;
                } else {
                    warn!("{file}: a seal for source {source_id}, which is not open, was ignored");
                }
            }
            Msg::SetPolicy { source_id, policy } => self.sessions.set_policy(source_id, policy),
            Msg::Finalize {
                source_id,
                last,
                reply,
            } => {
                self.drain_seals()?;
                let _ = reply.send(self.finalize(source_id, last));
            }
            Msg::Release { source_id } => {
                self.sessions.release(source_id);
                self.pruner.stop_waiting(source_id, None, i64::MAX);
            }
            Msg::UpdateMetadata {
                source_id,
                patch,
                reply,
            } => {
                let _ = reply.send(self.sessions.update_metadata(conn, file, source_id, &patch));
            }
            Msg::Restate {
                source_id,
                source,
                reply,
            } => {
                let _ = reply.send(self.sessions.restate_replica(
                    conn,
                    file,
                    self.encoder.as_ref(),
                    source_id,
                    &source,
                ));
            }
            Msg::AppendEvent {
                source_id,
                event,
                reply,
            } => {
                let _ = reply.send(self.sessions.append_event(conn, file, source_id, &event));
            }
            Msg::CallerRows {
                source_id,
                name,
                rows,
                reply,
            } => {
                let _ = reply.send(
                    self.sessions
                        .caller_rows(conn, file, source_id, &name, &rows),
                );
            }
            Msg::ClockOffset {
                source_id,
                offset,
                reply,
            } => {
                let _ = reply.send(self.sessions.clock_offset(conn, file, source_id, offset));
            }
            Msg::Adopt {
                source_id,
                segments,
                reply,
            } => {
                self.drain_seals()?;
                let adopted = self
                    .sessions
                    .require(&self.file, source_id)
                    .map(|s| s.mirrored())
                    .and_then(|mirrored| {
                        adopt::adopt(
                            &self.conn,
                            &self.file,
                            &mut self.streams,
                            source_id,
                            segments,
                            mirrored,
                        )
                    });
                let _ = reply.send(adopted);
            }
            Msg::Evict {
                source_id,
                request,
                reply,
            } => {
                self.drain_seals()?;
                let evicted = self
                    .sessions
                    .require(&self.file, source_id)
                    .map(|_| ())
                    .and_then(|()| {
                        retention::evict(
                            &self.conn,
                            &self.file,
                            &mut self.streams,
                            &mut self.pruner,
                            source_id,
                            request,
                        )
                    });
                let _ = reply.send(evicted);
            }
            Msg::SegmentSizes { source_id, reply } => {
                let _ = reply.send(retention::segment_sizes(conn, file, source_id));
            }
            Msg::ArchiveBytes { reply } => {
                let _ = reply.send(checkpoint::archive_bytes(conn, file));
            }
            Msg::Sync { reply } => {
                self.drain_seals()?;
                let _ = reply.send(Ok(()));
            }
            Msg::Document {
                kind,
                name,
                content,
                reply,
            } => {
                let done = with_retries(file, "appending a document revision", || {
                    let tx = Transaction::begin(conn, file)?;
                    let id = match &content {
                        Some((schema, body)) => tx.put_document(&kind, &name, schema, body)?,
                        None => tx.delete_document(&kind, &name)?,
                    };
                    tx.commit()?;
                    Ok(id)
                });
                let _ = reply.send(done);
            }
            Msg::Checkpoint { reply } => {
                let report = checkpoint::passive(conn, file);
                self.last_checkpoint = Instant::now();
                let _ = reply.send(report);
            }
            Msg::Wake => {}
            Msg::Shutdown => unreachable!("handled by the loop"),
        }
        Ok(())
    }
}

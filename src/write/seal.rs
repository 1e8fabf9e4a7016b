//! Sealing: when a stream's live rows become a segment, and how.
//!
//! A seal has three steps. The writer thread reads the stream's live rows
//! and hands them to the encoder thread, which runs the caller's encoder
//! (checked by [`materialize`]) while the writer thread goes on committing
//! appends. When the segment comes back, one transaction inserts it with
//! the batch's clock observation: the next append's, or its own when no
//! append comes within a couple of milliseconds. The rows it covers stay in the `wal`
//! table, hidden by the watermark, until a later prune deletes them in bulk
//! (`prune.rs`).
//!
//! The watermark each stream's appends are checked against moves as soon as
//! rows are handed to the encoder, not when the segment commits, so a row
//! arriving in between is judged exactly as it would be after the commit.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use log::warn;
use rusqlite::Connection;

use super::prune::Pruner;
use super::retry::{is_transient, with_retries};
use super::streams::StreamCache;
use crate::catalog::{Snapshot, WalRow};
use crate::container::Transaction;
use crate::error::{Error, Result};
use crate::format::{frame_fits, segment_frame_len, MAX_SEGMENT_BYTES};
use crate::segment::{materialize, Segment, SegmentEncoder};

/// One stream's rows, on their way to the encoder.
struct Job {
    batch: u64,
    stream: String,
    rows: Vec<WalRow>,
}

/// What came back for one job.
struct Done {
    batch: u64,
    stream: String,
    rows_in: u64,
    bytes_in: u64,
    first_in: (i64, i64),
    outcome: Result<Option<Encoded>>,
}

/// A seal's checked segments, in timestamp order, each with the first
/// input row of its part; the clock observation the last one's last row
/// carries; how many input rows no segment holds (a leading run the
/// encoder dropped from a part, which the seal deletes rather than leaving
/// it covered); and the rows past the last segment, given back to the tail
/// when the encoder made nothing of a later part.
///
/// A tail larger than [`MAX_SEGMENT_BYTES`] of payload is cut into parts
/// at row boundaries, and a part whose segment would not fit one
/// replication frame is cut again, so no seal makes a segment a publisher
/// could not send.
struct Encoded {
    parts: Vec<(Segment, i64)>,
    observation: (i64, i64),
    skipped: u64,
    left: Option<Left>,
}

/// Rows of a seal that no segment holds and that stay live.
struct Left {
    rows: u64,
    bytes: u64,
    first: (i64, i64),
}

impl Encoded {
    fn last(&self) -> &Segment {
        &self.parts.last().expect("at least one part").0
    }
}

/// The streams one seal request covers: committed together.
struct Batch {
    id: u64,
    source_id: i64,
    waiting: usize,
    done: Vec<Done>,
}

/// A batch the encoder has finished, waiting to commit: its segments, each
/// with the job it came from.
struct Sealed {
    source_id: i64,
    segments: Vec<(Done, Encoded)>,
}

/// The encoder thread, the seal batches handed to it (oldest first), and
/// the finished ones waiting to ride on the next transaction.
pub(super) struct Sealer {
    file: String,
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    worker: Option<JoinHandle<()>>,
    batches: VecDeque<Batch>,
    next_batch: u64,
    ready: Vec<Sealed>,
}

impl Sealer {
    /// Starts the encoder thread. `wake` is called after each finished job,
    /// so an idle writer commits the segment promptly; it must not block.
    pub fn start(
        file: &str,
        encoder: Arc<dyn SegmentEncoder>,
        wake: impl Fn() + Send + 'static,
    ) -> Result<Sealer> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (done_tx, done) = mpsc::channel::<Done>();
        let name = file.to_string();
        let worker = std::thread::Builder::new()
            .name("dendro-encoder".into())
            .spawn(move || {
                for job in job_rx {
                    let outcome = encode(&name, encoder.as_ref(), &job.stream, &job.rows);
                    let first = job
                        .rows
                        .first()
                        .map_or((0, 0), |r| (r.ts, r.ts.saturating_add(r.wall_offset)));
                    let done = Done {
                        batch: job.batch,
                        rows_in: job.rows.len() as u64,
                        bytes_in: job.rows.iter().map(|r| r.row.len() as u64).sum(),
                        first_in: first,
                        stream: job.stream,
                        outcome,
                    };
                    drop(job.rows);
                    if done_tx.send(done).is_err() {
                        return;
                    }
                    wake();
                }
            })
            .map_err(|e| Error::io(file, "cannot spawn the encoder thread `dendro-encoder`", e))?;
        Ok(Sealer {
            file: file.to_string(),
            jobs: Some(jobs),
            done,
            worker: Some(worker),
            batches: VecDeque::new(),
            next_batch: 0,
            ready: Vec::new(),
        })
    }

    /// Whether any seal is with the encoder.
    pub fn busy(&self) -> bool {
        !self.batches.is_empty()
    }

    /// Whether finished seals wait to commit.
    pub fn has_sealed(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Stops the encoder thread after its current job and waits for it.
    pub fn stop(&mut self) {
        self.jobs = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }

    /// Hands the live rows of `names` (streams of `source_id`) to the
    /// encoder as one batch. If one of them is still with the encoder from
    /// an earlier seal, that seal is waited for first: segments of a stream
    /// commit in order, and each holds exactly the rows that were live when
    /// it was asked for. The wait only happens when the encoder is a whole
    /// seal behind, where holding the writer back is the right answer
    /// anyway.
    pub fn dispatch(
        &mut self,
        conn: &Connection,
        streams: &mut StreamCache,
        pruner: &mut Pruner,
        source_id: i64,
        names: &[String],
    ) -> Result<()> {
        if names.iter().any(|s| {
            streams
                .get(source_id, s)
                .is_some_and(|st| st.in_flight.is_some())
        }) {
            self.drain(conn, streams, pruner)?;
        }
        let mut jobs: Vec<Job> = Vec::new();
        let id = self.next_batch;
        for stream in names {
            if jobs.iter().any(|j| &j.stream == stream) {
                continue;
            }
            let rows = Snapshot::on_writer(conn, &self.file).live_wal_rows(source_id, stream)?;
            let Some(last) = rows.last() else {
                let st = streams.get_mut(source_id, stream);
                if st.watermark.is_none() && st.newest.is_none() {
                    warn!(
                        "{}: asked to seal stream {stream:?} of source {source_id}, which has never \
                         held a row; is the name right?",
                        self.file
                    );
                }
                continue;
            };
            let st = streams.get_mut(source_id, stream);
            st.in_flight = Some(last.ts);
            st.unsealed_rows = 0;
            st.unsealed_bytes = 0;
            st.first_unsealed = None;
            jobs.push(Job {
                batch: id,
                stream: stream.clone(),
                rows,
            });
        }
        if jobs.is_empty() {
            return Ok(());
        }
        self.next_batch += 1;
        self.batches.push_back(Batch {
            id,
            source_id,
            waiting: jobs.len(),
            done: Vec::new(),
        });
        let sender = self
            .jobs
            .as_ref()
            .expect("the encoder runs while the writer does");
        for job in jobs {
            if sender.send(job).is_err() {
                return Err(self.encoder_gone());
            }
        }
        Ok(())
    }

    fn encoder_gone(&self) -> Error {
        Error::WriterStopped {
            file: self.file.clone(),
            message: "the encoder thread ended unexpectedly".into(),
        }
    }

    /// Takes in every seal the encoder has finished, without waiting. They
    /// commit with the next append's transaction, or on their own if none
    /// comes soon.
    pub fn collect(&mut self, streams: &mut StreamCache) -> Result<()> {
        loop {
            match self.done.try_recv() {
                Ok(done) => self.finished(streams, done)?,
                Err(TryRecvError::Empty) => return Ok(()),
                Err(TryRecvError::Disconnected) if !self.busy() => return Ok(()),
                Err(TryRecvError::Disconnected) => return Err(self.encoder_gone()),
            }
        }
    }

    /// Waits for every seal in flight and commits it: the barrier before
    /// anything that must see sealed state settled (finalize, retention,
    /// adopting a segment, a sync, a clean close).
    pub fn drain(
        &mut self,
        conn: &Connection,
        streams: &mut StreamCache,
        pruner: &mut Pruner,
    ) -> Result<()> {
        while self.busy() {
            match self.done.recv() {
                Ok(done) => self.finished(streams, done)?,
                Err(_) => return Err(self.encoder_gone()),
            }
        }
        self.commit_ready(conn, streams, pruner)
    }

    fn finished(&mut self, streams: &mut StreamCache, done: Done) -> Result<()> {
        let batch = self
            .batches
            .iter_mut()
            .find(|b| b.id == done.batch)
            .expect("every finished job belongs to a batch in flight");
        batch.waiting -= 1;
        batch.done.push(done);
        while self.batches.front().is_some_and(|b| b.waiting == 0) {
            let batch = self.batches.pop_front().expect("checked");
            self.take_in(streams, batch)?;
        }
        Ok(())
    }

    /// A finished batch: an encoder failure ends the writer here; a job
    /// that produced no segment gives its rows back to the tail; the rest
    /// waits to commit.
    fn take_in(&mut self, streams: &mut StreamCache, batch: Batch) -> Result<()> {
        let source_id = batch.source_id;
        let mut segments = Vec::new();
        for mut done in batch.done {
            match std::mem::replace(&mut done.outcome, Ok(None)) {
                Err(e) => return Err(e),
                Ok(None) => restore(streams, source_id, &done),
                Ok(Some(encoded)) => segments.push((done, encoded)),
            }
        }
        if !segments.is_empty() {
            self.ready.push(Sealed {
                source_id,
                segments,
            });
        }
        Ok(())
    }

    /// Inserts every finished seal inside the caller's transaction: each
    /// batch's segments and its clock observation, the newest sealed row's
    /// own `(ts, wall_offset)`. A leading run the encoder dropped is below
    /// the new watermark yet in no segment, so no read could reach it: it
    /// goes with the seal rather than after it.
    pub fn insert_ready(&self, tx: &Transaction<'_>, streams: &StreamCache) -> Result<()> {
        for sealed in &self.ready {
            let source_id = sealed.source_id;
            let mut observation: Option<(i64, i64)> = None;
            for (done, encoded) in &sealed.segments {
                let seq = streams
                    .get(source_id, &done.stream)
                    .map_or(0, |st| st.next_seq);
                for (at, (segment, first_in)) in encoded.parts.iter().enumerate() {
                    tx.insert_segment(source_id, &done.stream, seq + at as i64, segment)?;
                    if segment.first_ts > *first_in {
                        tx.sql()
                            .execute(
                                "DELETE FROM wal WHERE source_id = ?1 AND stream = ?2 AND ts >= ?3 AND ts < ?4",
                                rusqlite::params![source_id, done.stream, first_in, segment.first_ts],
                            )
                            .map_err(|e| Error::sqlite(&self.file, "cannot drop rows the encoder skipped", e))?;
                    }
                }
                if observation.is_none_or(|(ts, _)| encoded.observation.0 >= ts) {
                    observation = Some(encoded.observation);
                }
            }
            if let Some((ts, offset)) = observation {
                tx.insert_clock_offset(source_id, ts, offset)?;
            }
        }
        Ok(())
    }

    /// The finished seals committed: the watermarks move, seqs advance, and
    /// the rows they cover count toward the prune.
    pub fn ready_committed(&mut self, streams: &mut StreamCache, pruner: &mut Pruner) {
        for sealed in std::mem::take(&mut self.ready) {
            for (done, encoded) in &sealed.segments {
                let st = streams.get_mut(sealed.source_id, &done.stream);
                let last_ts = encoded.last().last_ts;
                st.next_seq += encoded.parts.len() as i64;
                st.watermark = Some(last_ts);
                st.in_flight = None;
                let left = encoded.left.as_ref().map_or(0, |l| l.rows);
                st.covered_rows += done.rows_in - encoded.skipped - left;
                if let Some(left) = &encoded.left {
                    st.unsealed_rows += left.rows;
                    st.unsealed_bytes += left.bytes;
                    st.first_unsealed = match st.first_unsealed {
                        Some(first) if first.0 < left.first.0 => Some(first),
                        _ => Some(left.first),
                    };
                }
                pruner.covered(sealed.source_id, &done.stream, last_ts);
            }
        }
    }

    /// Commits the finished seals on a transaction of their own: at a
    /// barrier, or when no append came along to carry them. A lock or full
    /// disk that outlasts the retries defers them: their rows stay live and
    /// seal next time.
    pub fn commit_ready(
        &mut self,
        conn: &Connection,
        streams: &mut StreamCache,
        pruner: &mut Pruner,
    ) -> Result<()> {
        if !self.has_sealed() {
            return Ok(());
        }
        let committed = with_retries(&self.file, "sealing", || {
            let tx = Transaction::begin(conn, &self.file)?;
            self.insert_ready(&tx, streams)?;
            tx.commit()
        });
        match committed {
            Ok(()) => self.ready_committed(streams, pruner),
            Err(e) if is_transient(&e) => {
                warn!(
                    "{}: {} seal batch(es) deferred ({e}); their rows stay live and seal next time",
                    self.file,
                    self.ready.len()
                );
                for sealed in std::mem::take(&mut self.ready) {
                    for (done, _) in &sealed.segments {
                        restore(streams, sealed.source_id, done);
                    }
                }
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

/// A job produced no segment (or could not commit): its rows are live
/// again and count toward the next seal.
fn restore(streams: &mut StreamCache, source_id: i64, done: &Done) {
    let st = streams.get_mut(source_id, &done.stream);
    st.in_flight = None;
    st.unsealed_rows += done.rows_in;
    st.unsealed_bytes += done.bytes_in;
    st.first_unsealed = match st.first_unsealed {
        Some(first) if first.0 < done.first_in.0 => Some(first),
        _ => Some(done.first_in),
    };
}

/// Runs the encoder over one stream's rows, in parts of at most
/// [`MAX_SEGMENT_BYTES`] of payload, halving a part again while its
/// segment would not fit one replication frame. A panic becomes the same
/// error an `Err` would be: either way it will recur, so it ends the
/// writer.
fn encode(
    file: &str,
    encoder: &dyn SegmentEncoder,
    stream: &str,
    rows: &[WalRow],
) -> Result<Option<Encoded>> {
    // Parts by payload, each at least one row, in order.
    let mut pending: Vec<&[WalRow]> = Vec::new();
    let (mut start, mut size) = (0, 0u64);
    for (i, row) in rows.iter().enumerate() {
        let len = row.row.len() as u64;
        if i > start && size + len > MAX_SEGMENT_BYTES {
            pending.push(&rows[start..i]);
            (start, size) = (i, 0);
        }
        size += len;
    }
    if start < rows.len() {
        pending.push(&rows[start..]);
    }
    pending.reverse();
    let mut parts: Vec<(Segment, i64)> = Vec::new();
    let mut skipped = 0u64;
    let mut left = None;
    while let Some(part) = pending.pop() {
        let Some(segment) = encode_part(file, encoder, stream, part)? else {
            // Nothing made of this part: it and the rest stay live.
            let rest: Vec<&WalRow> = std::iter::once(part)
                .chain(pending.iter().rev().copied())
                .flatten()
                .collect();
            left = rest.first().map(|first| Left {
                rows: rest.len() as u64,
                bytes: rest.iter().map(|r| r.row.len() as u64).sum(),
                first: (first.ts, first.ts.saturating_add(first.wall_offset)),
            });
            break;
        };
        let len = segment_frame_len(
            stream,
            segment.bytes.len(),
            segment.caller_index.as_ref().map(Vec::len),
        );
        if !frame_fits(len) {
            if part.len() < 2 {
                return Err(Error::Encoder {
                    file: file.to_string(),
                    stream: stream.to_string(),
                    message: format!(
                        "the segment of the one row at {} is {} bytes, more than a replication \
                         frame carries",
                        part[0].ts,
                        segment.bytes.len()
                    ),
                });
            }
            let (a, b) = part.split_at(part.len() / 2);
            pending.push(b);
            pending.push(a);
            continue;
        }
        skipped += part.partition_point(|r| r.ts < segment.first_ts) as u64;
        parts.push((segment, part[0].ts));
    }
    let Some((last_segment, _)) = parts.last() else {
        return Ok(None);
    };
    let last = rows
        .iter()
        .rev()
        .find(|r| r.ts == last_segment.last_ts)
        .expect("materialize checked that the segment ends at an input row");
    Ok(Some(Encoded {
        observation: (last.ts, last.wall_offset),
        skipped,
        left,
        parts,
    }))
}

/// One part through the encoder, a panic turned into an error.
fn encode_part(
    file: &str,
    encoder: &dyn SegmentEncoder,
    stream: &str,
    rows: &[WalRow],
) -> Result<Option<Segment>> {
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        materialize(file, encoder, stream, rows)
    }));
    match run {
        Ok(result) => result,
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(Error::Encoder {
                file: file.to_string(),
                stream: stream.to_string(),
                message: format!("the encoder panicked: {text}"),
            })
        }
    }
}

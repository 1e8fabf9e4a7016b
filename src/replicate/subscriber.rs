//! The subscriber (feature `write`): applies frames to a local archive
//! through the streaming writer, so the replica is a live archive like any
//! other and can itself be read, or published, while it is written.
//!
//! Applying is idempotent, which is what makes a reconnect (rule 8: a new
//! handshake and full state) and a kill at any moment harmless:
//! - a source is found again by its uuid ([`Writer::mirror_source`]), or
//!   by the one [`derived_uuid`] gives a source that came without one;
//! - a segment is placed against the held segments it overlaps
//!   (`WIRE.md` §5.5): held when the replica has its rows, replacing them
//!   when it covers them (its origin merged or rewrote them);
//! - a row above its stream's newest held timestamp is new; one at or
//!   below it is looked up (a segment covers it, or the live tail has its
//!   timestamp) rather than assumed held, so a row the origin took late,
//!   or one skipped here earlier, is applied and not counted as held;
//! - a caller row identical to one held is held;
//! - a clock observation is kept once per timestamp by the table itself.
//!
//! It never seals: a replica's segments are the origin's, adopted byte
//! for byte. A handshake that says something new about a source is
//! written to the replica's source row at once.
//!
//! A replica that does not exist yet is caught up in a staging file beside
//! it (`container::staging`), written with no journal and made durable
//! once, and moved into place before the first `Rows` frame, which is where
//! every poll's catalog part ends: from then on the replica is written as
//! every archive is, one durable transaction at a time. A kill before the
//! move leaves no replica, only a staging file the next run discards.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::codec::{Frame, IndexKind, IndexState, WireRow};
use crate::catalog::{CallerRow, ClockOffset, NewSource, WalRow};
use crate::container::{staging, Archive};
use crate::error::{Error, Result};
use crate::format::{keys, Labels};
use crate::segment::{Segment, SegmentEncoder};
use crate::write::{Adopted, SourceWriter, Writer, WriterOptions};

/// What a subscriber has applied, and what it recognised or refused to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// Frames applied (of every kind).
    pub frames: u64,
    /// Handshakes applied.
    pub sources: u64,
    /// Segments inserted.
    pub segments: u64,
    /// Segments the replica already held.
    pub segments_held: u64,
    /// WAL rows inserted.
    pub rows: u64,
    /// Rows the replica already held.
    pub rows_held: u64,
    /// Rows skipped because their index state did not match (rule 9).
    pub rows_skipped: u64,
    /// Caller rows inserted from `Index` frames.
    pub index_entries: u64,
    /// `Index` entries the replica already held.
    pub index_held: u64,
    /// `Delta` entries skipped for arriving before any `Full`.
    pub index_skipped: u64,
    /// Clock observations applied.
    pub clock_offsets: u64,
    /// `Rows` frames whose seq did not follow the previous one's.
    pub gaps: u64,
    /// Replicas finalized because their origin said it is complete.
    pub finalized: u64,
    /// Handshakes that changed what a replica's source row says (labels,
    /// metadata, `complete`), written to it as they arrived.
    pub restated: u64,
    /// `SourceUpdate` frames that changed a replica's labels or metadata,
    /// written to its source row as they arrived.
    pub source_updates: u64,
    /// Held segments replaced by one of their origin's that covers them
    /// (the origin merged them).
    pub segments_replaced: u64,
    /// The newest row timestamp applied, for lag.
    pub newest_ts: Option<i64>,
    /// Snapshot images the replica started from (`WIRE.md` §6.2), whose
    /// contents are in none of the counts above.
    pub snapshots: u64,
    /// Their bytes.
    pub snapshot_bytes: u64,
}

/// A replicated source: its writer handle and what it holds.
struct Replica {
    writer: Option<SourceWriter>,
    source: NewSource,
    /// Per stream: the newest timestamp held, by a row or a segment.
    newest: HashMap<String, i64>,
    last_offset: Option<ClockOffset>,
}

/// What this connection knows of an ordinal.
struct Ordinal {
    key: String,
    last_seq: Option<u64>,
    state: IndexState,
    full_seen: bool,
}

/// Applies replication frames to one archive. One subscriber outlives
/// connections: call [`Subscriber::new_connection`] when a new stream
/// starts, since ordinals are per connection.
pub struct Subscriber {
    /// Always set, except after a failed move into place.
    writer: Option<Writer>,
    encoder: Arc<dyn SegmentEncoder>,
    path: PathBuf,
    /// While the catch-up of a new replica is staged: the staging file,
    /// which the writer and reader are on instead of `path`.
    staging: Option<PathBuf>,
    file: String,
    replicas: HashMap<String, Replica>,
    ordinals: HashMap<u32, Ordinal>,
    applied: Applied,
    reader: Option<Archive>,
    /// `Segment` frames accepted and not yet adopted, by replica key, in
    /// arrival order; and their payload bytes.
    pending: Vec<(String, String, Segment)>,
    pending_bytes: usize,
}

/// Held-back `Segment` frames are adopted once their payloads reach this
/// many bytes (or a frame of another kind arrives, or on sync and finish):
/// a catch-up commits a few large transactions instead of one per segment.
pub const ADOPT_BATCH_BYTES: usize = 16 << 20;
/// ... or once this many are held, whatever their size.
pub const ADOPT_BATCH_SEGMENTS: usize = 256;

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("file", &self.file)
            .field("applied", &self.applied)
            .finish()
    }
}

impl Subscriber {
    /// Applies to the archive at `path`, created if it does not exist.
    /// `encoder` must agree with every source's `encoder` key when it
    /// reports a version; it is never asked to encode.
    ///
    /// When nothing is at `path`, the catch-up is staged (see the module's
    /// documentation) and `path` appears only once it is whole: at the
    /// first `Rows` frame, [`Subscriber::sync`] or [`Subscriber::finish`].
    /// What an earlier run staged for `path` and never finished is
    /// discarded first.
    pub fn open(path: impl AsRef<Path>, encoder: Arc<dyn SegmentEncoder>) -> Result<Subscriber> {
        let path = path.as_ref();
        let options = WriterOptions::default();
        staging::discard_stale(path)?;
        let (writer, staged) = match std::fs::metadata(path) {
            Ok(m) if m.len() > 0 => (
                Writer::open_with(path, Arc::clone(&encoder), options)?,
                None,
            ),
            // An empty file someone made for it: written in place, as before.
            Ok(_) => (
                Writer::create_with(path, Arc::clone(&encoder), options)?,
                None,
            ),
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(&path.display().to_string(), "cannot stat", e))
            }
            Err(_) => {
                let at = staging::staging_path(path);
                (
                    Writer::create_staging(&at, Arc::clone(&encoder), options)?,
                    Some(at),
                )
            }
        };
        Ok(Subscriber {
            writer: Some(writer),
            encoder,
            path: path.to_path_buf(),
            staging: staged,
            file: path.display().to_string(),
            replicas: HashMap::new(),
            ordinals: HashMap::new(),
            applied: Applied::default(),
            reader: None,
            pending: Vec::new(),
            pending_bytes: 0,
        })
    }

    /// Counts a snapshot image of `bytes` that the archive started from
    /// (it was moved into place before this subscriber opened it).
    pub fn started_from_image(&mut self, bytes: u64) {
        self.applied.snapshots += 1;
        self.applied.snapshot_bytes += bytes;
    }

    /// Forgets the ordinals of the previous connection (rule 8).
    pub fn new_connection(&mut self) {
        self.ordinals.clear();
    }

    /// What has been applied so far.
    pub fn applied(&self) -> &Applied {
        &self.applied
    }

    /// Applies one frame. A frame is applied whole or not at all.
    ///
    /// `Segment` frames are checked (their ordinal) at once but adopted in
    /// batches, one transaction per batch: before any frame of another kind
    /// is applied, once the held ones reach [`ADOPT_BATCH_BYTES`] or
    /// [`ADOPT_BATCH_SEGMENTS`], and by [`Subscriber::sync`] and
    /// [`Subscriber::finish`]. Until then they are not in the file nor in
    /// the counts; a kill loses them, and the next connection sends them
    /// again (rule 8). Every poll ends in `Rows` frames, so a live replica
    /// holds a poll's segments once it has applied the poll.
    pub fn apply(&mut self, frame: Frame) -> Result<()> {
        if !matches!(frame, Frame::Segment { .. }) {
            self.adopt_pending()?;
        }
        if matches!(frame, Frame::Rows { .. }) {
            self.promote()?;
        }
        match frame {
            Frame::Handshake { source, row } => self.handshake(source, row)?,
            Frame::Index {
                source,
                stream,
                ts,
                kind,
                state,
                blob,
            } => self.index(source, stream, ts, kind, state, blob)?,
            Frame::Rows {
                source,
                seq,
                index_state,
                rows,
            } => self.rows(source, seq, index_state, rows)?,
            Frame::Segment {
                source,
                stream,
                mut segment,
            } => {
                // A count past `i64::MAX` on the wire arrives negative; it
                // is held as the most a row count can be.
                if segment.rows < 0 {
                    segment.rows = i64::MAX;
                }
                self.segment(source, &stream, segment)?
            }
            Frame::ClockOffset {
                source,
                ts,
                offset_ns,
            } => {
                let offset = ClockOffset { ts, offset_ns };
                let (writer, replica) = self.replica(source)?;
                replica.handle(writer)?.clock_offset(offset)?;
                if replica.last_offset.is_none_or(|o| o.ts <= ts) {
                    replica.last_offset = Some(offset);
                }
                self.applied.clock_offsets += 1;
            }
            Frame::SourceUpdate {
                source,
                labels,
                metadata,
                ..
            } => self.source_update(source, labels, metadata)?,
        }
        self.applied.frames += 1;
        Ok(())
    }

    /// Finalizes every replica whose origin is complete and stops the
    /// writer: what a stream's clean end calls for.
    pub fn finish(mut self) -> Result<Applied> {
        self.adopt_pending()?;
        self.promote()?;
        let keys: Vec<String> = self.replicas.keys().cloned().collect();
        for key in keys {
            self.settle(&key)?;
        }
        for replica in self.replicas.values_mut() {
            drop(replica.writer.take());
        }
        let applied = self.applied.clone();
        self.live()?;
        if let Some(writer) = self.writer.take() {
            writer.join()?;
        }
        Ok(applied)
    }

    /// Waits until everything applied is durable, then returns the counts.
    /// A staged catch-up is moved into place first.
    pub fn sync(&mut self) -> Result<&Applied> {
        self.adopt_pending()?;
        self.promote()?;
        self.live()?.sync()?;
        Ok(&self.applied)
    }

    /// Whether the catch-up of a new replica is still being staged.
    pub fn staging(&self) -> bool {
        self.staging.is_some()
    }

    /// The writer, which is gone only if a move into place failed.
    fn live(&self) -> Result<&Writer> {
        live(&self.writer, &self.file)
    }

    /// Ends a staged catch-up: its writer stops, the file is made durable
    /// and moved to the replica's path, and a writer is started there as
    /// on any archive, with the replicas' open handles opened again on it.
    /// Nothing to do when nothing is staged.
    fn promote(&mut self) -> Result<()> {
        let Some(staged) = self.staging.take() else {
            return Ok(());
        };
        let mut open = Vec::new();
        for (key, replica) in &mut self.replicas {
            if let Some(handle) = replica.writer.take() {
                open.push(key.clone());
                drop(handle);
            }
        }
        self.reader = None;
        if let Some(writer) = self.writer.take() {
            writer.join()?;
        }
        staging::promote(&staged, &self.path)?;
        let options = WriterOptions::default();
        let writer = Writer::open_with(&self.path, Arc::clone(&self.encoder), options)?;
        for key in open {
            if let Some(replica) = self.replicas.get_mut(&key) {
                replica.handle(&writer)?;
            }
        }
        self.writer = Some(writer);
        Ok(())
    }

    fn refused(&self, message: String) -> Error {
        Error::Replication {
            file: self.file.clone(),
            message,
        }
    }

    fn handshake(&mut self, ordinal: u32, mut source: NewSource) -> Result<()> {
        // A source without a uuid is given one derived from what does not
        // change over its life, so every re-apply and reconnect finds it.
        let uuid = match &source.uuid {
            Some(uuid) => uuid.to_ascii_lowercase(),
            None => derived_uuid(&source),
        };
        source.uuid = Some(uuid.clone());
        let key = uuid;
        if let Some(known) = self.ordinals.get(&ordinal) {
            if known.key != key {
                return Err(self.refused(format!(
                    "source ordinal {ordinal} was given to {} and is handed to {} now",
                    known.key, key
                )));
            }
        }
        let newest = match self.replicas.get_mut(&key) {
            Some(replica) => {
                // The same source said again: what it says may have changed,
                // and the replica's row says it too, durably, at once.
                if !same_said(&replica.source, &source) {
                    let writer = live(&self.writer, &self.file)?;
                    let reopened = replica.writer.is_none();
                    replica.source = source.clone();
                    // Reopening a finalized replica restates it already.
                    let handle = replica.handle(writer)?;
                    if !reopened {
                        handle.restate_replica(source)?;
                    }
                    self.applied.restated += 1;
                }
                None
            }
            None => {
                let writer = self.live()?.mirror_source(source.clone())?;
                let newest = self.held_newest(writer.id())?;
                self.replicas.insert(
                    key.clone(),
                    Replica {
                        writer: Some(writer),
                        source,
                        newest: HashMap::new(),
                        last_offset: None,
                    },
                );
                Some(newest)
            }
        };
        if let (Some(newest), Some(replica)) = (newest, self.replicas.get_mut(&key)) {
            replica.newest = newest;
        }
        self.ordinals.entry(ordinal).or_insert(Ordinal {
            key,
            last_seq: None,
            state: (0, 0),
            full_seen: false,
        });
        self.applied.sources += 1;
        Ok(())
    }

    /// Kind 6: the origin's source now says `labels` and `metadata`. Both
    /// maps are replaced, except the two keys that are the replica's own
    /// business: `encoder` (checked against ours at the handshake, so a
    /// frame cannot swap it) and `writer_sessions` (the origin's list with
    /// the replica's own sessions after it, as a handshake restates it).
    /// Written durably at once, like a changed handshake.
    fn source_update(&mut self, ordinal: u32, labels: Labels, mut metadata: Labels) -> Result<()> {
        let (writer, replica) = self.replica(ordinal)?;
        for key in [keys::ENCODER, keys::WRITER_SESSIONS] {
            match replica.source.metadata.get(key) {
                Some(kept) => metadata.insert(key.to_string(), kept.clone()),
                None => metadata.remove(key),
            };
        }
        let mut source = replica.source.clone();
        source.labels = labels;
        source.metadata = metadata;
        if same_said(&replica.source, &source) {
            return Ok(());
        }
        let reopened = replica.writer.is_none();
        replica.source = source.clone();
        let handle = replica.handle(writer)?;
        if !reopened {
            handle.restate_replica(source)?;
        }
        self.applied.source_updates += 1;
        Ok(())
    }

    /// Per stream, the newest timestamp the file holds for a source.
    fn held_newest(&mut self, source_id: i64) -> Result<HashMap<String, i64>> {
        self.reader()?.read_snapshot(|snap| {
            let mut newest = HashMap::new();
            for stream in snap.streams(source_id)? {
                let sealed = snap.watermark(source_id, &stream)?;
                let live = snap.live_wal_span(source_id, &stream)?.map(|s| s.last_ts);
                if let Some(n) = sealed.max(live) {
                    newest.insert(stream, n);
                }
            }
            Ok(newest)
        })
    }

    /// A reading connection onto the replica, for what it already holds.
    fn reader(&mut self) -> Result<&Archive> {
        if self.reader.is_none() {
            let at = self.staging.as_deref().unwrap_or(&self.path);
            self.reader = Some(Archive::open(at)?);
        }
        Ok(self.reader.as_ref().expect("set above"))
    }

    /// Rule 1: a frame naming an ordinal no handshake introduced is refused.
    fn ordinal(&mut self, ordinal: u32) -> Result<&mut Ordinal> {
        match self.ordinals.get_mut(&ordinal) {
            Some(known) => Ok(known),
            None => Err(Error::Replication {
                file: self.file.clone(),
                message: format!(
                    "a frame names source ordinal {ordinal}, which no handshake introduced"
                ),
            }),
        }
    }

    /// The writer and the replica an ordinal names.
    fn replica(&mut self, ordinal: u32) -> Result<(&Writer, &mut Replica)> {
        let key = self.ordinal(ordinal)?.key.clone();
        let writer = live(&self.writer, &self.file)?;
        let replica = self
            .replicas
            .get_mut(&key)
            .expect("an ordinal names a replica");
        Ok((writer, replica))
    }

    fn index(
        &mut self,
        ordinal: u32,
        name: String,
        ts: i64,
        kind: IndexKind,
        state: IndexState,
        blob: Vec<u8>,
    ) -> Result<()> {
        let known = self.ordinal(ordinal)?;
        if kind == IndexKind::Delta && !known.full_seen {
            self.applied.index_skipped += 1;
            return Ok(());
        }
        known.full_seen = true;
        known.state = state;
        let (writer, replica) = self.replica(ordinal)?;
        let source_id = replica.handle(writer)?.id();
        let held = self.reader()?.read_snapshot(|snap| {
            Ok(snap
                .caller_rows(source_id, &name, ts, ts)?
                .iter()
                .any(|r| r.blob == blob))
        })?;
        if !held {
            let (writer, replica) = self.replica(ordinal)?;
            replica
                .handle(writer)?
                .caller_rows(&name, vec![CallerRow { ts, blob }])?;
        }
        match held {
            true => self.applied.index_held += 1,
            false => self.applied.index_entries += 1,
        }
        Ok(())
    }

    fn rows(
        &mut self,
        ordinal: u32,
        seq: u64,
        index_state: IndexState,
        rows: Vec<WireRow>,
    ) -> Result<()> {
        let known = self.ordinal(ordinal)?;
        let gap = known
            .last_seq
            .is_some_and(|last| last.checked_add(1) != Some(seq));
        known.last_seq = Some(seq);
        let matches = known.state == index_state;
        let key = known.key.clone();
        if gap {
            self.applied.gaps += 1;
        }
        if !matches {
            self.applied.rows_skipped += rows.len() as u64;
            return Ok(());
        }
        let replica = self
            .replicas
            .get_mut(&key)
            .expect("an ordinal names a replica");
        let mut fresh = Vec::with_capacity(rows.len());
        let mut newest = replica.newest.clone();
        // Rows not above what the stream holds are looked up, not assumed
        // held: a row the origin took out of order, or one skipped here
        // earlier, is below the newest and still missing.
        let mut doubtful = Vec::new();
        for row in rows {
            if newest.get(&row.stream).is_some_and(|&n| row.ts <= n) {
                doubtful.push(row);
                continue;
            }
            newest.insert(row.stream.clone(), row.ts);
            fresh.push(row);
        }
        if !doubtful.is_empty() {
            let source_id = replica.handle(live(&self.writer, &self.file)?)?.id();
            let held = self.reader()?.read_snapshot(|snap| {
                let mut sealed: HashMap<String, Option<i64>> = HashMap::new();
                let mut held = Vec::with_capacity(doubtful.len());
                for row in &doubtful {
                    let watermark = match sealed.get(&row.stream) {
                        Some(w) => *w,
                        None => {
                            let w = snap.watermark(source_id, &row.stream)?;
                            sealed.insert(row.stream.clone(), w);
                            w
                        }
                    };
                    held.push(
                        watermark.is_some_and(|w| row.ts <= w)
                            || snap
                                .live_wal_span_between(source_id, &row.stream, row.ts, row.ts)?
                                .is_some(),
                    );
                }
                Ok(held)
            })?;
            for (row, held) in doubtful.into_iter().zip(held) {
                match held {
                    true => self.applied.rows_held += 1,
                    false => fresh.push(row),
                }
            }
        }
        let fresh: Vec<(String, WalRow)> = fresh
            .into_iter()
            .map(|row| {
                (
                    row.stream,
                    WalRow {
                        ts: row.ts,
                        wall_offset: row.wall_offset,
                        row: row.row,
                    },
                )
            })
            .collect();
        let replica = self
            .replicas
            .get_mut(&key)
            .expect("an ordinal names a replica");
        if !fresh.is_empty() {
            let count = fresh.len() as u64;
            let top = fresh.iter().map(|(_, r)| r.ts).max();
            replica
                .handle(live(&self.writer, &self.file)?)?
                .wal(fresh)?;
            replica.newest = newest;
            self.applied.rows += count;
            self.applied.newest_ts = self.applied.newest_ts.max(top);
        }
        // A Rows frame closes the source's interval: a replica whose
        // origin is complete is finalized now that it holds what was sent.
        self.settle(&key)
    }

    /// Holds a segment back for the next batch (rule 1 is checked now).
    fn segment(&mut self, ordinal: u32, stream: &str, segment: Segment) -> Result<()> {
        let key = self.ordinal(ordinal)?.key.clone();
        self.pending_bytes += segment.bytes.len();
        self.pending.push((key, stream.to_string(), segment));
        if self.pending_bytes >= ADOPT_BATCH_BYTES || self.pending.len() >= ADOPT_BATCH_SEGMENTS {
            self.adopt_pending()?;
        }
        Ok(())
    }

    /// Adopts the held-back segments: one transaction per run of one replica.
    fn adopt_pending(&mut self) -> Result<()> {
        let mut pending = std::mem::take(&mut self.pending).into_iter().peekable();
        self.pending_bytes = 0;
        while let Some((key, stream, segment)) = pending.next() {
            let mut run = vec![(stream, segment)];
            while let Some((_, stream, segment)) = pending.next_if(|(k, _, _)| *k == key) {
                run.push((stream, segment));
            }
            let tops: Vec<(String, i64)> =
                run.iter().map(|(s, g)| (s.clone(), g.last_ts)).collect();
            let replica = self
                .replicas
                .get_mut(&key)
                .expect("a held segment names a replica");
            let outcomes = replica
                .handle(live(&self.writer, &self.file)?)?
                .adopt_segments(run)?;
            for ((stream, last_ts), adopted) in tops.into_iter().zip(outcomes) {
                let newest = replica.newest.entry(stream).or_insert(last_ts);
                *newest = (*newest).max(last_ts);
                match adopted {
                    Adopted::Inserted { .. } => self.applied.segments += 1,
                    Adopted::AlreadyHeld => self.applied.segments_held += 1,
                    Adopted::Replaced { replaced, .. } => {
                        self.applied.segments += 1;
                        self.applied.segments_replaced += replaced as u64;
                    }
                }
            }
        }
        Ok(())
    }

    /// Finalizes a replica whose origin said it is complete.
    fn settle(&mut self, key: &str) -> Result<()> {
        let Some(replica) = self.replicas.get_mut(key) else {
            return Ok(());
        };
        if replica.source.complete {
            if let Some(writer) = replica.writer.take() {
                writer.finish_replica(true, replica.last_offset)?;
                self.applied.finalized += 1;
            }
        }
        Ok(())
    }
}

/// Whether two handshakes of one source say the same about it.
fn same_said(a: &NewSource, b: &NewSource) -> bool {
    (&a.labels, &a.metadata, a.complete, a.clock_anchor_wall_ns)
        == (&b.labels, &b.metadata, b.complete, b.clock_anchor_wall_ns)
}

/// The uuid a replica gives a source that arrived without one (written
/// before archives had uuids): a digest of what stays fixed over the
/// source's life — its clock anchor and the first writer session recorded
/// in `writer_sessions` (resumes only append), or its labels where it has
/// no sessions — so the same source is found again by every re-apply and
/// reconnect instead of being added once more. Formatted as a version-8
/// (custom) uuid, never mistaken for a minted v4 one.
pub fn derived_uuid(source: &NewSource) -> String {
    let first_session = source
        .metadata
        .get(crate::format::keys::WRITER_SESSIONS)
        .and_then(|text| serde_json::from_str::<Vec<serde_json::Value>>(text).ok())
        .and_then(|list| list.into_iter().next())
        .and_then(|entry| {
            entry
                .get("session")
                .and_then(|s| s.as_str())
                .map(String::from)
        });
    let mut material = b"dendro-replica-source\0".to_vec();
    material.extend_from_slice(&source.clock_anchor_wall_ns.to_le_bytes());
    match first_session {
        Some(session) => {
            material.push(1);
            material.extend_from_slice(session.as_bytes());
        }
        None => {
            material.push(0);
            for (k, v) in &source.labels {
                for part in [k, v] {
                    material.extend_from_slice(&(part.len() as u64).to_le_bytes());
                    material.extend_from_slice(part.as_bytes());
                }
            }
        }
    }
    let (a, b) = super::publisher::index_entry_digest("", 0, &material);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_be_bytes());
    bytes[8..].copy_from_slice(&b.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(bytes).hyphenated().to_string()
}

/// The subscriber's writer, which is gone only if a staged catch-up could
/// not be moved into place (the error said why; nothing more is applied).
fn live<'a>(writer: &'a Option<Writer>, file: &str) -> Result<&'a Writer> {
    writer.as_ref().ok_or_else(|| Error::Replication {
        file: file.to_string(),
        message: "the staged catch-up could not be moved into place".into(),
    })
}

impl Replica {
    /// The writer handle, reopened if the replica was finalized earlier.
    fn handle(&mut self, writer: &Writer) -> Result<&SourceWriter> {
        if self.writer.is_none() {
            self.writer = Some(writer.mirror_source(self.source.clone())?);
        }
        Ok(self.writer.as_ref().expect("set above"))
    }
}

/// The encoder of a replica that is never asked to encode (a subscriber
/// never seals; its segments are the origin's). It reports no version, so
/// every source's `encoder` key is accepted and kept as the origin wrote
/// it: what `dendro subscribe` uses, since it cannot know the callers'
/// encoders.
#[derive(Debug, Clone, Copy, Default)]
pub struct VerbatimOnly;

impl SegmentEncoder for VerbatimOnly {
    fn encode(&self, stream: &str, _: &[WalRow]) -> std::result::Result<Option<Segment>, String> {
        Err(format!(
            "stream {stream:?} is a replica's: its segments come from its origin, not from here"
        ))
    }
}

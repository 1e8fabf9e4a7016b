//! The publisher: tails an archive through the reader and turns what it
//! finds into frames by the protocol's rules (`WIRE.md` §5). It reads only
//! and spawns nothing, so it is part of the reader build; pacing (one
//! [`Publisher::poll`] per interval) and the byte transport are the
//! caller's.
//!
//! Per source it remembers what it has shipped on this connection: the
//! segments of each stream (seq and facts) and its newest row timestamp,
//! the newest clock observation, how far into each caller-row series it
//! is. A poll ships what it has not shipped (a segment the origin rewrote
//! is new again) and the rows past those marks, read in one snapshot so
//! that segments and rows agree: the segments first, then the rows past
//! the newest sealed one, so a row the subscriber receives is never below
//! a segment it has yet to receive.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::codec::{Frame, IndexKind, IndexState, WireRow};
use crate::catalog::{Labels, NewSource, SegmentRecord, Snapshot, SourceRecord};
use crate::container::Archive;
use crate::error::Result;
use crate::format::wire::{
    frame_fits, row_wire_len, segment_frame_len, MAX_FRAME_BYTES, ROWS_FRAME_OVERHEAD,
    ROWS_FRAME_TARGET,
};
use crate::segment::Segment;

/// One caller-row entry's contribution to its source's index state: two
/// FNV-1a 64 passes with different bases over `(name, ts, blob)`. The state
/// of a set is the wrapping sum of its entries', so the empty set is
/// `(0, 0)` and the order entries arrive in does not matter.
pub fn index_entry_digest(name: &str, ts: i64, blob: &[u8]) -> IndexState {
    let fnv = |basis: u64| {
        let mut h = basis;
        let mut eat = |bytes: &[u8]| {
            for b in bytes {
                h ^= *b as u64;
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        eat(&(name.len() as u64).to_le_bytes());
        eat(name.as_bytes());
        eat(&ts.to_le_bytes());
        eat(&(blob.len() as u64).to_le_bytes());
        eat(blob);
        h
    };
    (fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4))
}

fn add_state(a: IndexState, b: IndexState) -> IndexState {
    (a.0.wrapping_add(b.0), a.1.wrapping_add(b.1))
}

/// What was last said about a source in a handshake.
#[derive(PartialEq, Eq)]
struct Said {
    labels: Labels,
    metadata: Labels,
    complete: bool,
}

/// What identifies a segment's content cheaply: its span, row count and
/// payload size. A rewrite of a segment in place changes one of them.
type SegmentFacts = (i64, i64, i64, i64);

fn facts(record: &SegmentRecord) -> SegmentFacts {
    (record.first_ts, record.last_ts, record.rows, record.bytes)
}

/// How far into one source this connection has shipped.
struct Shipped {
    ordinal: u32,
    said: Said,
    /// The next `Rows` frame's seq.
    seq: u64,
    /// Per stream: the segments shipped, by seq, with their facts. A
    /// segment is shipped when its seq is not here with the same facts, so
    /// a run the origin merged (it takes its first segment's seq, at or
    /// below what was shipped) goes out again (`WIRE.md` §5.5). Seqs the
    /// archive no longer holds are forgotten at each poll.
    segments: HashMap<String, HashMap<i64, SegmentFacts>>,
    /// Per stream: the newest timestamp the subscriber holds, by a row or
    /// a segment. Rows at or below it are not shipped again.
    newest: HashMap<String, i64>,
    /// The newest clock observation shipped.
    clock: Option<i64>,
    /// Per caller-row name: the newest ts shipped and how many rows at it.
    caller: HashMap<String, (i64, usize)>,
    /// The index state the subscriber holds once it applied what was shipped.
    state: IndexState,
    /// Whether the index was ever sent whole on this connection.
    full_sent: bool,
}

/// Tails one archive and yields frames. One publisher is one connection:
/// a reconnect is a new publisher (rule 8), and its first poll restates
/// everything.
pub struct Publisher {
    archive: Archive,
    sources: BTreeMap<i64, Shipped>,
    next_ordinal: u32,
    /// While [`Publisher::embodied`] reads an image: marks move, segment
    /// payloads are neither read nor sent.
    marking: bool,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("file", &self.archive.file())
            .field("sources", &self.sources.len())
            .finish()
    }
}

impl Publisher {
    /// A publisher over `archive` that has shipped nothing yet.
    pub fn new(archive: Archive) -> Publisher {
        Publisher {
            archive,
            sources: BTreeMap::new(),
            next_ordinal: 0,
            marking: false,
        }
    }

    /// A publisher whose marks say that the subscriber holds everything in
    /// `image` (a snapshot of the archive it will publish, taken in one read
    /// transaction): one poll's worth of marks is taken from it without a
    /// segment payload read or a frame sent. Its next poll, once
    /// [`Publisher::rebase`]d on the live archive, sends every source's
    /// handshake and whole index again (the connection's ordinals are new,
    /// rule 8), then only what the image does not hold: later segments,
    /// clock observations and rows.
    pub fn embodied(image: Archive) -> Result<Publisher> {
        let mut publisher = Publisher::new(image);
        publisher.marking = true;
        let marked = publisher.poll_each(|_| Ok(()));
        publisher.marking = false;
        marked?;
        for shipped in publisher.sources.values_mut() {
            shipped.full_sent = false;
        }
        Ok(publisher)
    }

    /// Goes on publishing from `archive`, keeping every mark: the archive
    /// must be the one the marks were taken from, or a later state of it
    /// (source ids are the catalog's own and must mean the same sources).
    pub fn rebase(&mut self, archive: Archive) {
        self.archive = archive;
    }

    /// The archive being published.
    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// One interval: for every source, a handshake if it is new (or what
    /// it says changed), its index (whole the first time and after each
    /// new segment, the seal cadence of rule 7; new entries otherwise), its
    /// new segments and clock observations; then one `Rows` frame per
    /// source with the rows past what was shipped, empty if there are none.
    /// The first poll of a publisher is the catch-up.
    pub fn poll(&mut self) -> Result<Vec<Frame>> {
        let mut frames = Vec::new();
        self.poll_each(|frame| {
            frames.push(frame);
            Ok(())
        })?;
        Ok(frames)
    }

    /// [`Publisher::poll`], handing each frame to `send` as soon as it is
    /// built instead of gathering them: a catch-up holds one segment in
    /// memory at a time, and the far end applies the first segments while
    /// the later ones are read. Everything is read in one snapshot, held
    /// until the last frame is handed over. An error from `send` ends the
    /// poll; the publisher's marks then say more than the far end holds, so
    /// the connection must be dropped (rule 8: a reconnect is a new
    /// publisher).
    pub fn poll_each(&mut self, mut send: impl FnMut(Frame) -> Result<()>) -> Result<()> {
        let archive = &self.archive;
        let sources = &mut self.sources;
        let next_ordinal = &mut self.next_ordinal;
        let marking = self.marking;
        archive.read_snapshot(|snap| {
            let records = snap.sources()?;
            for record in &records {
                let shipped = sources.entry(record.id).or_insert_with(|| {
                    let ordinal = *next_ordinal;
                    *next_ordinal += 1;
                    Shipped::new(ordinal)
                });
                shipped.catalog_frames(snap, record, marking, &mut send)?;
            }
            // Only once every source's catalog part went out are the rows
            // read: building a `Rows` frame moves its source's marks, so one
            // built before a later source's part is cut short
            // (`poll_into`) would mark rows shipped that never were.
            for record in &records {
                let shipped = sources.get_mut(&record.id).expect("entered above");
                for frame in shipped.rows_frames(snap, record)? {
                    send(frame)?;
                }
            }
            Ok(())
        })
    }
}

impl Publisher {
    /// A part of an interval, bounded so that a caller can release the
    /// snapshot before it hands the bytes to a peer: frames are encoded
    /// into `out` in one snapshot, and once `out` holds `budget` bytes the
    /// next `Segment` ends the part (it goes first in the next one). A
    /// part that reaches the end of the interval ends with its `Rows`
    /// frames and returns `true`; one cut short returns `false` and holds
    /// no `Rows` frame, so the next call carries on where it stopped.
    ///
    /// The cut is only ever before a `Segment` frame, the one place where
    /// the marks of `Shipped` are exact (the index and clock marks move
    /// before their frames go out): everything before it is marked shipped,
    /// it and everything after it is not. Rows ship only at the end of a
    /// whole interval, after every segment the last snapshot saw, so no row
    /// reaches a subscriber below a segment it has yet to receive. Each
    /// part re-reads the catalog; a source cut inside its segments sends
    /// its index whole again in the next part (rule 7 counts the cut as a
    /// seal), which a subscriber recognises as held.
    ///
    /// Every part ships at least one segment, so parts always move on (the
    /// index a part restates does not count against that) and a segment
    /// larger than `budget` still ships.
    pub fn poll_into(&mut self, budget: usize, out: &mut Vec<u8>) -> Result<bool> {
        let start = out.len();
        let (mut cut, mut segments) = (false, 0);
        let polled = self.poll_each(|frame| {
            if matches!(frame, Frame::Segment { .. }) {
                if segments > 0 && out.len() - start >= budget {
                    cut = true;
                    return Err(crate::error::Error::Invalid {
                        file: String::new(),
                        message: "the part's budget is spent".into(),
                    });
                }
                segments += 1;
            }
            frame.encode_into(out);
            Ok(())
        });
        match polled {
            Ok(()) => Ok(true),
            Err(_) if cut => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl Shipped {
    fn new(ordinal: u32) -> Shipped {
        Shipped {
            ordinal,
            said: Said {
                labels: Labels::new(),
                metadata: Labels::new(),
                complete: false,
            },
            seq: 0,
            segments: HashMap::new(),
            newest: HashMap::new(),
            clock: None,
            caller: HashMap::new(),
            state: (0, 0),
            full_sent: false,
        }
    }

    /// The handshake, index, segment and clock frames of one poll.
    fn catalog_frames(
        &mut self,
        snap: &Snapshot<'_>,
        record: &SourceRecord,
        marking: bool,
        send: &mut impl FnMut(Frame) -> Result<()>,
    ) -> Result<()> {
        let said = Said {
            labels: record.source.labels.clone(),
            metadata: record.source.metadata.clone(),
            complete: record.source.complete,
        };
        let first = !self.full_sent;
        if !first && said != self.said && said.complete == self.said.complete {
            // Only the labels or the metadata changed (the writer patched
            // them mid-stream): a `SourceUpdate`, as the original's 0.6.1
            // sends, stamped with the newest row timestamp shipped so far.
            let update = Frame::SourceUpdate {
                source: self.ordinal,
                ts: self.newest.values().copied().max().unwrap_or(0),
                labels: said.labels.clone(),
                metadata: said.metadata.clone(),
            };
            check_size(snap, &update, || {
                format!("source {}: its labels and metadata", record.id)
            })?;
            send(update)?;
            self.said = said;
        } else if first || said != self.said {
            let handshake = Frame::Handshake {
                source: self.ordinal,
                row: NewSource {
                    uuid: record.source.uuid.clone(),
                    labels: said.labels.clone(),
                    metadata: said.metadata.clone(),
                    clock_anchor_wall_ns: record.source.clock_anchor_wall_ns,
                    complete: said.complete,
                },
            };
            check_size(snap, &handshake, || {
                format!("source {}: its labels and metadata", record.id)
            })?;
            send(handshake)?;
            self.said = said;
        }
        // The fresh segments' records first (no payload), so that the index
        // frames, which go before them, know whether the source sealed.
        let mut fresh = Vec::new();
        for stream in snap.streams(record.id)? {
            let all = snap.segments(record.id, &stream)?;
            let shipped = self.segments.entry(stream.clone()).or_default();
            let held: HashSet<i64> = all.iter().map(|r| r.seq).collect();
            shipped.retain(|seq, _| held.contains(seq));
            let records: Vec<SegmentRecord> = all
                .into_iter()
                .filter(|r| shipped.get(&r.seq) != Some(&facts(r)))
                .collect();
            if !records.is_empty() {
                fresh.push((stream, records));
            }
        }
        // Rule 7: the index goes out whole first and again whenever the
        // source sealed, so retention can never leave rows without it.
        self.index_frames(snap, record.id, first || !fresh.is_empty(), send)?;
        self.full_sent = true;
        for (stream, records) in fresh {
            if marking {
                self.mark_segments(&stream, &records);
            } else {
                self.segment_frames(snap, record.id, &stream, records, send)?;
            }
        }
        for offset in snap.clock_offsets(record.id)? {
            if self.clock.is_some_and(|c| offset.ts <= c) {
                continue;
            }
            self.clock = Some(offset.ts);
            send(Frame::ClockOffset {
                source: self.ordinal,
                ts: offset.ts,
                offset_ns: offset.offset_ns,
            })?;
        }
        Ok(())
    }

    /// Marks segments as shipped without reading or sending them: they are
    /// in the image the subscriber received.
    fn mark_segments(&mut self, stream: &str, records: &[SegmentRecord]) {
        let shipped = self.segments.entry(stream.to_string()).or_default();
        let newest = self.newest.entry(stream.to_string()).or_insert(i64::MIN);
        for record in records {
            shipped.insert(record.seq, facts(record));
            *newest = (*newest).max(record.last_ts);
        }
    }

    /// One `Segment` frame per record, its payload read as it goes out.
    fn segment_frames(
        &mut self,
        snap: &Snapshot<'_>,
        source_id: i64,
        stream: &str,
        fresh: Vec<SegmentRecord>,
        send: &mut impl FnMut(Frame) -> Result<()>,
    ) -> Result<()> {
        let mut indexes: HashMap<i64, Option<Vec<u8>>> = if fresh.iter().any(|r| r.caller_index) {
            snap.caller_indexes(source_id, stream)?
                .into_iter()
                .collect()
        } else {
            HashMap::new()
        };
        for record in fresh {
            let what = || {
                format!(
                    "source {source_id}, stream {stream:?}: segment {} ({} bytes)",
                    record.seq, record.bytes
                )
            };
            // Judged by the catalog's length first, before reading a payload
            // that could not be sent anyway.
            let len = segment_frame_len(stream, record.bytes.max(0) as usize, None);
            if !frame_fits(len) {
                return Err(too_large(snap, format!("{} is a {len}-byte frame", what())));
            }
            let bytes = snap.segment_bytes(source_id, stream, record.seq)?;
            let frame = Frame::Segment {
                source: self.ordinal,
                stream: stream.to_string(),
                segment: Segment {
                    rows: record.rows.max(0),
                    first_ts: record.first_ts,
                    last_ts: record.last_ts,
                    bytes,
                    caller_index: indexes.remove(&record.seq).flatten(),
                },
            };
            check_size(snap, &frame, what)?;
            send(frame)?;
            self.segments
                .entry(stream.to_string())
                .or_default()
                .insert(record.seq, facts(&record));
            let newest = self.newest.entry(stream.to_string()).or_insert(i64::MIN);
            *newest = (*newest).max(record.last_ts);
        }
        Ok(())
    }

    /// The caller-row series as `Index` frames: every entry (`Full`) when
    /// `whole`, else the entries past what was shipped (`Delta`).
    fn index_frames(
        &mut self,
        snap: &Snapshot<'_>,
        source_id: i64,
        whole: bool,
        send: &mut impl FnMut(Frame) -> Result<()>,
    ) -> Result<()> {
        if whole {
            self.state = (0, 0);
            self.caller.clear();
        }
        let names: Vec<String> = snap
            .caller_row_counts()?
            .into_iter()
            .filter(|(id, _, _)| *id == source_id)
            .map(|(_, name, _)| name)
            .collect();
        for name in names {
            let (from, skip) = self.caller.get(&name).copied().unwrap_or((i64::MIN, 0));
            let rows = snap.caller_rows(source_id, &name, from, i64::MAX)?;
            let mut cursor = (from, skip);
            for (i, row) in rows.into_iter().enumerate() {
                if row.ts == from && i < skip {
                    continue;
                }
                cursor = if row.ts == cursor.0 {
                    (row.ts, cursor.1 + 1)
                } else {
                    (row.ts, 1)
                };
                self.state = add_state(self.state, index_entry_digest(&name, row.ts, &row.blob));
                let frame = Frame::Index {
                    source: self.ordinal,
                    stream: name.clone(),
                    ts: row.ts,
                    kind: if whole {
                        IndexKind::Full
                    } else {
                        IndexKind::Delta
                    },
                    state: self.state,
                    blob: row.blob,
                };
                check_size(snap, &frame, || {
                    format!("source {source_id}: the caller row {name:?} at {}", row.ts)
                })?;
                send(frame)?;
            }
            self.caller.insert(name, cursor);
        }
        Ok(())
    }

    /// This interval's `Rows` frames: every live row past what was shipped,
    /// in timestamp order across the source's streams, cut into frames of
    /// about [`ROWS_FRAME_TARGET`] bytes (consecutive seqs, so a subscriber
    /// sees no gap), or one empty frame when there is nothing new. A row
    /// too large for a frame of its own is refused by name.
    fn rows_frames(&mut self, snap: &Snapshot<'_>, record: &SourceRecord) -> Result<Vec<Frame>> {
        let mut rows = Vec::new();
        for stream in snap.streams(record.id)? {
            let from = match self.newest.get(&stream) {
                Some(&n) if n == i64::MAX => continue,
                Some(&n) => n + 1,
                None => i64::MIN,
            };
            for row in snap.live_wal_rows_between(record.id, &stream, from, i64::MAX)? {
                rows.push(WireRow {
                    stream: stream.clone(),
                    ts: row.ts,
                    wall_offset: row.wall_offset,
                    row: row.row,
                });
            }
            if let Some(last) = rows
                .iter()
                .filter(|r| r.stream == stream)
                .map(|r| r.ts)
                .max()
            {
                self.newest.insert(stream, last);
            }
        }
        rows.sort_by(|a, b| a.ts.cmp(&b.ts).then_with(|| a.stream.cmp(&b.stream)));
        let mut chunks: Vec<Vec<WireRow>> = vec![Vec::new()];
        let mut size = ROWS_FRAME_OVERHEAD;
        for row in rows {
            let len = row_wire_len(&row.stream, row.row.len());
            if !frame_fits(ROWS_FRAME_OVERHEAD + len) {
                return Err(too_large(
                    snap,
                    format!(
                        "source {}, stream {:?}: the row at {} holds {} bytes, more than one \
                         Rows frame carries",
                        record.id,
                        row.stream,
                        row.ts,
                        row.row.len()
                    ),
                ));
            }
            let current = chunks.last_mut().expect("never empty");
            if !current.is_empty() && size + len > ROWS_FRAME_TARGET {
                chunks.push(Vec::new());
                size = ROWS_FRAME_OVERHEAD;
            }
            size += len;
            chunks.last_mut().expect("never empty").push(row);
        }
        let mut frames = Vec::with_capacity(chunks.len());
        for rows in chunks {
            frames.push(Frame::Rows {
                source: self.ordinal,
                seq: self.seq,
                index_state: self.state,
                rows,
            });
            self.seq += 1;
        }
        Ok(frames)
    }
}

/// A frame this publisher will not send because no reader could take it
/// (`MAX_FRAME_BYTES`): refused here, naming the archive and the content,
/// instead of sent for every subscriber to refuse and reconnect over.
fn too_large(snap: &Snapshot<'_>, what: String) -> crate::Error {
    crate::Error::Replication {
        file: snap.file().to_string(),
        message: format!(
            "{what}; a frame may hold at most {MAX_FRAME_BYTES} bytes, so it cannot be published"
        ),
    }
}

/// Refuses `frame` when it is too large to be read back.
fn check_size(snap: &Snapshot<'_>, frame: &Frame, what: impl FnOnce() -> String) -> Result<()> {
    let len = frame.encoded_len();
    if frame_fits(len) {
        return Ok(());
    }
    Err(too_large(snap, format!("{} is a {len}-byte frame", what())))
}

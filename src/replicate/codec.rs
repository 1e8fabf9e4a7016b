//! The replication wire's frames (`WIRE.md` §2–§4): the
//! `u32 len | u8 kind | payload` framing, the primitives, and the six
//! frames. Encoding is deterministic (maps go out in key order), so equal
//! frames are equal bytes, and decoding refuses anything it would have to
//! guess about: a non-0/1 bool, a map out of key order, bytes left over in
//! a payload. Reading a whole stream (preamble, lengths, the digest of a
//! stream file) is `stream.rs`; the numbers both obey are `format::wire`,
//! re-exported here under their old names.

use crate::catalog::NewSource;
use crate::error::WireProblem;
pub use crate::format::wire::{
    frame_fits, row_wire_len, segment_frame_len, KIND_CLOCK_OFFSET, KIND_DIGEST, KIND_HANDSHAKE,
    KIND_INDEX, KIND_ROWS, KIND_SEGMENT, KIND_SOURCE_UPDATE, MAGIC, MAX_FRAME_BYTES, MAX_ROW_BYTES,
    MAX_SEGMENT_BYTES, PREAMBLE_BYTES, PROTOCOL_VERSION, ROWS_FRAME_OVERHEAD, ROWS_FRAME_TARGET,
};
use crate::format::Labels;
use crate::segment::Segment;

/// The 128-bit digest of a source's index set that `Index` and `Rows`
/// frames carry; `(0, 0)` is the empty set.
pub type IndexState = (u64, u64);

/// Whether an `Index` frame restates every entry or adds to the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// Part of a complete restatement of the source's index.
    Full,
    /// One change on top of what came before.
    Delta,
}

/// One row of a `Rows` frame: a WAL row with its stream's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireRow {
    /// The stream it belongs to.
    pub stream: String,
    /// Its timestamp.
    pub ts: i64,
    /// Wall clock minus `ts` when it was taken.
    pub wall_offset: i64,
    /// The encoder's bytes, opaque.
    pub row: Vec<u8>,
}

/// One frame of the wire: one kind per catalog table it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Kind 1: a source (`sources`), and the ordinal its frames use.
    Handshake {
        /// The ordinal later frames name the source by.
        source: u32,
        /// Its `sources` row but the file-local id (which each file
        /// numbers itself); the uuid is absent for a source older than
        /// the column.
        row: NewSource,
    },
    /// Kind 2: one entry of the caller's time-keyed store (`caller_rows`).
    Index {
        /// The source ordinal.
        source: u32,
        /// The caller-row name.
        stream: String,
        /// When the entry applies from.
        ts: i64,
        /// Full restatement or delta.
        kind: IndexKind,
        /// The digest of the whole set once this entry is applied.
        state: IndexState,
        /// The caller's bytes, never decoded.
        blob: Vec<u8>,
    },
    /// Kind 3: one interval's WAL rows (`wal`), possibly none.
    Rows {
        /// The source ordinal.
        source: u32,
        /// Steps by exactly one per frame of the source.
        seq: u64,
        /// The index state the rows were built against.
        index_state: IndexState,
        /// The rows, each naming its stream.
        rows: Vec<WireRow>,
    },
    /// Kind 4: one sealed segment (`segments`), byte for byte.
    Segment {
        /// The source ordinal.
        source: u32,
        /// The stream.
        stream: String,
        /// The segment as the writer hands it over: its Parquet bytes, its
        /// row count and span, and the caller's index beside it. The row
        /// count is a `u64` on the wire; it travels here as the `i64` the
        /// catalog keeps, bit for bit, so every frame decodes to itself.
        segment: Segment,
    },
    /// Kind 5: one clock observation (`clock_offsets`).
    ClockOffset {
        /// The source ordinal.
        source: u32,
        /// The row timestamp observed.
        ts: i64,
        /// Wall clock minus `ts`.
        offset_ns: i64,
    },
    /// Kind 6: what a source's row now says (`sources.labels` and
    /// `sources.metadata`), sent when either changes after the handshake.
    /// The receiver replaces both maps, keeping its own `encoder` and
    /// `writer_sessions` keys.
    SourceUpdate {
        /// The source ordinal.
        source: u32,
        /// The source's newest row timestamp the sender had shipped when
        /// it saw the change, on the source's timeline.
        ts: i64,
        /// The labels, whole.
        labels: Labels,
        /// The metadata, whole.
        metadata: Labels,
    },
}

impl Frame {
    /// The kind byte.
    pub fn kind(&self) -> u8 {
        match self {
            Frame::Handshake { .. } => KIND_HANDSHAKE,
            Frame::Index { .. } => KIND_INDEX,
            Frame::Rows { .. } => KIND_ROWS,
            Frame::Segment { .. } => KIND_SEGMENT,
            Frame::ClockOffset { .. } => KIND_CLOCK_OFFSET,
            Frame::SourceUpdate { .. } => KIND_SOURCE_UPDATE,
        }
    }

    /// The kind's name, for messages and progress lines.
    pub fn kind_name(&self) -> &'static str {
        kind_name(self.kind())
    }

    /// The source ordinal the frame names.
    pub fn source(&self) -> u32 {
        match self {
            Frame::Handshake { source, .. }
            | Frame::Index { source, .. }
            | Frame::Rows { source, .. }
            | Frame::Segment { source, .. }
            | Frame::ClockOffset { source, .. }
            | Frame::SourceUpdate { source, .. } => *source,
        }
    }

    /// The whole frame's size in bytes, length prefix included, computed
    /// without encoding it.
    pub fn encoded_len(&self) -> u64 {
        let bytes = |n: usize| 4 + n as u64;
        let map = |m: &Labels| {
            4 + m
                .iter()
                .map(|(k, v)| bytes(k.len()) + bytes(v.len()))
                .sum::<u64>()
        };
        let payload = match self {
            Frame::Handshake {
                row:
                    NewSource {
                        uuid,
                        labels,
                        metadata,
                        ..
                    },
                ..
            } => {
                4 + 1
                    + uuid.as_ref().map_or(0, |u| bytes(u.len()))
                    + map(labels)
                    + map(metadata)
                    + 8
                    + 1
            }
            Frame::Index { stream, blob, .. } => {
                4 + bytes(stream.len()) + 8 + 1 + 16 + bytes(blob.len())
            }
            Frame::Rows { rows, .. } => {
                ROWS_FRAME_OVERHEAD - 5
                    + rows
                        .iter()
                        .map(|r| row_wire_len(&r.stream, r.row.len()))
                        .sum::<u64>()
            }
            Frame::Segment {
                stream, segment, ..
            } => {
                let index = segment.caller_index.as_ref().map(Vec::len);
                return segment_frame_len(stream, segment.bytes.len(), index);
            }
            Frame::ClockOffset { .. } => 4 + 8 + 8,
            Frame::SourceUpdate {
                labels, metadata, ..
            } => 4 + 8 + map(labels) + map(metadata),
        };
        4 + 1 + payload
    }

    /// Appends the whole frame (length, kind, payload) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        out.push(self.kind());
        let mut w = Writer(out);
        match self {
            Frame::Handshake {
                source,
                row:
                    NewSource {
                        uuid,
                        labels,
                        metadata,
                        clock_anchor_wall_ns,
                        complete,
                    },
            } => {
                w.u32(*source);
                w.opt_bytes(uuid.as_deref().map(str::as_bytes));
                w.map(labels);
                w.map(metadata);
                w.i64(*clock_anchor_wall_ns);
                w.bool(*complete);
            }
            Frame::Index {
                source,
                stream,
                ts,
                kind,
                state,
                blob,
            } => {
                w.u32(*source);
                w.bytes(stream.as_bytes());
                w.i64(*ts);
                w.0.push(match kind {
                    IndexKind::Full => 0,
                    IndexKind::Delta => 1,
                });
                w.state(*state);
                w.bytes(blob);
            }
            Frame::Rows {
                source,
                seq,
                index_state,
                rows,
            } => {
                w.u32(*source);
                w.u64(*seq);
                w.state(*index_state);
                w.u32(len_u32(rows.len()));
                for row in rows {
                    w.bytes(row.stream.as_bytes());
                    w.i64(row.ts);
                    w.i64(row.wall_offset);
                    w.bytes(&row.row);
                }
            }
            Frame::Segment {
                source,
                stream,
                segment,
            } => {
                w.u32(*source);
                w.bytes(stream.as_bytes());
                w.u64(segment.rows as u64);
                w.i64(segment.first_ts);
                w.i64(segment.last_ts);
                w.bytes(&segment.bytes);
                w.opt_bytes(segment.caller_index.as_deref());
            }
            Frame::ClockOffset {
                source,
                ts,
                offset_ns,
            } => {
                w.u32(*source);
                w.i64(*ts);
                w.i64(*offset_ns);
            }
            Frame::SourceUpdate {
                source,
                ts,
                labels,
                metadata,
            } => {
                w.u32(*source);
                w.i64(*ts);
                w.map(labels);
                w.map(metadata);
            }
        }
        let len = len_u32(out.len() - start - 4);
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// The whole frame as bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Decodes one payload of a known kind. `None` for a kind this build
    /// does not know (the caller skips it).
    pub fn decode_payload(
        kind: u8,
        payload: &[u8],
    ) -> std::result::Result<Option<Frame>, WireProblem> {
        let mut r = Cursor::new(payload);
        let frame = match kind {
            KIND_HANDSHAKE => Frame::Handshake {
                source: r.u32()?,
                row: NewSource {
                    uuid: r
                        .opt_bytes()?
                        .map(|b| utf8(b, "the source's uuid"))
                        .transpose()?,
                    labels: r.map("labels")?,
                    metadata: r.map("metadata")?,
                    clock_anchor_wall_ns: r.i64()?,
                    complete: r.bool()?,
                },
            },
            KIND_INDEX => Frame::Index {
                source: r.u32()?,
                stream: r.str("an index entry's name")?,
                ts: r.i64()?,
                kind: match r.u8()? {
                    0 => IndexKind::Full,
                    1 => IndexKind::Delta,
                    other => return Err(WireProblem::BadValue(format!("index kind {other}"))),
                },
                state: r.state()?,
                blob: r.bytes()?.to_vec(),
            },
            KIND_ROWS => {
                let source = r.u32()?;
                let seq = r.u64()?;
                let index_state = r.state()?;
                let count = r.u32()? as usize;
                // Each row takes at least 24 bytes, so the count is bounded
                // by what is left before anything is reserved for it.
                let mut rows = Vec::with_capacity(count.min(r.left() / 24));
                for _ in 0..count {
                    rows.push(WireRow {
                        stream: r.str("a row's stream")?,
                        ts: r.i64()?,
                        wall_offset: r.i64()?,
                        row: r.bytes()?.to_vec(),
                    });
                }
                Frame::Rows {
                    source,
                    seq,
                    index_state,
                    rows,
                }
            }
            KIND_SEGMENT => Frame::Segment {
                source: r.u32()?,
                stream: r.str("a segment's stream")?,
                segment: Segment {
                    rows: r.u64()? as i64,
                    first_ts: r.i64()?,
                    last_ts: r.i64()?,
                    bytes: r.bytes()?.to_vec(),
                    caller_index: r.opt_bytes()?.map(<[u8]>::to_vec),
                },
            },
            KIND_CLOCK_OFFSET => Frame::ClockOffset {
                source: r.u32()?,
                ts: r.i64()?,
                offset_ns: r.i64()?,
            },
            KIND_SOURCE_UPDATE => Frame::SourceUpdate {
                source: r.u32()?,
                ts: r.i64()?,
                labels: r.map("labels")?,
                metadata: r.map("metadata")?,
            },
            _ => return Ok(None),
        };
        if r.left() > 0 {
            return Err(WireProblem::TrailingBytes(r.left()));
        }
        Ok(Some(frame))
    }
}

/// The name of a kind byte, or `unknown`.
pub fn kind_name(kind: u8) -> &'static str {
    match kind {
        KIND_HANDSHAKE => "Handshake",
        KIND_INDEX => "Index",
        KIND_ROWS => "Rows",
        KIND_SEGMENT => "Segment",
        KIND_CLOCK_OFFSET => "ClockOffset",
        KIND_SOURCE_UPDATE => "SourceUpdate",
        KIND_DIGEST => "Digest",
        _ => "unknown",
    }
}

/// The preamble every stream starts with.
pub fn preamble() -> [u8; PREAMBLE_BYTES] {
    let mut out = [0; PREAMBLE_BYTES];
    out[..MAGIC.len()].copy_from_slice(&MAGIC);
    out[MAGIC.len()..].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    out
}

/// A length as the wire's `u32`. Nothing this crate encodes reaches 4 GiB:
/// a frame that did could not be read back (`MAX_FRAME_BYTES`) anyway.
fn len_u32(len: usize) -> u32 {
    u32::try_from(len).expect("a wire field is under 4 GiB")
}

fn utf8(bytes: &[u8], what: &str) -> std::result::Result<String, WireProblem> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| WireProblem::BadValue(format!("{what} is not UTF-8")))
}

/// Little-endian, fixed-width writes onto a frame under construction.
struct Writer<'a>(&'a mut Vec<u8>);

impl Writer<'_> {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bool(&mut self, v: bool) {
        self.0.push(v as u8);
    }
    fn state(&mut self, s: IndexState) {
        self.u64(s.0);
        self.u64(s.1);
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(len_u32(b.len()));
        self.0.extend_from_slice(b);
    }
    fn opt_bytes(&mut self, b: Option<&[u8]>) {
        match b {
            None => self.0.push(0),
            Some(b) => {
                self.0.push(1);
                self.bytes(b);
            }
        }
    }
    /// A `BTreeMap` iterates in key order, which is the wire's rule.
    fn map(&mut self, m: &Labels) {
        self.u32(len_u32(m.len()));
        for (k, v) in m {
            self.bytes(k.as_bytes());
            self.bytes(v.as_bytes());
        }
    }
}

/// Reads primitives off one payload; running past its end is a problem
/// with the payload (its length said less than its fields need).
pub(super) struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, at: 0 }
    }
    pub(super) fn left(&self) -> usize {
        self.buf.len() - self.at
    }
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], WireProblem> {
        if n > self.left() {
            return Err(WireProblem::ShortPayload {
                needed: n,
                left: self.left(),
            });
        }
        let out = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }
    fn fixed<const N: usize>(&mut self) -> std::result::Result<[u8; N], WireProblem> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }
    pub(super) fn u8(&mut self) -> std::result::Result<u8, WireProblem> {
        Ok(self.fixed::<1>()?[0])
    }
    pub(super) fn u32(&mut self) -> std::result::Result<u32, WireProblem> {
        Ok(u32::from_le_bytes(self.fixed()?))
    }
    pub(super) fn u64(&mut self) -> std::result::Result<u64, WireProblem> {
        Ok(u64::from_le_bytes(self.fixed()?))
    }
    fn i64(&mut self) -> std::result::Result<i64, WireProblem> {
        Ok(i64::from_le_bytes(self.fixed()?))
    }
    fn bool(&mut self) -> std::result::Result<bool, WireProblem> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(WireProblem::BadValue(format!("bool byte {other}"))),
        }
    }
    fn state(&mut self) -> std::result::Result<IndexState, WireProblem> {
        Ok((self.u64()?, self.u64()?))
    }
    fn bytes(&mut self) -> std::result::Result<&'a [u8], WireProblem> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub(super) fn str(&mut self, what: &str) -> std::result::Result<String, WireProblem> {
        let b = self.bytes()?;
        utf8(b, what)
    }
    fn opt_bytes(&mut self) -> std::result::Result<Option<&'a [u8]>, WireProblem> {
        match self.u8()? {
            0 => Ok(None),
            1 => self.bytes().map(Some),
            other => Err(WireProblem::BadValue(format!("presence byte {other}"))),
        }
    }
    fn map(&mut self, what: &str) -> std::result::Result<Labels, WireProblem> {
        let count = self.u32()?;
        let mut map = Labels::new();
        let mut previous: Option<String> = None;
        for _ in 0..count {
            let key = self.str(what)?;
            let value = self.str(what)?;
            if previous.as_ref().is_some_and(|p| *p >= key) {
                return Err(WireProblem::BadValue(format!(
                    "{what} keys are not in strictly increasing order at {key:?}"
                )));
            }
            previous = Some(key.clone());
            map.insert(key, value);
        }
        Ok(map)
    }
}

//! The replication wire format (`WIRE.md`): the preamble, the
//! `u32 len | u8 kind | payload` framing, the primitives, the five frames,
//! and the digest that frames a stream file (§4.6). Encoding is
//! deterministic (maps go out in key order), so equal frames are equal
//! bytes, and decoding refuses anything it would have to guess about: a
//! wrong magic, an unknown version, an oversized length, a non-0/1 bool,
//! bytes left over in a payload, a digest that does not match.

use std::io::Read;

use crate::catalog::Labels;
use crate::error::{Error, Result, WireProblem};

/// The first twelve bytes of every stream.
pub const MAGIC: [u8; 12] = *b"dendro-repl\0";
/// The protocol version this build speaks, written after the magic.
pub const PROTOCOL_VERSION: u16 = 1;
/// Magic plus version.
pub const PREAMBLE_BYTES: usize = MAGIC.len() + 2;
/// The largest `len` a reader accepts, checked before it allocates. The
/// publisher never makes a larger frame: it splits a source's live rows
/// over several `Rows` frames ([`ROWS_FRAME_TARGET`]), and a frame it
/// cannot split (a segment, an index entry, a handshake) that would be
/// larger is refused by name rather than sent for the far end to refuse.
pub const MAX_FRAME_BYTES: u32 = 64 << 20;
/// The size a `Rows` frame is filled to before the next one starts; a
/// single row may take a frame up to [`MAX_FRAME_BYTES`] on its own.
pub const ROWS_FRAME_TARGET: u64 = 16 << 20;
/// The largest row (WAL row or caller row) a writer accepts: a `Rows` or
/// `Index` frame holding it alone, and a segment sealed from it alone, stay
/// well under [`MAX_FRAME_BYTES`] even if the encoder grows it.
pub const MAX_ROW_BYTES: u64 = 16 << 20;
/// The most row payload a seal hands the encoder for one segment, and the
/// most a compaction merges into one: a seal of a larger tail is cut into
/// several segments at row boundaries, so every `Segment` frame fits.
pub const MAX_SEGMENT_BYTES: u64 = 32 << 20;
/// How much of a frame's body is set aside before its bytes arrive; the
/// rest grows as they do.
const FIRST_BODY_STEP: usize = 1 << 20;
/// Bytes a `Rows` frame takes before its first row: length, kind, source,
/// seq, index state, count.
pub const ROWS_FRAME_OVERHEAD: u64 = 4 + 1 + 4 + 8 + 16 + 4;

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
        /// The source's identity; absent for a source older than the column.
        uuid: Option<String>,
        /// Its labels.
        labels: Labels,
        /// Its metadata, verbatim.
        metadata: Labels,
        /// Its anchor.
        clock_anchor_wall_ns: i64,
        /// Whether it was finalized.
        complete: bool,
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
        /// Rows in the segment.
        rows: u64,
        /// Its first row's timestamp.
        first_ts: i64,
        /// Its last row's timestamp.
        last_ts: i64,
        /// One Parquet file.
        bytes: Vec<u8>,
        /// The caller's index beside it, when there is one.
        caller_index: Option<Vec<u8>>,
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
}

/// Kind bytes, in the order of `WIRE.md` §4.
pub const KIND_HANDSHAKE: u8 = 1;
/// `Index`.
pub const KIND_INDEX: u8 = 2;
/// `Rows`.
pub const KIND_ROWS: u8 = 3;
/// `Segment`.
pub const KIND_SEGMENT: u8 = 4;
/// `ClockOffset`.
pub const KIND_CLOCK_OFFSET: u8 = 5;
/// `Digest` (`WIRE.md` §4.6): an integrity extension of stream files, of a
/// kind older readers skip. Never a [`Frame`]: [`FrameReader`] checks it.
pub const KIND_DIGEST: u8 = 6;

/// What a `Rows` frame's row takes on the wire.
pub fn row_wire_len(stream: &str, row_bytes: usize) -> u64 {
    4 + stream.len() as u64 + 8 + 8 + 4 + row_bytes as u64
}

/// The whole size (length prefix included) of a `Segment` frame carrying
/// `bytes` of Parquet and, if any, a caller index of `index` bytes.
pub fn segment_frame_len(stream: &str, bytes: usize, index: Option<usize>) -> u64 {
    4 + 1
        + 4
        + 4
        + stream.len() as u64
        + 8
        + 8
        + 8
        + 4
        + bytes as u64
        + 1
        + index.map_or(0, |n| 4 + n as u64)
}

/// Whether a frame of `len` bytes (prefix included) can be read back.
pub fn frame_fits(len: u64) -> bool {
    len.saturating_sub(4) <= MAX_FRAME_BYTES as u64
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
            | Frame::ClockOffset { source, .. } => *source,
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
                uuid,
                labels,
                metadata,
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
                stream,
                bytes: b,
                caller_index,
                ..
            } => return segment_frame_len(stream, b.len(), caller_index.as_ref().map(Vec::len)),
            Frame::ClockOffset { .. } => 4 + 8 + 8,
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
                uuid,
                labels,
                metadata,
                clock_anchor_wall_ns,
                complete,
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
                rows,
                first_ts,
                last_ts,
                bytes,
                caller_index,
            } => {
                w.u32(*source);
                w.bytes(stream.as_bytes());
                w.u64(*rows);
                w.i64(*first_ts);
                w.i64(*last_ts);
                w.bytes(bytes);
                w.opt_bytes(caller_index.as_deref());
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
        let mut r = Cursor {
            buf: payload,
            at: 0,
        };
        let frame = match kind {
            KIND_HANDSHAKE => Frame::Handshake {
                source: r.u32()?,
                uuid: r
                    .opt_bytes()?
                    .map(|b| utf8(b, "the source's uuid"))
                    .transpose()?,
                labels: r.map("labels")?,
                metadata: r.map("metadata")?,
                clock_anchor_wall_ns: r.i64()?,
                complete: r.bool()?,
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
                rows: r.u64()?,
                first_ts: r.i64()?,
                last_ts: r.i64()?,
                bytes: r.bytes()?.to_vec(),
                caller_index: r.opt_bytes()?.map(<[u8]>::to_vec),
            },
            KIND_CLOCK_OFFSET => Frame::ClockOffset {
                source: r.u32()?,
                ts: r.i64()?,
                offset_ns: r.i64()?,
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
struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
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
    fn u8(&mut self) -> std::result::Result<u8, WireProblem> {
        Ok(self.fixed::<1>()?[0])
    }
    fn u32(&mut self) -> std::result::Result<u32, WireProblem> {
        Ok(u32::from_le_bytes(self.fixed()?))
    }
    fn u64(&mut self) -> std::result::Result<u64, WireProblem> {
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
    fn str(&mut self, what: &str) -> std::result::Result<String, WireProblem> {
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

/// The running digest of a stream file (`WIRE.md` §4.6): FNV-1a 64 twice,
/// from two different bases, over every byte, and the count of bytes. Any
/// one changed byte changes both halves (each FNV-1a step is a bijection of
/// the running value), so a flipped byte is always caught; the second half
/// makes a chance match of several changes unlikely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamDigest {
    h0: u64,
    h1: u64,
    bytes: u64,
}

/// The only digest algorithm this build writes and checks.
pub const DIGEST_FNV1A_2X64: u8 = 1;
const DIGEST_ANNOUNCE: u8 = 0;
const DIGEST_TRAILER: u8 = 1;
/// A digest frame's payload: role, algorithm, byte count, two halves.
const DIGEST_PAYLOAD: usize = 1 + 1 + 8 + 8 + 8;

impl Default for StreamDigest {
    fn default() -> Self {
        StreamDigest {
            h0: 0xcbf2_9ce4_8422_2325,
            h1: 0x6c62_272e_07bb_0142,
            bytes: 0,
        }
    }
}

impl StreamDigest {
    /// Takes in more of the stream.
    pub fn update(&mut self, data: &[u8]) {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let (mut h0, mut h1) = (self.h0, self.h1);
        for &b in data {
            h0 = (h0 ^ b as u64).wrapping_mul(PRIME);
            h1 = (h1 ^ b as u64).wrapping_mul(PRIME);
        }
        self.h0 = h0;
        self.h1 = h1;
        self.bytes += data.len() as u64;
    }

    /// Bytes taken in so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The frame that, first after the preamble, says the stream ends with
    /// a digest frame.
    pub fn announce_frame() -> Vec<u8> {
        let mut out = 3u32.to_le_bytes().to_vec();
        out.extend_from_slice(&[KIND_DIGEST, DIGEST_ANNOUNCE, DIGEST_FNV1A_2X64]);
        out
    }

    /// The frame that ends the stream: this digest of everything before it.
    pub fn trailer_frame(&self) -> Vec<u8> {
        let mut out = ((1 + DIGEST_PAYLOAD) as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&[KIND_DIGEST, DIGEST_TRAILER, DIGEST_FNV1A_2X64]);
        out.extend_from_slice(&self.bytes.to_le_bytes());
        out.extend_from_slice(&self.h0.to_le_bytes());
        out.extend_from_slice(&self.h1.to_le_bytes());
        out
    }
}

/// Whether a stream read to its end was checked against a digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// It carried a digest (`WIRE.md` §4.6) and every byte matched it.
    Verified,
    /// It carried none, as streams of older publishers and live streams
    /// do: only its framing was checked.
    Unverified,
}

/// Reads frames off any byte source: checks the preamble first, then
/// yields one frame at a time, skipping (and counting) kinds it does not
/// know. The end of the source between frames is the end of the stream;
/// inside a frame it is [`WireProblem::Truncated`].
pub struct FrameReader<R> {
    input: R,
    name: String,
    offset: u64,
    skipped_unknown: u64,
    frames: u64,
    /// Frames of any kind read, digest frames included.
    raw_frames: u64,
    /// The running digest, while the stream may still end with one: from
    /// the preamble on, given up if the first frame is a known kind (no
    /// announcement), finished once the digest frame is checked.
    digest: Option<StreamDigest>,
    announced: bool,
    checked: bool,
}

impl<R> std::fmt::Debug for FrameReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameReader")
            .field("name", &self.name)
            .field("offset", &self.offset)
            .field("frames", &self.frames)
            .field("skipped_unknown", &self.skipped_unknown)
            .finish()
    }
}

impl<R: std::io::Read> FrameReader<R> {
    /// Reads and checks the preamble of `input`, named `name` in errors.
    pub fn new(mut input: R, name: &str) -> Result<FrameReader<R>> {
        let mut head = [0u8; PREAMBLE_BYTES];
        let got = read_full(&mut input, &mut head)
            .map_err(|e| Error::io(name, "cannot read the preamble", e))?;
        let fail = |problem| Error::Wire {
            file: name.to_string(),
            offset: 0,
            problem,
        };
        if got == 0 {
            return Err(fail(WireProblem::Empty));
        }
        if got < MAGIC.len() || head[..MAGIC.len()] != MAGIC {
            return Err(fail(WireProblem::WrongMagic(
                head[..got.min(MAGIC.len())].to_vec(),
            )));
        }
        if got < PREAMBLE_BYTES {
            return Err(fail(WireProblem::Truncated {
                needed: PREAMBLE_BYTES,
                got,
            }));
        }
        let version = u16::from_le_bytes([head[12], head[13]]);
        if version != PROTOCOL_VERSION {
            return Err(fail(WireProblem::UnknownVersion(version)));
        }
        let mut digest = StreamDigest::default();
        digest.update(&head);
        Ok(FrameReader {
            input,
            name: name.to_string(),
            offset: PREAMBLE_BYTES as u64,
            skipped_unknown: 0,
            frames: 0,
            raw_frames: 0,
            digest: Some(digest),
            announced: false,
            checked: false,
        })
    }

    /// The next frame, `None` at a clean end of the stream.
    pub fn next_frame(&mut self) -> Result<Option<Frame>> {
        loop {
            let start = self.offset;
            let Some(body) = self.next_raw()? else {
                return Ok(None);
            };
            let fail = |problem| Error::Wire {
                file: self.name.clone(),
                offset: start,
                problem,
            };
            match Frame::decode_payload(body[0], &body[1..]).map_err(fail)? {
                Some(frame) => {
                    self.frames += 1;
                    return Ok(Some(frame));
                }
                None => self.skipped_unknown += 1,
            }
        }
    }

    /// Reads the whole stream without decoding a frame, checking its
    /// framing and, when it carries one, its digest: the pass that lets a
    /// file be refused before anything of it is applied.
    pub fn check_to_end(&mut self) -> Result<Verification> {
        while self.next_raw()?.is_some() {}
        Ok(self.verification())
    }

    /// At the end of the stream: whether its digest was checked.
    pub fn verification(&self) -> Verification {
        match self.checked {
            true => Verification::Verified,
            false => Verification::Unverified,
        }
    }

    /// The next frame's body (kind and payload) of a kind other than
    /// `Digest`, which is checked here and not handed out.
    fn next_raw(&mut self) -> Result<Option<Vec<u8>>> {
        loop {
            let start = self.offset;
            let fail = |problem| Error::Wire {
                file: self.name.clone(),
                offset: start,
                problem,
            };
            let mut len = [0u8; 4];
            let got = read_full(&mut self.input, &mut len)
                .map_err(|e| Error::io(&self.name, "cannot read a frame", e))?;
            if got == 0 {
                if self.announced && !self.checked {
                    return Err(fail(WireProblem::DigestMissing));
                }
                return Ok(None);
            }
            if got < 4 {
                return Err(fail(WireProblem::Truncated { needed: 4, got }));
            }
            let len = u32::from_le_bytes(len);
            if len == 0 {
                return Err(fail(WireProblem::BadValue(
                    "a frame of length 0 has no kind".into(),
                )));
            }
            if len > MAX_FRAME_BYTES {
                return Err(fail(WireProblem::TooLong(len)));
            }
            // The body grows as its bytes arrive: a peer that claims a
            // frame of the largest size and then sends nothing costs a
            // first step, not the whole claim.
            let mut body = Vec::with_capacity((len as usize).min(FIRST_BODY_STEP));
            let got = (&mut self.input)
                .take(len as u64)
                .read_to_end(&mut body)
                .map_err(|e| Error::io(&self.name, "cannot read a frame", e))?;
            if got < len as usize {
                return Err(fail(WireProblem::Truncated {
                    needed: 4 + len as usize,
                    got: 4 + got,
                }));
            }
            self.offset += 4 + len as u64;
            let first = self.raw_frames == 0;
            self.raw_frames += 1;
            if self.checked {
                return Err(fail(WireProblem::BadValue(
                    "a frame follows the stream's digest, which ends it".into(),
                )));
            }
            let digest_kind = body[0] == KIND_DIGEST;
            if digest_kind {
                match self.digest_frame(&body[1..], first) {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(problem) => {
                        return Err(Error::Wire {
                            file: self.name.clone(),
                            offset: start,
                            problem,
                        })
                    }
                }
            }
            if first && (KIND_HANDSHAKE..=KIND_CLOCK_OFFSET).contains(&body[0]) {
                // No announcement: a stream without a digest.
                self.digest = None;
            }
            if let Some(digest) = &mut self.digest {
                digest.update(&len.to_le_bytes());
                digest.update(&body);
            }
            if !digest_kind {
                return Ok(Some(body));
            }
        }
    }

    /// Checks a `Digest` frame's payload. `true` when it was the trailer
    /// (checked, and not part of what it covers).
    fn digest_frame(
        &mut self,
        payload: &[u8],
        first: bool,
    ) -> std::result::Result<bool, WireProblem> {
        let mut r = Cursor {
            buf: payload,
            at: 0,
        };
        let role = r.u8()?;
        let algorithm = r.u8()?;
        if algorithm != DIGEST_FNV1A_2X64 {
            return Err(WireProblem::BadValue(format!(
                "digest algorithm {algorithm} is not one this build checks"
            )));
        }
        match role {
            DIGEST_ANNOUNCE if first => {
                if r.left() > 0 {
                    return Err(WireProblem::TrailingBytes(r.left()));
                }
                self.announced = true;
                Ok(false)
            }
            DIGEST_ANNOUNCE => Err(WireProblem::BadValue(
                "a digest announcement that is not the first frame".into(),
            )),
            DIGEST_TRAILER => {
                let claimed = StreamDigest {
                    bytes: r.u64()?,
                    h0: r.u64()?,
                    h1: r.u64()?,
                };
                if r.left() > 0 {
                    return Err(WireProblem::TrailingBytes(r.left()));
                }
                let Some(ours) = self.digest.take() else {
                    return Err(WireProblem::BadValue(
                        "a digest frame in a stream whose first frame did not announce one".into(),
                    ));
                };
                if ours != claimed {
                    return Err(WireProblem::DigestMismatch);
                }
                self.checked = true;
                Ok(true)
            }
            other => Err(WireProblem::BadValue(format!("digest frame role {other}"))),
        }
    }

    /// Frames of unknown kinds skipped so far.
    pub fn skipped_unknown(&self) -> u64 {
        self.skipped_unknown
    }

    /// Frames decoded so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Bytes consumed so far, the preamble included.
    pub fn bytes_read(&self) -> u64 {
        self.offset
    }
}

/// Reads until `buf` is full or the input ends; how many bytes it got.
fn read_full(input: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

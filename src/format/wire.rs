//! The replication stream's fixed numbers (`WIRE.md` §1, §2, §4): the
//! preamble, the kind bytes, the limits on a frame, a row and a segment,
//! and the arithmetic that tells, without encoding anything, how large a
//! frame will be. The writer cuts seals by these and compaction sizes its
//! merges by them, so they sit below both rather than inside the codec.

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

/// Bytes a `Rows` frame takes before its first row: length, kind, source,
/// seq, index state, count.
pub const ROWS_FRAME_OVERHEAD: u64 = 4 + 1 + 4 + 8 + 16 + 4;

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
/// `SourceUpdate` (`WIRE.md` §4.7): a source's new labels and metadata in
/// the middle of a connection. The original's 0.6.1 added it; older peers
/// skip it by its length.
pub const KIND_SOURCE_UPDATE: u8 = 6;
/// `Digest` (`WIRE.md` §4.6): an integrity extension of stream files, of a
/// kind older readers skip. Never a `Frame`: the codec's `FrameReader` checks it.
/// Our own extensions take kinds from the top of the byte down, away from
/// the original's numbering, which counts up from 1.
pub const KIND_DIGEST: u8 = 0xF6;
/// The kind `Digest` frames had before the original gave 6 to
/// `SourceUpdate`. A stream file we wrote then still reads: a kind-6 frame
/// whose payload is a digest's (2 or 26 bytes, sizes no `SourceUpdate`
/// can have: its fixed part alone is 20 bytes and each map entry adds at
/// least 8) is read as one.
pub const KIND_DIGEST_BEFORE_SOURCE_UPDATE: u8 = 6;
/// The two payload sizes of a `Digest` frame: announcement and trailer.
pub const DIGEST_PAYLOAD_SIZES: [usize; 2] = [2, 26];

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

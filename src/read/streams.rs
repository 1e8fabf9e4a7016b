//! Reading a stream (format §4): its sealed segments and its live tail,
//! from one snapshot, and decoding a segment with the archive named in
//! the error.
//!
//! Nothing here needs the caller's encoder except materializing a live
//! tail; a reader without one reports the tail's span as data it did not
//! read.

use crate::catalog::{SegmentRecord, SourceRecord, Span, WalRow};
use crate::container::{Archive, Snapshot};
use crate::error::{Error, Result};
use crate::segment::{check_encoder, materialize, Segment, SegmentEncoder};

/// The live tail of a stream as this reader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// The stream has no live rows.
    Empty,
    /// Materialized through the caller's encoder, or the self-describing one.
    Materialized(Segment),
    /// Rows are committed there but this reader has no encoder to read
    /// them: data not read, never absence.
    Unread(Span),
}

/// A stream's sealed segments (payloads fetched lazily) and its tail, all
/// from one snapshot.
#[derive(Debug, Clone)]
pub struct StreamRead {
    /// Sealed segments overlapping the request, in seq order.
    pub segments: Vec<SegmentRecord>,
    /// The live rows in the request's window.
    pub tail: Tail,
}

/// Reads the part of a stream that overlaps `[from, to]`: the catalog
/// entries of the sealed segments that reach into the window (fetch their
/// bytes with [`segment_bytes`]) and the live rows in it, materialized when
/// `encoder` is given or the source was written with the self-describing
/// encoder ([`crate::segment::typed`]). The segments are whole; trimming rows to the window
/// is the caller's, since only it knows the columns.
pub fn stream_range(
    archive: &Archive,
    source_id: i64,
    stream: &str,
    from: i64,
    to: i64,
    encoder: Option<&dyn SegmentEncoder>,
) -> Result<StreamRead> {
    archive.read_snapshot(|s| {
        let source = s.source(source_id)?;
        let segments = s.segments_overlapping(source_id, stream, from, to)?;
        let tail = read_tail(s, &source, stream, from, to, encoder)?;
        Ok(StreamRead { segments, tail })
    })
}

fn read_tail(
    s: &Snapshot<'_>,
    source: &SourceRecord,
    stream: &str,
    from: i64,
    to: i64,
    encoder: Option<&dyn SegmentEncoder>,
) -> Result<Tail> {
    match encoder {
        Some(encoder) => {
            check_encoder(s.file(), source.id, &source.source.metadata, encoder)?;
            let rows: Vec<WalRow> = s.live_wal_rows_between(source.id, stream, from, to)?;
            Ok(match materialize(s.file(), encoder, stream, &rows)? {
                Some(segment) => Tail::Materialized(segment),
                None if rows.is_empty() => Tail::Empty,
                None => Tail::Unread(span_of(&rows)),
            })
        }
        None => match crate::segment::typed::reader_for(&source.source.metadata) {
            Some(Ok(typed)) => read_tail(s, source, stream, from, to, Some(&typed)),
            Some(Err(message)) => Err(Error::Encoder {
                file: s.file().to_string(),
                stream: stream.to_string(),
                message,
            }),
            None => unread_tail(s, source, stream, from, to),
        },
    }
}

/// The live rows of a stream in `[from, to]` as one batch, with their span,
/// when the source was written with the self-describing encoder
/// ([`crate::segment::typed`]); `None` when its encoder is another (the tail is then
/// reported, not read, by [`live_wal_span`]).
pub(crate) fn typed_tail(
    s: &Snapshot<'_>,
    source: &SourceRecord,
    stream: &str,
    from: i64,
    to: i64,
) -> Result<Option<(arrow_array::RecordBatch, (i64, i64))>> {
    let encoder_error = |message: String| Error::Encoder {
        file: s.file().to_string(),
        stream: stream.to_string(),
        message,
    };
    let Some(typed) = crate::segment::typed::reader_for(&source.source.metadata) else {
        return Ok(None);
    };
    let typed = typed.map_err(encoder_error)?;
    let rows = s.live_wal_rows_between(source.id, stream, from, to)?;
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Ok(None);
    };
    let span = (first.ts, last.ts);
    let batch = typed.decode_rows(&rows).map_err(encoder_error)?;
    Ok(Some((batch, span)))
}

/// A tail this reader cannot decode: counted and spanned, never absent.
fn unread_tail(
    s: &Snapshot<'_>,
    source: &SourceRecord,
    stream: &str,
    from: i64,
    to: i64,
) -> Result<Tail> {
    let rows = s.live_wal_rows_between(source.id, stream, from, to)?;
    Ok(if rows.is_empty() {
        Tail::Empty
    } else {
        Tail::Unread(span_of(&rows))
    })
}

fn span_of(rows: &[WalRow]) -> Span {
    Span {
        rows: rows.len() as i64,
        first_ts: rows.first().map_or(0, |r| r.ts),
        last_ts: rows.last().map_or(0, |r| r.ts),
    }
}

/// Fetches one segment's payload (its own short snapshot: segments are
/// immutable, so nothing is gained by holding one across fetches).
pub fn segment_bytes(archive: &Archive, source_id: i64, stream: &str, seq: i64) -> Result<Vec<u8>> {
    archive.read_snapshot(|s| s.segment_bytes(source_id, stream, seq))
}

/// Count and span of a stream's live rows: what a reader without the
/// encoder must report as present but unread.
pub fn live_wal_span(archive: &Archive, source_id: i64, stream: &str) -> Result<Option<Span>> {
    archive.read_snapshot(|s| s.live_wal_span(source_id, stream))
}

/// Every stream of one source, fully read.
#[derive(Debug, Clone)]
pub struct SourceRead {
    /// The source's catalog row.
    pub source: SourceRecord,
    /// Streams by name.
    pub streams: Vec<StreamContents>,
}

/// A stream's segments, oldest first, with the live tail last.
#[derive(Debug, Clone)]
pub struct StreamContents {
    /// The stream's name.
    pub name: String,
    /// Sealed segments in seq order, with their payloads (slices of one
    /// buffer per stream: cloning one is a reference count).
    pub sealed: Vec<(SegmentRecord, bytes::Bytes)>,
    /// The live tail: materialized, empty, or (when the encoder encoded
    /// none of its rows) present but unread.
    pub tail: Tail,
}

/// Reads every stream of every source in one snapshot: sealed segments in
/// seq order (gaps tolerated), then the live tail through `encoder`. The
/// encoder is checked against each source's `encoder` key first.
pub fn read_archive(archive: &Archive, encoder: &dyn SegmentEncoder) -> Result<Vec<SourceRead>> {
    archive.prepare_bulk_read()?;
    archive.read_snapshot(|s| {
        let mut out = Vec::new();
        for source in s.sources()? {
            check_encoder(s.file(), source.id, &source.source.metadata, encoder)?;
            let mut streams = Vec::new();
            for name in s.streams(source.id)? {
                let sealed = s.stream_payloads(source.id, &name)?;
                let tail = read_tail(s, &source, &name, i64::MIN, i64::MAX, Some(encoder))?;
                streams.push(StreamContents { name, sealed, tail });
            }
            out.push(SourceRead { source, streams });
        }
        Ok(out)
    })
}

/// The caller's index of every sealed segment of a stream, by seq, without
/// reading payloads.
pub fn caller_indexes(
    archive: &Archive,
    source_id: i64,
    stream: &str,
) -> Result<Vec<(i64, Option<Vec<u8>>)>> {
    archive.read_snapshot(|s| s.caller_indexes(source_id, stream))
}

/// Caller rows under `name` in `[from, to]`, in `(ts, insertion)` order.
pub fn caller_rows(
    archive: &Archive,
    source_id: i64,
    name: &str,
    from: i64,
    to: i64,
) -> Result<Vec<crate::catalog::CallerRow>> {
    archive.read_snapshot(|s| s.caller_rows(source_id, name, from, to))
}

/// Decodes a segment, naming it in the error when it cannot be decoded.
pub fn decode(
    archive: &Archive,
    record: &SegmentRecord,
    bytes: impl Into<bytes::Bytes>,
    columns: Option<&[String]>,
) -> Result<Vec<arrow_array::RecordBatch>> {
    crate::segment::decode_segment(bytes, columns).map_err(|cause| Error::Segment {
        file: archive.file().to_string(),
        source_id: record.source_id,
        stream: record.stream.clone(),
        seq: record.seq,
        cause,
    })
}

//! The read path (format §4): describing an archive and reading its
//! streams, each answer from one snapshot.
//!
//! Nothing here writes and nothing here needs the caller's encoder except
//! materializing a live tail; a reader without one reports the tail's span
//! as data it did not read.

pub mod cache;
pub mod columns;
pub mod envelope;
pub mod packed;
pub mod prefetch;
pub mod rates;
pub mod stats;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::catalog::{Labels, SegmentRecord, SourceRecord, Span, WalRow};
use crate::container::{Archive, Snapshot};
use crate::error::{Error, Result};
use crate::segment::{check_encoder, materialize, Segment, SegmentEncoder};

/// What an archive holds, from the catalog alone (no segment is read).
/// Serializes to the stable shape `dendro describe --json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Description {
    /// Size of the main file (sidecars excluded).
    pub file_bytes: u64,
    /// The header's schema version.
    pub schema_version: u32,
    /// Sources by id.
    pub sources: Vec<SourceDescription>,
}

/// One source and its streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceDescription {
    /// File-local id.
    pub id: i64,
    /// Identity across files.
    pub uuid: Option<String>,
    /// The source's name.
    pub labels: Labels,
    /// Verbatim metadata.
    pub metadata: Labels,
    /// Cleanly finalized.
    pub complete: bool,
    /// The timeline's anchor.
    pub clock_anchor_wall_ns: i64,
    /// Streams by name.
    pub streams: Vec<StreamDescription>,
    /// Names that hold caller rows but are no stream of this source
    /// (format §3.5): reachable by name only. Not part of the JSON shape.
    #[serde(skip)]
    pub caller_row_names: Vec<String>,
    /// How many caller rows each of `caller_row_names` holds, in the same
    /// order. Not part of the JSON shape.
    #[serde(skip)]
    pub caller_row_counts: Vec<i64>,
}

/// One stream: its sealed segments and its live tail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamDescription {
    /// The stream's name.
    pub name: String,
    /// Sealed segments by seq.
    pub segments: Vec<SegmentDescription>,
    /// Rows across the sealed segments.
    pub sealed_rows: i64,
    /// Live WAL rows past the watermark.
    pub live_rows: i64,
    /// `[first_ts, last_ts]` of the live rows.
    pub live_span: Option<[i64; 2]>,
    /// Caller rows stored under this stream's name.
    pub caller_rows: i64,
}

/// One sealed segment, from the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentDescription {
    /// Order in the stream.
    pub seq: i64,
    /// Row count.
    pub rows: i64,
    /// First row's timestamp.
    pub first_ts: i64,
    /// Last row's timestamp.
    pub last_ts: i64,
    /// Payload length.
    pub bytes: i64,
    /// Whether a caller index is stored.
    pub caller_index: bool,
}

impl StreamDescription {
    fn empty(name: &str) -> StreamDescription {
        StreamDescription {
            name: name.to_string(),
            segments: Vec::new(),
            sealed_rows: 0,
            live_rows: 0,
            live_span: None,
            caller_rows: 0,
        }
    }

    /// Bytes of sealed payload (saturating: a hostile catalog's sizes can
    /// sum past `i64::MAX`).
    pub fn sealed_bytes(&self) -> i64 {
        self.segments
            .iter()
            .fold(0i64, |sum, s| sum.saturating_add(s.bytes))
    }

    /// Oldest and newest timestamps, sealed and live together.
    pub fn span(&self) -> Option<(i64, i64)> {
        let sealed = self
            .segments
            .iter()
            .map(|s| (s.first_ts, s.last_ts))
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
        let live = self.live_span.map(|[a, b]| (a, b));
        match (sealed, live) {
            (Some(s), Some(l)) => Some((s.0.min(l.0), s.1.max(l.1))),
            (s, l) => s.or(l),
        }
    }
}

impl SourceDescription {
    /// Oldest and newest timestamps across the source's streams.
    pub fn span(&self) -> Option<(i64, i64)> {
        self.streams
            .iter()
            .filter_map(StreamDescription::span)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
    }

    /// Bytes of sealed payload across the source's streams (saturating).
    pub fn sealed_bytes(&self) -> i64 {
        self.streams
            .iter()
            .fold(0i64, |sum, s| sum.saturating_add(s.sealed_bytes()))
    }
}

impl Description {
    /// Oldest and newest timestamps in the archive.
    pub fn span(&self) -> Option<(i64, i64)> {
        self.sources
            .iter()
            .filter_map(SourceDescription::span)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
    }
}

impl Snapshot<'_> {
    /// Answers every catalog question at once: sources, streams (the union
    /// of segments and WAL), segments, live tails and caller-row counts.
    /// Reads no segment payload. Each list is read once and filed by
    /// `(source, stream)`, so the cost grows with the catalog's size, not
    /// with its square.
    pub fn describe(&self) -> Result<Vec<SourceDescription>> {
        self.describe_listed(&crate::catalog::Listing::read(self)?)
    }

    /// [`Self::describe`] with the segments already listed (from this
    /// snapshot's image; see [`crate::catalog::Listing`]).
    pub fn describe_listed(
        &self,
        listing: &crate::catalog::Listing,
    ) -> Result<Vec<SourceDescription>> {
        let mut streams: BTreeMap<(i64, String), StreamDescription> = BTreeMap::new();
        for s in listing.all() {
            let stream = streams
                .entry((s.source_id, s.stream.clone()))
                .or_insert_with(|| StreamDescription::empty(&s.stream));
            stream.sealed_rows = stream.sealed_rows.saturating_add(s.rows);
            stream.segments.push(SegmentDescription {
                seq: s.seq,
                rows: s.rows,
                first_ts: s.first_ts,
                last_ts: s.last_ts,
                bytes: s.bytes,
                caller_index: s.caller_index,
            });
        }
        self.describe_streams(streams)
    }

    /// The sources, with `streams` (their sealed segments already filed)
    /// joined by the live tails and caller rows, each stream under its
    /// source.
    fn describe_streams(
        &self,
        mut streams: BTreeMap<(i64, String), StreamDescription>,
    ) -> Result<Vec<SourceDescription>> {
        let sources = self.sources()?;
        for (source_id, name, tail) in self.all_live_spans()? {
            let stream = streams
                .entry((source_id, name.clone()))
                .or_insert_with(|| StreamDescription::empty(&name));
            stream.live_rows = tail.rows;
            stream.live_span = Some([tail.first_ts, tail.last_ts]);
        }
        // Caller rows under a stream's name count toward it; under any
        // other name they are a store reached by name alone (format §3.5).
        let mut stores: BTreeMap<i64, (Vec<String>, Vec<i64>)> = BTreeMap::new();
        for (source_id, name, count) in self.caller_row_counts()? {
            let key = (source_id, name);
            match streams.get_mut(&key) {
                Some(stream) => stream.caller_rows = count,
                None => {
                    let store = stores.entry(source_id).or_default();
                    store.0.push(key.1);
                    store.1.push(count);
                }
            }
        }
        let mut by_source: BTreeMap<i64, Vec<StreamDescription>> = BTreeMap::new();
        for ((source_id, _), stream) in streams {
            by_source.entry(source_id).or_default().push(stream);
        }
        Ok(sources
            .into_iter()
            .map(|source| {
                let (caller_row_names, caller_row_counts) =
                    stores.remove(&source.id).unwrap_or_default();
                SourceDescription {
                    id: source.id,
                    uuid: source.uuid,
                    labels: source.labels,
                    metadata: source.metadata,
                    complete: source.complete,
                    clock_anchor_wall_ns: source.clock_anchor_wall_ns,
                    streams: by_source.remove(&source.id).unwrap_or_default(),
                    caller_row_names,
                    caller_row_counts,
                }
            })
            .collect())
    }
}

/// Describes the archive: per source and per stream, counts, spans, bytes,
/// and the file's own size, in one snapshot without reading a segment.
pub fn describe(archive: &Archive) -> Result<Description> {
    describe_with(archive, None)
}

/// [`describe`], from `listing` when given (the segments of this same
/// image, listed once by a holder of an image that cannot change).
pub fn describe_with(
    archive: &Archive,
    listing: Option<&crate::catalog::Listing>,
) -> Result<Description> {
    let (schema_version, sources) = archive.read_snapshot(|s| {
        let sources = match listing {
            Some(listing) => s.describe_listed(listing)?,
            None => s.describe()?,
        };
        Ok((s.schema_version()?, sources))
    })?;
    Ok(Description {
        file_bytes: archive.file_bytes()?,
        schema_version,
        sources,
    })
}

/// A first description of an archive from its catalog's small trees (see
/// [`crate::catalog::SealedOutline`]): what [`describe`] says, except that
/// no stream lists its segments (`segments` is empty and `sealed_rows`
/// is 0); each stream with sealed data has its count and span in
/// `sealed` instead. For a reader in place, whose full listing of a large
/// archive is a read per few segments, this is a read per few hundred.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outline {
    /// Sources, streams, live tails and caller rows, as [`describe`] gives them, with no segments listed.
    pub description: Description,
    /// Each stream's sealed segments, counted and spanned, in `(source_id, stream)` order.
    pub sealed: Vec<crate::catalog::SealedOutline>,
}

/// The archive's [`Outline`], in one snapshot.
pub fn outline(archive: &Archive) -> Result<Outline> {
    let (schema_version, sources, sealed) = archive.read_snapshot(|s| {
        let sealed = s.sealed_outlines()?;
        let mut streams = BTreeMap::new();
        for o in &sealed {
            streams.insert(
                (o.source_id, o.stream.clone()),
                StreamDescription::empty(&o.stream),
            );
        }
        Ok((s.schema_version()?, s.describe_streams(streams)?, sealed))
    })?;
    Ok(Outline {
        description: Description {
            file_bytes: archive.file_bytes()?,
            schema_version,
            sources,
        },
        sealed,
    })
}

/// The first sealed segment of a stream and its Arrow schema, read from
/// its footer alone (a whole segment of a wide stream is a megabyte or
/// more to fetch in place; its footer a fifth of that). `None` when the
/// stream has no segment; the inner `Err` says what is wrong with the
/// footer, an outer one that the archive could not be read.
pub fn probe(archive: &Archive, source_id: i64, stream: &str) -> Result<Probed> {
    probe_listed(archive, source_id, stream, None)
}

/// What [`probe`] finds: the stream's first segment and its schema (or
/// what is wrong with its footer), if it has a segment.
pub type Probed = Option<(
    SegmentRecord,
    std::result::Result<arrow_schema::SchemaRef, String>,
)>;

/// [`probe`], taking the first segment from `listing` when given (the
/// segments of this same image; see [`crate::catalog::Listing`]) rather
/// than listing the stream.
pub fn probe_listed(
    archive: &Archive,
    source_id: i64,
    stream: &str,
    listing: Option<&crate::catalog::Listing>,
) -> Result<Probed> {
    archive.read_snapshot(|s| {
        let first = match listing {
            Some(listing) => listing.stream(source_id, stream).first().cloned(),
            None => s.segments(source_id, stream)?.into_iter().next(),
        };
        let Some(first) = first else {
            return Ok(None);
        };
        let payload = s.segment_payload(source_id, stream, first.seq)?;
        // The archive's own failure is kept to be reported as such.
        let mut failed = None;
        let schema = crate::segment::footer_schema(payload.len(), |at, buf| {
            payload.read_at(at, buf).map_err(|e| {
                let text = e.to_string();
                failed = Some(e);
                text
            })
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(Some((first, schema))),
        }
    })
}

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
/// encoder ([`crate::typed`]). The segments are whole; trimming rows to the window
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
            check_encoder(s.file(), source.id, &source.metadata, encoder)?;
            let rows: Vec<WalRow> = s.live_wal_rows_between(source.id, stream, from, to)?;
            Ok(match materialize(s.file(), encoder, stream, &rows)? {
                Some(segment) => Tail::Materialized(segment),
                None if rows.is_empty() => Tail::Empty,
                None => Tail::Unread(span_of(&rows)),
            })
        }
        None => match crate::typed::reader_for(&source.metadata) {
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
/// ([`crate::typed`]); `None` when its encoder is another (the tail is then
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
    let Some(typed) = crate::typed::reader_for(&source.metadata) else {
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
            check_encoder(s.file(), source.id, &source.metadata, encoder)?;
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

//! Describing an archive (format §3): what it holds, per source and per
//! stream, answered from the catalog alone in one snapshot, without
//! reading a segment's payload (a probe reads one footer).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::catalog::{DocumentEntry, IndexPlace, Listing, NewSource, SegmentRecord};
use crate::container::{Archive, Snapshot};
use crate::error::Result;

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
    /// Where the file keeps its caller indexes: `"column"`
    /// (`segments.caller_index`, schema 4), `"table"` (`segment_indexes`,
    /// schema 5), or `"absent"` (a schema-4 file from before the column).
    pub caller_indexes: IndexPlace,
    /// Every document `(kind, name)` with its current revision's id and
    /// its number of revisions, deleted ones included, in `(kind, name)`
    /// order; no bodies. Empty for schema 4, which has no documents.
    pub documents: Vec<DocumentEntry>,
}

/// One source and its streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceDescription {
    /// File-local id.
    pub id: i64,
    /// The rest of its catalog row, as [`crate::catalog::SourceRecord`] holds it.
    #[serde(flatten)]
    pub source: NewSource,
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

/// One sealed segment, from the catalog: its `segments` row, which
/// serializes without the owner and stream its [`StreamDescription`]
/// already names.
pub type SegmentDescription = SegmentRecord;

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
        let sealed = self.segments.iter().map(|s| (s.first_ts, s.last_ts));
        let live = self.live_span.map(|[a, b]| (a, b));
        widest(sealed.chain(live))
    }
}

impl SourceDescription {
    /// Oldest and newest timestamps across the source's streams.
    pub fn span(&self) -> Option<(i64, i64)> {
        widest(self.streams.iter().filter_map(StreamDescription::span))
    }

    /// Bytes of sealed payload across the source's streams (saturating).
    pub fn sealed_bytes(&self) -> i64 {
        self.streams
            .iter()
            .fold(0i64, |sum, s| sum.saturating_add(s.sealed_bytes()))
    }
}

impl Description {
    /// How many documents have a current (not deleted) revision.
    pub fn current_documents(&self) -> usize {
        self.documents.iter().filter(|d| !d.deleted).count()
    }

    /// How many document revisions the file holds.
    pub fn document_revisions(&self) -> u64 {
        self.documents.iter().map(|d| d.revisions).sum()
    }

    /// Oldest and newest timestamps in the archive.
    pub fn span(&self) -> Option<(i64, i64)> {
        widest(self.sources.iter().filter_map(SourceDescription::span))
    }
}

/// The span that holds every span of `spans`; `None` when there is none.
/// One fold for a stream, a source and the archive, so the three agree.
fn widest(spans: impl Iterator<Item = (i64, i64)>) -> Option<(i64, i64)> {
    spans.reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
}

/// Answers every catalog question at once: sources, streams (the union
/// of segments and WAL), segments, live tails and caller-row counts.
/// Reads no segment payload. Each list is read once and filed by
/// `(source, stream)`, so the cost grows with the catalog's size, not
/// with its square.
pub fn describe_sources(s: &Snapshot<'_>) -> Result<Vec<SourceDescription>> {
    describe_listed(s, &Listing::read(s)?)
}

/// [`describe_sources`] with the segments already listed (from this
/// snapshot's image; see [`Listing`]).
pub fn describe_listed(s: &Snapshot<'_>, listing: &Listing) -> Result<Vec<SourceDescription>> {
    let mut streams: BTreeMap<(i64, String), StreamDescription> = BTreeMap::new();
    // The listing runs in (source, stream, seq) order: each run of one
    // stream is that stream's segments, already in seq order.
    for run in listing
        .all()
        .chunk_by(|a, b| a.source_id == b.source_id && a.stream == b.stream)
    {
        let first = &run[0];
        let mut stream = StreamDescription::empty(&first.stream);
        stream.sealed_rows = run.iter().fold(0i64, |n, s| n.saturating_add(s.rows));
        stream.segments = run.to_vec();
        streams.insert((first.source_id, first.stream.clone()), stream);
    }
    describe_streams(s, streams)
}

/// The sources, with `streams` (their sealed segments already filed)
/// joined by the live tails and caller rows, each stream under its
/// source.
fn describe_streams(
    s: &Snapshot<'_>,
    mut streams: BTreeMap<(i64, String), StreamDescription>,
) -> Result<Vec<SourceDescription>> {
    let sources = s.sources()?;
    for (source_id, name, tail) in s.all_live_spans()? {
        let stream = streams
            .entry((source_id, name.clone()))
            .or_insert_with(|| StreamDescription::empty(&name));
        stream.live_rows = tail.rows;
        stream.live_span = Some([tail.first_ts, tail.last_ts]);
    }
    // Caller rows under a stream's name count toward it; under any
    // other name they are a store reached by name alone (format §3.5).
    let mut stores: BTreeMap<i64, (Vec<String>, Vec<i64>)> = BTreeMap::new();
    for (source_id, name, count) in s.caller_row_counts()? {
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
                source: source.source,
                streams: by_source.remove(&source.id).unwrap_or_default(),
                caller_row_names,
                caller_row_counts,
            }
        })
        .collect())
}

/// Describes the archive: per source and per stream, counts, spans, bytes,
/// and the file's own size, in one snapshot without reading a segment.
pub fn describe(archive: &Archive) -> Result<Description> {
    describe_with(archive, None)
}

/// [`describe`], from `listing` when given (the segments of this same
/// image, listed once by a holder of an image that cannot change).
pub fn describe_with(archive: &Archive, listing: Option<&Listing>) -> Result<Description> {
    let (schema_version, sources, documents) = archive.read_snapshot(|s| {
        let sources = match listing {
            Some(listing) => describe_listed(s, listing)?,
            None => describe_sources(s)?,
        };
        Ok((s.schema_version()?, sources, s.document_entries()?))
    })?;
    Ok(Description {
        file_bytes: archive.file_bytes()?,
        schema_version,
        sources,
        caller_indexes: archive.layout().indexes,
        documents,
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
        let documents = s.document_entries()?;
        Ok((
            s.schema_version()?,
            (describe_streams(s, streams)?, documents),
            sealed,
        ))
    })?;
    let (sources, documents) = sources;
    Ok(Outline {
        description: Description {
            file_bytes: archive.file_bytes()?,
            schema_version,
            sources,
            caller_indexes: archive.layout().indexes,
            documents,
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
/// segments of this same image; see [`Listing`]) rather
/// than listing the stream.
pub fn probe_listed(
    archive: &Archive,
    source_id: i64,
    stream: &str,
    listing: Option<&Listing>,
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

/// The warm-up archive (`container::warm_up_archive`) is there to be
/// described once by the browser engine; the container lays it down, and
/// this checks it reads back as laid down.
#[cfg(test)]
mod warm_up_tests {
    #[test]
    fn the_warm_up_archive_opens_and_describes_as_laid_down() {
        let bytes = crate::container::warm_up_archive().expect("laid down");
        let archive = crate::container::Archive::from_reader("warm-up", &bytes[..], bytes.len())
            .expect("opens");
        let d = super::describe(&archive).expect("describes");
        assert_eq!(d.schema_version, crate::container::SCHEMA_VERSION);
        assert_eq!(d.sources.len(), 1);
        let stream = &d.sources[0].streams[0];
        assert_eq!(
            (stream.name.as_str(), stream.segments.len()),
            ("warm-up", 3)
        );
        assert!(stream.segments.iter().all(|s| s.bytes == 8000));
        // The geometry an archive has: 4 KiB pages, pointer-map pages.
        assert_eq!(u16::from_be_bytes([bytes[16], bytes[17]]), 4096);
        assert_ne!(&bytes[52..56], &[0, 0, 0, 0]);
    }
}

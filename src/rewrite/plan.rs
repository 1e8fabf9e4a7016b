//! What goes where: the sources, streams and segments of one or more
//! inputs that a copy selects, gathered per output source. A source is
//! matched across inputs by its uuid (format §3.1): equal uuids are one
//! source, so their segments are merged into one timeline and a segment
//! present in two inputs is taken once. Equal labels under different
//! uuids, and every source without a uuid, stay separate sources.
//!
//! Only the catalog is read here, except to compare two segments that
//! claim the same span in two inputs.

use std::collections::{BTreeMap, BTreeSet};

use super::inputs::Pinned;
use super::spec::CopySpec;
use crate::catalog::{SegmentRecord, SourceRecord};
use crate::error::{Error, Result};

/// Every output source, in the order the inputs list them.
pub(crate) struct Plan {
    pub sources: Vec<PlannedSource>,
    /// Segments found in more than one input and taken once.
    pub duplicates: usize,
}

/// One source of one input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Part {
    pub input: usize,
    pub source_id: i64,
}

/// One output source: the inputs' copies of it and what each contributes.
pub(crate) struct PlannedSource {
    /// The catalog row to write: that of the copy holding the newest row.
    pub record: SourceRecord,
    newest: Option<i64>,
    pub parts: Vec<Part>,
    /// Every selected stream name (segments ∪ WAL) across the parts.
    pub streams: BTreeSet<String>,
    /// Per stream, the segments to write, in output order.
    pub segments: BTreeMap<String, Vec<PlannedSegment>>,
}

/// A segment and the input it is read from.
#[derive(Debug, Clone)]
pub(crate) struct PlannedSegment {
    pub input: usize,
    pub record: SegmentRecord,
}

/// The uuid as matched across inputs (case does not make a new identity).
fn identity(source: &SourceRecord) -> Option<String> {
    source.source.uuid.as_ref().map(|u| u.to_ascii_lowercase())
}

/// Gathers what `spec` selects from `inputs`, merging sources by uuid.
pub(crate) fn plan(inputs: &[Pinned<'_>], spec: &CopySpec) -> Result<Plan> {
    let mut sources: Vec<PlannedSource> = Vec::new();
    let mut matched = vec![false; spec.sources.len()];
    for (input, pinned) in inputs.iter().enumerate() {
        let s = pinned.snapshot();
        for record in s.sources()? {
            let hits: Vec<usize> = (0..spec.sources.len())
                .filter(|&i| spec.sources[i].matches(&record))
                .collect();
            if !spec.sources.is_empty() && hits.is_empty() {
                continue;
            }
            for i in hits {
                matched[i] = true;
            }
            let newest = s.newest_ts(record.id)?;
            let part = Part {
                input,
                source_id: record.id,
            };
            let key = identity(&record);
            match sources
                .iter_mut()
                .find(|p| key.is_some() && identity(&p.record) == key)
            {
                Some(existing) => {
                    existing.parts.push(part);
                    if newest > existing.newest {
                        existing.record = record;
                        existing.newest = newest;
                    }
                }
                None => sources.push(PlannedSource {
                    record,
                    newest,
                    parts: vec![part],
                    streams: BTreeSet::new(),
                    segments: BTreeMap::new(),
                }),
            }
        }
    }
    let first_file = inputs.first().map_or("", |p| p.file());
    if let Some(i) = matched.iter().position(|m| !m) {
        return Err(Error::NotFound {
            file: first_file.to_string(),
            what: format!("a source matching {}", spec.sources[i]),
        });
    }
    let (from, to) = spec.bound();
    let mut streams_seen = BTreeSet::new();
    let mut duplicates = 0;
    for source in &mut sources {
        for part in &source.parts {
            let s = inputs[part.input].snapshot();
            for name in s.streams(part.source_id)? {
                if !spec.takes_stream(&name) {
                    continue;
                }
                streams_seen.insert(name.clone());
                let found = s.segments_overlapping(part.source_id, &name, from, to)?;
                source
                    .segments
                    .entry(name.clone())
                    .or_default()
                    .extend(found.into_iter().map(|record| PlannedSegment {
                        input: part.input,
                        record,
                    }));
                source.streams.insert(name);
            }
        }
        if source.parts.len() > 1 {
            for (name, segments) in &mut source.segments {
                duplicates += merge_timeline(inputs, &source.record, name, segments)?;
            }
        }
    }
    if let Some(missing) = spec.streams.iter().find(|n| !streams_seen.contains(*n)) {
        return Err(Error::NotFound {
            file: first_file.to_string(),
            what: format!("stream {missing:?} in the selected sources"),
        });
    }
    Ok(Plan {
        sources,
        duplicates,
    })
}

/// Orders one stream's segments from several copies of a source by time,
/// dropping a segment another input already holds byte for byte. Returns
/// how many were dropped. Two different segments from different inputs
/// over overlapping time would repeat rows, so that is refused.
fn merge_timeline(
    inputs: &[Pinned<'_>],
    source: &SourceRecord,
    stream: &str,
    segments: &mut Vec<PlannedSegment>,
) -> Result<usize> {
    segments.sort_by_key(|p| (p.record.first_ts, p.record.last_ts));
    let mut kept: Vec<PlannedSegment> = Vec::with_capacity(segments.len());
    let mut dropped = 0;
    for seg in segments.drain(..) {
        if let Some(last) = kept.last() {
            let overlaps = seg.input != last.input && seg.record.first_ts <= last.record.last_ts;
            if overlaps {
                if same_segment(inputs, last, &seg)? {
                    dropped += 1;
                    continue;
                }
                return Err(Error::Invalid {
                    file: inputs[seg.input].file().to_string(),
                    message: format!(
                        "stream {stream:?} of source {}: its segment {} ({}..{}) overlaps a \
                         different segment {} ({}..{}) of {}; combining them would repeat rows",
                        source.source.uuid.as_deref().unwrap_or("?"),
                        seg.record.seq,
                        seg.record.first_ts,
                        seg.record.last_ts,
                        last.record.seq,
                        last.record.first_ts,
                        last.record.last_ts,
                        inputs[last.input].file()
                    ),
                });
            }
        }
        kept.push(seg);
    }
    *segments = kept;
    Ok(dropped)
}

/// Whether two segments are one: same catalog facts and the same bytes.
fn same_segment(inputs: &[Pinned<'_>], a: &PlannedSegment, b: &PlannedSegment) -> Result<bool> {
    let (x, y) = (&a.record, &b.record);
    if (x.first_ts, x.last_ts, x.rows, x.bytes) != (y.first_ts, y.last_ts, y.rows, y.bytes) {
        return Ok(false);
    }
    let left = inputs[a.input]
        .snapshot()
        .segment_bytes(x.source_id, &x.stream, x.seq)?;
    let right = inputs[b.input]
        .snapshot()
        .segment_bytes(y.source_id, &y.stream, y.seq)?;
    Ok(left == right)
}

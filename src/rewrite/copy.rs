//! Copying archives into a new one: a selection of sources, streams and a
//! time window, written with the segments' bytes untouched. Also the write
//! half of [`super::combine`] (a copy is a combine of one input) and the
//! column projection, which is a copy that re-encodes.
//!
//! What a copy carries (format §3): each source's uuid (a missing one is
//! minted, so two copies are never claimed identical; a projection mints
//! new ones, its content being another), labels, metadata,
//! `complete` and clock anchor; its clock offsets, live WAL rows and caller
//! rows inside the window (caller rows under the stream filter); the
//! segments that reach into the window, whole, with their caller index,
//! numbered densely from 0 per stream. A segment partly inside the window
//! is kept whole unless [`CopySpec::trim`], which re-encodes it to the rows
//! inside and drops its caller index. WAL rows a segment already covers are
//! not copied: no read could return them.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use super::documents::{self, DocumentFork};
use super::inputs::{Input, Pinned};
use super::output::{close_archive, Batches, Staged};
use super::plan::{plan, Plan, PlannedSource};
use super::spec::CopySpec;
use crate::catalog::{CallerRow, NewSource, WalRow};
use crate::container::CreateSchema;
use crate::error::Result;
use crate::segment::Segment;
use crate::write::{reencode, Reencode};

/// What a copy, combine or projection wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// Sources written.
    pub sources: usize,
    /// Segments written.
    pub segments: usize,
    /// Of those, segments re-encoded (trimmed or projected).
    pub reencoded: usize,
    /// Segments a trim left no row of, not written.
    pub emptied: usize,
    /// Caller indexes dropped with the segments re-encoded (an index over
    /// the old rows or columns cannot describe the new ones, format §3.2).
    pub caller_indexes_dropped: usize,
    /// Segments found in two inputs and written once (combine).
    pub duplicates: usize,
    /// Live WAL rows written.
    pub live_rows: usize,
    /// Caller rows written.
    pub caller_rows: usize,
    /// Clock observations written.
    pub clock_offsets: usize,
    /// Segment payload bytes written.
    pub segment_bytes: u64,
    /// The output's schema version (4 or 5).
    pub schema_version: u32,
    /// Document revisions written (schema 5).
    pub documents: usize,
    /// Document revisions found in two inputs (same uuid) and written once.
    pub documents_held_twice: usize,
    /// Documents two inputs changed apart: revisions superseding the same
    /// one, all kept, the newest current.
    pub document_forks: Vec<DocumentFork>,
}

/// Copies what `spec` selects from `input` into a new archive at `output`.
pub fn copy(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    spec: &CopySpec,
) -> Result<CopyReport> {
    copy_many(&[input.as_ref()], output.as_ref(), spec)
}

/// Copies `input` keeping only `columns` (and each segment's time axis):
/// every segment is re-encoded and its caller index dropped, since an
/// index over the original columns may describe columns the copy lacks
/// (format §3.2). Every source gets a new uuid: its content is no longer
/// the original's. Live rows are carried as they are: they are the
/// encoder's rows, and only a later seal gives them columns.
pub fn project(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    columns: &[String],
    replace: bool,
) -> Result<CopyReport> {
    let input = input.as_ref();
    let available = Input::open(input)?.column_names()?;
    if let Some(missing) = columns.iter().find(|c| !available.contains(*c)) {
        return Err(crate::Error::Invalid {
            file: input.display().to_string(),
            message: format!(
                "no segment has a column {missing:?}; the columns are {}",
                available.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let spec = CopySpec {
        columns: Some(columns.to_vec()),
        replace,
        ..CopySpec::default()
    };
    copy(input, output, &spec)
}

/// An exact copy of `input` (SQLite's `VACUUM INTO`): every table, page
/// for page compacted, read through a live writer's sidecar without
/// pausing it.
pub fn vacuum_into(input: impl AsRef<Path>, output: impl AsRef<Path>, replace: bool) -> Result<()> {
    let (input, output) = (input.as_ref(), output.as_ref());
    let staged = Staged::new(output, replace, &[input])?;
    Input::open(input)?.archive().vacuum_into(staged.path())?;
    staged.finish()
}

/// The copy of several inputs into one output: [`copy`] and
/// [`super::combine`].
pub(crate) fn copy_many(inputs: &[&Path], output: &Path, spec: &CopySpec) -> Result<CopyReport> {
    let staged = Staged::new(output, spec.replace, inputs)?;
    let opened = inputs
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<Vec<_>>>()?;
    let pinned = opened.iter().map(Input::pin).collect::<Result<Vec<_>>>()?;
    let plan = plan(&pinned, spec)?;
    let mut held = Vec::new();
    let mut schema = CreateSchema::V4;
    for (i, input) in pinned.iter().enumerate() {
        schema = schema.max(input.schema());
        held.extend(input.revisions(i)?);
    }
    let files: Vec<&str> = pinned.iter().map(Pinned::file).collect();
    let merged = documents::merge(held, &files)?;
    if spec.schema == Some(CreateSchema::V4) && !merged.order.is_empty() {
        return Err(crate::Error::Invalid {
            file: staged.file(),
            message: format!(
                "schema 4 cannot hold documents and the input holds {} document revisions;                  write schema 5 to keep them",
                merged.order.len()
            ),
        });
    }
    let schema = spec.schema.unwrap_or(schema);
    let archive = staged.create_archive(schema)?;
    let mut report = write_plan(&pinned, &plan, spec, &archive)?;
    if !merged.order.is_empty() {
        let mut batches = Batches::new(&archive);
        report.documents = documents::write(&merged, batches.tx()?)?;
        batches.commit()?;
    }
    report.schema_version = schema.version();
    report.documents_held_twice = merged.held_twice;
    report.document_forks = merged.forks;
    close_archive(archive)?;
    staged.finish()?;
    Ok(report)
}

fn write_plan(
    inputs: &[Pinned<'_>],
    plan: &Plan,
    spec: &CopySpec,
    out: &crate::ArchiveMut,
) -> Result<CopyReport> {
    let mut report = CopyReport {
        duplicates: plan.duplicates,
        ..CopyReport::default()
    };
    let mut batches = Batches::new(out);
    for source in &plan.sources {
        write_source(inputs, source, spec, &mut batches, &mut report)?;
        batches.commit()?;
        report.sources += 1;
    }
    Ok(report)
}

fn write_source(
    inputs: &[Pinned<'_>],
    source: &PlannedSource,
    spec: &CopySpec,
    batches: &mut Batches<'_>,
    report: &mut CopyReport,
) -> Result<()> {
    let (from, to) = spec.bound();
    let record = &source.record;
    // A projection holds other content than its source: it is a new
    // source, with a uuid of its own, so that combining it with the
    // original never merges the two as one (format §3.1).
    let uuid = match spec.columns {
        Some(_) => None,
        None => record.source.uuid.clone(),
    };
    if let Some(text) = &uuid {
        if !crate::catalog::is_canonical_uuid(&text.to_ascii_lowercase()) {
            let part = source.parts[0];
            return Err(crate::Error::Invalid {
                file: inputs[part.input].file().to_string(),
                message: format!(
                    "source {} has the uuid {:?}, which is not a canonical uuid; \
                     a copy cannot carry it (verify reports it)",
                    part.source_id,
                    text.chars().take(64).collect::<String>()
                ),
            });
        }
    }
    let id = batches.tx()?.insert_source_with_uuid(&NewSource {
        uuid,
        labels: record.source.labels.clone(),
        metadata: record.source.metadata.clone(),
        complete: record.source.complete,
        clock_anchor_wall_ns: record.source.clock_anchor_wall_ns,
    })?;
    for part in &source.parts {
        let s = inputs[part.input].snapshot();
        for offset in s.clock_offsets(part.source_id)? {
            if (from..=to).contains(&offset.ts) {
                batches
                    .tx()?
                    .insert_clock_offset(id, offset.ts, offset.offset_ns)?;
                report.clock_offsets += 1;
            }
        }
    }
    let how = Reencode {
        window: (spec.trim && spec.bounded()).then_some((from, to)),
        columns: spec.columns.as_deref(),
    };
    for stream in &source.streams {
        let planned = source.segments.get(stream).map_or(&[][..], Vec::as_slice);
        let mut indexes: HashMap<usize, BTreeMap<i64, Option<Vec<u8>>>> = HashMap::new();
        let mut seq = 0;
        let mut watermark: Option<i64> = None;
        for p in planned {
            let r = &p.record;
            let s = inputs[p.input].snapshot();
            let bytes = s.segment_bytes(r.source_id, &r.stream, r.seq)?;
            let index = match indexes.entry(p.input) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(
                    s.caller_indexes(r.source_id, &r.stream)?
                        .into_iter()
                        .collect(),
                ),
            };
            let caller_index = index.remove(&r.seq).flatten();
            let segment = if how.touches(r) {
                report.reencoded += 1;
                if caller_index.is_some() {
                    report.caller_indexes_dropped += 1;
                }
                match reencode(s.file(), r, bytes, &how)? {
                    Some(segment) => segment,
                    None => {
                        report.emptied += 1;
                        continue;
                    }
                }
            } else {
                Segment {
                    bytes,
                    rows: r.rows,
                    first_ts: r.first_ts,
                    last_ts: r.last_ts,
                    caller_index,
                }
            };
            batches.tx()?.insert_segment(id, stream, seq, &segment)?;
            seq += 1;
            watermark = watermark.max(Some(segment.last_ts));
            report.segments += 1;
            report.segment_bytes += segment.bytes.len() as u64;
            batches.wrote(segment.bytes.len() as u64)?;
        }
        // Live rows past the output's watermark stay live; with several
        // copies of a source, a row at one timestamp is taken once.
        let mut live: BTreeMap<i64, WalRow> = BTreeMap::new();
        for part in &source.parts {
            let s = inputs[part.input].snapshot();
            for row in s.live_wal_rows_between(part.source_id, stream, from, to)? {
                if watermark.is_none_or(|w| row.ts > w) {
                    live.entry(row.ts).or_insert(row);
                }
            }
        }
        let rows: Vec<WalRow> = live.into_values().collect();
        batches.tx()?.insert_wal_rows(id, stream, &rows)?;
        report.live_rows += rows.len();
    }
    report.caller_rows += write_caller_rows(inputs, source, spec, id, batches)?;
    Ok(())
}

/// Copies caller rows under the stream filter and inside the window, in
/// `(ts, insertion)` order. A row repeated by a second copy of the source
/// is taken once; rows one input repeats itself are all kept.
fn write_caller_rows(
    inputs: &[Pinned<'_>],
    source: &PlannedSource,
    spec: &CopySpec,
    id: i64,
    batches: &mut Batches<'_>,
) -> Result<usize> {
    let (from, to) = spec.bound();
    let mut by_name: BTreeMap<String, Vec<CallerRow>> = BTreeMap::new();
    for part in &source.parts {
        let s = inputs[part.input].snapshot();
        for (owner, name, _) in s.caller_row_counts()? {
            if owner != part.source_id || !spec.takes_stream(&name) {
                continue;
            }
            let rows = s.caller_rows(part.source_id, &name, from, to)?;
            let merged = by_name.entry(name).or_default();
            if merged.is_empty() {
                *merged = rows;
                continue;
            }
            let mut already: HashMap<(i64, Vec<u8>), usize> = HashMap::new();
            for row in merged.iter() {
                *already.entry((row.ts, row.blob.clone())).or_default() += 1;
            }
            for row in rows {
                match already.get_mut(&(row.ts, row.blob.clone())) {
                    Some(n) if *n > 0 => *n -= 1,
                    _ => merged.push(row),
                }
            }
            merged.sort_by_key(|r| r.ts);
        }
    }
    let mut written = 0;
    for (name, rows) in by_name {
        batches.tx()?.insert_caller_rows(id, &name, &rows)?;
        written += rows.len();
    }
    Ok(written)
}

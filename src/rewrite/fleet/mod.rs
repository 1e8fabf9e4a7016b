//! The fleet export: many archives into one dataset that query engines
//! (DuckDB, Spark, Trino, DataFusion) read, added to run after run.
//!
//! Layout (docs/fleet-export.md has it whole, with queries):
//! `DIR/stream=<name>/date=<YYYY-MM-DD>/[<label>=<value>/]part-<gen>-<n>.parquet`,
//! `DIR/_manifest.json` (files, schemas and the cursors) and
//! `DIR/_manifest.parquet` (the files as a table), `DIR/_lock`. Every
//! path component is escaped by [`super::hive_escape`].
//!
//! Each run adds only rows newer than the cursor of their source (by
//! uuid) and stream, so a rerun with nothing new writes nothing and a
//! source found in two archives is exported once. Rows go to one file per
//! stream, UTC day of `ts`, partition and stream schema, closed at the
//! target size; files are never rewritten, so a run touches only the
//! files it adds. How a run commits, and how a killed one is undone, is
//! in [`dataset`].
//!
//! Sources without a uuid cannot have a cursor and are left out, counted.
//! Live rows are exported when the source's encoder is the
//! self-describing one (the rows `dendro cat` reads); others are counted.

mod dataset;
mod files;
mod table;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

pub use dataset::{Cursor, FileSource, Manifest, ManifestFile, DATASET_FORMAT};
use dataset::{Found, MANIFEST_JSON, MANIFEST_PARQUET, STAGING};
pub use files::civil_date;
use files::{OpenFile, Written};

use super::export::hive_escape;
use super::inputs::{Input, Pinned};
use super::plan::{plan, PlannedSource};
use super::spec::CopySpec;
use crate::catalog::Labels;
use crate::error::{Error, Result};

/// The size a data file grows to by default: 128 MiB.
pub const DEFAULT_TARGET_SIZE: u64 = 128 << 20;

/// The directory name of a partition whose sources lack the label
/// (what Hive, Spark and DuckDB read as null).
pub const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// What a fleet export is asked for.
#[derive(Debug, Clone)]
pub struct DatasetOptions {
    /// A label whose value becomes a directory level (`host=<value>/`).
    pub partition_by: Option<String>,
    /// A data file is closed once it reaches this many bytes.
    pub target_size: u64,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            partition_by: None,
            target_size: DEFAULT_TARGET_SIZE,
        }
    }
}

/// What a fleet export did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DatasetReport {
    /// The dataset's commit count after the run.
    pub generation: u64,
    /// Data files added.
    pub files_written: usize,
    /// Their bytes.
    pub bytes_written: u64,
    /// Rows added.
    pub rows_written: u64,
    /// Segments decoded for them.
    pub segments_read: usize,
    /// Segments skipped whole: every row older than the cursor.
    pub segments_skipped: usize,
    /// Sources with something new.
    pub sources_touched: usize,
    /// Rows in read segments at or before their cursor, not added again.
    pub rows_already_exported: u64,
    /// Sources left out: without a uuid there is no cursor to keep.
    pub sources_without_uuid: usize,
    /// Live rows left out: they need their writer's encoder.
    pub live_rows_not_exported: u64,
    /// Files a killed run had left, removed before this one.
    pub leftovers_removed: Option<usize>,
    /// Streams whose new rows came in more than one schema (files split).
    pub streams_split_by_schema: Vec<String>,
}

/// Adds what `inputs` hold beyond the dataset's cursors to the dataset
/// at `out` (created, with its parent, when missing).
pub fn export_dataset<P: AsRef<Path>>(
    inputs: &[P],
    out: impl AsRef<Path>,
    options: &DatasetOptions,
) -> Result<DatasetReport> {
    let root = out.as_ref();
    let name = root.display().to_string();
    let invalid = |message: String| Error::Invalid {
        file: name.clone(),
        message,
    };
    if inputs.is_empty() {
        return Err(invalid("nothing to export: no input archive given".into()));
    }
    if options.target_size == 0 {
        return Err(invalid("the target size must be at least one byte".into()));
    }
    // Inputs that cannot be read, and a directory that is not a dataset,
    // are refused before anything is created.
    let opened = inputs
        .iter()
        .map(|p| Input::open(p.as_ref()))
        .collect::<Result<Vec<_>>>()?;
    if root.exists() {
        dataset::inspect(root)?;
    }
    std::fs::create_dir_all(root)
        .map_err(|e| Error::io(&name, "cannot create the dataset directory", e))?;
    let _lock = dataset::lock(root)?;
    let mut manifest = match dataset::inspect(root)? {
        Found::Dataset(found) => {
            if found.partition_by != options.partition_by {
                return Err(invalid(format!(
                    "the dataset is partitioned by {}, this export asks for {}: one dataset \
                     has one layout",
                    said(&found.partition_by),
                    said(&options.partition_by)
                )));
            }
            found
        }
        Found::Empty => Manifest {
            format: DATASET_FORMAT.into(),
            partition_by: options.partition_by.clone(),
            ..Manifest::default()
        },
    };
    let report = DatasetReport {
        leftovers_removed: dataset::recover(root, &manifest)?,
        ..DatasetReport::default()
    };
    if report.leftovers_removed.is_some() && manifest.generation > 0 {
        let table = table::manifest_parquet(&manifest).map_err(invalid)?;
        dataset::replace_file(root, MANIFEST_PARQUET, &table)?;
    }
    let pinned = opened.iter().map(Input::pin).collect::<Result<Vec<_>>>()?;
    let planned = plan(&pinned, &CopySpec::default())?;
    let generation = manifest.generation + 1;
    let mut run = Run {
        root,
        name: name.clone(),
        options,
        generation,
        cursors: manifest
            .cursors
            .iter()
            .map(|c| ((c.source_uuid.clone(), c.stream.clone()), c.clone()))
            .collect(),
        written: Vec::new(),
        schemas: BTreeMap::new(),
        next_index: HashMap::new(),
        report,
    };
    let outcome = run.all(&pinned, &planned.sources);
    let written = std::mem::take(&mut run.written);
    if let Err(e) = outcome {
        undo(root, &written, false);
        return Err(e);
    }
    let mut report = run.report;
    if written.is_empty() {
        let _ = std::fs::remove_dir_all(root.join(STAGING));
        report.generation = manifest.generation;
        return Ok(report);
    }
    manifest.generation = generation;
    manifest.cursors = run.cursors.into_values().collect();
    manifest
        .cursors
        .sort_by(|a, b| (&a.source_uuid, &a.stream).cmp(&(&b.source_uuid, &b.stream)));
    manifest.schemas.extend(run.schemas);
    report.generation = generation;
    report.files_written = written.len();
    report.bytes_written = written.iter().map(|(w, _)| w.bytes).sum();
    manifest
        .files
        .extend(written.iter().map(|(w, meta)| meta.entry(w, generation)));
    if let Err(e) = commit(root, &manifest, &written) {
        undo(root, &written, true);
        return Err(e);
    }
    Ok(report)
}

/// "label L" or "no label", for a message.
fn said(partition_by: &Option<String>) -> String {
    match partition_by {
        Some(label) => format!("label {label:?}"),
        None => "no label".into(),
    }
}

/// Makes the run's files visible and then commits the manifest.
fn commit(root: &Path, manifest: &Manifest, written: &[(Written, FileMeta)]) -> Result<()> {
    let name = root.display().to_string();
    let mut dirs = BTreeSet::new();
    for (w, _) in written {
        let target = root.join(&w.relative);
        let dir = target
            .parent()
            .expect("a file in a partition")
            .to_path_buf();
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(&name, &format!("cannot create {}", dir.display()), e))?;
        std::fs::rename(&w.staged, &target)
            .map_err(|e| Error::io(&name, &format!("cannot place {}", w.relative), e))?;
        dirs.insert(dir);
    }
    for dir in &dirs {
        crate::container::place::sync_path(dir, &name)?;
    }
    let json = dataset::manifest_json(manifest, root)?;
    dataset::replace_file(root, MANIFEST_JSON, &json)?;
    // Committed: what follows only completes it, and a run killed here
    // has it completed by the next (the table written again).
    if let Ok(table) = table::manifest_parquet(manifest) {
        let _ = dataset::replace_file(root, MANIFEST_PARQUET, &table);
    }
    let _ = std::fs::remove_dir_all(root.join(STAGING));
    Ok(())
}

/// Removes a failed run's files, staged or (`placed`) already renamed, so
/// the dataset is as it was.
fn undo(root: &Path, written: &[(Written, FileMeta)], placed: bool) {
    for (w, _) in written {
        files::remove_quietly(&w.staged);
        if placed {
            files::remove_quietly(&root.join(&w.relative));
        }
    }
    let _ = std::fs::remove_dir_all(root.join(STAGING));
}

/// What the manifest says of a file besides what writing it measured.
struct FileMeta {
    stream: String,
    date: String,
    partition: Option<String>,
    schema_id: String,
    labels_not_in_file: Vec<String>,
}

impl FileMeta {
    fn entry(&self, w: &Written, generation: u64) -> ManifestFile {
        ManifestFile {
            path: w.relative.clone(),
            stream: self.stream.clone(),
            date: self.date.clone(),
            partition: self.partition.clone(),
            schema_id: self.schema_id.clone(),
            generation,
            rows: w.rows,
            bytes: w.bytes,
            ts_min: w.sources.iter().map(|s| s.ts_min).min().unwrap_or(0),
            ts_max: w.sources.iter().map(|s| s.ts_max).max().unwrap_or(0),
            labels_not_in_file: self.labels_not_in_file.clone(),
            sources: w.sources.clone(),
        }
    }
}

/// The files of one stream, day, partition and schema being written.
struct Group {
    schema: SchemaRef,
    kept: Vec<String>,
    meta: FileMeta,
    dir: String,
    open: Option<OpenFile>,
}

/// One source of a stream, as the run sees it.
struct Member<'p> {
    source: &'p PlannedSource,
    uuid: String,
    partition: Option<String>,
}

/// One run's state.
struct Run<'a> {
    root: &'a Path,
    name: String,
    options: &'a DatasetOptions,
    generation: u64,
    cursors: BTreeMap<(String, String), Cursor>,
    written: Vec<(Written, FileMeta)>,
    schemas: BTreeMap<String, Vec<[String; 2]>>,
    next_index: HashMap<String, u32>,
    report: DatasetReport,
}

impl Run<'_> {
    /// Every stream of every source, stream by stream.
    fn all(&mut self, pinned: &[Pinned<'_>], sources: &[PlannedSource]) -> Result<()> {
        let mut streams: BTreeMap<&str, Vec<Member<'_>>> = BTreeMap::new();
        for source in sources {
            let Some(uuid) = &source.record.source.uuid else {
                self.report.sources_without_uuid += 1;
                continue;
            };
            let partition = self
                .options
                .partition_by
                .as_ref()
                .and_then(|key| source.record.source.labels.get(key).cloned());
            for stream in &source.streams {
                streams.entry(stream).or_default().push(Member {
                    source,
                    uuid: uuid.to_ascii_lowercase(),
                    partition: partition.clone(),
                });
            }
        }
        let mut touched = BTreeSet::new();
        for (stream, mut members) in streams {
            // One partition's files are finished before the next opens.
            members.sort_by(|a, b| (&a.partition, &a.uuid).cmp(&(&b.partition, &b.uuid)));
            let labels: BTreeSet<&String> = members
                .iter()
                .flat_map(|m| m.source.record.source.labels.keys())
                .filter(|k| Some(*k) != self.options.partition_by.as_ref())
                .collect();
            let labels: Vec<String> = labels.into_iter().cloned().collect();
            let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
            let mut seen_schemas = BTreeSet::new();
            let mut partition: Option<&Option<String>> = None;
            for member in &members {
                if partition.is_some_and(|p| *p != member.partition) {
                    self.finish_all(&mut groups)?;
                }
                partition = Some(&member.partition);
                let before = self.report.rows_written;
                self.member(
                    pinned,
                    stream,
                    member,
                    &labels,
                    &mut groups,
                    &mut seen_schemas,
                )?;
                if self.report.rows_written > before {
                    touched.insert(member.uuid.clone());
                }
            }
            self.finish_all(&mut groups)?;
            if seen_schemas.len() > 1 {
                self.report.streams_split_by_schema.push(stream.to_string());
            }
        }
        self.report.sources_touched = touched.len();
        Ok(())
    }

    /// One source's new rows of `stream`: its segments, then its live tail.
    fn member(
        &mut self,
        pinned: &[Pinned<'_>],
        stream: &str,
        member: &Member<'_>,
        labels: &[String],
        groups: &mut BTreeMap<(String, String), Group>,
        seen: &mut BTreeSet<String>,
    ) -> Result<()> {
        let key = (member.uuid.clone(), stream.to_string());
        let segments = member.source.segments.get(stream).map_or(&[][..], |s| s);
        let mut sealed_to: Option<i64> = None;
        for planned in segments {
            let r = &planned.record;
            sealed_to = Some(sealed_to.map_or(r.last_ts, |t: i64| t.max(r.last_ts)));
            let cursor = self.cursors.get(&key).map(|c| c.last_ts);
            if cursor.is_some_and(|c| r.last_ts <= c) {
                self.report.segments_skipped += 1;
                continue;
            }
            let snapshot = pinned[planned.input].snapshot();
            let file = pinned[planned.input].file().to_string();
            let broken = |cause: String| Error::Segment {
                file: file.clone(),
                source_id: r.source_id,
                stream: stream.to_string(),
                seq: r.seq,
                cause,
            };
            let bytes = snapshot.segment_bytes(r.source_id, stream, r.seq)?;
            let batches = crate::segment::decode_segment(bytes, None).map_err(broken)?;
            self.report.segments_read += 1;
            for batch in batches {
                self.batch(stream, member, labels, groups, seen, &batch)
                    .map_err(|e| match e {
                        Failed::Rows(cause) => broken(cause),
                        Failed::Error(e) => e,
                    })?;
            }
        }
        // Live rows past every sealed one (two copies of a source may
        // both hold a row: once each ts).
        let mut live = BTreeMap::new();
        for part in &member.source.parts {
            for row in pinned[part.input]
                .snapshot()
                .live_wal_rows(part.source_id, stream)?
            {
                if sealed_to.is_none_or(|w| row.ts > w) {
                    live.entry(row.ts).or_insert(row);
                }
            }
        }
        let cursor = self.cursors.get(&key).map(|c| c.last_ts);
        let rows: Vec<_> = live
            .into_values()
            .filter(|r| cursor.is_none_or(|c| r.ts > c))
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        let file = pinned[member.source.parts[0].input].file().to_string();
        let failed = |message: String| Error::Encoder {
            file: file.clone(),
            stream: stream.to_string(),
            message,
        };
        let Some(typed) = crate::typed::reader_for(&member.source.record.source.metadata) else {
            self.report.live_rows_not_exported += rows.len() as u64;
            return Ok(());
        };
        let batch = typed.map_err(failed)?.decode_rows(&rows).map_err(failed)?;
        self.batch(stream, member, labels, groups, seen, &batch)
            .map_err(|e| match e {
                Failed::Rows(cause) => failed(format!("the live tail: {cause}")),
                Failed::Error(e) => e,
            })
    }

    /// Rows of one decoded batch past the cursor, day by day, into their
    /// groups' files.
    fn batch(
        &mut self,
        stream: &str,
        member: &Member<'_>,
        labels: &[String],
        groups: &mut BTreeMap<(String, String), Group>,
        seen: &mut BTreeSet<String>,
        batch: &RecordBatch,
    ) -> std::result::Result<(), Failed> {
        let ts = files::time_column(batch).map_err(Failed::Rows)?.values();
        if let Some(at) = ts.windows(2).position(|w| w[0] >= w[1]) {
            return Err(Failed::Rows(format!(
                "rows out of time order at row {}: ts {} after {}",
                at + 1,
                ts[at + 1],
                ts[at]
            )));
        }
        let key = (member.uuid.clone(), stream.to_string());
        let cursor = self.cursors.get(&key).map(|c| c.last_ts);
        let start = cursor.map_or(0, |c| ts.partition_point(|&t| t <= c));
        self.report.rows_already_exported += start as u64;
        if start == ts.len() {
            return Ok(());
        }
        let columns = files::schema_columns(&batch.schema());
        let schema_id = files::schema_id(&columns);
        seen.insert(schema_id.clone());
        self.schemas.entry(schema_id.clone()).or_insert(columns);
        let source = &member.source.record.source;
        let mut at = start;
        while at < ts.len() {
            let end = at + ts[at..].partition_point(|&t| t < files::next_day(ts[at]));
            let date = files::date_of(ts[at]);
            let group = match groups.entry((date.clone(), schema_id.clone())) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    let (schema, kept) = files::file_schema(&batch.schema(), labels);
                    let labels_not_in_file = labels
                        .iter()
                        .filter(|l| !kept.contains(l))
                        .cloned()
                        .collect();
                    let mut dir = format!("stream={}/date={date}", hive_escape(stream));
                    if let Some(label) = &self.options.partition_by {
                        dir.push_str(&format!(
                            "/{}={}",
                            hive_escape(label),
                            partition_component(member.partition.as_deref())
                        ));
                    }
                    v.insert(Group {
                        schema,
                        kept,
                        meta: FileMeta {
                            stream: stream.to_string(),
                            date,
                            partition: member.partition.clone(),
                            schema_id: schema_id.clone(),
                            labels_not_in_file,
                        },
                        dir,
                        open: None,
                    })
                }
            };
            let part = batch.slice(at, end - at);
            let rows = files::convert(
                &part,
                &group.schema,
                &group.kept,
                &member.uuid,
                &source.labels,
            )
            .map_err(Failed::Rows)?;
            self.write(group, &rows, &member.uuid, &source.labels)?;
            self.report.rows_written += (end - at) as u64;
            at = end;
        }
        let cursor = self.cursors.entry(key.clone()).or_insert(Cursor {
            source_uuid: key.0,
            stream: key.1,
            last_ts: i64::MIN,
            rows: 0,
        });
        cursor.last_ts = ts[ts.len() - 1];
        cursor.rows += (ts.len() - start) as u64;
        Ok(())
    }

    /// Appends to the group's open file (opening one), closing it at the
    /// target size.
    fn write(
        &mut self,
        group: &mut Group,
        rows: &RecordBatch,
        uuid: &str,
        labels: &Labels,
    ) -> std::result::Result<(), Failed> {
        let io = |what: &str, e: std::io::Error| Failed::Error(Error::io(&self.name, what, e));
        if group.open.is_none() {
            let index = self.next_index.entry(group.dir.clone()).or_insert(0);
            let relative = format!(
                "{}/part-{:06}-{:05}.parquet",
                group.dir, self.generation, index
            );
            *index += 1;
            let staged = self.root.join(STAGING).join(&relative);
            let file = OpenFile::create(staged, relative, &group.schema, &group.kept)
                .map_err(|e| io("cannot create a data file", e))?;
            group.open = Some(file);
        }
        let file = group.open.as_mut().expect("opened above");
        file.write(rows, uuid, labels)
            .map_err(|e| io(&format!("cannot write {}", file.relative), e))?;
        if file.size() >= self.options.target_size {
            self.finish(group)?;
        }
        Ok(())
    }

    /// Closes the group's open file, if any.
    fn finish(&mut self, group: &mut Group) -> std::result::Result<(), Failed> {
        if let Some(file) = group.open.take() {
            let relative = file.relative.clone();
            let staged = file.staged.clone();
            let written = file.finish().map_err(|e| {
                files::remove_quietly(&staged);
                Failed::Error(Error::io(
                    &self.name,
                    &format!("cannot write {relative}"),
                    e,
                ))
            })?;
            let meta = FileMeta {
                stream: group.meta.stream.clone(),
                date: group.meta.date.clone(),
                partition: group.meta.partition.clone(),
                schema_id: group.meta.schema_id.clone(),
                labels_not_in_file: group.meta.labels_not_in_file.clone(),
            };
            self.written.push((written, meta));
        }
        Ok(())
    }

    fn finish_all(&mut self, groups: &mut BTreeMap<(String, String), Group>) -> Result<()> {
        for (_, mut group) in std::mem::take(groups) {
            self.finish(&mut group).map_err(|e| match e {
                Failed::Error(e) => e,
                Failed::Rows(message) => Error::Invalid {
                    file: self.name.clone(),
                    message,
                },
            })?;
        }
        Ok(())
    }
}

/// Why a batch could not be written: its rows (the caller names the
/// segment), or anything else.
enum Failed {
    Rows(String),
    Error(Error),
}

/// A partition value as one path component: escaped like every other,
/// a missing one as [`NULL_PARTITION`], and a value that reads like that
/// marker escaped so the two stay apart.
fn partition_component(value: Option<&str>) -> String {
    match value {
        None => NULL_PARTITION.to_string(),
        Some(v) if v == NULL_PARTITION => format!("%5F{}", &v[1..]),
        Some(v) => hive_escape(v),
    }
}

/// Reads a dataset's committed manifest (for tests and tools).
pub fn read_manifest(root: impl AsRef<Path>) -> Result<Manifest> {
    match dataset::inspect(root.as_ref())? {
        Found::Dataset(m) => Ok(m),
        Found::Empty => Err(Error::Invalid {
            file: root.as_ref().display().to_string(),
            message: "no dataset here yet (no _manifest.json)".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_are_harmless_and_distinct() {
        assert_eq!(partition_component(Some("web-1")), "web-1");
        assert_eq!(partition_component(Some("..")), "%2E%2E");
        assert_eq!(partition_component(Some("a/b")), "a%2Fb");
        assert_eq!(partition_component(None), NULL_PARTITION);
        assert_ne!(partition_component(Some(NULL_PARTITION)), NULL_PARTITION);
    }
}

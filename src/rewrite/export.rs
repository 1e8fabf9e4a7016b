//! Export for query engines: every sealed segment of one or more archives
//! written out as a plain Parquet file (its bytes untouched) in a
//! Hive-partitioned tree that DuckDB, DataFusion, Spark and Trino read as
//! one dataset, plus `catalog.json` describing the sources and streams.
//!
//! Layout: `DIR/source=<uuid>/stream=<name>/seq=<n>.parquet`, `n` counting
//! from 0 in time order per stream. A source found in several inputs
//! (equal uuid) is one directory, with a segment two inputs share written
//! once (the same merge as [`super::combine`]). A stream name is
//! percent-encoded where a path or a Hive partition value could misread it.
//! A source without a uuid is named `source=unknown-<input>-<id>`. Live
//! rows are not exported, since only the writer's encoder can turn them into
//! columns; the catalog says how many there are and when.

use std::path::Path;

use serde::Serialize;

use super::copy::CopySpec;
use super::inputs::Input;
use super::output::Staged;
use super::plan::plan;
use crate::catalog::Labels;
use crate::error::{Error, Result};

/// The `format` value of `catalog.json`.
pub const EXPORT_FORMAT: &str = "dendro-export/1";

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ExportReport {
    /// Source directories.
    pub sources: usize,
    /// Parquet files.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Live rows left out (they need the writer's encoder).
    pub live_rows_not_exported: i64,
}

#[derive(Serialize)]
struct Catalog {
    format: &'static str,
    inputs: Vec<String>,
    sources: Vec<CatalogSource>,
}

#[derive(Serialize)]
struct CatalogSource {
    directory: String,
    uuid: Option<String>,
    labels: Labels,
    metadata: Labels,
    complete: bool,
    clock_anchor_wall_ns: i64,
    streams: Vec<CatalogStream>,
}

#[derive(Serialize)]
struct CatalogStream {
    name: String,
    directory: String,
    segments: Vec<CatalogSegment>,
    live_rows_not_exported: i64,
    live_span: Option<[i64; 2]>,
}

#[derive(Serialize)]
struct CatalogSegment {
    file: String,
    rows: i64,
    first_ts: i64,
    last_ts: i64,
    bytes: i64,
}

/// Exports `inputs` into a new directory `out` (replacing one only when
/// `replace`).
pub fn export<P: AsRef<Path>>(
    inputs: &[P],
    out: impl AsRef<Path>,
    replace: bool,
) -> Result<ExportReport> {
    let out = out.as_ref();
    let paths: Vec<&Path> = inputs.iter().map(AsRef::as_ref).collect();
    if paths.is_empty() {
        return Err(Error::Invalid {
            file: out.display().to_string(),
            message: "nothing to export: no input archive given".into(),
        });
    }
    let staged = Staged::new(out, replace, &paths)?;
    let root = staged.path().to_path_buf();
    let file = staged.file();
    let mkdir = |dir: &Path| {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(&file, "cannot create a directory", e))
    };
    mkdir(&root)?;
    let opened = paths
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<Vec<_>>>()?;
    let pinned = opened.iter().map(Input::pin).collect::<Result<Vec<_>>>()?;
    let plan = plan(&pinned, &CopySpec::default())?;
    let mut report = ExportReport::default();
    let mut catalog = Catalog {
        format: EXPORT_FORMAT,
        inputs: opened.iter().map(|i| i.file().to_string()).collect(),
        sources: Vec::new(),
    };
    for source in &plan.sources {
        let record = &source.record;
        let directory = match &record.uuid {
            Some(uuid) => format!("source={}", uuid.to_ascii_lowercase()),
            None => format!(
                "source=unknown-{}-{}",
                source.parts[0].input, source.parts[0].source_id
            ),
        };
        let mut streams = Vec::new();
        for name in &source.streams {
            let stream_dir = format!("{directory}/stream={}", hive_escape(name));
            mkdir(&root.join(&stream_dir))?;
            let mut segments = Vec::new();
            for (seq, planned) in source
                .segments
                .get(name)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .enumerate()
            {
                let r = &planned.record;
                let bytes = pinned[planned.input].snapshot().segment_bytes(
                    r.source_id,
                    &r.stream,
                    r.seq,
                )?;
                let relative = format!("{stream_dir}/seq={seq}.parquet");
                std::fs::write(root.join(&relative), &bytes)
                    .map_err(|e| Error::io(&file, &format!("cannot write {relative}"), e))?;
                report.files += 1;
                report.bytes += bytes.len() as u64;
                segments.push(CatalogSegment {
                    file: relative,
                    rows: r.rows,
                    first_ts: r.first_ts,
                    last_ts: r.last_ts,
                    bytes: r.bytes,
                });
            }
            // Two copies of a source may both hold a live row: count it
            // once, and not at all when the other copy sealed it.
            let watermark = segments.iter().map(|s| s.last_ts).max();
            let mut live = std::collections::BTreeSet::new();
            for part in &source.parts {
                let s = pinned[part.input].snapshot();
                let rows = s.live_wal_rows(part.source_id, name)?;
                live.extend(
                    rows.iter()
                        .map(|r| r.ts)
                        .filter(|ts| watermark.is_none_or(|w| *ts > w)),
                );
            }
            let live_rows = live.len() as i64;
            let live_span = live.first().zip(live.last()).map(|(a, b)| [*a, *b]);
            report.live_rows_not_exported += live_rows;
            streams.push(CatalogStream {
                name: name.clone(),
                directory: stream_dir,
                segments,
                live_rows_not_exported: live_rows,
                live_span,
            });
        }
        report.sources += 1;
        catalog.sources.push(CatalogSource {
            directory,
            uuid: record.uuid.clone(),
            labels: record.labels.clone(),
            metadata: record.metadata.clone(),
            complete: record.complete,
            clock_anchor_wall_ns: record.clock_anchor_wall_ns,
            streams,
        });
    }
    let json = serde_json::to_vec_pretty(&catalog).map_err(|e| Error::Invalid {
        file: file.clone(),
        message: format!("cannot describe the export: {e}"),
    })?;
    std::fs::write(root.join("catalog.json"), json)
        .map_err(|e| Error::io(&file, "cannot write catalog.json", e))?;
    staged.finish()?;
    Ok(report)
}

/// A stream name as one path component and Hive partition value: bytes
/// outside `[A-Za-z0-9._-]` as `%XX` (what Hive itself escapes, and more),
/// and `.`/`..` escaped whole so they cannot name a directory.
pub fn hive_escape(name: &str) -> String {
    // "", "." and ".." would name no folder or another one. Escaped, they
    // stay distinct from every other name: "%" and "%2E" never come out
    // of the loop below, which escapes '%' itself.
    if name.is_empty() {
        return "%".to_string();
    }
    if name == "." || name == ".." {
        return name.bytes().map(|b| format!("%{b:02X}")).collect();
    }
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-' => out.push(byte as char),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_name_is_one_harmless_path_component() {
        assert_eq!(hive_escape("cpu"), "cpu");
        assert_eq!(hive_escape("a/b=c d"), "a%2Fb%3Dc%20d");
        assert_eq!(hive_escape(".."), "%2E%2E");
        assert_eq!(hive_escape(""), "%");
        assert_ne!(hive_escape(""), hive_escape("\0"));
        assert_ne!(hive_escape("x%2F"), hive_escape("x/"));
    }
}

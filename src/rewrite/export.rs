//! Export for query engines: every sealed segment of one or more archives
//! written out as a plain Parquet file (its bytes untouched) in a
//! Hive-partitioned tree that DuckDB, DataFusion, Spark and Trino read as
//! one dataset, plus `catalog.json` describing the sources and streams.
//!
//! Layout: `DIR/source=<uuid>/stream=<name>/seq=<n>.parquet`, `n` counting
//! from 0 in time order per stream. A source found in several inputs
//! (equal uuid) is one directory, with a segment two inputs share written
//! once (the same merge as [`super::combine`]).
//!
//! Every directory name comes from the archive's contents, which any file
//! may fill with any text, so each is made one harmless path component
//! (see [`hive_escape`]): a stream name is percent-encoded; a uuid that is
//! not canonical (format §3.1) is percent-encoded behind a `~`, which no
//! canonical uuid and no escaped text contains; a source without a uuid is
//! `source=unknown-<input>-<id>`; a name too long for one component is
//! shortened and made distinct by a hash. `catalog.json` gives the exact
//! text behind every directory.
//!
//! Live rows of a source written with the self-describing encoder
//! ([`crate::typed`]) are exported as `live.parquet` beside the stream's
//! segments, the rows `dendro cat` reads. Other live rows are not, since
//! only their writer's encoder can turn them into columns; the report and
//! the catalog say how many there are and when. Caller rows (the caller's
//! opaque store) are not exported either, and counted the same way. A
//! segment's caller index is in `catalog.json` beside its file, in hex,
//! and so is every document revision of a schema-5 input (once per uuid,
//! `supersedes` by uuid): what schema 5 adds goes with the segments.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::documents::{self, DocumentFork};
use super::inputs::Input;
use super::output::Staged;
use super::plan::plan;
use super::spec::CopySpec;
use crate::catalog::{is_canonical_uuid, Labels, WalRow};
use crate::container::place::sync_path;
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
    /// Live rows exported (self-describing encoder), in `live.parquet` files.
    pub live_rows_exported: i64,
    /// Live rows left out (they need the writer's encoder).
    pub live_rows_not_exported: i64,
    /// Caller rows left out: the caller's own opaque store (format §3.5),
    /// which has no columns to export. Counted per name, once per source.
    pub caller_rows_not_exported: i64,
    /// Segments whose caller index `catalog.json` carries (hex, beside the
    /// segment's file).
    pub caller_indexes: usize,
    /// Document revisions (schema 5) written to `catalog.json`, once per
    /// uuid across the inputs.
    pub documents: usize,
    /// Documents the inputs changed apart (see [`super::DocumentFork`]).
    pub document_forks: Vec<DocumentFork>,
}

#[derive(Serialize)]
struct Catalog {
    format: &'static str,
    inputs: Vec<String>,
    sources: Vec<CatalogSource>,
    /// Every document revision, oldest first, each after the one it
    /// supersedes (named by uuid: an export has no ids).
    documents: Vec<CatalogRevision>,
}

#[derive(Serialize)]
struct CatalogRevision {
    uuid: String,
    kind: String,
    name: String,
    schema: Option<String>,
    body: Option<String>,
    created_wall_ns: i64,
    supersedes: Option<String>,
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
    /// Caller rows per name, not exported.
    caller_rows_not_exported: std::collections::BTreeMap<String, i64>,
}

#[derive(Serialize)]
struct CatalogStream {
    name: String,
    directory: String,
    segments: Vec<CatalogSegment>,
    live: Option<CatalogSegment>,
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
    /// The segment's caller index in hex; absent when it has none (an
    /// empty index is `""`).
    #[serde(skip_serializing_if = "Option::is_none")]
    caller_index_hex: Option<String>,
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
    let mut dirs = vec![root.clone()];
    let mut written: Vec<PathBuf> = Vec::new();
    let mut mkdir = |dir: &Path| {
        dirs.push(dir.to_path_buf());
        std::fs::create_dir_all(dir).map_err(|e| Error::io(&file, "cannot create a directory", e))
    };
    mkdir(&root)?;
    let opened = paths
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<Vec<_>>>()?;
    let pinned = opened.iter().map(Input::pin).collect::<Result<Vec<_>>>()?;
    let plan = plan(&pinned, &CopySpec::default())?;
    let mut held = Vec::new();
    for (i, input) in pinned.iter().enumerate() {
        held.extend(input.revisions(i)?);
    }
    let files: Vec<&str> = pinned.iter().map(|p| p.file()).collect();
    let merged = documents::merge(held, &files)?;
    let mut report = ExportReport {
        documents: merged.order.len(),
        document_forks: merged.forks.clone(),
        ..ExportReport::default()
    };
    let mut catalog = Catalog {
        format: EXPORT_FORMAT,
        inputs: opened.iter().map(|i| i.file().to_string()).collect(),
        sources: Vec::new(),
        documents: merged
            .order
            .into_iter()
            .map(|(r, supersedes)| CatalogRevision {
                uuid: r.uuid,
                kind: r.kind,
                name: r.name,
                schema: r.schema,
                body: r.body,
                created_wall_ns: r.created_wall_ns,
                supersedes,
            })
            .collect(),
    };
    for source in &plan.sources {
        let record = &source.record;
        let directory = match &record.source.uuid {
            Some(uuid) => format!("source={}", uuid_component(uuid)),
            None => format!(
                "source=unknown-{}-{}",
                source.parts[0].input, source.parts[0].source_id
            ),
        };
        mkdir(&root.join(&directory))?;
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
                let snapshot = pinned[planned.input].snapshot();
                let bytes = snapshot.segment_bytes(r.source_id, &r.stream, r.seq)?;
                let caller_index = snapshot
                    .caller_index(r.source_id, &r.stream, r.seq)?
                    .map(|index| index.iter().map(|b| format!("{b:02x}")).collect::<String>());
                report.caller_indexes += caller_index.is_some() as usize;
                let relative = format!("{stream_dir}/seq={seq}.parquet");
                write_file(&root.join(&relative), &bytes, &mut written)
                    .map_err(|e| Error::io(&file, &format!("cannot write {relative}"), e))?;
                report.files += 1;
                report.bytes += bytes.len() as u64;
                segments.push(CatalogSegment {
                    file: relative,
                    rows: r.rows,
                    first_ts: r.first_ts,
                    last_ts: r.last_ts,
                    bytes: r.bytes,
                    caller_index_hex: caller_index,
                });
            }
            // Two copies of a source may both hold a live row: take it
            // once, and not at all when the other copy sealed it.
            let watermark = segments.iter().map(|s| s.last_ts).max();
            let mut live = std::collections::BTreeMap::new();
            for part in &source.parts {
                let s = pinned[part.input].snapshot();
                for row in s.live_wal_rows(part.source_id, name)? {
                    if watermark.is_none_or(|w| row.ts > w) {
                        live.entry(row.ts).or_insert(row);
                    }
                }
            }
            let rows: Vec<WalRow> = live.into_values().collect();
            let live_span = rows.first().zip(rows.last()).map(|(a, b)| [a.ts, b.ts]);
            let mut live_file = None;
            let mut live_rows_not_exported = 0;
            if !rows.is_empty() {
                match typed_tail(&record.source.metadata, &file, name, &rows)? {
                    Some(bytes) => {
                        let relative = format!("{stream_dir}/live.parquet");
                        write_file(&root.join(&relative), &bytes, &mut written).map_err(|e| {
                            Error::io(&file, &format!("cannot write {relative}"), e)
                        })?;
                        report.files += 1;
                        report.bytes += bytes.len() as u64;
                        report.live_rows_exported += rows.len() as i64;
                        live_file = Some(CatalogSegment {
                            file: relative,
                            rows: rows.len() as i64,
                            first_ts: rows[0].ts,
                            last_ts: rows[rows.len() - 1].ts,
                            bytes: bytes.len() as i64,
                            caller_index_hex: None,
                        });
                    }
                    None => live_rows_not_exported = rows.len() as i64,
                }
            }
            report.live_rows_not_exported += live_rows_not_exported;
            streams.push(CatalogStream {
                name: name.clone(),
                directory: stream_dir,
                segments,
                live: live_file,
                live_rows_not_exported,
                live_span: (live_rows_not_exported > 0).then_some(live_span).flatten(),
            });
        }
        // The same rows may be in two copies of a source: the larger count
        // per name stands for both.
        let mut caller_rows = std::collections::BTreeMap::<String, i64>::new();
        for part in &source.parts {
            let counts = pinned[part.input].snapshot().caller_row_counts()?;
            for (owner, name, n) in counts {
                if owner == part.source_id {
                    let seen = caller_rows.entry(name).or_default();
                    *seen = (*seen).max(n);
                }
            }
        }
        report.caller_rows_not_exported += caller_rows.values().sum::<i64>();
        report.sources += 1;
        catalog.sources.push(CatalogSource {
            directory,
            uuid: record.source.uuid.clone(),
            labels: record.source.labels.clone(),
            metadata: record.source.metadata.clone(),
            complete: record.source.complete,
            clock_anchor_wall_ns: record.source.clock_anchor_wall_ns,
            streams,
            caller_rows_not_exported: caller_rows,
        });
    }
    let json = serde_json::to_vec_pretty(&catalog).map_err(|e| Error::Invalid {
        file: file.clone(),
        message: format!("cannot describe the export: {e}"),
    })?;
    write_file(&root.join("catalog.json"), &json, &mut written)
        .map_err(|e| Error::io(&file, "cannot write catalog.json", e))?;
    // Every file and name in the tree durable before the tree gets its
    // final name.
    make_durable(&root, &written, &dirs, &file)?;
    staged.finish()?;
    Ok(report)
}

/// Writes `bytes` to a new file at `path`, noting it in `written` for
/// [`make_durable`].
fn write_file(path: &Path, bytes: &[u8], written: &mut Vec<PathBuf>) -> std::io::Result<()> {
    std::fs::write(path, bytes)?;
    written.push(path.to_path_buf());
    Ok(())
}

/// Makes the files and directories of the export durable. On Linux one
/// `syncfs` of the file system holding `root` does it (one flush instead of
/// a journal commit per file: 0.05 s against 0.86 s for 160 files in
/// docs/measurements/2026-12-07-export-durability.md); elsewhere, or if it
/// fails, each file and then each directory is fsynced.
fn make_durable(root: &Path, written: &[PathBuf], dirs: &[PathBuf], file: &str) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let Ok(dir) = std::fs::File::open(root) {
            // SAFETY: a valid descriptor, open for the whole call.
            if unsafe { libc::syncfs(dir.as_raw_fd()) } == 0 {
                return Ok(());
            }
        }
    }
    for path in written {
        sync_path(path, file)?;
    }
    for dir in dirs.iter().rev() {
        sync_path(dir, file)?;
    }
    Ok(())
}

/// A typed source's live rows of `stream` as one Parquet file; `None` when
/// the source's encoder is another one.
fn typed_tail(
    metadata: &Labels,
    file: &str,
    stream: &str,
    rows: &[WalRow],
) -> Result<Option<Vec<u8>>> {
    let failed = |message: String| Error::Encoder {
        file: file.to_string(),
        stream: stream.to_string(),
        message,
    };
    let Some(typed) = crate::typed::reader_for(metadata) else {
        return Ok(None);
    };
    let typed = typed.map_err(failed)?;
    let batch = typed.decode_rows(rows).map_err(failed)?;
    crate::segment::encode_batch(&batch)
        .map(Some)
        .map_err(|e| failed(format!("cannot encode the live tail: {e}")))
}

/// The directory text of a source's uuid: a canonical one as it is, any
/// other text escaped behind `~` (never in a canonical uuid, never in
/// [`hive_escape`]'s output), so a hostile value names no other directory
/// and two values never share one.
fn uuid_component(uuid: &str) -> String {
    if is_canonical_uuid(uuid) {
        uuid.to_string()
    } else {
        shorten(format!("~{}", escape_bytes(uuid)), uuid)
    }
}

/// Longest escaped text kept whole in a directory name: with `source=` or
/// `stream=` in front, well under the 255 bytes most file systems allow.
const MAX_COMPONENT: usize = 200;

/// A stream name as one path component and Hive partition value: bytes
/// outside `[A-Za-z0-9._-]` as `%XX` (what Hive itself escapes, and more),
/// and `.`/`..` escaped whole so they cannot name a directory. A name whose
/// escaped form exceeds `MAX_COMPONENT` (200) bytes keeps a prefix, then `~`
/// and a 64-bit hash of the whole name (`~` never appears otherwise).
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
    shorten(escape_bytes(name), name)
}

/// Every byte outside `[A-Za-z0-9._-]` as `%XX`.
fn escape_bytes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-' => out.push(byte as char),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// `escaped` when short enough, else a prefix of it (never cutting a
/// `%XX`) with `~` and the FNV-1a hash of `original`.
fn shorten(escaped: String, original: &str) -> String {
    if escaped.len() <= MAX_COMPONENT {
        return escaped;
    }
    let mut cut = MAX_COMPONENT - 17;
    while let Some(p) = escaped[..cut].rfind('%') {
        if p + 3 <= cut {
            break;
        }
        cut = p;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in original.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{}~{hash:016x}", &escaped[..cut])
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

    #[test]
    fn a_long_name_is_shortened_to_distinct_components() {
        let long_a = "a/".repeat(200);
        let long_b = format!("{}b", "a/".repeat(199));
        let (a, b) = (hive_escape(&long_a), hive_escape(&long_b));
        assert!(a.len() <= MAX_COMPONENT && b.len() <= MAX_COMPONENT, "{a}");
        assert_ne!(a, b);
        assert!(a.contains('~') && !hive_escape("a~").contains('~'));
    }

    #[test]
    fn only_a_canonical_uuid_is_used_as_it_is() {
        let uuid = "0123abcd-0000-4000-8000-00000000beef";
        assert_eq!(uuid_component(uuid), uuid);
        assert_eq!(uuid_component("x/../../escape"), "~x%2F..%2F..%2Fescape");
        assert_eq!(uuid_component(".."), "~..");
        assert_ne!(uuid_component(&uuid.to_uppercase()), uuid);
    }
}

//! The rewriting commands: copy, combine, compact, project, vacuum-into,
//! export.
//! Parsing and printing only; the work is `dendro::rewrite`.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use dendro::container::CreateSchema;
use dendro::rewrite::{
    self, CompactEvent, CompactSpec, CopyReport, CopySpec, SourceSelector, Target,
};

use crate::Failure;

/// `dendro copy`.
#[derive(Args)]
pub struct CopyArgs {
    /// The archive to copy from.
    input: PathBuf,
    /// The new archive (must not exist unless --force).
    output: PathBuf,
    /// Take only this source: an id, a uuid, or a label as KEY=VALUE.
    /// Repeat to take several.
    #[arg(long = "source", value_name = "SOURCE")]
    sources: Vec<String>,
    /// Take only this stream (and the caller rows under its name). Repeat
    /// to take several.
    #[arg(long = "stream", value_name = "NAME")]
    streams: Vec<String>,
    /// Take only what reaches at or after this timestamp (ns since the epoch).
    #[arg(long, allow_hyphen_values = true, value_name = "NS")]
    from: Option<i64>,
    /// Take only what reaches at or before this timestamp (ns since the epoch).
    #[arg(long, allow_hyphen_values = true, value_name = "NS")]
    to: Option<i64>,
    /// Re-encode a segment partly inside --from/--to to the rows inside,
    /// instead of keeping it whole (its caller index is dropped).
    #[arg(long)]
    trim: bool,
    /// Replace the output if it exists.
    #[arg(long)]
    force: bool,
    /// The output's schema: 4 (read by every release of the original) or
    /// 5 (its 0.6 releases: caller indexes in their own table, documents).
    /// Default: 5 when an input is 5, else 4.
    #[arg(long, value_name = "4|5", value_parser = parse_schema)]
    schema: Option<CreateSchema>,
}

/// `dendro combine`.
#[derive(Args)]
pub struct CombineArgs {
    /// The new archive (must not exist unless --force).
    output: PathBuf,
    /// The archives to combine.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Replace the output if it exists.
    #[arg(long)]
    force: bool,
    /// The output's schema: 4 (read by every release of the original) or
    /// 5 (its 0.6 releases: caller indexes in their own table, documents).
    /// Default: 5 when an input is 5, else 4.
    #[arg(long, value_name = "4|5", value_parser = parse_schema)]
    schema: Option<CreateSchema>,
}

/// `--schema`: 4 or 5, the versions this build creates.
fn parse_schema(text: &str) -> Result<CreateSchema, String> {
    text.trim()
        .parse::<u32>()
        .ok()
        .and_then(CreateSchema::from_version)
        .ok_or_else(|| format!("{text:?} is not a schema this build creates: 4 or 5"))
}

/// `dendro compact`.
#[derive(Args)]
pub struct CompactArgs {
    /// The archive to compact in place (no writer may hold it).
    file: PathBuf,
    /// Merge into segments of at most this many rows.
    #[arg(long, value_name = "N", conflicts_with = "target_bytes",
          value_parser = clap::value_parser!(u64).range(1..))]
    target_rows: Option<u64>,
    /// Merge into segments of at most this many payload bytes (the
    /// default is 1,400,000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    target_bytes: Option<u64>,
    /// Also merge across a column set that grew or shrank, null-filling
    /// the rows that lack a column (never across a column whose type or
    /// metadata changed).
    #[arg(long)]
    union_fields: bool,
}

/// `dendro project`.
#[derive(Args)]
pub struct ProjectArgs {
    /// The archive to copy from.
    input: PathBuf,
    /// The new archive (must not exist unless --force).
    output: PathBuf,
    /// The columns to keep, comma-separated (the time column is always kept).
    #[arg(long, value_delimiter = ',', required = true, value_name = "A,B")]
    columns: Vec<String>,
    /// Replace the output if it exists.
    #[arg(long)]
    force: bool,
}

/// `dendro export`.
#[derive(Args)]
pub struct ExportArgs {
    /// The archives to export, and directories whose archives to export
    /// (found by content; the shell expands globs).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The dataset: created when missing, added to when it is one.
    /// Layout: stream=<name>/date=<YYYY-MM-DD>/[<label>=<value>/]part-*.parquet,
    /// _manifest.json and _manifest.parquet (docs/fleet-export.md).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Partition the files by this label's value too (e.g. host), fixed
    /// by the dataset's first export.
    #[arg(long, value_name = "LABEL")]
    partition_by: Option<String>,
    /// Close a data file at this size: bytes, or with K, M or G (binary).
    #[arg(long, value_name = "SIZE", default_value = "128M", value_parser = parse_size)]
    target_size: u64,
    /// Write the older layout instead: every sealed segment as its own
    /// file under source=<uuid>/stream=<name>/seq=<n>.parquet with
    /// catalog.json, into a new directory (lossless: caller indexes and
    /// documents included; not incremental).
    #[arg(long, conflicts_with_all = ["partition_by", "target_size"])]
    segments: bool,
    /// With --segments: replace the directory if it exists.
    #[arg(long, requires = "segments")]
    force: bool,
    /// Print the report as JSON.
    #[arg(long, conflicts_with = "segments")]
    json: bool,
}

/// `128M`, `1G`, `4096`: bytes, with a binary suffix.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, shift) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        None => (t, 0),
        Some((at, _)) => {
            let shift = match t[at..].to_ascii_uppercase().trim_end_matches(['B', 'I']) {
                "K" => 10,
                "M" => 20,
                "G" => 30,
                "" => 0,
                _ => return Err(format!("{text:?}: a size is digits and K, M or G")),
            };
            (&t[..at], shift)
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?}: a size is digits and K, M or G"))?;
    match n.checked_mul(1 << shift) {
        Some(0) => Err("the target size must be at least one byte".into()),
        Some(size) => Ok(size),
        None => Err(format!("{text:?} is too large")),
    }
}

/// `dendro vacuum-into`.
#[derive(Args)]
pub struct VacuumIntoArgs {
    /// The archive, possibly open in a writer.
    file: PathBuf,
    /// The copy (must not exist unless --force).
    output: PathBuf,
    /// Replace the output if it exists.
    #[arg(long)]
    force: bool,
}

pub fn run_copy(args: CopyArgs) -> Result<(), Failure> {
    if let (Some(from), Some(to)) = (args.from, args.to) {
        if from > to {
            return Err(Failure::Error(format!(
                "--from {from} is after --to {to}: the window is empty"
            )));
        }
    }
    if args.trim && args.from.is_none() && args.to.is_none() {
        return Err(Failure::Error(
            "--trim needs --from or --to: there is no window to trim to".into(),
        ));
    }
    let spec = CopySpec {
        sources: args
            .sources
            .iter()
            .map(|s| SourceSelector::parse(s))
            .collect(),
        streams: args.streams,
        from: args.from,
        to: args.to,
        trim: args.trim,
        columns: None,
        replace: args.force,
        schema: args.schema,
    };
    let report = rewrite::copy(&args.input, &args.output, &spec)?;
    print_copy(&args.output, &report);
    Ok(())
}

pub fn run_combine(args: CombineArgs) -> Result<(), Failure> {
    let report = rewrite::combine_as(&args.output, &args.inputs, args.force, args.schema)?;
    print_copy(&args.output, &report);
    Ok(())
}

pub fn run_project(args: ProjectArgs) -> Result<(), Failure> {
    let columns: Vec<String> = args
        .columns
        .into_iter()
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    if columns.is_empty() {
        return Err(Failure::Error("--columns names no column".into()));
    }
    let report = rewrite::project(&args.input, &args.output, &columns, args.force)?;
    print_copy(&args.output, &report);
    eprintln!("dendro: the projected sources have new uuids: their content differs");
    Ok(())
}

pub fn run_vacuum_into(args: VacuumIntoArgs) -> Result<(), Failure> {
    rewrite::vacuum_into(&args.file, &args.output, args.force)?;
    println!(
        "{}: an exact copy of {}",
        args.output.display(),
        args.file.display()
    );
    Ok(())
}

pub fn run_export(args: ExportArgs) -> Result<(), Failure> {
    if args.segments {
        return run_export_segments(args);
    }
    let mut archives = Vec::new();
    for path in &args.files {
        if path.is_dir() {
            let found = crate::serve::archives_in(path).map_err(Failure::Error)?;
            // An archive's own -wal and -shm files are not worth a line.
            let sidecar = |name: &str| {
                ["-wal", "-shm", "-journal"]
                    .iter()
                    .any(|s| name.ends_with(s))
            };
            for skipped in found.skipped.iter().filter(|s| !sidecar(&s.name)) {
                eprintln!(
                    "dendro: {}: skipped {}: {}",
                    path.display(),
                    skipped.name.escape_debug(),
                    skipped.reason
                );
            }
            if found.not_looked_at > 0 {
                return Err(Failure::Error(format!(
                    "{}: more than {} entries: name the archives instead",
                    path.display(),
                    crate::serve::MAX_ENTRIES
                )));
            }
            archives.extend(found.archives);
        } else {
            archives.push(path.clone());
        }
    }
    if archives.is_empty() {
        return Err(Failure::Error(
            "no archive to export in the paths given".into(),
        ));
    }
    let options = rewrite::DatasetOptions {
        partition_by: args.partition_by,
        target_size: args.target_size,
    };
    let report = rewrite::export_dataset(&archives, &args.out, &options)?;
    if args.json {
        let text = serde_json::to_string(&report).map_err(|e| Failure::Error(e.to_string()))?;
        println!("{text}");
        return Ok(());
    }
    if let Some(n) = report.leftovers_removed {
        eprintln!("dendro: an earlier export was interrupted: {n} file(s) it left were removed");
    }
    if report.files_written == 0 {
        println!(
            "{}: nothing new in {} archive(s): nothing written (generation {})",
            args.out.display(),
            archives.len(),
            report.generation
        );
    } else {
        println!(
            "{}: generation {}: {} file(s), {} bytes, {} row(s) from {} source(s) \
             ({} segment(s) read, {} skipped as exported)",
            args.out.display(),
            report.generation,
            report.files_written,
            report.bytes_written,
            report.rows_written,
            report.sources_touched,
            report.segments_read,
            report.segments_skipped
        );
    }
    for stream in &report.streams_split_by_schema {
        eprintln!(
            "dendro: stream {:?} changed schema: its files are split by schema \
             (schema_id in the manifest)",
            stream
        );
    }
    if report.sources_without_uuid > 0 {
        eprintln!(
            "dendro: {} source(s) without a uuid were not exported: a dataset keeps a \
             cursor per uuid",
            report.sources_without_uuid
        );
    }
    if report.live_rows_not_exported > 0 {
        eprintln!(
            "dendro: {} live row(s) were not exported: they need the writer's encoder to \
             become columns (they will be once sealed)",
            report.live_rows_not_exported
        );
    }
    Ok(())
}

fn run_export_segments(args: ExportArgs) -> Result<(), Failure> {
    let report = rewrite::export(&args.files, &args.out, args.force)?;
    println!(
        "{}: {} source(s), {} Parquet file(s), {} bytes",
        args.out.display(),
        report.sources,
        report.files,
        report.bytes
    );
    if report.live_rows_exported > 0 {
        println!(
            "{}: {} live row(s) exported as live.parquet files (rows not sealed yet)",
            args.out.display(),
            report.live_rows_exported
        );
    }
    if report.caller_rows_not_exported > 0 {
        eprintln!(
            "dendro: {} caller row(s) were not exported: they are the caller's own opaque \
             store (catalog.json counts them per source and name)",
            report.caller_rows_not_exported
        );
    }
    if report.live_rows_not_exported > 0 {
        eprintln!(
            "dendro: {} live row(s) were not exported: they are committed but need the \
             writer's encoder to become columns (catalog.json lists them per stream)",
            report.live_rows_not_exported
        );
    }
    Ok(())
}

pub fn run_compact(args: CompactArgs) -> Result<(), Failure> {
    let target = match (args.target_rows, args.target_bytes) {
        (Some(rows), _) => Target::Rows(rows),
        (None, Some(bytes)) => Target::Bytes(bytes),
        (None, None) => CompactSpec::default().target,
    };
    let spec = CompactSpec {
        target,
        union_fields: args.union_fields,
    };
    // Progress goes to a terminal only; piped or redirected, the command
    // prints its summary alone.
    let progress = std::io::stderr().is_terminal();
    let report = rewrite::compact(&args.file, &spec, |event| {
        if let (
            true,
            CompactEvent::Committed {
                source_id,
                stream,
                seq,
                rows,
            },
        ) = (progress, event)
        {
            eprint!("\rdendro: merged source {source_id} stream {stream:?} into segment {seq} ({rows} rows)\x1b[K");
        }
    })?;
    if progress {
        eprintln!();
    }
    println!(
        "{}: {} run(s) merged, {} segment(s) now {}, {} schema break(s) left apart; {} bytes now {}",
        args.file.display(),
        report.runs,
        report.segments_before,
        report.segments_after,
        report.schema_breaks,
        report.bytes_before,
        report.bytes_after
    );
    if report.caller_indexes_dropped > 0 {
        eprintln!(
            "dendro: {} caller index(es) dropped: a merged segment has none",
            report.caller_indexes_dropped
        );
    }
    Ok(())
}

fn print_copy(output: &std::path::Path, report: &CopyReport) {
    println!(
        "{}: {} source(s), {} segment(s) ({} re-encoded, {} already present), {} live row(s), \
         {} caller row(s), {} clock offset(s)",
        output.display(),
        report.sources,
        report.segments,
        report.reencoded,
        report.duplicates,
        report.live_rows,
        report.caller_rows,
        report.clock_offsets
    );
    if report.caller_indexes_dropped > 0 {
        eprintln!(
            "dendro: {} caller index(es) dropped with the re-encoded segments",
            report.caller_indexes_dropped
        );
    }
    if report.schema_version >= 5 {
        println!(
            "{}: schema {}, {} document revision(s) ({} held by two inputs, written once)",
            output.display(),
            report.schema_version,
            report.documents,
            report.documents_held_twice
        );
    }
    for fork in &report.document_forks {
        eprintln!(
            "dendro: document {:?}/{:?} forked: revisions {} all supersede {}; the newest is current",
            fork.kind,
            fork.name,
            fork.revisions.join(", "),
            fork.superseded
        );
    }
}

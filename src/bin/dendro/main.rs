//! `dendro`: inspect, verify, read, write, rewrite, replicate and serve
//! archives from the command line.
//!
//! Parsing and presentation only; every answer comes from the library.
//! Exit codes: 0 success, 1 verify found problems, 2 the file was refused
//! or the command failed (the message names the file and the cause).
//! Whatever came from a file is printed through `terminal`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

mod replicate;
mod rewrite;
mod serve;
mod snapshot;
mod stats;
mod terminal;

use clap::{Parser, Subcommand, ValueEnum};
use dendro::catalog::IndexPlace;
use dendro::container::{sniff, FileKind};
use dendro::read::{self, Description, Tail};
use dendro::{Archive, Error};

#[derive(Parser)]
#[command(
    name = "dendro",
    version,
    about = "Inspect, verify, read, write, rewrite, replicate and serve dendro archives"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Say what a file is, from its header alone.
    Sniff {
        /// The file to look at.
        file: PathBuf,
    },
    /// Describe an archive: sources, streams, segments, live tails, sizes.
    Describe {
        /// The archive.
        file: PathBuf,
        /// Print the stable JSON shape other tools parse (always complete).
        #[arg(long)]
        json: bool,
        /// List every source, stream and metadata key instead of the first
        /// few of each.
        #[arg(long)]
        all: bool,
    },
    /// Check an archive and report every problem (exit 1 if any).
    Verify {
        /// The archive.
        file: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Statistics of a region of a stream from its raw rows: per numeric
    /// column count, min, max, mean, p50, p99, last - first, a counter's
    /// increase and mean rate, the integral over time; per histogram
    /// column the region's summed distribution and its quantiles.
    Stats {
        /// The archive.
        file: PathBuf,
        /// The source, by id or uuid.
        #[arg(long)]
        source: String,
        /// The stream's name.
        #[arg(long)]
        stream: String,
        /// A column to summarize (repeat for several); all numeric and
        /// histogram columns when absent.
        #[arg(long = "column")]
        columns: Vec<String>,
        /// The region's first timestamp, inclusive (ns).
        #[arg(long, allow_hyphen_values = true)]
        from: Option<i64>,
        /// The region's last timestamp, inclusive (ns).
        #[arg(long, allow_hyphen_values = true)]
        to: Option<i64>,
        /// Print the statistics as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a stream's sealed rows, decoded from its Parquet segments.
    Cat {
        /// The archive.
        file: PathBuf,
        /// The source, by id or uuid.
        #[arg(long)]
        source: String,
        /// The stream's name.
        #[arg(long)]
        stream: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Jsonl)]
        format: Format,
        /// Only segments reaching at or after this timestamp (ns).
        #[arg(long, allow_hyphen_values = true)]
        from: Option<i64>,
        /// Only segments reaching at or before this timestamp (ns).
        #[arg(long, allow_hyphen_values = true)]
        to: Option<i64>,
    },
    /// Write a realistic demo archive: hosts with cpu, memory, network and
    /// disk streams over an hour of one-second ticks, mostly sealed, with a
    /// live tail, metadata and events.
    Demo {
        /// Where to write it (must not exist).
        out: PathBuf,
        /// Keep appending once a second until interrupted (or for --for
        /// seconds). An interrupt is an unclean stop, which by design loses
        /// at most the two ticks in flight.
        #[arg(long)]
        live: bool,
        /// With --live, stop cleanly (and finalize) after this many seconds.
        #[arg(long = "for", value_name = "SECONDS", requires = "live")]
        run_for: Option<u64>,
        /// Aim for about this many megabytes (wider hosts, same hour).
        #[arg(long, value_name = "MB")]
        size: Option<u64>,
        /// How many hosts (sources).
        #[arg(long)]
        hosts: Option<usize>,
        /// Segment length in seconds (default 300): streams seal on
        /// multiples of it, so a short one shows seals while watching.
        #[arg(long = "seal-every", value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
        seal_every: Option<u64>,
        /// Minutes of history before now (at least 1: an archive of no
        /// history has no "now" to end at).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        minutes: Option<u64>,
        /// Fill labels, metadata and events with hostile text (markup,
        /// script payloads, 1 MB strings, control and bidi characters), to
        /// test that a viewer renders them inertly.
        #[arg(long)]
        hostile: bool,
    },
    /// Publish an archive as a replication stream (WIRE.md): over TCP, to a
    /// file, or to standard output.
    Publish(replicate::PublishArgs),
    /// Apply a replication stream to a replica: from a publisher over TCP,
    /// a file, or standard input.
    Subscribe(replicate::SubscribeArgs),
    /// TLS for replication: `dendro tls selfsigned` makes a certificate
    /// and key for a first try.
    Tls(replicate::TlsArgs),
    /// Serve the built viewer on 127.0.0.1 and offer the given archives.
    Serve {
        /// Archives to offer (each checked first), or folders: every archive
        /// directly in a folder is offered (found by content), the other
        /// files are skipped and named.
        files: Vec<PathBuf>,
        /// Port on 127.0.0.1 (0 picks a free one).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// The built viewer's folder (`npm run build:www` writes www/dist).
        /// Without it: `share/dendro/www` beside the binary's `bin/`
        /// folder, then (debug builds only) the checkout's www/dist.
        #[arg(long)]
        root: Option<PathBuf>,
    },
    /// Copy sources, streams and a time window into a new archive; segments
    /// pass through byte for byte (a segment partly inside the window is
    /// kept whole unless --trim).
    Copy(rewrite::CopyArgs),
    /// Combine archives into a new one: a source in several inputs (equal
    /// uuid) is written once, with no segment twice.
    Combine(rewrite::CombineArgs),
    /// Merge each stream's small adjacent segments into larger ones in
    /// place, reclaiming the space; stops at a schema change.
    Compact(rewrite::CompactArgs),
    /// Copy keeping only some columns of every segment (re-encoded; caller
    /// indexes dropped).
    Project(rewrite::ProjectArgs),
    /// Write an exact, compacted copy of an archive, even one a writer has
    /// open (a plain cp can miss its recent commits).
    VacuumInto(rewrite::VacuumIntoArgs),
    /// Add what is new in many archives to a dataset for DuckDB, Spark,
    /// Trino or DataFusion: Parquet files by stream and day (and a label),
    /// with a manifest and a cursor per source and stream.
    Export(rewrite::ExportArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// One JSON object per row; integers exact.
    Jsonl,
    /// Comma-separated with a header row.
    Csv,
}

/// How a command ended, apart from success.
enum Failure {
    /// verify found problems.
    Unsound,
    /// The file was refused or the command failed.
    Error(String),
    /// The file was refused and the output already says why.
    Refused,
    /// Whoever read the output stopped reading (`| head`): not a failure.
    OutputClosed,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e {
            // Told by the I/O error's kind, never by its words: a file
            // named "Broken pipe.dendro" is no closed pipe.
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe => {
                Failure::OutputClosed
            }
            e => Failure::Error(e.to_string()),
        }
    }
}

/// A failed write to standard output.
fn output_failed(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::OutputClosed
    } else {
        Failure::Error(format!("stdout: {e}"))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Sniff { file } => run_sniff(&file),
        Command::Describe { file, json, all } => run_describe(&file, json, all),
        Command::Verify { file, json } => run_verify(&file, json),
        Command::Cat {
            file,
            source,
            stream,
            format,
            from,
            to,
        } => run_cat(&file, &source, &stream, format, from, to),
        Command::Stats {
            file,
            source,
            stream,
            columns,
            from,
            to,
            json,
        } => stats::run_stats(stats::StatsArgs {
            file: &file,
            source: &source,
            stream: &stream,
            columns: &columns,
            from,
            to,
            json,
        }),
        Command::Serve { files, port, root } => run_serve(files, port, root),
        Command::Publish(args) => replicate::run_publish(args),
        Command::Subscribe(args) => replicate::run_subscribe(args),
        Command::Tls(args) => replicate::run_tls(args),
        Command::Demo {
            out,
            live,
            run_for,
            size,
            hosts,
            seal_every,
            minutes,
            hostile,
        } => run_demo(
            &out, live, run_for, size, hosts, seal_every, minutes, hostile,
        ),
        Command::Copy(args) => rewrite::run_copy(args),
        Command::Combine(args) => rewrite::run_combine(args),
        Command::Compact(args) => rewrite::run_compact(args),
        Command::Project(args) => rewrite::run_project(args),
        Command::VacuumInto(args) => rewrite::run_vacuum_into(args),
        Command::Export(args) => rewrite::run_export(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Unsound) => ExitCode::from(1),
        Err(Failure::Refused) => ExitCode::from(2),
        Err(Failure::OutputClosed) => ExitCode::SUCCESS,
        Err(Failure::Error(message)) => {
            // Messages quote labels, names and SQLite's words about the file.
            eprintln!("dendro: {}", terminal::safe(&message));
            ExitCode::from(2)
        }
    }
}

fn run_sniff(file: &PathBuf) -> Result<(), Failure> {
    let kind = sniff(file)?;
    let line = format!("{}: {kind}", file.display());
    writeln!(std::io::stdout(), "{}", terminal::safe(&line)).map_err(output_failed)?;
    if matches!(kind, FileKind::Archive { .. }) && kind.is_readable() {
        return Ok(());
    }
    // The line above already said why.
    Err(Failure::Refused)
}

fn run_describe(file: &PathBuf, json: bool, all: bool) -> Result<(), Failure> {
    let archive = Archive::open(file)?;
    let description = read::describe(&archive)?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, &description).map_err(|e| {
            if e.is_io() {
                output_failed(e.into())
            } else {
                Failure::Error(e.to_string())
            }
        })?;
        writeln!(out).map_err(output_failed)?;
    } else {
        let limits = if all { Limits::NONE } else { Limits::TERMINAL };
        print_description(&mut out, &file.display().to_string(), &description, limits)
            .map_err(output_failed)?;
    }
    Ok(())
}

/// How much of a catalog a terminal listing shows before it says what it
/// left out: a recording has a handful of sources and streams, a hostile or
/// unusual file can have a hundred thousand.
#[derive(Clone, Copy)]
struct Limits {
    sources: usize,
    streams: usize,
    metadata: usize,
}

impl Limits {
    const TERMINAL: Limits = Limits {
        sources: 100,
        streams: 100,
        metadata: 40,
    };
    const NONE: Limits = Limits {
        sources: usize::MAX,
        streams: usize::MAX,
        metadata: usize::MAX,
    };
}

/// Says how many of `what` a listing left out, if any.
fn omitted(out: &mut impl Write, indent: &str, left: usize, what: &str) -> std::io::Result<()> {
    if left > 0 {
        writeln!(
            out,
            "{indent}… {left} more {what} not shown (--all lists everything, --json prints it)"
        )?;
    }
    Ok(())
}

fn print_description(
    out: &mut impl Write,
    file: &str,
    d: &Description,
    limits: Limits,
) -> std::io::Result<()> {
    let streams: usize = d.sources.iter().map(|s| s.streams.len()).sum();
    writeln!(
        out,
        "{}: {} bytes, schema v{}, {} source(s), {streams} stream(s)",
        terminal::safe(file),
        d.file_bytes,
        d.schema_version,
        d.sources.len()
    )?;
    writeln!(
        out,
        "caller indexes: {}",
        match d.caller_indexes {
            IndexPlace::Table => "in the segment_indexes table (schema 5)",
            IndexPlace::Column => "in the segments.caller_index column (schema 4)",
            IndexPlace::Absent => "none (a schema-4 file from before the caller_index column)",
        }
    )?;
    if let Some((a, b)) = d.span() {
        writeln!(out, "span: {} .. {}", timefmt(a), timefmt(b))?;
    }
    for source in d.sources.iter().take(limits.sources) {
        let labels: Vec<String> = source
            .source
            .labels
            .iter()
            .take(limits.metadata)
            .map(|(k, v)| format!("{}={}", ellipsize(k, 60), ellipsize(v, 60)))
            .collect();
        let more_labels = source.source.labels.len().saturating_sub(labels.len());
        writeln!(
            out,
            "\nsource {} {} [{}{}]{}",
            source.id,
            source
                .source
                .uuid
                .as_deref()
                .map_or("(no uuid)".into(), |u| ellipsize(u, 80)),
            labels.join(", "),
            if more_labels > 0 {
                format!(", … {more_labels} more")
            } else {
                String::new()
            },
            if source.source.complete {
                ""
            } else {
                "  (not finalized: data after the last row may be missing)"
            }
        )?;
        writeln!(
            out,
            "  clock anchor: {}",
            timefmt(source.source.clock_anchor_wall_ns)
        )?;
        for (key, value) in source.source.metadata.iter().take(limits.metadata) {
            writeln!(out, "  {}: {}", ellipsize(key, 60), ellipsize(value, 120))?;
        }
        omitted(
            out,
            "  ",
            source.source.metadata.len().saturating_sub(limits.metadata),
            "metadata key(s)",
        )?;
        for stream in source.streams.iter().take(limits.streams) {
            write!(
                out,
                "  stream {}: {} segment(s), {} sealed row(s), {} bytes",
                ellipsize(&format!("{:?}", stream.name), 80),
                stream.segments.len(),
                stream.sealed_rows,
                stream.sealed_bytes()
            )?;
            if let Some([a, b]) = stream.live_span {
                write!(
                    out,
                    "; live tail {} row(s) {} .. {}",
                    stream.live_rows,
                    timefmt(a),
                    timefmt(b)
                )?;
            }
            if stream.caller_rows > 0 {
                write!(out, "; {} caller row(s)", stream.caller_rows)?;
            }
            writeln!(out)?;
        }
        omitted(
            out,
            "  ",
            source.streams.len().saturating_sub(limits.streams),
            "stream(s)",
        )?;
        for name in source.caller_row_names.iter().take(limits.streams) {
            writeln!(
                out,
                "  caller rows under {} (not a stream)",
                ellipsize(&format!("{name:?}"), 80)
            )?;
        }
        omitted(
            out,
            "  ",
            source.caller_row_names.len().saturating_sub(limits.streams),
            "caller-row name(s)",
        )?;
    }
    omitted(
        out,
        "",
        d.sources.len().saturating_sub(limits.sources),
        "source(s)",
    )?;
    print_documents(out, d, limits)
}

/// The documents section of a description: one line a document, naming
/// its current revision (or its deletion) and how many it has.
fn print_documents(out: &mut impl Write, d: &Description, limits: Limits) -> std::io::Result<()> {
    if d.schema_version < 5 {
        return Ok(());
    }
    writeln!(
        out,
        "
documents: {} current, {} revision(s)",
        d.current_documents(),
        d.document_revisions()
    )?;
    for doc in d.documents.iter().take(limits.streams) {
        let state = if doc.deleted {
            format!("deleted by revision {}", doc.current)
        } else {
            format!("current revision {}", doc.current)
        };
        writeln!(
            out,
            "  {} {}: {state} ({} revision(s))",
            ellipsize(&doc.kind, 80),
            ellipsize(&format!("{:?}", doc.name), 80),
            doc.revisions
        )?;
    }
    omitted(
        out,
        "  ",
        d.documents.len().saturating_sub(limits.streams),
        "document(s)",
    )
}

/// Makes a string from a file safe for a terminal (`terminal::safe`), and
/// cuts a long one.
fn ellipsize(text: &str, max: usize) -> String {
    let escaped = terminal::safe(text);
    match escaped.char_indices().nth(max) {
        Some((cut, _)) => format!("{}… ({} bytes)", &escaped[..cut], text.len()),
        None => escaped.into_owned(),
    }
}

/// Nanoseconds since the epoch as an ISO-8601 UTC instant.
fn timefmt(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let nanos = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = dendro::rewrite::civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{nanos:09}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn run_verify(file: &PathBuf, json: bool) -> Result<(), Failure> {
    let archive = Archive::open(file)?;
    let report = archive.verify()?;
    let name = file.display().to_string();
    let name = terminal::safe(&name);
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string(&report).map_err(|e| Failure::Error(e.to_string()))?;
        writeln!(out, "{text}").map_err(output_failed)?;
    } else if report.sound {
        writeln!(
            out,
            "{name}: sound ({} sources, {} streams, {} segments, {} WAL rows)",
            report.sources, report.streams, report.segments, report.wal_rows
        )
        .map_err(output_failed)?;
    } else {
        writeln!(out, "{name}: {} problem(s)", report.problems.len()).map_err(output_failed)?;
        for p in &report.problems {
            // SQLite's integrity messages name the file's own indexes.
            writeln!(out, "  {:?}: {}", p.kind, terminal::safe(&p.message))
                .map_err(output_failed)?;
        }
    }
    if let (false, Some(note)) = (json, report.note()) {
        writeln!(out, "  note: {}", terminal::safe(&note)).map_err(output_failed)?;
    }
    if report.sound {
        Ok(())
    } else {
        Err(Failure::Unsound)
    }
}

#[allow(clippy::too_many_arguments)] // one per flag of `dendro demo`
fn run_demo(
    out: &PathBuf,
    live: bool,
    run_for: Option<u64>,
    size: Option<u64>,
    hosts: Option<usize>,
    seal_every: Option<u64>,
    minutes: Option<u64>,
    hostile: bool,
) -> Result<(), Failure> {
    use dendro::demo::{write_demo, DemoOptions};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let mut options = match size {
        Some(mb) => DemoOptions::sized(mb.saturating_mul(1_000_000)),
        None => DemoOptions::default(),
    };
    if let Some(hosts) = hosts {
        options.hosts = hosts.max(1);
    }
    if let Some(minutes) = minutes {
        options.duration = std::time::Duration::from_secs(minutes.saturating_mul(60));
    }
    options.hostile = hostile;
    if let Some(seconds) = seal_every {
        options.seal_every = std::time::Duration::from_secs(seconds);
    }
    if live {
        let stop = Arc::new(AtomicBool::new(false));
        if let Some(seconds) = run_for {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_secs(seconds));
                stop.store(true, Ordering::SeqCst);
            });
        }
        eprintln!(
            "dendro: writing {} and then appending once a second; Ctrl-C to stop",
            out.display()
        );
        options.live = Some(stop);
    }
    let report = write_demo(out, options)?;
    println!(
        "{}: {} source(s), {} ticks, {} rows, {} bytes",
        out.display(),
        report.sources,
        report.ticks,
        report.rows,
        report.file_bytes
    );
    Ok(())
}

fn run_serve(given: Vec<PathBuf>, port: u16, root: Option<PathBuf>) -> Result<(), Failure> {
    let root = serve::viewer_root(root).map_err(Failure::Error)?;
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for path in given {
        if path.is_dir() {
            // A folder: every archive in it, found by content; the rest named.
            let found = serve::archives_in(&path).map_err(Failure::Error)?;
            println!(
                "dendro: {}: {} archive(s), {} other file(s) skipped",
                path.display(),
                found.archives.len(),
                found.skipped.len()
            );
            for s in &found.skipped {
                println!("dendro: skipped {}: {}", s.name.escape_debug(), s.reason);
            }
            if found.not_looked_at > 0 {
                println!(
                    "dendro: {} more entries of {} not looked at (at most {} per folder)",
                    found.not_looked_at,
                    path.display(),
                    serve::MAX_ENTRIES
                );
            }
            files.extend(found.archives);
            skipped.extend(found.skipped);
        } else {
            // Refuse what the viewer would refuse, before a browser is involved.
            Archive::open(&path)?;
            files.push(path);
        }
    }
    let site = serve::Site::new(root, files).skipping(skipped);
    serve::serve(site, port).map_err(Failure::Error)
}

fn run_cat(
    file: &PathBuf,
    source: &str,
    stream: &str,
    format: Format,
    from: Option<i64>,
    to: Option<i64>,
) -> Result<(), Failure> {
    let archive = Archive::open(file)?;
    let source = archive.read_snapshot(|s| s.find_source(source))?;
    let (from, to) = (from.unwrap_or(i64::MIN), to.unwrap_or(i64::MAX));
    let range = read::stream_range(&archive, source.id, stream, from, to, None)?;
    if range.segments.is_empty() && matches!(range.tail, Tail::Empty) {
        return Err(Error::NotFound {
            file: archive.file().to_string(),
            what: format!("stream {stream:?} of source {}", source.id),
        }
        .into());
    }
    // On a terminal, values are shown with their escape sequences and bidi
    // controls escaped; piped or redirected, the rows are exact.
    let stdout = std::io::stdout().lock();
    let out: Box<dyn Write> = if std::io::stdout().is_terminal() {
        Box::new(terminal::TerminalWriter::new(stdout))
    } else {
        Box::new(stdout)
    };
    let mut sink = RowSink::new(format, out);
    for record in &range.segments {
        let bytes = read::segment_bytes(&archive, source.id, stream, record.seq)?;
        for batch in read::decode(&archive, record, bytes, None)? {
            sink.write(&batch).map_err(|e| rows_failed(&archive, e))?;
        }
    }
    if let Tail::Materialized(tail) = &range.tail {
        let batches = dendro::segment::decode_segment(tail.bytes.clone(), None).map_err(|e| {
            Failure::Error(format!(
                "{}: the live tail of {stream:?}: {e}",
                archive.file()
            ))
        })?;
        for batch in batches {
            sink.write(&batch).map_err(|e| rows_failed(&archive, e))?;
        }
    }
    sink.finish().map_err(|e| rows_failed(&archive, e))?;
    if let Tail::Unread(span) = range.tail {
        eprintln!(
            "dendro: {} live row(s) of {} from {} to {} were not read: \
             they are committed but need the writer's encoder to decode",
            span.rows,
            terminal::safe(&format!("{stream:?}")),
            timefmt(span.first_ts),
            timefmt(span.last_ts)
        );
    }
    Ok(())
}

/// A failure writing rows: the output closing is told apart by the I/O
/// error's kind.
fn rows_failed(archive: &Archive, e: arrow_schema::ArrowError) -> Failure {
    match e {
        arrow_schema::ArrowError::IoError(_, io) => output_failed(io),
        e => Failure::Error(format!("{}: {e}", archive.file())),
    }
}

/// Writes decoded batches as JSON lines or CSV, generic over any columns.
struct RowSink<W: Write> {
    format: Format,
    out: Option<W>,
    json: Option<arrow_json::LineDelimitedWriter<W>>,
    csv: Option<(arrow_schema::SchemaRef, arrow_csv::Writer<W>)>,
}

impl<W: Write> RowSink<W> {
    fn new(format: Format, out: W) -> Self {
        RowSink {
            format,
            out: Some(out),
            json: None,
            csv: None,
        }
    }

    fn write(&mut self, batch: &arrow_array::RecordBatch) -> Result<(), arrow_schema::ArrowError> {
        match self.format {
            Format::Jsonl => {
                if self.json.is_none() {
                    let out = self.out.take().expect("one output");
                    self.json = Some(
                        arrow_json::WriterBuilder::new()
                            .with_explicit_nulls(true)
                            .build(out),
                    );
                }
                self.json.as_mut().expect("set above").write(batch)
            }
            Format::Csv => {
                // A new header whenever the stream's columns change.
                let fresh = match &self.csv {
                    Some((schema, _)) => schema != &batch.schema(),
                    None => true,
                };
                if fresh {
                    let out = match self.csv.take() {
                        Some((_, writer)) => writer.into_inner(),
                        None => self.out.take().expect("one output"),
                    };
                    let writer = arrow_csv::WriterBuilder::new().with_header(true).build(out);
                    self.csv = Some((batch.schema(), writer));
                }
                self.csv.as_mut().expect("set above").1.write(batch)
            }
        }
    }

    fn finish(mut self) -> Result<(), arrow_schema::ArrowError> {
        if let Some(mut json) = self.json.take() {
            json.finish()?;
            json.into_inner().flush()?;
        }
        if let Some((_, csv)) = self.csv.take() {
            csv.into_inner().flush()?;
        }
        Ok(())
    }
}

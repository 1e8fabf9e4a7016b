//! `dendro stats`: the statistics of a region of a stream, from its raw
//! rows, as the viewer's region panel shows them (one function behind both:
//! [`dendro::read::region::region_stats`]).

use std::io::Write;
use std::path::Path;

use dendro::read::range::decode_for_range;
use dendro::read::region::region_stats;
use dendro::read::window::read_window;
use dendro::{Archive, Error};

use crate::{output_failed, terminal, Failure};

/// What `dendro stats` was asked.
pub struct StatsArgs<'a> {
    pub file: &'a Path,
    pub source: &'a str,
    pub stream: &'a str,
    pub columns: &'a [String],
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub json: bool,
}

pub fn run_stats(args: StatsArgs<'_>) -> Result<(), Failure> {
    let archive = Archive::open(args.file)?;
    let source = archive.read_snapshot(|s| s.find_source(args.source))?;
    let known = archive.read_snapshot(|s| s.streams(source.id))?;
    if !known.iter().any(|s| s == args.stream) {
        return Err(Error::NotFound {
            file: archive.file().to_string(),
            what: format!("stream {:?} of source {}", args.stream, source.id),
        }
        .into());
    }
    let window = (args.from.unwrap_or(i64::MIN), args.to.unwrap_or(i64::MAX));
    let columns = (!args.columns.is_empty()).then_some(args.columns);
    let pieces = read_window(&archive, source.id, args.stream, window, columns, |r, c| {
        decode_for_range(&archive, r, c)
    })?;
    let stats = region_stats(&pieces, args.stream, columns, window)
        .map_err(|e| Failure::Error(format!("{}: {e}", archive.file())))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", stats.to_json()).map_err(output_failed)?;
        return Ok(());
    }
    let safe = |s: &str| terminal::safe(s).into_owned();
    if let Some(empty) = stats.empty_message() {
        writeln!(out, "{}", safe(&empty)).map_err(output_failed)?;
    } else {
        writeln!(
            out,
            "{} rows of {} from {} to {} ns",
            stats.rows,
            safe(&format!("{:?}", stats.stream)),
            stats.from,
            stats.to
        )
        .map_err(output_failed)?;
    }
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.6}"));
    for c in &stats.columns {
        writeln!(
            out,
            "{} ({}): count {} min {} max {} mean {} p50 {} p99 {} last-first {} \
             increase {} mean rate/s {} integral {}",
            safe(&c.name),
            c.kind.as_deref().map_or("unmarked".to_string(), safe),
            c.count,
            num(c.min),
            num(c.max),
            num(c.mean),
            num(c.p50),
            num(c.p99),
            num(c.last_minus_first),
            num(c.increase),
            num(c.mean_rate),
            num(c.integral)
        )
        .map_err(output_failed)?;
    }
    for h in &stats.histograms {
        let q: Vec<String> = h.quantiles.iter().map(|&q| num(q)).collect();
        writeln!(
            out,
            "{} (histogram, {} buckets): rows {} total {} p50 {} p90 {} p99 {} p99.9 {} max bucket {}",
            safe(&h.column.name),
            h.column.buckets(),
            h.rows,
            h.total,
            q[0],
            q[1],
            q[2],
            q[3],
            num(h.max_bucket)
        )
        .map_err(output_failed)?;
    }
    for p in &stats.problems.listed {
        writeln!(out, "problem: {}", safe(&p.to_string())).map_err(output_failed)?;
    }
    if stats.problems.left_out > 0 {
        writeln!(out, "and {} more problems", stats.problems.left_out).map_err(output_failed)?;
    }
    Ok(())
}

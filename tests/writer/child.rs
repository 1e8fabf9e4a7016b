//! A child process for the writer's crash-safety and reader tests: this
//! test binary started again ([`command`]). Each mode does one thing until
//! it is killed or told to stop.
//!
//! - `append PATH SEAL_EVERY CHECKPOINT_MS`: create the archive (or resume
//!   its one source after the newest tick present) and append one tick per
//!   iteration, printing `committed N` once `wal` has returned, `sealing N`
//!   before each seal and `checkpointing N` before each explicit checkpoint.
//! - `sidecar PATH TICKS CHECKPOINT_AT`: append TICKS ticks with no
//!   checkpoint of the writer's own, checkpointing once after tick
//!   CHECKPOINT_AT (negative: never), print `done`, then wait to be killed.
//! - `read PATH STOP_FILE`: read the whole archive in a loop until STOP_FILE
//!   exists, checking every read for a hole, a duplicate or a row gone
//!   missing since the last read; print `read N` after each, then
//!   `ok READS ROWS` or `FAIL why`.
//!
//! Tick N is a row at ts N * 1000 in streams `a` (8 values) and `b` (200
//! values), in the demo encoding.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use dendro::demo::{demo_row, DemoEncoder, DemoValue};
use dendro::write::{TickRows, Writer, WriterOptions};
use dendro::{Archive, Labels, WalRow};

const TS_PER_TICK: i64 = 1000;

fn tick_rows(tick: i64) -> TickRows {
    let values = |n: usize| -> Vec<DemoValue> {
        (0..n)
            .map(|i| DemoValue::Int(tick * 31 + i as i64))
            .collect()
    };
    ["a", "b"]
        .into_iter()
        .zip([8, 200])
        .map(|(stream, n)| {
            (
                stream.to_string(),
                WalRow {
                    ts: tick * TS_PER_TICK,
                    wall_offset: 5,
                    row: demo_row(&values(n)),
                },
            )
        })
        .collect()
}

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The newest tick the archive holds, if any.
fn newest_tick(path: &Path) -> Option<i64> {
    let archive = Archive::open(path).ok()?;
    archive
        .read_snapshot(|s| s.newest_ts(1))
        .ok()
        .flatten()
        .map(|ts| ts / TS_PER_TICK)
}

fn append(path: &Path, seal_every: i64, checkpoint_ms: u64) {
    let options = WriterOptions {
        checkpoint_interval: Duration::from_millis(checkpoint_ms),
        ..Default::default()
    };
    let fresh = std::fs::metadata(path)
        .map(|m| m.len() == 0)
        .unwrap_or(true);
    let (writer, source, mut tick) = if fresh {
        let writer = Writer::create_with(path, Arc::new(DemoEncoder), options).unwrap();
        let source = writer
            .add_source(
                Labels::from([("host".into(), "crash".into())]),
                Labels::new(),
            )
            .unwrap();
        (writer, source, 0)
    } else {
        let next = newest_tick(path).map_or(0, |t| t + 1);
        let writer = Writer::open_with(path, Arc::new(DemoEncoder), options).unwrap();
        let source = match writer.resume_source_at(1, next * TS_PER_TICK - 1) {
            Ok(source) => source,
            // Killed after create and before the source was added.
            Err(dendro::Error::NotFound { .. }) => {
                writer.add_source(Labels::new(), Labels::new()).unwrap()
            }
            Err(e) => panic!("{e}"),
        };
        (writer, source, next)
    };
    loop {
        source.wal(tick_rows(tick)).unwrap();
        say(format!("committed {tick}"));
        if tick % seal_every == seal_every - 1 {
            say(format!("sealing {tick}"));
            source.seal(["a", "b"]).unwrap();
        }
        if tick % 11 == 5 {
            say(format!("checkpointing {tick}"));
            writer.checkpoint().unwrap();
        }
        tick += 1;
    }
}

fn sidecar(path: &Path, ticks: i64, checkpoint_at: i64) {
    let options = WriterOptions {
        checkpoint_interval: Duration::from_secs(3600),
        ..Default::default()
    };
    let writer = Writer::create_with(path, Arc::new(DemoEncoder), options).unwrap();
    let source = writer.add_source(Labels::new(), Labels::new()).unwrap();
    for tick in 0..ticks {
        source.wal(tick_rows(tick)).unwrap();
        if tick == checkpoint_at {
            writer.checkpoint().unwrap();
            say(format!("checkpointed {tick}"));
        }
    }
    say("done".into());
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Every tick of every stream, as one snapshot reads it.
fn read_once(path: &Path) -> Result<Vec<(String, Vec<i64>)>, String> {
    let archive = Archive::open(path).map_err(|e| e.to_string())?;
    let sources = dendro::read::read_archive(&archive, &DemoEncoder).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for source in sources {
        for stream in source.streams {
            let mut ts = Vec::new();
            let mut segments: Vec<dendro::Bytes> =
                stream.sealed.into_iter().map(|(_, bytes)| bytes).collect();
            if let dendro::read::Tail::Materialized(tail) = stream.tail {
                segments.push(tail.bytes.into());
            }
            for bytes in segments {
                for batch in dendro::segment::decode_segment(bytes, Some(&["ts".to_string()]))? {
                    ts.extend(
                        batch
                            .column(0)
                            .as_primitive::<Int64Type>()
                            .values()
                            .iter()
                            .copied(),
                    );
                }
            }
            out.push((stream.name, ts));
        }
    }
    Ok(out)
}

fn read(path: &Path, stop: &Path) {
    let mut reads = 0u64;
    let mut previous: Vec<(String, i64)> = Vec::new();
    loop {
        let last_round = stop.exists();
        match read_once(path) {
            Err(e) if reads == 0 && !last_round => {
                // The writer may not have created the file yet.
                let _ = e;
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(e) => {
                say(format!("FAIL read {reads}: {e}"));
                std::process::exit(1);
            }
            Ok(streams) => {
                reads += 1;
                say(format!("read {reads}"));
                for (name, ts) in &streams {
                    for (i, t) in ts.iter().enumerate() {
                        if *t != i as i64 * TS_PER_TICK {
                            say(format!(
                                "FAIL read {reads}: stream {name} has {t} at position {i} (a hole or a duplicate)"
                            ));
                            std::process::exit(1);
                        }
                    }
                    let last = ts.last().copied().unwrap_or(-1);
                    if let Some((_, before)) = previous.iter().find(|(n, _)| n == name) {
                        if last < *before {
                            say(format!("FAIL read {reads}: stream {name} went back from {before} to {last}"));
                            std::process::exit(1);
                        }
                    }
                }
                for (name, _) in &previous {
                    if !streams.iter().any(|(n, _)| n == name) {
                        say(format!("FAIL read {reads}: stream {name} disappeared"));
                        std::process::exit(1);
                    }
                }
                previous = streams
                    .iter()
                    .map(|(n, ts)| (n.clone(), ts.last().copied().unwrap_or(-1)))
                    .collect();
                if last_round {
                    let rows: usize = streams.iter().map(|(_, ts)| ts.len()).sum();
                    say(format!("ok {reads} {rows}"));
                    return;
                }
            }
        }
    }
}

/// Starts this test binary again as a child in `mode` with `args`
/// (`common::child_command`); it runs only [`child_process`].
pub fn command(mode: &str, args: &[&str]) -> std::process::Command {
    crate::common::child_command(mode, args)
}

/// The child's body, run only by [`command`]: ignored in a normal run.
#[test]
#[ignore = "a child process of the crash and live-reader tests; they start it"]
fn child_process() {
    let line = crate::common::child_args();
    let args: Vec<&str> = line.split('\n').collect();
    let arg = |i: usize| args.get(i).copied().unwrap_or_default();
    let number = |i: usize| arg(i).parse::<i64>().expect("a number");
    match arg(0) {
        "append" => append(Path::new(arg(1)), number(2), number(3) as u64),
        "sidecar" => sidecar(Path::new(arg(1)), number(2), number(3)),
        "read" => read(Path::new(arg(1)), Path::new(arg(2))),
        other => panic!("unknown child mode {other:?}; see the module's docs"),
    }
}

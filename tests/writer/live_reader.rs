//! Readers beside the writer: a separate process reads the whole archive in
//! a loop while this one appends, seals, prunes and checkpoints, and never
//! sees a hole at a seal seam, a duplicate, or a row go missing between
//! two of its reads. The writer keeps going until the reader has read
//! the archive many times, however slow the machine: no wall-clock budget.
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use dendro::demo::{demo_row, DemoEncoder, DemoValue};
use dendro::write::{Writer, WriterOptions};
use dendro::{ClockOffset, Labels, WalRow};

#[test]
fn a_reader_in_another_process_never_sees_a_hole_a_duplicate_or_a_loss() {
    let (dir, path) = fresh("live.dendro");
    let stop = dir.path().join("stop");
    let options = WriterOptions {
        checkpoint_interval: Duration::from_millis(50),
        prune_every: 1,
        ..Default::default()
    };
    let w = Writer::create_with(&path, Arc::new(DemoEncoder), options).unwrap();
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    let mut reader =
        crate::child::command("read", &[path.to_str().unwrap(), stop.to_str().unwrap()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
    let (lines_tx, lines) = channel();
    let out = reader.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    // Reads that overlapped the writer, and enough ticks that seals, prunes
    // and checkpoints happened under them.
    const READS: u64 = 10;
    const TICKS: i64 = 200;
    let mut reads = 0u64;
    let mut tick = 0i64;
    while reads < READS || tick < TICKS {
        while let Ok(line) = lines.try_recv() {
            assert!(!line.starts_with("FAIL"), "the reader failed: {line}");
            if line.starts_with("read ") {
                reads += 1;
            }
        }
        let rows = ["a", "b"]
            .into_iter()
            .map(|stream| {
                (
                    stream.to_string(),
                    WalRow {
                        ts: tick * 1000,
                        wall_offset: 0,
                        row: demo_row(&[DemoValue::Int(tick); 60]),
                    },
                )
            })
            .collect();
        s.wal(rows).unwrap();
        if tick % 7 == 6 {
            s.seal(["a"]).unwrap();
        }
        if tick % 13 == 12 {
            s.seal(["b"]).unwrap();
        }
        tick += 1;
    }
    s.finalize(ClockOffset {
        ts: (tick - 1) * 1000,
        offset_ns: 0,
    })
    .unwrap();
    w.join().unwrap();
    std::fs::write(&stop, b"").unwrap();
    // A guard against a hung child, not a measurement.
    let last = loop {
        match lines.recv_timeout(Duration::from_secs(120)) {
            Ok(line) if line.starts_with("ok ") || line.starts_with("FAIL") => break line,
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => panic!("the reader hung"),
            Err(RecvTimeoutError::Disconnected) => panic!("the reader ended without a verdict"),
        }
    };
    assert!(
        reader.wait().unwrap().success(),
        "the reader failed: {last}"
    );
    let fields: Vec<u64> = last
        .strip_prefix("ok ")
        .unwrap_or_else(|| panic!("{last}"))
        .split(' ')
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(fields[0] > READS, "{} reads", fields[0]);
    assert_eq!(fields[1], 2 * tick as u64, "the last read saw every row");
    assert_sound(&path);
}

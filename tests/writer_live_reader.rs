//! Readers beside the writer: a separate process reads the whole archive in
//! a loop while this one appends, seals, prunes and checkpoints, and never
//! sees a hole at a seal seam, a duplicate, or a row go missing between
//! two of its reads.
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

mod common;
mod writer_support;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dendro::write::demo::{demo_row, DemoEncoder, DemoValue};
use dendro::write::{Writer, WriterOptions};
use dendro::{ClockOffset, Labels, WalRow};
use writer_support::*;

const CHILD: &str = env!("CARGO_BIN_EXE_crash-child");

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
    let reader = Command::new(CHILD)
        .args(["read", path.to_str().unwrap(), stop.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut tick = 0i64;
    while started.elapsed() < Duration::from_millis(2500) {
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
    let out = reader.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the reader failed: {text}");
    let fields: Vec<u64> = text
        .trim()
        .strip_prefix("ok ")
        .unwrap_or_else(|| panic!("{text}"))
        .split(' ')
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(
        fields[0] >= 10,
        "only {} reads overlapped the writer",
        fields[0]
    );
    assert_eq!(fields[1], 2 * tick as u64, "the last read saw every row");
    assert_sound(&path);
}

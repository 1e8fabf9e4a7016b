//! Helpers shared by the writer's test modules: rows in the fixtures'
//! encoding, reading a stream back row by row, encoders that stall or fail
//! on purpose, and a logger that keeps warnings for assertions.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use dendro::write::{TickRow, TickRows, Writer, WriterOptions};
use dendro::{Archive, Segment, SegmentEncoder, WalRow};

pub use crate::common::logs::logs;
use crate::common::{fixture_row, FixtureEncoder};

/// A row of stream `stream` at `ts`, in the fixtures' encoding.
pub fn row(stream: &str, ts: i64) -> TickRow {
    (
        stream.to_string(),
        WalRow {
            ts,
            wall_offset: 7,
            row: fixture_row(ts.wrapping_mul(3), &format!("r{ts}")),
        },
    )
}

/// One row per `(stream, ts)` pair.
pub fn tick(rows: &[(&str, i64)]) -> TickRows {
    rows.iter().map(|(s, ts)| row(s, *ts)).collect()
}

/// A fresh archive path in a fresh folder.
pub fn fresh(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    (dir, path)
}

/// A writer with the fixture encoder and `options`.
pub fn writer_with(
    path: &Path,
    encoder: impl SegmentEncoder + 'static,
    options: WriterOptions,
) -> Writer {
    Writer::create_with(path, Arc::new(encoder), options).unwrap()
}

/// A writer with the fixture encoder and default options.
pub fn writer(path: &Path) -> Writer {
    Writer::create(path, FixtureEncoder::default()).unwrap()
}

/// Every row timestamp of a stream as a reader sees it in one snapshot:
/// the sealed segments' `ts` columns in seq order, then the live rows.
pub fn stream_ts(archive: &Archive, source_id: i64, stream: &str) -> Vec<i64> {
    archive
        .read_snapshot(|s| {
            let mut out = Vec::new();
            for seg in s.segments(source_id, stream)? {
                let bytes = s.segment_bytes(source_id, stream, seg.seq)?;
                for batch in
                    dendro::segment::decode_segment(bytes, Some(&["ts".to_string()])).unwrap()
                {
                    out.extend(
                        batch
                            .column(0)
                            .as_primitive::<Int64Type>()
                            .values()
                            .iter()
                            .copied(),
                    );
                }
            }
            out.extend(
                s.live_wal_rows(source_id, stream)?
                    .into_iter()
                    .map(|r| r.ts),
            );
            Ok(out)
        })
        .unwrap()
}

/// The segments of a stream as `(seq, first_ts, last_ts, rows)`.
pub fn segments(archive: &Archive, source_id: i64, stream: &str) -> Vec<(i64, i64, i64, i64)> {
    archive
        .read_snapshot(|s| s.segments(source_id, stream))
        .unwrap()
        .into_iter()
        .map(|s| (s.seq, s.first_ts, s.last_ts, s.rows))
        .collect()
}

/// Opens `path` read-only and asserts `verify` finds nothing.
pub fn assert_sound(path: &Path) -> Archive {
    let archive = Archive::open(path).unwrap();
    let report = archive.verify().unwrap();
    assert!(report.sound, "verify: {:?}", report.problems);
    archive
}

/// A latch the test opens to let a stalled encoder go on.
#[derive(Default)]
pub struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    /// Set once the encoder is waiting at the gate.
    pub waiting: Mutex<bool>,
    arrived: Condvar,
}

impl Gate {
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    fn pass(&self) {
        *self.waiting.lock().unwrap() = true;
        self.arrived.notify_all();
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    /// Waits until the encoder has reached the gate.
    pub fn wait_arrival(&self) {
        let mut waiting = self.waiting.lock().unwrap();
        while !*waiting {
            waiting = self.arrived.wait(waiting).unwrap();
        }
    }
}

/// The fixture encoder, stalling at a gate whenever it encodes `stream`.
pub struct GatedEncoder {
    pub stream: String,
    pub gate: Arc<Gate>,
}

impl SegmentEncoder for GatedEncoder {
    fn encode(&self, stream: &str, rows: &[WalRow]) -> Result<Option<Segment>, String> {
        if stream == self.stream {
            self.gate.pass();
        }
        FixtureEncoder::default().encode(stream, rows)
    }

    fn version(&self) -> Option<String> {
        FixtureEncoder::default().version()
    }
}

/// The fixture encoder, failing (with an error, or a panic) on `stream`.
pub struct FailingEncoder {
    pub stream: String,
    pub panic: bool,
}

impl SegmentEncoder for FailingEncoder {
    fn encode(&self, stream: &str, rows: &[WalRow]) -> Result<Option<Segment>, String> {
        if stream == self.stream {
            if self.panic {
                panic!("this encoder cannot encode {stream}");
            }
            return Err(format!("this encoder cannot encode {stream}"));
        }
        FixtureEncoder::default().encode(stream, rows)
    }

    fn version(&self) -> Option<String> {
        FixtureEncoder::default().version()
    }
}

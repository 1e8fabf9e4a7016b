//! Helpers shared by the native integration tests: the fixtures' row
//! encoding as a `SegmentEncoder`, and access to the shared fixtures.
#![allow(dead_code)]

#[cfg(feature = "write")]
pub mod logs;
pub mod manifest;
pub mod splitmix;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use dendro::segment::encode_batch;
use dendro::{Segment, SegmentEncoder, WalRow};

/// Records that a test could not do what it is for on this machine, where
/// `scripts/test.sh` counts and prints it: a skip is said out loud, never
/// passed off as a pass.
pub fn skip(test: &str, why: &str) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{test}.txt")), format!("{test}: {why}\n")).unwrap();
    eprintln!("SKIPPED {test}: {why}");
}

/// The version string every fixture source carries in `metadata.encoder`.
pub const FIXTURE_ENCODER_VERSION: &str = "fixturegen-i64le-utf8-v1";

/// The fixtures' row encoding: a row is an `i64` little-endian value then a
/// UTF-8 label; a segment has non-null columns `ts`, `value`, `label`.
/// With `caller_index`, each segment carries `labels:` and its distinct
/// labels, sorted byte-wise, joined by newlines (as the `g_*` fixture does).
#[derive(Debug, Clone, Default)]
pub struct FixtureEncoder {
    pub caller_index: bool,
}

/// Builds one fixture row payload.
pub fn fixture_row(value: i64, label: &str) -> Vec<u8> {
    let mut row = value.to_le_bytes().to_vec();
    row.extend_from_slice(label.as_bytes());
    row
}

/// Splits a fixture row payload back into value and label.
pub fn parse_fixture_row(row: &[u8]) -> Result<(i64, String), String> {
    if row.len() < 8 {
        return Err(format!(
            "row of {} bytes is shorter than its value",
            row.len()
        ));
    }
    let (value, label) = row.split_at(8);
    let label = std::str::from_utf8(label).map_err(|e| format!("label is not UTF-8: {e}"))?;
    Ok((
        i64::from_le_bytes(value.try_into().unwrap()),
        label.to_string(),
    ))
}

impl SegmentEncoder for FixtureEncoder {
    fn encode(&self, _stream: &str, rows: &[WalRow]) -> Result<Option<Segment>, String> {
        if rows.is_empty() {
            return Ok(None);
        }
        let mut values = Vec::with_capacity(rows.len());
        let mut labels = Vec::with_capacity(rows.len());
        for row in rows {
            let (value, label) = parse_fixture_row(&row.row)?;
            values.push(value);
            labels.push(label);
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Int64, false),
            Field::new("value", DataType::Int64, false),
            Field::new("label", DataType::Utf8, false),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.ts))),
            Arc::new(Int64Array::from(values)),
            Arc::new(StringArray::from(labels.clone())),
        ];
        let batch = RecordBatch::try_new(schema, columns).map_err(|e| e.to_string())?;
        let caller_index = self.caller_index.then(|| {
            let mut distinct = labels;
            distinct.sort();
            distinct.dedup();
            let mut index = b"labels:".to_vec();
            for label in distinct {
                index.push(b'\n');
                index.extend_from_slice(label.as_bytes());
            }
            index
        });
        Ok(Some(Segment {
            bytes: encode_batch(&batch)?,
            rows: rows.len() as i64,
            first_ts: rows[0].ts,
            last_ts: rows[rows.len() - 1].ts,
            caller_index,
        }))
    }

    fn version(&self) -> Option<String> {
        Some(FIXTURE_ENCODER_VERSION.to_string())
    }
}

/// The shared fixtures folder (read-only; copy before opening).
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures")
}

/// Every fixture file (not manifests) with its parsed manifest: the
/// schema-4 set the original's 0.3.4 wrote.
pub fn fixtures() -> Vec<(PathBuf, serde_json::Value)> {
    fixtures_in(&fixtures_dir())
}

/// The schema-5 set the original's 0.6.1 wrote (`schema5/`).
pub fn schema5_fixtures() -> Vec<(PathBuf, serde_json::Value)> {
    fixtures_in(&fixtures_dir().join("schema5"))
}

/// Every fixture a reader must read as its manifest says: both sets.
pub fn read_fixtures() -> Vec<(PathBuf, serde_json::Value)> {
    let mut all = fixtures();
    all.extend(schema5_fixtures());
    all
}

/// The fixtures of one folder whose manifests have the refcheck shape.
fn fixtures_in(dir: &Path) -> Vec<(PathBuf, serde_json::Value)> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{} is readable: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".manifest.json"))
        .collect();
    entries.sort();
    for manifest_path in entries {
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
        let Some(file) = manifest["file"].as_str() else {
            continue;
        };
        if manifest["shape"] != "dendro-refcheck/1" {
            continue;
        }
        out.push((dir.join(file), manifest));
    }
    out
}

/// Copies a fixture into a fresh temporary folder, so that opening it never
/// touches the shared copy (SQLite creates sidecars beside what it opens).
pub fn copy_fixture(path: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join(path.file_name().unwrap());
    std::fs::copy(path, &dest).unwrap();
    let mut perms = std::fs::metadata(&dest).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&dest, perms).unwrap();
    (dir, dest)
}

/// Rows of the fixture encoding at the given timestamps.
pub fn rows_at(ts: &[i64]) -> Vec<WalRow> {
    ts.iter()
        .map(|&ts| WalRow {
            ts,
            wall_offset: 7,
            row: fixture_row(ts.wrapping_mul(3), &format!("r{ts}")),
        })
        .collect()
}

/// A small archive assembled through `ArchiveMut`: one source with stream
/// `sealed` (two segments), `mixed` (a segment plus live rows, one of them
/// shadowed by the segment) and `live` (WAL rows only).
#[cfg(feature = "write")]
pub fn sample_archive(path: &Path) -> i64 {
    let enc = FixtureEncoder::default();
    let mut archive = dendro::ArchiveMut::create(path).unwrap();
    let tx = archive.transaction().unwrap();
    let mut meta = dendro::Labels::new();
    meta.insert("encoder".into(), FIXTURE_ENCODER_VERSION.into());
    let labels = [("host".to_string(), "sample".to_string())].into();
    let id = tx.insert_source(&labels, &meta, 1_000).unwrap();
    let seal = |stream: &str, seq: i64, ts: &[i64]| {
        let seg = dendro::segment::materialize("t", &enc, stream, &rows_at(ts))
            .unwrap()
            .unwrap();
        tx.insert_segment(id, stream, seq, &seg).unwrap();
    };
    seal("sealed", 0, &[-20, -10, 0]);
    seal("sealed", 1, &[10, 20, 30]);
    seal("mixed", 0, &[100, 200]);
    tx.insert_wal_rows(id, "mixed", &rows_at(&[200, 300, 400]))
        .unwrap();
    tx.insert_wal_rows(id, "live", &rows_at(&[0, 5])).unwrap();
    tx.commit().unwrap();
    id
}

/// The environment variable carrying a child's arguments, one per line.
const CHILD_ARGS_VAR: &str = "DENDRO_TEST_CHILD_ARGS";

/// Starts the running test binary again as a child process in `mode` with
/// `args`: it runs only the binary's ignored test `child::child_process`,
/// which reads them back with [`child_args`]. A crash test kills it; no
/// separate helper binary is built or installed.
pub fn child_command(mode: &str, args: &[&str]) -> std::process::Command {
    let mut line = vec![mode];
    line.extend_from_slice(args);
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args([
        "--ignored",
        "--exact",
        "child::child_process",
        "--nocapture",
        "--quiet",
    ])
    .env(CHILD_ARGS_VAR, line.join("\n"));
    cmd
}

/// In a child started by [`child_command`]: its mode and arguments, one
/// string with a line each.
pub fn child_args() -> String {
    std::env::var(CHILD_ARGS_VAR).unwrap_or_else(|_| {
        panic!("run through common::child_command, which passes {CHILD_ARGS_VAR}")
    })
}

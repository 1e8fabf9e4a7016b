//! Reading the same content in schema 4 and in schema 5 (issue 34): a
//! schema-5 file keeps its caller indexes in the `WITHOUT ROWID` table
//! `segment_indexes` instead of the `segments.caller_index` column, so a
//! listing flags indexed segments from another table, and a caller index
//! is read from another b-tree. `cargo bench --bench schema5`; prints
//! medians and the schema-5/schema-4 ratio, one JSON line per figure on
//! stdout and a table on stderr.
//!
//! The content: one source, 8 streams of 500 segments of 8 KiB, each
//! segment with a caller index, written by this crate once as schema 4 and
//! once as schema 5 (the catalog 0.6.1 lays down, `CreateSchema::V5`: the
//! indexes in their own table). Both files are
//! vacuumed, so neither carries free pages the other lacks. Twice: with
//! indexes of 200 bytes (kept in their cells) and of 4 KiB (spilling to
//! overflow pages in both layouts). Each figure alternates the two files
//! rep by rep, so load on the shared machine falls on both.
//!
//! `--reps N` changes the repetitions (default 15), `--quick` runs fewer
//! and smaller.

mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use dendro::container::CreateSchema;
use dendro::read;
use dendro::{Archive, ArchiveMut, Labels, Segment, SegmentEncoder, WalRow};

use common::{figure, load_average, median, ms};

/// What the bench's archives need of an encoder: nothing (no live rows).
struct NoTail;

impl SegmentEncoder for NoTail {
    fn encode(&self, _stream: &str, _rows: &[WalRow]) -> Result<Option<Segment>, String> {
        Ok(None)
    }
}

/// Writes an archive of `schema`: `streams` x `segments` segments of
/// `payload` bytes, each with an index of `index` bytes.
fn build(
    path: &Path,
    schema: CreateSchema,
    streams: usize,
    segments: usize,
    payload: usize,
    index: usize,
) {
    let mut archive = ArchiveMut::create_with_schema(path, schema).unwrap();
    let tx = archive.transaction().unwrap();
    let source = tx
        .insert_source(
            &Labels::from([("host".to_string(), "bench".to_string())]),
            &Labels::new(),
            0,
        )
        .unwrap();
    for k in 0..streams {
        for q in 0..segments {
            let mut bytes = vec![(q % 251) as u8; payload];
            bytes[..4].copy_from_slice(b"PAR1");
            let end = payload - 4;
            bytes[end..].copy_from_slice(b"PAR1");
            let segment = Segment {
                bytes,
                rows: 100,
                first_ts: q as i64 * 1_000,
                last_ts: q as i64 * 1_000 + 999,
                caller_index: Some(vec![(k + q) as u8; index]),
            };
            tx.insert_segment(source, &format!("stream-{k}"), q as i64, &segment)
                .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// The same content written as schema 4 at `four` and as schema 5 beside
/// it, both vacuumed.
fn pair(dir: &Path, name: &str, index: usize, segments: usize) -> (PathBuf, PathBuf) {
    let four = dir.join(format!("{name}-v4.dendro"));
    let five = dir.join(format!("{name}-v5.dendro"));
    for (path, schema) in [(&four, CreateSchema::V4), (&five, CreateSchema::V5)] {
        build(path, schema, 8, segments, 8 << 10, index);
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch("VACUUM;").unwrap();
    }
    (four, five)
}

/// Runs `f` on `a` then on `b`, `reps` times; the two medians (ms).
fn alternating<T>(reps: usize, a: &Path, b: &Path, mut f: impl FnMut(&Path) -> T) -> (f64, f64) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        for (path, times) in [(a, &mut ta), (b, &mut tb)] {
            let started = Instant::now();
            let out = std::hint::black_box(f(path));
            times.push(ms(started));
            drop(out);
        }
    }
    (median(ta), median(tb))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 5 } else { 15 });
    let segments = if quick { 100 } else { 500 };
    // Under target/, as the brief asks of generated archives; removed at the end.
    std::fs::create_dir_all("target").unwrap();
    let dir = tempfile::tempdir_in("target").unwrap();
    eprintln!(
        "schema 4 against schema 5, {reps} reps each, load {}",
        load_average()
    );
    for (name, index) in [("small-index", 200), ("large-index", 4 << 10)] {
        let (four, five) = pair(dir.path(), name, index, segments);
        for (path, layout) in [(&four, 4), (&five, 5)] {
            let archive = Archive::open(path).unwrap();
            assert_eq!(archive.layout().version, layout);
            let d = read::describe(&archive).unwrap();
            let flagged: usize = d.sources[0]
                .streams
                .iter()
                .map(|s| s.segments.iter().filter(|g| g.caller_index).count())
                .sum();
            assert_eq!(flagged, 8 * segments, "every segment flagged in v{layout}");
        }
        eprintln!(
            "{name}: {:.1} MB (v4), {:.1} MB (v5)",
            std::fs::metadata(&four).unwrap().len() as f64 / 1e6,
            std::fs::metadata(&five).unwrap().len() as f64 / 1e6
        );
        let report = |what: &str, (a, b): (f64, f64)| {
            figure(&format!("{name}/{what}_ms_v4"), a, "ms");
            figure(&format!("{name}/{what}_ms_v5"), b, "ms");
            figure(&format!("{name}/{what}_ratio_v5_over_v4"), b / a, "x");
        };
        report(
            "open_describe",
            alternating(reps, &four, &five, |p| {
                let archive = Archive::open(p).unwrap();
                (read::describe(&archive).unwrap(), archive)
            }),
        );
        let (a4, a5) = (Archive::open(&four).unwrap(), Archive::open(&five).unwrap());
        let pick = |p: &Path| if p == four { &a4 } else { &a5 };
        report(
            "describe",
            alternating(reps, &four, &five, |p| read::describe(pick(p)).unwrap()),
        );
        report(
            "read_archive",
            alternating(reps, &four, &five, |p| {
                read::read_archive(pick(p), &NoTail).unwrap()
            }),
        );
        // A window of a tenth of one stream: its segments and their bytes.
        let (from, to) = (0, segments as i64 * 100);
        report(
            "range_read",
            alternating(reps, &four, &five, |p| {
                let a = pick(p);
                let range = read::stream_range(a, 1, "stream-3", from, to, None).unwrap();
                let bytes: Vec<Vec<u8>> = range
                    .segments
                    .iter()
                    .map(|r| read::segment_bytes(a, 1, "stream-3", r.seq).unwrap())
                    .collect();
                bytes
            }),
        );
        report(
            "caller_indexes",
            alternating(reps, &four, &five, |p| {
                (0..8)
                    .map(|k| read::caller_indexes(pick(p), 1, &format!("stream-{k}")).unwrap())
                    .collect::<Vec<_>>()
            }),
        );
    }
}

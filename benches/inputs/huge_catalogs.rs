//! Writes the archives the viewer's tests open to show that huge or odd
//! catalogs stay responsive (`www/tests/huge.test.mjs`), into a folder
//! (default `target/huge-catalogs`), each unless it is there already:
//!
//! - `segments100k.dendro`: one source, one stream of 100,000 segments;
//! - `streams10k.dendro`: one source with 10,000 streams;
//! - `sources1k.dendro`: 1,000 sources, a stream each;
//! - `labels1m.dendro`: a source whose labels and metadata hold
//!   megabyte strings (a 1 MB value, a 1 MB key, 5,000 small labels),
//!   and a stream with a 100,000-character name.
//!
//! One file per shape: together they would be a gigabyte. Every segment
//! is a real Parquet file (tiny: four rows of `ts` and `value`) whose
//! catalog entry agrees with its rows, so each archive verifies as sound.
//!
//! `cargo run --example huge_catalogs -- [DIR]`
//!
//! With `--time` (`cargo run --release --example huge_catalogs -- --time
//! [DIR]`) it then times, natively, what the viewer's first plot of the
//! 100,000 segments asks the engine: the whole span at 1,000 points,
//! answered exactly from every footer and within the viewer's segment
//! budget (`RangeReader::bounded`), each from cold footers.

use std::path::{Path, PathBuf};

use dendro::{ArchiveMut, Labels, Segment, Transaction};

mod support;
use support::{make, ts_value_segment, START_NS};

/// Rows one second apart, four to a segment.
const ROW_NS: i64 = 1_000_000_000;
const SEGMENT_ROWS: i64 = 4;

/// Four rows from `first_ts` on, a second apart: a wave that tells
/// neighbouring segments apart on a plot.
fn tiny_segment(first_ts: i64, phase: i64) -> Segment {
    let values = (0..SEGMENT_ROWS)
        .map(|i| 50.0 + 40.0 * (((phase * SEGMENT_ROWS + i) as f64) / 997.0).sin())
        .collect();
    ts_value_segment(first_ts, ROW_NS, values)
}

fn labels(pairs: &[(&str, String)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Runs `fill` in one transaction of a new archive at `path`.
fn archive(path: &Path, fill: impl FnOnce(&Transaction<'_>)) {
    let mut archive = ArchiveMut::create(path).expect("create the archive");
    let tx = archive.transaction().expect("begin");
    fill(&tx);
    tx.commit().expect("commit");
}

fn segments_100k(path: &Path) {
    archive(path, |tx| {
        let source = tx
            .insert_source(
                &labels(&[("host", "many-segments".into())]),
                &Labels::new(),
                START_NS,
            )
            .expect("insert the source");
        for seq in 0..100_000i64 {
            let first = START_NS + seq * SEGMENT_ROWS * ROW_NS;
            tx.insert_segment(source, "metrics", seq, &tiny_segment(first, seq))
                .expect("insert a segment");
        }
        tx.set_complete(source, true).expect("complete");
    });
}

/// Stream `i` of the wide source: names sort in creation order, and a
/// few words recur so a filter has something to find.
fn stream_name(i: usize) -> String {
    const KINDS: [&str; 5] = ["cpu", "disk", "mem", "net", "temp"];
    format!("{}.s{i:05}", KINDS[i % KINDS.len()])
}

fn streams_10k(path: &Path) {
    archive(path, |tx| {
        let source = tx
            .insert_source(
                &labels(&[("host", "many-streams".into())]),
                &Labels::new(),
                START_NS,
            )
            .expect("insert the source");
        for i in 0..10_000usize {
            // Staggered a minute apart, so the lanes are not all alike.
            let first = START_NS + (i as i64 % 600) * 60 * ROW_NS;
            tx.insert_segment(source, &stream_name(i), 0, &tiny_segment(first, i as i64))
                .expect("insert a segment");
        }
        tx.set_complete(source, true).expect("complete");
    });
}

fn sources_1k(path: &Path) {
    archive(path, |tx| {
        for i in 0..1_000usize {
            let l = labels(&[
                ("host", format!("host-{i:04}")),
                ("rack", format!("rack-{}", i / 40)),
            ]);
            let source = tx
                .insert_source(&l, &Labels::new(), START_NS)
                .expect("insert a source");
            let first = START_NS + (i as i64 % 100) * 30 * ROW_NS;
            tx.insert_segment(source, "cpu", 0, &tiny_segment(first, i as i64))
                .expect("insert a segment");
            tx.set_complete(source, i % 7 != 0).expect("complete");
        }
    });
}

/// A string of `n` characters, readable where it starts and ends.
fn long_text(what: &str, n: usize) -> String {
    let mut s = format!("{what} begins here; ");
    let filler = "0123456789abcdefghijklmnopqrstuvwxyz ";
    while s.len() < n - 20 {
        s.push_str(filler);
    }
    s.truncate(n - 20);
    s.push_str(" …and ends here.");
    while s.chars().count() < n {
        s.push('.');
    }
    s
}

fn labels_1m(path: &Path) {
    archive(path, |tx| {
        let mut l = labels(&[
            ("host", "big-labels".into()),
            ("note", long_text("a 1 MB label value", 1 << 20)),
        ]);
        l.insert(long_text("a 1 MB label key", 1 << 20), "its value".into());
        for i in 0..5_000 {
            l.insert(format!("k{i:04}"), format!("v{i}"));
        }
        let m = labels(&[("description", long_text("a 1 MB metadata value", 1 << 20))]);
        let source = tx
            .insert_source(&l, &m, START_NS)
            .expect("insert the source");
        for seq in 0..20i64 {
            let first = START_NS + seq * SEGMENT_ROWS * ROW_NS;
            tx.insert_segment(source, "metrics", seq, &tiny_segment(first, seq))
                .expect("insert a segment");
        }
        let long_name = long_text("a 100,000-character stream name", 100_000);
        tx.insert_segment(source, &long_name, 0, &tiny_segment(START_NS, 7))
            .expect("insert a segment");
        tx.set_complete(source, true).expect("complete");
    });
}

/// Times listing the 100,000 segments' catalog rows and describe, then the
/// whole-span envelope, exact and within the viewer's budget, alternating,
/// each with no footer read before it; prints each run's time and what it
/// read.
fn time_first_plot(path: &Path) {
    use dendro::read::range::{
        decode_for_range, read_range_bounded, RangeRequest, VIEWER_SEGMENT_BUDGET,
    };
    use dendro::Archive;
    let bytes = std::fs::read(path).expect("read the archive");
    let archive = Archive::from_bytes("segments100k.dendro", &bytes).expect("open");
    let request = RangeRequest {
        source_id: 1,
        stream: "metrics",
        from: i64::MIN,
        to: i64::MAX,
        columns: None,
        max_points: Some(1_000),
        rates: None,
    };
    // What listing the catalog costs before any envelope: the rows alone
    // (`all_segments`), and describe (the rows filed per stream).
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let rows = archive
            .read_snapshot(|s| s.all_segments())
            .expect("list")
            .len();
        let listed = t.elapsed().as_secs_f64() * 1e3;
        let t = std::time::Instant::now();
        dendro::read::describe(&archive).expect("describe");
        let described = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "listing {rows} rows: {listed:.0} ms ({:.2} us a row); describe {described:.0} ms",
            listed * 1e3 / rows as f64
        );
    }
    for budget in [
        None,
        Some(VIEWER_SEGMENT_BUDGET),
        Some(VIEWER_SEGMENT_BUDGET),
        None,
    ] {
        let t = std::time::Instant::now();
        let stats = |r: &dendro::SegmentRecord| {
            Ok(dendro::read::stats::segment_stats(&archive, r)?.map(std::sync::Arc::new))
        };
        let decode =
            |r: &dendro::SegmentRecord, c: Option<&[String]>| decode_for_range(&archive, r, c);
        let e = read_range_bounded(&archive, &request, budget, stats, decode).expect("envelope");
        println!(
            "budget {budget:?}: {:.0} ms, {} footers answered, {} decoded, {} left out, {} points",
            t.elapsed().as_secs_f64() * 1e3,
            e.segments_from_stats,
            e.segments_read,
            e.segments_left_out,
            e.ts.len()
        );
    }
}

fn main() {
    let timing = std::env::args().any(|a| a == "--time");
    let dir = std::env::args()
        .skip(1)
        .find(|a| a != "--time")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/huge-catalogs"));
    std::fs::create_dir_all(&dir).expect("create the output folder");
    make("huge catalogs", &dir, "segments100k.dendro", segments_100k);
    make("huge catalogs", &dir, "streams10k.dendro", streams_10k);
    make("huge catalogs", &dir, "sources1k.dendro", sources_1k);
    make("huge catalogs", &dir, "labels1m.dendro", labels_1m);
    if timing {
        time_first_plot(&dir.join("segments100k.dendro"));
    }
}

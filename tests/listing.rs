//! A listing read once answers what the catalog answers: every stream and
//! every window of it, `describe`, and the range reader's envelope (the
//! browser engine lists an image once and reads every window from that;
//! `src/wasm/mod.rs`). Over the shared fixtures in the reader build, and
//! over written archives of many streams with awkward names and random
//! windows where the writer is built.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::sync::Arc;

use common::manifest::expected_refusal;
use dendro::catalog::Listing;
use dendro::read::envelope::Envelope;
use dendro::read::range::{decode_for_range, RangeReader, RangeRequest};
use dendro::read::stats::segment_stats;
use dendro::{Archive, SegmentRecord};

/// Windows worth asking of a stream: everything, nothing (`from > to`),
/// and each segment's edges and one past them, alone and paired.
fn windows(segments: &[SegmentRecord]) -> Vec<(i64, i64)> {
    let mut edges = vec![i64::MIN, i64::MAX];
    for s in segments {
        for t in [s.first_ts, s.last_ts] {
            edges.extend([t.saturating_sub(1), t, t.saturating_add(1)]);
        }
    }
    edges.sort_unstable();
    edges.dedup();
    let mut out = vec![(i64::MIN, i64::MAX), (1, 0)];
    let step = (edges.len() / 5).max(1);
    for (i, &from) in edges.iter().enumerate().step_by(step) {
        for &to in edges[i..].iter().step_by(step) {
            out.push((from, to));
        }
    }
    out
}

/// A request for every column of `stream` over `window`, no rates.
fn every_column(
    source_id: i64,
    stream: &str,
    (from, to): (i64, i64),
    max_points: Option<usize>,
) -> RangeRequest<'_> {
    RangeRequest {
        source_id,
        stream,
        from,
        to,
        columns: None,
        max_points,
        rates: None,
    }
}

/// The envelope of a window read with the segments listed by the catalog
/// (as every native caller reads) and from `listing`, footers and decodes
/// alike, and what each reader chose to read.
fn both_ways(
    archive: &Archive,
    listing: &Listing,
    request: &RangeRequest<'_>,
    budget: Option<usize>,
) -> [(Vec<SegmentRecord>, Envelope); 2] {
    [None, Some(listing)].map(|listing| {
        let stats = |r: &SegmentRecord| Ok(segment_stats(archive, r)?.map(Arc::new));
        let reader = RangeReader::listed(archive, request, budget, listing, stats).unwrap();
        let read = reader.segments().to_vec();
        let decode = |r: &SegmentRecord, c: Option<&[String]>| decode_for_range(archive, r, c);
        (read, reader.decode_all(request.columns, decode).unwrap())
    })
}

/// Checks every stream of `archive` against `listing`; returns how many
/// windows were compared.
fn check_archive(archive: &Archive, what: &str, budgets: &[Option<usize>]) -> usize {
    let listing = archive.read_snapshot(Listing::read).unwrap();
    let fresh = dendro::read::describe(archive).unwrap();
    let shared = dendro::read::describe_with(archive, Some(&listing)).unwrap();
    assert_eq!(fresh, shared, "{what}: describe from the listing");
    let mut compared = 0;
    for source in &fresh.sources {
        for stream in &source.streams {
            let name = stream.name.as_str();
            let listed = listing.stream(source.id, name);
            let asked = archive
                .read_snapshot(|s| s.segments(source.id, name))
                .unwrap();
            assert_eq!(listed, &asked[..], "{what}: stream {name:?}");
            for (from, to) in windows(listed) {
                let by_sql = archive
                    .read_snapshot(|s| s.segments_overlapping(source.id, name, from, to))
                    .unwrap();
                let here = format!("{what}: stream {name:?} [{from}, {to}]");
                assert_eq!(
                    listing.overlapping(source.id, name, from, to),
                    by_sql,
                    "{here}"
                );
                for max_points in [None, Some(3), Some(50)] {
                    for &budget in budgets {
                        let request = every_column(source.id, name, (from, to), max_points);
                        let [sql, shared] = both_ways(archive, &listing, &request, budget);
                        // Debug text: a NaN in a band is the same NaN.
                        assert_eq!(
                            format!("{sql:?}"),
                            format!("{shared:?}"),
                            "{here} {max_points:?} budget {budget:?}"
                        );
                        compared += 1;
                    }
                }
            }
        }
    }
    // A stream or source the archive lacks lists nothing, as the query does.
    assert!(listing.stream(i64::MAX, "no such stream").is_empty());
    assert!(listing.overlapping(1, "", i64::MIN, i64::MAX).is_empty());
    compared
}

#[test]
fn a_listing_answers_every_fixture_as_the_catalog_does() {
    let (mut archives, mut compared) = (0, 0);
    for (path, manifest) in common::fixtures() {
        if expected_refusal(&manifest).is_some() {
            continue;
        }
        let (_dir, copy) = common::copy_fixture(&path);
        let archive = Archive::open(&copy).unwrap();
        compared += check_archive(&archive, &path.display().to_string(), &[None, Some(1)]);
        archives += 1;
    }
    assert!(archives >= 6, "only {archives} sound fixtures found");
    assert!(compared > 60, "only {compared} windows compared");
}

#[test]
fn records_out_of_order_are_put_in_the_catalogs_order() {
    let record = |source_id: i64, stream: &str, seq: i64| SegmentRecord {
        source_id,
        stream: stream.to_string(),
        seq,
        rows: 1,
        first_ts: seq,
        last_ts: seq,
        bytes: 1,
        caller_index: false,
    };
    // Byte order of UTF-8, as SQLite's BINARY collation: "Z" < "a" <
    // "a\0" < "é"; source ids as numbers.
    let listing = Listing::from_records(vec![
        record(2, "a", 0),
        record(-1, "é", 3),
        record(-1, "a\0", 1),
        record(-1, "a", 2),
        record(-1, "Z", 0),
        record(-1, "a", 1),
    ]);
    let keys: Vec<_> = listing
        .all()
        .iter()
        .map(|r| (r.source_id, r.stream.as_str(), r.seq))
        .collect();
    assert_eq!(
        keys,
        [
            (-1, "Z", 0),
            (-1, "a", 1),
            (-1, "a", 2),
            (-1, "a\0", 1),
            (-1, "é", 3),
            (2, "a", 0)
        ]
    );
    assert_eq!(listing.stream(-1, "a").len(), 2);
    assert_eq!(listing.stream(-1, "a\0").len(), 1);
    assert_eq!(listing.stream(2, "a").len(), 1);
    assert!(listing.stream(0, "a").is_empty());
    assert_eq!(listing.overlapping(-1, "a", 2, 2)[0].seq, 2);
}

/// Archives of several sources and streams (names that sort awkwardly),
/// many small segments each with gaps, written here.
#[cfg(feature = "write")]
mod written {
    use super::*;
    use dendro::{ArchiveMut, Labels, Segment};

    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    const STREAMS: [&str; 5] = ["a", "a\u{0}b", "Z", "é", "cpu.total"];

    fn segment(rng: &mut Rng, start: i64, rows: usize) -> (Segment, i64) {
        use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
        let mut t = start;
        let ts: Vec<i64> = (0..rows)
            .map(|k| {
                t += if k == 0 { 0 } else { 1 + rng.below(4) as i64 };
                t
            })
            .collect();
        let v: Vec<f64> = (0..rows).map(|_| rng.below(1000) as f64 - 500.0).collect();
        let last = *ts.last().unwrap();
        let batch = RecordBatch::try_from_iter([
            ("ts", Arc::new(Int64Array::from(ts)) as ArrayRef),
            ("v", Arc::new(Float64Array::from(v)) as ArrayRef),
        ])
        .unwrap();
        let segment = Segment {
            bytes: dendro::segment::encode_batch(&batch).unwrap(),
            rows: rows as i64,
            first_ts: start,
            last_ts: last,
            caller_index: None,
        };
        (segment, last)
    }

    #[test]
    fn a_listing_answers_written_archives_as_the_catalog_does() {
        let mut rng = Rng(0x5eed_1157);
        for round in 0..2 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("listing.dendro");
            {
                let mut archive = ArchiveMut::create(&path).unwrap();
                let tx = archive.transaction().unwrap();
                for _ in 0..2 {
                    let id = tx.insert_source(&Labels::new(), &Labels::new(), 0).unwrap();
                    for stream in STREAMS.iter().take(2 + rng.below(4) as usize) {
                        let mut start = rng.below(100) as i64 - 50;
                        // Seqs with gaps, inserted in no particular order.
                        let mut written = Vec::new();
                        for k in 0..20 + rng.below(40) as i64 {
                            let seq = k * 2 + rng.below(2) as i64;
                            let rows = 1 + rng.below(9) as usize;
                            let (seg, last) = segment(&mut rng, start, rows);
                            start = last + 1 + rng.below(3) as i64 * rng.below(20) as i64;
                            written.push((seq, seg));
                        }
                        while !written.is_empty() {
                            let (seq, seg) =
                                written.swap_remove(rng.below(written.len() as u64) as usize);
                            tx.insert_segment(id, stream, seq, &seg).unwrap();
                        }
                    }
                }
                tx.commit().unwrap();
            }
            let archive = Archive::open(&path).unwrap();
            let compared = check_archive(&archive, &format!("round {round}"), &[None, Some(2)]);
            assert!(compared > 200, "round {round}: only {compared} windows");
        }
    }
}

/// A reader made only to plan (the browser engine's footer and tail
/// prefetch, `RangeReader::planned`) spans the live tail from the index
/// instead of decoding it, and must still choose the segments and ask for
/// the footers a reader that decodes it does: over the demo's typed live
/// tails, windows that end inside the tail, before it and around it.
#[cfg(feature = "write")]
#[test]
fn a_planned_reader_picks_what_a_reading_one_reads_without_the_tail() {
    use std::time::Duration;

    use dendro::demo::{write_demo, DemoOptions};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("planned.dendro");
    let options = DemoOptions {
        hosts: 1,
        duration: Duration::from_secs(900),
        seal_every: Duration::from_secs(120),
        ..DemoOptions::default()
    };
    write_demo(&path, options).unwrap();
    let archive = Archive::open(&path).unwrap();
    let listing = archive.read_snapshot(Listing::read).unwrap();
    let described = dendro::read::describe(&archive).unwrap();
    let mut with_tail = 0;
    for source in &described.sources {
        for stream in &source.streams {
            let name = stream.name.as_str();
            let live = archive
                .read_snapshot(|s| s.live_wal_rows(source.id, name))
                .unwrap();
            let (Some(first), Some(last)) = (live.first(), live.last()) else {
                continue;
            };
            with_tail += 1;
            let rowids = archive
                .read_snapshot(|s| s.live_wal_rowids_between(source.id, name, i64::MIN, i64::MAX))
                .unwrap();
            assert_eq!(rowids.len(), live.len(), "{name}: a rowid per live row");
            let mut windows = windows(listing.stream(source.id, name));
            windows.extend([
                (first.ts, last.ts),
                (i64::MIN, first.ts),
                (last.ts - 10, i64::MAX),
                (first.ts + 1, last.ts - 1),
            ]);
            for (from, to) in windows {
                for max_points in [None, Some(3), Some(50)] {
                    let request = every_column(source.id, name, (from, to), max_points);
                    let [read, planned] = [false, true].map(|plan| {
                        let mut asked = Vec::new();
                        let stats = |r: &SegmentRecord| {
                            asked.push(r.seq);
                            Ok(segment_stats(&archive, r)?.map(Arc::new))
                        };
                        let reader = if plan {
                            RangeReader::planned(&archive, &request, Some(4), Some(&listing), stats)
                        } else {
                            RangeReader::listed(&archive, &request, Some(4), Some(&listing), stats)
                        };
                        let segments = reader.unwrap().segments().to_vec();
                        (segments, asked)
                    });
                    assert_eq!(read, planned, "{name} [{from}, {to}] {max_points:?}");
                }
            }
        }
    }
    assert!(with_tail >= 3, "only {with_tail} streams with a live tail");
}

//! Histogram columns end to end, and the exact answers over a window:
//! region statistics and heatmaps checked against an independent
//! computation over `dendro cat --format jsonl` (the rows as the CLI
//! prints them, summarized by the plain loops below, written apart from
//! `src/read/`), a segment with a bad row reported by stream, segment and
//! row, and the original implementation reading an archive that holds
//! histogram columns.
//!
//! Float tolerance: a relative 1e-9 (sums are taken in another order).

#![cfg(all(feature = "cli", not(target_arch = "wasm32")))]

use std::path::{Path, PathBuf};
use std::process::Command;

use dendro::read::distribution::{empty_heatmap, heatmap, histogram_of, MAX_CELLS, MAX_PIXELS};
use dendro::read::range::decode_for_range;
use dendro::read::region::region_stats;
use dendro::read::window::{read_window, read_window_led, Piece};
use dendro::typed::histogram::Cumulation;
use dendro::typed::{self, Column, ColumnType, RowEncoder, Schema, TypedEncoder, Value};
use dendro::write::Writer;
use dendro::{Archive, Labels, WalRow};
use serde_json::Value as Json;

const T0: i64 = 1_700_000_000_000_000_000;
const ROWS: usize = 600;
const BOUNDS: [f64; 6] = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0];

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("g", ColumnType::F64).gauge(),
        Column::new("c", ColumnType::U64).counter(),
        Column::histogram("h", BOUNDS.to_vec(), Cumulation::Counter).unit("ms"),
        Column::histogram("d", BOUNDS.to_vec(), Cumulation::Delta),
    ])
}

/// A small deterministic generator.
struct Noise(u64);
impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Writes the test archive: stream `s` (every column kind, resets at row
/// 350, sealed at rows 200 and 400, the rest live) and stream `bad`, whose
/// sealed segment has a histogram going back at row 5 of its second segment.
fn write(dir: &Path) -> PathBuf {
    let path = dir.join("hist.dendro");
    let encoder = TypedEncoder::new();
    let schema = schema();
    let id = encoder.register(&schema).unwrap();
    let mut metadata = Labels::new();
    for stream in ["s", "bad"] {
        let listed = typed::with_schema(&metadata, stream, &schema).unwrap();
        metadata.insert(typed::SCHEMAS_KEY.into(), listed);
    }
    let writer = Writer::create(&path, encoder).unwrap();
    let source = writer.add_source(Labels::new(), metadata).unwrap();
    let mut rows = RowEncoder::new(id, schema.clone()).unwrap();
    let mut noise = Noise(0x1234_5678_9abc_def1);
    let (mut c, mut h) = (0u64, vec![0u64; 5]);
    let mut bad_h = vec![0u64; 5];
    for i in 0..ROWS {
        // Uneven spacing: 1 s plus up to 0.3 s.
        let ts = T0 + i as i64 * 1_000_000_000 + (noise.next() % 300_000_000) as i64;
        if i == 350 {
            (c, h) = (0, vec![0; 5]);
        }
        c += noise.next() % 1000;
        let d: Vec<u64> = (0..5)
            .map(|b| noise.next() % (10 + 40 * (b == 4 && (300..310).contains(&i)) as u64))
            .collect();
        for (t, x) in h.iter_mut().zip(&d) {
            *t += x;
        }
        let gauge = if i % 97 == 13 {
            Value::Null
        } else {
            Value::F64((i as f64 / 17.0).sin() * 10.0)
        };
        let values = [
            gauge,
            Value::U64(c),
            Value::Histogram(h.clone()),
            Value::Histogram(d.clone()),
        ];
        let row = rows.encode(&values).unwrap();
        for (t, x) in bad_h.iter_mut().zip(&d) {
            *t += x;
        }
        if i == 205 {
            // Bucket 0 goes back while the total grows: no reset. The
            // writer's RowEncoder refuses this; the stateless encode_row
            // lets it through, as another writer might.
            bad_h[0] -= 50;
            bad_h[1] += 100;
        }
        let bad_values = [
            Value::Null,
            Value::Null,
            Value::Histogram(bad_h.clone()),
            Value::Null,
        ];
        let bad = typed::encode_row(id, &schema, &bad_values).unwrap();
        let wal = |row| WalRow {
            ts,
            wall_offset: 0,
            row,
        };
        source
            .wal(vec![("s".into(), wal(row)), ("bad".into(), wal(bad))])
            .unwrap();
        if i == 199 || i == 399 {
            source.seal(["s", "bad"]).unwrap();
        }
    }
    drop(source);
    writer.join().unwrap();
    path
}

fn dendro(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dendro"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "dendro {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The rows of stream `s` as `dendro cat --format jsonl` prints them.
fn cat(path: &Path) -> Vec<Json> {
    let text = dendro(&[
        "cat",
        path.to_str().unwrap(),
        "--source",
        "1",
        "--stream",
        "s",
        "--format",
        "jsonl",
    ]);
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn pieces(
    archive: &Archive,
    stream: &str,
    window: (i64, i64),
    columns: Option<&[String]>,
) -> Vec<Piece> {
    read_window(archive, 1, stream, window, columns, |r, c| {
        decode_for_range(archive, r, c)
    })
    .unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Equal JSON, numbers within the tolerance (serde_json's parse of a
/// float may differ from the printed one in the last place).
fn same_json(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => close(x.as_f64().unwrap(), y.as_f64().unwrap()),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

fn assert_close(what: &str, ours: Option<f64>, theirs: Option<f64>) {
    match (ours, theirs) {
        (Some(a), Some(b)) => assert!(close(a, b), "{what}: {a} against {b}"),
        (a, b) => assert_eq!(a, b, "{what}"),
    }
}

/// Nearest rank, independently: sort all, index ⌈q·n⌉ − 1.
fn rank(values: &[f64], q: f64) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    (n > 0).then(|| v[((q * n as f64).ceil() as usize).max(1) - 1])
}

/// The upper edge where the running count first reaches ⌈q·total⌉.
fn bucket_quantile(counts: &[u64], q: f64) -> Option<f64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let want = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    counts
        .iter()
        .position(|&c| {
            seen += c;
            seen >= want
        })
        .map(|i| BOUNDS[i + 1])
}

fn ts_of(row: &Json) -> i64 {
    row["ts"].as_i64().unwrap()
}

fn counts_of(row: &Json, column: &str) -> Option<Vec<u64>> {
    row[column]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_u64().unwrap()).collect())
}

/// Interval counts of the histogram `column` per row in the window, by the
/// documented rule, written out again: (ts, counts).
fn intervals(rows: &[Json], column: &str, window: (i64, i64)) -> Vec<(i64, Vec<u64>)> {
    let cumulative = column == "h";
    let mut out = Vec::new();
    let mut before: Option<Vec<u64>> = None;
    for row in rows
        .iter()
        .filter(|r| (window.0..=window.1).contains(&ts_of(r)))
    {
        let Some(now) = counts_of(row, column) else {
            continue;
        };
        if !cumulative {
            out.push((ts_of(row), now));
            continue;
        }
        if let Some(b) = &before {
            let fell = now.iter().sum::<u64>() < b.iter().sum::<u64>();
            let delta = if fell {
                now.clone()
            } else {
                now.iter().zip(b).map(|(n, b)| n - b).collect()
            };
            out.push((ts_of(row), delta));
        }
        before = Some(now);
    }
    out
}

#[test]
fn region_statistics_match_an_independent_computation_over_cat() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let rows = cat(&path);
    assert_eq!(rows.len(), ROWS);
    let archive = Archive::open(&path).unwrap();
    // The whole stream, a window across a seal and the reset, one inside
    // the live tail.
    let windows = [
        (i64::MIN, i64::MAX),
        (ts_of(&rows[150]), ts_of(&rows[380])),
        (ts_of(&rows[420]) + 1, ts_of(&rows[590])),
    ];
    for window in windows {
        let stats = region_stats(&pieces(&archive, "s", window, None), "s", None, window).unwrap();
        let inside: Vec<&Json> = rows
            .iter()
            .filter(|r| (window.0..=window.1).contains(&ts_of(r)))
            .collect();
        assert_eq!(stats.rows, inside.len() as u64);
        // The gauge: values as they are, trapezoid integral.
        let g: Vec<(i64, f64)> = inside
            .iter()
            .filter_map(|r| r["g"].as_f64().map(|v| (ts_of(r), v)))
            .collect();
        let values: Vec<f64> = g.iter().map(|p| p.1).collect();
        let gs = &stats.columns.iter().find(|c| c.name == "g").unwrap();
        assert_eq!(gs.count, g.len() as u64);
        assert_close("g min", gs.min, values.iter().copied().reduce(f64::min));
        assert_close("g max", gs.max, values.iter().copied().reduce(f64::max));
        assert_close(
            "g mean",
            gs.mean,
            Some(values.iter().sum::<f64>() / values.len() as f64),
        );
        assert_close("g p50", gs.p50, rank(&values, 0.5));
        assert_close("g p99", gs.p99, rank(&values, 0.99));
        assert_close(
            "g last-first",
            gs.last_minus_first,
            Some(values[values.len() - 1] - values[0]),
        );
        let trapezoid: f64 = g
            .windows(2)
            .map(|w| (w[0].1 + w[1].1) / 2.0 * (w[1].0 - w[0].0) as f64 / 1e9)
            .sum();
        assert_close("g integral", gs.integral, Some(trapezoid));
        // The counter: rates with the reset counted as the new value.
        let c: Vec<(i64, f64)> = inside
            .iter()
            .map(|r| (ts_of(r), r["c"].as_u64().unwrap() as f64))
            .collect();
        let increases: Vec<f64> = c
            .windows(2)
            .map(|w| {
                if w[1].1 >= w[0].1 {
                    w[1].1 - w[0].1
                } else {
                    w[1].1
                }
            })
            .collect();
        let rates: Vec<f64> = c
            .windows(2)
            .zip(&increases)
            .map(|(w, inc)| inc / ((w[1].0 - w[0].0) as f64 / 1e9))
            .collect();
        let increase: f64 = increases.iter().sum();
        let cs = stats.columns.iter().find(|c| c.name == "c").unwrap();
        assert_eq!(cs.kind.as_deref(), Some("counter"));
        assert_close(
            "c mean",
            cs.mean,
            Some(rates.iter().sum::<f64>() / rates.len() as f64),
        );
        assert_close("c p99", cs.p99, rank(&rates, 0.99));
        assert_close("c max", cs.max, rates.iter().copied().reduce(f64::max));
        assert_close("c increase", cs.increase, Some(increase));
        assert_close("c integral", cs.integral, Some(increase));
        let span = (c[c.len() - 1].0 - c[0].0) as f64 / 1e9;
        assert_close("c mean rate", cs.mean_rate, Some(increase / span));
        assert_close(
            "c last-first",
            cs.last_minus_first,
            Some(c[c.len() - 1].1 - c[0].1),
        );
        // The histograms: summed interval counts and their quantiles.
        for name in ["h", "d"] {
            let mut summed = vec![0u64; 5];
            let each = intervals(&rows, name, window);
            for (_, counts) in &each {
                summed.iter_mut().zip(counts).for_each(|(s, c)| *s += c);
            }
            let hs = stats
                .histograms
                .iter()
                .find(|h| h.column.name == name)
                .unwrap();
            assert_eq!(hs.counts, summed, "{name} over {window:?}");
            assert_eq!(hs.rows, each.len() as u64);
            assert_eq!(hs.total, summed.iter().sum::<u64>());
            for (q, (ours, p)) in hs.quantiles.iter().zip([0.5, 0.9, 0.99, 0.999]).enumerate() {
                assert_eq!(*ours, bucket_quantile(&summed, p), "{name} quantile {q}");
            }
            let top = summed.iter().rposition(|&c| c > 0).map(|i| BOUNDS[i + 1]);
            assert_eq!(hs.max_bucket, top);
        }
        assert!(stats.problems.listed.is_empty());
        // `dendro stats --json` is the same function's answer.
        let (from, to) = (window.0.to_string(), window.1.to_string());
        let cli: Json = serde_json::from_str(&dendro(&[
            "stats",
            path.to_str().unwrap(),
            "--source",
            "1",
            "--stream",
            "s",
            "--from",
            &from,
            "--to",
            &to,
            "--json",
        ]))
        .unwrap();
        assert!(
            same_json(&cli, &stats.to_json()),
            "{cli} against {}",
            stats.to_json()
        );
    }
}

#[test]
fn a_region_with_no_rows_says_so_and_unknown_columns_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let archive = Archive::open(&path).unwrap();
    let window = (T0 - 10_000, T0 - 1);
    let stats = region_stats(&pieces(&archive, "s", window, None), "s", None, window).unwrap();
    assert!(stats.is_empty());
    assert!(stats.empty_message().unwrap().contains("no rows"));
    assert!(stats
        .columns
        .iter()
        .all(|c| c.count == 0 && c.mean.is_none()));
    let text = dendro(&[
        "stats",
        path.to_str().unwrap(),
        "--source",
        "1",
        "--stream",
        "s",
        "--to",
        &(T0 - 1).to_string(),
    ]);
    assert!(text.contains("no rows"), "{text}");
    let wanted = ["nope".to_string()];
    let all = (i64::MIN, i64::MAX);
    let err = region_stats(&pieces(&archive, "s", all, None), "s", Some(&wanted), all).unwrap_err();
    assert!(err.contains("\"nope\""), "{err}");
}

#[test]
fn heatmap_pixels_hold_exactly_the_counts_of_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let rows = cat(&path);
    let archive = Archive::open(&path).unwrap();
    let window = (ts_of(&rows[0]), ts_of(&rows[ROWS - 1]));
    for column in ["h", "d"] {
        let each = intervals(&rows, column, window);
        let all: u64 = each.iter().map(|(_, c)| c.iter().sum::<u64>()).sum();
        let wanted = [column.to_string()];
        let pieces = pieces(&archive, "s", window, Some(&wanted));
        for pixels in [1usize, 7, 100, 1000, 5000] {
            let map = heatmap(&pieces, "s", column, window, pixels).unwrap();
            assert_eq!(map.counts.len(), pixels * 5);
            // Zooming out never loses a count: everything is somewhere.
            assert_eq!(map.totals.iter().sum::<u64>(), all, "{column} at {pixels}");
            let span = (window.1 - window.0) as i128 + 1;
            let mut expected = vec![0u64; pixels * 5];
            let mut present = vec![false; pixels];
            for (ts, counts) in &each {
                let p = ((*ts - window.0) as i128 * pixels as i128 / span) as usize;
                present[p] = true;
                for (b, c) in counts.iter().enumerate() {
                    expected[p * 5 + b] += c;
                }
            }
            assert_eq!(map.counts, expected, "{column} at {pixels}");
            assert_eq!(map.present, present, "absent is told from zero");
            for p in 0..pixels {
                let cell = &expected[p * 5..p * 5 + 5];
                for (line, q) in map.lines.iter().zip([0.5, 0.9, 0.99, 0.999]) {
                    let want = bucket_quantile(cell, q).unwrap_or(f64::NAN);
                    assert!(
                        line[p] == want || (line[p].is_nan() && want.is_nan()),
                        "{column} p{q} at {p}"
                    );
                }
            }
        }
        // The burst at rows 300..310 sits in bucket 4 and is kept whole
        // however far out one zooms.
        let one = heatmap(&pieces, "s", column, window, 1).unwrap();
        assert!(one.counts[4] > 0);
        assert_eq!(one.max[0], 16.0);
    }
    // More pixel columns than rows: some are absent, not zero.
    let wanted = ["d".to_string()];
    let fine = heatmap(
        &pieces(&archive, "s", window, Some(&wanted)),
        "s",
        "d",
        window,
        8000,
    )
    .unwrap();
    assert!(fine.present.iter().any(|p| !p));
}

/// The window's pieces with the row before it ([`read_window_led`]), as
/// the engine reads a heatmap's.
fn led_pieces(archive: &Archive, window: (i64, i64), column: &str) -> Vec<Piece> {
    let wanted = [column.to_string()];
    read_window_led(archive, 1, "s", window, Some(&wanted), |r, c| {
        decode_for_range(archive, r, c)
    })
    .unwrap()
}

#[test]
fn a_heatmap_window_starting_at_a_row_counts_that_row_in_its_first_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let rows = cat(&path);
    let archive = Archive::open(&path).unwrap();
    // The row before the window in the same segment (250), in the segment
    // before, which does not overlap the window (200: segment 2's first
    // row), in the live tail (450), and in the last sealed segment while
    // the window starts in the tail (400); 350 is the reset.
    for first in [250usize, 200, 450, 400, 350] {
        let window = (ts_of(&rows[first]), ts_of(&rows[first + 30]));
        // Three pixel columns of ten rows' width: column 0 holds the
        // window's first row.
        let pixels = 3;
        let map = heatmap(&led_pieces(&archive, window, "h"), "s", "h", window, pixels).unwrap();
        let span = (window.1 - window.0) as i128 + 1;
        let mut expected = vec![0u64; pixels * 5];
        let mut counted = 0;
        // The running totals' increments are the per-interval column's
        // counts, row for row (the reset at 350 starts again from zero).
        for row in &rows[first..=first + 30] {
            let p = ((ts_of(row) - window.0) as i128 * pixels as i128 / span) as usize;
            for (b, c) in counts_of(row, "d").unwrap().iter().enumerate() {
                expected[p * 5 + b] += c;
            }
            counted += 1;
        }
        assert_eq!(
            &map.counts[..5],
            &expected[..5],
            "column 0 from row {first}"
        );
        assert_eq!(map.counts, expected, "from row {first}");
        assert_eq!(
            map.rows, counted,
            "every row of the window counted, from row {first}"
        );
        // What the per-interval column says of the same window.
        let d = heatmap(&led_pieces(&archive, window, "d"), "s", "d", window, pixels).unwrap();
        assert_eq!(map.counts, d.counts, "from row {first}");
    }
    // The stream's first row has nothing before it: a baseline still.
    let window = (ts_of(&rows[0]), ts_of(&rows[30]));
    let map = heatmap(&led_pieces(&archive, window, "h"), "s", "h", window, 1).unwrap();
    assert_eq!(map.rows, 30);
}

#[test]
fn a_window_between_rows_or_before_the_stream_is_empty_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let rows = cat(&path);
    let archive = Archive::open(&path).unwrap();
    // Between two rows of a segment: the segment overlaps, no row lies in it.
    let between = (ts_of(&rows[250]) + 1, ts_of(&rows[251]) - 1);
    let map = heatmap(&led_pieces(&archive, between, "h"), "s", "h", between, 10).unwrap();
    assert_eq!(map.rows, 0);
    assert!(map.present.iter().all(|p| !p));
    assert!(map.lines.iter().flatten().all(|v| v.is_nan()));
    // Before the stream: no piece at all, so the column's buckets come
    // from its schema (as the engine takes them from the first footer).
    let before = (T0 - 10_000, T0 - 1);
    assert!(led_pieces(&archive, before, "h").is_empty());
    let all = led_pieces(&archive, (i64::MIN, i64::MAX), "h");
    let schema = all[0].batches[0].schema();
    let spec = || {
        histogram_of(schema.field_with_name("h").unwrap())
            .unwrap()
            .unwrap()
    };
    let map = empty_heatmap(spec(), before, 10).unwrap();
    assert_eq!((map.rows, map.counts.len()), (0, 50));
    assert!(map.present.iter().all(|p| !p) && map.totals.iter().all(|&t| t == 0));
    assert!(empty_heatmap(spec(), (5, 4), 10).is_err(), "still checked");
}

#[test]
fn hostile_heatmap_requests_are_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let archive = Archive::open(&path).unwrap();
    let all = (i64::MIN, i64::MAX);
    let p = pieces(&archive, "s", all, None);
    for pixels in [0, MAX_PIXELS + 1, usize::MAX] {
        let err = heatmap(&p, "s", "h", all, pixels).unwrap_err();
        assert!(err.contains("pixel columns"), "{err}");
    }
    assert!(heatmap(&p, "s", "h", (5, 4), 10)
        .unwrap_err()
        .contains("before it starts"));
    let err = heatmap(&p, "s", "g", all, 10).unwrap_err();
    assert!(err.contains("no histogram column \"g\""), "{err}");
    // 1024 buckets in every one of 8192 pixel columns is over the cap;
    // half as many pixel columns is not.
    let wide = Schema::new(vec![Column::histogram(
        "w",
        (0..=1024).map(f64::from).collect(),
        Cumulation::Delta,
    )]);
    let encoder = TypedEncoder::new();
    let id = encoder.register(&wide).unwrap();
    let rows: Vec<WalRow> = (0..2)
        .map(|i| WalRow {
            ts: i,
            wall_offset: 0,
            row: typed::encode_row(id, &wide, &[Value::Histogram(vec![1; 1024])]).unwrap(),
        })
        .collect();
    let batch = encoder.decode_rows(&rows).unwrap();
    let wide = [Piece {
        segment: Some(0),
        batches: std::sync::Arc::new(vec![batch]),
    }];
    let err = heatmap(&wide, "w", "w", (0, 1), MAX_PIXELS).unwrap_err();
    assert!(err.contains(&MAX_CELLS.to_string()), "{err}");
    assert_eq!(MAX_PIXELS / 2 * 1024, MAX_CELLS);
    let map = heatmap(&wide, "w", "w", (0, 1), MAX_PIXELS / 2).unwrap();
    assert_eq!(map.totals.iter().sum::<u64>(), 2048);
}

#[test]
fn a_histogram_going_back_is_reported_by_stream_segment_and_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let archive = Archive::open(&path).unwrap();
    let all = (i64::MIN, i64::MAX);
    let p = pieces(&archive, "bad", all, None);
    let stats = region_stats(&p, "bad", None, all).unwrap();
    let problems = &stats.problems.listed;
    assert_eq!(problems.len(), 1, "{problems:?}");
    let (seq, row) = (problems[0].segment, problems[0].row);
    let second: i64 = archive
        .read_snapshot(|s| s.segments_overlapping(1, "bad", i64::MIN, i64::MAX))
        .unwrap()[1]
        .seq;
    assert_eq!(
        (seq, row),
        (Some(second), 5),
        "row 205 is row 5 of the second segment"
    );
    assert!(
        problems[0].message.contains("bucket 0"),
        "{}",
        problems[0].message
    );
    assert!(problems[0].to_string().contains("stream \"bad\""));
    // The rest still counts: every other row's interval.
    let h = &stats.histograms[0];
    assert_eq!(
        h.rows,
        (ROWS - 2) as u64,
        "all but the baseline and the bad row"
    );
    let map = heatmap(&p, "bad", "h", all, 50).unwrap();
    assert_eq!(map.problems.listed, stats.problems.listed);
    assert_eq!(map.rows, h.rows);
    let text = dendro(&[
        "stats",
        path.to_str().unwrap(),
        "--source",
        "1",
        "--stream",
        "bad",
    ]);
    assert!(text.contains(&format!("segment {second}, row 5")), "{text}");
}

#[test]
fn the_original_reads_an_archive_holding_histogram_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let original = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/original-061");
    for command in ["describe", "verify"] {
        let out = Command::new(&original)
            .args([command, "--compact", path.to_str().unwrap()])
            .output()
            .expect("../shared/bench/original-061 runs");
        assert!(
            out.status.success(),
            "original-061 {command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Json = serde_json::from_slice(&out.stdout).unwrap();
        if command == "describe" {
            assert_eq!(report["refcheck_ok"], true, "{report}");
            let streams = report["sources"][0]["streams"].as_array().unwrap();
            let s = streams.iter().find(|s| s["name"] == "s").unwrap();
            assert_eq!(s["total_rows"], ROWS);
            for segment in s["segments"].as_array().unwrap() {
                assert_eq!(segment["decoded"]["ok"], true, "{segment}");
            }
        } else {
            assert_eq!(report["sound"], true, "{report}");
        }
    }
}

/// The archive the wasm engine's tests read (`tests/web/histograms.dendro`,
/// included in `tests/web/cases.rs`): this file's `write`, committed, since
/// the wasm build has no writer. `DENDRO_BLESS=1` writes it again; without,
/// the test checks that it still reads as `write` makes it.
#[test]
fn the_wasm_tests_archive_is_what_write_makes() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web/histograms.dendro");
    if std::env::var_os("DENDRO_BLESS").is_some() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path());
        let archive = Archive::open(&path).unwrap();
        archive.vacuum_into(&committed).unwrap();
    }
    let archive = Archive::open(&committed).unwrap();
    let all = (i64::MIN, i64::MAX);
    let stats = region_stats(&pieces(&archive, "s", all, None), "s", None, all).unwrap();
    assert_eq!(stats.rows, ROWS as u64);
    let metadata = archive
        .read_snapshot(|s| s.source(1))
        .unwrap()
        .source
        .metadata;
    let listed = typed::stream_schema(&metadata, "s").unwrap().unwrap();
    let now = {
        let mut m = Labels::new();
        m.insert(
            typed::SCHEMAS_KEY.into(),
            typed::with_schema(&m, "s", &schema()).unwrap(),
        );
        typed::stream_schema(&m, "s").unwrap().unwrap()
    };
    assert_eq!(listed, now, "the committed archive lists today's schema");
}

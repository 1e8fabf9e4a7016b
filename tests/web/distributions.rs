//! The engine's `regionStats` and `heatmap` calls, on an archive holding
//! histogram columns (`histograms.dendro`, written by `write` in
//! `tests/distributions.rs`, whose native tests check the answers against
//! an independent computation). Here: that the JS answers carry exactly
//! what the reader computes, in the shapes of `RegionStats` and `Heatmap`
//! of www/src/engine/types.ts, and that refusals are errors in words.

use dendro::read::distribution::heatmap;
use dendro::read::range::decode_for_range;
use dendro::read::region::region_stats;
use dendro::read::window::{each_batch, read_window, Piece, Problems};
use dendro::wasm::JsArchive;
use js_sys::{Array, Float64Array, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

use crate::cases::{get, kind, message};

const BYTES: &[u8] = include_bytes!("histograms.dendro");
const ALL: (i64, i64) = (i64::MIN, i64::MAX);

fn open() -> JsArchive {
    JsArchive::open(&Uint8Array::from(BYTES), "histograms.dendro").unwrap()
}

fn pieces(js: &JsArchive, stream: &str, window: (i64, i64)) -> Vec<Piece> {
    let archive = js.archive();
    read_window(archive, 1, stream, window, None, |r, c| {
        decode_for_range(archive, r, c)
    })
    .unwrap()
}

fn floats(v: &JsValue) -> Vec<f64> {
    v.clone()
        .dyn_into::<Float64Array>()
        .expect("a Float64Array")
        .to_vec()
}

fn number(v: &JsValue, key: &str) -> Option<f64> {
    get(v, key).as_f64()
}

fn find(list: &JsValue, name: &str) -> JsValue {
    Array::from(list)
        .iter()
        .find(|c| get(c, "name").as_string().as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no {name}"))
}

#[wasm_bindgen_test]
fn region_stats_in_js_carry_what_the_reader_computes() {
    let js = open();
    let from = 1_700_000_150_000_000_000;
    let window = (from, from + 200_000_000_000);
    let answer = js.region_stats(1.0, "s", window.0, window.1, None).unwrap();
    let native = region_stats(&pieces(&js, "s", window), "s", None, window).unwrap();
    assert_eq!(number(&answer, "rows"), Some(native.rows as f64));
    assert!(get(&answer, "empty").is_null());
    for c in &native.columns {
        let ours = find(&get(&answer, "columns"), &c.name);
        assert_eq!(number(&ours, "count"), Some(c.count as f64));
        for (key, value) in [
            ("min", c.min),
            ("max", c.max),
            ("mean", c.mean),
            ("p50", c.p50),
            ("p99", c.p99),
            ("last_minus_first", c.last_minus_first),
            ("increase", c.increase),
            ("mean_rate", c.mean_rate),
            ("integral", c.integral),
        ] {
            assert_eq!(number(&ours, key), value, "{} {key}", c.name);
        }
        assert_eq!(get(&ours, "kind").as_string(), c.kind);
    }
    assert_eq!(native.histograms.len(), 2);
    for h in &native.histograms {
        let ours = find(&get(&answer, "histograms"), &h.column.name);
        let counts: Vec<f64> = h.counts.iter().map(|&c| c as f64).collect();
        assert_eq!(floats(&get(&ours, "counts")), counts);
        assert_eq!(number(&ours, "total"), Some(h.total as f64));
        for (key, q) in ["p50", "p90", "p99", "p999"].iter().zip(&h.quantiles) {
            assert_eq!(number(&ours, key), *q);
        }
        assert_eq!(number(&ours, "max_bucket"), h.max_bucket);
        let info = get(&ours, "histogram");
        let bounds: Vec<f64> = Array::from(&get(&info, "bounds"))
            .iter()
            .map(|b| b.as_f64().unwrap())
            .collect();
        assert_eq!(bounds, h.column.bounds);
    }
    // Nothing in the region: said in words, not an error.
    let empty = js.region_stats(1.0, "s", 0, 1, None).unwrap();
    assert!(get(&empty, "empty")
        .as_string()
        .unwrap()
        .contains("no rows"));
    // A column the region's rows lack is an error in words; a region with
    // no rows at all knows no columns, so it is only empty.
    let nothing = js
        .region_stats(1.0, "s", 0, 1, Some(vec!["nope".into()]))
        .unwrap();
    assert!(get(&nothing, "empty").as_string().is_some());
    let err = js
        .region_stats(1.0, "s", window.0, window.1, Some(vec!["nope".into()]))
        .unwrap_err();
    assert!(message(&err).contains("\"nope\""), "{}", message(&err));
}

#[wasm_bindgen_test]
fn heatmaps_in_js_sum_every_row_and_name_bad_ones() {
    let js = open();
    let native_all = pieces(&js, "s", ALL);
    let stats = region_stats(&native_all, "s", None, ALL).unwrap();
    let h = stats
        .histograms
        .iter()
        .find(|h| h.column.name == "h")
        .unwrap();
    let (first, last) = (1_700_000_000_000_000_000, 1_700_000_600_000_000_000);
    for pixels in [1u32, 64, 700] {
        let map = js.heatmap(1.0, "s", "h", first, last, pixels).unwrap();
        let native = heatmap(
            &pieces(&js, "s", (first, last)),
            "s",
            "h",
            (first, last),
            pixels as usize,
        )
        .unwrap();
        let counts = floats(&get(&map, "counts"));
        let expected: Vec<f64> = native.counts.iter().map(|&c| c as f64).collect();
        assert_eq!(counts, expected);
        // Every row of the stream lies in the window: the pixels hold the
        // region's whole distribution.
        assert_eq!(
            floats(&get(&map, "totals")).iter().sum::<f64>(),
            h.total as f64
        );
        let seconds = number(&map, "pixel_seconds").unwrap();
        let rates = floats(&get(&map, "rates"));
        assert!(rates.iter().zip(&counts).all(|(r, c)| *r == c / seconds));
        let present = get(&map, "present")
            .dyn_into::<Uint8Array>()
            .unwrap()
            .to_vec();
        assert_eq!(
            present,
            native
                .present
                .iter()
                .map(|&p| u8::from(p))
                .collect::<Vec<_>>()
        );
        let lines = get(&map, "lines");
        for (key, line) in ["p50", "p90", "p99", "p999"].iter().zip(&native.lines) {
            let ours = floats(&get(&lines, key));
            assert!(
                ours.iter()
                    .zip(line)
                    .all(|(a, b)| a == b || (a.is_nan() && b.is_nan())),
                "{key}"
            );
        }
        assert_eq!(number(&map, "buckets"), Some(5.0));
    }
    // The schema tells the viewer which columns are histograms.
    let schema = js.schema(1.0, "s").unwrap();
    let info = get(&find(&get(&schema, "columns"), "h"), "histogram");
    assert_eq!(
        get(&info, "cumulation").as_string().as_deref(),
        Some("counter")
    );
    assert!(get(&find(&get(&schema, "columns"), "g"), "histogram").is_undefined());
    // A bad row is named by stream, segment and row; the rest is drawn.
    let bad = js.heatmap(1.0, "bad", "h", first, last, 10).unwrap();
    let problems = Array::from(&get(&bad, "problems"));
    assert_eq!(problems.length(), 1);
    let p = problems.get(0);
    assert_eq!(get(&p, "row").as_f64(), Some(5.0));
    assert!(get(&p, "segment").as_f64().is_some());
    assert!(message(&p).contains("bucket 0"));
    assert!(floats(&get(&bad, "totals")).iter().sum::<f64>() > 0.0);
}

#[wasm_bindgen_test]
fn hostile_heatmap_requests_are_refused_before_reading() {
    let js = open();
    for pixels in [0u32, 8193, u32::MAX] {
        let err = js.heatmap(1.0, "s", "h", ALL.0, ALL.1, pixels).unwrap_err();
        assert_eq!(kind(&err), "NotFound");
        assert!(message(&err).contains("pixel columns"), "{}", message(&err));
    }
    let err = js.heatmap(1.0, "s", "g", ALL.0, ALL.1, 10).unwrap_err();
    assert!(
        message(&err).contains("no histogram column"),
        "{}",
        message(&err)
    );
    let err = js.heatmap(1.0, "nope", "h", ALL.0, ALL.1, 10).unwrap_err();
    assert_eq!(kind(&err), "NotFound");
}

#[wasm_bindgen_test]
fn a_heatmap_window_without_rows_is_drawn_empty_and_says_so() {
    let js = open();
    // Before the stream's first row (a URL opened into no data): no
    // segment overlaps, the buckets come from the stream's schema.
    let before = (1_600_000_000_000_000_000, 1_600_000_100_000_000_000);
    for (from, to) in [before, (ALL.1 - 10, ALL.1)] {
        let map = js.heatmap(1.0, "s", "h", from, to, 40).unwrap();
        assert_eq!(number(&map, "rows"), Some(0.0));
        assert_eq!(number(&map, "buckets"), Some(5.0));
        let empty = get(&map, "empty").as_string().expect("said in words");
        assert!(empty.contains("no rows"), "{empty}");
        let present = get(&map, "present").dyn_into::<Uint8Array>().unwrap();
        assert!(present.to_vec().iter().all(|&p| p == 0));
        assert_eq!(present.length(), 40);
        assert!(floats(&get(&get(&map, "lines"), "p50"))
            .iter()
            .all(|v| v.is_nan()));
    }
    // A column the stream does not have as a histogram is still an error.
    let err = js
        .heatmap(1.0, "s", "g", before.0, before.1, 10)
        .unwrap_err();
    assert!(
        message(&err).contains("no histogram column"),
        "{}",
        message(&err)
    );
    // A window with rows says nothing of being empty.
    let map = js.heatmap(1.0, "s", "h", ALL.0, ALL.1, 10).unwrap();
    assert!(get(&map, "empty").is_null());
}

#[wasm_bindgen_test]
fn a_heatmaps_first_column_counts_the_windows_first_row() {
    let js = open();
    // Windows that start on a row: the cumulative column's pixels equal
    // the per-interval column's, row for row, the first row included
    // (its baseline is the row before the window).
    let all = pieces(&js, "s", ALL);
    let mut times: Vec<i64> = Vec::new();
    each_batch(&all, "s", &mut Problems::default(), |slice, _| {
        times.extend_from_slice(&slice.times)
    });
    assert!(times.len() > 450, "{} rows", times.len());
    for first in [200usize, 250, 400] {
        let (from, to) = (times[first], times[first + 20]);
        let h = js.heatmap(1.0, "s", "h", from, to, 3).unwrap();
        let d = js.heatmap(1.0, "s", "d", from, to, 3).unwrap();
        assert_eq!(
            floats(&get(&h, "counts")),
            floats(&get(&d, "counts")),
            "from row {first}"
        );
        assert_eq!(number(&h, "rows"), Some(21.0));
    }
}

//! The plot envelope answered from footer statistics is the envelope
//! answered by decoding every segment: randomized archives, windows, point
//! budgets and column choices, with nulls, non-finite values, all-null
//! segments, several row groups, segments written without statistics, and
//! a one-row spike.
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array, Int8Array,
    RecordBatch, StringArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use dendro::read::envelope::Envelope;
use dendro::read::range::{
    decode_for_range, decode_range_bytes, preview_range, read_range, read_range_bounded,
    read_range_with, RangeReader, RangeRequest,
};
use dendro::read::stats::{segment_stats, summarize, Extremes};
use dendro::{Archive, ArchiveMut, Labels, Segment};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const SPIKE: f64 = 1e12;

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("f", DataType::Float64, true),
        Field::new("g", DataType::Float32, true),
        Field::new("i", DataType::Int32, true),
        Field::new("tiny", DataType::Int8, true),
        Field::new("u", DataType::UInt64, true),
        Field::new("b", DataType::Boolean, true),
        Field::new("host", DataType::Utf8, false),
    ]))
}

/// One segment's rows: `n` rows from `start`, `step` apart at most.
fn rows(rng: &mut Rng, start: i64, n: usize, shape: u64, spike: Option<usize>) -> RecordBatch {
    let mut t = start;
    let ts: Vec<i64> = (0..n)
        .map(|k| {
            if k > 0 {
                t += 1 + rng.below(5) as i64;
            }
            t
        })
        .collect();
    // shape 0: ordinary; 1: `f` all null; 2: `f` holds an infinity and NaN.
    let f: Vec<Option<f64>> = (0..n)
        .map(|k| {
            if Some(k) == spike {
                return Some(SPIKE);
            }
            match (shape, rng.below(20)) {
                (1, _) => None,
                (2, 0) => Some(f64::INFINITY),
                (2, 1) => Some(f64::NAN),
                (_, 2) => None,
                (_, 3) => Some(-0.0),
                _ => Some((rng.below(2000) as f64 - 1000.0) / 8.0),
            }
        })
        .collect();
    let g: Vec<Option<f32>> = (0..n)
        .map(|_| (rng.below(9) != 0).then(|| rng.below(100) as f32 / 4.0 - 10.0))
        .collect();
    let i: Vec<Option<i32>> = (0..n)
        .map(|_| (rng.below(6) != 0).then(|| rng.next() as i32))
        .collect();
    let tiny: Vec<Option<i8>> = (0..n)
        .map(|_| (rng.below(3) != 0).then(|| rng.next() as i8))
        .collect();
    let u: Vec<Option<u64>> = (0..n)
        .map(|_| (rng.below(10) != 0).then(|| rng.next()))
        .collect();
    let b: Vec<Option<bool>> = (0..n)
        .map(|_| (rng.below(4) != 0).then(|| rng.below(3) == 0))
        .collect();
    let host: Vec<String> = (0..n).map(|k| format!("h{}", k % 3)).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ts)),
        Arc::new(Float64Array::from(f)),
        Arc::new(Float32Array::from(g)),
        Arc::new(Int32Array::from(i)),
        Arc::new(Int8Array::from(tiny)),
        Arc::new(UInt64Array::from(u)),
        Arc::new(BooleanArray::from(b)),
        Arc::new(StringArray::from(host)),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// Parquet bytes of `batch`: dendro's own settings, or one row group per
/// few rows, or no statistics at all.
fn encode(batch: &RecordBatch, how: u64) -> Vec<u8> {
    let props = match how {
        0 => return dendro::segment::encode_batch(batch).unwrap(),
        1 => WriterProperties::builder()
            .set_max_row_group_row_count(Some(17))
            .build(),
        _ => WriterProperties::builder()
            .set_statistics_enabled(EnabledStatistics::None)
            .build(),
    };
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    out
}

/// An archive of one stream `s` of `segments` segments, returned as
/// bytes, and where the spike is.
fn archive(rng: &mut Rng, segments: usize) -> (Vec<u8>, i64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stats.dendro");
    let spike_segment = rng.below(segments as u64) as usize;
    let mut spike_ts = 0;
    {
        let mut archive = ArchiveMut::create(&path).unwrap();
        let tx = archive.transaction().unwrap();
        let id = tx.insert_source(&Labels::new(), &Labels::new(), 0).unwrap();
        let mut start = rng.below(1000) as i64 - 500;
        for seq in 0..segments {
            let n = if rng.below(8) == 0 {
                1
            } else {
                1 + rng.below(120) as usize
            };
            let spike = (seq == spike_segment).then(|| rng.below(n as u64) as usize);
            let shape = match rng.below(10) {
                0 => 1,
                1 => 2,
                _ => 0,
            };
            let batch = rows(rng, start, n, shape, spike);
            let ts = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            let (first, last) = (ts.value(0), ts.value(n - 1));
            if let Some(k) = spike {
                spike_ts = ts.value(k);
            }
            let how = match rng.below(10) {
                0 => 1,
                1 => 2,
                _ => 0,
            };
            let segment = Segment {
                bytes: encode(&batch, how),
                rows: n as i64,
                first_ts: first,
                last_ts: last,
                caller_index: None,
            };
            tx.insert_segment(id, "s", seq as i64, &segment).unwrap();
            // Sometimes a gap between segments.
            start = last
                + 1
                + if rng.below(4) == 0 {
                    rng.below(3000) as i64
                } else {
                    0
                };
        }
        tx.commit().unwrap();
    }
    (std::fs::read(&path).unwrap(), spike_ts)
}

fn same(a: &Envelope, b: &Envelope) -> Result<(), String> {
    // -0.0 and 0.0 are the same point on a plot; NaN is "no value".
    let eq = |x: &[f64], y: &[f64]| {
        x.len() == y.len()
            && x.iter()
                .zip(y)
                .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
    };
    if a.rows_in_window != b.rows_in_window || a.reduced != b.reduced || a.ts != b.ts {
        return Err(format!(
            "rows {} vs {}, reduced {} vs {}, {} vs {} points",
            a.rows_in_window,
            b.rows_in_window,
            a.reduced,
            b.reduced,
            a.ts.len(),
            b.ts.len()
        ));
    }
    let names = |e: &Envelope| e.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    if names(a) != names(b) {
        return Err(format!("columns {:?} vs {:?}", names(a), names(b)));
    }
    for (x, y) in a.columns.iter().zip(&b.columns) {
        if !eq(&x.min, &y.min) || !eq(&x.max, &y.max) {
            return Err(format!("column {}: {:?} vs {:?}", x.name, x, y));
        }
    }
    Ok(())
}

#[test]
fn statistics_answer_exactly_what_decoding_answers() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut from_stats, mut decoded, mut spikes_from_stats) = (0, 0, 0);
    for round in 0..10 {
        let segments = 40 + rng.below(80) as usize;
        let (bytes, spike_ts) = archive(&mut rng, segments);
        let archive = Archive::from_bytes("stats.dendro", &bytes).unwrap();
        let d = dendro::read::describe(&archive).unwrap();
        let (lo, hi) = d.span().unwrap();
        let column_sets: [Option<Vec<String>>; 4] = [
            None,
            Some(vec!["f".into()]),
            Some(vec!["u".into(), "b".into(), "tiny".into(), "nope".into()]),
            Some(vec!["g".into(), "i".into(), "host".into()]),
        ];
        for case in 0..60 {
            let (from, to) = match case % 4 {
                0 => (i64::MIN, i64::MAX),
                1 => (lo, hi),
                _ => {
                    let a = lo - 50 + rng.below((hi - lo + 100) as u64) as i64;
                    let b = lo - 50 + rng.below((hi - lo + 100) as u64) as i64;
                    (a.min(b), a.max(b))
                }
            };
            let max_points = [
                None,
                Some(1),
                Some(2),
                Some(3),
                Some(9),
                Some(30),
                Some(200),
                Some(5000),
            ][rng.below(8) as usize];
            let columns = &column_sets[rng.below(4) as usize];
            let request = RangeRequest {
                source_id: 1,
                stream: "s",
                from,
                to,
                columns: columns.as_deref(),
                max_points,
                rates: None,
            };
            let decode = |rec: &dendro::SegmentRecord, cols: Option<&[String]>| {
                decode_for_range(&archive, rec, cols)
            };
            // The reference fetches every segment whole; `decode` fetches
            // only the chunks of the columns it keeps.
            let whole = |rec: &dendro::SegmentRecord, cols: Option<&[String]>| {
                let bytes =
                    dendro::read::segment_bytes(&archive, rec.source_id, &rec.stream, rec.seq)?;
                Ok(Arc::new(decode_range_bytes(bytes, cols).unwrap()))
            };
            let full = read_range(&archive, &request, whole).unwrap();
            let fast = read_range_with(
                &archive,
                &request,
                |rec| Ok(segment_stats(&archive, rec)?.map(Arc::new)),
                decode,
            )
            .unwrap();
            if let Err(why) = same(&fast, &full) {
                panic!(
                    "round {round} case {case} [{from}, {to}] {max_points:?} {columns:?}: {why}"
                );
            }
            // Decoded elsewhere, several at once, rows handed back newest first.
            let depth = 1 + (case % 4) as usize;
            let mut reader = RangeReader::new(&archive, &request, |rec| {
                Ok(segment_stats(&archive, rec)?.map(Arc::new))
            })
            .unwrap();
            let mut waiting = Vec::new();
            loop {
                while waiting.len() < depth {
                    match reader.next_to_decode() {
                        Some(next) => waiting.push(next),
                        None => break,
                    }
                }
                let Some((index, record)) = waiting.pop() else {
                    break;
                };
                reader.supply(index, decode(&record, request.columns).unwrap());
            }
            let stepped = reader.finish();
            if let Err(why) = same(&stepped, &full) {
                panic!("round {round} case {case}, {depth} at a time: {why}");
            }
            assert_eq!(
                stepped.segments_read + stepped.segments_from_stats,
                full.segments_read
            );
            assert_eq!(
                fast.segments_read + fast.segments_from_stats,
                full.segments_read
            );
            assert_eq!(full.segments_from_stats, 0);
            from_stats += fast.segments_from_stats;
            decoded += fast.segments_read;
            // The spike is the maximum of its bucket whichever way it came.
            let f = fast.columns.iter().find(|c| c.name == "f");
            if let (Some(f), true) = (f, (from..=to).contains(&spike_ts) && fast.reduced) {
                let at = fast.ts.partition_point(|&t| t <= spike_ts) - 1;
                assert_eq!(
                    f.max[at], SPIKE,
                    "round {round} case {case}: the spike survives"
                );
                if fast.segments_from_stats > 0 {
                    spikes_from_stats += 1;
                }
            }
        }
    }
    eprintln!(
        "statistics answered {from_stats} segments, decoding {decoded}; \
         {spikes_from_stats} windows held the spike with statistics in play"
    );
    assert!(
        from_stats > 1000,
        "statistics answered {from_stats} segments"
    );
    assert!(decoded > 1000, "decoding answered {decoded} segments");
    assert!(
        spikes_from_stats > 10,
        "{spikes_from_stats} spikes seen with statistics in play"
    );
}

/// A window over more segments than its budget reads a sample of them:
/// the buckets are the whole window's, each point is exact for the
/// segments read (inside the full envelope's min and max), and what was
/// left out is counted. Within the budget, or without points to reduce
/// to, the answer is the exact one.
#[test]
fn a_window_over_its_segment_budget_is_a_counted_sample_inside_the_exact_envelope() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut sampled, mut compared) = (0, 0);
    for round in 0..6 {
        let segments = 60 + rng.below(60) as usize;
        let (bytes, _) = archive(&mut rng, segments);
        let archive = Archive::from_bytes("sample.dendro", &bytes).unwrap();
        let described = dendro::read::describe(&archive).unwrap();
        let (lo, hi) = described.span().unwrap();
        for case in 0..40 {
            let (from, to) = if case % 3 == 0 {
                (i64::MIN, i64::MAX)
            } else {
                let a = lo + rng.below((hi - lo + 1) as u64) as i64;
                let b = lo + rng.below((hi - lo + 1) as u64) as i64;
                (a.min(b), a.max(b))
            };
            let max_points = [None, Some(1), Some(7), Some(40), Some(300)][rng.below(5) as usize];
            let budget = 1 + rng.below(40) as usize;
            let request = RangeRequest {
                source_id: 1,
                stream: "s",
                from,
                to,
                columns: None,
                max_points,
                rates: None,
            };
            let decode = |rec: &dendro::SegmentRecord, cols: Option<&[String]>| {
                decode_for_range(&archive, rec, cols)
            };
            let stats =
                |rec: &dendro::SegmentRecord| Ok(segment_stats(&archive, rec)?.map(Arc::new));
            let full = read_range(&archive, &request, decode).unwrap();
            let roomy = read_range_bounded(&archive, &request, Some(segments), stats, decode);
            let roomy = roomy.unwrap();
            same(&roomy, &full).unwrap();
            assert_eq!(roomy.segments_left_out, 0);
            let part = read_range_bounded(&archive, &request, Some(budget), stats, decode).unwrap();
            let here =
                format!("round {round} case {case} [{from}, {to}] {max_points:?} budget {budget}");
            let read = part.segments_read + part.segments_from_stats;
            assert_eq!(read + part.segments_left_out, full.segments_read, "{here}");
            let claimed: i64 = described.sources[0].streams[0]
                .segments
                .iter()
                .filter(|r| r.last_ts >= from && r.first_ts <= to)
                .map(|r| r.rows)
                .sum();
            let over = max_points.is_some_and(|n| claimed > n as i64);
            if !over || full.segments_read <= budget {
                assert_eq!(part.segments_left_out, 0, "{here}");
                same(&part, &full).unwrap_or_else(|why| panic!("{here}: {why}"));
                continue;
            }
            // At most one pick per bucket beyond the budget's spread (with
            // more buckets than segments, that may be every one).
            assert!(read <= budget + max_points.unwrap(), "{here}: {read} read");
            assert!(part.reduced, "{here}");
            sampled += usize::from(part.segments_left_out > 0);
            if (from, to) == (i64::MIN, i64::MAX) {
                assert_eq!(
                    part.rows_in_window + part.rows_left_out,
                    full.rows_in_window,
                    "{here}"
                );
            }
            // Where the exact envelope is bucketed too (the window may
            // hold fewer rows than its segments claim), the sample's
            // buckets are among its.
            if !full.reduced {
                continue;
            }
            compared += 1;
            for (k, t) in part.ts.iter().enumerate() {
                let j = full
                    .ts
                    .binary_search(t)
                    .unwrap_or_else(|_| panic!("{here}: bucket {t}"));
                for (c, f) in part.columns.iter().zip(&full.columns) {
                    assert_eq!(c.name, f.name, "{here}");
                    let inside = |v: f64, lo: f64, hi: f64| v.is_nan() || (lo <= v && v <= hi);
                    assert!(
                        inside(c.min[k], f.min[j], f.max[j])
                            && inside(c.max[k], f.min[j], f.max[j]),
                        "{here}: column {} at {t}: {}..{} outside {}..{}",
                        c.name,
                        c.min[k],
                        c.max[k],
                        f.min[j],
                        f.max[j]
                    );
                }
            }
        }
    }
    assert!(
        sampled > 30 && compared > 20,
        "{sampled} windows were sampled, {compared} compared bucket by bucket"
    );
}

/// The preview from footer statistics holds the exact envelope wherever
/// every segment under a bucket knows a column's extremes: randomized
/// archives (nulls, NaN and infinities, negative values, segments
/// straddling buckets and window edges, segments written without
/// statistics or in several row groups), windows inside one segment,
/// budgets, and counters read as rates, which the preview leaves out.
#[test]
fn a_preview_from_footer_statistics_holds_the_exact_envelope() {
    let mut rng = Rng(0xd1b5_4a32_d192_ed03);
    let (mut checked, mut gapped, mut inside_one, mut few) = (0usize, 0usize, 0usize, 0usize);
    for round in 0..6 {
        let segments = 30 + rng.below(70) as usize;
        let (bytes, _) = archive(&mut rng, segments);
        let archive = Archive::from_bytes("preview.dendro", &bytes).unwrap();
        let described = dendro::read::describe(&archive).unwrap();
        let records = archive.read_snapshot(|s| s.segments(1, "s")).unwrap();
        let summaries: Vec<_> = records
            .iter()
            .map(|r| segment_stats(&archive, r).unwrap())
            .collect();
        let (lo, hi) = described.span().unwrap();
        for case in 0..30 {
            let (from, to) = match case % 4 {
                0 => (i64::MIN, i64::MAX),
                1 => {
                    // Inside one segment.
                    let r = &records[rng.below(records.len() as u64) as usize];
                    let a = r.first_ts + rng.below((r.last_ts - r.first_ts + 1) as u64) as i64;
                    let b = r.first_ts + rng.below((r.last_ts - r.first_ts + 1) as u64) as i64;
                    (a.min(b), a.max(b))
                }
                _ => {
                    let a = lo + rng.below((hi - lo + 1) as u64) as i64;
                    let b = lo + rng.below((hi - lo + 1) as u64) as i64;
                    (a.min(b), a.max(b))
                }
            };
            let n = [1, 3, 17, 64, 400][rng.below(5) as usize];
            let rates = ["i".to_string()];
            let with_rates = case % 5 == 4;
            let request = RangeRequest {
                source_id: 1,
                stream: "s",
                from,
                to,
                columns: None,
                max_points: Some(n),
                rates: with_rates.then_some(&rates[..]),
            };
            let here = format!("round {round} case {case} [{from}, {to}] {n} points");
            let stats =
                |rec: &dendro::SegmentRecord| Ok(segment_stats(&archive, rec)?.map(Arc::new));
            let decode = |rec: &dendro::SegmentRecord, cols: Option<&[String]>| {
                decode_for_range(&archive, rec, cols)
            };
            let exact = read_range(&archive, &request, decode).unwrap();
            let preview = preview_range(&archive, &request, None, stats).unwrap();
            let overlapping: Vec<usize> = (0..records.len())
                .filter(|&k| records[k].last_ts >= from && records[k].first_ts <= to)
                .collect();
            let claimed: i64 = overlapping.iter().map(|&k| records[k].rows).sum();
            let Some(preview) = preview else {
                assert!(claimed <= n as i64, "{here}: no preview of {claimed} rows");
                few += 1;
                continue;
            };
            assert!(claimed > n as i64, "{here}: a preview of {claimed} rows");
            let band = &preview.envelope;
            assert!(band.reduced && band.ts.len() <= n, "{here}");
            assert!(band.ts.windows(2).all(|w| w[0] < w[1]), "{here}");
            assert_eq!(band.segments_read, 0, "{here}");
            // Every segment of the window is summarized or counted.
            assert_eq!(
                band.segments_from_stats + preview.segments_unsummarized,
                overlapping.len(),
                "{here}"
            );
            let unsummarized = overlapping.iter().filter(|&&k| summaries[k].is_none());
            assert_eq!(
                preview.segments_unsummarized,
                unsummarized.count(),
                "{here}"
            );
            let claimed: u64 = overlapping
                .iter()
                .filter_map(|&k| summaries[k].as_ref().map(|s| s.rows))
                .sum();
            assert_eq!(band.rows_in_window, claimed, "{here}");
            assert_eq!(preview.column_gaps.len(), band.columns.len(), "{here}");
            for (c, gaps) in band.columns.iter().zip(&preview.column_gaps) {
                let unknown = overlapping
                    .iter()
                    .filter_map(|&k| summaries[k].as_ref())
                    .filter(|s| {
                        s.columns
                            .iter()
                            .any(|x| x.name == c.name && x.extremes == Extremes::Unknown)
                    })
                    .count();
                assert_eq!(*gaps, unknown, "{here}: gaps of {}", c.name);
                gapped += usize::from(*gaps > 0);
            }
            if with_rates {
                assert!(band.columns.iter().all(|c| c.name != "i"), "{here}");
                assert!(exact.columns.iter().any(|c| c.name == "i"), "{here}");
            }
            if overlapping.len() == 1 && from != i64::MIN {
                inside_one += 1;
            }
            // Bucket by bucket (or row by row, where the exact envelope
            // keeps every row): the point's bucket in the band is the last
            // band point at or before it; where every segment overlapping
            // that bucket (as far as the next band point) knows the
            // column, the band holds the exact value.
            for (k, &t) in exact.ts.iter().enumerate() {
                let j = band.ts.partition_point(|&b| b <= t);
                // Without a band point at or before it, the region is the
                // point itself onwards (its segment gave no summary).
                let start = if j > 0 { band.ts[j - 1] } else { t };
                let end = band.ts.get(j).map_or(to, |&next| next - 1);
                for x in exact
                    .columns
                    .iter()
                    .filter(|x| !with_rates || x.name != "i")
                {
                    let (emin, emax) = (x.min[k], x.max[k]);
                    if emin.is_nan() {
                        continue;
                    }
                    let known = overlapping.iter().all(|&s| {
                        let r = &records[s];
                        let under = r.last_ts >= start && r.first_ts <= end;
                        !under
                            || summaries[s].as_ref().is_some_and(|sum| {
                                sum.columns
                                    .iter()
                                    .any(|c| c.name == x.name && c.extremes != Extremes::Unknown)
                            })
                    });
                    if !known {
                        continue;
                    }
                    assert!(j > 0, "{here}: no band point at or before {t}");
                    if exact.reduced {
                        assert_eq!(band.ts[j - 1], t, "{here}: the same buckets");
                    }
                    let c = band
                        .columns
                        .iter()
                        .find(|c| c.name == x.name)
                        .unwrap_or_else(|| panic!("{here}: {} missing", x.name));
                    assert!(
                        c.min[j - 1] <= emin && c.max[j - 1] >= emax,
                        "{here}: column {} at {t}: band {}..{} does not hold {}..{}",
                        x.name,
                        c.min[j - 1],
                        c.max[j - 1],
                        emin,
                        emax
                    );
                    checked += 1;
                }
            }
            // With a budget the preview reads the sample the exact read
            // reads, and counts the same segments left out.
            let budget = 1 + rng.below(20) as usize;
            let sampled = read_range_bounded(&archive, &request, Some(budget), stats, decode);
            let sampled = sampled.unwrap();
            let small = preview_range(&archive, &request, Some(budget), stats)
                .unwrap()
                .expect("as many rows claimed as without a budget");
            assert_eq!(
                small.envelope.segments_left_out, sampled.segments_left_out,
                "{here}"
            );
            assert_eq!(
                small.envelope.rows_left_out, sampled.rows_left_out,
                "{here}"
            );
            assert_eq!(
                small.envelope.segments_from_stats + small.segments_unsummarized,
                sampled.segments_read + sampled.segments_from_stats,
                "{here}"
            );
            // Without max_points there is nothing to preview.
            let every_row = RangeRequest {
                max_points: None,
                ..request
            };
            assert_eq!(
                preview_range(&archive, &every_row, None, stats).unwrap(),
                None
            );
        }
    }
    eprintln!(
        "{checked} values checked, {gapped} columns with gaps, \
         {inside_one} windows inside one segment, {few} with too few rows to band"
    );
    assert!(few > 10, "{few} windows with too few rows to band");
    assert!(checked > 5_000, "{checked} values checked");
    assert!(gapped > 10, "{gapped} columns with gaps");
    assert!(inside_one > 10, "{inside_one} windows inside one segment");
}

#[test]
fn dendros_own_segments_carry_exact_statistics() {
    let mut rng = Rng(7);
    let batch = rows(&mut rng, 1_000, 50, 0, Some(3));
    let bytes = dendro::segment::encode_batch(&batch).unwrap();
    let metadata = dendro::segment::read_footer(bytes.len(), |at, buf| {
        buf.copy_from_slice(&bytes[at..at + buf.len()]);
        Ok(())
    })
    .unwrap();
    let stats = summarize(&metadata).expect("a time axis known exactly");
    assert_eq!(stats.rows, 50);
    let ts = batch
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!((stats.first_ts, stats.last_ts), (ts.value(0), ts.value(49)));
    let names: Vec<&str> = stats.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["f", "g", "i", "tiny", "u", "b"],
        "numeric columns in file order"
    );
    for c in &stats.columns {
        assert!(
            matches!(c.extremes, Extremes::Range { .. }),
            "{}: {:?}",
            c.name,
            c.extremes
        );
    }
    assert_eq!(
        stats.columns[0].extremes,
        Extremes::Range {
            min: stats_min_f(&batch),
            max: SPIKE
        }
    );
}

fn stats_min_f(batch: &RecordBatch) -> f64 {
    let f = batch
        .column(1)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    f.iter()
        .flatten()
        .filter(|v| v.is_finite())
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn a_footer_that_says_nothing_exact_is_not_summarized() {
    let mut rng = Rng(11);
    let batch = rows(&mut rng, 0, 30, 0, None);
    let bytes = encode(&batch, 2);
    let metadata = dendro::segment::read_footer(bytes.len(), |at, buf| {
        buf.copy_from_slice(&bytes[at..at + buf.len()]);
        Ok(())
    })
    .unwrap();
    assert_eq!(summarize(&metadata), None, "no statistics, no time axis");
    // A lying footer length is refused before anything is parsed.
    let mut bad = bytes.clone();
    let at = bad.len() - 8;
    bad[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let err = dendro::segment::read_footer(bad.len(), |at, buf| {
        buf.copy_from_slice(&bad[at..at + buf.len()]);
        Ok(())
    })
    .unwrap_err();
    assert!(err.contains("footer claims"), "{err}");
}

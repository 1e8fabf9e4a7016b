//! Wall-clock alignment of sources read from archives (their recorded
//! clock offsets), and the time-shift pairing of two windows of a stream
//! read through the envelope reader, each against a computation done here
//! directly on the rows and observations written.
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dendro::read::align::{align, clock_input, ClockInput, Doubt, SourceClock};
use dendro::read::envelope::Envelope;
use dendro::read::range::{decode_for_range, read_range, RangeRequest};
use dendro::read::shift::{pair, Side};
use dendro::{Archive, ArchiveMut, Labels, Segment};

const S: i64 = 1_000_000_000;

/// One stream "s" per source: rows at `ts` with value `v(ts)`, in one
/// segment; and each source's clock observations.
struct Source {
    ts: Vec<i64>,
    offsets: Vec<(i64, i64)>,
}

fn value(ts: i64) -> f64 {
    ((ts / S) % 97) as f64 * 1.5 - (ts % 7) as f64
}

fn write(sources: &[Source]) -> Archive {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("align.dendro");
    {
        let mut archive = ArchiveMut::create(&path).unwrap();
        let tx = archive.transaction().unwrap();
        for src in sources {
            let anchor = src.ts.first().copied().unwrap_or(0);
            let id = tx
                .insert_source(&Labels::new(), &Labels::new(), anchor)
                .unwrap();
            for &(ts, off) in &src.offsets {
                tx.insert_clock_offset(id, ts, off).unwrap();
            }
            if src.ts.is_empty() {
                continue;
            }
            let schema = Arc::new(Schema::new(vec![
                Field::new("ts", DataType::Int64, false),
                Field::new("v", DataType::Float64, true),
            ]));
            let batch = RecordBatch::try_new(
                schema,
                vec![
                    Arc::new(Int64Array::from(src.ts.clone())),
                    Arc::new(Float64Array::from(
                        src.ts.iter().map(|&t| value(t)).collect::<Vec<_>>(),
                    )),
                ],
            )
            .unwrap();
            let segment = Segment {
                bytes: dendro::segment::encode_batch(&batch).unwrap(),
                rows: src.ts.len() as i64,
                first_ts: src.ts[0],
                last_ts: *src.ts.last().unwrap(),
                caller_index: None,
            };
            tx.insert_segment(id, "s", 0, &segment).unwrap();
        }
        tx.commit().unwrap();
    }
    Archive::from_bytes("align.dendro", &std::fs::read(&path).unwrap()).unwrap()
}

fn span(ts: &[i64]) -> Option<(i64, i64)> {
    Some((*ts.first()?, *ts.last()?))
}

/// The offset in force at `ts`, by a scan: the last observation at or
/// before it, else the first.
fn offset_by_scan(offsets: &[(i64, i64)], ts: i64) -> Option<i64> {
    let mut sorted = offsets.to_vec();
    sorted.sort();
    sorted
        .iter()
        .rev()
        .find(|o| o.0 <= ts)
        .or(sorted.first())
        .map(|o| o.1)
}

#[test]
fn sources_of_two_archives_land_on_one_axis_by_their_recorded_clock_offsets() {
    let base = 1_700_000_000 * S;
    let every = |from: i64, n: i64| (0..n).map(|k| from + k * S).collect::<Vec<i64>>();
    // x: a steady clock 2 s behind the wall.
    let x = Source {
        ts: every(base, 120),
        offsets: vec![
            (base + 30 * S, 2 * S),
            (base + 60 * S, 2 * S + 400),
            (base + 119 * S, 2 * S + 900),
        ],
    };
    // y, another archive: its clock 5 s ahead, stepped by 3 s at +60 s
    // (someone set it), then drifting a little.
    let y = Source {
        ts: every(base + 7 * S, 120),
        offsets: vec![
            (base + 7 * S, -5 * S),
            (base + 60 * S, -2 * S),
            (base + 90 * S, -2 * S + 1000),
        ],
    };
    // z, in y's archive: no observation at all; w: an hour later.
    let z = Source {
        ts: every(base, 10),
        offsets: vec![],
    };
    let w = Source {
        ts: every(base + 3600 * S, 10),
        offsets: vec![(base + 3600 * S, 0)],
    };
    let ax = write(&[x]);
    let ay = write(&[y, z, w]);
    let inputs: Vec<ClockInput> = [
        (&ax, 1, &every(base, 120)),
        (&ay, 1, &every(base + 7 * S, 120)),
        (&ay, 2, &every(base, 10)),
        (&ay, 3, &every(base + 3600 * S, 10)),
    ]
    .iter()
    .map(|(a, id, ts)| clock_input(a, *id, span(ts)).unwrap())
    .collect();
    assert_eq!(inputs[0].offsets.len(), 3, "the observations as written");
    assert!(inputs[2].offsets.is_empty());
    let out = align(&inputs);
    // The median observation places each.
    assert_eq!(out[0].offset_ns, 2 * S + 400);
    assert_eq!(out[1].offset_ns, -2 * S);
    assert_eq!(out[2].offset_ns, 0);
    assert_eq!(
        out[0].wall_span,
        Some((base + 2 * S + 400, base + 121 * S + 400))
    );
    let kinds: Vec<Vec<&str>> = out
        .iter()
        .map(|a| a.doubts.iter().map(Doubt::kind).collect())
        .collect();
    assert_eq!(
        kinds,
        vec![
            vec![],
            vec!["clock_steps"],
            vec!["no_wall_offset"],
            vec!["no_overlap"]
        ]
    );
    assert_eq!(out[1].steps.len(), 1);
    assert_eq!(out[1].steps[0].by_ns, 3 * S);
    // Row by row, the clock gives what a scan of the observations gives.
    for (input, offsets) in inputs.iter().zip([
        &[
            (base + 30 * S, 2 * S),
            (base + 60 * S, 2 * S + 400),
            (base + 119 * S, 2 * S + 900),
        ][..],
        &[
            (base + 7 * S, -5 * S),
            (base + 60 * S, -2 * S),
            (base + 90 * S, -2 * S + 1000),
        ][..],
    ]) {
        let clock = SourceClock::new(input.offsets.clone());
        let (lo, hi) = input.span.unwrap();
        for ts in (lo..=hi).step_by(S as usize / 2) {
            assert_eq!(clock.offset_at(ts), offset_by_scan(offsets, ts));
            assert_eq!(clock.wall_of(ts), ts + offset_by_scan(offsets, ts).unwrap());
        }
    }
    // An unknown source is an error naming the archive, not a guess.
    let err = clock_input(&ax, 9, None).unwrap_err().to_string();
    assert!(err.contains("align.dendro"), "{err}");
}

fn envelope(archive: &Archive, from: i64, to: i64, max_points: usize) -> Envelope {
    let request = RangeRequest {
        source_id: 1,
        stream: "s",
        from,
        to,
        columns: None,
        max_points: Some(max_points),
        rates: None,
    };
    read_range(archive, &request, |rec, cols| {
        decode_for_range(archive, rec, cols)
    })
    .unwrap()
}

fn side(e: &Envelope) -> Side<'_> {
    let c = e.columns.iter().find(|c| c.name == "v").unwrap();
    Side {
        ts: &e.ts,
        min: &c.min,
        max: &c.max,
    }
}

#[test]
fn a_time_shift_difference_is_the_rows_difference_and_a_gap_where_either_has_none() {
    let step = 10 * S;
    // A row every 10 s for two hours, without five in the first hour and
    // one in the second.
    let missing = [13, 14, 40, 41, 42, 300];
    let ts: Vec<i64> = (0..720)
        .filter(|k| !missing.contains(k))
        .map(|k| k * step)
        .collect();
    let archive = write(&[Source {
        ts: ts.clone(),
        offsets: vec![],
    }]);
    let hour = 3600 * S;
    // A: the second hour, B: the first; 360 buckets, one per row.
    let (from, to) = (hour, 2 * hour - 1);
    let a = envelope(&archive, from, to, 400);
    let b = envelope(&archive, from - hour, to - hour, 400);
    assert!(!a.reduced && !b.reduced, "every row read");
    let p = pair(from, to, 360, side(&a), side(&b), hour);
    assert_eq!(p.ts.len(), 360);
    let mut gaps = 0;
    for k in 0..360usize {
        let t = from + k as i64 * step;
        assert_eq!(p.ts[k], t, "bucket {k} starts at its row");
        let has = |t: i64| ts.binary_search(&t).is_ok();
        if has(t) && has(t - hour) {
            let want = value(t) - value(t - hour);
            assert_eq!(p.d_max[k], want, "bucket {k}");
            assert_eq!(p.d_min[k], want, "bucket {k}");
        } else {
            assert!(
                p.d_max[k].is_nan() && p.d_min[k].is_nan(),
                "bucket {k}: A or B has no row"
            );
            gaps += 1;
        }
    }
    assert_eq!(
        gaps, 6,
        "five rows missing from B (the first hour), one from A"
    );
    // Reduced (30 rows a bucket), over windows whose data spans them
    // exactly: each side's bucket is the min and max of its rows.
    let (from, to) = (hour, 2 * hour - step);
    let a = envelope(&archive, from, to, 12);
    let b = envelope(&archive, from - hour, to - hour, 12);
    assert!(a.reduced && b.reduced);
    let p = pair(from, to, 12, side(&a), side(&b), hour);
    for k in 0..12usize {
        let rows = |lo: i64| -> Vec<f64> {
            ts.iter()
                .filter(|&&t| t >= lo + k as i64 * 30 * step && t < lo + (k as i64 + 1) * 30 * step)
                .map(|&t| value(t))
                .collect()
        };
        let (ra, rb) = (rows(from), rows(from - hour));
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(p.d_min[k], min(&ra) - min(&rb), "bucket {k}");
        assert_eq!(p.d_max[k], max(&ra) - max(&rb), "bucket {k}");
    }
}

//! What a writer stores must be publishable (issue 29): no seal and no
//! compaction makes a segment too large for one replication frame, a row
//! too large for one frame is refused at the call, and so is a row out of
//! timestamp order within its stream, which a replica could never be sent.

use dendro::replicate::codec::{frame_fits, segment_frame_len};
use dendro::replicate::{MAX_FRAME_BYTES, MAX_ROW_BYTES};
use dendro::rewrite::{compact, CompactSpec, Target};
use dendro::{Archive, Error, Labels, WalRow};

use crate::common::fixture_row;
use crate::support::*;

/// A row of about `bytes` that no compressor shrinks much: a label of
/// pseudo-random letters.
fn bulky(ts: i64, bytes: usize) -> WalRow {
    let mut seed = (ts as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let label: String = (0..bytes)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            char::from(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                    [(seed % 64) as usize],
            )
        })
        .collect();
    WalRow {
        ts,
        wall_offset: 0,
        row: fixture_row(ts, &label),
    }
}

/// Every segment of the archive, as `(stream, bytes, frame length)`.
fn segment_frames(path: &std::path::Path) -> Vec<(String, usize, u64)> {
    let archive = Archive::open(path).unwrap();
    archive
        .read_snapshot(|snap| {
            let mut out = Vec::new();
            for record in snap.all_segments()? {
                let bytes = snap.segment_bytes(record.source_id, &record.stream, record.seq)?;
                let len = segment_frame_len(&record.stream, bytes.len(), None);
                out.push((record.stream, bytes.len(), len));
            }
            Ok(out)
        })
        .unwrap()
}

const MIB: usize = 1 << 20;

#[test]
fn a_seal_of_a_tail_larger_than_a_frame_makes_segments_that_each_fit_one() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    // 72 rows of 1 MiB: more than MAX_FRAME_BYTES (64 MiB) in one stream.
    let rows = 72;
    for ts in 0..rows {
        s.wal(vec![("a".to_string(), bulky(ts, MIB))]).unwrap();
    }
    s.seal(["a"]).unwrap();
    s.sync().unwrap();
    drop(s);
    w.join().unwrap();
    let frames = segment_frames(&path);
    assert!(
        frames.len() >= 2,
        "one tail over the limit, several segments: {frames:?}"
    );
    for (stream, bytes, len) in &frames {
        assert!(
            frame_fits(*len),
            "a segment of {stream} is {bytes} bytes: a {len}-byte frame, over {MAX_FRAME_BYTES}"
        );
    }
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "a"), (0..rows).collect::<Vec<_>>());
}

#[test]
fn compaction_never_merges_a_segment_larger_than_a_frame() {
    let (_dir, path) = fresh("a.dendro");
    {
        let w = writer(&path);
        let s = w.add_source(Labels::new(), Labels::new()).unwrap();
        // Ten segments of 8 MiB: 80 MiB if merged into one.
        for ts in 0..80 {
            s.wal(vec![("a".to_string(), bulky(ts, MIB))]).unwrap();
            if ts % 8 == 7 {
                s.seal(["a"]).unwrap();
            }
        }
        s.sync().unwrap();
        drop(s);
        w.join().unwrap();
    }
    assert_eq!(segment_frames(&path).len(), 10);
    for target in [Target::Rows(1_000_000), Target::Bytes(u64::MAX)] {
        let spec = CompactSpec {
            target,
            union_fields: false,
        };
        compact(&path, &spec, |_| {}).unwrap();
        let frames = segment_frames(&path);
        assert!(frames.len() < 10, "{target:?} merged nothing: {frames:?}");
        for (stream, bytes, len) in &frames {
            assert!(
                frame_fits(*len),
                "{target:?} left a segment of {stream} of {bytes} bytes: a {len}-byte frame"
            );
        }
    }
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "a"), (0..80).collect::<Vec<_>>());
}

#[test]
fn a_row_too_large_for_a_frame_is_refused_at_the_call() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    let huge = WalRow {
        ts: 1,
        wall_offset: 0,
        row: vec![b'x'; MAX_ROW_BYTES as usize + 1],
    };
    let err = s
        .wal(vec![("a".into(), huge), ("b".into(), bulky(1, 10))])
        .unwrap_err();
    assert!(
        matches!(&err, Error::RowTooLarge { name, ts: 1, .. } if name == "a"),
        "{err}"
    );
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    let blob = vec![0u8; MAX_ROW_BYTES as usize + 1];
    let err = s
        .caller_rows("slots", vec![dendro::CallerRow { ts: 1, blob }])
        .unwrap_err();
    assert!(
        matches!(&err, Error::RowTooLarge { name, .. } if name == "slots"),
        "{err}"
    );
    s.wal(tick(&[("a", 2)])).unwrap();
    drop(s);
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "a"), vec![2]);
    assert_eq!(stream_ts(&a, 1, "b"), Vec::<i64>::new());
}

#[test]
fn a_row_below_its_streams_newest_is_refused_not_stored_where_no_replica_sees_it() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for ts in [10, 20, 30] {
        s.wal(tick(&[("a", ts)])).unwrap();
    }
    // Above the (absent) watermark, 1 ns below the newest row.
    let err = s.wal(tick(&[("a", 29)])).unwrap_err();
    assert!(
        matches!(&err, Error::OutOfOrder { stream, ts: 29, newest: 30, .. } if stream == "a"),
        "{err}"
    );
    // Out of order within one tick, too; a sibling stream is not affected.
    let err = s.wal(tick(&[("a", 40), ("a", 35), ("b", 1)])).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfOrder {
                ts: 35,
                newest: 40,
                ..
            }
        ),
        "{err}"
    );
    s.wal(tick(&[("b", 1), ("a", 31)])).unwrap();
    assert_eq!(s.dropped_out_of_order(), 0, "refused, not dropped");
    drop(s);
    w.join().unwrap();
    let a = assert_sound(&path);
    assert_eq!(stream_ts(&a, 1, "a"), vec![10, 20, 30, 31]);
    assert_eq!(stream_ts(&a, 1, "b"), vec![1]);
}

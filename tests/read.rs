//! The reading rules (format §4): the seal seam, snapshots, lazy reads,
//! the encoder check, caller rows, and timestamps at and below zero.
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

mod common;

use common::{rows_at, sample_archive, FixtureEncoder};
use dendro::read::{self, Tail};
use dendro::{Archive, CallerRow, Error};

fn sample() -> (tempfile::TempDir, std::path::PathBuf, i64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sample.dendro");
    let id = sample_archive(&path);
    (dir, path, id)
}

fn decoded_ts(
    archive: &Archive,
    rec: &dendro::SegmentRecord,
    bytes: impl Into<dendro::Bytes>,
) -> Vec<i64> {
    use arrow_array::cast::AsArray;
    read::decode(archive, rec, bytes, None)
        .unwrap()
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_primitive::<arrow_array::types::Int64Type>()
                .values()
                .to_vec()
        })
        .collect()
}

#[test]
fn a_wal_row_covered_by_a_segment_is_never_returned() {
    let (_d, path, id) = sample();
    let archive = Archive::open(&path).unwrap();
    // `mixed` holds ts 200 in its segment and in the WAL (not yet pruned).
    let span = read::live_wal_span(&archive, id, "mixed").unwrap().unwrap();
    assert_eq!((span.rows, span.first_ts, span.last_ts), (2, 300, 400));
    let all = read::read_archive(&archive, &FixtureEncoder::default()).unwrap();
    let mixed = all[0].streams.iter().find(|s| s.name == "mixed").unwrap();
    let mut ts: Vec<i64> = mixed
        .sealed
        .iter()
        .flat_map(|(rec, bytes)| decoded_ts(&archive, rec, bytes.clone()))
        .collect();
    let Tail::Materialized(tail) = &mixed.tail else {
        panic!("the tail is materialized: {:?}", mixed.tail)
    };
    ts.extend(decoded_ts(&archive, &mixed.sealed[0].0, tail.bytes.clone()));
    assert_eq!(ts, vec![100, 200, 300, 400], "no duplicate across the seam");
}

#[test]
fn a_stream_with_only_wal_rows_is_a_stream() {
    let (_d, path, id) = sample();
    let archive = Archive::open(&path).unwrap();
    let d = read::describe(&archive).unwrap();
    let names: Vec<_> = d.sources[0]
        .streams
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["live", "mixed", "sealed"]);
    let live = &d.sources[0].streams[0];
    assert_eq!(
        (live.live_rows, live.live_span, live.segments.len()),
        (2, Some([0, 5]), 0)
    );
    // Without an encoder the tail is reported as unread, not absent.
    let range = read::stream_range(&archive, id, "live", i64::MIN, i64::MAX, None).unwrap();
    assert!(matches!(range.tail, Tail::Unread(s) if s.rows == 2));
}

#[test]
fn a_snapshot_sees_no_hole_while_a_seal_commits_between_its_queries() {
    let (_d, path, id) = sample();
    let archive = Archive::open(&path).unwrap();
    let writer = rusqlite::Connection::open(&path).unwrap();
    let enc = FixtureEncoder::default();
    let seal = || {
        let seg = dendro::segment::materialize("t", &enc, "mixed", &rows_at(&[300, 400]))
            .unwrap()
            .unwrap();
        writer
            .execute(
                "INSERT INTO segments VALUES (?1, 'mixed', 1, ?2, ?3, ?4, ?5, NULL)",
                rusqlite::params![id, seg.rows, seg.first_ts, seg.last_ts, seg.bytes],
            )
            .unwrap();
    };
    let (segments, live) = archive
        .read_snapshot(|s| {
            let segments = s.segments(id, "mixed")?;
            seal(); // commits on another connection, mid-answer
            let live = s.live_wal_rows(id, "mixed")?;
            Ok((segments, live))
        })
        .unwrap();
    assert_eq!(segments.len(), 1);
    assert_eq!(live.iter().map(|r| r.ts).collect::<Vec<_>>(), [300, 400]);
    // A fresh snapshot sees the seal: two segments, nothing live.
    let after = archive
        .read_snapshot(|s| {
            Ok((
                s.segments(id, "mixed")?.len(),
                s.live_wal_rows(id, "mixed")?.len(),
            ))
        })
        .unwrap();
    assert_eq!(after, (2, 0));
}

#[test]
fn zero_and_negative_timestamps_round_trip() {
    let (_d, path, id) = sample();
    let archive = Archive::open(&path).unwrap();
    let segs = archive.read_snapshot(|s| s.segments(id, "sealed")).unwrap();
    assert_eq!((segs[0].first_ts, segs[0].last_ts), (-20, 0));
    let bytes = read::segment_bytes(&archive, id, "sealed", 0).unwrap();
    assert_eq!(decoded_ts(&archive, &segs[0], bytes), [-20, -10, 0]);
    // A live row at ts 0 in a stream with no segment is visible.
    let live = archive
        .read_snapshot(|s| s.live_wal_rows(id, "live"))
        .unwrap();
    assert_eq!(live[0].ts, 0);
}

#[test]
fn stream_range_returns_only_segments_reaching_into_the_window() {
    let (_d, path, id) = sample();
    let archive = Archive::open(&path).unwrap();
    let enc = FixtureEncoder::default();
    let r = read::stream_range(&archive, id, "sealed", 5, 15, Some(&enc)).unwrap();
    assert_eq!(r.segments.iter().map(|s| s.seq).collect::<Vec<_>>(), [1]);
    let r = read::stream_range(&archive, id, "sealed", -100, 100, Some(&enc)).unwrap();
    assert_eq!(r.segments.len(), 2);
    let r = read::stream_range(&archive, id, "mixed", 350, 1000, Some(&enc)).unwrap();
    assert!(r.segments.is_empty());
    match r.tail {
        Tail::Materialized(seg) => assert_eq!((seg.rows, seg.first_ts), (1, 400)),
        other => panic!("{other:?}"),
    }
    let (first, schema) = read::probe(&archive, id, "sealed").unwrap().unwrap();
    assert_eq!(first.seq, 0);
    let bytes = read::segment_bytes(&archive, id, "sealed", 0).unwrap();
    let whole = dendro::segment::segment_schema(&bytes).unwrap();
    assert!(whole.field_with_name("label").is_ok());
    assert_eq!(
        schema.unwrap(),
        whole,
        "the footer alone gives the whole segment's schema"
    );
    assert!(read::probe(&archive, id, "live").unwrap().is_none());
}

#[test]
fn a_reader_with_another_encoder_version_is_refused() {
    struct Other;
    impl dendro::SegmentEncoder for Other {
        fn encode(&self, s: &str, r: &[dendro::WalRow]) -> Result<Option<dendro::Segment>, String> {
            FixtureEncoder::default().encode(s, r)
        }
        fn version(&self) -> Option<String> {
            Some("something-else-v9".into())
        }
    }
    let (_d, path, _) = sample();
    let archive = Archive::open(&path).unwrap();
    let err = read::read_archive(&archive, &Other).unwrap_err();
    assert!(matches!(err, Error::EncoderMismatch { .. }), "{err}");
    assert!(err.to_string().contains("something-else-v9"));
}

#[test]
fn caller_rows_come_back_in_time_then_insertion_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.dendro");
    let id = sample_archive(&path);
    {
        let mut a = dendro::ArchiveMut::open(&path).unwrap();
        let tx = a.transaction().unwrap();
        let row = |ts, b: &[u8]| CallerRow {
            ts,
            blob: b.to_vec(),
        };
        tx.insert_caller_rows(
            id,
            "registry",
            &[row(5, b"b"), row(1, b"a"), row(5, b"c"), row(9, b"")],
        )
        .unwrap();
        tx.commit().unwrap();
    }
    let archive = Archive::open(&path).unwrap();
    let rows = read::caller_rows(&archive, id, "registry", i64::MIN, i64::MAX).unwrap();
    let blobs: Vec<&[u8]> = rows.iter().map(|r| r.blob.as_slice()).collect();
    assert_eq!(blobs, [&b"a"[..], b"b", b"c", b""]);
    let last = archive
        .read_snapshot(|s| s.last_caller_row(id, "registry", 8, |r| !r.blob.is_empty()))
        .unwrap()
        .unwrap();
    assert_eq!(
        last.blob, b"c",
        "the newest at or before 8, later insertion first"
    );
    let last_a = archive
        .read_snapshot(|s| s.last_caller_row(id, "registry", 8, |r| r.blob == b"b"))
        .unwrap();
    assert_eq!(last_a.unwrap().ts, 5);
    // A name with caller rows only is not a stream.
    let d = read::describe(&archive).unwrap();
    assert!(d.sources[0].streams.iter().all(|s| s.name != "registry"));
    assert_eq!(d.sources[0].caller_row_names, ["registry"]);
    assert_eq!(
        d.sources[0].caller_row_counts,
        [4],
        "with how many rows it holds"
    );
}

#[test]
fn opening_for_reading_leaves_the_archive_untouched() {
    let (_d, path, _) = sample();
    let before = std::fs::read(&path).unwrap();
    let archive = Archive::open(&path).unwrap();
    read::describe(&archive).unwrap();
    assert!(archive.verify().unwrap().sound);
    read::read_archive(&archive, &FixtureEncoder::default()).unwrap();
    drop(archive);
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn describe_json_has_the_stable_shape() {
    let (_d, path, _) = sample();
    let archive = Archive::open(&path).unwrap();
    let json = serde_json::to_value(read::describe(&archive).unwrap()).unwrap();
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&json),
        [
            "caller_indexes",
            "documents",
            "file_bytes",
            "schema_version",
            "sources"
        ]
    );
    assert_eq!(json["caller_indexes"], "column");
    assert_eq!(json["documents"], serde_json::json!([]));
    let source = &json["sources"][0];
    assert_eq!(
        keys(source),
        [
            "clock_anchor_wall_ns",
            "complete",
            "id",
            "labels",
            "metadata",
            "streams",
            "uuid"
        ]
    );
    let stream = &source["streams"][1];
    assert_eq!(
        keys(stream),
        [
            "caller_rows",
            "live_rows",
            "live_span",
            "name",
            "sealed_rows",
            "segments"
        ]
    );
    assert_eq!(stream["live_span"], serde_json::json!([300, 400]));
    assert_eq!(source["streams"][2]["live_span"], serde_json::Value::Null);
    assert_eq!(
        keys(&stream["segments"][0]),
        [
            "bytes",
            "caller_index",
            "first_ts",
            "last_ts",
            "rows",
            "seq"
        ]
    );
    // Fields print in the documented order.
    let d = read::describe(&archive).unwrap();
    let in_order = |text: String, keys: &[&str]| {
        let at: Vec<usize> = keys
            .iter()
            .map(|k| text.find(&format!("\"{k}\"")).unwrap())
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
    };
    in_order(
        serde_json::to_string(&d).unwrap(),
        &[
            "file_bytes",
            "schema_version",
            "sources",
            "caller_indexes",
            "documents",
        ],
    );
    let mut bare = d.sources[0].clone();
    bare.streams.clear();
    in_order(
        serde_json::to_string(&bare).unwrap(),
        &[
            "id",
            "uuid",
            "labels",
            "metadata",
            "complete",
            "clock_anchor_wall_ns",
            "streams",
        ],
    );
    in_order(
        serde_json::to_string(&d.sources[0].streams[2]).unwrap(),
        &[
            "name",
            "segments",
            "seq",
            "rows",
            "first_ts",
            "last_ts",
            "bytes",
            "caller_index",
            "sealed_rows",
            "live_rows",
            "live_span",
            "caller_rows",
        ],
    );
    let uuid = source["uuid"].as_str().unwrap();
    assert_eq!(uuid.len(), 36);
    assert_eq!(uuid, uuid.to_lowercase());
    assert_eq!(&uuid[14..15], "4", "a v4 uuid");
}

#[test]
fn live_rows_an_encoder_declines_are_reported_unread_not_absent() {
    struct Declines;
    impl dendro::SegmentEncoder for Declines {
        fn encode(&self, _: &str, _: &[dendro::WalRow]) -> Result<Option<dendro::Segment>, String> {
            Ok(None)
        }
    }
    let (_d, path, _) = sample();
    let archive = Archive::open(&path).unwrap();
    let all = read::read_archive(&archive, &Declines).unwrap();
    let tails: Vec<_> = all[0]
        .streams
        .iter()
        .map(|s| (s.name.as_str(), &s.tail))
        .collect();
    assert!(
        matches!(tails[0], ("live", Tail::Unread(s)) if s.rows == 2),
        "{tails:?}"
    );
    assert!(
        matches!(tails[1], ("mixed", Tail::Unread(s)) if s.rows == 2),
        "{tails:?}"
    );
    assert!(matches!(tails[2], ("sealed", Tail::Empty)), "{tails:?}");
}

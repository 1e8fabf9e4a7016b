//! The subscriber's protocol rules: an unknown ordinal is refused, rows
//! are skipped when their index state does not match, a seq gap is
//! counted, a source encoded otherwise is refused.

use std::sync::Arc;

use dendro::replicate::{Frame, IndexKind, Subscriber, WireRow};
use dendro::{Archive, Error, Labels};

use crate::common::{fixture_row, FixtureEncoder, FIXTURE_ENCODER_VERSION};

const UUID: &str = "4d8dd7da-ed6f-4b1c-9040-fcebac272209";

fn handshake(encoder: &str) -> Frame {
    Frame::Handshake {
        source: 7,
        row: dendro::catalog::NewSource {
            uuid: Some(UUID.into()),
            labels: [("host".to_string(), "a".to_string())].into(),
            metadata: [("encoder".to_string(), encoder.to_string())].into(),
            clock_anchor_wall_ns: 0,
            complete: false,
        },
    }
}

fn rows(seq: u64, state: (u64, u64), ts: &[i64]) -> Frame {
    Frame::Rows {
        source: 7,
        seq,
        index_state: state,
        rows: ts
            .iter()
            .map(|&ts| WireRow {
                stream: "cpu".into(),
                ts,
                wall_offset: 0,
                row: fixture_row(ts, "x"),
            })
            .collect(),
    }
}

fn index(kind: IndexKind, state: (u64, u64)) -> Frame {
    Frame::Index {
        source: 7,
        stream: "cpus".into(),
        ts: 1,
        kind,
        state,
        blob: b"slot".to_vec(),
    }
}

fn subscriber() -> (tempfile::TempDir, std::path::PathBuf, Subscriber) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("replica.dendro");
    let sub = Subscriber::open(&out, Arc::new(FixtureEncoder::default())).unwrap();
    (dir, out, sub)
}

#[test]
fn a_frame_naming_an_ordinal_without_a_handshake_is_refused() {
    let (_dir, out, mut sub) = subscriber();
    let err = sub.apply(rows(0, (0, 0), &[1])).unwrap_err();
    assert!(matches!(err, Error::Replication { .. }), "{err}");
    assert!(err.to_string().contains("ordinal 7"), "{err}");
    assert!(err.to_string().contains(out.to_str().unwrap()), "{err}");
    // A reconnect forgets the ordinals of the last connection (rule 8).
    sub.apply(handshake(FIXTURE_ENCODER_VERSION)).unwrap();
    sub.new_connection();
    assert!(sub.apply(rows(0, (0, 0), &[1])).is_err());
}

#[test]
fn rows_whose_index_state_does_not_match_are_skipped_and_counted() {
    let (_dir, out, mut sub) = subscriber();
    sub.apply(handshake(FIXTURE_ENCODER_VERSION)).unwrap();
    // Built against an index the subscriber has not received: skipped.
    sub.apply(rows(0, (5, 5), &[1, 2])).unwrap();
    // A delta before any Full is meaningless: skipped.
    sub.apply(index(IndexKind::Delta, (5, 5))).unwrap();
    sub.apply(rows(1, (5, 5), &[3])).unwrap();
    // After the Full, rows built against it apply.
    sub.apply(index(IndexKind::Full, (5, 5))).unwrap();
    sub.apply(rows(2, (5, 5), &[4])).unwrap();
    sub.apply(rows(3, (6, 6), &[5])).unwrap();
    let applied = sub.finish().unwrap();
    assert_eq!(applied.rows_skipped, 4);
    assert_eq!(applied.index_skipped, 1);
    assert_eq!(applied.index_entries, 1);
    assert_eq!(applied.rows, 1);
    let archive = Archive::open(&out).unwrap();
    let live = archive
        .read_snapshot(|s| s.live_wal_rows(1, "cpu"))
        .unwrap();
    assert_eq!(live.iter().map(|r| r.ts).collect::<Vec<_>>(), vec![4]);
}

#[test]
fn a_seq_that_does_not_step_by_one_is_a_gap() {
    let (_dir, _out, mut sub) = subscriber();
    sub.apply(handshake(FIXTURE_ENCODER_VERSION)).unwrap();
    sub.apply(rows(10, (0, 0), &[1])).unwrap();
    sub.apply(rows(11, (0, 0), &[])).unwrap();
    assert_eq!(sub.applied().gaps, 0, "a start anywhere and a step of one");
    sub.apply(rows(13, (0, 0), &[2])).unwrap();
    assert_eq!(sub.applied().gaps, 1);
    assert_eq!(
        sub.applied().rows,
        2,
        "a gap is reported, the rows still apply"
    );
}

#[test]
fn a_source_encoded_otherwise_is_refused() {
    let (_dir, _out, mut sub) = subscriber();
    let err = sub.apply(handshake("someone-else-v9")).unwrap_err();
    assert!(err.to_string().contains("someone-else-v9"), "{err}");
}

#[test]
fn a_handshake_may_not_hand_a_used_ordinal_to_another_source() {
    let (_dir, _out, mut sub) = subscriber();
    sub.apply(handshake(FIXTURE_ENCODER_VERSION)).unwrap();
    let mut other = handshake(FIXTURE_ENCODER_VERSION);
    if let Frame::Handshake { row, .. } = &mut other {
        row.uuid = Some("370f3fe8-dc36-4d4d-8c58-3157f79cb7a3".into());
        row.labels = Labels::new();
    }
    assert!(matches!(sub.apply(other), Err(Error::Replication { .. })));
}

//! Kind 6, `SourceUpdate`: the publisher sends it when only a source's
//! labels or metadata changed mid-connection, and the subscriber replaces
//! both maps with it, keeping its own `encoder` and `writer_sessions`.

use std::path::Path;

use dendro::replicate::codec::Frame;
use dendro::replicate::{Publisher, Subscriber};
use dendro::{Archive, ClockOffset, Labels, WalRow, Writer};

use crate::common::{fixture_row, FixtureEncoder};
use crate::support::fixture_encoder;

fn held_source(path: &Path) -> dendro::SourceRecord {
    let archive = Archive::open(path).unwrap();
    archive.read_snapshot(|s| s.sources()).unwrap().remove(0)
}

fn map(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_metadata_change_mid_connection_goes_out_as_a_source_update_not_a_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("o.dendro");
    let writer = Writer::create(&path, FixtureEncoder::default()).unwrap();
    let source = writer
        .add_source(map(&[("host", "a")]), map(&[("site", "lab-1")]))
        .unwrap();
    let row = |ts| WalRow {
        ts,
        wall_offset: 0,
        row: fixture_row(ts, "x"),
    };
    source.wal(vec![("cpu".to_string(), row(5))]).unwrap();
    source.sync().unwrap();
    let mut publisher = Publisher::new(Archive::open(&path).unwrap());
    let first = publisher.poll().unwrap();
    assert!(matches!(first[0], Frame::Handshake { .. }));
    assert!(!first
        .iter()
        .any(|f| matches!(f, Frame::SourceUpdate { .. })));
    source
        .update_metadata([("site".to_string(), Some("lab-2".to_string()))].into())
        .unwrap();
    source.sync().unwrap();
    let second = publisher.poll().unwrap();
    let updates: Vec<&Frame> = second
        .iter()
        .filter(|f| matches!(f, Frame::SourceUpdate { .. }))
        .collect();
    assert_eq!(updates.len(), 1, "{second:?}");
    assert!(
        !second.iter().any(|f| matches!(f, Frame::Handshake { .. })),
        "{second:?}"
    );
    match updates[0] {
        Frame::SourceUpdate {
            ts,
            labels,
            metadata,
            ..
        } => {
            assert_eq!(*ts, 5, "the newest row shipped");
            assert_eq!(labels, &map(&[("host", "a")]));
            assert_eq!(metadata.get("site").map(String::as_str), Some("lab-2"));
        }
        _ => unreachable!(),
    }
    // Nothing changed since: nothing more is said about the source.
    let third = publisher.poll().unwrap();
    assert!(!third
        .iter()
        .any(|f| matches!(f, Frame::SourceUpdate { .. } | Frame::Handshake { .. })));
    // Finalizing changes `complete`: that is a handshake's to say.
    source
        .finalize(ClockOffset {
            ts: 5,
            offset_ns: 0,
        })
        .unwrap();
    writer.join().unwrap();
    let fourth = publisher.poll().unwrap();
    assert!(fourth
        .iter()
        .any(|f| matches!(f, Frame::Handshake { row, .. } if row.complete)));
}

#[test]
fn a_source_update_replaces_both_maps_but_keeps_the_replicas_encoder_and_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("o.dendro");
    let replica = dir.path().join("r.dendro");
    let writer = Writer::create(&origin, FixtureEncoder::default()).unwrap();
    let source = writer
        .add_source(
            map(&[("host", "a"), ("rack", "r1")]),
            map(&[("site", "lab-1"), ("owner", "ops")]),
        )
        .unwrap();
    source
        .wal(vec![(
            "cpu".to_string(),
            WalRow {
                ts: 1,
                wall_offset: 0,
                row: fixture_row(1, "x"),
            },
        )])
        .unwrap();
    source.sync().unwrap();
    let frames = Publisher::new(Archive::open(&origin).unwrap())
        .poll()
        .unwrap();
    drop(source);
    writer.join().unwrap();
    let mut sub = Subscriber::open(&replica, fixture_encoder()).unwrap();
    for frame in frames {
        sub.apply(frame).unwrap();
    }
    sub.sync().unwrap();
    let before = held_source(&replica);
    let encoder = before.source.metadata["encoder"].clone();
    let sessions = before.source.metadata["writer_sessions"].clone();
    // The update drops `rack` and `owner`, changes `host`, and claims an
    // encoder and sessions of its own, which the replica does not take.
    sub.apply(Frame::SourceUpdate {
        source: 0,
        ts: 1,
        labels: map(&[("host", "b")]),
        metadata: map(&[
            ("site", "lab-9"),
            ("encoder", "someone-else-v9"),
            ("writer_sessions", "[]"),
        ]),
    })
    .unwrap();
    sub.sync().unwrap();
    let after = held_source(&replica);
    assert_eq!(after.source.labels, map(&[("host", "b")]));
    assert_eq!(
        after.source.metadata,
        map(&[
            ("site", "lab-9"),
            ("encoder", &encoder),
            ("writer_sessions", &sessions),
        ])
    );
    assert_eq!(after.source.uuid, before.source.uuid);
    assert_eq!(sub.applied().source_updates, 1);
    // The same update again changes nothing and is not counted.
    sub.apply(Frame::SourceUpdate {
        source: 0,
        ts: 2,
        labels: map(&[("host", "b")]),
        metadata: map(&[("site", "lab-9")]),
    })
    .unwrap();
    assert_eq!(sub.applied().source_updates, 1);
    // An ordinal no handshake introduced is refused, naming the file.
    let err = sub
        .apply(Frame::SourceUpdate {
            source: 7,
            ts: 0,
            labels: Labels::new(),
            metadata: Labels::new(),
        })
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("r.dendro") && err.contains("ordinal 7"),
        "{err}"
    );
    sub.finish().unwrap();
}

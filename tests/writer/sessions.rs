//! Writer sessions (format §6, §7): what adding and resuming a source
//! records, byte for byte; the resume rules; metadata and events; and
//! every sound fixture of the original implementation resuming cleanly.
use std::collections::BTreeMap;

use crate::common::{copy_fixture, fixtures, FixtureEncoder, FIXTURE_ENCODER_VERSION};
use crate::support::*;
use dendro::format::keys;
use dendro::write::{Event, NewSource, Writer};
use dendro::{Archive, ClockOffset, Error, Labels, SegmentEncoder, WalRow};

fn metadata(path: &std::path::Path, source_id: i64) -> Labels {
    Archive::open(path)
        .unwrap()
        .read_snapshot(|s| s.source(source_id))
        .unwrap()
        .source
        .metadata
}

fn complete(path: &std::path::Path, source_id: i64) -> bool {
    Archive::open(path)
        .unwrap()
        .read_snapshot(|s| s.source(source_id))
        .unwrap()
        .source
        .complete
}

fn is_canonical_uuid(text: &str) -> bool {
    text.len() == 36
        && text.chars().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            14 => c == '4',
            _ => c.is_ascii_digit() || ('a'..='f').contains(&c),
        })
}

#[test]
fn adding_a_source_records_its_session_and_encoder_in_the_original_format() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w
        .add_source_with_uuid(NewSource {
            uuid: None,
            labels: Labels::from([("host".into(), "x".into())]),
            metadata: Labels::from([("note".into(), "kept".into())]),
            complete: true,
            clock_anchor_wall_ns: 1_700_000_000_000_000_000,
        })
        .unwrap();
    assert!(is_canonical_uuid(s.uuid()), "{}", s.uuid());
    let md = metadata(&path, 1);
    assert_eq!(md[keys::ENCODER], FIXTURE_ENCODER_VERSION);
    assert_eq!(md["note"], "kept");
    let sessions = &md[keys::WRITER_SESSIONS];
    let prefix = format!(
        "[{{\"clock_anchor_wall_ns\":1700000000000000000,\"dendro\":\"{}\",\"session\":\"",
        env!("CARGO_PKG_VERSION")
    );
    assert!(sessions.starts_with(&prefix), "{sessions}");
    let session = &sessions[prefix.len()..sessions.len() - 3];
    assert!(
        is_canonical_uuid(session) && sessions.ends_with("\"}]"),
        "{sessions}"
    );
    assert!(
        !complete(&path, 1),
        "a source being written is not complete"
    );
    s.finalize(ClockOffset {
        ts: 1,
        offset_ns: 0,
    })
    .unwrap();
    w.join().unwrap();
    assert!(complete(&path, 1));
    let raw: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT metadata FROM sources WHERE id = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(
        raw.starts_with(
            "{\"encoder\":\"fixturegen-i64le-utf8-v1\",\"note\":\"kept\",\"writer_sessions\":"
        ),
        "{raw}"
    );
}

#[test]
fn a_source_added_with_its_uuid_keeps_it_and_a_second_one_is_refused() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let uuid = "8cbd2ad3-4baf-4f6a-ab51-0722cda91aea";
    let source = NewSource {
        uuid: Some(uuid.into()),
        clock_anchor_wall_ns: 5,
        ..Default::default()
    };
    let s = w.add_source_with_uuid(source.clone()).unwrap();
    assert_eq!(s.uuid(), uuid);
    assert!(matches!(
        w.add_source_with_uuid(source),
        Err(Error::Invalid { .. })
    ));
    let mut other = NewSource::default();
    other
        .metadata
        .insert(keys::ENCODER.into(), "someone-else-v9".into());
    assert!(
        w.add_source_with_uuid(other).is_err(),
        "a different encoder is refused"
    );
    drop(s);
    w.join().unwrap();
}

fn closed_archive_with_rows(path: &std::path::Path) {
    let w = writer(path);
    let s = w.add_source(Labels::new(), Labels::new()).unwrap();
    for ts in 1..=6 {
        s.wal(tick(&[("a", ts * 10), ("b", ts * 10)])).unwrap();
    }
    s.seal(["a"]).unwrap();
    s.sync().unwrap();
    s.wal(tick(&[("a", 70)])).unwrap();
    s.seal(["a"]).unwrap();
    s.append_event(Event {
        description: "the caller's own event".into(),
        details: None,
        id: Some("mine:1".into()),
        kind: Some("note".into()),
        timestamp: 15,
    })
    .unwrap();
    s.finalize(ClockOffset {
        ts: 70,
        offset_ns: 0,
    })
    .unwrap();
    w.join().unwrap();
}

#[test]
fn a_resume_continues_seq_records_the_session_and_appends_the_event() {
    let (_dir, path) = fresh("a.dendro");
    closed_archive_with_rows(&path);
    assert!(complete(&path, 1));
    let uuid = Archive::open(&path)
        .unwrap()
        .read_snapshot(|s| s.source(1))
        .unwrap()
        .source
        .uuid
        .unwrap();
    let w = Writer::open(&path, FixtureEncoder::default()).unwrap();
    let s = w.resume_source_at(uuid.as_str(), 1_000).unwrap();
    assert_eq!(s.id(), 1);
    assert_eq!(s.resumed_after(), Some(70));
    assert!(!complete(&path, 1), "cleared at resume");
    let md = metadata(&path, 1);
    let sessions: serde_json::Value = serde_json::from_str(&md[keys::WRITER_SESSIONS]).unwrap();
    assert_eq!(sessions.as_array().unwrap().len(), 2);
    assert_eq!(sessions[1]["clock_anchor_wall_ns"], 1_000);
    assert_eq!(sessions[1]["resumed_after_ts"], 70);
    assert_ne!(sessions[0]["session"], sessions[1]["session"]);
    assert!(
        md[keys::WRITER_SESSIONS].contains("{\"clock_anchor_wall_ns\":1000,\"dendro\":\""),
        "keys in byte order"
    );
    let events: serde_json::Value = serde_json::from_str(&md[keys::EVENTS]).unwrap();
    let events = events["events"].as_array().unwrap();
    assert_eq!(events.len(), 2, "appended, never replaced");
    assert_eq!(events[0]["id"], "mine:1");
    assert_eq!(events[1]["kind"], keys::EVENT_KIND_WRITER_SESSION);
    assert_eq!(events[1]["timestamp"], 1_000);
    assert_eq!(
        events[1]["id"],
        format!(
            "writer_session:{}",
            sessions[1]["session"].as_str().unwrap()
        )
    );
    s.wal(tick(&[("a", 1_001), ("b", 1_001)])).unwrap();
    s.seal(["a", "b"]).unwrap();
    s.finalize(ClockOffset {
        ts: 1_001,
        offset_ns: 0,
    })
    .unwrap();
    w.join().unwrap();
    assert!(complete(&path, 1), "set again by this session's finalize");
    let a = assert_sound(&path);
    let a_seqs: Vec<i64> = segments(&a, 1, "a").iter().map(|s| s.0).collect();
    assert_eq!(a_seqs, vec![0, 1, 2], "seq continues at MAX(seq) + 1");
    assert_eq!(segments(&a, 1, "b"), vec![(0, 10, 1_001, 7)]);
}

#[test]
fn a_resume_anchored_at_or_before_the_newest_row_is_refused_and_records_nothing() {
    let (_dir, path) = fresh("a.dendro");
    closed_archive_with_rows(&path);
    let before = metadata(&path, 1);
    let w = Writer::open(&path, FixtureEncoder::default()).unwrap();
    for anchor in [70, 3] {
        let err = w.resume_source_at(1, anchor).unwrap_err();
        assert!(
            matches!(err, Error::TimelineBackwards { ts, newest: 70, source_id: 1, .. } if ts == anchor),
            "{err}"
        );
    }
    w.join().unwrap();
    assert_eq!(metadata(&path, 1), before);
    assert!(complete(&path, 1));
}

#[test]
fn a_resume_with_another_encoder_is_refused() {
    struct Other;
    impl SegmentEncoder for Other {
        fn encode(&self, _: &str, _: &[WalRow]) -> Result<Option<dendro::Segment>, String> {
            Ok(None)
        }
        fn version(&self) -> Option<String> {
            Some("other-v2".into())
        }
    }
    let (_dir, path) = fresh("a.dendro");
    closed_archive_with_rows(&path);
    let w = Writer::open(&path, Other).unwrap();
    assert!(matches!(
        w.resume_source_at(1, 100),
        Err(Error::EncoderMismatch { .. })
    ));
    assert!(matches!(
        w.resume_source_at(7, 100),
        Err(Error::NotFound { .. })
    ));
    w.join().unwrap();
}

#[test]
fn a_source_that_left_no_rows_resumes_with_a_null_resumed_after_ts() {
    let (_dir, path) = fresh("a.dendro");
    {
        let w = writer(&path);
        let s = w.add_source(Labels::new(), Labels::new()).unwrap();
        drop(s);
        w.join().unwrap();
    }
    let w = Writer::open(&path, FixtureEncoder::default()).unwrap();
    let s = w.resume_source(1).unwrap();
    assert_eq!(s.resumed_after(), None);
    let md = metadata(&path, 1);
    assert!(
        md[keys::WRITER_SESSIONS].contains(",\"resumed_after_ts\":null,\"session\":"),
        "{}",
        md[keys::WRITER_SESSIONS]
    );
    assert!(md[keys::EVENTS].contains("left no rows"));
    drop(s);
    w.join().unwrap();
}

#[test]
fn metadata_updates_land_in_order_and_dendros_own_keys_are_refused() {
    let (_dir, path) = fresh("a.dendro");
    let w = writer(&path);
    let s = w
        .add_source(
            Labels::new(),
            Labels::from([("gone".into(), "soon".into())]),
        )
        .unwrap();
    s.wal(tick(&[("a", 1)])).unwrap();
    let mut patch = BTreeMap::new();
    patch.insert(
        keys::PRODUCER_VERSION.to_string(),
        Some("p 1.2.3".to_string()),
    );
    patch.insert("gone".to_string(), None);
    s.update_metadata(patch).unwrap();
    let md = metadata(&path, 1);
    assert_eq!(md[keys::PRODUCER_VERSION], "p 1.2.3");
    assert!(!md.contains_key("gone"));
    for key in [keys::WRITER_SESSIONS, keys::ENCODER] {
        let mut patch = BTreeMap::new();
        patch.insert(key.to_string(), Some("[]".to_string()));
        assert!(
            matches!(s.update_metadata(patch), Err(Error::Invalid { .. })),
            "{key}"
        );
    }
    drop(s);
    w.join().unwrap();
}

#[test]
fn every_sound_fixture_resumes_cleanly_under_this_writer() {
    let mut resumed = 0;
    for (fixture, manifest) in fixtures() {
        let sound = manifest["open"]["ok"] == true && manifest["verify"]["sound"] == true;
        let sources = manifest["sources"].as_array().cloned().unwrap_or_default();
        if !sound || !fixture.to_string_lossy().ends_with(".dendro") {
            continue;
        }
        let (_dir, path) = copy_fixture(&fixture);
        let before = Archive::open(&path)
            .unwrap()
            .read_snapshot(|s| s.sources())
            .unwrap();
        let w = Writer::open(&path, FixtureEncoder::default()).unwrap();
        let anchor = 1_800_000_000_000_000_000;
        for source in &sources {
            let uuid = source["uuid"].as_str().unwrap();
            let s = w.resume_source_at(uuid, anchor).unwrap();
            let newest = source["span"][1].as_i64();
            assert_eq!(s.resumed_after(), newest, "{}: {uuid}", fixture.display());
            let streams: Vec<String> = source["streams"]
                .as_array()
                .unwrap()
                .iter()
                .map(|st| st["name"].as_str().unwrap().to_string())
                .collect();
            for i in 1..=3 {
                let rows: Vec<(&str, i64)> =
                    streams.iter().map(|n| (n.as_str(), anchor + i)).collect();
                s.wal(tick(&rows)).unwrap();
            }
            s.seal(streams.iter().take(1).cloned()).unwrap();
            s.finalize(ClockOffset {
                ts: anchor + 3,
                offset_ns: 9,
            })
            .unwrap();
            resumed += 1;
        }
        w.join().unwrap();
        let a = assert_sound(&path);
        for source in &sources {
            let id = source["id"].as_i64().unwrap();
            let record = a.read_snapshot(|s| s.source(id)).unwrap();
            let old = before.iter().find(|b| b.id == id).unwrap();
            assert!(record.source.complete, "{}", fixture.display());
            assert_eq!(record.source.uuid, old.source.uuid);
            assert_eq!(record.source.labels, old.source.labels);
            let sessions: Vec<serde_json::Value> =
                serde_json::from_str(&record.source.metadata[keys::WRITER_SESSIONS]).unwrap();
            let old_sessions: Vec<serde_json::Value> =
                serde_json::from_str(&old.source.metadata[keys::WRITER_SESSIONS]).unwrap();
            assert_eq!(sessions.len(), old_sessions.len() + 1);
            assert_eq!(
                sessions[..old_sessions.len()],
                old_sessions[..],
                "earlier sessions untouched"
            );
            for (key, value) in &old.source.metadata {
                if key != keys::WRITER_SESSIONS && key != keys::EVENTS {
                    assert_eq!(&record.source.metadata[key], value, "{key} kept");
                }
            }
            let first = source["streams"][0]["name"].as_str().unwrap();
            let seqs: Vec<i64> = segments(&a, id, first).iter().map(|s| s.0).collect();
            let old_seqs: Vec<i64> = source["streams"][0]["segment_seqs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            let next = old_seqs.iter().max().map_or(0, |m| m + 1);
            assert_eq!(
                seqs,
                [old_seqs.clone(), vec![next]].concat(),
                "{}: {first}",
                fixture.display()
            );
            let ts = stream_ts(&a, id, first);
            assert_eq!(
                ts.len() as i64,
                source["streams"][0]["total_rows"].as_i64().unwrap() + 3
            );
        }
        let read = dendro::read::read_archive(&a, &FixtureEncoder::default()).unwrap();
        assert_eq!(read.len(), sources.len());
    }
    assert!(
        resumed >= 7,
        "resumed {resumed} sources across the fixtures"
    );
}

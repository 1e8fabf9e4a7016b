//! Every fixture archive, published and subscribed into a new archive,
//! comes back with the same sources, streams, rows and segment bytes.

use dendro::read::describe;
use dendro::Archive;
use serde_json::{json, Value};

use crate::common::manifest::Fnv;
use crate::common::{copy_fixture, fixtures, manifest::expected_refusal};
use crate::support::{apply_stream, catch_up_stream};

/// What a replica must share with its origin, by source uuid.
pub fn replicated_view(path: &std::path::Path) -> Value {
    let archive = Archive::open(path).unwrap();
    let description = describe(&archive).unwrap();
    let mut sources = serde_json::Map::new();
    for source in &description.sources {
        let view = archive
            .read_snapshot(|snap| {
                let mut streams = serde_json::Map::new();
                for stream in &source.streams {
                    let segments: Vec<Value> = snap
                        .segments(source.id, &stream.name)?
                        .iter()
                        .map(|r| {
                            let bytes = snap.segment_bytes(source.id, &stream.name, r.seq).unwrap();
                            json!([
                                r.rows,
                                r.first_ts,
                                r.last_ts,
                                Fnv::new().bytes(&bytes).hex()
                            ])
                        })
                        .collect();
                    let indexes: Vec<Option<String>> = snap
                        .caller_indexes(source.id, &stream.name)?
                        .into_iter()
                        .map(|(_, ix)| ix.map(|b| Fnv::new().bytes(&b).hex()))
                        .collect();
                    let live = snap.live_wal_rows(source.id, &stream.name)?;
                    let mut raw = Fnv::new();
                    for r in &live {
                        raw.i64(r.ts).i64(r.wall_offset).lp(&r.row);
                    }
                    streams.insert(
                        stream.name.clone(),
                        json!({
                            "sealed_rows": stream.sealed_rows,
                            "segments": segments,
                            "caller_indexes": indexes,
                            "live_rows": live.len(),
                            "live_fnv": raw.hex(),
                        }),
                    );
                }
                let mut caller = serde_json::Map::new();
                for (id, name, _) in snap.caller_row_counts()? {
                    if id != source.id {
                        continue;
                    }
                    let mut fnv = Fnv::new();
                    for r in snap.caller_rows(id, &name, i64::MIN, i64::MAX)? {
                        fnv.i64(r.ts).lp(&r.blob);
                    }
                    caller.insert(name, json!(fnv.hex()));
                }
                let offsets: Vec<Value> = snap
                    .clock_offsets(source.id)?
                    .iter()
                    .map(|o| json!([o.ts, o.offset_ns]))
                    .collect();
                let mut metadata = source.source.metadata.clone();
                let sessions = metadata.remove("writer_sessions");
                Ok(json!({
                    "labels": source.source.labels,
                    "metadata": metadata,
                    "writer_sessions": sessions,
                    "complete": source.source.complete,
                    "anchor": source.source.clock_anchor_wall_ns,
                    "streams": streams,
                    "caller_rows": caller,
                    "clock_offsets": offsets,
                }))
            })
            .unwrap();
        sources.insert(source.source.uuid.clone().unwrap_or_default(), view);
    }
    Value::Object(sources)
}

/// Asserts the replica holds the origin: everything equal except that the
/// replica's `writer_sessions` may add entries after the origin's.
pub fn assert_replica(origin: &std::path::Path, replica: &std::path::Path) {
    let (mut want, mut got) = (replicated_view(origin), replicated_view(replica));
    for (uuid, source) in want.as_object_mut().unwrap() {
        let theirs: Vec<Value> = source["writer_sessions"]
            .as_str()
            .map_or(vec![], |s| serde_json::from_str(s).unwrap());
        let mine_text = got[uuid]["writer_sessions"].take();
        let mine: Vec<Value> = mine_text
            .as_str()
            .map_or(vec![], |s| serde_json::from_str(s).unwrap());
        assert!(
            mine.len() >= theirs.len() && mine[..theirs.len()] == theirs[..],
            "{uuid}: the replica's writer_sessions do not start with the origin's"
        );
        source["writer_sessions"] = Value::Null;
    }
    assert_eq!(want, got);
}

#[test]
fn every_fixture_archive_replicates_to_an_equal_archive() {
    let mut checked = 0;
    for (path, manifest) in fixtures() {
        if expected_refusal(&manifest).is_some() {
            continue;
        }
        let (_dir, copy) = copy_fixture(&path);
        let stream = catch_up_stream(&copy);
        let out = _dir.path().join("replica.dendro");
        apply_stream(&stream, &out);
        assert_replica(&copy, &out);
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} archives");
}

#[test]
fn applying_the_same_stream_twice_changes_nothing() {
    let (path, _) = fixtures()
        .into_iter()
        .find(|(p, _)| p.ends_with("g_caller_index.dendro"))
        .unwrap();
    let (dir, copy) = copy_fixture(&path);
    let stream = catch_up_stream(&copy);
    let out = dir.path().join("replica.dendro");
    let first = apply_stream(&stream, &out);
    let second = apply_stream(&stream, &out);
    assert_eq!(second.segments, 0, "{second:?}");
    assert_eq!(second.segments_held, first.segments);
    assert_eq!(second.rows, 0);
    assert_eq!(second.rows_held, first.rows);
    assert_eq!(second.index_entries, 0);
    assert_eq!(second.index_held, first.index_entries);
    assert_replica(&copy, &out);
}

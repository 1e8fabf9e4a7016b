//! The original's stream (`k_replication_b.bin`): it decodes frame by frame
//! as its manifest lists, applies to an archive its manifest describes, and
//! our publisher writes the same bytes from the archive it came from.

use dendro::replicate::{Frame, FrameReader};
use dendro::Archive;
use serde_json::Value;

use crate::common::manifest::{compare, observed};
use crate::common::{copy_fixture, fixtures_dir};
use crate::support::{apply_stream, catch_up_stream};

fn wire_manifest() -> Value {
    let text = std::fs::read_to_string(fixtures_dir().join("k_replication_b.manifest.json"));
    serde_json::from_str(&text.unwrap()).unwrap()
}

fn original_stream() -> Vec<u8> {
    std::fs::read(fixtures_dir().join("k_replication_b.bin")).unwrap()
}

#[test]
fn the_originals_stream_decodes_frame_by_frame_as_its_manifest_lists() {
    let manifest = wire_manifest();
    let bytes = original_stream();
    let mut reader = FrameReader::new(&bytes[..], "k_replication_b.bin").unwrap();
    let mut offset = reader.bytes_read();
    assert_eq!(
        offset,
        manifest["summary"]["preamble_bytes"].as_u64().unwrap()
    );
    let expected = manifest["frames"].as_array().unwrap();
    for entry in expected {
        let frame = reader
            .next_frame()
            .unwrap()
            .expect("a frame the manifest lists");
        assert_eq!(entry["offset"].as_u64().unwrap(), offset, "{entry}");
        // The manifest's `len` counts the whole frame, its length field too.
        assert_eq!(
            entry["len"].as_u64().unwrap(),
            reader.bytes_read() - offset,
            "{entry}"
        );
        offset = reader.bytes_read();
        assert_eq!(entry["kind"], frame.kind_name());
        assert_eq!(entry["source"].as_u64().unwrap(), frame.source() as u64);
        match &frame {
            Frame::Handshake {
                row:
                    dendro::catalog::NewSource {
                        uuid,
                        labels,
                        metadata,
                        clock_anchor_wall_ns,
                        complete,
                    },
                ..
            } => {
                assert_eq!(entry["uuid"].as_str(), uuid.as_deref());
                assert_eq!(entry["labels"], serde_json::to_value(labels).unwrap());
                assert_eq!(entry["metadata"], serde_json::to_value(metadata).unwrap());
                assert_eq!(entry["clock_anchor_wall_ns"], *clock_anchor_wall_ns);
                assert_eq!(entry["complete"], *complete);
            }
            Frame::Segment {
                stream, segment, ..
            } => {
                assert_eq!(entry["stream"], stream.as_str());
                assert_eq!(entry["rows"], segment.rows);
                assert_eq!(entry["first_ts"], segment.first_ts);
                assert_eq!(entry["last_ts"], segment.last_ts);
                assert_eq!(entry["bytes_len"], segment.bytes.len());
                let fnv = crate::common::manifest::Fnv::new()
                    .bytes(&segment.bytes)
                    .hex();
                assert_eq!(entry["bytes_fnv"], fnv);
                assert!(segment.caller_index.is_none() && entry["caller_index"].is_null());
            }
            Frame::ClockOffset { ts, offset_ns, .. } => {
                assert_eq!(entry["ts"], *ts);
                assert_eq!(entry["offset_ns"], *offset_ns);
            }
            Frame::Rows {
                seq,
                index_state,
                rows,
                ..
            } => {
                assert_eq!(entry["seq"], *seq);
                assert_eq!(entry["rows"], rows.len());
                assert_eq!(
                    entry["index_state"],
                    serde_json::json!([index_state.0.to_string(), index_state.1.to_string()])
                );
                assert_eq!(entry["first_ts"], rows.first().unwrap().ts);
                assert_eq!(entry["last_ts"], rows.last().unwrap().ts);
            }
            Frame::Index { .. } => panic!("the original's stream has no index entries"),
            Frame::SourceUpdate { .. } => {
                panic!("the original's 0.3.4 stream has no source updates")
            }
        }
    }
    assert_eq!(reader.next_frame().unwrap(), None);
    assert_eq!(
        reader.bytes_read(),
        manifest["summary"]["bytes"].as_u64().unwrap()
    );
    assert_eq!(reader.skipped_unknown(), 0);
}

/// Mismatches that only say the replica recorded its own writer session
/// (a fresh uuid, our crate's version) after the origin's, and the file's
/// size, which is SQLite's page accounting.
fn own_session_only(mismatches: Vec<String>, expected: &Value, ours: &Value) -> Vec<String> {
    let sessions = |v: &Value, i: usize| -> Vec<Value> {
        let text = v["sources"][i]["metadata"]["writer_sessions"]
            .as_str()
            .unwrap_or("[]");
        serde_json::from_str(text).unwrap()
    };
    mismatches
        .into_iter()
        .filter(|m| {
            if m.starts_with("file_bytes:") {
                return false;
            }
            let Some(rest) = m.strip_prefix("sources[") else {
                return true;
            };
            let i: usize = rest.split(']').next().unwrap().parse().unwrap();
            if !m.contains("].metadata.writer_sessions:") {
                return true;
            }
            let (theirs, mine) = (sessions(expected, i), sessions(ours, i));
            // Same count means the original's own extra entry and ours.
            !(theirs.len() == mine.len() && theirs[..theirs.len() - 1] == mine[..mine.len() - 1])
        })
        .collect()
}

#[test]
fn the_originals_stream_applies_to_what_its_subscriber_made() {
    let applied_manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures_dir().join("k_replication_b_applied.manifest.json"))
            .unwrap(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("applied.dendro");
    let applied = apply_stream(&original_stream(), &out);
    let expected = &wire_manifest()["subscriber"]["applied"];
    assert_eq!(expected["sources"], applied.sources);
    assert_eq!(expected["segments"], applied.segments);
    assert_eq!(expected["rows"], applied.rows);
    assert_eq!(expected["clock_offsets"], applied.clock_offsets);
    assert_eq!(expected["rows_skipped"], applied.rows_skipped);
    assert_eq!(applied.gaps, 0);
    let archive = Archive::open(&out).unwrap();
    let ours = observed(&archive, "k_replication_b_applied.dendro").unwrap();
    let mismatches = own_session_only(compare(&applied_manifest, &ours), &applied_manifest, &ours);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn our_publisher_writes_the_originals_stream_byte_for_byte() {
    let (_dir, copy) = copy_fixture(&fixtures_dir().join("b_multi_source.dendro"));
    assert!(
        catch_up_stream(&copy) == original_stream(),
        "the streams differ"
    );
}

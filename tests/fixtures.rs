//! Archives written by the original implementation open here and read back
//! exactly what its manifests record; files it refused are refused here
//! with the same kind of error. (The same comparison runs in wasm32 from
//! `tests/web.rs`; this file reads the fixtures from disk, so it is native.)
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::manifest::{compare, expected_refusal, kind_matches, observed};
use dendro::container::{sniff, FileKind};
use dendro::Archive;

/// Runs `check` on each fixture the original did not refuse, opened from
/// a copy, with its manifest; returns how many.
fn each_sound_fixture(
    mut check: impl FnMut(&std::path::Path, &Archive, &serde_json::Value),
) -> usize {
    let mut checked = 0;
    for (path, manifest) in common::read_fixtures() {
        if expected_refusal(&manifest).is_some() {
            continue;
        }
        let (_dir, copy) = common::copy_fixture(&path);
        let archive = Archive::open(&copy).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check(&path, &archive, &manifest);
        checked += 1;
    }
    checked
}

#[test]
fn every_sound_fixture_reads_back_its_manifest() {
    let checked = each_sound_fixture(|path, archive, manifest| {
        let ours = observed(archive, manifest["file"].as_str().unwrap()).unwrap();
        let mismatches = compare(manifest, &ours);
        assert!(
            mismatches.is_empty(),
            "{}:\n{}",
            path.display(),
            mismatches.join("\n")
        );
    });
    assert!(checked >= 6, "only {checked} sound fixtures found");
}

#[test]
fn every_refused_fixture_is_refused_with_the_manifests_kind() {
    let mut checked = 0;
    for (path, manifest) in common::fixtures() {
        let Some(kind) = expected_refusal(&manifest) else {
            continue;
        };
        let (_dir, copy) = common::copy_fixture(&path);
        let stamped = manifest["sniff"]["stamped"].as_bool().unwrap();
        let sniffed = sniff(&copy).unwrap();
        assert_eq!(
            matches!(sniffed, FileKind::Archive { .. }),
            stamped,
            "{}: sniff said {sniffed}",
            path.display()
        );
        if let Some(version) = manifest["sniff"]["version"].as_u64() {
            assert_eq!(
                sniffed,
                FileKind::Archive {
                    version: version as u32
                }
            );
        }
        let err = Archive::open(&copy).expect_err(&format!("{} must be refused", path.display()));
        assert!(
            kind_matches(&kind, &err),
            "{}: expected {kind}, got {} ({err})",
            path.display(),
            err.kind()
        );
        assert!(
            err.to_string().contains(copy.to_str().unwrap()),
            "the message names the file: {err}"
        );
        checked += 1;
    }
    assert!(checked >= 7, "only {checked} refusal fixtures found");
}

#[test]
fn fixtures_open_from_bytes_as_they_do_from_files() {
    for (path, manifest) in common::read_fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let name = manifest["file"].as_str().unwrap();
        match (
            expected_refusal(&manifest),
            Archive::from_bytes(name, &bytes),
        ) {
            (None, Ok(archive)) => {
                let ours = observed(&archive, name).unwrap();
                let mismatches = compare(&manifest, &ours);
                assert!(mismatches.is_empty(), "{name}:\n{}", mismatches.join("\n"));
            }
            (Some(kind), Err(err)) => assert!(kind_matches(&kind, &err), "{name}: {err}"),
            (Some(_), Ok(_)) => panic!("{name} must be refused from bytes too"),
            (None, Err(err)) => panic!("{name}: {err}"),
        }
    }
}

#[test]
fn the_manifest_comparison_notices_a_wrong_value_and_a_missing_key() {
    let (path, manifest) = common::fixtures()
        .into_iter()
        .find(|(_, m)| m["file"] == "b_multi_source.dendro")
        .unwrap();
    let (_dir, copy) = common::copy_fixture(&path);
    let archive = Archive::open(&copy).unwrap();
    let mut ours = observed(&archive, "b_multi_source.dendro").unwrap();
    ours["sources"][1]["streams"][0]["segments"][0]["decoded"]["columns"][1]["sum"] = "1".into();
    ours["sources"][0]["streams"][1]["live_tail"]
        .as_object_mut()
        .unwrap()
        .remove("raw_fnv");
    let mismatches = compare(&manifest, &ours);
    assert_eq!(mismatches.len(), 2, "{mismatches:#?}");
}

#[test]
fn a_whole_archive_read_hands_out_each_segment_exactly_as_stored() {
    let mut segments = 0;
    for (path, manifest) in common::read_fixtures() {
        if expected_refusal(&manifest).is_some() {
            continue;
        }
        let (_dir, copy) = common::copy_fixture(&path);
        let archive = Archive::open(&copy).unwrap();
        let whole = dendro::read::read_archive(&archive, &common::FixtureEncoder::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for source in &whole {
            for stream in &source.streams {
                let mut last_seq = None;
                for (record, bytes) in &stream.sealed {
                    let alone = dendro::read::segment_bytes(
                        &archive,
                        source.source.id,
                        &stream.name,
                        record.seq,
                    )
                    .unwrap();
                    assert_eq!(bytes.len() as i64, record.bytes, "{}", path.display());
                    assert_eq!(
                        &bytes[..],
                        &alone[..],
                        "{} seq {}",
                        path.display(),
                        record.seq
                    );
                    assert!(last_seq < Some(record.seq), "seq order");
                    last_seq = Some(record.seq);
                    segments += 1;
                }
            }
        }
    }
    assert!(segments >= 6, "only {segments} segments were compared");
}

/// The outline a reader in place shows first (`dendro::read::outline`)
/// says what the full description says, short of the listed segments:
/// the same sources, streams, live tails and caller rows, and for each
/// stream the same segment count and sealed span.
#[test]
fn every_sound_fixture_outlines_as_its_description_sums_up() {
    let mut checked = 0;
    each_sound_fixture(|path, archive, _| {
        let full = dendro::read::describe(archive).unwrap();
        let outline = dendro::read::outline(archive).unwrap();
        let mut expected_sealed = Vec::new();
        let mut stripped = full.clone();
        for source in &mut stripped.sources {
            for stream in &mut source.streams {
                if let Some((first, last)) = stream
                    .segments
                    .iter()
                    .map(|s| (s.first_ts, s.last_ts))
                    .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
                {
                    expected_sealed.push((
                        source.id,
                        stream.name.clone(),
                        stream.segments.len() as i64,
                        first,
                        last,
                    ));
                }
                stream.segments.clear();
                stream.sealed_rows = 0;
            }
        }
        assert_eq!(outline.description, stripped, "{}", path.display());
        let sealed: Vec<_> = outline
            .sealed
            .iter()
            .map(|o| {
                (
                    o.source_id,
                    o.stream.clone(),
                    o.segments,
                    o.first_ts,
                    o.last_ts,
                )
            })
            .collect();
        assert_eq!(sealed, expected_sealed, "{}", path.display());
        // The rows estimate is the first segment's rows times the count.
        for o in &outline.sealed {
            let listed = &full
                .sources
                .iter()
                .find(|s| s.id == o.source_id)
                .and_then(|s| s.streams.iter().find(|st| st.name == o.stream))
                .unwrap()
                .segments;
            let first = listed.iter().min_by_key(|g| g.seq).unwrap();
            assert_eq!(o.first_rows, first.rows, "{}", path.display());
            assert_eq!(o.rows_estimate(), first.rows * listed.len() as i64);
        }
        let segments: i64 = expected_sealed.iter().map(|s| s.2).sum();
        let count = archive.read_snapshot(|s| s.segment_count()).unwrap();
        assert_eq!(count, segments, "{}", path.display());
        checked += usize::from(!sealed.is_empty());
    });
    assert!(checked >= 4, "only {checked} fixtures with sealed segments");
}

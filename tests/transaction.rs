//! Catalog writes through `ArchiveMut`: source identity, immutability of
//! segments, the WAL key, metadata patches, all-or-nothing commits.
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

mod common;

use std::collections::BTreeMap;

use dendro::container::Transaction;
use dendro::{Archive, ArchiveMut, Labels};

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn fresh() -> (tempfile::TempDir, std::path::PathBuf, ArchiveMut) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.dendro");
    let archive = ArchiveMut::create(&path).unwrap();
    (dir, path, archive)
}

fn with_tx<T>(archive: &mut ArchiveMut, f: impl FnOnce(&Transaction<'_>) -> T) -> T {
    let tx = archive.transaction().unwrap();
    let out = f(&tx);
    tx.commit().unwrap();
    out
}

#[test]
fn a_minted_uuid_is_a_canonical_lowercase_v4_and_unique() {
    let (_d, _p, mut archive) = fresh();
    let ids = with_tx(&mut archive, |tx| {
        (0..20)
            .map(|i| {
                tx.insert_source(&labels(&[("n", &i.to_string())]), &Labels::new(), 0)
                    .unwrap()
            })
            .collect::<Vec<_>>()
    });
    let sources = archive.read_snapshot(|s| s.sources()).unwrap();
    assert_eq!(sources.len(), ids.len());
    let mut seen = std::collections::BTreeSet::new();
    for s in &sources {
        let u = s.source.uuid.as_deref().unwrap();
        let parsed = uuid::Uuid::parse_str(u).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
        assert_eq!(u, parsed.hyphenated().to_string(), "canonical lowercase");
        assert!(seen.insert(u.to_string()), "unique");
    }
}

#[test]
fn a_given_uuid_is_kept_and_a_malformed_one_refused() {
    let (_d, _p, mut archive) = fresh();
    let given = "4d8dd7da-ed6f-4b1c-9040-fcebac272209";
    let source = |uuid: Option<&str>| dendro::catalog::NewSource {
        uuid: uuid.map(str::to_string),
        labels: labels(&[("host", "a")]),
        metadata: labels(&[("k", "v")]),
        complete: true,
        clock_anchor_wall_ns: -5,
    };
    let id = with_tx(&mut archive, |tx| {
        for bad in [
            "not-a-uuid",
            "{4d8dd7da-ed6f-4b1c-9040-fcebac272209}",
            "4d8dd7daed6f4b1c9040fcebac272209",
        ] {
            assert!(
                tx.insert_source_with_uuid(&source(Some(bad))).is_err(),
                "{bad}"
            );
        }
        tx.insert_source_with_uuid(&source(Some(&given.to_uppercase())))
            .unwrap()
    });
    let s = archive.read_snapshot(|s| s.source(id)).unwrap();
    assert_eq!(
        s.source.uuid.as_deref(),
        Some(given),
        "stored in canonical lowercase"
    );
    assert!(s.source.complete);
    assert_eq!(s.source.clock_anchor_wall_ns, -5);
    assert_eq!(s.source.metadata, labels(&[("k", "v")]));
}

#[test]
fn segments_are_immutable_and_wal_rows_unique_per_stream_and_ts() {
    let (_d, _p, mut archive) = fresh();
    let enc = common::FixtureEncoder::default();
    let seg = dendro::segment::materialize("t", &enc, "s", &common::rows_at(&[1, 2]))
        .unwrap()
        .unwrap();
    let tx = archive.transaction().unwrap();
    let id = tx.insert_source(&Labels::new(), &Labels::new(), 0).unwrap();
    tx.insert_segment(id, "s", 0, &seg).unwrap();
    assert!(
        tx.insert_segment(id, "s", 0, &seg).is_err(),
        "same seq twice"
    );
    tx.insert_wal_rows(id, "s", &common::rows_at(&[5])).unwrap();
    assert!(
        tx.insert_wal_rows(id, "s", &common::rows_at(&[5])).is_err(),
        "same (stream, ts)"
    );
    tx.insert_wal_rows(id, "t", &common::rows_at(&[5])).unwrap(); // a sibling stream may
    assert!(
        tx.insert_segment(99, "s", 0, &seg).is_err(),
        "no such source"
    );
    tx.commit().unwrap();
}

#[test]
fn metadata_patches_set_and_remove_keys_and_clock_offsets_keep_the_first() {
    let (_d, path, mut archive) = fresh();
    let id = with_tx(&mut archive, |tx| {
        let id = tx
            .insert_source(&Labels::new(), &labels(&[("a", "1"), ("b", "2")]), 0)
            .unwrap();
        let patch: BTreeMap<String, Option<String>> = [
            ("a".to_string(), None),
            ("c".to_string(), Some("3".to_string())),
        ]
        .into();
        tx.patch_metadata(id, &patch).unwrap();
        tx.insert_clock_offset(id, 10, 111).unwrap();
        tx.insert_clock_offset(id, 10, 222).unwrap();
        tx.set_complete(id, true).unwrap();
        id
    });
    drop(archive);
    let reader = Archive::open(&path).unwrap();
    let s = reader.read_snapshot(|s| s.source(id)).unwrap();
    assert_eq!(s.source.metadata, labels(&[("b", "2"), ("c", "3")]));
    assert!(s.source.complete);
    let offsets = reader.read_snapshot(|s| s.clock_offsets(id)).unwrap();
    assert_eq!(offsets.len(), 1);
    assert_eq!(offsets[0].offset_ns, 111, "the first observation wins");
}

#[test]
fn an_uncommitted_transaction_leaves_nothing_behind() {
    let (_d, path, mut archive) = fresh();
    {
        let tx = archive.transaction().unwrap();
        tx.insert_source(&Labels::new(), &Labels::new(), 0).unwrap();
    }
    drop(archive);
    let reader = Archive::open(&path).unwrap();
    assert!(reader.read_snapshot(|s| s.sources()).unwrap().is_empty());
}

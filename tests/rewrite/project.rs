//! Column projection and exact copies.

use dendro::rewrite::{project, vacuum_into};
use dendro::write::Writer;
use dendro::{Archive, Error};

use crate::common::{copy_fixture, fixtures_dir, FixtureEncoder};
use crate::support::*;

#[test]
fn a_projection_keeps_the_named_columns_and_the_time_axis_and_drops_the_index() {
    let (dir, input) = copy_fixture(&fixtures_dir().join("g_caller_index.dendro"));
    let output = dir.path().join("value.dendro");
    let report = project(&input, &output, &["value".to_string()], false).unwrap();
    assert_eq!(report.reencoded, report.segments);
    let before = contents(&input);
    let after = contents(&output);
    // New uuids (another content), sources in the same order.
    assert_eq!(before.len(), after.len());
    fn by_labels(c: &std::collections::BTreeMap<String, SourceContents>) -> Vec<&SourceContents> {
        let mut v: Vec<_> = c.values().collect();
        v.sort_by_key(|s| (format!("{:?}", s.labels), s.anchor));
        v
    }
    for (source, projected) in by_labels(&before).into_iter().zip(by_labels(&after)) {
        for (stream, rows) in &source.sealed {
            let expected: Vec<Row> = rows
                .iter()
                .map(|r| {
                    r.iter()
                        .filter(|(k, _)| *k == "ts" || *k == "value")
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .collect();
            assert_eq!(projected.sealed[stream], expected, "{stream}");
        }
        assert_eq!(projected.live, source.live, "live rows are carried as rows");
        assert_eq!(projected.caller_rows, source.caller_rows);
    }
    let archive = Archive::open(&output).unwrap();
    let all = archive.read_snapshot(|s| s.all_segments()).unwrap();
    assert!(!all.is_empty() && all.iter().all(|s| !s.caller_index));
    assert_eq!(report.caller_indexes_dropped, report.segments);
    drop(archive);
    assert_sound(&output);
    let err = project(
        &input,
        dir.path().join("x.dendro"),
        &["nope".to_string()],
        false,
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid { message, .. } if message.contains("\"nope\"")),
        "{err}"
    );
}

#[test]
fn vacuum_into_copies_a_file_a_writer_holds_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.dendro");
    many_small(&path, 6, 5);
    let writer = Writer::open(&path, FixtureEncoder::default()).unwrap();
    let output = dir.path().join("exact.dendro");
    vacuum_into(&path, &output, false).unwrap();
    assert_eq!(contents(&path), contents(&output));
    assert_eq!(blobs(&path), blobs(&output));
    assert!(matches!(
        vacuum_into(&path, &output, false),
        Err(Error::Invalid { .. })
    ));
    drop(writer);
    assert_sound(&output);
}

#[test]
fn an_export_writes_each_segment_once_as_plain_parquet_with_a_catalog() {
    let (dir, b) = copy_fixture(&fixtures_dir().join("b_multi_source.dendro"));
    let (_d2, a) = copy_fixture(&fixtures_dir().join("a_single_sealed.dendro"));
    let out = dir.path().join("export");
    // b twice: its sources are one directory each, no file written twice.
    let report = dendro::rewrite::export(&[&a, &b, &b], &out, false).unwrap();
    let mut expected = blobs(&a);
    expected.extend(blobs(&b));
    let files: usize = expected.values().map(Vec::len).sum();
    assert_eq!(report.files, files);
    for ((uuid, stream), segments) in &expected {
        for (seq, (bytes, _)) in segments.iter().enumerate() {
            let path = out.join(format!(
                "source={uuid}/stream={}/seq={seq}.parquet",
                dendro::rewrite::hive_escape(stream)
            ));
            assert_eq!(&std::fs::read(&path).unwrap(), bytes, "{}", path.display());
        }
    }
    let catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("catalog.json")).unwrap()).unwrap();
    assert_eq!(catalog["format"], dendro::rewrite::EXPORT_FORMAT);
    assert_eq!(catalog["sources"].as_array().unwrap().len(), 3);
    let live: i64 = Archive::open(&b)
        .unwrap()
        .read_snapshot(|s| s.all_live_spans())
        .unwrap()
        .iter()
        .map(|(_, _, span)| span.rows)
        .sum();
    assert_eq!(
        report.live_rows_not_exported, live,
        "b's live rows, counted once per copy"
    );
    assert!(matches!(
        dendro::rewrite::export(&[&a], &out, false),
        Err(Error::Invalid { .. })
    ));
}

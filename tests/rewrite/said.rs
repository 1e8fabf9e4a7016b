//! A rewrite that drops or changes something says so: compaction counts
//! the caller indexes it dropped, a projection is a new source with a new
//! uuid, and an export carries the typed live tail `cat` reads.

use dendro::rewrite::{compact, export, project, CompactSpec, Target};
use dendro::Archive;

use crate::support::*;

/// Segments with a caller index, across the archive.
fn indexed(path: &std::path::Path) -> usize {
    blobs(path)
        .values()
        .flatten()
        .filter(|(_, index)| index.is_some())
        .count()
}

#[test]
fn compaction_reports_the_caller_indexes_it_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.dendro");
    many_small(&path, 12, 5);
    let before = indexed(&path);
    assert_eq!(before, 12, "the fixture encoder gives every segment one");
    let spec = CompactSpec {
        target: Target::Rows(20),
        union_fields: false,
    };
    let report = compact(&path, &spec, |_| {}).unwrap();
    assert!(report.runs > 0);
    let after = indexed(&path);
    assert!(after < before);
    assert_eq!(report.caller_indexes_dropped, before - after);
}

#[test]
fn a_projection_is_a_new_source_with_a_uuid_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("a.dendro");
    build(&input, "h", |tx, id| {
        tx.insert_segment(id, "s", 0, &custom_segment(&[1, 2, 3], "ms", Some("extra")))
            .unwrap();
    });
    let output = dir.path().join("p.dendro");
    let report = project(&input, &output, &["value".to_string()], false).unwrap();
    assert_eq!(report.caller_indexes_dropped, 1);
    let uuids = |p: &std::path::Path| -> Vec<String> {
        Archive::open(p)
            .unwrap()
            .read_snapshot(|s| s.sources())
            .unwrap()
            .into_iter()
            .map(|s| s.source.uuid.unwrap())
            .collect()
    };
    let (old, new) = (uuids(&input), uuids(&output));
    assert_eq!(new.len(), 1);
    assert_ne!(old, new, "the projection claims to be the same source");
    assert!(dendro::catalog::is_canonical_uuid(&new[0]), "{new:?}");
    // Combined with its original, it stays a source apart.
    let both = dir.path().join("both.dendro");
    let combined = dendro::rewrite::combine(&both, &[&input, &output], false).unwrap();
    assert_eq!(combined.sources, 2);
}

/// The rows of every Parquet file of one stream directory.
fn parquet_rows(dir: &std::path::Path) -> i64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .map(|p| {
            dendro::segment::decode_segment(std::fs::read(p).unwrap(), None)
                .unwrap()
                .iter()
                .map(|b| b.num_rows() as i64)
                .sum::<i64>()
        })
        .sum()
}

#[cfg(feature = "demo")]
#[test]
fn an_export_holds_the_typed_live_tail_that_cat_reads() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("demo.dendro");
    let options = dendro::demo::DemoOptions {
        hosts: 1,
        duration: std::time::Duration::from_secs(12 * 60),
        ..Default::default()
    };
    dendro::demo::write_demo(&input, options).unwrap();
    let out = dir.path().join("export");
    export(&[&input], &out, false).unwrap();
    let archive = Archive::open(&input).unwrap();
    let catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("catalog.json")).unwrap()).unwrap();
    let mut live_total = 0;
    for source in catalog["sources"].as_array().unwrap() {
        let id = archive
            .read_snapshot(|s| s.find_source(source["uuid"].as_str().unwrap()))
            .unwrap()
            .id;
        for stream in source["streams"].as_array().unwrap() {
            let name = stream["name"].as_str().unwrap();
            // What `cat` prints: the sealed rows and the materialized tail.
            let read =
                dendro::read::stream_range(&archive, id, name, i64::MIN, i64::MAX, None).unwrap();
            let sealed: i64 = read.segments.iter().map(|s| s.rows).sum();
            let live = match read.tail {
                dendro::read::Tail::Materialized(tail) => tail.rows,
                dendro::read::Tail::Empty => 0,
                dendro::read::Tail::Unread(span) => panic!("{name}: a typed tail unread: {span:?}"),
            };
            live_total += live;
            let exported = parquet_rows(&out.join(stream["directory"].as_str().unwrap()));
            assert_eq!(
                exported,
                sealed + live,
                "{name}: the export lacks rows cat reads"
            );
        }
    }
    assert!(live_total > 0, "the demo has a live tail");
}

#[test]
fn an_export_counts_the_caller_rows_it_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("a.dendro");
    many_small(&input, 3, 4);
    let out = dir.path().join("export");
    // The input twice: one source, its rows counted once.
    let report = export(&[&input, &input], &out, false).unwrap();
    assert_eq!(report.caller_rows_not_exported, 2);
    let catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("catalog.json")).unwrap()).unwrap();
    assert_eq!(catalog["sources"][0]["caller_rows_not_exported"]["s"], 2);
}

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
    for (uuid, source) in &before {
        let projected = &after[uuid];
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

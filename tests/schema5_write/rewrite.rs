//! Copies of schema-5 archives keep every caller index and every document
//! revision as the original's 0.6.1 reads them, or refuse in words.

use std::path::Path;

use dendro::container::CreateSchema;
use dendro::rewrite::{self, CopySpec};
use dendro::ArchiveMut;
use rusqlite::Connection;

use crate::common::{copy_fixture, fixtures_dir};
use crate::original;

fn s5(name: &str) -> std::path::PathBuf {
    fixtures_dir().join(format!("schema5/{name}.dendro"))
}

fn version(path: &Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

/// Asserts `out` holds, as 0.6.1 reads them, every document revision of
/// each of `inputs` and, stream by stream, the same caller indexes.
fn assert_carried(test: &str, inputs: &[&Path], out: &Path) {
    let Some(got) = original::describe(test, out) else {
        return;
    };
    assert_eq!(got["schema_version"], 5, "{}", got["open"]);
    assert_eq!(got["layout"]["index_layout"], "segment_indexes");
    let revisions = original::revisions_by_uuid(&got);
    let indexes = original::indexes_by_stream(&got);
    for input in inputs {
        let Some(had) = original::describe(test, input) else {
            return;
        };
        for (uuid, revision) in original::revisions_by_uuid(&had) {
            assert_eq!(
                revisions.get(&uuid),
                Some(&revision),
                "revision {uuid} of {input:?}"
            );
        }
        for (key, held) in original::indexes_by_stream(&had) {
            assert_eq!(
                indexes.get(&key),
                Some(&held),
                "indexes of {key:?} from {input:?}"
            );
        }
    }
    original::assert_sound(test, out, 5);
}

#[test]
fn a_copy_of_a_schema_5_archive_is_schema_5_with_every_index_and_revision() {
    let test = "schema5_write::rewrite::a_copy_of_a_schema_5_archive";
    let dir = tempfile::tempdir().unwrap();
    for name in ["s5a_multi_source", "s5b_retention"] {
        let out = dir.path().join(format!("{name}.copy.dendro"));
        let report = rewrite::copy(s5(name), &out, &CopySpec::default()).unwrap();
        assert_eq!(report.schema_version, 5);
        assert_eq!(version(&out), 5);
        assert!(report.documents > 0);
        assert_carried(test, &[&s5(name)], &out);
    }
}

#[test]
fn combining_schema_4_and_5_gives_schema_5_and_a_revision_held_twice_is_written_once() {
    let test = "schema5_write::rewrite::combining_schema_4_and_5";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("all.dendro");
    let four = fixtures_dir().join("g_caller_index.dendro");
    let (_keep, again) = copy_fixture(&s5("s5a_multi_source"));
    let inputs = [
        s5("s5a_multi_source"),
        four.clone(),
        s5("s5b_retention"),
        again,
    ];
    let report = rewrite::combine(&out, &inputs, false).unwrap();
    assert_eq!(report.schema_version, 5);
    assert_eq!(report.documents, 5 + 1);
    assert_eq!(report.documents_held_twice, 5);
    assert!(report.document_forks.is_empty());
    let ins: Vec<&Path> = inputs.iter().map(|p| p.as_path()).collect();
    assert_carried(test, &ins[..3], &out);
}

#[test]
fn schema_4_asked_over_documents_is_refused_and_schema_5_asked_moves_indexes_to_their_table() {
    let test = "schema5_write::rewrite::schema_4_asked_over_documents";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("four.dendro");
    let spec = CopySpec {
        schema: Some(CreateSchema::V4),
        ..CopySpec::default()
    };
    let err = rewrite::copy(s5("s5a_multi_source"), &out, &spec)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("four.dendro") && err.contains("documents"),
        "{err}"
    );
    assert!(!out.exists(), "a refused copy leaves nothing");
    // A schema-4 input copied as 5: the same indexes, now in the table.
    let four = fixtures_dir().join("g_caller_index.dendro");
    let five = dir.path().join("five.dendro");
    let spec = CopySpec {
        schema: Some(CreateSchema::V5),
        ..CopySpec::default()
    };
    let report = rewrite::copy(&four, &five, &spec).unwrap();
    assert_eq!((report.schema_version, version(&five)), (5, 5));
    assert_carried(test, &[&four], &five);
    // And schema 4 stays the default for a schema-4 input.
    let plain = dir.path().join("plain.dendro");
    assert_eq!(
        rewrite::copy(&four, &plain, &CopySpec::default())
            .unwrap()
            .schema_version,
        4
    );
    assert_eq!(version(&plain), 4);
}

#[test]
fn two_files_that_changed_one_document_apart_combine_into_a_reported_fork_newest_current() {
    let test = "schema5_write::rewrite::two_files_that_changed_one_document_apart";
    let (_a_dir, a) = copy_fixture(&s5("s5a_multi_source"));
    let (_b_dir, b) = copy_fixture(&s5("s5a_multi_source"));
    ArchiveMut::open(&a)
        .unwrap()
        .put_document(
            "viewer.view",
            "overview",
            "viewer.view/3",
            r#"{"from":"a"}"#,
        )
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    ArchiveMut::open(&b)
        .unwrap()
        .put_document(
            "viewer.view",
            "overview",
            "viewer.view/3",
            r#"{"from":"b"}"#,
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("forked.dendro");
    let report = rewrite::combine(&out, &[&a, &b], false).unwrap();
    assert_eq!(report.documents, 7);
    assert_eq!(
        report.document_forks.len(),
        1,
        "{:?}",
        report.document_forks
    );
    let fork = &report.document_forks[0];
    assert_eq!(
        (fork.kind.as_str(), fork.name.as_str()),
        ("viewer.view", "overview")
    );
    assert_eq!(fork.revisions.len(), 2);
    let Some(got) = original::describe(test, &out) else {
        return;
    };
    let current = got["documents"]["current_documents"].as_array().unwrap();
    let overview = current.iter().find(|d| d["name"] == "overview").unwrap();
    assert_eq!(
        overview["body"], r#"{"from":"b"}"#,
        "the newer edit is current"
    );
    assert_carried(test, &[&a, &b], &out);
}

#[test]
fn vacuum_into_project_and_compact_of_a_schema_5_archive_keep_it_5_with_its_documents() {
    let test = "schema5_write::rewrite::vacuum_into_project_and_compact";
    let dir = tempfile::tempdir().unwrap();
    let input = s5("s5a_multi_source");
    let exact = dir.path().join("exact.dendro");
    rewrite::vacuum_into(&input, &exact, false).unwrap();
    assert_carried(test, &[&input], &exact);
    let projected = dir.path().join("projected.dendro");
    let report = rewrite::project(&input, &projected, &["value".to_string()], false).unwrap();
    assert_eq!((report.schema_version, report.documents), (5, 5));
    assert!(
        report.caller_indexes_dropped > 0,
        "a projection drops indexes, and says so"
    );
    let (_keep, compacted) = copy_fixture(&input);
    let spec = rewrite::CompactSpec {
        target: rewrite::Target::Rows(1_000),
        union_fields: false,
    };
    rewrite::compact(&compacted, &spec, |_| {}).unwrap();
    assert_eq!(version(&compacted), 5);
    let Some(got) = original::describe(test, &compacted) else {
        return;
    };
    let Some(had) = original::describe(test, &input) else {
        return;
    };
    assert_eq!(
        original::revisions_by_uuid(&got),
        original::revisions_by_uuid(&had)
    );
    assert_eq!(got["segment_indexes"]["orphans"], 0);
    original::assert_sound(test, &compacted, 5);
    if let Some(p) = original::describe(test, &projected) {
        assert_eq!(
            original::revisions_by_uuid(&p),
            original::revisions_by_uuid(&had)
        );
    }
}

#[test]
fn an_export_of_a_schema_5_archive_carries_its_indexes_and_revisions_in_catalog_json() {
    let test = "schema5_write::rewrite::an_export_of_a_schema_5_archive";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("export");
    let input = s5("s5a_multi_source");
    let report = rewrite::export(&[&input], &out, false).unwrap();
    assert_eq!((report.documents, report.caller_indexes), (5, 11));
    let catalog: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("catalog.json")).unwrap()).unwrap();
    let segments: Vec<&serde_json::Value> = catalog["sources"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["streams"].as_array().unwrap())
        .flat_map(|s| s["segments"].as_array().unwrap())
        .collect();
    let hex: Vec<&str> = segments
        .iter()
        .filter_map(|s| s["caller_index_hex"].as_str())
        .collect();
    assert_eq!(hex.len(), 11);
    assert_eq!(
        hex.iter().filter(|h| h.is_empty()).count(),
        1,
        "the empty index stays empty"
    );
    let Some(had) = original::describe(test, &input) else {
        return;
    };
    let want = original::revisions_by_uuid(&had);
    let got = catalog["documents"].as_array().unwrap();
    assert_eq!(got.len(), want.len());
    for revision in got {
        let theirs = &want[revision["uuid"].as_str().unwrap()];
        for key in [
            "kind",
            "name",
            "schema",
            "body",
            "created_wall_ns",
            "supersedes",
        ] {
            assert_eq!(revision[key], theirs[key], "{key} of {revision}");
        }
    }
}

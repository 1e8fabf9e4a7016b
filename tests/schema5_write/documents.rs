//! The documents API: a put or delete appends a revision superseding the
//! current one; reserved kinds, bodies that are not JSON, deleting what is
//! not there, and a schema-4 file are refused in words naming the file.

use dendro::container::CreateSchema;
use dendro::ArchiveMut;
use rusqlite::Connection;

type Row = (
    i64,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<i64>,
);

fn revisions(path: &std::path::Path) -> Vec<Row> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, kind, name, schema, body, supersedes FROM documents ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
        ))
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

#[test]
fn puts_and_deletes_append_revisions_each_superseding_the_current_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("docs.dendro");
    let mut archive = ArchiveMut::create_with_schema(&path, CreateSchema::V5).unwrap();
    let a1 = archive
        .put_document("viewer.view", "main", "viewer.view/1", r#"{"w":1}"#)
        .unwrap();
    let b1 = archive
        .put_document("notes.text", "ünï ✓", "notes.text/1", "[]")
        .unwrap();
    let a2 = archive
        .put_document("viewer.view", "main", "viewer.view/2", r#"{"w":2}"#)
        .unwrap();
    let a3 = archive.delete_document("viewer.view", "main").unwrap();
    let a4 = archive
        .put_document("viewer.view", "main", "viewer.view/2", "null")
        .unwrap();
    drop(archive);
    let s = |t: &str| Some(t.to_string());
    assert_eq!(
        revisions(&path),
        vec![
            (
                a1,
                "viewer.view".into(),
                "main".into(),
                s("viewer.view/1"),
                s(r#"{"w":1}"#),
                None
            ),
            (
                b1,
                "notes.text".into(),
                "ünï ✓".into(),
                s("notes.text/1"),
                s("[]"),
                None
            ),
            (
                a2,
                "viewer.view".into(),
                "main".into(),
                s("viewer.view/2"),
                s(r#"{"w":2}"#),
                Some(a1)
            ),
            (
                a3,
                "viewer.view".into(),
                "main".into(),
                None,
                None,
                Some(a2)
            ),
            (
                a4,
                "viewer.view".into(),
                "main".into(),
                s("viewer.view/2"),
                s("null"),
                Some(a3)
            ),
        ]
    );
    // Each revision has its own canonical uuid and a wall-clock stamp.
    let conn = Connection::open(&path).unwrap();
    let (uuids, valid, stamped): (i64, i64, i64) = conn
        .query_row(
            "SELECT COUNT(DISTINCT uuid), SUM(length(uuid) = 36 AND uuid = lower(uuid)),
                    SUM(created_wall_ns > 1600000000000000000) FROM documents",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((uuids, valid, stamped), (5, 5, 5));
}

#[test]
fn reserved_kinds_bad_bodies_and_absent_documents_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("refuse.dendro");
    let mut archive = ArchiveMut::create_with_schema(&path, CreateSchema::V5).unwrap();
    let err = archive
        .put_document("dendro.view", "x", "s/1", "{}")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refuse.dendro") && err.contains("reserved"),
        "{err}"
    );
    let err = archive
        .delete_document("dendro.anything", "x")
        .unwrap_err()
        .to_string();
    assert!(err.contains("reserved"), "{err}");
    let err = archive
        .put_document("a.b", "x", "s/1", "{not json")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refuse.dendro") && err.contains("not JSON"),
        "{err}"
    );
    let err = archive.delete_document("a.b", "x").unwrap_err().to_string();
    assert!(
        err.contains("refuse.dendro") && err.contains("not found"),
        "{err}"
    );
    archive.put_document("a.b", "x", "s/1", "1").unwrap();
    archive.delete_document("a.b", "x").unwrap();
    let err = archive.delete_document("a.b", "x").unwrap_err().to_string();
    assert!(err.contains("not found"), "deleting twice: {err}");
    drop(archive);
    assert_eq!(revisions(&path).len(), 2);
}

#[test]
fn a_schema_4_archive_refuses_documents_naming_the_file_and_the_way_to_schema_5() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("four.dendro");
    let mut archive = ArchiveMut::create(&path).unwrap();
    for err in [
        archive.put_document("a.b", "x", "s/1", "{}").unwrap_err(),
        archive.delete_document("a.b", "x").unwrap_err(),
    ] {
        let err = err.to_string();
        assert!(err.contains("four.dendro"), "{err}");
        assert!(
            err.contains("schema 5") && err.contains("schema 4") && err.contains("copy"),
            "{err}"
        );
    }
}

//! A schema-5 archive is created only when asked, with the catalog 0.6.1
//! lays down, statement for statement.

use dendro::container::CreateSchema;
use dendro::ArchiveMut;
use rusqlite::Connection;
use serde_json::Value;

use crate::common::fixtures_dir;

/// `sqlite_master` as the manifests list it: type, name, table, SQL.
fn catalog_of(path: &std::path::Path) -> Vec<(String, String, String, Option<String>)> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid")
        .unwrap();
    stmt.query_map([], |r| {
        let sql: Option<String> = r.get(3)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            sql.as_deref().map(statement),
        ))
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

/// A statement as SQLite parses it: `--` comments dropped and runs of
/// white space made one space, so two catalogs compare by what they
/// declare, not by how their authors explained it.
fn statement(sql: &str) -> String {
    sql.lines()
        .map(|line| line.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("( ", "(")
        .replace(" )", ")")
}

fn stamps(path: &std::path::Path) -> (i64, i64) {
    let conn = Connection::open(path).unwrap();
    let get = |p: &str| {
        conn.query_row(&format!("PRAGMA {p}"), [], |r| r.get(0))
            .unwrap()
    };
    (get("application_id"), get("user_version"))
}

#[test]
fn a_schema_5_archive_has_the_catalog_the_originals_0_6_1_writes_statement_for_statement() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("five.dendro");
    drop(ArchiveMut::create_with_schema(&path, CreateSchema::V5).unwrap());
    let ours = catalog_of(&path);
    for manifest in ["s5a_multi_source", "s5b_retention"] {
        let text = std::fs::read_to_string(
            fixtures_dir().join(format!("schema5/{manifest}.manifest.json")),
        )
        .unwrap();
        let manifest: Value = serde_json::from_str(&text).unwrap();
        let theirs: Vec<(String, String, String, Option<String>)> = manifest["schema5"]
            ["catalog_sql"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                let s = |k: &str| row[k].as_str().unwrap().to_string();
                (
                    s("type"),
                    s("name"),
                    s("tbl_name"),
                    row["sql"].as_str().map(statement),
                )
            })
            .collect();
        assert_eq!(ours, theirs, "{manifest}");
        let (app, version) = stamps(&path);
        assert_eq!(app, manifest["schema5"]["application_id"].as_i64().unwrap());
        assert_eq!(version, 5);
    }
}

#[test]
fn a_new_archive_is_schema_4_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let default = dir.path().join("default.dendro");
    drop(ArchiveMut::create(&default).unwrap());
    assert_eq!(stamps(&default).1, 4);
    let names: Vec<String> = catalog_of(&default).into_iter().map(|r| r.1).collect();
    assert!(
        !names
            .iter()
            .any(|n| n == "documents" || n == "segment_indexes"),
        "{names:?}"
    );
    let writer = dir.path().join("writer.dendro");
    let w = dendro::Writer::create(&writer, crate::common::FixtureEncoder::default()).unwrap();
    w.join().unwrap();
    assert_eq!(stamps(&writer).1, 4);
    assert_eq!(CreateSchema::default(), CreateSchema::V4);
    assert_eq!(CreateSchema::from_version(5), Some(CreateSchema::V5));
    assert_eq!(CreateSchema::from_version(3), None);
    assert_eq!(CreateSchema::V4.max(CreateSchema::V5), CreateSchema::V5);
    assert_eq!(CreateSchema::V4.max(CreateSchema::V4), CreateSchema::V4);
}

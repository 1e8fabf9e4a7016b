//! What the catalog's unit tests share: a catalog in memory holding the
//! rows a test lays down, and the plan SQLite makes for a statement on it.

use rusqlite::Connection;

use super::Snapshot;
use crate::container::{CatalogShape, SCHEMA_SQL};

/// A catalog of the current schema in memory, holding `rows` (statements,
/// run with foreign keys off so a test need not lay down the sources).
pub(super) fn catalog_with(rows: &str) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(SCHEMA_SQL).unwrap();
    conn.execute_batch(&format!("PRAGMA foreign_keys = OFF; {rows}"))
        .unwrap();
    conn
}

/// A snapshot over `conn`, as a reader makes one over a current file.
pub(super) fn snapshot(conn: &Connection) -> Snapshot<'_> {
    snapshot_with(conn, CatalogShape::CURRENT)
}

/// A snapshot over `conn` read as a file of `shape`.
pub(super) fn snapshot_with(conn: &Connection, shape: CatalogShape) -> Snapshot<'_> {
    Snapshot {
        conn,
        file: "t",
        shape,
    }
}

/// The two tables schema 5 adds, for the reads' tests (the layout the
/// original's 0.6 releases create; its `segments` lacks `caller_index`).
const SCHEMA_5_TABLES: &str = "
CREATE TABLE segment_indexes(
  source_id INTEGER NOT NULL, stream TEXT NOT NULL, seq INTEGER NOT NULL, bytes BLOB NOT NULL,
  PRIMARY KEY (source_id, stream, seq),
  FOREIGN KEY (source_id, stream, seq) REFERENCES segments(source_id, stream, seq) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE TABLE documents(
  id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, name TEXT NOT NULL,
  schema TEXT, body TEXT, created_wall_ns INTEGER NOT NULL,
  supersedes INTEGER REFERENCES documents(id),
  CHECK ((schema IS NULL) = (body IS NULL))
);
CREATE INDEX documents_by_name ON documents(kind, name, id);";

/// A catalog of `shape`'s layout in memory (schema 4 as created, or
/// schema 5 without `segments.caller_index`), holding `rows`.
pub(super) fn catalog_with_layout(shape: CatalogShape, rows: &str) -> Connection {
    if shape.layout.version != crate::format::SCHEMA_5 {
        return catalog_with(rows);
    }
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(&SCHEMA_SQL.replace("  caller_index BLOB,\n", ""))
        .unwrap();
    conn.execute_batch(SCHEMA_5_TABLES).unwrap();
    conn.execute_batch(&format!("PRAGMA foreign_keys = OFF; {rows}"))
        .unwrap();
    conn
}

/// What SQLite plans for `sql` on an empty catalog, one step an entry
/// (parameters bound to NULL).
pub(super) fn plan(sql: &str) -> Vec<String> {
    let conn = catalog_with("");
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let unbound = vec![rusqlite::types::Null; stmt.parameter_count()];
    stmt.query_map(rusqlite::params_from_iter(unbound), |r| {
        r.get::<_, String>(3)
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

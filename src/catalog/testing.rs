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
    Snapshot {
        conn,
        file: "t",
        shape: CatalogShape::CURRENT,
    }
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

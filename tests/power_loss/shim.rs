//! The shim checked against SQLite alone, so that the writer's tests rest
//! on something shown to work: a commit a sync made durable survives a cut,
//! and one that no sync covered does not.

use rusqlite::Connection;

use crate::support::fresh_dir;
use crate::vfs::{self, Unsynced};

fn rows(path: &std::path::Path) -> Vec<i64> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT x FROM t ORDER BY x").unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<rusqlite::Result<Vec<i64>>>().unwrap()
}

#[test]
fn a_commit_survives_a_power_cut_only_if_a_sync_covered_it() {
    let _shim = vfs::exclusive();
    for (synchronous, survives) in [("FULL", true), ("NORMAL", false), ("OFF", false)] {
        vfs::reset();
        let (_dir, path) = fresh_dir();
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
             CREATE TABLE t(x); INSERT INTO t VALUES (1);",
        )
        .unwrap();
        conn.execute_batch(&format!(
            "PRAGMA synchronous = {synchronous}; INSERT INTO t VALUES (2);"
        ))
        .unwrap();
        // The power goes at the very next write or sync: the close's
        // checkpoint, which would otherwise make everything durable.
        vfs::arm(vfs::counters().ops + 1);
        drop(conn);
        assert!(vfs::power_is_off(), "closing tried to checkpoint");
        vfs::restore(Unsynced::Lost);
        let expected = if survives { vec![1, 2] } else { vec![1] };
        assert_eq!(rows(&path), expected, "synchronous = {synchronous}");
    }
}

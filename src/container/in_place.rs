//! The container's half of reading payloads in place: SQLite, which owns
//! the schema, says where the `segments` table's b-tree starts and which
//! column holds a segment's bytes, and the pager, which never opens
//! SQLite, is handed that with the file it reads by range.

use std::rc::Weak;

use super::Archive;
use crate::pager::{serve_file, InPlace, PayloadTable};

/// Registers `file` as the file `archive` reads in place, so payloads
/// opened on its connection read by range. Held weakly: closing the
/// archive ends it. `false` when the archive's catalog does not say where
/// its payloads are (they are then read through SQLite).
pub fn serve_payloads(archive: &Archive, file: Weak<dyn InPlace>) -> bool {
    let Some(name) = archive.conn.path().map(str::to_string) else {
        return false;
    };
    // Where the table's b-tree starts and which column holds the payload.
    let place = archive.conn.query_row(
        "SELECT s.rootpage, p.cid FROM sqlite_schema AS s, pragma_table_info('segments') AS p \
         WHERE s.type = 'table' AND s.name = 'segments' AND p.name = 'bytes'",
        [],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
    );
    let Some((root, column)) = place.ok().and_then(|(root, column)| {
        Some((u32::try_from(root).ok()?, usize::try_from(column).ok()?))
    }) else {
        return false;
    };
    serve_file(name, file, PayloadTable { root, column });
    true
}

//! The catalog's DDL (format §3) and the check that a file carries it.

use rusqlite::OptionalExtension;

/// The five tables and two indexes with the columns and types the format
/// specifies, plus the two nullable `sources` columns (`heartbeat`,
/// `heartbeat_interval_ns`) that the original's later releases create
/// without a schema bump. We leave them NULL ("unknown"), but having them
/// keeps an archive we write usable by a writer of those releases. Other
/// implementations read and copy these tables, and select by name.
pub const SCHEMA_SQL: &str = "
CREATE TABLE sources(
  id INTEGER PRIMARY KEY,
  labels TEXT NOT NULL,
  metadata TEXT NOT NULL,
  complete INTEGER NOT NULL DEFAULT 0,
  clock_anchor_wall_ns INTEGER NOT NULL,
  uuid TEXT,
  heartbeat INTEGER,
  heartbeat_interval_ns INTEGER
);
CREATE TABLE segments(
  source_id INTEGER NOT NULL REFERENCES sources(id),
  stream TEXT NOT NULL,
  seq INTEGER NOT NULL,
  rows INTEGER NOT NULL,
  first_ts INTEGER NOT NULL,
  last_ts INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  caller_index BLOB,
  PRIMARY KEY (source_id, stream, seq)
);
CREATE INDEX segments_by_time ON segments(source_id, stream, last_ts);
CREATE TABLE wal(
  source_id INTEGER NOT NULL REFERENCES sources(id),
  stream TEXT NOT NULL,
  ts INTEGER NOT NULL,
  wall_offset INTEGER NOT NULL,
  row BLOB NOT NULL,
  PRIMARY KEY (source_id, stream, ts)
);
CREATE TABLE clock_offsets(
  source_id INTEGER NOT NULL REFERENCES sources(id),
  ts INTEGER NOT NULL,
  offset_ns INTEGER NOT NULL,
  PRIMARY KEY (source_id, ts)
);
CREATE TABLE caller_rows(
  source_id INTEGER NOT NULL REFERENCES sources(id),
  stream TEXT NOT NULL,
  ts INTEGER NOT NULL,
  blob BLOB NOT NULL
);
CREATE INDEX caller_rows_by_time ON caller_rows(source_id, stream, ts);
";

/// The tables a file must hold to be read as an archive.
pub const CATALOG_TABLES: [&str; 5] =
    ["sources", "segments", "wal", "clock_offsets", "caller_rows"];

/// What the reading rules need of a catalog beyond its table names, checked
/// when a file is opened: every column a reader selects, and the keys and
/// indexes the rules lean on. A file that lacks one is refused by name
/// rather than misread or read slowly: without the `wal` key a stream could
/// hold two rows at one timestamp, and without `segments_by_time` every
/// live-tail question would scan its stream's segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogShape {
    /// `sources.uuid` exists (it was added without a schema bump, so a v4
    /// archive from before it lacks it; readers then see every uuid as
    /// unknown).
    pub uuid: bool,
    /// `segments.caller_index` exists (likewise added later).
    pub caller_index: bool,
}

impl CatalogShape {
    /// The shape this build creates: every optional column present.
    pub const CURRENT: CatalogShape = CatalogShape {
        uuid: true,
        caller_index: true,
    };
}

/// Columns each table must have for the reading rules, and the optional
/// ones a reader treats as unknown when absent.
const REQUIRED_COLUMNS: [(&str, &[&str]); 5] = [
    (
        "sources",
        &[
            "id",
            "labels",
            "metadata",
            "complete",
            "clock_anchor_wall_ns",
        ],
    ),
    (
        "segments",
        &[
            "source_id",
            "stream",
            "seq",
            "rows",
            "first_ts",
            "last_ts",
            "bytes",
        ],
    ),
    ("wal", &["source_id", "stream", "ts", "wall_offset", "row"]),
    ("clock_offsets", &["source_id", "ts", "offset_ns"]),
    ("caller_rows", &["source_id", "stream", "ts", "blob"]),
];

/// An index a rule relies on: its table, key columns in order, and whether
/// it must be unique (a key) or only lead with those columns.
struct NeededIndex {
    table: &'static str,
    columns: &'static [&'static str],
    unique: bool,
    why: &'static str,
}

const NEEDED_INDEXES: [NeededIndex; 3] = [
    NeededIndex {
        table: "wal",
        columns: &["source_id", "stream", "ts"],
        unique: true,
        why: "the primary key (source_id, stream, ts) of wal",
    },
    NeededIndex {
        table: "segments",
        columns: &["source_id", "stream", "seq"],
        unique: true,
        why: "the primary key (source_id, stream, seq) of segments",
    },
    NeededIndex {
        table: "segments",
        columns: &["source_id", "stream", "last_ts"],
        unique: false,
        why: "the index segments_by_time (source_id, stream, last_ts)",
    },
];

/// Checks the catalog's columns, keys and indexes (the table names were
/// checked before), answering which optional columns it has, or what is
/// missing, in words.
pub(crate) fn check_catalog(
    conn: &rusqlite::Connection,
) -> rusqlite::Result<Result<CatalogShape, String>> {
    let mut shape = CatalogShape {
        uuid: false,
        caller_index: false,
    };
    for (table, required) in REQUIRED_COLUMNS {
        // A table the reader reads by rowid (segment BLOBs are opened by
        // rowid) or as a plain table must be one: not a view, not virtual,
        // not WITHOUT ROWID.
        let kind: Option<(String, bool)> = conn
            .query_row(
                "SELECT type, wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
                [table],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        match kind {
            Some((kind, _)) if kind != "table" => {
                return Ok(Err(format!("{table} is a {kind}, not a table")))
            }
            Some((_, true)) => return Ok(Err(format!("{table} is a WITHOUT ROWID table"))),
            Some(_) => {}
            None => return Ok(Err(format!("the table {table} is missing"))),
        }
        let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
        let columns: Vec<String> = stmt
            .query_map([table], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if let Some(missing) = required.iter().find(|c| !columns.iter().any(|h| h == *c)) {
            return Ok(Err(format!("the column {table}.{missing} is missing")));
        }
        match table {
            "sources" => shape.uuid = columns.iter().any(|c| c == "uuid"),
            "segments" => shape.caller_index = columns.iter().any(|c| c == "caller_index"),
            _ => {}
        }
    }
    for needed in &NEEDED_INDEXES {
        if !has_index(conn, needed)? {
            return Ok(Err(format!("{} is missing", needed.why)));
        }
    }
    Ok(Ok(shape))
}

/// Whether `needed.table` has a complete (not partial) index whose leading
/// key columns are `needed.columns` in order, compared with the default
/// (binary) collation, and unique on exactly them when `needed.unique`.
fn has_index(conn: &rusqlite::Connection, needed: &NeededIndex) -> rusqlite::Result<bool> {
    let mut list = conn.prepare("SELECT name, \"unique\", partial FROM pragma_index_list(?1)")?;
    let indexes: Vec<(String, bool, bool)> = list
        .query_map([needed.table], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut keys =
        conn.prepare("SELECT name, coll FROM pragma_index_xinfo(?1) WHERE key = 1 ORDER BY seqno")?;
    for (name, unique, partial) in indexes {
        if partial || (needed.unique && !unique) {
            continue;
        }
        let columns: Vec<(Option<String>, String)> = keys
            .query_map([&name], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let leads = columns.len() >= needed.columns.len()
            && needed
                .columns
                .iter()
                .zip(&columns)
                .all(|(want, (have, coll))| {
                    have.as_deref() == Some(*want) && coll.eq_ignore_ascii_case("BINARY")
                });
        if leads && (!needed.unique || columns.len() == needed.columns.len()) {
            return Ok(true);
        }
    }
    Ok(false)
}

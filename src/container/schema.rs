//! The catalog's DDL (format §3) and the check that a file carries it.

use crate::format::{Layout, LayoutFacts};

/// The `sources` table, which schema 4 and schema 5 (`schema5.rs`) create
/// with the same text.
macro_rules! sources_table_sql {
    () => {
        "CREATE TABLE sources(
  id INTEGER PRIMARY KEY,
  labels TEXT NOT NULL,
  metadata TEXT NOT NULL,
  complete INTEGER NOT NULL DEFAULT 0,
  clock_anchor_wall_ns INTEGER NOT NULL,
  uuid TEXT,
  heartbeat INTEGER,
  heartbeat_interval_ns INTEGER
);
"
    };
}
pub(super) use sources_table_sql;

/// The statements of `wal`, `clock_offsets` and `caller_rows`, which
/// schema 4 and schema 5 (`schema5.rs`) create with the same text.
macro_rules! wal_tables_sql {
    () => {
        "CREATE TABLE wal(
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
"
    };
}
pub(super) use wal_tables_sql;

/// The five tables and two indexes with the columns and types the format
/// specifies, plus the two nullable `sources` columns (`heartbeat`,
/// `heartbeat_interval_ns`) that the original's later releases create
/// without a schema bump. We leave them NULL ("unknown"), but having them
/// keeps an archive we write usable by a writer of those releases. Other
/// implementations read and copy these tables, and select by name.
pub const SCHEMA_SQL: &str = concat!(
    "\n",
    sources_table_sql!(),
    "CREATE TABLE segments(
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
",
    wal_tables_sql!()
);

/// [`layout_sql_for`] schema 4: how the browser engine lays an empty
/// archive down in memory to warm itself up with (`src/wasm/mod.rs`).
#[cfg(any(target_arch = "wasm32", test))]
pub(crate) fn layout_sql(settings: &str) -> String {
    layout_sql_for(super::CreateSchema::V4, settings)
}

/// The statements that lay an empty archive of `schema` down on a fresh
/// connection: geometry (page size and auto-vacuum, which take effect only
/// before the first table), then `settings` (a writer's journal and sync
/// pragmas, or nothing), then the stamps and the catalog in one
/// transaction. Every archive we create is made with it.
#[cfg(any(feature = "write", target_arch = "wasm32", test))]
pub(crate) fn layout_sql_for(schema: super::CreateSchema, settings: &str) -> String {
    format!(
        "PRAGMA page_size = {page};
         PRAGMA auto_vacuum = INCREMENTAL;
         {settings}
         BEGIN;
         PRAGMA application_id = {app};
         PRAGMA user_version = {version};
         {schema}
         COMMIT;",
        page = super::PAGE_SIZE,
        app = super::APPLICATION_ID as i32,
        version = schema.version(),
        schema = schema.sql(),
    )
}

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
    /// What the file is: its schema version, where its caller indexes live
    /// (a v4 archive from before `segments.caller_index` has none), and
    /// whether it holds documents ([`crate::format::Layout::decide`]).
    pub layout: Layout,
}

impl CatalogShape {
    /// The shape this build creates by default: schema 4, every optional
    /// column present.
    pub const CURRENT: CatalogShape = CatalogShape {
        uuid: true,
        layout: Layout::SCHEMA_4,
    };
    /// A schema-5 file as the original's 0.6 releases create it.
    pub const SCHEMA_5: CatalogShape = CatalogShape {
        uuid: true,
        layout: Layout::SCHEMA_5,
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

/// Why [`check_catalog`] refused a file.
pub(crate) enum Missing {
    /// One of the five tables: typically a copy of the main file taken
    /// before creation checkpointed.
    Tables,
    /// A column, key or index the rules rely on, in words.
    Part(String),
    /// Tables of another schema version than the header states.
    Mismatch(crate::format::layout::Mismatch),
}

impl From<Missing> for crate::error::NotArchive {
    fn from(missing: Missing) -> Self {
        match missing {
            Missing::Tables => crate::error::NotArchive::NoCatalog,
            Missing::Part(what) => crate::error::NotArchive::IncompleteCatalog(what),
            Missing::Mismatch(mismatch) => crate::error::NotArchive::SchemaMismatch(mismatch),
        }
    }
}

/// Checks the catalog's tables, columns, keys and indexes, answering which
/// optional columns it has and what its layout is for `version` (the
/// header's, one this build reads), or what is missing. Three statements,
/// since this runs on every open.
pub(crate) fn check_catalog(
    conn: &rusqlite::Connection,
    version: u32,
) -> rusqlite::Result<Result<CatalogShape, Missing>> {
    // A table the reader reads by rowid (segment BLOBs are opened by rowid)
    // or as a plain table must be one: not a view, not virtual, not
    // WITHOUT ROWID.
    let mut tables = conn.prepare(
        "SELECT name, type, wr FROM pragma_table_list
         WHERE schema = 'main' AND name IN
           ('sources', 'segments', 'wal', 'clock_offsets', 'caller_rows', 'segment_indexes', 'documents')",
    )?;
    let kinds: Vec<(String, String, bool)> = tables
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut columns = conn.prepare(
        "SELECT 'sources', name FROM pragma_table_info('sources')
         UNION ALL SELECT 'segments', name FROM pragma_table_info('segments')
         UNION ALL SELECT 'wal', name FROM pragma_table_info('wal')
         UNION ALL SELECT 'clock_offsets', name FROM pragma_table_info('clock_offsets')
         UNION ALL SELECT 'caller_rows', name FROM pragma_table_info('caller_rows')
         UNION ALL SELECT 'segment_indexes', name FROM pragma_table_info('segment_indexes')
         UNION ALL SELECT 'documents', name FROM pragma_table_info('documents')",
    )?;
    let columns: Vec<(String, String)> = columns
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let has = |table: &str, column: &str| columns.iter().any(|(t, c)| t == table && c == column);
    if CATALOG_TABLES
        .iter()
        .any(|t| !kinds.iter().any(|(name, _, _)| name == t))
    {
        return Ok(Err(Missing::Tables));
    }
    for (table, required) in REQUIRED_COLUMNS {
        match kinds.iter().find(|(name, _, _)| name == table) {
            Some((_, kind, _)) if kind != "table" => {
                return Ok(Err(Missing::Part(format!(
                    "{table} is a {kind}, not a table"
                ))))
            }
            Some((_, _, true)) => {
                return Ok(Err(Missing::Part(format!(
                    "{table} is a WITHOUT ROWID table"
                ))))
            }
            Some(_) | None => {}
        }
        if let Some(missing) = required.iter().find(|c| !has(table, c)) {
            return Ok(Err(Missing::Part(format!(
                "the column {table}.{missing} is missing"
            ))));
        }
    }
    let indexes = index_keys(conn)?;
    for needed in &NEEDED_INDEXES {
        if !indexes.iter().any(|index| index.serves(needed)) {
            return Ok(Err(Missing::Part(format!("{} is missing", needed.why))));
        }
    }
    let present = |table: &str| kinds.iter().any(|(name, _, _)| name == table);
    for (table, required) in SCHEMA_5_COLUMNS {
        match kinds.iter().find(|(name, _, _)| name == table) {
            None => continue,
            Some((_, kind, _)) if kind != "table" => {
                return Ok(Err(Missing::Part(format!(
                    "{table} is a {kind}, not a table"
                ))))
            }
            Some(_) => {}
        }
        if let Some(missing) = required.iter().find(|c| !has(table, c)) {
            return Ok(Err(Missing::Part(format!(
                "the column {table}.{missing} is missing"
            ))));
        }
    }
    let facts = LayoutFacts {
        segment_indexes_table: present("segment_indexes"),
        caller_index_column: has("segments", "caller_index"),
        documents_table: present("documents"),
    };
    let layout = match Layout::decide(version, facts) {
        Ok(layout) => layout,
        Err(mismatch) => return Ok(Err(Missing::Mismatch(mismatch))),
    };
    Ok(Ok(CatalogShape {
        uuid: has("sources", "uuid"),
        layout,
    }))
}

/// One index of `wal` or `segments` as the rules judge it.
struct IndexKeys {
    table: String,
    unique: bool,
    partial: bool,
    /// Key columns in order, with their collation.
    keys: Vec<(Option<String>, String)>,
}

impl IndexKeys {
    /// Whether it is complete (not partial), leads with `needed.columns` in
    /// order under the default (binary) collation, and, where a key is
    /// needed, is unique on exactly them.
    fn serves(&self, needed: &NeededIndex) -> bool {
        if self.table != needed.table || self.partial || (needed.unique && !self.unique) {
            return false;
        }
        let leads = self.keys.len() >= needed.columns.len()
            && needed
                .columns
                .iter()
                .zip(&self.keys)
                .all(|(want, (have, coll))| {
                    have.as_deref() == Some(*want) && coll.eq_ignore_ascii_case("BINARY")
                });
        leads && (!needed.unique || self.keys.len() == needed.columns.len())
    }
}

fn index_keys(conn: &rusqlite::Connection) -> rusqlite::Result<Vec<IndexKeys>> {
    let mut stmt = conn.prepare(
        "SELECT t.tbl, il.name, il.\"unique\", il.partial, x.name, x.coll
         FROM (SELECT 'wal' AS tbl UNION ALL SELECT 'segments') AS t,
              pragma_index_list(t.tbl) AS il, pragma_index_xinfo(il.name) AS x
         WHERE x.key = 1 ORDER BY t.tbl, il.name, x.seqno",
    )?;
    let mut rows = stmt.query([])?;
    let mut out: Vec<(String, IndexKeys)> = Vec::new();
    while let Some(r) = rows.next()? {
        let table: String = r.get(0)?;
        let name: String = r.get(1)?;
        let key = (r.get::<_, Option<String>>(4)?, r.get::<_, String>(5)?);
        match out.last_mut() {
            Some((last, index)) if *last == name && index.table == table => index.keys.push(key),
            _ => out.push((
                name,
                IndexKeys {
                    table,
                    unique: r.get(2)?,
                    partial: r.get(3)?,
                    keys: vec![key],
                },
            )),
        }
    }
    Ok(out.into_iter().map(|(_, index)| index).collect())
}

/// Columns the schema-5 tables must have where they exist: what the reads
/// of `segment_indexes` and `documents` select.
const SCHEMA_5_COLUMNS: [(&str, &[&str]); 2] = [
    ("segment_indexes", &["source_id", "stream", "seq", "bytes"]),
    (
        "documents",
        &[
            "id",
            "uuid",
            "kind",
            "name",
            "schema",
            "body",
            "created_wall_ns",
            "supersedes",
        ],
    ),
];

/// The bytes of a small archive laid down in memory (a rollback-journal
/// file, as a serialized database is): one source and three catalog rows
/// whose payloads are zeros that spill to overflow pages, as a segment's
/// do. The browser engine opens it once to warm itself up before the
/// first archive is dropped; only its catalog is read, never a payload.
#[cfg(any(target_arch = "wasm32", test))]
pub(crate) fn warm_up_archive() -> rusqlite::Result<Vec<u8>> {
    let mut conn = rusqlite::Connection::open_in_memory()?;
    conn.execute_batch(&layout_sql(""))?;
    conn.execute_batch(
        "INSERT INTO sources(id, labels, metadata, clock_anchor_wall_ns) VALUES (1, '{}', '{}', 0);
         INSERT INTO segments VALUES
           (1, 'warm-up', 1, 1, 0, 0, zeroblob(8000), NULL),
           (1, 'warm-up', 2, 1, 1, 1, zeroblob(8000), NULL),
           (1, 'warm-up', 3, 1, 2, 2, zeroblob(8000), NULL);",
    )?;
    let bytes = conn.serialize(rusqlite::MAIN_DB)?.to_vec();
    Ok(bytes)
}

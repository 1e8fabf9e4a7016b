//! Schema 5's DDL (the original's 0.6 releases) and the choice of schema
//! an archive is created with. New archives are schema 4 unless asked:
//! every release of the original reads 4, only its 0.6 releases read 5.
//!
//! The tables, columns, keys and indexes are the ones 0.6.1 lays down, in
//! its order (checked against the fixtures' manifests with comments and
//! spacing set aside, `tests/schema5_write/create.rs`): a file we create
//! has the catalog a file it created has. The explanations are ours, here,
//! not in the stored SQL.

/// Which schema a new archive is laid down with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CreateSchema {
    /// Schema 4: caller indexes in `segments.caller_index`, no documents.
    /// Read by every release of the original.
    #[default]
    V4,
    /// Schema 5: caller indexes in `segment_indexes`, and the `documents`
    /// table. Read by the original's 0.6 releases and by this build.
    V5,
}

impl CreateSchema {
    /// The `user_version` stamped on the file.
    pub fn version(self) -> u32 {
        match self {
            CreateSchema::V4 => 4,
            CreateSchema::V5 => 5,
        }
    }

    /// The schema for a version number, `None` for one this build cannot
    /// create.
    pub fn from_version(version: u32) -> Option<CreateSchema> {
        match version {
            4 => Some(CreateSchema::V4),
            5 => Some(CreateSchema::V5),
            _ => None,
        }
    }

    /// The catalog's DDL for this schema.
    pub fn sql(self) -> &'static str {
        match self {
            CreateSchema::V4 => super::SCHEMA_SQL,
            CreateSchema::V5 => SCHEMA5_SQL,
        }
    }

    /// The stronger of two: what an output holding both inputs must be.
    pub fn max(self, other: CreateSchema) -> CreateSchema {
        if self == CreateSchema::V5 || other == CreateSchema::V5 {
            CreateSchema::V5
        } else {
            CreateSchema::V4
        }
    }
}

/// Schema 5's tables and indexes, in the order 0.6.1 creates them.
pub const SCHEMA5_SQL: &str = concat!(
    super::schema::sources_table_sql!(),
    "CREATE TABLE segments(
  source_id INTEGER NOT NULL REFERENCES sources(id),
  stream TEXT NOT NULL,
  seq INTEGER NOT NULL,
  rows INTEGER NOT NULL,
  first_ts INTEGER NOT NULL,
  last_ts INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  PRIMARY KEY (source_id, stream, seq)
);
CREATE TABLE segment_indexes(
  source_id INTEGER NOT NULL,
  stream TEXT NOT NULL,
  seq INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  PRIMARY KEY (source_id, stream, seq),
  FOREIGN KEY (source_id, stream, seq)
    REFERENCES segments(source_id, stream, seq) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX segments_by_time ON segments(source_id, stream, last_ts);
",
    super::schema::wal_tables_sql!(),
    "CREATE TABLE documents(
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  schema TEXT,
  body TEXT,
  created_wall_ns INTEGER NOT NULL,
  supersedes INTEGER REFERENCES documents(id),
  CHECK ((schema IS NULL) = (body IS NULL))
);
CREATE INDEX documents_by_name ON documents(kind, name, id);
"
);

/// Whether the file a connection is on keeps caller indexes in the
/// `segment_indexes` table (schema 5). The writer asks it where it stores
/// a segment's index; which layout a file is *read* with is decided when
/// it is opened.
#[cfg(feature = "write")]
pub(crate) fn stores_index_table(conn: &rusqlite::Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS(SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'segment_indexes')",
    )?
    .query_row([], |r| r.get(0))
}

//! Schema 5's DDL (the original's 0.6 releases) and the choice of schema
//! an archive is created with. New archives are schema 4 unless asked:
//! every release of the original reads 4, only its 0.6 releases read 5.
//!
//! The statements are the ones 0.6.1 stores in `sqlite_master`, character
//! for character and in its order (checked against the fixtures'
//! manifests, `tests/schema5_write.rs`), so a file we create cannot be told
//! from one it created by its catalog. Their comments are part of that
//! stored text.

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
    "CREATE TABLE sources(
  id INTEGER PRIMARY KEY,
  labels TEXT NOT NULL,               -- JSON
  metadata TEXT NOT NULL,             -- JSON
  complete INTEGER NOT NULL DEFAULT 0,
  clock_anchor_wall_ns INTEGER NOT NULL,
  -- The source's identity across files: minted at insert, carried verbatim
  -- by every copy, so whether two archives hold the same source is a
  -- comparison rather than a guess from labels. NULL only in archives
  -- written before the column existed; readers treat that as unknown.
  uuid TEXT,
  -- Bumped by a running writer every heartbeat_interval_ns, so a reader can
  -- tell a source still being written from one whose writer stopped. NULL in
  -- archives written before the columns existed; readers treat that as
  -- unknown.
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
  -- The revision's identity across files: minted at insert and carried by
  -- this crate's copies, so a copy that meets a revision it already holds
  -- skips it.
  uuid TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  -- The caller's name and version for the body's type. Stored, never read.
  -- NULL, with body, on a deletion.
  schema TEXT,
  -- JSON, checked to parse at insert and otherwise never read.
  body TEXT,
  created_wall_ns INTEGER NOT NULL,
  -- The revision that was current for (kind, name) when this one was
  -- written. Provenance only: the current revision is the newest by id.
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

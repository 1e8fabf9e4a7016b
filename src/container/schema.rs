//! The catalog's DDL (format §3) and the check that a file carries it.

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

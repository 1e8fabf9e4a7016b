//! Catalog writes through [`super::ArchiveMut`]: assembling an archive,
//! copying into one, recovery. The streaming writer uses the same inserts.

use std::collections::BTreeMap;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::catalog::{CallerRow, Labels, WalRow};
use crate::error::{Error, Result, SqlContext};
use crate::segment::Segment;

/// One write transaction. Dropped without [`Transaction::commit`], it rolls back.
pub struct Transaction<'a> {
    tx: rusqlite::Transaction<'a>,
    file: &'a str,
}

/// A source row as inserted: everything but the file-local id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewSource {
    /// The source's identity; `None` mints a fresh v4 uuid.
    pub uuid: Option<String>,
    /// The source's name.
    pub labels: Labels,
    /// Everything else; reserved keys in [`crate::format::keys`].
    pub metadata: Labels,
    /// Whether the source was cleanly finalized.
    pub complete: bool,
    /// The wall clock at the source's start, nanoseconds since the epoch.
    pub clock_anchor_wall_ns: i64,
}

impl<'a> Transaction<'a> {
    pub(crate) fn begin(conn: &'a Connection, file: &'a str) -> Result<Transaction<'a>> {
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
            .map_err(|e| Error::sqlite(file, "cannot begin a write transaction", e))?;
        Ok(Transaction { tx, file })
    }

    /// Makes every write in the transaction durable and visible at once.
    pub fn commit(self) -> Result<()> {
        self.tx.commit().ctx(self.file, "cannot commit")
    }

    /// Inserts a source with a freshly minted uuid and returns its id.
    pub fn insert_source(
        &self,
        labels: &Labels,
        metadata: &Labels,
        clock_anchor_wall_ns: i64,
    ) -> Result<i64> {
        self.insert_source_with_uuid(&NewSource {
            uuid: None,
            labels: labels.clone(),
            metadata: metadata.clone(),
            complete: false,
            clock_anchor_wall_ns,
        })
    }

    /// Inserts a source carrying the given identity (a copy of a source
    /// from another archive or from the wire) and returns its local id.
    /// An absent uuid mints a fresh one: unknown is never "the same".
    pub fn insert_source_with_uuid(&self, source: &NewSource) -> Result<i64> {
        let uuid = match &source.uuid {
            Some(given) => canonical_uuid(given).ok_or_else(|| Error::Invalid {
                file: self.file.to_string(),
                message: format!("{given:?} is not a canonical lowercase uuid"),
            })?,
            None => self.mint_uuid()?,
        };
        self.tx
            .execute(
                "INSERT INTO sources(labels, metadata, complete, clock_anchor_wall_ns, uuid)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    json_map(&source.labels),
                    json_map(&source.metadata),
                    source.complete as i64,
                    source.clock_anchor_wall_ns,
                    uuid
                ],
            )
            .ctx(self.file, "cannot insert a source")?;
        Ok(self.tx.last_insert_rowid())
    }

    /// A v4 uuid from SQLite's own random source, so no build of the crate
    /// needs an operating-system RNG.
    pub(crate) fn mint_uuid(&self) -> Result<String> {
        let random: Vec<u8> = self
            .tx
            .query_row("SELECT randomblob(16)", [], |r| r.get(0))
            .ctx(self.file, "cannot draw random bytes")?;
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&random);
        Ok(uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .hyphenated()
            .to_string())
    }

    /// Inserts a sealed segment at `seq`. Segments are immutable: a second
    /// insert at the same `(source, stream, seq)` is an error.
    pub fn insert_segment(
        &self,
        source_id: i64,
        stream: &str,
        seq: i64,
        segment: &Segment,
    ) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO segments(source_id, stream, seq, rows, first_ts, last_ts, bytes, caller_index)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    source_id,
                    stream,
                    seq,
                    segment.rows,
                    segment.first_ts,
                    segment.last_ts,
                    segment.bytes,
                    segment.caller_index
                ],
            )
            .ctx(self.file, &format!("cannot insert segment {seq} of {stream:?}"))?;
        Ok(())
    }

    /// Appends WAL rows to one stream. A repeated `(stream, ts)` fails the insert.
    pub fn insert_wal_rows(&self, source_id: i64, stream: &str, rows: &[WalRow]) -> Result<()> {
        let mut stmt = self
            .tx
            .prepare_cached("INSERT INTO wal(source_id, stream, ts, wall_offset, row) VALUES (?1, ?2, ?3, ?4, ?5)")
            .ctx(self.file, "cannot prepare a WAL insert")?;
        for row in rows {
            stmt.execute(params![source_id, stream, row.ts, row.wall_offset, row.row])
                .ctx(
                    self.file,
                    &format!("cannot append to stream {stream:?} at ts {}", row.ts),
                )?;
        }
        Ok(())
    }

    /// Stores rows in the caller's time-keyed store under `name`.
    pub fn insert_caller_rows(&self, source_id: i64, name: &str, rows: &[CallerRow]) -> Result<()> {
        let mut stmt = self
            .tx
            .prepare_cached(
                "INSERT INTO caller_rows(source_id, stream, ts, blob) VALUES (?1, ?2, ?3, ?4)",
            )
            .ctx(self.file, "cannot prepare a caller-row insert")?;
        for row in rows {
            stmt.execute(params![source_id, name, row.ts, row.blob])
                .ctx(self.file, "cannot insert a caller row")?;
        }
        Ok(())
    }

    /// Records a clock observation; the first at a timestamp wins.
    pub fn insert_clock_offset(&self, source_id: i64, ts: i64, offset_ns: i64) -> Result<()> {
        self.tx
            .execute(
                "INSERT OR IGNORE INTO clock_offsets(source_id, ts, offset_ns) VALUES (?1, ?2, ?3)",
                params![source_id, ts, offset_ns],
            )
            .ctx(self.file, "cannot insert a clock offset")?;
        Ok(())
    }

    /// Applies a patch to a source's metadata: `Some` sets a key, `None` removes it.
    pub fn patch_metadata(
        &self,
        source_id: i64,
        patch: &BTreeMap<String, Option<String>>,
    ) -> Result<()> {
        let current: Option<String> = self
            .tx
            .query_row(
                "SELECT metadata FROM sources WHERE id = ?1",
                [source_id],
                |r| r.get(0),
            )
            .optional()
            .ctx(self.file, "cannot read metadata")?;
        let current = current.ok_or_else(|| Error::NotFound {
            file: self.file.to_string(),
            what: format!("source {source_id}"),
        })?;
        let mut map = crate::catalog::parse_map(self.file, "metadata", &current)?;
        for (key, value) in patch {
            match value {
                Some(v) => map.insert(key.clone(), v.clone()),
                None => map.remove(key),
            };
        }
        self.tx
            .execute(
                "UPDATE sources SET metadata = ?1 WHERE id = ?2",
                params![json_map(&map), source_id],
            )
            .ctx(self.file, "cannot write metadata")?;
        Ok(())
    }

    /// Marks a source complete (finalized) or not.
    pub fn set_complete(&self, source_id: i64, complete: bool) -> Result<()> {
        self.tx
            .execute(
                "UPDATE sources SET complete = ?1 WHERE id = ?2",
                params![complete as i64, source_id],
            )
            .ctx(self.file, "cannot set complete")?;
        Ok(())
    }

    /// The underlying SQLite transaction, for the writer's own statements.
    #[allow(dead_code)]
    pub(crate) fn sql(&self) -> &rusqlite::Transaction<'a> {
        &self.tx
    }
}

/// Labels and metadata are stored as a JSON object of strings, keys sorted.
pub(crate) fn json_map(map: &Labels) -> String {
    serde_json::to_string(map).expect("a string map always serializes")
}

/// `Some(lowercase)` when `text` is a uuid in 8-4-4-4-12 form.
pub(crate) fn canonical_uuid(text: &str) -> Option<String> {
    let parsed = uuid::Uuid::try_parse(text).ok()?;
    let canonical = parsed.hyphenated().to_string();
    (canonical.eq_ignore_ascii_case(text)).then_some(canonical)
}

//! Typed reads of the five catalog tables (format §3), all through a
//! [`Snapshot`] so that a set of answers is consistent.
//!
//! The live-WAL rule (§3.3) is written once, as [`LIVE_WAL_PREDICATE`], and
//! every query that returns or counts WAL rows uses it.

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

pub use crate::container::Snapshot;
use crate::error::{Error, Result, SqlContext};

/// A string-to-string map: a source's labels or metadata.
pub type Labels = BTreeMap<String, String>;

/// The live-WAL rule: a WAL row is live iff no sealed segment of its own
/// stream reaches its timestamp, that is, iff it is past the stream's
/// watermark `MAX(last_ts)` or the stream has no segment at all. A row a
/// segment covers is shadowed whether or not the prune has deleted it, so
/// the seal seam needs no de-duplication. Written as a correlated
/// `NOT EXISTS` so that it serves per-stream and catalog-wide queries alike
/// and rides the `segments_by_time` index. Refers to the `wal` table by name.
pub const LIVE_WAL_PREDICATE: &str = "NOT EXISTS (
    SELECT 1 FROM segments AS sealed
    WHERE sealed.source_id = wal.source_id
      AND sealed.stream = wal.stream
      AND sealed.last_ts >= wal.ts)";

/// One row of `sources`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceRecord {
    /// File-local id; every copy renumbers it.
    pub id: i64,
    /// The identity across files; `None` in archives from before the column.
    pub uuid: Option<String>,
    /// The source's name.
    pub labels: Labels,
    /// Everything else, verbatim strings.
    pub metadata: Labels,
    /// Finalized cleanly; `false` means data after the last row may be missing.
    pub complete: bool,
    /// Wall clock at the source's start; row timestamps count from here.
    pub clock_anchor_wall_ns: i64,
}

/// One row of `segments`, without its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentRecord {
    /// The owning source.
    pub source_id: i64,
    /// The stream name.
    pub stream: String,
    /// Order within the stream; gaps are allowed.
    pub seq: i64,
    /// Rows the encoder reported.
    pub rows: i64,
    /// The segment's own first row timestamp.
    pub first_ts: i64,
    /// The segment's own last row timestamp.
    pub last_ts: i64,
    /// Length of the Parquet payload.
    pub bytes: i64,
    /// Whether a caller index is stored beside it.
    pub caller_index: bool,
}

/// One row as the writer appends it and an encoder consumes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRow {
    /// Anchored timestamp, nanoseconds.
    pub ts: i64,
    /// Wall clock minus `ts` at the moment of the row.
    pub wall_offset: i64,
    /// The encoder's bytes, opaque to the archive.
    pub row: Vec<u8>,
}

/// One row of the caller's time-keyed store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerRow {
    /// When the row applies from.
    pub ts: i64,
    /// The caller's bytes, never decoded.
    pub blob: Vec<u8>,
}

/// One clock observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockOffset {
    /// The row timestamp observed.
    pub ts: i64,
    /// Wall clock minus `ts` at that row.
    pub offset_ns: i64,
}

/// How many rows, between which timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Span {
    /// Row count.
    pub rows: i64,
    /// Oldest timestamp.
    pub first_ts: i64,
    /// Newest timestamp.
    pub last_ts: i64,
}

/// Parses a labels or metadata column. Non-string values are kept as their
/// JSON text rather than refused: the map is open, and a reader should show
/// what is there.
pub(crate) fn parse_map(file: &str, what: &str, text: &str) -> Result<Labels> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| Error::Corrupt {
        file: file.to_string(),
        detail: format!("{what} is not JSON: {e}"),
    })?;
    let serde_json::Value::Object(object) = value else {
        return Err(Error::Corrupt {
            file: file.to_string(),
            detail: format!("{what} is not a JSON object"),
        });
    };
    Ok(object
        .into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => (k, s),
            other => (k, other.to_string()),
        })
        .collect())
}

const SEGMENT_COLUMNS: &str =
    "source_id, stream, seq, rows, first_ts, last_ts, length(bytes), caller_index IS NOT NULL";

fn segment_record(r: &Row<'_>) -> rusqlite::Result<SegmentRecord> {
    Ok(SegmentRecord {
        source_id: r.get(0)?,
        stream: r.get(1)?,
        seq: r.get(2)?,
        rows: r.get(3)?,
        first_ts: r.get(4)?,
        last_ts: r.get(5)?,
        bytes: r.get(6)?,
        caller_index: r.get(7)?,
    })
}

fn wal_row(r: &Row<'_>) -> rusqlite::Result<WalRow> {
    Ok(WalRow {
        ts: r.get(0)?,
        wall_offset: r.get(1)?,
        row: r.get(2)?,
    })
}

fn span(r: &Row<'_>) -> rusqlite::Result<Option<Span>> {
    let rows: i64 = r.get(0)?;
    if rows == 0 {
        return Ok(None);
    }
    Ok(Some(Span {
        rows,
        first_ts: r.get(1)?,
        last_ts: r.get(2)?,
    }))
}

/// A segment's payload open for reading byte ranges
/// ([`Snapshot::segment_payload`]). Lives as long as the snapshot.
pub struct Payload<'s> {
    blob: rusqlite::blob::Blob<'s>,
    file: &'s str,
}

impl Payload<'_> {
    /// The payload's length in bytes.
    pub fn len(&self) -> usize {
        self.blob.len()
    }

    /// Whether the payload has no bytes.
    pub fn is_empty(&self) -> bool {
        self.blob.is_empty()
    }

    /// Fills `buf` from `offset`; a range past the end is an error.
    pub fn read_at(&self, offset: usize, buf: &mut [u8]) -> Result<()> {
        self.blob
            .read_at_exact(buf, offset)
            .ctx(self.file, "cannot read a segment's payload")
    }
}

impl Snapshot<'_> {
    fn collect<T>(
        &self,
        what: &str,
        sql: &str,
        params: impl rusqlite::Params,
        map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        let mut stmt = self.conn.prepare_cached(sql).ctx(self.file, what)?;
        let rows = stmt.query_map(params, map).ctx(self.file, what)?;
        rows.collect::<rusqlite::Result<Vec<T>>>()
            .ctx(self.file, what)
    }

    /// The schema version in the file's header, as SQLite reads it.
    pub fn schema_version(&self) -> Result<u32> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .ctx(self.file, "cannot read the schema version")
    }

    /// Every source, by id. Columns are selected by name, so extra nullable
    /// columns from later releases are ignored.
    pub fn sources(&self) -> Result<Vec<SourceRecord>> {
        let raw = self.collect(
            "cannot list sources",
            "SELECT id, uuid, labels, metadata, complete, clock_anchor_wall_ns FROM sources ORDER BY id",
            [],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            },
        )?;
        raw.into_iter()
            .map(
                |(id, uuid, labels, metadata, complete, anchor): (
                    i64,
                    Option<String>,
                    String,
                    String,
                    i64,
                    i64,
                )| {
                    Ok(SourceRecord {
                        id,
                        uuid,
                        labels: parse_map(self.file, &format!("labels of source {id}"), &labels)?,
                        metadata: parse_map(
                            self.file,
                            &format!("metadata of source {id}"),
                            &metadata,
                        )?,
                        complete: complete != 0,
                        clock_anchor_wall_ns: anchor,
                    })
                },
            )
            .collect()
    }

    /// One source by id.
    pub fn source(&self, source_id: i64) -> Result<SourceRecord> {
        self.sources()?
            .into_iter()
            .find(|s| s.id == source_id)
            .ok_or_else(|| self.not_found(format!("source {source_id}")))
    }

    /// Finds a source by its id or its uuid, written as text.
    pub fn find_source(&self, id_or_uuid: &str) -> Result<SourceRecord> {
        let sources = self.sources()?;
        let wanted = id_or_uuid.trim();
        sources
            .into_iter()
            .find(|s| {
                wanted.parse::<i64>().ok() == Some(s.id)
                    || s.uuid
                        .as_deref()
                        .is_some_and(|u| u.eq_ignore_ascii_case(wanted))
            })
            .ok_or_else(|| self.not_found(format!("source {wanted:?}")))
    }

    pub(crate) fn not_found(&self, what: String) -> Error {
        Error::NotFound {
            file: self.file.to_string(),
            what,
        }
    }

    /// Every segment of every stream, without payloads, ordered by source,
    /// stream and seq.
    pub fn all_segments(&self) -> Result<Vec<SegmentRecord>> {
        self.collect(
            "cannot list segments",
            &format!("SELECT {SEGMENT_COLUMNS} FROM segments ORDER BY source_id, stream, seq"),
            [],
            segment_record,
        )
    }

    /// A stream's segments in seq order, without payloads.
    pub fn segments(&self, source_id: i64, stream: &str) -> Result<Vec<SegmentRecord>> {
        self.collect(
            "cannot list segments",
            &format!(
                "SELECT {SEGMENT_COLUMNS} FROM segments WHERE source_id = ?1 AND stream = ?2 ORDER BY seq"
            ),
            params![source_id, stream],
            segment_record,
        )
    }

    /// A source's segments, oldest `last_ts` first: the order a size cap
    /// evicts in.
    pub fn segments_by_age(&self, source_id: i64) -> Result<Vec<SegmentRecord>> {
        self.collect(
            "cannot list segment sizes",
            &format!(
                "SELECT {SEGMENT_COLUMNS} FROM segments WHERE source_id = ?1 ORDER BY last_ts, stream, seq"
            ),
            [source_id],
            segment_record,
        )
    }

    /// A stream's segments that overlap `[from, to]`, in seq order.
    pub fn segments_overlapping(
        &self,
        source_id: i64,
        stream: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<SegmentRecord>> {
        self.collect(
            "cannot list segments in a window",
            &format!(
                "SELECT {SEGMENT_COLUMNS} FROM segments
                 WHERE source_id = ?1 AND stream = ?2 AND last_ts >= ?3 AND first_ts <= ?4 ORDER BY seq"
            ),
            params![source_id, stream, from, to],
            segment_record,
        )
    }

    /// One segment's Parquet payload.
    pub fn segment_bytes(&self, source_id: i64, stream: &str, seq: i64) -> Result<Vec<u8>> {
        self.conn
            .query_row(
                "SELECT bytes FROM segments WHERE source_id = ?1 AND stream = ?2 AND seq = ?3",
                params![source_id, stream, seq],
                |r| r.get(0),
            )
            .optional()
            .ctx(self.file, "cannot read a segment")?
            .ok_or_else(|| {
                self.not_found(format!(
                    "segment {seq} of stream {stream:?} in source {source_id}"
                ))
            })
    }

    /// One segment's payload opened for reading parts of it (SQLite's
    /// incremental blob I/O): a footer is read without fetching, or
    /// copying, the column data before it.
    pub fn segment_payload(&self, source_id: i64, stream: &str, seq: i64) -> Result<Payload<'_>> {
        let what = "cannot open a segment's payload";
        let rowid: i64 = self
            .conn
            .query_row(
                "SELECT rowid FROM segments WHERE source_id = ?1 AND stream = ?2 AND seq = ?3",
                params![source_id, stream, seq],
                |r| r.get(0),
            )
            .optional()
            .ctx(self.file, what)?
            .ok_or_else(|| {
                self.not_found(format!(
                    "segment {seq} of stream {stream:?} in source {source_id}"
                ))
            })?;
        let blob = self
            .conn
            .blob_open(rusqlite::MAIN_DB, "segments", "bytes", rowid, true)
            .ctx(self.file, what)?;
        Ok(Payload {
            blob,
            file: self.file,
        })
    }

    /// The caller's index stored with every segment of a stream, by seq,
    /// without reading a payload.
    pub fn caller_indexes(
        &self,
        source_id: i64,
        stream: &str,
    ) -> Result<Vec<(i64, Option<Vec<u8>>)>> {
        self.collect(
            "cannot read caller indexes",
            "SELECT seq, caller_index FROM segments WHERE source_id = ?1 AND stream = ?2 ORDER BY seq",
            params![source_id, stream],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    /// Count and span of a stream's live rows; `None` when it has none.
    pub fn live_wal_span(&self, source_id: i64, stream: &str) -> Result<Option<Span>> {
        self.conn
            .query_row(
                &format!(
                    "SELECT COUNT(*), MIN(ts), MAX(ts) FROM wal
                     WHERE source_id = ?1 AND stream = ?2 AND {LIVE_WAL_PREDICATE}"
                ),
                params![source_id, stream],
                span,
            )
            .ctx(self.file, "cannot measure the live tail")
    }

    /// Count and span of the live rows of every stream that has any.
    pub fn all_live_spans(&self) -> Result<Vec<(i64, String, Span)>> {
        self.collect(
            "cannot measure live tails",
            &format!(
                "SELECT source_id, stream, COUNT(*), MIN(ts), MAX(ts) FROM wal
                 WHERE {LIVE_WAL_PREDICATE} GROUP BY source_id, stream"
            ),
            [],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    Span {
                        rows: r.get(2)?,
                        first_ts: r.get(3)?,
                        last_ts: r.get(4)?,
                    },
                ))
            },
        )
    }

    /// A stream's live rows in ts order: what a reader materializes as its tail.
    pub fn live_wal_rows(&self, source_id: i64, stream: &str) -> Result<Vec<WalRow>> {
        self.live_wal_rows_between(source_id, stream, i64::MIN, i64::MAX)
    }

    /// A stream's live rows within `[from, to]`, in ts order.
    pub fn live_wal_rows_between(
        &self,
        source_id: i64,
        stream: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<WalRow>> {
        self.collect(
            "cannot read the live tail",
            &format!(
                "SELECT ts, wall_offset, row FROM wal
                 WHERE source_id = ?1 AND stream = ?2 AND ts >= ?3 AND ts <= ?4 AND {LIVE_WAL_PREDICATE}
                 ORDER BY ts"
            ),
            params![source_id, stream, from, to],
            wal_row,
        )
    }

    /// Every WAL row of a stream, live or shadowed (verify and tests care
    /// about the difference; readers use [`Snapshot::live_wal_span`]).
    pub fn wal_rows_total(&self, source_id: i64, stream: &str) -> Result<i64> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM wal WHERE source_id = ?1 AND stream = ?2",
                params![source_id, stream],
                |r| r.get(0),
            )
            .ctx(self.file, "cannot count WAL rows")
    }

    /// Every stream of a source: the union of names in `segments` and `wal`.
    pub fn streams(&self, source_id: i64) -> Result<Vec<String>> {
        self.collect(
            "cannot list streams",
            "SELECT stream FROM segments WHERE source_id = ?1
             UNION SELECT stream FROM wal WHERE source_id = ?1 ORDER BY 1",
            [source_id],
            |r| r.get(0),
        )
    }

    /// The newest timestamp a source holds, sealed or in the WAL.
    pub fn newest_ts(&self, source_id: i64) -> Result<Option<i64>> {
        self.conn
            .query_row(
                "SELECT MAX(t) FROM (SELECT MAX(last_ts) AS t FROM segments WHERE source_id = ?1
                                     UNION ALL SELECT MAX(ts) FROM wal WHERE source_id = ?1)",
                [source_id],
                |r| r.get(0),
            )
            .ctx(self.file, "cannot find the newest row")
    }

    /// Caller rows under `name` within `[from, to]`, in `(ts, insertion)` order.
    pub fn caller_rows(
        &self,
        source_id: i64,
        name: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<CallerRow>> {
        self.collect(
            "cannot read caller rows",
            "SELECT ts, blob FROM caller_rows
             WHERE source_id = ?1 AND stream = ?2 AND ts >= ?3 AND ts <= ?4 ORDER BY ts, rowid",
            params![source_id, name, from, to],
            |r| {
                Ok(CallerRow {
                    ts: r.get(0)?,
                    blob: r.get(1)?,
                })
            },
        )
    }

    /// The newest caller row under `name` at or before `at` that `accept`
    /// takes, searching backwards in `(ts, insertion)` order.
    pub fn last_caller_row(
        &self,
        source_id: i64,
        name: &str,
        at: i64,
        mut accept: impl FnMut(&CallerRow) -> bool,
    ) -> Result<Option<CallerRow>> {
        let what = "cannot search caller rows";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT ts, blob FROM caller_rows WHERE source_id = ?1 AND stream = ?2 AND ts <= ?3
                 ORDER BY ts DESC, rowid DESC",
            )
            .ctx(self.file, what)?;
        let mut rows = stmt
            .query(params![source_id, name, at])
            .ctx(self.file, what)?;
        while let Some(r) = rows.next().ctx(self.file, what)? {
            let row = CallerRow {
                ts: r.get(0).ctx(self.file, what)?,
                blob: r.get(1).ctx(self.file, what)?,
            };
            if accept(&row) {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }

    /// How many caller rows each `(source, name)` holds.
    pub fn caller_row_counts(&self) -> Result<Vec<(i64, String, i64)>> {
        self.collect(
            "cannot count caller rows",
            "SELECT source_id, stream, COUNT(*) FROM caller_rows GROUP BY source_id, stream ORDER BY 1, 2",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    }

    /// A source's clock observations in ts order.
    pub fn clock_offsets(&self, source_id: i64) -> Result<Vec<ClockOffset>> {
        self.collect(
            "cannot read clock offsets",
            "SELECT ts, offset_ns FROM clock_offsets WHERE source_id = ?1 ORDER BY ts",
            [source_id],
            |r| {
                Ok(ClockOffset {
                    ts: r.get(0)?,
                    offset_ns: r.get(1)?,
                })
            },
        )
    }
}

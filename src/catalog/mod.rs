//! Typed reads of the five catalog tables (format §3), all through a
//! [`Snapshot`] so that a set of answers is consistent.
//!
//! The live-WAL rule (§3.3) is written once, as [`live_floor`] and the
//! statement shape [`LIVE_WAL_RANGE`], and every query that returns or
//! counts live WAL rows goes through them.

mod listing;
mod outline;
pub use listing::Listing;
pub use outline::SealedOutline;

use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

pub use crate::container::Snapshot;
use crate::error::{Error, Result, SqlContext};

pub use crate::format::Labels;

/// The live-WAL rule (format §3.3) as a bound on timestamps. A WAL row is
/// live iff no sealed segment of its own stream reaches its timestamp: iff
/// it is past the stream's watermark (its newest `last_ts`) or the stream
/// has no segment. So a stream's live rows are exactly those with
/// `ts >= live_floor(watermark)`, and `None` means none can be (a segment
/// reaches `i64::MAX`). A row a segment covers is shadowed whether or not a
/// prune has deleted it, so the seal seam needs no de-duplication.
///
/// Stated as a bound rather than as a correlated `NOT EXISTS` so that
/// SQLite answers it as a range of the `wal` primary key: a live-tail
/// question reads the live rows only, however many covered rows a prune
/// has not deleted yet (`FORMAT.md` §3.3 shows the forms agree).
pub fn live_floor(watermark: Option<i64>) -> Option<i64> {
    match watermark {
        None => Some(i64::MIN),
        Some(newest_sealed) => newest_sealed.checked_add(1),
    }
}

/// Where clause of every query over one stream's live rows: `?1` the
/// source, `?2` the stream, `?3` its [`live_floor`]. Refers to `wal`'s
/// columns, so it reads as a `SEARCH` of the primary key.
pub const LIVE_WAL_RANGE: &str = "source_id = ?1 AND stream = ?2 AND ts >= ?3";

/// A stream's watermark: `MAX(last_ts)` as one seek of `segments_by_time`.
const WATERMARK_SQL: &str =
    "SELECT MAX(last_ts) FROM segments WHERE source_id = ?1 AND stream = ?2";
/// Count and span of a stream's live rows.
const LIVE_SPAN_SQL: &str = "SELECT COUNT(*), MIN(ts), MAX(ts) FROM wal \
     WHERE source_id = ?1 AND stream = ?2 AND ts >= ?3";
/// A stream's live rows up to `?4`.
const LIVE_ROWS_SQL: &str = "SELECT ts, wall_offset, row FROM wal \
     WHERE source_id = ?1 AND stream = ?2 AND ts >= ?3 AND ts <= ?4 ORDER BY ts";
/// The rowids of a stream's live rows up to `?4`, from the primary key's
/// index alone: where a prefetch finds those rows before they are read.
const LIVE_ROWIDS_SQL: &str = "SELECT rowid FROM wal \
     WHERE source_id = ?1 AND stream = ?2 AND ts >= ?3 AND ts <= ?4 ORDER BY ts";
/// First and last ts of a stream's live rows up to `?4`, from the index.
const LIVE_SPAN_BETWEEN_SQL: &str = "SELECT MIN(ts), MAX(ts) FROM wal \
     WHERE source_id = ?1 AND stream = ?2 AND ts >= ?3 AND ts <= ?4";
/// The statements every per-stream catalog question runs, named: their
/// plans decide whether a question costs a seek or a scan
/// (`cargo bench --bench read` prints them; a unit test pins them).
pub const PLANNED_STATEMENTS: [(&str, &str); 9] = [
    ("watermark", WATERMARK_SQL),
    ("live span", LIVE_SPAN_SQL),
    ("live rows", LIVE_ROWS_SQL),
    ("live rowids", LIVE_ROWIDS_SQL),
    ("live span within a window", LIVE_SPAN_BETWEEN_SQL),
    ("first stream of wal", WAL_FIRST_STREAM_SQL),
    ("next stream of a source in wal", WAL_NEXT_STREAM_OF_SQL),
    (
        "first stream of the next source in wal",
        WAL_NEXT_SOURCE_SQL,
    ),
    ("first stream of a source in wal", WAL_FIRST_STREAM_OF_SQL),
];

/// The first `(source, stream)` of the `wal` table; the next stream of
/// source `?1` after `?2`; the first stream of the next source after `?1`;
/// the first stream of source `?1`. Each is one seek of the key. (A single
/// row-value seek `(source_id, stream) > (?1, ?2)` is no substitute:
/// SQLite answers it by walking every row of stream `?2`.)
const WAL_FIRST_STREAM_SQL: &str =
    "SELECT source_id, stream FROM wal ORDER BY source_id, stream LIMIT 1";
const WAL_NEXT_STREAM_OF_SQL: &str = "SELECT source_id, stream FROM wal \
     WHERE source_id = ?1 AND stream > ?2 ORDER BY stream LIMIT 1";
const WAL_NEXT_SOURCE_SQL: &str = "SELECT source_id, stream FROM wal \
     WHERE source_id > ?1 ORDER BY source_id, stream LIMIT 1";
const WAL_FIRST_STREAM_OF_SQL: &str =
    "SELECT source_id, stream FROM wal WHERE source_id = ?1 ORDER BY stream LIMIT 1";

/// Whether `text` is a uuid in the form format §3.1 requires: canonical
/// lowercase `8-4-4-4-12` hex. A `sources.uuid` is read verbatim; anything
/// that builds a name or a path from it must check this first (and
/// `verify` reports a value that fails it), since a file may hold any text
/// there.
pub fn is_canonical_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(b),
        })
}

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

/// The columns [`segment_record`] reads, for a catalog with or without the
/// (later, nullable) `caller_index` column.
fn segment_columns(shape: crate::container::CatalogShape) -> &'static str {
    if shape.caller_index {
        "source_id, stream, seq, rows, first_ts, last_ts, length(bytes), caller_index IS NOT NULL"
    } else {
        "source_id, stream, seq, rows, first_ts, last_ts, length(bytes), 0"
    }
}

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
    /// For an archive read in place: the payload read by range, outside
    /// SQLite, where its place in the file is proven.
    in_place: Option<crate::container::lazy::InPlacePayload>,
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

    /// The payload's reader by range, when its archive is read in place.
    pub fn in_place(&self) -> Option<&crate::container::lazy::InPlacePayload> {
        self.in_place.as_ref()
    }

    /// Fills `buf` from `offset`; a range past the end is an error.
    pub fn read_at(&self, offset: usize, buf: &mut [u8]) -> Result<()> {
        if let Some(direct) = &self.in_place {
            match direct.read_at(offset as u64, buf) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(cause) => {
                    return Err(Error::Source {
                        file: self.file.to_string(),
                        cause,
                    })
                }
            }
        }
        // A read from the start walks the payload's overflow chain: an
        // archive read in place may fetch that walk at once. A read further
        // on skips the pages before it by their pointer-map entries.
        let walk = if offset == 0 { buf.len() as u64 } else { 0 };
        crate::container::lazy::expect_walk(walk);
        let read = self
            .blob
            .read_at_exact(buf, offset)
            .ctx(self.file, "cannot read a segment's payload");
        crate::container::lazy::expect_walk(0);
        read
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
            if self.shape.uuid {
                "SELECT id, uuid, labels, metadata, complete, clock_anchor_wall_ns FROM sources ORDER BY id"
            } else {
                "SELECT id, NULL, labels, metadata, complete, clock_anchor_wall_ns FROM sources ORDER BY id"
            },
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
            &format!(
                "SELECT {} FROM segments ORDER BY source_id, stream, seq",
                segment_columns(self.shape)
            ),
            [],
            segment_record,
        )
    }

    /// A stream's segments in seq order, without payloads.
    pub fn segments(&self, source_id: i64, stream: &str) -> Result<Vec<SegmentRecord>> {
        self.collect(
            "cannot list segments",
            &format!(
                "SELECT {} FROM segments WHERE source_id = ?1 AND stream = ?2 ORDER BY seq",
                segment_columns(self.shape)
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
                "SELECT {} FROM segments WHERE source_id = ?1 ORDER BY last_ts, stream, seq",
                segment_columns(self.shape)
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
                "SELECT {} FROM segments
                 WHERE source_id = ?1 AND stream = ?2 AND last_ts >= ?3 AND first_ts <= ?4 ORDER BY seq",
                segment_columns(self.shape)
            ),
            params![source_id, stream, from, to],
            segment_record,
        )
    }

    /// One segment's Parquet payload, copied once, straight from SQLite's
    /// pages into the returned buffer (incremental blob I/O; a column read
    /// would assemble the payload in SQLite's memory and copy it again).
    pub fn segment_bytes(&self, source_id: i64, stream: &str, seq: i64) -> Result<Vec<u8>> {
        let payload = self.segment_payload(source_id, stream, seq)?;
        let mut bytes = vec![0u8; payload.len()];
        payload.read_at(0, &mut bytes)?;
        Ok(bytes)
    }

    /// Every sealed segment of a stream in seq order, with its payload.
    /// The payloads are copied once, back to back, into one buffer sized
    /// from the catalog (`length(bytes)`), and handed out as slices of it:
    /// one allocation per stream instead of one per segment, and a stream's
    /// worth of pages faulted in 2 MiB at a time (`container::bulk`).
    pub fn stream_payloads(
        &self,
        source_id: i64,
        stream: &str,
    ) -> Result<Vec<(SegmentRecord, bytes::Bytes)>> {
        let what = "cannot read a stream's segments";
        let located = self.collect(
            what,
            &format!(
                "SELECT {}, rowid FROM segments WHERE source_id = ?1 AND stream = ?2 ORDER BY seq",
                segment_columns(self.shape)
            ),
            params![source_id, stream],
            |r| Ok((segment_record(r)?, r.get::<_, i64>(8)?)),
        )?;
        let total = located.iter().try_fold(0usize, |sum, (record, _)| {
            usize::try_from(record.bytes)
                .ok()
                .and_then(|len| sum.checked_add(len))
        });
        let total = total.ok_or_else(|| Error::Corrupt {
            file: self.file.to_string(),
            detail: format!("the segments of stream {stream:?} in source {source_id} add up to more bytes than can be addressed"),
        })?;
        let mut buffer = crate::container::payload_buffer(self.file, total)?;
        let mut blob: Option<rusqlite::blob::Blob<'_>> = None;
        for (record, rowid) in &located {
            let handle = match blob.as_mut() {
                Some(open) => {
                    open.reopen(*rowid).ctx(self.file, what)?;
                    open
                }
                None => blob.insert(
                    self.conn
                        .blob_open(rusqlite::MAIN_DB, "segments", "bytes", *rowid, true)
                        .ctx(self.file, what)?,
                ),
            };
            if handle.len() as i64 != record.bytes {
                return Err(Error::Corrupt {
                    file: self.file.to_string(),
                    detail: format!(
                        "segment {} of stream {stream:?} in source {source_id} changed length while read",
                        record.seq
                    ),
                });
            }
            let len = record.bytes as usize;
            let filled = handle
                .raw_read_at_exact(&mut buffer.spare_capacity_mut()[..len], 0)
                .ctx(self.file, what)?
                .len();
            // SAFETY: `raw_read_at_exact` initialized exactly the `len`
            // bytes after the vector's end (it fails rather than fill fewer),
            // and the capacity holds them (the buffer was sized by the sum).
            unsafe { buffer.set_len(buffer.len() + filled) };
        }
        drop(blob);
        let whole = bytes::Bytes::from(buffer);
        let mut start = 0;
        Ok(located
            .into_iter()
            .map(|(record, _)| {
                let end = start + record.bytes as usize;
                let payload = whole.slice(start..end);
                start = end;
                (record, payload)
            })
            .collect())
    }

    /// One segment's payload opened for reading parts of it (SQLite's
    /// incremental blob I/O): a footer is read without fetching, or
    /// copying, the column data before it.
    pub fn segment_payload(&self, source_id: i64, stream: &str, seq: i64) -> Result<Payload<'_>> {
        let what = "cannot open a segment's payload";
        let rowid: i64 = self
            .conn
            .prepare_cached(
                "SELECT rowid FROM segments WHERE source_id = ?1 AND stream = ?2 AND seq = ?3",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![source_id, stream, seq], |r| r.get(0))
                    .optional()
            })
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
        let in_place = crate::container::lazy::in_place_payload(
            self.conn.path(),
            rowid,
            blob.len() as u64,
            |head| blob.read_at_exact(head, 0).is_ok(),
        );
        Ok(Payload {
            blob,
            file: self.file,
            in_place,
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
            if self.shape.caller_index {
                "SELECT seq, caller_index FROM segments WHERE source_id = ?1 AND stream = ?2 ORDER BY seq"
            } else {
                "SELECT seq, NULL FROM segments WHERE source_id = ?1 AND stream = ?2 ORDER BY seq"
            },
            params![source_id, stream],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    /// A stream's watermark: its newest sealed row (`MAX(last_ts)`), one
    /// seek of `segments_by_time`; `None` when it has no segment.
    pub fn watermark(&self, source_id: i64, stream: &str) -> Result<Option<i64>> {
        self.conn
            .prepare_cached(WATERMARK_SQL)
            .and_then(|mut stmt| stmt.query_row(params![source_id, stream], |r| r.get(0)))
            .ctx(self.file, "cannot read a stream's watermark")
    }

    /// The stream's [`live_floor`], read in this snapshot.
    pub fn live_floor(&self, source_id: i64, stream: &str) -> Result<Option<i64>> {
        Ok(live_floor(self.watermark(source_id, stream)?))
    }

    /// Count and span of a stream's live rows; `None` when it has none.
    pub fn live_wal_span(&self, source_id: i64, stream: &str) -> Result<Option<Span>> {
        let Some(floor) = self.live_floor(source_id, stream)? else {
            return Ok(None);
        };
        self.conn
            .prepare_cached(LIVE_SPAN_SQL)
            .and_then(|mut stmt| stmt.query_row(params![source_id, stream, floor], span))
            .ctx(self.file, "cannot measure the live tail")
    }

    /// Every `(source, stream)` that has rows in the `wal` table, live or
    /// covered, in key order: one seek of the primary key per stream, so
    /// the cost does not grow with the rows a prune has yet to delete.
    pub fn wal_streams(&self) -> Result<Vec<(i64, String)>> {
        self.wal_streams_from(None)
    }

    /// [`Snapshot::wal_streams`] of one source.
    fn wal_streams_of(&self, source_id: i64) -> Result<Vec<String>> {
        Ok(self
            .wal_streams_from(Some(source_id))?
            .into_iter()
            .map(|(_, stream)| stream)
            .collect())
    }

    fn wal_streams_from(&self, only: Option<i64>) -> Result<Vec<(i64, String)>> {
        let what = "cannot list the streams of the wal table";
        let pair = |r: &Row<'_>| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?));
        let one = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> Result<Option<(i64, String)>> {
            self.conn
                .prepare_cached(sql)
                .and_then(|mut stmt| stmt.query_row(p, pair).optional())
                .ctx(self.file, what)
        };
        let mut out = Vec::new();
        let mut found = match only {
            None => one(WAL_FIRST_STREAM_SQL, &[])?,
            Some(id) => one(WAL_FIRST_STREAM_OF_SQL, &[&id])?,
        };
        // Each step is strictly past the last (a greater stream of the same
        // source, or a greater source), so even a hostile catalog ends.
        while let Some((source_id, stream)) = found {
            found = match one(WAL_NEXT_STREAM_OF_SQL, &[&source_id, &stream])? {
                Some(next) => Some(next),
                None if only.is_none() => one(WAL_NEXT_SOURCE_SQL, &[&source_id])?,
                None => None,
            };
            out.push((source_id, stream));
        }
        Ok(out)
    }

    /// Count and span of the live rows of every stream that has any.
    pub fn all_live_spans(&self) -> Result<Vec<(i64, String, Span)>> {
        let mut out = Vec::new();
        for (source_id, stream) in self.wal_streams()? {
            if let Some(span) = self.live_wal_span(source_id, &stream)? {
                out.push((source_id, stream, span));
            }
        }
        Ok(out)
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
        let what = "cannot read the live tail";
        self.collect_live(
            what,
            LIVE_ROWS_SQL,
            (source_id, stream),
            (from, to),
            wal_row,
        )
    }

    /// The rowids of a stream's live rows within `[from, to]`, in ts
    /// order, read from the primary key's index alone (no row is read):
    /// what a reader in place fetches those rows' pages by, ahead of
    /// reading them.
    pub fn live_wal_rowids_between(
        &self,
        source_id: i64,
        stream: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<i64>> {
        let what = "cannot list the live tail";
        self.collect_live(
            what,
            LIVE_ROWIDS_SQL,
            (source_id, stream),
            (from, to),
            |r| r.get(0),
        )
    }

    /// Runs `sql`, a statement over one stream's live rows up to `?4`
    /// ([`LIVE_WAL_RANGE`]), for the rows of `stream` within `window`
    /// that lie past its [`live_floor`]: none when it has no live rows.
    fn collect_live<T>(
        &self,
        what: &str,
        sql: &str,
        (source_id, stream): (i64, &str),
        (from, to): (i64, i64),
        map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        let Some(floor) = self.live_floor(source_id, stream)? else {
            return Ok(Vec::new());
        };
        self.collect(
            what,
            sql,
            params![source_id, stream, floor.max(from), to],
            map,
        )
    }

    /// First and last ts of a stream's live rows within `[from, to]`, from
    /// the primary key's index alone: the span
    /// [`Self::live_wal_rows_between`] would return, without reading a row.
    pub fn live_wal_span_between(
        &self,
        source_id: i64,
        stream: &str,
        from: i64,
        to: i64,
    ) -> Result<Option<(i64, i64)>> {
        let Some(floor) = self.live_floor(source_id, stream)? else {
            return Ok(None);
        };
        let span: (Option<i64>, Option<i64>) = self
            .conn
            .prepare_cached(LIVE_SPAN_BETWEEN_SQL)
            .and_then(|mut stmt| {
                stmt.query_row(params![source_id, stream, floor.max(from), to], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
            })
            .ctx(self.file, "cannot span the live tail")?;
        Ok(match span {
            (Some(first), Some(last)) => Some((first, last)),
            _ => None,
        })
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
        let mut names: Vec<String> = self.collect(
            "cannot list streams",
            "SELECT DISTINCT stream FROM segments WHERE source_id = ?1",
            [source_id],
            |r| r.get(0),
        )?;
        names.extend(self.wal_streams_of(source_id)?);
        names.sort_unstable();
        names.dedup();
        Ok(names)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What SQLite plans for `sql` on an empty catalog, one line per step.
    fn plan(sql: &str) -> String {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::container::SCHEMA_SQL).unwrap();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let unbound = vec![rusqlite::types::Null; stmt.parameter_count()];
        let lines: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(unbound), |r| {
                r.get::<_, String>(3)
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        lines.join("\n")
    }

    #[test]
    fn live_rows_are_read_as_a_range_of_the_wal_primary_key() {
        // A scan here would make every live-tail question cost as much as
        // the covered rows a prune has not deleted yet.
        for sql in [
            LIVE_SPAN_SQL,
            LIVE_ROWS_SQL,
            LIVE_ROWIDS_SQL,
            LIVE_SPAN_BETWEEN_SQL,
        ] {
            let plan = plan(sql);
            // The key's index is `sqlite_autoindex_wal_1` (wal is a rowid table).
            assert!(
                plan.contains("SEARCH wal USING")
                    && plan.contains("sqlite_autoindex_wal_1 (source_id=? AND stream=? AND ts>?"),
                "{sql}\n{plan}"
            );
            assert!(!plan.contains("SCAN"), "{sql}\n{plan}");
        }
        assert!(
            [
                LIVE_SPAN_SQL,
                LIVE_ROWS_SQL,
                LIVE_ROWIDS_SQL,
                LIVE_SPAN_BETWEEN_SQL
            ]
            .iter()
            .all(|sql| sql.contains(LIVE_WAL_RANGE)),
            "the live statements state the rule through LIVE_WAL_RANGE"
        );
        // The rowids and the span come from the index alone: no row (and
        // none of its overflow pages) is read to answer them.
        for sql in [LIVE_ROWIDS_SQL, LIVE_SPAN_BETWEEN_SQL] {
            let plan = plan(sql);
            assert!(plan.contains("USING COVERING INDEX"), "{sql}\n{plan}");
        }
    }

    #[test]
    fn a_watermark_and_the_wal_streams_are_single_seeks() {
        let watermark = plan(WATERMARK_SQL);
        assert!(
            watermark.contains("SEARCH segments USING COVERING INDEX segments_by_time"),
            "{watermark}"
        );
        for sql in [
            WAL_FIRST_STREAM_SQL,
            WAL_NEXT_STREAM_OF_SQL,
            WAL_NEXT_SOURCE_SQL,
            WAL_FIRST_STREAM_OF_SQL,
        ] {
            let plan = plan(sql);
            assert!(
                !plan.contains("SCAN") || plan.contains("SCAN wal USING COVERING INDEX"),
                "{sql}\n{plan}"
            );
            assert!(!plan.contains("TEMP B-TREE"), "{sql}\n{plan}");
        }
    }

    #[test]
    fn the_streams_of_the_wal_table_are_found_in_key_order_once_each() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::container::SCHEMA_SQL).unwrap();
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO wal VALUES (2, 'a', 1, 0, x''), (1, 'b', 1, 0, x''), (1, 'a', 1, 0, x''),
               (1, 'a', 2, 0, x''), (1, 'a', 3, 0, x''), (5, 'z', -1, 0, x''), (-3, '', 0, 0, x'');",
        )
        .unwrap();
        let snapshot = Snapshot {
            conn: &conn,
            file: "t",
            shape: crate::container::CatalogShape::CURRENT,
        };
        let all: Vec<(i64, String)> = snapshot.wal_streams().unwrap();
        let expected: Vec<(i64, String)> = [(-3, ""), (1, "a"), (1, "b"), (2, "a"), (5, "z")]
            .into_iter()
            .map(|(id, s)| (id, s.to_string()))
            .collect();
        assert_eq!(all, expected);
        assert_eq!(snapshot.wal_streams_of(1).unwrap(), ["a", "b"]);
        assert!(snapshot.wal_streams_of(7).unwrap().is_empty());
    }

    #[test]
    fn every_segment_is_listed_in_key_order_whatever_order_the_rows_were_written_in() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::container::SCHEMA_SQL).unwrap();
        // Rowids ascend in writing order; the keys do not. Stream names
        // compare as SQLite's BINARY collation does (bytes): 'B' < 'a' < 'é'.
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO segments VALUES
               (2, 'a', 1, 1, 0, 0, x'00', NULL), (1, 'é', 3, 1, 0, 0, x'00', NULL),
               (1, 'a', 10, 1, 0, 0, x'00', NULL), (1, 'a', 2, 1, 0, 0, x'0000', x'01'),
               (1, 'B', 7, 1, 0, 0, x'00', NULL), (-4, 'z', -1, 1, 0, 0, x'00', NULL),
               (1, 'a', -5, 1, 0, 0, x'00', NULL);",
        )
        .unwrap();
        let snapshot = Snapshot {
            conn: &conn,
            file: "t",
            shape: crate::container::CatalogShape::CURRENT,
        };
        let listed: Vec<(i64, String, i64)> = snapshot
            .all_segments()
            .unwrap()
            .into_iter()
            .map(|r| (r.source_id, r.stream, r.seq))
            .collect();
        let mut sorted = listed.clone();
        sorted.sort();
        assert_eq!(listed, sorted, "key order, streams by their bytes");
        assert_eq!(listed.len(), 7);
        assert_eq!(listed[0], (-4, "z".to_string(), -1));
        assert_eq!(listed[2], (1, "a".to_string(), -5));
        // The payload's length and the caller index's presence come along.
        let records = snapshot.all_segments().unwrap();
        assert!(records
            .iter()
            .any(|r| r.caller_index && r.bytes == 2 && r.seq == 2));
        assert_eq!(records.iter().filter(|r| r.caller_index).count(), 1);
    }

    #[test]
    fn the_live_floor_is_one_past_the_watermark_and_everything_without_one() {
        assert_eq!(live_floor(None), Some(i64::MIN));
        assert_eq!(live_floor(Some(41)), Some(42));
        assert_eq!(live_floor(Some(-1)), Some(0));
        assert_eq!(live_floor(Some(i64::MAX)), None);
    }
}

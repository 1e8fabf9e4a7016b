//! The `wal` table (format §3.3): rows a writer has committed and not yet
//! sealed, and the live-WAL rule that says which of them a reader sees.
//!
//! The rule is written once, as [`live_floor`] and the statement shape
//! [`LIVE_WAL_RANGE`], and every query here that returns or counts live
//! rows goes through them. A stream's watermark is read from `segments`,
//! but it is the rule's input, so it is asked here.

use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

use super::Snapshot;
use crate::error::{Result, SqlContext};

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

/// Reads of `wal`, and the watermark they are bounded by.
impl Snapshot<'_> {
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
    pub(super) fn wal_streams_of(&self, source_id: i64) -> Result<Vec<String>> {
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
}

/// The writer's append, and a copy's.
#[cfg(feature = "write")]
impl crate::container::Transaction<'_> {
    /// Appends WAL rows to one stream. A repeated `(stream, ts)` fails the insert.
    pub fn insert_wal_rows(&self, source_id: i64, stream: &str, rows: &[WalRow]) -> Result<()> {
        let mut stmt = self
            .sql()
            .prepare_cached("INSERT INTO wal(source_id, stream, ts, wall_offset, row) VALUES (?1, ?2, ?3, ?4, ?5)")
            .ctx(self.file(), "cannot prepare a WAL insert")?;
        for row in rows {
            stmt.execute(params![source_id, stream, row.ts, row.wall_offset, row.row])
                .ctx(
                    self.file(),
                    &format!("cannot append to stream {stream:?} at ts {}", row.ts),
                )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SQLite plans for `sql` on an empty catalog, one line per step.
    fn plan(sql: &str) -> String {
        super::super::testing::plan(sql).join("\n")
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
        let conn = super::super::testing::catalog_with(
            "INSERT INTO wal VALUES (2, 'a', 1, 0, x''), (1, 'b', 1, 0, x''), (1, 'a', 1, 0, x''),
               (1, 'a', 2, 0, x''), (1, 'a', 3, 0, x''), (5, 'z', -1, 0, x''), (-3, '', 0, 0, x'');",
        );
        let snapshot = super::super::testing::snapshot(&conn);
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
    fn the_live_floor_is_one_past_the_watermark_and_everything_without_one() {
        assert_eq!(live_floor(None), Some(i64::MIN));
        assert_eq!(live_floor(Some(41)), Some(42));
        assert_eq!(live_floor(Some(-1)), Some(0));
        assert_eq!(live_floor(Some(i64::MAX)), None);
    }
}

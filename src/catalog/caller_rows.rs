//! The `caller_rows` table (format §3.5): the caller's own time-keyed
//! store, kept beside its streams and never decoded by dendro.

use rusqlite::params;

use super::Snapshot;
use crate::error::{Result, SqlContext};

/// One row of the caller's time-keyed store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerRow {
    /// When the row applies from.
    pub ts: i64,
    /// The caller's bytes, never decoded.
    pub blob: Vec<u8>,
}

/// Reads of `caller_rows`.
impl Snapshot<'_> {
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
}

/// The caller's insert.
#[cfg(feature = "write")]
impl crate::container::Transaction<'_> {
    /// Stores rows in the caller's time-keyed store under `name`.
    pub fn insert_caller_rows(&self, source_id: i64, name: &str, rows: &[CallerRow]) -> Result<()> {
        let mut stmt = self
            .sql()
            .prepare_cached(
                "INSERT INTO caller_rows(source_id, stream, ts, blob) VALUES (?1, ?2, ?3, ?4)",
            )
            .ctx(self.file(), "cannot prepare a caller-row insert")?;
        for row in rows {
            stmt.execute(params![source_id, name, row.ts, row.blob])
                .ctx(self.file(), "cannot insert a caller row")?;
        }
        Ok(())
    }
}

//! Streams: no table of their own (format §3.2), a stream is a name that
//! `segments` or `wal` holds rows under. The questions asked of both.

use super::Snapshot;
use crate::error::{Result, SqlContext};

/// Reads across `segments` and `wal`.
impl Snapshot<'_> {
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
}

//! What a catalog's small trees say about each stream's sealed segments,
//! without reading the `segments` table's leaves.
//!
//! Each row of `segments` carries a payload of a MiB or so, so the
//! table's leaves lie that far apart through the file: listing a 5 GB
//! archive in place is a thousand scattered reads. The two indexes on the
//! table (the primary key's and `segments_by_time`) hold a few dozen
//! bytes a segment and are a few dozen pages for the same archive. From
//! them alone come each stream's segment count and newest timestamp; one
//! table row a stream (its first segment) gives the oldest. That is enough
//! for a first overview while the full listing is read.

use super::Snapshot;
use crate::error::{Result, SqlContext};

/// One stream's sealed segments, as the indexes count and bound them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedOutline {
    /// The source the stream belongs to.
    pub source_id: i64,
    /// The stream's name.
    pub stream: String,
    /// How many segments the stream has sealed.
    pub segments: i64,
    /// The first row's timestamp of the stream's first segment (by seq).
    /// Segments follow one another in time, so this is the oldest sealed
    /// row; the full listing's span is the authority where a damaged
    /// catalog says otherwise.
    pub first_ts: i64,
    /// The newest sealed timestamp (the stream's watermark).
    pub last_ts: i64,
    /// The rows of the stream's first segment (from the same row as
    /// `first_ts`): times `segments`, an estimate of the sealed rows that
    /// costs no read more, shown as one until the listing counts them.
    /// Counting them exactly reads every row of the table, a read per few
    /// segments in place (seconds at 100,000 segments).
    pub first_rows: i64,
}

impl SealedOutline {
    /// The sealed rows estimated from the first segment's (see
    /// `first_rows`), saturating on a hostile count.
    pub fn rows_estimate(&self) -> i64 {
        self.first_rows.max(0).saturating_mul(self.segments.max(0))
    }
}

/// Per stream: the count and first seq from the primary key's index, the
/// first segment's `first_ts` from its row, the newest `last_ts` from a
/// seek of `segments_by_time`. Every part but the one row lookup per
/// stream is answered from an index alone.
const OUTLINE_SQL: &str = "\
SELECT g.source_id, g.stream, g.n, \
  (SELECT first_ts FROM segments AS s \
    WHERE s.source_id = g.source_id AND s.stream = g.stream AND s.seq = g.first_seq), \
  (SELECT max(last_ts) FROM segments AS t \
    WHERE t.source_id = g.source_id AND t.stream = g.stream), \
  (SELECT rows FROM segments AS s \
    WHERE s.source_id = g.source_id AND s.stream = g.stream AND s.seq = g.first_seq) \
FROM (SELECT source_id, stream, count(*) AS n, min(seq) AS first_seq \
      FROM segments GROUP BY source_id, stream) AS g \
ORDER BY g.source_id, g.stream";

/// The rowid of each stream's first segment, from the primary key's
/// index alone: the rows [`OUTLINE_SQL`] looks up, for a reader that
/// fetches their pages ahead.
const FIRST_ROWIDS_SQL: &str = "\
SELECT (SELECT rowid FROM segments AS s \
    WHERE s.source_id = g.source_id AND s.stream = g.stream AND s.seq = g.first_seq) \
FROM (SELECT source_id, stream, min(seq) AS first_seq \
      FROM segments GROUP BY source_id, stream) AS g";

/// The segments, counted on the primary key's index: naming `seq`, which
/// only that index holds, keeps SQLite off `segments_by_time` (as small,
/// and covering a bare count as well), whose pages an outline does not
/// fetch ahead.
const COUNT_SQL: &str = "SELECT count(seq) FROM segments";

impl Snapshot<'_> {
    /// Every stream with a sealed segment, in `(source_id, stream)` order,
    /// outlined from the indexes (see the module's comment).
    pub fn sealed_outlines(&self) -> Result<Vec<SealedOutline>> {
        self.collect("cannot outline the segments", OUTLINE_SQL, [], |r| {
            Ok(SealedOutline {
                source_id: r.get(0)?,
                stream: r.get(1)?,
                segments: r.get(2)?,
                first_ts: r.get(3)?,
                last_ts: r.get(4)?,
                first_rows: r.get(5)?,
            })
        })
    }

    /// The rowids of each stream's first segment (see [`FIRST_ROWIDS_SQL`]).
    pub fn first_segment_rowids(&self) -> Result<Vec<i64>> {
        // The subquery finds a row for every group: NULL cannot come back.
        self.collect(
            "cannot find the streams' first segments",
            FIRST_ROWIDS_SQL,
            [],
            |r| r.get(0),
        )
    }

    /// How many segments the catalog holds, counted on the primary key's index.
    pub fn segment_count(&self) -> Result<i64> {
        self.conn
            .query_row(COUNT_SQL, [], |r| r.get(0))
            .ctx(self.file, "cannot count the segments")
    }
}

#[cfg(test)]
mod tests {
    use super::{COUNT_SQL, FIRST_ROWIDS_SQL, OUTLINE_SQL};

    /// The query plans SQLite picks for the outline on the format's
    /// schema: every scan is of the primary key's index (the one tree an
    /// outline fetches whole), covering it, and the table is only
    /// searched by key (one row a stream), never scanned.
    #[test]
    fn the_outline_scans_indexes_only_and_looks_up_one_row_a_stream() {
        for sql in [OUTLINE_SQL, FIRST_ROWIDS_SQL, COUNT_SQL] {
            let plan = super::super::testing::plan(sql);
            for step in &plan {
                // A scan is of the index the outline fetches ahead.
                let scan_of_table = step.starts_with("SCAN")
                    && step.contains("segments")
                    && !step.contains("COVERING INDEX sqlite_autoindex_segments_1");
                let search_without_index = step.starts_with("SEARCH") && !step.contains("INDEX");
                assert!(
                    !scan_of_table && !search_without_index,
                    "{step:?} in the plan of {sql}: {plan:?}"
                );
            }
        }
    }
}

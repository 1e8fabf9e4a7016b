//! The caller's per-segment indexes (format §3.2, §3.6), in either place a
//! file keeps them ([`crate::format::IndexPlace`]): the `segments.caller_index`
//! column of schema 4, or the `WITHOUT ROWID` table `segment_indexes
//! (source_id, stream, seq, bytes)` of schema 5, keyed like `segments`. In
//! the table, no row means no index and a zero-length row an empty one.
//!
//! Which segments have an index is read from the table's keys alone, in
//! one scan: a look-up per segment would have SQLite compare its key
//! against cells whose index spills to overflow pages, and it reads such
//! a cell whole to compare it, so a listing would read every index it
//! meant only to flag.

use std::collections::{HashMap, HashSet};

use rusqlite::params;

use super::{SegmentRecord, Snapshot};
use crate::error::Result;
use crate::format::IndexPlace;

/// The SQL value of "has a caller index" for each layout, as the last
/// column of a segment's record (see `segments::segment_columns`). In the
/// table layout the flag is filled in afterwards ([`Snapshot::flag_indexed`]).
pub(super) fn flag_column(place: IndexPlace) -> &'static str {
    match place {
        IndexPlace::Column => "caller_index IS NOT NULL",
        IndexPlace::Table | IndexPlace::Absent => "0",
    }
}

impl Snapshot<'_> {
    /// Sets `caller_index` on each of `records` that has a row in
    /// `segment_indexes` (schema 5; in the other layouts the query that
    /// read the records set it already). One scan of the table's keys, or
    /// of one stream's seqs from the records' first to their last when all
    /// the records are of one stream.
    pub(crate) fn flag_indexed(&self, records: &mut [SegmentRecord]) -> Result<()> {
        if self.shape.layout.indexes != IndexPlace::Table || records.is_empty() {
            return Ok(());
        }
        let first = &records[0];
        let (owner, stream) = (first.source_id, first.stream.clone());
        let what = "cannot read which segments have a caller index";
        let keys: Vec<(i64, String, i64)> = if records
            .iter()
            .all(|r| r.source_id == owner && r.stream == stream)
        {
            // Only the keys between the records' first and last seq: a
            // window's few segments cost a seek, not a scan of the stream.
            let low = records.iter().map(|r| r.seq).min().unwrap_or(0);
            let high = records.iter().map(|r| r.seq).max().unwrap_or(0);
            self.collect(
                what,
                "SELECT seq FROM segment_indexes
                 WHERE source_id = ?1 AND stream = ?2 AND seq BETWEEN ?3 AND ?4",
                params![owner, stream, low, high],
                |r| Ok((owner, stream.clone(), r.get(0)?)),
            )?
        } else {
            self.collect(
                what,
                "SELECT source_id, stream, seq FROM segment_indexes",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?
        };
        if keys.is_empty() {
            return Ok(());
        }
        // Filed by owner, then stream, so a record is looked up without
        // building a key.
        let mut indexed: HashMap<i64, HashMap<String, HashSet<i64>>> = HashMap::new();
        for (source, name, seq) in keys {
            indexed
                .entry(source)
                .or_default()
                .entry(name)
                .or_default()
                .insert(seq);
        }
        for record in records.iter_mut() {
            record.caller_index = indexed
                .get(&record.source_id)
                .and_then(|streams| streams.get(record.stream.as_str()))
                .is_some_and(|seqs| seqs.contains(&record.seq));
        }
        Ok(())
    }

    /// The caller's index stored with every segment of a stream, by seq,
    /// without reading a payload: `None` for a segment without one, an
    /// empty vector for an empty index.
    pub fn caller_indexes(
        &self,
        source_id: i64,
        stream: &str,
    ) -> Result<Vec<(i64, Option<Vec<u8>>)>> {
        let sql = match self.shape.layout.indexes {
            IndexPlace::Column => {
                "SELECT seq, caller_index FROM segments
                 WHERE source_id = ?1 AND stream = ?2 ORDER BY seq"
            }
            IndexPlace::Table => {
                "SELECT s.seq, i.bytes FROM segments AS s
                 LEFT JOIN segment_indexes AS i
                   ON i.source_id = s.source_id AND i.stream = s.stream AND i.seq = s.seq
                 WHERE s.source_id = ?1 AND s.stream = ?2 ORDER BY s.seq"
            }
            IndexPlace::Absent => {
                "SELECT seq, NULL FROM segments WHERE source_id = ?1 AND stream = ?2 ORDER BY seq"
            }
        };
        self.collect(
            "cannot read caller indexes",
            sql,
            params![source_id, stream],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    /// One segment's caller index: `None` when it has none (or there is no
    /// such segment's index), an empty vector for an empty index.
    pub fn caller_index(&self, source_id: i64, stream: &str, seq: i64) -> Result<Option<Vec<u8>>> {
        let sql = match self.shape.layout.indexes {
            IndexPlace::Column => {
                "SELECT caller_index FROM segments WHERE source_id = ?1 AND stream = ?2 AND seq = ?3"
            }
            IndexPlace::Table => {
                "SELECT bytes FROM segment_indexes WHERE source_id = ?1 AND stream = ?2 AND seq = ?3"
            }
            IndexPlace::Absent => return Ok(None),
        };
        let found: Vec<Option<Vec<u8>>> = self.collect(
            "cannot read a caller index",
            sql,
            params![source_id, stream, seq],
            |r| r.get(0),
        )?;
        Ok(found.into_iter().next().flatten())
    }

    /// The rows of `segment_indexes` whose key names no segment (schema 5;
    /// none in the other layouts): what the cascade from `segments` should
    /// have removed. Verification reports each by its key.
    pub fn orphan_segment_indexes(&self) -> Result<Vec<(i64, String, i64)>> {
        if self.shape.layout.indexes != IndexPlace::Table {
            return Ok(Vec::new());
        }
        self.collect(
            "cannot look for orphaned caller indexes",
            "SELECT i.source_id, i.stream, i.seq FROM segment_indexes AS i
             WHERE NOT EXISTS (SELECT 1 FROM segments AS s
               WHERE s.source_id = i.source_id AND s.stream = i.stream AND s.seq = i.seq)
             ORDER BY i.source_id, i.stream, i.seq",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{catalog_with_layout, snapshot_with};
    use crate::container::CatalogShape;

    const ROWS: &str = "
        INSERT INTO segments(source_id, stream, seq, rows, first_ts, last_ts, bytes)
          VALUES (1, 'a', 1, 1, 0, 0, x'00'), (1, 'a', 2, 1, 1, 1, x'00'),
                 (1, 'a', 3, 1, 2, 2, x'00'), (2, 'b', 1, 1, 0, 0, x'00');
        INSERT INTO segment_indexes VALUES (1, 'a', 2, x'0102'), (1, 'a', 3, x''),
                                           (2, 'b', 1, zeroblob(9000)), (9, 'gone', 4, x'01');";

    #[test]
    fn no_row_is_no_index_and_a_zero_length_row_an_empty_one() {
        let conn = catalog_with_layout(CatalogShape::SCHEMA_5, ROWS);
        let s = snapshot_with(&conn, CatalogShape::SCHEMA_5);
        assert_eq!(
            s.caller_indexes(1, "a").unwrap(),
            vec![(1, None), (2, Some(vec![1, 2])), (3, Some(vec![]))]
        );
        assert_eq!(s.caller_index(1, "a", 1).unwrap(), None);
        assert_eq!(s.caller_index(1, "a", 3).unwrap(), Some(vec![]));
        assert_eq!(
            s.caller_index(2, "b", 1).unwrap().map(|b| b.len()),
            Some(9000)
        );
    }

    #[test]
    fn listings_flag_indexed_segments_in_either_scope() {
        let conn = catalog_with_layout(CatalogShape::SCHEMA_5, ROWS);
        let s = snapshot_with(&conn, CatalogShape::SCHEMA_5);
        let flags = |records: Vec<crate::catalog::SegmentRecord>| {
            records
                .iter()
                .map(|r| (r.source_id, r.seq, r.caller_index))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            flags(s.all_segments().unwrap()),
            vec![(1, 1, false), (1, 2, true), (1, 3, true), (2, 1, true)]
        );
        assert_eq!(
            flags(s.segments(1, "a").unwrap()),
            vec![(1, 1, false), (1, 2, true), (1, 3, true)]
        );
        let listing = crate::catalog::Listing::read(&s).unwrap();
        assert_eq!(listing.all().iter().filter(|r| r.caller_index).count(), 3);
        // A window's few records of one stream, flagged afresh: only their
        // own seqs count, whichever neighbours have an index.
        let stream = s.segments(1, "a").unwrap();
        for (window, expected) in [
            (0..1, vec![false]),
            (1..3, vec![true, true]),
            (0..2, vec![false, true]),
        ] {
            let mut records = stream[window].to_vec();
            records.iter_mut().for_each(|r| r.caller_index = false);
            s.flag_indexed(&mut records).unwrap();
            assert_eq!(
                records.iter().map(|r| r.caller_index).collect::<Vec<_>>(),
                expected
            );
        }
    }

    #[test]
    fn rows_naming_no_segment_are_orphans_by_key() {
        let conn = catalog_with_layout(CatalogShape::SCHEMA_5, ROWS);
        let s = snapshot_with(&conn, CatalogShape::SCHEMA_5);
        assert_eq!(
            s.orphan_segment_indexes().unwrap(),
            vec![(9, "gone".to_string(), 4)]
        );
    }
}

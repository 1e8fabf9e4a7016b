//! Every segment of one archive image, listed once and then answered from
//! memory.
//!
//! Listing the `segments` table is the cost that grows with a catalog:
//! 100,000 rows whose small payloads share the table's leaves mean reading
//! the whole table, and a reader in place reads it through a cache smaller
//! than the table, so every listing reads it again. A holder of an image
//! that cannot change under it (the browser engine: a dropped file, a
//! buffer, one image of a followed URL) lists once and asks this for each
//! stream and window. Whoever reads an archive that a writer may change
//! must list again for each answer; the native reader does.

use super::segments::{segment_columns, segment_record};
use super::{SegmentRecord, Snapshot};
use crate::error::Result;

/// The segments of an archive image in `(source_id, stream, seq)` order,
/// without payloads: what [`Snapshot::all_segments`] returned when it was
/// listed, with each row's rowid (where its b-tree keeps it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    segments: Vec<SegmentRecord>,
    /// The rowid of each of `segments`, when listed from a catalog.
    rowids: Vec<Option<i64>>,
}

impl Listing {
    /// Lists every segment of the snapshot's catalog.
    pub fn read(snapshot: &Snapshot<'_>) -> Result<Listing> {
        let sql = format!(
            "SELECT {}, rowid FROM segments ORDER BY source_id, stream, seq",
            segment_columns(snapshot.shape)
        );
        let rows = snapshot.collect("cannot list segments", &sql, [], |r| {
            Ok((segment_record(r)?, r.get::<_, i64>(8)?))
        })?;
        let (mut records, rowids): (Vec<SegmentRecord>, Vec<i64>) = rows.into_iter().unzip();
        snapshot.flag_indexed(&mut records)?;
        Ok(Listing::sorted(
            records
                .into_iter()
                .zip(rowids.into_iter().map(Some))
                .collect(),
        ))
    }

    /// A listing of these records, put in `(source_id, stream, seq)` order,
    /// with no rowids.
    pub fn from_records(segments: Vec<SegmentRecord>) -> Listing {
        Listing::sorted(segments.into_iter().map(|s| (s, None)).collect())
    }

    /// SQLite's `ORDER BY` already gives the order (sorting sorted records
    /// is one pass). Streams compare as their UTF-8 bytes, as SQLite's
    /// BINARY collation does, so the order is the query's.
    fn sorted(mut rows: Vec<(SegmentRecord, Option<i64>)>) -> Listing {
        rows.sort_by(|a, b| key(&a.0).cmp(&key(&b.0)));
        let (segments, rowids) = rows.into_iter().unzip();
        Listing { segments, rowids }
    }

    /// Every segment, in `(source_id, stream, seq)` order.
    pub fn all(&self) -> &[SegmentRecord] {
        &self.segments
    }

    /// One stream's segments in seq order ([`Snapshot::segments`]).
    pub fn stream(&self, source_id: i64, stream: &str) -> &[SegmentRecord] {
        &self.segments[self.stream_at(source_id, stream)]
    }

    /// Where one stream's segments lie in `segments`.
    fn stream_at(&self, source_id: i64, stream: &str) -> std::ops::Range<usize> {
        let start = self
            .segments
            .partition_point(|s| (s.source_id, s.stream.as_str()) < (source_id, stream));
        let len = self.segments[start..]
            .partition_point(|s| s.source_id == source_id && s.stream == stream);
        start..start + len
    }

    /// The rowid of `record`'s row in the `segments` table, when this
    /// listing was read from a catalog that holds it.
    pub fn rowid(&self, record: &SegmentRecord) -> Option<i64> {
        let at = self.stream_at(record.source_id, &record.stream);
        let within = self.segments[at.clone()].binary_search_by_key(&record.seq, |s| s.seq);
        self.rowids[at.start + within.ok()?]
    }

    /// A stream's segments that overlap `[from, to]` in seq order: the rows
    /// [`Snapshot::segments_overlapping`] returns, by the same test
    /// (`last_ts >= from` and `first_ts <= to`).
    pub fn overlapping(
        &self,
        source_id: i64,
        stream: &str,
        from: i64,
        to: i64,
    ) -> Vec<SegmentRecord> {
        self.stream(source_id, stream)
            .iter()
            .filter(|s| s.last_ts >= from && s.first_ts <= to)
            .cloned()
            .collect()
    }
}

fn key(s: &SegmentRecord) -> (i64, &str, i64) {
    (s.source_id, s.stream.as_str(), s.seq)
}

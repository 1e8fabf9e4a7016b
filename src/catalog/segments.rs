//! The `segments` table (format §3.2): each stream's sealed Parquet
//! payloads, immutable once inserted, with their row counts and spans.

use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

use super::{Payload, Snapshot};
use crate::error::{Error, Result, SqlContext};

/// One encoded run of a stream's rows, and what the encoder says it
/// holds: a row of `segments` as it is inserted (the key is the
/// inserter's). An encoder makes it ([`crate::segment::SegmentEncoder`]);
/// the bytes are opaque here, a Parquet file to the segment layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// One Parquet file.
    pub bytes: Vec<u8>,
    /// Rows in the file (the encoder may have dropped a leading run).
    pub rows: i64,
    /// Timestamp of the file's first row.
    pub first_ts: i64,
    /// Timestamp of the file's last row.
    pub last_ts: i64,
    /// The caller's own index over the segment, stored verbatim.
    pub caller_index: Option<Vec<u8>>,
}

/// One row of `segments`, without its payload. Serialized, it is a
/// segment as `dendro describe --json` lists it under its stream: the
/// owner and the stream name are the stream's, so they are left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentRecord {
    /// The owning source.
    #[serde(skip)]
    pub source_id: i64,
    /// The stream name.
    #[serde(skip)]
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

/// The columns [`segment_record`] reads. Whether a segment has a caller
/// index is the last: read with the row where the file keeps indexes in
/// `segments.caller_index` (schema 4), false until
/// [`Snapshot::flag_indexed`] fills it in where they are in
/// `segment_indexes` (schema 5), and false in a file older than either.
pub(super) fn segment_columns(shape: crate::container::CatalogShape) -> String {
    format!(
        "source_id, stream, seq, rows, first_ts, last_ts, length(bytes), {}",
        super::segment_indexes::flag_column(shape.layout.indexes)
    )
}

pub(super) fn segment_record(r: &Row<'_>) -> rusqlite::Result<SegmentRecord> {
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

/// Reads of `segments`.
impl Snapshot<'_> {
    /// The records `rest` (the clauses after `FROM segments`) selects.
    fn segment_records(
        &self,
        what: &str,
        rest: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<SegmentRecord>> {
        let sql = format!(
            "SELECT {} FROM segments {rest}",
            segment_columns(self.shape)
        );
        let mut records = self.collect(what, &sql, params, segment_record)?;
        self.flag_indexed(&mut records)?;
        Ok(records)
    }

    /// Every segment of every stream, without payloads, ordered by source,
    /// stream and seq.
    pub fn all_segments(&self) -> Result<Vec<SegmentRecord>> {
        self.segment_records(
            "cannot list segments",
            "ORDER BY source_id, stream, seq",
            [],
        )
    }

    /// A stream's segments in seq order, without payloads.
    pub fn segments(&self, source_id: i64, stream: &str) -> Result<Vec<SegmentRecord>> {
        self.segment_records(
            "cannot list segments",
            "WHERE source_id = ?1 AND stream = ?2 ORDER BY seq",
            params![source_id, stream],
        )
    }

    /// A source's segments, oldest `last_ts` first: the order a size cap
    /// evicts in.
    pub fn segments_by_age(&self, source_id: i64) -> Result<Vec<SegmentRecord>> {
        self.segment_records(
            "cannot list segment sizes",
            "WHERE source_id = ?1 ORDER BY last_ts, stream, seq",
            [source_id],
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
        self.segment_records(
            "cannot list segments in a window",
            "WHERE source_id = ?1 AND stream = ?2 AND last_ts >= ?3 AND first_ts <= ?4
             ORDER BY seq",
            params![source_id, stream, from, to],
        )
    }

    /// A stream's segments that overlap `[from, to]`, in seq order, found
    /// through `segments_by_time` rather than by walking the stream: in
    /// `last_ts` order they are the run from the first that ends at or
    /// after `from` up to the first that starts past `to`, and the read
    /// stops there. Exact where a stream's segments do not overlap one
    /// another, as in a file the asking writer holds and placed them in
    /// ([`Self::segments_overlapping`] makes no such assumption).
    #[cfg(feature = "write")]
    pub(crate) fn segments_overlapping_in_time(
        &self,
        source_id: i64,
        stream: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<SegmentRecord>> {
        let what = "cannot read the segments a span overlaps";
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {} FROM segments
                 WHERE source_id = ?1 AND stream = ?2 AND last_ts >= ?3 ORDER BY last_ts",
                segment_columns(self.shape)
            ))
            .ctx(self.file, what)?;
        let mut rows = stmt
            .query(params![source_id, stream, from])
            .ctx(self.file, what)?;
        let mut overlapping = Vec::new();
        while let Some(r) = rows.next().ctx(self.file, what)? {
            let record = segment_record(r).ctx(self.file, what)?;
            if record.first_ts > to {
                break;
            }
            overlapping.push(record);
        }
        overlapping.sort_by_key(|s| s.seq);
        self.flag_indexed(&mut overlapping)?;
        Ok(overlapping)
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
        let (mut records, rowids): (Vec<SegmentRecord>, Vec<i64>) = located.into_iter().unzip();
        self.flag_indexed(&mut records)?;
        let located: Vec<(SegmentRecord, i64)> = records.into_iter().zip(rowids).collect();
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
        let in_place =
            crate::pager::in_place_payload(self.conn.path(), rowid, blob.len() as u64, |head| {
                blob.read_at_exact(head, 0).is_ok()
            });
        Ok(Payload {
            blob,
            file: self.file,
            in_place,
        })
    }
}

/// A sealed segment's one insert.
#[cfg(feature = "write")]
impl crate::container::Transaction<'_> {
    /// insert at the same `(source, stream, seq)` is an error. The caller's
    /// index goes where the file keeps them: the `caller_index` column
    /// (schema 4) or a `segment_indexes` row (schema 5), none when absent.
    pub fn insert_segment(
        &self,
        source_id: i64,
        stream: &str,
        seq: i64,
        segment: &Segment,
    ) -> Result<()> {
        let context = || format!("cannot insert segment {seq} of {stream:?}");
        let table =
            crate::container::stores_index_table(self.sql()).ctx(self.file(), &context())?;
        let (sql, column_index) = match table {
            true => (
                "INSERT INTO segments(source_id, stream, seq, rows, first_ts, last_ts, bytes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                None,
            ),
            false => (
                "INSERT INTO segments(source_id, stream, seq, rows, first_ts, last_ts, bytes, caller_index)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                Some(&segment.caller_index),
            ),
        };
        let mut stmt = self
            .sql()
            .prepare_cached(sql)
            .ctx(self.file(), &context())?;
        let base = params![
            source_id,
            stream,
            seq,
            segment.rows,
            segment.first_ts,
            segment.last_ts,
            segment.bytes,
        ];
        match column_index {
            Some(index) => {
                let mut all = base.to_vec();
                all.push(index);
                stmt.execute(&*all)
            }
            None => stmt.execute(base),
        }
        .ctx(self.file(), &context())?;
        if let (true, Some(index)) = (table, &segment.caller_index) {
            self.sql()
                .prepare_cached(
                    "INSERT INTO segment_indexes(source_id, stream, seq, bytes) VALUES (?1, ?2, ?3, ?4)",
                )
                .and_then(|mut s| s.execute(params![source_id, stream, seq, index]))
                .ctx(self.file(), &format!("cannot insert the caller index of segment {seq} of {stream:?}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_segment_is_listed_in_key_order_whatever_order_the_rows_were_written_in() {
        // Rowids ascend in writing order; the keys do not. Stream names
        // compare as SQLite's BINARY collation does (bytes): 'B' < 'a' < 'é'.
        let conn = super::super::testing::catalog_with(
            "INSERT INTO segments VALUES
               (2, 'a', 1, 1, 0, 0, x'00', NULL), (1, 'é', 3, 1, 0, 0, x'00', NULL),
               (1, 'a', 10, 1, 0, 0, x'00', NULL), (1, 'a', 2, 1, 0, 0, x'0000', x'01'),
               (1, 'B', 7, 1, 0, 0, x'00', NULL), (-4, 'z', -1, 1, 0, 0, x'00', NULL),
               (1, 'a', -5, 1, 0, 0, x'00', NULL);",
        );
        let snapshot = super::super::testing::snapshot(&conn);
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
}

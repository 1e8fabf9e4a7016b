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
//!
//! A window needs less than every segment: [`WindowEntries`] lists one
//! stream's window from the time index alone (`segments_by_time`, a range
//! of it: a few dozen bytes a segment, where the table's rows lie a
//! payload apart), so a window of 100,000 segments is counted, and any
//! sample of it picked, before a single table row is read; only the rows
//! a read then takes are looked up, by rowid.

use super::segments::{segment_columns, segment_record};
use super::{SegmentRecord, Snapshot};
use crate::error::{Result, SqlContext};
use rusqlite::OptionalExtension;

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

    /// A listing of these records with their rowids, put in `(source_id,
    /// stream, seq)` order: part of a catalog, looked up by rowid
    /// ([`Snapshot::segments_at`]).
    pub fn with_rowids(rows: Vec<(SegmentRecord, i64)>) -> Listing {
        Listing::sorted(rows.into_iter().map(|(s, r)| (s, Some(r))).collect())
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

/// The most segments a sampled preview reads ([`WindowEntries::sample`]):
/// a footer each, so the picture's cost stays bounded whatever the
/// window holds.
pub const MAX_WINDOW_SAMPLE: usize = 1024;

/// One stream's segments in a window, as the time index lists them: each
/// one's `(last_ts, rowid)`, in `last_ts` order. Exact for a stream whose
/// segments do not overlap in time (every writer-made stream: a writer
/// refuses rows at or below a stream's newest), where the window's
/// segments are those whose `last_ts` lies in it, plus at most the one
/// after it that starts inside; [`Snapshot::window_entries`] looks that
/// one's row up to know. Where the rows read show segments that overlap,
/// a reader lists the window from the table instead
/// ([`Snapshot::window_listing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowEntries {
    entries: Vec<(i64, i64)>,
}

impl WindowEntries {
    /// How many segments the window holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the window holds no segment.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry's rowid, in `last_ts` order.
    pub fn rowids(&self) -> Vec<i64> {
        self.entries.iter().map(|e| e.1).collect()
    }

    /// The rowids of `k` entries spread evenly through the window by
    /// position (the first and the last among them), at most
    /// [`MAX_WINDOW_SAMPLE`]; every entry's when the window holds no more.
    pub fn sample(&self, k: usize) -> Vec<i64> {
        let (n, k) = (self.entries.len(), k.clamp(1, MAX_WINDOW_SAMPLE));
        if n <= k {
            return self.rowids();
        }
        // Position i of k is entry round(i * (n - 1) / (k - 1)): distinct
        // since n > k, and the ends are the window's ends.
        (0..k)
            .map(|i| match k {
                1 => self.entries[n / 2].1,
                _ => self.entries[(i * (n - 1) + (k - 1) / 2) / (k - 1)].1,
            })
            .collect()
    }
}

/// The time index's entries of one stream from `last_ts >= ?3` on, in
/// that order: a range of `segments_by_time`, read from the index alone.
const WINDOW_ENTRIES_SQL: &str = "SELECT last_ts, rowid FROM segments \
    WHERE source_id = ?1 AND stream = ?2 AND last_ts >= ?3 ORDER BY last_ts";

impl Snapshot<'_> {
    /// The stream's segments in `[from, to]` as the time index lists them
    /// (see [`WindowEntries`]): the entries whose `last_ts` lies in the
    /// window, and the first after it when its row says it starts inside.
    pub fn window_entries(
        &self,
        source_id: i64,
        stream: &str,
        from: i64,
        to: i64,
    ) -> Result<WindowEntries> {
        let what = "cannot list a window's segments from the time index";
        let mut stmt = self
            .conn
            .prepare_cached(WINDOW_ENTRIES_SQL)
            .ctx(self.file, what)?;
        let mut rows = stmt
            .query(rusqlite::params![source_id, stream, from])
            .ctx(self.file, what)?;
        let mut entries = Vec::new();
        while let Some(r) = rows.next().ctx(self.file, what)? {
            let (last_ts, rowid): (i64, i64) = (
                r.get(0).ctx(self.file, what)?,
                r.get(1).ctx(self.file, what)?,
            );
            if last_ts <= to {
                entries.push((last_ts, rowid));
                continue;
            }
            // The first segment ending past the window starts in it or not.
            let starts = self
                .conn
                .query_row(
                    "SELECT first_ts FROM segments WHERE rowid = ?1",
                    [rowid],
                    |r| r.get::<_, i64>(0),
                )
                .ctx(self.file, what)?;
            if starts <= to {
                entries.push((last_ts, rowid));
            }
            break;
        }
        Ok(WindowEntries { entries })
    }

    /// The records of the segments at `rowids`, with their rowids, in the
    /// order given; a rowid with no row is left out.
    pub fn segments_at(&self, rowids: &[i64]) -> Result<Vec<(SegmentRecord, i64)>> {
        let what = "cannot look segments up by rowid";
        let sql = format!(
            "SELECT {} FROM segments WHERE rowid = ?1",
            segment_columns(self.shape)
        );
        let mut stmt = self.conn.prepare_cached(&sql).ctx(self.file, what)?;
        let mut out = Vec::with_capacity(rowids.len());
        for &rowid in rowids {
            let found = stmt
                .query_row([rowid], segment_record)
                .optional()
                .ctx(self.file, what)?;
            out.extend(found.map(|r| (r, rowid)));
        }
        let (mut records, rowids): (Vec<SegmentRecord>, Vec<i64>) = out.into_iter().unzip();
        self.flag_indexed(&mut records)?;
        Ok(records.into_iter().zip(rowids).collect())
    }

    /// The stream's first segment by seq (a seek of the primary key's
    /// index and one row), or `None` when it has none.
    pub fn first_segment(&self, source_id: i64, stream: &str) -> Result<Option<SegmentRecord>> {
        let what = "cannot find a stream's first segment";
        let sql = format!(
            "SELECT {} FROM segments WHERE source_id = ?1 AND stream = ?2 ORDER BY seq LIMIT 1",
            segment_columns(self.shape)
        );
        let mut found: Vec<SegmentRecord> = self
            .conn
            .query_row(&sql, rusqlite::params![source_id, stream], segment_record)
            .optional()
            .ctx(self.file, what)?
            .into_iter()
            .collect();
        self.flag_indexed(&mut found)?;
        Ok(found.pop())
    }

    /// Every segment of the stream in `[from, to]`, listed through the time
    /// index ([`Self::window_entries`]) and looked up by rowid: bounded by
    /// the window, not the stream. Where the records show segments that
    /// overlap in time (no writer makes such a stream, but a file may say
    /// anything), the window is listed from the table by the exact test
    /// instead ([`Snapshot::segments_overlapping`]).
    pub fn window_listing(
        &self,
        source_id: i64,
        stream: &str,
        from: i64,
        to: i64,
    ) -> Result<Listing> {
        let entries = self.window_entries(source_id, stream, from, to)?;
        let mut rows = self.segments_at(&entries.rowids())?;
        rows.sort_by_key(|(r, _)| r.last_ts);
        let apart = rows
            .windows(2)
            .all(|w| w[0].0.last_ts < w[1].0.first_ts && w[0].0.seq < w[1].0.seq);
        if apart && rows.len() == entries.len() {
            return Ok(Listing::with_rowids(rows));
        }
        let sql = format!(
            "SELECT {}, rowid FROM segments WHERE source_id = ?1 AND stream = ?2 \
             AND last_ts >= ?3 AND first_ts <= ?4",
            segment_columns(self.shape)
        );
        let what = "cannot list segments in a window";
        let rows = self.collect(
            what,
            &sql,
            rusqlite::params![source_id, stream, from, to],
            |r| Ok((segment_record(r)?, r.get::<_, i64>(8)?)),
        )?;
        let (mut records, rowids): (Vec<SegmentRecord>, Vec<i64>) = rows.into_iter().unzip();
        self.flag_indexed(&mut records)?;
        Ok(Listing::with_rowids(
            records.into_iter().zip(rowids).collect(),
        ))
    }
}

fn key(s: &SegmentRecord) -> (i64, &str, i64) {
    (s.source_id, s.stream.as_str(), s.seq)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{catalog_with, plan, snapshot};
    use super::{Listing, WINDOW_ENTRIES_SQL};

    /// `n` segments of stream "m" (and a neighbour stream "n"), segment `i`
    /// spanning `[10 i, 10 i + 5]`, plus `extra` statements.
    fn stream_of(n: i64, extra: &str) -> rusqlite::Connection {
        let mut rows = String::new();
        for i in 0..n {
            for stream in ["m", "n"] {
                rows.push_str(&format!(
                    "INSERT INTO segments(source_id, stream, seq, rows, first_ts, last_ts, bytes) \
                     VALUES (1, '{stream}', {i}, 3, {}, {}, x'00');",
                    10 * i,
                    10 * i + 5
                ));
            }
        }
        rows.push_str(extra);
        catalog_with(&rows)
    }

    /// The window's entries are a range of `segments_by_time`, read from
    /// the index alone: listing a window never scans the table.
    #[test]
    fn a_window_is_listed_from_a_range_of_the_time_index_alone() {
        let plan = plan(WINDOW_ENTRIES_SQL);
        assert!(
            plan.len() == 1
                && plan[0].contains("SEARCH segments USING COVERING INDEX segments_by_time")
                && plan[0].contains("last_ts>?"),
            "{plan:?}"
        );
    }

    /// Every window, at its edges and past them, lists what the table's
    /// exact test lists, the segment straddling the window's end included.
    #[test]
    fn window_listings_are_the_exact_overlap_of_the_window() {
        let conn = stream_of(50, "");
        let s = snapshot(&conn);
        let whole = Listing::read(&s).unwrap();
        for (from, to) in [
            (0, 500),
            (-100, -1),
            (3, 3),
            (7, 9),
            (5, 10),
            (6, 9),
            (123, 251),
            (120, 250),
            (490, 1000),
            (495, 496),
            (600, 700),
        ] {
            let listed = s.window_listing(1, "m", from, to).unwrap();
            let entries = s.window_entries(1, "m", from, to).unwrap();
            let exact = whole.overlapping(1, "m", from, to);
            assert_eq!(listed.all(), &exact[..], "[{from}, {to}]");
            assert_eq!(entries.len(), exact.len(), "[{from}, {to}]");
            for r in listed.all() {
                assert_eq!(listed.rowid(r), whole.rowid(r));
            }
        }
    }

    /// A file whose segments overlap in time (no writer makes one) is
    /// listed by the table's exact test, never by the index's shortcut.
    #[test]
    fn overlapping_segments_are_listed_by_the_exact_test() {
        // Segment 99 spans the whole stream; its last_ts is the largest,
        // so the index's run past the window never reaches it.
        let extra = "INSERT INTO segments(source_id, stream, seq, rows, first_ts, last_ts, bytes) \
                     VALUES (1, 'm', 99, 3, 0, 10000, x'00');
                     INSERT INTO segments(source_id, stream, seq, rows, first_ts, last_ts, bytes) \
                     VALUES (1, 'm', 98, 3, 102, 104, x'00');";
        let conn = stream_of(50, extra);
        let s = snapshot(&conn);
        let whole = Listing::read(&s).unwrap();
        let listed = s.window_listing(1, "m", 100, 120).unwrap();
        assert_eq!(listed.all(), &whole.overlapping(1, "m", 100, 120)[..]);
        assert!(listed.all().iter().any(|r| r.seq == 98));
    }

    /// A sample is spread evenly by position, ends included, at most the
    /// cap, and the whole window when it holds no more.
    #[test]
    fn a_sample_spreads_evenly_through_the_window() {
        let conn = stream_of(1999, "");
        let s = snapshot(&conn);
        let entries = s.window_entries(1, "m", 0, 100_000).unwrap();
        let all = entries.rowids();
        let picked = entries.sample(10);
        assert_eq!(picked.len(), 10);
        assert_eq!((picked[0], picked[9]), (all[0], all[1998]));
        let at: Vec<usize> = picked
            .iter()
            .map(|p| all.iter().position(|r| r == p).unwrap())
            .collect();
        let gaps: Vec<usize> = at.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| (221..=223).contains(&g)), "{gaps:?}");
        assert_eq!(entries.sample(1).len(), 1);
        assert_eq!(entries.sample(1_000_000).len(), super::MAX_WINDOW_SAMPLE);
        let few = s.window_entries(1, "m", 0, 25).unwrap();
        assert_eq!(few.sample(64), few.rowids());
    }
}

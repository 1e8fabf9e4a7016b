//! Where the pages a plan fetches lie, asked of SQLite's schema and the
//! catalog (both read already, or cheap to read): the roots of the trees
//! each plan walks, the live rows' table, and the byte ranges of segment
//! footers. Every answer that cannot be had is "nothing": a plan only
//! saves time, and SQLite reports a bad schema itself.

use crate::catalog::SegmentRecord;
use crate::container::Archive;
use crate::error::{Error, Result};
use crate::pager::PayloadTable;

/// The b-trees whose pages a catalog prefetch brings in: what listing the
/// archive reads (`describe` scans `segments` in key order through its
/// primary key's index, then looks each row up), and nothing that grows
/// with the data beyond one row per segment. In a schema-5 file, also
/// `segment_indexes` (a `WITHOUT ROWID` table: an index b-tree, whose
/// keys the listing scans to flag indexed segments; the indexes' overflow
/// pages are not read for that) and the documents a description lists. A
/// tree the file does not have is left out.
const PREFETCHED_TREES: [&str; 6] = [
    "segments",
    "sqlite_autoindex_segments_1",
    "sources",
    "segment_indexes",
    "documents_by_name",
    "documents",
];

/// The root pages of [`PREFETCHED_TREES`], from the schema SQLite read
/// at open (already cached). Empty if the query fails: the prefetch is an
/// optimisation, and SQLite reports a bad schema itself.
pub(super) fn catalog_roots(archive: &Archive) -> Vec<u32> {
    roots_of(archive, &PREFETCHED_TREES)
}

/// The b-trees an outline scans (`describeOutline`): the sources and the
/// primary key's index on `segments`, a few dozen bytes a segment, where
/// the table's leaves lie a payload apart; and a schema-5 file's
/// documents, which the outline lists.
const OUTLINE_TREES: [&str; 4] = [
    "sources",
    "sqlite_autoindex_segments_1",
    "documents_by_name",
    "documents",
];

/// The root pages of [`OUTLINE_TREES`] (as [`catalog_roots`]).
pub(super) fn outline_roots(archive: &Archive) -> Vec<u32> {
    roots_of(archive, &OUTLINE_TREES)
}

/// The root pages of the `segments` table, whose leaves hold the rows a
/// footer prefetch looks up (and small payloads whole), and of its primary
/// key's index, through which a lookup by key finds a row.
pub(super) fn lookup_roots(archive: &Archive) -> (Option<u32>, Option<u32>) {
    let [table, index] = LOOKUP_TREES.map(|t| roots_of(archive, &[t]).first().copied());
    (table, index)
}

/// The root page of `segments_by_time`, the time index a window is listed
/// from (`Snapshot::window_entries`).
pub(super) fn time_index_root(archive: &Archive) -> Option<u32> {
    roots_of(archive, &["segments_by_time"]).first().copied()
}

/// The trees of [`lookup_roots`].
const LOOKUP_TREES: [&str; 2] = ["segments", "sqlite_autoindex_segments_1"];

/// Where the live rows' bytes are: the `wal` table's root page and the
/// position of its `row` column, as the schema says (`None` when it does
/// not: nothing is then fetched ahead, and SQLite reads the rows itself).
pub(super) fn wal_rows_table(archive: &Archive) -> Option<PayloadTable> {
    archive
        .read_snapshot(|s| {
            Ok(s.conn
                .query_row(
                    "SELECT s.rootpage, p.cid FROM sqlite_schema AS s, pragma_table_info('wal') AS p \
                     WHERE s.type = 'table' AND s.name = 'wal' AND p.name = 'row'",
                    [],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
                )
                .ok())
        })
        .ok()
        .flatten()
        .and_then(|(root, column)| {
            Some(PayloadTable {
                root: u32::try_from(root).ok()?,
                column: usize::try_from(column).ok()?,
            })
        })
}

/// The root page of the `wal` table's primary key index, through which
/// the live tail's rows are found.
pub(super) fn wal_key_root(archive: &Archive) -> Option<u32> {
    roots_of(archive, &["sqlite_autoindex_wal_1"])
        .first()
        .copied()
}

/// The length and first bytes (up to 16) of each of `rowids`' `row` in
/// `wal`, as SQLite reads them from the rows' cells: what
/// [`crate::pager::LazyFile::payload_ranges`] checks the place
/// it finds against. Rows that cannot be opened are left out.
pub(super) fn wal_row_heads(archive: &Archive, rowids: &[i64]) -> Vec<(i64, u64, Vec<u8>)> {
    archive
        .read_snapshot(|s| {
            Ok(rowids
                .iter()
                .filter_map(|&rowid| {
                    let blob = s
                        .conn
                        .blob_open(rusqlite::MAIN_DB, "wal", "row", rowid, true)
                        .ok()?;
                    let len = blob.len();
                    let mut head = vec![0u8; len.min(16)];
                    blob.read_at_exact(&mut head, 0).ok()?;
                    Some((rowid, len as u64, head))
                })
                .collect())
        })
        .unwrap_or_default()
}

/// The root pages of the named tables and indexes that the schema lists,
/// in the order named; empty if the query fails.
fn roots_of(archive: &Archive, trees: &[&str]) -> Vec<u32> {
    archive
        .read_snapshot(|s| {
            let mut stmt = s
                .conn
                .prepare(
                    "SELECT name, rootpage FROM sqlite_schema WHERE type IN ('table', 'index')",
                )
                .map_err(|e| Error::Invalid {
                    file: s.file.to_string(),
                    message: e.to_string(),
                })?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| Error::Invalid {
                    file: s.file.to_string(),
                    message: e.to_string(),
                })?;
            Ok(trees
                .iter()
                .filter_map(|t| rows.iter().find(|(name, _)| name == t))
                .filter_map(|(_, root)| u32::try_from(*root).ok())
                .collect())
        })
        .unwrap_or_default()
}

/// How much of a payload's end a footer prefetch brings in at least: the
/// 8-byte trailer and a footer of up to 2 KB (a segment of a few columns
/// has a footer under 1 KB).
const FOOTER_TAIL: u64 = 2048;

/// The most a prefetch brings in for one footer, however long the footer
/// says it is (the plan as a whole is held to a quarter of the cache).
const FOOTER_TAIL_MAX: u64 = 1 << 20;

/// How much of each payload's end to fetch for the footers of one
/// stream's segments, from the first one's footer length: segments of a
/// stream share their columns, so their footers are about as long (a
/// stream of 548 columns has footers of about 190 KB, where a fixed 2 KB
/// left nearly all of each to a synchronous read). A quarter more covers
/// statistics of other lengths; a footer longer still reads its rest when
/// it is read, as before. The one read here is of a payload's last 8
/// bytes: a block, or none when cached.
fn footer_tail(payload: &crate::catalog::Payload<'_>) -> u64 {
    let len = payload.len() as u64;
    let mut trailer = [0u8; 8];
    let read = len >= 8
        && payload
            .in_place()
            .is_some_and(|direct| matches!(direct.read_at(len - 8, &mut trailer), Ok(true)));
    if !read || &trailer[4..] != b"PAR1" {
        return FOOTER_TAIL;
    }
    let footer = u64::from(u32::from_le_bytes([
        trailer[0], trailer[1], trailer[2], trailer[3],
    ]));
    (footer + 8)
        .saturating_add(footer / 4)
        .clamp(FOOTER_TAIL, FOOTER_TAIL_MAX)
        .min(len)
}

/// The byte ranges the footer of each of `records` lies in that are not
/// held yet, for a prefetch (one list a record, in order; empty for a
/// payload whose place in the file is not known): see
/// `InPlacePayload::tail_ranges`. How much of each end is fetched follows
/// the first payload's footer length ([`footer_tail`]).
pub(super) fn footer_ranges(
    archive: &Archive,
    records: &[SegmentRecord],
) -> Result<Vec<Vec<(u64, u64)>>> {
    archive.read_snapshot(|s| {
        let mut out = Vec::with_capacity(records.len());
        let mut tail = None;
        for r in records {
            let payload = s.segment_payload(r.source_id, &r.stream, r.seq)?;
            let tail = *tail.get_or_insert_with(|| footer_tail(&payload));
            let ranges = match payload.in_place() {
                Some(direct) => direct.tail_ranges(tail).map_err(|cause| Error::Source {
                    file: s.file().to_string(),
                    cause,
                })?,
                None => Vec::new(),
            };
            out.push(ranges);
        }
        Ok(out)
    })
}

//! Retention as mechanism: the caller decides what is old enough, the
//! writer removes it and says exactly what went (format §3.3 "Retention and
//! live rows", §3.4, §3.5).
//!
//! Eviction works by time and does not know which rows were sealed: a live
//! row older than the cutoff is deleted with the rest and was in no segment.
//! Such rows are counted in [`Evicted::live_rows`] and logged, because the
//! loss comes from the caller's own two policies (a seal cadence slower than
//! the lookback) and is theirs to fix.

use std::collections::BTreeMap;

use log::warn;
use rusqlite::params;

use rusqlite::Connection;

use super::prune::Pruner;
use super::retry::with_retries;
use super::streams::StreamCache;
use crate::catalog::{SegmentRecord, Snapshot, LIVE_WAL_RANGE};
use crate::container::Transaction;
use crate::error::{Error, Result};

/// Which streams a retention pass removes from; `None` is every stream.
pub(super) type StreamPredicate = Box<dyn Fn(&str) -> bool + Send>;

/// A retention request, as it crosses to the writer thread.
pub(super) struct EvictRequest {
    pub cutoff: i64,
    pub streams: Option<StreamPredicate>,
    pub floors: Floors,
}

/// What one retention pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Evicted {
    /// Sealed segments deleted.
    pub segments: u64,
    /// Their payload bytes.
    pub segment_bytes: u64,
    /// WAL rows deleted, live or already sealed.
    pub wal_rows: u64,
    /// Of those, rows no segment held: lost, not just expired.
    pub live_rows: u64,
    /// Caller rows deleted.
    pub caller_rows: u64,
    /// Clock observations deleted.
    pub clock_offsets: u64,
    /// Payload bytes deleted in all: segments, WAL rows and caller blobs.
    pub bytes: u64,
}

/// The tables a stream's data is removed from by age: each with its
/// payload column and the column its age is judged by (a segment goes once
/// its newest row is older than the cutoff; a caller row by its own floor).
const STREAM_TABLES: [(&str, &str, &str); 3] = [
    ("segments", "bytes", "last_ts"),
    ("wal", "row", "ts"),
    ("caller_rows", "blob", "ts"),
];

fn count_and_bytes(
    conn: &rusqlite::Connection,
    sql: &str,
    source_id: i64,
    name: &str,
    bound: i64,
) -> rusqlite::Result<(u64, u64)> {
    conn.prepare_cached(sql)?
        .query_row(params![source_id, name, bound], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
        })
}

/// One pass in one transaction. Returns what went and the names touched.
fn evict_once(
    tx: &Transaction<'_>,
    file: &str,
    source_id: i64,
    request: &EvictRequest,
) -> Result<(Evicted, Vec<String>)> {
    let sql = |e| Error::sqlite(file, "cannot apply retention", e);
    let conn = tx.sql();
    let cutoff = request.cutoff;
    let snapshot = Snapshot::on_writer(conn, file);
    let mut names: Vec<String> = snapshot.streams(source_id)?;
    {
        let mut stmt = conn
            .prepare_cached("SELECT DISTINCT stream FROM caller_rows WHERE source_id = ?1")
            .map_err(sql)?;
        let stores = stmt
            .query_map([source_id], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<String>>>())
            .map_err(sql)?;
        names.extend(stores);
        names.sort_unstable();
        names.dedup();
    }
    if let Some(accept) = &request.streams {
        names.retain(|n| accept(n));
    }
    let mut out = Evicted::default();
    for name in &names {
        let floor = request
            .floors
            .get(name)
            .map_or(cutoff, |f| (*f).min(cutoff));
        let bounds = [cutoff, cutoff, floor];
        // Counted before the segments go, while the rule can still tell a
        // row a segment held from one none did.
        let live: u64 = match snapshot.live_floor(source_id, name)? {
            Some(live_from) => conn
                .prepare_cached(&format!(
                    "SELECT COUNT(*) FROM wal WHERE {LIVE_WAL_RANGE} AND ts < ?4"
                ))
                .and_then(|mut stmt| {
                    stmt.query_row(rusqlite::params![source_id, name, live_from, cutoff], |r| {
                        r.get::<_, i64>(0)
                    })
                })
                .map_err(sql)? as u64,
            None => 0,
        };
        let mut tally = [(0, 0); 3];
        for ((table, payload, age), (bound, counted)) in
            STREAM_TABLES.iter().zip(bounds.iter().zip(&mut tally))
        {
            let count = format!(
                "SELECT COUNT(*), COALESCE(SUM(length({payload})), 0) FROM {table} \
                 WHERE source_id = ?1 AND stream = ?2 AND {age} < ?3"
            );
            *counted = count_and_bytes(conn, &count, source_id, name, *bound).map_err(sql)?;
        }
        for ((table, _, age), bound) in STREAM_TABLES.iter().zip(bounds) {
            let delete =
                format!("DELETE FROM {table} WHERE source_id = ?1 AND stream = ?2 AND {age} < ?3");
            conn.prepare_cached(&delete)
                .and_then(|mut s| s.execute(params![source_id, name, bound]))
                .map_err(sql)?;
        }
        let [(segments, segment_bytes), (wal_rows, wal_bytes), (caller_rows, caller_bytes)] = tally;
        out.segments += segments;
        out.segment_bytes += segment_bytes;
        out.wal_rows += wal_rows;
        out.live_rows += live;
        out.caller_rows += caller_rows;
        out.bytes += segment_bytes + wal_bytes + caller_bytes;
    }
    // Clock observations: a whole-source pass cuts at the cutoff; a
    // per-stream pass only below the oldest row the source still holds.
    let bound = if request.streams.is_none() {
        cutoff
    } else {
        let oldest: Option<i64> = conn
            .query_row(
                "SELECT MIN(t) FROM (SELECT MIN(first_ts) AS t FROM segments WHERE source_id = ?1
                                     UNION ALL SELECT MIN(ts) FROM wal WHERE source_id = ?1)",
                [source_id],
                |r| r.get(0),
            )
            .map_err(sql)?;
        oldest.map_or(cutoff, |o| o.min(cutoff))
    };
    out.clock_offsets = conn
        .execute(
            "DELETE FROM clock_offsets WHERE source_id = ?1 AND ts < ?2",
            params![source_id, bound],
        )
        .map_err(sql)? as u64;
    Ok((out, names))
}

/// A retention pass on `source_id`, then a capped reclaim if the free list
/// has grown. Seals in flight must be drained first.
pub(super) fn evict(
    conn: &Connection,
    file: &str,
    streams: &mut StreamCache,
    pruner: &mut Pruner,
    source_id: i64,
    request: EvictRequest,
) -> Result<Evicted> {
    let (evicted, names) = with_retries(file, "applying retention", || {
        let tx = Transaction::begin(conn, file)?;
        let out = evict_once(&tx, file, source_id, &request)?;
        tx.commit()?;
        Ok(out)
    })?;
    for name in &names {
        streams.refresh(conn, file, source_id, name)?;
        pruner.stop_waiting(source_id, Some(name), request.cutoff);
    }
    if evicted.live_rows > 0 {
        warn!(
            "{file}: retention on source {source_id} deleted {} row(s) that no segment held: \
             a stream seals less often than it is evicted. Seal at least as often as you evict",
            evicted.live_rows
        );
    }
    if let Err(e) = super::checkpoint::reclaim_if_fragmented(conn, file) {
        warn!("{file}: reclaiming free pages after retention failed ({e})");
    }
    Ok(evicted)
}

/// The source's sealed segments by age (oldest `last_ts` first).
pub(super) fn segment_sizes(
    conn: &Connection,
    file: &str,
    source_id: i64,
) -> Result<Vec<SegmentRecord>> {
    Snapshot::on_writer(conn, file).segments_by_age(source_id)
}

/// A floor per caller-row name, for the `_with_floor` retention calls.
pub(super) type Floors = BTreeMap<String, i64>;

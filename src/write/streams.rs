//! What the writer thread remembers about every stream, so that the append
//! path never asks SQLite: the next segment `seq`, the sealed watermark, and
//! the counts a seal policy needs. Seeded once from the file when the writer
//! starts; afterwards only this thread changes the file, so the cache and
//! the file agree.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use crate::catalog::{live_floor, Snapshot, LIVE_WAL_RANGE};
use crate::error::{Result, SqlContext};

/// One stream's cached state: the table the writer's parts share. Each
/// field says which parts move it; `refresh` re-reads all of them from the
/// file after retention or on a resume.
#[derive(Debug, Default, Clone)]
pub(crate) struct StreamState {
    /// The seq the next segment gets: `MAX(seq) + 1`, or 0. Moved by a
    /// committed seal and by an adopted segment.
    pub next_seq: i64,
    /// The newest sealed row (`MAX(last_ts)`); `None` with no segment.
    /// Moved by a committed seal and by an adopted segment.
    pub watermark: Option<i64>,
    /// The newest row handed to the encoder and not yet committed as a
    /// segment. At most one seal per stream is in flight. The sealer's.
    pub in_flight: Option<i64>,
    /// The newest row in the WAL. Moved by a committed tick and by an
    /// adopted segment.
    pub newest: Option<i64>,
    /// Rows committed and not yet handed to the encoder: grown by a
    /// committed tick, emptied by a seal's dispatch, given back by a seal
    /// that produced nothing or could not commit.
    pub unsealed_rows: u64,
    /// Their payload bytes (moved with `unsealed_rows`).
    pub unsealed_bytes: u64,
    /// The oldest of them, as `(ts, wall clock)` (moved with `unsealed_rows`).
    pub first_unsealed: Option<(i64, i64)>,
    /// Rows a segment covers that are still in the `wal` table: grown by a
    /// committed seal, shrunk by the pruner.
    pub covered_rows: u64,
    /// Whether an out-of-order drop on this stream has been logged (the
    /// append path's).
    pub warned_out_of_order: bool,
}

impl StreamState {
    /// Rows at or below this cannot be read once the stream's seals land:
    /// the committed watermark, or the newest row already with the encoder.
    pub fn effective_watermark(&self) -> Option<i64> {
        match (self.watermark, self.in_flight) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Records rows that were just committed to the WAL.
    pub fn committed(&mut self, ts: i64, wall_offset: i64, bytes: usize) {
        self.newest = Some(self.newest.map_or(ts, |n| n.max(ts)));
        self.unsealed_rows += 1;
        self.unsealed_bytes += bytes as u64;
        let wall = ts.saturating_add(wall_offset);
        match self.first_unsealed {
            Some((first, _)) if first <= ts => {}
            _ => self.first_unsealed = Some((ts, wall)),
        }
    }
}

/// Every stream of every source, keyed by source then name.
#[derive(Debug, Default)]
pub(crate) struct StreamCache {
    sources: HashMap<i64, HashMap<String, StreamState>>,
}

impl StreamCache {
    /// Reads the whole catalog once: seqs, watermarks, newest rows and the
    /// live tails' sizes. Covered rows are not read, so opening an archive
    /// a kill left full of them costs no more than opening a clean one.
    pub fn seed(conn: &Connection, file: &str) -> Result<StreamCache> {
        let mut cache = StreamCache::default();
        let what = "cannot seed the writer's stream cache";
        let mut stmt = conn
            .prepare(
                "SELECT source_id, stream, MAX(seq) + 1, MAX(last_ts) FROM segments
                 GROUP BY source_id, stream",
            )
            .ctx(file, what)?;
        let mut rows = stmt.query([]).ctx(file, what)?;
        while let Some(r) = rows.next().ctx(file, what)? {
            let st = cache.get_mut(
                r.get(0).ctx(file, what)?,
                &r.get::<_, String>(1).ctx(file, what)?,
            );
            st.next_seq = r.get(2).ctx(file, what)?;
            st.watermark = r.get(3).ctx(file, what)?;
        }
        let snapshot = Snapshot::on_writer(conn, file);
        for (source_id, stream) in snapshot.wal_streams()? {
            let st = cache.get_mut(source_id, &stream);
            let tail = WalTail::read(conn, file, source_id, &stream, st.watermark)?;
            st.newest = tail.newest;
            st.unsealed_rows = tail.live_rows;
            st.unsealed_bytes = tail.live_bytes;
            st.first_unsealed = tail.first_live;
        }
        // Covered rows already in the file are left alone here: the writer
        // prunes only sources it appends to, and counts them on resume.
        Ok(cache)
    }

    /// The state of a stream, created empty on first use.
    pub fn get_mut(&mut self, source_id: i64, stream: &str) -> &mut StreamState {
        let streams = self.sources.entry(source_id).or_default();
        if !streams.contains_key(stream) {
            streams.insert(stream.to_string(), StreamState::default());
        }
        streams.get_mut(stream).expect("inserted above")
    }

    /// The state of a stream if the writer has seen it.
    pub fn get(&self, source_id: i64, stream: &str) -> Option<&StreamState> {
        self.sources.get(&source_id)?.get(stream)
    }

    /// Every stream of one source.
    pub fn of_source(&self, source_id: i64) -> impl Iterator<Item = (&String, &StreamState)> {
        self.sources
            .get(&source_id)
            .into_iter()
            .flat_map(|s| s.iter())
    }

    /// Every stream.
    pub fn all(&self) -> impl Iterator<Item = (i64, &String, &StreamState)> {
        self.sources
            .iter()
            .flat_map(|(id, s)| s.iter().map(move |(name, st)| (*id, name, st)))
    }

    /// Applies `change` to every stream of one source.
    pub fn for_source_mut(&mut self, source_id: i64, mut change: impl FnMut(&mut StreamState)) {
        if let Some(streams) = self.sources.get_mut(&source_id) {
            streams.values_mut().for_each(&mut change);
        }
    }

    /// Covered rows waiting for a prune, across the archive.
    pub fn covered_rows(&self) -> u64 {
        self.sources
            .values()
            .flat_map(|s| s.values())
            .map(|st| st.covered_rows)
            .sum()
    }

    /// Re-reads one stream's watermark, seq and live tail after something
    /// other than a seal removed rows (retention), or when a resumed source
    /// joins the prune's count.
    pub fn refresh(
        &mut self,
        conn: &Connection,
        file: &str,
        source_id: i64,
        stream: &str,
    ) -> Result<()> {
        let what = "cannot refresh the writer's stream cache";
        let (watermark, max_seq): (Option<i64>, Option<i64>) = conn
            .query_row(
                "SELECT MAX(last_ts), MAX(seq) FROM segments WHERE source_id = ?1 AND stream = ?2",
                rusqlite::params![source_id, stream],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ctx(file, what)?;
        let tail = WalTail::read(conn, file, source_id, stream, watermark)?;
        let total: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM wal WHERE source_id = ?1 AND stream = ?2",
                rusqlite::params![source_id, stream],
                |r| r.get(0),
            )
            .ctx(file, what)?;
        let st = self.get_mut(source_id, stream);
        st.watermark = watermark;
        st.next_seq = st.next_seq.max(max_seq.map_or(0, |s| s + 1));
        st.newest = tail.newest.or(watermark);
        st.unsealed_rows = tail.live_rows;
        st.unsealed_bytes = tail.live_bytes;
        st.first_unsealed = tail.first_live;
        st.covered_rows = (total as u64).saturating_sub(tail.live_rows);
        Ok(())
    }
}

/// What the file says about one stream's rows in the `wal` table: the
/// newest, and the live tail's size and first row (the live-WAL rule, by
/// the stream's `watermark`).
struct WalTail {
    newest: Option<i64>,
    live_rows: u64,
    live_bytes: u64,
    first_live: Option<(i64, i64)>,
}

impl WalTail {
    fn read(
        conn: &Connection,
        file: &str,
        source_id: i64,
        stream: &str,
        watermark: Option<i64>,
    ) -> Result<WalTail> {
        let what = "cannot read a stream's live tail";
        let newest: Option<i64> = conn
            .prepare_cached("SELECT MAX(ts) FROM wal WHERE source_id = ?1 AND stream = ?2")
            .and_then(|mut stmt| stmt.query_row(params![source_id, stream], |r| r.get(0)))
            .ctx(file, what)?;
        let Some(floor) = live_floor(watermark) else {
            return Ok(WalTail {
                newest,
                live_rows: 0,
                live_bytes: 0,
                first_live: None,
            });
        };
        let (rows, bytes): (i64, Option<i64>) = conn
            .prepare_cached(&format!(
                "SELECT COUNT(*), SUM(length(row)) FROM wal WHERE {LIVE_WAL_RANGE}"
            ))
            .and_then(|mut stmt| {
                stmt.query_row(params![source_id, stream, floor], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
            })
            .ctx(file, what)?;
        let first_live: Option<(i64, i64)> = conn
            .prepare_cached(&format!(
                "SELECT ts, wall_offset FROM wal WHERE {LIVE_WAL_RANGE} ORDER BY ts LIMIT 1"
            ))
            .and_then(|mut stmt| {
                stmt.query_row(params![source_id, stream, floor], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
            })
            .ctx(file, what)?;
        Ok(WalTail {
            newest,
            live_rows: rows.max(0) as u64,
            live_bytes: bytes.unwrap_or(0).max(0) as u64,
            first_live: first_live.map(|(ts, offset): (i64, i64)| (ts, ts.saturating_add(offset))),
        })
    }
}

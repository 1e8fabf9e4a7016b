//! What the writer thread remembers about every stream, so that the append
//! path never asks SQLite: the next segment `seq`, the sealed watermark, and
//! the counts a seal policy needs. Seeded once from the file when the writer
//! starts; afterwards only this thread changes the file, so the cache and
//! the file agree.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::catalog::LIVE_WAL_PREDICATE;
use crate::error::{Result, SqlContext};

/// One stream's cached state.
#[derive(Debug, Default, Clone)]
pub(crate) struct StreamState {
    /// The seq the next segment gets: `MAX(seq) + 1`, or 0.
    pub next_seq: i64,
    /// The newest sealed row (`MAX(last_ts)`); `None` with no segment.
    pub watermark: Option<i64>,
    /// The newest row handed to the encoder and not yet committed as a
    /// segment. At most one seal per stream is in flight.
    pub in_flight: Option<i64>,
    /// The newest row in the WAL.
    pub newest: Option<i64>,
    /// Rows committed and not yet handed to the encoder.
    pub unsealed_rows: u64,
    /// Their payload bytes.
    pub unsealed_bytes: u64,
    /// The oldest of them, as `(ts, wall clock)`.
    pub first_unsealed: Option<(i64, i64)>,
    /// Rows a segment covers that are still in the `wal` table.
    pub covered_rows: u64,
    /// Whether an out-of-order drop on this stream has been logged.
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
    /// live tails' sizes.
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
        let mut stmt = conn
            .prepare("SELECT source_id, stream, MAX(ts) FROM wal GROUP BY source_id, stream")
            .ctx(file, what)?;
        let mut rows = stmt.query([]).ctx(file, what)?;
        while let Some(r) = rows.next().ctx(file, what)? {
            let st = cache.get_mut(
                r.get(0).ctx(file, what)?,
                &r.get::<_, String>(1).ctx(file, what)?,
            );
            st.newest = r.get(2).ctx(file, what)?;
        }
        let mut stmt = conn
            .prepare(&format!(
                "SELECT source_id, stream, COUNT(*), SUM(length(row)), MIN(ts) FROM wal
                 WHERE {LIVE_WAL_PREDICATE} GROUP BY source_id, stream"
            ))
            .ctx(file, what)?;
        let mut rows = stmt.query([]).ctx(file, what)?;
        let mut firsts = Vec::new();
        while let Some(r) = rows.next().ctx(file, what)? {
            let source: i64 = r.get(0).ctx(file, what)?;
            let stream: String = r.get(1).ctx(file, what)?;
            let first: i64 = r.get(4).ctx(file, what)?;
            let st = cache.get_mut(source, &stream);
            st.unsealed_rows = r.get::<_, i64>(2).ctx(file, what)? as u64;
            st.unsealed_bytes = r.get::<_, Option<i64>>(3).ctx(file, what)?.unwrap_or(0) as u64;
            firsts.push((source, stream, first));
        }
        for (source, stream, first) in firsts {
            let offset: i64 = conn
                .query_row(
                    "SELECT wall_offset FROM wal WHERE source_id = ?1 AND stream = ?2 AND ts = ?3",
                    rusqlite::params![source, stream, first],
                    |r| r.get(0),
                )
                .ctx(file, what)?;
            cache.get_mut(source, &stream).first_unsealed =
                Some((first, first.saturating_add(offset)));
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

    /// Every stream, to change.
    pub fn all_mut(&mut self) -> impl Iterator<Item = (i64, &String, &mut StreamState)> {
        self.sources
            .iter_mut()
            .flat_map(|(id, s)| s.iter_mut().map(move |(name, st)| (*id, name, st)))
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
    /// other than a seal removed rows (retention).
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
        let (live, bytes, first): (i64, Option<i64>, Option<i64>) = conn
            .query_row(
                &format!(
                    "SELECT COUNT(*), SUM(length(row)), MIN(ts)
                     FROM wal WHERE source_id = ?1 AND stream = ?2 AND {LIVE_WAL_PREDICATE}"
                ),
                rusqlite::params![source_id, stream],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .ctx(file, what)?;
        let offset: Option<i64> = match first {
            Some(first) => conn
                .query_row(
                    "SELECT wall_offset FROM wal WHERE source_id = ?1 AND stream = ?2 AND ts = ?3",
                    rusqlite::params![source_id, stream, first],
                    |r| r.get(0),
                )
                .ctx(file, what)?,
            None => None,
        };
        let (total, newest): (i64, Option<i64>) = conn
            .query_row(
                "SELECT COUNT(*), MAX(ts) FROM wal WHERE source_id = ?1 AND stream = ?2",
                rusqlite::params![source_id, stream],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ctx(file, what)?;
        let st = self.get_mut(source_id, stream);
        st.watermark = watermark;
        st.next_seq = st.next_seq.max(max_seq.map_or(0, |s| s + 1));
        st.newest = newest.or(watermark);
        st.unsealed_rows = live as u64;
        st.unsealed_bytes = bytes.unwrap_or(0) as u64;
        st.first_unsealed = first.map(|f| (f, f.saturating_add(offset.unwrap_or(0))));
        st.covered_rows = (total - live).max(0) as u64;
        Ok(())
    }
}

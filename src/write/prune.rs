//! Deleting the WAL rows a seal has covered.
//!
//! The live-WAL rule already hides a covered row, so when it is deleted is
//! purely a question of cost; the prune never changes what a reader sees.
//! Two facts decide the cost. In WAL mode every page a transaction touches
//! is written to the sidecar, freed or not, and a tick's rows share pages
//! across streams: deleting one stream's rows rewrites each page it sits
//! on, and the page is written again when its other rows go. And every
//! covered row left in place keeps an entry in the primary-key index, whose
//! leaves each append rewrites.
//!
//! So the prune deletes the oldest pages once every row on them is covered,
//! and not before ([`PageTracker`] predicts which rows share a page), every
//! few appends inside an append's transaction: each page is written once on
//! its way out, and a run of neighbouring pages goes together, which spares
//! SQLite rebalancing the pages around a hole. Rows it does not track (those
//! present when the writer opened the file, or everything past its tracking
//! cap) are deleted wholesale once covered rows pile up past
//! [`super::WriterOptions::prune_batch_rows`], or when the writer is idle.
//! Finalizing a source, and closing the writer, delete every covered row of
//! the sources written, by watermark, whatever the counts say. `DESIGN.md`
//! has the measurements.

use std::collections::HashMap;

use rusqlite::{params, Connection};

use super::pages::PageTracker;
use super::retry::with_retries;
use super::streams::StreamCache;
use crate::container::Transaction;
use crate::error::{Error, Result};

/// What a prune deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prune {
    /// The rows of pages whose rows are all covered.
    Pages,
    /// Every covered row.
    All,
}

/// Rows deleted per stream by one prune, applied to the counts after commit.
pub(super) type Pruned = Vec<(i64, String, u64)>;

/// The prune's state: which rows share pages, the rows of fully covered
/// pages waiting for a transaction, and when the next prune is due. The
/// covered-row counts themselves live in the [`StreamCache`], which every
/// method takes.
pub(super) struct Pruner {
    pages: PageTracker,
    /// Rows of fully covered pages, to delete in the next transaction.
    pending: Vec<(i64, String, i64)>,
    appends_since: u32,
    batch_rows: u64,
    every: u32,
}

impl Pruner {
    /// A prune that deletes everything once `batch_rows` covered rows
    /// gather, and fully covered pages every `every` appends.
    pub fn new(batch_rows: u64, every: u32) -> Pruner {
        Pruner {
            pages: PageTracker::default(),
            pending: Vec::new(),
            appends_since: 0,
            batch_rows,
            every,
        }
    }

    /// Records one committed row, in insertion order.
    pub fn appended(&mut self, source_id: i64, stream: &str, ts: i64, offset: i64, len: usize) {
        self.pages.appended(source_id, stream, ts, offset, len);
    }

    /// One append's transaction committed.
    pub fn tick_committed(&mut self) {
        self.appends_since = self.appends_since.saturating_add(1);
    }

    /// A seal covered `stream` up to `watermark`.
    pub fn covered(&mut self, source_id: i64, stream: &str, watermark: i64) {
        self.pages.covered(source_id, stream, watermark);
    }

    /// Rows of `stream` below `cutoff`, or every row of the source when
    /// `stream` is `None`, no longer hold their pages back.
    pub fn stop_waiting(&mut self, source_id: i64, stream: Option<&str>, cutoff: i64) {
        self.pages.stop_waiting(source_id, stream, cutoff);
    }

    /// Which prune, if any, the next append's transaction should carry.
    pub fn due(&mut self, streams: &StreamCache) -> Option<Prune> {
        let covered = streams.covered_rows();
        if covered == 0 {
            return None;
        }
        if covered >= self.batch_rows {
            return Some(Prune::All);
        }
        if self.appends_since >= self.every {
            let ready = self.pages.take_ready();
            self.pending.extend(ready);
        }
        (!self.pending.is_empty()).then_some(Prune::Pages)
    }

    /// Runs `prune` inside the caller's transaction. Every delete is bounded
    /// by the stream's committed watermark, so a live row is never touched.
    pub fn run_in(
        &self,
        conn: &Connection,
        streams: &StreamCache,
        prune: Prune,
    ) -> rusqlite::Result<Pruned> {
        let mut deleted: HashMap<(i64, &str), u64> = HashMap::new();
        match prune {
            Prune::Pages => {
                let mut stmt = conn.prepare_cached(
                    "DELETE FROM wal WHERE source_id = ?1 AND stream = ?2 AND ts = ?3 AND ts <= ?4",
                )?;
                for (source_id, stream, ts) in &self.pending {
                    let Some(watermark) =
                        streams.get(*source_id, stream).and_then(|st| st.watermark)
                    else {
                        continue;
                    };
                    let n = stmt.execute(params![source_id, stream, ts, watermark])? as u64;
                    *deleted.entry((*source_id, stream.as_str())).or_default() += n;
                }
            }
            Prune::All => {
                let mut stmt = conn.prepare_cached(
                    "DELETE FROM wal WHERE source_id = ?1 AND stream = ?2 AND ts <= ?3",
                )?;
                for (source_id, stream, st) in streams.all() {
                    let (true, Some(watermark)) = (st.covered_rows > 0, st.watermark) else {
                        continue;
                    };
                    let n = stmt.execute(params![source_id, stream, watermark])? as u64;
                    *deleted.entry((source_id, stream.as_str())).or_default() += n;
                }
            }
        }
        Ok(deleted
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|((source_id, stream), n)| (source_id, stream.to_string(), n))
            .collect())
    }

    /// Applies a committed prune to the counts. Exact counts only: a seal
    /// that committed in the same transaction covered rows this prune,
    /// bounded by the watermarks before it, did not delete, and they must
    /// stay counted or nothing would delete them.
    pub fn committed(&mut self, streams: &mut StreamCache, prune: Option<Prune>, pruned: &Pruned) {
        if prune.is_none() {
            return;
        }
        self.appends_since = 0;
        self.pending.clear();
        for (source_id, stream, deleted) in pruned {
            let st = streams.get_mut(*source_id, stream);
            st.covered_rows = st.covered_rows.saturating_sub(*deleted);
        }
    }

    /// Deletes every covered row on its own transaction: when idle.
    pub fn prune_now(
        &mut self,
        conn: &Connection,
        file: &str,
        streams: &mut StreamCache,
    ) -> Result<()> {
        if streams.covered_rows() == 0 {
            return Ok(());
        }
        let pruned = with_retries(file, "pruning sealed rows", || {
            let tx = Transaction::begin(conn, file)?;
            let pruned = self
                .run_in(tx.sql(), streams, Prune::All)
                .map_err(|e| Error::sqlite(file, "cannot prune sealed rows", e))?;
            tx.commit()?;
            Ok(pruned)
        })?;
        self.committed(streams, Some(Prune::All), &pruned);
        Ok(())
    }

    /// Deletes every covered row of `source_id`'s streams inside the
    /// caller's transaction, bounded by each stream's committed watermark,
    /// whatever the counts say: what finalize and a clean close do, so a
    /// closed archive holds no covered rows. Seals must be drained first.
    pub fn source_in(
        &self,
        conn: &Connection,
        streams: &StreamCache,
        source_id: i64,
    ) -> rusqlite::Result<()> {
        let mut stmt = conn
            .prepare_cached("DELETE FROM wal WHERE source_id = ?1 AND stream = ?2 AND ts <= ?3")?;
        for (stream, st) in streams.of_source(source_id) {
            if let Some(watermark) = st.watermark {
                stmt.execute(params![source_id, stream, watermark])?;
            }
        }
        Ok(())
    }

    /// After [`Pruner::source_in`] committed: the source holds no covered
    /// row any more.
    pub fn source_committed(&mut self, streams: &mut StreamCache, source_id: i64) {
        streams.for_source_mut(source_id, |st| st.covered_rows = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream `s` of source 1 with `covered` rows below `watermark`.
    fn cache(watermark: i64, covered: u64) -> StreamCache {
        let mut streams = StreamCache::default();
        let st = streams.get_mut(1, "s");
        st.watermark = Some(watermark);
        st.covered_rows = covered;
        streams
    }

    #[test]
    fn rows_a_seal_covered_beside_a_prune_stay_counted() {
        // The prune ran with the watermark before the tick's seal and
        // deleted 10 rows; the seal in the same transaction covered 5 more.
        let mut pruner = Pruner::new(1, 1);
        let mut streams = cache(100, 10);
        let prune = pruner.due(&streams);
        assert_eq!(prune, Some(Prune::All));
        streams.get_mut(1, "s").covered_rows += 5;
        pruner.committed(&mut streams, prune, &vec![(1, "s".to_string(), 10)]);
        assert_eq!(
            streams.covered_rows(),
            5,
            "the seal's rows await the next prune"
        );
        assert_eq!(pruner.due(&streams), Some(Prune::All));
    }

    #[test]
    fn fully_covered_pages_wait_for_the_cadence_and_the_batch_overrides_it() {
        let mut pruner = Pruner::new(1000, 2);
        let mut streams = cache(-1, 0);
        for ts in 0..200 {
            pruner.appended(1, "s", ts, 0, 100);
        }
        streams.get_mut(1, "s").watermark = Some(150);
        streams.get_mut(1, "s").covered_rows = 151;
        pruner.covered(1, "s", 150);
        assert_eq!(pruner.due(&streams), None, "no append since the last prune");
        pruner.tick_committed();
        pruner.tick_committed();
        assert_eq!(pruner.due(&streams), Some(Prune::Pages));
        streams.get_mut(1, "s").covered_rows = 1000;
        assert_eq!(pruner.due(&streams), Some(Prune::All));
    }
}

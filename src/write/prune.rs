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
//! and not before ([`super::pages`] predicts which rows share a page), every
//! few appends inside an append's transaction: each page is written once on
//! its way out, and a run of neighbouring pages goes together, which spares
//! SQLite rebalancing the pages around a hole. Rows it does not
//! track (those present when the writer opened the file, or everything past
//! its tracking cap) are deleted wholesale once covered rows pile up past
//! [`super::WriterOptions::prune_batch_rows`], or when the writer is idle.
//! `DESIGN.md` has the measurements.

use rusqlite::{params, Connection};

use super::thread::WriterThread;
use crate::container::Transaction;
use crate::error::{Error, Result};

/// What a prune deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prune {
    /// The rows of pages whose rows are all covered (`pending_prune`).
    Pages,
    /// Every covered row.
    All,
}

/// Rows deleted per stream by one prune, applied to the cache after commit.
pub(super) type Pruned = Vec<(i64, String, u64)>;

impl WriterThread {
    /// Which prune, if any, the next append's transaction should carry.
    pub(super) fn prune_due(&mut self) -> Option<Prune> {
        let covered = self.streams.covered_rows();
        if covered == 0 {
            return None;
        }
        if covered >= self.options.prune_batch_rows {
            return Some(Prune::All);
        }
        if self.appends_since_prune >= self.options.prune_every {
            let ready = self.pages.take_ready();
            self.pending_prune.extend(ready);
        }
        (!self.pending_prune.is_empty()).then_some(Prune::Pages)
    }

    /// Runs `prune` inside the caller's transaction. Every delete is bounded
    /// by the stream's committed watermark, so a live row is never touched.
    pub(super) fn prune_in(&self, conn: &Connection, prune: Prune) -> rusqlite::Result<Pruned> {
        let mut deleted: std::collections::HashMap<(i64, &str), u64> =
            std::collections::HashMap::new();
        match prune {
            Prune::Pages => {
                let mut stmt = conn.prepare_cached(
                    "DELETE FROM wal WHERE source_id = ?1 AND stream = ?2 AND ts = ?3 AND ts <= ?4",
                )?;
                for (source_id, stream, ts) in &self.pending_prune {
                    let Some(watermark) = self
                        .streams
                        .get(*source_id, stream)
                        .and_then(|st| st.watermark)
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
                for (source_id, stream, st) in self.streams.all() {
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

    /// Applies a committed prune to the cache.
    pub(super) fn pruned(&mut self, prune: Option<Prune>, pruned: &Pruned) {
        if prune.is_none() {
            return;
        }
        self.appends_since_prune = 0;
        self.pending_prune.clear();
        // Exact counts only: a seal that committed in the same transaction
        // covered rows this prune, bounded by the watermarks before it, did
        // not delete, and they must stay counted.
        for (source_id, stream, deleted) in pruned {
            let st = self.streams.get_mut(*source_id, stream);
            st.covered_rows = st.covered_rows.saturating_sub(*deleted);
        }
    }

    /// Deletes every covered row of `source_id`'s streams inside the
    /// caller's transaction, bounded by each stream's committed watermark
    /// and whatever the counts say: what finalize and a clean close do, so
    /// a closed archive holds no covered rows. Seals must be drained first.
    pub(super) fn prune_source_in(
        &self,
        conn: &Connection,
        source_id: i64,
    ) -> rusqlite::Result<Pruned> {
        let mut stmt = conn
            .prepare_cached("DELETE FROM wal WHERE source_id = ?1 AND stream = ?2 AND ts <= ?3")?;
        let mut pruned = Vec::new();
        for (stream, st) in self.streams.of_source(source_id) {
            let Some(watermark) = st.watermark else {
                continue;
            };
            let n = stmt.execute(params![source_id, stream, watermark])? as u64;
            pruned.push((source_id, stream.clone(), n));
        }
        Ok(pruned)
    }

    /// After [`Self::prune_source_in`] committed: the source's streams hold
    /// no covered row any more.
    pub(super) fn source_pruned(&mut self, source_id: i64) {
        for (id, _, st) in self.streams.all_mut() {
            if id == source_id {
                st.covered_rows = 0;
            }
        }
    }

    /// Deletes every covered row on its own transaction: when idle, and
    /// before a clean close.
    pub(super) fn prune_now(&mut self) -> Result<()> {
        if self.streams.covered_rows() == 0 {
            return Ok(());
        }
        let pruned = super::append::with_retries(&self.file, "pruning sealed rows", || {
            let tx = Transaction::begin(&self.conn, &self.file)?;
            let pruned = self
                .prune_in(tx.sql(), Prune::All)
                .map_err(|e| Error::sqlite(&self.file, "cannot prune sealed rows", e))?;
            tx.commit()?;
            Ok(pruned)
        })?;
        self.pruned(Some(Prune::All), &pruned);
        Ok(())
    }
}

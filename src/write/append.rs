//! The append path: one tick, one transaction, durable when it returns.
//!
//! The rules, in the order they apply:
//! - A row at or below its stream's watermark could never be read, so it is
//!   dropped and counted (logged once per stream). On a resumed source the
//!   whole call is refused instead, as is any row not later than the newest
//!   row the previous session left.
//! - Time-based seal limits are checked before the rows go in, so a segment
//!   closes at the boundary and not one row past it. A row of the same tick
//!   that such a seal covers is judged by the first rule again: a row is
//!   either committed and readable or reported dropped, never neither.
//! - A repeated `(stream, ts)` costs only its own source's part of the tick.
//! - A lock or a full disk is retried; if it outlasts the retries the tick is
//!   dropped and reported, and too many drops in a row stop the writer.
//! - Covered rows from earlier seals are deleted inside the same transaction
//!   once enough have gathered, which costs no extra commit.

use std::sync::atomic::Ordering;
use std::time::Duration;

use log::warn;
use rusqlite::params;

use super::prune::{Prune, Pruned};
use super::thread::WriterThread;
use super::TickRows;
use crate::container::Transaction;
use crate::error::{Error, Result};

/// Waits between attempts at an operation that failed on a condition that
/// usually clears by itself. About a third of a second in all, during which
/// the single-slot channel holds the callers back.
const RETRY_BACKOFF: [Duration; 3] = [
    Duration::from_millis(10),
    Duration::from_millis(50),
    Duration::from_millis(250),
];

/// Ticks dropped in a row before the writer gives up: a condition that does
/// not clear is a failure the caller must hear about, not an archive that
/// silently holds nothing.
pub(super) const MAX_CONSECUTIVE_DROPS: u32 = 30;

/// Busy, locked, or a full disk: worth another try.
pub(super) fn is_transient(e: &Error) -> bool {
    use rusqlite::ErrorCode;
    match e {
        Error::InUse { .. } => true,
        Error::Sqlite { source, .. } => matches!(
            source.sqlite_error_code(),
            Some(ErrorCode::DatabaseBusy)
                | Some(ErrorCode::DatabaseLocked)
                | Some(ErrorCode::DiskFull)
        ),
        _ => false,
    }
}

fn is_constraint(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation)
}

/// Runs `op`, retrying a transient failure on [`RETRY_BACKOFF`]. Any other
/// failure, or a transient one that outlasts the schedule, is returned.
pub(super) fn with_retries<T>(
    file: &str,
    what: &str,
    mut op: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut attempt = 0;
    loop {
        match op() {
            Err(e) if is_transient(&e) && attempt < RETRY_BACKOFF.len() => {
                warn!(
                    "{file}: {what} failed ({e}); retrying in {:?}",
                    RETRY_BACKOFF[attempt]
                );
                std::thread::sleep(RETRY_BACKOFF[attempt]);
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// What one attempt at a tick's transaction did.
struct Inserted {
    /// Per part: the collision that dropped it, if one did.
    collisions: Vec<Option<Error>>,
    /// The prune that rode along, if the transaction committed, and what
    /// it deleted.
    prune: Option<Prune>,
    pruned: Pruned,
    /// Finished seals rode along too.
    sealed: bool,
}

impl WriterThread {
    /// Commits one tick for one or more sources. The outer `Err` is fatal to
    /// the writer; each source's own outcome is in the returned list.
    pub(super) fn commit_tick(&mut self, ticks: Vec<(i64, TickRows)>) -> Result<Vec<Result<()>>> {
        let mut outcomes: Vec<Result<()>> = (0..ticks.len()).map(|_| Ok(())).collect();
        let mut parts: Vec<(usize, i64, TickRows)> = Vec::with_capacity(ticks.len());
        for (i, (source_id, rows)) in ticks.into_iter().enumerate() {
            match self.screen(source_id, rows) {
                Ok(rows) if rows.is_empty() => {}
                Ok(rows) => parts.push((i, source_id, rows)),
                Err(e) => outcomes[i] = Err(e),
            }
        }
        if parts.is_empty() {
            return Ok(outcomes);
        }
        let mut sealing = false;
        for (_, source_id, rows) in &parts {
            sealing |= self.seal_due_by_time(*source_id, rows)?;
        }
        if sealing {
            // The seal just handed to the encoder moved its streams'
            // watermarks: a row of this tick at or below one would be
            // hidden by the segment without being in it. Judge the tick
            // again, so such a row is dropped and counted (or refused on a
            // resumed source) rather than committed and unreadable.
            let mut kept = Vec::with_capacity(parts.len());
            for (i, source_id, rows) in parts {
                match self.screen(source_id, rows) {
                    Ok(rows) if rows.is_empty() => {}
                    Ok(rows) => kept.push((i, source_id, rows)),
                    Err(e) => outcomes[i] = Err(e),
                }
            }
            parts = kept;
            if parts.is_empty() {
                return Ok(outcomes);
            }
        }
        let prune = self.prune_due();
        let inserted = with_retries(&self.file, "committing a tick", || {
            self.insert_tick(&parts, prune)
        });
        let inserted = match inserted {
            Ok(inserted) => inserted,
            Err(e) if is_transient(&e) => {
                self.consecutive_drops += 1;
                warn!(
                    "{}: a tick was dropped after retries ({e}); {} in a row",
                    self.file, self.consecutive_drops
                );
                if self.consecutive_drops >= MAX_CONSECUTIVE_DROPS {
                    return Err(Error::WriterStopped {
                        file: self.file.clone(),
                        message: format!(
                            "{} ticks in a row were dropped; the last failure: {e}",
                            self.consecutive_drops
                        ),
                    });
                }
                for (i, source_id, _) in &parts {
                    outcomes[*i] = Err(Error::TickDropped {
                        file: self.file.clone(),
                        source_id: *source_id,
                        cause: e.to_string(),
                    });
                }
                return Ok(outcomes);
            }
            Err(e) => return Err(e),
        };
        self.consecutive_drops = 0;
        self.appends_since_prune = self.appends_since_prune.saturating_add(1);
        if inserted.sealed {
            self.sealed_committed();
        }
        self.pruned(inserted.prune, &inserted.pruned);
        for ((i, source_id, rows), collision) in parts.iter().zip(inserted.collisions) {
            if let Some(err) = collision {
                if self.warned_collisions.insert(*source_id) {
                    warn!("{err}; later collisions of this source are not logged");
                }
                outcomes[*i] = Err(err);
                continue;
            }
            let policy = self
                .sources
                .get(source_id)
                .map(|s| s.policy.clone())
                .unwrap_or_default();
            let mut due: Vec<String> = Vec::new();
            for (stream, row) in rows {
                self.pages
                    .appended(*source_id, stream, row.ts, row.wall_offset, row.row.len());
                let st = self.streams.get_mut(*source_id, stream);
                st.committed(row.ts, row.wall_offset, row.row.len());
                if policy.due_by_size(st.unsealed_rows, st.unsealed_bytes) && !due.contains(stream)
                {
                    due.push(stream.clone());
                }
            }
            if !due.is_empty() {
                self.dispatch_seal(*source_id, &due)?;
            }
        }
        Ok(outcomes)
    }

    /// Applies the watermark and resume rules to one source's part.
    fn screen(&mut self, source_id: i64, rows: TickRows) -> Result<TickRows> {
        let Some(source) = self.sources.get(&source_id) else {
            return Err(self.not_open(source_id));
        };
        if source.resumed {
            for (stream, row) in &rows {
                let watermark = self
                    .streams
                    .get(source_id, stream)
                    .and_then(|st| st.effective_watermark());
                let newest = match (watermark, source.floor) {
                    (Some(w), Some(f)) => Some(w.max(f)),
                    (w, f) => w.or(f),
                };
                if let Some(newest) = newest.filter(|n| row.ts <= *n) {
                    return Err(Error::TimelineBackwards {
                        file: self.file.clone(),
                        source_id,
                        ts: row.ts,
                        newest,
                    });
                }
            }
            return Ok(rows);
        }
        let shadowed = |cache: &super::streams::StreamCache, stream: &str, ts: i64| {
            cache
                .get(source_id, stream)
                .and_then(|st| st.effective_watermark())
                .is_some_and(|w| ts <= w)
        };
        if !rows
            .iter()
            .any(|(stream, row)| shadowed(&self.streams, stream, row.ts))
        {
            return Ok(rows);
        }
        let mut kept = Vec::with_capacity(rows.len());
        for (stream, row) in rows {
            if !shadowed(&self.streams, &stream, row.ts) {
                kept.push((stream, row));
                continue;
            }
            source.dropped.fetch_add(1, Ordering::Relaxed);
            let st = self.streams.get_mut(source_id, &stream);
            if !st.warned_out_of_order {
                st.warned_out_of_order = true;
                warn!(
                    "{}: source {source_id}, stream {stream:?}: dropped a row at ts {}, at or below \
                     the stream's newest sealed row {}; no read could return it. Append in order \
                     per stream; later drops here are counted, not logged",
                    self.file,
                    row.ts,
                    st.effective_watermark().unwrap_or(row.ts)
                );
            }
        }
        Ok(kept)
    }

    /// Seals the source's streams whose unsealed rows this tick would make
    /// too old, or would carry across an alignment boundary. Whether it
    /// handed any to the encoder.
    fn seal_due_by_time(&mut self, source_id: i64, rows: &TickRows) -> Result<bool> {
        let Some(policy) = self.sources.get(&source_id).map(|s| &s.policy) else {
            return Ok(false);
        };
        if !policy.has_time_limit() {
            return Ok(false);
        }
        let Some((now_ts, now_wall)) = rows
            .iter()
            .map(|(_, r)| (r.ts, r.ts.saturating_add(r.wall_offset)))
            .max()
        else {
            return Ok(false);
        };
        let due: Vec<String> = self
            .streams
            .of_source(source_id)
            .filter(|(_, st)| policy.due_by_time(st.first_unsealed, now_ts, now_wall))
            .map(|(name, _)| name.clone())
            .collect();
        if due.is_empty() {
            return Ok(false);
        }
        self.dispatch_seal(source_id, &due)?;
        Ok(true)
    }

    /// One attempt at the tick's transaction.
    fn insert_tick(
        &self,
        parts: &[(usize, i64, TickRows)],
        prune: Option<Prune>,
    ) -> Result<Inserted> {
        let file = self.file.as_str();
        let sql = |e| Error::sqlite(file, "cannot append a tick", e);
        let tx = Transaction::begin(&self.conn, file)?;
        let conn = tx.sql();
        // Finished seals ride on the tick, saving their own commit; then
        // each source's rows get a savepoint so a collision costs only them.
        let sealed = self.sealer.has_sealed();
        if sealed {
            self.insert_sealed(&tx)?;
        }
        let many = parts.len() > 1 || sealed;
        let mut collisions: Vec<Option<Error>> = Vec::with_capacity(parts.len());
        {
            let mut insert = conn
                .prepare_cached("INSERT INTO wal(source_id, stream, ts, wall_offset, row) VALUES (?1, ?2, ?3, ?4, ?5)")
                .map_err(sql)?;
            for (_, source_id, rows) in parts {
                if many {
                    conn.execute_batch("SAVEPOINT source_tick").map_err(sql)?;
                }
                let mut collision = None;
                for (stream, row) in rows {
                    match insert.execute(params![
                        source_id,
                        stream,
                        row.ts,
                        row.wall_offset,
                        row.row
                    ]) {
                        Ok(_) => {}
                        Err(e) if is_constraint(&e) => {
                            collision = Some(Error::DuplicateRow {
                                file: file.to_string(),
                                source_id: *source_id,
                                stream: stream.clone(),
                                ts: row.ts,
                            });
                            break;
                        }
                        Err(e) => return Err(sql(e)),
                    }
                }
                if many {
                    let end = if collision.is_some() {
                        "ROLLBACK TO source_tick; RELEASE source_tick"
                    } else {
                        "RELEASE source_tick"
                    };
                    conn.execute_batch(end).map_err(sql)?;
                }
                collisions.push(collision);
            }
        }
        if !sealed && collisions.iter().all(Option::is_some) {
            drop(tx);
            return Ok(Inserted {
                collisions,
                prune: None,
                pruned: Vec::new(),
                sealed: false,
            });
        }
        let pruned = match prune {
            Some(prune) => self.prune_in(conn, prune).map_err(sql)?,
            None => Vec::new(),
        };
        tx.commit()?;
        Ok(Inserted {
            collisions,
            prune,
            pruned,
            sealed,
        })
    }
}

//! The append path's rules and its transaction: one tick, one commit,
//! durable when it returns. The writer thread runs a tick through these
//! steps (`thread.rs`, `commit_tick`):
//!
//! - [`screen`]: a row at or below its stream's watermark could never be
//!   read, so it is dropped and counted (logged once per stream). On a
//!   resumed source the whole call is refused instead, as is any row not
//!   later than the newest row the previous session left.
//! - Time-based seal limits are checked before the rows go in, so a segment
//!   closes at the boundary and not one row past it. A row of the same tick
//!   that such a seal covers is screened again: a row is either committed
//!   and readable or reported dropped, never neither.
//! - [`insert_tick`]: finished seals ride on the tick's transaction, and so
//!   does a prune of covered rows once enough have gathered, which costs no
//!   extra commit. A repeated `(stream, ts)` costs only its own source's
//!   part of the tick.
//! - [`Drops`]: a lock or a full disk is retried; if it outlasts the
//!   retries the tick is dropped and reported. Too many lock failures in a
//!   row stop the writer; a full disk never does, since it clears when
//!   someone frees space and every tick meanwhile is reported.

use std::collections::HashSet;

use log::warn;
use rusqlite::{params, Connection};

use super::prune::{Prune, Pruned, Pruner};
use super::retry::{is_constraint, is_disk_full};
use super::seal::Sealer;
use super::session::Sessions;
use super::streams::StreamCache;
use crate::catalog::WalRow;
use crate::container::Transaction;
use crate::error::{Error, Result};

/// One row of a tick: the stream it belongs to, and the row.
pub type TickRow = (String, WalRow);

/// Rows of one tick for one source.
pub type TickRows = Vec<TickRow>;

/// One source's part of a tick: its index in the request, its id, its rows.
pub(super) type Part = (usize, i64, TickRows);

/// Ticks dropped in a row, for reasons other than a full disk, before the
/// writer gives up: a lock that does not clear is a failure the caller
/// must hear about, not an archive that silently holds nothing.
pub(super) const MAX_CONSECUTIVE_DROPS: u32 = 30;

/// Applies the watermark and resume rules to one source's part.
pub(super) fn screen(
    file: &str,
    sessions: &Sessions,
    streams: &mut StreamCache,
    source_id: i64,
    rows: TickRows,
) -> Result<TickRows> {
    let source = sessions.require(file, source_id)?;
    // A row too large for one `Rows` frame, or one segment, could never
    // replicate: refused whole, before anything else is judged.
    if let Some((stream, row)) = rows
        .iter()
        .find(|(_, r)| r.row.len() as u64 > crate::format::MAX_ROW_BYTES)
    {
        return Err(Error::RowTooLarge {
            file: file.to_string(),
            source_id,
            what: "stream",
            name: stream.clone(),
            ts: row.ts,
            bytes: row.row.len() as u64,
            limit: crate::format::MAX_ROW_BYTES,
        });
    }
    if source.resumed() {
        for (stream, row) in &rows {
            let watermark = streams
                .get(source_id, stream)
                .and_then(|st| st.effective_watermark());
            let newest = match (watermark, source.floor()) {
                (Some(w), Some(f)) => Some(w.max(f)),
                (w, f) => w.or(f),
            };
            if let Some(newest) = newest.filter(|n| row.ts <= *n) {
                return Err(Error::TimelineBackwards {
                    file: file.to_string(),
                    source_id,
                    ts: row.ts,
                    newest,
                });
            }
        }
        return Ok(rows);
    }
    let shadowed = |cache: &StreamCache, stream: &str, ts: i64| {
        cache
            .get(source_id, stream)
            .and_then(|st| st.effective_watermark())
            .is_some_and(|w| ts <= w)
    };
    if !rows
        .iter()
        .any(|(stream, row)| shadowed(streams, stream, row.ts))
    {
        return Ok(rows);
    }
    let mut kept = Vec::with_capacity(rows.len());
    for (stream, row) in rows {
        if !shadowed(streams, &stream, row.ts) {
            kept.push((stream, row));
            continue;
        }
        source.count_dropped();
        let st = streams.get_mut(source_id, &stream);
        if !st.warned_out_of_order {
            st.warned_out_of_order = true;
            warn!(
                "{file}: source {source_id}, stream {stream:?}: dropped a row at ts {}, at or below \
                 the stream's newest sealed row {}; no read could return it. Append in order \
                 per stream; later drops here are counted, not logged",
                row.ts,
                st.effective_watermark().unwrap_or(row.ts)
            );
        }
    }
    Ok(kept)
}

/// Refuses a screened part when a row is below a row its stream already
/// holds (or an earlier row of the same tick): stored above the watermark,
/// it would be readable at the origin, but a replica tails each stream in
/// timestamp order and would never be sent it (`FORMAT.md` §3.3). Judged
/// after [`screen`] and any seal the tick brings, so a row a seal covers is
/// dropped and counted as before. A replica's rows are the origin's and
/// are exempt. A row at
/// exactly the newest is left to the table's key (`Error::DuplicateRow`).
pub(super) fn in_order(
    file: &str,
    sessions: &Sessions,
    streams: &StreamCache,
    source_id: i64,
    rows: &TickRows,
) -> Result<()> {
    if sessions.get(source_id).is_none_or(|s| s.mirrored()) {
        return Ok(());
    }
    let mut newest: Vec<(&str, i64)> = Vec::new();
    for (stream, row) in rows {
        let at = match newest.iter().position(|(s, _)| *s == stream.as_str()) {
            Some(at) => at,
            None => {
                let held = streams
                    .get(source_id, stream)
                    .and_then(|st| st.newest)
                    .unwrap_or(i64::MIN);
                newest.push((stream, held));
                newest.len() - 1
            }
        };
        let top = newest[at].1;
        if row.ts < top {
            return Err(Error::OutOfOrder {
                file: file.to_string(),
                source_id,
                stream: stream.clone(),
                ts: row.ts,
                newest: top,
            });
        }
        newest[at].1 = row.ts;
    }
    Ok(())
}

/// What one attempt at a tick's transaction did.
pub(super) struct Inserted {
    /// Per part: the collision that dropped it, if one did.
    pub collisions: Vec<Option<Error>>,
    /// The prune that rode along, if the transaction committed, and what
    /// it deleted.
    pub prune: Option<Prune>,
    pub pruned: Pruned,
    /// Finished seals rode along too.
    pub sealed: bool,
}

/// One attempt at the tick's transaction: finished seals first, then each
/// source's rows under a savepoint (so a collision costs only them), then
/// the prune.
pub(super) fn insert_tick(
    conn: &Connection,
    file: &str,
    parts: &[Part],
    streams: &StreamCache,
    sealer: &Sealer,
    pruner: &Pruner,
    prune: Option<Prune>,
) -> Result<Inserted> {
    let sql = |e| Error::sqlite(file, "cannot append a tick", e);
    let tx = Transaction::begin(conn, file)?;
    let conn = tx.sql();
    let sealed = sealer.has_sealed();
    if sealed {
        sealer.insert_ready(&tx, streams)?;
    }
    let many = parts.len() > 1 || sealed;
    let mut collisions: Vec<Option<Error>> = Vec::with_capacity(parts.len());
    {
        let mut insert = conn
            .prepare_cached(
                "INSERT INTO wal(source_id, stream, ts, wall_offset, row) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(sql)?;
        for (_, source_id, rows) in parts {
            if many {
                conn.execute_batch("SAVEPOINT source_tick").map_err(sql)?;
            }
            let mut collision = None;
            for (stream, row) in rows {
                match insert.execute(params![source_id, stream, row.ts, row.wall_offset, row.row]) {
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
        Some(prune) => pruner.run_in(conn, streams, prune).map_err(sql)?,
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

/// The append path's own memory: ticks dropped in a row, and the sources
/// whose collisions have been logged once.
#[derive(Default)]
pub(super) struct Drops {
    consecutive: u32,
    warned_collisions: HashSet<i64>,
}

impl Drops {
    /// A tick committed: the run of drops is over.
    pub fn committed(&mut self) {
        self.consecutive = 0;
    }

    /// A tick was dropped after its retries because of `e`. `Err` when the
    /// writer should give up.
    pub fn dropped(&mut self, file: &str, e: &Error) -> Result<()> {
        if is_disk_full(e) {
            warn!("{file}: a tick was dropped: the disk is full ({e})");
            return Ok(());
        }
        self.consecutive += 1;
        warn!(
            "{file}: a tick was dropped after retries ({e}); {} in a row",
            self.consecutive
        );
        if self.consecutive >= MAX_CONSECUTIVE_DROPS {
            return Err(Error::WriterStopped {
                file: file.to_string(),
                message: format!(
                    "{} ticks in a row were dropped; the last failure: {e}",
                    self.consecutive
                ),
            });
        }
        Ok(())
    }

    /// A source's part collided with a row it already holds: logged once
    /// per source, reported every time.
    pub fn collision(&mut self, source_id: i64, err: &Error) {
        if self.warned_collisions.insert(source_id) {
            warn!("{err}; later collisions of this source are not logged");
        }
    }
}

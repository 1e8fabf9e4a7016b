//! Checkpoints and page reclaim: the background work that bounds how stale
//! a plain copy of the main file can be and how large a shrunken archive
//! stays.
//!
//! Two checkpoints run. SQLite's own, by size (`wal_autocheckpoint`, 4 MiB
//! of pages, set on the connection), bounds the sidecar. The writer's, by
//! time ([`super::CHECKPOINT_INTERVAL`]), bounds how much of a quiet source
//! a copy of the main file alone can miss. Both are passive: a reader
//! holding an old snapshot makes them move less, never blocks them.

use rusqlite::Connection;

use crate::error::{Result, SqlContext};

/// Pages one reclaim pass hands back at most: about a megabyte, so a pass
/// fits between ticks instead of stalling the source the way a full
/// `VACUUM` would.
pub const RECLAIM_PAGES_PER_PASS: u32 = 256;

/// Reclaim only once free pages exceed this fraction of the file, as a
/// divisor (10: more than a tenth). A rolling buffer reuses its freed pages
/// and stays under it; only a working set that shrank crosses it.
pub const RECLAIM_FREE_DIVISOR: u32 = 10;

/// How long a clean close may spend reclaiming before leaving the rest for
/// a later retention pass.
const RECLAIM_AT_CLOSE_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// What a checkpoint did, as SQLite reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointReport {
    /// A reader's snapshot stopped it from copying everything.
    pub busy: bool,
    /// Frames in the `-wal` sidecar.
    pub wal_frames: i64,
    /// Of those, frames now in the main file.
    pub checkpointed_frames: i64,
}

/// A passive checkpoint: copies what no reader still needs, waits for nothing.
pub(super) fn passive(conn: &Connection, file: &str) -> Result<CheckpointReport> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok(CheckpointReport {
            busy: r.get::<_, i64>(0)? != 0,
            wal_frames: r.get(1)?,
            checkpointed_frames: r.get(2)?,
        })
    })
    .ctx(file, "cannot checkpoint")
}

fn pragma(conn: &Connection, file: &str, name: &str) -> Result<u64> {
    conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
        .map(|v| v.max(0) as u64)
        .ctx(file, &format!("cannot read {name}"))
}

/// Whether enough of the file is free to be worth handing back.
pub(super) fn should_reclaim(free_pages: u64, pages: u64) -> bool {
    free_pages.saturating_mul(RECLAIM_FREE_DIVISOR as u64) > pages
}

/// One capped reclaim pass, only past the free-list threshold. Returns the
/// pages handed back.
pub(super) fn reclaim_if_fragmented(conn: &Connection, file: &str) -> Result<u64> {
    let free = pragma(conn, file, "freelist_count")?;
    let pages = pragma(conn, file, "page_count")?;
    if !should_reclaim(free, pages) {
        return Ok(0);
    }
    incremental_vacuum(conn, file)?;
    Ok(free.saturating_sub(pragma(conn, file, "freelist_count")?))
}

/// At a clean close, hands back free pages in capped passes until none are
/// left or the time budget is spent.
pub(super) fn reclaim_at_close(conn: &Connection, file: &str) -> Result<()> {
    let started = std::time::Instant::now();
    while pragma(conn, file, "freelist_count")? > 0 && started.elapsed() < RECLAIM_AT_CLOSE_BUDGET {
        incremental_vacuum(conn, file)?;
    }
    Ok(())
}

/// Hands back every free page, a capped pass at a time (each pass its own
/// transaction, so a kill between passes loses nothing). Returns the pages
/// handed back. For a rewrite that holds the file (compaction), which has
/// no ticks to make room for.
pub(crate) fn reclaim_free_pages(conn: &Connection, file: &str) -> Result<u64> {
    let before = pragma(conn, file, "freelist_count")?;
    let mut left = before;
    while left > 0 {
        incremental_vacuum(conn, file)?;
        let now = pragma(conn, file, "freelist_count")?;
        if now >= left {
            break;
        }
        left = now;
    }
    Ok(before.saturating_sub(left))
}

/// One pass of at most [`RECLAIM_PAGES_PER_PASS`] pages. The pragma hands
/// back one page per step (each step yields an empty row), so it must be
/// stepped to the end; a single step, which is all a batch execution does,
/// frees one page.
fn incremental_vacuum(conn: &Connection, file: &str) -> Result<()> {
    let what = "cannot reclaim free pages";
    let mut stmt = conn
        .prepare(&format!(
            "PRAGMA incremental_vacuum({RECLAIM_PAGES_PER_PASS})"
        ))
        .ctx(file, what)?;
    let mut rows = stmt.query([]).ctx(file, what)?;
    while rows.next().ctx(file, what)?.is_some() {}
    Ok(())
}

/// The database's size in bytes: pages times page size. What a size cap
/// compares against; the `-wal` sidecar is not counted, since a checkpoint
/// folds it into these pages.
pub(super) fn archive_bytes(conn: &Connection, file: &str) -> Result<u64> {
    Ok(pragma(conn, file, "page_count")? * pragma(conn, file, "page_size")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reclaim_fires_only_past_a_tenth_of_the_file() {
        assert!(!should_reclaim(0, 1000));
        assert!(!should_reclaim(100, 1000));
        assert!(should_reclaim(101, 1000));
        assert!(should_reclaim(5, 10));
    }
}

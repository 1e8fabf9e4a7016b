//! The `clock_offsets` table (format §3.4): the wall clock observed
//! against row timestamps, one observation per timestamp.

#[cfg(feature = "write")]
use rusqlite::params;

use super::Snapshot;
use crate::error::Result;
#[cfg(feature = "write")]
use crate::error::SqlContext;

/// One clock observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockOffset {
    /// The row timestamp observed.
    pub ts: i64,
    /// Wall clock minus `ts` at that row.
    pub offset_ns: i64,
}

/// Reads of `clock_offsets`.
impl Snapshot<'_> {
    /// A source's first `limit` clock observations in ts order (a reader
    /// facing an untrusted file bounds what it holds).
    pub fn clock_offsets_up_to(&self, source_id: i64, limit: u32) -> Result<Vec<ClockOffset>> {
        self.collect(
            "cannot read clock offsets",
            "SELECT ts, offset_ns FROM clock_offsets WHERE source_id = ?1 ORDER BY ts LIMIT ?2",
            [source_id, i64::from(limit)],
            |r| {
                Ok(ClockOffset {
                    ts: r.get(0)?,
                    offset_ns: r.get(1)?,
                })
            },
        )
    }

    /// A source's clock observations in ts order.
    pub fn clock_offsets(&self, source_id: i64) -> Result<Vec<ClockOffset>> {
        self.clock_offsets_up_to(source_id, u32::MAX)
    }
}

/// Recording an observation.
#[cfg(feature = "write")]
impl crate::container::Transaction<'_> {
    /// Records a clock observation; the first at a timestamp wins.
    pub fn insert_clock_offset(&self, source_id: i64, ts: i64, offset_ns: i64) -> Result<()> {
        self.sql()
            .execute(
                "INSERT OR IGNORE INTO clock_offsets(source_id, ts, offset_ns) VALUES (?1, ?2, ?3)",
                params![source_id, ts, offset_ns],
            )
            .ctx(self.file(), "cannot insert a clock offset")?;
        Ok(())
    }
}

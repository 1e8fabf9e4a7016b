//! When a stream seals without being asked: by rows, bytes, age, or a
//! wall-clock boundary. Pure decisions over numbers the writer keeps.

use std::time::Duration;

/// When a source's streams seal without being asked. Each limit is checked
/// per stream; any one reached seals it. The default seals only when told.
///
/// Row and byte limits are checked after an append commits, so a segment
/// holds exactly the limit. Age and alignment are checked before an append
/// goes in, against that append's time, so a segment never reaches across
/// the age or the boundary. Time is the source's own timeline (row
/// timestamps, and for alignment the wall clock they carry), so a source
/// that stops appending stops sealing too; seal it explicitly or finalize.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SealPolicy {
    /// Seal once a stream holds this many unsealed rows.
    pub max_rows: Option<u64>,
    /// Seal once a stream's unsealed rows hold this many payload bytes.
    pub max_bytes: Option<u64>,
    /// Seal before a stream's oldest unsealed row would be this much older
    /// than the source's newest.
    pub max_age: Option<Duration>,
    /// Seal whenever the source's wall clock crosses a multiple of this
    /// (every 5 minutes on the 5-minute marks, say), so segments line up
    /// across streams and sources.
    pub align: Option<Duration>,
}

impl SealPolicy {
    /// Explicit seals only.
    pub fn never() -> SealPolicy {
        SealPolicy::default()
    }

    /// This policy, also sealing at `rows` unsealed rows.
    pub fn rows(mut self, rows: u64) -> SealPolicy {
        self.max_rows = Some(rows.max(1));
        self
    }

    /// This policy, also sealing at `bytes` of unsealed payload.
    pub fn bytes(mut self, bytes: u64) -> SealPolicy {
        self.max_bytes = Some(bytes.max(1));
        self
    }

    /// This policy, also sealing before the oldest unsealed row gets `age` old.
    pub fn age(mut self, age: Duration) -> SealPolicy {
        self.max_age = Some(age);
        self
    }

    /// This policy, also sealing at every wall-clock multiple of `period`.
    pub fn aligned(mut self, period: Duration) -> SealPolicy {
        self.align = Some(period);
        self
    }

    pub(super) fn has_time_limit(&self) -> bool {
        self.max_age.is_some() || self.align.is_some()
    }

    /// Due by time: the incoming rows at `(now_ts, now_wall)` would make the
    /// stream's unsealed rows span too long, or cross an alignment boundary.
    pub(super) fn due_by_time(
        &self,
        first: Option<(i64, i64)>,
        now_ts: i64,
        now_wall: i64,
    ) -> bool {
        let Some((first_ts, first_wall)) = first else {
            return false;
        };
        if let Some(age) = self.max_age {
            if (now_ts as i128 - first_ts as i128) >= age.as_nanos() as i128 {
                return true;
            }
        }
        if let Some(period) = self.align {
            let period = period.as_nanos().clamp(1, i64::MAX as u128) as i64;
            if now_wall.div_euclid(period) != first_wall.div_euclid(period) {
                return true;
            }
        }
        false
    }

    /// Due by size: the stream's unsealed rows reached a row or byte limit.
    pub(super) fn due_by_size(&self, rows: u64, bytes: u64) -> bool {
        self.max_rows.is_some_and(|m| rows >= m) || self.max_bytes.is_some_and(|m| bytes >= m)
    }
}

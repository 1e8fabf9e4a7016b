//! The writer's settings.

use std::time::Duration;

use super::policy::SealPolicy;
use crate::container::CreateSchema;

/// The longest a plain copy of the main file may lag the writer: the writer
/// checkpoints at least this often, even when nothing else happens, because
/// a quiet source never reaches the size-based checkpoint.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(10);

/// Settings for one writer. The defaults are what production wants; tests
/// shorten the intervals to observe them.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// The time-based checkpoint cadence; see [`CHECKPOINT_INTERVAL`].
    pub checkpoint_interval: Duration,
    /// The seal policy every source starts with (explicit seals only, by
    /// default). [`super::SourceWriter::set_seal_policy`] changes one source's.
    pub seal_policy: SealPolicy,
    /// Covered rows (sealed, not yet deleted from the `wal` table) past
    /// which every one of them is deleted at the next append. Below it, a
    /// row goes only once every row sharing its page is covered, so a page
    /// is written once on its way out; see `prune.rs` and `DESIGN.md`.
    pub prune_batch_rows: u64,
    /// Appends between two prunes of fully covered pages (1: every append
    /// carries the deletes that became possible since the last).
    pub prune_every: u32,
    /// How long SQLite itself waits on a lock before the writer's own
    /// retries take over.
    pub busy_timeout: Duration,
    /// The schema a created archive is laid down with (4 by default, which
    /// every release of the original reads). Opening an existing archive
    /// ignores it: a file is written in the schema it has.
    pub schema: CreateSchema,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            checkpoint_interval: CHECKPOINT_INTERVAL,
            seal_policy: SealPolicy::default(),
            prune_batch_rows: 16_384,
            prune_every: 4,
            busy_timeout: Duration::from_millis(20),
            schema: CreateSchema::V4,
        }
    }
}

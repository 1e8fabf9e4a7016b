//! Retrying what usually clears by itself: a lock another connection holds
//! for a moment, or a full disk someone is clearing. Every part of the
//! writer that commits goes through here.

use std::time::Duration;

use log::warn;

use crate::error::{Error, Result};

/// Waits between attempts. About a third of a second in all, during which
/// the single-slot channel holds the callers back.
const RETRY_BACKOFF: [Duration; 3] = [
    Duration::from_millis(10),
    Duration::from_millis(50),
    Duration::from_millis(250),
];

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

/// A full disk: transient, and worth waiting out for as long as it lasts.
pub(super) fn is_disk_full(e: &Error) -> bool {
    matches!(e, Error::Sqlite { source, .. }
        if source.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull))
}

/// A constraint violation, such as a repeated `(stream, ts)`.
pub(super) fn is_constraint(e: &rusqlite::Error) -> bool {
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

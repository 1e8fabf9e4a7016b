//! A new archive built beside its final name and moved into place whole.
//!
//! A replica that does not exist yet receives its catch-up in a staging
//! file that nothing reads: it is written with no journal and no fsync
//! per transaction, so each byte reaches the disk once instead of twice
//! through the `-wal`. Only once it holds everything is it made durable,
//! switched to WAL mode (what every archive is) and given its name. A kill
//! before that leaves no archive at the final name, only a staging file
//! that the next run discards; rule 8 of `WIRE.md` (a reconnect restates
//! everything) makes starting the catch-up again always correct.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::handle::lock_for_writing;
use super::paths::sidecar_path;
use super::place::{put_in_place, remove_if_present, remove_sidecars, sync_path, Replace};
use crate::error::{Error, Result, SqlContext};

/// What a staging file's name adds to the final one.
pub const STAGING_SUFFIX: &str = ".catch-up-staging";

/// The staging file of the archive that will be at `out`.
pub fn staging_path(out: &Path) -> PathBuf {
    sidecar_path(out, STAGING_SUFFIX)
}

/// Removes what an earlier run staged for `out` and did not finish: the
/// staging file and its sidecars. A staging file that a live writer still
/// holds (another subscriber catching up into the same place) is left
/// alone and refused as [`Error::InUse`].
pub fn discard_stale(out: &Path) -> Result<()> {
    let staging = staging_path(out);
    let file = staging.display().to_string();
    if std::fs::symlink_metadata(&staging).is_ok() {
        // The lock proves no writer has it; it is dropped before removing.
        drop(lock_for_writing(&staging, &file)?);
        remove_if_present(&staging, &file)?;
    }
    remove_sidecars(&staging, &file)
}

/// Settings for the writing connection of a staging file: no journal
/// file and no fsync per transaction (nothing reads the file, and a kill
/// discards it), a rollback journal in memory so that a transaction the
/// writer abandons still rolls back, and no WAL, so every page is written
/// once, in place.
pub fn apply_bulk_load(conn: &Connection, file: &str) -> Result<()> {
    let mode: String = conn
        .query_row("PRAGMA journal_mode = MEMORY", [], |r| r.get(0))
        .ctx(file, "cannot leave WAL mode for the staged catch-up")?;
    if !mode.eq_ignore_ascii_case("memory") {
        return Err(Error::Invalid {
            file: file.to_string(),
            message: format!("the staging file stayed in journal mode {mode:?}"),
        });
    }
    conn.execute_batch("PRAGMA synchronous = OFF;")
        .ctx(file, "cannot configure the staging connection")
}

/// Makes the finished staging file durable, switches it to WAL mode and
/// moves it to `out`, which must not exist: the name appears only once the
/// file under it is complete and on disk. The writer of the staging file
/// must have stopped.
pub fn promote(staging: &Path, out: &Path) -> Result<()> {
    let file = staging.display().to_string();
    sync_path(staging, &file)?;
    {
        let conn = Connection::open_with_flags(
            staging,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .ctx(&file, "cannot open the staging file")?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .ctx(&file, "cannot switch the staged archive to WAL mode")?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Invalid {
                file,
                message: format!("the staged archive stayed in journal mode {mode:?}"),
            });
        }
        // Closing the last connection folds and removes the `-wal`.
        conn.close()
            .map_err(|(_, e)| Error::sqlite(&file, "cannot close the staging file", e))?;
    }
    for suffix in ["-wal", "-journal"] {
        let sidecar = sidecar_path(staging, suffix);
        if std::fs::metadata(&sidecar).is_ok_and(|m| m.len() > 0) {
            return Err(Error::Invalid {
                file,
                message: format!(
                    "{} was left behind; the staged archive is not whole",
                    sidecar.display()
                ),
            });
        }
    }
    remove_sidecars(staging, &file)?;
    // Fsynced again (the switch rewrote the header), linked to `out` only
    // if nothing took that name meanwhile, the directory fsynced.
    put_in_place(staging, out, Replace::Never, &file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_staging_name_extends_the_final_one() {
        assert_eq!(
            staging_path(Path::new("d/r.dendro")),
            PathBuf::from("d/r.dendro.catch-up-staging")
        );
    }

    /// A folder with a staging file for `r.dendro` holding `bytes`: the
    /// folder, the final name and the staging file's.
    fn staged(bytes: &[u8]) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.dendro");
        let staging = staging_path(&out);
        std::fs::write(&staging, bytes).unwrap();
        (dir, out, staging)
    }

    #[test]
    fn a_stale_staging_file_and_its_sidecars_are_discarded() {
        let (dir, out, staging) = staged(b"half");
        std::fs::write(sidecar_path(&staging, "-journal"), b"j").unwrap();
        discard_stale(&out).unwrap();
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
        discard_stale(&out).unwrap();
    }

    #[test]
    fn a_staging_file_a_writer_holds_is_refused_not_removed() {
        let (_dir, out, staging) = staged(b"busy");
        let _held = lock_for_writing(&staging, "held").unwrap();
        let err = discard_stale(&out).unwrap_err();
        assert!(matches!(err, Error::InUse { .. }), "{err}");
        assert!(staging.exists());
    }
}

//! Where a rewrite's result goes: a new file written beside its final name
//! and renamed over it only once complete, so an interrupted rewrite never
//! leaves a half archive (or a half export) under the name the caller
//! asked for, and an existing file is replaced only when the caller said so.

use std::path::{Path, PathBuf};

use crate::container::place::{put_in_place, remove_with_sidecars, Replace};
use crate::container::{ArchiveMut, Transaction};
use crate::error::{Error, Result, SqlContext};

/// Bytes of segment payload after which a copy commits and starts a new
/// transaction, so the `-wal` sidecar (and the disk a copy needs) stays
/// bounded instead of growing to the size of the whole output.
const COMMIT_EVERY_BYTES: u64 = 64 << 20;

/// A result being written under a temporary name. Dropped without
/// [`Staged::finish`], it removes what it wrote.
pub(crate) struct Staged {
    target: PathBuf,
    temp: PathBuf,
    finished: bool,
}

impl Staged {
    /// Refuses an existing `target` unless `replace`, and a target that is
    /// one of `inputs` (a rewrite never writes over what it reads).
    pub fn new(target: &Path, replace: bool, inputs: &[&Path]) -> Result<Staged> {
        let file = target.display().to_string();
        let exists = std::fs::symlink_metadata(target).is_ok();
        if exists && !replace {
            return Err(Error::Invalid {
                file,
                message:
                    "the output already exists; refusing to overwrite it (--force replaces it)"
                        .into(),
            });
        }
        if exists {
            if let Ok(target_real) = std::fs::canonicalize(target) {
                for input in inputs {
                    if std::fs::canonicalize(input).ok().as_ref() == Some(&target_real) {
                        return Err(Error::Invalid {
                            file,
                            message: "the output is also an input; write to a new name".into(),
                        });
                    }
                }
            }
            let sidecar = crate::container::sidecar_path(target, "-wal");
            if std::fs::metadata(&sidecar).is_ok_and(|m| m.len() > 0) {
                return Err(Error::Invalid {
                    file,
                    message: "the output has commits in its -wal sidecar: it is open in a \
                              writer, or was not closed cleanly; refusing to replace it"
                        .into(),
                });
            }
        }
        let name = target
            .file_name()
            .ok_or_else(|| Error::Invalid {
                file: file.clone(),
                message: "the output names no file".into(),
            })?
            .to_string_lossy()
            .into_owned();
        let temp = target.with_file_name(format!(".{name}.partial-{}", std::process::id()));
        // Left by an earlier run of this process id that did not finish.
        remove_with_sidecars(&temp, &file)?;
        Ok(Staged {
            target: target.to_path_buf(),
            temp,
            finished: false,
        })
    }

    /// Where to write until [`Staged::finish`].
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// The name errors use: the final one.
    pub fn file(&self) -> String {
        self.target.display().to_string()
    }

    /// Creates an empty archive at the temporary path.
    pub fn create_archive(&self) -> Result<ArchiveMut> {
        ArchiveMut::create(&self.temp)
    }

    /// Moves the result to its final name (replacing what is there) and
    /// makes the rename durable.
    pub fn finish(mut self) -> Result<()> {
        let file = self.file();
        if self.target.is_dir() && !self.temp.is_dir() {
            return Err(Error::Invalid {
                file,
                message: "the output is a directory".into(),
            });
        }
        // A directory cannot be renamed over anything: the old output goes
        // first (a file is replaced by the rename itself, atomically).
        if self.temp.is_dir() && std::fs::symlink_metadata(&self.target).is_ok() {
            let removed = if self.target.is_dir() {
                std::fs::remove_dir_all(&self.target)
            } else {
                std::fs::remove_file(&self.target)
            };
            removed.map_err(|e| Error::io(&file, "cannot remove the old output", e))?;
        }
        // The old file's sidecars hold nothing (checked in `new`); they go
        // with it.
        let placed = put_in_place(&self.temp, &self.target, Replace::Allowed, &file);
        // Once the rename is done the temporary name is gone, even if the
        // directory's fsync failed after it.
        self.finished = !self.temp.exists();
        placed
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.finished {
            if self.temp.is_dir() {
                let _ = std::fs::remove_dir_all(&self.temp);
            } else {
                let _ = remove_with_sidecars(&self.temp, &self.file());
            }
        }
    }
}

/// Closes a finished output archive so that its main file alone holds
/// everything: the sidecar is folded in and emptied first.
pub(crate) fn close_archive(archive: ArchiveMut) -> Result<()> {
    archive
        .conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .ctx(
            archive.file(),
            "cannot fold the finished output into its main file",
        )?;
    drop(archive);
    Ok(())
}

/// Write transactions on an output, committed every
/// [`COMMIT_EVERY_BYTES`] of payload and whenever the caller asks.
pub(crate) struct Batches<'a> {
    conn: &'a rusqlite::Connection,
    file: &'a str,
    tx: Option<Transaction<'a>>,
    pending: u64,
}

impl<'a> Batches<'a> {
    pub fn new(archive: &'a ArchiveMut) -> Batches<'a> {
        Batches {
            conn: &archive.conn,
            file: archive.file(),
            tx: None,
            pending: 0,
        }
    }

    /// The open transaction, begun if none is.
    pub fn tx(&mut self) -> Result<&Transaction<'a>> {
        if self.tx.is_none() {
            self.tx = Some(Transaction::begin(self.conn, self.file)?);
        }
        Ok(self.tx.as_ref().expect("begun above"))
    }

    /// Counts `bytes` written, committing once enough have gathered.
    pub fn wrote(&mut self, bytes: u64) -> Result<()> {
        self.pending += bytes;
        if self.pending >= COMMIT_EVERY_BYTES {
            self.commit()?;
        }
        Ok(())
    }

    /// Commits what is open.
    pub fn commit(&mut self) -> Result<()> {
        self.pending = 0;
        match self.tx.take() {
            Some(tx) => tx.commit(),
            None => Ok(()),
        }
    }
}

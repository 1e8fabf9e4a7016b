//! Where a rewrite's result goes: a new file written beside its final name
//! and renamed over it only once complete, so an interrupted rewrite never
//! leaves a half archive (or a half export) under the name the caller
//! asked for, and an existing file is replaced only when the caller said so.
//!
//! The temporary name is `.NAME.partial-PID`. A run that was killed leaves
//! it behind; the next run for the same name removes every such file whose
//! process is gone, whatever its PID, and leaves those of a live process
//! alone (it may be writing them now). A directory (an export) replacing
//! another swaps with it in one step where the system can, so the name
//! always holds one whole export; elsewhere the old one is first moved
//! aside to `.NAME.replaced-PID`, which a later run puts back if the new
//! one never arrived.

use std::path::{Path, PathBuf};

use crate::container::place::{
    exchange, parent_dir, put_in_place, remove_with_sidecars, rename, sync_path, Replace, SIDECARS,
};
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
        sweep(target, &name, &file)?;
        let temp = target.with_file_name(format!(".{name}{PARTIAL}{}", std::process::id()));
        // Left by an earlier run of this process id that did not finish.
        remove_any(&temp, &file)?;
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

    /// Creates an empty archive of `schema` at the temporary path.
    pub fn create_archive(&self, schema: crate::container::CreateSchema) -> Result<ArchiveMut> {
        ArchiveMut::create_with_schema(&self.temp, schema)
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
        // A directory cannot be renamed over anything: it swaps with the old
        // output, which is then removed from under the temporary name.
        if self.temp.is_dir() && std::fs::symlink_metadata(&self.target).is_ok() {
            self.swap_directory()?;
            self.finished = true;
            return Ok(());
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

impl Staged {
    /// Replaces the existing output by the finished directory, never
    /// leaving the name without one whole output. The old output's files
    /// are removed last; if that fails, a later run removes them.
    fn swap_directory(&self) -> Result<()> {
        let file = self.file();
        let dir = parent_dir(&self.target);
        if exchange(&self.temp, &self.target, &file)? {
            sync_path(&dir, &file)?;
            let _ = remove_any(&self.temp, &file);
            return Ok(());
        }
        self.swap_by_renames()
    }

    /// The swap where names cannot be exchanged: the old output moved
    /// aside, the new one renamed in, the old one removed. A crash between
    /// the two renames leaves the old one aside, where [`sweep`] finds it.
    fn swap_by_renames(&self) -> Result<()> {
        let file = self.file();
        let dir = parent_dir(&self.target);
        let name = self
            .target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let aside = self
            .target
            .with_file_name(format!(".{name}{REPLACED}{}", std::process::id()));
        remove_any(&aside, &file)?;
        rename(&self.target, &aside, &file)?;
        if let Err(e) = rename(&self.temp, &self.target, &file) {
            // Put the old one back; if even that fails, the next run does.
            let _ = rename(&aside, &self.target, &file);
            return Err(e);
        }
        sync_path(&dir, &file)?;
        let _ = remove_any(&aside, &file);
        Ok(())
    }
}

/// What the temporary name adds before the process id.
const PARTIAL: &str = ".partial-";
/// What the name of an old output moved aside adds before the process id.
const REPLACED: &str = ".replaced-";

/// Whether process `pid` may still be running (and writing its partial
/// output). Unknown counts as alive: a file is only removed when its
/// owner is certainly gone.
fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(target_os = "linux")]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true;
        };
        if pid <= 0 {
            return true;
        }
        // SAFETY: signal 0 only checks that the process exists.
        if unsafe { libc::kill(pid, 0) } == 0 {
            return true;
        }
        std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(target_os = "linux"))]
    {
        true
    }
}

/// Removes a file (with its SQLite sidecars) or a directory tree at `path`,
/// if present. A symbolic link is removed, never followed.
fn remove_any(path: &Path, file: &str) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path)
            .map_err(|e| Error::io(file, &format!("cannot remove {}", path.display()), e)),
        _ => remove_with_sidecars(path, file),
    }
}

/// Removes what earlier runs for `target` left and no live process owns:
/// `.NAME.partial-PID` (and its sidecars), and `.NAME.replaced-PID`, which
/// is put back at `target` when nothing took its place. Only names of
/// exactly that shape are touched.
fn sweep(target: &Path, name: &str, file: &str) -> Result<()> {
    let dir = parent_dir(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    let own = std::process::id();
    for entry in entries.flatten() {
        let entry_name = entry.file_name();
        let Some(entry_name) = entry_name.to_str() else {
            continue;
        };
        let Some(rest) = entry_name
            .strip_prefix('.')
            .and_then(|r| r.strip_prefix(name))
        else {
            continue;
        };
        let (replaced, rest) = match (rest.strip_prefix(PARTIAL), rest.strip_prefix(REPLACED)) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => continue,
        };
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let (pid, suffix) = rest.split_at(digits);
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if !(suffix.is_empty() || (!replaced && SIDECARS.contains(&suffix))) {
            continue;
        }
        // This process's own leftovers are handled by its caller.
        if pid == own || process_alive(pid) {
            continue;
        }
        let path = entry.path();
        if replaced && std::fs::symlink_metadata(target).is_err() {
            rename(&path, target, file)?;
            sync_path(&dir, file)?;
        } else {
            remove_any(&path, file)?;
        }
    }
    Ok(())
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.finished {
            let _ = remove_any(&self.temp, &self.file());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn a_swap_by_renames_replaces_a_directory_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("old"), b"old").unwrap();
        let staged = Staged::new(&out, true, &[]).unwrap();
        std::fs::create_dir(staged.path()).unwrap();
        std::fs::write(staged.path().join("new"), b"new").unwrap();
        staged.swap_by_renames().unwrap();
        assert_eq!(std::fs::read(out.join("new")).unwrap(), b"new");
        assert!(!out.join("old").exists());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn an_old_output_left_aside_by_a_dead_run_is_put_back_when_nothing_replaced_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let aside = dir.path().join(format!(".out{REPLACED}{}", dead_pid()));
        std::fs::create_dir(&aside).unwrap();
        std::fs::write(aside.join("old"), b"old").unwrap();
        drop(Staged::new(&out, true, &[]).unwrap());
        assert_eq!(std::fs::read(out.join("old")).unwrap(), b"old");
        assert!(!aside.exists());
        // With an output in place, a leftover one is removed instead.
        std::fs::create_dir(&aside).unwrap();
        drop(Staged::new(&out, true, &[]).unwrap());
        assert!(!aside.exists());
        assert!(out.join("old").exists());
    }
}

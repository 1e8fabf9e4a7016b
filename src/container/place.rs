//! Putting a file that was written under another name into place, durably.
//!
//! Three writers build a file beside its final name and only then give it
//! that name: a staged catch-up (`container::staging`), a rewrite's output
//! (`rewrite::output`), and a writer that made an archive it could not
//! start (which takes the file away again). They share the steps here: the
//! SQLite sidecars that belong to a name, fsync of the file, the move, and
//! fsync of the directory that makes the new name survive a power loss.

use std::path::{Path, PathBuf};

use super::paths::sidecar_path;
use crate::error::{Error, Result};

/// One file-system step of putting a result in place, as a model of the
/// disk sees it. Only tests observe these (see [`observe_steps`]): the
/// power-cut shim models which names a cut keeps, and a test can fail one
/// step to check that an interrupted placement loses nothing.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// fsync of a file's content.
    SyncFile(&'a Path),
    /// fsync of a directory: the names in it become durable.
    SyncDir(&'a Path),
    /// `from` gets the name `to`, replacing what was there.
    Rename {
        /// The old name.
        from: &'a Path,
        /// The new one.
        to: &'a Path,
    },
    /// `a` and `b` swap names in one step.
    Exchange {
        /// One name.
        a: &'a Path,
        /// The other.
        b: &'a Path,
    },
    /// `to` becomes a second name of the file at `from`.
    Link {
        /// The existing name.
        from: &'a Path,
        /// The new one.
        to: &'a Path,
    },
    /// A file's name is removed.
    Remove(&'a Path),
}

/// What observes the steps: called before each one, and an error it
/// returns is that step's error (the step is not taken).
#[doc(hidden)]
pub type StepObserver = fn(&Step<'_>) -> std::io::Result<()>;

static OBSERVER: std::sync::RwLock<Option<StepObserver>> = std::sync::RwLock::new(None);

/// Installs (or, with `None`, removes) the process-wide step observer.
/// For tests only; nothing in the crate installs one.
#[doc(hidden)]
pub fn observe_steps(observer: Option<StepObserver>) {
    *OBSERVER.write().unwrap_or_else(|e| e.into_inner()) = observer;
}

/// Reports `step` to the observer, if any.
pub(crate) fn step(step: Step<'_>) -> std::io::Result<()> {
    let observer = *OBSERVER.read().unwrap_or_else(|e| e.into_inner());
    match observer {
        Some(f) => f(&step),
        None => Ok(()),
    }
}

/// What SQLite may leave beside a file it wrote: the WAL, its shared-memory
/// index and a rollback journal.
pub(crate) const SIDECARS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Whether the move may take the place of a file already at the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replace {
    /// Never: a file that appeared at the target is left alone and the move
    /// fails (a hard link, which the kernel refuses over an existing name).
    Never,
    /// Yes, atomically: the target's sidecars go first, then a rename.
    Allowed,
}

/// Removes `path` if it is there; a missing file is not an error.
pub(crate) fn remove_if_present(path: &Path, file: &str) -> Result<()> {
    match step(Step::Remove(path)).and_then(|()| std::fs::remove_file(path)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(
            file,
            &format!("cannot remove {}", path.display()),
            e,
        )),
    }
}

/// Removes the SQLite sidecars of `path` (not `path` itself).
pub(crate) fn remove_sidecars(path: &Path, file: &str) -> Result<()> {
    for suffix in SIDECARS {
        remove_if_present(&sidecar_path(path, suffix), file)?;
    }
    Ok(())
}

/// Removes `path` and its sidecars, each if present; every one is tried
/// even when an earlier one fails, and the first failure is returned.
pub(crate) fn remove_with_sidecars(path: &Path, file: &str) -> Result<()> {
    let main = remove_if_present(path, file);
    let sidecars = remove_sidecars(path, file);
    main.and(sidecars)
}

/// fsync of a file, or of a directory (which makes the names in it durable).
pub(crate) fn sync_path(path: &Path, file: &str) -> Result<()> {
    let observed = if path.is_dir() {
        Step::SyncDir(path)
    } else {
        Step::SyncFile(path)
    };
    step(observed)
        .and_then(|()| std::fs::File::open(path))
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(file, &format!("cannot sync {}", path.display()), e))
}

/// The directory that holds `path`'s name.
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Moves the finished file at `staged` to `target` and makes both it and
/// its new name durable: the file is fsynced before the move (so the name
/// never points at data still in flight) and the directory after. A
/// directory at `staged` (an export of many files) is moved as it is.
/// `file` names the result in errors.
pub(crate) fn put_in_place(
    staged: &Path,
    target: &Path,
    replace: Replace,
    file: &str,
) -> Result<()> {
    if !staged.is_dir() {
        sync_path(staged, file)?;
    }
    match replace {
        Replace::Never => link_into_place(staged, target, file)?,
        Replace::Allowed => {
            // Sidecars of the file being replaced would sit beside the new
            // one under its name and be read as its own.
            if !staged.is_dir() {
                remove_sidecars(target, file)?;
            }
            step(Step::Rename {
                from: staged,
                to: target,
            })
            .and_then(|()| std::fs::rename(staged, target))
            .map_err(|e| Error::io(file, "cannot move the finished output into place", e))?;
        }
    }
    sync_path(&parent_dir(target), file)
}

/// Swaps the names `a` and `b` in one step, so that each name holds one
/// whole thing at every moment, a crash included (Linux's `renameat2` with
/// `RENAME_EXCHANGE`). `Ok(false)` where the system or file system cannot:
/// the caller then moves things one at a time. The directory is not
/// fsynced here.
pub(crate) fn exchange(a: &Path, b: &Path, file: &str) -> Result<bool> {
    step(Step::Exchange { a, b }).map_err(|e| Error::io(file, "cannot swap the outputs", e))?;
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| Error::Invalid {
                file: file.to_string(),
                message: format!("{} has a NUL byte in its name", p.display()),
            })
        };
        let (ca, cb) = (c(a)?, c(b)?);
        // SAFETY: both are valid NUL-terminated paths that outlive the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                libc::AT_FDCWD,
                ca.as_ptr(),
                libc::AT_FDCWD,
                cb.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        if rc == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) => Ok(false),
            _ => Err(Error::io(file, "cannot swap the outputs", e)),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (a, b);
        Ok(false)
    }
}

/// Renames `from` to `to` (reported to the observer like every step).
pub(crate) fn rename(from: &Path, to: &Path, file: &str) -> Result<()> {
    step(Step::Rename { from, to })
        .and_then(|()| std::fs::rename(from, to))
        .map_err(|e| {
            Error::io(
                file,
                &format!("cannot rename {} to {}", from.display(), to.display()),
                e,
            )
        })
}

/// Gives `staged` the name `target`, never over a file that appeared there
/// meanwhile: a hard link fails if the name is taken. Where links are not
/// supported, a rename after checking that the name is free.
fn link_into_place(staged: &Path, target: &Path, file: &str) -> Result<()> {
    let taken = || Error::Invalid {
        file: target.display().to_string(),
        message: "a file appeared at the target during the write; it was left alone".into(),
    };
    let linked = step(Step::Link {
        from: staged,
        to: target,
    })
    .and_then(|()| std::fs::hard_link(staged, target));
    match linked {
        Ok(()) => remove_if_present(staged, file),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(taken()),
        Err(_) if std::fs::symlink_metadata(target).is_ok() => Err(taken()),
        Err(_) => step(Step::Rename {
            from: staged,
            to: target,
        })
        .and_then(|()| std::fs::rename(staged, target))
        .map_err(|e| Error::io(file, &format!("cannot move it to {}", target.display()), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_parent_of_a_bare_name_is_the_working_directory() {
        assert_eq!(parent_dir(Path::new("r.dendro")), PathBuf::from("."));
        assert_eq!(parent_dir(Path::new("d/r.dendro")), PathBuf::from("d"));
    }

    #[test]
    fn never_replace_leaves_a_file_that_appeared_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (staged, out) = (dir.path().join("s"), dir.path().join("o"));
        std::fs::write(&staged, b"staged").unwrap();
        std::fs::write(&out, b"theirs").unwrap();
        let err = put_in_place(&staged, &out, Replace::Never, "s").unwrap_err();
        assert!(err.to_string().contains("appeared"), "{err}");
        assert_eq!(std::fs::read(&out).unwrap(), b"theirs");
        assert_eq!(std::fs::read(&staged).unwrap(), b"staged");
    }

    #[test]
    fn never_replace_moves_to_a_free_name_and_leaves_one_name() {
        let dir = tempfile::tempdir().unwrap();
        let (staged, out) = (dir.path().join("s"), dir.path().join("o"));
        std::fs::write(&staged, b"staged").unwrap();
        put_in_place(&staged, &out, Replace::Never, "s").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"staged");
        assert_eq!(names(dir.path()), ["o"]);
    }

    #[test]
    fn replacing_takes_the_old_files_sidecars_away() {
        let dir = tempfile::tempdir().unwrap();
        let (staged, out) = (dir.path().join("s"), dir.path().join("o"));
        std::fs::write(&staged, b"new").unwrap();
        std::fs::write(&out, b"old").unwrap();
        for suffix in SIDECARS {
            std::fs::write(sidecar_path(&out, suffix), b"stale").unwrap();
        }
        put_in_place(&staged, &out, Replace::Allowed, "o").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["o"]);
    }

    #[test]
    fn a_staged_directory_is_moved_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (staged, out) = (dir.path().join("s"), dir.path().join("o"));
        std::fs::create_dir(&staged).unwrap();
        std::fs::write(staged.join("part"), b"p").unwrap();
        put_in_place(&staged, &out, Replace::Allowed, "o").unwrap();
        assert_eq!(std::fs::read(out.join("part")).unwrap(), b"p");
        assert_eq!(names(dir.path()), ["o"]);
    }

    #[test]
    fn removing_with_sidecars_takes_every_one_and_tolerates_absence() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, b"a").unwrap();
        for suffix in SIDECARS {
            std::fs::write(sidecar_path(&path, suffix), b"x").unwrap();
        }
        std::fs::write(dir.path().join("a-other"), b"kept").unwrap();
        remove_with_sidecars(&path, "a").unwrap();
        assert_eq!(names(dir.path()), ["a-other"]);
        remove_with_sidecars(&path, "a").unwrap();
    }

    #[test]
    fn a_missing_staged_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let (staged, out) = (dir.path().join("gone"), dir.path().join("o"));
        let err = put_in_place(&staged, &out, Replace::Allowed, "o").unwrap_err();
        assert!(err.to_string().contains("gone"), "{err}");
        assert!(!out.exists());
    }
}

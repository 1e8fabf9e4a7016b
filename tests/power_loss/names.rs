//! The disk's names, beside the shim's file contents: a rename, link or
//! unlink the crate makes with `std::fs` reaches the disk only when the
//! directory holding it is fsynced. The crate reports those steps to an
//! observer (`dendro::container::observe_steps`); this one counts each as
//! an operation a cut can land on, and a reboot ([`restore`]) undoes every
//! step no directory fsync covered, newest first, after the shim has put
//! each file's content back.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use dendro::container::Step;

use crate::vfs::{self, Unsynced};

/// A step on the names that no directory fsync has covered yet.
enum Undo {
    /// `to` got the file at `from` (moved, or also kept when `linked`);
    /// `replaced` is what `to` held before, if anything.
    Placed {
        from: PathBuf,
        to: PathBuf,
        linked: bool,
        replaced: Option<Vec<u8>>,
    },
    /// `path` held `content` and was removed.
    Removed { path: PathBuf, content: Vec<u8> },
}

static PENDING: Mutex<Vec<Undo>> = Mutex::new(Vec::new());

fn pending() -> std::sync::MutexGuard<'static, Vec<Undo>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn power_cut() -> std::io::Error {
    std::io::Error::other("the power is out (simulated)")
}

/// The observer: counts the step (a cut may land on it, and then it is not
/// taken) and records what a reboot may undo.
fn observe(step: &Step<'_>) -> std::io::Result<()> {
    if !vfs::admit_outside() {
        return Err(power_cut());
    }
    match *step {
        Step::SyncFile(path) => vfs::synced_outside(path),
        Step::SyncDir(dir) => pending().retain(|u| match u {
            Undo::Placed { to, .. } => parent(to) != dir,
            Undo::Removed { path, .. } => parent(path) != dir,
        }),
        Step::Rename { from, to } | Step::Link { from, to } => {
            let linked = matches!(step, Step::Link { .. });
            pending().push(Undo::Placed {
                from: from.to_path_buf(),
                to: to.to_path_buf(),
                linked,
                replaced: std::fs::read(to).ok(),
            });
            vfs::renamed(from, to, linked);
        }
        Step::Remove(path) => {
            if let Ok(content) = std::fs::read(path) {
                pending().push(Undo::Removed {
                    path: path.to_path_buf(),
                    content,
                });
            }
            vfs::forget(path);
        }
        // Only directories are exchanged (an export), and this model
        // holds files only.
        Step::Exchange { .. } => {}
    }
    Ok(())
}

/// Observing the crate's steps until dropped (a failing test included,
/// so the next test of the binary does not inherit the observer).
pub struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        dendro::container::observe_steps(None);
        pending().clear();
    }
}

/// Starts observing the crate's steps, with nothing pending.
#[must_use = "observing stops when this is dropped"]
pub fn install() -> Installed {
    pending().clear();
    dendro::container::observe_steps(Some(observe));
    Installed
}

/// The reboot: the shim restores every file's content as of its last sync
/// (each unsynced write lost), then every name step no directory fsync
/// covered is undone, newest first.
pub fn restore() {
    vfs::restore(Unsynced::Lost);
    let undo: Vec<Undo> = std::mem::take(&mut *pending());
    for step in undo.into_iter().rev() {
        match step {
            Undo::Placed {
                from,
                to,
                linked,
                replaced,
            } => {
                if !linked {
                    if let Ok(content) = std::fs::read(&to) {
                        std::fs::write(&from, content).unwrap();
                    }
                }
                match replaced {
                    Some(old) => std::fs::write(&to, old).unwrap(),
                    None => {
                        let _ = std::fs::remove_file(&to);
                    }
                }
                let _ = std::fs::remove_file(vfs::sidecar(&to, "-shm"));
            }
            Undo::Removed { path, content } => std::fs::write(&path, content).unwrap(),
        }
    }
}

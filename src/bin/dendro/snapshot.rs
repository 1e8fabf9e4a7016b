//! Consistent images of an archive that a writer is appending to, for
//! `dendro serve`.
//!
//! A live archive is in SQLite's WAL mode: what is committed is the main
//! file plus the frames of its `-wal` sidecar, and a checkpoint copies
//! frames into the main file while readers read it. Serving the main
//! file's bytes as they are would show a follower only what was
//! checkpointed, and a range read during a checkpoint would mix two states.
//! So while an archive has a non-empty `-wal`, the server answers from an
//! image: the database as one SQLite read transaction sees it, copied out
//! (`sqlite3_serialize`, page by page through SQLite's pager) on a
//! read-only connection, which never writes the archive. Each image has
//! its own strong `ETag`; a request naming one with `If-Match` is answered
//! from that image while it is held, `412` once it is not, so a reader's
//! ranges all come from one committed state whatever the writer, a
//! checkpoint or retention does meanwhile.
//!
//! A follower revalidates with `If-None-Match`: `304` while nothing was
//! committed, else the newest image, with `Dendro-Changed` listing the
//! 4 KiB units that differ from the image it named (when that one is still
//! held), so it keeps every other page it already has.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use rusqlite::{Connection, OpenFlags};

/// Images kept per archive: the newest and a few before it, so a reader
/// still on one of them finishes its reads and a follower one poll behind
/// gets its list of changes. An older one stays while it is being read
/// (asked for within [`IN_USE`]), up to [`MAX_HELD`].
const HELD: usize = 4;
const MAX_HELD: usize = 16;
const IN_USE: std::time::Duration = std::time::Duration::from_secs(10);

/// The unit `Dendro-Changed` counts in (bytes).
pub const UNIT: usize = 4096;

/// Past this many ranges the list is left out: the follower drops its cache.
const MAX_RANGES: usize = 400;

/// One committed state of the archive, whole.
pub struct Image {
    pub etag: String,
    pub bytes: Arc<Vec<u8>>,
    /// When a reader last asked for it.
    used: std::sync::Mutex<Instant>,
}

impl Image {
    fn recently_used(&self) -> bool {
        self.used
            .lock()
            .map(|t| t.elapsed() < IN_USE)
            .unwrap_or(false)
    }
}

/// The images of one live archive, and the connection they are read on.
pub struct Live {
    path: PathBuf,
    conn: Option<(Connection, u64)>,
    /// `PRAGMA data_version` when the newest image was taken.
    version: Option<i64>,
    images: VecDeque<Arc<Image>>,
    next: u64,
    boot: u128,
    /// When the newest image was taken: a burst of probes shares one.
    taken: Option<Instant>,
}

/// Whether the archive at `path` is being written (or was left) in WAL
/// mode with frames not yet in the main file.
pub fn is_live(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(PathBuf::from(wal)).is_ok_and(|m| m.len() > 0)
}

#[cfg(unix)]
fn inode(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| std::os::unix::fs::MetadataExt::ino(&m))
}

#[cfg(not(unix))]
fn inode(_: &Path) -> u64 {
    0
}

impl Live {
    pub fn new(path: &Path) -> Live {
        Live {
            path: path.to_path_buf(),
            conn: None,
            version: None,
            images: VecDeque::new(),
            next: 1,
            boot: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
            taken: None,
        }
    }

    /// The held image with this `ETag`, if any.
    pub fn find(&self, etag: &str) -> Option<Arc<Image>> {
        let image = self.images.iter().find(|i| i.etag == etag).cloned()?;
        if let Ok(mut t) = image.used.lock() {
            *t = Instant::now();
        }
        Some(image)
    }

    /// The newest committed state, taking a new image when something was
    /// committed since the last one.
    pub fn current(&mut self) -> Result<Arc<Image>, String> {
        let ino = inode(&self.path);
        if self.conn.as_ref().is_some_and(|(_, i)| *i != ino) {
            // Replaced by another file: a new connection, new images.
            self.conn = None;
            self.version = None;
        }
        if self.conn.is_none() {
            let conn = Connection::open_with_flags(
                &self.path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| format!("{}: cannot open read-only: {e}", self.path.display()))?;
            conn.busy_timeout(std::time::Duration::from_secs(2))
                .map_err(|e| e.to_string())?;
            self.conn = Some((conn, ino));
        }
        let (conn, _) = self.conn.as_mut().expect("opened above");
        let version: i64 = conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        if let (Some(newest), Some(v)) = (self.images.back(), self.version) {
            if v == version {
                return Ok(Arc::clone(newest));
            }
            // Probes a few milliseconds apart share the image just taken.
            if self
                .taken
                .is_some_and(|t| t.elapsed() < std::time::Duration::from_millis(50))
            {
                return Ok(Arc::clone(newest));
            }
        }
        let bytes = image_of(conn).map_err(|e| format!("{}: {e}", self.path.display()))?;
        let etag = format!("\"snap-{:x}-{}\"", self.boot, self.next);
        self.next += 1;
        let image = Arc::new(Image {
            etag,
            bytes: Arc::new(bytes),
            used: std::sync::Mutex::new(Instant::now()),
        });
        self.images.push_back(Arc::clone(&image));
        // The oldest go first, unless a reader is still on them.
        while self.images.len() > MAX_HELD
            || (self.images.len() > HELD && self.images.front().is_some_and(|i| !i.recently_used()))
        {
            self.images.pop_front();
        }
        self.version = Some(version);
        self.taken = Some(Instant::now());
        Ok(image)
    }
}

/// The database as one read transaction sees it (main file and WAL frames).
fn image_of(conn: &mut Connection) -> rusqlite::Result<Vec<u8>> {
    conn.execute_batch("BEGIN")?;
    let out = (|| {
        // The transaction's snapshot starts with its first read.
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
            r.get::<_, i64>(0)
        })?;
        Ok(conn.serialize(rusqlite::MAIN_DB)?.to_vec())
    })();
    let _ = conn.execute_batch("COMMIT");
    out
}

/// The 4 KiB units where `new` differs from `old` (units past the shorter
/// one's end count as changed), as `a-b` and `a` ranges joined by commas;
/// `None` when there are too many to list.
pub fn changed_units(old: &[u8], new: &[u8]) -> Option<String> {
    let units = new.len().div_ceil(UNIT);
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for u in 0..units {
        let a = u * UNIT;
        let b = (a + UNIT).min(new.len());
        let same = b <= old.len() && old[a..b] == new[a..b];
        if same {
            continue;
        }
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == u => *end = u,
            _ => ranges.push((u, u)),
        }
        if ranges.len() > MAX_RANGES {
            return None;
        }
    }
    Some(
        ranges
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect::<Vec<_>>()
            .join(","),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_units_are_listed_as_ranges() {
        let old = vec![0u8; UNIT * 6];
        let mut new = old.clone();
        new[UNIT + 5] = 1;
        new[UNIT * 3] = 1;
        new[UNIT * 4 + 1] = 1;
        new.extend_from_slice(&[7u8; 10]);
        assert_eq!(changed_units(&old, &new).as_deref(), Some("1,3-4,6"));
        assert_eq!(changed_units(&old, &old).as_deref(), Some(""));
        // A shorter image: only what it holds is listed.
        assert_eq!(changed_units(&new, &old[..UNIT * 2]).as_deref(), Some("1"));
    }

    #[test]
    fn too_many_changes_are_not_listed() {
        let old = vec![0u8; UNIT * (2 * MAX_RANGES + 4)];
        let mut new = old.clone();
        for u in (0..new.len() / UNIT).step_by(2) {
            new[u * UNIT] = 1;
        }
        assert_eq!(changed_units(&old, &new), None);
    }
}

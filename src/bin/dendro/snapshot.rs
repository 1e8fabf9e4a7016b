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
//! An image stays held while a reader is on it (asked for within
//! [`Limits::in_use`]), so an open slower than the writer's pace still
//! finishes on the image it started on; the count and bytes held are
//! bounded, and past them the image asked for least recently goes first.
//!
//! A follower revalidates with `If-None-Match`: `304` while nothing was
//! committed, else the newest image, with `Dendro-Changed` listing the
//! 4 KiB units that differ from the image it named. Every image taken
//! records which units changed since the one before it, so that list can
//! be given long after the image it starts from was dropped: a reader
//! whose image went keeps every page it read that did not change.
//!
//! An image is a list of [`CHUNK`](image::CHUNK)-sized pieces, and a new
//! image shares every piece that did not change with the image before
//! it: following a large archive holds one copy of it plus what the
//! writer changed in the images still held, not one copy per image. A new image is read page by
//! page (through `sqlite_dbpage` where SQLite has it, in the same read
//! transaction, so it is still exactly one committed state) into a buffer
//! of one chunk, which is compared with the previous image's chunk: only
//! a chunk that differs is kept as new bytes, and the units that differ
//! are what the step records.
//!
//! Here the images held and the choice of which to drop; the pieces an
//! image is made of are in `image.rs`, how a new one is read in
//! `take.rs`, and the changes between images in `changes.rs`.

mod changes;
mod image;
mod take;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rusqlite::{Connection, OpenFlags};

use changes::{Step, Steps};
pub use image::{Image, UNIT};

/// How many images are held, and for how long an older one counts as in use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The newest images always held: a follower one poll behind still
    /// reads the one it had.
    pub newest: usize,
    /// At most this many images in all.
    pub count: usize,
    /// At most this many bytes held by the older images alone (chunks
    /// none of the newest ones share).
    pub bytes: usize,
    /// An older image stays while a reader asked for it this recently.
    pub in_use: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            newest: 4,
            count: 32,
            bytes: 512 << 20,
            in_use: Duration::from_secs(10),
        }
    }
}

/// A test hook (`DENDRO_SERVE_TEST_RETIRE=R,M`): each of the first `M`
/// images stops being held after `R` ranged reads named it, as if a busy
/// writer had outrun the reader, so a test sees an open interrupted at a
/// known point rather than by timing.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
pub struct Retire {
    pub after_reads: u32,
    pub images: u64,
}

impl Retire {
    /// The hook from the environment, when set and well-formed: never in a
    /// build without feature `test-hooks`, so a user's binary does not
    /// depend on its environment for this.
    #[cfg(not(feature = "test-hooks"))]
    pub fn from_env() -> Option<Retire> {
        None
    }

    /// The hook from the environment, when set and well-formed (feature
    /// `test-hooks`, which the viewer's tests build the binary with).
    #[cfg(feature = "test-hooks")]
    pub fn from_env() -> Option<Retire> {
        let value = std::env::var("DENDRO_SERVE_TEST_RETIRE").ok()?;
        let (r, m) = value.split_once(',')?;
        Some(Retire {
            after_reads: r.trim().parse().ok()?,
            images: m.trim().parse().ok()?,
        })
    }
}

/// The images of one live archive, and the connection they are read on.
pub struct Live {
    path: PathBuf,
    conn: Option<(Connection, u64)>,
    /// `PRAGMA data_version` when the newest image was taken.
    version: Option<i64>,
    /// Held images, oldest first.
    images: VecDeque<Arc<Image>>,
    /// The newest image taken (held, unless the test hook retired it).
    newest: Option<Arc<Image>>,
    /// What changed from each image to the next; the last step leads to
    /// `newest`.
    steps: Steps,
    next: u64,
    boot: u128,
    /// When the newest image was taken: a burst of probes shares one.
    taken: Option<Instant>,
    limits: Limits,
    retire: Option<Retire>,
    /// Whether this SQLite lacks `sqlite_dbpage` (images are then copied
    /// whole with `sqlite3_serialize` before being cut into chunks).
    no_dbpage: bool,
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

/// Probes this close together share the image just taken.
const BURST: Duration = Duration::from_millis(50);

impl Live {
    pub fn new(path: &Path) -> Live {
        Live::with_limits(path, Limits::default(), Retire::from_env())
    }

    pub fn with_limits(path: &Path, limits: Limits, retire: Option<Retire>) -> Live {
        Live {
            path: path.to_path_buf(),
            conn: None,
            version: None,
            images: VecDeque::new(),
            newest: None,
            steps: Steps::default(),
            next: 1,
            boot: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
            taken: None,
            limits,
            retire,
            no_dbpage: false,
        }
    }

    /// The held image with this `ETag`, for a reader's ranged read of it
    /// (which keeps it held a while longer).
    pub fn read(&mut self, etag: &str) -> Option<Arc<Image>> {
        self.read_at(etag, Instant::now())
    }

    fn read_at(&mut self, etag: &str, now: Instant) -> Option<Arc<Image>> {
        let at = self.images.iter().position(|i| i.etag == etag)?;
        let image = Arc::clone(&self.images[at]);
        image.touch(now);
        let reads = image.reads.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(r) = self.retire {
            if image.number <= r.images && reads >= r.after_reads {
                self.images.remove(at);
            }
        }
        Some(image)
    }

    /// The newest committed state, taking a new image when something was
    /// committed since the last one.
    pub fn current(&mut self) -> Result<Arc<Image>, String> {
        self.current_at(Instant::now())
    }

    fn current_at(&mut self, now: Instant) -> Result<Arc<Image>, String> {
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
            conn.busy_timeout(Duration::from_secs(2))
                .map_err(|e| e.to_string())?;
            self.conn = Some((conn, ino));
        }
        let (conn, _) = self.conn.as_mut().expect("opened above");
        let version: i64 = conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        if let (Some(newest), Some(v)) = (&self.newest, self.version) {
            // Unless the test hook retired it, the newest is held.
            let held = self.images.back().is_some_and(|i| Arc::ptr_eq(i, newest));
            let burst = self
                .taken
                .is_some_and(|t| now.saturating_duration_since(t) < BURST);
            if held && (v == version || burst) {
                newest.touch(now);
                return Ok(Arc::clone(newest));
            }
        }
        let taken = take::take(conn, self.newest.as_deref(), &mut self.no_dbpage)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let etag = format!("\"snap-{:x}-{}\"", self.boot, self.next);
        let image = Image::new(etag, taken.chunks, taken.len, now, self.next);
        let image = Arc::new(image);
        self.next += 1;
        if let Some(previous) = &self.newest {
            self.steps.push(Step {
                from: previous.etag.clone(),
                to: image.etag.clone(),
                to_units: image.len.div_ceil(UNIT),
                units: taken.units,
            });
        }
        self.newest = Some(Arc::clone(&image));
        self.images.push_back(Arc::clone(&image));
        self.evict(now);
        self.version = Some(version);
        self.taken = Some(now);
        Ok(image)
    }

    /// Drops older images past the limits: first any no reader asked for
    /// within `in_use` (the oldest first), then, while the count or the
    /// bytes are still over, one only offered to probes (the oldest
    /// first), then the one read least recently. The newest
    /// `limits.newest` are never dropped.
    fn evict(&mut self, now: Instant) {
        let limits = self.limits;
        loop {
            let older = self.images.len().saturating_sub(limits.newest);
            if older == 0 {
                return;
            }
            let idle = (0..older).find(|&k| {
                now.saturating_duration_since(self.images[k].last_used()) >= limits.in_use
            });
            let bytes = self.bytes_of_older(older);
            let over = self.images.len() > limits.count || bytes > limits.bytes;
            let victim = idle.or_else(|| {
                over.then(|| {
                    (0..older).min_by_key(|&k| {
                        let i = &self.images[k];
                        (i.read_by_someone(), i.last_used())
                    })
                })
                .flatten()
            });
            match victim {
                Some(k) => {
                    self.images.remove(k);
                }
                None => return,
            }
        }
    }

    /// The bytes only the `older` oldest images hold: the chunks none of
    /// the newer ones share. A chunk is shared by a run of successive
    /// images (once changed, a position never gets it back), so counting
    /// each image's chunks the next held image does not share counts
    /// every chunk once.
    fn bytes_of_older(&self, older: usize) -> usize {
        (0..older)
            .map(|k| self.images[k].unshared_with(self.images.get(k + 1).map(|i| &**i)))
            .sum()
    }

    /// The `Dendro-Changed` list from image `from` to image `to` (`a-b,c`
    /// unit ranges): every unit that changed in any step between them.
    /// `None` when `from` is not among the images remembered, `to` does
    /// not follow it, or there are too many ranges to list.
    pub fn changes_between(&self, from: &str, to: &str) -> Option<String> {
        self.steps.between(from, to)
    }
}

#[cfg(test)]
mod tests {
    use super::image::CHUNK;
    use super::*;

    #[test]
    fn a_list_of_changes_never_reaches_past_the_image_it_leads_to() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = live_db(dir.path());
        commit(&writer, 1);
        let mut live = Live::with_limits(&path, Limits::default(), None);
        let t0 = Instant::now();
        let first = live.current_at(t0).unwrap();
        // The file grows well past both ends, then shrinks back.
        for n in 2..400 {
            commit(&writer, n);
        }
        let grown = live.current_at(t0 + Duration::from_secs(1)).unwrap();
        writer
            .execute_batch("DELETE FROM t WHERE n > 1; VACUUM")
            .unwrap();
        let last = live.current_at(t0 + Duration::from_secs(2)).unwrap();
        assert!(grown.len() > 4 * last.len().max(first.len()));
        let list = live.changes_between(&first.etag, &last.etag).unwrap();
        let end = list
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| p.rsplit('-').next().unwrap().parse::<usize>().unwrap())
            .max()
            .unwrap_or(0);
        assert!(
            end < last.len().div_ceil(UNIT),
            "{list} for {} bytes",
            last.len()
        );
    }

    /// A database in WAL mode whose writer stays connected (so its `-wal`
    /// keeps the frames), as a live archive is.
    pub(super) fn live_db(dir: &Path) -> (PathBuf, Connection) {
        let path = dir.join("live.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
                 CREATE TABLE t(n INTEGER PRIMARY KEY, b BLOB);",
            )
            .unwrap();
        (path, writer)
    }

    /// [`live_db`] with one commit of a 3,000-byte row for each of `rows`.
    pub(super) fn filled(dir: &Path, rows: std::ops::Range<i64>) -> (PathBuf, Connection) {
        let (path, writer) = live_db(dir);
        for n in rows {
            commit(&writer, n);
        }
        (path, writer)
    }

    pub(super) fn commit(writer: &Connection, n: i64) {
        writer
            .execute(
                "INSERT OR REPLACE INTO t(n, b) VALUES (?1, randomblob(3000))",
                [n],
            )
            .unwrap();
    }

    fn held(live: &Live) -> Vec<u64> {
        live.images.iter().map(|i| i.number).collect()
    }

    #[test]
    fn an_image_a_reader_is_on_is_held_past_many_newer_ones() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = live_db(dir.path());
        let limits = Limits::default();
        let mut live = Live::with_limits(&path, limits, None);
        let t0 = Instant::now();
        commit(&writer, 0);
        let first = live.current_at(t0).unwrap().etag.clone();
        // The writer commits four times a second for a minute and each
        // commit is offered as an image; the slow reader reads its image
        // once a second. (Held were the newest four, then at most sixteen:
        // this image went after sixteen newer ones.)
        for k in 1..=240u64 {
            commit(&writer, k as i64);
            let now = t0 + Duration::from_millis(250 * k);
            live.current_at(now).unwrap();
            if k % 4 == 0 {
                assert!(
                    live.read_at(&first, now).is_some(),
                    "the image being read went after {k} newer ones"
                );
            }
            assert!(live.images.len() <= limits.count, "{:?}", held(&live));
        }
        // Once nobody reads it, it goes at the next image after `in_use`.
        let later = t0 + Duration::from_millis(250 * 240) + limits.in_use;
        commit(&writer, 999);
        live.current_at(later).unwrap();
        assert!(live.read_at(&first, later).is_none());
    }

    #[test]
    fn idle_images_go_first_and_the_count_and_bytes_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = live_db(dir.path());
        let limits = Limits {
            newest: 2,
            count: 5,
            bytes: usize::MAX,
            in_use: Duration::from_secs(10),
        };
        // Rows enough that the images are about the same size throughout.
        for n in 100..300 {
            commit(&writer, n);
        }
        let mut live = Live::with_limits(&path, limits, None);
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut etags = Vec::new();
        for k in 1..=4u64 {
            commit(&writer, k as i64);
            etags.push(live.current_at(ms(k * 100)).unwrap().etag.clone());
        }
        assert_eq!(held(&live), [1, 2, 3, 4]);
        // Image 2 is read now and then; the others were only offered.
        live.read_at(&etags[1], ms(5_000)).unwrap();
        live.read_at(&etags[1], ms(11_000)).unwrap();
        commit(&writer, 5);
        live.current_at(ms(12_000)).unwrap();
        // 1 and 3 were unused for 10 s; 4 and 5 are the newest.
        assert_eq!(held(&live), [2, 4, 5]);

        // Over the count, images only offered (a prober's) go before one
        // being read, however recently they were offered.
        let reader = live.read_at(&etags[3], ms(12_001)).unwrap().etag.clone();
        for k in 6..=12u64 {
            commit(&writer, k as i64);
            live.current_at(ms(12_000 + k * 100)).unwrap();
        }
        let now = held(&live);
        assert_eq!(now.len(), limits.count, "{now:?}");
        assert!(now.contains(&2) && now.contains(&4), "{now:?}");
        assert!(now.ends_with(&[11, 12]), "{now:?}");
        assert!(live.read_at(&reader, ms(13_300)).is_some());

        // Over the bytes: images beyond the newest go, least recently read
        // first. What counts is what only they hold: here, the limit is
        // what image 4 holds that image 12 does not share.
        let image = |n: u64| live.images.iter().find(|i| i.number == n).unwrap();
        let own = image(4).unshared_with(Some(image(12)));
        let whole = image(12).len();
        assert!(own > 0 && own < whole / 2, "{own} of {whole}");
        live.limits.bytes = own;
        commit(&writer, 13);
        live.current_at(ms(13_400)).unwrap();
        assert_eq!(held(&live), [4, 12, 13]);
    }

    #[test]
    fn changes_are_listed_from_an_image_long_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = filled(dir.path(), 0..200);
        let limits = Limits {
            newest: 1,
            count: 1,
            bytes: 0,
            in_use: Duration::ZERO,
        };
        let mut live = Live::with_limits(&path, limits, None);
        let t0 = Instant::now();
        let first = live.current_at(t0).unwrap();
        for k in 1..=30u64 {
            // Rewrites a few rows and adds one: some pages change, most do not.
            commit(&writer, (k as i64 * 7) % 200);
            commit(&writer, 1000 + k as i64);
            live.current_at(t0 + Duration::from_secs(k)).unwrap();
        }
        let last = live.newest.clone().unwrap();
        assert!(
            live.read_at(&first.etag, t0 + Duration::from_secs(31))
                .is_none(),
            "dropped"
        );
        let list = live
            .changes_between(&first.etag, &last.etag)
            .expect("listed");
        let mut listed_units = std::collections::BTreeSet::new();
        for part in list.split(',').filter(|p| !p.is_empty()) {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            listed_units.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap());
        }
        // Every unit not listed is the same in both images; some are.
        let (old, new) = (
            &first.read_range(0, first.len()),
            &last.read_range(0, last.len()),
        );
        let mut same = 0;
        for u in 0..new.len().div_ceil(UNIT) {
            if listed_units.contains(&u) {
                continue;
            }
            let (a, b) = (u * UNIT, ((u + 1) * UNIT).min(new.len()));
            assert!(
                b <= old.len() && old[a..b] == new[a..b],
                "unit {u} changed, not listed"
            );
            same += 1;
        }
        assert!(same > 0 && !listed_units.is_empty(), "{list}");
        // Unknown images and backward asks are not listed.
        assert_eq!(live.changes_between("\"other\"", &last.etag), None);
        assert_eq!(live.changes_between(&last.etag, &first.etag), None);
    }

    /// The allocations an image's bytes live in: (address, length).
    fn pieces(image: &Image) -> Vec<(usize, usize)> {
        image
            .chunks
            .iter()
            .map(|c| (c.as_ptr() as usize, c.len()))
            .collect()
    }

    /// The bytes the held images occupy, each allocation counted once
    /// however many images share it.
    fn held_bytes(live: &Live) -> usize {
        let mut seen = std::collections::HashSet::new();
        live.images
            .iter()
            .flat_map(|i| pieces(i))
            .filter(|&(at, _)| seen.insert(at))
            .map(|(_, len)| len)
            .sum()
    }

    #[test]
    fn following_many_small_commits_holds_what_changed_not_copies() {
        let dir = tempfile::tempdir().unwrap();
        // About 6 MB of rows, then many commits that each change one.
        let (path, writer) = filled(dir.path(), 0..2000);
        let limits = Limits::default();
        let mut live = Live::with_limits(&path, limits, None);
        let t0 = Instant::now();
        live.current_at(t0).unwrap();
        let size = live.newest.as_ref().unwrap().len();
        assert!(size > 5_000_000, "{size}");
        let commits = 40u64;
        for k in 1..=commits {
            commit(&writer, (k as i64 * 37) % 2000);
            // Four a second: every image is still within `in_use`.
            live.current_at(t0 + Duration::from_millis(250 * k))
                .unwrap();
        }
        assert!(live.images.len() >= limits.newest, "{:?}", held(&live));
        // What the steps say changed, counted in whole chunks (a changed
        // unit costs at most the chunk it lies in).
        let changed: usize = live
            .steps
            .iter()
            .map(|s| {
                let units = s.units.as_ref().expect("a small commit is listed");
                let chunks: std::collections::BTreeSet<usize> = units
                    .iter()
                    .flat_map(|&(a, b)| a..=b)
                    .map(|u| u * UNIT / CHUNK)
                    .collect();
                chunks.len() * CHUNK
            })
            .sum();
        let held_now = held_bytes(&live);
        let images = live.images.len();
        assert!(
            held_now <= size + changed + CHUNK,
            "{images} images hold {held_now} bytes; the archive is {size} and \
             {changed} bytes of chunks changed"
        );
    }

    #[test]
    fn the_test_hook_retires_an_image_after_its_reads() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = live_db(dir.path());
        commit(&writer, 1);
        let retire = Retire {
            after_reads: 2,
            images: 2,
        };
        let mut live = Live::with_limits(&path, Limits::default(), Some(retire));
        let t0 = Instant::now();
        let a = live.current_at(t0).unwrap().etag.clone();
        assert!(live.read_at(&a, t0).is_some());
        assert!(live.read_at(&a, t0).is_some());
        assert!(live.read_at(&a, t0).is_none(), "retired after two reads");
        // Nothing committed, yet a new image: the same bytes, nothing changed.
        let b = live
            .current_at(t0 + Duration::from_secs(1))
            .unwrap()
            .etag
            .clone();
        assert_ne!(a, b);
        assert_eq!(live.changes_between(&a, &b).as_deref(), Some(""));
        for _ in 0..2 {
            live.read_at(&b, t0).unwrap();
        }
        let c = live
            .current_at(t0 + Duration::from_secs(2))
            .unwrap()
            .etag
            .clone();
        // Past the first two images the hook is off.
        for _ in 0..10 {
            assert!(live.read_at(&c, t0).is_some());
        }
    }
}

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
//! An image is a list of [`CHUNK`]-sized pieces, and a new image shares
//! every piece that did not change with the image before it: following a
//! large archive holds one copy of it plus what the writer changed in the
//! images still held, not one copy per image. A new image is read page by
//! page (through `sqlite_dbpage` where SQLite has it, in the same read
//! transaction, so it is still exactly one committed state) into a buffer
//! of one chunk, which is compared with the previous image's chunk: only
//! a chunk that differs is kept as new bytes, and the units that differ
//! are what the step records.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rusqlite::{Connection, OpenFlags};

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

/// The unit `Dendro-Changed` counts in (bytes).
pub const UNIT: usize = 4096;

/// The size of an image's pieces (bytes): a multiple of every SQLite page
/// size and of [`UNIT`], so a page never straddles two.
pub const CHUNK: usize = 64 << 10;

/// Past this many ranges the list is left out: the follower drops its cache.
const MAX_RANGES: usize = 400;

/// How many steps between successive images are remembered: how far back
/// an image may be that `Dendro-Changed` still lists changes from.
const MAX_STEPS: usize = 512;

/// One committed state of the archive, in pieces shared with the images
/// taken before and after it wherever the bytes are the same.
pub struct Image {
    pub etag: String,
    /// Each [`CHUNK`] bytes but the last; chunk `k` starts at `k * CHUNK`.
    chunks: Vec<Arc<[u8]>>,
    len: usize,
    /// When a reader last asked for it.
    used: Mutex<Instant>,
    /// Ranged reads naming it (`If-Match`): an image only offered to a
    /// prober has none, and goes before one being read.
    reads: AtomicU32,
    /// Its place in the order images were taken (1 is the first).
    number: u64,
}

impl Image {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes `start..end` of it (cut to its length): the HTTP layer
    /// answers a chunk at a time from these.
    pub fn read_range(&self, start: usize, end: usize) -> Vec<u8> {
        let end = end.min(self.len);
        let mut out = Vec::with_capacity(end.saturating_sub(start));
        let mut at = start;
        while at < end {
            let chunk = &self.chunks[at / CHUNK];
            let from = at % CHUNK;
            let to = chunk.len().min(from + (end - at));
            out.extend_from_slice(&chunk[from..to]);
            at += to - from;
        }
        out
    }

    /// Bytes of its chunks that `next` (an image taken later) does not
    /// share: what dropping this image would free, were `next` kept.
    fn unshared_with(&self, next: Option<&Image>) -> usize {
        self.chunks
            .iter()
            .enumerate()
            .filter(|(k, c)| {
                !next
                    .and_then(|n| n.chunks.get(*k))
                    .is_some_and(|d| Arc::ptr_eq(c, d))
            })
            .map(|(_, c)| c.len())
            .sum()
    }

    fn last_used(&self) -> Instant {
        // A poisoned lock still holds a time; none is ever left half-written.
        *self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn read_by_someone(&self) -> bool {
        self.reads.load(Ordering::Relaxed) > 0
    }

    fn touch(&self, now: Instant) {
        let mut t = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if now > *t {
            *t = now;
        }
    }
}

/// The units that changed from one image to the next one taken, as
/// inclusive ranges; `None` when too many to list.
struct Step {
    from: String,
    to: String,
    /// How many units the image `to` has: a list never reaches past it.
    to_units: usize,
    units: Option<Vec<(usize, usize)>>,
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
    /// What changed from each image to the next, oldest first; the last
    /// step leads to `newest`.
    steps: VecDeque<Step>,
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
            steps: VecDeque::new(),
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
        let taken = take(conn, self.newest.as_deref(), &mut self.no_dbpage)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let image = Arc::new(Image {
            etag: format!("\"snap-{:x}-{}\"", self.boot, self.next),
            chunks: taken.chunks,
            len: taken.len,
            used: Mutex::new(now),
            reads: AtomicU32::new(0),
            number: self.next,
        });
        self.next += 1;
        if let Some(previous) = &self.newest {
            self.steps.push_back(Step {
                from: previous.etag.clone(),
                to: image.etag.clone(),
                to_units: image.len.div_ceil(UNIT),
                units: taken.units,
            });
            if self.steps.len() > MAX_STEPS {
                self.steps.pop_front();
            }
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
        let start = self.steps.iter().position(|s| s.from == from)?;
        let mut units = Vec::new();
        for step in self.steps.iter().skip(start) {
            units.extend_from_slice(step.units.as_deref()?);
            if step.to == to {
                // Units past the end of `to` (an image between grew the
                // file, a later one shrank it) are the follower's to drop
                // anyway; listing them would only make the list doubtful.
                let end = step.to_units;
                let merged: Vec<_> = merged(units)
                    .into_iter()
                    .filter(|&(a, _)| a < end)
                    .map(|(a, b)| (a, b.min(end - 1)))
                    .collect();
                return (merged.len() <= MAX_RANGES).then(|| listed(&merged));
            }
        }
        None
    }
}

/// A new image's chunks, and the units where it differs from the image
/// before it (`None` when too many to list).
struct Taken {
    chunks: Vec<Arc<[u8]>>,
    len: usize,
    units: Option<Vec<(usize, usize)>>,
}

/// The database as one read transaction sees it (main file and WAL
/// frames), in chunks shared with `previous` where they are the same.
fn take(
    conn: &mut Connection,
    previous: Option<&Image>,
    no_dbpage: &mut bool,
) -> Result<Taken, String> {
    let sql = |e: rusqlite::Error| e.to_string();
    conn.execute_batch("BEGIN").map_err(sql)?;
    let out = (|| {
        // The transaction's snapshot starts with its first read; every
        // read below is of that one state.
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(sql)?;
        let pragma = |name: &str| {
            conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
                .map_err(sql)
        };
        let (page_size, pages) = (pragma("page_size")?, pragma("page_count")?);
        let (page_size, pages) = match (usize::try_from(page_size), usize::try_from(pages)) {
            (Ok(s), Ok(p)) if (512..=CHUNK).contains(&s) && s.is_power_of_two() => (s, p),
            _ => return Err(format!("SQLite reports {pages} pages of {page_size} bytes")),
        };
        let mut chunks = Chunker::new(previous, page_size.saturating_mul(pages));
        if !*no_dbpage {
            match conn.prepare("SELECT pgno, data FROM sqlite_dbpage('main')") {
                Ok(mut pages_of) => {
                    let mut rows = pages_of.query([]).map_err(sql)?;
                    let mut due = 1i64;
                    while let Some(row) = rows.next().map_err(sql)? {
                        let pgno: i64 = row.get(0).map_err(sql)?;
                        let data = row.get_ref(1).and_then(|v| Ok(v.as_blob()?)).map_err(sql)?;
                        if pgno != due || data.len() != page_size {
                            return Err(format!(
                                "SQLite gave page {pgno} of {} bytes where page {due} of {page_size} was due",
                                data.len()
                            ));
                        }
                        chunks.push(data);
                        due += 1;
                    }
                    return chunks.finish();
                }
                Err(e) if e.to_string().contains("no such table") => *no_dbpage = true,
                Err(e) => return Err(sql(e)),
            }
        }
        // Without `sqlite_dbpage`, SQLite's own copy, cut into chunks.
        let whole = conn.serialize(rusqlite::MAIN_DB).map_err(sql)?;
        for piece in whole.chunks(CHUNK) {
            chunks.push(piece);
        }
        chunks.finish()
    })();
    let _ = conn.execute_batch("COMMIT");
    out
}

/// Builds an image's chunks from its bytes in order, sharing each chunk
/// that equals the previous image's at the same place and listing the
/// units that do not: at most one chunk of new bytes is buffered.
struct Chunker<'a> {
    previous: Option<&'a Image>,
    /// The length the bytes pushed must add up to.
    len: usize,
    chunks: Vec<Arc<[u8]>>,
    buffer: Vec<u8>,
    units: Option<Vec<(usize, usize)>>,
}

impl<'a> Chunker<'a> {
    fn new(previous: Option<&'a Image>, len: usize) -> Chunker<'a> {
        Chunker {
            previous,
            len,
            chunks: Vec::with_capacity(len.div_ceil(CHUNK)),
            buffer: Vec::with_capacity(CHUNK.min(len)),
            units: Some(Vec::new()),
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n = bytes.len().min(CHUNK - self.buffer.len());
            self.buffer.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.buffer.len() == CHUNK {
                self.flush();
            }
        }
    }

    /// The buffered chunk: the previous image's, when the same.
    fn flush(&mut self) {
        let k = self.chunks.len();
        let old = self.previous.and_then(|p| p.chunks.get(k));
        if let Some(old) = old.filter(|o| o[..] == self.buffer[..]) {
            self.chunks.push(Arc::clone(old));
        } else {
            let first = k * CHUNK / UNIT;
            for (i, unit) in self.buffer.chunks(UNIT).enumerate() {
                let a = i * UNIT;
                let same = old.is_some_and(|o| o.get(a..a + unit.len()) == Some(unit));
                if !same {
                    changed(&mut self.units, first + i);
                }
            }
            self.chunks.push(Arc::from(&self.buffer[..]));
        }
        self.buffer.clear();
    }

    fn finish(mut self) -> Result<Taken, String> {
        if !self.buffer.is_empty() {
            self.flush();
        }
        let got: usize = self.chunks.iter().map(|c| c.len()).sum();
        if got != self.len {
            return Err(format!("read {got} bytes of a database of {}", self.len));
        }
        Ok(Taken {
            chunks: self.chunks,
            len: self.len,
            units: self.units,
        })
    }
}

/// Adds `unit` to the ranges listed, or gives the list up past [`MAX_RANGES`].
fn changed(units: &mut Option<Vec<(usize, usize)>>, unit: usize) {
    let Some(ranges) = units else { return };
    match ranges.last_mut() {
        Some((_, end)) if *end + 1 == unit => *end = unit,
        _ => ranges.push((unit, unit)),
    }
    if ranges.len() > MAX_RANGES {
        *units = None;
    }
}

/// Ranges sorted and joined where they overlap or touch.
fn merged(mut ranges: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    ranges.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match out.last_mut() {
            Some((_, end)) if a <= *end + 1 => *end = (*end).max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Ranges as the header lists them: `a-b` or `a`, joined by commas.
fn listed(ranges: &[(usize, usize)]) -> String {
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
        .join(",")
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
        let list = |old: &[u8], new: &[u8]| changed_ranges(old, new).map(|r| listed(&r));
        assert_eq!(list(&old, &new).as_deref(), Some("1,3-4,6"));
        assert_eq!(list(&old, &old).as_deref(), Some(""));
        // A shorter image: only what it holds is listed.
        assert_eq!(list(&new, &old[..UNIT * 2]).as_deref(), Some("1"));
    }

    #[test]
    fn an_image_reads_ranges_across_its_chunks() {
        let bytes: Vec<u8> = (0..CHUNK * 2 + 1000).map(|i| (i * 7 % 251) as u8).collect();
        let (image, _) = image_from(None, &bytes);
        assert_eq!(image.len(), bytes.len());
        // Ranges of an odd size straddle every chunk's end.
        let mut got = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let end = (at + 3001).min(bytes.len());
            got.extend_from_slice(&image.read_range(at, end));
            at = end;
        }
        assert!(got == bytes);
        let from = bytes.len() - 10 - CHUNK;
        assert_eq!(image.read_range(from, from + 20), &bytes[from..from + 20]);
        // A range past the end is cut to the image's length.
        assert_eq!(image.read_range(bytes.len() - 5, bytes.len() + 50).len(), 5);
        assert!(image
            .read_range(bytes.len() + 5, bytes.len() + 9)
            .is_empty());
    }

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

    #[test]
    fn too_many_changes_are_not_listed() {
        let old = vec![0u8; UNIT * (2 * MAX_RANGES + 4)];
        let mut new = old.clone();
        for u in (0..new.len() / UNIT).step_by(2) {
            new[u * UNIT] = 1;
        }
        assert_eq!(changed_ranges(&old, &new), None);
    }

    #[test]
    fn ranges_of_several_steps_merge() {
        assert_eq!(
            merged(vec![(5, 6), (1, 1), (2, 3), (6, 9), (12, 12)]),
            vec![(1, 3), (5, 9), (12, 12)]
        );
        assert_eq!(merged(vec![]), vec![]);
    }

    /// A database in WAL mode whose writer stays connected (so its `-wal`
    /// keeps the frames), as a live archive is.
    fn live_db(dir: &Path) -> (PathBuf, Connection) {
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

    fn commit(writer: &Connection, n: i64) {
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
        let (path, writer) = live_db(dir.path());
        for n in 0..200 {
            commit(&writer, n);
        }
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

    /// An image of `bytes`, sharing with `previous` what is the same, and
    /// the units listed as changed.
    fn image_from(previous: Option<&Image>, bytes: &[u8]) -> (Image, Option<Vec<(usize, usize)>>) {
        let mut chunker = Chunker::new(previous, bytes.len());
        chunker.push(bytes);
        let taken = chunker.finish().unwrap();
        let image = Image {
            etag: String::new(),
            chunks: taken.chunks,
            len: taken.len,
            used: Mutex::new(Instant::now()),
            reads: AtomicU32::new(0),
            number: 0,
        };
        (image, taken.units)
    }

    fn changed_ranges(old: &[u8], new: &[u8]) -> Option<Vec<(usize, usize)>> {
        let (old, _) = image_from(None, old);
        image_from(Some(&old), new).1
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
        let (path, writer) = live_db(dir.path());
        // About 6 MB of rows, then many commits that each change one.
        for n in 0..2000 {
            commit(&writer, n);
        }
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
    fn every_image_is_the_database_as_of_one_commit() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = live_db(dir.path());
        for n in 0..300 {
            commit(&writer, n);
        }
        let mut reference =
            Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let mut live = Live::with_limits(&path, Limits::default(), None);
        let t0 = Instant::now();
        for k in 0..25u64 {
            match k % 5 {
                // Grows the file.
                0 => {
                    for n in 0..40 {
                        commit(&writer, 10_000 + k as i64 * 100 + n);
                    }
                }
                // Shrinks what is used (freed pages stay in the file).
                1 => {
                    writer
                        .execute("DELETE FROM t WHERE n % 7 = ?1", [k as i64 % 7])
                        .unwrap();
                }
                // A checkpoint moves frames into the main file.
                2 => {
                    commit(&writer, k as i64);
                    writer
                        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                        .unwrap();
                }
                // A rewrite that shrinks the file itself.
                3 => writer.execute_batch("VACUUM").unwrap(),
                _ => commit(&writer, k as i64),
            }
            let image = live.current_at(t0 + Duration::from_secs(k)).unwrap();
            let expected = reference.serialize(rusqlite::MAIN_DB).unwrap().to_vec();
            assert_eq!(image.len(), expected.len(), "image {k}: its length");
            let got = image.read_range(0, image.len());
            assert!(
                got == expected,
                "image {k} differs from the database it names"
            );
            // A range read inside it, across a chunk's end.
            if expected.len() > CHUNK + 10 {
                let (a, b) = (CHUNK - 10, CHUNK + 10);
                assert_eq!(image.read_range(a, b), &expected[a..b]);
            }
        }
    }

    /// An image opened as a database of its own: whether SQLite finds it
    /// sound, and the rows and the counter its writer kept equal.
    fn opened(image: &Image) -> (String, i64, i64, i64) {
        let mut bytes = image.read_range(0, image.len());
        // The header says WAL; an in-memory copy is read as a plain file.
        bytes[18] = 1;
        bytes[19] = 1;
        let mut db = Connection::open_in_memory().unwrap();
        db.deserialize_read_exact(rusqlite::MAIN_DB, &bytes[..], bytes.len(), true)
            .unwrap();
        let ok: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        let (rows, max): (i64, i64) = db
            .query_row("SELECT count(*), coalesce(max(n), 0) FROM t", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        let counter: i64 = db
            .query_row("SELECT n FROM c WHERE k = 1", [], |r| r.get(0))
            .unwrap();
        (ok, rows, max, counter)
    }

    #[test]
    fn images_taken_while_a_writer_commits_are_each_one_committed_state() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = live_db(dir.path());
        writer
            .execute_batch(
                "CREATE TABLE c(k INTEGER PRIMARY KEY, n INTEGER); INSERT INTO c VALUES (1, 0);",
            )
            .unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writing = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                // Each commit adds row n and sets the counter to n; a
                // checkpoint now and then moves frames under the reader.
                let mut n = 0i64;
                while !stop.load(Ordering::Relaxed) && n < 20_000 {
                    n += 1;
                    writer
                        .execute_batch(&format!(
                            "BEGIN; INSERT INTO t(n, b) VALUES ({n}, randomblob(3000));
                             UPDATE c SET n = {n} WHERE k = 1; COMMIT;"
                        ))
                        .unwrap();
                    if n % 64 == 0 {
                        writer
                            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                            .unwrap();
                    }
                }
                n
            })
        };
        let mut live = Live::with_limits(&path, Limits::default(), None);
        let t0 = Instant::now();
        let mut seen = Vec::new();
        for k in 0..20u64 {
            let image = live.current_at(t0 + Duration::from_secs(k)).unwrap();
            let (ok, rows, max, counter) = opened(&image);
            assert_eq!(ok, "ok", "image {k}");
            assert_eq!(
                (rows, max),
                (counter, counter),
                "image {k} mixes two commits"
            );
            seen.push(counter);
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        let written = writing.join().unwrap();
        // The images were taken while the writer was writing.
        assert!(
            seen.windows(2).any(|w| w[0] < w[1]),
            "{seen:?} of {written}"
        );
    }

    #[test]
    fn images_are_read_page_by_page_where_sqlite_can() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = live_db(dir.path());
        for n in 0..100 {
            commit(&writer, n);
        }
        let mut live = Live::with_limits(&path, Limits::default(), None);
        let t0 = Instant::now();
        live.current_at(t0).unwrap();
        // This build's SQLite has `sqlite_dbpage` (.cargo/config.toml):
        // no whole copy of the database is asked for.
        assert!(!live.no_dbpage, "images are taken through a whole copy");
        // The copy, when SQLite lacks the table, gives the same bytes.
        let mut copied = Live::with_limits(&path, Limits::default(), None);
        copied.no_dbpage = true;
        for k in 1..=3u64 {
            commit(&writer, 1000 + k as i64);
            let a = live.current_at(t0 + Duration::from_secs(k)).unwrap();
            let b = copied.current_at(t0 + Duration::from_secs(k)).unwrap();
            assert!(
                a.read_range(0, a.len()) == b.read_range(0, b.len()),
                "image {k}"
            );
        }
        let (a, b) = (live.newest.unwrap(), copied.newest.unwrap());
        assert_eq!(a.len(), b.len());
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

//! A test-only SQLite VFS that can lose power and fill the disk.
//!
//! It wraps the default `unix` VFS and passes every call through (locks,
//! shared memory and memory mapping included), so SQLite behaves exactly
//! as it does in production. On the side it keeps, for every main database
//! and `-wal` file, the image a reboot would find: the content as of the
//! last successful `xSync`, plus the writes and truncations made since, in
//! order. Those pending operations are what a power cut may lose.
//!
//! Two switches:
//! - a cut at the k-th write, sync or truncation of those files: that
//!   operation and every later write, sync, truncation or delete fails
//!   with an I/O error, so nothing more is acknowledged. [`restore`] then
//!   puts each file back as a reboot would find it and deletes `-shm`
//!   (the wal-index, which SQLite rebuilds from the log; what a reboot
//!   leaves of it is whatever the kernel last wrote back);
//! - a full disk: while it is on, every write fails with `SQLITE_FULL`,
//!   which is what the `unix` VFS answers on `ENOSPC`.
//!
//! Registering a VFS as the default affects every connection in the
//! process, so the state is global and one test at a time holds it
//! ([`exclusive`]).
//!
//! This file is the disk model: what is durable, what a cut or a full
//! disk does, and the reboot. `wrap` is the C side, the VFS SQLite calls,
//! which forwards to `unix` and reports each operation here.

mod wrap;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Which files the shim keeps durable images of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    MainDb,
    Wal,
    /// Temporary files, journals of attached databases: passed through.
    Other,
}

/// One operation not yet made durable by a sync.
#[derive(Debug, Clone)]
enum Pending {
    Write { offset: u64, data: Vec<u8> },
    Truncate(u64),
}

/// What a reboot would find of one file.
#[derive(Debug)]
struct Image {
    kind: Kind,
    /// The content as of the last sync; `None` while the file has never
    /// been synced since it was created (or since it was deleted).
    durable: Option<Vec<u8>>,
    /// Writes and truncations since, in the order they were made.
    pending: Vec<Pending>,
}

/// Which operation a cut interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Write,
    Sync,
    Truncate,
    /// A step outside SQLite: a rename, link, unlink or fsync made by the
    /// crate itself (`names`).
    Outside,
}

/// Where the power went out: the operation, the file, and what SQLite and
/// the test were doing, for the report and for failure messages.
#[derive(Debug, Clone)]
pub struct Cut {
    pub index: u64,
    pub op: Op,
    /// Where in the file a write starts, or the size a truncation leaves.
    pub offset: u64,
    pub kind: Kind,
    /// The test's own label for the call in progress.
    pub phase: &'static str,
    /// The last `PRAGMA` SQLite announced (`wal_checkpoint`, ...).
    pub pragma: Option<String>,
    /// Writes to the `-wal` since its last sync: a transaction under way.
    pub wal_writes: u64,
    /// Seals encoded but not yet seen committed (see [`Counters`]).
    pub seal_waiting: bool,
    /// A seal committed and no append has committed since: the next
    /// append carries the prune of the rows it covered.
    pub prune_due: bool,
}

/// Counts the shim keeps for the report.
#[derive(Debug, Default, Clone)]
pub struct Counters {
    /// Writes, syncs and truncations of tracked files since the last reset.
    pub ops: u64,
    /// Writes refused as a full disk.
    pub full_refusals: u64,
    /// Seal batches the test's encoder finished (told by the test).
    pub seals_encoded: u64,
    /// `-wal` commits that carried a Parquet segment.
    pub seals_committed: u64,
}

#[derive(Default)]
struct State {
    files: HashMap<PathBuf, Image>,
    /// File objects open through the shim (tracked or not).
    open: usize,
    counters: Counters,
    cut_at: Option<u64>,
    cut: Option<Cut>,
    full: bool,
    phase: &'static str,
    pragma: Option<String>,
    wal_writes: u64,
    wal_tx_parquet: bool,
    prune_due: bool,
    /// Every counted operation, when a dry run asks for them.
    trace: Option<Vec<Cut>>,
}

static STATE: OnceLock<Mutex<State>> = OnceLock::new();

fn state() -> MutexGuard<'static, State> {
    // Never panic inside a callback from C: a poisoned lock still holds
    // consistent data (every update is made under it in one go).
    STATE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Serialises the tests of this binary: the shim's state is global.
static EXCLUSIVE: Mutex<()> = Mutex::new(());

/// One test's hold on the shim: installed, reset, power on, disk not full.
/// Dropping it puts the power back on even if the test panicked, so the
/// next test does not inherit a dead disk.
pub struct Session {
    _guard: MutexGuard<'static, ()>,
}

impl Drop for Session {
    fn drop(&mut self) {
        let mut s = state();
        s.cut_at = None;
        s.cut = None;
        s.full = false;
    }
}

/// Installs the shim (once per process) and takes it for one test.
pub fn exclusive() -> Session {
    let guard = EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner());
    wrap::install();
    reset();
    Session { _guard: guard }
}

/// Forgets every image and count and starts tracking afresh from what is
/// on disk now. Only with no file open: an open handle's pending writes
/// would otherwise be mistaken for durable ones.
pub fn reset() {
    let mut s = state();
    assert_eq!(s.open, 0, "reset with SQLite files still open");
    *s = State::default();
}

/// Loses power at the `index`-th (1-based) write, sync or truncation of a
/// tracked file from now on, counting those already made since the reset.
pub fn arm(index: u64) {
    state().cut_at = Some(index);
}

/// Records every counted operation from now on, as [`Cut`]s.
pub fn start_trace() {
    state().trace = Some(Vec::new());
}

/// The operations recorded since [`start_trace`].
pub fn take_trace() -> Vec<Cut> {
    state().trace.take().unwrap_or_default()
}

/// The cut, once it has happened.
pub fn cut() -> Option<Cut> {
    state().cut.clone()
}

pub fn power_is_off() -> bool {
    state().cut.is_some()
}

pub fn counters() -> Counters {
    state().counters.clone()
}

/// Fills (or frees) the disk.
pub fn set_full(full: bool) {
    state().full = full;
}

/// Labels what the test is doing, for the cut's report.
pub fn phase(phase: &'static str) {
    state().phase = phase;
}

/// The test's encoder finished a seal batch.
pub fn seal_encoded() {
    state().counters.seals_encoded += 1;
}

/// Counts a step the crate makes outside SQLite (`names`), so that a cut
/// can land on it. False when it must fail: the power is out.
pub fn admit_outside() -> bool {
    let mut s = state();
    if s.cut.is_some() {
        return false;
    }
    counted(&mut s, Op::Outside, Kind::Other, 0)
}

/// An fsync of `path` made outside SQLite succeeded: its image is durable.
pub fn synced_outside(path: &Path) {
    let mut s = state();
    if let Some(kind) = s.files.get(path).map(|i| i.kind) {
        s.synced(path, kind);
    }
}

/// The file at `from` got the name `to`: its image follows it (and stays
/// at `from` too when `linked`, until `from` is removed).
pub fn renamed(from: &Path, to: &Path, linked: bool) {
    let mut s = state();
    let image = if linked {
        s.files.get(from).map(|i| Image {
            kind: i.kind,
            durable: i.durable.clone(),
            pending: i.pending.clone(),
        })
    } else {
        s.files.remove(from)
    };
    match image {
        Some(image) => {
            s.files.insert(to.to_path_buf(), image);
        }
        None => {
            s.files.remove(to);
        }
    }
}

/// `path` was removed outside SQLite: a reboot recreates nothing there.
pub fn forget(path: &Path) {
    state().files.remove(path);
}

/// How [`restore`] treats the operations not yet synced at the cut.
pub enum Unsynced<'a> {
    /// All of them are lost: the disk kept exactly what was synced.
    Lost,
    /// Each write independently is lost, lands whole, or lands torn (a
    /// prefix of its 512-byte sectors: a disk that writes a sector whole
    /// or not at all); with `garbage`, it may also land as garbage over
    /// its own range (a sector caught mid-write). Each truncation lands or
    /// not. `next(n)` draws each choice below `n`.
    Torn {
        next: &'a mut dyn FnMut(u64) -> u64,
        garbage: bool,
    },
}

/// What [`restore`] put back.
#[derive(Debug, Default)]
pub struct Restored {
    pub pending_dropped: usize,
    pub pending_landed: usize,
}

/// The reboot: every tracked file is replaced by what a disk that lost
/// power at the cut would hold, and each database's `-shm` is deleted.
/// Every SQLite file must be closed first (the `unix` VFS keeps per-inode
/// state for open files). Tracking then starts afresh from the new disk.
pub fn restore(mut unsynced: Unsynced<'_>) -> Restored {
    let images = {
        let mut s = state();
        assert_eq!(
            s.open, 0,
            "restore with SQLite files still open: a connection outlived its writer"
        );
        std::mem::take(&mut s.files)
    };
    let mut out = Restored::default();
    // Sorted, so the torn choices are drawn in the same order every run.
    let images: BTreeMap<PathBuf, Image> = images.into_iter().collect();
    for (path, image) in images {
        let content = match &mut unsynced {
            Unsynced::Lost => {
                out.pending_dropped += image.pending.len();
                image.durable
            }
            Unsynced::Torn { next, garbage } => {
                // A file never synced has no durable directory entry
                // either: it may or may not be there after the reboot.
                let exists = image.durable.is_some() || (!image.pending.is_empty() && next(2) == 0);
                let mut bytes = image.durable.unwrap_or_default();
                for op in image.pending {
                    let landed = land(&mut bytes, op, &mut **next, *garbage);
                    if landed {
                        out.pending_landed += 1;
                    } else {
                        out.pending_dropped += 1;
                    }
                }
                exists.then_some(bytes)
            }
        };
        match content {
            Some(bytes) => std::fs::write(&path, bytes).unwrap(),
            None => match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => panic!("cannot remove {}: {e}", path.display()),
            },
        }
        if image.kind == Kind::MainDb {
            let _ = std::fs::remove_file(sidecar(&path, "-shm"));
        }
    }
    reset();
    out
}

/// Applies one unsynced operation the way a power cut might have left it.
/// Returns whether any of it landed.
fn land(bytes: &mut Vec<u8>, op: Pending, next: &mut dyn FnMut(u64) -> u64, garbage: bool) -> bool {
    match op {
        Pending::Truncate(size) => {
            if next(2) == 0 {
                return false;
            }
            bytes.resize(size as usize, 0);
            true
        }
        Pending::Write { offset, mut data } => {
            match next(if garbage { 4 } else { 3 }) {
                0 => return false,
                1 => {}
                2 => {
                    // Torn at a 512-byte sector boundary inside the write:
                    // the sectors before it made it, the rest did not. A
                    // write within one sector lands whole or not at all.
                    let (start, end) = (offset, offset + data.len() as u64);
                    let first = start / 512 + 1;
                    let boundaries = end.div_ceil(512).saturating_sub(first);
                    if boundaries == 0 {
                        return false;
                    }
                    let at = (first + next(boundaries)) * 512;
                    data.truncate((at - start) as usize);
                }
                _ => {
                    // Garbage over the write's own range: the unix VFS
                    // promises powersafe overwrite, so nothing outside it.
                    for b in data.iter_mut() {
                        *b = next(256) as u8;
                    }
                }
            }
            put(bytes, offset, &data);
            true
        }
    }
}

pub fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// What the C side must do with a write, sync or truncation.
pub(super) enum Verdict {
    /// Pass it to the disk.
    Go,
    /// Fail it: the power is out.
    PowerOff,
    /// Fail it: the disk is full.
    Full,
}

impl State {
    /// A file is being opened. For a main database or `-wal` the shim has
    /// not seen since the last reset, its image starts from what is on
    /// disk now (a reset only happens with every file closed, so all of
    /// it is durable); `None` for any other file.
    pub(super) fn first_sight(&self, path: Option<&Path>, kind: Kind) -> Option<Option<Vec<u8>>> {
        match (path, kind) {
            (Some(p), Kind::MainDb | Kind::Wal) if !self.files.contains_key(p) => {
                Some(std::fs::read(p).ok())
            }
            _ => None,
        }
    }

    /// A file opened; with `first_sight`, tracking of it starts.
    pub(super) fn opened(
        &mut self,
        path: Option<&Path>,
        kind: Kind,
        first: Option<Option<Vec<u8>>>,
    ) {
        if let (Some(p), Some(durable)) = (path, first) {
            let image = Image {
                kind,
                durable,
                pending: Vec::new(),
            };
            self.files.insert(p.to_path_buf(), image);
        }
        self.open += 1;
    }

    pub(super) fn closed(&mut self) {
        self.open = self.open.saturating_sub(1);
    }

    /// Decides a write, sync or truncation before it is made: counts it
    /// (on a tracked file) and cuts the power if it is the chosen one.
    pub(super) fn admit(&mut self, op: Op, tracked: Option<Kind>, offset: u64) -> Verdict {
        if self.cut.is_some() {
            return Verdict::PowerOff;
        }
        if let Some(kind) = tracked {
            if !counted(self, op, kind, offset) {
                return Verdict::PowerOff;
            }
        }
        // Shrinking or syncing needs no space.
        if self.full && op == Op::Write {
            self.counters.full_refusals += 1;
            return Verdict::Full;
        }
        Verdict::Go
    }

    /// A write to a tracked file reached the disk's cache.
    pub(super) fn wrote(&mut self, path: &Path, kind: Kind, offset: u64, data: &[u8]) {
        if kind == Kind::Wal {
            // A new transaction's first frame ends any checkpoint label.
            if self.pragma.as_deref() == Some("wal_checkpoint") {
                self.pragma = None;
            }
            self.wal_writes += 1;
            self.wal_tx_parquet |= data.windows(4).any(|w| w == b"PAR1");
        }
        if let Some(image) = self.files.get_mut(path) {
            image.pending.push(Pending::Write {
                offset,
                data: data.to_vec(),
            });
        }
    }

    pub(super) fn truncated(&mut self, path: &Path, size: u64) {
        if let Some(image) = self.files.get_mut(path) {
            image.pending.push(Pending::Truncate(size));
        }
    }

    /// A sync of a tracked file succeeded: what was pending is durable.
    /// (The unix VFS also syncs the directory after the first sync of a
    /// new `-wal`, so the file's existence is durable too.)
    pub(super) fn synced(&mut self, path: &Path, kind: Kind) {
        if let Some(image) = self.files.get_mut(path) {
            let mut bytes = image.durable.take().unwrap_or_default();
            for op in image.pending.drain(..) {
                match op {
                    Pending::Write { offset, data } => put(&mut bytes, offset, &data),
                    Pending::Truncate(size) => bytes.resize(size as usize, 0),
                }
            }
            image.durable = Some(bytes);
        }
        if kind == Kind::Wal && self.wal_writes > 0 {
            // A commit (or a restarted log's header) reached the disk.
            if self.wal_tx_parquet {
                self.counters.seals_committed += 1;
                self.prune_due = true;
            } else if self.phase == "append" {
                self.prune_due = false;
            }
            self.wal_writes = 0;
            self.wal_tx_parquet = false;
        }
    }

    /// SQLite deleted a file. It deletes a `-wal` only after checkpointing
    /// it into a synced main file, so whether the unlink itself would
    /// survive a cut does not change what a reader finds: taken as durable.
    pub(super) fn deleted(&mut self, path: &Path) {
        if let Some(image) = self.files.get_mut(path) {
            image.durable = None;
            image.pending.clear();
        }
    }

    /// SQLite announced a `PRAGMA` (`SQLITE_FCNTL_PRAGMA`), for the labels.
    pub(super) fn saw_pragma(&mut self, name: String) {
        if !name.starts_with("experimental") {
            self.pragma = Some(name);
        }
    }
}

/// Writes `data` at `offset`, growing the image if it reaches past the end.
fn put(bytes: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let end = offset as usize + data.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[offset as usize..end].copy_from_slice(data);
}

/// Counts one write, sync or truncation of a tracked file and decides
/// whether the power goes out on it. Returns false when it must fail.
fn counted(s: &mut State, op: Op, kind: Kind, offset: u64) -> bool {
    s.counters.ops += 1;
    if s.trace.is_some() {
        let here = here(s, op, kind, offset);
        if let Some(trace) = s.trace.as_mut() {
            trace.push(here);
        }
    }
    if s.cut_at == Some(s.counters.ops) {
        s.cut = Some(here(s, op, kind, offset));
        return false;
    }
    true
}

/// The operation about to be made, described.
fn here(s: &State, op: Op, kind: Kind, offset: u64) -> Cut {
    Cut {
        index: s.counters.ops,
        op,
        offset,
        kind,
        phase: s.phase,
        pragma: s.pragma.clone(),
        wal_writes: s.wal_writes,
        seal_waiting: s.counters.seals_encoded > s.counters.seals_committed,
        prune_due: s.prune_due,
    }
}

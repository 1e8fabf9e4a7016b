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
//! Ownership, in short: SQLite allocates `szOsFile` bytes for each file
//! object and frees them after `xClose`. We lay out a [`ShimFile`] header
//! at the front of that block and let the `unix` VFS build its own file
//! object right after it; the header points at it. The only thing we
//! allocate ourselves is the boxed [`FileInfo`], freed in `xClose`.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_int, c_void, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::{Mutex, MutexGuard, OnceLock};

use rusqlite::ffi;

/// What SQLite calls the shim. It is registered as the default, so no
/// connection names it.
const NAME: &CStr = c"dendro-powercut";

/// The header SQLite sees as a `sqlite3_file`. `base` must come first:
/// SQLite reads `pMethods` through a pointer to the whole block.
#[repr(C)]
struct ShimFile {
    base: ffi::sqlite3_file,
    /// The wrapped `unix` file object, in the same allocation right after
    /// this header; valid from a successful `xOpen` until `xClose`.
    real: *mut ffi::sqlite3_file,
    /// Our own record of the file, boxed; freed in `xClose`.
    info: *mut FileInfo,
}

// The wrapped file starts right after the header. SQLite hands out blocks
// aligned to 8 bytes, and the `unix` file object needs that alignment, so
// the header's size must keep it.
const _: () = assert!(std::mem::size_of::<ShimFile>().is_multiple_of(8));

/// Which files the shim keeps durable images of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    MainDb,
    Wal,
    /// Temporary files, journals of attached databases: passed through.
    Other,
}

struct FileInfo {
    path: Option<PathBuf>,
    kind: Kind,
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
    install();
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
            let end = offset as usize + data.len();
            if bytes.len() < end {
                bytes.resize(end, 0);
            }
            bytes[offset as usize..end].copy_from_slice(&data);
            true
        }
    }
}

pub fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

// ---------------------------------------------------------------------------
// Registration

fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| unsafe {
        // The default VFS before ours: `unix` on Linux. Finding it also
        // initialises SQLite.
        let real = ffi::sqlite3_vfs_find(ptr::null());
        assert!(!real.is_null(), "SQLite has no default VFS");
        assert!(
            (*real).iVersion >= 3,
            "the default VFS is version {}",
            (*real).iVersion
        );
        // Leaked: SQLite keeps a pointer to a registered VFS for the life
        // of the process.
        let vfs = Box::leak(Box::new(ffi::sqlite3_vfs {
            iVersion: 3,
            // Our header, then room for the wrapped VFS's own file object.
            szOsFile: std::mem::size_of::<ShimFile>() as c_int + (*real).szOsFile,
            mxPathname: (*real).mxPathname,
            pNext: ptr::null_mut(),
            zName: NAME.as_ptr(),
            // The wrapped VFS: every forwarding function finds it here.
            pAppData: real.cast(),
            xOpen: Some(x_open),
            xDelete: Some(x_delete),
            xAccess: Some(x_access),
            xFullPathname: Some(x_full_pathname),
            xDlOpen: Some(x_dl_open),
            xDlError: Some(x_dl_error),
            xDlSym: Some(x_dl_sym),
            xDlClose: Some(x_dl_close),
            xRandomness: Some(x_randomness),
            xSleep: Some(x_sleep),
            xCurrentTime: Some(x_current_time),
            xGetLastError: Some(x_get_last_error),
            xCurrentTimeInt64: Some(x_current_time_int64),
            xSetSystemCall: Some(x_set_system_call),
            xGetSystemCall: Some(x_get_system_call),
            xNextSystemCall: Some(x_next_system_call),
        }));
        let rc = ffi::sqlite3_vfs_register(vfs, 1);
        assert_eq!(rc, ffi::SQLITE_OK, "cannot register the shim VFS");
    });
}

/// The wrapped VFS, stored in our VFS's `pAppData` at registration.
unsafe fn real_vfs(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    unsafe { (*vfs).pAppData.cast() }
}

// ---------------------------------------------------------------------------
// VFS methods

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    unsafe {
        let real_vfs = real_vfs(vfs);
        let shim = file.cast::<ShimFile>();
        let real = file
            .cast::<u8>()
            .add(std::mem::size_of::<ShimFile>())
            .cast::<ffi::sqlite3_file>();
        // Until the open succeeds, pMethods stays null: SQLite then does
        // not call xClose on this block.
        ptr::write(
            shim,
            ShimFile {
                base: ffi::sqlite3_file {
                    pMethods: ptr::null(),
                },
                real,
                info: ptr::null_mut(),
            },
        );
        let kind = if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
            Kind::MainDb
        } else if flags & ffi::SQLITE_OPEN_WAL != 0 {
            Kind::Wal
        } else {
            Kind::Other
        };
        // A null name is a temporary file SQLite names itself.
        let path = (!name.is_null())
            .then(|| PathBuf::from(OsStr::from_bytes(CStr::from_ptr(name).to_bytes())));
        // Held across the real open so that the image taken from disk and
        // the handle's registration cannot interleave with another thread.
        let mut s = state();
        let first_sight = match (&path, kind) {
            (Some(p), Kind::MainDb | Kind::Wal) if !s.files.contains_key(p) => {
                // Tracking starts here: whatever is on disk now is durable
                // (a reset only happens with every file closed).
                Some(std::fs::read(p).ok())
            }
            _ => None,
        };
        let rc = match (*real_vfs).xOpen {
            Some(open) => open(real_vfs, name, real, flags, out_flags),
            None => ffi::SQLITE_CANTOPEN,
        };
        if rc != ffi::SQLITE_OK {
            // The unix VFS leaves its own pMethods null on failure and
            // has released what it took.
            return rc;
        }
        if let (Some(p), Some(durable)) = (&path, first_sight) {
            s.files.insert(
                p.clone(),
                Image {
                    kind,
                    durable,
                    pending: Vec::new(),
                },
            );
        }
        s.open += 1;
        (*shim).info = Box::into_raw(Box::new(FileInfo { path, kind }));
        (*shim).base.pMethods = &METHODS;
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn x_delete(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync_dir: c_int,
) -> c_int {
    unsafe {
        let real_vfs = real_vfs(vfs);
        let mut s = state();
        if s.cut.is_some() {
            return ffi::SQLITE_IOERR_DELETE;
        }
        let rc = match (*real_vfs).xDelete {
            Some(delete) => delete(real_vfs, name, sync_dir),
            None => ffi::SQLITE_IOERR_DELETE,
        };
        if rc == ffi::SQLITE_OK && !name.is_null() {
            let path = Path::new(OsStr::from_bytes(CStr::from_ptr(name).to_bytes()));
            // SQLite deletes a `-wal` only after checkpointing it into a
            // synced main file, so whether the unlink itself survives a
            // cut does not matter to what a reader finds; taken as durable.
            if let Some(image) = s.files.get_mut(path) {
                image.durable = None;
                image.pending.clear();
            }
        }
        rc
    }
}

unsafe extern "C" fn x_access(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    unsafe {
        let real = real_vfs(vfs);
        (*real)
            .xAccess
            .map_or(ffi::SQLITE_ERROR, |f| f(real, name, flags, out))
    }
}

unsafe extern "C" fn x_full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n_out: c_int,
    out: *mut c_char,
) -> c_int {
    unsafe {
        let real = real_vfs(vfs);
        (*real)
            .xFullPathname
            .map_or(ffi::SQLITE_ERROR, |f| f(real, name, n_out, out))
    }
}

unsafe extern "C" fn x_dl_open(vfs: *mut ffi::sqlite3_vfs, name: *const c_char) -> *mut c_void {
    unsafe {
        let real = real_vfs(vfs);
        (*real).xDlOpen.map_or(ptr::null_mut(), |f| f(real, name))
    }
}

unsafe extern "C" fn x_dl_error(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) {
    unsafe {
        let real = real_vfs(vfs);
        if let Some(f) = (*real).xDlError {
            f(real, n, out)
        }
    }
}

type DlSym = unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char);

unsafe extern "C" fn x_dl_sym(
    vfs: *mut ffi::sqlite3_vfs,
    handle: *mut c_void,
    symbol: *const c_char,
) -> Option<DlSym> {
    unsafe {
        let real = real_vfs(vfs);
        (*real).xDlSym.and_then(|f| f(real, handle, symbol))
    }
}

unsafe extern "C" fn x_dl_close(vfs: *mut ffi::sqlite3_vfs, handle: *mut c_void) {
    unsafe {
        let real = real_vfs(vfs);
        if let Some(f) = (*real).xDlClose {
            f(real, handle)
        }
    }
}

unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    unsafe {
        let real = real_vfs(vfs);
        (*real).xRandomness.map_or(0, |f| f(real, n, out))
    }
}

unsafe extern "C" fn x_sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    unsafe {
        let real = real_vfs(vfs);
        (*real).xSleep.map_or(0, |f| f(real, micros))
    }
}

unsafe extern "C" fn x_current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    unsafe {
        let real = real_vfs(vfs);
        (*real)
            .xCurrentTime
            .map_or(ffi::SQLITE_ERROR, |f| f(real, out))
    }
}

unsafe extern "C" fn x_get_last_error(
    vfs: *mut ffi::sqlite3_vfs,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    unsafe {
        let real = real_vfs(vfs);
        (*real).xGetLastError.map_or(0, |f| f(real, n, out))
    }
}

unsafe extern "C" fn x_current_time_int64(
    vfs: *mut ffi::sqlite3_vfs,
    out: *mut ffi::sqlite3_int64,
) -> c_int {
    unsafe {
        let real = real_vfs(vfs);
        (*real)
            .xCurrentTimeInt64
            .map_or(ffi::SQLITE_ERROR, |f| f(real, out))
    }
}

unsafe extern "C" fn x_set_system_call(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    call: ffi::sqlite3_syscall_ptr,
) -> c_int {
    unsafe {
        let real = real_vfs(vfs);
        (*real)
            .xSetSystemCall
            .map_or(ffi::SQLITE_NOTFOUND, |f| f(real, name, call))
    }
}

unsafe extern "C" fn x_get_system_call(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
) -> ffi::sqlite3_syscall_ptr {
    unsafe {
        let real = real_vfs(vfs);
        (*real).xGetSystemCall.and_then(|f| f(real, name))
    }
}

unsafe extern "C" fn x_next_system_call(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
) -> *const c_char {
    unsafe {
        let real = real_vfs(vfs);
        (*real)
            .xNextSystemCall
            .map_or(ptr::null(), |f| f(real, name))
    }
}

// ---------------------------------------------------------------------------
// File methods

/// Version 3: shared memory (2) and memory-mapped reads (3) are forwarded
/// to the wrapped file, which the unix VFS opens at version 3 too; a
/// wrapped file of a lower version gets the documented fallbacks.
static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(f_close),
    xRead: Some(f_read),
    xWrite: Some(f_write),
    xTruncate: Some(f_truncate),
    xSync: Some(f_sync),
    xFileSize: Some(f_file_size),
    xLock: Some(f_lock),
    xUnlock: Some(f_unlock),
    xCheckReservedLock: Some(f_check_reserved_lock),
    xFileControl: Some(f_file_control),
    xSectorSize: Some(f_sector_size),
    xDeviceCharacteristics: Some(f_device_characteristics),
    xShmMap: Some(f_shm_map),
    xShmLock: Some(f_shm_lock),
    xShmBarrier: Some(f_shm_barrier),
    xShmUnmap: Some(f_shm_unmap),
    xFetch: Some(f_fetch),
    xUnfetch: Some(f_unfetch),
};

/// The wrapped file and its methods. Valid while SQLite holds the file
/// open, which is the only time it calls these methods.
unsafe fn parts(
    file: *mut ffi::sqlite3_file,
) -> (*mut ffi::sqlite3_file, &'static ffi::sqlite3_io_methods) {
    unsafe {
        let real = (*file.cast::<ShimFile>()).real;
        (real, &*(*real).pMethods)
    }
}

unsafe fn info<'a>(file: *mut ffi::sqlite3_file) -> &'a FileInfo {
    unsafe { &*(*file.cast::<ShimFile>()).info }
}

/// The tracked path of a file, if the shim keeps an image of it.
unsafe fn tracked<'a>(file: *mut ffi::sqlite3_file) -> Option<(&'a Path, Kind)> {
    let info = unsafe { info(file) };
    match (&info.path, info.kind) {
        (Some(p), Kind::MainDb | Kind::Wal) => Some((p.as_path(), info.kind)),
        _ => None,
    }
}

/// Counts one write, sync or truncation of a tracked file and decides
/// whether the power goes out on it. Returns false when it must fail.
fn counted(s: &mut State, op: Op, kind: Kind, offset: u64) -> bool {
    if s.cut.is_some() {
        return false;
    }
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

unsafe extern "C" fn f_close(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        let rc = methods.xClose.map_or(ffi::SQLITE_OK, |f| f(real));
        // SQLite frees the block after this returns, whatever we answer;
        // our boxed record goes with it.
        let shim = file.cast::<ShimFile>();
        drop(Box::from_raw((*shim).info));
        (*shim).info = ptr::null_mut();
        let mut s = state();
        s.open = s.open.saturating_sub(1);
        rc
    }
}

unsafe extern "C" fn f_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        methods
            .xRead
            .map_or(ffi::SQLITE_IOERR_READ, |f| f(real, buf, amount, offset))
    }
}

unsafe extern "C" fn f_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        let tracked = tracked(file);
        let mut s = state();
        if s.cut.is_some() {
            return ffi::SQLITE_IOERR_WRITE;
        }
        if let Some((_, kind)) = tracked {
            if !counted(&mut s, Op::Write, kind, offset as u64) {
                return ffi::SQLITE_IOERR_WRITE;
            }
        }
        if s.full {
            s.counters.full_refusals += 1;
            return ffi::SQLITE_FULL;
        }
        let rc = methods
            .xWrite
            .map_or(ffi::SQLITE_IOERR_WRITE, |f| f(real, buf, amount, offset));
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        if let Some((path, kind)) = tracked {
            let data = std::slice::from_raw_parts(buf.cast::<u8>(), amount.max(0) as usize);
            if kind == Kind::Wal {
                // A new transaction's first frame ends any checkpoint label.
                if s.pragma.as_deref() == Some("wal_checkpoint") {
                    s.pragma = None;
                }
                s.wal_writes += 1;
                s.wal_tx_parquet |= data.windows(4).any(|w| w == b"PAR1");
            }
            if let Some(image) = s.files.get_mut(path) {
                image.pending.push(Pending::Write {
                    offset: offset as u64,
                    data: data.to_vec(),
                });
            }
        }
        rc
    }
}

unsafe extern "C" fn f_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        let tracked = tracked(file);
        let mut s = state();
        if s.cut.is_some() {
            return ffi::SQLITE_IOERR_TRUNCATE;
        }
        if let Some((_, kind)) = tracked {
            if !counted(&mut s, Op::Truncate, kind, size as u64) {
                return ffi::SQLITE_IOERR_TRUNCATE;
            }
        }
        // Shrinking needs no space: a full disk does not refuse it.
        let rc = methods
            .xTruncate
            .map_or(ffi::SQLITE_IOERR_TRUNCATE, |f| f(real, size));
        if rc == ffi::SQLITE_OK {
            if let Some(image) = tracked.and_then(|(p, _)| s.files.get_mut(p)) {
                image.pending.push(Pending::Truncate(size as u64));
            }
        }
        rc
    }
}

unsafe extern "C" fn f_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        let tracked = tracked(file);
        let mut s = state();
        if s.cut.is_some() {
            return ffi::SQLITE_IOERR_FSYNC;
        }
        if let Some((_, kind)) = tracked {
            if !counted(&mut s, Op::Sync, kind, 0) {
                return ffi::SQLITE_IOERR_FSYNC;
            }
        }
        // The unix VFS also syncs the directory after the first sync of a
        // new `-wal`, so a synced file's existence is durable too.
        let rc = methods
            .xSync
            .map_or(ffi::SQLITE_IOERR_FSYNC, |f| f(real, flags));
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        if let Some((path, kind)) = tracked {
            if let Some(image) = s.files.get_mut(path) {
                let mut bytes = image.durable.take().unwrap_or_default();
                for op in image.pending.drain(..) {
                    match op {
                        Pending::Write { offset, data } => {
                            let end = offset as usize + data.len();
                            if bytes.len() < end {
                                bytes.resize(end, 0);
                            }
                            bytes[offset as usize..end].copy_from_slice(&data);
                        }
                        Pending::Truncate(size) => bytes.resize(size as usize, 0),
                    }
                }
                image.durable = Some(bytes);
            }
            if kind == Kind::Wal && s.wal_writes > 0 {
                // A commit (or a restarted log's header) reached the disk.
                if s.wal_tx_parquet {
                    s.counters.seals_committed += 1;
                    s.prune_due = true;
                } else if s.phase == "append" {
                    s.prune_due = false;
                }
                s.wal_writes = 0;
                s.wal_tx_parquet = false;
            }
        }
        rc
    }
}

unsafe extern "C" fn f_file_size(
    file: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        methods
            .xFileSize
            .map_or(ffi::SQLITE_IOERR_FSTAT, |f| f(real, size))
    }
}

unsafe extern "C" fn f_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        methods
            .xLock
            .map_or(ffi::SQLITE_IOERR_LOCK, |f| f(real, level))
    }
}

unsafe extern "C" fn f_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        methods
            .xUnlock
            .map_or(ffi::SQLITE_IOERR_UNLOCK, |f| f(real, level))
    }
}

unsafe extern "C" fn f_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        methods
            .xCheckReservedLock
            .map_or(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, |f| f(real, out))
    }
}

unsafe extern "C" fn f_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    unsafe {
        // Watched, never changed: what SQLite is about to do, for the report.
        match op {
            ffi::SQLITE_FCNTL_PRAGMA if !arg.is_null() => {
                // An array of strings: [0] an error out-param, [1] the
                // pragma's name, [2] its argument.
                let name = *arg.cast::<*const c_char>().add(1);
                if !name.is_null() {
                    let name = CStr::from_ptr(name).to_string_lossy().to_lowercase();
                    if !name.starts_with("experimental") {
                        state().pragma = Some(name);
                    }
                }
            }
            _ => {}
        }
        let (real, methods) = parts(file);
        methods
            .xFileControl
            .map_or(ffi::SQLITE_NOTFOUND, |f| f(real, op, arg))
    }
}

unsafe extern "C" fn f_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        methods.xSectorSize.map_or(4096, |f| f(real))
    }
}

unsafe extern "C" fn f_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        methods.xDeviceCharacteristics.map_or(0, |f| f(real))
    }
}

unsafe extern "C" fn f_shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    page_size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        match methods.xShmMap {
            Some(f) if methods.iVersion >= 2 => f(real, page, page_size, extend, out),
            _ => ffi::SQLITE_IOERR_SHMMAP,
        }
    }
}

unsafe extern "C" fn f_shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        match methods.xShmLock {
            Some(f) if methods.iVersion >= 2 => f(real, offset, n, flags),
            _ => ffi::SQLITE_IOERR_SHMLOCK,
        }
    }
}

unsafe extern "C" fn f_shm_barrier(file: *mut ffi::sqlite3_file) {
    unsafe {
        let (real, methods) = parts(file);
        if let Some(f) = methods.xShmBarrier.filter(|_| methods.iVersion >= 2) {
            f(real)
        }
    }
}

unsafe extern "C" fn f_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        match methods.xShmUnmap {
            Some(f) if methods.iVersion >= 2 => f(real, delete),
            _ => ffi::SQLITE_OK,
        }
    }
}

unsafe extern "C" fn f_fetch(
    file: *mut ffi::sqlite3_file,
    offset: ffi::sqlite3_int64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        match methods.xFetch {
            Some(f) if methods.iVersion >= 3 => f(real, offset, amount, out),
            // No mapping: SQLite falls back to xRead.
            _ => {
                *out = ptr::null_mut();
                ffi::SQLITE_OK
            }
        }
    }
}

unsafe extern "C" fn f_unfetch(
    file: *mut ffi::sqlite3_file,
    offset: ffi::sqlite3_int64,
    p: *mut c_void,
) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        match methods.xUnfetch {
            Some(f) if methods.iVersion >= 3 => f(real, offset, p),
            _ => ffi::SQLITE_OK,
        }
    }
}

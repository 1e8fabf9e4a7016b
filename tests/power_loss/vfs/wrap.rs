//! The C side of the shim: the `sqlite3_vfs` and `sqlite3_io_methods`
//! SQLite calls. Every call is forwarded to the wrapped `unix` VFS; the
//! writes, syncs, truncations and deletes of the files the model tracks are
//! first put to it (`State::admit`) and then reported to it.
//!
//! Ownership: SQLite allocates `szOsFile` bytes for each file object and
//! frees them after `xClose`. A [`ShimFile`] header sits at the front of
//! that block and the `unix` VFS builds its own file object right after
//! it; the header points at it. The only thing allocated here is the boxed
//! [`FileInfo`], freed in `xClose`. Nothing below may panic: a panic
//! cannot unwind into C (the process would abort), so the shared state is
//! locked without unwrapping a poisoned lock.

use std::ffi::{c_char, c_int, c_void, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::OnceLock;

use rusqlite::ffi;

use super::{state, Kind, Op, Verdict};

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

/// What the shim knows of an open file: its path (none for a temporary
/// file SQLite names itself) and what kind of file it is.
struct FileInfo {
    path: Option<PathBuf>,
    kind: Kind,
}

// ---------------------------------------------------------------------------
// Registration

/// Registers the shim as the default VFS, once per process.
pub(super) fn install() {
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
        let first = s.first_sight(path.as_deref(), kind);
        let rc = match (*real_vfs).xOpen {
            Some(open) => open(real_vfs, name, real, flags, out_flags),
            None => ffi::SQLITE_CANTOPEN,
        };
        if rc != ffi::SQLITE_OK {
            // The unix VFS leaves its own pMethods null on failure and
            // has released what it took.
            return rc;
        }
        s.opened(path.as_deref(), kind, first);
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
            s.deleted(Path::new(OsStr::from_bytes(
                CStr::from_ptr(name).to_bytes(),
            )));
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

unsafe extern "C" fn f_close(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        let rc = methods.xClose.map_or(ffi::SQLITE_OK, |f| f(real));
        // SQLite frees the block after this returns, whatever we answer;
        // our boxed record goes with it.
        let shim = file.cast::<ShimFile>();
        drop(Box::from_raw((*shim).info));
        (*shim).info = ptr::null_mut();
        state().closed();
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
        match s.admit(Op::Write, tracked.map(|t| t.1), offset as u64) {
            Verdict::Go => {}
            Verdict::PowerOff => return ffi::SQLITE_IOERR_WRITE,
            Verdict::Full => return ffi::SQLITE_FULL,
        }
        let rc = methods
            .xWrite
            .map_or(ffi::SQLITE_IOERR_WRITE, |f| f(real, buf, amount, offset));
        if let (ffi::SQLITE_OK, Some((path, kind))) = (rc, tracked) {
            let data = std::slice::from_raw_parts(buf.cast::<u8>(), amount.max(0) as usize);
            s.wrote(path, kind, offset as u64, data);
        }
        rc
    }
}

unsafe extern "C" fn f_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        let tracked = tracked(file);
        let mut s = state();
        match s.admit(Op::Truncate, tracked.map(|t| t.1), size as u64) {
            Verdict::Go | Verdict::Full => {}
            Verdict::PowerOff => return ffi::SQLITE_IOERR_TRUNCATE,
        }
        let rc = methods
            .xTruncate
            .map_or(ffi::SQLITE_IOERR_TRUNCATE, |f| f(real, size));
        if let (ffi::SQLITE_OK, Some((path, _))) = (rc, tracked) {
            s.truncated(path, size as u64);
        }
        rc
    }
}

unsafe extern "C" fn f_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe {
        let (real, methods) = parts(file);
        let tracked = tracked(file);
        let mut s = state();
        match s.admit(Op::Sync, tracked.map(|t| t.1), 0) {
            Verdict::Go | Verdict::Full => {}
            Verdict::PowerOff => return ffi::SQLITE_IOERR_FSYNC,
        }
        let rc = methods
            .xSync
            .map_or(ffi::SQLITE_IOERR_FSYNC, |f| f(real, flags));
        if let (ffi::SQLITE_OK, Some((path, kind))) = (rc, tracked) {
            s.synced(path, kind);
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
        if op == ffi::SQLITE_FCNTL_PRAGMA && !arg.is_null() {
            // An array of strings: [0] an error out-param, [1] the
            // pragma's name, [2] its argument.
            let name = *arg.cast::<*const c_char>().add(1);
            if !name.is_null() {
                let name = CStr::from_ptr(name).to_string_lossy().to_lowercase();
                state().saw_pragma(name);
            }
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

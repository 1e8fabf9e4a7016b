//! The glue between SQLite and a lazily read archive in the browser: a
//! read-only, immutable VFS ("dendro-lazy") whose main files are
//! [`LazyFile`]s over a JavaScript byte source (a dropped `File` read with
//! `FileReaderSync`, a URL read with synchronous `Range` requests; both in
//! `www/src/engine/sources.ts`). The cache and read-ahead are not here but
//! in [`crate::pager`], and the read-ahead plans in
//! [`crate::read::prefetch`], both tested natively.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use js_sys::{Function, Reflect, Uint8Array};
use sqlite_wasm_rs::vfs::{
    register_vfs, AccessMode, DeviceCharacteristics, LockLevel, MemChunksFile, OpenAccess,
    OpenOptions, OpenRequest, OpenedFile, SQLiteIoMethods, SQLiteVfs, SyncOptions, VfsError,
    VfsErrorCode, VfsFile, VfsResult, VfsStore,
};
use sqlite_wasm_rs::WasmOsCallback;
use wasm_bindgen::{JsCast, JsValue};

use crate::container::serve_payloads;
use crate::container::{Archive, HEADER_BYTES};
use crate::error::{Error, Result};
use crate::pager::{ByteSource, InPlace, LazyConfig, LazyFile, SourceFailure};

/// The name SQLite knows this VFS by.
const VFS_NAME: &str = "dendro-lazy";

/// A lazily read file shared by the VFS handle, the archive's owner
/// (which reads its traffic counters) and its read-ahead plans.
pub(crate) type SharedFile = crate::read::prefetch::SharedFile<JsSource>;

thread_local! {
    /// Files waiting for SQLite's open, by the path given in its URI.
    static WAITING: RefCell<HashMap<String, SharedFile>> = RefCell::new(HashMap::new());
    /// The last read a source refused, for the error SQLite's own
    /// ("disk I/O error") is replaced with.
    static LAST_FAILURE: RefCell<Option<SourceFailure>> = const { RefCell::new(None) };
    static REGISTERED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static NEXT_PATH: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
}

/// A JS object `{ size: number, read(offset: number, length: number): Uint8Array }`
/// as a byte source. `read` throws an `Error` whose `kind` is "Changed"
/// when the file is no longer the one opened.
pub(crate) struct JsSource {
    this: JsValue,
    read: Function,
    len: u64,
}

impl JsSource {
    pub(crate) fn new(file: &str, source: JsValue) -> Result<JsSource> {
        let invalid = |what: &str| Error::Invalid {
            file: file.to_string(),
            message: format!("the byte source given to openLazy has {what}"),
        };
        let size = Reflect::get(&source, &JsValue::from_str("size"))
            .ok()
            .and_then(|v| v.as_f64())
            .filter(|s| s.fract() == 0.0 && *s >= 0.0 && *s <= 9_007_199_254_740_991.0)
            .ok_or_else(|| invalid("no whole `size`"))?;
        let read = Reflect::get(&source, &JsValue::from_str("read"))
            .ok()
            .and_then(|v| v.dyn_into::<Function>().ok())
            .ok_or_else(|| invalid("no `read` function"))?;
        Ok(JsSource {
            this: source,
            read,
            len: size as u64,
        })
    }
}

impl ByteSource for JsSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), SourceFailure> {
        let got = self
            .read
            .call2(
                &self.this,
                &JsValue::from_f64(offset as f64),
                &JsValue::from_f64(buf.len() as f64),
            )
            .map_err(failure_of)?;
        let bytes = got.dyn_into::<Uint8Array>().map_err(|_| {
            SourceFailure::Unreadable("the byte source returned something other than bytes".into())
        })?;
        if bytes.length() as usize != buf.len() {
            return Err(SourceFailure::Unreadable(format!(
                "asked for {} bytes at offset {offset}, got {}",
                buf.len(),
                bytes.length()
            )));
        }
        bytes.copy_to(buf);
        Ok(())
    }
}

/// What a JS source threw, as a failure: "Changed" by its `kind`, any
/// other throw a read that could not be served.
fn failure_of(thrown: JsValue) -> SourceFailure {
    let message = thrown
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| thrown.as_string())
        .unwrap_or_else(|| "the byte source failed".into());
    let kind = Reflect::get(&thrown, &JsValue::from_str("kind"))
        .ok()
        .and_then(|k| k.as_string());
    match kind.as_deref() {
        Some("Changed") => SourceFailure::Changed(message),
        _ => SourceFailure::Unreadable(message),
    }
}

/// Opens `source` as an archive read in place, `http` choosing the
/// read-ahead for a network source over a local one. `head_bytes` of the
/// file's start are fetched first in one read (the header, the schema and
/// the catalog's root pages; see [`LazyFile::read_head`]), 0 for none.
/// Returns the archive and its lazy file (for traffic counters).
pub(crate) fn open(
    name: &str,
    source: JsValue,
    http: bool,
    head_bytes: u64,
) -> Result<(Archive, SharedFile)> {
    register()?;
    let config = if http {
        LazyConfig::HTTP
    } else {
        LazyConfig::LOCAL_FILE
    };
    let source = JsSource::new(name, source)?;
    let file: SharedFile = Rc::new(RefCell::new(LazyFile::new(source, config)));
    let failed = |cause| Error::Source {
        file: name.to_string(),
        cause,
    };
    file.borrow_mut().read_head(head_bytes).map_err(failed)?;
    let mut header = vec![0u8; HEADER_BYTES];
    let n = file.borrow_mut().read(&mut header, 0).map_err(failed)?;
    header.truncate(n);
    let path = NEXT_PATH.with(|p| {
        let id = p.get();
        p.set(id.wrapping_add(1));
        format!("dendro-lazy-{id}")
    });
    WAITING.with(|w| w.borrow_mut().insert(path.clone(), Rc::clone(&file)));
    // SQLite's handle holds its own reference once open: the entry is
    // only needed while the open runs.
    let opened = Archive::from_vfs(name, &header, VFS_NAME, &path);
    WAITING.with(|w| w.borrow_mut().remove(&path));
    let archive = opened.map_err(explain)?;
    // Its payloads are read by range where their place is proven.
    let weak: std::rc::Weak<dyn InPlace> = Rc::downgrade(&file) as _;
    serve_payloads(&archive, weak);
    Ok((archive, file))
}

/// The error to report for `err`: when a source refused a read since the
/// last report, SQLite's "disk I/O error" is that refusal in words.
pub(crate) fn explain(err: Error) -> Error {
    let Some(cause) = LAST_FAILURE.with(|f| f.borrow_mut().take()) else {
        return err;
    };
    match err {
        Error::Sqlite { file, .. } | Error::Corrupt { file, .. } => Error::Source { file, cause },
        other => other,
    }
}

fn register() -> Result<()> {
    if REGISTERED.with(|r| r.get()) {
        return Ok(());
    }
    // SAFETY: the VFS uses the default constructor, file layout and method
    // table of rsqlite-vfs with matching store and app-data types; the
    // registration is kept for the life of the instance (into_raw), and
    // wasm32 here is single-threaded.
    let registered = unsafe { register_vfs::<LazyIo, LazyVfs>(VFS_NAME, (), false) };
    match registered {
        Ok(registration) => {
            let _ = registration.into_raw();
            REGISTERED.with(|r| r.set(true));
            Ok(())
        }
        Err(e) => Err(Error::Invalid {
            file: VFS_NAME.to_string(),
            message: format!("cannot register the in-place reader with SQLite: {e}"),
        }),
    }
}

/// A file SQLite opened through this VFS: an archive read in place, or a
/// temporary file of its own (sorts, large results), kept in memory.
enum Handle {
    Lazy(SharedFile),
    Temp(MemChunksFile),
}

fn read_only() -> VfsError {
    VfsError::new(
        VfsErrorCode::ReadOnly,
        "an archive read in place cannot be written".into(),
    )
}

impl VfsFile for Handle {
    fn device_characteristics(&self) -> DeviceCharacteristics {
        match self {
            Handle::Lazy(_) => DeviceCharacteristics::IMMUTABLE,
            Handle::Temp(_) => DeviceCharacteristics::NONE,
        }
    }

    fn read(&mut self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        match self {
            Handle::Lazy(file) => file.borrow_mut().read(buf, offset).map_err(|cause| {
                let message = cause.to_string();
                LAST_FAILURE.with(|f| *f.borrow_mut() = Some(cause));
                VfsError::new(VfsErrorCode::IoRead, message.into())
            }),
            Handle::Temp(file) => file.read(buf, offset),
        }
    }

    fn write(&mut self, buf: &[u8], offset: u64) -> VfsResult<()> {
        match self {
            Handle::Lazy(_) => Err(read_only()),
            Handle::Temp(file) => file.write(buf, offset),
        }
    }

    fn truncate(&mut self, size: u64) -> VfsResult<()> {
        match self {
            Handle::Lazy(_) => Err(read_only()),
            Handle::Temp(file) => file.truncate(size),
        }
    }

    fn sync(&mut self, options: SyncOptions) -> VfsResult<()> {
        match self {
            Handle::Lazy(_) => Ok(()),
            Handle::Temp(file) => file.sync(options),
        }
    }

    fn size(&self) -> VfsResult<u64> {
        match self {
            Handle::Lazy(file) => Ok(file.borrow().len()),
            Handle::Temp(file) => file.size(),
        }
    }

    // Immutable: nothing else writes, so there is nothing to lock against.
    fn lock(&mut self, _level: LockLevel) -> VfsResult<()> {
        Ok(())
    }

    fn unlock(&mut self, _level: LockLevel) -> VfsResult<()> {
        Ok(())
    }

    fn check_reserved_lock(&self) -> VfsResult<bool> {
        Ok(false)
    }
}

struct LazyStore;

impl VfsStore for LazyStore {
    type File = Handle;
    type AppData = ();

    fn open_file(_: &(), request: OpenRequest<'_>) -> VfsResult<OpenedFile<Handle>> {
        let Some(name) = request.filename else {
            return Ok(OpenedFile {
                file: Handle::Temp(MemChunksFile::default()),
                access: request.options.access(),
            });
        };
        let path = name.path();
        match WAITING.with(|w| w.borrow().get(path).cloned()) {
            // Read-only whatever was asked: falling back is allowed.
            Some(file) => Ok(OpenedFile {
                file: Handle::Lazy(file),
                access: OpenAccess::ReadOnly,
            }),
            // A journal or log beside an archive read in place: it has none.
            None => Err(VfsError::new(
                VfsErrorCode::CantOpen,
                format!("{path} does not exist: an archive read in place has no sidecars").into(),
            )),
        }
    }

    fn close_file(_: &(), _: Option<&str>, _: Handle, _: OpenOptions) -> VfsResult<()> {
        Ok(())
    }

    fn access(_: &(), name: &str, _mode: AccessMode) -> VfsResult<bool> {
        Ok(WAITING.with(|w| w.borrow().contains_key(name)))
    }

    fn full_pathname(_: &(), name: &str) -> VfsResult<String> {
        Ok(name.to_string())
    }

    // Only sidecars are ever deleted, and an archive read in place has none.
    fn delete_file(_: &(), _name: &str, _sync_dir: bool) -> VfsResult<()> {
        Ok(())
    }
}

struct LazyIo;

impl SQLiteIoMethods for LazyIo {
    type Store = LazyStore;
}

struct LazyVfs;

impl SQLiteVfs<LazyIo> for LazyVfs {
    type Os = WasmOsCallback;

    fn os(_: &()) -> &WasmOsCallback {
        &WasmOsCallback
    }
}

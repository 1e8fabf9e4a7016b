//! The two handles on an archive.

#[cfg(not(target_arch = "wasm32"))]
use std::path::{Path, PathBuf};

#[cfg(not(target_arch = "wasm32"))]
use rusqlite::OpenFlags;
use rusqlite::{Connection, TransactionBehavior};

#[cfg(not(target_arch = "wasm32"))]
use super::paths::{file_uri, sidecar_path};
use super::schema::{check_catalog, CatalogShape};
use super::{pragmas, sniff_bytes, HEADER_BYTES};
use crate::error::{Error, Result, SqlContext};

/// A read-only handle. It never writes to the archive or its sidecars'
/// contents, reads a file another process is writing, and answers every
/// question from one snapshot (see [`crate::read`]).
pub struct Archive {
    pub(crate) conn: Connection,
    pub(crate) file: String,
    /// Which optional catalog columns the file has; set by `check_opened`.
    pub(crate) shape: CatalogShape,
    #[cfg(not(target_arch = "wasm32"))]
    path: Option<PathBuf>,
}

impl std::fmt::Debug for Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive").field("file", &self.file).finish()
    }
}

impl Archive {
    /// Opens the archive at `path` for reading.
    ///
    /// The header is checked before SQLite sees the file. On read-only media
    /// where SQLite cannot create its `-shm` index, the file is reopened with
    /// `immutable=1`, unless a `-wal` sidecar exists: then the open is
    /// refused, because an immutable open would skip the sidecar's commits.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn open(path: impl AsRef<Path>) -> Result<Archive> {
        let path = path.as_ref();
        let file = path.display().to_string();
        super::sniff::require_readable_file(path, &file)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).ctx(&file, "cannot open")?;
        match Archive::checked_at(conn, file.clone(), path) {
            Ok(archive) => Ok(archive),
            Err(Error::Sqlite { source, .. }) if needs_immutable(&source) => {
                let sidecar = sidecar_path(path, "-wal");
                if std::fs::metadata(&sidecar)
                    .map(|m| m.len() > 0)
                    .unwrap_or(false)
                {
                    return Err(Error::ReadOnly {
                        file,
                        cause: crate::error::ReadOnly::SidecarOnReadOnlyMedia,
                    });
                }
                let uri = format!("{}?immutable=1", file_uri(path));
                let conn = Connection::open_with_flags(uri, flags)
                    .ctx(&file, "cannot open read-only media")?;
                Archive::checked_at(conn, file, path)
            }
            Err(e) => Err(e),
        }
    }

    /// Opens an archive held in memory, such as a file dropped into a web
    /// page. `len` bytes are read from `bytes` straight into SQLite's own
    /// buffer, so the archive exists once in memory, and the database is
    /// opened read-only: nothing can write to it. An archive larger than
    /// [`super::MAX_IN_MEMORY_BYTES`] is refused as [`Error::TooLarge`]
    /// before anything is read.
    pub fn from_reader(name: &str, mut bytes: impl std::io::Read, len: usize) -> Result<Archive> {
        let file = name.to_string();
        if len as u64 > super::MAX_IN_MEMORY_BYTES {
            return Err(Error::TooLarge {
                file,
                bytes: len as u64,
                limit: super::MAX_IN_MEMORY_BYTES,
            });
        }
        let mut header = vec![0u8; HEADER_BYTES.min(len)];
        bytes
            .read_exact(&mut header)
            .map_err(|e| Error::io(&file, "cannot read the header", e))?;
        sniff_bytes(&header).require_readable(&file)?;
        // An in-memory database has no sidecars: a header that says WAL
        // (format bytes 18 and 19 = 2) would make SQLite look for them.
        // The copy in memory is ours to mark as a rollback-journal file.
        for at in [18, 19] {
            if header[at] == 2 {
                header[at] = 1;
            }
        }
        let mut conn = Connection::open_in_memory().ctx(&file, "cannot open memory database")?;
        let reader = std::io::Read::chain(&header[..], bytes);
        conn.deserialize_read_exact(rusqlite::MAIN_DB, reader, len, true)
            .ctx(&file, "cannot load the file into memory")?;
        Archive::checked_without_path(conn, file)
    }

    /// An archive over a connection to the file at `path`, once its catalog
    /// passes the open checks (a failed check closes the connection).
    #[cfg(not(target_arch = "wasm32"))]
    fn checked_at(conn: Connection, file: String, path: &Path) -> Result<Archive> {
        let mut archive = Archive::checked_without_path(conn, file)?;
        archive.path = Some(path.to_path_buf());
        Ok(archive)
    }

    /// An archive over a connection with no path on disk (bytes in memory,
    /// or a VFS), once its catalog passes the open checks.
    fn checked_without_path(conn: Connection, file: String) -> Result<Archive> {
        let mut archive = Archive {
            conn,
            file,
            shape: CatalogShape::CURRENT,
            #[cfg(not(target_arch = "wasm32"))]
            path: None,
        };
        archive.check_opened()?;
        Ok(archive)
    }

    /// Opens an archive that SQLite reads in place through the VFS named
    /// `vfs`, which serves the file it knows as `path` read-only (see
    /// [`crate::pager`]). `header` is the file's first bytes, read through
    /// the same VFS: they are checked before SQLite sees the file. The open
    /// is `immutable`: no locks, no journal, no change detection by SQLite
    /// (the VFS detects a changed source itself).
    pub fn from_vfs(name: &str, header: &[u8], vfs: &str, path: &str) -> Result<Archive> {
        let file = name.to_string();
        sniff_bytes(header).require_readable(&file)?;
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
            | rusqlite::OpenFlags::SQLITE_OPEN_URI
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let uri = format!("file:{path}?immutable=1");
        let conn = Connection::open_with_flags_and_vfs(uri, flags, vfs)
            .ctx(&file, "cannot open the file in place")?;
        Archive::checked_without_path(conn, file)
    }

    /// Opens an archive from bytes already in memory (copied once into SQLite).
    pub fn from_bytes(name: &str, bytes: &[u8]) -> Result<Archive> {
        Archive::from_reader(name, bytes, bytes.len())
    }

    /// What the file is: its schema version, where its caller indexes live
    /// and whether it holds documents ([`crate::format::Layout`]).
    pub fn layout(&self) -> crate::format::Layout {
        self.shape.layout
    }

    /// The name errors use for this archive: its path, or the name given to
    /// [`Archive::from_bytes`].
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Where the archive is on disk, when it is on disk.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The size of the archive: the main file's length on disk (sidecars
    /// not included), or the database size for an archive in memory.
    pub fn file_bytes(&self) -> Result<u64> {
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(path) = &self.path {
            return std::fs::metadata(path)
                .map(|m| m.len())
                .map_err(|e| Error::io(&self.file, "cannot stat", e));
        }
        let (pages, page_size): (i64, i64) = self
            .conn
            .query_row(
                "SELECT page_count, page_size FROM pragma_page_count, pragma_page_size",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ctx(&self.file, "cannot read the page count")?;
        Ok((pages * page_size) as u64)
    }

    /// Readies the connection for reading most of the file: SQLite reads
    /// pages through a memory map from now on, so each BLOB page is copied
    /// once, out of the map, instead of through a `read` call per page
    /// (about 1.5x the throughput; DESIGN.md, "Reading a whole archive").
    /// Asked for by bulk reads rather than set at open, where setting the
    /// map up costs a catalog question more than it saves. The browser
    /// engine's files are not files; there it does nothing.
    pub(crate) fn prepare_bulk_read(&self) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        self.conn
            .execute_batch(&format!(
                "PRAGMA mmap_size = {};",
                super::pragmas::BULK_READ_MAP_BYTES
            ))
            .ctx(&self.file, "cannot map the file for reading")?;
        Ok(())
    }

    /// Runs `f` inside one read transaction, so every query it makes sees
    /// the same committed state even while a writer commits (format §4.2).
    /// Hold a snapshot for one answer: while it is held, checkpoints cannot
    /// move the pages it can see.
    pub fn read_snapshot<T>(&self, f: impl FnOnce(&Snapshot<'_>) -> Result<T>) -> Result<T> {
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred)
            .ctx(&self.file, "cannot begin a read snapshot")?;
        let snapshot = Snapshot {
            conn: &tx,
            file: &self.file,
            shape: self.shape,
        };
        let out = f(&snapshot);
        drop(tx);
        out
    }

    /// Writes an exact, consistent copy of the archive to `dest` (which must
    /// not exist). It reads through a live writer's `-wal` sidecar without
    /// pausing it, unlike a plain file copy, which can miss recent commits.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn vacuum_into(&self, dest: impl AsRef<Path>) -> Result<()> {
        let dest = dest.as_ref();
        let dest_str = dest
            .to_str()
            .ok_or_else(|| Error::Invalid {
                file: self.file.clone(),
                message: format!("destination {} is not valid UTF-8", dest.display()),
            })?
            .to_string();
        if dest.exists() {
            return Err(Error::Invalid {
                file: self.file.clone(),
                message: format!("destination {dest_str} already exists"),
            });
        }
        // query_only forbids VACUUM INTO as a statement class, although it
        // writes only the destination; the connection itself was opened
        // read-only, so lifting it for this one statement cannot touch the
        // archive.
        let context = format!("cannot copy into {dest_str}");
        self.conn
            .execute_batch("PRAGMA query_only = OFF;")
            .ctx(&self.file, &context)?;
        let copied = self.conn.execute("VACUUM INTO ?1", [&dest_str]);
        self.conn
            .execute_batch("PRAGMA query_only = ON;")
            .ctx(&self.file, &context)?;
        copied.ctx(&self.file, &context)?;
        Ok(())
    }

    /// Confirms, through SQLite this time, that the stamp is dendro's and
    /// the catalog is present with the columns and indexes reading relies
    /// on, noting which optional columns it has and which layout (schema 4
    /// or 5) its tables and version agree on. Reading page 1 also surfaces
    /// a damaged file.
    fn check_opened(&mut self) -> Result<()> {
        let file = &self.file;
        let version = super::sniff::stamp_of(&self.conn)
            .map_err(|e| classify_open_error(file, e))?
            .require_readable(file)?;
        self.shape = check_catalog(&self.conn, version)
            .map_err(|e| classify_open_error(file, e))?
            .map_err(|missing| Error::NotAnArchive {
                file: file.clone(),
                cause: missing.into(),
            })?;
        pragmas::apply_reader(&self.conn, file)
    }
}

/// Errors from the first reads are about the file, not about a query.
fn classify_open_error(file: &str, e: rusqlite::Error) -> Error {
    Error::sqlite(file, "cannot read the archive", e)
}

/// SQLite could not set up WAL shared memory: the medium is read-only.
#[cfg(not(target_arch = "wasm32"))]
fn needs_immutable(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::CannotOpen) | Some(ErrorCode::ReadOnly)
    )
}

/// One read transaction: every query through it sees the same state.
///
/// Its methods here are the file's own; the catalog's reads are methods too,
/// each beside its table in `src/catalog/<table>.rs` (`sources`, `segments`,
/// `wal`, `clock_offsets`, `caller_rows`, and `streams` across the two) and
/// the outline in `src/catalog/outline.rs`; [`crate::read`] adds the
/// description that joins them.
pub struct Snapshot<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) file: &'a str,
    pub(crate) shape: CatalogShape,
}

impl<'a> Snapshot<'a> {
    /// Queries on the writer's own connection, inside whatever transaction
    /// it has open. A writer opens only the two shapes it continues
    /// (`open_streaming`): schema 4 with every column, or schema 5, which
    /// one table tells apart. Should that lookup fail, the query asked next
    /// fails on the same connection and reports it.
    #[cfg(feature = "write")]
    pub(crate) fn on_writer(conn: &'a Connection, file: &'a str) -> Snapshot<'a> {
        let shape = match super::stores_index_table(conn) {
            Ok(true) => CatalogShape::SCHEMA_5,
            Ok(false) | Err(_) => CatalogShape::CURRENT,
        };
        Snapshot { conn, file, shape }
    }

    /// The file this snapshot reads.
    pub fn file(&self) -> &str {
        self.file
    }

    /// What the file is: its schema version (4 or 5), where its caller
    /// indexes live and whether it holds documents, as decided when it was
    /// opened ([`crate::format::Layout::decide`]).
    pub fn layout(&self) -> crate::format::Layout {
        self.shape.layout
    }

    /// Which optional catalog parts the file has (its layout included).
    pub fn shape(&self) -> CatalogShape {
        self.shape
    }

    /// The schema version in the file's header, as SQLite reads it.
    pub fn schema_version(&self) -> Result<u32> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .ctx(self.file, "cannot read the schema version")
    }
}

/// The write handle: holds the file exclusively (SQLite's exclusive locking
/// mode), so nothing else can write behind its back and a second handle, or
/// a streaming writer, is refused as [`Error::InUse`].
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub struct ArchiveMut {
    archive: Archive,
    _lock: WriterLock,
}

#[cfg(feature = "write")]
impl std::ops::Deref for ArchiveMut {
    type Target = Archive;
    fn deref(&self) -> &Archive {
        &self.archive
    }
}

#[cfg(feature = "write")]
impl ArchiveMut {
    /// Creates a new archive at `path`, which must not exist or be empty.
    /// On return the main file alone is a valid, empty archive.
    pub fn create(path: impl AsRef<Path>) -> Result<ArchiveMut> {
        ArchiveMut::create_with_schema(path, super::CreateSchema::V4)
    }

    /// [`ArchiveMut::create`] laying down the chosen schema (4 unless
    /// asked: every release of the original reads it).
    pub fn create_with_schema(
        path: impl AsRef<Path>,
        schema: super::CreateSchema,
    ) -> Result<ArchiveMut> {
        let path = path.as_ref();
        let file = path.display().to_string();
        create_file(path, schema)?;
        ArchiveMut::take(path, file)
    }

    /// Opens an existing archive for catalog writes, taking it exclusively.
    /// This is also the recovery open: when it closes, SQLite folds a
    /// crashed writer's `-wal` sidecar into the main file.
    pub fn open(path: impl AsRef<Path>) -> Result<ArchiveMut> {
        let path = path.as_ref();
        let file = path.display().to_string();
        super::sniff::require_readable_file(path, &file)?;
        ArchiveMut::take(path, file)
    }

    fn take(path: &Path, file: String) -> Result<ArchiveMut> {
        let (conn, lock) = open_writable(path, &file)?;
        conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE;")
            .ctx(&file, "cannot set exclusive locking")?;
        // The exclusive lock is taken by the first write transaction and
        // then held until the connection closes.
        conn.execute_batch("BEGIN IMMEDIATE; COMMIT;")
            .map_err(|e| Error::sqlite(&file, "cannot lock the archive", e))?;
        let archive = Archive::checked_at(conn, file, path)?;
        // check_opened applied reader settings; this handle writes.
        archive
            .conn
            .execute_batch("PRAGMA query_only = OFF;")
            .ctx(&archive.file, "cannot configure the write connection")?;
        pragmas::apply_writer(&archive.conn, &archive.file)?;
        Ok(ArchiveMut {
            archive,
            _lock: lock,
        })
    }

    /// Begins a catalog write. Nothing is visible to readers until
    /// [`super::Transaction::commit`].
    pub fn transaction(&mut self) -> Result<super::Transaction<'_>> {
        super::Transaction::begin(&self.archive.conn, &self.archive.file)
    }
}

/// Opens the streaming writer's connection to an existing archive: the same
/// checks as a read open (stamp, catalog), then the writer's settings. It
/// takes no SQLite exclusive lock, because readers must keep working beside
/// it, only the writers' lock, so a second writer or an [`ArchiveMut`] is
/// refused as [`Error::InUse`].
#[cfg(feature = "write")]
pub(crate) fn open_streaming(path: &Path) -> Result<(Connection, WriterLock)> {
    let file = path.display().to_string();
    super::sniff::require_readable_file(path, &file)?;
    let (conn, lock) = open_writable(path, &file)?;
    let archive = Archive::checked_at(conn, file, path)?;
    // A file is continued in the schema it has (never migrated in place):
    // a schema-5 one gets its indexes in segment_indexes
    // (`Transaction::insert_segment`), with foreign keys on so that
    // retention's deletes cascade to them (`pragmas::apply_writer`).
    if archive.shape != CatalogShape::CURRENT && archive.shape != CatalogShape::SCHEMA_5 {
        // The writer records uuids and caller indexes; adding the columns
        // would migrate the file in place, which dendro never does.
        return Err(Error::Invalid {
            file: archive.file,
            message: "the archive predates the uuid or caller_index column; copy it into a new \
                      archive to write to it"
                .into(),
        });
    }
    let Archive { conn, file, .. } = archive;
    conn.execute_batch("PRAGMA query_only = OFF;")
        .ctx(&file, "cannot configure the write connection")?;
    pragmas::apply_writer(&conn, &file)?;
    Ok((conn, lock))
}

/// The writers' advisory lock: `flock` on the main file, held for as long
/// as a handle may write. SQLite's own locks are POSIX record locks, which
/// Linux keeps apart from `flock`, so readers and SQLite never see this one;
/// it exists so that a second writer (another `Writer`, or a `Writer` beside
/// an `ArchiveMut`) is refused as [`Error::InUse`] instead of fighting over
/// SQLite's write lock and dropping ticks. A process forked from this one
/// shares the lock until it execs or exits (a fork that never execs keeps
/// the file locked for as long as it lives); an open waits out the usual
/// fork-then-exec moment before refusing.
#[cfg(feature = "write")]
pub(crate) struct WriterLock {
    _file: std::fs::File,
}

/// Takes the writers' lock after checking the medium can be written, so
/// read-only media is refused by name rather than by a SQLite code.
#[cfg(feature = "write")]
pub(super) fn lock_for_writing(path: &Path, file: &str) -> Result<WriterLock> {
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                Error::ReadOnly {
                    file: file.to_string(),
                    cause: crate::error::ReadOnly::Media,
                }
            }
            _ => Error::io(file, "cannot open for writing", e),
        })?;
    // A lock held a moment ago may still be held by a copy of its file
    // descriptor: a process forked in this process (by any thread) shares
    // the lock until it execs, which closes the copy. So a refusal is only
    // believed after a few short waits, about a third of a second in all.
    let mut waits = LOCK_RETRY_MS.iter();
    loop {
        match handle.try_lock() {
            Ok(()) => return Ok(WriterLock { _file: handle }),
            Err(std::fs::TryLockError::WouldBlock) => match waits.next() {
                Some(ms) => std::thread::sleep(std::time::Duration::from_millis(*ms)),
                None => {
                    return Err(Error::InUse {
                        file: file.to_string(),
                    })
                }
            },
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::io(file, "cannot lock for writing", e))
            }
        }
    }
}

/// Waits before a busy writers' lock is reported [`Error::InUse`].
#[cfg(feature = "write")]
const LOCK_RETRY_MS: [u64; 6] = [5, 10, 20, 40, 80, 160];

/// Opens a read-write connection holding the writers' lock.
#[cfg(feature = "write")]
pub(crate) fn open_writable(path: &Path, file: &str) -> Result<(Connection, WriterLock)> {
    let lock = lock_for_writing(path, file)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).ctx(file, "cannot open for writing")?;
    conn.busy_timeout(std::time::Duration::ZERO)
        .ctx(file, "cannot set the busy timeout")?;
    Ok((conn, lock))
}

/// Lays down a new archive: geometry, stamps, catalog, then a checkpoint so
/// the main file alone holds all of it.
#[cfg(feature = "write")]
pub(crate) fn create_file(path: &Path, schema: super::CreateSchema) -> Result<()> {
    let file = path.display().to_string();
    if std::fs::metadata(path)
        .map(|m| m.len() > 0)
        .unwrap_or(false)
    {
        return Err(Error::Invalid {
            file,
            message: "cannot create an archive over an existing file".into(),
        });
    }
    // SQLite says only that it cannot open the file; a missing folder is
    // the common cause, and not the read-only media that answer suggests.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        match std::fs::metadata(dir) {
            Ok(m) if !m.is_dir() => {
                return Err(Error::Invalid {
                    message: format!(
                        "cannot create an archive in {}: not a directory",
                        dir.display()
                    ),
                    file,
                })
            }
            Ok(_) => {}
            Err(e) => {
                let context = format!("cannot create an archive in {}", dir.display());
                return Err(Error::io(&file, &context, e));
            }
        }
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
    )
    .map_err(|e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::CannotOpen) | Some(rusqlite::ErrorCode::ReadOnly) => {
            Error::ReadOnly {
                file: file.clone(),
                cause: crate::error::ReadOnly::Media,
            }
        }
        _ => Error::sqlite(&file, "cannot create", e),
    })?;
    // page_size and auto_vacuum take effect only before the first table.
    conn.execute_batch(&super::schema::layout_sql_for(
        schema,
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;",
    ))
    .ctx(&file, "cannot lay down the catalog")?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .ctx(&file, "cannot checkpoint the new catalog")?;
    Ok(())
}

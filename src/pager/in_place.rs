//! The seam between the catalog's payload reads and a file read in place:
//! an archive opened through the lazy VFS registers its file here, under
//! the name its SQLite connection knows it by, and a payload opened on
//! that connection ([`crate::catalog::Payload`]) then reads its bytes by
//! range ([`super::payload`]) instead of through SQLite's blob reads,
//! falling back to those wherever the payload's place is not proven.
//!
//! A registry rather than a field of the archive keeps the read path the
//! same for every archive (a file on disk, one in memory) and costs one
//! look-up of an empty list there.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use super::payload::{self, PayloadMap, PayloadTable};
use super::{ByteSource, LazyFile, SourceFailure};

/// A file read in place, as the payload reader uses it.
pub trait InPlace {
    /// Where `rowid`'s payload column lies (see `pager::payload::locate`).
    fn locate(
        &self,
        table: PayloadTable,
        rowid: i64,
        len: u64,
        head: &[u8],
    ) -> Result<Option<PayloadMap>, SourceFailure>;

    /// Reads the column's bytes at `offset` by range; `false`: read them
    /// through SQLite instead.
    fn read(
        &self,
        map: &mut PayloadMap,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<bool, SourceFailure>;

    /// What a read of the column's last `tail` bytes would fetch that is
    /// not held yet (see `pager::payload::tail_plan`).
    fn tail_plan(&self, map: &PayloadMap, tail: u64) -> Vec<(u64, u64)>;

    /// Counts one payload read through SQLite's pager instead
    /// ([`super::LazyStats::sqlite_payloads`]).
    fn note_sqlite_payload(&self);
}

impl<S: ByteSource> InPlace for RefCell<LazyFile<S>> {
    fn locate(
        &self,
        table: PayloadTable,
        rowid: i64,
        len: u64,
        head: &[u8],
    ) -> Result<Option<PayloadMap>, SourceFailure> {
        match self.try_borrow_mut() {
            Ok(mut file) => payload::locate(&mut file, table, rowid, len, head),
            Err(_) => Ok(None),
        }
    }

    fn read(
        &self,
        map: &mut PayloadMap,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<bool, SourceFailure> {
        match self.try_borrow_mut() {
            Ok(mut file) => payload::read(&mut file, map, offset, buf),
            Err(_) => Ok(false),
        }
    }

    fn tail_plan(&self, map: &PayloadMap, tail: u64) -> Vec<(u64, u64)> {
        match self.try_borrow_mut() {
            Ok(mut file) => payload::tail_plan(&mut file, map, tail),
            Err(_) => Vec::new(),
        }
    }

    fn note_sqlite_payload(&self) {
        if let Ok(mut file) = self.try_borrow_mut() {
            file.note_sqlite_payload();
        }
    }
}

/// A registered file: the connection's name for it, the file, and where
/// its payloads are.
type Served = (String, Weak<dyn InPlace>, PayloadTable);

thread_local! {
    static SERVED: RefCell<Vec<Served>> = const { RefCell::new(Vec::new()) };
    /// Whether payloads are read by range at all (a benchmark turns it off).
    static ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Reads payloads of files read in place by range, or not (then every
/// payload is read through SQLite, as before; for a benchmark's before
/// and after). On by default.
pub fn set_in_place_payloads(on: bool) {
    ENABLED.with(|e| e.set(on));
}

/// Registers `file` as the file read in place under `name` (the name its
/// SQLite connection knows it by), its payloads in `table`, so payloads
/// opened on that connection read by range. Held weakly: closing the
/// archive ends it. The archive's side, which asks SQLite where the
/// payloads are, is `crate::container::serve_payloads`.
pub fn serve_file(name: String, file: Weak<dyn InPlace>, table: PayloadTable) {
    SERVED.with(|s| {
        let mut s = s.borrow_mut();
        s.retain(|(n, f, _)| f.strong_count() > 0 && *n != name);
        s.push((name, file, table));
    });
}

/// The in-place reader of payload `rowid` (`len` bytes) on the connection
/// whose database file is `db_path`, if that file is read in place.
/// `head` fills a buffer with the payload's first bytes as SQLite reads
/// them (from the row's cell, no walk): the map found here must agree.
pub fn in_place_payload(
    db_path: Option<&str>,
    rowid: i64,
    len: u64,
    head: impl FnOnce(&mut [u8]) -> bool,
) -> Option<InPlacePayload> {
    // With reads by range off, the payload is still the file's: its reads
    // through SQLite are counted.
    let by_range = ENABLED.with(Cell::get);
    let db_path = db_path?;
    let (file, table) = SERVED.with(|s| {
        s.borrow()
            .iter()
            .find(|(n, _, _)| n == db_path)
            .and_then(|(_, f, t)| Some((f.upgrade()?, *t)))
    })?;
    let mut first = vec![0u8; len.min(16) as usize];
    if by_range && !head(&mut first) {
        file.note_sqlite_payload();
        return None;
    }
    Some(InPlacePayload {
        file,
        table,
        rowid,
        len,
        head: first,
        map: RefCell::new(if by_range { None } else { Some(None) }),
        through_sqlite: Cell::new(false),
    })
}

/// One payload of a file read in place, read by range once its place is
/// found (on the first read).
pub struct InPlacePayload {
    file: Rc<dyn InPlace>,
    table: PayloadTable,
    rowid: i64,
    len: u64,
    head: Vec<u8>,
    /// `None` until looked for; then the map, or `None` for "not here"
    /// (and for every payload while reads by range are off).
    map: RefCell<Option<Option<PayloadMap>>>,
    /// Whether a read of it went through SQLite already (it is counted
    /// once).
    through_sqlite: Cell<bool>,
}

impl InPlacePayload {
    /// Runs `f` on the payload's map, finding it first if need be;
    /// `None` when its place is not proven.
    fn with_map<T>(
        &self,
        f: impl FnOnce(&mut PayloadMap) -> Result<T, SourceFailure>,
    ) -> Result<Option<T>, SourceFailure> {
        let mut state = self.map.borrow_mut();
        if state.is_none() {
            *state = Some(
                self.file
                    .locate(self.table, self.rowid, self.len, &self.head)?,
            );
        }
        match state.as_mut().and_then(Option::as_mut) {
            Some(map) => f(map).map(Some),
            None => Ok(None),
        }
    }

    /// Fills `buf` from `offset` of the payload; `false` when it must be
    /// read through SQLite instead. A failing source is an error.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<bool, SourceFailure> {
        Ok(self
            .with_map(|map| self.file.read(map, offset, buf))?
            .unwrap_or(false))
    }

    /// Notes that a read of this payload went through SQLite's pager
    /// instead: counted once a payload in the file's stats.
    pub fn read_through_sqlite(&self) {
        if !self.through_sqlite.replace(true) {
            self.file.note_sqlite_payload();
        }
    }

    /// The byte ranges a read of the payload's last `tail` bytes would
    /// fetch with what is held now (see `pager::payload::tail_plan`), for a
    /// caller that fetches many payloads' at once first and asks again
    /// until nothing is left; empty when the payload's place is not proven
    /// or it has no chain.
    pub fn tail_ranges(&self, tail: u64) -> Result<Vec<(u64, u64)>, SourceFailure> {
        Ok(self
            .with_map(|map| Ok(self.file.tail_plan(map, tail)))?
            .unwrap_or_default())
    }
}

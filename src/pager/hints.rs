//! Walk hints: a reader about to walk a BLOB's overflow chain from its
//! start says how far it goes, so that the lazy file's next miss fetches
//! the whole walk at once rather than growing a read head from one page.
//! Kept per thread, apart from any one file: the catalog gives the hint
//! before SQLite makes the reads, and it cannot name the file they reach.

thread_local! {
    /// The bytes of the walk SQLite is about to make (a BLOB read from
    /// its start), for the next miss to fetch at once; 0 for none.
    static EXPECTED_WALK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Whether [`expect_walk`] is heeded (a benchmark turns it off).
    static WALK_HINTS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Heeds [`expect_walk`] or not, on this thread: off, a BLOB's chain is
/// read by the read heads alone (for a benchmark's before and after).
pub fn set_walk_hints(on: bool) {
    WALK_HINTS.with(|w| w.set(on));
    expect_walk(0);
}

/// Says that the reads SQLite makes next on this thread walk about `bytes`
/// of one BLOB's overflow chain from its start (0: no longer). The next
/// miss of a lazy file then fetches that much at once, instead of growing
/// a read head from one page: the chain of a BLOB written in one insert
/// is contiguous. A wrong guess costs one fetch of `bytes`, never a wrong
/// answer. A no-op where no file is read in place.
pub fn expect_walk(bytes: u64) {
    let bytes = if WALK_HINTS.with(|w| w.get()) {
        bytes
    } else {
        0
    };
    EXPECTED_WALK.with(|w| w.set(bytes));
}

/// The hint given, spent by the miss that heeds it (0: none).
pub(crate) fn take_expected_walk() -> u64 {
    EXPECTED_WALK.with(|w| w.replace(0))
}

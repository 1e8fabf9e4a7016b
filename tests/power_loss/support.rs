//! Small helpers every module of this binary uses: a fresh folder, a
//! deadline on a call that might hang, and the generator behind the seeds.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on a thread of its own and waits at most `limit`: a writer
/// that hangs after a cut fails the test, naming the case, instead of
/// hanging the suite.
pub fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => v,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("{what}: no answer within {limit:?}; the writer hangs"),
    }
}

/// A fresh folder for one case. On tmpfs when there is one: the shim, not
/// the disk, decides what survives, so a real fsync would only cost time.
pub fn fresh_dir() -> (tempfile::TempDir, PathBuf) {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let path = dir.path().join("power.dendro");
    (dir, path)
}

/// A small deterministic generator (splitmix64): the seed decides every
/// cut, and any seed, zero included, is a good one.
pub struct Rng(pub u64);

impl Rng {
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n.max(1)
    }
}

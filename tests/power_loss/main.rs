//! Power loss and a full disk, simulated under SQLite itself: a VFS shim
//! over the `unix` VFS (`vfs`) keeps what each file would hold after a
//! reboot and can cut the power at any write or sync, or fill the disk.
//!
//! A SIGKILL (tests/writer/crash.rs) cannot see a missing or misplaced
//! fsync, because the kernel keeps the written pages; this can. The shim
//! is registered as the process's default VFS, which touches every
//! connection in the process, so these tests have a binary of their own
//! and run one at a time (`vfs::exclusive`).
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

#[path = "../common/mod.rs"]
mod common;

mod check;
mod cuts;
mod disk_full;
mod names;
mod rewrites;
mod shim;
mod support;
mod vfs;
mod workload;

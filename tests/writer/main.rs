//! The streaming writer's tests, one binary with a module per rule family:
//! appends, seals, sessions, retention, the files on disk, crashes, and a
//! reader in another process beside the writer. `child` is this binary
//! started again as that other process.
// The crash and live-reader tests write the demo encoding.
#![cfg(all(feature = "write", feature = "demo", not(target_arch = "wasm32")))]

#[path = "../common/mod.rs"]
mod common;
mod support;

mod appends;
mod child;
mod crash;
mod files;
mod frames;
mod live_reader;
mod retention;
mod seals;
mod sessions;
mod typed;

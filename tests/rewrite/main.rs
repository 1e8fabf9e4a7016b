//! Rewrites (issue 11), one binary with a module per rule family: copies
//! and their selections, combining archives, compaction in place and its
//! crash safety, column projection and exact copies, the CLI, and an
//! export read back by DuckDB. `child` is this binary started again as a
//! compaction to kill.
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

#[path = "../common/mod.rs"]
mod common;
mod support;

mod child;
mod cli;
mod combine;
mod compact;
mod copy;
mod crash;
mod export_duckdb;
mod fleet;
mod fleet_engines;
mod fleet_kill;
mod hostile_paths;
mod project;
mod said;

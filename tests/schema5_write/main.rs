//! Writing schema 5 (issue 34, the write half): creating it as an option,
//! continuing a schema-5 archive in schema 5 (a schema-4 one in 4), the
//! documents API, and carrying indexes and documents through copies. Each
//! round trip is read back by the original's 0.6.1 (`original-061`) where
//! that binary runs here.
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

#[path = "../common/mod.rs"]
mod common;

#[cfg(feature = "cli")]
mod cli;
mod create;
mod documents;
mod original;
mod resume;
mod rewrite;

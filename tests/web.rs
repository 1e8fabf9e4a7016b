//! The wasm engine under Node:
//! `wasm-pack test --node -- --no-default-features --features test-hooks --test web`.
//! The same cases run in a browser from `tests/web_browser.rs`. They call
//! the engine's test hooks, so they need feature `test-hooks`.
#![cfg(all(target_arch = "wasm32", feature = "test-hooks"))]

#[path = "common/manifest.rs"]
mod manifest;

#[path = "common/parquet_bytes.rs"]
mod parquet_bytes;

#[path = "web/cases.rs"]
mod cases;

#[path = "web/distributions.rs"]
mod distributions;

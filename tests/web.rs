//! The wasm engine under Node: `wasm-pack test --node -- --test web`.
//! The same cases run in a browser from `tests/web_browser.rs`.
#![cfg(target_arch = "wasm32")]

#[path = "common/manifest.rs"]
mod manifest;

#[path = "web/cases.rs"]
mod cases;

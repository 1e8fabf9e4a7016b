//! The wasm engine in a browser: `wasm-pack test --headless --chrome --
//! --no-default-features --features test-hooks --test web_browser`.
//! Without `run_in_browser`, wasm-bindgen-test would skip every test here
//! and still exit 0.
#![cfg(all(target_arch = "wasm32", feature = "test-hooks"))]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[path = "common/manifest.rs"]
mod manifest;

#[path = "common/parquet_bytes.rs"]
mod parquet_bytes;

#[path = "web/cases.rs"]
mod cases;

#[path = "web/distributions.rs"]
mod distributions;

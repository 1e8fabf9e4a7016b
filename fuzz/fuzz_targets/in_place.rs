#![no_main]
//! Fuzz target `in_place`: see `tests/fuzz_entry/mod.rs`, which
//! `tests/corpus.rs` also replays under plain `cargo test`.

#[path = "../../tests/fuzz_entry/mod.rs"]
mod fuzz_entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_entry::in_place(data));

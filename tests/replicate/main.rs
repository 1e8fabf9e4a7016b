//! Replication's tests, one binary with a module per rule family: the
//! codec's refusals and round trips, the original's stream applied, the
//! round trip of every fixture through publisher and subscriber, the live
//! path over TCP with kills, and a reader written from `WIRE.md` alone.
#![cfg(all(feature = "write", not(target_arch = "wasm32")))]

#[path = "../common/mod.rs"]
mod common;
mod support;

mod codec;
mod converge;
mod frames;
mod interop;
#[cfg(feature = "cli")]
mod kill;
#[cfg(feature = "cli")]
mod kill_snapshot;
mod live;
mod placement_cost;
mod round_trip;
mod rules;
mod slow_peers;
mod snapshot;
mod source_update;
mod staged;
mod tls;
mod wire_doc;

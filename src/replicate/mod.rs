//! Replication (`WIRE.md`): shipping a live archive to another host as a
//! stream of frames.
//!
//! - [`codec`]: the six frames' bytes and their primitives; the numbers
//!   they obey (magic, kinds, limits) are the ground floor's
//!   (`format::wire`). Reader build.
//! - [`stream`]: a whole stream read by a [`FrameReader`] over any byte
//!   source: preamble, framing, and the digest of a stream file. Reader build.
//! - [`publisher`]: tails an archive through the reader and yields frames
//!   by the protocol's rules. Reader build: it neither writes nor spawns.
//! - `subscriber` (feature `write`): applies frames to a local archive
//!   through the streaming writer, idempotently.
//! - `transport` (feature `write`): TCP, files and pipes around the two;
//!   `link` below it (TLS, the subscriber's hello, deadlines), `replica`
//!   (the subscriber's reconnecting loop), `snapshot`
//!   (a new replica from an image of the origin's file) and `tls` (rustls
//!   configurations, self-signed pairs).

pub mod codec;
#[cfg(all(feature = "write", not(target_arch = "wasm32")))]
mod link;
pub mod publisher;
#[cfg(all(feature = "write", not(target_arch = "wasm32")))]
mod replica;
#[cfg(all(feature = "write", not(target_arch = "wasm32")))]
mod retry;
#[cfg(all(feature = "write", not(target_arch = "wasm32")))]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub mod snapshot;
pub mod stream;
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub mod subscriber;
#[cfg(all(feature = "write", not(target_arch = "wasm32")))]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub mod tls;
#[cfg(all(feature = "write", not(target_arch = "wasm32")))]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub mod transport;

pub use crate::format::wire::{
    MAGIC, MAX_FRAME_BYTES, MAX_ROW_BYTES, MAX_SEGMENT_BYTES, PREAMBLE_BYTES, PROTOCOL_VERSION,
};
pub use codec::{Frame, IndexKind, IndexState, WireRow};
pub use publisher::Publisher;
pub use stream::{FrameReader, StreamDigest, Verification};
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub use subscriber::{Applied, Subscriber, VerbatimOnly};

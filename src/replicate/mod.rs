//! Replication (`WIRE.md`): shipping a live archive to another host as a
//! stream of frames.
//!
//! - [`codec`]: the preamble, the framing, the five frames, and a
//!   [`FrameReader`] over any byte source. Reader build.
//! - [`publisher`]: tails an archive through the reader and yields frames
//!   by the protocol's rules. Reader build: it neither writes nor spawns.
//! - `subscriber` (feature `write`): applies frames to a local archive
//!   through the streaming writer, idempotently.
//! - `transport` (feature `write`): TCP, files and pipes around the two.

pub mod codec;
pub mod publisher;
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub mod subscriber;
#[cfg(all(feature = "write", not(target_arch = "wasm32")))]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub mod transport;

pub use codec::{
    Frame, FrameReader, IndexKind, IndexState, StreamDigest, Verification, WireRow, MAGIC,
    MAX_FRAME_BYTES, MAX_ROW_BYTES, MAX_SEGMENT_BYTES, PREAMBLE_BYTES, PROTOCOL_VERSION,
};
pub use publisher::Publisher;
#[cfg(feature = "write")]
#[cfg_attr(docsrs, doc(cfg(feature = "write")))]
pub use subscriber::{Applied, Subscriber, VerbatimOnly};

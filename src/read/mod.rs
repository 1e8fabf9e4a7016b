//! The read path (format §4): describing an archive and reading its
//! streams, each answer from one snapshot.
//!
//! Nothing here writes: the seam with [`crate::segment`] is that segment
//! owns the encoder boundary and decoding, and read only asks it. A live
//! tail is read through the caller's encoder when given, else reported as
//! data not read.

pub mod align;
pub mod cache;
pub mod columns;
mod describe;
pub mod distribution;
pub mod envelope;
pub mod packed;
pub mod prefetch;
pub mod range;
pub mod rates;
pub mod region;
pub mod shift;
pub mod stats;
mod streams;
pub mod window;

pub use describe::{
    describe, describe_listed, describe_sources, describe_with, outline, probe, probe_listed,
    Description, Outline, Probed, SegmentDescription, SourceDescription, StreamDescription,
};
pub use streams::{
    caller_indexes, caller_rows, decode, live_wal_span, read_archive, segment_bytes, stream_range,
    SourceRead, StreamContents, StreamRead, Tail,
};

//! Helpers the replication tests share.

use std::path::Path;
use std::sync::Arc;

use dendro::replicate::{Frame, FrameReader, Publisher, Subscriber};
use dendro::{Archive, SegmentEncoder};

use crate::common::FixtureEncoder;

/// The shared fixture encoder, as the subscriber takes it.
pub fn fixture_encoder() -> Arc<dyn SegmentEncoder> {
    Arc::new(FixtureEncoder::default())
}

/// Every frame of a stream held in memory.
pub fn decode_all(bytes: &[u8]) -> Vec<Frame> {
    let mut reader = FrameReader::new(bytes, "memory").unwrap();
    let mut frames = Vec::new();
    while let Some(frame) = reader.next_frame().unwrap() {
        frames.push(frame);
    }
    frames
}

/// The stream a fresh publisher's first poll makes of `path`.
pub fn catch_up_stream(path: &Path) -> Vec<u8> {
    let mut publisher = Publisher::new(Archive::open(path).unwrap());
    let mut out = dendro::replicate::codec::preamble().to_vec();
    for frame in publisher.poll().unwrap() {
        frame.encode_into(&mut out);
    }
    out
}

/// Applies every frame of `bytes` to the archive at `out` and finishes.
pub fn apply_stream(bytes: &[u8], out: &Path) -> dendro::replicate::Applied {
    let mut subscriber = Subscriber::open(out, fixture_encoder()).unwrap();
    for frame in decode_all(bytes) {
        subscriber.apply(frame).unwrap();
    }
    subscriber.finish().unwrap()
}

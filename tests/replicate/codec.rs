//! The codec: every refusal, truncation at every byte, and round trips.

use crate::common::splitmix::SplitMix64;
use dendro::replicate::codec::{preamble, KIND_SEGMENT};
use dendro::replicate::{Frame, FrameReader, IndexKind, WireRow, MAX_FRAME_BYTES};
use dendro::{Error, Labels, Segment, WireProblem};

fn problem_of(err: Error) -> WireProblem {
    match err {
        Error::Wire { problem, .. } => problem,
        other => panic!("expected a wire error, got {other}"),
    }
}

fn stream_of(frames: &[Frame]) -> Vec<u8> {
    let mut out = preamble().to_vec();
    for f in frames {
        f.encode_into(&mut out);
    }
    out
}

/// One frame of every kind, with fields that exercise each primitive.
pub fn one_of_each() -> Vec<Frame> {
    let labels: Labels = [("host".into(), "h1".into()), ("zone".into(), "é".into())].into();
    vec![
        Frame::Handshake {
            source: 3,
            row: dendro::catalog::NewSource {
                uuid: Some("4d8dd7da-ed6f-4b1c-9040-fcebac272209".into()),
                labels: labels.clone(),
                metadata: labels,
                clock_anchor_wall_ns: -5,
                complete: true,
            },
        },
        Frame::Index {
            source: 3,
            stream: "cpus".into(),
            ts: 9,
            kind: IndexKind::Delta,
            state: (1, u64::MAX),
            blob: vec![0, 1, 2],
        },
        Frame::Rows {
            source: 3,
            seq: 41,
            index_state: (7, 8),
            rows: vec![WireRow {
                stream: "cpu".into(),
                ts: i64::MIN,
                wall_offset: -1,
                row: b"abc".to_vec(),
            }],
        },
        Frame::Segment {
            source: 3,
            stream: "cpu".into(),
            segment: Segment {
                rows: 2,
                first_ts: 1,
                last_ts: 2,
                bytes: b"PAR1....PAR1".to_vec(),
                caller_index: Some(vec![]),
            },
        },
        Frame::ClockOffset {
            source: 3,
            ts: 5,
            offset_ns: -6,
        },
        Frame::SourceUpdate {
            source: 3,
            ts: -7,
            labels: [("host".into(), "h2".into())].into(),
            metadata: Labels::new(),
        },
    ]
}

#[test]
fn a_wrong_magic_is_refused_saying_what_it_saw() {
    let err = FrameReader::new(&b"SQLite format 3\0xx"[..], "in.bin").unwrap_err();
    assert!(err.to_string().contains("in.bin"), "{err}");
    assert!(err.to_string().contains("SQLite forma"), "{err}");
    assert!(matches!(problem_of(err), WireProblem::WrongMagic(seen) if seen == b"SQLite forma"));
}

#[test]
fn an_unknown_version_is_refused_by_number() {
    let mut bytes = preamble().to_vec();
    bytes[12] = 2;
    let err = FrameReader::new(&bytes[..], "in.bin").unwrap_err();
    assert!(err.to_string().contains("version 2"), "{err}");
    assert_eq!(problem_of(err), WireProblem::UnknownVersion(2));
}

#[test]
fn a_length_above_the_limit_is_refused_before_reading_its_body() {
    for len in [MAX_FRAME_BYTES + 1, u32::MAX] {
        let mut bytes = preamble().to_vec();
        bytes.extend_from_slice(&len.to_le_bytes());
        // No body follows: had the reader allocated and read it, it would
        // have reported a truncation rather than the length.
        let mut reader = FrameReader::new(&bytes[..], "in.bin").unwrap();
        assert_eq!(
            problem_of(reader.next_frame().unwrap_err()),
            WireProblem::TooLong(len)
        );
    }
}

/// A stream that hands out its bytes and records the largest buffer a
/// reader offered it: how much the reader set aside at once.
struct Watched {
    bytes: std::io::Cursor<Vec<u8>>,
    largest_offer: usize,
}

impl std::io::Read for Watched {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.largest_offer = self.largest_offer.max(buf.len());
        self.bytes.read(buf)
    }
}

#[test]
fn a_frame_claiming_the_largest_size_costs_what_arrives_not_what_it_claims() {
    // A peer announces a frame of the limit's size and sends 3 bytes of it.
    let mut stream = preamble().to_vec();
    stream.extend_from_slice(&MAX_FRAME_BYTES.to_le_bytes());
    stream.extend_from_slice(&[KIND_SEGMENT, 0, 0]);
    let mut watched = Watched {
        bytes: std::io::Cursor::new(stream),
        largest_offer: 0,
    };
    let mut reader = FrameReader::new(&mut watched, "peer").unwrap();
    let problem = problem_of(reader.next_frame().unwrap_err());
    assert!(
        matches!(problem, WireProblem::Truncated { got: 7, .. }),
        "{problem:?}"
    );
    drop(reader);
    assert!(
        watched.largest_offer <= 1 << 20,
        "{} bytes set aside for a frame of which 3 arrived",
        watched.largest_offer
    );
}

#[test]
fn a_payload_with_bytes_left_over_is_refused() {
    for frame in one_of_each() {
        let mut bytes = frame.encode();
        bytes.push(0);
        let len = u32::from_le_bytes(bytes[..4].try_into().unwrap()) + 1;
        bytes[..4].copy_from_slice(&len.to_le_bytes());
        let mut stream = preamble().to_vec();
        stream.extend(bytes);
        let mut reader = FrameReader::new(&stream[..], "in.bin").unwrap();
        assert_eq!(
            problem_of(reader.next_frame().unwrap_err()),
            WireProblem::TrailingBytes(1),
            "{}",
            frame.kind_name()
        );
    }
}

#[test]
fn a_bool_other_than_zero_or_one_is_refused() {
    let frame = &one_of_each()[0];
    let mut bytes = stream_of(std::slice::from_ref(frame));
    let last = bytes.len() - 1;
    assert_eq!(bytes[last], 1, "complete is the handshake's last byte");
    bytes[last] = 2;
    let mut reader = FrameReader::new(&bytes[..], "in.bin").unwrap();
    assert!(matches!(
        problem_of(reader.next_frame().unwrap_err()),
        WireProblem::BadValue(_)
    ));
}

#[test]
fn a_map_out_of_key_order_is_refused() {
    // Two keys, "b" then "a": a map the encoder never writes.
    let mut payload = 0u32.to_le_bytes().to_vec(); // source
    payload.push(0); // no uuid
    payload.extend(2u32.to_le_bytes());
    for k in ["b", "a"] {
        for s in [k, "v"] {
            payload.extend((s.len() as u32).to_le_bytes());
            payload.extend(s.as_bytes());
        }
    }
    payload.extend(0u32.to_le_bytes()); // metadata
    payload.extend(0i64.to_le_bytes());
    payload.push(0);
    assert!(matches!(
        Frame::decode_payload(1, &payload),
        Err(WireProblem::BadValue(m)) if m.contains("order")
    ));
}

#[test]
fn an_unknown_kind_is_skipped_and_counted() {
    let mut bytes = preamble().to_vec();
    bytes.extend(4u32.to_le_bytes());
    bytes.extend([99, 1, 2, 3]);
    let next = one_of_each().pop().unwrap();
    next.encode_into(&mut bytes);
    let mut reader = FrameReader::new(&bytes[..], "in.bin").unwrap();
    assert_eq!(reader.next_frame().unwrap(), Some(next));
    assert_eq!(reader.skipped_unknown(), 1);
    assert_eq!(reader.next_frame().unwrap(), None);
}

#[test]
fn absent_and_empty_are_different_bytes() {
    let with = |caller_index| Frame::Segment {
        source: 0,
        stream: "s".into(),
        segment: Segment {
            rows: 1,
            first_ts: 0,
            last_ts: 0,
            bytes: vec![],
            caller_index,
        },
    };
    let (absent, empty) = (with(None), with(Some(vec![])));
    assert_ne!(absent.encode(), empty.encode());
    for frame in [absent, empty] {
        let bytes = stream_of(std::slice::from_ref(&frame));
        assert_eq!(crate::support::decode_all(&bytes), vec![frame]);
    }
}

#[test]
fn every_frame_cut_at_every_byte_is_a_truncation_and_yields_nothing() {
    for frame in one_of_each() {
        let whole = stream_of(std::slice::from_ref(&frame));
        for cut in preamble().len() + 1..whole.len() {
            let mut reader = FrameReader::new(&whole[..cut], "cut.bin").unwrap();
            let err = reader.next_frame().unwrap_err();
            assert!(err.to_string().contains("cut.bin"), "{err}");
            assert!(
                matches!(problem_of(err), WireProblem::Truncated { .. }),
                "{} cut at {cut}",
                frame.kind_name()
            );
            assert_eq!(reader.frames(), 0);
        }
    }
    // The preamble itself, cut: a short magic is a wrong magic, a short
    // version a truncation, nothing at all an empty stream.
    let err = FrameReader::new(&preamble()[..0], "cut.bin").unwrap_err();
    assert_eq!(problem_of(err), WireProblem::Empty);
    for cut in 1..preamble().len() {
        let err = FrameReader::new(&preamble()[..cut], "cut.bin").unwrap_err();
        assert!(matches!(
            problem_of(err),
            WireProblem::WrongMagic(_) | WireProblem::Truncated { .. }
        ));
    }
}

/// A deterministic PRNG (SplitMix64), so a failure reproduces.
struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bytes(&mut self) -> Vec<u8> {
        let n = [0, 1, 7, 64, 300][self.below(5) as usize];
        (0..n).map(|_| self.next() as u8).collect()
    }
    fn text(&mut self) -> String {
        let pool = ["", "a", "cpu", "é", "日本", "x\u{0}y", "mem/0"];
        (0..self.below(3))
            .map(|_| pool[self.below(pool.len() as u64) as usize])
            .collect()
    }
    fn map(&mut self) -> Labels {
        (0..self.below(4))
            .map(|_| (self.text(), self.text()))
            .collect()
    }
    fn opt(&mut self) -> Option<Vec<u8>> {
        (self.below(2) == 1).then(|| self.bytes())
    }
    fn frame(&mut self) -> Frame {
        let source = self.next() as u32;
        match self.below(6) {
            0 => Frame::Handshake {
                source,
                row: dendro::catalog::NewSource {
                    uuid: self.opt().map(|b| String::from_utf8_lossy(&b).into_owned()),
                    labels: self.map(),
                    metadata: self.map(),
                    clock_anchor_wall_ns: self.next() as i64,
                    complete: self.below(2) == 1,
                },
            },
            1 => Frame::Index {
                source,
                stream: self.text(),
                ts: self.next() as i64,
                kind: if self.below(2) == 0 {
                    IndexKind::Full
                } else {
                    IndexKind::Delta
                },
                state: (self.next(), self.next()),
                blob: self.bytes(),
            },
            2 => Frame::Rows {
                source,
                seq: self.next(),
                index_state: (self.next(), self.next()),
                rows: (0..self.below(5))
                    .map(|_| WireRow {
                        stream: self.text(),
                        ts: self.next() as i64,
                        wall_offset: self.next() as i64,
                        row: self.bytes(),
                    })
                    .collect(),
            },
            3 => Frame::Segment {
                source,
                stream: self.text(),
                segment: Segment {
                    rows: self.next() as i64,
                    first_ts: self.next() as i64,
                    last_ts: self.next() as i64,
                    bytes: self.bytes(),
                    caller_index: self.opt(),
                },
            },
            4 => Frame::SourceUpdate {
                source,
                ts: self.next() as i64,
                labels: self.map(),
                metadata: self.map(),
            },
            _ => Frame::ClockOffset {
                source,
                ts: self.next() as i64,
                offset_ns: self.next() as i64,
            },
        }
    }
}

#[test]
fn arbitrary_frames_round_trip_and_equal_frames_are_equal_bytes() {
    let mut rng = Rng(SplitMix64(0x5eed));
    let frames: Vec<Frame> = (0..2_000).map(|_| rng.frame()).collect();
    let bytes = stream_of(&frames);
    let decoded = crate::support::decode_all(&bytes);
    assert_eq!(decoded, frames);
    assert_eq!(stream_of(&decoded), bytes, "encoding is deterministic");
    assert!(frames.iter().any(|f| f.kind() == KIND_SEGMENT));
}

/// Kind 6 is `SourceUpdate` as the original's 0.6.1 lays it out:
/// `u32 source, i64 ts, map labels, map metadata`, each map a count then
/// key-ordered (key, value) strings. The bytes are spelled out here, not
/// produced by the codec, so a change of layout fails this test.
#[test]
fn a_source_update_is_kind_six_with_the_originals_field_layout() {
    let frame = Frame::SourceUpdate {
        source: 2,
        ts: -1,
        labels: [("b".into(), "2".into()), ("a".into(), "1".into())].into(),
        metadata: [("k".into(), "v".into())].into(),
    };
    let mut want = Vec::new();
    let payload_len = 4 + 8 + (4 + 2 * (4 + 1 + 4 + 1)) + (4 + 4 + 1 + 4 + 1);
    want.extend((1 + payload_len as u32).to_le_bytes());
    want.push(6);
    want.extend(2u32.to_le_bytes());
    want.extend((-1i64).to_le_bytes());
    want.extend(2u32.to_le_bytes());
    for (k, v) in [("a", "1"), ("b", "2")] {
        want.extend(1u32.to_le_bytes());
        want.extend(k.as_bytes());
        want.extend(1u32.to_le_bytes());
        want.extend(v.as_bytes());
    }
    want.extend(1u32.to_le_bytes());
    want.extend(1u32.to_le_bytes());
    want.extend(b"k");
    want.extend(1u32.to_le_bytes());
    want.extend(b"v");
    assert_eq!(frame.encode(), want);
    assert_eq!(frame.encoded_len(), want.len() as u64);
    assert_eq!(frame.kind_name(), "SourceUpdate");
    assert_eq!(
        crate::support::decode_all(&stream_of(std::slice::from_ref(&frame))),
        vec![frame]
    );
}

/// The smallest `SourceUpdate` (both maps empty) is 20 payload bytes and
/// every map entry adds at least 8, so a kind-6 frame of a digest's size
/// (2 or 26 payload bytes) can only be a digest of a stream file we wrote
/// before kind 6 was the original's. Such a file still checks.
#[test]
fn a_stream_file_whose_digest_frames_are_kind_six_still_checks() {
    use dendro::replicate::{StreamDigest, Verification};
    let frames = one_of_each();
    let mut bytes = preamble().to_vec();
    let mut announce = StreamDigest::announce_frame();
    assert_eq!(announce[4], dendro::replicate::codec::KIND_DIGEST);
    announce[4] = 6;
    bytes.extend(&announce);
    for f in &frames {
        f.encode_into(&mut bytes);
    }
    let mut digest = StreamDigest::default();
    digest.update(&bytes);
    let mut trailer = digest.trailer_frame();
    trailer[4] = 6;
    bytes.extend(&trailer);
    let mut reader = FrameReader::new(&bytes[..], "old.bin").unwrap();
    let mut got = Vec::new();
    while let Some(f) = reader.next_frame().unwrap() {
        got.push(f);
    }
    assert_eq!(got, frames);
    assert_eq!(reader.verification(), Verification::Verified);
    // A flipped byte in such a file is still caught.
    let mut damaged = bytes.clone();
    let at = damaged.len() - 40;
    damaged[at] ^= 1;
    let mut reader = FrameReader::new(&damaged[..], "old.bin").unwrap();
    assert!(reader.check_to_end().is_err());
}

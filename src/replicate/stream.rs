//! A replication stream read whole (`WIRE.md` §1, §2, §4.6): the preamble
//! checked, frames read one length-prefixed body at a time without
//! trusting a claimed length, kinds this build does not know skipped, and
//! the digest that ends a stream file checked against every byte before
//! it. The frames' own bytes are the codec's (`codec.rs`); this file only
//! cuts the stream into them.

use std::io::Read;

use super::codec::{Cursor, Frame};
use crate::error::{Error, Result, WireProblem};
use crate::format::wire::{
    DIGEST_PAYLOAD_SIZES, KIND_CLOCK_OFFSET, KIND_DIGEST, KIND_DIGEST_BEFORE_SOURCE_UPDATE,
    KIND_HANDSHAKE, MAGIC, MAX_FRAME_BYTES, PREAMBLE_BYTES, PROTOCOL_VERSION,
};

/// How much of a frame's body is set aside before its bytes arrive; the
/// rest grows as they do.
const FIRST_BODY_STEP: usize = 1 << 20;

/// The running digest of a stream file (`WIRE.md` §4.6): FNV-1a 64 twice,
/// from two different bases, over every byte, and the count of bytes. Any
/// one changed byte changes both halves (each FNV-1a step is a bijection of
/// the running value), so a flipped byte is always caught; the second half
/// makes a chance match of several changes unlikely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamDigest {
    h0: u64,
    h1: u64,
    bytes: u64,
}

/// The only digest algorithm this build writes and checks.
pub const DIGEST_FNV1A_2X64: u8 = 1;
const DIGEST_ANNOUNCE: u8 = 0;
const DIGEST_TRAILER: u8 = 1;
/// A digest frame's payload: role, algorithm, byte count, two halves.
const DIGEST_PAYLOAD: usize = 1 + 1 + 8 + 8 + 8;

impl Default for StreamDigest {
    fn default() -> Self {
        StreamDigest {
            h0: 0xcbf2_9ce4_8422_2325,
            h1: 0x6c62_272e_07bb_0142,
            bytes: 0,
        }
    }
}

impl StreamDigest {
    /// Takes in more of the stream.
    pub fn update(&mut self, data: &[u8]) {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let (mut h0, mut h1) = (self.h0, self.h1);
        for &b in data {
            h0 = (h0 ^ b as u64).wrapping_mul(PRIME);
            h1 = (h1 ^ b as u64).wrapping_mul(PRIME);
        }
        self.h0 = h0;
        self.h1 = h1;
        self.bytes += data.len() as u64;
    }

    /// Bytes taken in so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The frame that, first after the preamble, says the stream ends with
    /// a digest frame.
    pub fn announce_frame() -> Vec<u8> {
        let mut out = 3u32.to_le_bytes().to_vec();
        out.extend_from_slice(&[KIND_DIGEST, DIGEST_ANNOUNCE, DIGEST_FNV1A_2X64]);
        out
    }

    /// The frame that ends the stream: this digest of everything before it.
    pub fn trailer_frame(&self) -> Vec<u8> {
        let mut out = ((1 + DIGEST_PAYLOAD) as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&[KIND_DIGEST, DIGEST_TRAILER, DIGEST_FNV1A_2X64]);
        out.extend_from_slice(&self.bytes.to_le_bytes());
        out.extend_from_slice(&self.h0.to_le_bytes());
        out.extend_from_slice(&self.h1.to_le_bytes());
        out
    }
}

/// Whether a stream read to its end was checked against a digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// It carried a digest (`WIRE.md` §4.6) and every byte matched it.
    Verified,
    /// It carried none, as streams of older publishers and live streams
    /// do: only its framing was checked.
    Unverified,
}

/// Reads frames off any byte source: checks the preamble first, then
/// yields one frame at a time, skipping (and counting) kinds it does not
/// know. The end of the source between frames is the end of the stream;
/// inside a frame it is [`WireProblem::Truncated`].
pub struct FrameReader<R> {
    input: R,
    name: String,
    offset: u64,
    skipped_unknown: u64,
    frames: u64,
    /// Frames of any kind read, digest frames included.
    raw_frames: u64,
    /// The running digest, while the stream may still end with one: from
    /// the preamble on, given up if the first frame is a known kind (no
    /// announcement), finished once the digest frame is checked.
    digest: Option<StreamDigest>,
    announced: bool,
    checked: bool,
}

impl<R> std::fmt::Debug for FrameReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameReader")
            .field("name", &self.name)
            .field("offset", &self.offset)
            .field("frames", &self.frames)
            .field("skipped_unknown", &self.skipped_unknown)
            .finish()
    }
}

impl<R: std::io::Read> FrameReader<R> {
    /// Reads and checks the preamble of `input`, named `name` in errors.
    pub fn new(mut input: R, name: &str) -> Result<FrameReader<R>> {
        let mut head = [0u8; PREAMBLE_BYTES];
        let got = read_full(&mut input, &mut head)
            .map_err(|e| Error::io(name, "cannot read the preamble", e))?;
        let fail = |problem| Error::Wire {
            file: name.to_string(),
            offset: 0,
            problem,
        };
        if got == 0 {
            return Err(fail(WireProblem::Empty));
        }
        if got < MAGIC.len() || head[..MAGIC.len()] != MAGIC {
            return Err(fail(WireProblem::WrongMagic(
                head[..got.min(MAGIC.len())].to_vec(),
            )));
        }
        if got < PREAMBLE_BYTES {
            return Err(fail(WireProblem::Truncated {
                needed: PREAMBLE_BYTES,
                got,
            }));
        }
        let version = u16::from_le_bytes([head[12], head[13]]);
        if version != PROTOCOL_VERSION {
            return Err(fail(WireProblem::UnknownVersion(version)));
        }
        let mut digest = StreamDigest::default();
        digest.update(&head);
        Ok(FrameReader {
            input,
            name: name.to_string(),
            offset: PREAMBLE_BYTES as u64,
            skipped_unknown: 0,
            frames: 0,
            raw_frames: 0,
            digest: Some(digest),
            announced: false,
            checked: false,
        })
    }

    /// The next frame, `None` at a clean end of the stream; frames of
    /// kinds this reader does not know are skipped and counted.
    pub fn next_frame(&mut self) -> Result<Option<Frame>> {
        loop {
            match self.next_item()? {
                None => return Ok(None),
                Some(Item::Frame(frame)) => return Ok(Some(frame)),
                Some(Item::Other { .. }) => self.skipped_unknown += 1,
            }
        }
    }

    /// The next frame, or one of a kind this reader does not decode,
    /// handed out rather than skipped: for a transport that carries frames
    /// of its own between the protocol's (a snapshot announcement). `None`
    /// at a clean end of the stream.
    pub fn next_item(&mut self) -> Result<Option<Item>> {
        let start = self.offset;
        let Some(mut body) = self.next_raw()? else {
            return Ok(None);
        };
        let fail = |problem| Error::Wire {
            file: self.name.clone(),
            offset: start,
            problem,
        };
        match Frame::decode_payload(body[0], &body[1..]).map_err(fail)? {
            Some(frame) => {
                self.frames += 1;
                Ok(Some(Item::Frame(frame)))
            }
            None => {
                let kind = body.remove(0);
                Ok(Some(Item::Other {
                    kind,
                    payload: body,
                }))
            }
        }
    }

    /// Reads exactly `len` bytes that the transport carries outside any
    /// frame (a snapshot image), handing them to `sink` in pieces of at
    /// most 1 MiB; only a piece is ever in memory. A stream that ends
    /// first is refused, saying how much arrived.
    pub fn read_raw(&mut self, len: u64, mut sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let start = self.offset;
        let mut piece = vec![0u8; RAW_PIECE_BYTES.min(len as usize)];
        let mut got = 0u64;
        while got < len {
            let want = (len - got).min(piece.len() as u64) as usize;
            let n = match self.input.read(&mut piece[..want]) {
                Ok(0) => {
                    return Err(Error::Wire {
                        file: self.name.clone(),
                        offset: start,
                        problem: WireProblem::BadValue(format!(
                            "the stream ends inside a snapshot image: {got} of its {len} bytes \
                             arrived"
                        )),
                    })
                }
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.name, "cannot read a snapshot image", e)),
            };
            sink(&piece[..n])?;
            got += n as u64;
            self.offset += n as u64;
        }
        Ok(())
    }

    /// Reads the whole stream without decoding a frame, checking its
    /// framing and, when it carries one, its digest: the pass that lets a
    /// file be refused before anything of it is applied.
    pub fn check_to_end(&mut self) -> Result<Verification> {
        while self.next_raw()?.is_some() {}
        Ok(self.verification())
    }

    /// At the end of the stream: whether its digest was checked.
    pub fn verification(&self) -> Verification {
        match self.checked {
            true => Verification::Verified,
            false => Verification::Unverified,
        }
    }

    /// The next frame's body (kind and payload) of a kind other than
    /// `Digest`, which is checked here and not handed out.
    fn next_raw(&mut self) -> Result<Option<Vec<u8>>> {
        loop {
            let start = self.offset;
            let fail = |problem| Error::Wire {
                file: self.name.clone(),
                offset: start,
                problem,
            };
            let mut len = [0u8; 4];
            let got = read_full(&mut self.input, &mut len)
                .map_err(|e| Error::io(&self.name, "cannot read a frame", e))?;
            if got == 0 {
                if self.announced && !self.checked {
                    return Err(fail(WireProblem::DigestMissing));
                }
                return Ok(None);
            }
            if got < 4 {
                return Err(fail(WireProblem::Truncated { needed: 4, got }));
            }
            let len = u32::from_le_bytes(len);
            if len == 0 {
                return Err(fail(WireProblem::BadValue(
                    "a frame of length 0 has no kind".into(),
                )));
            }
            if len > MAX_FRAME_BYTES {
                return Err(fail(WireProblem::TooLong(len)));
            }
            // The body grows as its bytes arrive: a peer that claims a
            // frame of the largest size and then sends nothing costs a
            // first step, not the whole claim.
            let mut body = Vec::with_capacity((len as usize).min(FIRST_BODY_STEP));
            let got = (&mut self.input)
                .take(len as u64)
                .read_to_end(&mut body)
                .map_err(|e| Error::io(&self.name, "cannot read a frame", e))?;
            if got < len as usize {
                return Err(fail(WireProblem::Truncated {
                    needed: 4 + len as usize,
                    got: 4 + got,
                }));
            }
            self.offset += 4 + len as u64;
            let first = self.raw_frames == 0;
            self.raw_frames += 1;
            if self.checked {
                return Err(fail(WireProblem::BadValue(
                    "a frame follows the stream's digest, which ends it".into(),
                )));
            }
            // A digest-sized kind-6 frame is a digest of a stream file we
            // wrote before kind 6 became `SourceUpdate` (`format::wire`).
            let digest_kind = body[0] == KIND_DIGEST
                || (body[0] == KIND_DIGEST_BEFORE_SOURCE_UPDATE
                    && DIGEST_PAYLOAD_SIZES.contains(&(body.len() - 1)));
            if digest_kind {
                match self.digest_frame(&body[1..], first) {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(problem) => {
                        return Err(Error::Wire {
                            file: self.name.clone(),
                            offset: start,
                            problem,
                        })
                    }
                }
            }
            let opens_live =
                (KIND_HANDSHAKE..=KIND_CLOCK_OFFSET).contains(&body[0]) || body[0] == KIND_SNAPSHOT;
            if first && opens_live {
                // No announcement: a stream without a digest.
                self.digest = None;
            }
            if let Some(digest) = &mut self.digest {
                digest.update(&len.to_le_bytes());
                digest.update(&body);
            }
            if !digest_kind {
                return Ok(Some(body));
            }
        }
    }

    /// Checks a `Digest` frame's payload. `true` when it was the trailer
    /// (checked, and not part of what it covers).
    fn digest_frame(
        &mut self,
        payload: &[u8],
        first: bool,
    ) -> std::result::Result<bool, WireProblem> {
        let mut r = Cursor::new(payload);
        let role = r.u8()?;
        let algorithm = r.u8()?;
        if algorithm != DIGEST_FNV1A_2X64 {
            return Err(WireProblem::BadValue(format!(
                "digest algorithm {algorithm} is not one this build checks"
            )));
        }
        match role {
            DIGEST_ANNOUNCE if first => {
                if r.left() > 0 {
                    return Err(WireProblem::TrailingBytes(r.left()));
                }
                self.announced = true;
                Ok(false)
            }
            DIGEST_ANNOUNCE => Err(WireProblem::BadValue(
                "a digest announcement that is not the first frame".into(),
            )),
            DIGEST_TRAILER => {
                let claimed = StreamDigest {
                    bytes: r.u64()?,
                    h0: r.u64()?,
                    h1: r.u64()?,
                };
                if r.left() > 0 {
                    return Err(WireProblem::TrailingBytes(r.left()));
                }
                let Some(ours) = self.digest.take() else {
                    return Err(WireProblem::BadValue(
                        "a digest frame in a stream whose first frame did not announce one".into(),
                    ));
                };
                if ours != claimed {
                    return Err(WireProblem::DigestMismatch);
                }
                self.checked = true;
                Ok(true)
            }
            other => Err(WireProblem::BadValue(format!("digest frame role {other}"))),
        }
    }

    /// Frames of unknown kinds skipped so far.
    pub fn skipped_unknown(&self) -> u64 {
        self.skipped_unknown
    }

    /// Frames decoded so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Bytes consumed so far, the preamble included.
    pub fn bytes_read(&self) -> u64 {
        self.offset
    }
}

/// What [`FrameReader::next_item`] hands out.
#[derive(Debug)]
pub enum Item {
    /// A frame of the protocol.
    Frame(Frame),
    /// A frame of a kind the protocol does not define: its kind byte and
    /// payload, unread.
    Other {
        /// The kind byte.
        kind: u8,
        /// The payload after the kind byte.
        payload: Vec<u8>,
    },
}

/// The kind of our TCP transport's snapshot announcement (`WIRE.md` §6.2):
/// sent only to a subscriber that asked for a snapshot, never in a stream
/// file. A stream that starts with it carries no digest frame.
pub const KIND_SNAPSHOT: u8 = 0xF7;

/// The most [`FrameReader::read_raw`] holds at once.
const RAW_PIECE_BYTES: usize = 1 << 20;

/// Reads until `buf` is full or the input ends; how many bytes it got.
fn read_full(input: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

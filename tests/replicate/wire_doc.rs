//! A reader written from `WIRE.md` alone, sharing no code with the codec,
//! decodes a stream our publisher wrote: the bytes are what the document
//! says they are.

use std::collections::BTreeMap;

use dendro::Archive;

use crate::common::{copy_fixture, fixtures_dir};
use crate::support::catch_up_stream;

/// Reads little-endian fields off a payload, as `WIRE.md` §3 lays them out.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().unwrap())
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take(8).try_into().unwrap())
    }
    fn byte(&mut self) -> u8 {
        self.take(1)[0]
    }
    fn bytes(&mut self) -> &'a [u8] {
        let n = self.u32() as usize;
        self.take(n)
    }
    fn text(&mut self) -> String {
        String::from_utf8(self.bytes().to_vec()).unwrap()
    }
    fn optional(&mut self) -> Option<&'a [u8]> {
        match self.byte() {
            0 => None,
            1 => Some(self.bytes()),
            b => panic!("presence byte {b}"),
        }
    }
    fn map(&mut self) -> BTreeMap<String, String> {
        (0..self.u32())
            .map(|_| (self.text(), self.text()))
            .collect()
    }
}

#[derive(Default, Debug)]
struct Seen {
    kinds: BTreeMap<u8, usize>,
    uuids: Vec<String>,
    segment_bytes: Vec<Vec<u8>>,
    caller_indexes: usize,
    index_blobs: Vec<Vec<u8>>,
    rows: usize,
    offsets: usize,
}

fn read_as_documented(stream: &[u8]) -> Seen {
    assert_eq!(&stream[..12], b"dendro-repl\0", "§1: the magic");
    assert_eq!(&stream[12..14], &[1, 0], "§1: version 1, u16 LE");
    let mut rest = &stream[14..];
    let mut seen = Seen::default();
    while !rest.is_empty() {
        let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
        let kind = rest[4];
        let mut f = Fields(&rest[5..4 + len]);
        rest = &rest[4 + len..];
        *seen.kinds.entry(kind).or_default() += 1;
        let _source = f.u32();
        match kind {
            1 => {
                let uuid = f.optional().map(|b| String::from_utf8(b.to_vec()).unwrap());
                let (_labels, metadata) = (f.map(), f.map());
                assert!(metadata.contains_key("encoder"));
                let (_anchor, complete) = (f.i64(), f.byte());
                assert!(complete <= 1);
                seen.uuids.extend(uuid);
            }
            2 => {
                let (_name, _ts, kind) = (f.text(), f.i64(), f.byte());
                assert!(kind <= 1);
                let _state = (f.u64(), f.u64());
                seen.index_blobs.push(f.bytes().to_vec());
            }
            3 => {
                let (_seq, _state) = (f.u64(), (f.u64(), f.u64()));
                for _ in 0..f.u32() {
                    let (_stream, _ts, _wall) = (f.text(), f.i64(), f.i64());
                    f.bytes();
                    seen.rows += 1;
                }
            }
            4 => {
                let (_stream, _rows, _first, _last) = (f.text(), f.u64(), f.i64(), f.i64());
                seen.segment_bytes.push(f.bytes().to_vec());
                seen.caller_indexes += f.optional().is_some() as usize;
            }
            5 => {
                let (_ts, _offset) = (f.i64(), f.i64());
                seen.offsets += 1;
            }
            other => panic!("kind {other} is not in WIRE.md §4"),
        }
        assert!(
            f.0.is_empty(),
            "§2: a payload is used up exactly (kind {kind})"
        );
    }
    seen
}

#[test]
fn a_reader_written_from_wire_md_decodes_our_publishers_stream() {
    let (_dir, copy) = copy_fixture(&fixtures_dir().join("g_caller_index.dendro"));
    let seen = read_as_documented(&catch_up_stream(&copy));
    let archive = Archive::open(&copy).unwrap();
    archive
        .read_snapshot(|snap| {
            let sources = snap.sources()?;
            let uuids: Vec<String> = sources
                .iter()
                .filter_map(|s| s.source.uuid.clone())
                .collect();
            assert_eq!(seen.uuids, uuids);
            let mut segments = Vec::new();
            let mut with_index = 0;
            let (mut blobs, mut rows, mut offsets) = (Vec::new(), 0, 0);
            for s in &sources {
                for stream in snap.streams(s.id)? {
                    for r in snap.segments(s.id, &stream)? {
                        segments.push(snap.segment_bytes(s.id, &stream, r.seq)?);
                        with_index += r.caller_index as usize;
                    }
                    rows += snap.live_wal_rows(s.id, &stream)?.len();
                }
                for (id, name, _) in snap.caller_row_counts()? {
                    if id == s.id {
                        blobs.extend(
                            snap.caller_rows(id, &name, i64::MIN, i64::MAX)?
                                .into_iter()
                                .map(|r| r.blob),
                        );
                    }
                }
                offsets += snap.clock_offsets(s.id)?.len();
            }
            assert_eq!(seen.segment_bytes, segments, "segments byte for byte");
            assert_eq!(seen.caller_indexes, with_index);
            assert!(
                with_index > 0 && !blobs.is_empty(),
                "the fixture exercises both"
            );
            assert_eq!(seen.index_blobs, blobs);
            assert_eq!(seen.rows, rows);
            assert_eq!(seen.offsets, offsets);
            assert_eq!(seen.kinds[&3], sources.len(), "one Rows frame per source");
            Ok(())
        })
        .unwrap();
}

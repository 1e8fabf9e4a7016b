//! Parquet segments written byte by byte, Thrift footer and page headers
//! included, so a test can say exactly what a hostile file claims: an
//! honest layout by default, and every number overridable.
//!
//! Shared by the native tests (`tests/hostile.rs`, `tests/corpus.rs`) and
//! the engine's wasm tests (`tests/web/cases.rs`).
#![allow(dead_code)]

/// Compact-protocol wire types.
const I32: u8 = 5;
const I64: u8 = 6;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const STRUCT: u8 = 12;

/// Parquet codec numbers.
pub const UNCOMPRESSED: i32 = 0;
/// LZ4 without framing, what dendro writes.
pub const LZ4_RAW: i32 = 7;

/// A Thrift compact-protocol writer, just wide enough for these tests.
#[derive(Default)]
pub struct Thrift {
    /// The bytes so far.
    pub out: Vec<u8>,
    last: Vec<i16>,
}

impl Thrift {
    /// A writer at the top level of a struct.
    pub fn new() -> Self {
        Thrift {
            out: Vec::new(),
            last: vec![0],
        }
    }

    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    fn header(&mut self, id: i16, kind: u8) {
        let last = *self.last.last().expect("inside a struct");
        let delta = id - last;
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | kind);
        } else {
            self.out.push(kind);
            let id = i64::from(id);
            self.zigzag(id);
        }
        *self.last.last_mut().unwrap() = id;
    }

    /// An i32 field (enums too).
    pub fn i32(&mut self, id: i16, v: i32) -> &mut Self {
        self.header(id, I32);
        self.zigzag(i64::from(v));
        self
    }

    /// An i64 field.
    pub fn i64(&mut self, id: i16, v: i64) -> &mut Self {
        self.header(id, I64);
        self.zigzag(v);
        self
    }

    /// A string or binary field.
    pub fn binary(&mut self, id: i16, v: &[u8]) -> &mut Self {
        self.header(id, BINARY);
        self.varint(v.len() as u64);
        self.out.extend_from_slice(v);
        self
    }

    /// Opens a struct field; close it with [`Thrift::end`].
    pub fn begin(&mut self, id: i16) -> &mut Self {
        self.header(id, STRUCT);
        self.last.push(0);
        self
    }

    /// Closes the innermost struct (or the top level).
    pub fn end(&mut self) -> &mut Self {
        self.out.push(0);
        self.last.pop();
        self
    }

    /// A list header of `len` elements of wire type `element`, claiming
    /// whatever `len` says; the caller writes the elements.
    pub fn list(&mut self, id: i16, element: u8, len: u64) -> &mut Self {
        self.header(id, LIST);
        if len < 15 {
            self.out.push(((len as u8) << 4) | element);
        } else {
            self.out.push(0xf0 | element);
            self.varint(len);
        }
        self
    }

    /// A list of `len` structs; open each element with [`Thrift::element`].
    pub fn structs(&mut self, id: i16, len: u64) -> &mut Self {
        self.list(id, STRUCT, len)
    }

    /// Opens one struct element of a list; close it with [`Thrift::end`].
    pub fn element(&mut self) -> &mut Self {
        self.last.push(0);
        self
    }

    /// A list of i32 elements.
    pub fn i32s(&mut self, id: i16, values: &[i32]) -> &mut Self {
        self.list(id, I32, values.len() as u64);
        for &v in values {
            self.zigzag(i64::from(v));
        }
        self
    }

    /// A list of strings.
    pub fn strings(&mut self, id: i16, values: &[&str]) -> &mut Self {
        self.list(id, BINARY, values.len() as u64);
        for v in values {
            self.varint(v.len() as u64);
            self.out.extend_from_slice(v.as_bytes());
        }
        self
    }

    /// An unknown field (id 100) holding structs nested `depth` deep.
    pub fn nested_structs(&mut self, depth: usize) -> &mut Self {
        self.header(100, STRUCT);
        for _ in 1..depth {
            self.out.push(0x10 | STRUCT);
        }
        self.out.extend(std::iter::repeat_n(0u8, depth));
        self
    }
}

/// An LZ4 block holding `data` as one run of literals: valid LZ4, no
/// compression, so a test can use the LZ4_RAW codec without an encoder.
pub fn lz4_literals(data: &[u8]) -> Vec<u8> {
    let mut out = vec![(data.len().min(15) as u8) << 4];
    if data.len() >= 15 {
        let mut rest = data.len() - 15;
        while rest >= 255 {
            out.push(255);
            rest -= 255;
        }
        out.push(rest as u8);
    }
    out.extend_from_slice(data);
    out
}

/// One page: its header's claims and its stored bytes.
#[derive(Clone, Debug)]
pub struct Page {
    /// 0 a v1 data page, 2 a dictionary page.
    pub kind: i32,
    /// The declared decompressed size.
    pub uncompressed: i32,
    /// The stored bytes (their length is the compressed size unless
    /// `compressed` says otherwise).
    pub data: Vec<u8>,
    /// A compressed size to claim instead of the true one.
    pub compressed: Option<i32>,
    /// The page's value count.
    pub num_values: i32,
}

/// What a hand-made segment claims; [`Plan::honest`] describes a sound one.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `ts` values of the single INT64 column.
    pub values: Vec<i64>,
    /// The column chunk's codec.
    pub codec: i32,
    /// The pages of the chunk (default: one PLAIN page of `values`).
    pub pages: Vec<Page>,
    /// The chunk's declared total uncompressed size, instead of the sum.
    pub chunk_uncompressed: Option<i64>,
    /// `num_children` of the schema's root, instead of 1.
    pub root_children: Option<i32>,
    /// Groups of one child each between the root and the leaf.
    pub nesting: usize,
    /// How many row groups the list claims, instead of 1.
    pub row_groups_claimed: Option<u64>,
    /// The row group's `num_rows`, instead of the values' count.
    pub group_rows: Option<i64>,
    /// Thrift structs nested this deep in an unknown footer field.
    pub unknown_nesting: usize,
    /// Filler bytes between the leading magic and the first page.
    pub pad: usize,
    /// A second footer hidden in the first: the footer's `version` (an
    /// i32) arrives as a string holding this plan's footer fields. A
    /// reader that skips the string by its wire type reads this plan's
    /// footer; the parquet crate reads `version` as an i32 whatever the
    /// wire says, goes on into the string, and reads the hidden one.
    pub hidden: Option<Box<Plan>>,
    /// The column's values are OPTIONAL (its pages then carry definition
    /// levels), instead of REQUIRED.
    pub optional: bool,
    /// The rows the file and row group claim and the values the chunk
    /// does, instead of `values`' count.
    pub claimed_values: Option<i64>,
}

impl Plan {
    /// One row group, one required INT64 column `ts` holding `values`,
    /// one PLAIN data page, compressed with `codec` (UNCOMPRESSED or
    /// LZ4_RAW).
    pub fn honest(values: &[i64], codec: i32) -> Plan {
        let plain: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let data = if codec == LZ4_RAW {
            lz4_literals(&plain)
        } else {
            plain.clone()
        };
        Plan {
            values: values.to_vec(),
            codec,
            pages: vec![Page {
                kind: 0,
                uncompressed: plain.len() as i32,
                data,
                compressed: None,
                num_values: values.len() as i32,
            }],
            chunk_uncompressed: None,
            root_children: None,
            nesting: 0,
            row_groups_claimed: None,
            unknown_nesting: 0,
            hidden: None,
            group_rows: None,
            pad: 0,
            optional: false,
            claimed_values: None,
        }
    }

    /// An OPTIONAL `ts` column of `n` nulls in one uncompressed v1 page:
    /// its definition levels one RLE run of zeros, a few bytes whatever
    /// `n` is, and no values.
    pub fn nulls(n: i32) -> Plan {
        let mut run = Thrift::new();
        run.varint((n as u64) << 1);
        run.out.push(0); // the level the run repeats
        let mut data = (run.out.len() as u32).to_le_bytes().to_vec();
        data.extend_from_slice(&run.out);
        let mut plan = Plan::honest(&[], UNCOMPRESSED);
        plan.pages = vec![Page {
            kind: 0,
            uncompressed: data.len() as i32,
            data,
            compressed: None,
            num_values: n,
        }];
        plan.optional = true;
        plan.claimed_values = Some(i64::from(n));
        plan
    }

    /// The segment's bytes, padded to exactly `len` so they can replace a
    /// stored segment of that length in place.
    pub fn build_padded(&self, len: usize) -> Vec<u8> {
        let bare = self.build();
        assert!(
            bare.len() <= len,
            "{} bytes do not fit in {len}",
            bare.len()
        );
        let mut padded = self.clone();
        padded.pad = len - bare.len();
        // Offsets grow with the padding, and their varints may grow a byte.
        for _ in 0..8 {
            let out = padded.build();
            match out.len().cmp(&len) {
                std::cmp::Ordering::Equal => return out,
                std::cmp::Ordering::Greater => padded.pad -= 1,
                std::cmp::Ordering::Less => padded.pad += 1,
            }
        }
        panic!("no padding makes the segment exactly {len} bytes");
    }

    /// The segment's bytes.
    pub fn build(&self) -> Vec<u8> {
        let mut file = b"PAR1".to_vec();
        file.resize(4 + self.pad, 0);
        let start = file.len() as i64;
        let mut uncompressed = 0i64;
        for page in &self.pages {
            let mut h = Thrift::new();
            h.i32(1, page.kind)
                .i32(2, page.uncompressed)
                .i32(3, page.compressed.unwrap_or(page.data.len() as i32));
            if page.kind == 2 {
                h.begin(7).i32(1, page.num_values).i32(2, 0).end();
            } else {
                h.begin(5)
                    .i32(1, page.num_values)
                    .i32(2, 0)
                    .i32(3, 3)
                    .i32(4, 3)
                    .end();
            }
            h.end();
            uncompressed += h.out.len() as i64 + i64::from(page.uncompressed);
            file.extend_from_slice(&h.out);
            file.extend_from_slice(&page.data);
        }
        let compressed = file.len() as i64 - start;
        let has_dictionary = self.pages.first().is_some_and(|p| p.kind == 2);
        let data_offset = if has_dictionary {
            let dict = &self.pages[0];
            // Data pages start after the dictionary page and its header.
            let mut h = Thrift::new();
            h.i32(1, dict.kind)
                .i32(2, dict.uncompressed)
                .i32(3, dict.compressed.unwrap_or(dict.data.len() as i32));
            h.begin(7).i32(1, dict.num_values).i32(2, 0).end().end();
            start + (h.out.len() + dict.data.len()) as i64
        } else {
            start
        };

        let mut f = Thrift::new();
        match &self.hidden {
            Some(hidden) => {
                let file = hidden.build();
                let end = file.len() - 8;
                let len = u32::from_le_bytes(file[end..end + 4].try_into().unwrap()) as usize;
                let footer = &file[end - len..end];
                // Its own `version` field (i32 2) first; the rest, read
                // after a field 1, is the footer the crate would see.
                assert_eq!(footer[..2], [0x15, 0x04]);
                f.binary(1, &footer[2..]);
            }
            None => {
                f.i32(1, 2);
            }
        }
        let elements = 2 + self.nesting as u64;
        f.structs(2, elements);
        f.element()
            .binary(4, b"schema")
            .i32(5, self.root_children.unwrap_or(1))
            .end();
        for level in 0..self.nesting {
            f.element()
                .i32(3, 0)
                .binary(4, format!("g{level}").as_bytes())
                .i32(5, 1)
                .end();
        }
        let repetition = i32::from(self.optional);
        f.element()
            .i32(1, 2)
            .i32(3, repetition)
            .binary(4, b"ts")
            .end();
        let values = self.claimed_values.unwrap_or(self.values.len() as i64);
        f.i64(3, values);
        f.structs(4, self.row_groups_claimed.unwrap_or(1));
        f.element();
        f.structs(1, 1).element().i64(2, start).begin(3);
        f.i32(1, 2).i32s(2, &[0, 3]);
        let mut path: Vec<String> = (0..self.nesting).map(|l| format!("g{l}")).collect();
        path.push("ts".into());
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        f.strings(3, &path)
            .i32(4, self.codec)
            .i64(5, values)
            .i64(6, self.chunk_uncompressed.unwrap_or(uncompressed))
            .i64(7, compressed)
            .i64(9, data_offset);
        if has_dictionary {
            f.i64(11, start);
        }
        f.end().end(); // metadata, chunk
        f.i64(2, uncompressed)
            .i64(3, self.group_rows.unwrap_or(values))
            .end(); // row group
        if self.unknown_nesting > 0 {
            f.nested_structs(self.unknown_nesting);
        }
        f.end();
        file.extend_from_slice(&f.out);
        file.extend_from_slice(&(f.out.len() as u32).to_le_bytes());
        file.extend_from_slice(b"PAR1");
        file
    }
}

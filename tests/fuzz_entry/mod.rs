//! The entry points the fuzz targets (`fuzz/`) drive and `tests/corpus.rs`
//! replays: one function per target, taking the raw input. Each runs the
//! product's own code on the input and asserts what must hold whatever the
//! bytes are (round trips agree, errors name the file); anything else is an
//! `Err` the target ignores, since refusing bad input is the point. A panic
//! anywhere (even one the product's `catch_unwind` would catch natively)
//! is a finding: libFuzzer's panic hook aborts on it, and the replay test
//! counts it with a hook of its own.
//!
//! This file is shared by path, so it uses only the crate's own
//! dependencies (`rusqlite` to build catalogs from the input).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use dendro::catalog::{Labels, SegmentRecord, WalRow};
use dendro::container::{Archive, APPLICATION_ID, PAGE_SIZE, SCHEMA_SQL, SCHEMA_VERSION};
use dendro::read::envelope::Envelope;
use dendro::read::range::{
    decode_for_range, decode_range_bytes, read_range_with, RangeReader, RangeRequest, Stats,
};
use dendro::replicate::{Frame, FrameReader};
use dendro::typed::{self, Column, ColumnType, Schema, TypedEncoder, Value};
use dendro::SegmentEncoder;

/// The name every archive built here is opened under; errors must say it.
pub const FILE: &str = "fuzz-input.dendro";

/// One target's entry point.
pub type Target = fn(&[u8]);

/// The targets, by the names `fuzz/fuzz_targets/` and `tests/corpus/` use.
pub const TARGETS: &[(&str, Target)] = &[
    ("open_bytes", open_bytes),
    ("verify", verify),
    ("segment", segment),
    ("describe", describe),
    ("envelope", envelope),
    ("frames", frames),
    ("in_place", in_place),
];

/// An archive-level error must name the file it is about.
fn named(what: &str, e: &dendro::Error) {
    named_as(what, e, FILE);
}

/// An error must name `file`, as every error a user can meet does.
fn named_as(what: &str, e: &dendro::Error, file: &str) {
    let text = e.to_string();
    assert!(
        text.contains(file),
        "{what}: the error does not name {file}: {text}"
    );
}

/// Sniff and open from bytes in memory, as the browser does, then describe.
pub fn open_bytes(data: &[u8]) {
    let _ = dendro::container::sniff_bytes(data);
    match Archive::from_bytes(FILE, data) {
        Ok(archive) => {
            if let Err(e) = dendro::read::describe(&archive) {
                named("describe", &e);
            }
        }
        Err(e) => named("open", &e),
    }
}

/// The archive's bytes as a lazy file's source.
struct Image(Vec<u8>);

impl dendro::pager::ByteSource for Image {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_exact_at(
        &mut self,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), dendro::pager::SourceFailure> {
        let at = usize::try_from(offset).expect("offsets within the image");
        buf.copy_from_slice(&self.0[at..at + buf.len()]);
        Ok(())
    }
}

/// Payloads read in place (by range, outside SQLite, from the b-tree
/// cell, the overflow chain and the pointer map, as the browser reads a
/// dropped file) against the same reads through SQLite, on an archive
/// given whole: the same bytes, or an error from both. SQLite reads a
/// file natively, so the input is written to a scratch file first.
pub fn in_place(data: &[u8]) {
    use dendro::container::serve_payloads;
    use dendro::pager::{set_in_place_payloads, set_map_at_breaks, InPlace, LazyConfig, LazyFile};
    use std::cell::RefCell;
    use std::rc::{Rc, Weak};

    let path = std::env::temp_dir().join(format!("dendro-in-place-{}.dendro", std::process::id()));
    for suffix in ["-wal", "-shm"] {
        let mut side = path.clone().into_os_string();
        side.push(suffix);
        let _ = std::fs::remove_file(side);
    }
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let Ok(archive) = Archive::open(&path) else {
        return;
    };
    let file = Rc::new(RefCell::new(LazyFile::new(
        Image(data.to_vec()),
        LazyConfig::LOCAL_FILE,
    )));
    let weak: Weak<dyn InPlace> = Rc::downgrade(&file) as _;
    if !serve_payloads(&archive, weak) {
        return;
    }
    let Ok(records) = archive.read_snapshot(|s| s.all_segments()) else {
        return;
    };
    let read = |r: &SegmentRecord, by_range: bool, at: Option<(usize, usize)>| {
        set_in_place_payloads(by_range);
        let out = archive.read_snapshot(|s| {
            let payload = s.segment_payload(r.source_id, &r.stream, r.seq)?;
            let (offset, n) = at.unwrap_or((0, payload.len()));
            let mut buf = vec![0u8; n];
            payload.read_at(offset, &mut buf)?;
            Ok(buf)
        });
        set_in_place_payloads(true);
        out
    };
    let file = archive.file().to_string();
    for r in records.iter().take(16) {
        let whole = match read(r, false, None) {
            Ok(whole) => whole,
            Err(e) => {
                named_as("a payload read through SQLite", &e, &file);
                continue;
            }
        };
        let len = whole.len();
        let footer = len.min(3000);
        for at in [
            None,
            Some((len - footer, footer)),
            Some((len.saturating_sub(8), len.min(8))),
            Some((len / 3, len / 3)),
        ] {
            let (mut direct, sqlite) = (read(r, true, at), read(r, false, at));
            let agree = match (&direct, &sqlite) {
                (Ok(a), Ok(b)) => a == b,
                (Err(_), Err(_)) => true,
                _ => false,
            };
            if !agree {
                // Where the map and the pointers disagree (damage), a read
                // by range takes the map's word at a break and SQLite the
                // pointer's: without the map's word the read must agree
                // with SQLite, and the file must fail verify.
                set_map_at_breaks(false);
                direct = read(r, true, at);
                set_map_at_breaks(true);
                let sound = archive.verify().map(|report| report.sound);
                assert!(
                    !matches!(sound, Ok(true)),
                    "{} {} at {at:?}: by range differs from SQLite in a file verify passes",
                    r.stream,
                    r.seq
                );
            }
            match (&direct, &sqlite) {
                (Ok(a), Ok(b)) => {
                    assert!(a == b, "{} {} at {at:?}: by range differs", r.stream, r.seq)
                }
                (Err(a), Err(b)) => {
                    named_as("a payload read by range", a, &file);
                    named_as("a payload read through SQLite", b, &file);
                }
                _ => panic!(
                    "{} {} at {at:?}: by range {:?}, SQLite {:?}",
                    r.stream,
                    r.seq,
                    direct.map(|b| b.len()),
                    sqlite.map(|b| b.len())
                ),
            }
        }
    }
}

/// `verify` on an archive given whole (a mutated fixture).
pub fn verify(data: &[u8]) {
    let Ok(archive) = Archive::from_bytes(FILE, data) else {
        return;
    };
    match archive.verify() {
        Ok(report) => {
            assert!(
                report.sound || !report.problems.is_empty(),
                "an unsound report names no problem"
            );
        }
        Err(e) => named("verify", &e),
    }
}

/// One segment's bytes: the footer alone (schema, statistics), a whole
/// decode, the range reader's projected decode, and the packed form the
/// decoder instance hands back, which must round-trip.
pub fn segment(data: &[u8]) {
    let _ = dendro::segment::segment_schema(data);
    let footer = dendro::segment::read_footer(data.len(), |at, buf| {
        let end = at.checked_add(buf.len()).filter(|&e| e <= data.len());
        let end = end.ok_or_else(|| format!("read of {} bytes at {at} past the end", buf.len()))?;
        buf.copy_from_slice(&data[at..end]);
        Ok(())
    });
    if let Ok(meta) = footer {
        let _ = dendro::read::stats::summarize(&meta);
    }
    if let Ok(batches) = dendro::segment::decode_segment(data.to_vec(), None) {
        for batch in &batches {
            let packed = dendro::read::packed::pack(batch);
            let back = dendro::read::packed::unpack_bytes(&packed)
                .unwrap_or_else(|e| panic!("a packed batch does not unpack: {e}"));
            assert_eq!(back.num_rows(), batch.num_rows(), "packed rows differ");
        }
    }
    let wanted = ["value".to_string()];
    let _ = decode_range_bytes(data.to_vec(), Some(&wanted));
    let _ = dendro::read::packed::unpack_bytes(data);
}

/// The replication stream reader over arbitrary bytes: every frame it
/// yields must encode back to a frame that decodes to itself; the same for
/// the input read as one payload (first byte the kind).
pub fn frames(data: &[u8]) {
    if let Ok(mut reader) = FrameReader::new(data, FILE) {
        for _ in 0..100_000 {
            match reader.next_frame() {
                Ok(Some(frame)) => round_trip(&frame),
                Ok(None) => break,
                Err(e) => {
                    named("a frame", &e);
                    break;
                }
            }
        }
    }
    if let Some((&kind, payload)) = data.split_first() {
        if let Ok(Some(frame)) = Frame::decode_payload(kind, payload) {
            round_trip(&frame);
        }
    }
}

fn round_trip(frame: &Frame) {
    let bytes = frame.encode();
    let len = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
    assert_eq!(len + 4, bytes.len(), "a frame's length prefix is wrong");
    let again = Frame::decode_payload(bytes[4], &bytes[5..])
        .unwrap_or_else(|e| panic!("an encoded frame does not decode: {e:?}"));
    assert_eq!(again.as_ref(), Some(frame), "a frame does not round-trip");
}

/// Reads the fuzz input as a stream of choices; past its end every choice
/// is zero, so any input is a complete program.
pub struct Input<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data, at: 0 }
    }
    fn done(&self) -> bool {
        self.at >= self.data.len()
    }
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }
    /// True about once in `n` choices.
    fn one_in(&mut self, n: u8) -> bool {
        self.u8().is_multiple_of(n)
    }
    fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n.max(1)
    }
    fn raw(&mut self, n: usize) -> &'a [u8] {
        let start = self.at.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.at = start + n;
        &self.data[start..end]
    }
    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        let raw = self.raw(8);
        b[..raw.len()].copy_from_slice(raw);
        u64::from_le_bytes(b)
    }
    /// An integer, most often one of the edges.
    fn int(&mut self) -> i64 {
        match self.u8() % 8 {
            0 => 0,
            1 => 1,
            2 => -1,
            3 => i64::MAX,
            4 => i64::MIN,
            5 => self.u8() as i64,
            _ => self.u64() as i64,
        }
    }
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max + 1);
        self.raw(n).to_vec()
    }
    fn text(&mut self, max: usize) -> String {
        String::from_utf8_lossy(&self.bytes(max)).into_owned()
    }
    fn name(&mut self) -> String {
        match self.u8() % 8 {
            0 => "a".into(),
            1 => "b".into(),
            2 => "ts".into(),
            3 => String::new(),
            4 => "é\u{0}x".into(),
            _ => self.text(12),
        }
    }
}

/// A value for a catalog column that should hold `kind`; now and then one
/// of another type, since SQLite stores whatever it is given.
fn sql_value(input: &mut Input, kind: char) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    if input.one_in(32) {
        return match input.u8() % 4 {
            0 => V::Null,
            1 => V::Real(f64::from_bits(input.u64())),
            2 => V::Text(input.text(16)),
            _ => V::Blob(input.bytes(16)),
        };
    }
    match kind {
        'i' => V::Integer(input.int()),
        't' => V::Text(input.text(40)),
        _ => V::Blob(input.bytes(64)),
    }
}

/// A labels or metadata map as JSON, most often well formed.
fn labels_json(input: &mut Input) -> String {
    match input.u8() % 6 {
        0 => input.text(64),
        1 => "[".repeat(input.below(4) * 1000 + 1),
        _ => {
            let mut map = BTreeMap::new();
            for _ in 0..input.below(4) {
                map.insert(input.name(), input.text(16));
            }
            serde_json::to_string(&map).unwrap()
        }
    }
}

/// Catalog changes a hostile file can make to the format's DDL, each of
/// which the open check must refuse by name or the readers must survive.
fn schema_sql(flags: u8) -> String {
    let mut sql = SCHEMA_SQL.to_string();
    if flags & 0x80 == 0 {
        return sql;
    }
    let edits: [(&str, &str); 6] = [
        (
            "CREATE INDEX segments_by_time ON segments(source_id, stream, last_ts);",
            "",
        ),
        (
            "  row BLOB NOT NULL,\n  PRIMARY KEY (source_id, stream, ts)\n",
            "  row BLOB NOT NULL\n",
        ),
        ("  uuid TEXT,\n", ""),
        (
            "  caller_index BLOB,\n  PRIMARY KEY (source_id, stream, seq)\n",
            "  caller_index BLOB\n",
        ),
        (
            "CREATE INDEX caller_rows_by_time ON caller_rows(source_id, stream, ts);",
            "",
        ),
        ("  offset_ns INTEGER NOT NULL,\n", "  offset_ns TEXT,\n"),
    ];
    for (bit, (from, to)) in edits.iter().enumerate() {
        if flags & (1 << bit) != 0 {
            assert!(sql.contains(from), "the DDL no longer holds {from:?}");
            sql = sql.replace(from, to);
        }
    }
    sql
}

/// An empty archive in memory with the catalog `flags` choose.
fn new_catalog(flags: u8) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    // As the writer lays a file out: pointer-map pages and all.
    conn.execute_batch(&format!(
        "PRAGMA page_size = {PAGE_SIZE}; PRAGMA auto_vacuum = INCREMENTAL;"
    ))
    .unwrap();
    conn.execute_batch(&schema_sql(flags)).unwrap();
    // A version no build reads (5 is read since schema 5 arrived; a v4
    // catalog stamped 5 is a schema mismatch, refused on another path).
    let version = if flags & 0xC0 == 0xC0 {
        SCHEMA_VERSION + 2
    } else {
        SCHEMA_VERSION
    };
    conn.execute_batch(&format!(
        "PRAGMA application_id = {}; PRAGMA user_version = {version};",
        APPLICATION_ID as i32
    ))
    .unwrap();
    conn
}

/// The catalog's bytes, opened as the browser opens a dropped file.
fn open_catalog(conn: &mut rusqlite::Connection) -> Option<Archive> {
    let bytes = conn.serialize(rusqlite::MAIN_DB).ok()?;
    match Archive::from_bytes(FILE, &bytes) {
        Ok(archive) => Some(archive),
        Err(e) => {
            named("open", &e);
            None
        }
    }
}

fn insert(conn: &rusqlite::Connection, table: &str, values: Vec<rusqlite::types::Value>) {
    let marks = vec!["?"; values.len()].join(", ");
    // Columns by position: a variant without a column refuses the row,
    // which is as good as not inserting it.
    let _ = conn.execute(
        &format!("INSERT OR IGNORE INTO {table} VALUES ({marks})"),
        rusqlite::params_from_iter(values),
    );
}

/// A small honest segment (the self-describing encoder's), for catalogs
/// whose segment rows should mostly point at real Parquet.
fn tiny_segment() -> Vec<u8> {
    let schema = Schema::new(vec![Column::new("v", ColumnType::I64)]);
    let encoder = TypedEncoder::new();
    let id = encoder.register(&schema).unwrap();
    let rows: Vec<WalRow> = (0..3)
        .map(|i| WalRow {
            ts: i,
            wall_offset: 0,
            row: typed::encode_row(id, &schema, &[Value::I64(i * 7)]).unwrap(),
        })
        .collect();
    encoder.encode("a", &rows).unwrap().unwrap().bytes
}

/// `describe` (and the catalog reads a viewer makes after it) on a small
/// archive whose catalog rows all come from the input.
pub fn describe(data: &[u8]) {
    let mut input = Input::new(data);
    let flags = input.u8();
    let mut conn = new_catalog(flags);
    let tiny = tiny_segment();
    let uuid = flags & 0x84 != 0x84;
    let caller_index = flags & 0x88 != 0x88;
    for _ in 0..200 {
        if input.done() {
            break;
        }
        let source = |input: &mut Input| match input.u8() % 4 {
            0 => sql_value(input, 'i'),
            n => rusqlite::types::Value::Integer(n as i64),
        };
        match input.u8() % 6 {
            0 => {
                use rusqlite::types::Value as V;
                let mut row = vec![
                    source(&mut input),
                    V::Text(labels_json(&mut input)),
                    V::Text(labels_json(&mut input)),
                    sql_value(&mut input, 'i'),
                    sql_value(&mut input, 'i'),
                ];
                if uuid {
                    row.push(sql_value(&mut input, 't'));
                }
                row.push(V::Null);
                row.push(V::Null);
                insert(&conn, "sources", row);
            }
            1 | 2 => {
                use rusqlite::types::Value as V;
                let bytes = match input.u8() % 4 {
                    0 => sql_value(&mut input, 'b'),
                    _ => V::Blob(tiny.clone()),
                };
                let mut row = vec![
                    source(&mut input),
                    V::Text(input.name()),
                    sql_value(&mut input, 'i'),
                    sql_value(&mut input, 'i'),
                    sql_value(&mut input, 'i'),
                    sql_value(&mut input, 'i'),
                    bytes,
                ];
                if caller_index {
                    row.push(match input.u8() % 2 {
                        0 => V::Null,
                        _ => sql_value(&mut input, 'b'),
                    });
                }
                insert(&conn, "segments", row);
            }
            3 => {
                let row = vec![
                    source(&mut input),
                    rusqlite::types::Value::Text(input.name()),
                    sql_value(&mut input, 'i'),
                    sql_value(&mut input, 'i'),
                    sql_value(&mut input, 'b'),
                ];
                insert(&conn, "wal", row);
            }
            4 => {
                let row = vec![
                    source(&mut input),
                    sql_value(&mut input, 'i'),
                    sql_value(&mut input, 'i'),
                ];
                insert(&conn, "clock_offsets", row);
            }
            _ => {
                let row = vec![
                    source(&mut input),
                    rusqlite::types::Value::Text(input.name()),
                    sql_value(&mut input, 'i'),
                    sql_value(&mut input, 'b'),
                ];
                insert(&conn, "caller_rows", row);
            }
        }
    }
    let Some(archive) = open_catalog(&mut conn) else {
        return;
    };
    let description = match dendro::read::describe(&archive) {
        Ok(d) => d,
        Err(e) => return named("describe", &e),
    };
    // What a viewer asks next, stream by stream.
    for source in &description.sources {
        for stream in &source.streams {
            let checks: [dendro::Result<()>; 4] = [
                dendro::read::live_wal_span(&archive, source.id, &stream.name).map(drop),
                dendro::read::probe(&archive, source.id, &stream.name).map(drop),
                dendro::read::caller_indexes(&archive, source.id, &stream.name).map(drop),
                dendro::read::stream_range(
                    &archive,
                    source.id,
                    &stream.name,
                    i64::MIN,
                    i64::MAX,
                    None,
                )
                .map(drop),
            ];
            for e in checks.into_iter().filter_map(Result::err) {
                named("a stream read", &e);
            }
        }
        for name in &source.caller_row_names {
            if let Err(e) = dendro::read::caller_rows(&archive, source.id, name, i64::MIN, i64::MAX)
            {
                named("caller rows", &e);
            }
        }
    }
    if let Err(e) = archive.verify() {
        named("verify", &e);
    }
}

/// A typed value for a column of `ty`, from the input, edges first.
fn typed_value(input: &mut Input, ty: ColumnType) -> Value {
    if input.one_in(16) {
        return Value::Null;
    }
    match ty {
        ColumnType::I64 => Value::I64(input.int()),
        ColumnType::U64 => Value::U64(input.int() as u64),
        ColumnType::F64 => Value::F64(match input.u8() % 6 {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => -0.0,
            4 => input.int() as f64,
            _ => f64::from_bits(input.u64()),
        }),
        ColumnType::Bool => Value::Bool(input.u8() & 1 == 1),
        ColumnType::Utf8 => Value::Str(input.text(8)),
        // This harness declares no histogram column (its bucket count is
        // the column's, not the type's); tests/distributions.rs has them.
        ColumnType::Histogram => Value::Null,
    }
}

/// The envelope and range reader on an archive built from the input: a
/// typed stream whose schema, rows, seals and catalog numbers the input
/// chooses, then a window request the input chooses too. The one-call
/// reader and the stepped one (segments decoded "elsewhere", handed back
/// packed, as the browser's decoder instance does) must agree.
pub fn envelope(data: &[u8]) {
    let mut input = Input::new(data);
    let types = [
        ColumnType::I64,
        ColumnType::U64,
        ColumnType::F64,
        ColumnType::Bool,
        ColumnType::Utf8,
    ];
    let names = ["v", "w", "rate", "x y"];
    let mut columns = Vec::new();
    for name in names.iter().take(1 + input.below(4)) {
        let mut column = Column::new(*name, types[input.below(types.len())]);
        match input.u8() % 3 {
            0 => column = column.counter(),
            1 => column = column.gauge(),
            _ => {}
        }
        columns.push(column);
    }
    let schema = Schema::new(columns);
    let encoder = TypedEncoder::new();
    let Ok(id) = encoder.register(&schema) else {
        return;
    };
    let stream = "s";
    let Some(metadata) = typed_metadata(&schema, &[stream]) else {
        return;
    };
    let mut conn = new_catalog(0);
    insert_source(&conn, "{}", &metadata, input.int(), None);

    // Rows in time order mostly, with the input's steps; now and then a
    // jump anywhere, or a row whose bytes are the input's.
    let mut ts = input.int();
    let mut pending: Vec<WalRow> = Vec::new();
    let mut seq = 0i64;
    let count = input.below(200);
    for _ in 0..count {
        let step = match input.u8() % 8 {
            0 => input.int(),
            n => i64::from(n) * i64::from(input.u8()),
        };
        ts = ts.saturating_add(step);
        let row = if input.one_in(32) {
            input.bytes(24)
        } else {
            let values: Vec<Value> = schema
                .columns
                .iter()
                .map(|c| typed_value(&mut input, c.ty))
                .collect();
            typed::encode_row(id, &schema, &values).unwrap()
        };
        pending.push(WalRow {
            ts,
            wall_offset: 0,
            row,
        });
        if input.one_in(16) {
            seal(&conn, &encoder, &mut input, stream, &mut seq, &mut pending);
        }
    }
    // What is left is the live tail (rows past the watermark count; the
    // rest are hidden by the live-WAL rule, as after a crash).
    for row in &pending {
        insert_wal(&conn, stream, row);
    }
    let Some(archive) = open_catalog(&mut conn) else {
        return;
    };

    let from = input.int();
    let to = match input.u8() % 4 {
        0 => from,
        1 => i64::MAX,
        _ => input.int(),
    };
    let (from, to) = if input.one_in(4) {
        (from, to)
    } else {
        (from.min(to), from.max(to))
    };
    let from = if input.one_in(2) { i64::MIN } else { from };
    let max_points = match input.u8() % 4 {
        0 => None,
        1 => Some(input.below(4)),
        _ => Some(1 + input.below(64)),
    };
    let pick = |input: &mut Input| -> Option<Vec<String>> {
        (input.u8() % 2 == 1).then(|| {
            let mask = input.u8();
            ["v", "w", "rate", "x y", "ts", "none"]
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, n)| n.to_string())
                .collect()
        })
    };
    let wanted = pick(&mut input);
    let rates = pick(&mut input);
    let request = RangeRequest {
        source_id: 1,
        stream,
        from,
        to,
        columns: wanted.as_deref(),
        max_points,
        rates: rates.as_deref(),
    };
    let stats = |record: &SegmentRecord| -> dendro::Result<Option<Stats>> {
        Ok(dendro::read::stats::segment_stats(&archive, record)?.map(Arc::new))
    };
    let whole = read_range_with(&archive, &request, stats, |record, columns| {
        decode_for_range(&archive, record, columns)
    });
    let stepped = stepped_range(&archive, &request);
    match (whole, stepped) {
        (Ok(a), Ok(b)) => assert_eq!(
            format!("{a:?}"),
            format!("{b:?}"),
            "the stepped range reader disagrees with the one-call reader"
        ),
        (Err(a), Err(_)) => named("a range read", &a),
        (a, b) => panic!(
            "one range reader failed and the other did not: {:?} / {:?}",
            a.err(),
            b.err()
        ),
    }
}

/// Seals `pending` as the next segment, its catalog numbers honest unless
/// the input says otherwise.
fn seal(
    conn: &rusqlite::Connection,
    encoder: &TypedEncoder,
    input: &mut Input,
    stream: &str,
    seq: &mut i64,
    pending: &mut Vec<WalRow>,
) {
    let Ok(Some(mut segment)) = encoder.encode(stream, pending) else {
        pending.clear();
        return;
    };
    pending.clear();
    if input.one_in(8) {
        let lie = input.int();
        match input.below(3) {
            0 => segment.rows = lie,
            1 => segment.first_ts = lie,
            _ => segment.last_ts = lie,
        }
    }
    *seq += 1;
    insert_segment(conn, stream, *seq, segment);
}

/// The reserved metadata of a source written by the self-describing
/// encoder: its name, and `schema` listed for each of `streams`. `None`
/// when the schema cannot be listed.
fn typed_metadata(schema: &Schema, streams: &[&str]) -> Option<Labels> {
    let mut metadata = Labels::new();
    metadata.insert(dendro::format::keys::ENCODER.into(), typed::ENCODER.into());
    for stream in streams {
        let listed = typed::with_schema(&metadata, stream, schema).ok()?;
        metadata.insert(typed::SCHEMAS_KEY.into(), listed);
    }
    Some(metadata)
}

/// Source 1, with `labels` (JSON text) and `metadata`.
fn insert_source(
    conn: &rusqlite::Connection,
    labels: &str,
    metadata: &Labels,
    created: i64,
    uuid: Option<&str>,
) {
    use rusqlite::types::Value as V;
    insert(
        conn,
        "sources",
        vec![
            V::Integer(1),
            V::Text(labels.into()),
            V::Text(serde_json::to_string(metadata).unwrap()),
            V::Integer(0),
            V::Integer(created),
            uuid.map_or(V::Null, |u| V::Text(u.into())),
            V::Null,
            V::Null,
        ],
    );
}

/// `segment` as segment `seq` of source 1's `stream`, with the catalog
/// numbers it carries and no caller index.
fn insert_segment(conn: &rusqlite::Connection, stream: &str, seq: i64, segment: dendro::Segment) {
    use rusqlite::types::Value as V;
    insert(
        conn,
        "segments",
        vec![
            V::Integer(1),
            V::Text(stream.into()),
            V::Integer(seq),
            V::Integer(segment.rows),
            V::Integer(segment.first_ts),
            V::Integer(segment.last_ts),
            V::Blob(segment.bytes),
            V::Null,
        ],
    );
}

/// `row` in source 1's WAL under `stream`.
fn insert_wal(conn: &rusqlite::Connection, stream: &str, row: &WalRow) {
    use rusqlite::types::Value as V;
    insert(
        conn,
        "wal",
        vec![
            V::Integer(1),
            V::Text(stream.into()),
            V::Integer(row.ts),
            V::Integer(row.wall_offset),
            V::Blob(row.row.clone()),
        ],
    );
}

/// The range reader in steps, each segment decoded apart from it and
/// handed back in the packed layout.
fn stepped_range(archive: &Archive, request: &RangeRequest<'_>) -> dendro::Result<Envelope> {
    let stats = |record: &SegmentRecord| -> dendro::Result<Option<Stats>> {
        Ok(dendro::read::stats::segment_stats(archive, record)?.map(Arc::new))
    };
    let mut reader = RangeReader::new(archive, request, stats)?;
    while let Some((index, record)) = reader.next_to_decode() {
        let bytes =
            dendro::read::segment_bytes(archive, record.source_id, &record.stream, record.seq)?;
        let fail = |cause: String| dendro::Error::Segment {
            file: archive.file().to_string(),
            source_id: record.source_id,
            stream: record.stream.clone(),
            seq: record.seq,
            cause,
        };
        let batches = decode_range_bytes(bytes, request.columns).map_err(fail)?;
        let packed = batches
            .iter()
            .map(|b| dendro::read::packed::unpack_bytes(&dendro::read::packed::pack(b)))
            .collect::<Result<Vec<_>, String>>()
            .map_err(fail)?;
        reader.supply(index, Arc::new(packed));
    }
    Ok(reader.finish())
}

/// A small sound archive made here (two typed streams, sealed segments, a
/// live tail, caller rows, clock offsets): the seed of `open_bytes` and
/// `verify`, which mutate whole files.
pub fn sample_archive() -> Vec<u8> {
    use rusqlite::types::Value as V;
    let schema = Schema::new(vec![
        Column::new("v", ColumnType::F64).gauge(),
        Column::new("n", ColumnType::U64).counter(),
        Column::new("note", ColumnType::Utf8),
    ]);
    let encoder = TypedEncoder::new();
    let id = encoder.register(&schema).unwrap();
    let metadata = typed_metadata(&schema, &["cpu", "disk"]).unwrap();
    let mut conn = new_catalog(0);
    insert_source(
        &conn,
        r#"{"host":"a"}"#,
        &metadata,
        1_700_000_000_000_000_000,
        Some("00000000-0000-4000-8000-000000000001"),
    );
    let row = |i: i64| {
        let values = [
            Value::F64(i as f64 / 4.0),
            Value::U64(i as u64 * 3),
            if i % 3 == 0 {
                Value::Null
            } else {
                Value::Str(format!("r{i}"))
            },
        ];
        WalRow {
            ts: i * 1_000,
            wall_offset: 7,
            row: typed::encode_row(id, &schema, &values).unwrap(),
        }
    };
    for stream in ["cpu", "disk"] {
        let rows: Vec<WalRow> = (0..30).map(row).collect();
        for (seq, part) in rows[..20].chunks(10).enumerate() {
            let segment = encoder.encode(stream, part).unwrap().unwrap();
            insert_segment(&conn, stream, seq as i64 + 1, segment);
        }
        for r in &rows[20..] {
            insert_wal(&conn, stream, r);
        }
    }
    for ts in [0i64, 5_000, 5_000] {
        insert(
            &conn,
            "caller_rows",
            vec![
                V::Integer(1),
                V::Text("notes".into()),
                V::Integer(ts),
                V::Blob(b"hello".to_vec()),
            ],
        );
    }
    insert(
        &conn,
        "clock_offsets",
        vec![V::Integer(1), V::Integer(0), V::Integer(7)],
    );
    conn.execute_batch("VACUUM").unwrap();
    let bytes = conn.serialize(rusqlite::MAIN_DB).unwrap().to_vec();
    assert!(open_catalog(&mut conn).is_some());
    bytes
}

/// An archive whose later payloads reuse pages earlier ones freed, so
/// their overflow chains break (the `in_place` target's seed): payloads of
/// a few pages, every other one deleted, then larger ones.
pub fn fragmented_archive() -> Vec<u8> {
    use rusqlite::types::Value as V;
    let mut conn = new_catalog(0);
    insert_source(&conn, "{}", &Labels::new(), 0, None);
    let blob = |seq: i64, len: usize| -> Vec<u8> {
        (0..len).map(|i| (i as i64 * 31 + seq * 7) as u8).collect()
    };
    let put = |seq: i64, len: usize| {
        insert(
            &conn,
            "segments",
            vec![
                V::Integer(1),
                V::Text("m".into()),
                V::Integer(seq),
                V::Integer(1),
                V::Integer(seq),
                V::Integer(seq),
                V::Blob(blob(seq, len)),
                V::Null,
            ],
        );
    };
    for seq in 0..12 {
        put(seq, 9_000);
    }
    conn.execute_batch("DELETE FROM segments WHERE seq % 2 = 1")
        .unwrap();
    for seq in 20..23 {
        put(seq, 30_000);
    }
    conn.serialize(rusqlite::MAIN_DB).unwrap().to_vec()
}

/// A replication stream made with the crate's own encoder: the preamble,
/// then one frame of each kind.
pub fn sample_frames() -> Vec<u8> {
    use dendro::replicate::{IndexKind, WireRow};
    let mut out = dendro::replicate::codec::preamble().to_vec();
    let frames = [
        Frame::Handshake {
            source: 0,
            row: dendro::catalog::NewSource {
                uuid: Some("00000000-0000-4000-8000-000000000001".into()),
                labels: [("host".to_string(), "a".to_string())].into(),
                metadata: Labels::new(),
                clock_anchor_wall_ns: -1,
                complete: false,
            },
        },
        Frame::Index {
            source: 0,
            stream: "cpu".into(),
            ts: 3,
            kind: IndexKind::Delta,
            state: (1, 2),
            blob: b"idx".to_vec(),
        },
        Frame::Segment {
            source: 0,
            stream: "cpu".into(),
            segment: dendro::Segment {
                rows: 3,
                first_ts: 0,
                last_ts: 2,
                bytes: tiny_segment(),
                caller_index: None,
            },
        },
        Frame::ClockOffset {
            source: 0,
            ts: 5,
            offset_ns: -3,
        },
        Frame::Rows {
            source: 0,
            seq: 1,
            index_state: (0, 0),
            rows: vec![WireRow {
                stream: "cpu".into(),
                ts: 1,
                wall_offset: 2,
                row: vec![1, 2, 3],
            }],
        },
    ];
    for frame in &frames {
        frame.encode_into(&mut out);
    }
    out
}

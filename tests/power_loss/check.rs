//! What a reboot must find, checked through the normal read path: the file
//! opens, every acknowledged tick is there with its values, nothing but
//! the interrupted call is missing, `verify` is sound, and the source
//! resumes and takes new ticks.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use dendro::read::{self, Tail};
use dendro::write::{Writer, WriterOptions};
use dendro::{Archive, Labels};

use crate::workload::{rows_at, value_of, CountingEncoder, Expected, Ledger, TS_PER_TICK};

/// The archive's one source as a reader gets it.
#[derive(Default)]
struct Read {
    source: bool,
    complete: bool,
    /// Each stream's `(ts, value)` rows, sealed then live.
    streams: BTreeMap<String, Vec<(i64, i64)>>,
}

/// Reads the whole archive in one snapshot, live tails through the encoder.
fn read_all(archive: &Archive) -> Read {
    let sources = read::read_archive(archive, &CountingEncoder).expect("the archive reads back");
    assert!(
        sources.len() <= 1,
        "one source at most, found {}",
        sources.len()
    );
    let Some(source) = sources.into_iter().next() else {
        return Read::default();
    };
    let mut streams = BTreeMap::new();
    for stream in source.streams {
        let mut payloads: Vec<dendro::Bytes> = stream.sealed.into_iter().map(|(_, b)| b).collect();
        match stream.tail {
            Tail::Materialized(tail) => payloads.push(tail.bytes.into()),
            Tail::Empty => {}
            Tail::Unread(span) => panic!("stream {}: live rows left unread: {span:?}", stream.name),
        }
        let mut rows = Vec::new();
        for bytes in payloads {
            let columns = ["ts".to_string(), "value".to_string()];
            for batch in dendro::segment::decode_segment(bytes, Some(&columns)).unwrap() {
                let ts = batch.column(0).as_primitive::<Int64Type>().values();
                let value = batch.column(1).as_primitive::<Int64Type>().values();
                rows.extend(ts.iter().copied().zip(value.iter().copied()));
            }
        }
        streams.insert(stream.name, rows);
    }
    Read {
        source: true,
        complete: source.source.source.complete,
        streams,
    }
}

/// What the archive at `path` holds, read as any reader would, with the
/// rules every state must keep: a tick is in both streams or neither, in
/// order, once, with the values it was written with, and the catalog's
/// counts agree with the rows.
pub fn found(path: &Path) -> Expected {
    let archive = Archive::open(path).unwrap_or_else(|e| panic!("the archive does not open: {e}"));
    let description = read::describe(&archive).expect("describe");
    let read = read_all(&archive);
    assert!(
        read.streams.is_empty() || read.streams.keys().eq(["a", "b"]),
        "both streams or neither, found {:?}",
        read.streams.keys().collect::<Vec<_>>()
    );
    let mut ticks: Option<Vec<i64>> = None;
    for (name, rows) in &read.streams {
        for (ts, value) in rows {
            assert_eq!(
                *value,
                value_of(name, *ts),
                "stream {name}: row at {ts} holds a wrong value"
            );
        }
        let these: Vec<i64> = rows.iter().map(|(ts, _)| ts / TS_PER_TICK).collect();
        assert!(
            these.windows(2).all(|w| w[0] < w[1]),
            "stream {name}: rows out of order or repeated: {these:?}"
        );
        let described = description.sources[0]
            .streams
            .iter()
            .find(|s| &s.name == name)
            .expect("describe names every stream read");
        assert_eq!(
            (described.sealed_rows + described.live_rows) as usize,
            rows.len(),
            "stream {name}: describe counts differ from the rows read"
        );
        match &ticks {
            None => ticks = Some(these),
            Some(first) => assert_eq!(
                first, &these,
                "a tick is one transaction: both streams or neither"
            ),
        }
    }
    Expected {
        source: read.source,
        ticks: ticks.unwrap_or_default(),
        complete: read.complete,
    }
}

/// The checks after a reboot. `context` names the case in every message.
/// Returns what the reboot found.
pub fn after_reboot(path: &Path, ledger: &Ledger, context: &str) -> Expected {
    let found = std::panic::catch_unwind(|| found(path)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "a panic".into());
        panic!("{context}: reading back after the reboot: {why}")
    });
    let acceptable = found == ledger.acked || ledger.landed.as_ref() == Some(&found);
    assert!(
        acceptable,
        "{context}: after the reboot the archive holds\n  {found:?}\nbut the writer acknowledged\n  \
         {:?}\nand the interrupted call would have made it\n  {:?}",
        ledger.acked, ledger.landed
    );
    let report = Archive::open(path).unwrap().verify().unwrap();
    assert!(report.sound, "{context}: verify: {:?}", report.problems);
    resumes(path, &found, context);
    found
}

/// The source carries on in a new writer session: a tick appended, sealed
/// and read back, and the file still sound.
fn resumes(path: &Path, found: &Expected, context: &str) {
    let writer = Writer::open_with(path, Arc::new(CountingEncoder), WriterOptions::default())
        .unwrap_or_else(|e| panic!("{context}: reopening for writing: {e}"));
    let source = if found.source {
        writer.resume_source(1)
    } else {
        writer.add_source(Labels::new(), Labels::new())
    }
    .unwrap_or_else(|e| panic!("{context}: resuming the source: {e}"));
    let ts = source.clock().now().0;
    source
        .wal(rows_at(ts))
        .unwrap_or_else(|e| panic!("{context}: the resumed source refused a tick: {e}"));
    source.seal(["a", "b"]).unwrap();
    source.sync().unwrap();
    drop(source);
    writer
        .join()
        .unwrap_or_else(|e| panic!("{context}: the resumed writer: {e}"));
    let archive = Archive::open(path).unwrap();
    let read = read_all(&archive);
    for stream in ["a", "b"] {
        let last = read.streams.get(stream).and_then(|rows| rows.last());
        assert_eq!(
            last.map(|r| r.0),
            Some(ts),
            "{context}: the resumed tick is not the newest row of {stream}"
        );
    }
    let report = archive.verify().unwrap();
    assert!(
        report.sound,
        "{context}: verify after resuming: {:?}",
        report.problems
    );
}

//! Building archives to rewrite, and reading back everything an archive
//! holds in a form two archives can be compared by.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dendro::read::columns::display_value;
use dendro::segment::{decode_segment, encode_batch, materialize};
use dendro::{Archive, ArchiveMut, Labels, Segment, WalRow};

use crate::common::{rows_at, FixtureEncoder, FIXTURE_ENCODER_VERSION};

/// A fixture-encoded segment of rows at `ts`, with the `g_*` caller index.
pub fn fixture_segment(ts: &[i64]) -> Segment {
    materialize(
        "t",
        &FixtureEncoder { caller_index: true },
        "s",
        &rows_at(ts),
    )
    .unwrap()
    .unwrap()
}

/// A segment with columns `ts`, `value` (field metadata `unit` = `unit`)
/// and, when given, one more Int64 column `extra`.
pub fn custom_segment(ts: &[i64], unit: &str, extra: Option<&str>) -> Segment {
    let mut fields = vec![
        Field::new("ts", DataType::Int64, false),
        Field::new("value", DataType::Int64, false)
            .with_metadata(HashMap::from([("unit".to_string(), unit.to_string())])),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ts.to_vec())),
        Arc::new(Int64Array::from_iter_values(ts.iter().map(|t| t * 3))),
    ];
    if let Some(name) = extra {
        fields.push(Field::new(name, DataType::Int64, false));
        columns.push(Arc::new(Int64Array::from_iter_values(
            ts.iter().map(|t| t * 5),
        )));
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    Segment {
        bytes: encode_batch(&batch).unwrap(),
        rows: ts.len() as i64,
        first_ts: ts[0],
        last_ts: *ts.last().unwrap(),
        caller_index: Some(b"an index over one segment".to_vec()),
    }
}

/// Timestamps `start, start + step, ...`, `n` of them.
pub fn ts_run(start: i64, n: usize, step: i64) -> Vec<i64> {
    (0..n as i64).map(|i| start + i * step).collect()
}

/// Creates an archive with one source (labels `host` = `host`) and lets
/// `fill` insert into it; returns the source id.
pub fn build(path: &Path, host: &str, fill: impl FnOnce(&dendro::Transaction<'_>, i64)) -> i64 {
    let mut archive = ArchiveMut::create(path).unwrap();
    let tx = archive.transaction().unwrap();
    let metadata = Labels::from([("encoder".to_string(), FIXTURE_ENCODER_VERSION.to_string())]);
    let labels = Labels::from([("host".to_string(), host.to_string())]);
    let id = tx.insert_source(&labels, &metadata, 1_000).unwrap();
    fill(&tx, id);
    tx.commit().unwrap();
    id
}

/// `n` segments of `rows` rows each in stream `s`, ts from 0 in steps of
/// 10, then a live tail of three rows, a covered WAL row, caller rows and
/// clock offsets.
pub fn many_small(path: &Path, n: usize, rows: usize) {
    build(path, "many", |tx, id| {
        for i in 0..n {
            let ts = ts_run((i * rows) as i64 * 10, rows, 10);
            tx.insert_segment(id, "s", i as i64, &fixture_segment(&ts))
                .unwrap();
            tx.insert_clock_offset(id, *ts.last().unwrap(), 7).unwrap();
        }
        let end = (n * rows) as i64 * 10;
        tx.insert_wal_rows(id, "s", &rows_at(&[end - 10, end, end + 10, end + 20]))
            .unwrap();
        tx.insert_caller_rows(
            id,
            "s",
            &[
                dendro::CallerRow {
                    ts: 0,
                    blob: b"from 0".to_vec(),
                },
                dendro::CallerRow {
                    ts: end / 2,
                    blob: b"from the middle".to_vec(),
                },
            ],
        )
        .unwrap();
    });
}

/// One decoded row: column name to its value shown as text (null: `None`).
pub type Row = BTreeMap<String, Option<String>>;

/// Every row of every sealed segment, decoded, in seq order.
pub fn sealed_rows(archive: &Archive, source_id: i64, stream: &str) -> Vec<Row> {
    let mut out = Vec::new();
    let segments = archive
        .read_snapshot(|s| s.segments(source_id, stream))
        .unwrap();
    for record in segments {
        let bytes = dendro::read::segment_bytes(archive, source_id, stream, record.seq).unwrap();
        for batch in decode_segment(bytes, None).unwrap() {
            for i in 0..batch.num_rows() {
                out.push(
                    batch
                        .schema()
                        .fields()
                        .iter()
                        .zip(batch.columns())
                        .map(|(f, c)| (f.name().clone(), display_value(c.as_ref(), i)))
                        .collect(),
                );
            }
        }
    }
    out
}

/// What one source holds, by stream: decoded sealed rows and raw live
/// rows; its caller rows by name; its clock offsets; its catalog row.
#[derive(Debug, PartialEq)]
pub struct SourceContents {
    pub labels: Labels,
    pub metadata: Labels,
    pub complete: bool,
    pub anchor: i64,
    pub sealed: BTreeMap<String, Vec<Row>>,
    pub live: BTreeMap<String, Vec<WalRow>>,
    pub caller_rows: BTreeMap<String, Vec<(i64, Vec<u8>)>>,
    pub clock_offsets: Vec<(i64, i64)>,
}

/// Everything an archive holds, by source uuid.
pub fn contents(path: &Path) -> BTreeMap<String, SourceContents> {
    let archive = Archive::open(path).unwrap();
    let sources = archive.read_snapshot(|s| s.sources()).unwrap();
    let mut out = BTreeMap::new();
    for source in sources {
        let (streams, names, offsets) = archive
            .read_snapshot(|s| {
                let names: Vec<String> = s
                    .caller_row_counts()?
                    .into_iter()
                    .filter(|(id, _, _)| *id == source.id)
                    .map(|(_, n, _)| n)
                    .collect();
                Ok((s.streams(source.id)?, names, s.clock_offsets(source.id)?))
            })
            .unwrap();
        let mut sealed = BTreeMap::new();
        let mut live = BTreeMap::new();
        for stream in &streams {
            sealed.insert(stream.clone(), sealed_rows(&archive, source.id, stream));
            live.insert(
                stream.clone(),
                archive
                    .read_snapshot(|s| s.live_wal_rows(source.id, stream))
                    .unwrap(),
            );
        }
        let mut caller_rows = BTreeMap::new();
        for name in names {
            let rows = dendro::read::caller_rows(&archive, source.id, &name, i64::MIN, i64::MAX)
                .unwrap()
                .into_iter()
                .map(|r| (r.ts, r.blob))
                .collect();
            caller_rows.insert(name, rows);
        }
        out.insert(
            source.source.uuid.clone().unwrap_or_default(),
            SourceContents {
                labels: source.source.labels,
                metadata: source.source.metadata,
                complete: source.source.complete,
                anchor: source.source.clock_anchor_wall_ns,
                sealed,
                live,
                caller_rows,
                clock_offsets: offsets.iter().map(|o| (o.ts, o.offset_ns)).collect(),
            },
        );
    }
    out
}

/// A segment's payload and its caller index.
pub type Blob = (Vec<u8>, Option<Vec<u8>>);

/// Every segment's payload and caller index, per (uuid, stream), in seq
/// order.
pub fn blobs(path: &Path) -> BTreeMap<(String, String), Vec<Blob>> {
    let archive = Archive::open(path).unwrap();
    archive
        .read_snapshot(|s| {
            let mut out: BTreeMap<(String, String), Vec<_>> = BTreeMap::new();
            let sources = s.sources()?;
            for record in s.all_segments()? {
                let uuid = sources
                    .iter()
                    .find(|x| x.id == record.source_id)
                    .and_then(|x| x.source.uuid.clone())
                    .unwrap_or_default();
                let index = s
                    .caller_indexes(record.source_id, &record.stream)?
                    .into_iter()
                    .find(|(seq, _)| *seq == record.seq)
                    .and_then(|(_, i)| i);
                let bytes = s.segment_bytes(record.source_id, &record.stream, record.seq)?;
                out.entry((uuid, record.stream.clone()))
                    .or_default()
                    .push((bytes, index));
            }
            Ok(out)
        })
        .unwrap()
}

/// Asserts `verify` finds nothing wrong.
pub fn assert_sound(path: &Path) {
    let report = Archive::open(path).unwrap().verify().unwrap();
    assert!(report.sound, "{}: {:?}", path.display(), report.problems);
}

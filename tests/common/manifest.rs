//! Comparing what our reader sees in an archive with a fixture manifest
//! written by the original implementation (`dendro-refcheck/1`, described in
//! `../shared/fixtures/README.md`).
//!
//! Shared by the native tests and the wasm tests (`tests/web.rs`), so it
//! uses only the reader half of the crate and compiles on wasm32.
#![allow(dead_code)]

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use dendro::{Archive, Error};
use serde_json::{json, Map, Value};

/// FNV-1a 64, the manifests' digest.
pub struct Fnv(u64);

impl Fnv {
    pub fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Fnv {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }
    pub fn i64(&mut self, v: i64) -> &mut Fnv {
        self.bytes(&v.to_le_bytes())
    }
    /// A u32 little-endian length, then the bytes.
    pub fn lp(&mut self, bytes: &[u8]) -> &mut Fnv {
        self.bytes(&(bytes.len() as u32).to_le_bytes()).bytes(bytes)
    }
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// Keys of a manifest this reader does not reproduce, by the reason why:
/// facts about the original's own run, the Parquet writer's version string,
/// SQLite page accounting, and columns a later release added.
const NOT_COMPARED: &[&str] = &[
    "exit",
    "file",
    "fixture",
    "header",
    "issues",
    "refcheck_ok",
    "reference",
    "shape",
    "sidecars",
    "overview.bytes",
    "overview.pages",
    "overview.free_pages",
    "overview.page_size",
    "verify.depth",
    "sources.heartbeat",
    "sources.heartbeat_interval_ns",
    "sources.streams.segments.decoded.created_by",
    "sources.streams.segments.decoded.key_value_keys",
    // The schema-5 manifests' record of the DDL as SQLite stores it: the
    // original's text, not something a reader reports.
    "schema5.application_id",
    "schema5.catalog_sql",
    "schema5.tables",
    "schema5.segments_columns",
];

/// Builds the manifest-shaped view of an archive from our reader alone.
pub fn observed(archive: &Archive, file_name: &str) -> Result<Value, Error> {
    let description = dendro::read::describe(archive)?;
    let verify = archive.verify()?;
    let mut sources = Vec::new();
    let (mut streams_n, mut segments_n, mut rows_n) = (0, 0, 0i64);
    for source in &description.sources {
        let details = archive.read_snapshot(|snap| {
            let offsets = snap.clock_offsets(source.id)?;
            let mut caller = Map::new();
            let names: Vec<String> = snap
                .caller_row_counts()?
                .into_iter()
                .filter(|(id, _, _)| *id == source.id)
                .map(|(_, n, _)| n)
                .collect();
            for name in names {
                let rows = snap.caller_rows(source.id, &name, i64::MIN, i64::MAX)?;
                let mut fnv = Fnv::new();
                for r in &rows {
                    fnv.i64(r.ts).lp(&r.blob);
                }
                caller.insert(
                    name,
                    json!({
                        "count": rows.len(),
                        "first_ts": rows.first().map(|r| r.ts),
                        "last_ts": rows.last().map(|r| r.ts),
                        "blob_bytes": rows.iter().map(|r| r.blob.len()).sum::<usize>(),
                        "fnv": fnv.hex(),
                    }),
                );
            }
            let mut fnv = Fnv::new();
            for o in &offsets {
                fnv.i64(o.ts).i64(o.offset_ns);
            }
            let clock = json!({
                "count": offsets.len(),
                "first": offsets.first().map(|o| json!([o.ts, o.offset_ns])),
                "last": offsets.last().map(|o| json!([o.ts, o.offset_ns])),
                "fnv": fnv.hex(),
            });
            let mut streams = Vec::new();
            for stream in &source.streams {
                streams.push(stream_view(archive, snap, source.id, stream)?);
            }
            Ok((clock, Value::Object(caller), streams))
        })?;
        let (clock, caller, streams) = details;
        streams_n += source.streams.len();
        segments_n += source
            .streams
            .iter()
            .map(|s| s.segments.len())
            .sum::<usize>();
        rows_n += source
            .streams
            .iter()
            .map(|s| s.sealed_rows + s.live_rows)
            .sum::<i64>();
        sources.push(json!({
            "id": source.id,
            "uuid": source.source.uuid,
            "labels": source.source.labels,
            "metadata": source.source.metadata,
            "complete": source.source.complete,
            "clock_anchor_wall_ns": source.source.clock_anchor_wall_ns,
            "span": source.span().map(|(a, b)| json!([a, b])),
            "clock_offsets": clock,
            "caller_rows": caller,
            "streams": streams,
        }));
    }
    let schema5 = schema5_view(archive, &description)?;
    Ok(json!({
        "schema5": schema5,
        "file": file_name,
        "file_bytes": description.file_bytes,
        "sniff": {"stamped": true, "version": description.schema_version},
        "open": {"ok": true},
        "verify": {
            "sound": verify.sound,
            "problems": verify.problems.iter().map(|p| p.message.clone()).collect::<Vec<_>>(),
            "segments": verify.segments,
            "sources": verify.sources,
            "streams": verify.streams,
            "wal_rows": verify.wal_rows,
        },
        "overview": {
            "sources": description.sources.len(),
            "streams": streams_n,
            "segments": segments_n,
            "rows": rows_n,
            "span": description.span().map(|(a, b)| json!([a, b])),
        },
        "sources": sources,
    }))
}

/// What the schema-5 manifests record beyond the schema-4 shape: the
/// version, the caller indexes as `segment_indexes` rows, and the
/// documents, all as our reader reads them (in a schema-4 file: version 4,
/// the indexes of the column, no documents).
fn schema5_view(
    archive: &Archive,
    description: &dendro::read::Description,
) -> Result<Value, Error> {
    let layout = archive.layout();
    archive.read_snapshot(|snap| {
        let (mut rows, mut bytes, mut empty) = (0usize, 0usize, 0usize);
        let mut per_stream = Vec::new();
        for source in &description.sources {
            for stream in &source.streams {
                let indexes: Vec<Vec<u8>> = snap
                    .caller_indexes(source.id, &stream.name)?
                    .into_iter()
                    .filter_map(|(_, ix)| ix)
                    .collect();
                if indexes.is_empty() {
                    continue;
                }
                let stream_bytes: usize = indexes.iter().map(Vec::len).sum();
                rows += indexes.len();
                bytes += stream_bytes;
                empty += indexes.iter().filter(|ix| ix.is_empty()).count();
                per_stream.push(json!({
                    "source_id": source.id,
                    "stream": stream.name,
                    "rows": indexes.len(),
                    "bytes": stream_bytes,
                }));
            }
        }
        let orphans = snap.orphan_segment_indexes()?.len();
        let revision = |d: &dendro::catalog::DocumentRevision| {
            json!({
                "id": d.id,
                "uuid": d.uuid,
                "kind": d.kind,
                "name": d.name,
                "schema": d.schema,
                "body": d.body,
                "created_wall_ns": d.created_wall_ns,
                "supersedes": d.supersedes,
                "deleted": d.is_deletion(),
            })
        };
        let current: Vec<Value> = snap
            .current_documents()?
            .iter()
            .map(|d| {
                let mut v = revision(d);
                let o = v.as_object_mut().unwrap();
                o.remove("created_wall_ns");
                o.remove("deleted");
                v
            })
            .collect();
        let mut kinds: Vec<String> = snap
            .current_documents()?
            .into_iter()
            .map(|d| d.kind)
            .collect();
        kinds.dedup();
        let mut history = Vec::new();
        for entry in snap.document_entries()? {
            let revisions: Vec<Value> = snap
                .document_history(&entry.kind, &entry.name)?
                .iter()
                .map(revision)
                .collect();
            history.push(json!({"kind": entry.kind, "name": entry.name, "revisions": revisions}));
        }
        let counts = snap.document_counts()?;
        Ok(json!({
            "user_version": layout.version,
            "segments_has_caller_index_column":
                layout.indexes == dendro::catalog::IndexPlace::Column,
            "segment_indexes": {
                "rows": rows + orphans,
                "bytes": bytes,
                "empty": empty,
                "orphans": orphans,
                "per_stream": per_stream,
            },
            "documents": {
                "revisions": counts.revisions,
                "current": counts.current,
                "kinds": kinds,
                "current_documents": current,
                "history": history,
                "table": snap.document_revisions()?.iter().map(revision).collect::<Vec<_>>(),
            },
        }))
    })
}

fn stream_view(
    archive: &Archive,
    snap: &dendro::catalog::Snapshot<'_>,
    source_id: i64,
    stream: &dendro::read::StreamDescription,
) -> Result<Value, Error> {
    let records = snap.segments(source_id, &stream.name)?;
    let indexes: BTreeMap<i64, Option<Vec<u8>>> = snap
        .caller_indexes(source_id, &stream.name)?
        .into_iter()
        .collect();
    let mut segments = Vec::new();
    let (mut decoded_rows, mut value_sum) = (0i64, 0i128);
    for record in &records {
        let bytes = snap.segment_bytes(source_id, &stream.name, record.seq)?;
        let fnv = Fnv::new().bytes(&bytes).hex();
        let decoded = decoded_view(archive, record, &bytes)?;
        decoded_rows += decoded["rows"].as_i64().unwrap_or(0);
        value_sum += decoded["columns"]
            .as_array()
            .and_then(|cols| cols.iter().find(|c| c["name"] == "value"))
            .and_then(|c| c["sum"].as_str())
            .and_then(|s| s.parse::<i128>().ok())
            .unwrap_or(0);
        let index = indexes.get(&record.seq).cloned().flatten().map(|ix| {
            json!({
                "len": ix.len(),
                "fnv": Fnv::new().bytes(&ix).hex(),
                "utf8": String::from_utf8(ix.clone()).ok(),
            })
        });
        segments.push(json!({
            "seq": record.seq,
            "rows": record.rows,
            "first_ts": record.first_ts,
            "last_ts": record.last_ts,
            "byte_len": record.bytes,
            "bytes_fnv": fnv,
            "caller_index": index,
            "decoded": decoded,
        }));
    }
    let live = snap.live_wal_rows(source_id, &stream.name)?;
    let wal_total: i64 = snap.wal_rows_total(source_id, &stream.name)?;
    let mut raw = Fnv::new();
    for r in &live {
        raw.i64(r.ts).i64(r.wall_offset).lp(&r.row);
    }
    let as_fixture_rows = (!live.is_empty()).then(|| {
        let mut labels = Fnv::new();
        let (mut label_bytes, mut sum) = (0usize, 0i128);
        for r in &live {
            let (value, label) = r.row.split_at(8.min(r.row.len()));
            sum += i64::from_le_bytes(value.try_into().unwrap_or([0; 8])) as i128;
            label_bytes += label.len();
            labels.lp(label);
        }
        json!({"label_bytes": label_bytes, "label_fnv": labels.hex(), "value_sum": sum.to_string()})
    });
    let sealed_first = records.iter().map(|r| r.first_ts).min();
    let sealed_last = records.iter().map(|r| r.last_ts).max();
    let span = stream.span();
    Ok(json!({
        "name": stream.name,
        "sealed_segment_count": records.len(),
        "rows_per_segment": records.iter().map(|r| r.rows).collect::<Vec<_>>(),
        "segment_seqs": records.iter().map(|r| r.seq).collect::<Vec<_>>(),
        "sealed_rows": stream.sealed_rows,
        "sealed_first_ts": sealed_first,
        "sealed_last_ts": sealed_last,
        "sealed_bytes": stream.sealed_bytes(),
        "live_wal_rows": stream.live_rows,
        "live_wal_first_ts": stream.live_span.map(|s| s[0]),
        "live_wal_last_ts": stream.live_span.map(|s| s[1]),
        "wal_rows_total": wal_total,
        "wal_rows_shadowed": wal_total - stream.live_rows,
        "total_rows": stream.sealed_rows + stream.live_rows,
        "first_ts": span.map(|s| s.0),
        "last_ts": span.map(|s| s.1),
        "caller_index_present": records.iter().any(|r| r.caller_index),
        "caller_index_segments": records.iter().filter(|r| r.caller_index).count(),
        "caller_rows_count": stream.caller_rows,
        "decoded_sealed": {"rows": decoded_rows, "value_sum": value_sum.to_string()},
        "segments": segments,
        "live_tail": {
            "rows": live.len(),
            "first_ts": live.first().map(|r| r.ts),
            "last_ts": live.last().map(|r| r.ts),
            "raw_fnv": raw.hex(),
            "wall_offset_sum": live.iter().map(|r| r.wall_offset as i128).sum::<i128>().to_string(),
            "ts_strictly_increasing": live.windows(2).all(|w| w[0].ts < w[1].ts),
            "as_fixture_rows": as_fixture_rows,
        },
    }))
}

/// Decodes a segment generically: per column its type, count, nulls, and
/// for Int64 the sum/min/max, for Utf8 the byte total and digest.
fn decoded_view(
    archive: &Archive,
    record: &dendro::SegmentRecord,
    bytes: &[u8],
) -> Result<Value, Error> {
    let meta = parquet_meta(bytes);
    let batches = dendro::read::decode(archive, record, bytes.to_vec(), None)?;
    let Some(schema) = batches.first().map(|b| b.schema()) else {
        return Ok(json!({"rows": 0, "columns": []}));
    };
    let batch =
        dendro::segment::concat(&schema, &batches).expect("batches of one schema concatenate");
    let mut columns = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        let array = batch.column(i);
        let mut column = json!({
            "name": field.name(),
            "type": format!("{}", field.data_type()),
            "count": array.len(),
            "nulls": array.null_count(),
        });
        if let Some(ints) = array.as_primitive_opt::<Int64Type>() {
            let values: Vec<i64> = ints.iter().flatten().collect();
            column["sum"] = json!(values.iter().map(|&v| v as i128).sum::<i128>().to_string());
            column["min"] = json!(values.iter().min());
            column["max"] = json!(values.iter().max());
        } else if let Some(strings) = array.as_string_opt::<i32>() {
            let mut fnv = Fnv::new();
            let mut total = 0usize;
            for s in strings.iter() {
                let s = s.unwrap_or("");
                total += s.len();
                fnv.lp(s.as_bytes());
            }
            column["bytes"] = json!(total);
            column["fnv"] = json!(fnv.hex());
        }
        columns.push(column);
    }
    let ts: Option<Vec<i64>> = schema.index_of("ts").ok().and_then(|i| {
        batch
            .column(i)
            .as_primitive_opt::<Int64Type>()
            .map(|a| a.iter().flatten().collect())
    });
    let ts_first = ts.as_ref().and_then(|t| t.first().copied());
    let ts_last = ts.as_ref().and_then(|t| t.last().copied());
    Ok(json!({
        "ok": true,
        "rows": batch.num_rows(),
        "row_groups": meta.0,
        "codecs": meta.1,
        "columns": columns,
        "ts_column": ts.as_ref().map(|_| "ts"),
        "ts_first": ts_first,
        "ts_last": ts_last,
        "ts_sorted": ts.as_ref().map(|t| t.windows(2).all(|w| w[0] <= w[1])),
        "ts_strictly_increasing": ts.as_ref().map(|t| t.windows(2).all(|w| w[0] < w[1])),
        "matches_catalog": batch.num_rows() as i64 == record.rows
            && ts_first == Some(record.first_ts)
            && ts_last == Some(record.last_ts),
    }))
}

/// Row groups and the distinct codecs, from the footer.
fn parquet_meta(bytes: &[u8]) -> (usize, Vec<String>) {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let Ok(reader) = SerializedFileReader::new(bytes::Bytes::copy_from_slice(bytes)) else {
        return (0, vec![]);
    };
    let meta = reader.metadata();
    let mut codecs: Vec<String> = meta
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns().iter().map(|c| format!("{}", c.compression())))
        .collect();
    codecs.sort();
    codecs.dedup();
    (meta.num_row_groups(), codecs)
}

/// Compares a manifest with what we observed. Returns one line per
/// disagreement, and one per manifest key we neither compared nor listed in
/// `NOT_COMPARED`, so coverage cannot silently shrink.
pub fn compare(expected: &Value, observed: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk("", "", expected, observed, &mut out);
    out
}

fn walk(path: &str, shape: &str, expected: &Value, observed: &Value, out: &mut Vec<String>) {
    match (expected, observed) {
        (Value::Object(e), Value::Object(o)) => {
            for (key, ev) in e {
                let sub = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                let sub_shape = if shape.is_empty() {
                    key.clone()
                } else {
                    format!("{shape}.{key}")
                };
                if NOT_COMPARED.contains(&sub_shape.as_str()) {
                    continue;
                }
                // caller_rows is keyed by name: the names are data, not shape.
                let child_shape = if shape.ends_with("caller_rows") {
                    shape.to_string()
                } else {
                    sub_shape
                };
                match o.get(key) {
                    Some(ov) => walk(&sub, &child_shape, ev, ov, out),
                    None => out.push(format!("{sub}: not compared (manifest has {ev})")),
                }
            }
            if shape.ends_with("caller_rows") {
                for key in o.keys().filter(|k| !e.contains_key(*k)) {
                    out.push(format!(
                        "{path}.{key}: we report caller rows the manifest does not have"
                    ));
                }
            }
        }
        (Value::Array(e), Value::Array(o)) if e.len() == o.len() => {
            for (i, (ev, ov)) in e.iter().zip(o).enumerate() {
                walk(&format!("{path}[{i}]"), shape, ev, ov, out);
            }
        }
        (e, o) if numbers_equal(e, o) || e == o => {}
        (e, o) => out.push(format!("{path}: manifest {e}, ours {o}")),
    }
}

fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x.as_i64().zip(y.as_i64()).is_some_and(|(x, y)| x == y)
                || x.as_u64().zip(y.as_u64()).is_some_and(|(x, y)| x == y)
        }
        _ => false,
    }
}

/// What the manifest says an open of a refused file must produce.
pub fn expected_refusal(manifest: &Value) -> Option<String> {
    if manifest["open"]["ok"].as_bool() == Some(false) {
        manifest["open"]["error"]["kind"]
            .as_str()
            .map(str::to_string)
    } else {
        None
    }
}

/// Our error kinds, mapped onto the original's names: it reports damage
/// found by SQLite as a `Sqlite` error with code `DatabaseCorrupt`.
pub fn kind_matches(expected: &str, ours: &Error) -> bool {
    ours.kind() == expected || (expected == "Sqlite" && ours.kind() == "Corrupt")
}

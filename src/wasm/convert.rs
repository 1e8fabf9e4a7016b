//! Reader answers as JavaScript values: describe, schemas, decoded
//! columns as typed arrays, envelopes and verify reports. Only shape
//! changes happen here; every decision is made in the reader modules.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Float16Type, Float32Type, Float64Type, Int16Type,
    Int32Type, Int8Type, Time32MillisecondType, Time32SecondType, Time64MicrosecondType,
    Time64NanosecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema, TimeUnit};
use js_sys::{
    BigInt64Array, BigUint64Array, Float32Array, Float64Array, Int16Array, Int32Array, Int8Array,
    Uint16Array, Uint32Array, Uint8Array,
};
use wasm_bindgen::JsValue;

use super::js::{big, labels, num, record, Obj};
use crate::catalog::{DocumentEntry, DocumentRevision};
use crate::read::columns::{display_value, time_values, ts_column, type_name};
use crate::read::envelope::Envelope;
use crate::read::range::Preview;
use crate::read::{Description, SegmentDescription, SourceDescription, StreamDescription};
use crate::reserved::{Event, ProducerEpoch, Reserved, WriterSession};
use crate::verify::VerifyReport;

fn array_of<T>(
    items: impl ExactSizeIterator<Item = T>,
    mut f: impl FnMut(T) -> JsValue,
) -> JsValue {
    let out = js_sys::Array::new_with_length(items.len() as u32);
    for (i, item) in items.enumerate() {
        out.set(i as u32, f(item));
    }
    out.into()
}

fn segment(s: &SegmentDescription) -> JsValue {
    Obj::new()
        .set("seq", num(s.seq))
        .set("rows", num(s.rows))
        .set("first_ts", big(s.first_ts))
        .set("last_ts", big(s.last_ts))
        .set("bytes", num(s.bytes))
        .set("caller_index", s.caller_index)
        .build()
}

fn stream(s: &StreamDescription) -> JsValue {
    stream_with(s, array_of(s.segments.iter(), segment))
}

/// A stream, its segments given as `segments` (objects, or a packed run).
fn stream_with(s: &StreamDescription, segments: JsValue) -> JsValue {
    let live_span = match s.live_span {
        Some([a, b]) => array_of([a, b].into_iter(), big),
        None => JsValue::NULL,
    };
    Obj::new()
        .set("name", s.name.as_str())
        .set("segments", segments)
        .set("sealed_rows", num(s.sealed_rows))
        .set("live_rows", num(s.live_rows))
        .set("live_span", live_span)
        .set("caller_rows", num(s.caller_rows))
        .build()
}

fn source(s: &SourceDescription) -> JsValue {
    source_with(s, array_of(s.streams.iter(), stream))
}

/// A source, its streams given as `streams`.
fn source_with(s: &SourceDescription, streams: JsValue) -> JsValue {
    Obj::new()
        .set("id", num(s.id))
        .set(
            "uuid",
            s.source
                .uuid
                .as_deref()
                .map_or(JsValue::NULL, JsValue::from_str),
        )
        .set("labels", labels(&s.source.labels))
        .set("metadata", labels(&s.source.metadata))
        .set("reserved", reserved(&s.source.metadata))
        .set("complete", s.source.complete)
        // Whether the engine reads this source's live tails (the
        // self-describing encoder wrote them); readRange then includes them.
        .set(
            "live_readable",
            crate::typed::reader_for(&s.source.metadata).is_some(),
        )
        .set("clock_anchor_wall_ns", big(s.source.clock_anchor_wall_ns))
        .set("streams", streams)
        .set(
            "caller_row_names",
            array_of(s.caller_row_names.iter(), |n| JsValue::from_str(n)),
        )
        .set(
            "caller_row_counts",
            record(
                s.caller_row_names
                    .iter()
                    .zip(&s.caller_row_counts)
                    .map(|(n, &c)| (n.as_str(), num(c))),
            ),
        )
        .build()
}

/// `Description` of types.ts: `describe --json` with BigInt timestamps.
pub(crate) fn description(d: &Description) -> JsValue {
    Obj::new()
        .set("file_bytes", JsValue::from_f64(d.file_bytes as f64))
        .set("schema_version", d.schema_version)
        .set("sources", array_of(d.sources.iter(), source))
        .set("caller_indexes", d.caller_indexes.name())
        .set("documents", documents(&d.documents))
        .build()
}

/// `DocumentInfo[]` of types.ts: each document without its body.
fn documents(entries: &[DocumentEntry]) -> JsValue {
    array_of(entries.iter(), |e| {
        Obj::new()
            .set("kind", e.kind.as_str())
            .set("name", e.name.as_str())
            .set("current", num(e.current))
            .set("revisions", JsValue::from_f64(e.revisions as f64))
            .set("deleted", e.deleted)
            .build()
    })
}

/// `DocumentRevision[]` of types.ts: a document's revisions, oldest
/// first, bodies verbatim (text for the page to show as text).
pub(crate) fn document_history(revisions: &[DocumentRevision]) -> JsValue {
    let text = |t: &Option<String>| t.as_deref().map_or(JsValue::NULL, JsValue::from_str);
    array_of(revisions.iter(), |r| {
        Obj::new()
            .set("id", num(r.id))
            .set("uuid", r.uuid.as_str())
            .set("kind", r.kind.as_str())
            .set("name", r.name.as_str())
            .set("schema", text(&r.schema))
            .set("body", text(&r.body))
            .set("created_wall_ns", big(r.created_wall_ns))
            .set("supersedes", r.supersedes.map_or(JsValue::NULL, num))
            .set("deleted", r.is_deletion())
            .build()
    })
}

/// `PackedDescription` of www/src/engine/packing.ts: the description with
/// every segment of the archive in one typed array per field, each stream
/// naming its run `{ start, end }` of them. Built here rather than from
/// [`description`]'s objects: 100,000 segments are 600,000 property sets
/// across the boundary there, six array copies here.
pub(crate) fn packed_description(d: &Description) -> JsValue {
    packed_with(d, &|_, _| None)
}

/// An outline (`describeOutline`): the packed description of its sources
/// and streams, which list no segments, with `outline: true`, and on each
/// stream with sealed data `outline: { segments, first_ts, last_ts,
/// rows_estimate }`.
pub(crate) fn packed_outline(o: &crate::read::Outline) -> JsValue {
    let packed = packed_with(&o.description, &|source_id, name| {
        let at = o
            .sealed
            .binary_search_by(|s| (s.source_id, s.stream.as_str()).cmp(&(source_id, name)))
            .ok()?;
        let s = &o.sealed[at];
        Some(
            Obj::new()
                .set("segments", num(s.segments))
                .set("first_ts", big(s.first_ts))
                .set("last_ts", big(s.last_ts))
                .set("rows_estimate", num(s.rows_estimate()))
                .build(),
        )
    });
    let _ = js_sys::Reflect::set(&packed, &JsValue::from_str("outline"), &JsValue::TRUE);
    packed
}

/// [`packed_description`], each stream given the `outline` property
/// `extra` returns for its `(source id, name)`, if any.
fn packed_with(d: &Description, extra: &dyn Fn(i64, &str) -> Option<JsValue>) -> JsValue {
    let n: usize = d
        .sources
        .iter()
        .flat_map(|s| &s.streams)
        .map(|s| s.segments.len())
        .sum();
    let mut seq = Vec::with_capacity(n);
    let mut rows = Vec::with_capacity(n);
    let mut first_ts = Vec::with_capacity(n);
    let mut last_ts = Vec::with_capacity(n);
    let mut bytes = Vec::with_capacity(n);
    let mut caller_index = Vec::with_capacity(n);
    let sources = array_of(d.sources.iter(), |src| {
        let streams = array_of(src.streams.iter(), |st| {
            let start = seq.len();
            for g in &st.segments {
                seq.push(g.seq as f64);
                rows.push(g.rows as f64);
                first_ts.push(g.first_ts);
                last_ts.push(g.last_ts);
                bytes.push(g.bytes as f64);
                caller_index.push(u8::from(g.caller_index));
            }
            let run = Obj::new()
                .set("start", start as f64)
                .set("end", seq.len() as f64)
                .build();
            let js = stream_with(st, run);
            if let Some(outline) = extra(src.id, &st.name) {
                let _ = js_sys::Reflect::set(&js, &JsValue::from_str("outline"), &outline);
            }
            js
        });
        source_with(src, streams)
    });
    let segments = Obj::new()
        .set("seq", Float64Array::from(&seq[..]))
        .set("rows", Float64Array::from(&rows[..]))
        .set("first_ts", BigInt64Array::from(&first_ts[..]))
        .set("last_ts", BigInt64Array::from(&last_ts[..]))
        .set("bytes", Float64Array::from(&bytes[..]))
        .set("caller_index", Uint8Array::from(&caller_index[..]))
        .build();
    Obj::new()
        .set("file_bytes", JsValue::from_f64(d.file_bytes as f64))
        .set("schema_version", d.schema_version)
        .set("sources", sources)
        .set("segments", segments)
        .set("caller_indexes", d.caller_indexes.name())
        .set("documents", documents(&d.documents))
        .build()
}

/// `StreamSchema` of types.ts; `None` (no sealed segment) has no columns.
pub(crate) fn schema(schema: Option<&Schema>) -> JsValue {
    let Some(schema) = schema else {
        return Obj::new()
            .set("columns", js_sys::Array::new())
            .set("ts_column", JsValue::NULL)
            .build();
    };
    let columns = array_of(schema.fields().iter(), |f| {
        let metadata: crate::catalog::Labels = f
            .metadata()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let column = Obj::new()
            .set("name", f.name().as_str())
            .set("type", type_name(f.data_type()))
            .set("nullable", f.is_nullable())
            .set("metadata", labels(&metadata));
        // A malformed histogram is reported when it is read, not here.
        match crate::read::distribution::histogram_of(f) {
            Ok(Some(h)) => column.set("histogram", super::distribution::histogram_info(&h)),
            _ => column,
        }
        .build()
    });
    let ts = ts_column(schema).map_or(JsValue::NULL, |i| JsValue::from_str(schema.field(i).name()));
    Obj::new()
        .set("columns", columns)
        .set("ts_column", ts)
        .build()
}

fn prim<T: arrow_array::ArrowPrimitiveType>(array: &dyn Array) -> &[T::Native] {
    array.as_primitive::<T>().values()
}

/// A column's values in the typed-array form types.ts names for its type,
/// or display strings for types with none.
fn values(array: &dyn Array) -> JsValue {
    match array.data_type() {
        DataType::Int8 => Int8Array::from(prim::<Int8Type>(array)).into(),
        DataType::Int16 => Int16Array::from(prim::<Int16Type>(array)).into(),
        DataType::Int32 => Int32Array::from(prim::<Int32Type>(array)).into(),
        DataType::Int64 | DataType::Timestamp(_, _) => {
            BigInt64Array::from(time_values(array).unwrap_or(&[])).into()
        }
        DataType::UInt8 => Uint8Array::from(prim::<UInt8Type>(array)).into(),
        DataType::UInt16 => Uint16Array::from(prim::<UInt16Type>(array)).into(),
        DataType::UInt32 => Uint32Array::from(prim::<UInt32Type>(array)).into(),
        DataType::UInt64 => BigUint64Array::from(prim::<UInt64Type>(array)).into(),
        DataType::Float16 => {
            let wide: Vec<f32> = prim::<Float16Type>(array)
                .iter()
                .map(|v| v.to_f32())
                .collect();
            Float32Array::from(&wide[..]).into()
        }
        DataType::Float32 => Float32Array::from(prim::<Float32Type>(array)).into(),
        DataType::Float64 => Float64Array::from(prim::<Float64Type>(array)).into(),
        DataType::Date32 => Int32Array::from(prim::<Date32Type>(array)).into(),
        DataType::Date64 => BigInt64Array::from(prim::<Date64Type>(array)).into(),
        DataType::Time32(TimeUnit::Second) => {
            Int32Array::from(prim::<Time32SecondType>(array)).into()
        }
        DataType::Time32(_) => Int32Array::from(prim::<Time32MillisecondType>(array)).into(),
        DataType::Time64(TimeUnit::Microsecond) => {
            BigInt64Array::from(prim::<Time64MicrosecondType>(array)).into()
        }
        DataType::Time64(_) => BigInt64Array::from(prim::<Time64NanosecondType>(array)).into(),
        DataType::Duration(TimeUnit::Second) => {
            BigInt64Array::from(prim::<DurationSecondType>(array)).into()
        }
        DataType::Duration(TimeUnit::Millisecond) => {
            BigInt64Array::from(prim::<DurationMillisecondType>(array)).into()
        }
        DataType::Duration(TimeUnit::Microsecond) => {
            BigInt64Array::from(prim::<DurationMicrosecondType>(array)).into()
        }
        DataType::Duration(TimeUnit::Nanosecond) => {
            BigInt64Array::from(prim::<DurationNanosecondType>(array)).into()
        }
        DataType::Boolean => {
            let bools = array.as_boolean();
            let bytes: Vec<u8> = (0..bools.len()).map(|i| u8::from(bools.value(i))).collect();
            Uint8Array::from(&bytes[..]).into()
        }
        DataType::Utf8 => strings(array.as_string::<i32>().iter()),
        DataType::LargeUtf8 => strings(array.as_string::<i64>().iter()),
        DataType::Utf8View => strings(array.as_string_view().iter()),
        _ => array_of(0..array.len(), |i| {
            display_value(array, i).map_or(JsValue::NULL, |s| JsValue::from_str(&s))
        }),
    }
}

fn strings<'a>(items: impl ExactSizeIterator<Item = Option<&'a str>>) -> JsValue {
    array_of(items, |s| s.map_or(JsValue::NULL, JsValue::from_str))
}

/// `DecodedBatch` of types.ts.
pub(crate) fn batch(batch: &RecordBatch) -> JsValue {
    let schema = batch.schema();
    let columns = array_of(schema.fields().iter().zip(batch.columns()), |(f, a)| {
        let column = Obj::new()
            .set("name", f.name().as_str())
            .set("type", type_name(f.data_type()))
            .set("values", values(a.as_ref()));
        match a.logical_nulls().filter(|n| n.null_count() > 0) {
            Some(nulls) => {
                let flags: Vec<u8> = nulls.iter().map(|valid| u8::from(!valid)).collect();
                column.set("nulls", Uint8Array::from(&flags[..])).build()
            }
            None => column.build(),
        }
    });
    Obj::new()
        .set("rows", batch.num_rows() as u32)
        .set("columns", columns)
        .build()
}

/// `RangeEnvelope` of types.ts.
pub(crate) fn envelope(e: &Envelope) -> JsValue {
    envelope_obj(e, None).build()
}

/// The `RangeEnvelope` of a preview from footer statistics: the envelope
/// with `preview: true`, the segments without a summary, and per column
/// `gaps`, the segments whose footer does not know its extremes.
pub(crate) fn preview(p: &Preview) -> JsValue {
    envelope_obj(&p.envelope, Some(&p.column_gaps))
        .set("preview", true)
        .set("segments_unsummarized", p.segments_unsummarized as u32)
        .build()
}

fn envelope_obj(e: &Envelope, gaps: Option<&[usize]>) -> Obj {
    let columns = array_of(e.columns.iter().enumerate(), |(i, c)| {
        let column = Obj::new()
            .set("name", c.name.as_str())
            .set("min", Float64Array::from(&c.min[..]))
            .set("max", Float64Array::from(&c.max[..]));
        match gaps.and_then(|g| g.get(i)) {
            Some(&n) => column.set("gaps", n as u32),
            None => column,
        }
        .build()
    });
    Obj::new()
        .set("rows_in_window", JsValue::from_f64(e.rows_in_window as f64))
        .set(
            "live_rows_in_window",
            JsValue::from_f64(e.live_rows_in_window as f64),
        )
        .set("segments_read", e.segments_read as u32)
        .set("segments_from_stats", e.segments_from_stats as u32)
        .set("segments_left_out", e.segments_left_out as u32)
        .set("rows_left_out", JsValue::from_f64(e.rows_left_out as f64))
        .set("reduced", e.reduced)
        .set("ts", BigInt64Array::from(&e.ts[..]))
        .set("columns", columns)
}

/// `VerifyReport` of types.ts, with the check's counts beside it.
pub(crate) fn verify(r: &VerifyReport) -> JsValue {
    let problems = array_of(r.problems.iter(), |p| {
        Obj::new()
            .set("kind", p.kind.name())
            .set("message", p.message.as_str())
            .build()
    });
    Obj::new()
        .set("file", r.file.as_str())
        .set("sound", r.sound)
        .set("problems", problems)
        .set("sources", num(r.sources))
        .set("streams", num(r.streams))
        .set("segments", num(r.segments))
        .set("wal_rows", num(r.wal_rows))
        .set("covered_wal_rows", num(r.covered_wal_rows))
        .set(
            "note",
            r.note().map_or(JsValue::NULL, |n| JsValue::from_str(&n)),
        )
        .build()
}

/// A reserved key as `Parsed<T>` of types.ts: `{ ok: true, value }` or
/// `{ ok: false, why }`.
fn parsed<T>(found: &Result<Vec<T>, String>, item: impl Fn(&T) -> JsValue) -> JsValue {
    match found {
        Ok(items) => Obj::new()
            .set("ok", true)
            .set("value", array_of(items.iter(), item))
            .build(),
        Err(why) => Obj::new().set("ok", false).set("why", why.as_str()).build(),
    }
}

fn optional_big(v: Option<i64>) -> JsValue {
    v.map_or(JsValue::NULL, big)
}

fn optional_text(v: &Option<String>) -> JsValue {
    v.as_deref().map_or(JsValue::NULL, JsValue::from_str)
}

fn writer_session(s: &WriterSession) -> JsValue {
    Obj::new()
        .set("session", s.session.as_str())
        .set("dendro", s.dendro.as_str())
        .set("clock_anchor_wall_ns", optional_big(s.clock_anchor_wall_ns))
        .set("resumed", s.resumed_after_ts.is_some())
        .set(
            "resumed_after_ts",
            optional_big(s.resumed_after_ts.flatten()),
        )
        .set("extra", labels(&s.extra))
        .build()
}

fn event(e: &Event) -> JsValue {
    Obj::new()
        .set("timestamp", big(e.timestamp))
        .set("description", e.description.as_str())
        .set("kind", optional_text(&e.kind))
        .set("details", optional_text(&e.details))
        .set("id", optional_text(&e.id))
        .build()
}

fn epoch(e: &ProducerEpoch) -> JsValue {
    Obj::new()
        .set("epoch", e.epoch.as_str())
        .set("from_ts", optional_big(e.from_ts))
        .build()
}

/// The source's reserved keys, parsed (`Reserved` of types.ts): a key is
/// present only when the metadata has it.
fn reserved(metadata: &crate::catalog::Labels) -> JsValue {
    let r = Reserved::of(metadata);
    let mut out = Obj::new();
    if let Some(found) = &r.writer_sessions {
        out = out.set("writer_sessions", parsed(found, writer_session));
    }
    if let Some(found) = &r.events {
        out = out.set("events", parsed(found, event));
    }
    if let Some(found) = &r.producer_epochs {
        out = out.set("producer_epochs", parsed(found, epoch));
    }
    out.build()
}

//! `_manifest.parquet`: the manifest as a table an engine filters before
//! it opens a data file, one row per file and source in it (a file holds
//! several sources unless the dataset is partitioned by a label that
//! tells them apart).

use std::sync::Arc;

use arrow_array::builder::{MapBuilder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch, StringArray, TimestampNanosecondArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::dataset::Manifest;

/// The table's bytes.
pub(super) fn manifest_parquet(manifest: &Manifest) -> std::result::Result<Vec<u8>, String> {
    let mut path = Vec::new();
    let mut stream = Vec::new();
    let mut date = Vec::new();
    let mut partition = Vec::new();
    let mut schema_id = Vec::new();
    let mut generation = Vec::new();
    let mut uuid = Vec::new();
    let mut labels = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
    let mut ts_min = Vec::new();
    let mut ts_max = Vec::new();
    let mut rows = Vec::new();
    let mut file_rows = Vec::new();
    let mut file_bytes = Vec::new();
    for file in &manifest.files {
        for source in &file.sources {
            path.push(file.path.clone());
            stream.push(file.stream.clone());
            date.push(file.date.clone());
            partition.push(file.partition.clone());
            schema_id.push(file.schema_id.clone());
            generation.push(file.generation);
            uuid.push(source.source_uuid.clone());
            for (key, value) in &source.labels {
                labels.keys().append_value(key);
                labels.values().append_value(value);
            }
            labels.append(true).map_err(|e| e.to_string())?;
            ts_min.push(source.ts_min);
            ts_max.push(source.ts_max);
            rows.push(source.rows);
            file_rows.push(file.rows);
            file_bytes.push(file.bytes);
        }
    }
    let labels = labels.finish();
    let time = DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()));
    let utc = |v: Vec<i64>| -> ArrayRef {
        Arc::new(TimestampNanosecondArray::from(v).with_timezone("UTC"))
    };
    let schema = Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("stream", DataType::Utf8, false),
        Field::new("date", DataType::Utf8, false),
        Field::new("partition", DataType::Utf8, true),
        Field::new("schema_id", DataType::Utf8, false),
        Field::new("generation", DataType::UInt64, false),
        Field::new("source_uuid", DataType::Utf8, false),
        Field::new(
            "labels",
            arrow_array::Array::data_type(&labels).clone(),
            false,
        ),
        Field::new("ts_min", time.clone(), false),
        Field::new("ts_max", time, false),
        Field::new("rows", DataType::UInt64, false),
        Field::new("file_rows", DataType::UInt64, false),
        Field::new("file_bytes", DataType::UInt64, false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(path)),
        Arc::new(StringArray::from(stream)),
        Arc::new(StringArray::from(date)),
        Arc::new(StringArray::from(partition)),
        Arc::new(StringArray::from(schema_id)),
        Arc::new(UInt64Array::from(generation)),
        Arc::new(StringArray::from(uuid)),
        Arc::new(labels),
        utc(ts_min),
        utc(ts_max),
        Arc::new(UInt64Array::from(rows)),
        Arc::new(UInt64Array::from(file_rows)),
        Arc::new(UInt64Array::from(file_bytes)),
    ];
    let batch = RecordBatch::try_new(Arc::new(schema), columns).map_err(|e| e.to_string())?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut out = Vec::new();
    let mut writer =
        ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).map_err(|e| e.to_string())?;
    writer.write(&batch).map_err(|e| e.to_string())?;
    writer.close().map_err(|e| e.to_string())?;
    Ok(out)
}

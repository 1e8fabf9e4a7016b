//! The data files: a stream's decoded rows turned into the dataset's
//! columns (`ts` as a UTC nanosecond timestamp, `source_uuid` and the
//! labels, then the stream's own columns as the segment has them), and
//! written to one file per stream, day, partition and schema until it
//! reaches the target size.
//!
//! Segments cannot pass through byte for byte: every file must carry the
//! identity columns and `ts` as a timestamp, which a segment has not, so
//! each is decoded and written again (measured in
//! docs/measurements/2026-12-07-fleet-export.md). A row group never holds
//! two sources: each source's rows are in time order, so its row groups'
//! `ts` statistics are tight and declared sorted, and its `source_uuid`
//! and label statistics are one value, so an engine skips the rest of the
//! file for a query on one host over one hour.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Int64Array, RecordBatch, StringArray, TimestampNanosecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use super::dataset::FileSource;
use crate::catalog::Labels;

/// Names the layout gives meaning to: a label of that name stays out of
/// the files (its value is in the manifest).
pub(super) const RESERVED: [&str; 4] = ["ts", "source_uuid", "stream", "date"];

/// Rows in one row group at most (engines read groups of about a million
/// rows well).
const ROW_GROUP_ROWS: usize = 1 << 20;
/// Buffered bytes at which a row group is closed early.
const ROW_GROUP_BYTES: usize = 64 << 20;

/// A stream schema's identity: its columns' names and types.
pub(super) fn schema_columns(schema: &Schema) -> Vec<[String; 2]> {
    schema
        .fields()
        .iter()
        .map(|f| [f.name().clone(), f.data_type().to_string()])
        .collect()
}

/// A short, stable id for [`schema_columns`]: FNV-1a, hex.
pub(super) fn schema_id(columns: &[[String; 2]]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for [name, ty] in columns {
        for byte in name.bytes().chain([0]).chain(ty.bytes()).chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// The columns of a file of a stream whose segments have `segment`'s
/// schema: `ts`, `source_uuid`, the labels that name no other column, the
/// stream's other columns. Returns the schema and the labels kept.
pub(super) fn file_schema(segment: &Schema, labels: &[String]) -> (SchemaRef, Vec<String>) {
    let taken =
        |name: &str| RESERVED.contains(&name) || segment.fields().iter().any(|f| f.name() == name);
    let kept: Vec<String> = labels.iter().filter(|l| !taken(l)).cloned().collect();
    let mut fields = vec![
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            false,
        ),
        Field::new("source_uuid", DataType::Utf8, false),
    ];
    fields.extend(kept.iter().map(|l| Field::new(l, DataType::Utf8, true)));
    fields.extend(
        segment
            .fields()
            .iter()
            .filter(|f| f.name() != "ts")
            .map(|f| {
                f.as_ref()
                    .clone()
                    .with_metadata(arrow_schema::Metadata::default())
            }),
    );
    (Arc::new(Schema::new(fields)), kept)
}

/// `batch` (a segment's columns, `ts` an Int64) in the file's columns.
pub(super) fn convert(
    batch: &RecordBatch,
    schema: &SchemaRef,
    labels_kept: &[String],
    uuid: &str,
    labels: &Labels,
) -> std::result::Result<RecordBatch, String> {
    let rows = batch.num_rows();
    let ts = time_column(batch)?;
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(TimestampNanosecondArray::new(ts.values().clone(), None).with_timezone("UTC")),
        Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
            uuid, rows,
        ))),
    ];
    for key in labels_kept {
        let value = labels.get(key).map(String::as_str);
        columns.push(Arc::new(StringArray::from(vec![value; rows])));
    }
    for field in schema.fields().iter().skip(2 + labels_kept.len()) {
        let column = batch
            .column_by_name(field.name())
            .ok_or_else(|| format!("column {:?} is missing", field.name()))?;
        columns.push(Arc::clone(column));
    }
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(|e| e.to_string())
}

/// The segment's `ts` column, which the format makes a non-null Int64.
pub(super) fn time_column(batch: &RecordBatch) -> std::result::Result<&Int64Array, String> {
    let column = batch
        .column_by_name("ts")
        .ok_or("the segment has no ts column")?;
    let ts = column
        .as_any()
        .downcast_ref::<Int64Array>()
        .ok_or_else(|| format!("ts is {}, not Int64", column.data_type()))?;
    if ts.null_count() > 0 {
        return Err("ts has nulls".into());
    }
    Ok(ts)
}

/// The writer settings of a data file: Snappy (every engine reads it),
/// statistics per row group, the identity columns as dictionaries (one
/// value per row group), and the order declared.
fn properties(labels_kept: &[String]) -> WriterProperties {
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
        .set_sorting_columns(Some(vec![SortingColumn {
            column_idx: 0,
            descending: false,
            nulls_first: false,
        }]))
        .set_column_dictionary_enabled(ColumnPath::from("source_uuid"), true);
    for key in labels_kept {
        builder = builder.set_column_dictionary_enabled(ColumnPath::from(key.as_str()), true);
    }
    builder.build()
}

/// One file being written under the staging directory.
pub(super) struct OpenFile {
    /// Where it is written.
    pub staged: PathBuf,
    /// Its final path in the dataset.
    pub relative: String,
    writer: ArrowWriter<File>,
    rows: u64,
    sources: Vec<FileSource>,
}

/// A finished file, ready to be renamed into place.
pub(super) struct Written {
    /// Where it was written.
    pub staged: PathBuf,
    /// Its final path in the dataset.
    pub relative: String,
    /// Rows.
    pub rows: u64,
    /// Bytes.
    pub bytes: u64,
    /// The sources in it.
    pub sources: Vec<FileSource>,
}

impl OpenFile {
    /// Creates the file (and its staging directories).
    pub fn create(
        staged: PathBuf,
        relative: String,
        schema: &SchemaRef,
        labels_kept: &[String],
    ) -> std::io::Result<OpenFile> {
        if let Some(parent) = staged.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = File::create(&staged)?;
        let writer = ArrowWriter::try_new(file, Arc::clone(schema), Some(properties(labels_kept)))
            .map_err(std::io::Error::other)?;
        Ok(OpenFile {
            staged,
            relative,
            writer,
            rows: 0,
            sources: Vec::new(),
        })
    }

    /// Appends one source's rows (in time order, after its earlier ones);
    /// a new source starts a new row group.
    pub fn write(
        &mut self,
        batch: &RecordBatch,
        uuid: &str,
        labels: &Labels,
    ) -> std::io::Result<()> {
        let rows = batch.num_rows();
        if rows == 0 {
            return Ok(());
        }
        let ts = batch
            .column(0)
            .as_any()
            .downcast_ref::<TimestampNanosecondArray>()
            .expect("convert puts ts first");
        let (first, last) = (ts.value(0), ts.value(rows - 1));
        let same = self.sources.last().is_some_and(|s| s.source_uuid == uuid);
        if !same {
            if !self.sources.is_empty() {
                self.writer.flush().map_err(std::io::Error::other)?;
            }
            self.sources.push(FileSource {
                source_uuid: uuid.to_string(),
                labels: labels.clone(),
                rows: 0,
                ts_min: first,
                ts_max: last,
            });
        }
        let source = self.sources.last_mut().expect("pushed above");
        source.rows += rows as u64;
        source.ts_min = source.ts_min.min(first);
        source.ts_max = source.ts_max.max(last);
        self.rows += rows as u64;
        self.writer.write(batch).map_err(std::io::Error::other)
    }

    /// Bytes written so far, with what is buffered.
    pub fn size(&self) -> u64 {
        (self.writer.bytes_written() + self.writer.in_progress_size()) as u64
    }

    /// Closes the file and syncs it.
    pub fn finish(self) -> std::io::Result<Written> {
        let file = self.writer.into_inner().map_err(std::io::Error::other)?;
        file.sync_all()?;
        let bytes = file.metadata()?.len();
        Ok(Written {
            staged: self.staged,
            relative: self.relative,
            rows: self.rows,
            bytes,
            sources: self.sources,
        })
    }
}

/// `YYYY-MM-DD` (UTC, proleptic Gregorian) of `ts` ns since the epoch.
pub(super) fn date_of(ts: i64) -> String {
    let (year, month, day) = civil_date(ts.div_euclid(86_400_000_000_000));
    format!("{year:04}-{month:02}-{day:02}")
}

/// Year, month and day of `days` since 1970-01-01 (proleptic Gregorian,
/// Howard Hinnant's days-to-civil: exact for any day an i64 of ns holds).
pub fn civil_date(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The first `ts` of the day after the one holding `ts`.
pub(super) fn next_day(ts: i64) -> i64 {
    const DAY: i64 = 86_400_000_000_000;
    ts.div_euclid(DAY).saturating_add(1).saturating_mul(DAY)
}

/// Removes `path` if it is there, for cleaning up after a failed run.
pub(super) fn remove_quietly(path: &Path) {
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_days() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(-1), "1969-12-31");
        assert_eq!(date_of(1_796_601_600_000_000_000), "2026-12-07");
        assert_eq!(date_of(1_796_601_600_000_000_000 - 1), "2026-12-06");
        assert_eq!(date_of(951_782_400_000_000_000), "2000-02-29");
        assert_eq!(next_day(1), 86_400_000_000_000);
        assert_eq!(next_day(-1), 0);
    }

    #[test]
    fn a_label_naming_a_column_stays_out_of_the_file() {
        let segment = Schema::new(vec![
            Field::new("ts", DataType::Int64, false),
            Field::new("host", DataType::Float64, false),
        ]);
        let labels = [
            "host".to_string(),
            "region".into(),
            "date".into(),
            "ts".into(),
        ];
        let (schema, kept) = file_schema(&segment, &labels);
        assert_eq!(kept, ["region"]);
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["ts", "source_uuid", "region", "host"]);
    }

    #[test]
    fn schema_ids_tell_schemas_apart() {
        let a = vec![["ts".to_string(), "Int64".to_string()]];
        let b = vec![["ts".to_string(), "Float64".to_string()]];
        let c = vec![["tsI".to_string(), "nt64".to_string()]];
        assert_ne!(schema_id(&a), schema_id(&b));
        assert_ne!(schema_id(&a), schema_id(&c));
        assert_eq!(schema_id(&a), schema_id(&a.clone()));
    }
}

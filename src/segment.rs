//! The encoder boundary (format §4 rules 4 and 7): the caller turns rows
//! into a Parquet segment, and dendro checks the answer before trusting it.
//! Also the Parquet settings every segment dendro writes uses, and decoding
//! for readers that want columns rather than bytes.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::{
    ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{parquet_to_arrow_field_levels, ArrowWriter, ProjectionMask};
use parquet::basic::Compression;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader, ParquetStatisticsPolicy};
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use crate::catalog::{Labels, WalRow};
use crate::error::{Error, Result};
use crate::keys;

// Called on 32-bit targets only (see its docs); tested on every target.
#[cfg_attr(not(target_pointer_width = "32"), allow(dead_code))]
mod byte_arrays;
mod footer;
mod guard;
mod pages;
mod thrift;

/// Parquet's magic, at both ends of every segment.
pub const PARQUET_MAGIC: &[u8; 4] = b"PAR1";

/// One encoded run of a stream's rows, and what the encoder says it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// One Parquet file.
    pub bytes: Vec<u8>,
    /// Rows in the file (the encoder may have dropped a leading run).
    pub rows: i64,
    /// Timestamp of the file's first row.
    pub first_ts: i64,
    /// Timestamp of the file's last row.
    pub last_ts: i64,
    /// The caller's own index over the segment, stored verbatim.
    pub caller_index: Option<Vec<u8>>,
}

/// Turns a stream's rows into a segment. The only code that knows what a
/// row means; it must work from the rows alone, because an unrelated reader
/// process calls it to materialize a live tail.
pub trait SegmentEncoder: Send + Sync {
    /// Encodes `rows` (ts-ordered, non-empty) of `stream`. `Ok(None)` means
    /// nothing in them is encodable. The segment may drop a leading run the
    /// encoder cannot decode, but never the last row.
    fn encode(&self, stream: &str, rows: &[WalRow])
        -> std::result::Result<Option<Segment>, String>;

    /// The row encoding's version, stored as the `encoder` metadata key and
    /// checked by readers. `None` opts out of the check.
    fn version(&self) -> Option<String> {
        None
    }
}

/// The writer properties of every segment dendro writes: LZ4_RAW and no
/// dictionaries (dictionary state, not row data, sets peak memory during a
/// seal, and monotonic numeric columns gain nothing from it). Statistics
/// stay at Parquet's default, per column chunk and page, said out loud
/// because the viewer's envelope reads a segment's extremes from them
/// instead of decoding it (`read::stats`).
pub fn writer_props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::LZ4_RAW)
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Page)
        .build()
}

/// Writes one record batch as a segment's Parquet bytes with [`writer_props`].
pub fn encode_batch(batch: &RecordBatch) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), Some(writer_props()))
        .map_err(|e| e.to_string())?;
    writer.write(batch).map_err(|e| e.to_string())?;
    writer.close().map_err(|e| e.to_string())?;
    Ok(out)
}

/// The segment an encoder answers for `rows` when `batch` holds all of
/// them, one record per row: the batch's bytes with the rows' count and
/// span, and no caller index.
pub fn segment_of_rows(
    rows: &[WalRow],
    batch: &RecordBatch,
) -> std::result::Result<Segment, String> {
    Ok(Segment {
        bytes: encode_batch(batch)?,
        rows: rows.len() as i64,
        first_ts: rows.first().map_or(0, |r| r.ts),
        last_ts: rows.last().map_or(0, |r| r.ts),
        caller_index: None,
    })
}

/// Runs the encoder over `rows` and checks its answer against them: the
/// same check at seal time and at read time, so a reader and the next seal
/// agree about a tail. A segment must hold between one row and as many as
/// it was given, end at the input's last row, start at one of the input's
/// timestamps, and be Parquet by its magic.
pub fn materialize(
    file: &str,
    encoder: &dyn SegmentEncoder,
    stream: &str,
    rows: &[WalRow],
) -> Result<Option<Segment>> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Ok(None);
    };
    let fail = |message: String| Error::Encoder {
        file: file.to_string(),
        stream: stream.to_string(),
        message,
    };
    let segment = match encoder.encode(stream, rows) {
        Ok(Some(segment)) => segment,
        Ok(None) => return Ok(None),
        Err(message) => return Err(fail(message)),
    };
    if segment.last_ts != last.ts {
        return Err(fail(format!(
            "segment ends at {} but its input ends at {}",
            segment.last_ts, last.ts
        )));
    }
    if segment.first_ts < first.ts || segment.first_ts > segment.last_ts {
        return Err(fail(format!(
            "segment starts at {}, outside its input [{}, {}]",
            segment.first_ts, first.ts, last.ts
        )));
    }
    let at_or_after = rows.len() - rows.partition_point(|r| r.ts < segment.first_ts);
    if rows.get(rows.len() - at_or_after).map(|r| r.ts) != Some(segment.first_ts) {
        return Err(fail(format!(
            "segment starts at {}, which is not one of its input rows",
            segment.first_ts
        )));
    }
    if segment.rows < 1 || segment.rows as usize > at_or_after {
        return Err(fail(format!(
            "segment reports {} rows from {} input rows at or after its first timestamp",
            segment.rows, at_or_after
        )));
    }
    if !has_parquet_magic(&segment.bytes) {
        return Err(fail("segment bytes are not a Parquet file".into()));
    }
    Ok(Some(segment))
}

/// Refuses a reader whose encoder version differs from the one that wrote
/// the source. An encoder reporting no version, or a source with no
/// `encoder` key, is never checked.
pub fn check_encoder(
    file: &str,
    source_id: i64,
    metadata: &Labels,
    encoder: &dyn SegmentEncoder,
) -> Result<()> {
    match (encoder.version(), metadata.get(keys::ENCODER)) {
        (Some(ours), Some(theirs)) if &ours != theirs => Err(Error::EncoderMismatch {
            file: file.to_string(),
            source_id,
            archive: theirs.clone(),
            ours,
        }),
        _ => Ok(()),
    }
}

/// Whether `bytes` start and end with Parquet's magic and are long enough
/// to hold a footer. Cheap: the columns are not looked at.
pub fn has_parquet_magic(bytes: &[u8]) -> bool {
    bytes.len() >= 12 && bytes.starts_with(PARQUET_MAGIC) && bytes.ends_with(PARQUET_MAGIC)
}

/// The footer of a segment held in memory, checked before a Parquet reader
/// may act on it: the magic at both ends, a declared length that fits, and
/// the footer's own numbers ([`footer::check`]).
fn checked_footer(bytes: &[u8]) -> std::result::Result<footer::Footer, String> {
    if !has_parquet_magic(bytes) {
        return Err("not a Parquet file (magic missing)".into());
    }
    let at = bytes.len() - 8;
    let length =
        u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
    if length > bytes.len() - 12 {
        return Err(format!(
            "footer claims {length} bytes but the file holds {}",
            bytes.len()
        ));
    }
    footer::check(&bytes[at - length..at], bytes.len() as u64)
}

/// Runs a decoder over untrusted bytes, turning a panic inside the Parquet
/// library into an error where the platform can catch one.
fn guarded<T>(
    work: impl FnOnce() -> std::result::Result<T, String>,
) -> std::result::Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(panic) => Err(panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .map(|s| format!("decoder panicked: {s}"))
            .unwrap_or_else(|| "decoder panicked".into())),
    }
}

/// A segment's footer, read through `read_at` (offset, buffer) from a
/// payload of `len` bytes without touching the column data: the magic at
/// both ends, the declared footer length, then the footer itself, parsed
/// and checked as a decode would check it (every column chunk inside the
/// payload, its numbers sane) before anyone acts on it.
pub fn read_footer(
    len: usize,
    mut read_at: impl FnMut(usize, &mut [u8]) -> std::result::Result<(), String>,
) -> std::result::Result<ParquetMetaData, String> {
    if len < 12 {
        return Err("not a Parquet file (magic missing)".into());
    }
    let mut head = [0u8; 4];
    let mut tail = [0u8; 8];
    read_at(0, &mut head)?;
    read_at(len - 8, &mut tail)?;
    if &head != PARQUET_MAGIC || &tail[4..] != PARQUET_MAGIC {
        return Err("not a Parquet file (magic missing)".into());
    }
    let length = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
    if length > len - 12 {
        return Err(format!(
            "footer claims {length} bytes but the file holds {len}"
        ));
    }
    let mut bytes = vec![0u8; length];
    read_at(len - 8 - length, &mut bytes)?;
    footer::check(&bytes, len as u64)?;
    guarded(|| ParquetMetaDataReader::decode_metadata(&bytes).map_err(|e| e.to_string()))
}

/// The Arrow schema of a segment, from its footer alone.
pub fn segment_schema(bytes: &[u8]) -> std::result::Result<SchemaRef, String> {
    checked_footer(bytes)?;
    let data = bytes::Bytes::copy_from_slice(bytes);
    guarded(|| {
        let builder = ParquetRecordBatchReaderBuilder::try_new(data).map_err(|e| e.to_string())?;
        Ok(builder.schema().clone())
    })
}

/// Decodes a segment into record batches, keeping only `columns` when given
/// (unknown names are ignored).
pub fn decode_segment(
    bytes: impl Into<bytes::Bytes>,
    columns: Option<&[String]>,
) -> std::result::Result<Vec<RecordBatch>, String> {
    let wanted = columns.map(<[String]>::to_vec);
    decode_segment_with(bytes, move |_| wanted)
}

/// Decodes a segment, letting `choose` pick the columns once the footer's
/// schema is known (`None`: every column; unknown names are ignored), so a
/// caller can ask for "the time column and these" without a second parse.
pub fn decode_segment_with(
    bytes: impl Into<bytes::Bytes>,
    choose: impl FnOnce(&SchemaRef) -> Option<Vec<String>>,
) -> std::result::Result<Vec<RecordBatch>, String> {
    let data: bytes::Bytes = bytes.into();
    let footer = checked_footer(&data)?;
    guarded(|| {
        // A decode reads no statistics: leaving them out of the parse
        // spares a wide footer a fifth of its parse.
        let skip = ParquetStatisticsPolicy::SkipAll;
        let options = ArrowReaderOptions::new()
            .with_column_stats_policy(skip.clone())
            .with_encoding_stats_policy(skip.clone())
            .with_size_stats_policy(skip);
        let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(data.clone(), options)
            .map_err(|e| e.to_string())?;
        let mask = match choose(builder.schema()) {
            Some(wanted) => {
                let roots: Vec<usize> = builder
                    .schema()
                    .fields()
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| wanted.iter().any(|w| w == f.name()))
                    .map(|(i, _)| i)
                    .collect();
                ProjectionMask::roots(builder.parquet_schema(), roots)
            }
            None => ProjectionMask::all(),
        };
        // Only the chunks of the leaves kept are read, so only their pages
        // need checking (a plot of 8 of 548 columns walked every page).
        let read = |leaf: usize| mask.leaf_included(leaf);
        pages::check(&data, &footer, read)?;
        #[cfg(target_pointer_width = "32")]
        byte_arrays::check_lengths(&data, builder.metadata(), read)?;
        let levels = parquet_to_arrow_field_levels(
            builder.parquet_schema(),
            mask,
            Some(builder.schema().fields()),
        )
        .map_err(|e| e.to_string())?;
        let rows = builder.metadata().file_metadata().num_rows();
        let batch = usize::try_from(rows).unwrap_or(0).clamp(1, 64 * 1024);
        // The builder's own reader would hand the decoder every page
        // unchecked; this one checks each decompressed page first.
        let groups = guard::Checked {
            data: data.clone(),
            metadata: Arc::clone(builder.metadata()),
        };
        let reader =
            ParquetRecordBatchReader::try_new_with_row_groups(&levels, &groups, batch, None)
                .map_err(|e| e.to_string())?;
        reader
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())
    })
}

/// Concatenates decoded batches into one (segments are usually one row group).
pub fn concat(
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> std::result::Result<RecordBatch, String> {
    match batches {
        [] => Ok(RecordBatch::new_empty(Arc::clone(schema))),
        [one] => Ok(one.clone()),
        many => arrow_select_concat(schema, many),
    }
}

fn arrow_select_concat(
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> std::result::Result<RecordBatch, String> {
    let columns = (0..schema.fields().len())
        .map(|i| {
            let parts: Vec<&dyn arrow_array::Array> =
                batches.iter().map(|b| b.column(i).as_ref()).collect();
            arrow_select::concat::concat(&parts).map_err(|e| e.to_string())
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(std::result::Result<Option<Segment>, String>);
    impl SegmentEncoder for Fixed {
        fn encode(&self, _: &str, _: &[WalRow]) -> std::result::Result<Option<Segment>, String> {
            self.0.clone()
        }
        fn version(&self) -> Option<String> {
            Some("v1".into())
        }
    }

    fn rows(ts: &[i64]) -> Vec<WalRow> {
        ts.iter()
            .map(|&ts| WalRow {
                ts,
                wall_offset: 0,
                row: vec![],
            })
            .collect()
    }

    fn seg(rows: i64, first_ts: i64, last_ts: i64) -> Segment {
        Segment {
            bytes: b"PAR1\0\0\0\0\0\0\0\0PAR1".to_vec(),
            rows,
            first_ts,
            last_ts,
            caller_index: None,
        }
    }

    fn check(answer: Segment, input: &[i64]) -> Result<Option<Segment>> {
        materialize("f", &Fixed(Ok(Some(answer))), "s", &rows(input))
    }

    #[test]
    fn an_honest_segment_passes_and_may_drop_a_leading_run() {
        assert!(check(seg(3, 1, 3), &[1, 2, 3]).unwrap().is_some());
        assert!(check(seg(2, 2, 3), &[1, 2, 3]).unwrap().is_some());
    }

    #[test]
    fn a_segment_contradicting_its_input_is_refused() {
        assert!(
            check(seg(3, 1, 2), &[1, 2, 3]).is_err(),
            "must end at the last row"
        );
        assert!(
            check(seg(4, 1, 3), &[1, 2, 3]).is_err(),
            "more rows than given"
        );
        assert!(check(seg(0, 1, 3), &[1, 2, 3]).is_err(), "no rows");
        assert!(
            check(seg(3, 0, 3), &[1, 2, 3]).is_err(),
            "starts before its input"
        );
        assert!(check(seg(1, 5, 3), &[1, 2, 5]).is_err(), "first after last");
        assert!(
            check(seg(2, 4, 5), &[1, 2, 5]).is_err(),
            "first is not an input row"
        );
        assert!(
            check(seg(3, 2, 3), &[1, 2, 3]).is_err(),
            "rows beyond those at or after first"
        );
        let mut not_parquet = seg(3, 1, 3);
        not_parquet.bytes = b"hello".to_vec();
        assert!(check(not_parquet, &[1, 2, 3]).is_err());
    }

    #[test]
    fn an_encoder_error_names_the_stream() {
        let err = materialize("f", &Fixed(Err("boom".into())), "cpu", &rows(&[1])).unwrap_err();
        assert!(err.to_string().contains("\"cpu\"") && err.to_string().contains("boom"));
    }

    #[test]
    fn encoder_versions_are_checked_only_when_both_sides_have_one() {
        let enc = Fixed(Ok(None));
        let mut meta = Labels::new();
        assert!(check_encoder("f", 1, &meta, &enc).is_ok());
        meta.insert(keys::ENCODER.into(), "v1".into());
        assert!(check_encoder("f", 1, &meta, &enc).is_ok());
        meta.insert(keys::ENCODER.into(), "v2".into());
        assert!(matches!(
            check_encoder("f", 1, &meta, &enc),
            Err(Error::EncoderMismatch { .. })
        ));
        struct Silent;
        impl SegmentEncoder for Silent {
            fn encode(
                &self,
                _: &str,
                _: &[WalRow],
            ) -> std::result::Result<Option<Segment>, String> {
                Ok(None)
            }
        }
        assert!(check_encoder("f", 1, &meta, &Silent).is_ok());
    }

    #[test]
    fn a_lying_footer_length_is_an_error_not_a_panic() {
        let mut bytes = b"PAR1".to_vec();
        bytes.extend_from_slice(&[0u8; 8]);
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        bytes.extend_from_slice(b"PAR1");
        assert!(decode_segment(bytes.clone(), None).is_err());
        assert!(segment_schema(&bytes).is_err());
    }

    #[test]
    fn a_decode_checks_the_pages_of_the_columns_it_reads_and_no_others() {
        use arrow_array::{ArrayRef, Int64Array};
        use arrow_schema::{DataType, Field, Schema};
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Int64, false),
        ]));
        let a: ArrayRef = Arc::new(Int64Array::from_iter_values(0..1000));
        let b: ArrayRef = Arc::new(Int64Array::from_iter_values((0..1000).map(|i| i * 3)));
        let mut bytes = encode_batch(&RecordBatch::try_new(schema, vec![a, b]).unwrap()).unwrap();
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
            .unwrap();
        // Column b's pages, headers and all, become noise.
        let (start, len) = metadata.row_group(0).column(1).byte_range();
        bytes[start as usize..(start + len) as usize].fill(0xff);
        let err = decode_segment(bytes.clone(), None).unwrap_err();
        assert!(err.contains("column chunk 1"), "{err}");
        let only_a = decode_segment(bytes, Some(&["a".to_string()])).unwrap();
        assert_eq!(only_a[0].num_columns(), 1);
        assert_eq!(only_a[0].num_rows(), 1000);
    }

    #[test]
    fn a_footer_pointing_past_the_end_is_refused_before_decoding() {
        use arrow_array::{ArrayRef, Int64Array};
        use arrow_schema::{DataType, Field, Schema};
        let schema = Arc::new(Schema::new(vec![Field::new("ts", DataType::Int64, false)]));
        let ts: ArrayRef = Arc::new(Int64Array::from_iter_values((0..4096).map(|i| i * 7919)));
        let whole = encode_batch(&RecordBatch::try_new(schema, vec![ts]).unwrap()).unwrap();
        // Drop most of the column data but keep the footer: its offsets
        // now reach past the end of what is left.
        let mut cut = whole[..4].to_vec();
        cut.extend_from_slice(&whole[whole.len() / 2..]);
        let err = decode_segment(cut.clone(), None).unwrap_err();
        assert!(err.contains("outside the file"), "{err}");
        assert!(segment_schema(&cut)
            .unwrap_err()
            .contains("outside the file"));
        assert_eq!(decode_segment(whole, None).unwrap()[0].num_rows(), 4096);
    }
}

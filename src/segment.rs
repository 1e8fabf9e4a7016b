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
use parquet::file::metadata::{
    ParquetMetaData, ParquetMetaDataOptions, ParquetMetaDataReader, ParquetStatisticsPolicy,
};
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use crate::catalog::{Labels, WalRow};
use crate::error::{Error, Result};
use crate::format::keys;

// Called on 32-bit targets only (see its docs); tested on every target.
#[cfg_attr(not(target_pointer_width = "32"), allow(dead_code))]
mod byte_arrays;
mod footer;
mod guard;
mod pages;
mod shapes;
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
    fetch_footer(bytes.len(), copy_from(bytes)).map(|(_, footer)| footer)
}

/// A `read_at` over bytes in memory. Offsets past the end are an error,
/// though the footer reads ask for none.
fn copy_from(bytes: &[u8]) -> impl FnMut(usize, &mut [u8]) -> std::result::Result<(), String> + '_ {
    |at, buf| {
        let part = at
            .checked_add(buf.len())
            .and_then(|end| bytes.get(at..end))
            .ok_or_else(|| format!("a read at {at} past the end of {} bytes", bytes.len()))?;
        buf.copy_from_slice(part);
        Ok(())
    }
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
    read_at: impl FnMut(usize, &mut [u8]) -> std::result::Result<(), String>,
) -> std::result::Result<ParquetMetaData, String> {
    let (bytes, _) = fetch_footer(len, read_at)?;
    // The column statistics are kept; the encoding and size statistics,
    // which no reader here uses, are left out of the parse.
    let options = ParquetMetaDataOptions::new()
        .with_encoding_stats_policy(ParquetStatisticsPolicy::SkipAll)
        .with_size_stats_policy(ParquetStatisticsPolicy::SkipAll);
    guarded(|| {
        ParquetMetaDataReader::decode_metadata_with_options(&bytes, Some(&options))
            .map_err(|e| e.to_string())
    })
}

/// The footer's Thrift bytes of a payload of `len` bytes, read through
/// `read_at`, and what [`footer::check`] found in them.
fn fetch_footer(
    len: usize,
    mut read_at: impl FnMut(usize, &mut [u8]) -> std::result::Result<(), String>,
) -> std::result::Result<(Vec<u8>, footer::Footer), String> {
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
    let footer = footer::check(&bytes, len as u64)?;
    Ok((bytes, footer))
}

/// What a read that needs no statistics asks the footer's parse for: a
/// decode, or a schema, reads none.
fn without_statistics() -> ArrowReaderOptions {
    let skip = ParquetStatisticsPolicy::SkipAll;
    ArrowReaderOptions::new()
        .with_column_stats_policy(skip.clone())
        .with_encoding_stats_policy(skip.clone())
        .with_size_stats_policy(skip)
}

/// What a footer's Arrow schema depends on: its Parquet schema and the
/// Arrow schema its writer embedded (every value under that key, as
/// written). Two footers equal in these convert to the same Arrow schema.
#[derive(PartialEq)]
pub struct SchemaKey {
    root: parquet::schema::types::Type,
    arrow: Vec<Option<String>>,
}

impl SchemaKey {
    /// The key of `metadata`'s schema.
    pub fn of(metadata: &ParquetMetaData) -> SchemaKey {
        let file = metadata.file_metadata();
        SchemaKey {
            root: file.schema_descr().root_schema().clone(),
            arrow: file
                .key_value_metadata()
                .into_iter()
                .flatten()
                .filter(|kv| kv.key == parquet::arrow::ARROW_SCHEMA_META_KEY)
                .map(|kv| kv.value.clone())
                .collect(),
        }
    }
}

type Converted = Option<(SchemaKey, std::result::Result<SchemaRef, String>)>;

thread_local! {
    /// The last footer's Arrow schema: a stream's segments nearly always
    /// share one, and converting it (decoding the embedded Arrow schema
    /// above all) took about 1 ms of the demo's 548 columns natively.
    static LAST_SCHEMA: std::cell::RefCell<Converted> = const { std::cell::RefCell::new(None) };
}

/// The Arrow schema a decode of a segment with this footer gives (the
/// parquet crate's conversion, the embedded Arrow schema applied),
/// converted again only when the schema differs from the last one's
/// ([`SchemaKey`]).
pub fn arrow_schema(metadata: &ParquetMetaData) -> std::result::Result<SchemaRef, String> {
    let key = SchemaKey::of(metadata);
    LAST_SCHEMA.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((known, schema)) = last.as_ref() {
            if *known == key {
                return schema.clone();
            }
        }
        let file = metadata.file_metadata();
        let schema = guarded(|| {
            parquet::arrow::parquet_to_arrow_schema(file.schema_descr(), file.key_value_metadata())
                .map_err(|e| e.to_string())
        })
        .map(Arc::new);
        *last = Some((key, schema.clone()));
        schema
    })
}

/// A segment as a decode of some of its columns reads it, fetched through
/// `read_at` from a payload of `len` bytes: its magic, its footer and the
/// column chunks of the columns `choose` keeps (given the Arrow schema, as
/// for [`decode_segment_with`]) at their offsets, and zeros in place of
/// every other chunk, which that decode never reads. A plot of 8 of 548
/// columns so fetches a few percent of each segment read in place.
///
/// `None` when `choose` keeps every column, or chunks over half the
/// segment, or when the footer cannot be read or checked: fetch the whole
/// segment then (one read), and let its decode say what is wrong in its
/// own words.
pub fn read_columns(
    len: usize,
    mut read_at: impl FnMut(usize, &mut [u8]) -> std::result::Result<(), String>,
    choose: impl FnOnce(&SchemaRef) -> Option<Vec<String>>,
) -> std::result::Result<Option<Vec<u8>>, String> {
    let Ok((meta, footer)) = fetch_footer(len, &mut read_at) else {
        return Ok(None);
    };
    let Ok(metadata) = parse_schema_only(&meta) else {
        return Ok(None);
    };
    let Ok(schema) = arrow_schema(&metadata) else {
        return Ok(None);
    };
    let Some(wanted) = choose(&schema) else {
        return Ok(None);
    };
    let roots = wanted_roots(&schema, &wanted);
    let mask = ProjectionMask::roots(metadata.file_metadata().schema_descr(), roots);
    let mut kept: Vec<(usize, usize)> = footer
        .chunks
        .iter()
        .filter(|c| mask.leaf_included(c.column))
        // footer::check placed every chunk between the magic and the footer.
        .map(|c| (c.start as usize, (c.start + c.compressed) as usize))
        .collect();
    kept.sort_unstable();
    // Chunks next to each other (columns side by side in the file) are one
    // read: each read in place has a cost of its own, so a plot of every
    // column read chunk by chunk took longer than the whole segment.
    let mut reads: Vec<(usize, usize)> = Vec::new();
    for (start, end) in kept {
        match reads.last_mut() {
            Some(last) if start <= last.1 + MERGE_GAP => last.1 = last.1.max(end),
            _ => reads.push((start, end)),
        }
    }
    let span: usize = reads.iter().map(|(start, end)| end - start).sum();
    if span > len / 2 {
        return Ok(None);
    }
    let mut bytes = vec![0u8; len];
    bytes[..4].copy_from_slice(PARQUET_MAGIC);
    // fetch_footer checked that the footer fits between the two magics.
    let at = len - 8 - meta.len();
    bytes[at..len - 8].copy_from_slice(&meta);
    bytes[len - 8..len - 4].copy_from_slice(&(meta.len() as u32).to_le_bytes());
    bytes[len - 4..].copy_from_slice(PARQUET_MAGIC);
    for (start, end) in reads {
        read_at(start, &mut bytes[start..end])?;
    }
    Ok(Some(bytes))
}

/// The positions of the top-level fields of `schema` named in `wanted`:
/// the roots a projection of those columns keeps.
fn wanted_roots(schema: &SchemaRef, wanted: &[String]) -> Vec<usize> {
    schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| wanted.iter().any(|w| w == f.name()))
        .map(|(i, _)| i)
        .collect()
}

/// Chunks this close are fetched in one read, the bytes between them
/// with them.
const MERGE_GAP: usize = 16 << 10;

/// Parses a checked footer's Thrift bytes for its schema and layout: no
/// statistics of any kind.
fn parse_schema_only(meta: &[u8]) -> std::result::Result<ParquetMetaData, String> {
    let skip = ParquetStatisticsPolicy::SkipAll;
    let options = ParquetMetaDataOptions::new()
        .with_column_stats_policy(skip.clone())
        .with_encoding_stats_policy(skip.clone())
        .with_size_stats_policy(skip);
    guarded(|| {
        ParquetMetaDataReader::decode_metadata_with_options(meta, Some(&options))
            .map_err(|e| e.to_string())
    })
}

/// The Arrow schema of a segment, from its footer alone.
pub fn segment_schema(bytes: &[u8]) -> std::result::Result<SchemaRef, String> {
    footer_schema(bytes.len(), copy_from(bytes))
}

/// The Arrow schema of a segment of `len` bytes, read through `read_at`
/// from its footer alone, checked as [`read_footer`] checks it.
pub fn footer_schema(
    len: usize,
    read_at: impl FnMut(usize, &mut [u8]) -> std::result::Result<(), String>,
) -> std::result::Result<SchemaRef, String> {
    let (meta, _) = fetch_footer(len, read_at)?;
    arrow_schema(&parse_schema_only(&meta)?)
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
    let budget = decode_budget(data.len());
    decode_segment_within(data, choose, budget)
}

/// The memory a decode of a segment of `len` bytes may fill with values
/// unless told otherwise: 1 GiB, or 256 bytes per byte of segment for a
/// larger one. Honest segments decode far below it (dendro's own reach a
/// few bytes of values per byte); a small hostile one claiming billions
/// of values is refused before the decoder allocates for them.
pub fn decode_budget(len: usize) -> u64 {
    (len as u64)
        .saturating_mul(DECODE_BYTES_PER_BYTE)
        .max(DECODE_BUDGET_FLOOR)
}

/// The least memory [`decode_budget`] allows a decode.
pub const DECODE_BUDGET_FLOOR: u64 = 1 << 30;

/// The decoded bytes [`decode_budget`] allows per byte of a segment.
const DECODE_BYTES_PER_BYTE: u64 = 256;

/// [`decode_segment_with`], filling at most `budget` bytes with decoded
/// values (an upper bound, charged page by page before each is decoded):
/// for a caller that knows its segments need more than
/// [`decode_budget`], or wants a tighter bound.
pub fn decode_segment_within(
    bytes: impl Into<bytes::Bytes>,
    choose: impl FnOnce(&SchemaRef) -> Option<Vec<String>>,
    budget: u64,
) -> std::result::Result<Vec<RecordBatch>, String> {
    let data: bytes::Bytes = bytes.into();
    let footer = checked_footer(&data)?;
    guarded(|| {
        let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(
            data.clone(),
            without_statistics(),
        )
        .map_err(|e| e.to_string())?;
        let mask = match choose(builder.schema()) {
            Some(wanted) => {
                let roots = wanted_roots(builder.schema(), &wanted);
                ProjectionMask::roots(builder.parquet_schema(), roots)
            }
            None => ProjectionMask::all(),
        };
        check_string_leaves(builder.schema(), builder.parquet_schema())?;
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
            budget: guard::Budget::new(budget),
        };
        let reader =
            ParquetRecordBatchReader::try_new_with_row_groups(&levels, &groups, batch, None)
                .map_err(|e| e.to_string())?;
        reader
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())
    })
}

/// Refuses a segment whose embedded Arrow schema makes a string of a
/// Parquet column not marked as one. The parquet crate checks a byte
/// array's UTF-8 only when the Parquet schema says the column holds UTF-8
/// (the STRING logical type or the UTF8 converted type), yet builds the
/// string array the Arrow schema asks for either way: unchecked bytes in
/// a string array, which the crate itself asserts against in a debug
/// build and which a release build hands on as if they were text.
fn check_string_leaves(
    schema: &SchemaRef,
    parquet: &parquet::schema::types::SchemaDescriptor,
) -> std::result::Result<(), String> {
    let mut leaves = Vec::new();
    for field in schema.fields() {
        arrow_leaves(field.data_type(), field.name(), &mut leaves);
    }
    // The crate pairs the two schemas leaf by leaf, depth first; a schema
    // it could not pair never got this far.
    if leaves.len() != parquet.num_columns() {
        return Ok(());
    }
    for (i, (name, is_string)) in leaves.iter().enumerate() {
        let column = parquet.column(i);
        if *is_string
            && column.physical_type() == parquet::basic::Type::BYTE_ARRAY
            && column.converted_type() != parquet::basic::ConvertedType::UTF8
        {
            return Err(format!(
                "column {name:?} is text in the segment's Arrow schema but not marked UTF-8 \
                 in its Parquet schema, so its bytes would be read as text unchecked"
            ));
        }
    }
    Ok(())
}

/// The leaves of an Arrow type, depth first, as the parquet crate pairs
/// them with Parquet columns: each with its field's name and whether it
/// is text.
fn arrow_leaves(data_type: &arrow_schema::DataType, name: &str, out: &mut Vec<(String, bool)>) {
    use arrow_schema::DataType;
    match data_type {
        DataType::Struct(fields) => {
            for f in fields {
                arrow_leaves(f.data_type(), f.name(), out);
            }
        }
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => arrow_leaves(f.data_type(), name, out),
        DataType::Dictionary(_, value) => arrow_leaves(value, name, out),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            out.push((name.to_string(), true))
        }
        _ => out.push((name.to_string(), false)),
    }
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
    fn reading_some_columns_fetches_their_chunks_and_decodes_as_the_whole() {
        use arrow_array::{ArrayRef, Int64Array, StringArray};
        use arrow_schema::{DataType, Field, Schema};
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        // Column a is noise, most of the segment; b and s compress well.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let a: ArrayRef = Arc::new(Int64Array::from_iter_values((0..20_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as i64
        })));
        let b: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..20_000).map(|i| (i % 7 != 0).then_some(i % 5)),
        ));
        let s: ArrayRef = Arc::new(StringArray::from_iter(
            (0..20_000).map(|i| (i % 5 != 0).then(|| ["x", "y"][i % 2])),
        ));
        let whole = encode_batch(&RecordBatch::try_new(schema, vec![a, b, s]).unwrap()).unwrap();
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(whole.clone()))
            .unwrap();
        let mut fetched = Vec::new();
        let mut read = |at: usize, buf: &mut [u8]| {
            fetched.push((at, buf.len()));
            buf.copy_from_slice(&whole[at..at + buf.len()]);
            Ok(())
        };
        let keep = vec!["b".to_string(), "s".to_string()];
        let sparse = read_columns(whole.len(), &mut read, |_| Some(keep.clone()))
            .unwrap()
            .expect("two of three columns");
        assert_eq!(sparse.len(), whole.len());
        let range = |c: usize| {
            let (start, len) = metadata.row_group(0).column(c).byte_range();
            start as usize..(start + len) as usize
        };
        assert!(
            sparse[range(0)].iter().all(|&b| b == 0),
            "a is never fetched"
        );
        assert!(!fetched.iter().any(|&(at, _)| range(0).contains(&at)));
        let chunk_reads = fetched
            .iter()
            .filter(|&&(at, _)| at >= range(1).start && at < range(2).end)
            .count();
        assert_eq!(chunk_reads, 1, "b and s, side by side, are one read");
        assert_eq!(sparse[range(1)], whole[range(1)]);
        assert_eq!(sparse[range(2)], whole[range(2)]);
        assert_eq!(
            decode_segment(sparse, Some(&keep)).unwrap(),
            decode_segment(whole.clone(), Some(&keep)).unwrap()
        );
        // Every column, or a footer that is not one: the whole segment.
        let mut read = |at: usize, buf: &mut [u8]| {
            buf.copy_from_slice(&whole[at..at + buf.len()]);
            Ok(())
        };
        assert_eq!(read_columns(whole.len(), &mut read, |_| None), Ok(None));
        let all = vec!["a".to_string(), "b".to_string(), "s".to_string()];
        assert_eq!(
            read_columns(whole.len(), &mut read, |_| Some(all.clone())),
            Ok(None),
            "most of the segment is read whole, in one read"
        );
        let mut cut = |at: usize, buf: &mut [u8]| {
            buf.copy_from_slice(&whole[at..at + buf.len()]);
            buf.fill(0);
            Ok(())
        };
        assert_eq!(
            read_columns(whole.len(), &mut cut, |_| Some(keep.clone())),
            Ok(None)
        );
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

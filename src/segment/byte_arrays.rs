//! A scan of the string and binary values a segment stores PLAIN, checking
//! that each length prefix fits inside its page.
//!
//! The Parquet reader adds a value's 32-bit length to its offset in a
//! `usize`. Where `usize` is 32 bits (wasm32), a length near `u32::MAX`
//! wraps the sum past its bounds check and the reader then slices out of
//! range: a panic, which aborts a wasm module. So on 32-bit targets the
//! lengths are checked first, with 64-bit arithmetic, page by page.

use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::Page;
use parquet::column::page::PageReader;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::serialized_reader::SerializedPageReader;

fn text(e: parquet::errors::ParquetError) -> String {
    e.to_string()
}

/// Walks at most `count` PLAIN byte-array values in `values`.
fn walk(values: &[u8], count: u32, column: &str) -> Result<(), String> {
    let len = values.len() as u64;
    let mut at = 0u64;
    for _ in 0..count {
        if at + 4 > len {
            break;
        }
        let i = at as usize;
        let claimed = u32::from_le_bytes([values[i], values[i + 1], values[i + 2], values[i + 3]]);
        at += 4 + claimed as u64;
        if at > len {
            return Err(format!(
                "a value of column {column:?} claims {claimed} bytes, more than its page holds"
            ));
        }
    }
    Ok(())
}

/// Skips one level block of a v1 data page (RLE, with a 4-byte length
/// prefix); `None` when the levels use another encoding or do not fit.
fn skip_levels(buf: &[u8], at: usize, encoding: Encoding) -> Option<usize> {
    if encoding != Encoding::RLE || at + 4 > buf.len() {
        return None;
    }
    let n = u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as u64;
    let end = at as u64 + 4 + n;
    (end <= buf.len() as u64).then_some(end as usize)
}

/// Checks every PLAIN byte-array value of the pages of `data` whose leaf
/// column `read` keeps (the ones a decode will read), through `metadata`,
/// the footer already parsed for that decode.
pub(super) fn check_lengths(
    data: &Bytes,
    metadata: &ParquetMetaData,
    read: impl Fn(usize) -> bool,
) -> Result<(), String> {
    let data = Arc::new(data.clone());
    let schema = metadata.file_metadata().schema_descr();
    for group in metadata.row_groups() {
        for c in (0..schema.num_columns()).filter(|&c| read(c)) {
            let column = schema.column(c);
            if column.physical_type() != PhysicalType::BYTE_ARRAY {
                continue;
            }
            let name = column.path().string();
            let (max_def, max_rep) = (column.max_def_level(), column.max_rep_level());
            let rows = usize::try_from(group.num_rows())
                .map_err(|_| format!("a row group claims {} rows", group.num_rows()))?;
            let mut pages =
                SerializedPageReader::new(Arc::clone(&data), group.column(c), rows, None)
                    .map_err(text)?;
            while let Some(page) = pages.get_next_page().map_err(text)? {
                match page {
                    Page::DictionaryPage {
                        buf,
                        num_values,
                        encoding: Encoding::PLAIN | Encoding::PLAIN_DICTIONARY,
                        ..
                    } => walk(&buf, num_values, &name)?,
                    Page::DataPage {
                        buf,
                        num_values,
                        encoding: Encoding::PLAIN,
                        def_level_encoding,
                        rep_level_encoding,
                        ..
                    } => {
                        let mut at = Some(0);
                        if max_rep > 0 {
                            at = at.and_then(|a| skip_levels(&buf, a, rep_level_encoding));
                        }
                        if max_def > 0 {
                            at = at.and_then(|a| skip_levels(&buf, a, def_level_encoding));
                        }
                        // Levels this scan cannot skip are left to the reader.
                        if let Some(at) = at {
                            walk(&buf[at..], num_values, &name)?;
                        }
                    }
                    Page::DataPageV2 {
                        buf,
                        num_values,
                        encoding: Encoding::PLAIN,
                        def_levels_byte_len,
                        rep_levels_byte_len,
                        ..
                    } => {
                        let at = def_levels_byte_len as u64 + rep_levels_byte_len as u64;
                        if at > buf.len() as u64 {
                            return Err(format!(
                                "a page of column {name:?} claims {at} bytes of levels, more than it holds"
                            ));
                        }
                        walk(&buf[at as usize..], num_values, &name)?;
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn segment(nullable: bool) -> Vec<u8> {
        let values: Vec<Option<&str>> = (0..100)
            .map(|i| (!nullable || i % 3 != 0).then_some("value"))
            .collect();
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, nullable)]));
        let column: ArrayRef = Arc::new(StringArray::from(values));
        crate::segment::encode_batch(&RecordBatch::try_new(schema, vec![column]).unwrap()).unwrap()
    }

    /// Checks every column of `bytes`, its footer parsed as a decode does.
    fn check(bytes: Vec<u8>) -> Result<(), String> {
        check_leaves(bytes, |_| true)
    }

    fn check_leaves(bytes: Vec<u8>, read: impl Fn(usize) -> bool) -> Result<(), String> {
        let bytes = Bytes::from(bytes);
        let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&bytes)
            .unwrap();
        check_lengths(&bytes, &metadata, read)
    }

    /// Where the first value's length prefix sits: 5 is the length of
    /// "value", and LZ4_RAW leaves a short run of literals readable.
    fn first_length(bytes: &[u8]) -> Option<usize> {
        bytes.windows(9).position(|w| w == b"\x05\0\0\0value")
    }

    #[test]
    fn honest_segments_pass_with_and_without_nulls() {
        for nullable in [false, true] {
            let bytes = segment(nullable);
            check(bytes).unwrap();
        }
    }

    #[test]
    fn a_length_near_u32_max_is_refused() {
        let mut bytes = segment(false);
        let at = first_length(&bytes).expect("the first value is stored as a literal");
        bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = check(bytes.clone()).unwrap_err();
        assert!(err.contains("column \"s\""), "{err}");
        // A decode that does not read the column leaves it alone.
        assert_eq!(check_leaves(bytes, |_| false), Ok(()));
    }

    #[test]
    fn walking_stops_at_the_value_count_and_checks_with_wide_arithmetic() {
        let mut page = Vec::new();
        page.extend_from_slice(&2u32.to_le_bytes());
        page.extend_from_slice(b"ab");
        page.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            walk(&page, 1, "c").is_ok(),
            "the second prefix is past the count"
        );
        assert!(walk(&page, 2, "c").is_err());
    }
}

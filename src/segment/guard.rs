//! The pages a decode reads, checked after the parquet crate decompresses
//! them and before its level and value decoders see them.
//!
//! A v1 data page compresses its levels together with its values, so the
//! walk over the file ([`super::pages`]) cannot see them; nor the value
//! section of a compressed v2 page. Decompressing such pages a second
//! time to look would double the codec's work on every nullable column
//! (every self-describing segment). Instead the decode reads its row
//! groups through [`Checked`], whose page readers hand on each page only
//! once its level runs and DELTA_BINARY_PACKED header are sound, using the
//! very buffer the decoder will decode: the check costs a walk over run
//! headers, nothing more.
//!
//! The same readers charge each page's decoded size to a [`Budget`]
//! before the decoder sees it. A run of levels or of dictionary indices
//! honestly stands for millions of values in a few bytes (a column of
//! nulls, a constant), so no ratio of values to bytes holds; without a
//! budget a segment of a kilobyte could claim 2^31 values a page and have
//! the decoder allocate until the process stopped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parquet::arrow::arrow_reader::RowGroups;
use parquet::basic::Encoding;
use parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::serialized_reader::SerializedPageReader;

use super::footer::Levels;
use super::pages::{check_delta_header, walk_runs};

/// Every row group of a segment held in memory, read through checked
/// page readers.
pub struct Checked {
    pub data: Bytes,
    pub metadata: Arc<ParquetMetaData>,
    pub budget: Arc<Budget>,
}

/// The memory one decode may fill with decoded values, in bytes, shared
/// by every column's page readers.
pub struct Budget {
    limit: u64,
    spent: AtomicU64,
}

impl Budget {
    pub fn new(limit: u64) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            spent: AtomicU64::new(0),
        })
    }

    /// Takes `bytes` from what is left, or says the page would overspend.
    fn charge(&self, bytes: u64) -> std::result::Result<(), String> {
        let before = self
            .spent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |spent| {
                Some(spent.saturating_add(bytes))
            })
            .unwrap_or(u64::MAX);
        if before.saturating_add(bytes) > self.limit {
            return Err(format!(
                "decoding it would take more than {} bytes of memory: this page \
                 alone stands for about {bytes} (decode_segment_within takes a \
                 larger budget for a segment that honestly needs one)",
                self.limit
            ));
        }
        Ok(())
    }
}

impl RowGroups for Checked {
    fn num_rows(&self) -> usize {
        self.metadata
            .row_groups()
            .iter()
            .map(|g| g.num_rows() as usize)
            .sum()
    }

    fn column_chunks(&self, column: usize) -> Result<Box<dyn PageIterator>> {
        Ok(Box::new(Chunks {
            data: Arc::new(self.data.clone()),
            metadata: Arc::clone(&self.metadata),
            budget: Arc::clone(&self.budget),
            column,
            group: 0,
        }))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(self.metadata.row_groups().iter())
    }

    fn metadata(&self) -> &ParquetMetaData {
        &self.metadata
    }
}

/// One leaf column's chunks, row group by row group.
struct Chunks {
    data: Arc<Bytes>,
    metadata: Arc<ParquetMetaData>,
    budget: Arc<Budget>,
    column: usize,
    group: usize,
}

impl Iterator for Chunks {
    type Item = Result<Box<dyn PageReader>>;

    fn next(&mut self) -> Option<Self::Item> {
        let group = self.metadata.row_groups().get(self.group)?;
        self.group += 1;
        let chunk = group.column(self.column);
        let descriptor = chunk.column_descr();
        let levels = Levels {
            definition: descriptor.max_def_level().max(0) as u16,
            repetition: descriptor.max_rep_level().max(0) as u16,
        };
        let width = value_width(descriptor.physical_type(), descriptor.type_length());
        let byte_array = descriptor.physical_type() == parquet::basic::Type::BYTE_ARRAY;
        let pages = SerializedPageReader::new(
            Arc::clone(&self.data),
            chunk,
            group.num_rows() as usize,
            None,
        );
        Some(pages.map(|inner| {
            Box::new(Pages {
                inner,
                levels,
                width,
                byte_array,
                budget: Arc::clone(&self.budget),
                longest_entry: None,
                group: self.group - 1,
                column: self.column,
                page: 0,
            }) as Box<dyn PageReader>
        }))
    }
}

impl PageIterator for Chunks {}

/// A chunk's page reader that checks each data page it hands on.
struct Pages {
    inner: SerializedPageReader<Bytes>,
    levels: Levels,
    /// The bytes of one value, for a fixed-width physical type.
    width: Option<usize>,
    /// Whether the column's values are BYTE_ARRAY.
    byte_array: bool,
    budget: Arc<Budget>,
    /// The longest entry of the chunk's byte-array dictionary, once read.
    longest_entry: Option<u64>,
    group: usize,
    column: usize,
    page: usize,
}

impl Pages {
    fn check(&mut self, page: &Page) -> Result<()> {
        let shape = Shape {
            max: self.levels,
            width: self.width,
            byte_array: self.byte_array,
        };
        if shape.byte_array && matches!(page, Page::DictionaryPage { .. }) {
            self.longest_entry = Some(longest_plain_entry(page.buffer()));
        }
        check_page(page, shape)
            .and_then(|()| {
                let cost = decoded_cost(page, shape, self.longest_entry);
                self.budget.charge(cost)
            })
            .map_err(|cause| {
                ParquetError::General(format!(
                    "page {} of column chunk {} of row group {}: {cause}",
                    self.page, self.column, self.group
                ))
            })
    }
}

impl Iterator for Pages {
    type Item = Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for Pages {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        let page = self.inner.get_next_page()?;
        if let Some(page) = &page {
            self.check(page)?;
            self.page += 1;
        }
        Ok(page)
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> Result<()> {
        self.page += 1;
        self.inner.skip_next_page()
    }

    fn supports_deferred_dictionary(&self) -> bool {
        // A deferred dictionary is a dictionary page, which has no levels.
        self.inner.supports_deferred_dictionary()
    }

    fn take_deferred_dictionary(&mut self) -> Result<Option<Page>> {
        let page = self.inner.take_deferred_dictionary()?;
        if let Some(page) = &page {
            self.check(page)?;
        }
        Ok(page)
    }

    fn at_record_boundary(&mut self) -> Result<bool> {
        self.inner.at_record_boundary()
    }
}

/// The bytes one value of a fixed-width physical type takes (what
/// BYTE_STREAM_SPLIT splits into streams); `None` for the others.
fn value_width(physical: parquet::basic::Type, type_length: i32) -> Option<usize> {
    use parquet::basic::Type;
    match physical {
        Type::INT32 | Type::FLOAT => Some(4),
        Type::INT64 | Type::DOUBLE => Some(8),
        Type::INT96 => Some(12),
        Type::FIXED_LEN_BYTE_ARRAY => usize::try_from(type_length).ok().filter(|&w| w > 0),
        _ => None,
    }
}

/// The parquet crate's BYTE_STREAM_SPLIT decoder reads each value's bytes
/// a stream's length apart, the streams' length taken from the bytes it
/// was given and the values' count from the page: a page counting more
/// values than its bytes hold makes it index past them (a panic; an abort
/// in wasm32).
fn check_split_values(
    values: &[u8],
    present: u64,
    width: usize,
) -> std::result::Result<(), String> {
    let needed = present.saturating_mul(width as u64);
    if needed > values.len() as u64 {
        return Err(format!(
            "its {present} BYTE_STREAM_SPLIT values need {needed} bytes, {} are left",
            values.len()
        ));
    }
    Ok(())
}

/// The parquet crate's PLAIN byte-array decoder divides by the count of
/// values it was told to expect (a dictionary page's entries, a v1 data
/// page's levels, a v2 data page's non-null values) whenever bytes are
/// left: a page that expects none but holds value bytes is a division by
/// zero (a panic; an abort in wasm32). No writer puts bytes there.
fn check_plain_byte_arrays(
    values: &[u8],
    expected: u64,
    encoding: Encoding,
    shape: Shape,
) -> std::result::Result<(), String> {
    if shape.byte_array && encoding == Encoding::PLAIN && expected == 0 && !values.is_empty() {
        return Err(format!(
            "it holds {} bytes of PLAIN byte-array values and counts none",
            values.len()
        ));
    }
    Ok(())
}

/// What a page is checked against: its column's maximum levels, the bytes
/// of one value (fixed-width types), and whether values are byte arrays.
#[derive(Debug, Clone, Copy)]
struct Shape {
    max: Levels,
    width: Option<usize>,
    byte_array: bool,
}

/// Checks one decompressed page of a column of `shape`.
fn check_page(page: &Page, shape: Shape) -> std::result::Result<(), String> {
    let (max, width) = (shape.max, shape.width);
    match page {
        Page::DataPage {
            buf,
            num_values,
            encoding,
            def_level_encoding,
            rep_level_encoding,
            ..
        } => {
            let rle = (
                *def_level_encoding == Encoding::RLE,
                *rep_level_encoding == Encoding::RLE,
            );
            let delta = *encoding == Encoding::DELTA_BINARY_PACKED;
            let split = width.filter(|_| *encoding == Encoding::BYTE_STREAM_SPLIT);
            let count = (delta || split.is_some()).then_some(u64::from(*num_values));
            let body = check_v1_levels(buf, rle, max, count)?;
            if let Some(at) = body.values_at {
                let present = body.present.unwrap_or(u64::from(*num_values));
                if delta {
                    check_delta_header(&buf[at..], present as i64)?;
                }
                if let Some(width) = split {
                    check_split_values(&buf[at..], present, width)?;
                }
                check_plain_byte_arrays(&buf[at..], u64::from(*num_values), *encoding, shape)?;
            }
            Ok(())
        }
        Page::DataPageV2 {
            buf,
            num_values,
            encoding,
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => {
            // Its levels were walked in the file ([`super::pages`]); here
            // they are counted. The decoder reads as many values as there
            // are definition levels at the maximum, whatever `num_nulls`
            // says: a null count that lies made an empty DELTA header look
            // honest while the decoder still read from it (an underflow
            // inside the crate, a panic).
            let (rep, def) = (*rep_levels_byte_len as usize, *def_levels_byte_len as usize);
            let at = rep + def;
            let Some(values) = buf.get(at..) else {
                return Ok(());
            };
            let present = if max.definition == 0 {
                *num_values
            } else {
                let levels = &buf[rep..at];
                let counted = walk_runs(
                    "definition",
                    max.definition,
                    levels,
                    Some(u64::from(*num_values)),
                )?;
                // Never more than the page's values: the count stops there.
                counted as u32
            };
            check_plain_byte_arrays(values, u64::from(present), *encoding, shape)?;
            match (*encoding, width) {
                (Encoding::DELTA_BINARY_PACKED, _) => {
                    check_delta_header(values, i64::from(present))
                }
                (Encoding::BYTE_STREAM_SPLIT, Some(width)) => {
                    check_split_values(values, u64::from(present), width)
                }
                _ => Ok(()),
            }
        }
        // The crate reads a byte-array dictionary with the same PLAIN
        // decoder, told to expect the page's count of entries.
        Page::DictionaryPage {
            buf, num_values, ..
        } => check_plain_byte_arrays(buf, u64::from(*num_values), Encoding::PLAIN, shape),
    }
}

/// An upper bound on the memory the decoder's output takes for `page`:
/// a value slot per level (nulls take a slot too), its validity bit and
/// list offsets, and a byte array's bytes. `longest_entry` is the chunk's
/// longest dictionary entry, which each dictionary index may copy.
fn decoded_cost(page: &Page, shape: Shape, longest_entry: Option<u64>) -> u64 {
    let slots = u64::from(page.num_values());
    let bytes = page.buffer().len() as u64;
    // A byte array's slot is its 4-byte offset; a boolean's is charged the
    // same, more than its bit.
    let value = shape.width.map_or(4, |w| w as u64);
    let per_slot = value + 1 + 4 * u64::from(shape.max.repetition);
    let slots_cost = slots.saturating_mul(per_slot);
    if !shape.byte_array {
        return slots_cost.saturating_add(bytes);
    }
    let values = match page.encoding() {
        _ if matches!(page, Page::DictionaryPage { .. }) => bytes,
        Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
            slots.saturating_mul(longest_entry.unwrap_or(bytes))
        }
        // Each value may repeat all of the one before it as its prefix:
        // no bound tighter than the page's bytes for every value.
        Encoding::DELTA_BYTE_ARRAY => slots.saturating_mul(bytes),
        // PLAIN and DELTA_LENGTH_BYTE_ARRAY hold every value's bytes.
        _ => bytes,
    };
    slots_cost.saturating_add(values)
}

/// The longest entry of a PLAIN byte-array dictionary (each a 4-byte
/// length, then its bytes); a torn last entry counts as long as the rest
/// of the page, which its decode then refuses.
fn longest_plain_entry(buf: &[u8]) -> u64 {
    let mut longest = 0u64;
    let mut at = 0usize;
    while let Some(head) = buf.get(at..at + 4) {
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        longest = longest.max(len.min(buf.len() - at - 4) as u64);
        at = at.saturating_add(4).saturating_add(len);
    }
    longest
}

/// What [`check_v1_levels`] learnt of a v1 page's body.
struct V1Body {
    /// Where its values start, when every level section was whole.
    values_at: Option<usize>,
    /// Its definition levels at the column's maximum (its non-null
    /// values), when they were counted.
    present: Option<u64>,
}

/// Walks the level sections of a v1 data page's decompressed body `data`:
/// repetition levels, then definition levels, each present only where the
/// column's maximum of its kind is above 0, each a 4-byte length and then
/// RLE-hybrid runs. `rle` says whether the header names RLE for
/// (definition, repetition); other level encodings were refused from the
/// header ([`super::pages`]). With `count` (the page's level count), the
/// definition levels at the maximum among the first `count` are counted.
/// A section longer than the page is left to the crate, which refuses it.
fn check_v1_levels(
    data: &[u8],
    rle: (bool, bool),
    max: Levels,
    count: Option<u64>,
) -> std::result::Result<V1Body, String> {
    let unreadable = V1Body {
        values_at: None,
        present: None,
    };
    let mut at = 0usize;
    let mut present = None;
    for (what, max, rle) in [
        ("repetition", max.repetition, rle.1),
        ("definition", max.definition, rle.0),
    ] {
        if max == 0 {
            continue;
        }
        if !rle {
            return Ok(unreadable);
        }
        let Some(len) = data.get(at..at + 4) else {
            return Ok(unreadable);
        };
        let len = u32::from_le_bytes(len.try_into().unwrap()) as usize;
        let Some(runs) = data.get(at + 4..(at + 4).saturating_add(len)) else {
            return Ok(unreadable);
        };
        let definition = what == "definition";
        let at_max = walk_runs(what, max, runs, count.filter(|_| definition))?;
        if definition {
            present = count.map(|_| at_max);
        }
        at += 4 + len;
    }
    Ok(V1Body {
        values_at: Some(at),
        present,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`check_page`] for a column of fixed-width (`width`) or other
    /// non-byte-array values.
    fn check(page: &Page, max: Levels, width: Option<usize>) -> std::result::Result<(), String> {
        check_page(
            page,
            Shape {
                max,
                width,
                byte_array: false,
            },
        )
    }

    #[test]
    fn plain_byte_array_values_on_a_page_or_dictionary_that_counts_none_are_refused() {
        let byte_arrays = |max| Shape {
            max,
            width: None,
            byte_array: true,
        };
        // A v1 page of no levels with value bytes after them.
        let empty = v1(&[], &[3, 0, 0, 0, b'a', b'b', b'c'], 0, Encoding::PLAIN);
        let err = check_page(&empty, byte_arrays(NULLABLE)).unwrap_err();
        assert!(err.contains("counts none"), "{err}");
        // The same bytes where the page counts a value: the decoder's to read.
        let one = v1(&[2, 1], &[3, 0, 0, 0, b'a', b'b', b'c'], 1, Encoding::PLAIN);
        check_page(&one, byte_arrays(NULLABLE)).unwrap();
        // A v2 page whose every value is null (an RLE run of two 0
        // levels), with value bytes.
        let all_null = v2_page(&[0x04, 0x00], &[1, 2, 3, 4], 2, 2, Encoding::PLAIN, false);
        assert!(check_page(&all_null, byte_arrays(NULLABLE)).is_err());
        check(&all_null, NULLABLE, None).unwrap();
        // A dictionary of no entries with bytes in it.
        let dictionary = |entries| Page::DictionaryPage {
            buf: Bytes::from(vec![1, 0, 0, 0, b'x']),
            num_values: entries,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        assert!(check_page(&dictionary(0), byte_arrays(Levels::default())).is_err());
        check_page(&dictionary(1), byte_arrays(Levels::default())).unwrap();
    }

    /// A v1 page's body: definition levels (RLE, length-prefixed), then
    /// `values`.
    fn v1(levels: &[u8], values: &[u8], num_values: u32, encoding: Encoding) -> Page {
        let mut buf = (levels.len() as u32).to_le_bytes().to_vec();
        buf.extend_from_slice(levels);
        buf.extend_from_slice(values);
        Page::DataPage {
            buf: Bytes::from(buf),
            num_values,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }
    }

    /// A v2 page of `num_values` rows: definition levels (RLE, their
    /// length in the header), then `values`.
    fn v2_page(
        levels: &[u8],
        values: &[u8],
        num_values: u32,
        num_nulls: u32,
        encoding: Encoding,
        is_compressed: bool,
    ) -> Page {
        Page::DataPageV2 {
            buf: Bytes::from([levels, values].concat()),
            num_values,
            encoding,
            num_nulls,
            num_rows: num_values,
            def_levels_byte_len: levels.len() as u32,
            rep_levels_byte_len: 0,
            is_compressed,
            statistics: None,
        }
    }

    const NULLABLE: Levels = Levels {
        definition: 1,
        repetition: 0,
    };

    #[test]
    fn a_bit_packed_run_past_its_section_is_refused() {
        // Header 0x05: bit-packed, 2 groups of 8 one-bit levels = 2 bytes;
        // only 1 follows.
        let page = v1(&[0x05, 0xff], &[0; 16], 16, Encoding::PLAIN);
        let err = check(&page, NULLABLE, None).unwrap_err();
        assert!(
            err.contains("definition levels needs 2 bytes, 1 are left"),
            "{err}"
        );
        // The same run with its bytes is sound.
        let page = v1(&[0x05, 0xff, 0xff], &[0; 128], 16, Encoding::PLAIN);
        check(&page, NULLABLE, None).unwrap();
    }

    #[test]
    fn a_column_without_levels_has_no_sections_to_walk() {
        // Bytes that would be a bad run are values here.
        let page = v1(&[0x05, 0xff], &[0; 16], 2, Encoding::PLAIN);
        check(&page, Levels::default(), None).unwrap();
    }

    /// A DELTA_BINARY_PACKED header: block 128, 4 miniblocks, `total`.
    fn delta(total: u8) -> [u8; 4] {
        [0x80, 0x01, 0x04, total]
    }

    #[test]
    fn a_delta_block_that_leaves_a_miniblock_no_values_is_refused() {
        // Block of 128 values in 200 miniblocks; then 4 in 0 miniblocks.
        for header in [
            [0x80, 0x01, 0xc8, 0x01, 0x08],
            [0x04, 0x00, 0x08, 0x00, 0x00],
        ] {
            let page = v1(&[0x10, 0x01], &header, 8, Encoding::DELTA_BINARY_PACKED);
            let err = check(&page, NULLABLE, None).unwrap_err();
            assert!(err.contains("leaves a miniblock no values"), "{err}");
        }
        // 128 values in 4 miniblocks of 32, as writers make them.
        let page = v1(
            &[0x10, 0x01],
            &[0x80, 0x01, 0x04, 0x08, 0x00],
            8,
            Encoding::DELTA_BINARY_PACKED,
        );
        check(&page, NULLABLE, None).unwrap();
    }

    #[test]
    fn a_delta_integer_longer_than_ten_bytes_is_refused_in_the_header_or_a_block() {
        // A first value of eleven bytes, each saying another follows.
        let mut header = vec![0x80, 0x01, 0x04, 0x08];
        header.extend([0xff; 10]);
        header.push(0x01);
        let page = v1(&[0x10, 0x01], &header, 8, Encoding::DELTA_BINARY_PACKED);
        let err = check(&page, NULLABLE, None).unwrap_err();
        assert!(err.contains("longer than 10 bytes"), "{err}");
        // The same in a block's minimum delta, after a whole header.
        let mut values = vec![0x80, 0x01, 0x04, 0x08, 0x00];
        values.extend([0xff; 10]);
        values.push(0x01);
        let page = v1(&[0x10, 0x01], &values, 8, Encoding::DELTA_BINARY_PACKED);
        let err = check(&page, NULLABLE, None).unwrap_err();
        assert!(err.contains("longer than 10 bytes"), "{err}");
        // Ten bytes is the longest the crate reads, and it is read.
        let mut header = vec![0x80, 0x01, 0x04, 0x08];
        header.extend([0xff; 9]);
        header.push(0x01);
        let page = v1(&[0x10, 0x01], &header, 8, Encoding::DELTA_BINARY_PACKED);
        check(&page, NULLABLE, None).unwrap();
    }

    #[test]
    fn a_delta_header_counting_none_is_refused_only_where_values_are_present() {
        // 8 levels in one RLE run of value 1: all present.
        let page = v1(&[0x10, 0x01], &delta(0), 8, Encoding::DELTA_BINARY_PACKED);
        let err = check(&page, NULLABLE, None).unwrap_err();
        assert!(err.contains("has 8 values"), "{err}");
        // All null (level 0): no values to decode, a count of 0 is honest.
        let page = v1(&[0x10, 0x00], &delta(0), 8, Encoding::DELTA_BINARY_PACKED);
        check(&page, NULLABLE, None).unwrap();
        // Bit-packed 0b0000_0100: one present among 8; padding past the
        // page's 3 levels is not counted.
        let page = v1(&[0x03, 0x04], &delta(0), 8, Encoding::DELTA_BINARY_PACKED);
        assert!(check(&page, NULLABLE, None)
            .unwrap_err()
            .contains("has 1 values"));
        let page = v1(&[0x03, 0xf8], &delta(0), 3, Encoding::DELTA_BINARY_PACKED);
        check(&page, NULLABLE, None).unwrap();
        // A count of values present is sound.
        let page = v1(&[0x10, 0x01], &delta(8), 8, Encoding::DELTA_BINARY_PACKED);
        check(&page, NULLABLE, None).unwrap();
    }

    #[test]
    fn a_pages_decoded_size_counts_every_slot_and_each_dictionary_index_at_the_longest_entry() {
        let ints = Shape {
            max: NULLABLE,
            width: Some(8),
            byte_array: false,
        };
        // Eight null levels in a few bytes still decode to eight slots.
        let nulls = v1(&[0x10, 0x00], &[], 8, Encoding::PLAIN);
        let bytes = nulls.buffer().len() as u64;
        assert_eq!(decoded_cost(&nulls, ints, None), 8 * (8 + 1) + bytes);
        let strings = Shape {
            max: NULLABLE,
            width: None,
            byte_array: true,
        };
        // Entries of 1 and 5 bytes: each index may copy the longest.
        let dictionary = [1, 0, 0, 0, b'a', 5, 0, 0, 0, b'b', b'c', b'd', b'e', b'f'];
        assert_eq!(longest_plain_entry(&dictionary), 5);
        // A torn last entry counts as long as what is left of the page.
        assert_eq!(
            longest_plain_entry(&[1, 0, 0, 0, b'a', 9, 0, 0, 0, b'b']),
            1
        );
        let indices = v1(
            &[0x08, 0x01],
            &[0x02, 0x08, 0x00],
            4,
            Encoding::RLE_DICTIONARY,
        );
        assert_eq!(
            decoded_cost(&indices, strings, Some(5)),
            4 * (4 + 1) + 4 * 5
        );
        // PLAIN byte arrays cost their own bytes.
        let plain = v1(&[0x02, 0x01], &[1, 0, 0, 0, b'z'], 1, Encoding::PLAIN);
        let bytes = plain.buffer().len() as u64;
        assert_eq!(decoded_cost(&plain, strings, None), 4 + 1 + bytes);
        // The budget is shared and refuses the page that would overspend.
        let budget = Budget::new(100);
        assert!(budget.charge(60).is_ok());
        let err = budget.charge(60).unwrap_err();
        assert!(err.contains("more than 100 bytes of memory"), "{err}");
    }

    #[test]
    fn a_delta_header_past_ten_bytes_is_refused_on_a_page_of_nulls_too() {
        // Eight null levels (an RLE run of 8 zeros): no value to decode,
        // but the decoder still reads the header, whose block size runs
        // to eleven bytes.
        let mut header = vec![0xff; 10];
        header.extend([0x01, 0x04, 0x00, 0x00]);
        let page = v1(&[0x10, 0x00], &header, 8, Encoding::DELTA_BINARY_PACKED);
        assert!(check(&page, NULLABLE, None).is_err());
        // An honest header of no values on that page is sound.
        let page = v1(&[0x10, 0x00], &delta(0), 8, Encoding::DELTA_BINARY_PACKED);
        check(&page, NULLABLE, None).unwrap();
    }

    #[test]
    fn a_compressed_v2_pages_delta_header_is_checked_after_its_levels() {
        // Eight levels: all at the maximum (an RLE run of 8 ones), or none.
        let page = |level: u8, nulls: u32| {
            let encoding = Encoding::DELTA_BINARY_PACKED;
            v2_page(&[0x10, level], &delta(0), 8, nulls, encoding, true)
        };
        assert!(check(&page(1, 0), NULLABLE, None).is_err());
        check(&page(0, 8), NULLABLE, None).unwrap();
        // The decoder reads a value per level at the maximum whatever the
        // header's null count says: eight values here, from a DELTA
        // header that counts none (the `segment` fuzz target's finding
        // was the v1 form of this; a panic inside the crate).
        let err = check(&page(1, 8), NULLABLE, None).unwrap_err();
        assert!(err.contains("has 8 values"), "{err}");
    }

    #[test]
    fn byte_stream_split_values_must_fit_their_bytes() {
        // Eight levels at the maximum (RLE run of 8 ones): eight values.
        let levels = [0x10, 0x01];
        let page = |bytes: usize| v1(&levels, &vec![0; bytes], 8, Encoding::BYTE_STREAM_SPLIT);
        let err = check(&page(63), NULLABLE, Some(8)).unwrap_err();
        assert!(
            err.contains("8 BYTE_STREAM_SPLIT values need 64 bytes, 63 are left"),
            "{err}"
        );
        check(&page(64), NULLABLE, Some(8)).unwrap();
        // Half of them null: four values, 32 bytes.
        let half = [0x08, 0x01, 0x08, 0x00];
        check(
            &v1(&half, &[0; 32], 8, Encoding::BYTE_STREAM_SPLIT),
            NULLABLE,
            Some(8),
        )
        .unwrap();
        // The same in a v2 page, whose header counts its nulls.
        let split = Encoding::BYTE_STREAM_SPLIT;
        let v2 =
            |nulls: u32, bytes: usize| v2_page(&levels, &vec![0; bytes], 8, nulls, split, true);
        assert!(check(&v2(0, 31), NULLABLE, Some(4)).is_err());
        check(&v2(0, 32), NULLABLE, Some(4)).unwrap();
        // Its null count is not what counts: the levels are.
        assert!(check(&v2(4, 16), NULLABLE, Some(4)).is_err());
        let half_null = v2_page(&half, &[0; 16], 8, 4, split, true);
        check(&half_null, NULLABLE, Some(4)).unwrap();
    }
}

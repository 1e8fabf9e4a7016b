//! Walks every page header of a segment's column chunks before a decode,
//! so no page can make the decoder allocate more than its chunk honestly
//! needs.
//!
//! The parquet crate allocates a page's `uncompressed_page_size` before it
//! decompresses (LZ4_RAW and Snappy zero-fill it), and a dictionary's
//! `num_values` entries before it decodes them. Both are 32-bit numbers a
//! few hostile bytes control. Here each page must fit in its chunk, the
//! pages' uncompressed sizes together must fit in the chunk's declared
//! uncompressed size, which [`super::footer`] has already bounded by the
//! codec's largest honest ratio, and a dictionary may not claim more
//! entries than its decompressed bytes can hold.

use super::footer::{Chunk, Footer};
use super::shapes;
use super::thrift::{wire, Compact, Result};

/// The v1 data page.
const DATA_PAGE: i32 = 0;
/// The index page: in the format since its first version, written by no
/// writer anyone knows of.
const INDEX_PAGE: i32 = 1;
const DICTIONARY_PAGE: i32 = 2;
/// Parquet's deprecated `BIT_PACKED` encoding.
const BIT_PACKED: i32 = 4;
/// `DELTA_BINARY_PACKED`.
const DELTA_BINARY_PACKED: i32 = 5;
/// The v2 data page, whose levels are never compressed.
const DATA_PAGE_V2: i32 = 3;
/// `PLAIN_DICTIONARY` and `RLE_DICTIONARY`: values that index a dictionary.
const DICTIONARY_ENCODINGS: [i32; 2] = [2, 8];

/// What one page header declares, as far as the bounds need it.
#[derive(Default)]
struct Header {
    kind: Option<i32>,
    uncompressed: Option<i32>,
    compressed: Option<i32>,
    dictionary_values: Option<i32>,
    levels: Option<(i32, i32)>,
    /// A v1 data page's definition and repetition level encodings.
    level_encodings: Option<(Option<i32>, Option<i32>)>,
    /// The values' encodings its v1 and v2 data page headers name.
    encodings: Vec<i32>,
    /// A data page's value count (nulls included) and, for v2, its nulls.
    values: Option<i32>,
    nulls: Option<i32>,
    /// A v2 page's `is_compressed` (absent: compressed).
    v2_compressed: Option<bool>,
    /// The page types whose own header this page header carries (its
    /// fields 5, 7 and 8).
    carries: Vec<i32>,
}

/// The fewest bits one PLAIN value of physical type `physical` takes.
fn min_value_bits(physical: i32) -> u64 {
    match physical {
        0 => 1,      // BOOLEAN
        1 | 4 => 32, // INT32, FLOAT
        2 | 5 => 64, // INT64, DOUBLE
        3 => 96,     // INT96
        6 => 32,     // BYTE_ARRAY: its length prefix
        _ => 8,      // FIXED_LEN_BYTE_ARRAY, whatever its width
    }
}

/// Checks every page of the chunks `footer` lists in the segment `file`
/// whose leaf column `read` keeps: the ones a decode will read.
pub fn check(file: &[u8], footer: &Footer, read: impl Fn(usize) -> bool) -> Result<()> {
    footer
        .chunks
        .iter()
        .filter(|chunk| read(chunk.column))
        .try_for_each(|chunk| check_chunk(file, chunk))
}

fn check_chunk(file: &[u8], chunk: &Chunk) -> Result<()> {
    let here = |page: usize| {
        format!(
            "page {page} of column chunk {} of row group {}",
            chunk.column, chunk.group
        )
    };
    // The footer check placed the chunk inside the file.
    let bytes = &file[chunk.start as usize..(chunk.start + chunk.compressed) as usize];
    let mut at = 0usize;
    let mut uncompressed_total = 0u64;
    let mut page = 0usize;
    let mut dictionary = false;
    while at < bytes.len() {
        let mut c = Compact::new(&bytes[at..]);
        let header = read_header(&mut c).map_err(|e| format!("{}: {e}", here(page)))?;
        at += c.position();
        let (Some(kind), Some(uncompressed), Some(compressed)) =
            (header.kind, header.uncompressed, header.compressed)
        else {
            return Err(format!(
                "{}: the header lacks its type or sizes",
                here(page)
            ));
        };
        let (Ok(uncompressed), Ok(compressed)) =
            (u64::try_from(uncompressed), u64::try_from(compressed))
        else {
            return Err(format!(
                "{} claims {compressed} compressed and {uncompressed} uncompressed bytes",
                here(page)
            ));
        };
        // The parquet crate passes over an index page when it reads pages
        // one by one, but when a repeated column looks ahead for the next
        // record it steps past the page's header and not its bytes, and
        // reads on from inside them (garbage Thrift, seconds of skipping).
        if kind == INDEX_PAGE {
            return Err(format!(
                "{} is an index page, which no segment writer writes",
                here(page)
            ));
        }
        // The parquet crate unwraps the header a page's type calls for (a
        // panic where it is missing, an abort in wasm32).
        if matches!(kind, DATA_PAGE | DICTIONARY_PAGE | DATA_PAGE_V2)
            && !header.carries.contains(&kind)
        {
            return Err(format!(
                "{} is a page of type {kind} without the header its type calls for",
                here(page)
            ));
        }
        let left = (bytes.len() - at) as u64;
        if compressed > left {
            return Err(format!(
                "{} claims {compressed} bytes but its chunk has {left} left",
                here(page)
            ));
        }
        uncompressed_total += uncompressed;
        if uncompressed_total > chunk.uncompressed {
            return Err(format!(
                "{} would bring the chunk to {uncompressed_total} uncompressed bytes, \
                 more than the {} its footer declares",
                here(page),
                chunk.uncompressed
            ));
        }
        if let Some((definition, repetition)) = header.levels {
            let levels = i64::from(definition) + i64::from(repetition);
            if definition < 0 || repetition < 0 || levels as u64 > uncompressed.min(compressed) {
                return Err(format!(
                    "{} claims {definition} and {repetition} bytes of levels",
                    here(page)
                ));
            }
        }
        // The parquet crate slices BIT_PACKED levels at the length their
        // value count implies without checking the page holds them (a
        // panic, an abort in wasm32). No writer this format knows packs
        // levels that way (arrow's and the original's use RLE; parquet-mr
        // names BIT_PACKED only for levels a column does not have), so
        // such levels are refused where the column has them.
        if let Some((definition, repetition)) = header.level_encodings {
            let packed = |has: bool, encoding: Option<i32>, what: &str| {
                if has && encoding == Some(BIT_PACKED) {
                    Err(format!(
                        "{} packs its {what} levels as BIT_PACKED, which this reader does not read",
                        here(page)
                    ))
                } else {
                    Ok(())
                }
            };
            packed(chunk.levels.definition > 0, definition, "definition")?;
            packed(chunk.levels.repetition > 0, repetition, "repetition")?;
        }
        // The parquet crate expects a dictionary before a page whose
        // values index one, and panics where there is none.
        if !dictionary
            && kind != DICTIONARY_PAGE
            && header
                .encodings
                .iter()
                .any(|e| DICTIONARY_ENCODINGS.contains(e))
        {
            return Err(format!(
                "{} indexes a dictionary, but no dictionary page comes before it",
                here(page)
            ));
        }
        if kind == DICTIONARY_PAGE {
            dictionary = true;
            let values = header.dictionary_values.unwrap_or(0);
            let bits = u64::try_from(values)
                .map(|v| v.saturating_mul(min_value_bits(chunk.physical)))
                .map_err(|_| format!("{} claims {values} dictionary values", here(page)))?;
            if bits > uncompressed * 8 {
                return Err(format!(
                    "{} claims {values} dictionary values in {uncompressed} bytes",
                    here(page)
                ));
            }
        }
        let data = &bytes[at..at + compressed as usize];
        check_delta_count(&header, chunk, data).map_err(|e| format!("{}: {e}", here(page)))?;
        check_level_runs(&header, chunk, data).map_err(|e| format!("{}: {e}", here(page)))?;
        at += compressed as usize;
        page += 1;
    }
    Ok(())
}

/// The parquet crate's DELTA_BINARY_PACKED decoder underflows (a panic,
/// or an endless read where overflow is unchecked) when its header counts
/// no values while the page has values to decode. Checked here for a v2
/// page whose values lie readable in the file (an uncompressed chunk, or
/// a page that says it is stored uncompressed), whose header counts its
/// non-null values. A v1 page, and a compressed v2 page's values, are
/// checked on the bytes the decoder reads, by [`super::guard`].
fn check_delta_count(header: &Header, chunk: &Chunk, data: &[u8]) -> Result<()> {
    if header.kind != Some(DATA_PAGE_V2) || !header.encodings.contains(&DELTA_BINARY_PACKED) {
        return Ok(());
    }
    let (definition, repetition) = header.levels.unwrap_or((0, 0));
    let present = i64::from(header.values.unwrap_or(0)) - i64::from(header.nulls.unwrap_or(0));
    let readable = chunk.codec == 0 || header.v2_compressed == Some(false);
    let skip = (i64::from(definition) + i64::from(repetition)) as usize;
    match data.get(skip..) {
        Some(values) if readable => check_delta_header(values, present),
        _ => Ok(()),
    }
}

/// Refuses a DELTA_BINARY_PACKED header (`values`: the start of a page's
/// value section) that counts no values while `present` values are to be
/// decoded, or whose integers the crate's reader cannot take. Checked on
/// every such page, one of nulls alone too: the decoder reads the header
/// whether or not it has values to decode (an integer past 10 bytes there
/// was a panic inside the crate; found by the `segment` fuzz target).
pub(super) fn check_delta_header(values: &[u8], present: i64) -> Result<()> {
    // The header: block size, miniblocks per block, total count, first
    // value (ULEB128, the last zigzag).
    let mut at = 0usize;
    let block = vlq(values, &mut at)?;
    let miniblocks = vlq(values, &mut at)?;
    let total = vlq(values, &mut at)?;
    if total == Some(0) && present > 0 {
        return Err(format!(
            "has {present} values but its DELTA_BINARY_PACKED header counts none"
        ));
    }
    let (Some(block), Some(miniblocks), Some(total)) = (block, miniblocks, total) else {
        return Ok(());
    };
    // A miniblock of no values: the crate's decoder then reads nothing in
    // a loop that expects progress (an index below zero, or no end).
    if miniblocks == 0 || block / miniblocks == 0 {
        return Err(format!(
            "has a DELTA_BINARY_PACKED block of {block} values in {miniblocks} miniblocks, \
             which leaves a miniblock no values"
        ));
    }
    if vlq(values, &mut at)?.is_none() {
        return Ok(()); // a cut header: the crate reports it
    }
    // The blocks the decoder loads for the values it reads: each starts
    // with its minimum delta, an integer the same reader takes. Where the
    // bytes run out the crate reports it.
    let per_miniblock = block / miniblocks;
    let mut left = total.min(present.max(0) as u64).saturating_sub(1);
    while left > 0 {
        if vlq(values, &mut at)?.is_none() {
            return Ok(());
        }
        let Some(widths) = usize::try_from(miniblocks)
            .ok()
            .and_then(|n| values.get(at..at.checked_add(n)?))
        else {
            return Ok(());
        };
        at += widths.len();
        for &width in widths {
            if left == 0 {
                break;
            }
            let bits = per_miniblock.saturating_mul(u64::from(width));
            at = at.saturating_add(usize::try_from(bits / 8).unwrap_or(usize::MAX));
            left = left.saturating_sub(per_miniblock);
        }
        if at > values.len() {
            return Ok(());
        }
    }
    Ok(())
}

/// The longest variable-length integer the parquet crate's bit reader
/// takes (its `MAX_VLQ_BYTE_LEN`); a longer one is a panic there.
const MAX_VLQ_BYTES: usize = 10;

/// The ULEB128 integer at `*at` of `values` (advancing past it); `None`
/// where the bytes end first. Longer than the crate reads is an error.
fn vlq(values: &[u8], at: &mut usize) -> Result<Option<u64>> {
    let mut value = 0u64;
    for i in 0..MAX_VLQ_BYTES {
        let Some(&byte) = values.get(*at) else {
            return Ok(None);
        };
        *at += 1;
        value |= u64::from(byte & 0x7f)
            .checked_shl(7 * i as u32)
            .unwrap_or(0);
        if byte & 0x80 == 0 {
            return Ok(Some(value));
        }
    }
    if values.get(*at).is_some() {
        return Err(format!(
            "has a DELTA_BINARY_PACKED integer longer than {MAX_VLQ_BYTES} bytes"
        ));
    }
    Ok(None)
}

/// The bits one level takes at maximum level `max`.
fn level_bits(max: u16) -> u64 {
    u64::from(16 - max.leading_zeros() as u16)
}

/// The parquet crate reads a bit-packed run of levels (RLE hybrid) for as
/// many values as the run's header claims without checking the bytes are
/// there (a panic in its bit reader). Each run's bytes are checked to lie
/// inside its level section. Here for v2 pages, whose levels lie
/// uncompressed in the file; a v1 page's levels may be compressed with its
/// values, so [`super::guard`] walks them on the page the decoder reads.
fn check_level_runs(header: &Header, chunk: &Chunk, data: &[u8]) -> Result<()> {
    if header.kind != Some(DATA_PAGE_V2) {
        return Ok(());
    }
    let max = chunk.levels;
    let (definition, repetition) = header.levels.unwrap_or((0, 0));
    let (rep, def) = (repetition as usize, definition as usize);
    if let (Some(r), Some(d)) = (data.get(..rep), data.get(rep..rep + def)) {
        walk_runs("repetition", max.repetition, r, None)?;
        walk_runs("definition", max.definition, d, None)?;
    }
    Ok(())
}

/// Checks that every RLE-hybrid run in `runs` (levels of maximum `max`)
/// has the bytes its header claims, and that no level it repeats, or of
/// the first `count` it packs, is above `max`: the crate's readers of
/// such levels disagree with each other (one reads a nullable column's
/// levels as bits, any level not 0 a value), so a count of values taken
/// here would not be the decoder's. With `count`, returns how many of the
/// first `count` levels equal `max`; otherwise 0.
pub(super) fn walk_runs(what: &str, max: u16, runs: &[u8], count: Option<u64>) -> Result<u64> {
    if max == 0 {
        return Ok(0);
    }
    let width = level_bits(max);
    let mut left_to_count = count.unwrap_or(0);
    let mut at_max = 0u64;
    let mut at = 0usize;
    while at < runs.len() {
        let mut header = 0u64;
        let mut shift = 0;
        loop {
            let Some(&byte) = runs.get(at) else {
                return Ok(at_max); // a cut header: the crate reports it
            };
            at += 1;
            header |= u64::from(byte & 0x7f) << shift.min(63);
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
        let bytes = if header & 1 == 1 {
            (header >> 1).saturating_mul(width)
        } else {
            width.div_ceil(8)
        };
        let left = (runs.len() - at) as u64;
        if bytes > left {
            return Err(format!(
                "a run of its {what} levels needs {bytes} bytes, {left} are left"
            ));
        }
        let run = &runs[at..at + bytes as usize];
        if left_to_count > 0 {
            if header & 1 == 1 {
                // Bit-packed: groups of 8 levels, `width` bits each, least
                // significant bit first.
                let n = ((header >> 1).saturating_mul(8)).min(left_to_count);
                for i in 0..n {
                    let bit = i * width;
                    let mut level = 0u64;
                    for b in 0..width {
                        let at = bit + b;
                        level |= u64::from(run[(at / 8) as usize] >> (at % 8) & 1) << b;
                    }
                    if level > u64::from(max) {
                        return Err(above(what, level, max));
                    }
                    at_max += u64::from(level == u64::from(max));
                }
                left_to_count -= n;
            } else {
                let n = (header >> 1).min(left_to_count);
                if rle_level(run) == u64::from(max) {
                    at_max += n;
                }
                left_to_count -= n;
            }
        }
        if header & 1 == 0 && rle_level(run) > u64::from(max) {
            return Err(above(what, rle_level(run), max));
        }
        at += bytes as usize;
    }
    Ok(at_max)
}

/// The level an RLE run repeats: its value bytes, little-endian.
fn rle_level(run: &[u8]) -> u64 {
    run.iter()
        .enumerate()
        .fold(0, |level, (i, byte)| level | u64::from(*byte) << (8 * i))
}

fn above(what: &str, level: u64, max: u16) -> String {
    format!("a run of its {what} levels holds level {level}, above the column's maximum {max}")
}

fn read_header(c: &mut Compact) -> Result<Header> {
    let mut h = Header::default();
    c.walk("a page header", shapes::PAGE_HEADER, |c, id, kind| {
        match id {
            1 => h.kind = Some(c.i32(kind, "type")?),
            2 => h.uncompressed = Some(c.i32(kind, "uncompressed_page_size")?),
            3 => h.compressed = Some(c.i32(kind, "compressed_page_size")?),
            5 => {
                let (mut definition, mut repetition) = (None, None);
                c.nested(
                    kind,
                    "a data page header",
                    shapes::DATA_PAGE_HEADER,
                    |c, id, kind| {
                        match id {
                            1 => h.values = Some(c.i32(kind, "num_values")?),
                            2 => h.encodings.push(c.i32(kind, "encoding")?),
                            3 => definition = Some(c.i32(kind, "definition_level_encoding")?),
                            4 => repetition = Some(c.i32(kind, "repetition_level_encoding")?),
                            _ => return Ok(false),
                        }
                        Ok(true)
                    },
                )?;
                h.level_encodings = Some((definition, repetition));
                h.carries.push(DATA_PAGE);
            }
            7 => {
                c.nested(
                    kind,
                    "a dictionary page header",
                    shapes::DICTIONARY_PAGE_HEADER,
                    |c, id, kind| {
                        if id != 1 {
                            return Ok(false);
                        }
                        h.dictionary_values = Some(c.i32(kind, "num_values")?);
                        Ok(true)
                    },
                )?;
                h.carries.push(DICTIONARY_PAGE);
            }
            8 => {
                let (mut definition, mut repetition) = (0, 0);
                c.nested(
                    kind,
                    "a v2 data page header",
                    shapes::DATA_PAGE_HEADER_V2,
                    |c, id, kind| {
                        match id {
                            1 => h.values = Some(c.i32(kind, "num_values")?),
                            2 => h.nulls = Some(c.i32(kind, "num_nulls")?),
                            4 => h.encodings.push(c.i32(kind, "encoding")?),
                            7 if kind == wire::TRUE || kind == wire::FALSE => {
                                h.v2_compressed = Some(kind == wire::TRUE)
                            }
                            5 => definition = c.i32(kind, "definition_levels_byte_length")?,
                            6 => repetition = c.i32(kind, "repetition_levels_byte_length")?,
                            _ => return Ok(false),
                        }
                        Ok(true)
                    },
                )?;
                h.levels = Some((definition, repetition));
                h.carries.push(DATA_PAGE_V2);
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::walk_runs;

    #[test]
    fn levels_above_the_maximum_are_refused_and_honest_ones_counted() {
        // An RLE run of one level 22 for a column whose maximum is 1: the
        // v1 form of the `segment` fuzz finding kept as
        // `tests/corpus/segment/delta_values_under_a_level_above_its_maximum`.
        let err = walk_runs("definition", 1, &[0x02, 0x16], Some(1)).unwrap_err();
        assert!(
            err.contains("holds level 22, above the column's maximum 1"),
            "{err}"
        );
        // Refused where nothing is counted, too.
        assert!(walk_runs("definition", 1, &[0x02, 0x16], None).is_err());
        // Bit-packed, maximum 2 (two bits a level): 0b11 is level 3.
        let err = walk_runs("repetition", 2, &[0x03, 0xff, 0xff], Some(8)).unwrap_err();
        assert!(err.contains("holds level 3"), "{err}");
        // Eight levels of 2, and of 2 or 0: counted.
        assert_eq!(
            walk_runs("definition", 2, &[0x03, 0xaa, 0xaa], Some(8)),
            Ok(8)
        );
        assert_eq!(
            walk_runs("definition", 2, &[0x03, 0x22, 0x22], Some(8)),
            Ok(4)
        );
        assert_eq!(walk_runs("definition", 1, &[0x10, 0x01], Some(8)), Ok(8));
    }
}

//! Checks a segment's Parquet footer before the parquet crate parses it.
//!
//! The crate trusts several numbers a hostile footer controls: a schema
//! element's `num_children` becomes a `Vec` capacity (near `i32::MAX` that
//! is a capacity overflow, an abort where panics abort, as in wasm32), a
//! nested schema is converted by recursion with no depth limit (a stack
//! overflow, which no build can catch), and a column chunk's offsets and
//! sizes are sliced and later drive allocations. This module walks the
//! footer's Thrift once with [`super::thrift`], checks those numbers, and
//! returns the column chunks so the page walk ([`super::pages`]) can bound
//! every page by them.

use super::shapes;
use super::thrift::{wire, Compact, Result};

/// Schemas nested deeper than this (the root's children are at depth 1)
/// are refused. Flat time series use depth 1; a list of structs of lists
/// uses about six.
pub const MAX_SCHEMA_DEPTH: usize = 32;

/// One column chunk as its footer declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// The row group it belongs to.
    pub group: usize,
    /// Its leaf column.
    pub column: usize,
    /// Parquet's physical type number.
    pub physical: i32,
    /// Parquet's compression codec number.
    pub codec: i32,
    /// Where its first page header starts in the file.
    pub start: u64,
    /// Its bytes in the file, page headers included.
    pub compressed: u64,
    /// What its pages and headers decompress to, as declared.
    pub uncompressed: u64,
    /// Its values, nulls included, as declared: one entry at least per
    /// row of its row group.
    pub values: u64,
    /// Its leaf's maximum definition and repetition levels.
    pub levels: Levels,
}

/// A leaf column's maximum levels, from the schema: a page carries levels
/// of a kind only where its maximum is above 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Levels {
    /// Optional and repeated fields on the leaf's path.
    pub definition: u16,
    /// Repeated fields on the leaf's path.
    pub repetition: u16,
}

/// Parquet's `FieldRepetitionType`.
const OPTIONAL: i32 = 1;
const REPEATED: i32 = 2;

/// What a checked footer declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footer {
    /// Every column chunk of every row group, in file order.
    pub chunks: Vec<Chunk>,
}

/// The largest honest expansion of each codec's format: how many bytes one
/// compressed byte can stand for. LZ4 encodes a run in about one byte per
/// 255, Snappy's longest copy is 64 bytes from 3, deflate's limit is 1032:1
/// and a zstd block (at most 128 KiB) takes at least 4 bytes. Brotli and
/// LZO, which this build does not decode, are given zstd's bound.
fn max_ratio(codec: i32) -> Option<u64> {
    match codec {
        0 => Some(1),              // UNCOMPRESSED
        1 => Some(32),             // SNAPPY
        2 => Some(1_032),          // GZIP
        5 | 7 => Some(256),        // LZ4 (Hadoop framing), LZ4_RAW
        3 | 4 | 6 => Some(32_768), // LZO, BROTLI, ZSTD
        _ => None,
    }
}

/// Slack on the ratio bound for tiny chunks, whose headers and codec
/// framing dominate.
const RATIO_SLACK: u64 = 1_024;

/// One schema element's shape, as far as the tree check needs it.
struct Element {
    children: Option<i32>,
    repetition: Option<i32>,
}

impl Element {
    /// The levels of this element's leaves, given its parent's.
    fn levels(&self, parent: Levels) -> Levels {
        let r = self.repetition;
        Levels {
            definition: parent.definition + u16::from(matches!(r, Some(OPTIONAL | REPEATED))),
            repetition: parent.repetition + u16::from(r == Some(REPEATED)),
        }
    }
}

/// Checks `meta` (the footer's Thrift bytes) of a segment of `file_len`
/// bytes whose footer occupies the end: every count is backed by bytes,
/// the schema is a tree of sane depth that uses every element, each row
/// group has one chunk per leaf column, and every chunk lies between the
/// leading magic and the footer and declares an uncompressed size its
/// codec could honestly produce from its compressed bytes.
pub fn check(meta: &[u8], file_len: u64) -> Result<Footer> {
    let data_end = file_len
        .checked_sub(8 + meta.len() as u64)
        .ok_or("the footer is longer than the file")?;
    let mut c = Compact::new(meta);
    let mut schema = None;
    let mut chunks = Vec::new();
    let mut groups_seen = false;
    c.walk("the footer", shapes::FILE_META_DATA, |c, id, kind| {
        match id {
            2 => {
                let n = c.list(kind, wire::STRUCT, "the schema")?;
                let mut elements = Vec::with_capacity(n);
                for _ in 0..n {
                    elements.push(schema_element(c)?);
                }
                schema = Some(leaves(&elements)?);
            }
            4 => {
                let leaves = schema
                    .as_ref()
                    .ok_or("the row groups come before the schema")?;
                let n = c.list(kind, wire::STRUCT, "the row groups")?;
                for group in 0..n {
                    row_group(c, group, leaves, &mut chunks)?;
                }
                groups_seen = true;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    if schema.is_none() || !groups_seen {
        return Err("the footer has no schema or no row groups".into());
    }
    for chunk in &chunks {
        let end = chunk.start.checked_add(chunk.compressed);
        if chunk.start < 4 || end.is_none_or(|end| end > data_end) {
            return Err(format!(
                "column chunk {} of row group {} claims {} bytes at offset {}, \
                 outside the file's {data_end} bytes of column data",
                chunk.column, chunk.group, chunk.compressed, chunk.start
            ));
        }
        let ratio = max_ratio(chunk.codec).ok_or_else(|| {
            format!(
                "column chunk {} of row group {} uses unknown codec {}",
                chunk.column, chunk.group, chunk.codec
            )
        })?;
        let bound = chunk
            .compressed
            .saturating_mul(ratio)
            .saturating_add(RATIO_SLACK);
        if chunk.uncompressed > bound {
            return Err(format!(
                "column chunk {} of row group {} claims {} uncompressed bytes from {} \
                 compressed, more than its codec can produce ({bound})",
                chunk.column, chunk.group, chunk.uncompressed, chunk.compressed
            ));
        }
    }
    Ok(Footer { chunks })
}

fn schema_element(c: &mut Compact) -> Result<Element> {
    let (mut children, mut repetition) = (None, None);
    c.walk("a schema element", shapes::SCHEMA_ELEMENT, |c, id, kind| {
        match id {
            3 => repetition = Some(c.i32(kind, "repetition_type")?),
            5 => children = Some(c.i32(kind, "num_children")?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(Element {
        children,
        repetition,
    })
}

/// Walks the flattened schema as a tree, with an explicit stack rather
/// than recursion, and answers its leaf columns' levels, in order. The
/// parquet crate treats an element with no (or zero) children as a leaf,
/// except the root, which is then an empty schema (whose own repetition
/// counts for nothing).
fn leaves(elements: &[Element]) -> Result<Vec<Levels>> {
    let Some((root, rest)) = elements.split_first() else {
        return Err("the schema has no elements".into());
    };
    // Per open group: children still to come, and their parent's levels.
    let mut open: Vec<(u64, Levels)> = Vec::new();
    let root_children = count(root, 0, rest.len())?;
    if root_children > 0 {
        open.push((root_children, Levels::default()));
    }
    let mut leaves = Vec::new();
    for (i, element) in rest.iter().enumerate() {
        let Some((left, parent)) = open.last_mut() else {
            return Err(format!(
                "the schema tree ends after {} of its {} elements",
                i + 1,
                elements.len()
            ));
        };
        *left -= 1;
        let levels = element.levels(*parent);
        let children = count(element, i + 1, rest.len() - i - 1)?;
        if children > 0 {
            // `open` holds every ancestor of this element's children.
            if open.len() + 1 > MAX_SCHEMA_DEPTH {
                return Err(format!(
                    "the schema nests deeper than {MAX_SCHEMA_DEPTH} levels (element {})",
                    i + 1
                ));
            }
            open.push((children, levels));
            continue;
        }
        leaves.push(levels);
        while open.last().is_some_and(|(left, _)| *left == 0) {
            open.pop();
        }
    }
    if !open.is_empty() {
        return Err("the schema declares more children than it has elements".into());
    }
    Ok(leaves)
}

/// An element's declared children, refused when negative or more than the
/// elements after it.
fn count(element: &Element, index: usize, after: usize) -> Result<u64> {
    match element.children {
        None => Ok(0),
        Some(n) if n < 0 || n as u64 > after as u64 => Err(format!(
            "schema element {index} claims {n} children but {after} elements follow it"
        )),
        Some(n) => Ok(n as u64),
    }
}

fn row_group(
    c: &mut Compact,
    group: usize,
    leaves: &[Levels],
    chunks: &mut Vec<Chunk>,
) -> Result<()> {
    let mut columns = None;
    let mut rows = None;
    let first = chunks.len();
    c.walk("a row group", shapes::ROW_GROUP, |c, id, kind| {
        match id {
            1 => {
                let n = c.list(kind, wire::STRUCT, "a row group's columns")?;
                if n != leaves.len() {
                    return Err(format!(
                        "row group {group} has {n} column chunks for {} leaf columns",
                        leaves.len()
                    ));
                }
                for (column, levels) in leaves.iter().enumerate() {
                    chunks.push(column_chunk(c, group, column, *levels)?);
                }
                columns = Some(n);
            }
            3 => rows = Some(c.i64(kind, "a row group's num_rows")?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let rows = match (columns, rows) {
        (Some(_), Some(rows)) => {
            u64::try_from(rows).map_err(|_| format!("row group {group} claims {rows} rows"))?
        }
        _ => {
            return Err(format!(
                "row group {group} lacks its columns or its row count"
            ))
        }
    };
    // Every row has a value (or a null's level) in every leaf column, so
    // no row group holds more rows than its smallest chunk holds values:
    // the decoder takes the row count as given, and a projection of no
    // column would make up empty rows to reach it (billions claimed in a
    // kilobyte kept it busy without end).
    let held = chunks[first..]
        .iter()
        .map(|chunk| (chunk.column, chunk.values))
        .min_by_key(|(_, v)| *v);
    match held {
        Some((column, values)) if rows > values => Err(format!(
            "row group {group} claims {rows} rows but column chunk {column} holds {values} values"
        )),
        None if rows > 0 => Err(format!(
            "row group {group} claims {rows} rows but has no columns to hold them"
        )),
        _ => Ok(()),
    }
}

fn column_chunk(c: &mut Compact, group: usize, column: usize, levels: Levels) -> Result<Chunk> {
    let mut found = None;
    c.walk("a column chunk", shapes::COLUMN_CHUNK, |c, id, kind| {
        if id != 3 {
            return Ok(false);
        }
        found = Some(column_meta(c, kind, group, column, levels)?);
        Ok(true)
    })?;
    found.ok_or_else(|| format!("column chunk {column} of row group {group} has no metadata"))
}

fn column_meta(
    c: &mut Compact,
    kind: u8,
    group: usize,
    column: usize,
    levels: Levels,
) -> Result<Chunk> {
    let (mut physical, mut codec) = (None, None);
    let (mut uncompressed, mut compressed, mut values) = (None, None, None);
    let (mut data, mut dictionary) = (None, None);
    c.nested(
        kind,
        "a column's metadata",
        shapes::COLUMN_META_DATA,
        |c, id, kind| {
            match id {
                1 => physical = Some(c.i32(kind, "type")?),
                4 => codec = Some(c.i32(kind, "codec")?),
                5 => values = Some(c.i64(kind, "num_values")?),
                6 => uncompressed = Some(c.i64(kind, "total_uncompressed_size")?),
                7 => compressed = Some(c.i64(kind, "total_compressed_size")?),
                9 => data = Some(c.i64(kind, "data_page_offset")?),
                11 => dictionary = Some(c.i64(kind, "dictionary_page_offset")?),
                _ => return Ok(false),
            }
            Ok(true)
        },
    )?;
    let here = || format!("column chunk {column} of row group {group}");
    let (
        Some(physical),
        Some(codec),
        Some(uncompressed),
        Some(compressed),
        Some(data),
        Some(values),
    ) = (physical, codec, uncompressed, compressed, data, values)
    else {
        return Err(format!("{} lacks a required metadata field", here()));
    };
    let start = dictionary.unwrap_or(data);
    let non_negative =
        |v: i64, what: &str| u64::try_from(v).map_err(|_| format!("{} claims {what} {v}", here()));
    Ok(Chunk {
        group,
        column,
        physical,
        codec,
        start: non_negative(start, "offset")?,
        compressed: non_negative(compressed, "compressed size")?,
        uncompressed: non_negative(uncompressed, "uncompressed size")?,
        values: non_negative(values, "value count")?,
        levels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(children: &[Option<i32>]) -> Result<usize> {
        let elements: Vec<Element> = children
            .iter()
            .map(|&c| Element {
                children: c,
                repetition: None,
            })
            .collect();
        leaves(&elements).map(|l| l.len())
    }

    #[test]
    fn a_leaf_has_the_levels_of_its_path() {
        // root { required a; optional b { repeated c; required d } }
        let e = |children, repetition| Element {
            children,
            repetition,
        };
        let elements = [
            e(Some(2), Some(REPEATED)),
            e(None, Some(0)),
            e(Some(2), Some(OPTIONAL)),
            e(None, Some(REPEATED)),
            e(None, Some(0)),
        ];
        let l = |definition, repetition| Levels {
            definition,
            repetition,
        };
        assert_eq!(
            leaves(&elements),
            Ok(vec![l(0, 0), l(2, 1), l(1, 0)]),
            "the root's own repetition counts for nothing"
        );
    }

    #[test]
    fn a_flat_and_a_nested_schema_count_their_leaves() {
        assert_eq!(tree(&[Some(3), None, None, None]), Ok(3));
        // root { a; b { c; d { e } }; f }
        assert_eq!(
            tree(&[Some(3), None, Some(2), None, Some(1), None, None]),
            Ok(4)
        );
        assert_eq!(tree(&[Some(0)]), Ok(0), "an empty schema");
    }

    #[test]
    fn children_the_elements_cannot_back_are_refused() {
        let err = tree(&[Some(i32::MAX), None]).unwrap_err();
        assert!(err.contains("claims 2147483647 children"), "{err}");
        assert!(tree(&[Some(-1), None]).is_err());
        assert!(
            tree(&[Some(1), Some(2), None]).is_err(),
            "a group short of children"
        );
        assert!(
            tree(&[Some(1), None, None]).is_err(),
            "elements past the tree"
        );
    }

    #[test]
    fn nesting_past_the_limit_is_refused_without_recursion() {
        let deep = |levels: usize| {
            let mut c = vec![Some(1); levels];
            c.push(None);
            tree(&c)
        };
        assert_eq!(deep(MAX_SCHEMA_DEPTH), Ok(1));
        assert!(deep(MAX_SCHEMA_DEPTH + 1)
            .unwrap_err()
            .contains("nests deeper"));
        assert!(deep(100_000).is_err());
    }

    #[test]
    fn codecs_have_bounds_and_unknown_ones_none() {
        assert_eq!(max_ratio(7), Some(256));
        assert_eq!(max_ratio(0), Some(1));
        assert_eq!(max_ratio(99), None);
    }
}

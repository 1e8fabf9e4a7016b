//! What a segment's Parquet footer says about its rows, in the terms the
//! plot envelope needs: how many rows, the exact first and last time, and
//! each numeric column's exact smallest and largest value.
//!
//! A segment whose rows all fall in one bucket of an envelope contributes
//! only its extremes to that bucket, and row-group statistics hold exactly
//! those, so such a segment need not be decoded at all
//! ([`super::range::read_range_with`]). The rule here is to claim
//! nothing the footer does not say exactly: a column whose statistics are
//! missing, marked inexact, written in the deprecated fields, not finite,
//! of a type whose decoded values differ from its stored ones, or of an
//! unsigned type without the type-defined order is [`Extremes::Unknown`],
//! and the envelope then decodes the segment as before.

use arrow_schema::{DataType, TimeUnit};
use parquet::basic::{
    ColumnOrder, ConvertedType, IntType, LogicalType, TimeUnit as ParquetTimeUnit, TimestampType,
    Type as PhysicalType,
};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescriptor;

use crate::catalog::SegmentRecord;
use crate::container::Archive;
use crate::error::Result;
use crate::read::columns::{is_numeric, ts_column};

/// What the footer says exactly about one numeric column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Extremes {
    /// The smallest and largest value, as the envelope would compute them
    /// from the decoded rows (finite, nulls left out).
    Range {
        /// The smallest value.
        min: f64,
        /// The largest value.
        max: f64,
    },
    /// Every row is null: the column contributes no value.
    NoValues,
    /// The footer does not say exactly; decode to know.
    Unknown,
}

/// A numeric column of a segment and what its statistics say.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    /// The column's name, as the decoded batch names it.
    pub name: String,
    /// Its extremes across every row group.
    pub extremes: Extremes,
}

/// A segment as its footer describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentStats {
    /// Rows across the row groups (at least one).
    pub rows: u64,
    /// The time axis's smallest value; every row has one.
    pub first_ts: i64,
    /// The time axis's largest value.
    pub last_ts: i64,
    /// The numeric columns other than the time axis, in the file's order:
    /// the order a decode would meet them in.
    pub columns: Vec<ColumnStats>,
}

/// Reads one segment's footer, without fetching its column data, and
/// summarizes it. `None` when the footer is unreadable or says nothing
/// exact: decoding that segment is then the way to learn (and to report
/// what is wrong with it). Only a failure of the archive itself is an error.
pub fn segment_stats(archive: &Archive, record: &SegmentRecord) -> Result<Option<SegmentStats>> {
    archive.read_snapshot(|s| {
        let payload = s.segment_payload(record.source_id, &record.stream, record.seq)?;
        let footer = crate::segment::read_footer(payload.len(), |at, buf| {
            payload.read_at(at, buf).map_err(|e| e.to_string())
        });
        Ok(footer.ok().as_ref().and_then(summarize))
    })
}

/// Summarizes a footer, or `None` when its time axis is not known exactly
/// (no time-axis column, statistics missing or inexact, a null time, a
/// layout this reader does not map one to one) or it holds no rows.
pub fn summarize(metadata: &ParquetMetaData) -> Option<SegmentStats> {
    let layout = layout_of(metadata)?;
    let groups = metadata.row_groups();
    // Counts a footer claims: a negative one, or a sum past `u64::MAX`,
    // says nothing exact (and a plain sum would overflow).
    let rows = groups.iter().try_fold(0u64, |sum, g| {
        u64::try_from(g.num_rows())
            .ok()
            .and_then(|n| sum.checked_add(n))
    })?;
    if rows == 0 {
        return None;
    }

    let mut first_ts = i64::MAX;
    let mut last_ts = i64::MIN;
    for group in groups {
        let stats = group.column(layout.ts_leaf).statistics()?;
        if stats.is_min_max_deprecated()
            || stats.null_count_opt() != Some(0)
            || !stats.min_is_exact()
            || !stats.max_is_exact()
        {
            return None;
        }
        let Statistics::Int64(s) = stats else {
            return None;
        };
        first_ts = first_ts.min(*s.min_opt()?);
        last_ts = last_ts.max(*s.max_opt()?);
    }
    if first_ts > last_ts {
        return None;
    }

    let columns = layout
        .columns
        .iter()
        .map(|column| {
            let extremes = match column.leaf {
                Some(leaf) => {
                    let mut acc = Extremes::NoValues;
                    for group in groups {
                        let part = group
                            .column(leaf)
                            .statistics()
                            .map_or(Extremes::Unknown, |s| {
                                extremes(&column.data_type, s, group.num_rows())
                            });
                        acc = merge(acc, part);
                    }
                    acc
                }
                None => Extremes::Unknown,
            };
            ColumnStats {
                name: column.name.clone(),
                extremes,
            }
        })
        .collect();
    Some(SegmentStats {
        rows,
        first_ts,
        last_ts,
        columns,
    })
}

/// Where a footer's statistics are read from: the time axis's leaf, and
/// each numeric column other than it with the leaf whose statistics are
/// its values' own (`None`: none is).
#[derive(Debug, PartialEq)]
struct Layout {
    ts_leaf: usize,
    columns: Vec<LaidOut>,
}

#[derive(Debug, PartialEq)]
struct LaidOut {
    name: String,
    data_type: DataType,
    leaf: Option<usize>,
}

/// The footer's [`Layout`], or `None` when its time axis cannot be read
/// exactly. The Arrow schema comes from [`crate::segment::arrow_schema`],
/// which converts a stream's shared schema once rather than per footer.
fn layout_of(metadata: &ParquetMetaData) -> Option<Layout> {
    let file = metadata.file_metadata();
    let descr = file.schema_descr();
    let schema = crate::segment::arrow_schema(metadata).ok()?;
    let ts = ts_column(&schema)?;
    // The one leaf of each root field, where it has exactly one and that
    // leaf is the field itself (neither nested nor repeated).
    let mut leaf_of: Vec<Option<usize>> = vec![None; schema.fields().len()];
    let mut leaves = vec![0usize; schema.fields().len()];
    for leaf in 0..descr.num_columns() {
        let root = descr.get_column_root_idx(leaf);
        let slot = leaves.get_mut(root)?;
        *slot += 1;
        let column = descr.column(leaf);
        if column.path().parts().len() == 1 && column.max_rep_level() == 0 {
            leaf_of[root] = Some(leaf);
        }
    }
    let single = |root: usize| leaf_of[root].filter(|_| leaves[root] == 1);

    let ts_leaf = single(ts)?;
    let ts_type = schema.field(ts).data_type();
    if !stored_as(ts_type, &descr.column(ts_leaf)) {
        return None;
    }
    let columns = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|&(i, f)| i != ts && is_numeric(f.data_type()))
        .map(|(i, field)| LaidOut {
            name: field.name().clone(),
            data_type: field.data_type().clone(),
            leaf: single(i).filter(|&leaf| {
                stored_as(field.data_type(), &descr.column(leaf))
                    && ordered(field.data_type(), file.column_order(leaf))
            }),
        })
        .collect();
    Some(Layout { ts_leaf, columns })
}

fn merge(a: Extremes, b: Extremes) -> Extremes {
    match (a, b) {
        (Extremes::Unknown, _) | (_, Extremes::Unknown) => Extremes::Unknown,
        (Extremes::NoValues, x) | (x, Extremes::NoValues) => x,
        (Extremes::Range { min: a0, max: a1 }, Extremes::Range { min: b0, max: b1 }) => {
            Extremes::Range {
                min: a0.min(b0),
                max: a1.max(b1),
            }
        }
    }
}

/// One row group's statistics for a column of Arrow type `data_type`
/// holding `rows` rows, as the envelope would see the decoded values.
fn extremes(data_type: &DataType, s: &Statistics, rows: i64) -> Extremes {
    let Some(nulls) = s.null_count_opt() else {
        return Extremes::Unknown;
    };
    if s.min_bytes_opt().is_none() && s.max_bytes_opt().is_none() {
        // No value to bound: exact only when every row is null.
        return if u64::try_from(rows).ok() == Some(nulls) {
            Extremes::NoValues
        } else {
            Extremes::Unknown
        };
    }
    if s.is_min_max_deprecated() || !s.min_is_exact() || !s.max_is_exact() {
        return Extremes::Unknown;
    }
    let pair = match (data_type, s) {
        (DataType::Int8 | DataType::Int16 | DataType::Int32, Statistics::Int32(v)) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (f64::from(*a), f64::from(*b))),
        (DataType::UInt8 | DataType::UInt16 | DataType::UInt32, Statistics::Int32(v)) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (f64::from(*a as u32), f64::from(*b as u32))),
        (DataType::Int64, Statistics::Int64(v)) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (*a as f64, *b as f64)),
        (DataType::UInt64, Statistics::Int64(v)) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (*a as u64 as f64, *b as u64 as f64)),
        (DataType::Float32, Statistics::Float(v)) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (f64::from(*a), f64::from(*b))),
        (DataType::Float64, Statistics::Double(v)) => {
            v.min_opt().zip(v.max_opt()).map(|(a, b)| (*a, *b))
        }
        (DataType::Boolean, Statistics::Boolean(v)) => v
            .min_opt()
            .zip(v.max_opt())
            .map(|(a, b)| (f64::from(u8::from(*a)), f64::from(u8::from(*b)))),
        _ => None,
    };
    match pair {
        // An infinity bounds the column, but the envelope skips it and keeps
        // the largest finite value, which the footer does not hold.
        Some((min, max)) if min.is_finite() && max.is_finite() && min <= max => {
            Extremes::Range { min, max }
        }
        _ => Extremes::Unknown,
    }
}

/// Whether the statistics' order is the one the values are compared in:
/// signed types compare alike under either order, unsigned ones only
/// under the type-defined order.
fn ordered(data_type: &DataType, order: ColumnOrder) -> bool {
    match data_type {
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            matches!(order, ColumnOrder::TYPE_DEFINED_ORDER(_))
        }
        _ => true,
    }
}

/// Whether a column decoded as `data_type` is stored so that its
/// statistics are in the decoded values' own units and width: the physical
/// type and the logical (or legacy converted) type a writer of that Arrow
/// type uses. Anything a reader would cast, scale or reinterpret on the way
/// out is refused.
fn stored_as(data_type: &DataType, column: &ColumnDescriptor) -> bool {
    let physical = column.physical_type();
    let logical = column.logical_type_ref();
    let converted = column.converted_type();
    let int = |bits: i8, signed: bool| match logical {
        Some(LogicalType::Integer(IntType {
            bit_width,
            is_signed,
        })) => *bit_width == bits && *is_signed == signed,
        Some(_) => false,
        None => {
            converted
                == match (bits, signed) {
                    (8, true) => ConvertedType::INT_8,
                    (16, true) => ConvertedType::INT_16,
                    (32, true) => ConvertedType::INT_32,
                    (64, true) => ConvertedType::INT_64,
                    (8, false) => ConvertedType::UINT_8,
                    (16, false) => ConvertedType::UINT_16,
                    (32, false) => ConvertedType::UINT_32,
                    _ => ConvertedType::UINT_64,
                }
        }
    };
    let plain = logical.is_none() && converted == ConvertedType::NONE;
    match data_type {
        DataType::Int8 => physical == PhysicalType::INT32 && int(8, true),
        DataType::Int16 => physical == PhysicalType::INT32 && int(16, true),
        DataType::Int32 => physical == PhysicalType::INT32 && (plain || int(32, true)),
        DataType::Int64 => physical == PhysicalType::INT64 && (plain || int(64, true)),
        DataType::UInt8 => physical == PhysicalType::INT32 && int(8, false),
        DataType::UInt16 => physical == PhysicalType::INT32 && int(16, false),
        DataType::UInt32 => physical == PhysicalType::INT32 && int(32, false),
        DataType::UInt64 => physical == PhysicalType::INT64 && int(64, false),
        DataType::Float32 => physical == PhysicalType::FLOAT && plain,
        DataType::Float64 => physical == PhysicalType::DOUBLE && plain,
        DataType::Boolean => physical == PhysicalType::BOOLEAN && plain,
        DataType::Timestamp(unit, _) => {
            physical == PhysicalType::INT64
                && match (unit, logical) {
                    (
                        TimeUnit::Millisecond,
                        Some(LogicalType::Timestamp(TimestampType { unit, .. })),
                    ) => {
                        matches!(unit, ParquetTimeUnit::MILLIS)
                    }
                    (
                        TimeUnit::Microsecond,
                        Some(LogicalType::Timestamp(TimestampType { unit, .. })),
                    ) => {
                        matches!(unit, ParquetTimeUnit::MICROS)
                    }
                    (
                        TimeUnit::Nanosecond,
                        Some(LogicalType::Timestamp(TimestampType { unit, .. })),
                    ) => {
                        matches!(unit, ParquetTimeUnit::NANOS)
                    }
                    (TimeUnit::Millisecond, None) => converted == ConvertedType::TIMESTAMP_MILLIS,
                    (TimeUnit::Microsecond, None) => converted == ConvertedType::TIMESTAMP_MICROS,
                    // Seconds are stored as milliseconds and divided on the way out.
                    _ => false,
                }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::ParquetMetaDataReader;
    use parquet::file::properties::WriterProperties;

    use super::*;

    /// The footer of a three-row segment written one row per row group.
    fn three_groups() -> ParquetMetaData {
        let schema = Arc::new(Schema::new(vec![Field::new("ts", DataType::Int64, false)]));
        let ts = Arc::new(Int64Array::from(vec![1, 2, 3]));
        let batch = RecordBatch::try_new(schema.clone(), vec![ts]).unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(1))
            .build();
        let mut out = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut out, schema, Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(out))
            .unwrap()
    }

    /// The footer of a two-row segment whose time axis `ts` is of type
    /// `ts_type` (Int64 or Timestamp(Second), both stored as plain INT64).
    fn timed(ts_type: DataType) -> ParquetMetaData {
        use arrow_array::{Float64Array, TimestampSecondArray};
        let schema = Arc::new(Schema::new(vec![
            Field::new("ts", ts_type.clone(), false),
            Field::new("v", DataType::Float64, true),
        ]));
        let ts: arrow_array::ArrayRef = match ts_type {
            DataType::Int64 => Arc::new(Int64Array::from(vec![1, 2])),
            _ => Arc::new(TimestampSecondArray::from(vec![1, 2])),
        };
        let v = Arc::new(Float64Array::from(vec![0.5, 1.5]));
        let batch = RecordBatch::try_new(schema.clone(), vec![ts, v]).unwrap();
        let mut out = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut out, schema, None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(out))
            .unwrap()
    }

    #[test]
    fn a_layout_is_reused_only_for_the_same_parquet_and_arrow_schema() {
        let plain = timed(DataType::Int64);
        let seconds = timed(DataType::Timestamp(TimeUnit::Second, None));
        // The Parquet schemas are the same; only the embedded Arrow schema
        // says the second one's time axis is in seconds.
        assert_eq!(
            plain.file_metadata().schema_descr().root_schema(),
            seconds.file_metadata().schema_descr().root_schema()
        );
        for _ in 0..2 {
            let summary = summarize(&plain).expect("an Int64 time axis is read exactly");
            assert_eq!((summary.first_ts, summary.last_ts), (1, 2));
            assert_eq!(
                summary.columns[0].extremes,
                Extremes::Range { min: 0.5, max: 1.5 }
            );
            assert_eq!(
                summarize(&seconds),
                None,
                "seconds are decoded, not summarized"
            );
        }
    }

    #[test]
    fn row_counts_summing_past_u64_say_nothing_rather_than_overflow() {
        let honest = three_groups();
        assert_eq!(honest.num_row_groups(), 3);
        assert_eq!(summarize(&honest).map(|s| s.rows), Some(3));
        let groups = honest
            .row_groups()
            .iter()
            .map(|g| {
                g.clone()
                    .into_builder()
                    .set_num_rows(i64::MAX)
                    .build()
                    .unwrap()
            })
            .collect();
        let lying = ParquetMetaData::new(honest.file_metadata().clone(), groups);
        assert_eq!(summarize(&lying), None);
    }
}

//! What a viewer needs from a decoded segment's columns, whatever the
//! encoder put in them: which column is the time axis, a readable type
//! name, numeric columns as `f64`, and a display string for values that
//! have no numeric form.
//!
//! Segments are the caller's Parquet (format §4 rule 4), so nothing here
//! assumes a column set: every function works from the Arrow schema alone.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, DecimalType, DurationMicrosecondType,
    DurationMillisecondType, DurationNanosecondType, DurationSecondType, Float16Type, Float32Type,
    Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{ArrowNativeType, NullBuffer};
use arrow_schema::{DataType, Schema, TimeUnit};
use std::ops::Range;

/// Whether a column of this type can order rows in time: `Int64` (the
/// archive's own nanosecond timestamps) or any Arrow timestamp.
pub fn is_time_axis(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Int64 | DataType::Timestamp(_, _))
}

/// The column rows are ordered by: `ts` when the schema has one of a
/// time-axis type, else the first timestamp column, else the first `Int64`.
pub fn ts_column(schema: &Schema) -> Option<usize> {
    let fields = schema.fields();
    fields
        .iter()
        .position(|f| f.name() == "ts" && is_time_axis(f.data_type()))
        .or_else(|| {
            fields
                .iter()
                .position(|f| matches!(f.data_type(), DataType::Timestamp(_, _)))
        })
        .or_else(|| {
            fields
                .iter()
                .position(|f| f.data_type() == &DataType::Int64)
        })
}

/// The values of a time-axis column as `i64`, or `None` when the column is
/// not of a time-axis type. Null slots hold an unspecified value: check
/// the array's null buffer.
pub fn time_values(array: &dyn Array) -> Option<&[i64]> {
    match array.data_type() {
        DataType::Int64 => Some(array.as_primitive::<Int64Type>().values()),
        DataType::Timestamp(TimeUnit::Second, _) => {
            Some(array.as_primitive::<TimestampSecondType>().values())
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            Some(array.as_primitive::<TimestampMillisecondType>().values())
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            Some(array.as_primitive::<TimestampMicrosecondType>().values())
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            Some(array.as_primitive::<TimestampNanosecondType>().values())
        }
        _ => None,
    }
}

/// A type's name as a viewer shows it: Arrow's debug form for flat types
/// (`Int64`, `Timestamp(Nanosecond, None)`), which names the time unit in
/// full, and Arrow's compact display form for nested ones.
pub fn type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::ListView(_)
        | DataType::LargeListView(_)
        | DataType::FixedSizeList(_, _)
        | DataType::Struct(_)
        | DataType::Map(_, _)
        | DataType::Union(_, _)
        | DataType::Dictionary(_, _)
        | DataType::RunEndEncoded(_, _) => data_type.to_string(),
        _ => format!("{data_type:?}"),
    }
}

/// Whether a column is plotted as numbers: integers, floats and booleans.
pub fn is_numeric(data_type: &DataType) -> bool {
    data_type.is_integer() || data_type.is_floating() || data_type == &DataType::Boolean
}

fn widen<T>(array: &dyn Array, to_f64: impl Fn(T::Native) -> f64) -> Vec<f64>
where
    T: ArrowPrimitiveType,
{
    let array: &PrimitiveArray<T> = array.as_primitive::<T>();
    let mut out: Vec<f64> = array.values().iter().map(|&v| to_f64(v)).collect();
    if let Some(nulls) = array.nulls() {
        for i in nulls
            .iter()
            .enumerate()
            .filter(|(_, valid)| !valid)
            .map(|(i, _)| i)
        {
            out[i] = f64::NAN;
        }
    }
    out
}

/// A numeric column (see [`is_numeric`]) as `f64`, NaN where null;
/// `None` for any other type. 64-bit integers beyond 2^53 round.
pub fn numbers(array: &dyn Array) -> Option<Vec<f64>> {
    Some(match array.data_type() {
        DataType::Int8 => widen::<Int8Type>(array, f64::from),
        DataType::Int16 => widen::<Int16Type>(array, f64::from),
        DataType::Int32 => widen::<Int32Type>(array, f64::from),
        DataType::Int64 => widen::<Int64Type>(array, |v| v as f64),
        DataType::UInt8 => widen::<UInt8Type>(array, f64::from),
        DataType::UInt16 => widen::<UInt16Type>(array, f64::from),
        DataType::UInt32 => widen::<UInt32Type>(array, f64::from),
        DataType::UInt64 => widen::<UInt64Type>(array, |v| v as f64),
        DataType::Float16 => widen::<Float16Type>(array, f64::from),
        DataType::Float32 => widen::<Float32Type>(array, f64::from),
        DataType::Float64 => widen::<Float64Type>(array, |v| v),
        DataType::Boolean => {
            let array = array.as_boolean();
            (0..array.len())
                .map(|i| match array.is_null(i) {
                    true => f64::NAN,
                    false => f64::from(u8::from(array.value(i))),
                })
                .collect()
        }
        _ => return None,
    })
}

/// Rows of a primitive column, as the folds below read them: the plain
/// values when no row of the column is null (a fold may take the slice
/// whole, which is faster), else the values with the mask over them.
enum Valid<'a, N> {
    All(&'a [N]),
    Masked(&'a [N], &'a NullBuffer, Range<usize>),
}

impl<'a, N: ArrowNativeType> Valid<'a, N> {
    fn of<T: ArrowPrimitiveType<Native = N>>(array: &'a dyn Array, rows: Range<usize>) -> Self {
        let array: &PrimitiveArray<T> = array.as_primitive::<T>();
        let values = &array.values()[rows.clone()];
        match array.nulls().filter(|n| n.null_count() > 0) {
            None => Valid::All(values),
            Some(nulls) => Valid::Masked(values, nulls, rows),
        }
    }

    /// Hands every non-null value to `take`, in row order.
    fn each(self, mut take: impl FnMut(N)) {
        match self {
            Valid::All(values) => values.iter().for_each(|&v| take(v)),
            Valid::Masked(values, nulls, rows) => {
                for (i, &v) in rows.zip(values) {
                    if nulls.is_valid(i) {
                        take(v);
                    }
                }
            }
        }
    }
}

/// Folds an integer column's rows into `acc`: min and max in the column's
/// own type, widened once at the end (widening keeps order, so this equals
/// folding every widened value).
fn fold_ints<T>(
    array: &dyn Array,
    rows: Range<usize>,
    acc: (f64, f64),
    to_f64: impl Fn(T::Native) -> f64,
) -> (f64, f64)
where
    T: ArrowPrimitiveType,
    T::Native: Ord,
{
    let mut out: Option<(T::Native, T::Native)> = None;
    let mut take = |v: T::Native| {
        out = Some(match out {
            None => (v, v),
            Some((lo, hi)) => (lo.min(v), hi.max(v)),
        });
    };
    match Valid::of::<T>(array, rows) {
        Valid::All(values) => {
            if let (Some(&lo), Some(&hi)) = (values.iter().min(), values.iter().max()) {
                take(lo);
                take(hi);
            }
        }
        masked => masked.each(take),
    }
    match out {
        Some((lo, hi)) => (acc.0.min(to_f64(lo)), acc.1.max(to_f64(hi))),
        None => acc,
    }
}

/// Folds a float column's finite, non-null rows into `acc`.
fn fold_floats<N: ArrowNativeType>(
    rows: Valid<'_, N>,
    acc: (f64, f64),
    to_f64: impl Fn(N) -> f64,
) -> (f64, f64) {
    let (mut lo, mut hi) = acc;
    rows.each(|v| {
        let v = to_f64(v);
        if v.is_finite() {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    });
    (lo, hi)
}

/// Folds rows `rows` of a numeric column (see [`is_numeric`]) into `acc`,
/// a running (min, max): the same extremes as taking [`numbers`] and
/// keeping the finite values, without widening the column first. Any other
/// type leaves `acc` as it is.
pub fn fold_extremes(array: &dyn Array, rows: Range<usize>, acc: (f64, f64)) -> (f64, f64) {
    match array.data_type() {
        DataType::Int8 => fold_ints::<Int8Type>(array, rows, acc, f64::from),
        DataType::Int16 => fold_ints::<Int16Type>(array, rows, acc, f64::from),
        DataType::Int32 => fold_ints::<Int32Type>(array, rows, acc, f64::from),
        DataType::Int64 => fold_ints::<Int64Type>(array, rows, acc, |v| v as f64),
        DataType::UInt8 => fold_ints::<UInt8Type>(array, rows, acc, f64::from),
        DataType::UInt16 => fold_ints::<UInt16Type>(array, rows, acc, f64::from),
        DataType::UInt32 => fold_ints::<UInt32Type>(array, rows, acc, f64::from),
        DataType::UInt64 => fold_ints::<UInt64Type>(array, rows, acc, |v| v as f64),
        DataType::Float16 => fold_floats(Valid::of::<Float16Type>(array, rows), acc, f64::from),
        DataType::Float32 => fold_floats(Valid::of::<Float32Type>(array, rows), acc, f64::from),
        DataType::Float64 => fold_floats(Valid::of::<Float64Type>(array, rows), acc, |v| v),
        DataType::Boolean => {
            let array = array.as_boolean();
            let (mut lo, mut hi) = acc;
            for i in rows {
                if array.is_valid(i) {
                    let v = f64::from(u8::from(array.value(i)));
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
            }
            (lo, hi)
        }
        _ => acc,
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 + bytes.len() * 2);
    out.push_str("0x");
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

fn primitive_text<T>(array: &dyn Array, i: usize) -> String
where
    T: ArrowPrimitiveType,
    T::Native: std::fmt::Display,
{
    array.as_primitive::<T>().value(i).to_string()
}

fn decimal_text<T: DecimalType>(array: &dyn Array, i: usize, precision: u8, scale: i8) -> String {
    T::format_decimal(array.as_primitive::<T>().value(i), precision, scale)
}

fn joined(array: &dyn Array, open: &str, close: &str) -> String {
    let items: Vec<String> = (0..array.len())
        .map(|j| display_value(array, j).unwrap_or_else(|| "null".into()))
        .collect();
    format!("{open}{}{close}", items.join(", "))
}

/// Row `i` of any column as text, `None` where null. Numbers print as Rust
/// prints them, binary as `0x…` hex, decimals with their scale, lists as
/// `[a, b]`, structs as `{name: value}`, dictionaries as their value. A
/// type with no rule here prints as its type name in angle brackets.
pub fn display_value(array: &dyn Array, i: usize) -> Option<String> {
    if array.is_null(i) {
        return None;
    }
    Some(match array.data_type() {
        DataType::Boolean => array.as_boolean().value(i).to_string(),
        DataType::Int8 => primitive_text::<Int8Type>(array, i),
        DataType::Int16 => primitive_text::<Int16Type>(array, i),
        DataType::Int32 => primitive_text::<Int32Type>(array, i),
        DataType::Int64 => primitive_text::<Int64Type>(array, i),
        DataType::UInt8 => primitive_text::<UInt8Type>(array, i),
        DataType::UInt16 => primitive_text::<UInt16Type>(array, i),
        DataType::UInt32 => primitive_text::<UInt32Type>(array, i),
        DataType::UInt64 => primitive_text::<UInt64Type>(array, i),
        DataType::Float16 => primitive_text::<Float16Type>(array, i),
        DataType::Float32 => primitive_text::<Float32Type>(array, i),
        DataType::Float64 => primitive_text::<Float64Type>(array, i),
        DataType::Timestamp(TimeUnit::Second, _) => primitive_text::<TimestampSecondType>(array, i),
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            primitive_text::<TimestampMillisecondType>(array, i)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            primitive_text::<TimestampMicrosecondType>(array, i)
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            primitive_text::<TimestampNanosecondType>(array, i)
        }
        DataType::Date32 => primitive_text::<Date32Type>(array, i),
        DataType::Date64 => primitive_text::<Date64Type>(array, i),
        DataType::Time32(TimeUnit::Second) => primitive_text::<Time32SecondType>(array, i),
        DataType::Time32(_) => primitive_text::<Time32MillisecondType>(array, i),
        DataType::Time64(TimeUnit::Microsecond) => {
            primitive_text::<Time64MicrosecondType>(array, i)
        }
        DataType::Time64(_) => primitive_text::<Time64NanosecondType>(array, i),
        DataType::Duration(TimeUnit::Second) => primitive_text::<DurationSecondType>(array, i),
        DataType::Duration(TimeUnit::Millisecond) => {
            primitive_text::<DurationMillisecondType>(array, i)
        }
        DataType::Duration(TimeUnit::Microsecond) => {
            primitive_text::<DurationMicrosecondType>(array, i)
        }
        DataType::Duration(TimeUnit::Nanosecond) => {
            primitive_text::<DurationNanosecondType>(array, i)
        }
        DataType::Decimal128(p, s) => decimal_text::<Decimal128Type>(array, i, *p, *s),
        DataType::Decimal256(p, s) => decimal_text::<Decimal256Type>(array, i, *p, *s),
        DataType::Utf8 => array.as_string::<i32>().value(i).to_string(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(i).to_string(),
        DataType::Utf8View => array.as_string_view().value(i).to_string(),
        DataType::Binary => hex(array.as_binary::<i32>().value(i)),
        DataType::LargeBinary => hex(array.as_binary::<i64>().value(i)),
        DataType::BinaryView => hex(array.as_binary_view().value(i)),
        DataType::FixedSizeBinary(_) => hex(array.as_fixed_size_binary().value(i)),
        DataType::List(_) => joined(array.as_list::<i32>().value(i).as_ref(), "[", "]"),
        DataType::LargeList(_) => joined(array.as_list::<i64>().value(i).as_ref(), "[", "]"),
        DataType::FixedSizeList(_, _) => {
            joined(array.as_fixed_size_list().value(i).as_ref(), "[", "]")
        }
        DataType::Struct(fields) => {
            let array = array.as_struct();
            let parts: Vec<String> = fields
                .iter()
                .zip(array.columns())
                .map(|(f, c)| {
                    let v = display_value(c.as_ref(), i).unwrap_or_else(|| "null".into());
                    format!("{}: {v}", f.name())
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        DataType::Map(_, _) => {
            let entries = array.as_map().value(i);
            let (keys, values) = (entries.column(0), entries.column(1));
            let parts: Vec<String> = (0..entries.len())
                .map(|j| {
                    let k = display_value(keys.as_ref(), j).unwrap_or_else(|| "null".into());
                    let v = display_value(values.as_ref(), j).unwrap_or_else(|| "null".into());
                    format!("{k}: {v}")
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        DataType::Dictionary(_, _) => {
            let dict = array.as_any_dictionary();
            let key = dict.normalized_keys()[i];
            return display_value(dict.values().as_ref(), key);
        }
        other => format!("<{}>", type_name(other)),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{ListBuilder, StringDictionaryBuilder};
    use arrow_array::types::Int32Type;
    use arrow_array::{
        BinaryArray, BooleanArray, Decimal128Array, Float64Array, Int32Array, Int64Array,
        StringArray, TimestampMillisecondArray, UInt64Array,
    };
    use arrow_schema::Field;

    use super::*;

    fn schema(fields: &[(&str, DataType)]) -> Schema {
        Schema::new(
            fields
                .iter()
                .map(|(n, t)| Field::new(*n, t.clone(), true))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn the_time_axis_is_ts_then_a_timestamp_then_an_int64() {
        let ts_ns = DataType::Timestamp(TimeUnit::Nanosecond, None);
        let s = schema(&[
            ("a", DataType::Int64),
            ("t", ts_ns.clone()),
            ("ts", DataType::Int64),
        ]);
        assert_eq!(ts_column(&s), Some(2));
        let s = schema(&[("a", DataType::Int64), ("t", ts_ns)]);
        assert_eq!(ts_column(&s), Some(1));
        let s = schema(&[("ts", DataType::Utf8), ("n", DataType::Int64)]);
        assert_eq!(
            ts_column(&s),
            Some(1),
            "a ts of another type is not the axis"
        );
        let s = schema(&[("x", DataType::Float64)]);
        assert_eq!(ts_column(&s), None);
    }

    #[test]
    fn type_names_spell_out_the_time_unit() {
        assert_eq!(type_name(&DataType::Int64), "Int64");
        assert_eq!(
            type_name(&DataType::Timestamp(TimeUnit::Nanosecond, None)),
            "Timestamp(Nanosecond, None)"
        );
        let list = DataType::List(Arc::new(Field::new("item", DataType::Int32, true)));
        assert!(
            type_name(&list).starts_with("List("),
            "{}",
            type_name(&list)
        );
    }

    #[test]
    fn numbers_widen_every_numeric_type_and_mark_nulls_as_nan() {
        let ints = Int32Array::from(vec![Some(1), None, Some(-3)]);
        let got = numbers(&ints).unwrap();
        assert_eq!(got[0], 1.0);
        assert!(got[1].is_nan());
        assert_eq!(got[2], -3.0);
        let bools = BooleanArray::from(vec![Some(true), Some(false), None]);
        let got = numbers(&bools).unwrap();
        assert_eq!(&got[..2], &[1.0, 0.0]);
        assert!(got[2].is_nan());
        assert_eq!(
            numbers(&UInt64Array::from(vec![u64::MAX])).unwrap(),
            vec![u64::MAX as f64]
        );
        assert_eq!(numbers(&Float64Array::from(vec![0.5])).unwrap(), vec![0.5]);
        assert!(numbers(&StringArray::from(vec!["x"])).is_none());
    }

    #[test]
    fn time_values_read_int64_and_every_timestamp_unit() {
        assert_eq!(
            time_values(&Int64Array::from(vec![5, 6])),
            Some(&[5i64, 6][..])
        );
        assert_eq!(
            time_values(&TimestampMillisecondArray::from(vec![7])),
            Some(&[7i64][..])
        );
        assert_eq!(time_values(&Int32Array::from(vec![1])), None);
    }

    #[test]
    fn values_without_a_numeric_form_display_as_text() {
        assert_eq!(
            display_value(&BinaryArray::from(vec![&b"\x01\xff"[..]]), 0).unwrap(),
            "0x01ff"
        );
        let dec = Decimal128Array::from(vec![12345])
            .with_precision_and_scale(10, 2)
            .unwrap();
        assert_eq!(display_value(&dec, 0).unwrap(), "123.45");
        let mut list = ListBuilder::new(arrow_array::builder::Int32Builder::new());
        list.values().append_value(1);
        list.values().append_null();
        list.append(true);
        list.append(false);
        let list = list.finish();
        assert_eq!(display_value(&list, 0).unwrap(), "[1, null]");
        assert_eq!(display_value(&list, 1), None);
        let mut dict = StringDictionaryBuilder::<Int32Type>::new();
        dict.append_value("b");
        dict.append_value("a");
        dict.append_value("b");
        let dict = dict.finish();
        assert_eq!(display_value(&dict, 2).unwrap(), "b");
    }
}

//! Decoded rows in one flat buffer, to move between two wasm instances:
//! the viewer decodes segments in a disposable instance (so that a trap in
//! the Parquet or Arrow crates costs only that instance) and reduces them
//! in the one that holds the archives. Only what an envelope reads crosses:
//! the time axis and the numeric columns (see [`super::columns`]), each
//! with its name, type, validity and values, in the batch's own order.
//!
//! Layout, little-endian, every section starting on a multiple of 8 bytes
//! (zero padding) so the receiver can use the values where they land: `u32`
//! row count, `u32` column count, then per column `u8` type code, `u8` 1
//! when a validity bitmap follows, two zero bytes, `u32` name length, the
//! name (UTF-8); the bitmap if any (Arrow's, one bit per row, LSB first);
//! then the values, `rows * width` bytes, or a bitmap for booleans.
//!
//! [`pack_parts`] lists the sections without copying the values, so the
//! sender copies each once, straight to where it goes; [`unpack`] takes an
//! aligned buffer and shares it with the arrays it builds. Every length is
//! checked against the buffer, so a damaged buffer is an error, never a
//! panic.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, BooleanArray, PrimitiveArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, TimeUnit};

use crate::read::columns::{is_numeric, ts_column};

/// The types that cross, by code.
const TYPES: [DataType; 16] = [
    DataType::Int8,
    DataType::Int16,
    DataType::Int32,
    DataType::Int64,
    DataType::UInt8,
    DataType::UInt16,
    DataType::UInt32,
    DataType::UInt64,
    DataType::Float16,
    DataType::Float32,
    DataType::Float64,
    DataType::Boolean,
    DataType::Timestamp(TimeUnit::Second, None),
    DataType::Timestamp(TimeUnit::Millisecond, None),
    DataType::Timestamp(TimeUnit::Microsecond, None),
    DataType::Timestamp(TimeUnit::Nanosecond, None),
];

fn code_of(data_type: &DataType) -> Option<u8> {
    let plain = match data_type {
        // A time zone names how to print an instant, not what it is.
        DataType::Timestamp(unit, Some(_)) => DataType::Timestamp(*unit, None),
        other => other.clone(),
    };
    TYPES.iter().position(|t| *t == plain).map(|i| i as u8)
}

/// One section of a packed batch.
pub enum Part<'a> {
    /// Bytes made for the layout: counts, names, bitmaps.
    Owned(Vec<u8>),
    /// A column's values, where the batch holds them.
    Borrowed(&'a [u8]),
}

impl Part<'_> {
    /// The section's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Part::Owned(v) => v,
            Part::Borrowed(b) => b,
        }
    }
}

fn padded(mut v: Vec<u8>) -> Part<'static> {
    v.resize(v.len().next_multiple_of(8), 0);
    Part::Owned(v)
}

/// The time axis and the numeric columns of `batch`, as the sections of
/// the layout above, in order; their concatenation is the packed batch. A
/// batch without a time axis packs to no columns (an envelope skips it
/// anyway).
pub fn pack_parts(batch: &RecordBatch) -> Vec<Part<'_>> {
    let schema = batch.schema();
    let ts = ts_column(&schema);
    let keep: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| ts.is_some() && (Some(i) == ts || is_numeric(schema.field(i).data_type())))
        .filter(|&i| code_of(schema.field(i).data_type()).is_some())
        .collect();
    let mut head = Vec::with_capacity(8);
    head.extend_from_slice(&(batch.num_rows() as u32).to_le_bytes());
    head.extend_from_slice(&(keep.len() as u32).to_le_bytes());
    let mut parts = vec![Part::Owned(head)];
    for i in keep {
        let field = schema.field(i);
        let array = batch.column(i);
        let nulls = array.nulls().filter(|n| n.null_count() > 0);
        let mut head = vec![
            code_of(field.data_type()).unwrap_or(u8::MAX),
            u8::from(nulls.is_some()),
            0,
            0,
        ];
        head.extend_from_slice(&(field.name().len() as u32).to_le_bytes());
        head.extend_from_slice(field.name().as_bytes());
        parts.push(padded(head));
        if let Some(nulls) = nulls {
            parts.push(padded(bits(nulls.inner())));
        }
        match field.data_type() {
            DataType::Boolean => parts.push(padded(bits(array.as_boolean().values()))),
            _ => {
                let data = array.to_data();
                let width = field.data_type().primitive_width().unwrap_or(0);
                let len = data.len() * width;
                let start = data.offset() * width;
                let values = &array_values(array.as_ref())[start..start + len];
                parts.push(Part::Borrowed(values));
                if !len.is_multiple_of(8) {
                    parts.push(Part::Owned(vec![0; len.next_multiple_of(8) - len]));
                }
            }
        }
    }
    parts
}

/// A primitive array's whole values buffer (before its offset).
fn array_values(array: &dyn Array) -> &[u8] {
    macro_rules! raw {
        ($t:ty) => {
            array.as_primitive::<$t>().values().inner().as_slice()
        };
    }
    match array.data_type() {
        DataType::Int8 => raw!(Int8Type),
        DataType::Int16 => raw!(Int16Type),
        DataType::Int32 => raw!(Int32Type),
        DataType::Int64 => raw!(Int64Type),
        DataType::UInt8 => raw!(UInt8Type),
        DataType::UInt16 => raw!(UInt16Type),
        DataType::UInt32 => raw!(UInt32Type),
        DataType::UInt64 => raw!(UInt64Type),
        DataType::Float16 => raw!(Float16Type),
        DataType::Float32 => raw!(Float32Type),
        DataType::Float64 => raw!(Float64Type),
        DataType::Timestamp(TimeUnit::Second, _) => raw!(TimestampSecondType),
        DataType::Timestamp(TimeUnit::Millisecond, _) => raw!(TimestampMillisecondType),
        DataType::Timestamp(TimeUnit::Microsecond, _) => raw!(TimestampMicrosecondType),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => raw!(TimestampNanosecondType),
        _ => &[],
    }
}

/// The packed batch in one buffer (the sections of [`pack_parts`], joined).
pub fn pack(batch: &RecordBatch) -> Vec<u8> {
    pack_parts(batch)
        .iter()
        .flat_map(|p| p.bytes().iter().copied())
        .collect()
}

/// A bitmap starting at bit 0, whatever the buffer's offset.
fn bits(b: &BooleanBuffer) -> Vec<u8> {
    let mut out = vec![0u8; b.len().div_ceil(8)];
    for (i, set) in b.iter().enumerate() {
        if set {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

struct Reader<'a> {
    buffer: &'a Buffer,
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<Buffer, String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.buffer.len())
            .ok_or_else(|| format!("packed rows end early: {n} bytes wanted at {}", self.at))?;
        let out = self.buffer.slice_with_length(self.at, n);
        self.at = end;
        Ok(out)
    }

    /// Skips to the next multiple of 8, as the layout pads.
    fn align(&mut self) -> Result<(), String> {
        let pad = self.at.next_multiple_of(8) - self.at;
        self.take(pad).map(|_| ())
    }

    fn u32(&mut self) -> Result<usize, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
}

fn primitive<T: ArrowPrimitiveType>(
    values: Buffer,
    rows: usize,
    nulls: Option<NullBuffer>,
) -> ArrayRef {
    // Shared where it lies when aligned for T (it is, in a buffer that
    // starts aligned), copied otherwise: a misaligned share would panic.
    let values = if values
        .as_ptr()
        .align_offset(std::mem::align_of::<T::Native>())
        == 0
    {
        values
    } else {
        Buffer::from(values.as_slice())
    };
    let scalars = ScalarBuffer::<T::Native>::new(values, 0, rows);
    Arc::new(PrimitiveArray::<T>::new(scalars, nulls))
}

/// The batch [`pack`] packed, from a copy of `bytes`.
pub fn unpack_bytes(bytes: &[u8]) -> Result<RecordBatch, String> {
    unpack(&Buffer::from(bytes))
}

/// The batch [`pack`] packed. The arrays share `buffer`'s memory.
pub fn unpack(buffer: &Buffer) -> Result<RecordBatch, String> {
    let mut r = Reader { buffer, at: 0 };
    let rows = r.u32()?;
    let count = r.u32()?;
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for _ in 0..count {
        let head = r.take(4)?;
        let (code, has_nulls) = (head[0], head[1]);
        let data_type = TYPES
            .get(code as usize)
            .cloned()
            .ok_or_else(|| format!("packed rows: unknown type code {code}"))?;
        let len = r.u32()?;
        let name = std::str::from_utf8(r.take(len)?.as_slice())
            .map_err(|_| "packed rows: a column name is not UTF-8".to_string())?
            .to_string();
        r.align()?;
        let bitmap = rows.div_ceil(8);
        let nulls = match has_nulls {
            0 => None,
            _ => {
                let b = r.take(bitmap)?;
                r.align()?;
                Some(NullBuffer::new(BooleanBuffer::new(b, 0, rows)))
            }
        };
        let array: ArrayRef = match &data_type {
            DataType::Boolean => {
                let b = r.take(bitmap)?;
                r.align()?;
                Arc::new(BooleanArray::new(BooleanBuffer::new(b, 0, rows), nulls))
            }
            t => {
                let width = t.primitive_width().unwrap_or(0);
                let values = r.take(
                    rows.checked_mul(width)
                        .ok_or_else(|| "packed rows: too many rows".to_string())?,
                )?;
                r.align()?;
                match t {
                    DataType::Int8 => primitive::<Int8Type>(values, rows, nulls),
                    DataType::Int16 => primitive::<Int16Type>(values, rows, nulls),
                    DataType::Int32 => primitive::<Int32Type>(values, rows, nulls),
                    DataType::Int64 => primitive::<Int64Type>(values, rows, nulls),
                    DataType::UInt8 => primitive::<UInt8Type>(values, rows, nulls),
                    DataType::UInt16 => primitive::<UInt16Type>(values, rows, nulls),
                    DataType::UInt32 => primitive::<UInt32Type>(values, rows, nulls),
                    DataType::UInt64 => primitive::<UInt64Type>(values, rows, nulls),
                    DataType::Float16 => primitive::<Float16Type>(values, rows, nulls),
                    DataType::Float32 => primitive::<Float32Type>(values, rows, nulls),
                    DataType::Float64 => primitive::<Float64Type>(values, rows, nulls),
                    DataType::Timestamp(TimeUnit::Second, _) => {
                        primitive::<TimestampSecondType>(values, rows, nulls)
                    }
                    DataType::Timestamp(TimeUnit::Millisecond, _) => {
                        primitive::<TimestampMillisecondType>(values, rows, nulls)
                    }
                    DataType::Timestamp(TimeUnit::Microsecond, _) => {
                        primitive::<TimestampMicrosecondType>(values, rows, nulls)
                    }
                    _ => primitive::<TimestampNanosecondType>(values, rows, nulls),
                }
            }
        };
        fields.push(Field::new(name, data_type, true));
        columns.push(array);
    }
    if r.at != buffer.len() {
        return Err(format!(
            "packed rows: {} bytes left over",
            buffer.len() - r.at
        ));
    }
    let schema = Arc::new(Schema::new(fields));
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, columns, &options).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use arrow_array::{
        BooleanArray, Float16Array, Float32Array, Float64Array, Int16Array, Int32Array, Int64Array,
        Int8Array, StringArray, TimestampMillisecondArray, UInt16Array, UInt32Array, UInt64Array,
        UInt8Array,
    };

    use super::*;

    fn sample() -> RecordBatch {
        let n = 21;
        let some = |i: usize| i % 4 != 1;
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "label",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("r{i}")),
                )),
            ),
            (
                "at",
                Arc::new(
                    TimestampMillisecondArray::from_iter_values((0..n as i64).map(|i| i * 7))
                        .with_timezone("Europe/Paris"),
                ),
            ),
            (
                "i8",
                Arc::new(Int8Array::from_iter(
                    (0..n).map(|i| some(i).then_some(i as i8 - 9)),
                )),
            ),
            (
                "i16",
                Arc::new(Int16Array::from_iter_values(
                    (0..n).map(|i| i as i16 * -300),
                )),
            ),
            (
                "i32",
                Arc::new(Int32Array::from_iter(
                    (0..n).map(|i| some(i).then_some(i as i32 * 99_999)),
                )),
            ),
            (
                "i64",
                Arc::new(Int64Array::from_iter_values(
                    (0..n).map(|i| (i as i64) << 40),
                )),
            ),
            (
                "u8",
                Arc::new(UInt8Array::from_iter_values((0..n).map(|i| 255 - i as u8))),
            ),
            (
                "u16",
                Arc::new(UInt16Array::from_iter(
                    (0..n).map(|i| some(i).then_some(i as u16)),
                )),
            ),
            (
                "u32",
                Arc::new(UInt32Array::from_iter_values(
                    (0..n).map(|i| u32::MAX - i as u32),
                )),
            ),
            (
                "u64",
                Arc::new(UInt64Array::from_iter_values(
                    (0..n).map(|i| u64::MAX - i as u64),
                )),
            ),
            (
                "f16",
                Arc::new(Float16Array::from_iter_values((0..n).map(|i| {
                    <Float16Type as ArrowPrimitiveType>::Native::from_f32(i as f32 / 4.0)
                }))),
            ),
            (
                "f32",
                Arc::new(Float32Array::from_iter(
                    (0..n).map(|i| some(i).then_some(i as f32 / 3.0)),
                )),
            ),
            (
                "f64",
                Arc::new(Float64Array::from_iter((0..n).map(|i| match i % 5 {
                    0 => None,
                    1 => Some(f64::NAN),
                    2 => Some(f64::NEG_INFINITY),
                    _ => Some(i as f64 * 1.5),
                }))),
            ),
            (
                "b",
                Arc::new(BooleanArray::from_iter(
                    (0..n).map(|i| some(i).then_some(i % 3 == 0)),
                )),
            ),
        ];
        RecordBatch::try_from_iter(columns).unwrap()
    }

    #[test]
    fn the_time_axis_and_numeric_columns_cross_unchanged() {
        let batch = sample();
        // A slice starts inside its buffers: offsets must not leak through.
        for batch in [batch.clone(), batch.slice(3, 11), batch.slice(9, 0)] {
            let back = unpack_bytes(&pack(&batch)).unwrap();
            assert_eq!(back.num_rows(), batch.num_rows());
            let schema = back.schema();
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            assert_eq!(
                names,
                [
                    "at", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32",
                    "f64", "b"
                ],
                "the string column stays behind"
            );
            for field in back.schema().fields() {
                let ours = back.column_by_name(field.name()).unwrap();
                let theirs = batch.column_by_name(field.name()).unwrap();
                if let DataType::Timestamp(unit, _) = theirs.data_type() {
                    assert_eq!(field.data_type(), &DataType::Timestamp(*unit, None));
                    assert_eq!(
                        ours.as_primitive::<TimestampMillisecondType>().values(),
                        theirs.as_primitive::<TimestampMillisecondType>().values()
                    );
                    continue;
                }
                assert_eq!(ours.data_type(), theirs.data_type(), "{}", field.name());
                let nulls = |a: &ArrayRef| (0..a.len()).map(|i| a.is_null(i)).collect::<Vec<_>>();
                assert_eq!(nulls(ours), nulls(theirs), "{}", field.name());
                for i in 0..batch.num_rows() {
                    assert_eq!(
                        crate::read::columns::display_value(ours.as_ref(), i),
                        crate::read::columns::display_value(theirs.as_ref(), i),
                        "{} row {i}",
                        field.name()
                    );
                }
            }
            assert_eq!(
                ts_column(&back.schema()).map(|i| back.schema().field(i).name().clone()),
                Some("at".into())
            );
        }
    }

    #[test]
    fn a_damaged_buffer_is_an_error_never_a_panic() {
        let whole = pack(&sample());
        for cut in 0..whole.len() {
            assert!(unpack_bytes(&whole[..cut]).is_err(), "cut at {cut}");
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..3000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut bytes = whole.clone();
            let at = state as usize % bytes.len();
            bytes[at] = (state >> 32) as u8;
            let _ = unpack_bytes(&bytes);
        }
        let mut longer = whole.clone();
        longer.push(0);
        assert!(unpack_bytes(&longer).unwrap_err().contains("left over"));
    }
}

//! Counters read as per-second rates, before any bucketing.
//!
//! A counter column holds a running total, so what a person reads is how
//! fast it grows. The rate at a row is the increase since the previous row
//! with a value, over the time between them. A total that falls is a
//! reset (the producer restarted and counts from zero again), so the
//! increase is the new total itself, as Prometheus's `rate()` takes it:
//! never a negative spike. The first row seen has no rate.
//!
//! Rates are computed row by row on decoded batches, in time order, before
//! they reach the [`super::envelope::EnvelopeBuilder`]: a bucket's min and
//! max are then the extremes of the true rates in it, not a rate of
//! extremes. Which columns are counters is the caller's choice (the
//! self-describing encoder marks them, `dendro.kind = counter`; a person
//! may mark others).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};

use crate::read::columns::{is_numeric, numbers, time_values, ts_column};

/// Replaces counter columns by their per-second rates, carrying each
/// column's last value from batch to batch (so from segment to segment and
/// into the live tail). Feed it batches in time order.
#[derive(Debug, Default)]
pub struct Rates {
    counters: Vec<String>,
    /// Per counter, the time (ns) and value of the last row with a value.
    last: HashMap<String, (i64, f64)>,
}

impl Rates {
    /// Rates for the columns named in `counters`; other columns pass
    /// through unchanged.
    pub fn new(counters: &[String]) -> Rates {
        Rates {
            counters: counters.to_vec(),
            last: HashMap::new(),
        }
    }

    /// Whether no column is turned into a rate.
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }

    /// `batch` with each numeric counter column replaced by a nullable
    /// `Float64` column of rates per second. A batch without a time axis,
    /// or whose times do not ascend, passes unchanged: a rate needs order.
    pub fn apply(&mut self, batch: &RecordBatch) -> RecordBatch {
        if self.counters.is_empty() {
            return batch.clone();
        }
        let schema = batch.schema();
        let Some(ts_index) = ts_column(&schema) else {
            return batch.clone();
        };
        let ts_array = batch.column(ts_index);
        let Some(times) = time_values(ts_array.as_ref()) else {
            return batch.clone();
        };
        if ts_array.null_count() > 0 || times.windows(2).any(|w| w[0] > w[1]) {
            return batch.clone();
        }
        let to_ns = nanos_per_unit(ts_array.data_type());
        let mut fields = Vec::with_capacity(schema.fields().len());
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        for (c, field) in schema.fields().iter().enumerate() {
            let counter = c != ts_index
                && is_numeric(field.data_type())
                && self.counters.iter().any(|n| n == field.name());
            let values = if counter {
                numbers(batch.column(c).as_ref())
            } else {
                None
            };
            match values {
                Some(values) => {
                    let last = self.last.get(field.name()).copied();
                    let (rates, last) = rates_of(times, to_ns, &values, last);
                    if let Some(last) = last {
                        self.last.insert(field.name().clone(), last);
                    }
                    fields.push(Arc::new(
                        Field::new(field.name(), DataType::Float64, true)
                            .with_metadata(field.metadata().clone()),
                    ));
                    columns.push(Arc::new(rates));
                }
                None => {
                    fields.push(Arc::clone(field));
                    columns.push(Arc::clone(batch.column(c)));
                }
            }
        }
        let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        RecordBatch::try_new(schema, columns).unwrap_or_else(|_| batch.clone())
    }
}

/// Nanoseconds in one unit of a time axis of type `data_type`.
pub(crate) fn nanos_per_unit(data_type: &DataType) -> i64 {
    match data_type {
        DataType::Timestamp(TimeUnit::Second, _) => 1_000_000_000,
        DataType::Timestamp(TimeUnit::Millisecond, _) => 1_000_000,
        DataType::Timestamp(TimeUnit::Microsecond, _) => 1_000,
        _ => 1,
    }
}

/// The rates of one column, and its new last `(ns, value)`. A row with no
/// value (NaN, a null) has no rate and leaves the last value alone; so
/// does a row at the same time as the last one.
fn rates_of(
    times: &[i64],
    to_ns: i64,
    values: &[f64],
    mut last: Option<(i64, f64)>,
) -> (Float64Array, Option<(i64, f64)>) {
    let mut out = Vec::with_capacity(values.len());
    for (&t, &v) in times.iter().zip(values) {
        if !v.is_finite() {
            out.push(None);
            continue;
        }
        let t = t.saturating_mul(to_ns);
        let rate = match last {
            Some((t0, v0)) if t > t0 => {
                let increase = if v >= v0 { v - v0 } else { v };
                // Widened: two hostile timestamps can lie further apart
                // than an i64 holds.
                let seconds = (i128::from(t) - i128::from(t0)) as f64 / 1e9;
                Some(increase / seconds)
            }
            _ => None,
        };
        if last.is_none_or(|(t0, _)| t > t0) {
            last = Some((t, v));
        }
        out.push(rate);
    }
    (Float64Array::from(out), last)
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Float64Type;
    use arrow_array::Int64Array;

    use super::*;

    fn batch(ts: &[i64], counter: &[Option<i64>], gauge: &[i64]) -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("ts", DataType::Int64, false),
            Field::new("bytes", DataType::Int64, true),
            Field::new("level", DataType::Int64, false),
        ]);
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int64Array::from(ts.to_vec())),
                Arc::new(Int64Array::from(counter.to_vec())),
                Arc::new(Int64Array::from(gauge.to_vec())),
            ],
        )
        .unwrap()
    }

    fn rates(batch: &RecordBatch) -> Vec<Option<f64>> {
        batch
            .column(1)
            .as_primitive::<Float64Type>()
            .iter()
            .collect()
    }

    const S: i64 = 1_000_000_000;

    /// Rates over the `bytes` counter alone.
    fn bytes_counter() -> Rates {
        Rates::new(&["bytes".to_string()])
    }

    /// The rates of one batch of `bytes` readings, the gauge left at zero.
    fn rates_of_one_batch(ts: &[i64], counter: &[Option<i64>]) -> Vec<Option<f64>> {
        rates(&bytes_counter().apply(&batch(ts, counter, &vec![0; ts.len()])))
    }

    #[test]
    fn a_counter_becomes_its_increase_per_second_and_carries_across_batches() {
        let mut r = bytes_counter();
        let a = r.apply(&batch(
            &[0, S, 3 * S],
            &[Some(100), Some(300), Some(700)],
            &[5, 6, 7],
        ));
        assert_eq!(rates(&a), [None, Some(200.0), Some(200.0)]);
        assert_eq!(
            a.column(2).data_type(),
            &DataType::Int64,
            "a gauge is left alone"
        );
        let b = r.apply(&batch(&[4 * S], &[Some(750)], &[8]));
        assert_eq!(
            rates(&b),
            [Some(50.0)],
            "the first row of a batch uses the last one"
        );
    }

    #[test]
    fn a_fall_is_a_reset_never_a_negative_rate() {
        let a = rates_of_one_batch(&[0, S, 2 * S], &[Some(1000), Some(30), Some(90)]);
        assert_eq!(a, [None, Some(30.0), Some(60.0)]);
    }

    /// The envelope fuzz target found it: two timestamps further apart
    /// than an i64 holds overflowed the subtraction (a panic where
    /// overflow is checked, a wrong sign where it is not).
    #[test]
    fn timestamps_at_the_ends_of_i64_give_a_tiny_positive_rate() {
        let a = rates_of_one_batch(&[i64::MIN + 1, i64::MAX], &[Some(0), Some(1_000_000)]);
        let rate = a[1].expect("a rate");
        assert!(rate > 0.0 && rate < 1e-4, "{rate}");
    }

    #[test]
    fn nulls_have_no_rate_and_are_stepped_over() {
        let a = rates_of_one_batch(&[0, S, 2 * S], &[Some(10), None, Some(50)]);
        assert_eq!(a, [None, None, Some(20.0)]);
    }

    #[test]
    fn only_named_columns_change_and_unordered_batches_pass_as_they_are() {
        let mut r = Rates::new(&["level".to_string()]);
        let a = r.apply(&batch(&[0, S], &[Some(1), Some(2)], &[10, 40]));
        assert_eq!(a.column(1).data_type(), &DataType::Int64);
        assert_eq!(a.column(2).as_primitive::<Float64Type>().value(1), 30.0);
        let unordered = batch(&[S, 0], &[Some(1), Some(2)], &[1, 2]);
        assert_eq!(r.apply(&unordered), unordered);
    }
}

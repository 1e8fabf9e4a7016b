//! Statistics of a region of a stream, from its raw rows (never from an
//! envelope): what the viewer's region panel and `dendro stats` show, one
//! function behind both.
//!
//! **Rows.** Those whose time lies in `[from, to]`, inclusive; rows outside
//! are never used, not even as a counter's previous value, so the answer
//! depends on the region alone.
//!
//! **Numeric columns.** A row without a value (null, NaN) is skipped. The
//! values summarized (min, max, mean, p50, p99) are the ones the viewer
//! plots: a gauge's values as they are, a counter's (`dendro.kind =
//! counter`) per-second rates, the increase since the previous row with a
//! value over the time between them, a fall being a reset whose increase
//! is the new value itself (as [`super::rates`]); the region's first row
//! has no rate, nor has a row at the time of the previous one. Percentiles
//! are nearest-rank: the value at rank `⌈q·n⌉` of the `n` sorted values.
//! `last − first` is of the stored values. A counter's `increase` is the
//! sum of its increases, its `mean_rate` that over the seconds from its
//! first row to its last. The `integral` over time is, for a gauge, the
//! trapezoid rule over consecutive rows (value × seconds), and for a
//! counter its increase: the integral of its rate, held constant over each
//! interval.
//!
//! **Histogram columns.** The region's distribution is the sum of its
//! rows' interval counts, by the rules of [`super::distribution`], with its
//! quantiles by that module's rule.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_schema::DataType;

use crate::read::columns::{is_numeric, ts_column};
use crate::read::distribution::{each_interval, max_bucket, quantile, HistogramColumn, QUANTILES};
use crate::read::window::{each_batch, Piece, Problems};
use crate::typed::histogram::BOUNDS_METADATA;
use crate::typed::KIND_METADATA;

/// The statistics of one numeric column over a region (see the module).
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    /// The column.
    pub name: String,
    /// `counter` or `gauge` when its field says (`dendro.kind`).
    pub kind: Option<String>,
    /// Rows of the region with a value.
    pub count: u64,
    /// Smallest plotted value.
    pub min: Option<f64>,
    /// Largest plotted value.
    pub max: Option<f64>,
    /// Mean of the plotted values.
    pub mean: Option<f64>,
    /// Median of the plotted values (nearest rank).
    pub p50: Option<f64>,
    /// 99th percentile of the plotted values (nearest rank).
    pub p99: Option<f64>,
    /// The last stored value minus the first.
    pub last_minus_first: Option<f64>,
    /// Counters: the sum of the increases, resets handled.
    pub increase: Option<f64>,
    /// Counters: the increase per second from the first row to the last.
    pub mean_rate: Option<f64>,
    /// The integral over time, in value × seconds (see the module).
    pub integral: Option<f64>,
}

/// The summed distribution of a histogram column over a region.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramStats {
    /// The column.
    pub column: HistogramColumn,
    /// Rows whose interval counts were summed.
    pub rows: u64,
    /// The summed counts per bucket.
    pub counts: Vec<u64>,
    /// Their sum.
    pub total: u64,
    /// The quantiles of [`QUANTILES`], in order; `None` when nothing was counted.
    pub quantiles: Vec<Option<f64>>,
    /// The upper edge of the highest non-empty bucket.
    pub max_bucket: Option<f64>,
}

/// A region's statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionStats {
    /// The stream.
    pub stream: String,
    /// The region, inclusive, in nanoseconds.
    pub from: i64,
    /// See `from`.
    pub to: i64,
    /// Rows whose time lies in the region.
    pub rows: u64,
    /// Per numeric column, in the order the stream's rows hold them.
    pub columns: Vec<ColumnStats>,
    /// Per histogram column.
    pub histograms: Vec<HistogramStats>,
    /// Rows that could not be used.
    pub problems: Problems,
}

impl RegionStats {
    /// Whether the region holds no row at all.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// What an empty region says, in words; `None` when it has rows.
    pub fn empty_message(&self) -> Option<String> {
        self.is_empty().then(|| {
            format!(
                "stream {:?} has no rows between {} and {} ns",
                self.stream, self.from, self.to
            )
        })
    }
}

/// A running summary of one numeric column, in one streaming pass: every
/// figure but the percentiles is folded as the rows go by, in row order
/// (so the sum, min and max are those of the plotted values in that
/// order, as a fold over them all would give); the plotted values go to a
/// buffer the caller owns and reuses from column to column, for the
/// percentiles alone.
#[derive(Debug)]
struct Acc {
    counter: bool,
    count: u64,
    first: Option<(i64, f64)>,
    last: Option<(i64, f64)>,
    plotted: u64,
    sum: f64,
    min: Option<f64>,
    max: Option<f64>,
    integral: f64,
    increase: f64,
}

impl Acc {
    fn new(counter: bool) -> Acc {
        Acc {
            counter,
            count: 0,
            first: None,
            last: None,
            plotted: 0,
            // The identity of addition: `Iterator::sum` of f64 starts here too.
            sum: -0.0,
            min: None,
            max: None,
            integral: 0.0,
            increase: 0.0,
        }
    }

    fn plot(&mut self, buffer: &mut Vec<f64>, v: f64) {
        self.plotted += 1;
        self.sum += v;
        self.min = Some(self.min.map_or(v, |m| m.min(v)));
        self.max = Some(self.max.map_or(v, |m| m.max(v)));
        buffer.push(v);
    }

    fn push(&mut self, buffer: &mut Vec<f64>, ts: i64, v: f64) {
        self.count += 1;
        self.first.get_or_insert((ts, v));
        match self.last {
            Some((t0, v0)) if self.counter => {
                if ts <= t0 {
                    return;
                }
                let increase = if v >= v0 { v - v0 } else { v };
                self.increase += increase;
                self.plot(buffer, increase / ((ts - t0) as f64 / 1e9));
            }
            Some((t0, v0)) => {
                self.integral += (v + v0) / 2.0 * ((ts - t0) as f64 / 1e9);
                self.plot(buffer, v);
            }
            None if self.counter => {}
            None => self.plot(buffer, v),
        }
        self.last = Some((ts, v));
    }

    /// The column's statistics; `plotted` is the buffer [`Acc::push`]
    /// filled, reordered here by the percentile selection.
    fn finish(self, plotted: &mut [f64], name: String, kind: Option<String>) -> ColumnStats {
        let n = self.plotted;
        let [p50, p99] = nearest_ranks(plotted, [0.5, 0.99]);
        let span = match (self.first, self.last) {
            (Some((t0, _)), Some((t1, _))) => (t1 - t0) as f64 / 1e9,
            _ => 0.0,
        };
        let counted = self.count > 0;
        ColumnStats {
            name,
            kind,
            count: self.count,
            min: self.min,
            max: self.max,
            mean: (n > 0).then(|| self.sum / n as f64),
            p50,
            p99,
            last_minus_first: self.first.zip(self.last).map(|(f, l)| l.1 - f.1),
            increase: (self.counter && counted).then_some(self.increase),
            mean_rate: (self.counter && span > 0.0).then(|| self.increase / span),
            integral: counted.then_some(if self.counter {
                self.increase
            } else {
                self.integral
            }),
        }
    }
}

/// The value at rank `⌈q·n⌉` of `values` sorted (reorders them).
pub fn nearest_rank(values: &mut [f64], q: f64) -> Option<f64> {
    let [v] = nearest_ranks(values, [q]);
    v
}

/// [`nearest_rank`] of each of `qs`, which must ascend, with one
/// selection each over what is left above the previous one's rank rather
/// than over all of `values` again: a selection leaves every value after
/// its rank at or above it (by [`f64::total_cmp`], a total order), so the
/// next rank's value is the same whether sought among them or among all.
pub fn nearest_ranks<const N: usize>(values: &mut [f64], qs: [f64; N]) -> [Option<f64>; N] {
    let n = values.len();
    let mut out = [None; N];
    // Values below `done` are settled at or below the last rank found.
    let mut done = 0usize;
    let mut last: Option<f64> = None;
    for (slot, q) in out.iter_mut().zip(qs) {
        if n == 0 {
            break;
        }
        let index = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
        if index < done {
            // Not ascending: the slow way, still exact.
            done = 0;
        }
        *slot = match last.filter(|_| index + 1 == done) {
            Some(v) => Some(v),
            None => {
                let (_, v, _) = values[done..].select_nth_unstable_by(index - done, f64::total_cmp);
                Some(*v)
            }
        };
        last = *slot;
        done = index + 1;
    }
    out
}

/// Calls `each(ts, value)` for each row of the numeric `array` whose time
/// (`times`, one a row) lies in `[from, to]` and that has a value (not
/// null, not NaN), in row order, read in place as [`crate::read::columns::numbers`] would widen
/// it to f64 but without a copy of the column. Other types call nothing.
fn fold_column(
    array: &dyn Array,
    times: &[i64],
    (from, to): (i64, i64),
    each: &mut dyn FnMut(i64, f64),
) {
    fn rows<T: ArrowPrimitiveType>(
        array: &dyn Array,
        times: &[i64],
        (from, to): (i64, i64),
        each: &mut dyn FnMut(i64, f64),
        widen: impl Fn(T::Native) -> f64,
    ) {
        let array = array.as_primitive::<T>();
        let nulls = array.nulls().filter(|n| n.null_count() > 0);
        for (i, (&ts, &raw)) in times.iter().zip(array.values().iter()).enumerate() {
            if !(from..=to).contains(&ts) || nulls.is_some_and(|n| n.is_null(i)) {
                continue;
            }
            let v = widen(raw);
            if !v.is_nan() {
                each(ts, v);
            }
        }
    }
    let window = (from, to);
    match array.data_type() {
        DataType::Int8 => rows::<Int8Type>(array, times, window, each, f64::from),
        DataType::Int16 => rows::<Int16Type>(array, times, window, each, f64::from),
        DataType::Int32 => rows::<Int32Type>(array, times, window, each, f64::from),
        DataType::Int64 => rows::<Int64Type>(array, times, window, each, |v| v as f64),
        DataType::UInt8 => rows::<UInt8Type>(array, times, window, each, f64::from),
        DataType::UInt16 => rows::<UInt16Type>(array, times, window, each, f64::from),
        DataType::UInt32 => rows::<UInt32Type>(array, times, window, each, f64::from),
        DataType::UInt64 => rows::<UInt64Type>(array, times, window, each, |v| v as f64),
        DataType::Float16 => rows::<Float16Type>(array, times, window, each, f64::from),
        DataType::Float32 => rows::<Float32Type>(array, times, window, each, f64::from),
        DataType::Float64 => rows::<Float64Type>(array, times, window, each, |v| v),
        // Booleans are not summarized (see `region_stats`); the rest have
        // no numeric form.
        _ => {}
    }
}

/// What the region's pieces hold under one name.
enum Found {
    Numeric(Option<String>),
    Histogram,
}

/// The statistics of `stream` over `[from, to]` from the window's `pieces`
/// ([`super::window::read_window`]): of `columns` when given (each must be
/// numeric or a histogram), else of every numeric and histogram column.
/// An error in words names a column asked for that the region's rows do
/// not have, or that is neither.
pub fn region_stats(
    pieces: &[Piece],
    stream: &str,
    columns: Option<&[String]>,
    (from, to): (i64, i64),
) -> Result<RegionStats, String> {
    if from > to {
        return Err(format!("the region ends ({to}) before it starts ({from})"));
    }
    // Every column the pieces hold, in order of first appearance.
    let mut found: Vec<(String, Found)> = Vec::new();
    let mut other: Vec<String> = Vec::new();
    for batch in pieces.iter().flat_map(|p| p.batches.iter()) {
        let schema = batch.schema();
        let ts = ts_column(&schema);
        for (i, field) in schema.fields().iter().enumerate() {
            if Some(i) == ts || found.iter().any(|(n, _)| n == field.name()) {
                continue;
            }
            let what = if field.metadata().contains_key(BOUNDS_METADATA) {
                Found::Histogram
            } else if is_numeric(field.data_type()) && field.data_type() != &DataType::Boolean {
                Found::Numeric(field.metadata().get(KIND_METADATA).cloned())
            } else {
                other.push(field.name().clone());
                continue;
            };
            found.push((field.name().clone(), what));
        }
    }
    // A region no segment overlaps knows no column: it is empty (its
    // answer says so), not a region lacking the columns asked for. Where
    // rows were read, a column asked for that they lack is named (the
    // read may have left it out as unknown, so its absence is the sign).
    let known = pieces.iter().any(|p| !p.batches.is_empty());
    if let Some(asked) = columns.filter(|_| known) {
        for name in asked {
            if !found.iter().any(|(n, _)| n == name) {
                return Err(match other.contains(name) {
                    true => format!(
                        "column {name:?} of stream {stream:?} is neither numeric nor a histogram"
                    ),
                    false => format!("stream {stream:?} has no column {name:?} in this region"),
                });
            }
        }
        found.retain(|(n, _)| asked.contains(n));
    }
    let mut problems = Problems::default();
    // The rows in the region, and the problems of batches without a time
    // axis, once (the passes below meet them again and say nothing more).
    let mut rows = 0u64;
    each_batch(pieces, stream, &mut problems, |slice, _| {
        rows += slice
            .times
            .iter()
            .filter(|t| (from..=to).contains(*t))
            .count() as u64;
    });
    // One column at a time, one buffer for the plotted values of each in
    // turn: at most 8 bytes a row of the region at any moment, however
    // many columns are asked for.
    let mut plotted: Vec<f64> = Vec::new();
    let mut columns = Vec::new();
    for (name, what) in &found {
        let Found::Numeric(kind) = what else {
            continue;
        };
        plotted.clear();
        plotted.reserve(usize::try_from(rows).unwrap_or(0));
        let mut acc = Acc::new(kind.as_deref() == Some("counter"));
        each_batch(pieces, stream, &mut Problems::default(), |slice, _| {
            let Ok(c) = slice.batch.schema().index_of(name) else {
                return;
            };
            let array = slice.batch.column(c).as_ref();
            fold_column(array, &slice.times, (from, to), &mut |ts, v| {
                acc.push(&mut plotted, ts, v)
            });
        });
        columns.push(acc.finish(&mut plotted, name.clone(), kind.clone()));
    }
    drop(plotted);
    let mut histograms = Vec::new();
    for (name, what) in &found {
        if !matches!(what, Found::Histogram) {
            continue;
        }
        let mut counts: Vec<u64> = Vec::new();
        let mut summed = 0u64;
        let spec = each_interval(
            pieces,
            stream,
            name,
            (from, to),
            false,
            &mut problems,
            |_, row| {
                if counts.len() != row.len() {
                    counts = vec![0; row.len()];
                }
                for (sum, &c) in counts.iter_mut().zip(row) {
                    *sum = sum.saturating_add(c);
                }
                summed += 1;
            },
        );
        let Some(column) = spec else { continue };
        if counts.is_empty() {
            counts = vec![0; column.buckets()];
        }
        let total = counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
        histograms.push(HistogramStats {
            quantiles: QUANTILES
                .iter()
                .map(|&(_, q)| quantile(&counts, &column.bounds, q))
                .collect(),
            max_bucket: max_bucket(&counts, &column.bounds),
            column,
            rows: summed,
            counts,
            total,
        });
    }
    Ok(RegionStats {
        stream: stream.to_string(),
        from,
        to,
        rows,
        columns,
        histograms,
        problems,
    })
}

impl RegionStats {
    /// The statistics as JSON, in the shape of `RegionStats` of
    /// www/src/engine/types.ts (timestamps as numbers, counts as arrays):
    /// what `dendro stats --json` prints.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let problems: Vec<serde_json::Value> = self
            .problems
            .listed
            .iter()
            .map(|p| {
                json!({"stream": p.stream, "segment": p.segment, "row": p.row,
                       "ts": p.ts, "message": p.message})
            })
            .collect();
        let columns: Vec<serde_json::Value> = self
            .columns
            .iter()
            .map(|c| {
                json!({"name": c.name, "kind": c.kind, "count": c.count, "min": c.min,
                       "max": c.max, "mean": c.mean, "p50": c.p50, "p99": c.p99,
                       "last_minus_first": c.last_minus_first, "increase": c.increase,
                       "mean_rate": c.mean_rate, "integral": c.integral})
            })
            .collect();
        let histograms: Vec<serde_json::Value> = self
            .histograms
            .iter()
            .map(|h| {
                let mut out = json!({
                    "name": h.column.name,
                    "histogram": {"bounds": h.column.bounds, "cumulation": h.column.cumulation,
                                  "unit": h.column.unit},
                    "rows": h.rows, "counts": h.counts, "total": h.total,
                    "max_bucket": h.max_bucket,
                });
                for ((name, _), q) in QUANTILES.iter().zip(&h.quantiles) {
                    out[*name] = json!(q);
                }
                out
            })
            .collect();
        json!({
            "stream": self.stream, "from": self.from, "to": self.to, "rows": self.rows,
            "empty": self.empty_message(), "columns": columns, "histograms": histograms,
            "problems": problems, "problems_left_out": self.problems.left_out,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_no_segment_overlaps_is_empty_not_an_unknown_column() {
        let asked = ["latency".to_string()];
        let stats = region_stats(&[], "api", Some(&asked), (0, 10)).expect("an empty region");
        assert!(stats.is_empty());
        assert!(stats.empty_message().unwrap().contains("no rows"));
    }

    /// A small deterministic generator (xorshift), so the tests need no crate.
    fn xorshift(s: &mut u64) -> u64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s
    }

    /// Values with ties, both zeros and both infinities.
    fn awkward(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| match xorshift(&mut s) % 10 {
                0 => -0.0,
                1 => 0.0,
                2 => f64::INFINITY,
                3 => f64::NEG_INFINITY,
                k => (xorshift(&mut s) % 50) as f64 - 25.0 + k as f64 / 8.0,
            })
            .collect()
    }

    #[test]
    fn nearest_ranks_agree_bit_for_bit_with_a_full_sort() {
        for n in [1usize, 2, 3, 7, 99, 100, 101, 1000, 4097] {
            let values = awkward(n, 0x9e37_79b9 + n as u64);
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            let at = |q: f64| sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
            let qs = [0.0, 0.01, 0.5, 0.5, 0.9, 0.99, 0.999, 1.0];
            let got = nearest_ranks(&mut values.clone(), qs);
            for (q, v) in qs.into_iter().zip(got) {
                assert_eq!(v.map(f64::to_bits), Some(at(q).to_bits()), "n {n}, q {q}");
            }
            // Out of order, still exact.
            let got = nearest_ranks(&mut values.clone(), [0.99, 0.5, 0.01]);
            let want = [at(0.99), at(0.5), at(0.01)];
            assert_eq!(got.map(|v| v.unwrap().to_bits()), want.map(f64::to_bits));
            assert_eq!(nearest_rank(&mut values.clone(), 0.5), Some(at(0.5)));
        }
        assert_eq!(nearest_ranks(&mut [], [0.5, 0.99]), [None, None]);
    }

    /// The statistics of one column the slow way: every plotted value in a
    /// list, min, max and sum folded over it after, the list sorted.
    fn by_hand(rows: &[(i64, Option<f64>)], counter: bool, window: (i64, i64)) -> ColumnStats {
        let rows: Vec<(i64, f64)> = rows
            .iter()
            .filter(|(t, v)| (window.0..=window.1).contains(t) && v.is_some_and(|v| !v.is_nan()))
            .map(|&(t, v)| (t, v.unwrap()))
            .collect();
        let mut plotted = Vec::new();
        let (mut increase, mut integral) = (0.0, 0.0);
        let mut last: Option<(i64, f64)> = None;
        for &(t, v) in &rows {
            match last {
                Some((t0, v0)) if counter => {
                    if t <= t0 {
                        continue;
                    }
                    let up = if v >= v0 { v - v0 } else { v };
                    increase += up;
                    plotted.push(up / ((t - t0) as f64 / 1e9));
                }
                Some((t0, v0)) => {
                    integral += (v + v0) / 2.0 * ((t - t0) as f64 / 1e9);
                    plotted.push(v);
                }
                None if counter => {}
                None => plotted.push(v),
            }
            last = Some((t, v));
        }
        let mut sorted = plotted.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let at = |q: f64| (n > 0).then(|| sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1]);
        let first = rows.first().copied();
        let span = first
            .zip(last)
            .map_or(0.0, |(f, l)| (l.0 - f.0) as f64 / 1e9);
        ColumnStats {
            name: String::new(),
            kind: None,
            count: rows.len() as u64,
            min: plotted.iter().copied().reduce(f64::min),
            max: plotted.iter().copied().reduce(f64::max),
            mean: (n > 0).then(|| plotted.iter().sum::<f64>() / n as f64),
            p50: at(0.5),
            p99: at(0.99),
            last_minus_first: first.zip(last).map(|(f, l)| l.1 - f.1),
            increase: (counter && !rows.is_empty()).then_some(increase),
            mean_rate: (counter && span > 0.0).then(|| increase / span),
            integral: (!rows.is_empty()).then_some(if counter { increase } else { integral }),
        }
    }

    #[test]
    fn streamed_statistics_equal_those_of_every_plotted_value_held_at_once() {
        use arrow_array::{Float32Array, Float64Array, Int64Array, RecordBatch, UInt16Array};
        use arrow_schema::{Field, Schema};
        use std::collections::HashMap;
        use std::sync::Arc;
        let kind = |k: &str| HashMap::from([(KIND_METADATA.to_string(), k.to_string())]);
        let schema = Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Int64, false),
            Field::new("g", DataType::Float64, true).with_metadata(kind("gauge")),
            Field::new("c", DataType::Int64, true).with_metadata(kind("counter")),
            Field::new("f", DataType::Float32, true),
            Field::new("u", DataType::UInt16, true),
        ]));
        let mut s = 7u64;
        let mut t = 0i64;
        let mut total = 0i64;
        let mut all: Vec<[(i64, Option<f64>); 4]> = Vec::new();
        let mut pieces = Vec::new();
        for seq in 0..5 {
            let mut batches = Vec::new();
            for _ in 0..3 {
                let n = 200 + (xorshift(&mut s) % 300) as usize;
                let (mut ts, mut g, mut c, mut f, mut u) = (vec![], vec![], vec![], vec![], vec![]);
                for _ in 0..n {
                    // Now and then a step back in time, which a counter skips.
                    t += (xorshift(&mut s) % 4) as i64 * 250_000_000 - 50_000_000;
                    let r = xorshift(&mut s);
                    total = if r.is_multiple_of(97) {
                        0
                    } else {
                        total + (r % 1000) as i64
                    };
                    let gv = match r % 13 {
                        0 => None,
                        1 => Some(f64::NAN),
                        2 => Some(-0.0),
                        _ => Some((r % 10_000) as f64 / 7.0 - 600.0),
                    };
                    let cv = (!r.is_multiple_of(17)).then_some(total);
                    let fv = (!r.is_multiple_of(11)).then_some((r % 333) as f32 / 3.0);
                    let uv = (!r.is_multiple_of(5)).then_some((r % 60_000) as u16);
                    all.push([
                        (t, gv),
                        (t, cv.map(|v| v as f64)),
                        (t, fv.map(f64::from)),
                        (t, uv.map(f64::from)),
                    ]);
                    ts.push(t);
                    g.push(gv);
                    c.push(cv);
                    f.push(fv);
                    u.push(uv);
                }
                let columns: Vec<arrow_array::ArrayRef> = vec![
                    Arc::new(Int64Array::from(ts)),
                    Arc::new(Float64Array::from(g)),
                    Arc::new(Int64Array::from(c)),
                    Arc::new(Float32Array::from(f)),
                    Arc::new(UInt16Array::from(u)),
                ];
                batches.push(RecordBatch::try_new(schema.clone(), columns).unwrap());
            }
            pieces.push(Piece {
                segment: Some(seq),
                batches: Arc::new(batches),
            });
        }
        let times: Vec<i64> = all.iter().map(|r| r[0].0).collect();
        let (lo, hi) = (times[times.len() / 5], times[times.len() * 4 / 5]);
        for window in [(i64::MIN, i64::MAX), (lo.min(hi), lo.max(hi))] {
            let stats = region_stats(&pieces, "s", None, window).unwrap();
            let inside = times
                .iter()
                .filter(|t| (window.0..=window.1).contains(*t))
                .count();
            assert_eq!(stats.rows, inside as u64);
            assert_eq!(stats.columns.len(), 4);
            for (i, got) in stats.columns.iter().enumerate() {
                let rows: Vec<(i64, Option<f64>)> = all.iter().map(|r| r[i]).collect();
                let mut want = by_hand(&rows, i == 1, window);
                want.name = got.name.clone();
                want.kind = got.kind.clone();
                // Bit for bit: -0.0 is not 0.0 here.
                assert_eq!(
                    format!("{got:?}"),
                    format!("{want:?}"),
                    "column {}",
                    got.name
                );
            }
            let asked = ["c".to_string()];
            let one = region_stats(&pieces, "s", Some(&asked), window).unwrap();
            assert_eq!(one.columns, stats.columns[1..2]);
        }
    }
}

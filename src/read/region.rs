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

use arrow_schema::DataType;

use crate::read::columns::{is_numeric, numbers, ts_column};
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

/// A running summary of one numeric column.
#[derive(Debug, Default)]
struct Acc {
    counter: bool,
    count: u64,
    first: Option<(i64, f64)>,
    last: Option<(i64, f64)>,
    plotted: Vec<f64>,
    integral: f64,
    increase: f64,
}

impl Acc {
    fn push(&mut self, ts: i64, v: f64) {
        self.count += 1;
        self.first.get_or_insert((ts, v));
        match self.last {
            Some((t0, v0)) if self.counter => {
                if ts <= t0 {
                    return;
                }
                let increase = if v >= v0 { v - v0 } else { v };
                self.increase += increase;
                self.plotted.push(increase / ((ts - t0) as f64 / 1e9));
            }
            Some((t0, v0)) => {
                self.integral += (v + v0) / 2.0 * ((ts - t0) as f64 / 1e9);
                self.plotted.push(v);
            }
            None if self.counter => {}
            None => self.plotted.push(v),
        }
        self.last = Some((ts, v));
    }

    fn finish(mut self, name: String, kind: Option<String>) -> ColumnStats {
        let n = self.plotted.len();
        let mean = (n > 0).then(|| self.plotted.iter().sum::<f64>() / n as f64);
        let min = self.plotted.iter().copied().reduce(f64::min);
        let max = self.plotted.iter().copied().reduce(f64::max);
        let p50 = nearest_rank(&mut self.plotted, 0.5);
        let p99 = nearest_rank(&mut self.plotted, 0.99);
        let span = match (self.first, self.last) {
            (Some((t0, _)), Some((t1, _))) => (t1 - t0) as f64 / 1e9,
            _ => 0.0,
        };
        let counted = self.count > 0;
        ColumnStats {
            name,
            kind,
            count: self.count,
            min,
            max,
            mean,
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
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    let (_, v, _) = values.select_nth_unstable_by(rank - 1, f64::total_cmp);
    Some(*v)
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
    let mut accs: Vec<(String, Option<String>, Acc)> = found
        .iter()
        .filter_map(|(name, what)| match what {
            Found::Numeric(kind) => Some((
                name.clone(),
                kind.clone(),
                Acc {
                    counter: kind.as_deref() == Some("counter"),
                    ..Acc::default()
                },
            )),
            Found::Histogram => None,
        })
        .collect();
    let mut rows = 0u64;
    each_batch(pieces, stream, &mut problems, |slice, _| {
        let inside: Vec<usize> = (0..slice.times.len())
            .filter(|&i| (from..=to).contains(&slice.times[i]))
            .collect();
        rows += inside.len() as u64;
        if inside.is_empty() {
            return;
        }
        let schema = slice.batch.schema();
        for (name, _, acc) in accs.iter_mut() {
            let Ok(c) = schema.index_of(name) else {
                continue;
            };
            let Some(values) = numbers(slice.batch.column(c).as_ref()) else {
                continue;
            };
            for &i in &inside {
                if !values[i].is_nan() {
                    acc.push(slice.times[i], values[i]);
                }
            }
        }
    });
    let columns = accs
        .into_iter()
        .map(|(name, kind, acc)| acc.finish(name, kind))
        .collect();
    let mut histograms = Vec::new();
    for (name, what) in &found {
        if !matches!(what, Found::Histogram) {
            continue;
        }
        let mut counts: Vec<u64> = Vec::new();
        let mut summed = 0u64;
        let spec = each_interval(pieces, stream, name, (from, to), &mut problems, |_, row| {
            if counts.len() != row.len() {
                counts = vec![0; row.len()];
            }
            for (sum, &c) in counts.iter_mut().zip(row) {
                *sum = sum.saturating_add(c);
            }
            summed += 1;
        });
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
}

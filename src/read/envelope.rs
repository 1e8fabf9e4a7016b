//! Reducing a time window of a stream to something a plot can draw: every
//! row while there are few, else a min/max envelope per time bucket.
//!
//! Why min/max rather than a point-picking scheme such as LTTB: a plot of
//! operational telemetry is read for its extremes. A bucket's min and max
//! are exact, so a single-row spike anywhere in a million rows still
//! reaches the screen; the price is two values per bucket instead of one.
//!
//! The reduction is streaming: segments are fed one at a time, so memory is
//! bounded by one decoded segment plus `max_points` buckets, whatever the
//! window holds.
//!
//! This file is the maths alone, pure and tested on batches; choosing and
//! fetching what to feed it is [`super::range`]'s.

use arrow_array::{Array, RecordBatch};

use crate::read::columns::{fold_extremes, is_numeric, numbers, time_values, ts_column};
use crate::read::stats::{Extremes, SegmentStats};

/// One numeric column of an [`Envelope`].
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnEnvelope {
    /// The column's name.
    pub name: String,
    /// Per point, the smallest finite value; NaN where the point has none.
    pub min: Vec<f64>,
    /// Per point, the largest finite value; NaN where the point has none.
    pub max: Vec<f64>,
}

/// A window of a stream, ready to plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Rows that fall inside the window: the sealed segments', plus the
    /// live tail's when it could be read.
    pub rows_in_window: u64,
    /// Of those, rows of the live tail (read through the self-describing
    /// encoder, [`crate::segment::typed`]); a tail this reader cannot decode adds
    /// none.
    pub live_rows_in_window: u64,
    /// Segments decoded to answer.
    pub segments_read: usize,
    /// Segments answered from their footer's statistics, not decoded: each
    /// lay inside one bucket, so its extremes are all it adds.
    pub segments_from_stats: usize,
    /// Segments of the window left unread because it held more than the
    /// reader's segment budget ([`super::range::RangeReader::bounded`]): the envelope is
    /// then exact for the segments read and says nothing of these. 0 for
    /// an exact envelope.
    pub segments_left_out: usize,
    /// The rows the catalog claims for the segments left out.
    pub rows_left_out: u64,
    /// Whether rows were bucketed (`false`: one point per row).
    pub reduced: bool,
    /// One timestamp per point: the row's own, or the bucket's start.
    pub ts: Vec<i64>,
    /// Numeric columns, in the order they were first met.
    pub columns: Vec<ColumnEnvelope>,
}

/// Builds an [`Envelope`] from record batches fed in time order.
///
/// Rows are kept as they are until more than `max_points` fall inside the
/// window; from then on they are folded into `max_points` equal time
/// buckets over `span` (the part of the window that holds data, when the
/// caller knows it, else the window itself), and only non-empty buckets
/// become points. So the result never has more than `max_points` points.
#[derive(Debug)]
pub struct EnvelopeBuilder {
    from: i64,
    to: i64,
    max_points: Option<usize>,
    wanted: Option<Vec<String>>,
    /// Bucket boundaries: bucket `k` is `[bounds[k], bounds[k + 1])`, with
    /// the last one closed at `span.1`. Empty until the switch to buckets.
    bounds: Vec<i64>,
    span: (i64, i64),
    rows: u64,
    ts: Vec<i64>,
    filled: Vec<bool>,
    columns: Vec<ColumnEnvelope>,
    /// Segments added by [`EnvelopeBuilder::push_stats`].
    from_stats: usize,
}

impl EnvelopeBuilder {
    /// A builder for rows with `from <= ts <= to`. `max_points` of `None`
    /// keeps every row. `columns` limits which numeric columns are kept
    /// (unknown names are ignored); `span` is the extent of the data in the
    /// window, if known, to spend the buckets where the rows are.
    pub fn new(
        from: i64,
        to: i64,
        max_points: Option<usize>,
        columns: Option<&[String]>,
        span: Option<(i64, i64)>,
    ) -> EnvelopeBuilder {
        let span = match span {
            Some((lo, hi)) if lo.max(from) <= hi.min(to) => (lo.max(from), hi.min(to)),
            _ => (from, to),
        };
        EnvelopeBuilder {
            from,
            to,
            max_points: max_points.filter(|&n| n > 0),
            wanted: columns.map(<[String]>::to_vec),
            bounds: Vec::new(),
            span,
            rows: 0,
            ts: Vec::new(),
            filled: Vec::new(),
            columns: Vec::new(),
            from_stats: 0,
        }
    }

    /// The most points the envelope may have; `None` keeps every row.
    pub(super) fn max_points(&self) -> Option<usize> {
        self.max_points
    }

    /// The extent the buckets are spread over.
    pub(super) fn span(&self) -> (i64, i64) {
        self.span
    }

    /// Rows inside the window fed so far.
    pub(super) fn rows(&self) -> u64 {
        self.rows
    }

    /// Whether a numeric column of this name is kept: every one when no
    /// names were given, else the named ones.
    fn keeps(&self, name: &str) -> bool {
        self.wanted
            .as_ref()
            .is_none_or(|w| w.iter().any(|w| w == name))
    }

    fn reduced(&self) -> bool {
        !self.bounds.is_empty()
    }

    fn column_index(&mut self, name: &str) -> usize {
        if let Some(i) = self.columns.iter().position(|c| c.name == name) {
            return i;
        }
        let len = if self.reduced() {
            self.filled.len()
        } else {
            self.ts.len()
        };
        let (fill_min, fill_max) = if self.reduced() {
            (f64::INFINITY, f64::NEG_INFINITY)
        } else {
            (f64::NAN, f64::NAN)
        };
        self.columns.push(ColumnEnvelope {
            name: name.to_string(),
            min: vec![fill_min; len],
            max: vec![fill_max; len],
        });
        self.columns.len() - 1
    }

    /// Switches from one point per row to buckets, folding the rows kept
    /// so far into them.
    fn switch_to_buckets(&mut self, n: usize) {
        self.bounds = bucket_bounds(self.span, n);
        let rows = std::mem::take(&mut self.ts);
        self.filled = vec![false; n];
        let buckets: Vec<usize> = {
            let mut cursor = 0;
            rows.iter()
                .map(|&t| bucket_of(&self.bounds, t, &mut cursor))
                .collect()
        };
        for &b in &buckets {
            self.filled[b] = true;
        }
        for column in &mut self.columns {
            let (old_min, old_max) = (
                std::mem::take(&mut column.min),
                std::mem::take(&mut column.max),
            );
            column.min = vec![f64::INFINITY; n];
            column.max = vec![f64::NEG_INFINITY; n];
            for (i, &b) in buckets.iter().enumerate() {
                if old_min[i].is_finite() {
                    column.min[b] = column.min[b].min(old_min[i]);
                    column.max[b] = column.max[b].max(old_max[i]);
                }
            }
        }
    }

    /// Folds rows into buckets from now on, however few have come: for a
    /// caller that already knows the window holds more than `max_points`
    /// rows. The envelope is the same as if the switch had come with the
    /// row that crossed the limit. Without `max_points`, nothing changes.
    pub fn reduce_now(&mut self) {
        if let Some(n) = self.max_points {
            if !self.reduced() {
                self.switch_to_buckets(n);
            }
        }
    }

    /// The bucket that every time in `[lo, hi]` falls in, when rows are
    /// being bucketed and the span lies inside the window and inside one
    /// bucket.
    pub fn bucket_holding(&self, lo: i64, hi: i64) -> Option<usize> {
        if !self.reduced() {
            return None;
        }
        one_bucket(&self.bounds, self.from, self.to, lo, hi)
    }

    /// The bucket [`Self::push_stats`] would add `stats` to, or `None`
    /// when it would refuse them. Once rows are bucketed, the answer for a
    /// given segment does not change.
    pub fn stats_fit(&self, stats: &SegmentStats) -> Option<usize> {
        let b = self.bucket_holding(stats.first_ts, stats.last_ts)?;
        let unknown = stats
            .columns
            .iter()
            .any(|c| c.extremes == Extremes::Unknown && self.keeps(&c.name));
        (!unknown).then_some(b)
    }

    /// Adds a segment from its footer's statistics instead of its rows,
    /// exactly as pushing its decoded rows would: every row lies in one
    /// bucket ([`Self::bucket_holding`]), so the segment adds its row count,
    /// fills that bucket, and widens each column's min and max there by the
    /// column's own extremes. Returns `false`, adding nothing, when that is
    /// not exact: rows are not being bucketed, the rows span two buckets or
    /// leave the window, or a column kept here has no exact extremes.
    pub fn push_stats(&mut self, stats: &SegmentStats) -> bool {
        let Some(b) = self.stats_fit(stats) else {
            return false;
        };
        let wanted = self.wanted.clone();
        let kept = |name: &str| wanted.as_ref().is_none_or(|w| w.iter().any(|x| x == name));
        self.rows = self.rows.saturating_add(stats.rows);
        self.filled[b] = true;
        for c in stats.columns.iter().filter(|c| kept(&c.name)) {
            let k = self.column_index(&c.name);
            if let Extremes::Range { min, max } = c.extremes {
                let column = &mut self.columns[k];
                column.min[b] = column.min[b].min(min);
                column.max[b] = column.max[b].max(max);
            }
        }
        self.from_stats += 1;
        true
    }

    /// A builder over the same window, span and buckets as this one,
    /// bucketing from the start, for a band of footer extremes
    /// ([`super::range::RangeReader::preview`]); `None` without `max_points`, where
    /// every row is wanted and no band can stand for them.
    pub(super) fn band(&self) -> Option<EnvelopeBuilder> {
        let n = self.max_points?;
        let mut band = EnvelopeBuilder::new(
            self.from,
            self.to,
            Some(n),
            self.wanted.as_deref(),
            Some(self.span),
        );
        band.reduce_now();
        Some(band)
    }

    /// Spreads a segment's footer extremes over every bucket its rows'
    /// span (clipped to the window) overlaps: each of its rows lies in one
    /// of those buckets, so a bucket's true minimum can only be higher
    /// than the band's there, its maximum only lower. Adds the segment's
    /// whole row count (a segment straddling an edge counts whole).
    /// Returns the kept columns whose extremes the footer does not know,
    /// which add nothing; `None`, adding nothing, when rows are not being
    /// bucketed or the span misses the window.
    pub(super) fn push_band(&mut self, stats: &SegmentStats) -> Option<Vec<String>> {
        let (lo, hi) = (stats.first_ts.max(self.from), stats.last_ts.min(self.to));
        if !self.reduced() || lo > hi {
            return None;
        }
        let mut cursor = 0;
        let first = bucket_of(&self.bounds, lo, &mut cursor);
        let last = bucket_of(&self.bounds, hi, &mut cursor);
        self.rows = self.rows.saturating_add(stats.rows);
        // A window narrower than its point count has empty buckets (equal
        // bounds), which no row can fall in: they stay unfilled.
        for k in first..=last {
            self.filled[k] |= self.bounds[k] < self.bounds[k + 1];
        }
        let mut unknown = Vec::new();
        for c in &stats.columns {
            if !self.keeps(&c.name) {
                continue;
            }
            let k = self.column_index(&c.name);
            match c.extremes {
                Extremes::Range { min, max } => {
                    let column = &mut self.columns[k];
                    for v in &mut column.min[first..=last] {
                        *v = v.min(min);
                    }
                    for v in &mut column.max[first..=last] {
                        *v = v.max(max);
                    }
                }
                Extremes::NoValues => {}
                Extremes::Unknown => unknown.push(c.name.clone()),
            }
        }
        Some(unknown)
    }

    /// Feeds one batch. Rows outside the window, and rows whose time is
    /// null, are skipped; a batch with no time-axis column adds nothing.
    pub fn push(&mut self, batch: &RecordBatch) {
        let schema = batch.schema();
        let Some(ts_index) = ts_column(&schema) else {
            return;
        };
        let ts_array = batch.column(ts_index);
        let Some(times) = time_values(ts_array.as_ref()) else {
            return;
        };
        // The usual batch: every row has a time and they ascend, so the
        // window is one run of rows and each bucket a run inside it.
        if ts_array.null_count() == 0 && times.windows(2).all(|w| w[0] <= w[1]) {
            let start = times.partition_point(|&t| t < self.from);
            let end = times.partition_point(|&t| t <= self.to).max(start);
            self.push_sorted(batch, ts_index, times, start..end);
            return;
        }
        let selected: Vec<usize> = (0..times.len())
            .filter(|&i| ts_array.is_valid(i) && (self.from..=self.to).contains(&times[i]))
            .collect();
        self.push_rows(batch, ts_index, times, selected);
    }

    /// [`Self::push`] for rows `rows` of a batch whose times ascend: in
    /// buckets, a column is folded run by run instead of row by row.
    fn push_sorted(
        &mut self,
        batch: &RecordBatch,
        ts_index: usize,
        times: &[i64],
        rows: std::ops::Range<usize>,
    ) {
        if rows.is_empty() {
            return;
        }
        if let Some(n) = self.max_points {
            if !self.reduced() && self.ts.len() + rows.len() > n {
                self.switch_to_buckets(n);
            }
        }
        if !self.reduced() {
            return self.push_rows(batch, ts_index, times, rows.collect());
        }
        self.rows = self.rows.saturating_add(rows.len() as u64);
        let last = self.filled.len() - 1;
        let mut runs: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
        let (mut i, mut cursor) = (rows.start, 0);
        while i < rows.end {
            let b = bucket_of(&self.bounds, times[i], &mut cursor);
            let j = if b == last {
                rows.end
            } else {
                let limit = self.bounds[b + 1];
                i + times[i..rows.end].partition_point(|&t| t < limit)
            };
            runs.push((b, i..j));
            i = j;
        }
        let schema = batch.schema();
        for (c, field) in schema.fields().iter().enumerate() {
            if c == ts_index || !is_numeric(field.data_type()) || !self.keeps(field.name()) {
                continue;
            }
            let k = self.column_index(field.name());
            let array = batch.column(c);
            let column = &mut self.columns[k];
            for (b, run) in &runs {
                let (lo, hi) = fold_extremes(
                    array.as_ref(),
                    run.clone(),
                    (column.min[*b], column.max[*b]),
                );
                column.min[*b] = lo;
                column.max[*b] = hi;
            }
        }
        for (b, _) in &runs {
            self.filled[*b] = true;
        }
    }

    /// [`Self::push`] row by row, for the rows `selected` of a batch.
    fn push_rows(
        &mut self,
        batch: &RecordBatch,
        ts_index: usize,
        times: &[i64],
        selected: Vec<usize>,
    ) {
        let schema = batch.schema();
        if selected.is_empty() {
            return;
        }
        self.rows = self.rows.saturating_add(selected.len() as u64);
        if let Some(n) = self.max_points {
            if !self.reduced() && self.ts.len() + selected.len() > n {
                self.switch_to_buckets(n);
            }
        }
        let slots: Vec<usize> = if self.reduced() {
            let mut cursor = 0;
            selected
                .iter()
                .map(|&i| bucket_of(&self.bounds, times[i], &mut cursor))
                .collect()
        } else {
            let start = self.ts.len();
            self.ts.extend(selected.iter().map(|&i| times[i]));
            (start..self.ts.len()).collect()
        };
        let mut seen = vec![false; self.columns.len()];
        for (c, field) in schema.fields().iter().enumerate() {
            if c == ts_index || !is_numeric(field.data_type()) || !self.keeps(field.name()) {
                continue;
            }
            let Some(values) = numbers(batch.column(c).as_ref()) else {
                continue;
            };
            let k = self.column_index(field.name());
            seen.resize(self.columns.len(), false);
            seen[k] = true;
            let reduced = self.reduced();
            let column = &mut self.columns[k];
            if reduced {
                for (&i, &b) in selected.iter().zip(&slots) {
                    let v = values[i];
                    if v.is_finite() {
                        column.min[b] = column.min[b].min(v);
                        column.max[b] = column.max[b].max(v);
                    }
                }
            } else {
                column.min.resize(self.ts.len() - selected.len(), f64::NAN);
                column.max.resize(self.ts.len() - selected.len(), f64::NAN);
                for &i in &selected {
                    let v = if values[i].is_finite() {
                        values[i]
                    } else {
                        f64::NAN
                    };
                    column.min.push(v);
                    column.max.push(v);
                }
            }
        }
        if self.reduced() {
            for &b in &slots {
                self.filled[b] = true;
            }
        } else {
            // Columns this batch lacks get no value for its rows.
            for (column, _) in self.columns.iter_mut().zip(&seen).filter(|(_, s)| !**s) {
                column.min.resize(self.ts.len(), f64::NAN);
                column.max.resize(self.ts.len(), f64::NAN);
            }
        }
    }

    /// The envelope, with `segments_read` recorded as given.
    pub fn finish(mut self, segments_read: usize) -> Envelope {
        let reduced = self.reduced();
        if reduced {
            let keep: Vec<usize> = (0..self.filled.len()).filter(|&b| self.filled[b]).collect();
            let no_value = |v: f64| if v.is_finite() { v } else { f64::NAN };
            for column in &mut self.columns {
                column.min = keep.iter().map(|&b| no_value(column.min[b])).collect();
                column.max = keep.iter().map(|&b| no_value(column.max[b])).collect();
            }
            self.ts = keep.iter().map(|&b| self.bounds[b]).collect();
        }
        Envelope {
            rows_in_window: self.rows,
            live_rows_in_window: 0,
            segments_read,
            segments_from_stats: self.from_stats,
            segments_left_out: 0,
            rows_left_out: 0,
            reduced,
            ts: self.ts,
            columns: self.columns,
        }
    }
}

/// The boundaries of `n` equal buckets over `span`: bucket `k` is
/// `[bounds[k], bounds[k + 1])`, the last one closed at `span.1`.
pub(super) fn bucket_bounds((lo, hi): (i64, i64), n: usize) -> Vec<i64> {
    let width = hi as i128 - lo as i128 + 1;
    (0..=n as i128)
        .map(|k| (lo as i128 + (k * width + n as i128 - 1) / n as i128) as i64)
        .collect()
}

/// The bucket of `bounds` that every time in `[lo, hi]` falls in, when
/// the span lies inside the window `[from, to]` and inside one bucket.
pub(super) fn one_bucket(bounds: &[i64], from: i64, to: i64, lo: i64, hi: i64) -> Option<usize> {
    if lo > hi || lo < from || hi > to {
        return None;
    }
    let mut cursor = 0;
    let a = bucket_of(bounds, lo, &mut cursor);
    // Buckets are ordered, so every time between two in one bucket is in it.
    (bucket_of(bounds, hi, &mut cursor) == a).then_some(a)
}

/// The bucket holding `t`, starting the search at `cursor` (rows usually
/// come in time order, so this is a step or two) and leaving it there.
pub(super) fn bucket_of(bounds: &[i64], t: i64, cursor: &mut usize) -> usize {
    let last = bounds.len() - 2;
    let c = *cursor;
    let found = if t >= bounds[c] && (c == last || t < bounds[c + 1]) {
        c
    } else if c < last && t >= bounds[c + 1] && (c + 1 == last || t < bounds[c + 2]) {
        c + 1
    } else {
        bounds[1..=last].partition_point(|&b| b <= t)
    };
    *cursor = found;
    found
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float64Array, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn batch(ts: Vec<i64>, value: Vec<Option<f64>>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Int64, false),
            Field::new("value", DataType::Float64, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ts)),
                Arc::new(Float64Array::from(value)),
            ],
        )
        .unwrap()
    }

    #[test]
    fn a_small_window_keeps_every_row_trimmed_to_the_window() {
        let mut b = EnvelopeBuilder::new(2, 4, Some(10), None, None);
        b.push(&batch(vec![1, 2, 3], vec![Some(1.0), None, Some(3.0)]));
        b.push(&batch(vec![4, 5], vec![Some(4.0), Some(5.0)]));
        let e = b.finish(2);
        assert!(!e.reduced);
        assert_eq!(e.rows_in_window, 3);
        assert_eq!(e.ts, vec![2, 3, 4]);
        let v = &e.columns[0];
        assert!(
            v.min[0].is_nan() && v.max[0].is_nan(),
            "a null row has no value"
        );
        assert_eq!(&v.min[1..], &[3.0, 4.0]);
        assert_eq!(v.min[1..], v.max[1..]);
    }

    #[test]
    fn a_one_row_spike_in_a_million_rows_survives_the_reduction() {
        let n = 1_000_000i64;
        let spike_at = 777_777i64;
        let mut b = EnvelopeBuilder::new(0, n - 1, Some(2000), None, Some((0, n - 1)));
        for chunk in (0..n).collect::<Vec<_>>().chunks(65_536) {
            let values = chunk
                .iter()
                .map(|&t| Some(if t == spike_at { 1e9 } else { (t % 7) as f64 }))
                .collect();
            b.push(&batch(chunk.to_vec(), values));
        }
        let e = b.finish(16);
        assert!(e.reduced);
        assert_eq!(e.rows_in_window, n as u64);
        assert!(
            e.ts.len() <= 2000 && e.ts.len() >= 1990,
            "{} points",
            e.ts.len()
        );
        let v = &e.columns[0];
        let top = v.max.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(top, 1e9, "the spike is the envelope's maximum");
        let at = v.max.iter().position(|&m| m == 1e9).unwrap();
        assert!(e.ts[at] <= spike_at && (at + 1 == e.ts.len() || e.ts[at + 1] > spike_at));
        assert_eq!(v.min.iter().cloned().fold(f64::INFINITY, f64::min), 0.0);
        assert!(e.ts.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_switch_to_buckets_keeps_rows_seen_before_it() {
        let mut b = EnvelopeBuilder::new(0, 99, Some(4), None, None);
        b.push(&batch(
            vec![0, 1, 2],
            vec![Some(-5.0), Some(1.0), Some(2.0)],
        ));
        b.push(&batch(vec![50, 60, 99], vec![Some(7.0), None, Some(9.0)]));
        let e = b.finish(2);
        assert!(e.reduced);
        assert_eq!(e.ts, vec![0, 50, 75]);
        assert_eq!(e.columns[0].min, vec![-5.0, 7.0, 9.0]);
        assert_eq!(e.columns[0].max, vec![2.0, 7.0, 9.0]);
    }

    #[test]
    fn buckets_cover_the_extremes_of_the_time_range() {
        let mut b = EnvelopeBuilder::new(i64::MIN, i64::MAX, Some(3), None, None);
        b.push(&batch(
            vec![i64::MIN, -1, 0, i64::MAX],
            vec![Some(1.0), Some(2.0), Some(3.0), Some(4.0)],
        ));
        let e = b.finish(1);
        assert!(e.reduced && e.ts.len() <= 3);
        assert_eq!(e.ts[0], i64::MIN);
        assert_eq!(e.columns[0].max.last(), Some(&4.0));
    }

    #[test]
    fn a_column_missing_from_one_batch_has_no_value_there() {
        let other = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("ts", DataType::Int64, false),
                Field::new("other", DataType::Int64, false),
            ])),
            vec![
                Arc::new(Int64Array::from(vec![10])),
                Arc::new(Int64Array::from(vec![42])),
            ],
        )
        .unwrap();
        let mut b = EnvelopeBuilder::new(0, 100, None, None, None);
        b.push(&batch(vec![1], vec![Some(1.0)]));
        b.push(&other);
        b.push(&batch(vec![20], vec![Some(2.0)]));
        let e = b.finish(3);
        assert_eq!(e.ts, vec![1, 10, 20]);
        let names: Vec<_> = e.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["value", "other"]);
        assert!(e.columns[0].min[1].is_nan());
        assert!(e.columns[1].min[0].is_nan() && e.columns[1].min[2].is_nan());
        assert_eq!(e.columns[1].min[1], 42.0);
    }

    #[test]
    fn only_the_named_columns_are_kept() {
        let wanted = vec!["nope".to_string()];
        let mut b = EnvelopeBuilder::new(0, 10, None, Some(&wanted), None);
        b.push(&batch(vec![1], vec![Some(1.0)]));
        let e = b.finish(1);
        assert_eq!(e.ts, vec![1]);
        assert!(e.columns.is_empty());
    }

    /// A column-by-column, row-by-row reference: what the builder did
    /// before batches with ascending times were folded run by run.
    fn row_by_row(batches: &[RecordBatch], from: i64, to: i64, n: Option<usize>) -> Envelope {
        let mut b = EnvelopeBuilder::new(from, to, n, None, None);
        for batch in batches {
            let ts_index = ts_column(&batch.schema()).unwrap();
            let times = time_values(batch.column(ts_index).as_ref()).unwrap();
            let ts_array = batch.column(ts_index);
            let selected = (0..times.len())
                .filter(|&i| ts_array.is_valid(i) && (from..=to).contains(&times[i]))
                .collect();
            b.push_rows(batch, ts_index, times, selected);
        }
        b.finish(batches.len())
    }

    fn same(a: &Envelope, b: &Envelope) -> bool {
        let eq = |x: &[f64], y: &[f64]| {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
        };
        a.rows_in_window == b.rows_in_window
            && a.reduced == b.reduced
            && a.ts == b.ts
            && a.columns.len() == b.columns.len()
            && a.columns
                .iter()
                .zip(&b.columns)
                .all(|(x, y)| x.name == y.name && eq(&x.min, &y.min) && eq(&x.max, &y.max))
    }

    #[test]
    fn runs_of_ascending_rows_fold_to_what_row_by_row_folding_gives() {
        use arrow_array::{Int32Array, UInt64Array};
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Int64, true),
            Field::new("f", DataType::Float64, true),
            Field::new("i", DataType::Int32, true),
            Field::new("u", DataType::UInt64, false),
        ]));
        for round in 0..200 {
            let batches: Vec<RecordBatch> = (0..1 + next() % 4)
                .map(|_| {
                    let len = (next() % 300) as usize;
                    let mut t = (next() % 1000) as i64 - 500;
                    let unsorted = round % 5 == 0;
                    let ts: Vec<Option<i64>> = (0..len)
                        .map(|_| {
                            t += (next() % 4) as i64;
                            if unsorted && next() % 9 == 0 {
                                return if next() % 2 == 0 { None } else { Some(t - 50) };
                            }
                            Some(t)
                        })
                        .collect();
                    let f: Vec<Option<f64>> = (0..len)
                        .map(|_| match next() % 12 {
                            0 => None,
                            1 => Some(f64::NAN),
                            2 => Some(f64::INFINITY),
                            3 => Some(1e12),
                            k => Some(k as f64 - (next() % 100) as f64),
                        })
                        .collect();
                    let i: Vec<Option<i32>> = (0..len)
                        .map(|_| (next() % 7 != 0).then(|| next() as i32))
                        .collect();
                    let u: Vec<u64> = (0..len).map(|_| next()).collect();
                    RecordBatch::try_new(
                        schema.clone(),
                        vec![
                            Arc::new(Int64Array::from(ts)),
                            Arc::new(Float64Array::from(f)),
                            Arc::new(Int32Array::from(i)),
                            Arc::new(UInt64Array::from(u)),
                        ],
                    )
                    .unwrap()
                })
                .collect();
            let from = (next() % 1200) as i64 - 700;
            let to = from + (next() % 1500) as i64;
            for n in [None, Some(1), Some(2), Some(5), Some(40), Some(500)] {
                let mut fast = EnvelopeBuilder::new(from, to, n, None, None);
                for b in &batches {
                    fast.push(b);
                }
                let fast = fast.finish(batches.len());
                let slow = row_by_row(&batches, from, to, n);
                assert!(
                    same(&fast, &slow),
                    "round {round}, {n:?}:\n{fast:?}\n{slow:?}"
                );
            }
        }
    }
}

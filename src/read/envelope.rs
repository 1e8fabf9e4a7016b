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

use std::sync::Arc;

use arrow_array::{Array, RecordBatch};

use crate::catalog::{Listing, SegmentRecord};
use crate::container::Archive;
use crate::error::Result;
use crate::read::columns::{fold_extremes, is_numeric, numbers, time_values, ts_column};
use crate::read::rates::Rates;
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
    /// encoder, [`crate::typed`]); a tail this reader cannot decode adds
    /// none.
    pub live_rows_in_window: u64,
    /// Segments decoded to answer.
    pub segments_read: usize,
    /// Segments answered from their footer's statistics, not decoded: each
    /// lay inside one bucket, so its extremes are all it adds.
    pub segments_from_stats: usize,
    /// Segments of the window left unread because it held more than the
    /// reader's segment budget ([`RangeReader::bounded`]): the envelope is
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
        let kept = |name: &str| {
            self.wanted
                .as_ref()
                .is_none_or(|w| w.iter().any(|x| x == name))
        };
        let unknown = stats
            .columns
            .iter()
            .any(|c| c.extremes == Extremes::Unknown && kept(&c.name));
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
    /// ([`RangeReader::preview`]); `None` without `max_points`, where
    /// every row is wanted and no band can stand for them.
    fn band(&self) -> Option<EnvelopeBuilder> {
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
    fn push_band(&mut self, stats: &SegmentStats) -> Option<Vec<String>> {
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
            let kept = self.wanted.as_ref().is_none_or(|w| w.contains(&c.name));
            if !kept {
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
            if c == ts_index || !is_numeric(field.data_type()) {
                continue;
            }
            if let Some(wanted) = &self.wanted {
                if !wanted.iter().any(|w| w == field.name()) {
                    continue;
                }
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
            if c == ts_index || !is_numeric(field.data_type()) {
                continue;
            }
            if let Some(wanted) = &self.wanted {
                if !wanted.iter().any(|w| w == field.name()) {
                    continue;
                }
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
        if !self.reduced() {
            return Envelope {
                rows_in_window: self.rows,
                live_rows_in_window: 0,
                segments_read,
                segments_from_stats: self.from_stats,
                segments_left_out: 0,
                rows_left_out: 0,
                reduced: false,
                ts: self.ts,
                columns: self.columns,
            };
        }
        let keep: Vec<usize> = (0..self.filled.len()).filter(|&b| self.filled[b]).collect();
        let no_value = |v: f64| if v.is_finite() { v } else { f64::NAN };
        for column in &mut self.columns {
            column.min = keep.iter().map(|&b| no_value(column.min[b])).collect();
            column.max = keep.iter().map(|&b| no_value(column.max[b])).collect();
        }
        Envelope {
            rows_in_window: self.rows,
            live_rows_in_window: 0,
            segments_read,
            segments_from_stats: self.from_stats,
            segments_left_out: 0,
            rows_left_out: 0,
            reduced: true,
            ts: keep.iter().map(|&b| self.bounds[b]).collect(),
            columns: self.columns,
        }
    }
}

/// The boundaries of `n` equal buckets over `span`: bucket `k` is
/// `[bounds[k], bounds[k + 1])`, the last one closed at `span.1`.
fn bucket_bounds((lo, hi): (i64, i64), n: usize) -> Vec<i64> {
    let width = hi as i128 - lo as i128 + 1;
    (0..=n as i128)
        .map(|k| (lo as i128 + (k * width + n as i128 - 1) / n as i128) as i64)
        .collect()
}

/// The bucket of `bounds` that every time in `[lo, hi]` falls in, when
/// the span lies inside the window `[from, to]` and inside one bucket.
fn one_bucket(bounds: &[i64], from: i64, to: i64, lo: i64, hi: i64) -> Option<usize> {
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
fn bucket_of(bounds: &[i64], t: i64, cursor: &mut usize) -> usize {
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

/// What [`read_range`] needs to know about a window.
#[derive(Debug, Clone, Copy)]
pub struct RangeRequest<'a> {
    /// The source.
    pub source_id: i64,
    /// The stream.
    pub stream: &'a str,
    /// First timestamp of the window, inclusive.
    pub from: i64,
    /// Last timestamp of the window, inclusive.
    pub to: i64,
    /// Numeric columns to keep; `None` keeps all.
    pub columns: Option<&'a [String]>,
    /// At most this many points; `None` keeps every row.
    pub max_points: Option<usize>,
    /// Counter columns to read as per-second rates ([`super::rates`]);
    /// `None` reads every column as it is.
    pub rates: Option<&'a [String]>,
}

/// The decoded batches of one segment, shared with a cache.
pub type Decoded = Arc<Vec<RecordBatch>>;

/// Reduces a window of a stream's sealed segments to an [`Envelope`].
/// Only segments whose span overlaps the window are handed to `decode`,
/// one at a time and in seq order; `decode` gets the columns to keep (the
/// time axis is added by [`decode_for_range`]). The live tail follows the
/// segments when the source was written with the self-describing encoder
/// ([`crate::typed`]); any other encoder's tail cannot be decoded here.
pub fn read_range(
    archive: &Archive,
    request: &RangeRequest<'_>,
    decode: impl FnMut(&SegmentRecord, Option<&[String]>) -> Result<Decoded>,
) -> Result<Envelope> {
    read_range_with(archive, request, |_| Ok(None), decode)
}

/// A segment's footer statistics, shared with a cache.
pub type Stats = Arc<SegmentStats>;

/// [`read_range`], answering from footer statistics where that is exact:
/// once rows are bucketed, a segment whose rows all lie in one bucket adds
/// only its extremes there, and its row-group statistics hold them, so it
/// is not decoded. `stats` returns a segment's summary
/// ([`super::stats::segment_stats`]), `None` when its footer does not say
/// exactly. The envelope is the one [`read_range`] returns, except that
/// `segments_read` counts only the segments decoded.
///
/// The catalog's spans only pick which footers to read (a segment inside
/// one bucket by the catalog); what a footer says decides. When those
/// segments alone hold more rows than `max_points`, the builder buckets
/// from the start, as it would have once their rows arrived.
pub fn read_range_with(
    archive: &Archive,
    request: &RangeRequest<'_>,
    stats: impl FnMut(&SegmentRecord) -> Result<Option<Stats>>,
    decode: impl FnMut(&SegmentRecord, Option<&[String]>) -> Result<Decoded>,
) -> Result<Envelope> {
    read_range_bounded(archive, request, None, stats, decode)
}

/// [`read_range_with`], reading at most about `budget` segments of the
/// window ([`RangeReader::bounded`]; `None`: every one).
pub fn read_range_bounded(
    archive: &Archive,
    request: &RangeRequest<'_>,
    budget: Option<usize>,
    stats: impl FnMut(&SegmentRecord) -> Result<Option<Stats>>,
    decode: impl FnMut(&SegmentRecord, Option<&[String]>) -> Result<Decoded>,
) -> Result<Envelope> {
    RangeReader::bounded(archive, request, budget, stats)?.decode_all(request.columns, decode)
}

/// A window's envelope from footer statistics alone: what the viewer
/// draws at once, while the exact envelope is read. Each segment's
/// per-column min and max are spread over every bucket its rows' span
/// overlaps, in the buckets the exact envelope uses, so wherever every
/// segment under a bucket has exact extremes for a column, the band holds
/// the exact envelope: its minimum at or below the exact minimum, its
/// maximum at or above the exact maximum. A bucket inside a segment's span
/// that holds none of its rows shows the band all the same. Rates need
/// the rows themselves, so columns read as rates are left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    /// The band, shaped as an exact envelope with `reduced` set:
    /// `segments_read` is 0, `segments_from_stats` counts the segments
    /// whose footers made it, `segments_left_out` and `rows_left_out` are
    /// the segment budget's as for the exact read, and `rows_in_window`
    /// counts whole every summarized segment overlapping the window (plus
    /// the live tail's rows in it).
    pub envelope: Envelope,
    /// Segments whose footer gave no summary (no exact time axis, or not
    /// readable): they add nothing, so their buckets may be missing.
    pub segments_unsummarized: usize,
    /// Per column of `envelope.columns`, the summarized segments whose
    /// footer does not know that column's extremes (a non-finite value,
    /// no statistics): they add nothing to that column.
    pub column_gaps: Vec<usize>,
}

/// The [`Preview`] of a window: lists its segments as
/// [`read_range_bounded`] does (with the same `budget`), then answers from
/// `stats` alone, decoding nothing. `None` when `request` has no
/// `max_points` or the window no more rows than that
/// ([`RangeReader::preview`]).
pub fn preview_range(
    archive: &Archive,
    request: &RangeRequest<'_>,
    budget: Option<usize>,
    mut stats: impl FnMut(&SegmentRecord) -> Result<Option<Stats>>,
) -> Result<Option<Preview>> {
    let reader = RangeReader::bounded(archive, request, budget, &mut stats)?;
    reader.preview(stats)
}

/// One step of a [`RangeReader`], in segment order.
enum Step {
    /// Answered by the segment's footer.
    Stats(Stats),
    /// Decoded rows, waiting for the steps before them.
    Rows(Decoded),
    /// Handed out to be decoded: the segment's index.
    Pending(usize),
}

/// [`read_range_with`] one segment at a time, for a caller that decodes
/// elsewhere, possibly several segments at once (the viewer decodes in a
/// second wasm instance). [`Self::next_to_decode`] names the segments
/// whose rows it needs, in order; [`Self::supply`] takes them back in any
/// order; rows and footers are added to the envelope in segment order,
/// so the answer is the one [`read_range_with`] gives.
pub struct RangeReader {
    segments: Vec<SegmentRecord>,
    /// The live rows in the window, added after the last segment.
    tail: Option<RecordBatch>,
    rates: Rates,
    /// The columns read as rates, which a preview leaves out.
    counters: Vec<String>,
    known: Vec<Option<Stats>>,
    builder: EnvelopeBuilder,
    /// Segments before this one have a step.
    asked: usize,
    /// Steps not yet added to the envelope, oldest first.
    steps: std::collections::VecDeque<Step>,
    decoded: usize,
    /// Segments of the window not read, and the rows they claim.
    left_out: (usize, u64),
}

/// The segment budget the viewer gives a window
/// ([`RangeReader::bounded`]): reading a segment's footer costs about
/// 50 µs in the browser, so a window over 100,000 segments took 5 s for
/// its first plot; 4,096 of them (plus one a bucket) take a fraction of
/// a second.
pub const VIEWER_SEGMENT_BUDGET: usize = 4_096;

/// Which of `segments` (in order) a window over more than `budget` of
/// them reads: every `stride`-th one, where `stride` spreads about
/// `budget` over the window, and also the first whose catalog span starts
/// in each bucket of `bounds` that no earlier pick started in, so no
/// bucket with data is left blank.
fn sample(segments: &[SegmentRecord], budget: usize, bounds: &[i64]) -> Vec<bool> {
    let stride = segments.len().div_ceil(budget.max(1));
    let mut picked = vec![false; segments.len()];
    let (mut last_bucket, mut last_pick) = (None, None::<usize>);
    let mut cursor = 0;
    for (i, record) in segments.iter().enumerate() {
        let bucket = bucket_of(bounds, record.first_ts, &mut cursor);
        let due = last_pick.is_none_or(|p| i - p >= stride);
        if due || last_bucket != Some(bucket) {
            picked[i] = true;
            last_pick = Some(i);
            last_bucket = Some(bucket);
        }
    }
    picked
}

impl RangeReader {
    /// Lists the segments overlapping the window and reads the footers of
    /// those the catalog places inside one bucket (see [`read_range_with`]).
    pub fn new(
        archive: &Archive,
        request: &RangeRequest<'_>,
        stats: impl FnMut(&SegmentRecord) -> Result<Option<Stats>>,
    ) -> Result<RangeReader> {
        RangeReader::bounded(archive, request, None, stats)
    }

    /// [`Self::new`], reading at most about `budget` of the window's
    /// segments. A window over more segments than that, which they claim
    /// more rows for than `max_points` (so bucketed; no rates asked for),
    /// reads a spread sample of them
    /// ([`VIEWER_SEGMENT_BUDGET`] says why), at least one starting in
    /// each bucket that has data, and buckets its rows whatever their
    /// count; its envelope is exact for the segments read, in the buckets
    /// the whole window would have, and counts the rest in
    /// [`Envelope::segments_left_out`]. A narrower window reads fewer
    /// segments and is exact again. Without `budget`, or within it, the
    /// envelope is the one [`Self::new`] gives.
    pub fn bounded(
        archive: &Archive,
        request: &RangeRequest<'_>,
        budget: Option<usize>,
        stats: impl FnMut(&SegmentRecord) -> Result<Option<Stats>>,
    ) -> Result<RangeReader> {
        RangeReader::listed(archive, request, budget, None, stats)
    }

    /// [`Self::bounded`], taking the window's segments from `listing` when
    /// given instead of asking the catalog: the same records for an
    /// archive that has not changed since `listing` was read from it
    /// ([`Listing`] says who may hold one).
    pub fn listed(
        archive: &Archive,
        request: &RangeRequest<'_>,
        budget: Option<usize>,
        listing: Option<&Listing>,
        stats: impl FnMut(&SegmentRecord) -> Result<Option<Stats>>,
    ) -> Result<RangeReader> {
        RangeReader::build(archive, request, budget, listing, stats, true)
    }

    /// [`Self::listed`] for a caller that wants to know which segments
    /// and footers the read takes, not its answer: the live tail is
    /// spanned from the index, never read (for an archive read in place,
    /// its rows are what the caller will fetch ahead), and the reader
    /// holds none of it.
    pub fn planned(
        archive: &Archive,
        request: &RangeRequest<'_>,
        budget: Option<usize>,
        listing: Option<&Listing>,
        stats: impl FnMut(&SegmentRecord) -> Result<Option<Stats>>,
    ) -> Result<RangeReader> {
        RangeReader::build(archive, request, budget, listing, stats, false)
    }

    fn build(
        archive: &Archive,
        request: &RangeRequest<'_>,
        budget: Option<usize>,
        listing: Option<&Listing>,
        mut stats: impl FnMut(&SegmentRecord) -> Result<Option<Stats>>,
        read_tail: bool,
    ) -> Result<RangeReader> {
        let (mut segments, tail, tail_span) = archive.read_snapshot(|s| {
            let source = s.source(request.source_id)?;
            let (id, stream, from, to) =
                (request.source_id, request.stream, request.from, request.to);
            let segments = match listing {
                Some(listing) => listing.overlapping(id, stream, from, to),
                None => s.segments_overlapping(id, stream, from, to)?,
            };
            if read_tail {
                let tail = crate::read::typed_tail(s, &source, stream, from, to)?;
                let span = tail.as_ref().map(|(_, span)| *span);
                return Ok((segments, tail, span));
            }
            // Only a tail the typed reader decodes counts toward the span.
            let span = match crate::typed::reader_for(&source.source.metadata) {
                Some(_) => s.live_wal_span_between(id, stream, from, to)?,
                None => None,
            };
            Ok((segments, None, span))
        })?;
        let span = segments
            .iter()
            .map(|s| (s.first_ts, s.last_ts))
            .chain(tail_span)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
        let rates = Rates::new(request.rates.unwrap_or_default());
        let mut builder = EnvelopeBuilder::new(
            request.from,
            request.to,
            request.max_points,
            request.columns,
            span,
        );
        let mut left_out = (0usize, 0u64);
        let over = |b: &usize| segments.len() > *b;
        if let (Some(budget), Some(n)) = (budget.filter(over), builder.max_points) {
            // Saturating: a hostile catalog's counts can sum past u64::MAX.
            let claimed = segments
                .iter()
                .fold(0u64, |sum, s| sum.saturating_add(s.rows.max(0) as u64));
            if rates.is_empty() && claimed > n as u64 {
                let picked = sample(&segments, budget, &bucket_bounds(builder.span, n));
                let mut all = std::mem::take(&mut segments).into_iter();
                for (record, keep) in all.by_ref().zip(picked) {
                    if keep {
                        segments.push(record);
                    } else {
                        left_out.0 += 1;
                        left_out.1 = left_out.1.saturating_add(record.rows.max(0) as u64);
                    }
                }
                builder.reduce_now();
            }
        }
        let mut known: Vec<Option<Stats>> = vec![None; segments.len()];
        // A footer's extremes are of totals, not of rates: with rates asked
        // for, every segment is decoded.
        if let Some(n) = builder.max_points.filter(|_| rates.is_empty()) {
            // Saturating: a hostile catalog's counts can sum past u64::MAX.
            let claimed = segments
                .iter()
                .fold(0u64, |sum, s| sum.saturating_add(s.rows.max(0) as u64));
            if claimed > n as u64 {
                let bounds = bucket_bounds(builder.span, n);
                let mut certain = 0u64;
                for (record, slot) in segments.iter().zip(&mut known) {
                    let inside = one_bucket(
                        &bounds,
                        request.from,
                        request.to,
                        record.first_ts,
                        record.last_ts,
                    );
                    if inside.is_none() {
                        continue;
                    }
                    if let Some(summary) = stats(record)? {
                        if summary.first_ts >= request.from && summary.last_ts <= request.to {
                            certain = certain.saturating_add(summary.rows);
                        }
                        *slot = Some(summary);
                    }
                }
                if certain > n as u64 {
                    builder.reduce_now();
                }
            }
        }
        Ok(RangeReader {
            segments,
            tail: tail.map(|(batch, _)| batch),
            rates,
            counters: request.rates.unwrap_or_default().to_vec(),
            known,
            builder,
            asked: 0,
            steps: std::collections::VecDeque::new(),
            decoded: 0,
            left_out,
        })
    }

    /// The segments of the window this reader reads (after any sample),
    /// in order.
    pub fn segments(&self) -> &[SegmentRecord] {
        &self.segments
    }

    /// A first answer from footer statistics alone, before any segment is
    /// decoded: see [`Preview`]. Footers this reader already read are
    /// reused; `stats` gives the rest. The live tail, already in memory,
    /// is added exactly. `None` without `max_points`, or when the window's
    /// segments claim no more rows than `max_points` (with the ones a
    /// budget left out): the exact answer then keeps every row, which a
    /// band of buckets cannot stand for. Call it any time before
    /// [`Self::finish`]; it does not change what the reader does.
    pub fn preview(
        &self,
        mut stats: impl FnMut(&SegmentRecord) -> Result<Option<Stats>>,
    ) -> Result<Option<Preview>> {
        let Some(mut band) = self.builder.band() else {
            return Ok(None);
        };
        // Saturating: a hostile catalog's counts can sum past u64::MAX.
        let claimed = self.segments.iter().fold(self.left_out.1, |sum, s| {
            sum.saturating_add(s.rows.max(0) as u64)
        });
        if self.builder.max_points.is_none_or(|n| claimed <= n as u64) {
            return Ok(None);
        }
        let mut gaps: Vec<(String, usize)> = Vec::new();
        let (mut used, mut unsummarized) = (0usize, 0usize);
        for (record, known) in self.segments.iter().zip(&self.known) {
            let summary = match known {
                Some(summary) => Some(Arc::clone(summary)),
                None => stats(record)?,
            };
            let Some(summary) = summary else {
                unsummarized += 1;
                continue;
            };
            if let Some(unknown) = band.push_band(&summary) {
                used += 1;
                for name in unknown {
                    match gaps.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, count)) => *count += 1,
                        None => gaps.push((name, 1)),
                    }
                }
            }
        }
        let sealed = band.rows;
        if let Some(tail) = &self.tail {
            band.push(tail);
        }
        let live = band.rows.saturating_sub(sealed);
        let mut envelope = band.finish(0);
        envelope.segments_from_stats = used;
        envelope.live_rows_in_window = live;
        (envelope.segments_left_out, envelope.rows_left_out) = self.left_out;
        envelope
            .columns
            .retain(|c| !self.counters.contains(&c.name));
        let column_gaps = envelope
            .columns
            .iter()
            .map(|c| gaps.iter().find(|(n, _)| *n == c.name).map_or(0, |g| g.1))
            .collect();
        Ok(Some(Preview {
            envelope,
            segments_unsummarized: unsummarized,
            column_gaps,
        }))
    }

    /// The next segment whose rows are needed, with an index to hand its
    /// rows back by; `None` once every segment is accounted for. Segments
    /// in between that their footers answer are noted, not handed out. A
    /// footer is used only if rows are already being bucketed when its
    /// segment comes up; once they are, they stay so.
    pub fn next_to_decode(&mut self) -> Option<(usize, SegmentRecord)> {
        while self.asked < self.segments.len() {
            let i = self.asked;
            self.asked += 1;
            if let Some(summary) = &self.known[i] {
                if self.builder.stats_fit(summary).is_some() {
                    self.steps.push_back(Step::Stats(Arc::clone(summary)));
                    continue;
                }
            }
            self.steps.push_back(Step::Pending(i));
            return Some((i, self.segments[i].clone()));
        }
        None
    }

    /// The decoded rows of segment `index`, as [`Self::next_to_decode`]
    /// named it. Rows for an index not waiting are ignored.
    pub fn supply(&mut self, index: usize, rows: Decoded) {
        if let Some(slot) = self
            .steps
            .iter_mut()
            .find(|s| matches!(s, Step::Pending(i) if *i == index))
        {
            *slot = Step::Rows(rows);
            self.decoded += 1;
        }
        self.apply_ready();
    }

    /// Adds the leading steps that are complete.
    fn apply_ready(&mut self) {
        while matches!(self.steps.front(), Some(Step::Stats(_) | Step::Rows(_))) {
            match self.steps.pop_front() {
                Some(Step::Stats(summary)) => {
                    self.builder.push_stats(&summary);
                }
                Some(Step::Rows(rows)) => {
                    for batch in rows.iter() {
                        let batch = self.rates.apply(batch);
                        self.builder.push(&batch);
                    }
                }
                _ => {}
            }
        }
    }

    /// Decodes every segment the envelope needs with `decode` (given the
    /// columns to keep), in order, and finishes.
    pub fn decode_all(
        mut self,
        columns: Option<&[String]>,
        mut decode: impl FnMut(&SegmentRecord, Option<&[String]>) -> Result<Decoded>,
    ) -> Result<Envelope> {
        while let Some((index, record)) = self.next_to_decode() {
            let rows = decode(&record, columns)?;
            self.supply(index, rows);
        }
        Ok(self.finish())
    }

    /// The envelope. Every segment handed out must have been supplied.
    pub fn finish(mut self) -> Envelope {
        self.apply_ready();
        let sealed = self.builder.rows;
        if let Some(tail) = self.tail.take() {
            let tail = self.rates.apply(&tail);
            self.builder.push(&tail);
        }
        let live = self.builder.rows.saturating_sub(sealed);
        let mut envelope = self.builder.finish(self.decoded);
        envelope.live_rows_in_window = live;
        (envelope.segments_left_out, envelope.rows_left_out) = self.left_out;
        envelope
    }
}

/// Fetches and decodes one segment for [`read_range`], keeping `columns`
/// plus the time axis (every column when `columns` is `None`).
pub fn decode_for_range(
    archive: &Archive,
    record: &SegmentRecord,
    columns: Option<&[String]>,
) -> Result<Decoded> {
    let bytes = range_segment_bytes(archive, record, columns)?;
    let batches =
        decode_range_bytes(bytes, columns).map_err(|cause| crate::error::Error::Segment {
            file: archive.file().to_string(),
            source_id: record.source_id,
            stream: record.stream.clone(),
            seq: record.seq,
            cause,
        })?;
    Ok(Arc::new(batches))
}

/// The bytes of a segment that [`decode_range_bytes`] of `columns` reads:
/// with columns named, only the footer and those columns' chunks are
/// fetched, zeros standing for the rest ([`crate::segment::read_columns`]);
/// the whole payload otherwise, or when its footer cannot be read (the
/// decode then says why).
pub fn range_segment_bytes(
    archive: &Archive,
    record: &SegmentRecord,
    columns: Option<&[String]>,
) -> Result<Vec<u8>> {
    archive.read_snapshot(|s| {
        let (source, stream, seq) = (record.source_id, record.stream.as_str(), record.seq);
        if columns.is_some() {
            let payload = s.segment_payload(source, stream, seq)?;
            let sparse = crate::segment::read_columns(
                payload.len(),
                |at, buf| payload.read_at(at, buf).map_err(|e| e.to_string()),
                range_columns(columns),
            );
            // A failed read is the archive's to report, in its own words.
            if let Ok(Some(bytes)) = sparse {
                return Ok(bytes);
            }
        }
        s.segment_bytes(source, stream, seq)
    })
}

/// Decodes a segment's bytes for an envelope: `columns` plus the time axis
/// (every column when `columns` is `None`).
pub fn decode_range_bytes(
    bytes: Vec<u8>,
    columns: Option<&[String]>,
) -> std::result::Result<Vec<RecordBatch>, String> {
    crate::segment::decode_segment_with(bytes, range_columns(columns))
}

/// Which columns a decode for an envelope keeps, given the segment's
/// schema: `columns` and the time axis (`None`: every column).
fn range_columns(
    columns: Option<&[String]>,
) -> impl FnOnce(&arrow_schema::SchemaRef) -> Option<Vec<String>> {
    let wanted = columns.map(<[String]>::to_vec);
    move |schema| {
        let mut wanted = wanted?;
        if let Some(ts) = ts_column(schema) {
            wanted.push(schema.field(ts).name().clone());
        }
        Some(wanted)
    }
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

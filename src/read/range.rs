//! The range reader (format §4): which of a window's segments to read,
//! in what order, from footer statistics or decoded, and the live tail
//! after them, fed to the [`EnvelopeBuilder`] that reduces them.
//!
//! The bucket maths is [`super::envelope`]'s and pure; this file is the
//! part that talks to the archive: catalog listings, segment bytes, the
//! self-describing tail, and a caller's budget of segments.

use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::catalog::{Listing, SegmentRecord};
use crate::container::Archive;
use crate::error::Result;
use crate::read::columns::ts_column;
use crate::read::envelope::{bucket_bounds, bucket_of, one_bucket, Envelope, EnvelopeBuilder};
use crate::read::rates::Rates;
use crate::read::stats::SegmentStats;

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
/// ([`crate::segment::typed`]); any other encoder's tail cannot be decoded here.
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
                let tail = crate::read::streams::typed_tail(s, &source, stream, from, to)?;
                let span = tail.as_ref().map(|(_, span)| *span);
                return Ok((segments, tail, span));
            }
            // Only a tail the typed reader decodes counts toward the span.
            let span = match crate::segment::typed::reader_for(&source.source.metadata) {
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
        if let (Some(budget), Some(n)) = (budget.filter(over), builder.max_points()) {
            // Saturating: a hostile catalog's counts can sum past u64::MAX.
            let claimed = segments
                .iter()
                .fold(0u64, |sum, s| sum.saturating_add(s.rows.max(0) as u64));
            if rates.is_empty() && claimed > n as u64 {
                let picked = sample(&segments, budget, &bucket_bounds(builder.span(), n));
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
        if let Some(n) = builder.max_points().filter(|_| rates.is_empty()) {
            // Saturating: a hostile catalog's counts can sum past u64::MAX.
            let claimed = segments
                .iter()
                .fold(0u64, |sum, s| sum.saturating_add(s.rows.max(0) as u64));
            if claimed > n as u64 {
                let bounds = bucket_bounds(builder.span(), n);
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

    /// Counts `segments` more of the window as left out, claiming `rows`:
    /// for a reader given a sample of the window's segments its caller
    /// picked (a sampled preview), so its answer says what it left out
    /// and bands the window as one holding their rows too.
    pub fn leave_out(&mut self, segments: usize, rows: u64) {
        self.left_out.0 = self.left_out.0.saturating_add(segments);
        self.left_out.1 = self.left_out.1.saturating_add(rows);
        if segments > 0 {
            self.builder.reduce_now();
        }
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
        if self
            .builder
            .max_points()
            .is_none_or(|n| claimed <= n as u64)
        {
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
        let sealed = band.rows();
        if let Some(tail) = &self.tail {
            band.push(tail);
        }
        let live = band.rows().saturating_sub(sealed);
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
        let sealed = self.builder.rows();
        if let Some(tail) = self.tail.take() {
            let tail = self.rates.apply(&tail);
            self.builder.push(&tail);
        }
        let live = self.builder.rows().saturating_sub(sealed);
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

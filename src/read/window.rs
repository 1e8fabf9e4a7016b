//! The raw rows of a window, for answers that must be exact (region
//! statistics, heatmaps): every sealed segment overlapping it, decoded,
//! and the live tail, each piece labelled so a bad row can be named by
//! stream, segment and row. Nothing here reduces; the envelope reader
//! ([`super::range`]) is the one that does.

use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::catalog::SegmentRecord;
use crate::container::Archive;
use crate::error::Result;
use crate::read::columns::{time_values, ts_column};
use crate::read::range::Decoded;
use crate::read::rates::nanos_per_unit;

/// One piece of a window: a sealed segment's rows or the live tail's.
#[derive(Debug, Clone)]
pub struct Piece {
    /// The segment's seq; `None` for the live tail.
    pub segment: Option<i64>,
    /// Its decoded rows.
    pub batches: Decoded,
}

/// The pieces of a stream's window `[from, to]`, in time order: each
/// sealed segment that overlaps it, decoded by `decode` (given the columns
/// to keep; the time axis is added by [`super::range::decode_for_range`]),
/// then the live tail's rows in the window when the source was written with
/// the self-describing encoder. Segments are whole: the rows outside the
/// window are the caller's to skip ([`Rows`]).
pub fn read_window(
    archive: &Archive,
    source_id: i64,
    stream: &str,
    window: (i64, i64),
    columns: Option<&[String]>,
    decode: impl FnMut(&SegmentRecord, Option<&[String]>) -> Result<Decoded>,
) -> Result<Vec<Piece>> {
    read_pieces(archive, source_id, stream, window, false, columns, decode)
}

/// [`read_window`] with a lead-in: the pieces also hold the stream's last
/// row before `from` (where it has one), so that a cumulative row at the
/// window's start has the row it differs from. When a segment overlapping
/// the window starts before it, that row is in it already; else the
/// segment ending last before `from` is read too, and the live tail's rows
/// before the window with it.
pub fn read_window_led(
    archive: &Archive,
    source_id: i64,
    stream: &str,
    window: (i64, i64),
    columns: Option<&[String]>,
    decode: impl FnMut(&SegmentRecord, Option<&[String]>) -> Result<Decoded>,
) -> Result<Vec<Piece>> {
    read_pieces(archive, source_id, stream, window, true, columns, decode)
}

fn read_pieces(
    archive: &Archive,
    source_id: i64,
    stream: &str,
    (from, to): (i64, i64),
    lead_in: bool,
    columns: Option<&[String]>,
    mut decode: impl FnMut(&SegmentRecord, Option<&[String]>) -> Result<Decoded>,
) -> Result<Vec<Piece>> {
    let (segments, tail) = archive.read_snapshot(|s| {
        let source = s.source(source_id)?;
        let mut segments = s.segments_overlapping(source_id, stream, from, to)?;
        let mut tail_from = from;
        if lead_in && from > i64::MIN && segments.iter().all(|r| r.first_ts >= from) {
            // Every segment starting before the window ends before it here.
            let before = s.segments_overlapping(source_id, stream, i64::MIN, from - 1)?;
            if let Some(lead) = before.into_iter().max_by_key(|r| (r.last_ts, r.seq)) {
                segments.insert(0, lead);
            }
            tail_from = i64::MIN;
        }
        let tail = crate::read::streams::typed_tail(s, &source, stream, tail_from, to)?;
        Ok((segments, tail))
    })?;
    let mut pieces = Vec::with_capacity(segments.len() + 1);
    for record in &segments {
        pieces.push(Piece {
            segment: Some(record.seq),
            batches: decode(record, columns)?,
        });
    }
    if let Some((batch, _)) = tail {
        pieces.push(Piece {
            segment: None,
            batches: Arc::new(vec![batch]),
        });
    }
    Ok(pieces)
}

/// A row that could not be used, named so a person can find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowProblem {
    /// The stream.
    pub stream: String,
    /// The segment's seq; `None` for the live tail.
    pub segment: Option<i64>,
    /// The row's index in its segment (or in the tail's rows in the window).
    pub row: usize,
    /// The row's time, in nanoseconds.
    pub ts: i64,
    /// What is wrong with it, in words.
    pub message: String,
}

impl std::fmt::Display for RowProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.segment {
            Some(seq) => write!(f, "stream {:?}, segment {seq}", self.stream)?,
            None => write!(f, "stream {:?}, live tail", self.stream)?,
        }
        write!(f, ", row {} (ts {}): {}", self.row, self.ts, self.message)
    }
}

/// The most problems an answer lists; the rest are counted.
pub const MAX_PROBLEMS: usize = 100;

/// Problems found while reading a window: the first [`MAX_PROBLEMS`], and
/// how many more there were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problems {
    /// The first problems, in row order.
    pub listed: Vec<RowProblem>,
    /// How many more were found and not listed.
    pub left_out: usize,
}

impl Problems {
    /// Notes a problem.
    pub fn push(&mut self, problem: RowProblem) {
        if self.listed.len() < MAX_PROBLEMS {
            self.listed.push(problem);
        } else {
            self.left_out += 1;
        }
    }
}

/// One decoded batch of a window, with its times in nanoseconds.
#[derive(Debug, Clone)]
pub struct Slice<'a> {
    /// The piece (segment or tail) it belongs to.
    pub piece: &'a Piece,
    /// The batch.
    pub batch: &'a RecordBatch,
    /// The index in its piece of the batch's first row.
    pub offset: usize,
    /// Each row's time, in nanoseconds.
    pub times: std::borrow::Cow<'a, [i64]>,
}

impl Slice<'_> {
    /// A problem with row `index` of this batch, of `stream`.
    pub fn problem(&self, stream: &str, index: usize, message: String) -> RowProblem {
        RowProblem {
            stream: stream.to_string(),
            segment: self.piece.segment,
            row: self.offset + index,
            ts: self.times.get(index).copied().unwrap_or(0),
            message,
        }
    }
}

/// Calls `each` for every batch of `pieces`, in order, with its times. A
/// batch without a readable time axis is a problem of its first row, and
/// is skipped. Which rows lie in the window is the caller's test.
pub fn each_batch<'a>(
    pieces: &'a [Piece],
    stream: &str,
    problems: &mut Problems,
    mut each: impl FnMut(Slice<'a>, &mut Problems),
) {
    for piece in pieces {
        let mut offset = 0usize;
        for batch in piece.batches.iter() {
            let schema = batch.schema();
            let times = ts_column(&schema).and_then(|i| {
                let array = batch.column(i);
                let scale = nanos_per_unit(array.data_type());
                time_values(array.as_ref()).map(|t| match scale {
                    1 => std::borrow::Cow::Borrowed(t),
                    k => t.iter().map(|v| v.saturating_mul(k)).collect(),
                })
            });
            match times {
                Some(times) => each(
                    Slice {
                        piece,
                        batch,
                        offset,
                        times,
                    },
                    problems,
                ),
                None => problems.push(RowProblem {
                    stream: stream.to_string(),
                    segment: piece.segment,
                    row: offset,
                    ts: 0,
                    message: "the rows have no time axis".into(),
                }),
            }
            offset += batch.num_rows();
        }
    }
}

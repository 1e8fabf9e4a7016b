//! Re-encoding one segment: keeping the rows inside a time window (a
//! trim) and keeping a subset of columns (a projection). A copy trims and
//! projects with it (`rewrite`), and a replica's seal cuts a held segment
//! that straddles its origin's (`adopt.rs`); it lives here, in the layer
//! below both, so the writer never imports the rewrites. The result is
//! written with [`crate::segment::writer_props`] and carries no caller
//! index, because the caller's index described the segment as it was
//! (format §3.2).

use arrow_array::{BooleanArray, RecordBatch};

use crate::catalog::SegmentRecord;
use crate::error::{Error, Result};
use crate::read::columns::{time_values, ts_column};
use crate::segment::{concat, decode_segment_with, encode_batch, Segment};

/// What to change in a segment.
pub(crate) struct Reencode<'a> {
    /// Keep only rows whose time lies in this inclusive window.
    pub window: Option<(i64, i64)>,
    /// Keep only these columns, and the time axis.
    pub columns: Option<&'a [String]>,
}

impl Reencode<'_> {
    /// Whether `record` must be re-encoded: a projection always, a trim
    /// only when the segment reaches outside the window.
    pub fn touches(&self, record: &SegmentRecord) -> bool {
        self.columns.is_some()
            || self
                .window
                .is_some_and(|(from, to)| record.first_ts < from || record.last_ts > to)
    }
}

/// Re-encodes `bytes` (the payload of `record` in `file`) as `how` says.
/// `None` when no row is left.
pub(crate) fn reencode(
    file: &str,
    record: &SegmentRecord,
    bytes: Vec<u8>,
    how: &Reencode<'_>,
) -> Result<Option<Segment>> {
    let fail = |cause: String| Error::Segment {
        file: file.to_string(),
        source_id: record.source_id,
        stream: record.stream.clone(),
        seq: record.seq,
        cause,
    };
    let columns = how.columns;
    let batches = decode_segment_with(bytes, |schema| {
        columns.map(|wanted| {
            let mut keep = wanted.to_vec();
            if let Some(t) = ts_column(schema) {
                keep.push(schema.field(t).name().clone());
            }
            keep
        })
    })
    .map_err(fail)?;
    let Some(schema) = batches.first().map(RecordBatch::schema) else {
        return Ok(None);
    };
    let mut batch = concat(&schema, &batches).map_err(fail)?;
    let (mut first_ts, mut last_ts) = (record.first_ts, record.last_ts);
    if let Some((from, to)) = how.window {
        let times = ts_column(&schema)
            .and_then(|t| time_values(batch.column(t).as_ref()))
            .ok_or_else(|| fail("cannot trim: the segment has no time column".into()))?;
        // The catalog's span is the encoder's word for these rows (format
        // §3.2); a time column that disagrees is not one we can cut by.
        if times.first() != Some(&record.first_ts) || times.last() != Some(&record.last_ts) {
            return Err(fail(format!(
                "cannot trim: its time column does not run from {} to {} as the catalog says",
                record.first_ts, record.last_ts
            )));
        }
        let keep: BooleanArray = times
            .iter()
            .map(|t| Some((from..=to).contains(t)))
            .collect();
        let kept: Vec<i64> = times
            .iter()
            .copied()
            .filter(|t| (from..=to).contains(t))
            .collect();
        let (Some(first), Some(last)) = (kept.first(), kept.last()) else {
            return Ok(None);
        };
        (first_ts, last_ts) = (*first, *last);
        batch = arrow_select::filter::filter_record_batch(&batch, &keep)
            .map_err(|e| fail(e.to_string()))?;
    }
    let rows = batch.num_rows() as i64;
    if rows == 0 {
        return Ok(None);
    }
    let bytes = encode_batch(&batch).map_err(fail)?;
    Ok(Some(Segment {
        bytes,
        rows,
        first_ts,
        last_ts,
        caller_index: None,
    }))
}

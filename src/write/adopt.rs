//! Adopting segments someone else encoded: a copy's, or a replica's from
//! its origin (`WIRE.md` §5.4, §5.5). The seal makes segments from the
//! writer's own rows; adoption takes finished ones and decides where each
//! goes in its stream: after what the stream holds, already held, or in
//! place of segments the origin merged or cut differently. It shares the
//! writer thread's connection and stream table, as the seal does, and cuts
//! a straddling held segment with `reencode.rs`.

use std::collections::HashMap;

use rusqlite::Connection;

use super::reencode::{reencode, Reencode};
use super::retry::with_retries;
use super::streams::StreamCache;
use crate::catalog::{SegmentRecord, Snapshot};
use crate::container::Transaction;
use crate::error::{Error, Result};
use crate::segment::Segment;

/// What [`super::SourceWriter::adopt_segment`] did with a segment built
/// elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adopted {
    /// Inserted at this seq; the stream's watermark is now its last row.
    Inserted {
        /// The seq it was given.
        seq: i64,
    },
    /// The stream's sealed rows already reach its last row: nothing to do.
    AlreadyHeld,
    /// A replica's segment that covers segments it held (its origin merged
    /// them): those were removed and this one put at the first one's seq.
    Replaced {
        /// The seq it was given.
        seq: i64,
        /// How many held segments it replaced.
        replaced: usize,
    },
}

/// Inserts segments someone else encoded (a replica, a copy), each at its
/// stream's next seq if it fits after what the stream already has (counting
/// the segments before it in `segments`), all in one transaction: a
/// catch-up of many segments pays for one commit, not one each. A segment
/// that does not fit refuses the whole batch before anything is written.
/// Seals in flight must be drained first. With `covers_live` (a replica),
/// [`adopt_replica`]'s rules apply instead: a segment may cover rows of the
/// stream's unsealed tail (the origin's rows that it sealed there, so the
/// segment holds them too), and may replace segments its origin merged.
pub(super) fn adopt(
    conn: &Connection,
    file: &str,
    streams: &mut StreamCache,
    source_id: i64,
    segments: Vec<(String, Segment)>,
    covers_live: bool,
) -> Result<Vec<Adopted>> {
    if covers_live {
        return adopt_replica(conn, file, streams, source_id, segments);
    }
    // Per stream touched: the watermark and next seq as the batch leaves them.
    let mut planned: Vec<(String, Option<i64>, i64)> = Vec::new();
    let mut outcomes = Vec::with_capacity(segments.len());
    for (stream, segment) in &segments {
        let invalid = |message: String| Error::Invalid {
            file: file.to_string(),
            message: format!("cannot adopt a segment into stream {stream:?}: {message}"),
        };
        check_adoptable(file, stream, segment)?;
        let at = match planned.iter().position(|(name, _, _)| name == stream) {
            Some(at) => at,
            None => {
                let st = streams.get(source_id, stream);
                planned.push((
                    stream.clone(),
                    st.and_then(|st| st.watermark),
                    st.map_or(0, |st| st.next_seq),
                ));
                planned.len() - 1
            }
        };
        if let Some(w) = planned[at].1 {
            if segment.last_ts <= w {
                outcomes.push(Adopted::AlreadyHeld);
                continue;
            }
            if segment.first_ts <= w {
                return Err(invalid(format!(
                    "it spans {}..={} across the stream's newest sealed row {w}",
                    segment.first_ts, segment.last_ts
                )));
            }
        }
        let live = Snapshot::on_writer(conn, file).live_wal_span(source_id, stream)?;
        if let Some(live) = live.filter(|l| l.first_ts <= segment.last_ts) {
            return Err(invalid(format!(
                "it reaches to {}, past the unsealed row at {}; it would hide rows it does not hold",
                segment.last_ts, live.first_ts
            )));
        }
        let seq = planned[at].2;
        planned[at].1 = Some(segment.last_ts);
        planned[at].2 = seq + 1;
        outcomes.push(Adopted::Inserted { seq });
    }
    let inserts: Vec<(&(String, Segment), i64)> = segments
        .iter()
        .zip(&outcomes)
        .filter_map(|(s, o)| match o {
            Adopted::Inserted { seq } => Some((s, *seq)),
            Adopted::AlreadyHeld | Adopted::Replaced { .. } => None,
        })
        .collect();
    if inserts.is_empty() {
        return Ok(outcomes);
    }
    with_retries(file, "adopting segments", || {
        let tx = Transaction::begin(conn, file)?;
        for ((stream, segment), seq) in &inserts {
            tx.insert_segment(source_id, stream, *seq, segment)?;
        }
        tx.commit()
    })?;
    for (stream, watermark, next_seq) in planned {
        let st = streams.get_mut(source_id, &stream);
        st.next_seq = next_seq;
        st.watermark = watermark;
        if let Some(w) = watermark {
            st.newest = Some(st.newest.map_or(w, |n| n.max(w)));
        }
    }
    Ok(outcomes)
}

/// [`adopt`] for a replica, whose segments are its origin's and converge to
/// them whatever the origin did to its own (`WIRE.md` §5.5). Each segment,
/// against the held segments of its stream that overlap its span:
/// - none, past the watermark (or no watermark): inserted at the next seq;
/// - none, below the watermark: already held (the replica's own retention
///   may have removed it, and it is not brought back);
/// - exactly one with the same span, row count and size: already held (a
///   different size is the origin's rewrite of it, e.g. a projection, and
///   replaces it as below);
/// - all lying within its span: the origin merged them; they are removed
///   and it takes the first one's seq (the seqs between are theirs, so the
///   stream's order holds);
/// - one reaching outside its span, wholly below the watermark: already
///   held (the replica holds those rows cut differently, e.g. compacted
///   here);
/// - otherwise one straddles its start (both sides compacted, cutting the
///   stream at other places): that one is cut down to its rows before the
///   span, re-encoded at its seq; the ones inside are replaced as above.
///
/// Everything in one transaction. Where a stream ends comes from the
/// writer's cache, carried through the batch; what a segment overlaps is
/// read in the transaction, so segments of one batch see each other.
fn adopt_replica(
    conn: &Connection,
    file: &str,
    streams: &mut StreamCache,
    source_id: i64,
    segments: Vec<(String, Segment)>,
) -> Result<Vec<Adopted>> {
    for (stream, segment) in &segments {
        check_adoptable(file, stream, segment)?;
    }
    let cache = &*streams;
    let outcomes = with_retries(file, "adopting segments", || {
        let tx = Transaction::begin(conn, file)?;
        // Per stream: the watermark and next seq as the batch leaves them,
        // from the writer's cache (it holds the file; nobody else writes).
        let mut planned: HashMap<&str, Tip> = HashMap::new();
        let mut outcomes = Vec::with_capacity(segments.len());
        for (stream, segment) in &segments {
            let tip = planned.entry(stream.as_str()).or_insert_with(|| {
                let st = cache.get(source_id, stream);
                Tip {
                    watermark: st.and_then(|st| st.watermark),
                    next_seq: st.map_or(0, |st| st.next_seq),
                }
            });
            let outcome = place_replica_segment(&tx, file, source_id, stream, segment, tip)?;
            outcomes.push(outcome);
        }
        tx.commit()?;
        Ok(outcomes)
    })?;
    let mut touched: Vec<&str> = segments.iter().map(|(s, _)| s.as_str()).collect();
    touched.sort_unstable();
    touched.dedup();
    for stream in touched {
        // Rows of the replica's tail the segments now cover are counted
        // as covered, for the prune, by reading the stream back.
        streams.refresh(conn, file, source_id, stream)?;
    }
    Ok(outcomes)
}

/// A stream's newest sealed row and next seq, as a batch leaves them.
struct Tip {
    watermark: Option<i64>,
    next_seq: i64,
}

/// One replica segment, placed by the rules of [`adopt_replica`].
fn place_replica_segment(
    tx: &Transaction<'_>,
    file: &str,
    source_id: i64,
    stream: &str,
    segment: &Segment,
    tip: &mut Tip,
) -> Result<Adopted> {
    let below = tip.watermark.is_some_and(|w| segment.last_ts <= w);
    if tip.watermark.is_none_or(|w| segment.first_ts > w) {
        // Past everything held: nothing to compare it with.
        let seq = tip.next_seq;
        tx.insert_segment(source_id, stream, seq, segment)?;
        tip.watermark = Some(segment.last_ts);
        tip.next_seq = seq + 1;
        return Ok(Adopted::Inserted { seq });
    }
    let sql = tx.sql();
    let held = Snapshot::on_writer(sql, file).segments_overlapping_in_time(
        source_id,
        stream,
        segment.first_ts,
        segment.last_ts,
    )?;
    if held.is_empty() {
        // Below the watermark (above it, the segment holding the
        // watermark would overlap): removed here, and not brought back.
        return Ok(Adopted::AlreadyHeld);
    }
    if let [one] = held.as_slice() {
        let size = segment.bytes.len() as i64;
        if (one.first_ts, one.last_ts, one.rows, one.bytes)
            == (segment.first_ts, segment.last_ts, segment.rows, size)
        {
            return Ok(Adopted::AlreadyHeld);
        }
    }
    let outside = held
        .iter()
        .any(|h| h.first_ts < segment.first_ts || h.last_ts > segment.last_ts);
    if outside && below {
        return Ok(Adopted::AlreadyHeld);
    }
    let delete = |seq: i64| {
        sql.execute(
            "DELETE FROM segments WHERE source_id = ?1 AND stream = ?2 AND seq = ?3",
            rusqlite::params![source_id, stream, seq],
        )
        .map_err(|e| Error::sqlite(file, "cannot remove a segment its origin merged", e))
    };
    let mut inside = Vec::with_capacity(held.len());
    for h in &held {
        if h.last_ts > segment.last_ts {
            // Past the span, so past the watermark: cannot be, since the
            // span ends beyond it. Refused rather than guessed at.
            return Err(Error::Invalid {
                file: file.to_string(),
                message: format!(
                    "cannot adopt a segment into stream {stream:?}: it spans {}..={}, and the \
                     held segment {} ({}..={}) reaches past it",
                    segment.first_ts, segment.last_ts, h.seq, h.first_ts, h.last_ts
                ),
            });
        }
        if h.first_ts < segment.first_ts {
            // Straddles the span's start: the replica cut the stream
            // elsewhere (it was compacted on its own). Its rows before the
            // span stay, re-encoded alone at its seq; the rest are the
            // origin's segment's.
            let kept = trimmed(sql, file, source_id, stream, h, segment.first_ts - 1)?;
            delete(h.seq)?;
            if let Some(kept) = kept {
                tx.insert_segment(source_id, stream, h.seq, &kept)?;
            }
        } else {
            delete(h.seq)?;
            inside.push(h.seq);
        }
    }
    let seq = match inside.first() {
        Some(&seq) => seq,
        None => {
            tip.next_seq += 1;
            tip.next_seq - 1
        }
    };
    tx.insert_segment(source_id, stream, seq, segment)?;
    tip.watermark = tip.watermark.max(Some(segment.last_ts));
    Ok(Adopted::Replaced {
        seq,
        replaced: held.len(),
    })
}

/// A held segment's rows at or before `to`, re-encoded as one segment
/// (`None` if it has none).
fn trimmed(
    sql: &rusqlite::Transaction<'_>,
    file: &str,
    source_id: i64,
    stream: &str,
    held: &crate::catalog::SegmentRecord,
    to: i64,
) -> Result<Option<Segment>> {
    let bytes: Vec<u8> = sql
        .query_row(
            "SELECT bytes FROM segments WHERE source_id = ?1 AND stream = ?2 AND seq = ?3",
            rusqlite::params![source_id, stream, held.seq],
            |r| r.get(0),
        )
        .map_err(|e| Error::sqlite(file, "cannot read a segment to cut it", e))?;
    let record = SegmentRecord {
        source_id,
        stream: stream.to_string(),
        seq: held.seq,
        rows: held.rows,
        first_ts: held.first_ts,
        last_ts: held.last_ts,
        bytes: held.bytes,
        caller_index: false,
    };
    let how = Reencode {
        window: Some((held.first_ts, to)),
        columns: None,
    };
    reencode(file, &record, bytes, &how)
}

/// A segment built elsewhere is refused before anything else when its
/// facts contradict themselves or its bytes are not Parquet.
fn check_adoptable(file: &str, stream: &str, segment: &Segment) -> Result<()> {
    let invalid = |message: String| Error::Invalid {
        file: file.to_string(),
        message: format!("cannot adopt a segment into stream {stream:?}: {message}"),
    };
    if segment.rows < 1 || segment.first_ts > segment.last_ts {
        return Err(invalid(format!(
            "it claims {} rows from {} to {}",
            segment.rows, segment.first_ts, segment.last_ts
        )));
    }
    if !crate::segment::has_parquet_magic(&segment.bytes) {
        return Err(invalid("its bytes are not a Parquet file".into()));
    }
    Ok(())
}

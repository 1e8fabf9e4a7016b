//! Compaction in place: runs of small adjacent segments of a stream merged
//! into segments of a target size, so a stream sealed often reads like one
//! sealed coarsely (read cost grows with the segment count).
//!
//! Each run is one transaction (delete the run, insert the merged segment
//! at the run's first `seq`), followed by a reclaim of the pages it freed,
//! itself transactional. A kill at any moment leaves the archive before or
//! after each run, with every row. The watermark cannot move (the run's
//! newest row stays the newest), so the live tail and its WAL rows are not
//! touched, nor are caller rows; the merged segment has no caller index,
//! since an index over one input cannot describe two (format §3.2), and
//! the report counts the indexes dropped that way.
//!
//! The archive is held through the writers' lock: a `Writer` holding the
//! file makes compaction refuse with [`Error::InUse`], and readers go on
//! reading beside it.

use std::path::Path;

use arrow_schema::{Schema, SchemaRef};
use rusqlite::params;
use serde::Serialize;

use super::merge::{conform, same_series, union_fields};
use crate::catalog::{SegmentRecord, Snapshot};
use crate::container::{open_streaming, Transaction};
use crate::error::{Error, Result, SqlContext};
use crate::segment::{concat, decode_segment, encode_batch, segment_schema, Segment};

/// The default target: about the segment size the original's page-size
/// sweep read fastest (1.4 MiB; see `DESIGN.md`).
pub const DEFAULT_TARGET_BYTES: u64 = 1_400_000;

/// How large a merged segment may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// At most this many rows.
    Rows(u64),
    /// At most this many bytes of Parquet payload (summed over the inputs).
    Bytes(u64),
}

impl Target {
    fn size(self, record: &SegmentRecord) -> u64 {
        match self {
            Target::Rows(_) => record.rows.max(0) as u64,
            Target::Bytes(_) => record.bytes.max(0) as u64,
        }
    }

    fn limit(self) -> u64 {
        match self {
            Target::Rows(n) | Target::Bytes(n) => n,
        }
    }
}

/// What to compact and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactSpec {
    /// The merged segments' size.
    pub target: Target,
    /// Merge across a column set that grew or shrank, null-filling the
    /// rows that lack a column. Never across a column whose type or
    /// metadata changed.
    pub union_fields: bool,
}

impl Default for CompactSpec {
    fn default() -> Self {
        CompactSpec {
            target: Target::Bytes(DEFAULT_TARGET_BYTES),
            union_fields: false,
        }
    }
}

/// Progress, reported as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactEvent {
    /// A run of segments is being merged.
    Merging {
        /// The source.
        source_id: i64,
        /// The stream.
        stream: String,
        /// Segments in the run.
        segments: usize,
    },
    /// The run's transaction committed.
    Committed {
        /// The source.
        source_id: i64,
        /// The stream.
        stream: String,
        /// The merged segment's seq.
        seq: i64,
        /// Its rows.
        rows: i64,
    },
    /// Free pages were handed back to the file system.
    Reclaimed {
        /// How many.
        pages: u64,
    },
}

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CompactReport {
    /// Runs merged (one transaction each).
    pub runs: usize,
    /// Segments before, across the archive.
    pub segments_before: usize,
    /// Segments after.
    pub segments_after: usize,
    /// Places where a run stopped because the schema changed.
    pub schema_breaks: usize,
    /// Caller indexes dropped: merged segments that had one (a merged
    /// segment has none, format §3.2).
    pub caller_indexes_dropped: usize,
    /// The file's size before.
    pub bytes_before: u64,
    /// The file's size after (sidecar folded in).
    pub bytes_after: u64,
}

/// Compacts every stream of the archive at `path` in place.
pub fn compact(
    path: impl AsRef<Path>,
    spec: &CompactSpec,
    mut on_event: impl FnMut(&CompactEvent),
) -> Result<CompactReport> {
    let path = path.as_ref();
    let file = path.display().to_string();
    if spec.target.limit() == 0 {
        return Err(Error::Invalid {
            file,
            message: "the compaction target must be at least 1".into(),
        });
    }
    let (conn, _lock) = open_streaming(path)?;
    let size = || {
        std::fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| Error::io(&file, "cannot stat", e))
    };
    let mut report = CompactReport {
        bytes_before: size()?,
        ..CompactReport::default()
    };
    let snapshot = Snapshot::on_writer(&conn, &file);
    let all = snapshot.all_segments()?;
    report.segments_before = all.len();
    let mut streams: Vec<(i64, String)> = all
        .iter()
        .map(|s| (s.source_id, s.stream.clone()))
        .collect();
    streams.dedup();
    let mut compactor = Compactor {
        conn: &conn,
        file: &file,
        spec,
        report: &mut report,
        on_event: &mut on_event,
    };
    for (source_id, stream) in streams {
        compactor.stream(source_id, &stream)?;
    }
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .ctx(
            &file,
            "cannot fold the compacted archive into its main file",
        )?;
    report.segments_after = Snapshot::on_writer(&conn, &file).all_segments()?.len();
    drop(conn);
    report.bytes_after = size()?;
    Ok(report)
}

/// A segment waiting in a run: its record and payload.
struct Pending {
    record: SegmentRecord,
    bytes: Vec<u8>,
    /// It carries a caller index, which the merge drops.
    indexed: bool,
}

struct Compactor<'a> {
    conn: &'a rusqlite::Connection,
    file: &'a str,
    spec: &'a CompactSpec,
    report: &'a mut CompactReport,
    on_event: &'a mut dyn FnMut(&CompactEvent),
}

impl Compactor<'_> {
    /// Walks one stream in seq order, gathering runs and merging each.
    fn stream(&mut self, source_id: i64, stream: &str) -> Result<()> {
        let snapshot = Snapshot::on_writer(self.conn, self.file);
        let segments = snapshot.segments(source_id, stream)?;
        let indexed: std::collections::HashSet<i64> = snapshot
            .caller_indexes(source_id, stream)?
            .into_iter()
            .filter_map(|(seq, index)| index.map(|_| seq))
            .collect();
        let limit = match self.spec.target {
            // No merged segment too large for a replication frame (`WIRE.md` §2).
            Target::Bytes(n) => n.min(crate::format::MAX_SEGMENT_BYTES),
            Target::Rows(n) => n,
        };
        let mut run: Vec<Pending> = Vec::new();
        let mut schema: Option<Schema> = None;
        let mut run_size = 0u64;
        for record in segments {
            let size = self.spec.target.size(&record);
            if size >= limit {
                self.flush(&mut run, schema.take())?;
                run_size = 0;
                continue;
            }
            let bytes = snapshot.segment_bytes(source_id, stream, record.seq)?;
            let own = segment_schema(&bytes).map_err(|cause| self.unreadable(&record, cause))?;
            let joined = schema.as_ref().and_then(|s| {
                if self.spec.union_fields {
                    union_fields(s, &own)
                } else {
                    same_series(s, &own)
                }
            });
            match joined {
                Some(joined) if run_size + size <= limit => schema = Some(joined),
                _ => {
                    if schema.is_some() && joined.is_none() {
                        self.report.schema_breaks += 1;
                    }
                    self.flush(&mut run, schema.take())?;
                    run_size = 0;
                    schema = Some(own.as_ref().clone());
                }
            }
            run_size += size;
            let indexed = indexed.contains(&record.seq);
            run.push(Pending {
                record,
                bytes,
                indexed,
            });
        }
        self.flush(&mut run, schema)
    }

    /// Merges `run` when it has two segments or more, and empties it.
    fn flush(&mut self, run: &mut Vec<Pending>, schema: Option<Schema>) -> Result<()> {
        let segments = std::mem::take(run);
        let (Some(schema), true) = (schema, segments.len() >= 2) else {
            return Ok(());
        };
        let first = &segments[0].record;
        let (source_id, stream) = (first.source_id, first.stream.clone());
        (self.on_event)(&CompactEvent::Merging {
            source_id,
            stream: stream.clone(),
            segments: segments.len(),
        });
        let merged = self.merge(&segments, std::sync::Arc::new(schema.clone()))?;
        let fits = crate::format::segment_frame_len(&stream, merged.bytes.len(), None);
        if !crate::format::frame_fits(fits) {
            // Too large to publish: each half is merged on its own instead.
            let mut later = segments;
            let mut earlier: Vec<Pending> = later.drain(..later.len() / 2).collect();
            self.flush(&mut earlier, Some(schema.clone()))?;
            return self.flush(&mut later, Some(schema));
        }
        let seq = first.seq;
        let tx = Transaction::begin(self.conn, self.file)?;
        for pending in &segments {
            tx.sql()
                .execute(
                    "DELETE FROM segments WHERE source_id = ?1 AND stream = ?2 AND seq = ?3",
                    params![source_id, stream, pending.record.seq],
                )
                .ctx(self.file, "cannot remove a merged segment")?;
        }
        tx.insert_segment(source_id, &stream, seq, &merged)?;
        tx.commit()?;
        self.report.runs += 1;
        self.report.caller_indexes_dropped += segments.iter().filter(|p| p.indexed).count();
        (self.on_event)(&CompactEvent::Committed {
            source_id,
            stream,
            seq,
            rows: merged.rows,
        });
        let pages = crate::write::reclaim_free_pages(self.conn, self.file)?;
        if pages > 0 {
            (self.on_event)(&CompactEvent::Reclaimed { pages });
        }
        Ok(())
    }

    /// Decodes a run, lays its rows out under `schema` and encodes them as
    /// one segment. The decoded rows must be the rows the catalog claims.
    fn merge(&self, run: &[Pending], schema: SchemaRef) -> Result<Segment> {
        let mut batches = Vec::new();
        let mut claimed = 0i64;
        for pending in run {
            let decoded = decode_segment(pending.bytes.clone(), None)
                .map_err(|cause| self.unreadable(&pending.record, cause))?;
            let rows: usize = decoded.iter().map(|b| b.num_rows()).sum();
            if rows as i64 != pending.record.rows {
                return Err(self.unreadable(
                    &pending.record,
                    format!(
                        "it decodes to {rows} rows but the catalog says {}",
                        pending.record.rows
                    ),
                ));
            }
            claimed += pending.record.rows;
            for batch in decoded {
                batches.push(
                    conform(&batch, &schema)
                        .map_err(|cause| self.unreadable(&pending.record, cause))?,
                );
            }
        }
        let first = &run[0].record;
        let joined = concat(&schema, &batches).map_err(|cause| self.unreadable(first, cause))?;
        let bytes = encode_batch(&joined).map_err(|cause| self.unreadable(first, cause))?;
        Ok(Segment {
            bytes,
            rows: claimed,
            first_ts: run
                .iter()
                .map(|p| p.record.first_ts)
                .min()
                .unwrap_or(first.first_ts),
            last_ts: run
                .iter()
                .map(|p| p.record.last_ts)
                .max()
                .unwrap_or(first.last_ts),
            caller_index: None,
        })
    }

    fn unreadable(&self, record: &SegmentRecord, cause: String) -> Error {
        Error::Segment {
            file: self.file.to_string(),
            source_id: record.source_id,
            stream: record.stream.clone(),
            seq: record.seq,
            cause,
        }
    }
}

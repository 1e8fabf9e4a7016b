//! The soundness check: every problem in one pass, never stopping at the
//! first, and never opening a segment's columns (the bytes are the
//! encoder's; only their Parquet magic is looked at).

use serde::Serialize;

use crate::catalog::LIVE_WAL_PREDICATE;
use crate::container::Archive;
use crate::error::{Result, SqlContext};
use crate::segment::PARQUET_MAGIC;

/// What kind of problem verify found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// SQLite's own integrity check failed, or the file could not be read.
    Integrity,
    /// A row refers to a source that does not exist.
    DanglingReference,
    /// A segment contradicts itself (span, row count, or not Parquet).
    Segment,
    /// WAL rows that no read path returns: shadowed by the watermark yet
    /// inside no segment's span.
    UnreachableWal,
    /// A labels or metadata column that is not a JSON object of strings.
    Catalog,
}

/// One problem, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Its kind.
    pub kind: ProblemKind,
    /// What is wrong, and where.
    pub message: String,
}

/// Everything verify found, and how much it looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The file verified.
    pub file: String,
    /// No problem found.
    pub sound: bool,
    /// Every problem, in the order the checks ran.
    pub problems: Vec<Problem>,
    /// Sources in the catalog.
    pub sources: i64,
    /// Streams (segments ∪ WAL) across sources.
    pub streams: i64,
    /// Sealed segments.
    pub segments: i64,
    /// Rows in the WAL table, live or shadowed.
    pub wal_rows: i64,
}

impl Archive {
    /// Checks the archive and reports every problem found. An archive too
    /// damaged to read reports that as a problem; the `Err` case is kept for
    /// failures of the check itself.
    pub fn verify(&self) -> Result<VerifyReport> {
        let mut problems = Vec::new();
        let mut record = |found: Result<Vec<Problem>>| match found {
            Ok(mut p) => problems.append(&mut p),
            Err(e) => problems.push(Problem {
                kind: ProblemKind::Integrity,
                message: e.to_string(),
            }),
        };
        record(self.integrity());
        record(self.dangling_references());
        record(self.contradicting_segments());
        record(self.unreachable_wal());
        record(self.unparsable_maps());
        let counts = self.counts().unwrap_or((0, 0, 0, 0));
        Ok(VerifyReport {
            file: self.file.clone(),
            sound: problems.is_empty(),
            problems,
            sources: counts.0,
            streams: counts.1,
            segments: counts.2,
            wal_rows: counts.3,
        })
    }

    fn integrity(&self) -> Result<Vec<Problem>> {
        let mut stmt = self
            .conn
            .prepare("PRAGMA integrity_check")
            .ctx(&self.file, "cannot run the integrity check")?;
        let lines = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .ctx(&self.file, "integrity check")?;
        Ok(lines
            .into_iter()
            .filter(|l| l != "ok")
            .map(|message| Problem {
                kind: ProblemKind::Integrity,
                message: format!("SQLite integrity check: {message}"),
            })
            .collect())
    }

    fn dangling_references(&self) -> Result<Vec<Problem>> {
        let mut out = Vec::new();
        for table in ["segments", "wal", "clock_offsets", "caller_rows"] {
            let orphans: i64 = self
                .conn
                .query_row(
                    &format!(
                        "SELECT COUNT(*) FROM {table} WHERE source_id NOT IN (SELECT id FROM sources)"
                    ),
                    [],
                    |r| r.get(0),
                )
                .ctx(&self.file, &format!("cannot check references of {table}"))?;
            if orphans > 0 {
                out.push(Problem {
                    kind: ProblemKind::DanglingReference,
                    message: format!(
                        "{orphans} row(s) of {table} refer to a source that does not exist"
                    ),
                });
            }
        }
        Ok(out)
    }

    fn contradicting_segments(&self) -> Result<Vec<Problem>> {
        let what = "cannot check segments";
        let mut stmt = self
            .conn
            .prepare("SELECT rowid, source_id, stream, seq, rows, first_ts, last_ts, length(bytes) FROM segments")
            .ctx(&self.file, what)?;
        let segments = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, i64>(7)?,
                ))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .ctx(&self.file, what)?;
        let mut out = Vec::new();
        for (rowid, source, stream, seq, rows, first, last, len) in segments {
            let name = format!("segment {seq} of stream {stream:?} (source {source})");
            let mut complain = |message: String| {
                out.push(Problem {
                    kind: ProblemKind::Segment,
                    message: format!("{name}: {message}"),
                })
            };
            if first > last {
                complain(format!("first_ts {first} is after last_ts {last}"));
            }
            if rows <= 0 {
                complain(format!("claims {rows} rows"));
            }
            match self.parquet_ends(rowid, len) {
                Ok(true) => {}
                Ok(false) => complain(format!(
                    "its {len} bytes are not a Parquet file (magic missing)"
                )),
                Err(e) => complain(format!("its bytes cannot be read: {e}")),
            }
        }
        Ok(out)
    }

    /// Reads only the first and last four bytes of a segment's BLOB.
    fn parquet_ends(&self, rowid: i64, len: i64) -> rusqlite::Result<bool> {
        if len < 12 {
            return Ok(false);
        }
        let blob = self
            .conn
            .blob_open(rusqlite::MAIN_DB, "segments", "bytes", rowid, true)?;
        let mut head = [0u8; 4];
        let mut tail = [0u8; 4];
        blob.read_at_exact(&mut head, 0)?;
        blob.read_at_exact(&mut tail, len as usize - 4)?;
        Ok(&head == PARQUET_MAGIC && &tail == PARQUET_MAGIC)
    }

    fn unreachable_wal(&self) -> Result<Vec<Problem>> {
        let what = "cannot check WAL reachability";
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT source_id, stream, COUNT(*), MIN(ts), MAX(ts) FROM wal
                 WHERE NOT {LIVE_WAL_PREDICATE}
                   AND NOT EXISTS (SELECT 1 FROM segments AS covering
                                   WHERE covering.source_id = wal.source_id
                                     AND covering.stream = wal.stream
                                     AND covering.first_ts <= wal.ts AND covering.last_ts >= wal.ts)
                 GROUP BY source_id, stream"
            ))
            .ctx(&self.file, what)?;
        let found = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .ctx(&self.file, what)?;
        Ok(found
            .into_iter()
            .map(|(source, stream, n, lo, hi)| Problem {
                kind: ProblemKind::UnreachableWal,
                message: format!(
                    "{n} WAL row(s) of stream {stream:?} (source {source}) between {lo} and {hi} \
                     are below the stream's watermark and inside no segment: no read returns them"
                ),
            })
            .collect())
    }

    fn unparsable_maps(&self) -> Result<Vec<Problem>> {
        let what = "cannot read sources";
        let mut stmt = self
            .conn
            .prepare("SELECT id, labels, metadata FROM sources")
            .ctx(&self.file, what)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .ctx(&self.file, what)?;
        let mut out = Vec::new();
        for (id, labels, metadata) in rows {
            for (column, text) in [("labels", labels), ("metadata", metadata)] {
                let what = format!("{column} of source {id}");
                // Readers tolerate non-string values; the format does not.
                let problem = match serde_json::from_str::<serde_json::Value>(&text) {
                    Ok(serde_json::Value::Object(map)) => map
                        .iter()
                        .find(|(_, v)| !v.is_string())
                        .map(|(k, _)| format!("{what}: the value of {k:?} is not a string")),
                    Ok(_) => Some(format!("{what} is not a JSON object")),
                    Err(e) => Some(format!("{what} is not JSON: {e}")),
                };
                out.extend(problem.map(|message| Problem {
                    kind: ProblemKind::Catalog,
                    message: format!("{}: {message}", self.file),
                }));
            }
        }
        Ok(out)
    }

    fn counts(&self) -> Result<(i64, i64, i64, i64)> {
        self.conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM sources),
                        (SELECT COUNT(*) FROM (SELECT source_id, stream FROM segments
                                               UNION SELECT source_id, stream FROM wal)),
                        (SELECT COUNT(*) FROM segments),
                        (SELECT COUNT(*) FROM wal)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .ctx(&self.file, "cannot count")
    }
}

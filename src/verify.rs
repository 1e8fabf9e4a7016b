//! The soundness check: every problem in one pass, never stopping at the
//! first, and never opening a segment's columns (the bytes are the
//! encoder's; only their Parquet magic is looked at).
//!
//! Everything is read in one snapshot, so a writer committing or evicting
//! meanwhile cannot make a sound file look unsound. `caller_rows` is not
//! read: it is the caller's store, and the format leaves it out of verify.

use serde::Serialize;

use crate::catalog::Snapshot;
use crate::container::Archive;
use crate::error::{Result, SqlContext};
use crate::segment::PARQUET_MAGIC;

/// What kind of problem verify found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// SQLite's own integrity check failed, or the file could not be read.
    Integrity,
    /// A row refers to something that does not exist: a source, or (schema
    /// 5) the segment of a `segment_indexes` row or the revision a
    /// document's `supersedes` names.
    DanglingReference,
    /// A segment contradicts itself (span, row count, or not Parquet).
    Segment,
    /// WAL rows that no read path returns: shadowed by the watermark yet
    /// inside no segment's span.
    UnreachableWal,
    /// A labels or metadata column that is not a JSON object of strings.
    Catalog,
}

impl ProblemKind {
    /// Every kind, in declaration order.
    pub const ALL: [ProblemKind; 5] = [
        ProblemKind::Integrity,
        ProblemKind::DanglingReference,
        ProblemKind::Segment,
        ProblemKind::UnreachableWal,
        ProblemKind::Catalog,
    ];

    /// The name reports use (`snake_case`, as the JSON shape has it).
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::Integrity => "integrity",
            ProblemKind::DanglingReference => "dangling_reference",
            ProblemKind::Segment => "segment",
            ProblemKind::UnreachableWal => "unreachable_wal",
            ProblemKind::Catalog => "catalog",
        }
    }
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
    /// Of those, rows a segment covers that a prune has not deleted yet.
    /// Not a problem: no read returns them, and after an unclean stop they
    /// are expected. A cleanly closed archive has none.
    pub covered_wal_rows: i64,
}

impl VerifyReport {
    /// A line of information about what verify saw that is not a problem,
    /// when there is one: covered rows awaiting a prune.
    pub fn note(&self) -> Option<String> {
        (self.covered_wal_rows > 0).then(|| {
            format!(
                "{} WAL row(s) are covered by segments and await pruning; no read returns \
                 them (expected after an unclean stop, harmless, removed by the next writer)",
                self.covered_wal_rows
            )
        })
    }
}

impl Archive {
    /// Checks the archive and reports every problem found. An archive too
    /// damaged to read reports that as a problem; the `Err` case is kept for
    /// failures of the check itself.
    pub fn verify(&self) -> Result<VerifyReport> {
        let mut problems = Vec::new();
        let mut covered = 0;
        let mut counts = Counts::default();
        let snapshot = self.read_snapshot(|s| {
            let mut record = |found: Result<Vec<Problem>>| match found {
                Ok(mut p) => problems.append(&mut p),
                Err(e) => problems.push(Problem {
                    kind: ProblemKind::Integrity,
                    message: e.to_string(),
                }),
            };
            record(integrity(s));
            record(dangling_references(s));
            record(dangling_schema_5_references(s));
            record(contradicting_segments(s));
            record(wal_coverage(s).map(|(found, n)| {
                covered = n;
                found
            }));
            record(unparsable_maps(s));
            record(non_canonical_uuids(s));
            counts = Counts::read(s).unwrap_or_default();
            Ok(())
        });
        if let Err(e) = snapshot {
            problems.push(Problem {
                kind: ProblemKind::Integrity,
                message: e.to_string(),
            });
        }
        Ok(VerifyReport {
            file: self.file.clone(),
            sound: problems.is_empty(),
            problems,
            sources: counts.sources,
            streams: counts.streams,
            segments: counts.segments,
            wal_rows: counts.wal_rows,
            covered_wal_rows: covered,
        })
    }
}

fn integrity(s: &Snapshot<'_>) -> Result<Vec<Problem>> {
    let mut stmt = s
        .conn
        .prepare("PRAGMA integrity_check")
        .ctx(s.file, "cannot run the integrity check")?;
    let lines = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .ctx(s.file, "integrity check")?;
    Ok(lines
        .into_iter()
        .filter(|l| l != "ok")
        .map(|message| Problem {
            kind: ProblemKind::Integrity,
            message: format!("SQLite integrity check: {message}"),
        })
        .collect())
}

fn dangling_references(s: &Snapshot<'_>) -> Result<Vec<Problem>> {
    let mut out = Vec::new();
    for table in ["segments", "wal", "clock_offsets"] {
        let orphans: i64 = s
            .conn
            .query_row(
                &format!(
                    "SELECT COUNT(*) FROM {table} WHERE source_id NOT IN (SELECT id FROM sources)"
                ),
                [],
                |r| r.get(0),
            )
            .ctx(s.file, &format!("cannot check references of {table}"))?;
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

/// How many dangling schema-5 references verify names one by one, per
/// kind; past it, one more problem says how many were left unnamed (a
/// hostile file can hold millions).
const NAMED_REFERENCES: usize = 100;

/// Schema 5's own references: a `segment_indexes` row whose segment is
/// gone (the cascade should have removed it), and a `supersedes` naming
/// no revision. Each is named by its key. None in a schema-4 file.
fn dangling_schema_5_references(s: &Snapshot<'_>) -> Result<Vec<Problem>> {
    let mut out = named(
        &s.orphan_segment_indexes()?,
        |(source, stream, seq)| {
            format!(
            "the caller index of source {source}, stream {stream:?}, seq {seq} (a segment_indexes row) belongs to no segment"
        )
        },
        "segment_indexes row(s) belong to no segment",
    );
    out.extend(named(
        &s.dangling_supersedes()?,
        |(id, supersedes)| format!(
            "document revision {id} supersedes revision {supersedes}, which the documents table does not hold"
        ),
        "document revision(s) supersede a revision the table does not hold",
    ));
    Ok(out)
}

/// A dangling reference problem for each of the first
/// [`NAMED_REFERENCES`] of `found`, in `words`, and one counting the rest
/// (`more`: what they are).
fn named<T>(found: &[T], words: impl Fn(&T) -> String, more: &str) -> Vec<Problem> {
    let dangling = |message: String| Problem {
        kind: ProblemKind::DanglingReference,
        message,
    };
    let mut out: Vec<Problem> = found
        .iter()
        .take(NAMED_REFERENCES)
        .map(|f| dangling(words(f)))
        .collect();
    if found.len() > NAMED_REFERENCES {
        out.push(dangling(format!(
            "{} more {more}",
            found.len() - NAMED_REFERENCES
        )));
    }
    out
}

fn contradicting_segments(s: &Snapshot<'_>) -> Result<Vec<Problem>> {
    let what = "cannot check segments";
    let mut stmt = s
        .conn
        .prepare(
            "SELECT rowid, source_id, stream, seq, rows, first_ts, last_ts, length(bytes) \
             FROM segments",
        )
        .ctx(s.file, what)?;
    let mut rows = stmt.query([]).ctx(s.file, what)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().ctx(s.file, what)? {
        let (rowid, source, stream, seq, count, first, last, len): (
            i64,
            i64,
            String,
            i64,
            i64,
            i64,
            i64,
            i64,
        ) = (|| {
            Ok::<_, rusqlite::Error>((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        })()
        .ctx(s.file, what)?;
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
        if count <= 0 {
            complain(format!("claims {count} rows"));
        }
        match parquet_ends(s, rowid, len) {
            Ok(true) => {}
            Ok(false) => complain(format!(
                "its {len} bytes are not a Parquet file (magic missing)"
            )),
            Err(e) => complain(format!("its bytes cannot be read: {e}")),
        }
    }
    Ok(out)
}

/// Reads only the first and last four bytes of a segment's BLOB, in the
/// snapshot's own transaction.
fn parquet_ends(s: &Snapshot<'_>, rowid: i64, len: i64) -> rusqlite::Result<bool> {
    if len < 12 {
        return Ok(false);
    }
    let blob = s
        .conn
        .blob_open(rusqlite::MAIN_DB, "segments", "bytes", rowid, true)?;
    let mut head = [0u8; 4];
    let mut tail = [0u8; 4];
    blob.read_at_exact(&mut head, 0)?;
    blob.read_at_exact(&mut tail, len as usize - 4)?;
    Ok(&head == PARQUET_MAGIC && &tail == PARQUET_MAGIC)
}

/// Per stream of the `wal` table: the rows the live-WAL rule shadows are
/// either inside a segment's span (covered, awaiting a prune) or in none
/// (unreachable: no read returns them, a problem). Walks the shadowed rows
/// and the segments' spans in order, once each. Returns the problems and
/// the number of covered rows.
fn wal_coverage(s: &Snapshot<'_>) -> Result<(Vec<Problem>, i64)> {
    let what = "cannot check WAL reachability";
    let mut spans_stmt = s
        .conn
        .prepare(
            "SELECT first_ts, last_ts FROM segments WHERE source_id = ?1 AND stream = ?2 \
             ORDER BY first_ts",
        )
        .ctx(s.file, what)?;
    // Shadowed rows are the complement of the live-WAL rule's range:
    // `ts >= watermark + 1` is live, so `ts <= watermark` is shadowed.
    let mut shadowed_stmt = s
        .conn
        .prepare("SELECT ts FROM wal WHERE source_id = ?1 AND stream = ?2 AND ts <= ?3 ORDER BY ts")
        .ctx(s.file, what)?;
    let mut problems = Vec::new();
    let mut covered: i64 = 0;
    for (source, stream) in s.wal_streams()? {
        let Some(watermark) = s.watermark(source, &stream)? else {
            continue;
        };
        let spans: Vec<(i64, i64)> = spans_stmt
            .query_map(rusqlite::params![source, stream], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<_>>())
            .ctx(s.file, what)?;
        let mut next_span = spans.iter().peekable();
        // The furthest end among the spans that start at or before the row.
        let mut reach: Option<i64> = None;
        let (mut lost, mut lowest, mut highest) = (0i64, i64::MAX, i64::MIN);
        let mut rows = shadowed_stmt
            .query(rusqlite::params![source, stream, watermark])
            .ctx(s.file, what)?;
        while let Some(r) = rows.next().ctx(s.file, what)? {
            let ts: i64 = r.get(0).ctx(s.file, what)?;
            while let Some(&&(first, last)) = next_span.peek() {
                if first > ts {
                    break;
                }
                reach = Some(reach.map_or(last, |r| r.max(last)));
                next_span.next();
            }
            if reach.is_some_and(|r| r >= ts) {
                covered += 1;
            } else {
                lost += 1;
                lowest = lowest.min(ts);
                highest = highest.max(ts);
            }
        }
        if lost > 0 {
            problems.push(Problem {
                kind: ProblemKind::UnreachableWal,
                message: format!(
                    "{lost} WAL row(s) of stream {stream:?} (source {source}) between {lowest} and \
                     {highest} are below the stream's watermark and inside no segment: no read \
                     returns them"
                ),
            });
        }
    }
    Ok((problems, covered))
}

fn unparsable_maps(s: &Snapshot<'_>) -> Result<Vec<Problem>> {
    let rows = s.collect(
        "cannot read sources",
        "SELECT id, labels, metadata FROM sources",
        [],
        |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        },
    )?;
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
                message: format!("{}: {message}", s.file),
            }));
        }
    }
    Ok(out)
}

/// A `sources.uuid` that is not a canonical lowercase uuid (format §3.1):
/// tools build names and paths from it, so text such as `x/../y` is a
/// problem, not merely an odd identity. `NULL` is allowed (unknown).
fn non_canonical_uuids(s: &Snapshot<'_>) -> Result<Vec<Problem>> {
    if !s.shape.uuid {
        return Ok(Vec::new());
    }
    let rows = s.collect(
        "cannot read the sources' uuids",
        "SELECT id, uuid FROM sources WHERE uuid IS NOT NULL ORDER BY id",
        [],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, rusqlite::types::Value>(1)?)),
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, value)| {
            let shown = match &value {
                rusqlite::types::Value::Text(t) if crate::catalog::is_canonical_uuid(t) => {
                    return None
                }
                rusqlite::types::Value::Text(t) if t.chars().count() > 64 => {
                    format!("{:?}…", t.chars().take(64).collect::<String>())
                }
                rusqlite::types::Value::Text(t) => format!("{t:?}"),
                other => format!("a {:?} value", other.data_type()),
            };
            Some(Problem {
                kind: ProblemKind::Catalog,
                message: format!(
                    "{}: the uuid of source {id} is {shown}, not a canonical lowercase uuid",
                    s.file
                ),
            })
        })
        .collect())
}

/// How much verify looked at.
#[derive(Debug, Default)]
struct Counts {
    sources: i64,
    streams: i64,
    segments: i64,
    wal_rows: i64,
}

impl Counts {
    fn read(s: &Snapshot<'_>) -> Result<Counts> {
        let what = "cannot count";
        let (sources, segments, wal_rows) = s
            .conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM sources), (SELECT COUNT(*) FROM segments),
                        (SELECT COUNT(*) FROM wal)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .ctx(s.file, what)?;
        let mut streams: Vec<(i64, String)> = s.collect(
            what,
            "SELECT DISTINCT source_id, stream FROM segments",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        streams.extend(s.wal_streams()?);
        streams.sort_unstable();
        streams.dedup();
        Ok(Counts {
            sources,
            streams: streams.len() as i64,
            segments,
            wal_rows,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_kind_names_are_the_json_shapes() {
        for kind in ProblemKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
    }
}

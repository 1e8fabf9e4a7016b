//! The archives a rewrite reads, each through one read transaction held
//! for the whole rewrite: a copy of a file a writer is appending to sees
//! one committed state, never a seal or an eviction half-way through it.

use std::path::Path;

use rusqlite::TransactionBehavior;

use super::documents::HeldRevision;
use crate::catalog::NewRevision;
use crate::container::{Archive, CreateSchema, Snapshot};
use crate::error::{Result, SqlContext};

/// One input archive, opened read-only.
pub(crate) struct Input {
    archive: Archive,
}

impl Input {
    pub fn open(path: &Path) -> Result<Input> {
        Ok(Input {
            archive: Archive::open(path)?,
        })
    }

    pub fn file(&self) -> &str {
        self.archive.file()
    }

    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// Every top-level column name any segment has, from the footers
    /// alone (no column data is read).
    pub fn column_names(&self) -> Result<std::collections::BTreeSet<String>> {
        let pinned = self.pin()?;
        let s = pinned.snapshot();
        let mut names = std::collections::BTreeSet::new();
        for record in s.all_segments()? {
            let payload = s.segment_payload(record.source_id, &record.stream, record.seq)?;
            let footer = crate::segment::read_footer(payload.len(), |at, buf| {
                payload.read_at(at, buf).map_err(|e| e.to_string())
            })
            .map_err(|cause| crate::Error::Segment {
                file: self.file().to_string(),
                source_id: record.source_id,
                stream: record.stream.clone(),
                seq: record.seq,
                cause,
            })?;
            for field in footer
                .file_metadata()
                .schema_descr()
                .root_schema()
                .get_fields()
            {
                names.insert(field.name().to_string());
            }
        }
        Ok(names)
    }

    /// Begins the read transaction every later question is answered in.
    pub fn pin(&self) -> Result<Pinned<'_>> {
        let tx =
            rusqlite::Transaction::new_unchecked(&self.archive.conn, TransactionBehavior::Deferred)
                .ctx(self.file(), "cannot begin a read snapshot")?;
        Ok(Pinned {
            tx,
            archive: &self.archive,
        })
    }
}

/// A held read transaction on an [`Input`]; rolled back when dropped.
pub(crate) struct Pinned<'a> {
    tx: rusqlite::Transaction<'a>,
    archive: &'a Archive,
}

impl Pinned<'_> {
    /// The snapshot to ask: every answer comes from the same state.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            conn: &self.tx,
            file: &self.archive.file,
            shape: self.archive.shape,
        }
    }

    pub fn file(&self) -> &str {
        self.archive.file()
    }

    /// The schema the input is in, as far as what a copy must keep needs
    /// it: 5 when it has the `documents` or `segment_indexes` table.
    pub fn schema(&self) -> Result<CreateSchema> {
        let five: bool = self
            .tx
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM sqlite_schema WHERE type = 'table'
                   AND name IN ('documents', 'segment_indexes'))",
                [],
                |r| r.get(0),
            )
            .ctx(self.file(), "cannot read the catalog's tables")?;
        Ok(if five {
            CreateSchema::V5
        } else {
            CreateSchema::V4
        })
    }

    /// Every document revision the input holds, by id (none on schema 4).
    pub fn revisions(&self, input: usize) -> Result<Vec<HeldRevision>> {
        if self.schema()? == CreateSchema::V4 {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .tx
            .prepare(
                "SELECT id, uuid, kind, name, schema, body, created_wall_ns, supersedes
                 FROM documents ORDER BY id",
            )
            .ctx(self.file(), "cannot read the documents table")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(HeldRevision {
                    input,
                    id: r.get(0)?,
                    revision: NewRevision {
                        uuid: r.get(1)?,
                        kind: r.get(2)?,
                        name: r.get(3)?,
                        schema: r.get(4)?,
                        body: r.get(5)?,
                        created_wall_ns: r.get(6)?,
                        supersedes: r.get(7)?,
                    },
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .ctx(self.file(), "cannot read the documents table")?;
        Ok(rows)
    }
}

//! The archives a rewrite reads, each through one read transaction held
//! for the whole rewrite: a copy of a file a writer is appending to sees
//! one committed state, never a seal or an eviction half-way through it.

use std::path::Path;

use rusqlite::TransactionBehavior;

use super::documents::HeldRevision;
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

    /// The schema a copy of the input needs to keep all of it: 5 for a
    /// schema-5 file, else 4.
    pub fn schema(&self) -> CreateSchema {
        match self.archive.layout().version {
            crate::format::SCHEMA_5 => CreateSchema::V5,
            _ => CreateSchema::V4,
        }
    }

    /// Every document revision the input holds, by id (none on schema 4),
    /// tagged with the input's place among a rewrite's inputs.
    pub fn revisions(&self, input: usize) -> Result<Vec<HeldRevision>> {
        let held = self.snapshot().document_revisions()?;
        Ok(held
            .into_iter()
            .map(|revision| HeldRevision { input, revision })
            .collect())
    }
}

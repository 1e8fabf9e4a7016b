//! The `documents` table of schema 5 (format §3.7): the caller's JSON
//! documents, kept as append-only revisions. The current revision of a
//! `(kind, name)` is its newest by `id`; a revision whose `schema` and
//! `body` are both NULL deletes the document; `supersedes` is provenance
//! only (the revision that was current when this one was written). Kinds
//! starting `dendro.` are reserved for the format.
//!
//! A schema-4 file has no documents: every read here answers "none" there.
//! Bodies are the caller's text, stored and handed back verbatim, never
//! parsed or interpreted here.

use rusqlite::{params, Row};
use serde::Serialize;

use super::Snapshot;
use crate::error::Result;

/// The prefix of the kinds the format reserves for itself.
pub const RESERVED_KIND_PREFIX: &str = "dendro.";

/// One row of `documents`: a revision of the document `(kind, name)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocumentRevision {
    /// The revision's number in this file; the newest of a `(kind, name)`
    /// is current. Renumbered by copies.
    pub id: i64,
    /// The revision's identity across files, carried verbatim by copies.
    pub uuid: String,
    /// The document's kind (the caller's namespace).
    pub kind: String,
    /// The document's name within its kind.
    pub name: String,
    /// The caller's name and version for the body's type; `None` on a
    /// deletion.
    pub schema: Option<String>,
    /// The JSON body, verbatim; `None` on a deletion.
    pub body: Option<String>,
    /// When the revision was written, wall-clock nanoseconds.
    pub created_wall_ns: i64,
    /// The revision current for `(kind, name)` when this one was written.
    pub supersedes: Option<i64>,
}

impl DocumentRevision {
    /// Whether this revision deletes its document (null schema and body).
    pub fn is_deletion(&self) -> bool {
        self.schema.is_none() && self.body.is_none()
    }
}

/// One document `(kind, name)` as a listing shows it, without bodies: its
/// current (newest) revision and how many it has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocumentEntry {
    /// The document's kind.
    pub kind: String,
    /// The document's name.
    pub name: String,
    /// The id of its newest revision.
    pub current: i64,
    /// How many revisions it has.
    pub revisions: u64,
    /// Whether the newest revision is a deletion: the document is gone,
    /// its history kept.
    pub deleted: bool,
}

/// The counts `describe` reports: revisions in the table, and documents
/// whose newest revision is not a deletion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DocumentCounts {
    /// Rows of `documents`.
    pub revisions: u64,
    /// Documents with a current (not deleted) revision.
    pub current: u64,
}

const REVISION_COLUMNS: &str = "id, uuid, kind, name, schema, body, created_wall_ns, supersedes";

fn revision(r: &Row<'_>) -> rusqlite::Result<DocumentRevision> {
    Ok(DocumentRevision {
        id: r.get(0)?,
        uuid: r.get(1)?,
        kind: r.get(2)?,
        name: r.get(3)?,
        schema: r.get(4)?,
        body: r.get(5)?,
        created_wall_ns: r.get(6)?,
        supersedes: r.get(7)?,
    })
}

/// Reads of `documents`.
impl Snapshot<'_> {
    /// Every revision of every document, oldest (lowest id) first.
    pub fn document_revisions(&self) -> Result<Vec<DocumentRevision>> {
        if !self.shape.layout.documents {
            return Ok(Vec::new());
        }
        self.collect(
            "cannot read documents",
            &format!("SELECT {REVISION_COLUMNS} FROM documents ORDER BY id"),
            [],
            revision,
        )
    }

    /// One document's revisions, oldest first (empty for a document the
    /// file does not hold).
    pub fn document_history(&self, kind: &str, name: &str) -> Result<Vec<DocumentRevision>> {
        if !self.shape.layout.documents {
            return Ok(Vec::new());
        }
        self.collect(
            "cannot read a document's history",
            &format!(
                "SELECT {REVISION_COLUMNS} FROM documents WHERE kind = ?1 AND name = ?2 ORDER BY id"
            ),
            params![kind, name],
            revision,
        )
    }

    /// The current revision of each document that is not deleted, in
    /// `(kind, name)` order: per `(kind, name)`, the revision with the
    /// highest id, unless it is a deletion.
    pub fn current_documents(&self) -> Result<Vec<DocumentRevision>> {
        if !self.shape.layout.documents {
            return Ok(Vec::new());
        }
        self.collect(
            "cannot read the current documents",
            &format!(
                "SELECT {REVISION_COLUMNS} FROM documents
                 WHERE id IN (SELECT max(id) FROM documents GROUP BY kind, name)
                   AND NOT (schema IS NULL AND body IS NULL)
                 ORDER BY kind, name"
            ),
            [],
            revision,
        )
    }

    /// One document's current revision: `None` when the file does not
    /// hold it or its newest revision deletes it.
    pub fn current_document(&self, kind: &str, name: &str) -> Result<Option<DocumentRevision>> {
        Ok(self
            .document_history(kind, name)?
            .pop()
            .filter(|newest| !newest.is_deletion()))
    }

    /// Every document, deleted ones included, in `(kind, name)` order,
    /// without bodies.
    pub fn document_entries(&self) -> Result<Vec<DocumentEntry>> {
        if !self.shape.layout.documents {
            return Ok(Vec::new());
        }
        self.collect(
            "cannot list documents",
            "SELECT d.kind, d.name, d.id, n.revisions, d.schema IS NULL AND d.body IS NULL
             FROM (SELECT kind, name, max(id) AS newest, count(*) AS revisions
                   FROM documents GROUP BY kind, name) AS n
             JOIN documents AS d ON d.id = n.newest
             ORDER BY d.kind, d.name",
            [],
            |r| {
                Ok(DocumentEntry {
                    kind: r.get(0)?,
                    name: r.get(1)?,
                    current: r.get(2)?,
                    revisions: r.get::<_, i64>(3)?.max(0) as u64,
                    deleted: r.get(4)?,
                })
            },
        )
    }

    /// How many revisions and current documents the file holds.
    pub fn document_counts(&self) -> Result<DocumentCounts> {
        let entries = self.document_entries()?;
        Ok(DocumentCounts {
            revisions: entries.iter().map(|e| e.revisions).sum(),
            current: entries.iter().filter(|e| !e.deleted).count() as u64,
        })
    }

    /// The revisions whose `supersedes` names an id no revision has, as
    /// `(id, supersedes)`: provenance pointing nowhere, which verification
    /// reports by revision.
    pub fn dangling_supersedes(&self) -> Result<Vec<(i64, i64)>> {
        if !self.shape.layout.documents {
            return Ok(Vec::new());
        }
        self.collect(
            "cannot check document provenance",
            "SELECT d.id, d.supersedes FROM documents AS d
             WHERE d.supersedes IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM documents AS p WHERE p.id = d.supersedes)
             ORDER BY d.id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{catalog_with_layout, snapshot_with};
    use crate::container::CatalogShape;

    const REVISIONS: &str = "
        INSERT INTO documents VALUES
          (1, 'u1', 'viewer.view', 'overview', 'viewer.view/1', '{\"a\":1}', 10, NULL),
          (2, 'u2', 'viewer.view', 'overview', 'viewer.view/2', '{\"a\":2}', 11, 1),
          (3, 'u3', 'report.selection', 'q3', 'report.selection/1', '{}', 12, NULL),
          (4, 'u4', 'report.selection', 'q3', NULL, NULL, 13, 3),
          (5, 'u5', 'notes.text', 'ünïcødé ✓', 'notes.text/1', '\"<b>x</b>\"', 14, NULL);";

    #[test]
    fn the_newest_revision_by_id_is_current_and_a_null_one_deletes() {
        let conn = catalog_with_layout(CatalogShape::SCHEMA_5, REVISIONS);
        let s = snapshot_with(&conn, CatalogShape::SCHEMA_5);
        assert_eq!(s.document_revisions().unwrap().len(), 5);
        let current: Vec<(String, i64)> = s
            .current_documents()
            .unwrap()
            .into_iter()
            .map(|d| (d.kind, d.id))
            .collect();
        assert_eq!(
            current,
            vec![("notes.text".into(), 5), ("viewer.view".into(), 2)]
        );
        assert!(s
            .current_document("report.selection", "q3")
            .unwrap()
            .is_none());
        assert_eq!(
            s.current_document("viewer.view", "overview")
                .unwrap()
                .unwrap()
                .body
                .as_deref(),
            Some("{\"a\":2}")
        );
        let history = s.document_history("report.selection", "q3").unwrap();
        assert_eq!(history.iter().map(|d| d.id).collect::<Vec<_>>(), vec![3, 4]);
        assert!(history[1].is_deletion() && !history[0].is_deletion());
        let counts = s.document_counts().unwrap();
        assert_eq!((counts.revisions, counts.current), (5, 2));
        let entries = s.document_entries().unwrap();
        assert_eq!(entries.len(), 3);
        let q3 = entries.iter().find(|e| e.name == "q3").unwrap();
        assert!(q3.deleted && q3.current == 4 && q3.revisions == 2);
    }

    #[test]
    fn a_supersedes_naming_no_revision_is_reported_by_id() {
        let conn = catalog_with_layout(
            CatalogShape::SCHEMA_5,
            &format!(
                "{REVISIONS} INSERT INTO documents VALUES (6, 'u6', 'k', 'n', 's', '1', 15, 42);"
            ),
        );
        let s = snapshot_with(&conn, CatalogShape::SCHEMA_5);
        assert_eq!(s.dangling_supersedes().unwrap(), vec![(6, 42)]);
    }

    #[test]
    fn a_schema_4_file_has_no_documents() {
        let conn = super::super::testing::catalog_with("");
        let s = super::super::testing::snapshot(&conn);
        assert!(s.document_revisions().unwrap().is_empty());
        assert!(s.current_documents().unwrap().is_empty());
        assert_eq!(s.document_counts().unwrap(), Default::default());
        assert!(s.dangling_supersedes().unwrap().is_empty());
    }
}

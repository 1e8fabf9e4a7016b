//! Writing the `documents` table (schema 5, format §3): a document is
//! never changed in place, each put or delete appends a revision, and the
//! newest by id of a `(kind, name)` is its current state. Reading the table
//! is `documents.rs`'s; this file only appends.

use rusqlite::{params, OptionalExtension};

use super::documents::{DocumentRevision, RESERVED_KIND_PREFIX};
use crate::error::{Error, Result, SqlContext};

impl crate::container::Transaction<'_> {
    /// Refuses a file without the `documents` table (schema 4), in words
    /// that say how to get one.
    fn require_documents(&self) -> Result<()> {
        let present: bool = self
            .sql()
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'documents')",
            )
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .ctx(self.file(), "cannot look for the documents table")?;
        match present {
            true => Ok(()),
            false => Err(Error::Invalid {
                file: self.file().to_string(),
                message: "documents need an archive of schema 5 and this one is schema 4, which \
                          is never changed in place: copy it into a new schema-5 archive \
                          (`dendro copy --schema 5`) and keep documents there"
                    .into(),
            }),
        }
    }

    /// Appends one revision as it is (a copy carrying another file's), and
    /// answers its id here. The revision's own `id` is its old file's and
    /// is not used: the table numbers it; `supersedes` must already be an
    /// id of this file.
    pub fn insert_revision(&self, revision: &DocumentRevision) -> Result<i64> {
        self.require_documents()?;
        self.sql()
            .prepare_cached(
                "INSERT INTO documents(uuid, kind, name, schema, body, created_wall_ns, supersedes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    revision.uuid,
                    revision.kind,
                    revision.name,
                    revision.schema,
                    revision.body,
                    revision.created_wall_ns,
                    revision.supersedes
                ])
            })
            .ctx(
                self.file(),
                &format!(
                    "cannot append revision {} of document {:?}/{:?}",
                    revision.uuid, revision.kind, revision.name
                ),
            )?;
        Ok(self.sql().last_insert_rowid())
    }

    /// The id of the current revision of `(kind, name)`, a deletion
    /// included; `None` when it has none.
    pub fn current_revision_id(&self, kind: &str, name: &str) -> Result<Option<i64>> {
        self.require_documents()?;
        self.sql()
            .prepare_cached("SELECT MAX(id) FROM documents WHERE kind = ?1 AND name = ?2")
            .and_then(|mut s| s.query_row(params![kind, name], |r| r.get(0)))
            .ctx(self.file(), "cannot read the documents table")
    }

    /// Puts a document: appends a revision with `schema` and `body` (JSON
    /// text, checked to parse) superseding the current one. Answers the new
    /// revision's id.
    pub fn put_document(&self, kind: &str, name: &str, schema: &str, body: &str) -> Result<i64> {
        self.check_kind(kind)?;
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(body) {
            return Err(Error::Invalid {
                file: self.file().to_string(),
                message: format!("the body of document {kind:?}/{name:?} is not JSON: {e}"),
            });
        }
        self.append(kind, name, Some((schema, body)))
    }

    /// Deletes a document: appends a revision with no schema and no body.
    /// Refused when the document has no current revision or is deleted.
    pub fn delete_document(&self, kind: &str, name: &str) -> Result<i64> {
        self.check_kind(kind)?;
        self.require_documents()?;
        let live: Option<bool> = self
            .sql()
            .prepare_cached(
                "SELECT body IS NOT NULL FROM documents WHERE kind = ?1 AND name = ?2
                 ORDER BY id DESC LIMIT 1",
            )
            .and_then(|mut s| s.query_row(params![kind, name], |r| r.get(0)).optional())
            .ctx(self.file(), "cannot read the documents table")?;
        if live != Some(true) {
            return Err(Error::NotFound {
                file: self.file().to_string(),
                what: format!("document {kind:?}/{name:?}"),
            });
        }
        self.append(kind, name, None)
    }

    fn check_kind(&self, kind: &str) -> Result<()> {
        if kind.starts_with(RESERVED_KIND_PREFIX) {
            return Err(Error::Invalid {
                file: self.file().to_string(),
                message: format!(
                    "document kind {kind:?} is reserved: kinds starting {RESERVED_KIND_PREFIX:?} are dendro's own"
                ),
            });
        }
        Ok(())
    }

    fn append(&self, kind: &str, name: &str, content: Option<(&str, &str)>) -> Result<i64> {
        let supersedes = self.current_revision_id(kind, name)?;
        let revision = DocumentRevision {
            id: 0,
            uuid: self.mint_uuid()?,
            kind: kind.to_string(),
            name: name.to_string(),
            schema: content.map(|(s, _)| s.to_string()),
            body: content.map(|(_, b)| b.to_string()),
            created_wall_ns: crate::write::wall_clock_ns(),
            supersedes,
        };
        self.insert_revision(&revision)
    }
}

impl crate::container::ArchiveMut {
    /// [`crate::container::Transaction::put_document`] in a transaction of
    /// its own.
    pub fn put_document(
        &mut self,
        kind: &str,
        name: &str,
        schema: &str,
        body: &str,
    ) -> Result<i64> {
        let tx = self.transaction()?;
        let id = tx.put_document(kind, name, schema, body)?;
        tx.commit()?;
        Ok(id)
    }

    /// [`crate::container::Transaction::delete_document`] in a transaction
    /// of its own.
    pub fn delete_document(&mut self, kind: &str, name: &str) -> Result<i64> {
        let tx = self.transaction()?;
        let id = tx.delete_document(kind, name)?;
        tx.commit()?;
        Ok(id)
    }
}

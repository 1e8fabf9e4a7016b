//! The `sources` table (format §3.1): who wrote each stream, under which
//! identity, name and anchor.

#[cfg(feature = "write")]
use rusqlite::{params, OptionalExtension};
use serde::Serialize;

#[cfg(feature = "write")]
use super::labels::json_map;
use super::labels::parse_map;
use super::{Labels, Snapshot};
use crate::error::Result;
#[cfg(feature = "write")]
use crate::error::{Error, SqlContext};

/// Whether `text` is a uuid in the form format §3.1 requires: canonical
/// lowercase `8-4-4-4-12` hex. A `sources.uuid` is read verbatim; anything
/// that builds a name or a path from it must check this first (and
/// `verify` reports a value that fails it), since a file may hold any text
/// there.
pub fn is_canonical_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(b),
        })
}

/// What a source says of itself: every column of its `sources` row but
/// the file-local id. It is what travels: a writer inserts it for a new
/// source, a copy and a replica carry it from another file (hence the
/// name: new to the file that receives it), and every row read back holds
/// it beside the id ([`SourceRecord`], and a description's
/// [`crate::read::SourceDescription`]), serialized flat into theirs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NewSource {
    /// The identity across files. Read back, `None` is an archive from
    /// before the column; inserted, `None` mints a fresh v4 uuid.
    pub uuid: Option<String>,
    /// The source's name.
    pub labels: Labels,
    /// Everything else, verbatim strings; reserved keys in [`crate::format::keys`].
    pub metadata: Labels,
    /// Finalized cleanly; `false` means data after the last row may be missing.
    pub complete: bool,
    /// Wall clock at the source's start, nanoseconds since the epoch; row
    /// timestamps count from here.
    pub clock_anchor_wall_ns: i64,
}

/// One row of `sources`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceRecord {
    /// File-local id; every copy renumbers it.
    pub id: i64,
    /// Everything else the row says.
    #[serde(flatten)]
    pub source: NewSource,
}

/// Reads of `sources`.
impl Snapshot<'_> {
    /// Every source, by id. Columns are selected by name, so extra nullable
    /// columns from later releases are ignored.
    pub fn sources(&self) -> Result<Vec<SourceRecord>> {
        let raw = self.collect(
            "cannot list sources",
            if self.shape.uuid {
                "SELECT id, uuid, labels, metadata, complete, clock_anchor_wall_ns FROM sources ORDER BY id"
            } else {
                "SELECT id, NULL, labels, metadata, complete, clock_anchor_wall_ns FROM sources ORDER BY id"
            },
            [],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            },
        )?;
        raw.into_iter()
            .map(
                |(id, uuid, labels, metadata, complete, anchor): (
                    i64,
                    Option<String>,
                    String,
                    String,
                    i64,
                    i64,
                )| {
                    Ok(SourceRecord {
                        id,
                        source: NewSource {
                            uuid,
                            labels: parse_map(
                                self.file,
                                &format!("labels of source {id}"),
                                &labels,
                            )?,
                            metadata: parse_map(
                                self.file,
                                &format!("metadata of source {id}"),
                                &metadata,
                            )?,
                            complete: complete != 0,
                            clock_anchor_wall_ns: anchor,
                        },
                    })
                },
            )
            .collect()
    }

    /// One source by id.
    pub fn source(&self, source_id: i64) -> Result<SourceRecord> {
        self.sources()?
            .into_iter()
            .find(|s| s.id == source_id)
            .ok_or_else(|| self.not_found(format!("source {source_id}")))
    }

    /// Finds a source by its id or its uuid, written as text.
    pub fn find_source(&self, id_or_uuid: &str) -> Result<SourceRecord> {
        let sources = self.sources()?;
        let wanted = id_or_uuid.trim();
        sources
            .into_iter()
            .find(|s| {
                wanted.parse::<i64>().ok() == Some(s.id)
                    || s.source
                        .uuid
                        .as_deref()
                        .is_some_and(|u| u.eq_ignore_ascii_case(wanted))
            })
            .ok_or_else(|| self.not_found(format!("source {wanted:?}")))
    }
}

/// Inserting a source and changing its metadata or state.
#[cfg(feature = "write")]
impl crate::container::Transaction<'_> {
    /// Inserts a source with a freshly minted uuid and returns its id.
    pub fn insert_source(
        &self,
        labels: &Labels,
        metadata: &Labels,
        clock_anchor_wall_ns: i64,
    ) -> Result<i64> {
        self.insert_source_with_uuid(&NewSource {
            uuid: None,
            labels: labels.clone(),
            metadata: metadata.clone(),
            complete: false,
            clock_anchor_wall_ns,
        })
    }

    /// Inserts a source carrying the given identity (a copy of a source
    /// from another archive or from the wire) and returns its local id.
    /// An absent uuid mints a fresh one: unknown is never "the same".
    pub fn insert_source_with_uuid(&self, source: &NewSource) -> Result<i64> {
        let uuid = match &source.uuid {
            Some(given) => canonical_uuid(given).ok_or_else(|| Error::Invalid {
                file: self.file().to_string(),
                message: format!("{given:?} is not a canonical lowercase uuid"),
            })?,
            None => self.mint_uuid()?,
        };
        self.sql()
            .execute(
                "INSERT INTO sources(labels, metadata, complete, clock_anchor_wall_ns, uuid)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    json_map(&source.labels),
                    json_map(&source.metadata),
                    source.complete as i64,
                    source.clock_anchor_wall_ns,
                    uuid
                ],
            )
            .ctx(self.file(), "cannot insert a source")?;
        Ok(self.sql().last_insert_rowid())
    }

    /// A v4 uuid from SQLite's own random source, so no build of the crate
    /// needs an operating-system RNG.
    pub(crate) fn mint_uuid(&self) -> Result<String> {
        let random: Vec<u8> = self
            .sql()
            .query_row("SELECT randomblob(16)", [], |r| r.get(0))
            .ctx(self.file(), "cannot draw random bytes")?;
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&random);
        Ok(uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .hyphenated()
            .to_string())
    }

    /// Applies a patch to a source's metadata: `Some` sets a key, `None` removes it.
    pub fn patch_metadata(
        &self,
        source_id: i64,
        patch: &std::collections::BTreeMap<String, Option<String>>,
    ) -> Result<()> {
        let current: Option<String> = self
            .sql()
            .query_row(
                "SELECT metadata FROM sources WHERE id = ?1",
                [source_id],
                |r| r.get(0),
            )
            .optional()
            .ctx(self.file(), "cannot read metadata")?;
        let current = current.ok_or_else(|| Error::NotFound {
            file: self.file().to_string(),
            what: format!("source {source_id}"),
        })?;
        let mut map = parse_map(self.file(), "metadata", &current)?;
        for (key, value) in patch {
            match value {
                Some(v) => map.insert(key.clone(), v.clone()),
                None => map.remove(key),
            };
        }
        self.sql()
            .execute(
                "UPDATE sources SET metadata = ?1 WHERE id = ?2",
                params![json_map(&map), source_id],
            )
            .ctx(self.file(), "cannot write metadata")?;
        Ok(())
    }

    /// Marks a source complete (finalized) or not.
    pub fn set_complete(&self, source_id: i64, complete: bool) -> Result<()> {
        self.sql()
            .execute(
                "UPDATE sources SET complete = ?1 WHERE id = ?2",
                params![complete as i64, source_id],
            )
            .ctx(self.file(), "cannot set complete")?;
        Ok(())
    }
}

/// `Some(lowercase)` when `text` is a uuid in 8-4-4-4-12 form.
#[cfg(feature = "write")]
fn canonical_uuid(text: &str) -> Option<String> {
    let parsed = uuid::Uuid::try_parse(text).ok()?;
    let canonical = parsed.hyphenated().to_string();
    (canonical.eq_ignore_ascii_case(text)).then_some(canonical)
}

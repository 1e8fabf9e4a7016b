//! What an archive file is (format §2, §3): the schema versions this build
//! reads, and where a file of each keeps its caller indexes and whether it
//! holds documents. The one place that decides it, from the file's tables,
//! cross-checked with the version its header states; the container asks
//! it when a file is opened, and every read of the catalog follows the
//! answer (reached as `Snapshot::layout`).
//!
//! It stands on the ground floor so that the open (container) and the
//! reads (catalog) share one decision without either importing the other.

use serde::Serialize;

/// The schema version that keeps caller indexes in `segments.caller_index`
/// and has no documents: every release of the original up to 0.5.1 writes
/// it, and so do we by default.
pub const SCHEMA_4: u32 = 4;
/// The schema version of the original's 0.6 releases: caller indexes in
/// the `WITHOUT ROWID` table `segment_indexes`, and the `documents` table.
pub const SCHEMA_5: u32 = 5;
/// Every schema version this build reads, oldest first. Any other version
/// is refused by name ([`crate::error::Error::UnsupportedSchema`]).
pub const READABLE_SCHEMA_VERSIONS: [u32; 2] = [SCHEMA_4, SCHEMA_5];

/// Whether this build reads files stamped with `version`.
pub fn is_readable_version(version: u32) -> bool {
    READABLE_SCHEMA_VERSIONS.contains(&version)
}

/// The readable versions in words, for messages: "4 and 5".
pub fn readable_versions_in_words() -> String {
    let names: Vec<String> = READABLE_SCHEMA_VERSIONS
        .iter()
        .map(u32::to_string)
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// Where a file keeps the caller's per-segment indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexPlace {
    /// Schema 5: a row of `segment_indexes (source_id, stream, seq, bytes)`
    /// per indexed segment. No row: no index; a zero-length row: an empty
    /// index.
    Table,
    /// Schema 4: the nullable column `segments.caller_index` (NULL: no
    /// index).
    Column,
    /// A schema-4 file from before the column existed: no segment has an
    /// index.
    Absent,
}

impl IndexPlace {
    /// The name the JSON shapes use (`dendro describe --json`, the engine).
    pub fn name(self) -> &'static str {
        match self {
            IndexPlace::Table => "table",
            IndexPlace::Column => "column",
            IndexPlace::Absent => "absent",
        }
    }
}

/// The tables and column of a file that tell its layout, as its catalog
/// lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LayoutFacts {
    /// The table `segment_indexes` exists.
    pub segment_indexes_table: bool,
    /// The column `segments.caller_index` exists.
    pub caller_index_column: bool,
    /// The table `documents` exists.
    pub documents_table: bool,
}

/// What an archive file is: its schema version, where its caller indexes
/// live, and whether it holds documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// The header's `user_version`: [`SCHEMA_4`] or [`SCHEMA_5`].
    pub version: u32,
    /// Where the caller indexes are.
    pub indexes: IndexPlace,
    /// Whether the file has the `documents` table (schema 5 always does).
    pub documents: bool,
}

/// Why a file's tables and its stated version disagree, in words: the
/// cause of [`crate::error::NotArchive::SchemaMismatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The version the header states.
    pub version: u32,
    /// What the tables say instead.
    pub found: String,
}

impl Layout {
    /// A current schema-4 file: indexes in the column, no documents.
    pub const SCHEMA_4: Layout = Layout {
        version: SCHEMA_4,
        indexes: IndexPlace::Column,
        documents: false,
    };
    /// A schema-5 file: indexes in `segment_indexes`, and `documents`.
    pub const SCHEMA_5: Layout = Layout {
        version: SCHEMA_5,
        indexes: IndexPlace::Table,
        documents: true,
    };

    /// Decides a file's layout from its tables (the `segment_indexes`
    /// table if present, else the `segments.caller_index` column, else
    /// none), then checks it against `version`, the version the header
    /// states: schema 5 has both new tables, schema 4 neither. A file
    /// whose tables and version disagree is refused rather than read by
    /// either rule, since either would misread it (a schema-5 file patched
    /// to claim 4 would show no indexes and no documents). `version` must
    /// be one this build reads; the caller refuses the others first.
    pub fn decide(version: u32, facts: LayoutFacts) -> Result<Layout, Mismatch> {
        let indexes = if facts.segment_indexes_table {
            IndexPlace::Table
        } else if facts.caller_index_column {
            IndexPlace::Column
        } else {
            IndexPlace::Absent
        };
        let layout = Layout {
            version,
            indexes,
            documents: facts.documents_table,
        };
        let refuse = |found: &str| {
            Err(Mismatch {
                version,
                found: found.to_string(),
            })
        };
        match version {
            SCHEMA_5 if !facts.segment_indexes_table => {
                refuse("the table segment_indexes of schema 5 is missing")
            }
            SCHEMA_5 if !facts.documents_table => {
                refuse("the table documents of schema 5 is missing")
            }
            SCHEMA_4 if facts.segment_indexes_table => {
                refuse("it holds the table segment_indexes, which only schema 5 has")
            }
            SCHEMA_4 if facts.documents_table => {
                refuse("it holds the table documents, which only schema 5 has")
            }
            SCHEMA_4 | SCHEMA_5 => Ok(layout),
            _ => refuse("this build decides layouts of schema 4 and 5 only"),
        }
    }

    /// Whether the file can hold documents (schema 5).
    pub fn has_documents(&self) -> bool {
        self.documents
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "its header states schema version {} but {}",
            self.version, self.found
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(table: bool, column: bool, documents: bool) -> LayoutFacts {
        LayoutFacts {
            segment_indexes_table: table,
            caller_index_column: column,
            documents_table: documents,
        }
    }

    #[test]
    fn the_tables_decide_where_indexes_live() {
        assert_eq!(
            Layout::decide(5, facts(true, false, true)),
            Ok(Layout::SCHEMA_5)
        );
        // The table wins over a column a schema-5 file might also carry.
        assert_eq!(
            Layout::decide(5, facts(true, true, true)).map(|l| l.indexes),
            Ok(IndexPlace::Table)
        );
        assert_eq!(
            Layout::decide(4, facts(false, true, false)),
            Ok(Layout::SCHEMA_4)
        );
        assert_eq!(
            Layout::decide(4, facts(false, false, false)).map(|l| l.indexes),
            Ok(IndexPlace::Absent)
        );
    }

    #[test]
    fn tables_that_disagree_with_the_version_are_refused_in_words() {
        for (version, f, says) in [
            (4, facts(true, false, true), "segment_indexes"),
            (4, facts(false, true, true), "documents"),
            (5, facts(false, true, false), "segment_indexes"),
            (5, facts(true, false, false), "documents"),
            (6, facts(true, false, true), "schema 4 and 5"),
        ] {
            let refused = Layout::decide(version, f).unwrap_err();
            assert_eq!(refused.version, version);
            let words = refused.to_string();
            assert!(words.contains(says), "{words}");
            assert!(
                words.contains(&format!("schema version {version}")),
                "{words}"
            );
        }
    }

    #[test]
    fn the_readable_versions_are_four_and_five_only() {
        assert!(!is_readable_version(3));
        assert!(is_readable_version(4));
        assert!(is_readable_version(5));
        assert!(!is_readable_version(6));
        assert_eq!(readable_versions_in_words(), "4 and 5");
    }
}

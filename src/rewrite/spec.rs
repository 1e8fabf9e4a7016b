//! What a copy is asked to do: which sources (by id, uuid or label),
//! which streams, which time window, and how to write the output. The
//! plan reads it to choose what goes where and the copy reads it to write
//! that; it sits apart from both so that neither imports the other for it.

use crate::catalog::SourceRecord;
use crate::container::CreateSchema;

/// Names a source to copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSelector {
    /// The file-local id.
    Id(i64),
    /// The uuid (compared without regard to case).
    Uuid(String),
    /// Every source whose label `key` equals `value`.
    Label {
        /// The label's key.
        key: String,
        /// The value it must have.
        value: String,
    },
}

impl SourceSelector {
    /// Reads `key=value` as a label match, a number as an id, anything
    /// else as a uuid.
    pub fn parse(text: &str) -> SourceSelector {
        let text = text.trim();
        if let Some((key, value)) = text.split_once('=') {
            return SourceSelector::Label {
                key: key.to_string(),
                value: value.to_string(),
            };
        }
        match text.parse::<i64>() {
            Ok(id) => SourceSelector::Id(id),
            Err(_) => SourceSelector::Uuid(text.to_string()),
        }
    }

    /// Whether `source` is one this selector names.
    pub fn matches(&self, source: &SourceRecord) -> bool {
        match self {
            SourceSelector::Id(id) => source.id == *id,
            SourceSelector::Uuid(uuid) => source
                .source
                .uuid
                .as_deref()
                .is_some_and(|u| u.eq_ignore_ascii_case(uuid)),
            SourceSelector::Label { key, value } => source.source.labels.get(key) == Some(value),
        }
    }
}

impl std::fmt::Display for SourceSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceSelector::Id(id) => write!(f, "id {id}"),
            SourceSelector::Uuid(uuid) => write!(f, "uuid {uuid}"),
            SourceSelector::Label { key, value } => write!(f, "label {key}={value}"),
        }
    }
}

/// What a copy takes, and how it writes the output. The default takes
/// everything and refuses to replace an existing output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopySpec {
    /// Sources to take (any selector matching); empty takes every source.
    pub sources: Vec<SourceSelector>,
    /// Streams to take, by name; empty takes every stream.
    pub streams: Vec<String>,
    /// Only what reaches at or after this timestamp (ns).
    pub from: Option<i64>,
    /// Only what reaches at or before this timestamp (ns).
    pub to: Option<i64>,
    /// Re-encode a segment partly inside the window to the rows inside,
    /// instead of keeping it whole.
    pub trim: bool,
    /// Keep only these columns (and the time axis) of every segment,
    /// re-encoding each and dropping its caller index.
    pub columns: Option<Vec<String>>,
    /// Replace the output if it exists.
    pub replace: bool,
    /// The output's schema. `None`: schema 5 when an input is schema 5,
    /// else 4. Schema 4 asked for with an input holding documents is
    /// refused, since 4 cannot hold them.
    pub schema: Option<CreateSchema>,
}

impl CopySpec {
    /// The window as an inclusive range.
    pub fn bound(&self) -> (i64, i64) {
        (self.from.unwrap_or(i64::MIN), self.to.unwrap_or(i64::MAX))
    }

    /// Whether a stream (or a caller-row name) passes the filter.
    pub fn takes_stream(&self, name: &str) -> bool {
        self.streams.is_empty() || self.streams.iter().any(|s| s == name)
    }

    pub(crate) fn bounded(&self) -> bool {
        self.from.is_some() || self.to.is_some()
    }
}

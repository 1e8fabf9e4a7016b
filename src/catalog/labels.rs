//! Labels and metadata (format §3.1): string-to-string maps, stored as
//! a JSON object with keys sorted.

use crate::error::{Error, Result};

// The map's shape is the format's (ground floor); its JSON is read here.
pub use crate::format::Labels;

/// Parses a labels or metadata column. Non-string values are kept as their
/// JSON text rather than refused: the map is open, and a reader should show
/// what is there.
pub(crate) fn parse_map(file: &str, what: &str, text: &str) -> Result<Labels> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| Error::Corrupt {
        file: file.to_string(),
        detail: format!("{what} is not JSON: {e}"),
    })?;
    let serde_json::Value::Object(object) = value else {
        return Err(Error::Corrupt {
            file: file.to_string(),
            detail: format!("{what} is not a JSON object"),
        });
    };
    Ok(object
        .into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => (k, s),
            other => (k, other.to_string()),
        })
        .collect())
}

/// Labels and metadata are stored as a JSON object of strings, keys sorted.
#[cfg(feature = "write")]
pub(crate) fn json_map(map: &Labels) -> String {
    serde_json::to_string(map).expect("a string map always serializes")
}

//! The reserved metadata keys whose values are JSON (format §6): the
//! `writer_sessions` a writer records, the `events` it and producers
//! append, and a producer's `producer_epochs`. Parsed once, here, for every
//! reader (the browser engine hands them to the page as typed values), and
//! written by the writer through the same types.
//!
//! Reading is tolerant in the way a viewer must be: a value of an
//! unexpected JSON type is kept as its JSON text rather than refused, keys
//! this build does not know are kept aside, and only a value whose shape
//! makes no sense (not JSON, not a list) is refused, with the reason in
//! words. Timestamps are exact `i64`s: JSON integers are read as integers,
//! never through a double.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::format::keys;
use crate::format::Labels;

/// One entry of a source's `events` key. Appended, never replaced, by
/// `SourceWriter::append_event` (feature `write`) and by a resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// What happened, for a person.
    pub description: String,
    /// More about it (read back as JSON text when a producer wrote a
    /// non-string value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// A stable id, so a merge of two copies can de-duplicate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A tag: `producer_epoch` for a counter reset, `writer_session` for a resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// When, on the source's timeline.
    pub timestamp: i64,
}

/// One entry of `writer_sessions`: a writer session that appended to the
/// source. Fields in byte order, which is the order the writer writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriterSession {
    /// The session's anchor: the wall clock its timeline counts from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_anchor_wall_ns: Option<i64>,
    /// The crate version that appended (provenance, never a gate).
    pub dendro: String,
    /// Only on a resume: the newest row the previous session left, `null`
    /// (`Some(None)`) if it left none. `None`: not a resume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_after_ts: Option<Option<i64>>,
    /// The session's own uuid.
    pub session: String,
    /// Keys this build does not know, as JSON text. Never written.
    #[serde(skip)]
    pub extra: Labels,
}

/// One entry of `producer_epochs`: a counter epoch and where it began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProducerEpoch {
    /// The epoch's opaque id (JSON text when it is not a string).
    pub epoch: String,
    /// The timestamp it starts at, when the entry says.
    pub from_ts: Option<i64>,
}

/// What a source's reserved keys hold: for each key present, its entries
/// or why they could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reserved {
    /// `writer_sessions`, when present.
    pub writer_sessions: Option<Result<Vec<WriterSession>, String>>,
    /// `events`, when present.
    pub events: Option<Result<Vec<Event>, String>>,
    /// `producer_epochs`, when present.
    pub producer_epochs: Option<Result<Vec<ProducerEpoch>, String>>,
}

impl Reserved {
    /// Parses the reserved keys of a source's metadata.
    pub fn of(metadata: &Labels) -> Reserved {
        Reserved {
            writer_sessions: metadata
                .get(keys::WRITER_SESSIONS)
                .map(|t| writer_sessions(t)),
            events: metadata.get(keys::EVENTS).map(|t| events(t)),
            producer_epochs: metadata
                .get(keys::PRODUCER_EPOCHS)
                .map(|t| producer_epochs(t)),
        }
    }
}

fn json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|_| "not valid JSON".to_string())
}

/// A JSON value as text to show: a string verbatim, anything else as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An optional text field: absent or `null` is `None`.
fn optional_text(value: Option<&Value>) -> Option<String> {
    match value {
        None | Some(Value::Null) => None,
        Some(v) => Some(text_of(v)),
    }
}

/// Reads each of `items` as an object through `entry`; `not_object` is
/// the refusal for one that is not. Every reserved list is a list of
/// objects, and each refuses a stray scalar in the same words.
fn each_object<T>(
    items: Vec<Value>,
    not_object: &str,
    mut entry: impl FnMut(serde_json::Map<String, Value>) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    items
        .into_iter()
        .map(|item| match item {
            Value::Object(fields) => entry(fields),
            _ => Err(not_object.to_string()),
        })
        .collect()
}

/// The entries of `writer_sessions`.
pub fn writer_sessions(text: &str) -> Result<Vec<WriterSession>, String> {
    let Value::Array(items) = json(text)? else {
        return Err("expected a JSON array of sessions".into());
    };
    each_object(items, "a session entry is not an object", |mut fields| {
        let session = fields.remove("session");
        let anchor = fields.remove("clock_anchor_wall_ns");
        let dendro = fields.remove("dendro");
        let resumed = fields.remove("resumed_after_ts");
        Ok(WriterSession {
            session: session.as_ref().map(text_of).unwrap_or_default(),
            clock_anchor_wall_ns: anchor.as_ref().and_then(Value::as_i64),
            dendro: dendro.as_ref().map(text_of).unwrap_or_default(),
            resumed_after_ts: resumed.map(|v| v.as_i64()),
            extra: fields
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
        })
    })
}

/// The entries of `events`: `{"events": [...]}`, or a bare list.
pub fn events(text: &str) -> Result<Vec<Event>, String> {
    let list = match json(text)? {
        Value::Object(mut top) => top.remove("events"),
        list @ Value::Array(_) => Some(list),
        _ => None,
    };
    let Some(Value::Array(items)) = list else {
        return Err("expected {\"events\": [...]}".into());
    };
    each_object(items, "an event is not an object", |fields| {
        let timestamp = fields
            .get("timestamp")
            .and_then(Value::as_i64)
            .ok_or("an event has no integer timestamp")?;
        Ok(Event {
            description: fields.get("description").map(text_of).unwrap_or_default(),
            details: optional_text(fields.get("details")),
            id: optional_text(fields.get("id")),
            kind: optional_text(fields.get("kind")),
            timestamp,
        })
    })
}

/// The entries of `producer_epochs`.
pub fn producer_epochs(text: &str) -> Result<Vec<ProducerEpoch>, String> {
    let Value::Array(items) = json(text)? else {
        return Err("expected a JSON array of epochs".into());
    };
    each_object(items, "an epoch entry is not an object", |fields| {
        Ok(ProducerEpoch {
            epoch: fields.get("epoch").map(text_of).unwrap_or_default(),
            from_ts: fields.get("from_ts").and_then(Value::as_i64),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_past_two_to_the_53_stay_exact() {
        let s = writer_sessions(
            r#"[{"clock_anchor_wall_ns":1699999999999998766,"dendro":"0.3.4","session":"e4c5","resumed_after_ts":1700000000000000005,"host":{"a":1}}]"#,
        )
        .unwrap();
        assert_eq!(s[0].clock_anchor_wall_ns, Some(1_699_999_999_999_998_766));
        assert_eq!(s[0].resumed_after_ts, Some(Some(1_700_000_000_000_000_005)));
        assert_eq!(s[0].extra["host"], r#"{"a":1}"#);
        let e = events(r#"{"events":[{"timestamp":-9223372036854775808,"description":"<b>x</b>","details":{"v":2},"kind":"deploy","id":null}]}"#).unwrap();
        assert_eq!(e[0].timestamp, i64::MIN);
        assert_eq!(e[0].details.as_deref(), Some(r#"{"v":2}"#));
        assert_eq!(e[0].id, None);
        let p = producer_epochs(r#"[{"epoch":3,"from_ts":1700000000000000000}]"#).unwrap();
        assert_eq!(p[0].epoch, "3");
        assert_eq!(p[0].from_ts, Some(1_700_000_000_000_000_000));
    }

    #[test]
    fn a_resume_after_nothing_is_null_and_a_first_session_has_no_resume() {
        let s = writer_sessions(
            r#"[{"session":"a","dendro":"1","clock_anchor_wall_ns":1},{"session":"b","dendro":"1","clock_anchor_wall_ns":2,"resumed_after_ts":null}]"#,
        )
        .unwrap();
        assert_eq!(s[0].resumed_after_ts, None);
        assert_eq!(s[1].resumed_after_ts, Some(None));
    }

    #[test]
    fn nonsense_is_refused_in_words_and_absence_is_not_an_error() {
        assert_eq!(events("not json").unwrap_err(), "not valid JSON");
        assert!(writer_sessions(r#"{"a":1}"#).unwrap_err().contains("array"));
        assert!(events(r#"{"events":[{"description":"x"}]}"#)
            .unwrap_err()
            .contains("timestamp"));
        assert_eq!(Reserved::of(&Labels::new()), Reserved::default());
    }

    #[test]
    fn a_written_session_reads_back_as_itself() {
        let written = WriterSession {
            clock_anchor_wall_ns: Some(5),
            dendro: "0.1.0".into(),
            resumed_after_ts: Some(None),
            session: "s".into(),
            extra: Labels::new(),
        };
        let text = serde_json::to_string(&[&written]).unwrap();
        assert_eq!(
            text,
            r#"[{"clock_anchor_wall_ns":5,"dendro":"0.1.0","resumed_after_ts":null,"session":"s"}]"#
        );
        assert_eq!(writer_sessions(&text).unwrap(), vec![written]);
    }
}

//! Writer sessions (format §6, §7): adding a source, resuming one in a
//! reopened archive, finalizing it, and the metadata dendro keeps on it.
//!
//! Every session that appends to a source leaves an entry in its
//! `writer_sessions` key; a resumed one also leaves a `writer_session`
//! event, appended to whatever events the source already has. Both are
//! compact JSON with keys in byte order, as the original writes them.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use log::warn;
use serde::{Deserialize, Serialize};

use super::append::with_retries;
use super::thread::{SourceState, WriterThread};
use super::{NewSource, Opened, SourceRef};
use crate::catalog::{CallerRow, ClockOffset, Labels, Snapshot};
use crate::container::Transaction;
use crate::error::{Error, Result};
use crate::keys;

/// The crate version recorded in every `writer_sessions` entry.
pub(super) const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// One entry of `writer_sessions`. Fields in byte order, which is the order
/// they appear in the JSON.
#[derive(Serialize)]
struct SessionEntry<'a> {
    clock_anchor_wall_ns: i64,
    dendro: &'a str,
    /// Only on a resume: the previous session's newest row, `null` if it
    /// left none.
    #[serde(skip_serializing_if = "Option::is_none")]
    resumed_after_ts: Option<Option<i64>>,
    session: &'a str,
}

/// One entry of a source's `events` key (format §6). Appended, never
/// replaced, by [`super::SourceWriter::append_event`] and by a resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// What happened, for a person.
    pub description: String,
    /// More about it.
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

/// `writer_sessions` with one more entry.
fn sessions_with(file: &str, current: Option<&String>, entry: &SessionEntry<'_>) -> Result<String> {
    let mut sessions: Vec<serde_json::Value> = match current {
        None => Vec::new(),
        Some(text) => serde_json::from_str(text).map_err(|e| Error::Invalid {
            file: file.to_string(),
            message: format!(
                "metadata key {} is not a JSON array ({e})",
                keys::WRITER_SESSIONS
            ),
        })?,
    };
    sessions.push(serde_json::to_value(entry).expect("a session entry serializes"));
    Ok(serde_json::to_string(&sessions).expect("JSON values serialize"))
}

/// `events` with one more entry, or why it cannot be appended to.
fn events_with(current: Option<&String>, event: &Event) -> std::result::Result<String, String> {
    let mut events = match current {
        None => serde_json::json!({ "events": [] }),
        Some(text) => serde_json::from_str::<serde_json::Value>(text).map_err(|e| e.to_string())?,
    };
    let list = events
        .as_object_mut()
        .ok_or("not a JSON object")?
        .entry("events")
        .or_insert_with(|| serde_json::json!([]));
    list.as_array_mut()
        .ok_or("its `events` member is not an array")?
        .push(serde_json::to_value(event).expect("an event serializes"));
    Ok(serde_json::to_string(&events).expect("JSON values serialize"))
}

fn metadata_of(tx: &Transaction<'_>, file: &str, source_id: i64) -> Result<Labels> {
    Snapshot::on_writer(tx.sql(), file)
        .source(source_id)
        .map(|s| s.metadata)
}

impl WriterThread {
    fn register(&mut self, source_id: i64, resumed: bool, floor: Option<i64>) -> Arc<AtomicU64> {
        let dropped = Arc::new(AtomicU64::new(0));
        self.sources.insert(
            source_id,
            SourceState {
                policy: self.options.seal_policy.clone(),
                resumed,
                floor,
                dropped: Arc::clone(&dropped),
            },
        );
        self.opened += 1;
        self.written.insert(source_id);
        dropped
    }

    /// Inserts a source, records this session on it, and writes the
    /// encoder's version.
    pub(super) fn add_source(&mut self, mut source: NewSource) -> Result<Opened> {
        let file = self.file.clone();
        if let Some(uuid) = &source.uuid {
            let taken: bool = self
                .conn
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM sources WHERE lower(uuid) = lower(?1))",
                    [uuid],
                    |r| r.get(0),
                )
                .map_err(|e| Error::sqlite(&file, "cannot look up a uuid", e))?;
            if taken {
                return Err(Error::Invalid {
                    file,
                    message: format!(
                        "the archive already holds source {uuid}; resume it rather than adding it again"
                    ),
                });
            }
        }
        if let Some(version) = self.encoder.version() {
            match source.metadata.get(keys::ENCODER) {
                Some(theirs) if *theirs != version => {
                    return Err(Error::Invalid {
                        file,
                        message: format!(
                            "the source was encoded by {theirs:?} but this writer's encoder is {version:?}"
                        ),
                    })
                }
                _ => {
                    source.metadata.insert(keys::ENCODER.to_string(), version);
                }
            }
        }
        source.complete = false;
        let anchor = source.clock_anchor_wall_ns;
        let (source_id, uuid) = with_retries(&file, "adding a source", || {
            let tx = Transaction::begin(&self.conn, &file)?;
            let session = tx.mint_uuid()?;
            let entry = SessionEntry {
                clock_anchor_wall_ns: anchor,
                dendro: CRATE_VERSION,
                resumed_after_ts: None,
                session: &session,
            };
            let mut row = source.clone();
            let sessions = sessions_with(&file, row.metadata.get(keys::WRITER_SESSIONS), &entry)?;
            row.metadata
                .insert(keys::WRITER_SESSIONS.to_string(), sessions);
            let id = tx.insert_source_with_uuid(&row)?;
            let uuid: String = tx
                .sql()
                .query_row("SELECT uuid FROM sources WHERE id = ?1", [id], |r| r.get(0))
                .map_err(|e| Error::sqlite(&file, "cannot read back a source", e))?;
            tx.commit()?;
            Ok((id, uuid))
        })?;
        let dropped = self.register(source_id, false, None);
        Ok(Opened {
            source_id,
            uuid,
            floor: None,
            dropped,
        })
    }

    /// Continues a source as a new session anchored at `anchor` (§7).
    pub(super) fn resume(&mut self, which: SourceRef, anchor: i64) -> Result<Opened> {
        let file = self.file.clone();
        let snapshot = Snapshot::on_writer(&self.conn, &file);
        let record = match &which {
            SourceRef::Id(id) => snapshot.source(*id)?,
            SourceRef::Uuid(uuid) => snapshot
                .sources()?
                .into_iter()
                .find(|s| {
                    s.uuid
                        .as_deref()
                        .is_some_and(|u| u.eq_ignore_ascii_case(uuid))
                })
                .ok_or_else(|| snapshot.not_found(format!("source {uuid}")))?,
        };
        let source_id = record.id;
        if self.sources.contains_key(&source_id) {
            return Err(Error::Invalid {
                file,
                message: format!("source {source_id} is already being written by this writer"),
            });
        }
        crate::segment::check_encoder(&file, source_id, &record.metadata, self.encoder.as_ref())?;
        let newest = snapshot.newest_ts(source_id)?;
        if let Some(newest) = newest {
            if anchor <= newest {
                return Err(Error::TimelineBackwards {
                    file,
                    source_id,
                    ts: anchor,
                    newest,
                });
            }
        }
        with_retries(&file, "resuming a source", || {
            let tx = Transaction::begin(&self.conn, &file)?;
            let metadata = metadata_of(&tx, &file, source_id)?;
            let session = tx.mint_uuid()?;
            let entry = SessionEntry {
                clock_anchor_wall_ns: anchor,
                dendro: CRATE_VERSION,
                resumed_after_ts: Some(newest),
                session: &session,
            };
            let mut patch = BTreeMap::new();
            patch.insert(
                keys::WRITER_SESSIONS.to_string(),
                Some(sessions_with(
                    &file,
                    metadata.get(keys::WRITER_SESSIONS),
                    &entry,
                )?),
            );
            let event = Event {
                description: "source resumed by a new writer session".into(),
                details: Some(match newest {
                    Some(ts) => format!("the previous session's newest row is at {ts}"),
                    None => "the previous session left no rows".into(),
                }),
                id: Some(format!("writer_session:{session}")),
                kind: Some(keys::EVENT_KIND_WRITER_SESSION.into()),
                timestamp: anchor,
            };
            match events_with(metadata.get(keys::EVENTS), &event) {
                Ok(events) => {
                    patch.insert(keys::EVENTS.to_string(), Some(events));
                }
                Err(why) => warn!(
                    "{file}: source {source_id}: its `events` key is not appendable ({why}); the \
                     resume is recorded in `writer_sessions` only"
                ),
            }
            tx.patch_metadata(source_id, &patch)?;
            tx.set_complete(source_id, false)?;
            tx.commit()
        })?;
        // Its covered rows join the prune's count now that it is written to;
        // a source this writer never touches keeps its file as it was.
        let streams = Snapshot::on_writer(&self.conn, &file).streams(source_id)?;
        for stream in &streams {
            self.streams.refresh(&self.conn, &file, source_id, stream)?;
        }
        let dropped = self.register(source_id, true, newest);
        Ok(Opened {
            source_id,
            uuid: record.uuid.unwrap_or_default(),
            floor: newest,
            dropped,
        })
    }

    /// The last clock observation, `complete = 1`, and the deletion of every
    /// row the source's segments cover, in one transaction: a finalized
    /// source holds no covered rows, whatever happens to the process next.
    /// Seals are drained before this runs.
    pub(super) fn finalize(&mut self, source_id: i64, last: ClockOffset) -> Result<()> {
        self.require_open(source_id)?;
        with_retries(&self.file, "finalizing a source", || {
            let tx = Transaction::begin(&self.conn, &self.file)?;
            self.prune_source_in(tx.sql(), source_id)
                .map_err(|e| Error::sqlite(&self.file, "cannot prune a finalized source", e))?;
            tx.insert_clock_offset(source_id, last.ts, last.offset_ns)?;
            tx.set_complete(source_id, true)?;
            tx.commit()
        })?;
        self.source_pruned(source_id);
        self.sources.remove(&source_id);
        self.pages.stop_waiting(source_id, None, i64::MAX);
        self.finalized += 1;
        Ok(())
    }

    /// Applies a caller's metadata patch. The keys dendro maintains itself
    /// are refused: a caller rewriting them would falsify the provenance.
    pub(super) fn update_metadata(
        &mut self,
        source_id: i64,
        patch: &BTreeMap<String, Option<String>>,
    ) -> Result<()> {
        self.require_open(source_id)?;
        if let Some(key) = patch
            .keys()
            .find(|k| *k == keys::WRITER_SESSIONS || *k == keys::ENCODER)
        {
            return Err(Error::Invalid {
                file: self.file.clone(),
                message: format!("metadata key {key:?} is written by dendro, not by callers"),
            });
        }
        with_retries(&self.file, "updating metadata", || {
            let tx = Transaction::begin(&self.conn, &self.file)?;
            tx.patch_metadata(source_id, patch)?;
            tx.commit()
        })
    }

    /// Appends one event to the source's `events` key.
    pub(super) fn append_event(&mut self, source_id: i64, event: &Event) -> Result<()> {
        self.require_open(source_id)?;
        let file = self.file.clone();
        with_retries(&file, "appending an event", || {
            let tx = Transaction::begin(&self.conn, &file)?;
            let metadata = metadata_of(&tx, &file, source_id)?;
            let events =
                events_with(metadata.get(keys::EVENTS), event).map_err(|why| Error::Invalid {
                    file: file.clone(),
                    message: format!(
                        "source {source_id}: its `events` key cannot be appended to: {why}"
                    ),
                })?;
            let mut patch = BTreeMap::new();
            patch.insert(keys::EVENTS.to_string(), Some(events));
            tx.patch_metadata(source_id, &patch)?;
            tx.commit()
        })
    }

    /// Stores rows in the caller's time-keyed store.
    pub(super) fn caller_rows(
        &mut self,
        source_id: i64,
        name: &str,
        rows: &[CallerRow],
    ) -> Result<()> {
        self.require_open(source_id)?;
        with_retries(&self.file, "storing caller rows", || {
            let tx = Transaction::begin(&self.conn, &self.file)?;
            tx.insert_caller_rows(source_id, name, rows)?;
            tx.commit()
        })
    }

    /// Records one clock observation; the first at a timestamp wins.
    pub(super) fn clock_offset(&mut self, source_id: i64, offset: ClockOffset) -> Result<()> {
        self.require_open(source_id)?;
        with_retries(&self.file, "recording a clock offset", || {
            let tx = Transaction::begin(&self.conn, &self.file)?;
            tx.insert_clock_offset(source_id, offset.ts, offset.offset_ns)?;
            tx.commit()
        })
    }
}

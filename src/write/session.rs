//! Writer sessions (format §6, §7): adding a source, resuming one in a
//! reopened archive, finalizing it, and the metadata dendro keeps on it.
//!
//! Every session that appends to a source leaves an entry in its
//! `writer_sessions` key; a resumed one also leaves a `writer_session`
//! event, appended to whatever events the source already has. Both are
//! compact JSON with keys in byte order, as the original writes them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use log::warn;
use rusqlite::Connection;

use super::policy::SealPolicy;
use super::prune::Pruner;
use super::retry::with_retries;
use super::streams::StreamCache;
use crate::catalog::{CallerRow, ClockOffset, Labels, NewSource, Snapshot};
use crate::container::Transaction;
use crate::error::{Error, Result};
use crate::format::keys;
pub use crate::reserved::Event;
use crate::reserved::WriterSession;
use crate::segment::SegmentEncoder;

/// The crate version recorded in every `writer_sessions` entry.
pub(super) const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// `writer_sessions` with one more entry.
fn sessions_with(file: &str, current: Option<&String>, entry: &WriterSession) -> Result<String> {
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

/// Makes a replica's source row say what its origin says, in one durable
/// transaction: the origin's labels and metadata (its `writer_sessions`
/// followed by the replica's own sessions it does not list), and
/// `complete` cleared when the origin is no longer complete (it resumed).
/// Setting `complete` is left to the replica's finalize, which records the
/// last clock observation with it.
fn restate(
    conn: &Connection,
    file: &str,
    encoder: &dyn SegmentEncoder,
    source_id: i64,
    source: &NewSource,
) -> Result<()> {
    crate::segment::check_encoder(file, source_id, &source.metadata, encoder)?;
    with_retries(file, "restating a replica", || {
        let tx = Transaction::begin(conn, file)?;
        let record = Snapshot::on_writer(tx.sql(), file).source(source_id)?;
        let mut metadata = source.metadata.clone();
        let sessions = merged_sessions(
            file,
            source.metadata.get(keys::WRITER_SESSIONS),
            record.source.metadata.get(keys::WRITER_SESSIONS),
        )?;
        match sessions {
            Some(text) => metadata.insert(keys::WRITER_SESSIONS.to_string(), text),
            None => metadata.remove(keys::WRITER_SESSIONS),
        };
        if metadata != record.source.metadata || source.labels != record.source.labels {
            let json = |map: &Labels| serde_json::to_string(map).expect("a string map serializes");
            tx.sql()
                .execute(
                    "UPDATE sources SET labels = ?1, metadata = ?2 WHERE id = ?3",
                    rusqlite::params![json(&source.labels), json(&metadata), source_id],
                )
                .map_err(|e| Error::sqlite(file, "cannot restate a replica's source", e))?;
        }
        if record.source.complete && !source.complete {
            tx.set_complete(source_id, false)?;
        }
        tx.commit()
    })
}

/// The origin's `writer_sessions`, then the entries of the replica's own
/// list whose session the origin's does not name (the replica's sessions).
fn merged_sessions(
    file: &str,
    origin: Option<&String>,
    held: Option<&String>,
) -> Result<Option<String>> {
    let parse = |text: &String| -> Result<Vec<serde_json::Value>> {
        serde_json::from_str(text).map_err(|e| Error::Invalid {
            file: file.to_string(),
            message: format!(
                "metadata key {} is not a JSON array ({e})",
                keys::WRITER_SESSIONS
            ),
        })
    };
    let Some(held) = held else {
        return Ok(origin.cloned());
    };
    let mut merged = match origin {
        Some(text) => parse(text)?,
        None => Vec::new(),
    };
    let named: HashSet<String> = merged
        .iter()
        .filter_map(|e| e.get("session").and_then(|s| s.as_str()).map(String::from))
        .collect();
    for entry in parse(held)? {
        let session = entry.get("session").and_then(|s| s.as_str());
        if !session.is_some_and(|s| named.contains(s)) {
            merged.push(entry);
        }
    }
    Ok(Some(
        serde_json::to_string(&merged).expect("JSON values serialize"),
    ))
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
        .map(|s| s.source.metadata)
}

/// Names a source to resume: its file-local id or its uuid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceRef {
    /// The `sources.id` in this file.
    Id(i64),
    /// The source's uuid, the identity every copy carries.
    Uuid(String),
}

impl From<i64> for SourceRef {
    fn from(id: i64) -> Self {
        SourceRef::Id(id)
    }
}

impl From<&str> for SourceRef {
    fn from(uuid: &str) -> Self {
        SourceRef::Uuid(uuid.to_string())
    }
}

impl From<String> for SourceRef {
    fn from(uuid: String) -> Self {
        SourceRef::Uuid(uuid)
    }
}

impl From<&String> for SourceRef {
    fn from(uuid: &String) -> Self {
        SourceRef::Uuid(uuid.clone())
    }
}

/// What the writer thread answers an add or a resume with.
pub(super) struct Opened {
    pub source_id: i64,
    pub uuid: String,
    pub floor: Option<i64>,
    pub dropped: Arc<AtomicU64>,
}

/// A source this writer is appending to.
pub(super) struct SourceState {
    policy: SealPolicy,
    /// Resumed by this writer: rows the rules would drop are refused instead.
    resumed: bool,
    /// On a resumed source: the newest row the previous session left. Every
    /// row of this session must be later.
    floor: Option<i64>,
    /// Rows dropped as out of order, shared with the source's handle.
    dropped: Arc<AtomicU64>,
    /// A replica of a source written elsewhere: its segments arrive built
    /// and may cover rows it holds unsealed (see [`Sessions::mirror`]).
    mirrored: bool,
}

impl SourceState {
    /// When its streams seal without being asked.
    pub fn policy(&self) -> &SealPolicy {
        &self.policy
    }

    /// Whether this writer resumed it (refusing rows instead of dropping).
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// On a resumed source, the newest row the previous session left.
    pub fn floor(&self) -> Option<i64> {
        self.floor
    }

    /// Whether this is a replica of a source written elsewhere.
    pub fn mirrored(&self) -> bool {
        self.mirrored
    }

    /// Counts a row dropped as out of order, where its handle can read it.
    pub fn count_dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

/// The sources this writer session has open, and what it did with them:
/// how many it opened and finalized (a close reclaims free pages only when
/// every one was finalized) and which it wrote to (a clean close prunes
/// exactly those).
pub(super) struct Sessions {
    default_policy: SealPolicy,
    sources: HashMap<i64, SourceState>,
    opened: usize,
    finalized: usize,
    written: HashSet<i64>,
}

impl Sessions {
    /// No source open yet; each one opened starts with `policy`.
    pub fn new(policy: SealPolicy) -> Sessions {
        Sessions {
            default_policy: policy,
            sources: HashMap::new(),
            opened: 0,
            finalized: 0,
            written: HashSet::new(),
        }
    }

    fn register(&mut self, source_id: i64, resumed: bool, floor: Option<i64>) -> Arc<AtomicU64> {
        let dropped = Arc::new(AtomicU64::new(0));
        self.sources.insert(
            source_id,
            SourceState {
                policy: self.default_policy.clone(),
                resumed,
                floor,
                dropped: Arc::clone(&dropped),
                mirrored: false,
            },
        );
        self.opened += 1;
        self.written.insert(source_id);
        dropped
    }

    /// The source, if this writer has it open.
    pub fn get(&self, source_id: i64) -> Option<&SourceState> {
        self.sources.get(&source_id)
    }

    /// The source, or the error every call on a source not open here gets.
    pub fn require(&self, file: &str, source_id: i64) -> Result<&SourceState> {
        self.sources.get(&source_id).ok_or_else(|| Error::Invalid {
            file: file.to_string(),
            message: format!("source {source_id} is not open for writing in this writer"),
        })
    }

    /// Changes one open source's seal policy.
    pub fn set_policy(&mut self, source_id: i64, policy: SealPolicy) {
        if let Some(source) = self.sources.get_mut(&source_id) {
            source.policy = policy;
        }
    }

    /// A handle was dropped without finalizing: the source stays as it is.
    pub fn release(&mut self, source_id: i64) {
        self.sources.remove(&source_id);
    }

    /// Every source added or resumed in this session, finalized or not.
    pub fn written(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.written.iter().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Whether this session opened sources and finalized every one.
    pub fn all_finalized(&self) -> bool {
        self.opened > 0 && self.finalized == self.opened
    }

    /// Inserts a source, records this session on it, and writes the
    /// encoder's version.
    pub fn add_source(
        &mut self,
        conn: &Connection,
        file: &str,
        encoder: &dyn SegmentEncoder,
        mut source: NewSource,
    ) -> Result<Opened> {
        let file = file.to_string();
        if let Some(uuid) = &source.uuid {
            let taken: bool = conn
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
        if let Some(version) = encoder.version() {
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
            let tx = Transaction::begin(conn, &file)?;
            let session = tx.mint_uuid()?;
            let entry = WriterSession {
                clock_anchor_wall_ns: Some(anchor),
                dendro: CRATE_VERSION.to_string(),
                resumed_after_ts: None,
                session: session.clone(),
                extra: Labels::new(),
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

    /// Opens a replica of a source written elsewhere (replication): the
    /// source keeps its uuid, labels, metadata and anchor. The first time,
    /// it is inserted as [`Sessions::add_source`] does (recording this
    /// session); afterwards it is reopened as it is, its caller metadata
    /// brought up to date, with none of a resume's rules: a replica's rows
    /// carry the origin's timeline, not a new session's, and arrive for
    /// each stream on its own. Never sealed here: its segments arrive built.
    pub fn mirror(
        &mut self,
        conn: &Connection,
        file: &str,
        encoder: &dyn SegmentEncoder,
        streams: &mut StreamCache,
        source: NewSource,
    ) -> Result<Opened> {
        let held = match &source.uuid {
            Some(uuid) => Snapshot::on_writer(conn, file)
                .sources()?
                .into_iter()
                .find(|s| {
                    s.source
                        .uuid
                        .as_deref()
                        .is_some_and(|u| u.eq_ignore_ascii_case(uuid))
                }),
            None => None,
        };
        let opened = match held {
            None => self.add_source(conn, file, encoder, source)?,
            Some(record) => {
                let source_id = record.id;
                if self.sources.contains_key(&source_id) {
                    return Err(Error::Invalid {
                        file: file.to_string(),
                        message: format!(
                            "source {source_id} is already being written by this writer"
                        ),
                    });
                }
                restate(conn, file, encoder, source_id, &source)?;
                for stream in Snapshot::on_writer(conn, file).streams(source_id)? {
                    streams.refresh(conn, file, source_id, &stream)?;
                }
                let dropped = self.register(source_id, false, None);
                Opened {
                    source_id,
                    uuid: record.source.uuid.unwrap_or_default(),
                    floor: None,
                    dropped,
                }
            }
        };
        if let Some(state) = self.sources.get_mut(&opened.source_id) {
            state.mirrored = true;
        }
        Ok(opened)
    }

    /// Brings an open replica's source row up to what its origin says now
    /// (a second handshake on a live connection): see [`restate`].
    pub fn restate_replica(
        &self,
        conn: &Connection,
        file: &str,
        encoder: &dyn SegmentEncoder,
        source_id: i64,
        source: &NewSource,
    ) -> Result<()> {
        if !self.require(file, source_id)?.mirrored {
            return Err(Error::Invalid {
                file: file.to_string(),
                message: format!(
                    "source {source_id} is not a replica; only a replica's row follows its origin"
                ),
            });
        }
        restate(conn, file, encoder, source_id, source)
    }

    /// Continues a source as a new session anchored at `anchor` (§7).
    /// Its covered rows join the prune's count (`streams`) now that it is
    /// written to; a source this writer never touches keeps its file as it
    /// was. Seals in flight must be drained first.
    pub fn resume(
        &mut self,
        conn: &Connection,
        file: &str,
        encoder: &dyn SegmentEncoder,
        streams: &mut StreamCache,
        which: SourceRef,
        anchor: i64,
    ) -> Result<Opened> {
        let file = file.to_string();
        let snapshot = Snapshot::on_writer(conn, &file);
        let record = match &which {
            SourceRef::Id(id) => snapshot.source(*id)?,
            SourceRef::Uuid(uuid) => snapshot
                .sources()?
                .into_iter()
                .find(|s| {
                    s.source
                        .uuid
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
        crate::segment::check_encoder(&file, source_id, &record.source.metadata, encoder)?;
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
            let tx = Transaction::begin(conn, &file)?;
            let metadata = metadata_of(&tx, &file, source_id)?;
            let session = tx.mint_uuid()?;
            let entry = WriterSession {
                clock_anchor_wall_ns: Some(anchor),
                dendro: CRATE_VERSION.to_string(),
                resumed_after_ts: Some(newest),
                session: session.clone(),
                extra: Labels::new(),
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
        for stream in Snapshot::on_writer(conn, &file).streams(source_id)? {
            streams.refresh(conn, &file, source_id, &stream)?;
        }
        let dropped = self.register(source_id, true, newest);
        Ok(Opened {
            source_id,
            uuid: record.source.uuid.unwrap_or_default(),
            floor: newest,
            dropped,
        })
    }

    /// The last clock observation (a replica may have none to add),
    /// `complete = 1`, and the deletion of every
    /// row the source's segments cover, in one transaction: a finalized
    /// source holds no covered rows, whatever happens to the process next.
    /// Seals are drained before this runs.
    pub fn finalize(
        &mut self,
        conn: &Connection,
        file: &str,
        streams: &mut StreamCache,
        pruner: &mut Pruner,
        source_id: i64,
        last: Option<ClockOffset>,
    ) -> Result<()> {
        self.require(file, source_id)?;
        with_retries(file, "finalizing a source", || {
            let tx = Transaction::begin(conn, file)?;
            pruner
                .source_in(tx.sql(), streams, source_id)
                .map_err(|e| Error::sqlite(file, "cannot prune a finalized source", e))?;
            if let Some(last) = last {
                tx.insert_clock_offset(source_id, last.ts, last.offset_ns)?;
            }
            tx.set_complete(source_id, true)?;
            tx.commit()
        })?;
        pruner.source_committed(streams, source_id);
        pruner.stop_waiting(source_id, None, i64::MAX);
        self.sources.remove(&source_id);
        self.finalized += 1;
        Ok(())
    }

    /// Applies a caller's metadata patch. The keys dendro maintains itself
    /// are refused: a caller rewriting them would falsify the provenance.
    pub fn update_metadata(
        &self,
        conn: &Connection,
        file: &str,
        source_id: i64,
        patch: &BTreeMap<String, Option<String>>,
    ) -> Result<()> {
        self.require(file, source_id)?;
        if let Some(key) = patch
            .keys()
            .find(|k| *k == keys::WRITER_SESSIONS || *k == keys::ENCODER)
        {
            return Err(Error::Invalid {
                file: file.to_string(),
                message: format!("metadata key {key:?} is written by dendro, not by callers"),
            });
        }
        with_retries(file, "updating metadata", || {
            let tx = Transaction::begin(conn, file)?;
            tx.patch_metadata(source_id, patch)?;
            tx.commit()
        })
    }

    /// Appends one event to the source's `events` key.
    pub fn append_event(
        &self,
        conn: &Connection,
        file: &str,
        source_id: i64,
        event: &Event,
    ) -> Result<()> {
        self.require(file, source_id)?;
        with_retries(file, "appending an event", || {
            let tx = Transaction::begin(conn, file)?;
            let metadata = metadata_of(&tx, file, source_id)?;
            let events =
                events_with(metadata.get(keys::EVENTS), event).map_err(|why| Error::Invalid {
                    file: file.to_string(),
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
    pub fn caller_rows(
        &self,
        conn: &Connection,
        file: &str,
        source_id: i64,
        name: &str,
        rows: &[CallerRow],
    ) -> Result<()> {
        self.require(file, source_id)?;
        // An entry too large for one `Index` frame could never replicate.
        if let Some(row) = rows
            .iter()
            .find(|r| r.blob.len() as u64 > crate::format::MAX_ROW_BYTES)
        {
            return Err(Error::RowTooLarge {
                file: file.to_string(),
                source_id,
                what: "caller-row series",
                name: name.to_string(),
                ts: row.ts,
                bytes: row.blob.len() as u64,
                limit: crate::format::MAX_ROW_BYTES,
            });
        }
        with_retries(file, "storing caller rows", || {
            let tx = Transaction::begin(conn, file)?;
            tx.insert_caller_rows(source_id, name, rows)?;
            tx.commit()
        })
    }

    /// Records one clock observation; the first at a timestamp wins.
    pub fn clock_offset(
        &self,
        conn: &Connection,
        file: &str,
        source_id: i64,
        offset: ClockOffset,
    ) -> Result<()> {
        self.require(file, source_id)?;
        with_retries(file, "recording a clock offset", || {
            let tx = Transaction::begin(conn, file)?;
            tx.insert_clock_offset(source_id, offset.ts, offset.offset_ns)?;
            tx.commit()
        })
    }
}

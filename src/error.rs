//! One error type for the whole crate. Every variant that a user can meet
//! names the file it is about and the cause, so a message printed on its own
//! is enough to act on.
//!
//! It stands on the ground floor and imports only `format`: a message that
//! quotes a limit reads it there, and the causes other layers report (a
//! wire problem, a byte source that failed) are defined here, so no layer
//! below the one that raises an error has to know that layer. The public
//! enums are `#[non_exhaustive]`: a new cause is not a breaking change.

use std::fmt;

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a file is not an archive, as far as its first bytes and its catalog tell.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotArchive {
    /// A file of zero bytes.
    Empty,
    /// Shorter than the 100-byte SQLite header.
    TooShort(u64),
    /// The SQLite magic is missing.
    NotSqlite,
    /// SQLite with `application_id` 0: an ordinary database, or a `.rez`
    /// recording from before dendro.
    UnstampedSqlite,
    /// SQLite stamped by another application.
    ForeignApplication(u32),
    /// Stamped as an archive but holding no catalog tables: typically a copy
    /// of the main file taken before creation had checkpointed.
    NoCatalog,
    /// The catalog tables are there, but a column, key or index the reading
    /// rules rely on is not (what, in words).
    IncompleteCatalog(String),
    /// The tables are those of another schema version than the header
    /// states (a schema-5 file patched to claim 4, say): read by either
    /// rule it would be misread.
    SchemaMismatch(crate::format::layout::Mismatch),
}

impl fmt::Display for NotArchive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotArchive::Empty => write!(f, "the file is empty"),
            NotArchive::TooShort(n) => {
                write!(f, "the file is {n} bytes, shorter than a SQLite header")
            }
            NotArchive::NotSqlite => write!(f, "not a SQLite database"),
            NotArchive::UnstampedSqlite => write!(
                f,
                "a SQLite database without dendro's header stamp (application_id 0); \
                 a `.rez` recording from before dendro is upgraded by rezolus"
            ),
            NotArchive::ForeignApplication(id) => write!(
                f,
                "a SQLite database of another application (application_id {id:#010x})"
            ),
            NotArchive::NoCatalog => write!(
                f,
                "stamped as an archive but it holds no catalog; a copy of the main file \
                 taken before the archive's creation was checkpointed looks like this"
            ),
            NotArchive::IncompleteCatalog(what) => {
                write!(f, "its catalog lacks what reading it relies on: {what}")
            }
            NotArchive::SchemaMismatch(mismatch) => write!(f, "{mismatch}"),
        }
    }
}

impl NotArchive {
    /// Every value [`NotArchive::detail`] can take, with what it means, in
    /// the order the engine's contract lists them.
    pub const DETAILS: [(&'static str, &'static str); 8] = [
        ("empty", "zero bytes"),
        ("too_short", "shorter than a SQLite header"),
        ("not_sqlite", "no SQLite magic"),
        (
            "unstamped",
            "SQLite with application_id 0: an ordinary database",
        ),
        (
            "foreign_app",
            "SQLite stamped by another application (see application_id)",
        ),
        ("no_catalog", "stamped as an archive but without its tables"),
        (
            "incomplete_catalog",
            "its tables lack a column, key or index reading relies on",
        ),
        (
            "schema_mismatch",
            "its tables are not those of the schema version its header states",
        ),
    ];

    /// A stable machine-readable name for what the file is instead, as the
    /// wasm API's `detail` property (one of [`NotArchive::DETAILS`]). A page
    /// chooses its own words from it instead of matching phrases in the
    /// message.
    pub fn detail(&self) -> &'static str {
        match self {
            NotArchive::Empty => "empty",
            NotArchive::TooShort(_) => "too_short",
            NotArchive::NotSqlite => "not_sqlite",
            NotArchive::UnstampedSqlite => "unstamped",
            NotArchive::ForeignApplication(_) => "foreign_app",
            NotArchive::NoCatalog => "no_catalog",
            NotArchive::IncompleteCatalog(_) => "incomplete_catalog",
            NotArchive::SchemaMismatch(_) => "schema_mismatch",
        }
    }
}

/// The kinds of failure the browser engine reports to a page: a closed set,
/// so a page chooses its own words per kind rather than matching phrases.
/// [`Error::engine_kind`] maps every crate error into it; `Crashed` and
/// `Cancelled` are the engine worker's own (a trapped instance, a request
/// withdrawn). The TypeScript side is generated from [`EngineKind::ALL`]
/// (`www/src/engine/contract.ts`, checked by `tests/contract.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// Not SQLite, SQLite of another application, or no usable catalog.
    NotAnArchive,
    /// A dendro archive of a schema version this build does not read.
    UnsupportedSchema,
    /// SQLite or Parquet found damaged bytes.
    Corrupt,
    /// The file does not fit the engine's memory.
    TooLarge,
    /// No such source, stream or segment.
    NotFound,
    /// One segment could not be decoded; the archive is otherwise usable.
    Segment,
    /// The worker's WebAssembly instance trapped; it was restarted.
    Crashed,
    /// The caller withdrew the request before its answer came.
    Cancelled,
    /// A file read in place changed while it was being read.
    Changed,
    /// A file read in place stopped answering reads.
    Unreadable,
    /// Anything else: a fault in the engine, not in the file.
    Internal,
}

impl EngineKind {
    /// Every kind, in the order the contract lists them.
    pub const ALL: [EngineKind; 11] = [
        EngineKind::NotAnArchive,
        EngineKind::UnsupportedSchema,
        EngineKind::Corrupt,
        EngineKind::TooLarge,
        EngineKind::NotFound,
        EngineKind::Segment,
        EngineKind::Crashed,
        EngineKind::Cancelled,
        EngineKind::Changed,
        EngineKind::Unreadable,
        EngineKind::Internal,
    ];

    /// What the kind means, in a few words (the contract's comment).
    pub fn meaning(self) -> &'static str {
        match self {
            EngineKind::NotAnArchive => {
                "not SQLite, SQLite of another application, or no usable catalog"
            }
            EngineKind::UnsupportedSchema => {
                "a dendro archive of a schema version this build does not read"
            }
            EngineKind::Corrupt => "SQLite or Parquet found damaged bytes",
            EngineKind::TooLarge => "the file does not fit the engine's memory",
            EngineKind::NotFound => "no such source, stream or segment",
            EngineKind::Segment => {
                "one segment could not be decoded; the archive is otherwise usable"
            }
            EngineKind::Crashed => "the worker's instance trapped; it was restarted",
            EngineKind::Cancelled => "the caller withdrew the request before its answer came",
            EngineKind::Changed => "a file read in place changed while it was being read",
            EngineKind::Unreadable => {
                "a file read in place stopped answering reads (gone, or the server refused a range)"
            }
            EngineKind::Internal => "a fault in the engine, not in the file",
        }
    }

    /// The name a page sees as the error's `kind`.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::NotAnArchive => "NotAnArchive",
            EngineKind::UnsupportedSchema => "UnsupportedSchema",
            EngineKind::Corrupt => "Corrupt",
            EngineKind::TooLarge => "TooLarge",
            EngineKind::NotFound => "NotFound",
            EngineKind::Segment => "Segment",
            EngineKind::Crashed => "Crashed",
            EngineKind::Cancelled => "Cancelled",
            EngineKind::Changed => "Changed",
            EngineKind::Unreadable => "Unreadable",
            EngineKind::Internal => "Internal",
        }
    }
}

/// Why a handle that must write cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadOnly {
    /// The file or its directory cannot be written (read-only media, permissions).
    Media,
    /// The medium is read-only and a `-wal` sidecar holds commits that a
    /// sidecar-less (`immutable`) open would silently skip.
    SidecarOnReadOnlyMedia,
}

impl fmt::Display for ReadOnly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadOnly::Media => write!(f, "the file is on read-only media or not writable"),
            ReadOnly::SidecarOnReadOnlyMedia => write!(
                f,
                "the file is on read-only media and has a -wal sidecar; reading it without \
                 the sidecar would miss committed rows, so it is refused"
            ),
        }
    }
}

/// What is wrong with a replication stream (`WIRE.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireProblem {
    /// The stream ended before its first byte: the peer closed the
    /// connection at once (or the file is empty).
    Empty,
    /// The stream does not start with `dendro-repl\0`; what it started with.
    WrongMagic(Vec<u8>),
    /// A protocol version this build does not speak.
    UnknownVersion(u16),
    /// A frame length above the 64 MiB limit, refused before allocating.
    TooLong(u32),
    /// The stream ended inside a frame (or the preamble).
    Truncated {
        /// Bytes the frame needed.
        needed: usize,
        /// Bytes there were.
        got: usize,
    },
    /// A payload shorter than its own fields.
    ShortPayload {
        /// Bytes the next field needed.
        needed: usize,
        /// Bytes left in the payload.
        left: usize,
    },
    /// A payload with bytes after its last field.
    TrailingBytes(usize),
    /// A field holding a value the format does not allow.
    BadValue(String),
    /// The stream's digest frame does not match the bytes before it: the
    /// file was changed after it was written.
    DigestMismatch,
    /// The stream announced a digest at its start and ended without one:
    /// it was cut short, or its last frame was damaged.
    DigestMissing,
}

impl fmt::Display for WireProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireProblem::Empty => write!(
                f,
                "the stream is empty: the peer closed it before sending anything (a publisher \
                 already serving as many subscribers as it allows closes a new one at once)"
            ),
            WireProblem::WrongMagic(seen) => write!(
                f,
                "not a dendro replication stream: it starts with {:?}, not \"dendro-repl\\0\"",
                String::from_utf8_lossy(seen)
            ),
            WireProblem::UnknownVersion(v) => write!(
                f,
                "replication protocol version {v} is not spoken here (this build speaks {})",
                crate::format::PROTOCOL_VERSION
            ),
            WireProblem::TooLong(len) => write!(
                f,
                "a frame claims {len} bytes, above the limit of {} bytes; refused before \
                 reading it",
                crate::format::MAX_FRAME_BYTES
            ),
            WireProblem::Truncated { needed, got } => write!(
                f,
                "the stream ends inside a frame: {got} of its {needed} bytes arrived"
            ),
            WireProblem::ShortPayload { needed, left } => write!(
                f,
                "a payload ends inside a field: it needs {needed} more bytes, {left} are left"
            ),
            WireProblem::TrailingBytes(n) => {
                write!(f, "a payload has {n} bytes after its last field")
            }
            WireProblem::BadValue(what) => write!(f, "a frame holds an invalid value: {what}"),
            WireProblem::DigestMismatch => write!(
                f,
                "the stream's digest does not match its bytes: it is corrupt; nothing of it \
                 was applied"
            ),
            WireProblem::DigestMissing => write!(
                f,
                "the stream announced a digest but ends without one: it is cut short or its \
                 last frame is damaged; nothing of it was applied"
            ),
        }
    }
}

/// Why a file read in place (`pager`) could not serve a read. Once a source fails,
/// its file fails every later read the same way: a file that changed
/// under the reader must not be read as half one version, half another.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceFailure {
    /// The file is no longer the one opened: its length or version tag
    /// (an HTTP `ETag`) differs, or the browser says it was modified.
    Changed(String),
    /// A read could not be served at all: the file went away, the server
    /// stopped answering, or it answered without the range asked for.
    Unreadable(String),
}

impl std::fmt::Display for SourceFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceFailure::Changed(why) => write!(
                f,
                "the file changed while it was being read ({why}); open it again to see the new version"
            ),
            SourceFailure::Unreadable(why) => write!(f, "a part of the file could not be read ({why})"),
        }
    }
}

/// Everything that can go wrong, each naming the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file is not a dendro archive.
    #[error("{file}: not a dendro archive: {cause}")]
    NotAnArchive {
        /// The file.
        file: String,
        /// What it is instead.
        cause: NotArchive,
    },
    /// A dendro archive of a schema version this build does not read.
    #[error(
        "{file}: unsupported archive schema version {version}: this build reads schema versions {}",
        crate::format::layout::readable_versions_in_words()
    )]
    UnsupportedSchema {
        /// The file.
        file: String,
        /// The `user_version` the header carries.
        version: u32,
    },
    /// Another handle holds the file for writing.
    #[error("{file}: in use: another process or handle has it open for writing")]
    InUse {
        /// The file.
        file: String,
    },
    /// The file cannot be written, or cannot be read safely without writing.
    #[error("{file}: {cause}")]
    ReadOnly {
        /// The file.
        file: String,
        /// Which read-only condition.
        cause: ReadOnly,
    },
    /// A timestamp would go backwards across a writer session.
    #[error(
        "{file}: timeline goes backwards for source {source_id}: {ts} is not later than \
         the source's newest row {newest}"
    )]
    TimelineBackwards {
        /// The file.
        file: String,
        /// The source.
        source_id: i64,
        /// The offending timestamp.
        ts: i64,
        /// The newest timestamp the source already holds.
        newest: i64,
    },
    /// SQLite reported that the file is damaged.
    #[error("{file}: the archive is corrupt: {detail}")]
    Corrupt {
        /// The file.
        file: String,
        /// What SQLite or the reader found.
        detail: String,
    },
    /// The archive was written by a different encoder version than the caller's.
    #[error(
        "{file}: source {source_id} was written by encoder {archive:?}, but this reader's \
         encoder is {ours:?}; its rows would be misread"
    )]
    EncoderMismatch {
        /// The file.
        file: String,
        /// The source.
        source_id: i64,
        /// The `encoder` metadata key.
        archive: String,
        /// What the caller's encoder reports.
        ours: String,
    },
    /// The caller's encoder failed or answered something that contradicts its input.
    #[error("{file}: encoder failed on stream {stream:?}: {message}")]
    Encoder {
        /// The file.
        file: String,
        /// The stream being encoded.
        stream: String,
        /// What went wrong.
        message: String,
    },
    /// One segment's bytes could not be decoded as Parquet.
    #[error(
        "{file}: segment {seq} of stream {stream:?} (source {source_id}) is unreadable: {cause}"
    )]
    Segment {
        /// The file.
        file: String,
        /// The source.
        source_id: i64,
        /// The stream.
        stream: String,
        /// The segment's seq.
        seq: i64,
        /// What the decoder said.
        cause: String,
    },
    /// A source, stream or segment the caller named does not exist.
    #[error("{file}: {what} not found")]
    NotFound {
        /// The file.
        file: String,
        /// What was asked for.
        what: String,
    },
    /// The caller passed something the archive cannot hold.
    #[error("{file}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// What was wrong with the argument.
        message: String,
    },
    /// A SQLite call failed for a reason that is not corruption.
    #[error("{file}: {context}: {source}")]
    Sqlite {
        /// The file.
        file: String,
        /// What dendro was doing.
        context: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// An operating-system I/O call failed.
    #[error("{file}: {context}: {source}")]
    Io {
        /// The file.
        file: String,
        /// What dendro was doing.
        context: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The writer thread stopped; the message says why.
    #[error("{file}: the writer stopped: {message}")]
    WriterStopped {
        /// The file.
        file: String,
        /// Why.
        message: String,
    },
    /// A tick repeated a `(stream, ts)` its source already holds. Only that
    /// source's part of the tick was dropped; the writer carries on.
    #[error(
        "{file}: source {source_id} already holds a row at ts {ts} in stream {stream:?}; \
         this source's tick was dropped"
    )]
    DuplicateRow {
        /// The file.
        file: String,
        /// The source whose tick collided.
        source_id: i64,
        /// The stream.
        stream: String,
        /// The repeated timestamp.
        ts: i64,
    },
    /// A row appended out of timestamp order within its stream: above the
    /// sealed watermark (so not simply dropped) but not later than the
    /// stream's newest row. Refused rather than stored, since a replica
    /// tails each stream in timestamp order and could never be sent it.
    #[error(
        "{file}: source {source_id}, stream {stream:?}: a row at {ts} is not later than the \
         stream's newest row {newest}; rows of a stream are appended in timestamp order, and \
         this one was refused"
    )]
    OutOfOrder {
        /// The file.
        file: String,
        /// The source.
        source_id: i64,
        /// The stream.
        stream: String,
        /// The refused row's timestamp.
        ts: i64,
        /// The newest timestamp the stream holds (or the tick before it).
        newest: i64,
    },
    /// A row or caller row too large to travel in one replication frame
    /// (`format::MAX_ROW_BYTES`), refused at the call.
    #[error(
        "{file}: source {source_id}, {what} {name:?}: a row at {ts} holds {bytes} bytes, above \
         the limit of {limit} bytes that one replication frame carries; it was refused"
    )]
    RowTooLarge {
        /// The file.
        file: String,
        /// The source.
        source_id: i64,
        /// `stream` or `caller-row series`.
        what: &'static str,
        /// The stream or series name.
        name: String,
        /// The row's timestamp.
        ts: i64,
        /// Its size.
        bytes: u64,
        /// The most a row may hold.
        limit: u64,
    },
    /// An archive opened from memory is larger than one SQLite allocation
    /// can hold (`format::MAX_IN_MEMORY_BYTES`).
    #[error(
        "{file}: the file is {} MB; an archive opened in memory can be at most {} MB",
        bytes >> 20,
        limit >> 20
    )]
    TooLarge {
        /// The file.
        file: String,
        /// Its size.
        bytes: u64,
        /// The most this reader holds in memory.
        limit: u64,
    },
    /// An archive read in place (a dropped file, a URL read by ranges)
    /// could not serve a read: it changed under the reader, or the source
    /// stopped answering. Nothing read after that is trusted.
    #[error("{file}: {cause}")]
    Source {
        /// The file.
        file: String,
        /// What the source said.
        cause: SourceFailure,
    },
    /// A condition that usually clears by itself (a lock held elsewhere, a
    /// full disk) outlasted the writer's retries, so the tick was dropped.
    /// The writer carries on with the next one.
    #[error("{file}: a tick of source {source_id} was dropped after retries: {cause}")]
    TickDropped {
        /// The file.
        file: String,
        /// The source whose tick was dropped.
        source_id: i64,
        /// What SQLite kept answering.
        cause: String,
    },
    /// A replication stream that cannot be read as one (`WIRE.md`).
    #[error("{file}: at byte {offset} of the replication stream: {problem}")]
    Wire {
        /// The stream's name: a file, an address, or `stdin`.
        file: String,
        /// Where the offending frame (or the preamble) starts.
        offset: u64,
        /// What is wrong.
        problem: WireProblem,
    },
    /// A replication stream that reads well but breaks the protocol's rules
    /// (a frame for a source with no handshake, a uuid reused).
    #[error("{file}: replication refused: {message}")]
    Replication {
        /// The archive being applied to.
        file: String,
        /// Which rule, and what broke it.
        message: String,
    },
}

impl Error {
    /// A stable machine-readable name for the kind of error, as used by the
    /// CLI's JSON output and the wasm API's `kind` property.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::NotAnArchive { .. } => "NotAnArchive",
            Error::UnsupportedSchema { .. } => "UnsupportedSchema",
            Error::InUse { .. } => "InUse",
            Error::ReadOnly { .. } => "ReadOnly",
            Error::TimelineBackwards { .. } => "TimelineBackwards",
            Error::Corrupt { .. } => "Corrupt",
            Error::EncoderMismatch { .. } => "EncoderMismatch",
            Error::Encoder { .. } => "Encoder",
            Error::Segment { .. } => "Segment",
            Error::NotFound { .. } => "NotFound",
            Error::Invalid { .. } => "Invalid",
            Error::Sqlite { .. } => "Sqlite",
            Error::Io { .. } => "Io",
            Error::WriterStopped { .. } => "WriterStopped",
            Error::DuplicateRow { .. } => "DuplicateRow",
            Error::OutOfOrder { .. } => "OutOfOrder",
            Error::RowTooLarge { .. } => "RowTooLarge",
            Error::TickDropped { .. } => "TickDropped",
            Error::TooLarge { .. } => "TooLarge",
            Error::Wire { .. } => "Wire",
            Error::Replication { .. } => "Replication",
            Error::Source { .. } => "Source",
        }
    }

    /// The error's kind in the browser engine's closed set.
    pub fn engine_kind(&self) -> EngineKind {
        match self {
            Error::Sqlite { source, .. }
                if source.sqlite_error_code() == Some(rusqlite::ErrorCode::OutOfMemory) =>
            {
                EngineKind::TooLarge
            }
            Error::TooLarge { .. } => EngineKind::TooLarge,
            Error::NotAnArchive { .. } => EngineKind::NotAnArchive,
            Error::UnsupportedSchema { .. } => EngineKind::UnsupportedSchema,
            Error::Corrupt { .. } => EngineKind::Corrupt,
            Error::NotFound { .. } | Error::Invalid { .. } => EngineKind::NotFound,
            Error::Segment { .. } => EngineKind::Segment,
            Error::Source { cause, .. } => match cause {
                SourceFailure::Changed(_) => EngineKind::Changed,
                SourceFailure::Unreadable(_) => EngineKind::Unreadable,
            },
            _ => EngineKind::Internal,
        }
    }

    /// Wraps a SQLite error, turning corruption and lock contention into
    /// their own variants so a caller can match on them.
    pub(crate) fn sqlite(file: &str, context: &str, err: rusqlite::Error) -> Error {
        use rusqlite::ErrorCode;
        match err.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt) | Some(ErrorCode::NotADatabase) => Error::Corrupt {
                file: file.to_string(),
                detail: format!("{context}: {err}"),
            },
            Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => Error::InUse {
                file: file.to_string(),
            },
            _ => Error::Sqlite {
                file: file.to_string(),
                context: context.to_string(),
                source: err,
            },
        }
    }

    pub(crate) fn io(file: &str, context: &str, err: std::io::Error) -> Error {
        Error::Io {
            file: file.to_string(),
            context: context.to_string(),
            source: err,
        }
    }
}

/// Attaches the file name and a context to SQLite results.
pub(crate) trait SqlContext<T> {
    fn ctx(self, file: &str, context: &str) -> Result<T>;
}

impl<T> SqlContext<T> for std::result::Result<T, rusqlite::Error> {
    fn ctx(self, file: &str, context: &str) -> Result<T> {
        self.map_err(|e| Error::sqlite(file, context, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_has_its_own_detail_name_listed_once() {
        let all = [
            NotArchive::Empty,
            NotArchive::TooShort(3),
            NotArchive::NotSqlite,
            NotArchive::UnstampedSqlite,
            NotArchive::ForeignApplication(7),
            NotArchive::NoCatalog,
            NotArchive::IncompleteCatalog(String::new()),
            NotArchive::SchemaMismatch(crate::format::layout::Mismatch {
                version: 4,
                found: String::new(),
            }),
        ];
        let listed: Vec<&str> = NotArchive::DETAILS.iter().map(|(d, _)| *d).collect();
        let given: Vec<&str> = all.iter().map(NotArchive::detail).collect();
        assert_eq!(listed, given);
    }
}

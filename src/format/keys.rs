//! Reserved keys of `sources.metadata` (format §6). The map is open; these
//! names have an agreed meaning and never change it.

/// The producer's current counter epoch: regenerated whenever all its
/// cumulative counters restart from zero together.
pub const PRODUCER_EPOCH: &str = "producer_epoch";
/// JSON array of every epoch observed, `[{"epoch", "from_ts"}]`, in order.
pub const PRODUCER_EPOCHS: &str = "producer_epochs";
/// JSON array, one entry per writer session that appended, in order.
pub const WRITER_SESSIONS: &str = "writer_sessions";
/// The version of the software that produced the values; opaque.
pub const PRODUCER_VERSION: &str = "producer_version";
/// The row encoding's version, written by dendro and enforced on read.
pub const ENCODER: &str = "encoder";
/// JSON `{"events": [...]}`, appended to and never replaced.
pub const EVENTS: &str = "events";

/// The `kind` of an event marking a counter reset.
pub const EVENT_KIND_PRODUCER_EPOCH: &str = "producer_epoch";
/// The `kind` of an event marking a resumed writer session.
pub const EVENT_KIND_WRITER_SESSION: &str = "writer_session";

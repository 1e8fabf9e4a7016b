//! Offline rewrites of whole archives (feature `write`): copy with a
//! selection, combine several archives, compact a stream in place, project
//! columns, take an exact copy of a live file, export for query engines.
//!
//! The rule they share: a segment's Parquet bytes pass through untouched
//! unless the caller asked for something only re-encoding can give (a
//! trimmed time bound, a column subset, a merge of small segments), and
//! then they are re-encoded with the archive's own settings
//! ([`crate::segment::writer_props`]). Only the catalog is rewritten.
//!
//! The files: `output` (a new archive written beside its final name and
//! renamed into place, with commits batched), `inputs` (archives read
//! through one held snapshot each), `spec` (what a copy is asked for),
//! `plan` (which sources, streams and segments go where, merging a source
//! that appears in several inputs by uuid), `copy` and `combine` (writing a plan; trim and projection of one
//! segment are the writer's `reencode`), `merge` (the schema rule and the
//! concatenation compaction uses), `compact`, `export` (one file per
//! segment) and `fleet` (the incremental dataset for query engines).

mod combine;
mod compact;
mod copy;
mod documents;
mod export;
mod fleet;
mod inputs;
mod merge;
mod output;
mod plan;
mod spec;

pub use combine::{combine, combine_as};
pub use compact::{
    compact, CompactEvent, CompactReport, CompactSpec, Target, DEFAULT_TARGET_BYTES,
};
pub use copy::{copy, project, vacuum_into, CopyReport};
pub use documents::DocumentFork;
pub use export::{export, hive_escape, ExportReport, EXPORT_FORMAT};
pub use fleet::{
    civil_date, export_dataset, read_manifest, Cursor, DatasetOptions, DatasetReport, FileSource,
    Manifest, ManifestFile, DATASET_FORMAT, DEFAULT_TARGET_SIZE, NULL_PARTITION,
};
pub use merge::{same_series, union_fields};
pub use spec::{CopySpec, SourceSelector};

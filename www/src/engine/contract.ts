// Generated from the dendro crate's declarations by tests/contract.rs;
// do not edit. `DENDRO_BLESS=1 cargo test --test contract` regenerates it.

/** Why the engine refused a file or a request (`EngineKind` in src/error.rs). */
export const ERROR_KINDS = [
  "NotAnArchive", // not SQLite, SQLite of another application, or no usable catalog
  "UnsupportedSchema", // a dendro archive of a schema version this build does not read
  "Corrupt", // SQLite or Parquet found damaged bytes
  "TooLarge", // the file does not fit the engine's memory
  "NotFound", // no such source, stream or segment
  "Segment", // one segment could not be decoded; the archive is otherwise usable
  "Crashed", // the worker's instance trapped; it was restarted
  "Cancelled", // the caller withdrew the request before its answer came
  "Changed", // a file read in place changed while it was being read
  "Unreadable", // a file read in place stopped answering reads (gone, or the server refused a range)
  "Internal", // a fault in the engine, not in the file
] as const;
export type EngineErrorKind = (typeof ERROR_KINDS)[number];

/** What a file refused as "NotAnArchive" is instead (`NotArchive::DETAILS`). */
export const REFUSAL_DETAILS = [
  "empty", // zero bytes
  "too_short", // shorter than a SQLite header
  "not_sqlite", // no SQLite magic
  "unstamped", // SQLite with application_id 0: an ordinary database
  "foreign_app", // SQLite stamped by another application (see application_id)
  "no_catalog", // stamped as an archive but without its tables
  "incomplete_catalog", // its tables lack a column, key or index reading relies on
  "schema_mismatch", // its tables are not those of the schema version its header states
] as const;
export type RefusalDetail = (typeof REFUSAL_DETAILS)[number];

/** What verify can report (`ProblemKind` in src/verify.rs). */
export const PROBLEM_KINDS = [
  "integrity",
  "dangling_reference",
  "segment",
  "unreachable_wal",
  "catalog",
] as const;
export type ProblemKind = (typeof PROBLEM_KINDS)[number];

/** The largest archive the engine opens in memory (`container::MAX_IN_MEMORY_BYTES`). */
export const MAX_ARCHIVE_BYTES = 2147483391;

/** The most segments a sampled preview reads (`catalog::MAX_WINDOW_SAMPLE`): larger asks are cut to it. */
export const MAX_WINDOW_SAMPLE = 1024;

/**
 * A window's segments as the engine's `Archive.windowSegments(source, stream,
 * from, to)` counts them (`WindowEntries` in src/catalog/listing.rs): listed
 * once from the time index (`segments_by_time`, a range of it; one table row
 * at most) and kept, so the footer plan (`prefetchWindow`), the sampled
 * preview and the read of the same window list nothing again. Read in place,
 * `prefetchWindow` brings the index's pages in first, in batches.
 */
export interface WindowSegments {
  /** The segments of the stream overlapping [from, to]. */
  total: number;
}

/**
 * The sampled preview: `Archive.previewRange(source, stream, from, to,
 * columns, maxPoints, rates, sample)` with `sample` = k (1..MAX_WINDOW_SAMPLE)
 * answers from the footers of k of the window's segments spread evenly
 * through it (by position in time order), after `Archive.prefetchWindow(
 * source, stream, from, to, columns, maxPoints, rates, true, k)` fetched just
 * those k footers and rows. The answer is a RangeEnvelope with `preview:
 * true` and `sample` set; `segments_left_out` counts the window's segments
 * not in the sample, `rows_left_out` estimates their rows from the sample's
 * mean, and `rows_in_window` counts only the sampled ones' rows.
 */
export interface WindowSample {
  /** Segments whose footers made the band. */
  taken: number;
  /** The window's segments (WindowSegments.total). */
  of: number;
}

// The contract between the viewer page and the engine worker.
//
// The engine (the dendro crate compiled to wasm32, running in a dedicated
// Web Worker) answers these questions about archives it holds in memory.
// Nanosecond timestamps exceed 2^53, so every timestamp is a `bigint`;
// counts and byte sizes are plain numbers.

import type { EngineErrorKind, ProblemKind, RefusalDetail } from "./contract";

export type { EngineErrorKind, ProblemKind, RefusalDetail } from "./contract";

export interface EngineError {
  kind: EngineErrorKind;
  /** A sentence a person understands, naming the file and the cause. */
  message: string;
  /** NotAnArchive: what the file is instead. Absent for other kinds. */
  detail?: RefusalDetail;
  /** detail "foreign_app": the header's application_id, 0 to 2^32-1. */
  application_id?: number;
  /** UnsupportedSchema: the schema version the file's header carries. */
  version?: number;
  /** UnsupportedSchema: every schema version this engine reads (4 and 5). */
  supported_versions?: number[];
}

export interface SegmentInfo {
  seq: number;
  rows: number;
  first_ts: bigint;
  last_ts: bigint;
  /** Length of the Parquet payload in bytes. */
  bytes: number;
  /** Whether the writer stored a caller index beside this segment. */
  caller_index: boolean;
}

export interface StreamInfo {
  name: string;
  /** Sealed segments in seq order (seqs may have gaps). */
  segments: SegmentInfo[];
  sealed_rows: number;
  /** Rows in the live tail: committed, not yet sealed (readable when the source's `live_readable`). */
  live_rows: number;
  live_span: [bigint, bigint] | null;
  /** Rows in the caller_rows store under this stream's name. */
  caller_rows: number;
  /**
   * Only in an outline (Description.outline), on a stream with sealed
   * data: its segments counted and its sealed span, from the catalog's
   * indexes. `segments` is then empty and `sealed_rows` 0 (not counted).
   */
  outline?: SealedOutline;
}

/** A stream's sealed segments as an outline knows them (see `ArchiveHandle.outline`). */
export interface SealedOutline {
  segments: number;
  /** The first segment's first row, and the newest sealed row. */
  first_ts: bigint;
  last_ts: bigint;
  /**
   * The sealed rows estimated as `segments` times the first segment's rows
   * (read with `first_ts`, no read more): shown as an estimate until the
   * listing counts them (DESIGN.md, "Listing a window, not the catalog").
   */
  rows_estimate: number;
}

/** A reserved key's value as the engine parsed it, or why it could not. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; why: string };

/** One writer session that appended to the source (`writer_sessions`). */
export interface WriterSession {
  session: string;
  /** The crate version that appended. */
  dendro: string;
  clock_anchor_wall_ns: bigint | null;
  /** Whether this session resumed the source. */
  resumed: boolean;
  /** On a resume: the newest row the previous session left (null: it left none). */
  resumed_after_ts: bigint | null;
  /** Keys this engine does not know, as JSON text. */
  extra: Record<string, string>;
}

/** One entry of `events`. Non-string values arrive as their JSON text. */
export interface ArchiveEvent {
  timestamp: bigint;
  description: string;
  kind: string | null;
  details: string | null;
  id: string | null;
}

/** One entry of `producer_epochs`. */
export interface ProducerEpoch {
  epoch: string;
  from_ts: bigint | null;
}

/** The reserved keys holding JSON, parsed by the engine; a key is present only when the metadata has it. */
export interface Reserved {
  writer_sessions?: Parsed<WriterSession[]>;
  events?: Parsed<ArchiveEvent[]>;
  producer_epochs?: Parsed<ProducerEpoch[]>;
}

export interface SourceInfo {
  id: number;
  uuid: string | null;
  labels: Record<string, string>;
  /** Verbatim strings, reserved keys included (their parsed form is `reserved`). */
  metadata: Record<string, string>;
  reserved: Reserved;
  /** false: data after the last row may be missing. */
  complete: boolean;
  /**
   * Whether the engine reads this source's live tails: the self-describing
   * encoder wrote them, so readRange plots them after the sealed rows.
   * false: a tail is committed but readable only with the writer's encoder.
   */
  live_readable: boolean;
  clock_anchor_wall_ns: bigint;
  /** Streams ordered by name. A name used only in caller_rows is not a stream. */
  streams: StreamInfo[];
  /** Names in caller_rows that are not streams (reached by name only). */
  caller_row_names: string[];
  /**
   * How many caller rows each of caller_row_names holds, by name. Every
   * name is an own property, "__proto__" included: read it with
   * Object.hasOwn or Object.entries.
   */
  caller_row_counts: Record<string, number>;
}

/**
 * One document `(kind, name)` of a schema-5 archive, without its body:
 * the current (newest) revision's id and how many revisions it has.
 */
export interface DocumentInfo {
  kind: string;
  name: string;
  /** The id of the newest revision. */
  current: number;
  revisions: number;
  /** The newest revision deletes the document; its history is kept. */
  deleted: boolean;
}

/** One revision of a document, as `documentHistory` gives it. */
export interface DocumentRevision {
  id: number;
  uuid: string;
  kind: string;
  name: string;
  /** The caller's name and version for the body's type; null on a deletion. */
  schema: string | null;
  /** The JSON body as stored, verbatim: text to show, never markup. Null on a deletion. */
  body: string | null;
  created_wall_ns: bigint;
  /** The revision current when this one was written (provenance only). */
  supersedes: number | null;
  deleted: boolean;
}

/** Where an archive keeps its caller indexes: schema 5's table, schema 4's column, or nowhere. */
export type CallerIndexPlace = "table" | "column" | "absent";

/** Same shape as `dendro describe --json`, plus caller_row_names and caller_row_counts. */
export interface Description {
  file_bytes: number;
  /** 4 or 5. */
  schema_version: number;
  sources: SourceInfo[];
  caller_indexes: CallerIndexPlace;
  /** Every document, deleted ones included, by (kind, name); empty for schema 4. */
  documents: DocumentInfo[];
  /**
   * true: an outline (`ArchiveHandle.outline`). No stream lists its
   * segments or counts its sealed rows; each has its `outline` instead.
   */
  outline?: boolean;
}

export interface ColumnSchema {
  name: string;
  /** Arrow data type as Arrow prints it: "Int64", "Float64", "Utf8", "Timestamp(Nanosecond, None)", ... */
  type: string;
  nullable: boolean;
  metadata: Record<string, string>;
  /**
   * Present only on a histogram column of the self-describing encoder
   * (FORMAT.md §9): its buckets. Such a column is drawn with `heatmap`,
   * not `readRange` (which leaves it out: it is not numeric).
   */
  histogram?: HistogramInfo;
}

/** A histogram column's buckets, fixed by its schema (FORMAT.md §9). */
export interface HistogramInfo {
  /**
   * Ascending bucket edges, one more than there are buckets: bucket `i`
   * holds the values in `[bounds[i], bounds[i + 1])`.
   */
  bounds: number[];
  /**
   * "counter": each row holds running totals (a fall of the total is a
   * reset); "delta": each row holds its own interval's counts. Heatmaps
   * and region statistics always show interval counts either way.
   */
  cumulation: "counter" | "delta";
  /** The unit of the bucket edges ("ns", "ms"), when the schema gives one. */
  unit: string | null;
}

/**
 * A row the engine could not use, named so a person can find it. The rest
 * of the answer is computed without it.
 */
export interface RowProblem {
  stream: string;
  /** The segment's seq; null for the live tail. */
  segment: number | null;
  /** The row's index in its segment (in the live tail: among its rows in the window). */
  row: number;
  ts: bigint;
  /** What is wrong, in words. */
  message: string;
}

/** What `regionStats` is asked. */
export interface RegionRequest {
  source: number;
  stream: string;
  /** Columns to summarize (numeric or histogram); all of them when absent. */
  columns?: string[];
  /** The region, inclusive, in nanoseconds. */
  from: bigint;
  to: bigint;
}

/**
 * One numeric column over a region, from its raw rows (never from an
 * envelope). The summarized values are the ones plotted: a gauge's values
 * as they are, a counter's per-second rates (the increase since the
 * previous row of the region with a value, a fall being a reset counted
 * as the new value; the region's first row has no rate). Only rows inside
 * the region are used. null where there is nothing to summarize.
 */
export interface RegionColumnStats {
  name: string;
  /** "counter" or "gauge" as the column's schema marks it; null when unmarked. */
  kind: string | null;
  /** Rows of the region with a value. */
  count: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  /** Nearest-rank percentiles: the value at rank ceil(q·n) of the n sorted values. */
  p50: number | null;
  p99: number | null;
  /** The last stored value minus the first (of the raw values, not rates). */
  last_minus_first: number | null;
  /** Counters only: the sum of the increases, resets handled. */
  increase: number | null;
  /** Counters only: increase per second between the region's first and last row. */
  mean_rate: number | null;
  /**
   * Integral over time in value × seconds: a gauge by the trapezoid rule
   * over consecutive rows; a counter's is its increase (its rate held over
   * each interval).
   */
  integral: number | null;
}

/**
 * A histogram column over a region: the sum of its rows' interval counts
 * (a cumulative histogram's first row in the region is its baseline and
 * adds nothing), with quantiles by the rule of `Heatmap.lines`.
 */
export interface RegionHistogramStats {
  name: string;
  histogram: HistogramInfo;
  /** Rows whose interval counts were summed. */
  rows: number;
  /** Summed counts per bucket (exact below 2^53). */
  counts: Float64Array;
  total: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  p999: number | null;
  /** The upper edge of the highest non-empty bucket. */
  max_bucket: number | null;
}

/** The answer to `regionStats`. */
export interface RegionStats {
  stream: string;
  from: bigint;
  to: bigint;
  /** Rows whose time lies in the region (any column). */
  rows: number;
  /** Set when the region holds no row: says so in words ("stream "cpu" has no rows between …"). */
  empty: string | null;
  columns: RegionColumnStats[];
  histograms: RegionHistogramStats[];
  /** Rows that could not be used (at most 100 listed). */
  problems: RowProblem[];
  /** Problems found beyond those listed. */
  problems_left_out: number;
}

/** What `heatmap` is asked. */
export interface HeatmapRequest {
  source: number;
  stream: string;
  /** A histogram column (`ColumnSchema.histogram` set). */
  column: string;
  /** The window, inclusive, in nanoseconds. */
  from: bigint;
  to: bigint;
  /**
   * Pixel columns, 1 to 8192; pixels × buckets at most 4,194,304. Column
   * `p` covers `[from + p·w, from + (p+1)·w)` with `w = (to − from + 1) / pixels` ns.
   */
  pixels: number;
}

/**
 * A histogram column over a window, decimated exactly: a pixel column's
 * counts are the sum of the interval counts of the rows whose time falls
 * in it, so zooming out never loses a tail.
 */
export interface Heatmap {
  from: bigint;
  to: bigint;
  pixels: number;
  /** Buckets per pixel column (`histogram.bounds.length - 1`). */
  buckets: number;
  histogram: HistogramInfo;
  /** A pixel column's width in seconds: counts / pixel_seconds = rates. */
  pixel_seconds: number;
  /** Summed interval counts, pixel-major: bucket b of pixel column p at `p * buckets + b`. */
  counts: Float64Array;
  /** counts / pixel_seconds: count per second, same layout. */
  rates: Float64Array;
  /** Per pixel column: 1 when at least one row's counts landed in it, 0 when no row did (absent, not zero). */
  present: Uint8Array;
  /** Per pixel column: its summed count over all buckets. */
  totals: Float64Array;
  /**
   * Quantile lines, one value per pixel column (NaN where it counted
   * nothing): the upper edge of the first bucket at which the running count
   * reaches ceil(q × total). Never below the true quantile; exact to a bucket.
   */
  lines: { p50: Float64Array; p90: Float64Array; p99: Float64Array; p999: Float64Array; max: Float64Array };
  /** Rows whose counts were summed. */
  rows: number;
  /**
   * When no row of the column lies in the window (a gap, or before or after
   * the stream), what that is, in words; every pixel column is absent.
   */
  empty: string | null;
  problems: RowProblem[];
  problems_left_out: number;
}

export interface StreamSchema {
  columns: ColumnSchema[];
  /** The column rows are ordered by: "ts" if present, else the first timestamp or Int64 column. */
  ts_column: string | null;
}

export type ColumnValues =
  | Float64Array
  | Float32Array
  | BigInt64Array
  | BigUint64Array
  | Int32Array
  | Uint32Array
  | Int16Array
  | Uint16Array
  | Int8Array
  | Uint8Array
  /** Utf8/LargeUtf8 columns, one entry per row (null where null). */
  | (string | null)[]
  /** Boolean columns: 0 or 1 per row. */
  | Uint8Array;

export interface DecodedColumn {
  name: string;
  type: string;
  /**
   * The values. Types with no typed-array form (binary, lists, decimals,
   * structs) arrive as display strings.
   */
  values: ColumnValues;
  /** Present only when the column has nulls: 1 where the row is null. */
  nulls?: Uint8Array;
}

export interface DecodedBatch {
  rows: number;
  columns: DecodedColumn[];
}

/**
 * A time window reduced for plotting. When the window holds at most
 * maxPoints rows, every row is returned (min == max). Otherwise each numeric
 * column becomes a min/max envelope per time bucket, so a one-row spike is
 * never lost.
 */
export interface RangeEnvelope {
  /** Rows the window holds: the sealed segments', and the live tail's when it could be read. */
  rows_in_window: number;
  /** Of those, live rows (readable only from the self-describing encoder). */
  live_rows_in_window: number;
  /** Segments fetched and decoded to answer. */
  segments_read: number;
  /**
   * Segments answered from their Parquet footer's statistics without being
   * decoded: each lay inside one bucket, so its exact min and max were all
   * it added. 0 when the envelope is not reduced.
   */
  segments_from_stats: number;
  /**
   * Segments of the window left unread: a window over more segments than
   * the engine's budget (4,096) reads a spread sample of them, at least one
   * per bucket with data. The envelope is then exact for the segments read
   * only (a bucket's true min may be lower, its max higher); a narrower
   * window is exact again. 0 when the envelope is exact.
   */
  segments_left_out: number;
  /** The rows the catalog claims for the segments left out. */
  rows_left_out: number;
  /** true when rows were bucketed, false when every row is here. */
  reduced: boolean;
  /** One timestamp per point: the bucket's start, or the row's own ts. */
  ts: BigInt64Array;
  /**
   * Numeric columns only (ints, floats, booleans as 0/1). Non-finite or null rows are skipped:
   * where a point has no value left for a column, its min and max are NaN (a gap).
   */
  columns: {
    name: string;
    min: Float64Array;
    max: Float64Array;
    /** Preview only: segments whose footer does not know this column's extremes (they add nothing to it). */
    gaps?: number;
  }[];
  /**
   * Set on a preview (`RangeOptions.onPreview`): a band from the segments'
   * footer statistics, decoding nothing, in the buckets the exact answer
   * uses. Each segment's min and max cover every bucket it overlaps, so
   * the band holds the exact envelope wherever every segment under a
   * bucket has statistics for the column (see `gaps`). `segments_read` is
   * 0; `rows_in_window` counts whole the segments overlapping the window.
   * Counters read as rates are left out (a rate needs the rows).
   */
  preview?: true;
  /** Preview only: segments whose footer gave no summary, adding nothing. */
  segments_unsummarized?: number;
  /**
   * Set on the first preview of a window over many segments of an archive
   * read in place: footer statistics of a spread sample of its segments
   * (`segments_from_stats` of them; `segments_left_out` not read) in a few
   * dozen coarse buckets, each band what the sampled segments in it hold.
   * Unlike a preview of every footer, it may not hold the exact envelope.
   */
  sample?: true;
  /**
   * Which path computed the answer of an archive opened from a URL:
   * "server" when the server that serves it computed it (`dendro serve`,
   * the accelerator), "browser" when this engine read it by range.
   */
  via?: "server" | "browser";
  /** Set with `via: "browser"` where the server offers envelopes: why it did not give this one, in its words. */
  declined?: string;
}

export interface LiveTail {
  rows: number;
  first_ts: bigint | null;
  last_ts: bigint | null;
  /** Whether the engine can decode these rows (the self-describing encoder wrote them); readRange then includes them. */
  readable: boolean;
}

/** What readRange reads besides the window. */
export interface RangeOptions {
  /** Numeric columns to keep; all when absent. */
  columns?: string[];
  /** At most this many points (min/max envelope per bucket beyond). */
  maxPoints?: number;
  /** Counter columns to read as per-second rates, computed before bucketing; a fall counts as a reset. */
  rates?: string[];
  /**
   * Called before the exact answer with a preview from the segments'
   * footer statistics (`RangeEnvelope.preview`), when the engine has one:
   * with `maxPoints`, decoding in its decoder worker. For a window over
   * many segments of an archive read in place, first with a sample
   * (`RangeEnvelope.sample`), then with every footer. The promise still
   * resolves with the exact envelope.
   */
  onPreview?: (preview: RangeEnvelope) => void;
}

export interface CallerRow {
  ts: bigint;
  blob: Uint8Array;
}

export interface VerifyProblem {
  kind: ProblemKind;
  message: string;
}

export interface VerifyReport {
  sound: boolean;
  problems: VerifyProblem[];
  /** Rows segments cover that a prune has not deleted: information, not a problem. */
  covered_wal_rows: number;
  /** A line about what is not a problem (covered rows), or null. */
  note: string | null;
}

/**
 * Lets a caller withdraw a request it no longer needs. When `signal` aborts
 * before the answer arrives, the promise rejects at once with an
 * EngineError of kind "Cancelled" (its `name` is "AbortError"), and the
 * worker skips the request if it has not started it yet. A request already
 * running finishes in the worker; its answer is dropped.
 */
export interface Cancellable {
  signal?: AbortSignal;
}

/** The traffic of an archive read in place (`ArchiveHandle.lazyStats`). */
export interface LazyStats {
  /** The file's size in bytes. */
  size: number;
  /** Reads of the file: HTTP requests, or ranges read from a File. */
  fetches: number;
  /**
   * Of those, ranges fetched ahead in batches (footers, catalog pages, a
   * live tail's rows); the rest the engine waited for one at a time.
   */
  primed: number;
  /** Bytes those reads returned. */
  fetchedBytes: number;
  /** Pages served from the engine's block cache, and pages fetched. */
  hits: number;
  misses: number;
  /** Bytes the block cache holds now (bounded, whatever the file's size). */
  cachedBytes: number;
  /**
   * Segments some part of which was read through SQLite's pager, a page at
   * a time, instead of by range (a payload whose place was not proven): 0
   * for an archive its writer made.
   */
  sqlitePayloads: number;
}

/**
 * How an archive is held: "memory" copies the whole file into the engine
 * (fastest to query; limited by memory); "lazy" reads it in place, a range
 * at a time through a bounded cache, so any size opens.
 */
export type OpenMode = "memory" | "lazy";

/** One archive open in the engine. Every method runs in the worker. */
export interface ArchiveHandle {
  readonly name: string;
  readonly mode: OpenMode;
  describe(): Promise<Description>;
  /**
   * A first description of a large archive read in place, from its
   * catalog's small trees alone: sources, streams, live tails and caller
   * rows as `describe` gives them, and for each stream with sealed data
   * its segment count and sealed span (`StreamInfo.outline`), with no
   * segment listed. Listing a large catalog in place reads a page per few
   * segments, scattered through the file; this reads a few dozen pages,
   * so a page can show it while `describe` reads the rest. Null for an
   * archive held in memory, or one with fewer than `minSegments` segments
   * (default 256), whose description comes about as soon.
   */
  outline(minSegments?: number): Promise<Description | null>;
  schema(source: number, stream: string): Promise<StreamSchema>;
  readSegment(source: number, stream: string, seq: number, columns?: string[], opts?: Cancellable): Promise<DecodedBatch>;
  readRange(
    source: number,
    stream: string,
    from: bigint,
    to: bigint,
    opts?: RangeOptions & Cancellable,
  ): Promise<RangeEnvelope>;
  /**
   * What `readRange` with `onPreview` hands over first, alone: a band from
   * the segments' footer statistics, decoding nothing (counters read as
   * rates are left out: a rate needs the rows). Null where the engine has
   * none. Cheap where the exact read is not, so a view of many sources can
   * draw them all before reading any exactly.
   */
  previewRange(
    source: number,
    stream: string,
    from: bigint,
    to: bigint,
    opts: Omit<RangeOptions, "onPreview"> & Cancellable & { maxPoints: number },
  ): Promise<RangeEnvelope | null>;
  /**
   * Fetches ahead, in a few batched reads, what a preview and read of the
   * window will read from an archive read in place (the segments'
   * footers, the live tail), so that a `readRange` sent later waits on
   * none of it: worth sending as soon as the stream to plot is known,
   * while the page is busy with other things. Does nothing for an archive
   * held in memory; a failure is left for the read to report.
   */
  prefetch(source: number, stream: string, from: bigint, to: bigint): Promise<void>;
  liveTail(source: number, stream: string): Promise<LiveTail>;
  callerIndex(source: number, stream: string, seq: number): Promise<Uint8Array | null>;
  callerRows(source: number, name: string, from: bigint, to: bigint, opts?: Cancellable): Promise<CallerRow[]>;
  /** Every revision of a document, oldest first, bodies included; [] for one the archive lacks. */
  documentHistory(kind: string, name: string): Promise<DocumentRevision[]>;
  verify(): Promise<VerifyReport>;
  /**
   * Statistics of a region of a stream, computed in the worker from the
   * region's raw rows (every segment overlapping it is decoded). A region
   * with no rows answers with `empty` set, not an error. An unknown column,
   * or one neither numeric nor a histogram, is an error (kind "NotFound").
   */
  regionStats(request: RegionRequest, opts?: Cancellable): Promise<RegionStats>;
  /**
   * The heatmap of a histogram column over a window, with its quantile
   * lines. Zooming refetches only the window. A column that is not a
   * histogram, or a hostile size, is an error (kind "NotFound") in words.
   */
  heatmap(request: HeatmapRequest, opts?: Cancellable): Promise<Heatmap>;
  /** Traffic so far of an archive read in place; null in memory mode. */
  lazyStats(): Promise<LazyStats | null>;
  close(): Promise<void>;
}

/** Traffic of a followed URL so far, every image together. */
export interface FollowTraffic {
  /** Bytes read from the network (probes and ranges). */
  netBytes: number;
  requests: number;
  /** Pages (4 KiB units) of the URL held now, valid for the newest image opened. */
  units: number;
}

/** What a follower's revalidation found. */
export type FollowResult =
  | ({ unchanged: true } & FollowTraffic)
  | ({
      unchanged: false;
      /** The newest image, open; the caller closes the one it replaces. */
      handle: ArchiveHandle;
      etag: string | null;
      /** Whether the pages read before were kept (the server listed what changed). */
      kept: boolean;
      size: number;
    } & FollowTraffic);

/** Why a source's place on the wall-clock axis may be wrong (`read::align::Doubt`). */
export interface AlignmentDoubt {
  /** "no_wall_offset", "clock_steps", "no_rows", "no_overlap" or "observations_cut". */
  kind: string;
  /** The sentence to show, written by the engine. */
  words: string;
}

/** Where one source lands on the shared wall-clock axis (`read::align::Alignment`). */
export interface Alignment {
  /** Added to the source's ts to get wall-clock ns. */
  offset_ns: bigint;
  /** The compared stream's span on the wall-clock axis; null when it has no rows. */
  wall_from: bigint | null;
  wall_to: bigint | null;
  doubts: AlignmentDoubt[];
}

/** One source of an alignment: an open archive, a source of it, and its compared stream's span (its own ts). */
export interface AlignItem {
  handle: ArchiveHandle;
  source: number;
  span: [bigint, bigint] | null;
}

/** Window B on window A's axis, bucket by bucket, and A − B (`read::shift`). */
export interface PairedShift {
  ts: BigInt64Array;
  a_min: Float64Array;
  a_max: Float64Array;
  b_min: Float64Array;
  b_max: Float64Array;
  d_min: Float64Array;
  d_max: Float64Array;
}

/** One side of a time-shift pairing: an envelope's points and one column's min and max. */
export interface ShiftSide {
  ts: BigInt64Array | bigint[];
  min: Float64Array;
  max: Float64Array;
}

/** A file judged by its first bytes, as an open judges it before reading anything else. */
export interface Sniffed {
  /** An archive this build reads. */
  readable: boolean;
  /** Stamped as a dendro archive (perhaps of a schema this build does not read). */
  archive: boolean;
  /** The verdict in words: "a dendro archive, schema version 5", "not a dendro archive: ...". */
  text: string;
}

/** What the engine holds now (`Engine.stats`): closing an archive gives its share back. */
export interface EngineStats {
  /** Archives open in the engine. */
  archives: number;
  /** Decoded segments in the shared cache, their bytes, and the cache's budget. */
  cacheEntries: number;
  cacheBytes: number;
  cacheBudget: number;
}

/** The engine: a worker that holds any number of open archives. */
export interface Engine {
  /**
   * Aligns sources of any open archives on one wall-clock axis, from each
   * one's clock observations, with the doubts about each in words.
   */
  align(items: AlignItem[]): Promise<Alignment[]>;
  /**
   * Pairs window B (`b`, its own ts; `b.ts + shift` lands on A's axis)
   * with window A (`a`, window [from, to]) in `buckets` equal buckets,
   * and computes A − B: exact where both have a value, NaN where either
   * has none.
   */
  pairShift(from: bigint, to: bigint, buckets: number, a: ShiftSide, b: ShiftSide, shift: bigint): Promise<PairedShift>;
  /**
   * Classifies files by their first bytes (give at least the first 100 of
   * each; the buffers are transferred): what `open` would say of each
   * before reading more. Nothing is opened.
   */
  sniff(headers: ArrayBuffer[]): Promise<Sniffed[]>;
  /** What the engine holds now. */
  stats(): Promise<EngineStats>;
  /** Takes ownership of the buffer (it is transferred to the worker). */
  open(bytes: ArrayBuffer, name: string): Promise<ArchiveHandle>;
  /** Reads a File (or Blob) in place: nothing is copied up front, and any size opens. */
  openFile(file: Blob, name: string): Promise<ArchiveHandle>;
  /**
   * Reads a URL in place with HTTP Range requests, when its server answers
   * them (206) and it is at least `minLazyBytes` long (default 0);
   * otherwise resolves null, and the caller downloads it whole.
   */
  openUrl(url: string, name: string, opts?: { minLazyBytes?: number }): Promise<ArchiveHandle | null>;
  /**
   * Follows a URL a writer is appending to (served by `dendro serve`):
   * revalidates it against `previous` (the image the caller has, null at
   * first) and opens the newer image when there is one. Pages read before
   * are kept where the server says they did not change, and sealed
   * segments decoded before are not decoded again.
   */
  follow(url: string, name: string, previous: ArchiveHandle | null): Promise<FollowResult>;
  terminate(): void;
}

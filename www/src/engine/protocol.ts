// The messages between the engine client (page side) and the engine
// worker. One request, one response, matched by id. Typed arrays in a
// response travel as transferables: the worker gives up its copy.

import type { PackedDescription } from "./packing";
import type {
  CallerRow,
  DocumentRevision,
  DecodedBatch,
  EngineError,
  FollowTraffic,
  Heatmap,
  HeatmapRequest,
  LazyStats,
  LiveTail,
  RangeEnvelope,
  RegionRequest,
  RegionStats,
  StreamSchema,
  VerifyReport,
} from "./types";

/** Per method of an open archive: its arguments and its answer. */
export interface Calls {
  /** Segments as columns (packing.ts); the client rebuilds the Description. */
  describe: { args: []; result: PackedDescription };
  schema: { args: [source: number, stream: string]; result: StreamSchema };
  readSegment: {
    args: [source: number, stream: string, seq: number, columns: string[] | null];
    result: DecodedBatch;
  };
  readRange: {
    args: [
      source: number,
      stream: string,
      from: bigint,
      to: bigint,
      columns: string[] | null,
      maxPoints: number | null,
      rates: string[] | null,
      /** Whether to post a preview (a partial response) before the exact answer. */
      preview?: boolean,
    ];
    result: RangeEnvelope;
  };
  /** readRange's preview alone (footer statistics, nothing decoded); null where it has none. */
  previewRange: {
    args: [source: number, stream: string, from: bigint, to: bigint, columns: string[] | null, maxPoints: number, rates: string[] | null];
    result: RangeEnvelope | null;
  };
  /**
   * Fetches ahead what a preview and read of the window will read, in few
   * batches, for an archive read in place (nothing for one in memory).
   */
  prefetch: { args: [source: number, stream: string, from: bigint, to: bigint]; result: null };
  /**
   * A first description from the catalog's small trees, for an archive
   * read in place with at least minSegments segments; null otherwise.
   */
  outline: { args: [minSegments: number]; result: PackedDescription | null };
  liveTail: { args: [source: number, stream: string]; result: LiveTail };
  callerIndex: { args: [source: number, stream: string, seq: number]; result: Uint8Array | null };
  callerRows: { args: [source: number, name: string, from: bigint, to: bigint]; result: CallerRow[] };
  documentHistory: { args: [kind: string, name: string]; result: DocumentRevision[] };
  verify: { args: []; result: VerifyReport };
  regionStats: { args: [request: RegionRequest]; result: RegionStats };
  heatmap: { args: [request: HeatmapRequest]; result: Heatmap };
  /** Traffic of an archive read in place; null for one held in memory. */
  lazyStats: { args: []; result: LazyStats | null };
}

export type Method = keyof Calls;

export type CallRequest = {
  [M in Method]: { id: number; op: "call"; handle: number; method: M; args: Calls[M]["args"] };
}[Method];

export type Request =
  | { id: number; op: "open"; name: string; bytes: ArrayBuffer }
  /** Reads the file in place, a range at a time (the File is a reference, not a copy). */
  | { id: number; op: "openFile"; name: string; file: Blob }
  /**
   * Reads the URL in place with Range requests when the server answers
   * them and the file is at least `minLazyBytes`; the answer is then the
   * handle, else null (the caller downloads the file whole).
   */
  | { id: number; op: "openUrl"; name: string; url: string; minLazyBytes: number }
  /**
   * The newest image of a URL being written (dendro serve), read in place
   * through a page cache that outlives images; `previous` is the handle of
   * the image the follower has (null at first). Answers a FollowAnswer.
   */
  | { id: number; op: "openFollow"; name: string; url: string; previous: number | null }
  | { id: number; op: "close"; handle: number }
  /** Aligns sources of open archives on one wall-clock axis (`alignSources`); `from > to` for a stream without rows. */
  | { id: number; op: "align"; items: { handle: number; source: number; from: bigint; to: bigint }[] }
  /** Window B on window A's axis and A − B (`pairShift`). */
  | {
      id: number;
      op: "pairShift";
      from: bigint;
      to: bigint;
      buckets: number;
      a: { ts: BigInt64Array; min: Float64Array; max: Float64Array };
      b: { ts: BigInt64Array; min: Float64Array; max: Float64Array };
      shift: bigint;
    }
  /** Classifies files by their first bytes (each at least 100 of them): answers a Sniffed per header. */
  | { id: number; op: "sniff"; headers: ArrayBuffer[] }
  /** What the engine holds now: answers EngineStats. */
  | { id: number; op: "stats" }
  /**
   * `cacheBytes`: the decoded-segment cache's budget. `decoder`: false
   * decodes inside this worker's own instance instead of a decoder worker.
   */
  | { id: number; op: "config"; cacheBytes?: number; decoder?: boolean }
  /** Makes the module trap, as a hostile segment would: tests the recovery. */
  | { id: number; op: "crash"; what: string }
  /**
   * Test-only: a barrier. The worker runs requests one at a time, so those
   * sent after a hold wait behind it, exactly as behind a long decode,
   * until a `release` with the same id arrives; then the hold answers null.
   * The page tests send it straight to the worker with id 0, which no
   * client request uses.
   */
  | { id: number; op: "hold" }
  /** Makes the decoder's module trap, as a hostile segment would: tests that archives survive. */
  | { id: number; op: "crashDecoder"; what: string }
  | CallRequest;

/**
 * The requests `ids` are no longer wanted: any of them still queued in the
 * worker is answered "Cancelled" without running. One already running
 * runs to its end (a decode cannot be interrupted). No answer of its own.
 */
export type Cancel = { op: "cancel"; ids: number[] };

/** Test-only: lets the hold with this id finish (at once if it has not started). No answer of its own. */
export type Release = { op: "release"; id: number };

/** The answer to openFollow, with the URL's traffic so far (every image together). */
export type FollowAnswer =
  | ({ unchanged: true } & FollowTraffic)
  | ({ unchanged: false; handle: number; etag: string | null; kept: boolean; size: number } & FollowTraffic);

/** What the client sends the worker. */
export type ToWorker = Request | Cancel | Release;

export type Response =
  /**
   * For "open", "openFile" and "openUrl", `value` is the new handle's id
   * (null: see openUrl). `partial`: not the answer but a first one (a
   * readRange's preview); the answer follows under the same id.
   */
  | { id: number; ok: true; value: unknown; partial?: true }
  /**
   * `fatal`: the WebAssembly instance trapped and is unusable; the client
   * must replace the worker.
   */
  | { id: number; ok: false; error: EngineError; fatal?: boolean };

/** Sent once, when the worker has loaded the module (or failed to). */
export type Hello = { hello: true; ok: true } | { hello: true; ok: false; error: EngineError };

export type WorkerMessage = Response | Hello;

// The engine worker: the dendro reader compiled to wasm32 (www/pkg/, built
// by scripts/build-wasm.sh) answering the client's requests. Archives stay
// in wasm memory, one handle id each; decoded segments are cached inside
// the module (one byte-bounded LRU for every open archive).
//
// A trap (a panic aborts in wasm32) poisons the instance: the worker then
// answers "Crashed", naming the segment being decoded, and the client
// replaces it with a fresh worker.
//
// Segments are decoded in a second instance of the module, in a decoder
// worker that holds no archive (decoder.ts): this worker reads a segment's
// bytes out of its archive and transfers them there, and takes the rows
// back. A trap in the Parquet or Arrow crates then costs only the decoder,
// which is replaced; the request fails with "Crashed" naming the segment,
// and every archive here stays open. Footers (schema, statistics) and
// verify are still read here. Where a decoder cannot start at all, this
// worker decodes in its own instance, as it did before.
//
// Requests run one at a time, in the order they came. Between two, the
// worker lets every message already waiting be delivered first, so a
// "cancel" sent while a long request ran is seen before the requests
// queued behind it start: those are answered "Cancelled" without running.

import init, * as module from "../../pkg/dendro.js";
import { Archive, Prefetch, alignSources, cacheStats, decodingNow, pairShift, sniffHeader, warmUpArchive, setCacheBytes, setInPlacePayloads, setWalkHints } from "../../pkg/dendro.js";
import { type Offer, askEnvelope, offerOf } from "./accelerator";
import { ERROR_KINDS, REFUSAL_DETAILS } from "./contract";
import type { PackedDescription } from "./packing";
import { type BatchSource, BlobSource, FollowSource, HttpSource, PageCache, fetchPlanned, probeFollow, probeUrl } from "./sources";
import { type DecoderHello, type DecoderReply, type DecoderRequest, type Packed, transferables } from "./decoder-protocol";
import type { Calls, FollowAnswer, Method, Request, Response, ToWorker, WorkerMessage } from "./protocol";
import type { EngineError, EngineErrorKind, EngineStats, Heatmap, RefusalDetail, RegionStats, Sniffed } from "./types";

/**
 * Set only by benches/browser/in-place.mjs (`self.__dendroTrace = true`, prepended
 * to this script): when each step of an open happened, as absolute times
 * (`performance.timeOrigin + performance.now()`, comparable with the page's),
 * read back through DevTools as `self.__dendroTraceLog`. The page never sets it.
 */
const traceLog: { what: string; at: number; [k: string]: number | string }[] | null =
  (self as { __dendroTrace?: boolean }).__dendroTrace === true ? [] : null;
(self as { __dendroTraceLog?: unknown }).__dendroTraceLog = traceLog;
function mark(what: string, extra: Record<string, number | string> = {}): void {
  traceLog?.push({ what, at: performance.timeOrigin + performance.now(), ...extra });
}
mark("script");

/** The module's test hooks, present only in a build with `--test-hooks`. */
const hooks = module as unknown as { __crashForTests?: (what: string) => void };

interface WorkerScope {
  postMessage(message: WorkerMessage, transfer: Transferable[]): void;
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
}
const scope = self as unknown as WorkerScope;

const archives = new Map<number, Archive>();
let nextHandle = 1;
/** Set after a trap: the instance must not be called again. */
let crashed: EngineError | null = null;

function engineError(kind: EngineErrorKind, message: string): EngineError {
  return { kind, message };
}

/** A whole number in [0, 2^32), or undefined. */
function u32(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 0xffffffff ? v : undefined;
}

/**
 * An exception from the module (a JS Error with `kind`, and for a refused
 * file `detail`, `application_id`, `version`, `supported_versions`) as
 * plain data.
 */
function asEngineError(e: unknown): EngineError {
  if (e instanceof Error) {
    const x = e as Error & { kind?: unknown; detail?: unknown; application_id?: unknown; version?: unknown; supported_versions?: unknown };
    if (typeof x.kind === "string" && (ERROR_KINDS as readonly string[]).includes(x.kind)) {
      const out = engineError(x.kind as EngineErrorKind, e.message);
      if (typeof x.detail === "string" && (REFUSAL_DETAILS as readonly string[]).includes(x.detail)) out.detail = x.detail as RefusalDetail;
      const id = u32(x.application_id);
      if (id !== undefined) out.application_id = id;
      const version = u32(x.version);
      if (version !== undefined) out.version = version;
      if (Array.isArray(x.supported_versions)) {
        const supported = x.supported_versions.map(u32).filter((v): v is number => v !== undefined);
        if (supported.length > 0) out.supported_versions = supported;
      }
      return out;
    }
    return engineError("Internal", `${e.name}: ${e.message}`);
  }
  return engineError("Internal", String(e));
}

function archive(handle: number): Archive {
  const a = archives.get(handle);
  if (!a) throw Object.assign(new Error(`archive handle ${handle} is not open in the engine`), { kind: "NotFound" });
  return a;
}

/** Methods that need the archive's byte source as well, run by callOn itself. */
type SourceMethod = "prefetch" | "outline";

/** What each other method of an open archive runs: one typed entry per method of `Calls`. */
const methods: { [M in Exclude<Method, SourceMethod>]: (a: Archive, ...args: Calls[M]["args"]) => Calls[M]["result"] } = {
  describe: (a) => {
    const packed = a.describePacked() as PackedDescription;
    mark("described", { fetches: (a.lazyStats() as { fetches?: number } | null)?.fetches ?? 0 });
    return packed;
  },
  schema: (a, source, stream) => a.schema(source, stream),
  readSegment: (a, source, stream, seq, columns) => a.readSegment(source, stream, seq, columns ?? undefined),
  readRange: (a, source, stream, from, to, columns, maxPoints, rates) =>
    a.readRange(source, stream, from, to, columns ?? undefined, maxPoints ?? undefined, rates ?? undefined),
  previewRange: (a, source, stream, from, to, columns, maxPoints, rates) =>
    (a.previewRange(source, stream, from, to, columns ?? undefined, maxPoints, rates ?? undefined) as Calls["previewRange"]["result"] | undefined) ?? null,
  liveTail: (a, source, stream) => a.liveTail(source, stream),
  callerIndex: (a, source, stream, seq) => a.callerIndex(source, stream, seq) ?? null,
  callerRows: (a, source, name, from, to) => a.callerRows(source, name, from, to),
  documentHistory: (a, kind, name) => a.documentHistory(kind, name),
  verify: (a) => a.verify(),
  regionStats: (a, r) => a.regionStats(r.source, r.stream, r.from, r.to, r.columns ?? undefined) as RegionStats,
  heatmap: (a, r) => a.heatmap(r.source, r.stream, r.column, r.from, r.to, r.pixels) as Heatmap,
  lazyStats: (a) => a.lazyStats() as Calls["lazyStats"]["result"],
};

/** The first bytes asked of a followed URL: the header and the first pages of the catalog, in one request. */
const PROBE_BYTES = 16 << 10;

/**
 * The first bytes of an archive opened in place, read in one read before
 * SQLite opens it: the header, the schema and the root pages of every
 * table, which an auto-vacuum file keeps right after the schema (pages 3
 * to 12 of an archive), so the catalog prefetch starts a level down.
 */
const OPEN_HEAD_BYTES = 64 << 10;

/**
 * Set only by benches/browser/in-place.mjs (`--open-as-before`), to measure the
 * open as it was before the head read and the warm-up: no head read, the
 * 16 KiB probe, no warm-up, the decoder started at the open. The page
 * never sets it.
 */
const openAsBefore = (self as { __dendroOpenAsBefore?: boolean }).__dendroOpenAsBefore === true;
const headBytes = openAsBefore ? 0 : OPEN_HEAD_BYTES;

/** An archive just opened, kept under a new handle. */
function keep(a: Archive): number {
  if (useDecoder && openAsBefore) decoder.warm();
  const handle = nextHandle++;
  archives.set(handle, a);
  return handle;
}

/**
 * Set only by benches/browser/in-place.mjs, which prepends it to this script to
 * measure the in-place reader as it was before the catalog prefetch and
 * the walk hints (its "before" figures). The page never sets it.
 */
const baseline = (self as { __dendroLazyBaseline?: boolean }).__dendroLazyBaseline === true;

/**
 * Opens `source` in place. The catalog's pages come in later, with a few
 * batched reads each (see readyCatalog): the small trees an outline reads
 * when one is asked for, the whole listing before any other call.
 */
async function openInPlace(source: BatchSource, name: string, http: boolean): Promise<number> {
  const a = Archive.openLazy(source, name, http, headBytes);
  mark("openLazy", { fetches: (a.lazyStats() as { fetches?: number } | null)?.fetches ?? 0 });
  if (baseline || noRanges) setInPlacePayloads(false);
  if (baseline) {
    setWalkHints(false);
    return keep(a);
  }
  const handle = keep(a);
  inPlace.set(handle, source);
  unlisted.add(handle);
  return handle;
}

/** Archives read in place whose catalog listing has not been fetched ahead yet. */
const unlisted = new Set<number>();

/**
 * Before a call that lists the catalog (any call but an outline), brings
 * the catalog's pages in with a few batched reads, so that SQLite does
 * not read them one synchronous miss at a time. Once per archive; a
 * failure is left for the listing to report in its words.
 */
async function readyCatalog(a: Archive, handle: number): Promise<void> {
  const source = inPlace.get(handle);
  if (!source || !unlisted.delete(handle)) return;
  await fetchPlanned(a.prefetchCatalog(), source, { fetched: (round) => mark("prefetch", round) });
}

/**
 * outline: the pages the outline reads (the sources table, the primary
 * key's index on segments, each stream's first row) fetched in a few
 * batches, then the outline itself, or null where a full description is
 * as quick.
 */
async function outlineOf(a: Archive, handle: number, minSegments: number): Promise<Calls["outline"]["result"]> {
  const source = inPlace.get(handle);
  if (!source || noOutline) return null;
  await fetchPlanned(a.prefetchOutline(minSegments), source, { fetched: (round) => mark("outline prefetch", round) });
  const outline = a.describeOutline(minSegments) as Calls["outline"]["result"];
  mark("outlined", { fetches: (a.lazyStats() as { fetches?: number } | null)?.fetches ?? 0 });
  return outline;
}

/**
 * Set only by benches/browser/in-place.mjs (`--no-outline`), to measure the open
 * as it was before outlines: none is given, so the page waits for the
 * full listing. The page never sets it.
 */
const noOutline = (self as { __dendroNoOutline?: boolean }).__dendroNoOutline === true;

/** The sources of archives read in place, by handle: footer prefetches read through them. */
const inPlace = new Map<number, BatchSource>();

/**
 * Set only by benches/browser/in-place.mjs (`--no-ranges`), to measure payloads
 * read through SQLite as before they were read by range and their footers
 * fetched ahead. The page never sets it.
 */
const noRanges = (self as { __dendroNoRanges?: boolean }).__dendroNoRanges === true;

/**
 * Before a readRange of an archive read in place, the footers it will read
 * (the last pages of those segments, and the pointer-map pages proving
 * them) are fetched in a few batches, so that each costs no read of its
 * own: first the table's pages leading to those segments' rows, where they
 * are not cached, then the footers (see Prefetch::window in
 * src/read/prefetch.rs). A failure to fetch is not reported: the read
 * itself reports it in its words.
 */
async function prefetchFooters(a: Archive, source: BatchSource, args: Calls["readRange"]["args"]): Promise<void> {
  const [src, stream, from, to, columns, maxPoints, rates, preview] = args;
  const plan = a.prefetchWindow(src, stream, from, to, columns ?? undefined, maxPoints ?? undefined, rates ?? undefined, preview === true);
  await fetchPlanned(plan, source, {
    planned: (round) => markRead("footer plan", a, { ranges: round.ranges, bytes: round.bytes }),
    fetched: () => markRead("footers fetched", a),
  });
}

/**
 * prefetch: what the first picture of the window takes, fetched in few
 * batches: the sampled picture's footers (a bounded number, whatever the
 * window holds), or, without the sample, every footer and the live tail a
 * preview and read take. It runs in the queue like any request: run
 * beside it, a schema answered meanwhile held up the reads' arrival, and
 * the first plot came no sooner.
 */
async function prefetchWindow(a: Archive, handle: number, args: Calls["prefetch"]["args"]): Promise<null> {
  const source = inPlace.get(handle);
  if (!source || noRanges) return null;
  const [src, stream, from, to] = args;
  if (!noSample) {
    const plan = a.prefetchWindow(src, stream, from, to, undefined, SAMPLE_SEGMENTS, undefined, true, SAMPLE_SEGMENTS);
    await fetchPlanned(plan, source, { fetched: () => markRead("sample fetched", a) });
    return null;
  }
  // As a plot's read with a preview asks: every footer of the window (how
  // many points it asks for does not change which).
  await prefetchFooters(a, source, [src, stream, from, to, null, 1, null, true]);
  return null;
}

/**
 * Set only by benches/browser/first-plot.mjs and in-place.mjs (`--no-sample`),
 * to measure the first plot as it was before the sampled picture. The page
 * never sets it.
 */
const noSample = (self as { __dendroNoSample?: boolean }).__dendroNoSample === true;

/**
 * How many of a window's segments the first, sampled picture reads, and
 * its buckets: a bounded number of footers whatever the window holds.
 */
const SAMPLE_SEGMENTS = 64;

/**
 * The sampled picture of a readRange's window (`previewRange` with a
 * sample, contract.ts `WindowSample`): the footers of SAMPLE_SEGMENTS
 * segments spread through the window, listed from the time index and
 * fetched in a bounded number of reads, drawn in as many coarse buckets
 * and marked `sample`. Null when the window's segments are all in the
 * sample (the preview of every footer is as quick then), or it has too few
 * rows for buckets.
 */
async function sampleOf(a: Archive, source: BatchSource, args: Calls["readRange"]["args"]): Promise<Calls["readRange"]["result"] | null> {
  const [src, stream, from, to, columns, , rates] = args;
  const plan = a.prefetchWindow(src, stream, from, to, columns ?? undefined, SAMPLE_SEGMENTS, rates ?? undefined, true, SAMPLE_SEGMENTS);
  await fetchPlanned(plan, source, { fetched: () => markRead("sample fetched", a) });
  const sample = a.previewRange(src, stream, from, to, columns ?? undefined, SAMPLE_SEGMENTS, rates ?? undefined, SAMPLE_SEGMENTS) as
    | Calls["readRange"]["result"]
    | undefined;
  markRead("sampled", a);
  if (!sample || sample.segments_left_out === 0) return null;
  return { ...sample, sample: true };
}

/** A trace mark with the in-place reader's reads so far (fetches, of them primed, bytes, cache misses). */
function markRead(what: string, a: Archive, extra: Record<string, number | string> = {}): void {
  if (!traceLog) return;
  const s = a.lazyStats() as { fetches?: number; primed?: number; fetchedBytes?: number; misses?: number } | null;
  mark(what, { fetches: s?.fetches ?? 0, primed: s?.primed ?? 0, bytes: s?.fetchedBytes ?? 0, misses: s?.misses ?? 0, ...extra });
}

/**
 * The first request of each openUrl, sent as its message arrives: a page
 * opened at `?url=` asks before the module has compiled and warmed up,
 * and the probe is only a fetch, so it need not wait for them.
 */
const earlyProbes = new Map<number, ReturnType<typeof probeUrl>>();

function probeEarly(req: Extract<Request, { op: "openUrl" }>): void {
  const probe = probeUrl(req.url, Math.max(PROBE_BYTES, headBytes), req.minLazyBytes);
  // A request cancelled before it runs leaves its probe unread.
  probe.catch(() => {});
  earlyProbes.set(req.id, probe);
}

/** openUrl: in place when the server answers ranges and the file is large enough, else null. */
async function openUrl(req: Extract<Request, { op: "openUrl" }>): Promise<number | null> {
  const early = earlyProbes.get(req.id);
  earlyProbes.delete(req.id);
  const probe = await (early ?? probeUrl(req.url, Math.max(PROBE_BYTES, headBytes), req.minLazyBytes));
  if (!probe) return null;
  const handle = await openInPlace(new HttpSource(req.url, probe), req.name, true);
  const offered = offerOf(req.url, probe.etag, probe.envelope ?? null);
  if ("offer" in offered && !noAccelerator) offers.set(handle, offered.offer);
  return handle;
}

/** Archives whose server computes their envelopes (accelerator.ts), by handle. */
const offers = new Map<number, Offer>();

/**
 * Set only by benches/browser/first-plot.mjs (`--no-accelerator`), to measure
 * the range reads a page makes of the same server without the
 * accelerator. The page never sets it.
 */
const noAccelerator = (self as { __dendroNoAccelerator?: boolean }).__dendroNoAccelerator === true;

/**
 * A readRange asked of the server that offers envelopes: the answer marked
 * as the server's, or null with why not (the read then goes on by range,
 * and says so). A server that answers another version is not asked again.
 */
async function accelerated(handle: number, args: Calls["readRange"]["args"]): Promise<Calls["readRange"]["result"] | string | null> {
  const offer = offers.get(handle);
  const [source, stream, from, to, columns, maxPoints, rates] = args;
  if (!offer || maxPoints === null) return null;
  const asked = await askEnvelope(offer, { source, stream, from, to, columns, maxPoints, rates: rates && rates.length > 0 ? rates : null });
  markRead("accelerator", archive(handle), "why" in asked ? { why: asked.why } : { bytes: asked.bytes });
  if ("why" in asked) {
    if (asked.why.includes("another version")) offers.delete(handle);
    return asked.why;
  }
  return { ...asked.envelope, via: "server" };
}

/**
 * Followers' page caches, by the handle of the image each follower has:
 * a cache outlives the images read through it, and two followers of one
 * URL (two viewers on a page) each have their own.
 */
const followed = new Map<number, PageCache>();

/**
 * openFollow: the newest image of a URL a writer is appending to, or
 * `unchanged` when the server says it holds nothing newer than the image
 * the follower has. The new archive shares the previous one's decoded
 * segments (same seq and catalog identity: the same sealed segment).
 */
async function openFollow(req: Extract<Request, { op: "openFollow" }>): Promise<FollowAnswer> {
  // A first open (no previous image here) starts a cache of its own.
  const previous = req.previous !== null ? archives.get(req.previous) : undefined;
  const cache = (req.previous !== null && previous ? followed.get(req.previous) : undefined) ?? new PageCache();
  const found = await probeFollow(req.url, PROBE_BYTES, cache);
  if (found.unchanged) return { unchanged: true, netBytes: cache.netBytes, requests: cache.requests, units: cache.count };
  const moved = cache.moveTo(found.probe.etag, found.probe.size, found.changed);
  const source = new FollowSource(req.url, found.probe, cache);
  // The units the writer changed that the last image read, in one batch.
  await source.prefill(moved.refill);
  const a = Archive.openLazy(source, req.name, true);
  if (previous) a.shareCache(previous);
  const handle = keep(a);
  followed.set(handle, cache);
  return { unchanged: false, handle, etag: found.probe.etag, kept: moved.kept, size: found.probe.size, netBytes: cache.netBytes, requests: cache.requests, units: cache.count };
}

function call<M extends Exclude<Method, SourceMethod>>(a: Archive, method: M, args: Calls[M]["args"]): Calls[M]["result"] {
  const run = methods[method] as ((a: Archive, ...args: Calls[M]["args"]) => Calls[M]["result"]) | undefined;
  if (!run) throw Object.assign(new Error(`unknown engine method ${String(method)}`), { kind: "Internal" });
  return run(a, ...args);
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** The decoder worker could not start: decode in this instance instead. */
class DecoderUnavailable extends Error {}

/**
 * The decoder worker: started on first use, replaced after a trap. Calls
 * resolve with the decoder's reply; a trap or a dead worker is a reply
 * with `trapped` set.
 */
class Decoder {
  private worker: Worker | null = null;
  private started = false;
  /** Set when a decoder failed before it loaded: none will. */
  unavailable = false;
  private nextId = 1;
  private readonly pending = new Map<number, (reply: DecoderReply | null) => void>();

  private start(): Worker {
    const worker = new Worker(new URL("./decoder.js", import.meta.url), { type: "module", name: "dendro-decoder" });
    this.worker = worker;
    this.started = false;
    worker.onmessage = (e: MessageEvent<DecoderReply | DecoderHello>) => {
      if (worker !== this.worker) return;
      const msg = e.data;
      if ("hello" in msg) {
        if (msg.ok) this.started = true;
        else this.lose(worker, msg.cause ?? "the decoder could not load", true);
        return;
      }
      const resolve = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      resolve?.(msg);
      if (!msg.ok && msg.trapped) this.lose(worker, msg.cause, false);
    };
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      this.lose(worker, e.message || "the decoder's worker failed", !this.started);
    };
    return worker;
  }

  /** The decoder is gone: what it had is answered, the next call starts another. */
  private lose(worker: Worker, cause: string, neverStarted: boolean): void {
    if (worker !== this.worker) return;
    worker.terminate();
    this.worker = null;
    if (neverStarted) this.unavailable = true;
    for (const [id, resolve] of this.pending) {
      this.pending.delete(id);
      resolve(neverStarted ? null : { id, ok: false, trapped: true, cause });
    }
  }

  /** Starts the decoder ahead of its first segment, so that one does not wait for it to load. */
  warm(): void {
    if (!this.unavailable && !this.worker) this.start();
  }

  /** Resolves with the decoder's reply, or rejects with DecoderUnavailable. */
  async call(req: DistributiveOmit<DecoderRequest, "id">, transfer: Transferable[] = []): Promise<DecoderReply> {
    if (this.unavailable) throw new DecoderUnavailable();
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    const reply = await new Promise<DecoderReply | null>((resolve) => {
      this.pending.set(id, resolve);
      worker.postMessage({ ...req, id } as DecoderRequest, transfer);
    });
    if (reply === null) throw new DecoderUnavailable();
    return reply;
  }
}

const decoder = new Decoder();
/** Whether to decode in the decoder worker (config can turn it off). */
let useDecoder = true;
/**
 * How a window's segments go to the decoder: in batches of up to this many
 * segments or bytes (one message each way per batch, not per segment), with
 * up to `IN_FLIGHT` batches out at once, so reading the next batch out of
 * the archive overlaps decoding this one.
 */
const BATCH_SEGMENTS = 16;
const BATCH_BYTES = 4 << 20;
const IN_FLIGHT = 2;

function decoderCrash(what: string, cause: string): Error {
  return Object.assign(
    new Error(`The decoder stopped while decoding ${what} (${cause}); it has been restarted and the archive is still open.`),
    { kind: "Crashed" },
  );
}

interface Need {
  index: number;
  what: string;
  bytes: Uint8Array;
}

/** The request running was cancelled: a readRange stops at its next batch. */
let runningCancelled = false;

function cancelledNow(): Error {
  return Object.assign(new Error("The request was cancelled while it ran."), { kind: "Cancelled" });
}

/**
 * readRange, decoding in the decoder worker: see RangeJob in src/wasm/mod.rs.
 * With `onPreview`, the job's preview from footer statistics (listed once
 * with the exact read) is handed over before any segment is decoded. A
 * cancel of the running request stops it between batches.
 */
async function readRangeVia(
  a: Archive,
  args: Calls["readRange"]["args"],
  onPreview?: (preview: Calls["readRange"]["result"]) => void,
): Promise<Calls["readRange"]["result"]> {
  const [source, stream, from, to, columnsAsked, maxPoints, rates] = args;
  const job = a.beginRange(source, stream, from, to, columnsAsked ?? undefined, maxPoints ?? undefined, rates ?? undefined);
  markRead("range begun", a);
  try {
    const columns = job.columns ?? null;
    const inflight: { needs: Need[]; reply: Promise<DecoderReply> }[] = [];
    let more = true;
    const fill = () => {
      while (more && inflight.length < IN_FLIGHT) {
        const needs: Need[] = [];
        let bytes = 0;
        while (needs.length < BATCH_SEGMENTS && bytes < BATCH_BYTES) {
          const need = job.next() as Need | undefined;
          if (!need) {
            more = false;
            break;
          }
          needs.push(need);
          bytes += need.bytes.byteLength;
        }
        if (needs.length === 0) break;
        const segments = needs.map((n) => n.bytes.buffer as ArrayBuffer);
        const reply = decoder.call({ op: "packed", segments, columns }, segments);
        // Settled below in order; a failure ahead of it must not leave it unhandled.
        reply.catch(() => {});
        inflight.push({ needs, reply });
      }
    };
    // Held in memory, segments are handed out at once and the preview's
    // footers are read while the decoder works; read in place, handing a
    // segment out reads it from the source, so the preview goes first.
    if (a.mode === "memory") fill();
    if (onPreview) {
      const preview = job.preview() as Calls["readRange"]["result"] | undefined;
      if (preview) onPreview(preview);
      markRead("preview", a);
    }
    fill();
    for (let head = inflight.shift(); head; head = inflight.shift()) {
      const reply = await head.reply;
      if (runningCancelled) throw cancelledNow();
      if (!reply.ok) {
        const what = head.needs[reply.at ?? 0]?.what ?? "a segment";
        throw reply.trapped ? decoderCrash(what, reply.cause) : new Error(reply.cause);
      }
      const results = reply.value as Packed[];
      head.needs.forEach((need, i) => {
        const r = results[i];
        if (!r) throw job.fail(need.index, "the decoder returned no answer for it");
        if (!r.ok) throw job.fail(need.index, r.cause);
        job.supply(need.index, r.batches);
      });
      fill();
    }
    const envelope = job.finish();
    markRead("range finished", a);
    return envelope;
  } finally {
    job.free();
  }
}

/** readSegment, decoding in the decoder worker. */
async function readSegmentVia(a: Archive, ...args: Calls["readSegment"]["args"]): Promise<Calls["readSegment"]["result"]> {
  const [source, stream, seq, columns] = args;
  const bytes = a.segmentBytes(source, stream, seq).buffer as ArrayBuffer;
  const what = a.describeSegment(source, stream, seq);
  const reply = await decoder.call({ op: "batch", bytes, columns }, [bytes]);
  if (reply.ok) return reply.value as Calls["readSegment"]["result"];
  if (reply.trapped) throw decoderCrash(what, reply.cause);
  throw a.segmentError(source, stream, seq, reply.cause);
}

/** A call on an open archive, decoding in the decoder worker where it can. */
async function callArchive(req: Extract<Request, { op: "call" }>): Promise<unknown> {
  try {
    return await callOn(archive(req.handle), req);
  } finally {
    // The decoder starts once the first call (the catalog's listing) is
    // answered, ahead of the first segment: started at the open, loading
    // its module competed with the listing for the cores.
    if (useDecoder) decoder.warm();
  }
}

/** Calls that read one window (or nothing) of an archive read in place, never the whole catalog's listing. */
const WINDOW_CALLS: ReadonlySet<string> = new Set(["lazyStats", "prefetch", "readRange", "schema"]);

async function callOn(a: Archive, req: Extract<Request, { op: "call" }>): Promise<unknown> {
  if (req.method === "outline") return outlineOf(a, req.handle, req.args[0]);
  // A window's calls list only the window, from the time index
  // (windowSegments in contract.ts): they never wait for the whole catalog.
  if (!WINDOW_CALLS.has(req.method)) await readyCatalog(a, req.handle);
  // Where the server computes envelopes, only the sample is worth fetching ahead.
  if (req.method === "prefetch") return offers.has(req.handle) && noSample ? null : prefetchWindow(a, req.handle, req.args);
  let declined: string | null = null;
  // Where the server offers envelopes, the answer says which path drew it.
  const offered = offers.has(req.handle);
  let sampled = false;
  if (req.method === "readRange") {
    // The server may take seconds over a large window: the sample, a
    // bounded number of reads, is drawn meanwhile.
    const source = inPlace.get(req.handle);
    if (offered && source && !noRanges && !noSample && req.args[7] === true) {
      const sample = await sampleOf(a, source, req.args);
      if (sample) reply({ id: req.id, ok: true, value: sample, partial: true });
      sampled = true;
    }
    const answer = await accelerated(req.handle, req.args);
    if (answer !== null && typeof answer !== "string") return answer;
    declined = answer;
    if (runningCancelled) throw cancelledNow();
  }
  const value = await readInBrowser(a, req, sampled);
  if (req.method === "readRange" && offered) {
    return { ...(value as Calls["readRange"]["result"]), via: "browser", ...(declined !== null ? { declined } : {}) };
  }
  return value;
}

/** A call answered by this engine: by range for an archive read in place, decoding in the decoder worker where it can. */
async function readInBrowser(a: Archive, req: Extract<Request, { op: "call" }>, sampled = false): Promise<unknown> {
  if (req.method === "outline" || req.method === "prefetch") throw new Error(`${req.method} is answered before`);
  const source = inPlace.get(req.handle);
  if (source && !noRanges && req.method === "readRange") {
    // First the sampled picture (a bounded number of reads), then every
    // footer the preview and the read take.
    if (req.args[7] === true && !noSample && !sampled) {
      const sample = await sampleOf(a, source, req.args);
      if (sample) reply({ id: req.id, ok: true, value: sample, partial: true });
    }
    await prefetchFooters(a, source, req.args);
  }
  if (source && !noRanges && req.method === "previewRange") await prefetchFooters(a, source, [...(req.args as Calls["previewRange"]["args"]), true]);
  // A preview asked for is posted once, ahead of the answer, under the request's id.
  let previewed = false;
  const onPreview =
    req.method === "readRange" && req.args[7] === true
      ? (value: Calls["readRange"]["result"]) => {
          previewed = true;
          reply({ id: req.id, ok: true, value, partial: true });
        }
      : undefined;
  if (useDecoder && (req.method === "readRange" || req.method === "readSegment")) {
    try {
      return await (req.method === "readRange" ? readRangeVia(a, req.args, onPreview) : readSegmentVia(a, ...req.args));
    } catch (e) {
      if (!(e instanceof DecoderUnavailable)) throw e;
    }
  }
  if (req.method === "readRange" && onPreview && !previewed) {
    const [src, stream, from, to, columns, maxPoints, rates] = req.args;
    const preview = a.previewRange(src, stream, from, to, columns ?? undefined, maxPoints ?? undefined, rates ?? undefined) as
      | Calls["readRange"]["result"]
      | undefined;
    if (preview) onPreview(preview);
  }
  return call(a, req.method, req.args);
}

/** Each source's clock observations, then one alignment of them all. */
async function alignAll(items: Extract<Request, { op: "align" }>["items"]): Promise<unknown> {
  const offsets: BigInt64Array[] = [];
  const cut = new Uint8Array(items.length);
  const spans = new BigInt64Array(items.length * 2);
  for (const [i, item] of items.entries()) {
    const a = archive(item.handle);
    await readyCatalog(a, item.handle);
    const input = a.clockInput(item.source) as { offsets: BigInt64Array; cut: boolean };
    offsets.push(input.offsets);
    cut[i] = input.cut ? 1 : 0;
    spans[2 * i] = item.from;
    spans[2 * i + 1] = item.to;
  }
  return alignSources(offsets, cut, spans);
}

function run(req: Request): unknown {
  switch (req.op) {
    case "open": {
      // Copied once, straight into SQLite's buffer (the engine refuses a
      // file too large for it first). The transferred file is then
      // detached at once rather than left for a garbage collection: until
      // then it would double the memory an open archive costs. The engine
      // sizes its decoded-segment cache by what is open.
      let a: Archive;
      try {
        a = Archive.open(new Uint8Array(req.bytes), req.name);
      } finally {
        release(req.bytes);
      }
      return keep(a);
    }
    case "openFile":
      return openInPlace(new BlobSource(req.file, req.name), req.name, false);
    case "openUrl":
      return openUrl(req);
    case "openFollow":
      return openFollow(req);
    case "close": {
      archives.get(req.handle)?.free();
      archives.delete(req.handle);
      offers.delete(req.handle);
      inPlace.delete(req.handle);
      unlisted.delete(req.handle);
      followed.delete(req.handle);
      return null;
    }
    case "align":
      return alignAll(req.items);
    case "pairShift":
      return pairShift(req.from, req.to, req.buckets, req.a.ts, req.a.min, req.a.max, req.b.ts, req.b.min, req.b.max, req.shift);
    case "sniff":
      return req.headers.map((b) => sniffHeader(new Uint8Array(b)) as Sniffed);
    case "stats": {
      const c = cacheStats() as { entries: number; bytes: number; budget: number };
      return { archives: archives.size, cacheEntries: c.entries, cacheBytes: c.bytes, cacheBudget: c.budget } satisfies EngineStats;
    }
    case "config":
      if (req.cacheBytes !== undefined) setCacheBytes(req.cacheBytes);
      if (req.decoder !== undefined) useDecoder = req.decoder;
      return null;
    case "crash":
      if (!hooks.__crashForTests) throw Object.assign(new Error("this engine was built without test hooks"), { kind: "Internal" });
      hooks.__crashForTests(req.what);
      return null;
    case "hold":
      // Occupied, as by a long decode, until the test releases it.
      if (released.delete(req.id)) return null;
      return new Promise<null>((resolve) => holds.set(req.id, () => resolve(null)));
    case "crashDecoder":
      return decoder.call({ op: "crash", what: req.what }).then((reply) => {
        if (!reply.ok && reply.trapped) throw decoderCrash(req.what, reply.cause);
        return null;
      });
    case "call":
      return callArchive(req);
  }
}

function reply(msg: Response): void {
  scope.postMessage(msg, msg.ok ? transferables(msg.value) : []);
  mark("replied");
}

const ready: Promise<EngineError | null> = init({ module_or_path: new URL("./dendro_bg.wasm", import.meta.url) }).then(
  () => null,
  (e: unknown) => engineError("Internal", `the engine could not load its WebAssembly module: ${asEngineError(e).message}`),
);

/** Set once the module has loaded or failed to. */
let loaded: { failed: EngineError | null } | null = null;

/**
 * Opens a small archive (laid down in memory by the engine) in place once,
 * through the path a dropped file takes: open, outline, catalog prefetch,
 * describe.
 * The module's code is compiled on first use, so without this the first
 * real open paid for compiling it, a hundred milliseconds and more of its
 * drop-to-overview; now that happens while the page waits for a file.
 * A failure here costs only that time, and is not reported.
 */
function warmUp(): void {
  try {
    const bytes = warmUpArchive();
    const source = { size: bytes.byteLength, read: (offset: number, length: number) => bytes.slice(offset, offset + length) };
    const a = Archive.openLazy(source, "the warm-up archive", false, OPEN_HEAD_BYTES);
    const drain = (plan: Prefetch) => {
      try {
        for (let next = plan.next(); next !== undefined; next = plan.next()) {
          for (let i = 0; i + 1 < next.length; i += 2) plan.fill(next[i]!, bytes.subarray(next[i]!, next[i]! + next[i + 1]!));
        }
      } finally {
        plan.free();
      }
    };
    try {
      drain(a.prefetchOutline(0));
      a.describeOutline(0);
      drain(a.prefetchCatalog());
      a.describePacked();
    } finally {
      a.free();
    }
  } catch {
    // Only the head start is lost.
  }
}

void ready.then((failed) => {
  mark("wasm ready");
  if (!failed && !openAsBefore) {
    warmUp();
    mark("warmed up");
  }
  loaded = { failed };
  scope.postMessage(failed ? { hello: true, ok: false, error: failed } : { hello: true, ok: true }, []);
  schedule();
});

/** Test-only holds running, by id, and releases that came before their hold started. */
const holds = new Map<number, () => void>();
const released = new Set<number>();

/** Requests not yet started, oldest first. */
const queue: Request[] = [];
/** Ids of queued requests the client has withdrawn. */
const cancelled = new Set<number>();
/** The newest id started: ids grow in sending order, so a cancel at or below it is late. */
let lastStarted = 0;
/**
 * Runs the next request as a message of its own: messages posted to this
 * worker before it (a "cancel" among them) are delivered first, since they
 * share one task source and are delivered in order.
 */
const turn = new MessageChannel();
let turnPending = false;
turn.port1.onmessage = () => {
  turnPending = false;
  void step();
};

function schedule(): void {
  if (loaded && !running && !turnPending && queue.length > 0) {
    turnPending = true;
    turn.port2.postMessage(null);
  }
}

/** Whether a request is running (it may wait for the decoder). */
let running = false;

/**
 * Calls that run only when no other request waits. verify reads every
 * segment of an archive (seconds, for a large one) in one call the worker
 * cannot interrupt; a plot, a zoom or a row table asked for meanwhile is
 * what a person is waiting for, so it goes first whenever it was sent
 * before verify started, whatever the order of sending.
 */
const BACKGROUND: ReadonlySet<string> = new Set(["verify"]);

/** The next request to run: the oldest one not in the background, else the oldest. */
function nextRequest(): Request | undefined {
  const urgent = queue.findIndex((r) => !(r.op === "call" && BACKGROUND.has(r.method)));
  return queue.splice(urgent >= 0 ? urgent : 0, 1)[0];
}

async function step(): Promise<void> {
  const req = nextRequest();
  if (!req) return;
  // A test's hold may carry id 0; ids of the client's own requests only grow.
  lastStarted = Math.max(lastStarted, req.id);
  running = true;
  const started = `start ${req.op === "call" ? req.method : req.op}`;
  const on = req.op === "call" ? archives.get(req.handle) : undefined;
  if (on) markRead(started, on);
  else mark(started);
  runningCancelled = false;
  if (cancelled.delete(req.id)) {
    earlyProbes.delete(req.id);
    reply({ id: req.id, ok: false, error: engineError("Cancelled", "The request was cancelled before it ran.") });
  } else {
    await handle(req);
  }
  running = false;
  schedule();
}

async function handle(req: Request): Promise<void> {
  const failed = loaded?.failed ?? null;
  if (failed) return reply({ id: req.id, ok: false, error: failed });
  if (crashed) return reply({ id: req.id, ok: false, error: crashed, fatal: true });
  try {
    reply({ id: req.id, ok: true, value: await run(req) });
  } catch (err) {
    if (err instanceof WebAssembly.RuntimeError) {
      let where: string | undefined;
      try {
        where = decodingNow();
      } catch {
        where = undefined;
      }
      crashed = engineError(
        "Crashed",
        `The engine stopped while decoding ${where ?? "an archive"} (${err.message}); it has been restarted and archives open in it must be opened again.`,
      );
      archives.clear();
      inPlace.clear();
      return reply({ id: req.id, ok: false, error: crashed, fatal: true });
    }
    reply({ id: req.id, ok: false, error: asEngineError(err) });
  }
}

scope.onmessage = (e: MessageEvent<ToWorker>) => {
  const msg = e.data;
  if (msg.op === "cancel") {
    for (const id of msg.ids) {
      if (id > lastStarted) cancelled.add(id);
      else if (id === lastStarted && running) runningCancelled = true;
    }
    return;
  }
  if (msg.op === "release") {
    const hold = holds.get(msg.id);
    holds.delete(msg.id);
    if (hold) hold();
    else released.add(msg.id);
    return;
  }
  if (msg.op === "openUrl") probeEarly(msg);
  queue.push(msg);
  schedule();
};

/** Frees a buffer's memory now (ArrayBuffer.prototype.transfer detaches it). */
function release(buffer: ArrayBuffer): void {
  const detachable = buffer as ArrayBuffer & { transfer?: (length: number) => ArrayBuffer };
  detachable.transfer?.(0);
}

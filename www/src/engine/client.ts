// The page's side of the engine: `createEngine()` starts the worker
// (worker.js, bundled from worker.ts, beside this bundle) and wraps its
// message protocol in the typed `Engine` / `ArchiveHandle` of types.ts.
//
// Buffers cross by transfer in both directions: the archive's bytes go to
// the worker (the caller's ArrayBuffer is detached), decoded columns come
// back as typed arrays the worker no longer holds.
//
// A request made with an AbortSignal rejects with kind "Cancelled" as soon
// as the signal fires; the worker is told, and skips it if it has not
// started it (a plot drops the zoom it no longer shows this way).
//
// Segments are decoded in a second worker (decoder.js, started by the
// engine worker): a trap there fails one request with "Crashed" and costs
// nothing else. If the engine worker's own instance traps, every pending
// request is
// rejected with kind "Crashed" (naming the segment being decoded), the
// worker is replaced, and handles opened before the crash answer
// "Crashed" until they are opened again: their bytes died with it.

import { unpackDescription } from "./packing";
import type { Calls, FollowAnswer, Method, Request, ToWorker, WorkerMessage } from "./protocol";
import type {
  AlignItem,
  Alignment,
  ArchiveHandle,
  CallerRow,
  DocumentRevision,
  Cancellable,
  DecodedBatch,
  Description,
  Engine,
  EngineError,
  EngineErrorKind,
  EngineStats,
  FollowResult,
  Heatmap,
  HeatmapRequest,
  LazyStats,
  LiveTail,
  OpenMode,
  PairedShift,
  RangeEnvelope,
  RangeOptions,
  RegionRequest,
  RegionStats,
  RefusalDetail,
  ShiftSide,
  Sniffed,
  StreamSchema,
  VerifyReport,
} from "./types";

/** What the engine rejects with: an `Error` that is also an `EngineError`. */
export class EngineFailure extends Error implements EngineError {
  readonly kind: EngineErrorKind;
  readonly detail?: RefusalDetail;
  readonly application_id?: number;
  readonly version?: number;
  readonly supported_versions?: number[];
  constructor(kind: EngineErrorKind, message: string, extra: Omit<EngineError, "kind" | "message"> = {}) {
    super(message);
    this.name = "EngineFailure";
    this.kind = kind;
    // Only the fields present, so a plain refusal has no undefined keys.
    if (extra.detail !== undefined) this.detail = extra.detail;
    if (extra.application_id !== undefined) this.application_id = extra.application_id;
    if (extra.version !== undefined) this.version = extra.version;
    if (extra.supported_versions !== undefined) this.supported_versions = extra.supported_versions;
  }

  /** The worker's plain-data error as an `Error`. */
  static of(e: EngineError): EngineFailure {
    const { kind, message, ...extra } = e;
    return new EngineFailure(kind, message, extra);
  }
}

export interface EngineOptions {
  /** Where the worker bundle is (default: worker.js beside this module). */
  workerUrl?: string | URL;
  /** Budget of the worker's decoded-segment cache in bytes (default: a quarter of the open archives, 16 to 256 MiB). */
  cacheBytes?: number;
  /**
   * Decode segments in a second worker that holds no archive (default
   * true), so a trap on a hostile segment costs that worker only and
   * every archive stays open. decoder.js must sit beside worker.js.
   */
  isolateDecoding?: boolean;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: EngineFailure) => void;
  /** A first answer before the answer (a readRange's preview). */
  partial?: (value: unknown) => void;
  /** What was asked, for messages about a crash. */
  what: string;
}

class WorkerEngine implements Engine {
  private worker: Worker | null = null;
  /** Bumped at every (re)start: a handle of an older generation is dead. */
  generation = 0;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private terminated = false;
  private started = false;

  constructor(private readonly options: EngineOptions) {
    this.start();
  }

  private start(): void {
    // Written out as `new Worker(new URL("./worker.js", import.meta.url))`
    // so that Vite and webpack 5 find the worker (and, through it, the
    // decoder and the wasm) when they bundle the npm package.
    const worker = this.options.workerUrl
      ? new Worker(this.options.workerUrl, { type: "module", name: "dendro-engine" })
      : new Worker(new URL("./worker.js", import.meta.url), { type: "module", name: "dendro-engine" });
    this.worker = worker;
    this.generation++;
    this.started = false;
    worker.onmessage = (e: MessageEvent<WorkerMessage>) => this.receive(worker, e.data);
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      const detail = e.message || "the worker script failed";
      if (this.started) this.crash(worker, `The engine's worker stopped (${detail}).`);
      else this.failAll(new EngineFailure("Internal", `The engine could not start: ${detail}.`));
    };
    const { cacheBytes, isolateDecoding } = this.options;
    if (cacheBytes !== undefined || isolateDecoding === false) {
      const config = { op: "config" as const, ...(cacheBytes !== undefined ? { cacheBytes } : {}), ...(isolateDecoding === false ? { decoder: false } : {}) };
      void this.request(config, "configure the engine").catch(() => {});
    }
  }

  private receive(worker: Worker, msg: WorkerMessage): void {
    if (worker !== this.worker) return;
    if ("hello" in msg) {
      this.started = true;
      if (!msg.ok) this.failAll(EngineFailure.of(msg.error));
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.ok && msg.partial) {
      p.partial?.(msg.value);
      return;
    }
    this.pending.delete(msg.id);
    if (msg.ok) {
      p.resolve(msg.value);
    } else if (msg.fatal) {
      p.reject(EngineFailure.of(msg.error));
      this.crash(worker, msg.error.message);
    } else {
      p.reject(EngineFailure.of(msg.error));
    }
  }

  /** The instance trapped or the worker died: fail what is pending, restart. */
  private crash(worker: Worker, message: string): void {
    if (worker !== this.worker) return;
    worker.terminate();
    this.worker = null;
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.reject(new EngineFailure("Crashed", `${message} (pending: ${p.what})`));
    }
    if (!this.terminated) this.start();
  }

  private failAll(error: EngineFailure): void {
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.reject(error);
    }
  }

  request(
    req: DistributiveOmit<Request, "id">,
    what: string,
    transfer: Transferable[] = [],
    signal?: AbortSignal,
    partial?: (value: unknown) => void,
  ): Promise<unknown> {
    const worker = this.worker;
    if (this.terminated || !worker) {
      return Promise.reject(new EngineFailure("Internal", "The engine was terminated."));
    }
    if (signal?.aborted) return Promise.reject(cancelled(what));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!signal) {
        this.pending.set(id, { resolve, reject, what, ...(partial ? { partial } : {}) });
      } else {
        const onAbort = () => {
          if (!this.pending.delete(id)) return;
          if (this.worker === worker) worker.postMessage({ op: "cancel", ids: [id] } satisfies ToWorker);
          reject(cancelled(what));
        };
        signal.addEventListener("abort", onAbort, { once: true });
        const done = () => signal.removeEventListener("abort", onAbort);
        this.pending.set(id, {
          resolve: (v) => (done(), resolve(v)),
          reject: (e) => (done(), reject(e)),
          what,
          ...(partial ? { partial } : {}),
        });
      }
      worker.postMessage({ ...req, id } satisfies ToWorker, transfer);
    });
  }

  async align(items: AlignItem[]): Promise<Alignment[]> {
    const wire = items.map((it) => {
      if (!(it.handle instanceof Handle) || !it.handle.liveIn(this, this.generation)) {
        throw new EngineFailure("NotFound", `${it.handle.name}: the archive is not open in this engine.`);
      }
      const [from, to] = it.span ?? [1n, 0n];
      return { handle: it.handle.workerId, source: it.source, from, to };
    });
    return (await this.request({ op: "align", items: wire }, "aligning sources by their clocks")) as Alignment[];
  }

  async pairShift(from: bigint, to: bigint, buckets: number, a: ShiftSide, b: ShiftSide, shift: bigint): Promise<PairedShift> {
    const side = (x: ShiftSide) => ({ ts: BigInt64Array.from(x.ts), min: Float64Array.from(x.min), max: Float64Array.from(x.max) });
    return (await this.request({ op: "pairShift", from, to, buckets, a: side(a), b: side(b), shift }, "pairing two windows")) as PairedShift;
  }

  async open(bytes: ArrayBuffer, name: string): Promise<ArchiveHandle> {
    const generation = this.generation;
    const handle = (await this.request({ op: "open", name, bytes }, `opening ${name}`, [bytes])) as number;
    return new Handle(this, handle, name, generation, "memory");
  }

  async openFile(file: Blob, name: string): Promise<ArchiveHandle> {
    const generation = this.generation;
    const handle = (await this.request({ op: "openFile", name, file }, `opening ${name}`)) as number;
    return new Handle(this, handle, name, generation, "lazy");
  }

  async openUrl(url: string, name: string, opts: { minLazyBytes?: number } = {}): Promise<ArchiveHandle | null> {
    const generation = this.generation;
    const minLazyBytes = opts.minLazyBytes ?? 0;
    // A relative URL means the page's: the worker would resolve it against
    // its own script's URL (wherever a bundler put worker.js).
    const absolute = typeof document !== "undefined" ? new URL(url, document.baseURI).href : url;
    const handle = (await this.request({ op: "openUrl", name, url: absolute, minLazyBytes }, `opening ${name}`)) as number | null;
    return handle === null ? null : new Handle(this, handle, name, generation, "lazy");
  }

  async follow(url: string, name: string, previous: ArchiveHandle | null): Promise<FollowResult> {
    const generation = this.generation;
    const prev = previous instanceof Handle && previous.liveIn(this, generation) ? previous.workerId : null;
    const r = (await this.request({ op: "openFollow", name, url, previous: prev }, `following ${name}`)) as FollowAnswer;
    if (r.unchanged) return r;
    const { handle, ...rest } = r;
    return { ...rest, handle: new Handle(this, handle, name, generation, "lazy") };
  }

  async sniff(headers: ArrayBuffer[]): Promise<Sniffed[]> {
    if (headers.length === 0) return [];
    return (await this.request({ op: "sniff", headers }, `sorting ${headers.length} files`, headers)) as Sniffed[];
  }

  async stats(): Promise<EngineStats> {
    return (await this.request({ op: "stats" }, "the engine's counters")) as EngineStats;
  }

  /** Makes the worker's module trap, as a hostile segment would. For tests. */
  crashForTests(what: string): Promise<unknown> {
    return this.request({ op: "crash", what }, `a test crash of ${what}`);
  }

  /** Makes the decoder worker's module trap, as a hostile segment would. For tests. */
  crashDecoderForTests(what: string): Promise<unknown> {
    return this.request({ op: "crashDecoder", what }, `a test crash of the decoder on ${what}`);
  }

  /**
   * Occupies the worker, as a long decode would, until `release()`:
   * requests made meanwhile queue behind it. `done` settles once released.
   * For tests.
   */
  holdForTests(): { done: Promise<unknown>; release(): void } {
    const id = this.nextId; // the id request() gives it
    const done = this.request({ op: "hold" }, "a test's hold on the worker");
    const worker = this.worker;
    return { done, release: () => worker?.postMessage({ op: "release", id } satisfies ToWorker) };
  }

  terminate(): void {
    this.terminated = true;
    this.worker?.terminate();
    this.worker = null;
    this.failAll(new EngineFailure("Internal", "The engine was terminated."));
  }
}

/**
 * Below this many segments `outline` answers null: the listing is then a
 * few dozen reads or fewer, and a second drawing of the page would cost
 * about what it saves.
 */
const OUTLINE_MIN_SEGMENTS = 256;

class Handle implements ArchiveHandle {
  private closed = false;

  /** Whether this handle is open in `engine`'s current worker. */
  liveIn(engine: WorkerEngine, generation: number): boolean {
    return !this.closed && this.engine === engine && this.generation === generation;
  }

  get workerId(): number {
    return this.id;
  }

  constructor(
    private readonly engine: WorkerEngine,
    private readonly id: number,
    readonly name: string,
    private readonly generation: number,
    readonly mode: OpenMode,
  ) {}

  private call<M extends Method>(
    method: M,
    args: Calls[M]["args"],
    what: string,
    signal?: AbortSignal,
    partial?: (value: unknown) => void,
  ): Promise<Calls[M]["result"]> {
    if (this.closed) {
      return Promise.reject(new EngineFailure("NotFound", `${this.name}: the archive was closed.`));
    }
    if (this.generation !== this.engine.generation) {
      return Promise.reject(
        new EngineFailure("Crashed", `${this.name}: the engine restarted after a crash since this archive was opened; open it again.`),
      );
    }
    const req = { op: "call", handle: this.id, method, args } as DistributiveOmit<Request, "id">;
    return this.engine.request(req, `${what} of ${this.name}`, [], signal, partial) as Promise<Calls[M]["result"]>;
  }

  async describe(): Promise<Description> {
    return unpackDescription(await this.call("describe", [], "describe"));
  }

  async outline(minSegments = OUTLINE_MIN_SEGMENTS): Promise<Description | null> {
    const packed = await this.call("outline", [minSegments], "an outline");
    return packed && unpackDescription(packed);
  }

  schema(source: number, stream: string): Promise<StreamSchema> {
    return this.call("schema", [source, stream], `the schema of stream "${stream}" (source ${source})`);
  }

  readSegment(source: number, stream: string, seq: number, columns?: string[], opts?: Cancellable): Promise<DecodedBatch> {
    return this.call(
      "readSegment",
      [source, stream, seq, columns ?? null],
      `segment ${seq} of stream "${stream}" (source ${source})`,
      opts?.signal,
    );
  }

  readRange(
    source: number,
    stream: string,
    from: bigint,
    to: bigint,
    opts?: RangeOptions & Cancellable,
  ): Promise<RangeEnvelope> {
    const onPreview = opts?.onPreview;
    return this.call(
      "readRange",
      [source, stream, from, to, opts?.columns ?? null, opts?.maxPoints ?? null, opts?.rates ?? null, onPreview !== undefined],
      `a window of stream "${stream}" (source ${source})`,
      opts?.signal,
      onPreview ? (value) => onPreview(value as RangeEnvelope) : undefined,
    );
  }

  previewRange(source: number, stream: string, from: bigint, to: bigint, opts: Omit<RangeOptions, "onPreview"> & Cancellable & { maxPoints: number }): Promise<RangeEnvelope | null> {
    return this.call(
      "previewRange",
      [source, stream, from, to, opts.columns ?? null, opts.maxPoints, opts.rates ?? null],
      `a preview of a window of stream "${stream}" (source ${source})`,
      opts.signal,
    );
  }

  prefetch(source: number, stream: string, from: bigint, to: bigint): Promise<void> {
    return this.call("prefetch", [source, stream, from, to], `fetching ahead stream "${stream}" (source ${source})`).then(() => {});
  }

  liveTail(source: number, stream: string): Promise<LiveTail> {
    return this.call("liveTail", [source, stream], `the live tail of stream "${stream}" (source ${source})`);
  }

  callerIndex(source: number, stream: string, seq: number): Promise<Uint8Array | null> {
    return this.call("callerIndex", [source, stream, seq], `the caller index of segment ${seq} of "${stream}"`);
  }

  callerRows(source: number, name: string, from: bigint, to: bigint, opts?: Cancellable): Promise<CallerRow[]> {
    return this.call("callerRows", [source, name, from, to], `caller rows "${name}" (source ${source})`, opts?.signal);
  }

  documentHistory(kind: string, name: string): Promise<DocumentRevision[]> {
    return this.call("documentHistory", [kind, name], `the history of document ${JSON.stringify(name)} (${kind})`);
  }

  verify(): Promise<VerifyReport> {
    return this.call("verify", [], "verify");
  }

  regionStats(request: RegionRequest, opts?: Cancellable): Promise<RegionStats> {
    return this.call(
      "regionStats",
      [request],
      `statistics of a region of stream "${request.stream}" (source ${request.source})`,
      opts?.signal,
    );
  }

  heatmap(request: HeatmapRequest, opts?: Cancellable): Promise<Heatmap> {
    return this.call(
      "heatmap",
      [request],
      `the heatmap of "${request.column}" of stream "${request.stream}" (source ${request.source})`,
      opts?.signal,
    );
  }

  lazyStats(): Promise<LazyStats | null> {
    return this.call("lazyStats", [], "the traffic");
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.generation !== this.engine.generation) return;
    await this.engine.request({ op: "close", handle: this.id }, `closing ${this.name}`);
  }
}

/** The rejection of a request whose AbortSignal fired. */
function cancelled(what: string): EngineFailure {
  const e = new EngineFailure("Cancelled", `Cancelled: ${what}.`);
  // What code written for fetch() checks.
  e.name = "AbortError";
  return e;
}

/** Starts an engine: one worker holding any number of open archives. */
export function createEngine(
  options: EngineOptions = {},
): Engine & {
  crashForTests(what: string): Promise<unknown>;
  crashDecoderForTests(what: string): Promise<unknown>;
  holdForTests(): { done: Promise<unknown>; release(): void };
} {
  return new WorkerEngine(options);
}

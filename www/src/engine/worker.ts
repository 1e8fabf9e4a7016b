// The engine worker: the dendro reader compiled to wasm32 (www/pkg/, built
// by scripts/build-wasm.sh) answering the client's requests. Archives stay
// in wasm memory, one handle id each; decoded segments are cached inside
// the module (one byte-bounded LRU for every open archive).
//
// A trap (a panic aborts in wasm32) poisons the instance: the worker then
// answers "Crashed", naming the segment being decoded, and the client
// replaces it with a fresh worker.
//
// Requests run one at a time, in the order they came. Between two, the
// worker lets every message already waiting be delivered first, so a
// "cancel" sent while a long request ran is seen before the requests
// queued behind it start: those are answered "Cancelled" without running.

import init, { Archive, __crashForTests, decodingNow, setCacheBytes } from "../../pkg/dendro.js";
import type { Calls, Method, Request, Response, ToWorker, WorkerMessage } from "./protocol";
import type { EngineError, EngineErrorKind, RefusalDetail } from "./types";

interface WorkerScope {
  postMessage(message: WorkerMessage, transfer: Transferable[]): void;
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
}
const scope = self as unknown as WorkerScope;

/** SQLite's ceiling for one allocation, which must hold the whole file. */
const MAX_ARCHIVE_BYTES = 2_147_483_391;

const KINDS: readonly EngineErrorKind[] = [
  "NotAnArchive",
  "UnsupportedSchema",
  "Corrupt",
  "TooLarge",
  "NotFound",
  "Segment",
  "Crashed",
  "Cancelled",
  "Internal",
];

const archives = new Map<number, Archive>();
let nextHandle = 1;
/** Set after a trap: the instance must not be called again. */
let crashed: EngineError | null = null;

function engineError(kind: EngineErrorKind, message: string): EngineError {
  return { kind, message };
}

const DETAILS: readonly RefusalDetail[] = ["empty", "too_short", "not_sqlite", "unstamped", "foreign_app", "no_catalog"];

/** A whole number in [0, 2^32), or undefined. */
function u32(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 0xffffffff ? v : undefined;
}

/**
 * An exception from the module (a JS Error with `kind`, and for a refused
 * file `detail`, `application_id`, `version`) as plain data.
 */
function asEngineError(e: unknown): EngineError {
  if (e instanceof Error) {
    const x = e as Error & { kind?: unknown; detail?: unknown; application_id?: unknown; version?: unknown; supported_version?: unknown };
    if (typeof x.kind === "string" && (KINDS as readonly string[]).includes(x.kind)) {
      const out = engineError(x.kind as EngineErrorKind, e.message);
      if (typeof x.detail === "string" && (DETAILS as readonly string[]).includes(x.detail)) out.detail = x.detail as RefusalDetail;
      const id = u32(x.application_id);
      if (id !== undefined) out.application_id = id;
      const version = u32(x.version);
      if (version !== undefined) out.version = version;
      const supported = u32(x.supported_version);
      if (supported !== undefined) out.supported_version = supported;
      return out;
    }
    return engineError("Internal", `${e.name}: ${e.message}`);
  }
  return engineError("Internal", String(e));
}

/** Every ArrayBuffer under typed arrays in `value`, to transfer. */
function transferables(value: unknown, out: Set<ArrayBuffer> = new Set()): ArrayBuffer[] {
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer) out.add(value.buffer);
  } else if (Array.isArray(value)) {
    // Arrays of strings or numbers hold no buffers; skip the walk.
    if (value.length > 0 && typeof value[0] === "object") for (const v of value) transferables(v, out);
  } else if (typeof value === "object" && value !== null) {
    for (const v of Object.values(value)) transferables(v, out);
  }
  return [...out];
}

function archive(handle: number): Archive {
  const a = archives.get(handle);
  if (!a) throw Object.assign(new Error(`archive handle ${handle} is not open in the engine`), { kind: "NotFound" });
  return a;
}

function call<M extends Method>(a: Archive, method: M, args: Calls[M]["args"]): Calls[M]["result"] {
  // Each case narrows args by hand: a correlated union is not narrowed by
  // the switch on `method` alone.
  const x = args as unknown[];
  switch (method) {
    case "describe":
      return a.describe();
    case "schema":
      return a.schema(x[0] as number, x[1] as string);
    case "readSegment":
      return a.readSegment(x[0] as number, x[1] as string, x[2] as number, x[3] as string[] | null);
    case "readRange":
      return a.readRange(
        x[0] as number,
        x[1] as string,
        x[2] as bigint,
        x[3] as bigint,
        x[4] as string[] | null,
        x[5] as number | null,
      );
    case "liveTail":
      return a.liveTail(x[0] as number, x[1] as string);
    case "callerIndex":
      return (a.callerIndex(x[0] as number, x[1] as string, x[2] as number) ?? null) as Calls[M]["result"];
    case "callerRows":
      return a.callerRows(x[0] as number, x[1] as string, x[2] as bigint, x[3] as bigint);
    case "verify":
      return a.verify();
  }
  throw Object.assign(new Error(`unknown engine method ${String(method)}`), { kind: "Internal" });
}

function run(req: Request): unknown {
  switch (req.op) {
    case "open": {
      if (req.bytes.byteLength > MAX_ARCHIVE_BYTES) {
        const mb = (n: number) => Math.floor(n / 1048576);
        throw Object.assign(
          new Error(`${req.name}: the file is ${mb(req.bytes.byteLength)} MB; the engine holds archives up to ${mb(MAX_ARCHIVE_BYTES)} MB in memory`),
          { kind: "TooLarge" },
        );
      }
      // Copied once, straight into SQLite's buffer; req.bytes is garbage after this.
      const a = Archive.open(new Uint8Array(req.bytes), req.name);
      const handle = nextHandle++;
      archives.set(handle, a);
      return handle;
    }
    case "close": {
      archives.get(req.handle)?.free();
      archives.delete(req.handle);
      return null;
    }
    case "config":
      setCacheBytes(req.cacheBytes);
      return null;
    case "crash":
      __crashForTests(req.what);
      return null;
    case "busy": {
      const until = performance.now() + req.ms;
      while (performance.now() < until) {
        // Occupied, as a long decode would be.
      }
      return null;
    }
    case "call":
      return call(archive(req.handle), req.method, req.args);
  }
}

function reply(msg: Response): void {
  scope.postMessage(msg, msg.ok ? transferables(msg.value) : []);
}

const ready: Promise<EngineError | null> = init({ module_or_path: new URL("./dendro_bg.wasm", import.meta.url) }).then(
  () => null,
  (e: unknown) => engineError("Internal", `the engine could not load its WebAssembly module: ${asEngineError(e).message}`),
);

/** Set once the module has loaded or failed to. */
let loaded: { failed: EngineError | null } | null = null;

void ready.then((failed) => {
  loaded = { failed };
  scope.postMessage(failed ? { hello: true, ok: false, error: failed } : { hello: true, ok: true }, []);
  schedule();
});

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
  step();
};

function schedule(): void {
  if (loaded && !turnPending && queue.length > 0) {
    turnPending = true;
    turn.port2.postMessage(null);
  }
}

function step(): void {
  const req = queue.shift();
  if (!req) return;
  lastStarted = req.id;
  if (cancelled.delete(req.id)) {
    reply({ id: req.id, ok: false, error: engineError("Cancelled", "The request was cancelled before it ran.") });
  } else {
    handle(req);
  }
  schedule();
}

function handle(req: Request): void {
  const failed = loaded?.failed ?? null;
  if (failed) return reply({ id: req.id, ok: false, error: failed });
  if (crashed) return reply({ id: req.id, ok: false, error: crashed, fatal: true });
  try {
    reply({ id: req.id, ok: true, value: run(req) });
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
      return reply({ id: req.id, ok: false, error: crashed, fatal: true });
    }
    reply({ id: req.id, ok: false, error: asEngineError(err) });
  }
}

scope.onmessage = (e: MessageEvent<ToWorker>) => {
  const msg = e.data;
  if (msg.op === "cancel") {
    for (const id of msg.ids) if (id > lastStarted) cancelled.add(id);
    return;
  }
  queue.push(msg);
  schedule();
};

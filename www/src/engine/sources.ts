// Byte sources for archives read in place (Archive.openLazy in the engine,
// src/wasm/vfs.rs): the engine asks for one range at a time, synchronously,
// from inside SQLite, so both sources block the worker while they read.
// That is allowed in a worker and only there: FileReaderSync and
// synchronous XMLHttpRequest.
//
// A source that finds the file is no longer the one it opened throws an
// Error with kind "Changed"; any other failure throws a plain Error. The
// engine then fails every later read of that archive with the same words.

/** What the engine reads through: `read` returns exactly `length` bytes. */
export interface ByteSource {
  readonly size: number;
  read(offset: number, length: number): Uint8Array;
}

/** A byte range, `[offset, length]`. */
export type Range = readonly [number, number];

/**
 * A source that can also read many ranges at once, asynchronously: the
 * catalog prefetch (fetchPlanned) asks for scattered pages this way
 * instead of one synchronous read each.
 */
export interface BatchSource extends ByteSource {
  readMany(ranges: readonly Range[]): Promise<Uint8Array[]>;
}

/**
 * The most bytes one batch of reads holds in flight at once: a plan's
 * ranges (footers, a window's rows, chains) are read concurrently, but a
 * batch of many large ranges is not all asked for, and held, at once.
 */
export const IN_FLIGHT_BYTES = 32 << 20;

/**
 * Runs `work` over `items` with at most `limit` in flight, and at most
 * `budget` bytes (by `bytes`) in flight unless nothing else is (so an item
 * larger than the budget still runs, alone); results in order.
 */
export async function pooled<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
  bytes: (item: T) => number = () => 0,
  budget = IN_FLIGHT_BYTES,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let held = 0;
  let running = 0;
  const waiting: (() => void)[] = [];
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      const size = bytes(items[i]!);
      while (running > 0 && held + size > budget) await new Promise<void>((resolve) => waiting.push(resolve));
      held += size;
      running++;
      try {
        out[i] = await work(items[i]!);
      } finally {
        held -= size;
        running--;
        waiting.splice(0).forEach((wake) => wake());
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

/**
 * A read-ahead plan of the engine (the `Prefetch` an Archive's
 * prefetchCatalog, prefetchOutline or prefetchWindow starts; see
 * src/read/prefetch.rs): `next` gives the ranges of a round as
 * `[offset, length, ...]`, or undefined once done; `fill` takes each range
 * fetched; `free` lets the engine drop it.
 */
export interface Plan {
  next(): ArrayLike<number> | undefined;
  fill(offset: number, bytes: Uint8Array): void;
  free(): void;
}

/** What a round of a plan asked for, or fetched. */
export type Round = { ranges: number; bytes: number };

/**
 * Brings the pages the engine is about to read into its cache before it
 * asks for them, the one loop every kind of plan runs: a round per level
 * of the b-trees it walks (see src/container/lazy/walk.rs), each round
 * fetched in one batch, until the plan says it is done (it bounds its own
 * rounds). `planned` hears each round's plan as it is made (the last one
 * empty), `fetched` each round once its bytes are in. A failure here is
 * not reported: the prefetch only saves time, and the engine's own read
 * of the same bytes reports it in its words; an error the plan throws
 * (an argument the read would refuse too) is the caller's.
 */
export async function fetchPlanned(
  plan: Plan,
  source: BatchSource,
  hooks: { planned?: (round: Round) => void; fetched?: (round: Round) => void } = {},
): Promise<{ rounds: number; ranges: number; bytes: number }> {
  const done = { rounds: 0, ranges: 0, bytes: 0 };
  try {
    for (;;) {
      const next = plan.next();
      hooks.planned?.({ ranges: (next?.length ?? 0) / 2, bytes: planBytes(next ?? []) });
      if (next === undefined || next.length === 0) break;
      const parts = await fillPlan(plan, source, next);
      if (parts === null) break;
      const bytes = parts.reduce((n, p) => n + p.byteLength, 0);
      done.rounds++;
      done.ranges += parts.length;
      done.bytes += bytes;
      hooks.fetched?.({ ranges: parts.length, bytes });
    }
  } finally {
    plan.free();
  }
  return done;
}

/** The bytes a plan of `[offset, length, ...]` asks for. */
function planBytes(plan: ArrayLike<number>): number {
  let bytes = 0;
  for (let i = 1; i < plan.length; i += 2) bytes += plan[i]!;
  return bytes;
}

/**
 * Reads a plan of (offset, length) pairs, flattened as the engine hands
 * them out, in one batch, and gives each part to the plan. Null when the
 * batch could not be read: a prefetch only saves time, and SQLite's own
 * read then reports the failure in its words.
 */
async function fillPlan(plan: Plan, source: BatchSource, ranges: ArrayLike<number>): Promise<Uint8Array[] | null> {
  const pairs: Range[] = [];
  for (let i = 0; i + 1 < ranges.length; i += 2) pairs.push([ranges[i]!, ranges[i + 1]!]);
  let parts: Uint8Array[];
  try {
    parts = await source.readMany(pairs);
  } catch {
    return null;
  }
  pairs.forEach(([offset], i) => plan.fill(offset, parts[i]!));
  return parts;
}

/** The worker-only synchronous reader (not in the DOM library's types). */
declare const FileReaderSync: { new (): { readAsArrayBuffer(blob: Blob): ArrayBuffer } };

/** An error the engine reports as the file having changed under it. */
function changed(message: string): Error {
  return Object.assign(new Error(message), { kind: "Changed" });
}

/**
 * A dropped or chosen File (or any Blob): a File posted to a worker is a
 * reference to the file on disk, not a copy, and `slice` reads just the
 * range asked for.
 */
export class BlobSource implements BatchSource {
  readonly size: number;
  private readonly reader = new FileReaderSync();

  constructor(
    private readonly blob: Blob,
    private readonly name: string,
  ) {
    this.size = blob.size;
  }

  read(offset: number, length: number): Uint8Array {
    let buffer: ArrayBuffer;
    try {
      buffer = this.reader.readAsArrayBuffer(this.blob.slice(offset, offset + length));
    } catch (e) {
      // Chromium answers NotReadableError once the file on disk was
      // modified after it was chosen.
      const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      if (e instanceof Error && e.name === "NotReadableError") {
        throw changed(`${this.name} can no longer be read as the file that was opened; it was modified, moved or deleted (${what})`);
      }
      throw new Error(`reading ${length} bytes at offset ${offset} of ${this.name} failed (${what})`);
    }
    if (buffer.byteLength !== length) {
      throw changed(`${this.name} is now shorter than when it was opened (${offset + buffer.byteLength} bytes readable, ${offset + length} needed)`);
    }
    return new Uint8Array(buffer);
  }

  /**
   * Many ranges read in parallel (`Blob.arrayBuffer`, asynchronous), not
   * one at a time, within the bytes-in-flight budget; ranges close
   * together are read as one and cut apart.
   */
  async readMany(ranges: readonly Range[]): Promise<Uint8Array[]> {
    const spans = nearby(ranges);
    const read = await pooled(
      spans,
      16,
      async ({ start, end }) => {
        const buffer = await this.blob.slice(start, end).arrayBuffer();
        if (buffer.byteLength !== end - start) throw changed(`${this.name} is now shorter than when it was opened`);
        return new Uint8Array(buffer);
      },
      spanBytes,
    );
    return cutApart(ranges, spans, read);
  }
}

/** The bytes a span of `nearby` reads. */
function spanBytes({ start, end }: { start: number; end: number }): number {
  return end - start;
}

/** Each of `ranges`, cut out of the spans `nearby` grouped them in, as read (`read[s]` holds span `s`). */
function cutApart(ranges: readonly Range[], spans: readonly { start: number; members: number[] }[], read: readonly Uint8Array[]): Uint8Array[] {
  const out = new Array<Uint8Array>(ranges.length);
  spans.forEach(({ start, members }, s) => {
    for (const i of members) {
      const [offset, length] = ranges[i]!;
      out[i] = read[s]!.subarray(offset - start, offset - start + length);
    }
  });
  return out;
}

/**
 * A read of a local file costs about a millisecond whatever its size, up to
 * a few MiB (DESIGN.md, "The open, step by step"), so ranges this close are
 * read as one, reading the bytes between them too, up to `NEARBY_MAX_BYTES`
 * a read: a footer prefetch's thousands of scattered leaves become tens of
 * reads.
 */
const NEARBY_GAP_BYTES = 64 << 10;
const NEARBY_MAX_BYTES = 1 << 20;

/** `ranges` grouped into spans read at once: each span's extent and the indexes of its ranges. */
export function nearby(ranges: readonly Range[]): { start: number; end: number; members: number[] }[] {
  const order = ranges.map((_, i) => i).sort((a, b) => ranges[a]![0] - ranges[b]![0]);
  const spans: { start: number; end: number; members: number[] }[] = [];
  for (const i of order) {
    const [offset, length] = ranges[i]!;
    const last = spans.at(-1);
    const end = offset + length;
    if (last && offset - last.end <= NEARBY_GAP_BYTES && Math.max(end, last.end) - last.start <= NEARBY_MAX_BYTES) {
      last.end = Math.max(last.end, end);
      last.members.push(i);
    } else {
      spans.push({ start: offset, end, members: [i] });
    }
  }
  return spans;
}

/** The answer to the first ranged request of a URL. */
export interface Probe {
  /** The file's length, from Content-Range. */
  size: number;
  /** The strong validator the server sent, if any. */
  etag: string | null;
  /** The bytes of the probe, from offset 0. */
  head: Uint8Array;
  /** The server's `Dendro-Envelope` header: the accelerator it offers (accelerator.ts), if any. */
  envelope?: string | null;
}

/** "bytes 0-16383/123456" → 123456; null when absent or unknown ("*"). */
function totalOf(contentRange: string | null): number | null {
  const m = contentRange ? /^bytes\s+\d+-\d+\/(\d+)\s*$/i.exec(contentRange) : null;
  return m ? Number(m[1]) : null;
}

/** A weak validator ("W/...") does not promise the same bytes: only a strong one is compared. */
function strong(etag: string | null): string | null {
  return etag && !etag.startsWith("W/") ? etag : null;
}

/**
 * Asks `url` for its first `bytes` bytes. A server that answers 206 for a
 * file of at least `minSize` bytes can be read in place; any other answer
 * (200: it ignores ranges; an error status; a smaller file) is null, and
 * the caller downloads the file whole instead, which reports a failing
 * status in its own words. The body is read only when the answer is used.
 */
export async function probeUrl(url: string, bytes: number, minSize: number): Promise<Probe | null> {
  let res: Response;
  try {
    res = await fetch(url, { headers: { Range: `bytes=0-${bytes - 1}` }, cache: "no-store" });
  } catch {
    return null;
  }
  const size = totalOf(res.headers.get("content-range"));
  if (res.status !== 206 || size === null || size < minSize) {
    void res.body?.cancel().catch(() => {});
    return null;
  }
  const head = new Uint8Array(await res.arrayBuffer());
  return { size, etag: strong(res.headers.get("etag")), head, envelope: res.headers.get("dendro-envelope") };
}

/**
 * A URL read with synchronous Range requests. Every answer must be a 206
 * for exactly the range asked, of a file of the size and strong ETag the
 * probe saw; otherwise the file changed on the server (or the server
 * stopped answering ranges), and the read fails rather than mixing two
 * versions of the file.
 */
export class HttpSource implements BatchSource {
  readonly size: number;
  private readonly etag: string | null;
  /** The probe's bytes, served once for the first read that fits in them. */
  private head: Uint8Array | null;

  constructor(
    private readonly url: string,
    probe: Probe,
  ) {
    this.size = probe.size;
    this.etag = probe.etag;
    this.head = probe.head;
  }

  read(offset: number, length: number): Uint8Array {
    const head = this.head;
    if (head && offset + length <= head.byteLength) {
      if (offset + length === head.byteLength) this.head = null;
      return head.slice(offset, offset + length);
    }
    const xhr = new XMLHttpRequest();
    xhr.open("GET", this.url, false);
    xhr.responseType = "arraybuffer";
    xhr.setRequestHeader("Range", `bytes=${offset}-${offset + length - 1}`);
    try {
      xhr.send();
    } catch (e) {
      throw new Error(`the request for bytes ${offset}-${offset + length - 1} of ${this.url} failed (${e instanceof Error ? e.message : String(e)})`);
    }
    if (xhr.status === 200) {
      throw new Error(`${this.url} answered the whole file (200) to a range request; the server stopped answering ranges`);
    }
    if (xhr.status === 412 || xhr.status === 416) {
      throw changed(`${this.url} refused bytes ${offset}-${offset + length - 1} (${xhr.status}); the file on the server is not the one opened`);
    }
    if (xhr.status !== 206) {
      throw new Error(`${this.url} answered ${xhr.status} to a range request`);
    }
    const total = totalOf(xhr.getResponseHeader("content-range"));
    if (total !== null && total !== this.size) {
      throw changed(`${this.url} is now ${total} bytes; it was ${this.size} when opened`);
    }
    const etag = strong(xhr.getResponseHeader("etag"));
    if (this.etag !== null && etag !== this.etag) {
      throw changed(`the server's ETag of ${this.url} is now ${etag ?? "absent"}; it was ${this.etag} when opened`);
    }
    const body = xhr.response as ArrayBuffer;
    if (body.byteLength !== length) {
      throw new Error(`${this.url} answered ${body.byteLength} bytes for a range of ${length}`);
    }
    return new Uint8Array(body);
  }

  /** Whether the server answered a multi-range request with one multipart body; null until asked. */
  private multipartOk: boolean | null = null;

  /** Checks an answer's total length and validator against the probe's. */
  private checkSame(total: number | null, etagHeader: string | null): void {
    if (total !== null && total !== this.size) throw changed(`${this.url} is now ${total} bytes; it was ${this.size} when opened`);
    const etag = strong(etagHeader);
    if (this.etag !== null && etag !== this.etag)
      throw changed(`the server's ETag of ${this.url} is now ${etag ?? "absent"}; it was ${this.etag} when opened`);
  }

  /** One range with fetch (asynchronous, so several run at once). */
  private async fetchOne([offset, length]: Range): Promise<Uint8Array> {
    const res = await fetch(this.url, { headers: { Range: `bytes=${offset}-${offset + length - 1}` }, cache: "no-store" });
    if (res.status !== 206) {
      void res.body?.cancel().catch(() => {});
      throw new Error(`${this.url} answered ${res.status} to a range request`);
    }
    this.checkSame(totalOf(res.headers.get("content-range")), res.headers.get("etag"));
    const body = new Uint8Array(await res.arrayBuffer());
    if (body.byteLength !== length) throw new Error(`${this.url} answered ${body.byteLength} bytes for a range of ${length}`);
    return body;
  }

  /**
   * Many ranges in one request (`Range: bytes=a-b,c-d,...`, answered as
   * multipart/byteranges), or null when the server does not answer so
   * (a single part, the whole file, a refusal): the caller then asks for
   * each range on its own.
   */
  private async fetchMultipart(ranges: readonly Range[]): Promise<Uint8Array[] | null> {
    const spec = ranges.map(([o, n]) => `${o}-${o + n - 1}`).join(",");
    const res = await fetch(this.url, { headers: { Range: `bytes=${spec}` }, cache: "no-store" });
    const type = res.headers.get("content-type") ?? "";
    const boundary = /^multipart\/byteranges;\s*boundary="?([^";]+)"?/i.exec(type)?.[1];
    if (res.status !== 206 || !boundary) {
      void res.body?.cancel().catch(() => {});
      return null;
    }
    this.checkSame(null, res.headers.get("etag"));
    const parts = parseMultipart(new Uint8Array(await res.arrayBuffer()), boundary, this.url);
    const byOffset = new Map<number, { total: number; bytes: Uint8Array }>();
    for (const p of parts) byOffset.set(p.offset, p);
    return ranges.map(([offset, length]) => {
      const part = byOffset.get(offset);
      if (!part || part.bytes.byteLength < length) throw new Error(`${this.url} left bytes ${offset}-${offset + length - 1} out of its multipart answer`);
      if (part.total >= 0 && part.total !== this.size) throw changed(`${this.url} is now ${part.total} bytes; it was ${this.size} when opened`);
      return part.bytes.subarray(0, length);
    });
  }

  /**
   * Many ranges in a few requests: ranges close together merged into one
   * (as for a file: a round trip costs more than the bytes between), then
   * batches of up to MULTI_RANGES as multi-range requests, a few in
   * parallel, or, from a server that does not answer those, one request
   * per range, six at a time; within the bytes-in-flight budget either way.
   */
  async readMany(ranges: readonly Range[]): Promise<Uint8Array[]> {
    const spans = nearby(ranges);
    const merged: Range[] = spans.map(({ start, end }) => [start, end - start]);
    return cutApart(ranges, spans, await this.readSpans(merged));
  }

  /** `readMany` of ranges already merged. */
  private async readSpans(ranges: readonly Range[]): Promise<Uint8Array[]> {
    const size = ([, n]: Range) => n;
    if (this.multipartOk !== false && ranges.length > 1) {
      const batches: Range[][] = [];
      for (let i = 0; i < ranges.length; i += MULTI_RANGES) batches.push(ranges.slice(i, i + MULTI_RANGES));
      const first = await this.fetchMultipart(batches[0]!);
      this.multipartOk = first !== null;
      if (first) {
        const rest = await pooled(
          batches.slice(1),
          4,
          async (b) => {
            const got = await this.fetchMultipart(b);
            if (!got) throw new Error(`${this.url} stopped answering multi-range requests`);
            return got;
          },
          (b) => b.reduce((n, r) => n + size(r), 0),
        );
        return [first, ...rest].flat();
      }
    }
    return pooled(ranges, 6, (r) => this.fetchOne(r), size);
  }
}

/** Ranges per multi-range request: a Range header of a few KB, which servers accept. */
const MULTI_RANGES = 160;

/**
 * The parts of a multipart/byteranges body, each by its Content-Range
 * (RFC 9110 §14.6). Parts are read by their stated lengths, so a
 * boundary string inside the data cannot cut a part short.
 */
function parseMultipart(body: Uint8Array, boundary: string, url: string): { offset: number; total: number; bytes: Uint8Array }[] {
  const text = new TextDecoder("latin1");
  const out: { offset: number; total: number; bytes: Uint8Array }[] = [];
  const delimiter = `--${boundary}`;
  let at = 0;
  const bad = (why: string): Error => new Error(`${url} sent a multipart answer that cannot be read (${why})`);
  for (;;) {
    // Headers end at the first blank line; the part's data follows.
    let end = -1;
    for (let i = at; i + 3 < body.length; i++)
      if (body[i] === 13 && body[i + 1] === 10 && body[i + 2] === 13 && body[i + 3] === 10) {
        end = i;
        break;
      }
    const head = text.decode(body.subarray(at, end < 0 ? body.length : end));
    const start = head.indexOf(delimiter);
    if (start < 0) throw bad("no boundary");
    if (head.startsWith("--", start + delimiter.length)) return out;
    if (end < 0) throw bad("a part without headers");
    const range = /content-range:\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)/i.exec(head.slice(start));
    if (!range) throw bad("a part without Content-Range");
    const first = Number(range[1]);
    const length = Number(range[2]) - first + 1;
    const data = end + 4;
    if (length <= 0 || data + length > body.length) throw bad("a part past the end of the body");
    out.push({ offset: first, total: range[3] === "*" ? -1 : Number(range[3]), bytes: body.subarray(data, data + length) });
    at = data + length;
  }
}

/** The unit a follower's page cache and `dendro serve`'s list of changes count in. */
export const FOLLOW_UNIT = 4096;

/** The most units a new image reads ahead (16 MiB); the rest as the engine asks. */
const PREFILL_UNITS = 4096;

/** The most a follower's page cache holds; past it the oldest units go. */
const FOLLOW_CACHE_BYTES = 96 << 20;

/**
 * What a follower of one URL keeps between successive images of it: the
 * units (4 KiB) it has read, valid for the image `etag`. When the server
 * says which units changed since that image (`Dendro-Changed`), only those
 * are dropped, so the next image reads from the network just what the
 * writer changed; otherwise everything is.
 */
export class PageCache {
  etag: string | null = null;
  size = 0;
  private readonly units = new Map<number, Uint8Array>();
  private held = 0;
  /** Bytes read from the network for this URL, every image together. */
  netBytes = 0;
  /** Requests made for it (probes included). */
  requests = 0;

  get(unit: number): Uint8Array | undefined {
    return this.units.get(unit);
  }

  put(unit: number, bytes: Uint8Array): void {
    const old = this.units.get(unit);
    if (old) this.held -= old.byteLength;
    this.units.set(unit, bytes);
    this.held += bytes.byteLength;
    // A Map iterates in insertion order: the oldest units go first.
    for (const [k, v] of this.units) {
      if (this.held <= FOLLOW_CACHE_BYTES) break;
      this.units.delete(k);
      this.held -= v.byteLength;
    }
  }

  clear(): void {
    this.units.clear();
    this.held = 0;
  }

  /** Units held. */
  get count(): number {
    return this.units.size;
  }

  /**
   * The cache moves to image `etag` of `size` bytes. `changed` is the
   * server's `Dendro-Changed` header ("<old etag> <unit> <a-b,c,...>"):
   * when it names the image the cache holds, only those units (and any
   * past the new end, or the last, partial one) are dropped. `refill` is
   * the units dropped because they changed: read for the image before,
   * they are likely read again for this one.
   */
  moveTo(etag: string | null, size: number, changed: string | null): { kept: boolean; refill: number[] } {
    let kept = false;
    const refill: number[] = [];
    const listed = changed && this.etag && etag ? changedUnits(changed, this.etag, Math.max(size, this.size)) : null;
    if (listed) {
      // Each unit held is looked up in the list, so the work is bounded
      // by what the cache holds, however wide a listed range is.
      const lastWhole = Math.floor(Math.min(size, this.size) / FOLLOW_UNIT);
      for (const k of [...this.units.keys()]) {
        if (k >= lastWhole) this.drop(k);
        else if (inRanges(listed, k) && this.drop(k)) refill.push(k);
      }
      refill.sort((a, b) => a - b);
      kept = true;
    }
    if (!kept) this.clear();
    this.etag = etag;
    this.size = size;
    return { kept, refill: refill.filter((u) => (u + 1) * FOLLOW_UNIT <= size) };
  }

  /** Drops a unit; whether it was held. */
  private drop(unit: number): boolean {
    const v = this.units.get(unit);
    if (!v) return false;
    this.units.delete(unit);
    this.held -= v.byteLength;
    return true;
  }
}

/** The longest `Dendro-Changed` list read; `dendro serve` lists at most 400 ranges. */
const MAX_CHANGED_CHARS = 64 << 10;
/** The most ranges a `Dendro-Changed` list may have. */
const MAX_CHANGED_RANGES = 4096;

/**
 * The units a `Dendro-Changed` header ("<old etag> <unit> <a-b,c,...>")
 * lists as changed since image `from`, as ascending, disjoint inclusive
 * ranges; null when it names another image or another unit, or is not
 * such a list: too long, out of order, or reaching past the larger of
 * the two images (`bytes`). A list not taken costs the follower its
 * cache (everything is read again), never more.
 */
export function changedUnits(header: string, from: string, bytes: number): Array<[number, number]> | null {
  if (header.length > MAX_CHANGED_CHARS) return null;
  // An empty list (nothing changed) may arrive with its space trimmed.
  const m = /^(\S+) (\d+)(?: ([\d,-]*))?$/.exec(header.trim());
  if (!m || m[1] !== from || Number(m[2]) !== FOLLOW_UNIT) return null;
  const units = Math.ceil(bytes / FOLLOW_UNIT);
  const out: Array<[number, number]> = [];
  for (const part of (m[3] ?? "").split(",")) {
    if (!part) continue;
    const r = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!r) return null;
    const a = Number(r[1]);
    const b = r[2] === undefined ? a : Number(r[2]);
    const last = out[out.length - 1];
    if (!(a <= b && b < units) || (last && a <= last[1]) || out.length >= MAX_CHANGED_RANGES) return null;
    out.push([a, b]);
  }
  return out;
}

/** Whether `unit` lies in one of `ranges` (ascending, disjoint). */
function inRanges(ranges: ReadonlyArray<readonly [number, number]>, unit: number): boolean {
  let lo = 0;
  let hi = ranges.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ranges[mid]![1] < unit) lo = mid + 1;
    else hi = mid;
  }
  return lo < ranges.length && ranges[lo]![0] <= unit;
}

/** What a follower's probe found: unchanged (304), or a new image and its first bytes. */
export type FollowProbe = { unchanged: true } | { unchanged: false; probe: Probe; changed: string | null };

/**
 * Revalidates `url` against the image `cache` holds: `If-None-Match` with
 * its ETag, and the first `bytes` bytes when it changed (or when there is
 * no image yet). A server that does not answer ranges cannot be followed.
 */
export async function probeFollow(url: string, bytes: number, cache: PageCache): Promise<FollowProbe> {
  const headers: Record<string, string> = { Range: `bytes=0-${bytes - 1}` };
  if (cache.etag) headers["If-None-Match"] = cache.etag;
  cache.requests++;
  const res = await fetch(url, { headers, cache: "no-store" });
  if (res.status === 304) return { unchanged: true };
  const size = totalOf(res.headers.get("content-range"));
  if (res.status !== 206 || size === null) {
    void res.body?.cancel().catch(() => {});
    throw new Error(`${url} answered ${res.status} to a range request; only a server that answers ranges (dendro serve) can be followed`);
  }
  const head = await bodyAtMost(res, bytes);
  if (!/^bytes\s+0-/i.test(res.headers.get("content-range") ?? "") || head === null || head.byteLength !== Math.min(bytes, size)) {
    throw new Error(`${url} answered bytes other than the first ${bytes} asked for (${res.headers.get("content-range")}); it cannot be followed`);
  }
  cache.netBytes += head.byteLength;
  return { unchanged: false, probe: { size, etag: strong(res.headers.get("etag")), head }, changed: res.headers.get("dendro-changed") };
}

/** A response's body, or null (and the rest not read) once it is longer than `limit` bytes. */
async function bodyAtMost(res: Response, limit: number): Promise<Uint8Array | null> {
  const reader = res.body?.getReader();
  if (!reader) return new Uint8Array(0);
  const parts: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > limit) {
      void reader.cancel().catch(() => {});
      return null;
    }
    parts.push(value);
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * A URL followed while a writer appends to it: one image of it (the
 * probe's ETag, sent as `If-Match` with every range, so a `412` means the
 * server no longer holds that image and the read fails as Changed), read
 * through the follower's page cache, which outlives the image.
 */
export class FollowSource implements ByteSource {
  readonly size: number;
  private readonly etag: string | null;

  constructor(
    private readonly url: string,
    probe: Probe,
    private readonly cache: PageCache,
  ) {
    this.size = probe.size;
    this.etag = probe.etag;
    // The probe's whole units go in the cache (its last may be partial).
    const whole = Math.floor(Math.min(probe.head.byteLength, probe.size) / FOLLOW_UNIT);
    for (let u = 0; u < whole; u++) cache.put(u, probe.head.slice(u * FOLLOW_UNIT, (u + 1) * FOLLOW_UNIT));
  }

  read(offset: number, length: number): Uint8Array {
    const out = new Uint8Array(length);
    if (length === 0) return out;
    const end = offset + length;
    if (end > this.size) throw changed(`${this.url}: a read past the end of the image (${end} > ${this.size})`);
    // The cache holds another image's units once the follower moved on:
    // this (older) image then reads straight from the server.
    if (this.cache.etag !== this.etag) {
      const body = this.fetchRange(offset, end - 1);
      return body;
    }
    const u0 = Math.floor(offset / FOLLOW_UNIT);
    const u1 = Math.floor((end - 1) / FOLLOW_UNIT);
    // Each run of missing units in one request; the units between runs
    // are the ones the writer did not change, already here.
    for (let u = u0; u <= u1; ) {
      if (this.cache.get(u)) {
        u++;
        continue;
      }
      let v = u;
      while (v + 1 <= u1 && !this.cache.get(v + 1)) v++;
      const body = this.fetchRange(u * FOLLOW_UNIT, Math.min(this.size, (v + 1) * FOLLOW_UNIT) - 1);
      for (let k = u; k <= v; k++) this.cache.put(k, body.slice((k - u) * FOLLOW_UNIT, (k - u + 1) * FOLLOW_UNIT));
      u = v + 1;
    }
    for (let u = u0; u <= u1; u++) {
      const unit = this.cache.get(u);
      if (!unit) throw new Error(`${this.url}: unit ${u} missing after it was read`);
      const a = u * FOLLOW_UNIT;
      const from = Math.max(offset, a);
      const to = Math.min(end, a + unit.byteLength);
      if (to <= from) continue;
      out.set(unit.subarray(from - a, to - a), from - offset);
    }
    return out;
  }

  /**
   * Reads `units` of this image into the cache ahead of the engine, in
   * a few multi-range requests instead of one synchronous request per run
   * of them when the catalog is read. What fails here is not reported:
   * the engine's own read of the same units reports it in its words.
   */
  async prefill(units: readonly number[]): Promise<void> {
    const runs: Range[] = [];
    for (const u of units.slice(0, PREFILL_UNITS)) {
      if (this.cache.get(u)) continue;
      const last = runs[runs.length - 1];
      if (last && last[0] + last[1] === u * FOLLOW_UNIT) runs[runs.length - 1] = [last[0], last[1] + FOLLOW_UNIT];
      else runs.push([u * FOLLOW_UNIT, FOLLOW_UNIT]);
    }
    for (let i = 0; i < runs.length; i += MULTI_RANGES) {
      const batch = runs.slice(i, i + MULTI_RANGES);
      let parts: Uint8Array[];
      try {
        parts = await this.fetchRuns(batch);
      } catch {
        return;
      }
      if (this.cache.etag !== this.etag) return;
      batch.forEach(([offset, length], k) => {
        for (let at = 0; at < length; at += FOLLOW_UNIT) this.cache.put((offset + at) / FOLLOW_UNIT, parts[k]!.slice(at, at + FOLLOW_UNIT));
      });
    }
  }

  /** Runs of this image in one request: a plain 206 for one, multipart/byteranges for several. */
  private async fetchRuns(runs: readonly Range[]): Promise<Uint8Array[]> {
    const headers: Record<string, string> = { Range: `bytes=${runs.map(([o, n]) => `${o}-${o + n - 1}`).join(",")}` };
    if (this.etag) headers["If-Match"] = this.etag;
    this.cache.requests++;
    const res = await fetch(this.url, { headers, cache: "no-store" });
    const body = res.status === 206 ? new Uint8Array(await res.arrayBuffer()) : null;
    if (!body || strong(res.headers.get("etag")) !== this.etag) {
      void res.body?.cancel().catch(() => {});
      throw new Error(`${this.url} answered ${res.status} for the image ${this.etag}`);
    }
    this.cache.netBytes += body.byteLength;
    const boundary = /^multipart\/byteranges;\s*boundary="?([^";]+)"?/i.exec(res.headers.get("content-type") ?? "")?.[1];
    if (!boundary) {
      const start = /^bytes\s+(\d+)-/i.exec(res.headers.get("content-range") ?? "")?.[1];
      if (runs.length !== 1 || Number(start) !== runs[0]![0] || body.byteLength !== runs[0]![1]) throw new Error(`${this.url} answered one part for ${runs.length} ranges`);
      return [body];
    }
    const parts = new Map(parseMultipart(body, boundary, this.url).map((p) => [p.offset, p]));
    return runs.map(([offset, length]) => {
      const part = parts.get(offset);
      if (!part || part.bytes.byteLength !== length || part.total !== this.size) throw new Error(`${this.url} left bytes at ${offset} out of its answer`);
      return part.bytes;
    });
  }

  /** Bytes `start` to `stop` (inclusive) of this image, in one request. */
  private fetchRange(start: number, stop: number): Uint8Array {
    const xhr = new XMLHttpRequest();
    xhr.open("GET", this.url, false);
    xhr.responseType = "arraybuffer";
    xhr.setRequestHeader("Range", `bytes=${start}-${stop}`);
    if (this.etag) xhr.setRequestHeader("If-Match", this.etag);
    this.cache.requests++;
    try {
      xhr.send();
    } catch (e) {
      throw new Error(`the request for bytes ${start}-${stop} of ${this.url} failed (${e instanceof Error ? e.message : String(e)})`);
    }
    if (xhr.status === 412 || xhr.status === 416) {
      throw changed(`${this.url} no longer holds the image being read (${xhr.status}); a newer one replaces it`);
    }
    if (xhr.status !== 206) throw new Error(`${this.url} answered ${xhr.status} to a range request`);
    const etag = strong(xhr.getResponseHeader("etag"));
    if (this.etag !== null && etag !== this.etag) {
      throw changed(`the server's ETag of ${this.url} is now ${etag ?? "absent"}; the image read was ${this.etag}`);
    }
    const body = new Uint8Array(xhr.response as ArrayBuffer);
    if (body.byteLength !== stop - start + 1) throw new Error(`${this.url} answered ${body.byteLength} bytes for a range of ${stop - start + 1}`);
    this.cache.netBytes += body.byteLength;
    return body;
  }
}

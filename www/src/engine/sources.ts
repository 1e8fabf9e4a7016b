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
export class BlobSource implements ByteSource {
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
}

/** The answer to the first ranged request of a URL. */
export interface Probe {
  /** The file's length, from Content-Range. */
  size: number;
  /** The strong validator the server sent, if any. */
  etag: string | null;
  /** The bytes of the probe, from offset 0. */
  head: Uint8Array;
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
  return { size, etag: strong(res.headers.get("etag")), head };
}

/**
 * A URL read with synchronous Range requests. Every answer must be a 206
 * for exactly the range asked, of a file of the size and strong ETag the
 * probe saw; otherwise the file changed on the server (or the server
 * stopped answering ranges), and the read fails rather than mixing two
 * versions of the file.
 */
export class HttpSource implements ByteSource {
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
}

/** The unit a follower's page cache and `dendro serve`'s list of changes count in. */
export const FOLLOW_UNIT = 4096;

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

  /**
   * The cache moves to image `etag` of `size` bytes. `changed` is the
   * server's `Dendro-Changed` header ("<old etag> <unit> <a-b,c,...>"):
   * when it names the image the cache holds, only those units (and any
   * past the new end, or the last, partial one) are dropped.
   */
  moveTo(etag: string | null, size: number, changed: string | null): "kept" | "cleared" {
    let kept = false;
    if (changed && this.etag && etag) {
      const m = /^(\S+) (\d+) ([\d,-]*)$/.exec(changed.trim());
      if (m && m[1] === this.etag && Number(m[2]) === FOLLOW_UNIT) {
        for (const part of m[3]!.split(",")) {
          if (!part) continue;
          const [a, b] = part.split("-").map(Number);
          for (let u = a!; u <= (b ?? a!); u++) this.drop(u);
        }
        const lastWhole = Math.floor(Math.min(size, this.size) / FOLLOW_UNIT);
        for (const k of [...this.units.keys()]) if (k >= lastWhole) this.drop(k);
        kept = true;
      }
    }
    if (!kept) this.clear();
    this.etag = etag;
    this.size = size;
    return kept ? "kept" : "cleared";
  }

  private drop(unit: number): void {
    const v = this.units.get(unit);
    if (!v) return;
    this.units.delete(unit);
    this.held -= v.byteLength;
  }
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
  const head = new Uint8Array(await res.arrayBuffer());
  cache.netBytes += head.byteLength;
  return { unchanged: false, probe: { size, etag: strong(res.headers.get("etag")), head }, changed: res.headers.get("dendro-changed") };
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

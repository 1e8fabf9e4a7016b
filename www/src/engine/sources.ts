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

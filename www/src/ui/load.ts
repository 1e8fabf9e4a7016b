// Getting bytes: a URL fetched with progress, or a File read whole.

import { LoadError } from "./errors";

export type Progress = (loaded: number, total: number | null) => void;

/** The last path segment of a URL, for naming the archive. */
export function nameFromUrl(url: string): string {
  try {
    const u = new URL(url, location.href);
    const seg = u.pathname.split("/").filter(Boolean).pop();
    return seg ? decodeURIComponent(seg) : u.host || url;
  } catch {
    return url;
  }
}

export async function fetchWithProgress(url: string, onProgress: Progress, signal?: AbortSignal): Promise<ArrayBuffer> {
  let res: Response;
  try {
    res = await fetch(url, signal ? { signal } : {});
  } catch (e) {
    throw new LoadError(
      `The request for ${url} failed before any answer came back (${e instanceof Error ? e.message : String(e)}). ` +
        "Check the address; a server on another origin must allow this page with CORS.",
    );
  }
  if (!res.ok) {
    throw new LoadError(`The server answered ${res.status}${res.statusText ? " " + res.statusText : ""} for ${url}.`);
  }
  const lenHeader = res.headers.get("content-length");
  const encoded = res.headers.get("content-encoding");
  // With a content encoding, Content-Length counts compressed bytes: no total then.
  const total = lenHeader && !encoded && /^\d+$/.test(lenHeader) ? Number(lenHeader) : null;
  if (!res.body) {
    const buf = await res.arrayBuffer();
    onProgress(buf.byteLength, buf.byteLength);
    return buf;
  }
  const reader = res.body.getReader();
  let loaded = 0;
  let buf: Uint8Array | null = total !== null ? new Uint8Array(total) : null;
  const chunks: Uint8Array[] = [];
  onProgress(0, total);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (buf && loaded + value.byteLength <= buf.byteLength) buf.set(value, loaded);
      else {
        if (buf) {
          // The server sent more than it announced: fall back to collecting chunks.
          chunks.push(buf.subarray(0, loaded));
          buf = null;
        }
        chunks.push(value);
      }
      loaded += value.byteLength;
      onProgress(loaded, total);
    }
  } catch (e) {
    throw new LoadError(`The download of ${url} broke off after ${loaded} bytes (${e instanceof Error ? e.message : String(e)}).`);
  }
  if (buf) return loaded === buf.byteLength ? buf.buffer as ArrayBuffer : buf.slice(0, loaded).buffer;
  const out = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out.buffer;
}

export async function readFile(file: File): Promise<ArrayBuffer> {
  try {
    return await file.arrayBuffer();
  } catch (e) {
    throw new LoadError(`The browser could not read ${file.name} (${e instanceof Error ? e.message : String(e)}).`);
  }
}

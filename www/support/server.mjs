// A small static server for the page tests: www/dist at /, plus extra
// mounts (the shared fixtures, generated archives), on 127.0.0.1 and a
// free port. Serves .wasm as application/wasm and honours byte ranges,
// with a strong ETag (size, modification time, inode) as `dendro serve`
// sends, so a file rewritten under a reader shows up as a new ETag.
// Paths under /slow/ are the same files, stopped halfway: the first half is
// sent, the rest waits until the test calls `releaseSlow()`, so a test sees
// the download progress bar part-way as surely as it likes, not by timing.
// Paths under /multi/ are the same files from a server that also answers
// several ranges in one request (multipart/byteranges), as `dendro serve`
// and nginx do; elsewhere such a request is refused (416), as by servers
// that do not. Every request is noted in `requests` (path, range, status).
// `delayMs` holds every answer that long (a link's latency, for the
// benchmarks); `gate(noted)`, when given, is awaited before each answer.

import { createReadStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { createServer } from "node:http";
import { extname, normalize, resolve, sep } from "node:path";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".wasm": "application/wasm",
  ".txt": "text/plain; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

/**
 * @param {{ root: string, mounts?: Record<string, string>, delayMs?: number, gate?: (noted: object) => Promise<void> }} opts
 *   mounts: URL prefix (ending in "/") -> directory, or exact URL path -> file.
 */
export async function startServer({ root, mounts = {}, delayMs = 0, gate: before = null }) {
  let releaseSlow;
  const gate = new Promise((r) => (releaseSlow = r));
  const requests = [];
  const server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(String(e));
    });
  });

  async function locate(pathname) {
    for (const [prefix, target] of Object.entries(mounts)) {
      if (prefix.endsWith("/") ? pathname.startsWith(prefix) : pathname === prefix) {
        if (!prefix.endsWith("/")) return target;
        return inside(target, pathname.slice(prefix.length));
      }
    }
    return inside(root, pathname.slice(1));
  }

  async function handle(req, res) {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    let pathname = decodeURIComponent(url.pathname);
    let slow = false;
    let multi = false;
    if (pathname.startsWith("/slow/")) {
      slow = true;
      pathname = pathname.slice(5);
    } else if (pathname.startsWith("/multi/")) {
      multi = true;
      pathname = pathname.slice(6);
    }
    const noted = { path: pathname, range: req.headers.range ?? null, status: 0 };
    requests.push(noted);
    res.on("finish", () => (noted.status = res.statusCode));
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    if (before) await before(noted);
    if (pathname.endsWith("/")) pathname += "index.html";
    const file = await locate(pathname);
    const info = file ? await stat(file).catch(() => null) : null;
    if (!file || !info || !info.isFile()) {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found");
      return;
    }
    const headers = {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "accept-ranges": "bytes",
      "cache-control": "no-store",
      etag: `"${info.size.toString(16)}-${Math.round(info.mtimeMs * 1000).toString(16)}-${info.ino.toString(16)}"`,
    };
    let start = 0;
    let end = info.size - 1;
    let status = 200;
    const range = req.headers.range;
    if (range && multi && range.includes(",")) {
      await multipart(res, file, info.size, range, headers);
      return;
    }
    if (range) {
      const m = /^bytes=(\d*)-(\d*)$/.exec(range);
      if (!m || (m[1] === "" && m[2] === "")) {
        res.writeHead(416, { "content-range": `bytes */${info.size}` });
        res.end();
        return;
      }
      if (m[1] === "") {
        start = Math.max(0, info.size - Number(m[2]));
      } else {
        start = Number(m[1]);
        if (m[2] !== "") end = Math.min(end, Number(m[2]));
      }
      if (start > end || start >= info.size) {
        res.writeHead(416, { "content-range": `bytes */${info.size}` });
        res.end();
        return;
      }
      status = 206;
      headers["content-range"] = `bytes ${start}-${end}/${info.size}`;
    }
    headers["content-length"] = String(info.size === 0 ? 0 : end - start + 1);
    res.writeHead(status, headers);
    if (req.method === "HEAD" || info.size === 0) {
      res.end();
      return;
    }
    const stream = createReadStream(file, { start, end, highWaterMark: slow ? 4096 : 64 * 1024 });
    if (!slow) {
      stream.pipe(res);
      return;
    }
    const half = start + Math.floor((end - start + 1) / 2);
    let at = start;
    for await (const chunk of stream) {
      if (at >= half) await gate;
      res.write(chunk);
      at += chunk.length;
    }
    res.end();
  }

  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    /** Lets every /slow/ response held halfway finish (and later ones run through). */
    releaseSlow: () => releaseSlow(),
    /** Every request so far: { path, range, status }. */
    requests,
    close: () => {
      releaseSlow();
      return new Promise((r) => server.close(r));
    },
  };
}

/** Answers `range` (several `a-b` parts) as one multipart/byteranges body, or 416. */
async function multipart(res, file, size, range, headers) {
  const parts = [];
  for (const spec of range.replace(/^bytes=/, "").split(",")) {
    const m = /^\s*(\d+)-(\d+)\s*$/.exec(spec);
    if (!m || Number(m[1]) > Number(m[2]) || Number(m[1]) >= size) {
      res.writeHead(416, { "content-range": `bytes */${size}` });
      res.end();
      return;
    }
    parts.push([Number(m[1]), Math.min(Number(m[2]), size - 1)]);
  }
  const boundary = "test-byteranges";
  const handle = await open(file);
  const chunks = [];
  try {
    for (const [start, end] of parts) {
      chunks.push(Buffer.from(`\r\n--${boundary}\r\nContent-Type: ${headers["content-type"]}\r\nContent-Range: bytes ${start}-${end}/${size}\r\n\r\n`));
      const data = Buffer.alloc(end - start + 1);
      await handle.read(data, 0, data.length, start);
      chunks.push(data);
    }
  } finally {
    await handle.close();
  }
  chunks.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  const body = Buffer.concat(chunks);
  res.writeHead(206, { ...headers, "content-type": `multipart/byteranges; boundary=${boundary}`, "content-length": String(body.length) });
  res.end(body);
}

/** `rel` resolved under `dir`, or null when it would escape it. */
function inside(dir, rel) {
  const base = resolve(dir);
  const full = resolve(base, normalize(rel));
  return full === base || full.startsWith(base + sep) ? full : null;
}



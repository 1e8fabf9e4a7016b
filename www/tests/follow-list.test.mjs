// The follower's page cache and a server's `Dendro-Changed` list (issue
// 29): what the list may make the worker do is bounded by what the cache
// holds, and a list it cannot trust (wider than the file, out of order,
// too long, for another image) costs the cache, never a loop. The engine's
// sources.ts is bundled with esbuild and run in a worker thread, so a
// list that sends it into a loop fails this test after a while instead of
// hanging the runner. No browser or wasm needed.

import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Worker } from "node:worker_threads";
import { build } from "esbuild";
import { WWW } from "./helpers.mjs";

const out = join(mkdtempSync(join(tmpdir(), "dendro-follow-list-")), "sources.mjs");
await build({ entryPoints: [join(WWW, "src/engine/sources.ts")], bundle: true, format: "esm", platform: "neutral", outfile: out, logLevel: "silent" });

/**
 * Runs `body` (the source of an async function of the module) in a worker
 * thread; its result, or a failure when it has not answered in `ms`.
 */
function run(body, ms = 20_000) {
  const code = `
    import { parentPort } from "node:worker_threads";
    const m = await import(${JSON.stringify(out)});
    parentPort.postMessage(await (${body})(m));
  `;
  const worker = new Worker(code, { eval: true, type: "module" });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new Error(`no answer in ${ms} ms: the worker is still at it`));
    }, ms);
    worker.once("message", (v) => {
      clearTimeout(timer);
      void worker.terminate();
      resolve(v);
    });
    worker.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** A cache holding units 0..15 of image "a" (64 KiB), moved to image "b" of `size` bytes with `list`. */
const moved = (list, size = 65536) => `(m) => {
  const cache = new m.PageCache();
  cache.moveTo('"a"', 65536, null);
  for (let u = 0; u < 16; u++) cache.put(u, new Uint8Array(4096));
  const r = cache.moveTo('"b"', ${size}, ${JSON.stringify(list)});
  return { kept: r.kept, refill: r.refill, count: cache.count };
}`;

describe("a follower's page cache and the server's list of changes", () => {
  it("drops the cache rather than walking a listed range far wider than the file", { timeout: 60_000 }, async () => {
    const r = await run(moved('"a" 4096 0-9007199254740990'));
    assert.deepEqual(r, { kept: false, refill: [], count: 0 });
  });

  it("refuses ranges past the file's end, out of order, overlapping, malformed, or too many", { timeout: 60_000 }, async () => {
    const many = Array.from({ length: 5000 }, (_, i) => String(i * 2)).join(",");
    const cases = [
      ['"a" 4096 1,100000-100001', 65536],
      ['"a" 4096 5-9,2-3', 65536],
      ['"a" 4096 2-5,4-6', 65536],
      ['"a" 4096 3-1', 65536],
      ['"a" 4096 1-2-3', 65536],
      ['"a" 4096 x', 65536],
      ['"z" 4096 1', 65536],
      ['"a" 512 1', 65536],
      // Within a 1 GiB image, but more ranges than any server lists.
      [`"a" 4096 ${many}`, 1 << 30],
    ];
    for (const [list, size] of cases) {
      const r = await run(moved(list, size));
      assert.equal(r.kept, false, list.slice(0, 40));
      assert.equal(r.count, 0, list.slice(0, 40));
    }
  });

  it("keeps every unit a sound list leaves out, and offers the changed ones it held for reading again", { timeout: 60_000 }, async () => {
    assert.deepEqual(await run(moved('"a" 4096 1,3-4,15')), { kept: true, refill: [1, 3, 4, 15], count: 12 });
    // Nothing changed (the list's space trimmed away).
    assert.deepEqual(await run(moved('"a" 4096')), { kept: true, refill: [], count: 16 });
    // A shorter image: what lies past its last whole unit goes too.
    assert.deepEqual(await run(moved('"a" 4096 2', 10 * 4096 + 100)), { kept: true, refill: [2], count: 9 });
  });
});

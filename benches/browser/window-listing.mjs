// What a first picture of a window costs an archive read in place, by the
// two paths of the engine (issue 33, "List once"), in headless Chromium on
// one build:
//
//   listed   what a plot needed before: the catalog's pages fetched ahead
//            (prefetchCatalog), the whole listing (describePacked), then
//            the window's footers fetched ahead and its preview from them
//   sampled  the window listed from the time index (prefetchWindow with a
//            sample of 64) and the sampled preview, no describe
//   exact    then (cumulative) the exact envelope of the window listed
//            from the index, still no describe
//
// The archive is held in the page and read through a synchronous source
// that counts what it is asked; a plan's rounds are filled from the same
// bytes. So the figures are the engine's reads (each a `Blob` read or an
// HTTP request when dropped or opened by URL) and its own time, not the
// browser's file reads. Medians of --runs (3) runs, each on a fresh open.
//
//   node benches/browser/window-listing.mjs [--runs N] FILE.dendro

import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { bundleEngine, enginePage, launch, serve } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const runs = args.includes("--runs") ? Number(args[args.indexOf("--runs") + 1]) : 3;
const file = args.filter((a, i) => !a.startsWith("--") && args[i - 1] !== "--runs").pop();
if (!file) throw new Error("usage: node benches/browser/window-listing.mjs [--runs N] FILE.dendro");

const out = join(tmpdir(), "dendro-window-listing-bench");
await bundleEngine(out);
const server = await serve({ "/engine/": out, "/file/": dirname(file) });
const browser = await launch();
const { page } = await enginePage(browser, server.url);

const result = await page.evaluate(
  async ({ name, runs }) => {
    const pkg = await window.rawEngine();
    const bytes = new Uint8Array(await (await fetch(`/file/${name}`)).arrayBuffer());
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const open = (counter) => {
      const source = {
        size: bytes.byteLength,
        read: (offset, length) => {
          counter.reads++;
          counter.bytes += length;
          return bytes.slice(offset, offset + length);
        },
      };
      return pkg.Archive.openLazy(source, name, false, 64 << 10);
    };
    const drive = (plan, counter) => {
      try {
        for (let next = plan.next(); next !== undefined; next = plan.next()) {
          counter.rounds++;
          for (let i = 0; i + 1 < next.length; i += 2) {
            counter.ranges++;
            counter.bytes += next[i + 1];
            plan.fill(next[i], bytes.subarray(next[i], next[i] + next[i + 1]));
          }
        }
      } finally {
        plan.free();
      }
    };
    const fresh = () => ({ reads: 0, ranges: 0, rounds: 0, bytes: 0 });
    const out = { listed: [], sampled: [], exact: [] };
    let first = null;
    for (let run = 0; run < runs; run++) {
      // listed: the whole catalog, then the window's footers.
      let c = fresh();
      let a = open(c);
      let t0 = performance.now();
      drive(a.prefetchCatalog(), c);
      const d = a.describePacked();
      const source = d.sources[0].id;
      const stream = d.sources[0].streams[0].name;
      const [from, to] = [-(2n ** 63n), 2n ** 63n - 1n];
      drive(a.prefetchWindow(source, stream, from, to, undefined, 800, undefined, true), c);
      const preview = a.previewRange(source, stream, from, to, undefined, 800, undefined);
      out.listed.push({ ms: performance.now() - t0, ...c, segments_from_stats: preview?.segments_from_stats });
      a.free();
      // window: the sample, then the exact envelope, never the whole listing.
      c = fresh();
      a = open(c);
      t0 = performance.now();
      drive(a.prefetchWindow(source, stream, from, to, undefined, 800, undefined, true, 64), c);
      const sample = a.previewRange(source, stream, from, to, undefined, 800, undefined, 64);
      out.sampled.push({ ms: performance.now() - t0, ...c, sample: sample?.sample, total: a.windowSegments(source, stream, from, to).total });
      drive(a.prefetchWindow(source, stream, from, to, undefined, 800, undefined, true), c);
      const exact = a.readRange(source, stream, from, to, undefined, 800, undefined);
      out.exact.push({ ms: performance.now() - t0, ...c, rows: exact.rows_in_window, segments_left_out: exact.segments_left_out });
      a.free();
      first ??= { stream, segments: d.segments.seq.length };
    }
    const med = (xs) => Object.fromEntries(Object.keys(xs[0]).map((k) => [k, typeof xs[0][k] === "number" ? median(xs.map((x) => x[k])) : xs[0][k]]));
    return { first, listed: med(out.listed), sampled: med(out.sampled), exact: med(out.exact) };
  },
  { name: basename(file), runs },
);
console.log(JSON.stringify({ when: new Date().toISOString(), file: basename(file), runs, ...result }, null, 1));
await browser.close();
await server.close();

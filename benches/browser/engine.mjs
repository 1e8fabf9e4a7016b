// Benchmarks the browser engine in headless Chromium against the targets
// of issue 4, printing medians (JSON with --json):
//
//   open + describe   demo10/demo100.dendro (written by dendro's demo, 10
//                     and 100 MB) and a100.dendro (100 MB, 1,000 segments),
//                     through createEngine() and its worker
//   decode            one ~8 MiB segment in wasm vs natively (ratio)
//   readRange         maxPoints = 2000 over 1M rows, cold and cached;
//                     the whole 5.2M-row stream of 1,000 segments with the
//                     viewer's columns at 1,000 and 2,000 points; and the
//                     first plot of a fresh page (open, describe, schema,
//                     readRange of the whole span) for a100 and demo100
//   bundle            dendro_bg.wasm raw and gzipped
//
// The inputs and the native figures come from `cargo bench --bench decode`
// (benches/decode.rs), run first. Needs `scripts/build-wasm.sh --test-hooks`.
//
//   node benches/browser/engine.mjs [--json] [--runs N] [--wasm PATH]
//
// --wasm runs another build of dendro_bg.wasm (say, the previous commit's)
// with this checkout's glue and client, for before-and-after figures.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { bundleEngine, enginePage, launch, root, serve } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const asJson = args.includes("--json");
const runs = Number(args[args.indexOf("--runs") + 1]) || 9;
const wasmPath = args.includes("--wasm") ? args[args.indexOf("--wasm") + 1] : undefined;

const log = (...m) => console.error("bench:", ...m);

log("native side (cargo bench --bench decode)");
const nativeOut = execFileSync("cargo", ["bench", "--bench", "decode", "--quiet"], {
  cwd: root,
  encoding: "utf8",
  stdio: ["ignore", "pipe", "inherit"],
});
const native = JSON.parse(nativeOut.trim().split("\n").filter((l) => l.startsWith("{")).pop());

const out = join(tmpdir(), "dendro-engine-bench");
await bundleEngine(out, wasmPath ? { wasm: wasmPath } : {});
const server = await serve({ "/engine/": out, "/bench/": native.dir });
const browser = await launch();
const { page } = await enginePage(browser, server.url);

const result = await page.evaluate(
  async ({ runs, segRows }) => {
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const fetchBytes = async (f) => (await fetch(`/bench/${f}`)).arrayBuffer();
    const engine = window.createEngine();
    const r = {};

    for (const name of ["demo10", "demo100", "a100"]) {
      const bytes = await fetchBytes(`${name}.dendro`);
      const open = [], describe = [], both = [];
      for (let i = 0; i < runs; i++) {
        const copy = bytes.slice(0);
        const t0 = performance.now();
        const h = await engine.open(copy, `${name}.dendro`);
        const t1 = performance.now();
        const d = await h.describe();
        const t2 = performance.now();
        open.push(t1 - t0);
        describe.push(t2 - t1);
        both.push(t2 - t0);
        r[`${name}_segments`] = d.sources.reduce((n, s) => n + s.streams.reduce((m, st) => m + st.segments.length, 0), 0);
        await h.close();
      }
      r[`${name}_bytes`] = bytes.byteLength;
      r[`${name}_open_ms`] = median(open);
      // The first open also grows wasm memory to hold the file.
      r[`${name}_first_open_ms`] = open[0];
      r[`${name}_describe_ms`] = median(describe);
      r[`${name}_open_describe_ms`] = median(both);
      r[`${name}_open_mb_s`] = bytes.byteLength / 1e6 / (median(open) / 1e3);
    }

    // describe alone, repeated on one open archive of 1,000 segments.
    {
      const h = await engine.open(await fetchBytes("a100.dendro"), "a100.dendro");
      const times = [];
      for (let i = 0; i < runs; i++) {
        const t = performance.now();
        await h.describe();
        times.push(performance.now() - t);
      }
      r.describe_1000_segments_ms = median(times);

      // readRange over the first 1M rows (5,200 rows a segment, 1 ms apart).
      const t0 = 1700000000000000000n, step = 1000000n;
      const from = t0, to = t0 + (1000000n - 1n) * step;
      let t = performance.now();
      let e = await h.readRange(1, "metrics", from, to, { maxPoints: 2000 });
      r.range_cold_ms = performance.now() - t;
      r.range_rows = e.rows_in_window;
      r.range_points = e.ts.length;
      r.range_segments = e.segments_read;
      const warm = [];
      for (let i = 0; i < runs; i++) {
        t = performance.now();
        e = await h.readRange(1, "metrics", from, to, { maxPoints: 2000 });
        warm.push(performance.now() - t);
      }
      r.range_cached_ms = median(warm);
      await h.close();

      // The same with the decoded-segment cache off: every call fetches and
      // decodes all the segments again (after one warm-up call, so the
      // figure is not the JIT's first pass).
      const uncachedEngine = window.createEngine({ cacheBytes: 0 });
      const u = await uncachedEngine.open(await fetchBytes("a100.dendro"), "a100.dendro");
      await u.readRange(1, "metrics", from, to, { maxPoints: 2000 });
      const uncached = [];
      for (let i = 0; i < Math.min(runs, 5); i++) {
        t = performance.now();
        await u.readRange(1, "metrics", from, to, { maxPoints: 2000 });
        uncached.push(performance.now() - t);
      }
      r.range_uncached_ms = median(uncached);

      // The same, decoding in the engine worker's own instance instead of
      // the decoder worker: what isolating the decoder costs end to end.
      {
        const inProcess = window.createEngine({ cacheBytes: 0, isolateDecoding: false });
        const p = await inProcess.open(await fetchBytes("a100.dendro"), "a100.dendro");
        await p.readRange(1, "metrics", from, to, { maxPoints: 2000 });
        const times = [];
        for (let i = 0; i < Math.min(runs, 5); i++) {
          t = performance.now();
          await p.readRange(1, "metrics", from, to, { maxPoints: 2000 });
          times.push(performance.now() - t);
        }
        r.range_uncached_in_process_ms = median(times);
        inProcess.terminate();
      }

      // The whole stream, as a first plot asks for it: every row (5.2M in
      // 1,000 segments), the numeric columns, about a point per pixel.
      // Uncached, after one warm-up call.
      const first = 1700000000000000000n, last = first + (5200000n - 1n) * step;
      const columns = ["cpu", "mem", "net_bytes"];
      for (const points of [1000, 2000]) {
        await u.readRange(1, "metrics", first, last, { maxPoints: points, columns });
        const times = [];
        for (let i = 0; i < Math.min(runs, 5); i++) {
          t = performance.now();
          e = await u.readRange(1, "metrics", first, last, { maxPoints: points, columns });
          times.push(performance.now() - t);
        }
        r[`range_whole_${points}_ms`] = median(times);
        r[`range_whole_${points}_decoded`] = e.segments_read;
        r[`range_whole_${points}_from_stats`] = e.segments_from_stats ?? 0;
      }
      r.range_whole_rows = e.rows_in_window;
      uncachedEngine.terminate();
    }
    engine.terminate();

    // Decode alone, in wasm, on the page's thread: the same bytes and the
    // same call (segment::decode_segment) as benches/decode.rs.
    {
      const pkg = await window.rawEngine();
      const seg = new Uint8Array(await fetchBytes("seg8m.parquet"));
      const times = [];
      // As many runs as benches/decode.rs takes: decode is short and the
      // host is shared, so a median of few runs wanders.
      for (let i = 0; i < Math.max(runs, 31) + 1; i++) {
        const t = performance.now();
        const rows = pkg.__decodeForBench(seg);
        times.push(performance.now() - t);
        if (rows !== segRows) throw new Error(`decoded ${rows} rows, expected ${segRows}`);
      }
      times.shift();
      r.wasm_decode_ms = median(times);
      r.wasm_decode_mb_s = seg.byteLength / 1e6 / (r.wasm_decode_ms / 1e3);

      // What decoding in a second instance adds for the same segment: the
      // segment's bytes copied out of the archive's instance (a copy of the
      // same length here), the decoded time axis and numeric columns packed
      // and copied out of the decoder, and copied into the archive's
      // instance and unpacked there. Transfers between workers move
      // buffers without copying them.
      if (typeof pkg.decodePacked === "function") {
        const copy = [], packed = [], unpack = [];
        let bytesOut = 0;
        for (let i = 0; i < Math.max(runs, 31) + 1; i++) {
          let t = performance.now();
          const out = new Uint8Array(seg.byteLength);
          out.set(seg);
          copy.push(performance.now() - t);
          t = performance.now();
          const buffers = pkg.decodePacked(seg, undefined);
          packed.push(performance.now() - t);
          bytesOut = buffers.reduce((n, b) => n + b.byteLength, 0);
          t = performance.now();
          const rows = pkg.__unpackForBench(buffers);
          unpack.push(performance.now() - t);
          if (rows !== segRows) throw new Error(`unpacked ${rows} rows, expected ${segRows}`);
        }
        for (const xs of [copy, packed, unpack]) xs.shift();
        r.isolated_copy_in_ms = median(copy);
        r.isolated_decode_pack_ms = median(packed);
        r.isolated_unpack_ms = median(unpack);
        r.isolated_packed_bytes = bytesOut;
        r.isolated_extra_ms = r.isolated_copy_in_ms + (r.isolated_decode_pack_ms - r.wasm_decode_ms) + r.isolated_unpack_ms;
      }
    }
    return r;
  },
  { runs, segRows: native.segment_rows },
);

await browser.close();

// First plot in a fresh browser (so no compiled code carries over from an
// earlier worker): the engine's module loaded, then open, describe, schema
// and readRange of the whole span of the first stream with its numeric
// columns (at most 8, as the viewer plots), timed from the open.
for (const [name, points, isolate] of [
  ["a100", 1000, true],
  ["a100", 2000, true],
  ["demo100", 1000, true],
  ["a100", 2000, false],
]) {
  const times = [];
  let last;
  for (let i = 0; i < Math.min(runs, 5); i++) {
    const fresh = await launch();
    const { page: p } = await enginePage(fresh, server.url);
    last = await p.evaluate(
      async ({ name, points, isolate }) => {
        const fetchBytes = async (f) => (await fetch(`/bench/${f}`)).arrayBuffer();
        const engine = window.createEngine({ isolateDecoding: isolate });
        // Load the module first, as the page does while it waits for a file.
        await (await engine.open(await fetchBytes(`${name}.dendro`), "warm")).close();
        const bytes = await fetchBytes(`${name}.dendro`);
        const t0 = performance.now();
        const h = await engine.open(bytes, `${name}.dendro`);
        const d = await h.describe();
        const src = d.sources[0];
        const st = src.streams[0];
        const schema = await h.schema(src.id, st.name);
        const columns = schema.columns
          .filter((c) => c.name !== schema.ts_column && /^(U?Int|Float|Boolean)/.test(c.type))
          .map((c) => c.name)
          .slice(0, 8);
        const from = st.segments[0].first_ts, to = st.segments[st.segments.length - 1].last_ts;
        const e = await h.readRange(src.id, st.name, from, to, { maxPoints: points, columns });
        const ms = performance.now() - t0;
        engine.terminate();
        return { ms, decoded: e.segments_read, from_stats: e.segments_from_stats ?? 0, segments: st.segments.length };
      },
      { name, points, isolate },
    );
    times.push(last.ms);
    await fresh.close();
  }
  times.sort((a, b) => a - b);
  const key = `first_plot_${name}_${points}${isolate ? "" : "_in_process"}`;
  result[`${key}_ms`] = times[Math.floor(times.length / 2)];
  result[`${key}_detail`] = `${last.segments} segments, ${last.decoded} decoded, ${last.from_stats} from statistics`;
}
await server.close();

const wasm = readFileSync(wasmPath ?? join(root, "www/pkg/dendro_bg.wasm"));
const glue = readFileSync(join(root, "www/pkg/dendro.js"));
const worker = readFileSync(join(out, "worker.js"));
const figures = {
  ...native,
  ...result,
  decode_ratio: native.native_decode_ms / result.wasm_decode_ms,
  wasm_bytes: wasm.length,
  wasm_gzip_bytes: gzipSync(wasm, { level: 9 }).length,
  worker_js_gzip_bytes: gzipSync(worker, { level: 9 }).length,
  glue_js_bytes: glue.length,
  runs,
};

if (asJson) {
  console.log(JSON.stringify(figures, null, 2));
} else {
  const f = (x, d = 1) => x.toFixed(d);
  const mb = (b) => f(b / 1e6, 2);
  const verdict = (ok) => (ok ? "meets" : "MISSES");
  console.log(`medians of ${runs} runs, headless Chromium, ${new Date().toISOString()}
open + describe, ${mb(figures.demo10_bytes)} MB demo (${figures.demo10_segments} segments): ${f(figures.demo10_open_describe_ms)} ms (open ${f(figures.demo10_open_ms)} ms = ${f(figures.demo10_open_mb_s, 0)} MB/s, first open ${f(figures.demo10_first_open_ms)} ms, describe ${f(figures.demo10_describe_ms)} ms)
open + describe, ${mb(figures.demo100_bytes)} MB demo (${figures.demo100_segments} segments): ${f(figures.demo100_open_describe_ms)} ms (open ${f(figures.demo100_open_ms)} ms = ${f(figures.demo100_open_mb_s, 0)} MB/s, first open ${f(figures.demo100_first_open_ms)} ms, describe ${f(figures.demo100_describe_ms)} ms)
open + describe, ${mb(figures.a100_bytes)} MB (${figures.a100_segments} segments): ${f(figures.a100_open_describe_ms)} ms (open ${f(figures.a100_open_ms)} ms = ${f(figures.a100_open_mb_s, 0)} MB/s, first open ${f(figures.a100_first_open_ms)} ms, describe ${f(figures.a100_describe_ms)} ms)
  open >= 500 MB/s: ${verdict(Math.min(figures.demo10_open_mb_s, figures.demo100_open_mb_s, figures.a100_open_mb_s) >= 500)}
describe at 1,000 segments: ${f(figures.describe_1000_segments_ms, 2)} ms (native ${f(figures.a100_native_describe_ms, 2)} ms)  < 20 ms: ${verdict(figures.describe_1000_segments_ms < 20)}
decode of one ${mb(figures.segment_bytes)} MB segment (${figures.segment_rows} rows): wasm ${f(figures.wasm_decode_ms)} ms (${f(figures.wasm_decode_mb_s, 0)} MB/s), native ${f(figures.native_decode_ms)} ms (${f(figures.native_decode_mb_s, 0)} MB/s), ratio ${f(figures.decode_ratio, 2)}x  >= 0.5x: ${verdict(figures.decode_ratio >= 0.5)}
readRange maxPoints=2000 over ${figures.range_rows} rows (${figures.range_segments} segments): ${figures.range_points} points, ${f(figures.range_cold_ms)} ms first call, ${f(figures.range_uncached_ms)} ms uncached, ${f(figures.range_cached_ms)} ms cached
readRange of the whole stream, ${figures.range_whole_rows} rows in 1,000 segments, 3 columns, uncached: ${f(figures.range_whole_1000_ms)} ms at 1,000 points (${figures.range_whole_1000_decoded} decoded, ${figures.range_whole_1000_from_stats} from statistics), ${f(figures.range_whole_2000_ms)} ms at 2,000 points (${figures.range_whole_2000_decoded} decoded, ${figures.range_whole_2000_from_stats} from statistics)
first plot on a fresh page (open + describe + schema + readRange of the whole span), medians of ${Math.min(runs, 5)}: a100 at 1,000 points ${f(figures.first_plot_a100_1000_ms)} ms (${figures.first_plot_a100_1000_detail}); a100 at 2,000 points ${f(figures.first_plot_a100_2000_ms)} ms (${figures.first_plot_a100_2000_detail}); demo100 at 1,000 points ${f(figures.first_plot_demo100_1000_ms)} ms (${figures.first_plot_demo100_1000_detail}); a100 at 2,000 points decoding in the engine worker ${f(figures.first_plot_a100_2000_in_process_ms)} ms  < 500 ms: ${verdict(Math.max(figures.first_plot_a100_1000_ms, figures.first_plot_a100_2000_ms, figures.first_plot_demo100_1000_ms) < 500)}
decoding in a second instance, one ${mb(figures.segment_bytes)} MB segment: copy of its bytes ${f(figures.isolated_copy_in_ms)} ms, decode and pack ${f(figures.isolated_decode_pack_ms)} ms (decode alone ${f(figures.wasm_decode_ms)} ms; ${mb(figures.isolated_packed_bytes)} MB packed), unpack ${f(figures.isolated_unpack_ms)} ms: ${f(figures.isolated_extra_ms)} ms added
readRange maxPoints=2000 over 1M rows uncached: ${f(figures.range_uncached_ms)} ms through the decoder worker, ${f(figures.range_uncached_in_process_ms)} ms decoding in the engine worker
bundle: dendro_bg.wasm ${mb(figures.wasm_bytes)} MB, ${mb(figures.wasm_gzip_bytes)} MB gzipped  <= 1.2 MB: ${verdict(figures.wasm_gzip_bytes <= 1.2e6)}; worker.js ${f(figures.worker_js_gzip_bytes / 1e3)} kB gzipped`);
}

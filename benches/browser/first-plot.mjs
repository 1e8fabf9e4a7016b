// Times the engine's part of the viewer's first plot (issue 13) on a fresh
// engine page per run: open the demo archive (read in place from a Blob, or
// copied whole), describe, schema of the first source's stream, then the
// whole-span readRange of the first PLOTS numeric columns with a preview,
// as the page asks for it. Prints per-run times and medians (ms).
//
//   node benches/browser/first-plot.mjs [--runs N] [--mode lazy|memory] [--wasm PATH] [--archive FILE]
//                                     [--stream NAME] [--plots N] [--trace] [--trace-from MARK]
//                                     [--prefetch] [--idle MS]
//
// --prefetch sends the stream's prefetch as soon as the description is in,
// as the page does, then waits --idle ms (default 80, about what the page
// spends building its overview and cards) before asking for the schema.
//
// Builds nothing: www/pkg must hold the module (scripts/build-wasm.sh).
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { loadavg } from "node:os";
import { bundleEngine, enginePage, launch, root, serve } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const runs = Number(opt("--runs")) || 5;
const mode = opt("--mode") ?? "lazy";
const archive = opt("--archive") ?? join(root, "target/bench-viewer/demo100.dendro");
const stream = opt("--stream") ?? "cpu";
const plots = Number(opt("--plots")) || 8;
const wasm = opt("--wasm");
const prefetch = args.includes("--prefetch");
const idle = Number(opt("--idle") ?? 80);

const out = join(tmpdir(), `dendro-first-plot-${process.pid}`);
await bundleEngine(out, wasm ? { wasm } : {});
// --trace: the worker's own marks (mark() in worker.ts) from the readRange on
// (or from the mark named by --trace-from, e.g. "start schema"), each with
// the in-place reader's counts where it has them.
const trace = args.includes("--trace");
if (trace) {
  const { readFile, writeFile } = await import("node:fs/promises");
  const w = join(out, "worker.js");
  await writeFile(w, "self.__dendroTrace = true;\n" + (await readFile(w, "utf8")));
}
const server = await serve({ "/engine/": out, "/data/": dirname(archive) });
const browser = await launch();
const rows = [];
for (let i = 0; i < runs; i++) {
  const { page, problems } = await enginePage(browser, server.url);
  const r = await page.evaluate(
    async ({ file, mode, stream, plots, prefetch, idle }) => {
      const blob = await (await fetch(`/data/${file}`)).blob();
      const t0 = performance.now();
      const engine = window.createEngine();
      const a = mode === "lazy" ? await engine.openFile(blob, file) : await engine.open(await blob.arrayBuffer(), file);
      const t = { open: performance.now() - t0 };
      let m = performance.now();
      const d = await a.describe();
      t.describe = performance.now() - m;
      const source = d.sources[0];
      const st = source.streams.find((s) => s.name === stream);
      const first = BigInt(st.segments[0].first_ts);
      const last = BigInt(st.live_span ? st.live_span[1] : st.segments[st.segments.length - 1].last_ts);
      if (prefetch) {
        void a.prefetch(source.id, stream, first, last);
        await new Promise((r) => setTimeout(r, idle));
      }
      m = performance.now();
      const schema = await a.schema(source.id, stream);
      t.schema = performance.now() - m;
      const numericType = /^(U?Int(8|16|32|64)|Float(16|32|64)|Boolean)$/;
      const KIND = "dendro.kind";
      const numeric = schema.columns.filter((c) => c.name !== schema.ts_column && numericType.test(c.type));
      const columns = numeric.slice(0, plots).map((c) => c.name);
      // Counters are plotted as rates, as the page does.
      const rates = numeric.slice(0, plots).filter((c) => c.metadata[KIND] === "counter").map((c) => c.name);
      m = performance.now();
      let preview;
      const env = await a.readRange(source.id, stream, first, last, {
        columns,
        maxPoints: 1200,
        rates,
        onPreview: () => (preview = performance.now() - m),
      });
      t.preview = preview ?? NaN;
      t.exact = performance.now() - m;
      t.total = performance.now() - t0;
      t.read = env.segments_read;
      t.cols = columns.length;
      t.rates = rates.length;
      window.__engine = engine;
      return t;
    },
    { file: basename(archive), mode, stream, plots, prefetch, idle },
  );
  if (problems.length) console.error(problems);
  if (trace) {
    const worker = page.workers().find((w) => /\/worker\.js/.test(w.url()));
    const log = worker ? await worker.evaluate(() => self.__dendroTraceLog ?? []).catch(() => []) : [];
    const start = log.find((e) => e.what === (opt("--trace-from") ?? "start readRange"))?.at;
    if (start) console.error(log.filter((e) => e.at >= start).map((e) => {
      const { what, at, ...extra } = e;
      const notes = Object.entries(extra).map(([k, v]) => `${k}=${v}`).join(" ");
      return `${what} +${Math.round(at - start)}${notes ? ` (${notes})` : ""}`;
    }).join(", "));
  }
  console.error(JSON.stringify(r));
  rows.push(r);
  await page.close();
}
await browser.close();
await server.close();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const keys = ["open", "describe", "schema", "preview", "exact", "total"];
console.log(JSON.stringify({ mode, load: loadavg()[0].toFixed(1), ...Object.fromEntries(keys.map((k) => [k, Math.round(median(rows.map((r) => r[k])))])) }));

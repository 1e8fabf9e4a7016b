// Times issue 32's distributions in headless Chromium, against its targets:
//
//   heatmap   heat86k.dendro (24 h at 1 s of a 64-bucket histogram, 86,400
//             rows in 24 segments) in the viewer page (www/dist):
//             - click: a fresh page, its URL typed in the box, "Open URL"
//               clicked; time from the click to the heatmap with its
//               quantile lines drawn (uPlot's draw hook sets
//               data-state="drawn"). Target 1 s.
//             - decoded: on that page, the heatmap unticked and ticked
//               again in the schema table: a new plot asks the engine for
//               the window, whose segments it has decoded already; time
//               from the tick to drawn. Target 300 ms.
//             - engine: the engine alone (no page drawing), the same
//               heatmap call cold (segments decoded) and warm.
//   region    region10m.dendro (10,000,000 rows 1 ms apart, a gauge and a
//             counter, 100 segments) read in place from a Blob by the
//             engine alone: regionStats over the whole span, cold (every
//             segment decoded) and warm (again). Target 500 ms.
//
// Prints per-run times and medians (ms), and one JSON line of medians.
// Inputs are written into target/bench-distributions by
// `cargo run --release --example distributions_archive -- --bench` when
// missing. Builds nothing of the viewer: www/dist and www/pkg must be
// there (a release engine: scripts/build-wasm.sh, then npm run build:www).
//
// Each heatmap figure is split at the heatmap's data-state changes: until
// "reading" (the page opens the archive, describes it, reads the schema
// and asks), until "drawing" (the engine's answer is back), until "drawn".
//
// --dist DIR serves another build of the viewer (for example main's,
// copied aside) for the page figures; --pkg DIR bundles the engine-only
// figures from another www/pkg (its dendro.js and dendro_bg.wasm) in the
// same way. With both, an A/B in one run: A (DIR) and B (this tree's)
// alternate, run by run.
//
//   node benches/browser/distributions-page.mjs [--runs N] [--skip heatmap,region] [--pixels N] [--dist DIR] [--pkg DIR]

import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { bundleEngine, enginePage, launch, root, serve, startServer } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const runs = Number(opt("--runs")) || 5;
const skip = new Set((opt("--skip") ?? "").split(",").filter(Boolean));
const pixels = Number(opt("--pixels")) || 1200;
const INPUTS = join(root, "target/bench-distributions");
const DIST = join(root, "www/dist");
const OTHER_DIST = opt("--dist");
const OTHER_PKG = opt("--pkg");

for (const f of ["index.html", "main.js", "worker.js", "dendro_bg.wasm"]) {
  if (!existsSync(join(DIST, f))) throw new Error(`www/dist/${f} is missing: run scripts/build-wasm.sh, then npm run build:www`);
}
if (!existsSync(join(INPUTS, "heat86k.dendro")) || !existsSync(join(INPUTS, "region10m.dendro"))) {
  execFileSync("cargo", ["run", "--release", "--quiet", "--example", "distributions_archive", "--", INPUTS, "--bench"], { cwd: root, stdio: "inherit" });
}

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};
const browser = await launch();
const out = { load: loadavg()[0].toFixed(1) };

/**
 * In the page: runs `act`, then resolves with the ms from just before it to
 * the moment the heatmap's data-state becomes "drawn" (a MutationObserver,
 * so the time is the draw hook's, not a poll's).
 */
function watchDrawn() {
  window.__drawnAfter = (act) =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const steps = {};
      const done = () => {
        const el = document.querySelector('[data-testid="heatmap"]');
        return el?.dataset.state === "drawn" && el.dendroHeatmap;
      };
      const mo = new MutationObserver(() => {
        const state = document.querySelector('[data-testid="heatmap"]')?.dataset.state;
        if (state && !(state in steps)) steps[state] = performance.now() - t0;
        if (!done()) return;
        mo.disconnect();
        const el = document.querySelector('[data-testid="heatmap"]');
        resolve({ ms: performance.now() - t0, steps, rows: el.dendroHeatmap.rows, pixels: el.dendroHeatmap.pixels, buckets: el.dendroHeatmap.buckets });
      });
      mo.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state"] });
      act();
      setTimeout(() => resolve({ ms: NaN, error: "timed out" }), 30_000);
    });
}

/** The builds compared: B (this tree's) alone, or A and B alternating. */
const builds = (a) => (a ? [["A", a], ["B", null]] : [["B", null]]);
const label = (name, key) => (name === "B" ? key : `${key}_A`);

if (!skip.has("heatmap")) {
  const servers = {};
  for (const [name, dir] of builds(OTHER_DIST)) servers[name] = await startServer({ root: dir ?? DIST, mounts: { "/data/": INPUTS } });
  const rows = { A: [], B: [] };
  for (let i = 0; i < runs; i++) {
    for (const [name] of builds(OTHER_DIST)) {
      const server = servers[name];
      const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1 });
      const page = await context.newPage();
      const problems = [];
      page.on("pageerror", (e) => problems.push(e.message));
      await page.goto(`${server.url}/index.html`);
      await page.locator(".dv-url-input").fill(`${server.url}/data/heat86k.dendro`);
      await page.evaluate(watchDrawn);
      const click = await page.evaluate(() => window.__drawnAfter(() => document.querySelector(".dv-url-input").form.requestSubmit()));
      const box = page.locator('input[data-column="latency"]');
      const decoded = [];
      for (let k = 0; k < 3; k++) {
        await box.uncheck();
        decoded.push(await page.evaluate(() => window.__drawnAfter(() => document.querySelector('input[data-column="latency"]').click())));
      }
      const mid = decoded.slice().sort((x, y) => x.ms - y.ms)[1];
      const r = { build: name, click: click.ms, click_steps: click.steps, decoded: mid.ms, decoded_steps: mid.steps, rows: click.rows, pixels: click.pixels, buckets: click.buckets };
      if (problems.length || click.error) r.problems = [...problems, click.error].filter(Boolean);
      console.error("heatmap", JSON.stringify(r));
      rows[name].push(r);
      await context.close();
    }
  }
  for (const [name] of builds(OTHER_DIST)) {
    const rs = rows[name];
    out[label(name, "heatmap_click_ms")] = Math.round(median(rs.map((r) => r.click)));
    out[label(name, "heatmap_click_asked_ms")] = Math.round(median(rs.map((r) => r.click_steps.reading)));
    out[label(name, "heatmap_click_answered_ms")] = Math.round(median(rs.map((r) => r.click_steps.drawing)));
    out[label(name, "heatmap_decoded_ms")] = Math.round(median(rs.map((r) => r.decoded)));
    out[label(name, "heatmap_decoded_answered_ms")] = Math.round(median(rs.map((r) => r.decoded_steps.drawing)));
    await servers[name].close();
  }
  out.heatmap_rows = rows.B[0]?.rows;
  out.heatmap_pixels = rows.B[0]?.pixels;
}

const engineDirs = {};
for (const [name, pkg] of builds(OTHER_PKG)) {
  const dir = join(tmpdir(), `dendro-bench-distributions-${process.pid}-${name}`);
  if (pkg) {
    // The glue and the module go together: A's both, swapped in for the
    // bundling alone, this tree's put back after.
    const keep = join(tmpdir(), `dendro-bench-distributions-${process.pid}-pkg`);
    await cp(join(root, "www/pkg"), keep, { recursive: true });
    try {
      for (const f of ["dendro.js", "dendro_bg.wasm"]) await cp(join(pkg, f), join(root, "www/pkg", f));
      await bundleEngine(dir);
    } finally {
      for (const f of ["dendro.js", "dendro_bg.wasm"]) await cp(join(keep, f), join(root, "www/pkg", f));
      await rm(keep, { recursive: true, force: true });
    }
  } else await bundleEngine(dir);
  engineDirs[name] = dir;
}
const engineServers = {};
for (const [name] of builds(OTHER_PKG)) engineServers[name] = await serve({ "/engine/": engineDirs[name], "/data/": INPUTS });

if (!skip.has("heatmap")) {
  const rows = { A: [], B: [] };
  for (let i = 0; i < runs; i++) {
    for (const [name] of builds(OTHER_PKG)) {
      const { page } = await enginePage(browser, engineServers[name].url);
      const r = await page.evaluate(async (pixels) => {
        const blob = await (await fetch("/data/heat86k.dendro")).blob();
        const engine = window.createEngine();
        const a = await engine.open(await blob.arrayBuffer(), "heat86k.dendro");
        const d = await a.describe();
        const st = d.sources[0].streams[0];
        const req = { source: d.sources[0].id, stream: st.name, column: "latency", from: BigInt(st.segments[0].first_ts), to: BigInt(st.segments[st.segments.length - 1].last_ts), pixels };
        let t = performance.now();
        const cold = await a.heatmap(req);
        const coldMs = performance.now() - t;
        t = performance.now();
        await a.heatmap(req);
        const warmMs = performance.now() - t;
        engine.terminate();
        return { cold: coldMs, warm: warmMs, rows: cold.rows };
      }, pixels);
      console.error("heatmap engine", name, JSON.stringify(r));
      rows[name].push(r);
      await page.close();
    }
  }
  for (const [name] of builds(OTHER_PKG)) {
    out[label(name, "heatmap_engine_cold_ms")] = Math.round(median(rows[name].map((r) => r.cold)));
    out[label(name, "heatmap_engine_warm_ms")] = Math.round(median(rows[name].map((r) => r.warm)));
  }
}

if (!skip.has("region")) {
  const rows = { A: [], B: [] };
  for (let i = 0; i < runs; i++) {
    for (const [name] of builds(OTHER_PKG)) {
      const { page } = await enginePage(browser, engineServers[name].url);
      const r = await page.evaluate(async () => {
        const blob = await (await fetch("/data/region10m.dendro")).blob();
        const engine = window.createEngine();
        const a = await engine.openFile(blob, "region10m.dendro");
        const d = await a.describe();
        const src = d.sources[0];
        const st = src.streams[0];
        const req = { source: src.id, stream: st.name, from: BigInt(st.segments[0].first_ts), to: BigInt(st.segments[st.segments.length - 1].last_ts), columns: ["value", "bytes"] };
        let t = performance.now();
        const cold = await a.regionStats(req);
        const coldMs = performance.now() - t;
        t = performance.now();
        await a.regionStats(req);
        const warmMs = performance.now() - t;
        engine.terminate();
        return { cold: coldMs, warm: warmMs, rows: cold.rows };
      });
      console.error("region", name, JSON.stringify(r));
      rows[name].push(r);
      await page.close();
    }
  }
  out.region_rows = rows.B[0]?.rows;
  for (const [name] of builds(OTHER_PKG)) {
    out[label(name, "region_cold_ms")] = Math.round(median(rows[name].map((r) => r.cold)));
    out[label(name, "region_warm_ms")] = Math.round(median(rows[name].map((r) => r.warm)));
  }
}

for (const server of Object.values(engineServers)) await server.close();
for (const dir of Object.values(engineDirs)) await rm(dir, { recursive: true, force: true });
await browser.close();
console.log(JSON.stringify(out));

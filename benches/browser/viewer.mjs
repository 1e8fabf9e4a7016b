// Benchmarks the viewer page (www/dist, the real page and its engine
// worker) in headless Chromium against the targets of issue 5:
//
//   open      a ~10 MB and a ~100 MB demo archive dropped on a freshly
//             loaded page (synthetic drop of a disk-backed File): time to
//             the overview's counts on screen, to the first plot with its
//             series drawn (a preview from footer statistics, where the
//             page draws one), to the exact plot (data-state="drawn"), to
//             the verify badge; main-thread long tasks
//             from the drop to the end of the open; the same drop again
//             into the same page (worker already running) for comparison.
//             Where the time goes comes from the worker's messages, timed
//             on the page side.
//   click     the ~100 MB archive open on a fresh page, its exact first
//             plot drawn: then a stream of another source card clicked,
//             one after another: time from the click to that stream's
//             plot with its series drawn (preview or exact) and to its
//             exact plot. Issue 13's "500 ms from a click to a drawn plot".
//   memory    the same cold drop on other fresh pages, sampled every 50 ms
//             through the DevTools protocol: JS heap of page and worker,
//             their array-buffer stores, the worker's WebAssembly.Memory
//             (the worker is loaded behind a small module that keeps it in
//             reach, see HOOK), and the renderer processes' resident set;
//             peak and settled (after a forced GC), against the file size.
//   pan       a 3M-row stream opened (?url=) with a window of 1M rows and
//             panned the way the page offers it: a horizontal wheel event
//             every frame over the timeline's lane (a trackpad scrubbed
//             back and forth), with pauses in which the plots refetch;
//             then drags across the plot itself (select to zoom) and
//             double-clicks back out. Frame time from requestAnimationFrame
//             deltas: median, p95, fps; wasm memory after it all.
//
// It builds nothing of the viewer: www/dist and www/pkg must be there (it
// says which command to run if not). Missing archives are written into
// target/bench-viewer/: the demo ones by `dendro demo --size 10|100`
// (through cargo run), the 3M-row stream by
// `cargo run --release --example viewer_archive`.
//
//   node benches/browser/viewer.mjs [--runs N] [--json | --json-out FILE] [--trace DIR] [--skip open,click,memory,pan] [--dist DIR] [--mode memory|lazy]

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { attachDevtools as devtools, WASM_MEMORY_HOOK, launch, rendererRss, root, installInked, startServer } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const asJson = args.includes("--json");
const runs = Number(opt("--runs")) || 5;
const traceDir = opt("--trace");
const jsonOut = opt("--json-out");
const skip = new Set((opt("--skip") ?? "").split(",").filter(Boolean));
// --mode memory|lazy: how the page opens a dropped file (index.html?mode=);
// by default it reads one of 32 MiB or more in place.
const pageQuery = opt("--mode") ? `?mode=${encodeURIComponent(opt("--mode"))}` : "";
const log = (...m) => console.error("bench-viewer:", ...m);

// ---------------------------------------------------------------------------
// What must be there

// --dist DIR: another build of the page (a side-by-side with an older one).
const DIST = opt("--dist") ?? join(root, "www/dist");
const PKG = join(root, "www/pkg");
const INPUTS = join(root, "target/bench-viewer");
{
  const missing = [];
  if (!existsSync(join(PKG, "dendro_bg.wasm"))) missing.push("www/pkg is not built: run `bash scripts/build-wasm.sh` (or `npm run build:wasm`)");
  for (const f of ["index.html", "main.js", "worker.js", "dendro_bg.wasm", "viewer.css"])
    if (!existsSync(join(DIST, f))) {
      missing.push(`www/dist/${f} is missing: run \`npm run build:www\` (after build-wasm)`);
      break;
    }
  if (missing.length) {
    for (const m of missing) console.error(`bench-viewer: ${m}`);
    process.exit(2);
  }
  const newest = (dir) => Math.max(...readdirSync(dir, { recursive: true }).map((f) => statSync(join(dir, f)).mtimeMs));
  if (newest(join(root, "www/src")) > statSync(join(DIST, "main.js")).mtimeMs)
    log("note: www/src is newer than www/dist; these figures are for the last build");
}

const ARCHIVES = { demo10: "demo10.dendro", demo100: "demo100.dendro", plot: "plot3m.dendro" };
{
  const cargo = (...a) => execFileSync("cargo", ["run", "--release", "--quiet", ...a], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  // A dendro binary already built writes the demo archives (the same
  // bytes whichever profile built it); else cargo builds a release one.
  const bin = [process.env.DENDRO_BIN, join(root, "target/release/dendro"), join(root, "target/debug/dendro")].filter(Boolean).find((b) => existsSync(b));
  const dendro = (...a) => (bin ? execFileSync(bin, a, { cwd: root, stdio: ["ignore", "inherit", "inherit"] }) : cargo("--bin", "dendro", "--", ...a));
  mkdirSync(INPUTS, { recursive: true });
  for (const [key, mb] of skip.has("open") && skip.has("memory") ? [] : [["demo10", 10], ["demo100", 100]]) {
    const out = join(INPUTS, ARCHIVES[key]);
    if (existsSync(out)) continue;
    log(`writing ${ARCHIVES[key]}: dendro demo --size ${mb}`);
    rmSync(`${out}.partial`, { force: true });
    dendro("demo", `${out}.partial`, "--size", String(mb));
    renameSync(`${out}.partial`, out);
  }
  if (!skip.has("pan") && !existsSync(join(INPUTS, ARCHIVES.plot))) {
    log(`writing ${ARCHIVES.plot}: cargo run --release --example viewer_archive`);
    cargo("--example", "viewer_archive", "--", INPUTS);
  }
}
const fileBytes = Object.fromEntries(Object.entries(ARCHIVES).filter(([, f]) => existsSync(join(INPUTS, f))).map(([k, f]) => [k, statSync(join(INPUTS, f)).size]));

// The plot archive (benches/inputs/viewer_archive.rs): rows 1 ms apart from
// 2026-01-01; the window holds rows 1,000,000 to 1,999,999.
const PLOT_T0 = 1767225600000000000n;
const PLOT_FROM = PLOT_T0 + 1_000_000n * 1_000_000n;
const PLOT_TO = PLOT_T0 + 2_000_000n * 1_000_000n - 1n;

// ---------------------------------------------------------------------------
// Small helpers

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs in the page before its own scripts: records main-thread long tasks,
 * and timestamps every message to and from the engine worker (the page's
 * side of the protocol), so an open can be split into its steps.
 */
function instrument(hookWorker) {
  const w = window;
  w.__bench = { longtasks: [], messages: [] };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) w.__bench.longtasks.push({ start: e.startTime, duration: e.duration });
  }).observe({ type: "longtask", buffered: true });
  const Base = w.Worker;
  w.Worker = class extends Base {
    constructor(url, ...rest) {
      // For the memory figures: the same worker, loaded behind a module that
      // keeps its WebAssembly.Memory in reach (see HOOK below).
      if (hookWorker && String(url).endsWith("/worker.js")) url = new URL("/bench-hook/worker.js", location.href);
      super(url, ...rest);
      w.__bench.messages.push({ t: performance.now(), dir: "start" });
      this.addEventListener("message", (e) => {
        const d = e.data ?? {};
        w.__bench.messages.push({ t: performance.now(), dir: "in", id: d.id, hello: !!d.hello, ok: d.ok });
      });
    }
    postMessage(m, transfer) {
      w.__bench.messages.push({ t: performance.now(), dir: "out", id: m?.id, op: m?.op, method: m?.method });
      return super.postMessage(m, transfer);
    }
  };
}

async function freshPage(browser, url, { withDevtools = false } = {}) {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
  await page.addInitScript(installInked);
  await page.addInitScript(instrument, withDevtools);
  const dev = withDevtools ? await devtools(context, page) : null;
  await page.goto(url);
  await page.locator('[data-testid="dropzone"], [data-testid="archive"]').first().waitFor({ timeout: 30_000 });
  page.problems = problems;
  return { context, page, dev };
}

/** A disk-backed File in the page (as a drag from a file manager gives), kept in window.__benchFile. */
async function stageFile(page, path) {
  await page.evaluate(() => {
    let input = document.getElementById("bench-src");
    if (!input) {
      input = document.createElement("input");
      input.type = "file";
      input.id = "bench-src";
      input.hidden = true;
      document.body.appendChild(input);
    }
  });
  await page.setInputFiles("#bench-src", path);
  await page.evaluate(() => {
    window.__benchFile = document.getElementById("bench-src").files[0];
  });
}

/**
 * Drops window.__benchFile on the page and watches, once a frame, for the
 * overview's counts, the first plot's series pixels, and the verify badge.
 * Times are from just before the drop event, in ms.
 */
function dropAndWatch() {
  const b = window.__bench;
  const file = window.__benchFile;
  const dt = new DataTransfer();
  dt.items.add(file);
  const fire = (type) => document.body.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, composed: true, dataTransfer: dt }));
  fire("dragenter");
  fire("dragover");
  const msgFrom = b.messages.length;
  const t0 = performance.now();
  fire("drop");
  const panel = document.querySelector(".dv-tab-panel:not([hidden])");
  const inked = window.__inked;
  const r = { file_bytes: file.size };
  return new Promise((resolve) => {
    const done = () => {
      r.messages = b.messages.slice(msgFrom).map((m) => ({ ...m, t: m.t - t0 }));
      r.longtasks = b.longtasks.filter((l) => l.start + l.duration >= t0).map((l) => ({ start: l.start - t0, duration: l.duration }));
      resolve(r);
    };
    const tick = () => {
      const now = performance.now() - t0;
      // The frame after the one that first showed something: by then that
      // frame has been committed, whatever else ran in it.
      if (r.overview_ms !== undefined && r.overview_painted_ms === undefined) r.overview_painted_ms = now;
      if (r.plot_ms !== undefined && r.plot_painted_ms === undefined) r.plot_painted_ms = now;
      if (r.overview_ms === undefined) {
        const el = panel?.querySelector('[data-testid="overview"] [data-field="rows"]');
        if (el && el.getBoundingClientRect().height > 0) r.overview_ms = now;
      }
      if (r.plot_ms === undefined) {
        const c = panel?.querySelector(".uplot canvas");
        if (c && inked(c)) r.plot_ms = now;
      }
      // The first plot may be a preview from footer statistics; the exact
      // one is drawn when the plots say "drawn" (plots.ts).
      const state = panel?.querySelector('[data-testid="plots"]')?.getAttribute("data-state");
      if (state === "preview" && r.preview_ms === undefined) r.preview_ms = now;
      if (r.exact_ms === undefined && state === "drawn" && r.plot_ms !== undefined) r.exact_ms = now;
      if (r.verify_ms === undefined && panel?.querySelector('[data-testid="verify"][data-state]')) r.verify_ms = now;
      const err = panel?.querySelector('[data-testid="error"], .dv-error-inline');
      if (err) r.error = err.textContent;
      if ((r.overview_painted_ms !== undefined && r.plot_painted_ms !== undefined && r.exact_ms !== undefined && r.verify_ms !== undefined) || r.error) {
        // A little longer, so the tasks the open leaves behind (the rows
        // table of the first segment) count among its long tasks.
        setTimeout(done, 400);
      } else if (now > 60_000) {
        r.error = "timed out";
        done();
      } else requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
}

/**
 * Clicks the `nth` stream row of the source cards that is not the stream on
 * show, and watches once a frame for its view, its plot's series pixels and
 * its exact plot. Times are from just before the click, in ms.
 */
function clickAndWatch(nth) {
  const panel = document.querySelector(".dv-tab-panel:not([hidden])");
  const shown = panel?.querySelector('[data-testid="stream-view"]');
  const here = shown ? `${shown.dataset.source}/${shown.dataset.stream}` : "";
  const rows = [...(panel?.querySelectorAll('[data-testid="source"] [data-testid="stream-row"]') ?? [])]
    .map((row) => ({ row, key: `${row.closest('[data-testid="source"]').dataset.source}/${row.dataset.stream}` }))
    .filter((r) => r.key !== here);
  const pick = rows[nth % Math.max(1, rows.length)];
  if (!pick) return Promise.resolve({ error: "no stream to click" });
  const inked = window.__inked;
  const r = { stream: pick.key };
  const t0 = performance.now();
  pick.row.click();
  return new Promise((resolve) => {
    const tick = () => {
      const now = performance.now() - t0;
      const view = panel.querySelector('[data-testid="stream-view"]');
      const mine = view && `${view.dataset.source}/${view.dataset.stream}` === pick.key;
      const plots = mine ? view.querySelector('[data-testid="plots"]') : null;
      const state = plots?.getAttribute("data-state");
      if (mine && r.view_ms === undefined) r.view_ms = now;
      if (plots && r.plot_ms === undefined) {
        const c = plots.querySelector(".uplot canvas");
        if (c && inked(c)) r.plot_ms = now;
      }
      if (r.exact_ms === undefined && state === "drawn" && r.plot_ms !== undefined) r.exact_ms = now;
      if (state === "empty" || state === "failed") r.error = `plots ${state}`;
      if (r.exact_ms !== undefined || r.error) resolve(r);
      else if (now > 30_000) resolve({ ...r, error: "timed out" });
      else requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
}

/** The ~100 MB archive opened on fresh pages, then `clicks` streams clicked on each. */
async function clickRuns(browser, server) {
  const out = [];
  for (let i = 0; i < runs; i++) {
    const { context, page } = await freshPage(browser, `${server.url}/index.html${pageQuery}`);
    await stageFile(page, join(INPUTS, ARCHIVES.demo100));
    await sleep(300);
    const open = await page.evaluate(dropAndWatch);
    if (open.error) throw new Error(`click: ${open.error}`);
    for (let k = 0; k < 4; k++) {
      await sleep(500);
      const c = await page.evaluate(clickAndWatch, i + k);
      c.run = i;
      out.push(c);
    }
    if (page.problems.length) log(`click: ${page.problems.join("; ")}`);
    await context.close();
  }
  return out;
}

/** The open's steps from the worker messages (ms after the drop). */
function steps(r) {
  const out = {};
  const sent = new Map();
  let hello;
  for (const m of r.messages) {
    if (m.dir === "start") out.worker_created = m.t;
    else if (m.dir === "in" && m.hello) hello = m.t;
    else if (m.dir === "out") sent.set(m.id, m);
    else if (m.dir === "in") {
      const q = sent.get(m.id);
      if (!q) continue;
      // A file read in place opens with "openFile": the same step.
      const what = q.op === "call" ? q.method : q.op === "openFile" ? "open" : q.op;
      // Only this archive's calls: those sent once it is open (a tab left
      // in the background may be asking for things too).
      if (what !== "open" && (out.open_done === undefined || q.t < out.open_done)) continue;
      if (out[`${what}_sent`] !== undefined) continue;
      out[`${what}_sent`] = q.t;
      out[`${what}_done`] = m.t;
    }
  }
  if (hello !== undefined) out.worker_ready = hello;
  return out;
}

const blocking = (tasks) => ({
  count: tasks.length,
  total_ms: tasks.reduce((s, t) => s + t.duration, 0),
  blocking_ms: tasks.reduce((s, t) => s + Math.max(0, t.duration - 50), 0),
  max_ms: tasks.reduce((m, t) => Math.max(m, t.duration), 0),
});

// ---------------------------------------------------------------------------
// Open: cold drop on a fresh page, then a second drop into the same page

async function openRuns(browser, server, key) {
  const path = join(INPUTS, ARCHIVES[key]);
  const cold = [];
  const warm = [];
  for (let i = 0; i < runs; i++) {
    const { context, page } = await freshPage(browser, `${server.url}/index.html${pageQuery}`);
    await stageFile(page, path);
    await sleep(300);
    const trace = traceDir && key === "demo100" && i === 0;
    if (trace) await browser.startTracing(page, { path: join(traceDir, `open-${key}-cold.json`), categories: TRACE_CATEGORIES });
    const c = await page.evaluate(dropAndWatch);
    if (trace) await browser.stopTracing();
    await sleep(300);
    if (trace) await browser.startTracing(page, { path: join(traceDir, `open-${key}-warm.json`), categories: TRACE_CATEGORIES });
    const w = await page.evaluate(dropAndWatch);
    if (trace) await browser.stopTracing();
    for (const [list, r] of [[cold, c], [warm, w]]) {
      if (r.error) throw new Error(`${key}: ${r.error}`);
      r.steps = steps(r);
      const end = Math.max(r.plot_ms, r.verify_ms) + 400;
      r.lt_to_plot = blocking(r.longtasks.filter((t) => t.start < r.plot_ms));
      r.lt_open = blocking(r.longtasks.filter((t) => t.start < end));
      delete r.messages;
      list.push(r);
    }
    if (page.problems.length) log(`${key}: ${page.problems.join("; ")}`);
    await context.close();
  }
  return { cold, warm };
}

const TRACE_CATEGORIES = [
  "devtools.timeline",
  "disabled-by-default-devtools.timeline",
  "disabled-by-default-devtools.timeline.frame",
  "v8.execute",
  "disabled-by-default-v8.cpu_profiler",
  "blink.user_timing",
  "toplevel",
  "latencyInfo",
];

// ---------------------------------------------------------------------------
// Memory: the same cold drop, sampled through the DevTools protocol

/**
 * The page's worker, loaded for the memory figures: worker.js behind a
 * module that notes the memory of any WebAssembly instance it creates as
 * self.__wasmMemory (www/support/devtools.mjs).
 */
const HOOK = {
  "wasm-memory.js": WASM_MEMORY_HOOK,
  "worker.js": `import "./wasm-memory.js";\nimport "/worker.js";\n`,
};

/** The newest worker's WebAssembly memory in bytes (0 before it has one). */
async function wasmBytes({ workers, inWorker }) {
  const w = workers[workers.length - 1];
  if (!w) return 0;
  const r = await inWorker(w, "Runtime.evaluate", {
    expression: "self.__wasmMemory ? self.__wasmMemory.buffer.byteLength : 0",
    returnByValue: true,
  }).catch(() => null);
  return r?.result.value ?? 0;
}

async function memoryRun(browser, server, key) {
  const path = join(INPUTS, ARCHIVES[key]);
  const { context, page, dev } = await freshPage(browser, `${server.url}/index.html${pageQuery}`, { withDevtools: true });
  const { cdp, workers, inWorker } = dev;
  await stageFile(page, path);
  await cdp.send("HeapProfiler.collectGarbage");
  await sleep(300);

  const baseRss = rendererRss();
  const basePage = await cdp.send("Runtime.getHeapUsage");
  let sampling = true;
  const samples = [];
  const sample = async () => {
    const s = { t: performance.now() };
    const p = await cdp.send("Runtime.getHeapUsage");
    s.page_heap = p.usedSize;
    s.page_buffers = p.backingStorageSize ?? 0;
    s.worker_heap = 0;
    s.worker_buffers = 0;
    const w = workers[0];
    if (w) {
      const u = await inWorker(w, "Runtime.getHeapUsage").catch(() => null);
      if (u) {
        s.worker_heap = u.usedSize;
        s.worker_buffers = u.backingStorageSize ?? 0;
      }
    }
    s.wasm = await wasmBytes(dev);
    s.rss = rendererRss() - baseRss;
    samples.push(s);
  };
  const loop = (async () => {
    while (sampling) {
      await sample();
      await sleep(50);
    }
  })();
  const r = await page.evaluate(dropAndWatch);
  await sleep(1000);
  sampling = false;
  await loop;
  if (r.error) throw new Error(`${key} (memory): ${r.error}`);

  // Settled: after a full collection in page and worker.
  await cdp.send("HeapProfiler.collectGarbage");
  if (workers[0]) await inWorker(workers[0], "HeapProfiler.collectGarbage").catch(() => {});
  await sleep(200);
  await sample();
  const settled = samples.pop();
  await context.close();

  const total = (s) => s.page_heap + s.worker_heap + s.wasm;
  const withBuffers = (s) => total(s) + s.page_buffers + s.worker_buffers;
  const peakOf = (f) => samples.reduce((best, s) => (f(s) > f(best) ? s : best), samples[0]);
  const peak = peakOf(withBuffers);
  return {
    file_bytes: fileBytes[key],
    samples: samples.length,
    base_page_heap: basePage.usedSize,
    peak_heap_wasm: total(peakOf(total)),
    peak_all: withBuffers(peak),
    peak_parts: { page_heap: peak.page_heap, page_buffers: peak.page_buffers, worker_heap: peak.worker_heap, worker_buffers: peak.worker_buffers, wasm: peak.wasm },
    wasm: Math.max(...samples.map((s) => s.wasm), settled.wasm),
    peak_rss_growth: Math.max(...samples.map((s) => s.rss)),
    settled_all: withBuffers(settled),
    settled_parts: { page_heap: settled.page_heap, page_buffers: settled.page_buffers, worker_heap: settled.worker_heap, worker_buffers: settled.worker_buffers, wasm: settled.wasm },
    settled_rss_growth: settled.rss,
  };
}

// ---------------------------------------------------------------------------
// Panning and zooming a plot of 1M rows

function startFrames() {
  const b = window.__bench;
  b.frames = [];
  b.recording = true;
  b.t0 = performance.now();
  b.msgFrom = b.messages.length;
  const f = (t) => {
    if (!b.recording) return;
    b.frames.push(t);
    requestAnimationFrame(f);
  };
  requestAnimationFrame(f);
}

function stopFrames() {
  const b = window.__bench;
  b.recording = false;
  const t1 = performance.now();
  const sent = b.messages.slice(b.msgFrom).filter((m) => m.dir === "out" && m.op === "call");
  const count = (method) => sent.filter((m) => m.method === method).length;
  return {
    frames: b.frames,
    duration_ms: t1 - b.t0,
    longtasks: b.longtasks.filter((l) => l.start >= b.t0 && l.start < t1).map((l) => l.duration),
    read_range_calls: count("readRange"),
    read_segment_calls: count("readSegment"),
    window: document.querySelector('[data-testid="window"]')?.textContent ?? "",
    status: document.querySelector('[data-testid="plot-status"]')?.textContent ?? "",
  };
}

function frameStats(r) {
  const deltas = [];
  for (let i = 1; i < r.frames.length; i++) deltas.push(r.frames[i] - r.frames[i - 1]);
  const span = r.frames.length > 1 ? r.frames[r.frames.length - 1] - r.frames[0] : NaN;
  return {
    frames: r.frames.length,
    median_ms: median(deltas),
    p95_ms: quantile(deltas, 0.95),
    max_ms: Math.max(...deltas),
    fps: ((r.frames.length - 1) / span) * 1000,
    over_33ms: deltas.filter((d) => d > 1000 / 30 + 1).length,
    longtasks: r.longtasks.length,
    longtask_max_ms: Math.max(0, ...r.longtasks),
    read_range_calls: r.read_range_calls,
    read_segment_calls: r.read_segment_calls,
  };
}

/** Scrolls the timeline's lane to the top of the view, the plots under it; where they are. */
async function placeForPanning(page) {
  await page.evaluate(() => {
    const lane = document.querySelector('[data-testid="lane"]');
    window.scrollTo(0, window.scrollY + lane.getBoundingClientRect().top - 60);
  });
  await sleep(800);
  const lane = await page.locator('[data-testid="lane"] .dv-tl-track').first().boundingBox();
  const over = await page.locator(".uplot .u-over").first().boundingBox();
  return { lane, over };
}

/** Where the window is within the whole archive, 0 to 1, from the timeline's overview strip. */
function windowInData() {
  const w = document.querySelector(".dv-tl-mini-win");
  const l = parseFloat(w?.style.left ?? "0") / 100;
  return [l, l + parseFloat(w?.style.width ?? "100") / 100];
}

async function panRuns(browser, server) {
  const url = `${server.url}/index.html?url=/bench/${ARCHIVES.plot}&source=1&stream=metrics&from=${PLOT_FROM}&to=${PLOT_TO}`;
  const { context, page, dev } = await freshPage(browser, url, { withDevtools: true });
  await page.locator('[data-testid="verify"][data-state]').waitFor({ timeout: 60_000 });
  await page.locator(".uplot").first().waitFor();
  await sleep(1000);
  const wasmOpen = await wasmBytes(dev);
  const status0 = await page.locator('[data-testid="plot-status"]').innerText();
  const plots = await page.locator(".uplot").count();
  let { lane, over } = await placeForPanning(page);

  // The page at rest, for reference.
  await page.evaluate(startFrames);
  await sleep(1500);
  const idle = frameStats(await page.evaluate(stopFrames));

  // Does the plot itself answer the wheel? (It reads the window label.)
  await page.mouse.move(over.x + over.width / 2, over.y + over.height / 2);
  const before = await page.locator('[data-testid="window"]').innerText();
  for (const [dx, dy] of [[120, 0], [0, 120], [0, -120]]) {
    await page.mouse.wheel(dx, dy);
    await sleep(150);
  }
  await sleep(300);
  const plotWheelMoves = (await page.locator('[data-testid="window"]').innerText()) !== before;

  const pan = [];
  const drag = [];
  const wasmAfter = [];
  for (let i = 0; i < runs; i++) {
    // Pan: a trackpad scrubbed back and forth over the lane. A wheel
    // event every frame (16.7 ms; each moves the window 10% of its width),
    // turning round near either end of the data (read from the timeline's
    // overview strip every 6 events: the browser coalesces wheel events,
    // so counting them does not bring the window back), for a second;
    // then a 400 ms pause, in which the plots refetch; four times.
    ({ lane, over } = await placeForPanning(page));
    await page.mouse.move(lane.x + lane.width / 2, lane.y + lane.height / 2);
    await sleep(300);
    const trace = traceDir && i === 0;
    if (trace) await browser.startTracing(page, { path: join(traceDir, "pan.json"), categories: TRACE_CATEGORIES });
    await page.evaluate(startFrames);
    let dir = 1;
    for (let round = 0; round < 4; round++) {
      const start = performance.now();
      for (let k = 0; performance.now() - start < 1000; k++) {
        if (k % 6 === 0) {
          const [l, r] = await page.evaluate(windowInData);
          if (r > 0.92) dir = -1;
          else if (l < 0.08) dir = 1;
        }
        await page.mouse.wheel(dir * 100, 0);
        const wait = start + (k + 1) * (1000 / 60) - performance.now();
        if (wait > 0) await sleep(wait);
      }
      await sleep(400);
    }
    await sleep(300);
    const p = await page.evaluate(stopFrames);
    if (trace) await browser.stopTracing();
    pan.push({ ...frameStats(p), window: p.window, status: p.status });

    // Drag to zoom on the first plot, then double-click back to the whole
    // stream; four times.
    ({ lane, over } = await placeForPanning(page));
    await page.evaluate(startFrames);
    for (let k = 0; k < 4; k++) {
      const y = over.y + over.height / 2;
      const x0 = over.x + over.width / 3;
      const x1 = over.x + (2 * over.width) / 3;
      await page.mouse.move(x0 - 40, y);
      await page.mouse.move(x0, y, { steps: 4 });
      await page.mouse.down();
      for (let s = 1; s <= 30; s++) {
        const t = performance.now();
        await page.mouse.move(x0 + ((x1 - x0) * s) / 30, y);
        const wait = 1000 / 60 - (performance.now() - t);
        if (wait > 0) await sleep(wait);
      }
      await page.mouse.up();
      await sleep(500);
      await page.mouse.dblclick(over.x + over.width / 2, y);
      await sleep(500);
    }
    const d = await page.evaluate(stopFrames);
    drag.push(frameStats(d));
    // What the decoded-segment cache holds after the panning, in wasm memory.
    wasmAfter.push(await wasmBytes(dev));
    // Back to the 1M-row window for the next pan.
    await page.goto(url);
    await page.locator('[data-testid="verify"][data-state]').waitFor({ timeout: 60_000 });
    await page.locator(".uplot").first().waitFor();
  }
  if (page.problems.length) log(`pan: ${page.problems.join("; ")}`);
  await context.close();
  return { status: status0, plots, idle, plot_wheel_moves_window: plotWheelMoves, pan, drag, wasm_open: wasmOpen, wasm_after: wasmAfter };
}

// ---------------------------------------------------------------------------

if (traceDir) await mkdir(traceDir, { recursive: true });
const hookDir = join(tmpdir(), "dendro-bench-viewer-hook");
await mkdir(hookDir, { recursive: true });
for (const [name, text] of Object.entries(HOOK)) await writeFile(join(hookDir, name), text);
const server = await startServer({ root: DIST, mounts: { "/bench/": INPUTS, "/bench-hook/": hookDir } });
const browser = await launch();
const result = {
  runs,
  file_bytes: fileBytes,
  when: new Date().toISOString(),
  dist_built: new Date(statSync(join(DIST, "main.js")).mtimeMs).toISOString(),
  head: (() => {
    try {
      return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
    } catch {
      return "?";
    }
  })(),
};
try {
  if (!skip.has("open")) {
    for (const key of ["demo10", "demo100"]) {
      log(`open ${ARCHIVES[key]} (${runs} fresh pages)`);
      result[`open_${key}`] = await openRuns(browser, server, key);
    }
  }
  if (!skip.has("click")) {
    log(`click streams of ${ARCHIVES.demo100} (${runs} fresh pages, 4 clicks each)`);
    result.click = await clickRuns(browser, server);
  }
  if (!skip.has("memory")) {
    for (const key of ["demo10", "demo100"]) {
      log(`memory ${ARCHIVES[key]}`);
      const m = [];
      for (let i = 0; i < Math.min(runs, 3); i++) m.push(await memoryRun(browser, server, key));
      result[`memory_${key}`] = m;
    }
  }
  if (!skip.has("pan")) {
    log(`pan and zoom ${ARCHIVES.plot} (${runs} rounds)`);
    result.pan = await panRuns(browser, server);
  }
} finally {
  await browser.close();
  await server.close();
}

// ---------------------------------------------------------------------------
// Report

const med = (list, f) => median(list.map(f));
const summary = {};
for (const key of ["demo10", "demo100"]) {
  const o = result[`open_${key}`];
  if (o) {
    for (const kind of ["cold", "warm"]) {
      const l = o[kind];
      const st = (name) => med(l, (r) => r.steps[name] ?? NaN);
      summary[`${key}_${kind}`] = {
        overview_ms: med(l, (r) => r.overview_ms),
        overview_range: [Math.min(...l.map((r) => r.overview_ms)), Math.max(...l.map((r) => r.overview_ms))],
        plot_ms: med(l, (r) => r.plot_ms),
        plot_range: [Math.min(...l.map((r) => r.plot_ms)), Math.max(...l.map((r) => r.plot_ms))],
        // A page without previews never says "preview": its first plot is exact.
        previews: l.filter((r) => r.preview_ms !== undefined).length,
        exact_ms: med(l, (r) => r.exact_ms),
        exact_range: [Math.min(...l.map((r) => r.exact_ms)), Math.max(...l.map((r) => r.exact_ms))],
        overview_painted_ms: med(l, (r) => r.overview_painted_ms),
        plot_painted_ms: med(l, (r) => r.plot_painted_ms),
        verify_ms: med(l, (r) => r.verify_ms),
        steps: {
          worker_ready: st("worker_ready"),
          open_sent: st("open_sent"),
          open_done: st("open_done"),
          describe_done: st("describe_done"),
          schema_sent: st("schema_sent"),
          schema_done: st("schema_done"),
          readRange_sent: st("readRange_sent"),
          readRange_done: st("readRange_done"),
          readSegment_done: st("readSegment_done"),
          verify_done: st("verify_done"),
        },
        longtasks_to_plot: { count: med(l, (r) => r.lt_to_plot.count), max_ms: med(l, (r) => r.lt_to_plot.max_ms), blocking_ms: med(l, (r) => r.lt_to_plot.blocking_ms) },
        longtasks_open: { count: med(l, (r) => r.lt_open.count), max_ms: med(l, (r) => r.lt_open.max_ms), total_ms: med(l, (r) => r.lt_open.total_ms), blocking_ms: med(l, (r) => r.lt_open.blocking_ms) },
        longtasks_open_worst: l.reduce((m, r) => Math.max(m, r.lt_open.max_ms), 0),
      };
    }
  }
  const m = result[`memory_${key}`];
  if (m) {
    const fb = fileBytes[key];
    summary[`${key}_memory`] = {
      file_bytes: fb,
      peak_heap_wasm: med(m, (r) => r.peak_heap_wasm),
      peak_all: med(m, (r) => r.peak_all),
      wasm: med(m, (r) => r.wasm),
      peak_rss_growth: med(m, (r) => r.peak_rss_growth),
      settled_all: med(m, (r) => r.settled_all),
      settled_rss_growth: med(m, (r) => r.settled_rss_growth),
      ratio_heap_wasm: med(m, (r) => r.peak_heap_wasm / fb),
      ratio_all: med(m, (r) => r.peak_all / fb),
      ratio_rss: med(m, (r) => r.peak_rss_growth / fb),
      ratio_settled: med(m, (r) => r.settled_all / fb),
      peak_parts: m[Math.floor(m.length / 2)].peak_parts,
      settled_parts: m[Math.floor(m.length / 2)].settled_parts,
    };
  }
}
if (result.click) {
  const ok = result.click.filter((c) => !c.error);
  summary.click = {
    clicks: result.click.length,
    failed: result.click.filter((c) => c.error).map((c) => `${c.stream}: ${c.error}`),
    plot_ms: median(ok.map((c) => c.plot_ms)),
    plot_p95_ms: quantile(ok.map((c) => c.plot_ms), 0.95),
    plot_range: [Math.min(...ok.map((c) => c.plot_ms)), Math.max(...ok.map((c) => c.plot_ms))],
    exact_ms: median(ok.map((c) => c.exact_ms)),
    exact_p95_ms: quantile(ok.map((c) => c.exact_ms), 0.95),
    view_ms: median(ok.map((c) => c.view_ms)),
  };
}
if (result.pan) {
  const p = result.pan;
  const agg = (l) => Object.fromEntries(Object.keys(l[0]).filter((k) => typeof l[0][k] === "number").map((k) => [k, med(l, (r) => r[k])]));
  summary.pan = agg(p.pan);
  summary.pan.fps_range = [Math.min(...p.pan.map((r) => r.fps)), Math.max(...p.pan.map((r) => r.fps))];
  summary.drag = agg(p.drag);
  summary.drag.fps_range = [Math.min(...p.drag.map((r) => r.fps)), Math.max(...p.drag.map((r) => r.fps))];
  summary.idle = p.idle;
  summary.plot_status = p.status;
  summary.plots = p.plots;
  summary.plot_wheel_moves_window = p.plot_wheel_moves_window;
  summary.plot_wasm_open = p.wasm_open;
  summary.plot_wasm_after = median(p.wasm_after);
}
result.summary = summary;

if (jsonOut) await writeFile(jsonOut, JSON.stringify(result, null, 2));
if (asJson) {
  console.log(JSON.stringify(result, null, 2));
} else {
  const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : "-");
  const mb = (b) => f(b / 1e6, 1);
  const verdict = (ok) => (ok ? "PASS" : "MISS");
  const lines = [`bench-viewer: medians of ${runs} runs, headless Chromium, ${result.when} (HEAD ${result.head}, www/dist built ${result.dist_built})`];
  for (const key of ["demo10", "demo100"]) {
    for (const kind of ["cold", "warm"]) {
      const s = summary[`${key}_${kind}`];
      if (!s) continue;
      const t = s.steps;
      lines.push(
        `${key} (${mb(fileBytes[key])} MB) ${kind === "cold" ? "dropped on a fresh page" : "dropped again, worker running"}:` +
          ` overview ${f(s.overview_ms)} ms [${f(s.overview_range[0])}-${f(s.overview_range[1])}],` +
          ` first plot ${f(s.plot_ms)} ms [${f(s.plot_range[0])}-${f(s.plot_range[1])}] (a preview in ${s.previews} of ${runs} runs),` +
          ` exact plot ${f(s.exact_ms)} ms [${f(s.exact_range[0])}-${f(s.exact_range[1])}], verified ${f(s.verify_ms)} ms;` +
          ` next frame after overview ${f(s.overview_painted_ms)} ms, after first plot ${f(s.plot_painted_ms)} ms`,
        `    steps (ms after drop): bytes read, open sent ${f(t.open_sent)}; worker ready ${f(t.worker_ready)}; open done ${f(t.open_done)};` +
          ` describe done ${f(t.describe_done)}; schema ${f(t.schema_sent)}-${f(t.schema_done)}; readRange ${f(t.readRange_sent)}-${f(t.readRange_done)};` +
          ` rows ${f(t.readSegment_done)}; verify ${f(t.verify_done)}`,
        `    main-thread long tasks: to first plot ${f(s.longtasks_to_plot.count)} (longest ${f(s.longtasks_to_plot.max_ms)} ms);` +
          ` whole open ${f(s.longtasks_open.count)}, ${f(s.longtasks_open.total_ms)} ms in all, longest ${f(s.longtasks_open.max_ms)} ms (worst run ${f(s.longtasks_open_worst)} ms)`,
      );
    }
    const m = summary[`${key}_memory`];
    if (m) {
      const p = m.peak_parts;
      lines.push(
        `${key} memory: peak JS heap + wasm ${mb(m.peak_heap_wasm)} MB = ${f(m.ratio_heap_wasm, 2)}x the file;` +
          ` with array buffers ${mb(m.peak_all)} MB = ${f(m.ratio_all, 2)}x (page heap ${mb(p.page_heap)}, page buffers ${mb(p.page_buffers)},` +
          ` worker heap ${mb(p.worker_heap)}, worker buffers ${mb(p.worker_buffers)}, wasm ${mb(p.wasm)});` +
          ` settled ${mb(m.settled_all)} MB = ${f(m.ratio_settled, 2)}x; renderer RSS +${mb(m.peak_rss_growth)} MB peak (${f(m.ratio_rss, 2)}x), +${mb(m.settled_rss_growth)} MB settled`,
      );
    }
  }
  if (summary.click) {
    const c = summary.click;
    lines.push(
      `click a stream of ${ARCHIVES.demo100}, archive open (${c.clicks} clicks): view ${f(c.view_ms)} ms,` +
        ` plot drawn ${f(c.plot_ms)} ms (p95 ${f(c.plot_p95_ms)}) [${f(c.plot_range[0])}-${f(c.plot_range[1])}], exact ${f(c.exact_ms)} ms (p95 ${f(c.exact_p95_ms)})` +
        (c.failed.length ? `; no plot for ${c.failed.join(", ")}` : ""),
    );
  }
  if (summary.pan) {
    const fr = (s) =>
      `median ${f(s.median_ms, 1)} ms, p95 ${f(s.p95_ms, 1)} ms, max ${f(s.max_ms)} ms, ${f(s.fps, 1)} fps [${f(s.fps_range?.[0], 1)}-${f(s.fps_range?.[1], 1)}],` +
      ` ${f(s.over_33ms)} frames over 33 ms, ${f(s.longtasks)} long tasks (longest ${f(s.longtask_max_ms)} ms), ${f(s.read_range_calls)} readRange, ${f(s.read_segment_calls)} readSegment`;
    lines.push(
      `plot of 1M rows (${summary.plots} plots; ${summary.plot_status})`,
      `    at rest: median ${f(summary.idle.median_ms, 1)} ms, ${f(summary.idle.fps, 1)} fps`,
      `    pan (horizontal wheel on the timeline): ${fr(summary.pan)}`,
      `    drag-zoom on the plot + double-click out: ${fr(summary.drag)}`,
      `    wheel on the plot itself moves the window: ${summary.plot_wheel_moves_window ? "yes" : "no"}`,
      `    wasm memory: ${mb(summary.plot_wasm_open)} MB once open, ${mb(summary.plot_wasm_after)} MB after panning and zooming (file ${mb(fileBytes.plot)} MB: ${f(summary.plot_wasm_after / fileBytes.plot, 2)}x)`,
    );
  }
  lines.push("targets:");
  const c100 = summary.demo100_cold;
  if (c100) {
    lines.push(`  overview <= 300 ms at 100 MB: ${f(c100.overview_ms)} ms ${verdict(c100.overview_ms <= 300)}`);
    lines.push(`  first plot <= 500 ms at 100 MB: ${f(c100.plot_ms)} ms ${verdict(c100.plot_ms <= 500)} (exact ${f(c100.exact_ms)} ms)`);
  }
  if (summary.click) lines.push(`  click to drawn plot <= 500 ms at 100 MB: ${f(summary.click.plot_ms)} ms ${verdict(summary.click.plot_ms <= 500)} (p95 ${f(summary.click.plot_p95_ms)} ms, exact ${f(summary.click.exact_ms)} ms)`);
  if (summary.pan) lines.push(`  panning >= 30 fps: ${f(summary.pan.fps, 1)} fps (p95 frame ${f(summary.pan.p95_ms, 1)} ms) ${verdict(summary.pan.fps >= 30)}`);
  const m100 = summary.demo100_memory;
  if (m100) {
    lines.push(`  memory <= 1.5x file (JS heap + wasm, peak) at 100 MB: ${f(m100.ratio_heap_wasm, 2)}x ${verdict(m100.ratio_heap_wasm <= 1.5)}`);
    lines.push(`  memory <= 1.5x file (with array buffers, peak) at 100 MB: ${f(m100.ratio_all, 2)}x ${verdict(m100.ratio_all <= 1.5)}`);
  }
  if (summary.pan) {
    const r = summary.plot_wasm_after / fileBytes.plot;
    lines.push(`  memory <= 1.5x file (wasm alone, after panning the 3M-row archive): ${f(r, 2)}x ${verdict(r <= 1.5)}`);
  }
  console.log(lines.join("\n"));
}

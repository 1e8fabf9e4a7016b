// Benchmarks archives read in place (issue 12) in headless Chromium,
// against the targets:
//
//   open    drop-to-overview: a 100 MB, a 1 GB and a 5 GB archive dropped
//           on a freshly loaded viewer page (www/dist; synthetic drop of a
//           disk-backed File, so the viewer reads it in place): time from
//           the drop to the overview's counts on screen, and to the first
//           plot drawn.                              target: <= 300 ms each
//           A large catalog's overview is first an outline (rows still
//           being counted); `counted_ms` is when the full counts were up.
//   memory  the 5 GB drop again, sampled every 50 ms through the DevTools
//           protocol until a second after the first plot: JS heap of page
//           and worker plus the worker's WebAssembly memory, peak.
//                                                    target: <= 150 MB
//   decode  one segment decoded (readSegment, through the engine as the
//           page runs it) from the 100 MB archive opened whole and opened
//           in place, each segment once per mode (cold); median of each,
//           whole-file time / in-place time.         target: >= 0.7x
//   http    the 1 GB archive served by `dendro serve` on loopback, opened
//           with ?url= on a fresh viewer page, behind a small counting
//           proxy: requests and bytes for the archive until the overview
//           is on screen (target: < 1 MiB in < 16 requests), and time to
//           the first plot (target: < 1 s), from the page's navigation.
//
// Archives are written once into target/bench-lazy/ by
// benches/inputs/big_archive.rs (one stream of ~1 MiB segments; about a minute
// per 5 GB) and reused. Needs www/dist (`npm run build:www`), www/pkg
// (scripts/build-wasm.sh) and a release `dendro` (built if missing).
// Prints a JSON summary of medians on stdout; progress on stderr.
//
//   progressive (issue 33): each open also notes the first plot's status
//           line (a sample, a preview of every footer, or exact) and when
//           the exact envelope was drawn (`exact_ms`); --no-sample draws as
//           before the sampled picture, through the same build.
//   accelerator (issue 33): the http runs with --delay MS added to every
//           answer by the counting proxy, served by `dendro serve` (which
//           computes envelopes; --no-accelerator: the page reads by range
//           all the same) or with --static by the static test server;
//           requests and bytes to the first plot and to the exact one.
//
//   node benches/browser/in-place.mjs [--runs N] [--skip open,memory,decode,http] [--sizes 100,1024,5120] [--json-out FILE]
//                               [--no-sample] [--no-accelerator] [--static] [--delay MS] [--first-only]
//                               [--baseline | --no-ranges | --open-as-before | --no-outline] [--steps]
//                               [--overview-only] [--files A.dendro,B.dendro] [--http-file PATH]

import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { writeFile, mkdir } from "node:fs/promises";
import { request as httpRequest, createServer } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { attachDevtools, WASM_MEMORY_HOOK, bundleEngine, launch, root, installInked, startServer } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const runs = Number(opt("--runs")) || 3;
const skip = new Set((opt("--skip") ?? "").split(",").filter(Boolean));
const sizes = (opt("--sizes") ?? "100,1024,5120").split(",").filter(Boolean).map(Number);
const jsonOut = opt("--json-out");
// --baseline: the in-place reader without the catalog prefetch and the walk
// hints (as before them), through the same build, for before/after figures.
const baseline = args.includes("--baseline");
// --no-ranges: payloads read through SQLite and no footer prefetch (as
// before payloads were read by range), through the same build.
const noRanges = args.includes("--no-ranges");
// --open-as-before: the open as before the head read and the warm-up (no
// head read, the 16 KiB probe, no warm-up, the decoder started at the
// open), through the same build. (Up to c4635e1 it also described through
// one object per segment, packed in JS: DESIGN.md "The open, step by step".)
const openAsBefore = args.includes("--open-as-before");
// --no-outline: no outline first (the page waits for the full listing), as
// before outlines, through the same build.
const noOutline = args.includes("--no-outline");
// --overview-only: an open run ends at the overview (no first plot waited for).
const overviewOnly = args.includes("--overview-only");
// --files A,B: open runs of these archives too (by path), after the sizes.
const extraFiles = (opt("--files") ?? "").split(",").filter(Boolean);
// --http-file PATH: serve this archive for the http runs instead of the 1 GB one.
const httpFile = opt("--http-file");
// --no-sample: no sampled first picture (the page waits for every footer),
// as before it, through the same build.
const noSample = args.includes("--no-sample");
// --no-accelerator: the page does not ask `dendro serve` for envelopes.
const noAccelerator = args.includes("--no-accelerator");
// --static: the http runs' archive from the static test server (ranges, no accelerator).
const staticServer = args.includes("--static");
// --delay MS: the counting proxy holds every answer this long (a link's latency).
const delay = Number(opt("--delay") ?? 0);
// --first-only: a run ends at the first plot (no wait for the exact one).
const firstOnly = args.includes("--first-only");
// --steps: print each open's steps (the engine worker's trace) as it runs.
const showSteps = args.includes("--steps");
const log = (...m) => console.error("bench-lazy:", ...m);
const log_ = log;

// --dist DIR: another build of the page (a side-by-side with an older one).
const DIST = opt("--dist") ?? join(root, "www/dist");
const PKG = join(root, "www/pkg");
const INPUTS = join(root, "target/bench-lazy");
const targetDir = process.env.CARGO_TARGET_DIR ?? join(root, "target");
// DENDRO_BIN: another dendro binary (a debug one, say) for the http runs.
const DENDRO = process.env.DENDRO_BIN ?? join(targetDir, "release/dendro");
const BIG_ARCHIVE = join(targetDir, "release/examples/big_archive");

{
  const missing = [];
  if (!existsSync(join(PKG, "dendro_bg.wasm"))) missing.push("www/pkg is not built: run `bash scripts/build-wasm.sh`");
  if (!existsSync(join(DIST, "index.html"))) missing.push("www/dist is not built: run `npm run build:www` (after build-wasm)");
  if (missing.length) {
    for (const m of missing) log(m);
    process.exit(2);
  }
  const newest = (dir) => Math.max(...readdirSync(dir, { recursive: true }).map((f) => statSync(join(dir, f)).mtimeMs));
  if (newest(join(root, "www/src")) > statSync(join(DIST, "main.js")).mtimeMs) log("note: www/src is newer than www/dist; the viewer figures are for the last build");
}
{
  const want = [...(sizes.length === 0 || existsSync(BIG_ARCHIVE) ? [] : ["--example", "big_archive"]), ...(skip.has("http") || staticServer || existsSync(DENDRO) ? [] : ["--bin", "dendro"])];
  if (want.length) {
    log(`building ${want.join(" ")} (release)`);
    execFileSync("cargo", ["build", "--release", "--quiet", ...want], { cwd: root, stdio: "inherit" });
  }
}

mkdirSync(INPUTS, { recursive: true });
const archive = (mb) => {
  const path = join(INPUTS, `big${mb}.dendro`);
  if (!existsSync(path)) {
    log(`writing ${path}`);
    rmSync(`${path}.partial`, { force: true });
    execFileSync(BIG_ARCHIVE, [`${path}.partial`, String(mb)], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
    renameSync(`${path}.partial`, path);
  }
  return path;
};
const paths = Object.fromEntries(sizes.map((mb) => [mb, archive(mb)]));
for (const f of extraFiles) paths[f.split("/").pop()] = f;
const biggest = Math.max(...sizes);

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : null;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------
// In the viewer page

/**
 * Runs in the page before its own scripts: once a frame, notes when the
 * open tab's overview counts are on screen and when its first plot has
 * its series drawn, as performance.now() (from the navigation) and wall
 * clock. `window.__watch.reset()` starts over (before a drop).
 */
function watcher() {
  const w = window;
  // Defined by installInked (www/support/ink.mjs), which runs first.
  const inked = (canvas) => w.__inked(canvas);
  w.__watch = { seen: {}, reset() { this.seen = {}; } };
  const tick = () => {
    const seen = w.__watch.seen;
    const panel = document.querySelector(".dv-tab-panel:not([hidden])");
    if (panel) {
      if (!seen.overview) {
        const el = panel.querySelector('[data-testid="overview"] [data-field="rows"]');
        if (el && el.getBoundingClientRect().height > 0) seen.overview = { t: performance.now(), wall: Date.now() };
      }
      // An outline shows the rows stat as "counting" until the listing is read.
      if (seen.overview && !seen.counted) {
        const el = panel.querySelector('[data-testid="overview"] [data-field="rows"]');
        if (el && el.dataset.value !== "counting") seen.counted = { t: performance.now(), wall: Date.now(), outlined: !!seen.outlined };
        else if (el) seen.outlined = true;
      }
      if (!seen.plot) {
        const c = panel.querySelector(".uplot canvas");
        if (c && inked(c)) {
          seen.plot = { t: performance.now(), wall: Date.now() };
          seen.status = panel.querySelector('[data-testid="plot-status"]')?.textContent ?? null;
        }
      }
      // The exact envelope drawn (a sample or a preview may come first).
      if (seen.plot && !seen.exact) {
        const plots = panel.querySelector('[data-testid="plots"][data-state="drawn"]');
        if (plots) {
          seen.exact = { t: performance.now(), wall: Date.now() };
          seen.exactStatus = plots.querySelector('[data-testid="plot-status"]')?.textContent ?? null;
        }
      }
      const err = panel.querySelector('[data-testid="error"], .dv-error-inline');
      if (err && !seen.error) seen.error = err.textContent;
      const tab = document.querySelector("[data-mode]");
      if (tab) seen.mode = tab.dataset.mode;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}

/** Waits until the page's watcher has seen the overview and the first plot (or an error). */
async function waitSeen(page, timeout = Number(opt("--timeout-s") ?? 120) * 1000) {
  const t0 = Date.now();
  for (;;) {
    const seen = await page.evaluate(() => window.__watch.seen);
    if (seen.error) throw new Error(`the viewer says: ${seen.error}`);
    if (seen.overview && seen.counted && ((seen.plot && (seen.exact || firstOnly)) || overviewOnly)) return seen;
    if (Date.now() - t0 > timeout) throw new Error(`timed out: ${JSON.stringify(seen)}`);
    await sleep(25);
  }
}

async function viewerPage(browser, url, { devtools = false } = {}) {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
  await page.addInitScript(installInked);
  await page.addInitScript(watcher);
  await hookWorkers(context, { memory: devtools });
  const dev = devtools ? await attachDevtools(context, page) : null;
  await page.goto(url);
  return { context, page, dev, problems };
}

/** A disk-backed File for `path`, dropped on the page; resolves to the drop's performance.now(). */
async function dropFile(page, path) {
  await page.evaluate(() => {
    const input = document.createElement("input");
    input.type = "file";
    input.id = "bench-src";
    input.hidden = true;
    document.body.appendChild(input);
  });
  await page.setInputFiles("#bench-src", path);
  await page.locator('[data-testid="dropzone"]').first().waitFor({ timeout: 30_000 });
  await sleep(300);
  return page.evaluate(() => {
    const file = document.getElementById("bench-src").files[0];
    const dt = new DataTransfer();
    dt.items.add(file);
    const fire = (type) => document.body.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, composed: true, dataTransfer: dt }));
    fire("dragenter");
    fire("dragover");
    window.__watch.reset();
    const t0 = performance.now();
    fire("drop");
    return t0;
  });
}

/**
 * Prepends to the engine's worker scripts what this run needs: the memory
 * hook (their wasm memories can then be found) and the baseline switch.
 */
async function hookWorkers(context, { memory = false } = {}) {
  await context.route(/\/(worker|decoder)\.js(\?.*)?$/, async (route) => {
    const res = await route.fetch();
    const head = [
      memory ? 'import "/bench-hook/wasm-memory.js";' : "",
      "self.__dendroTrace = true;",
      baseline ? "self.__dendroLazyBaseline = true;" : "",
      noRanges ? "self.__dendroNoRanges = true;" : "",
      openAsBefore ? "self.__dendroOpenAsBefore = true;" : "",
      noOutline ? "self.__dendroNoOutline = true;" : "",
      noSample ? "self.__dendroNoSample = true;" : "",
      noAccelerator ? "self.__dendroNoAccelerator = true;" : "",
    ].join("\n");
    await route.fulfill({ response: res, body: `${head}\n${await res.text()}` });
  });
}

// ---------------------------------------------------------------------------
// DevTools: heaps of page and worker, and the worker's wasm memory

/** A worker module that notes the memory of any WebAssembly instance it creates. */
const HOOK = { "wasm-memory.js": WASM_MEMORY_HOOK };

/** JS heap of the page and of every worker (engine and decoder), and their wasm memories. */
async function memorySample({ cdp, workers, inWorker }) {
  const p = await cdp.send("Runtime.getHeapUsage");
  const s = { page_heap: p.usedSize, worker_heap: 0, wasm: 0 };
  for (const w of [...workers]) {
    const u = await inWorker(w, "Runtime.getHeapUsage").catch(() => null);
    if (u) s.worker_heap += u.usedSize;
    // The memories the hook noted (see the route in viewerPage).
    const r = await inWorker(w, "Runtime.evaluate", {
      expression: "self.__wasmMemories ? [...self.__wasmMemories].reduce((n, m) => n + m.buffer.byteLength, 0) : 0",
      returnByValue: true,
    }).catch(() => null);
    s.wasm += r?.result?.value ?? 0;
  }
  return s;
}

// ---------------------------------------------------------------------------
// The runs

/**
 * Where an open's time went, from the engine worker's trace (worker.ts
 * `mark`): each step's time after the drop, in ms (negative: before it).
 */
async function openSteps(page, t0, seen) {
  const origin = await page.evaluate(() => performance.timeOrigin);
  const drop = origin + t0;
  const worker = page.workers().find((w) => /\/worker\.js/.test(w.url()));
  const log = worker ? await worker.evaluate(() => self.__dendroTraceLog ?? []).catch(() => []) : [];
  const steps = {};
  let prefetch = 0;
  for (const e of log) {
    const at = Math.round((e.at - drop) * 10) / 10;
    if (e.what === "prefetch") steps[`prefetch ${++prefetch} (${e.ranges} reads, ${Math.round(e.bytes / 1024)} KiB)`] = at;
    else if (!(e.what in steps)) {
      steps[e.what] = at;
      // The in-place reader's reads so far, where the mark counts them.
      if (typeof e.fetches === "number") steps[`${e.what}: reads so far`] = e.fetches;
    }
  }
  steps["overview on screen"] = Math.round((seen.overview.t - t0) * 10) / 10;
  // Every mark of the first range read, repeated ones too (--steps).
  if (showSteps) {
    const from = log.findIndex((e) => e.what === "start readRange");
    const to = log.findIndex((e) => e.what === "range finished");
    if (from >= 0) log_(`first readRange, ms after the drop: ${log.slice(from, to + 1).map((e) => JSON.stringify({ ...e, at: Math.round((e.at - drop) * 10) / 10 })).join(" ")}`);
  }
  return steps;
}

async function openRuns(browser, server, mb) {
  const out = [];
  for (let i = 0; i < runs; i++) {
    const { context, page, problems } = await viewerPage(browser, `${server.url}/index.html`);
    const t0 = await dropFile(page, paths[mb]);
    const seen = await waitSeen(page);
    const steps = await openSteps(page, t0, seen);
    if (showSteps) log(`${mb} MB steps (ms after the drop): ${JSON.stringify(steps)}`);
    out.push({
      overview_ms: seen.overview.t - t0,
      counted_ms: seen.counted.t - t0,
      outlined: seen.counted.outlined,
      plot_ms: seen.plot ? seen.plot.t - t0 : null,
      exact_ms: seen.exact ? seen.exact.t - t0 : null,
      mode: seen.mode,
      status: seen.status,
      exact_status: seen.exactStatus ?? null,
      steps,
    });
    if (problems.length) log(`${mb} MB: ${problems.join("; ")}`);
    await context.close();
  }
  return out;
}

async function memoryRun(browser, server, mb) {
  const { context, page, dev, problems } = await viewerPage(browser, `${server.url}/index.html`, { devtools: true });
  await dev.cdp.send("HeapProfiler.collectGarbage");
  const samples = [];
  let sampling = true;
  const loop = (async () => {
    while (sampling) {
      samples.push(await memorySample(dev).catch(() => null));
      await sleep(50);
    }
  })();
  await dropFile(page, paths[mb]);
  await waitSeen(page);
  await sleep(1000);
  sampling = false;
  await loop;
  const total = (s) => (s ? s.page_heap + s.worker_heap + s.wasm : 0);
  const peak = samples.reduce((best, s) => (total(s) > total(best) ? s : best), samples[0]);
  if (problems.length) log(`memory: ${problems.join("; ")}`);
  await context.close();
  return { peak_heap_wasm: total(peak), peak_parts: peak, samples: samples.length };
}

/** Runs in the engine page: each of `seqs` decoded once, whole-file and in place. */
async function decodeInPage({ seqs }) {
  const file = document.getElementById("bench-src").files[0];
  const engine = window.createEngine();
  const timed = async (h) => {
    const d = await h.describe();
    const s = d.sources[0];
    const st = s.streams[0];
    const ms = [];
    const n = st.segments.length;
    for (const k of seqs) {
      const seg = st.segments[Math.floor((k * n) / 100) % n];
      const t = performance.now();
      const rows = await h.readSegment(s.id, st.name, seg.seq);
      ms.push(performance.now() - t);
      if (!rows) throw new Error("no rows");
    }
    return ms;
  };
  const whole = await engine.open(await file.arrayBuffer(), file.name);
  const wholeMs = await timed(whole);
  await whole.close();
  const lazy = await engine.openFile(file, file.name);
  // The catalog is read by the first call that lists it: not a segment's reads.
  await lazy.describe();
  const before = await lazy.lazyStats();
  const lazyMs = await timed(lazy);
  const after = await lazy.lazyStats();
  await lazy.close();
  return { whole: wholeMs, lazy: lazyMs, mode: lazy.mode, fetches: after.fetches - before.fetches, fetched: after.fetchedBytes - before.fetchedBytes };
}

async function decodeRuns(browser, mb) {
  const engineDir = join(tmpdir(), "dendro-bench-lazy-engine");
  await bundleEngine(engineDir);
  const server = await startServer({ root: engineDir, mounts: { "/engine/": engineDir } });
  try {
    const out = [];
    for (let i = 0; i < runs; i++) {
      const context = await browser.newContext();
      await hookWorkers(context);
      const page = await context.newPage();
      await page.goto(`${server.url}/engine/index.html`);
      await page.waitForFunction(() => typeof window.createEngine === "function");
      await page.evaluate(() => {
        const input = document.createElement("input");
        input.type = "file";
        input.id = "bench-src";
        document.body.append(input);
      });
      await page.setInputFiles("#bench-src", paths[mb]);
      // Segments spread over the file (percent of the way), a different set each run.
      const seqs = Array.from({ length: 12 }, (_, k) => 1 + i + k * 8);
      out.push(await page.evaluate(decodeInPage, { seqs }));
      await context.close();
    }
    return out;
  } finally {
    await server.close();
  }
}

/** `dendro serve` for `file` on a free port; resolves to { url, stop }. */
function dendroServe(file) {
  const child = spawn(DENDRO, ["serve", "--port", "0", "--root", DIST, file], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`dendro serve exited (${code})`)));
    child.stdout.on("data", (d) => {
      out += d;
      const m = /serving .* on (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (m) resolve({ url: m[1], stop: () => child.kill("SIGTERM") });
    });
  });
}

/** The static test server (ranges, no accelerator) with `file` at /archives/NAME; resolves to { url, stop }. */
async function staticServe(file) {
  const name = file.split("/").pop();
  const server = await startServer({ root: DIST, mounts: { [`/archives/${name}`]: file } });
  return { url: server.url, stop: () => server.close() };
}

/** A loopback proxy in front of `target` that logs every answer under /archives/: when, status, body bytes. */
function countingProxy(target) {
  const log = [];
  const server = createServer((req, res) => {
    const t = new URL(target);
    const entry = { start: Date.now(), url: req.url, range: req.headers.range ?? null, bytes: 0 };
    // `dendro serve` answers only requests naming it (Host, Origin): the proxy names it.
    const headers = { ...req.headers, host: t.host, ...(req.headers.origin ? { origin: t.origin } : {}) };
    const up = httpRequest({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers }, async (answer) => {
      if (delay > 0) await sleep(delay);
      entry.status = answer.statusCode;
      res.writeHead(answer.statusCode, answer.headers);
      answer.on("data", (d) => (entry.bytes += d.length));
      answer.on("end", () => {
        entry.end = Date.now();
        if (req.url.startsWith("/archives/")) log.push(entry);
      });
      answer.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${server.address().port}`, log, close: () => new Promise((r) => server.close(r)) })),
  );
}

async function httpRuns(browser, mb) {
  const file = httpFile ?? paths[mb];
  const served = staticServer ? await staticServe(file) : await dendroServe(file);
  const proxy = await countingProxy(served.url);
  const name = file.split("/").pop();
  try {
    const out = [];
    for (let i = 0; i < runs; i++) {
      proxy.log.length = 0;
      const { context, page, problems } = await viewerPage(browser, `${proxy.url}/?url=/archives/${name}`);
      const seen = await waitSeen(page);
      await sleep(300);
      const before = proxy.log.filter((e) => e.start <= seen.overview.wall);
      // With --overview-only there is no plot to count to.
      const toPlot = seen.plot ? proxy.log.filter((e) => e.start <= seen.plot.wall) : [];
      // The worker's steps, in ms after the page's navigation began.
      const steps = await openSteps(page, 0, seen);
      if (showSteps) log(`http steps (ms after navigation): ${JSON.stringify(steps)}`);
      out.push({
        steps,
        mode: seen.mode,
        overview_ms: seen.overview.t,
        plot_ms: seen.plot?.t ?? null,
        exact_ms: seen.exact?.t ?? null,
        requests_to_exact: seen.exact ? proxy.log.filter((e) => e.start <= seen.exact.wall).length : null,
        bytes_to_exact: seen.exact ? proxy.log.filter((e) => e.start <= seen.exact.wall).reduce((n, e) => n + e.bytes, 0) : null,
        exact_status: seen.exactStatus ?? null,
        requests_to_overview: before.length,
        bytes_to_overview: before.reduce((n, e) => n + e.bytes, 0),
        requests_to_plot: seen.plot ? toPlot.length : null,
        bytes_to_plot: seen.plot ? toPlot.reduce((n, e) => n + e.bytes, 0) : null,
        first_request_to_plot_ms: seen.plot && proxy.log.length ? seen.plot.wall - proxy.log[0].start : null,
        status: seen.status,
      });
      if (problems.length) log(`http: ${problems.join("; ")}`);
      await context.close();
    }
    return out;
  } finally {
    await proxy.close();
    served.stop();
  }
}

// ---------------------------------------------------------------------------

const hookDir = join(tmpdir(), "dendro-bench-lazy-hook");
await mkdir(hookDir, { recursive: true });
for (const [name, text] of Object.entries(HOOK)) await writeFile(join(hookDir, name), text);

const result = {
  runs,
  baseline,
  no_ranges: noRanges,
  open_as_before: openAsBefore,
  no_outline: noOutline,
  no_sample: noSample,
  no_accelerator: noAccelerator,
  when: new Date().toISOString(),
  load_before: loadavg().map((l) => Math.round(l * 100) / 100),
  file_bytes: Object.fromEntries(sizes.map((mb) => [mb, statSync(paths[mb]).size])),
  head: (() => {
    try {
      return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
    } catch {
      return "?";
    }
  })(),
};
const browser = await launch();
const server = await startServer({ root: DIST, mounts: { "/bench-hook/": hookDir } });
const raw = {};
try {
  if (!skip.has("open"))
    for (const mb of [...sizes, ...extraFiles.map((f) => f.split("/").pop())]) {
      log(`drop-to-overview ${mb} MB (${runs} fresh pages)`);
      raw[`open_${mb}`] = await openRuns(browser, server, mb);
    }
  if (!skip.has("memory")) {
    log(`memory ${biggest} MB`);
    const m = [];
    for (let i = 0; i < Math.min(runs, 3); i++) m.push(await memoryRun(browser, server, biggest));
    raw.memory = m;
  }
  if (!skip.has("decode")) {
    const mb = Math.min(...sizes);
    log(`decode lazy vs whole-file, ${mb} MB`);
    raw.decode = await decodeRuns(browser, mb);
  }
  if (!skip.has("http")) {
    const mb = sizes.includes(1024) ? 1024 : biggest;
    log(`over HTTP, ${mb} MB`);
    raw.http = await httpRuns(browser, mb);
  }
} finally {
  await browser.close();
  await server.close();
}

const summary = { ...result, load_after: loadavg().map((l) => Math.round(l * 100) / 100) };
for (const mb of [...sizes, ...extraFiles.map((f) => f.split("/").pop())]) {
  const o = raw[`open_${mb}`];
  if (o)
    summary[typeof mb === "number" ? `open_${mb}mb` : `open_${mb}`] = {
      mode: o[0]?.mode,
      overview_ms: median(o.map((r) => r.overview_ms)),
      overview_ms_all: o.map((r) => Math.round(r.overview_ms)),
      // The overview above is an outline where `outlined` (the rows still
      // being counted); this is when the full description's counts were up.
      outlined: o.filter((r) => r.outlined).length,
      counted_ms: median(o.map((r) => r.counted_ms)),
      first_plot_ms: median(o.map((r) => r.plot_ms)),
      first_plot_ms_all: o.map((r) => Math.round(r.plot_ms)),
      exact_ms: median(o.map((r) => r.exact_ms)),
      exact_status: o[0]?.exact_status,
      steps_ms: Object.fromEntries(Object.keys(o[0]?.steps ?? {}).map((k) => [k, median(o.map((r) => r.steps?.[k]))])),
      plot_status: o[0]?.status,
      target_overview_ms: 300,
    };
}
if (raw.memory)
  summary[`memory_${biggest}mb`] = {
    peak_heap_wasm_mb: median(raw.memory.map((m) => m.peak_heap_wasm / 2 ** 20)),
    parts_mb: Object.fromEntries(Object.entries(raw.memory[0].peak_parts ?? {}).map(([k, v]) => [k, Math.round((v / 2 ** 20) * 10) / 10])),
    target_mb: 150,
  };
if (raw.decode) {
  const whole = median(raw.decode.flatMap((r) => r.whole));
  const lazy = median(raw.decode.flatMap((r) => r.lazy));
  summary.decode = {
    whole_ms: whole,
    lazy_ms: lazy,
    ratio: whole / lazy,
    lazy_fetches_per_segment: median(raw.decode.map((r) => r.fetches / r.lazy.length)),
    target_ratio: 0.7,
  };
}
if (raw.http) {
  const h = raw.http;
  summary.http = {
    mode: h[0]?.mode,
    requests_to_overview: median(h.map((r) => r.requests_to_overview)),
    bytes_to_overview: median(h.map((r) => r.bytes_to_overview)),
    overview_ms: median(h.map((r) => r.overview_ms)),
    first_plot_ms: median(h.map((r) => r.plot_ms)),
    first_plot_ms_all: h.map((r) => Math.round(r.plot_ms)),
    exact_ms: median(h.map((r) => r.exact_ms)),
    requests_to_exact: median(h.map((r) => r.requests_to_exact)),
    bytes_to_exact: median(h.map((r) => r.bytes_to_exact)),
    exact_status: h[0]?.exact_status,
    delay_ms: delay,
    server: staticServer ? "static" : noAccelerator ? "dendro serve, accelerator not used" : "dendro serve",
    first_request_to_plot_ms: median(h.map((r) => r.first_request_to_plot_ms)),
    requests_to_plot: median(h.map((r) => r.requests_to_plot)),
    bytes_to_plot: median(h.map((r) => r.bytes_to_plot)),
    plot_status: h[0]?.status,
    targets: { bytes: "< 1 MiB", requests: "< 16", first_plot_ms: "< 1000" },
  };
}
const text = JSON.stringify(summary, (_, v) => (typeof v === "number" && !Number.isInteger(v) ? Math.round(v * 100) / 100 : v), 2);
if (jsonOut) await writeFile(jsonOut, JSON.stringify({ summary, raw }, null, 2));
console.log(text);

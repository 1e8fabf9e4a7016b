// Benchmarks the compare view (issue 31) on the real page (www/dist) in
// headless Chromium, each run on a fresh page:
//
//   overlay   two large demo archives dropped together on a page opened
//             at ?compare=STREAM (--stream, default memory): time from the drop to the first aligned
//             overlay (the compare view "drawn" with the sources of both
//             archives in its legend and its plot inked).
//   strip     N archives dropped together on a page opened at
//             ?compare=memory&col=used_bytes, the fleet strip chosen as
//             soon as the compare view appears: time from the drop to the
//             strip drawn (a row per source, inked), and the renderer
//             processes' peak resident memory over the run (/proc).
//
// The archives are written under target/bench-compare/ by the debug or
// release `dendro demo` (whichever is built): one big archive, whose copy
// with new source uuids is the second (the same recording twice would be
// drawn once, by design), and one 100 MB archive of one host, copied N
// times with new uuids and host labels. Delete them afterwards; they are
// large (`--clean` does it after the run).
//
//   node benches/browser/compare.mjs [--runs N] [--stream NAME] [--big-mb 1000] [--fleet 32] [--fleet-mb 100] [--skip overlay,strip] [--dist DIR] [--trace] [--clean]

import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { launch, rendererRss, root, startServer, WASM_MEMORY_HOOK } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const runs = Number(opt("--runs")) || 3;
const bigMb = Number(opt("--big-mb")) || 1000;
const fleetN = Number(opt("--fleet")) || 32;
const fleetMb = Number(opt("--fleet-mb")) || 100;
const stream = opt("--stream") ?? "memory";
const trace = args.includes("--trace");
const skip = new Set((opt("--skip") ?? "").split(",").filter(Boolean));
const DIR = join(root, "target/bench-compare");
// --dist DIR: another build of the page (an A/B against an older one in the same run).
const DIST = opt("--dist") ?? join(root, "www/dist");
const log = (...m) => console.error("bench-compare:", ...m);

function dendroBin() {
  for (const b of ["target/release/dendro", "target/debug/dendro"]) if (existsSync(join(root, b))) return join(root, b);
  throw new Error("no dendro binary: cargo build --release --bin dendro");
}

/** A copy of `from` at `to` whose sources have new uuids (and, given, new host labels). */
function copyAs(from, to, host) {
  if (existsSync(to)) return;
  copyFileSync(from, to);
  const py = `
import sqlite3, sys, uuid, json
c = sqlite3.connect(sys.argv[1])
for (i, labels) in c.execute("SELECT id, labels FROM sources").fetchall():
    l = json.loads(labels)
    if sys.argv[2]:
        l["host"] = sys.argv[2] if len(l) == 0 or i == 1 else sys.argv[2] + "-" + str(i)
    c.execute("UPDATE sources SET uuid = ?, labels = ? WHERE id = ?", (str(uuid.uuid4()), json.dumps(l, sort_keys=True, separators=(",", ":")), i))
c.commit()
`;
  execFileSync("python3", ["-c", py, to, host ?? ""]);
}

function demo(path, mb, hosts) {
  if (existsSync(path)) return;
  log(`writing ${path} (${mb} MB, ${hosts} host(s))…`);
  execFileSync(dendroBin(), ["demo", "--size", String(mb), "--hosts", String(hosts), path], { stdio: "inherit" });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

mkdirSync(DIR, { recursive: true });
const big = [join(DIR, "big-a.dendro"), join(DIR, "big-b.dendro")];
const fleet = Array.from({ length: fleetN }, (_, i) => join(DIR, `fleet-${String(i).padStart(2, "0")}.dendro`));
if (!skip.has("overlay")) {
  demo(big[0], bigMb, 3);
  copyAs(big[0], big[1]);
}
if (!skip.has("strip")) {
  demo(fleet[0], fleetMb, 1);
  fleet.slice(1).forEach((f, i) => copyAs(fleet[0], f, `host-${String(i + 1).padStart(2, "0")}`));
}

const server = await startServer({ root: DIST, mounts: { "/bench/": DIR } });
const browser = await launch();

/** Drops the files staged in #bench-src on the page and resolves when `done()` holds (checked once a frame): ms after the drop. */
function dropAndWait(kind) {
  const files = [...document.getElementById("bench-src").files];
  const dt = new DataTransfer();
  for (const f of files) dt.items.add(f);
  const fire = (type) => document.body.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, composed: true, dataTransfer: dt }));
  fire("dragenter");
  fire("dragover");
  const t0 = performance.now();
  fire("drop");
  const dropAt = performance.timeOrigin + t0;
  // Drawn: 20 pixels of colour (a series' stroke or a strip's row), not
  // the greys of grid, axes and background. (The overlay's second archive
  // is a copy of the first: its series cover the first's, so the first
  // series' own colour, which __inked looks for, may not show.)
  const painted = (canvas) => {
    const d = canvas.getContext("2d")?.getImageData(0, 0, canvas.width, canvas.height).data ?? [];
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 128 && Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60 && ++n >= 20) return true;
    return false;
  };
  return new Promise((resolve) => {
    const marks = {};
    const tick = () => {
      const now = performance.now() - t0;
      const view = document.querySelector('[data-testid="compare-view"]');
      // Where the time went: every archive open, and the compare view there.
      const tabs = [...document.querySelectorAll('[data-testid="tab"]')];
      if (marks.opened_ms === undefined && tabs.length >= files.length && tabs.every((t) => t.dataset.state !== "loading")) marks.opened_ms = now;
      if (marks.view_ms === undefined && view) marks.view_ms = now;
      if (kind === "strip") {
        // Chosen as soon as the view is there, as a person would.
        const btn = view?.querySelector('[data-mode="strip"]');
        if (btn && view.dataset.mode !== "strip") btn.click();
        const rows = view?.querySelectorAll('[data-testid="strip-row"]') ?? [];
        const canvas = rows[rows.length - 1]?.querySelector("canvas");
        // First up: the strip from footer statistics ("preview"), every row inked.
        if (marks.preview_ms === undefined && view?.dataset.mode === "strip" && (view.dataset.state === "preview" || view.dataset.state === "drawn") && rows.length >= files.length && canvas && painted(canvas)) marks.preview_ms = now;
        if (view?.dataset.mode === "strip" && view.dataset.state === "drawn" && rows.length > 0 && canvas && painted(canvas)) {
          return resolve({ ms: now, rows: rows.length, drop_at: dropAt, ...marks });
        }
      } else {
        const legend = view?.querySelectorAll('[data-testid="legend-entry"]') ?? [];
        const canvas = view?.querySelector(".uplot canvas");
        if (marks.preview_ms === undefined && (view?.dataset.state === "preview" || view?.dataset.state === "drawn") && legend.length >= 6 && canvas && painted(canvas)) marks.preview_ms = now;
        if (view?.dataset.state === "drawn" && legend.length >= 6 && canvas && painted(canvas)) return resolve({ ms: now, sources: legend.length, drop_at: dropAt, ...marks });
      }
      if (view?.dataset.state === "failed") return resolve({ error: view.querySelector('[data-testid="compare-status"]')?.textContent });
      if (now > 60_000) {
        const rows = view?.querySelectorAll('[data-testid="strip-row"]').length ?? 0;
        const tabs = [...document.querySelectorAll('[data-testid="tab"]')].map((t) => t.dataset.state).join(",");
        return resolve({ error: `timed out: view ${view ? `${view.dataset.mode}/${view.dataset.state}` : "absent"}, ${rows} strip rows, tabs ${tabs}` });
      }
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
}

async function run(kind, paths, query) {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1 });
  if (trace) {
    // The engine worker's own marks (www/src/engine/worker.ts: `start METHOD`
    // for every request it runs), read back after the run.
    // And the wasm memories of both workers (engine, decoder), for where the memory went.
    await context.route(/\/(worker|decoder)\.js(\?.*)?$/, async (route) => {
      const res = await route.fetch();
      await route.fulfill({ response: res, body: `{\n${WASM_MEMORY_HOOK}\n}\nself.__dendroTrace = true;\n${await res.text()}` });
    });
  }
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(e.message));
  await page.goto(`${server.url}/index.html?${query}`);
  await page.locator('[data-testid="dropzone"]').waitFor({ timeout: 30_000 });
  await page.evaluate(() => {
    const input = Object.assign(document.createElement("input"), { type: "file", id: "bench-src", multiple: true, hidden: true });
    document.body.appendChild(input);
  });
  await page.setInputFiles("#bench-src", paths);
  const base = rendererRss();
  let peak = base;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, rendererRss());
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const r = await page.evaluate(dropAndWait, kind);
  if (trace) r.rss_kinds = rssKinds();
  sampling = false;
  await sampler;
  if (trace) {
    r.engine = await engineTime(page, r.drop_at);
    r.memory = { page_js_heap: await page.evaluate(() => performance.memory?.usedJSHeapSize ?? 0) };
    for (const w of page.workers()) {
      const name = /decoder/.test(w.url()) ? "decoder" : "engine";
      r.memory[`${name}_wasm`] = await w.evaluate(() => (self.__wasmMemories ? [...self.__wasmMemories].reduce((n, m) => n + m.buffer.byteLength, 0) : 0)).catch(() => 0);
      r.memory[`${name}_js_heap`] = await w.evaluate(() => performance.memory?.usedJSHeapSize ?? 0).catch(() => 0);
    }
  }
  await context.close();
  if (r.error || problems.length > 0) throw new Error(`${kind}: ${r.error ?? problems.join("; ")}`);
  return { ...r, base_rss: base, peak_rss: peak };
}

/**
 * With --trace: where the engine worker's time went after the drop, per
 * request kind (`start METHOD` marks to the next mark of a start): count,
 * total ms, and when the last one started.
 */
async function engineTime(page, dropAt) {
  const worker = page.workers().find((w) => /\/worker\.js/.test(w.url()));
  const log = worker ? await worker.evaluate(() => self.__dendroTraceLog ?? []).catch(() => []) : [];
  const starts = log.filter((e) => e.what.startsWith("start ") && e.at >= dropAt);
  const out = {};
  starts.forEach((e, i) => {
    const end = starts[i + 1]?.at ?? e.at;
    const k = e.what.slice(6);
    const o = (out[k] ??= { n: 0, ms: 0, last_start_ms: 0 });
    o.n++;
    o.ms = Math.round(o.ms + end - e.at);
    o.last_start_ms = Math.round(e.at - dropAt);
  });
  if (args.includes("--trace-raw")) {
    const i = log.findIndex((e) => e.what === "start previewRange");
    console.error(log.slice(Math.max(0, i - 2), i + 30).map((e) => ({ ...e, at: Math.round(e.at - dropAt) })));
  }
  return out;
}

/** With --trace: the renderers' resident memory now by kind (anonymous, file-backed, shared), summed, bytes. */
function rssKinds() {
  const out = { RssAnon: 0, RssFile: 0, RssShmem: 0 };
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (!readFileSync(`/proc/${d}/cmdline`, "utf8").includes("--type=renderer")) continue;
      const st = readFileSync(`/proc/${d}/status`, "utf8");
      for (const k of Object.keys(out)) out[k] += Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(st)?.[1] ?? 0) * 1024;
    } catch {}
  }
  return out;
}

const mb = (b) => (b / 1e6).toFixed(0);
const out = {};
if (!skip.has("overlay")) {
  const list = [];
  for (let i = 0; i < runs; i++) list.push(await run("overlay", big, `compare=${encodeURIComponent(stream)}`));
  out.overlay = { archive_bytes: big.map((p) => statSync(p).size), runs: list, median_preview_ms: median(list.map((r) => r.preview_ms)), median_ms: median(list.map((r) => r.ms)), median_peak_rss: median(list.map((r) => r.peak_rss)) };
  log(`overlay: two archives of ${big.map((p) => mb(statSync(p).size)).join(" and ")} MB dropped together → first aligned overlay of "${stream}" over ${list[0].sources} sources: first drawn (preview or exact) median ${out.overlay.median_preview_ms?.toFixed(0)} ms, exact median ${out.overlay.median_ms.toFixed(0)} ms (${list.map((r) => r.ms.toFixed(0)).join(", ")}; archives open at ${list.map((r) => r.opened_ms?.toFixed(0)).join(", ")}); renderer peak ${mb(out.overlay.median_peak_rss)} MB`);
}
if (!skip.has("strip")) {
  const list = [];
  for (let i = 0; i < runs; i++) list.push(await run("strip", fleet, "compare=memory&col=used_bytes"));
  out.strip = { archives: fleet.length, archive_bytes: statSync(fleet[0]).size, runs: list, median_preview_ms: median(list.map((r) => r.preview_ms)), median_ms: median(list.map((r) => r.ms)), median_peak_rss: median(list.map((r) => r.peak_rss)) };
  log(`strip: ${fleet.length} archives of ${mb(statSync(fleet[0]).size)} MB dropped together → fleet strip of one column, ${list[0].rows} rows: first drawn (preview or exact) median ${out.strip.median_preview_ms?.toFixed(0)} ms, every row exact median ${out.strip.median_ms.toFixed(0)} ms (${list.map((r) => r.ms.toFixed(0)).join(", ")}; archives open at ${list.map((r) => r.opened_ms?.toFixed(0)).join(", ")}); renderer peak resident ${mb(out.strip.median_peak_rss)} MB (max ${mb(Math.max(...list.map((r) => r.peak_rss)))} MB; the page before the drop ${mb(median(list.map((r) => r.base_rss)))} MB)`);
}
console.log(JSON.stringify(out, null, 2));
await browser.close();
await server.close();
if (args.includes("--clean")) for (const p of [...big, ...fleet]) rmSync(p, { force: true });

// Benchmarks following an archive while it is written (issue 13), in
// headless Chromium against `dendro serve` on 127.0.0.1:
//
//   latency   `dendro demo --live` (a row a second per stream) served and
//             followed (?follow): for every new newest row a plot draws,
//             the time from the moment the server first offered an image
//             holding it (this script revalidates the URL every 10 ms with
//             If-None-Match and notes when the ETag changes) to the
//             animation frame after the draw. p50, p95, max.
//   bytes     bytes the page read from the network per minute (the
//             engine's count: probes' and ranges' bodies; requests counted
//             too) while following an idle archive (a finished demo) and
//             while following the live writer, against the bytes the
//             writer itself wrote in that minute (its /proc/PID/io wchar:
//             WAL frames and checkpoints) and the growth of the image.
//   tasks     the longest main-thread task (PerformanceObserver longtask)
//             while following.
//
// The first plot at 100 MB is benches/browser/viewer.mjs's ("open").
//
// With --trace DIR, Chromium's trace of the live-following minute is
// written to DIR/follow.json and every main-thread task over 50 ms in it
// is broken down: the time of its top-level events by name (script,
// style, layout, paint, GC) and the page's functions by self time in the
// samples taken during those tasks.
//
//   node benches/browser/follow.mjs [--seconds N] [--json] [--trace DIR] [--dist DIR]
//
// Needs www/dist (npm run build:www) and the dendro binary
// (target/release/dendro, else target/debug/dendro, or DENDRO_BIN).

import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir, loadavg } from "node:os";
import { basename, join } from "node:path";
import { launch, root } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const seconds = Number(opt("--seconds")) || 60;
const asJson = args.includes("--json");
const traceDir = opt("--trace");
const log = (...m) => console.error("bench-follow:", ...m);

// --dist DIR: another build of the page (a side-by-side with an older one).
const DIST = opt("--dist") ?? join(root, "www/dist");
if (!existsSync(join(DIST, "index.html"))) {
  console.error("bench-follow: www/dist is not built: run `npm run build:www`");
  process.exit(2);
}
const bin = [process.env.DENDRO_BIN, join(root, "target/release/dendro"), join(root, "target/debug/dendro")].filter(Boolean).find((b) => existsSync(b));
if (!bin) {
  console.error("bench-follow: no dendro binary: run `cargo build --release --bin dendro`");
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "dendro-bench-follow-"));

function serve(file) {
  const child = spawn(bin, ["serve", "--port", "0", "--root", DIST, file], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (b) => {
      out += b;
      const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out);
      if (m) resolve({ child, url: `http://127.0.0.1:${m[1]}` });
    });
    child.on("exit", (c) => reject(new Error(`dendro serve exited ${c}`)));
  });
}

async function writer(file, forSeconds) {
  const child = spawn(bin, ["demo", "--live", "--for", String(forSeconds), "--minutes", "30", file], { stdio: ["ignore", "ignore", "pipe"] });
  for (;;) {
    if (child.exitCode !== null) throw new Error("dendro demo --live exited early");
    try {
      const d = JSON.parse(execFileSync(bin, ["describe", "--json", file], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
      if (d.sources.length > 0) return child;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

function wchar(pid) {
  const m = /wchar:\s*(\d+)/.exec(readFileSync(`/proc/${pid}/io`, "utf8"));
  return m ? Number(m[1]) : NaN;
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

const TRACE_CATEGORIES = [
  "devtools.timeline",
  "disabled-by-default-devtools.timeline",
  "v8.execute",
  "disabled-by-default-v8.cpu_profiler",
  "blink.user_timing",
  "toplevel",
];

/**
 * What the renderer's main-thread tasks over 50 ms are made of: per task,
 * the self time (its own, less that of the events nested in it) of each
 * kind of trace event in it, longest first; and over all of them, the
 * functions with the most self time among the CPU profile's samples of
 * that thread that fall inside them.
 */
function longTaskAnatomy(trace, seen) {
  const events = trace.traceEvents ?? trace;
  // The page's long tasks on the trace's clock (µs), through the mark.
  const mark = events.find((e) => e.name === "bench-follow-trace" && (e.ph === "R" || e.ph === "I" || e.ph === "b" || e.ph === "n" || e.ph === "X"));
  const pageTasks = mark && seen ? seen.tasks.map(([start, dur]) => [mark.ts + (start - seen.at) * 1000, mark.ts + (start - seen.at + dur) * 1000]) : null;
  const mains = new Set(events.filter((e) => e.ph === "M" && e.name === "thread_name" && e.args?.name === "CrRendererMain").map((e) => `${e.pid}:${e.tid}`));
  const byThread = new Map();
  for (const e of events) {
    if (e.ph !== "X" || !mains.has(`${e.pid}:${e.tid}`)) continue;
    const k = `${e.pid}:${e.tid}`;
    if (!byThread.has(k)) byThread.set(k, []);
    byThread.get(k).push(e);
  }
  const label = (c) =>
    c.name === "FunctionCall" || c.name === "TimerFire" || c.name === "FireAnimationFrame" || c.name === "EventDispatch"
      ? `${c.name}(${c.args?.data?.functionName || c.args?.data?.type || ""})`
      : c.name;
  const tasks = [];
  const windows = [];
  const cpuTop = [];
  for (const [k, list] of byThread) {
    list.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
    // The tasks to break down: those the page saw as long, else the trace's own over 50 ms.
    // On a loaded host a task's wall time is mostly waiting for a core, so
    // the tasks with the most CPU time (tdur) are broken down too.
    const runs = list.filter((t) => t.name === "RunTask");
    const byCpu = [...runs].sort((a, b) => (b.tdur ?? 0) - (a.tdur ?? 0)).slice(0, 5);
    cpuTop.push(...runs.map((t) => (t.tdur ?? 0) / 1000));
    const spans = [...(pageTasks ?? runs.filter((t) => t.dur >= 50_000).map((t) => [t.ts, t.ts + t.dur])), ...byCpu.map((t) => [t.ts, t.ts + t.dur])];
    for (const [from, end] of spans) {
      const first = list.findIndex((e) => e.ts + (e.dur ?? 0) > from);
      if (first < 0) continue;
      // Self time by name: each event's duration less its nested events'.
      const self = new Map();
      const stack = [{ end, name: null }];
      let cpu = 0;
      const add = (name, us) => name && self.set(name, (self.get(name) ?? 0) + us);
      let j = first;
      for (; j < list.length && list[j].ts < end; j++) {
        const c = list[j];
        if (c.ts + (c.dur ?? 0) <= from) continue;
        while (stack.length > 1 && stack[stack.length - 1].end <= c.ts) stack.pop();
        const parent = stack[stack.length - 1];
        // The thread's own CPU time in the task (wall time less preemption).
        if (stack.length === 1) cpu += c.tdur ?? 0;
        const cEnd = Math.min(c.ts + (c.dur ?? 0), parent.end);
        add(label(c), cEnd - c.ts);
        add(parent.name, -(cEnd - c.ts));
        stack.push({ end: cEnd, name: label(c) });
      }
      // Time in none of the thread's events: the thread was idle or not running.
      let covered = 0;
      for (const us of self.values()) covered += us;
      self.set("(no event)", end - from - covered);
      const parts = [...self].filter(([, us]) => us >= 500).sort((a, b) => b[1] - a[1]).slice(0, 10).map(([n, us]) => [n, Math.round(us / 100) / 10]);
      tasks.push({ thread: k, at: from, ms: Math.round((end - from) / 1000), cpuMs: Math.round(cpu / 1000), parts });
      windows.push([k, from, end]);
    }
  }
  // A task listed twice (long, and among the most CPU) once.
  const unique = new Map(tasks.map((t) => [`${t.thread}:${t.at}`, t]));
  tasks.length = 0;
  tasks.push(...unique.values());
  tasks.sort((a, b) => b.ms - a.ms);
  // The CPU profile's samples (ProfileChunk events, by the thread profiled) inside those tasks.
  const self = new Map();
  const nodes = new Map();
  const clock = new Map();
  const threadOf = new Map();
  for (const e of events)
    if (e.name === "Profile") {
      clock.set(`${e.pid}:${e.id}`, e.args?.data?.startTime ?? e.ts);
      threadOf.set(`${e.pid}:${e.id}`, `${e.pid}:${e.tid}`);
    }
  for (const e of events) {
    if (e.name !== "ProfileChunk") continue;
    const key = `${e.pid}:${e.id}`;
    const thread = threadOf.get(key) ?? `${e.pid}:${e.tid}`;
    const data = e.args?.data ?? {};
    for (const n of data.cpuProfile?.nodes ?? []) nodes.set(`${key}:${n.id}`, n.callFrame);
    let t = clock.get(key) ?? e.ts;
    const samples = data.cpuProfile?.samples ?? [];
    const deltas = data.timeDeltas ?? [];
    for (let i = 0; i < samples.length; i++) {
      const d = deltas[i] ?? 0;
      t += d;
      if (!windows.some(([k, a, b]) => k === thread && t >= a && t <= b)) continue;
      const f = nodes.get(`${key}:${samples[i]}`);
      const name = f ? `${f.functionName || "(anonymous)"}${f.url ? ` ${f.url.split("/").pop()}:${f.lineNumber + 1}` : ""}` : "?";
      self.set(name, (self.get(name) ?? 0) + d);
    }
    clock.set(key, t);
  }
  const functions = [...self].sort((a, b) => b[1] - a[1]).slice(0, 15).map(([n, us]) => [n, Math.round(us / 100) / 10]);
  cpuTop.sort((a, b) => b - a);
  return { tasks, functions, cpuLongest: Math.round(cpuTop[0] ?? 0), cpuOver50: cpuTop.filter((x) => x > 50).length, cpuTop: cpuTop.slice(0, 8).map(Math.round) };
}

/** Opens the page following `url`, recording draws (newest row, wall time of the frame after) and long tasks. */
async function followPage(browser, base, file, stream, column) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  await page.addInitScript(() => {
    window.__long = [];
    window.__draws = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) {
        window.__long.push(e.duration);
        window.__longAt?.push([e.startTime, e.duration]);
      }
    }).observe({ type: "longtask", buffered: true });
    let last = null;
    const check = () => {
      const el = document.querySelector('[data-testid="plot"]');
      const d = el?.dendroPlot;
      if (d && d.ts.length) {
        const newest = String(d.ts[d.ts.length - 1]);
        if (newest !== last) {
          last = newest;
          requestAnimationFrame(() => window.__draws.push({ newest, at: performance.timeOrigin + performance.now() }));
        }
      }
      requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  });
  const q = new URLSearchParams({ url: `/archives/${basename(file)}`, follow: "1", source: "1", stream });
  q.append("col", column);
  await page.goto(`${base}/?${q}`);
  try {
    await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 60_000 });
  } catch (e) {
    await page.screenshot({ path: join(dir, "stuck.png") });
    log(`no plot drawn; the page is in ${join(dir, "stuck.png")}`);
    throw e;
  }
  return page;
}

const traffic = (page) =>
  page.locator('[data-testid="follow-status"]').evaluate((el) => ({ net: Number(el.dataset.netBytes ?? 0), requests: Number(el.dataset.requests ?? 0) }));

const browser = await launch();
const out = { load: loadavg()[0] };
try {
  // --- Following an idle archive: a finished demo.
  {
    const file = join(dir, "idle.dendro");
    execFileSync(bin, ["demo", "--minutes", "30", file], { stdio: "ignore" });
    const s = await serve(file);
    log("idle archive written; following it");
    const page = await followPage(browser, s.url, file, "memory", "used_bytes");
    const t0 = await traffic(page);
    const idleFor = Math.min(seconds, 30);
    await new Promise((r) => setTimeout(r, idleFor * 1000));
    const t1 = await traffic(page);
    out.idle = { seconds: idleFor, bytesPerMinute: ((t1.net - t0.net) * 60) / idleFor, requestsPerMinute: ((t1.requests - t0.requests) * 60) / idleFor };
    log(`idle: ${Math.round(out.idle.bytesPerMinute)} B/min of bodies, ${Math.round(out.idle.requestsPerMinute)} requests/min`);
    await page.close();
    s.child.kill("SIGKILL");
  }

  // --- Following the live writer.
  {
    const file = join(dir, "live.dendro");
    const w = await writer(file, seconds + 60);
    const s = await serve(file);
    log("writer started; following it");
    // When the server first offers each new image.
    const offered = [];
    let etag = null;
    let polling = true;
    const poll = (async () => {
      while (polling) {
        try {
          const res = await fetch(`${s.url}/archives/${basename(file)}`, { headers: { Range: "bytes=0-0", ...(etag ? { "If-None-Match": etag } : {}) } });
          await res.arrayBuffer();
          if (res.status === 206) {
            etag = res.headers.get("etag");
            offered.push(Date.now());
          }
        } catch {
          // keep going
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const page = await followPage(browser, s.url, file, "memory", "used_bytes");
    // Let it settle, then measure over `seconds`.
    await new Promise((r) => setTimeout(r, 3000));
    await page.evaluate(() => {
      window.__long = [];
      window.__draws = [];
    });
    const t0 = await traffic(page);
    const w0 = wchar(w.pid);
    const imageSize = async () => {
      const res = await fetch(`${s.url}/archives/${basename(file)}`, { headers: { Range: "bytes=0-0" } });
      await res.arrayBuffer();
      return Number(/\/(\d+)$/.exec(res.headers.get("content-range") ?? "")?.[1] ?? NaN);
    };
    const size0 = await imageSize();
    const tracePath = traceDir ? join(traceDir, "follow.json") : null;
    if (tracePath) {
      mkdirSync(traceDir, { recursive: true });
      await browser.startTracing(page, { path: tracePath, categories: TRACE_CATEGORIES });
      // A mark that puts the page's clock on the trace's, so the long
      // tasks the page saw are found in the trace.
      await page.evaluate(() => {
        window.__longAt = [];
        performance.mark("bench-follow-trace");
      });
    }
    await new Promise((r) => setTimeout(r, seconds * 1000));
    if (tracePath) {
      await browser.stopTracing();
      const seen = await page.evaluate(() => ({ at: performance.getEntriesByName("bench-follow-trace")[0]?.startTime ?? 0, tasks: window.__longAt }));
      out.trace = longTaskAnatomy(JSON.parse(readFileSync(tracePath, "utf8")), seen);
      log(`trace in ${tracePath}; ${out.trace.tasks.length} main-thread tasks over 50 ms`);
      for (const t of out.trace.tasks.slice(0, 12)) log(`  ${t.ms} ms (${t.cpuMs} ms on the CPU): ${t.parts.map(([n, ms]) => `${n} ${ms}`).join(", ")}`);
      log(`  the page's functions by self time within them: ${out.trace.functions.map(([n, ms]) => `${n} ${ms}`).join(", ")}`);
      log(`  CPU time of the main thread's tasks: longest ${out.trace.cpuLongest} ms, ${out.trace.cpuOver50} over 50 ms; the most: ${out.trace.cpuTop.join(", ")} ms`);
    }
    const t1 = await traffic(page);
    const w1 = wchar(w.pid);
    const size1 = await imageSize();
    const draws = await page.evaluate(() => window.__draws);
    const long = await page.evaluate(() => window.__long);
    polling = false;
    await poll;
    // Each draw's latency: from the last image offered before it (the one that brought the row).
    const lat = [];
    for (const d of draws) {
      let o = null;
      for (const t of offered) if (t <= d.at) o = t;
      if (o !== null) lat.push(d.at - o);
    }
    out.latency = { draws: draws.length, p50: pct(lat, 50), p95: pct(lat, 95), max: Math.max(...lat) };
    out.following = {
      seconds,
      bytesPerMinute: ((t1.net - t0.net) * 60) / seconds,
      requestsPerMinute: ((t1.requests - t0.requests) * 60) / seconds,
      writerBytesPerMinute: ((w1 - w0) * 60) / seconds,
      ratio: (t1.net - t0.net) / (w1 - w0),
      imageGrowthPerMinute: ((size1 - size0) * 60) / seconds,
    };
    out.tasks = {
      longest: long.length ? Math.max(...long) : 0,
      over50: long.filter((x) => x > 50).length,
      count: long.length,
      p50: pct(long, 50),
      top: [...long].sort((a, b) => b - a).slice(0, 10).map(Math.round),
    };
    log(`latency: ${draws.length} draws, p50 ${Math.round(out.latency.p50)} ms, p95 ${Math.round(out.latency.p95)} ms, max ${Math.round(out.latency.max)} ms`);
    log(
      `following: ${Math.round(out.following.bytesPerMinute)} B/min read, writer wrote ${Math.round(out.following.writerBytesPerMinute)} B/min: ${out.following.ratio.toFixed(2)}x; the image grew ${Math.round(out.following.imageGrowthPerMinute)} B/min; ${Math.round(out.following.requestsPerMinute)} requests/min`,
    );
    log(`main thread: ${out.tasks.count} long tasks, longest ${Math.round(out.tasks.longest)} ms, ${out.tasks.over50} over 50 ms; the longest: ${out.tasks.top.join(", ")} ms`);
    await page.close();
    s.child.kill("SIGKILL");
    w.kill("SIGINT");
  }
} finally {
  await browser.close();
}
out.loadAfter = loadavg()[0];
if (asJson) console.log(JSON.stringify(out, null, 2));
else log(`load average ${out.load.toFixed(1)} before, ${out.loadAfter.toFixed(1)} after`);

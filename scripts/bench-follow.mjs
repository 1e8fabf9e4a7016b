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
// The first plot at 100 MB is scripts/bench-viewer.mjs's ("open").
//
//   node scripts/bench-follow.mjs [--seconds N] [--json]
//
// Needs www/dist (npm run build:www) and the dendro binary
// (target/release/dendro, else target/debug/dendro, or DENDRO_BIN).

import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir, loadavg } from "node:os";
import { basename, join } from "node:path";
import { launch, root } from "./lib/engine-page.mjs";

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const seconds = Number(opt("--seconds")) || 60;
const asJson = args.includes("--json");
const log = (...m) => console.error("bench-follow:", ...m);

const DIST = join(root, "www/dist");
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

/** Opens the page following `url`, recording draws (newest row, wall time of the frame after) and long tasks. */
async function followPage(browser, base, file, stream, column) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  await page.addInitScript(() => {
    window.__long = [];
    window.__draws = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) window.__long.push(e.duration);
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
    await new Promise((r) => setTimeout(r, seconds * 1000));
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
    out.tasks = { longest: long.length ? Math.max(...long) : 0, over50: long.filter((x) => x > 50).length, count: long.length };
    log(`latency: ${draws.length} draws, p50 ${Math.round(out.latency.p50)} ms, p95 ${Math.round(out.latency.p95)} ms, max ${Math.round(out.latency.max)} ms`);
    log(
      `following: ${Math.round(out.following.bytesPerMinute)} B/min read, writer wrote ${Math.round(out.following.writerBytesPerMinute)} B/min: ${out.following.ratio.toFixed(2)}x; the image grew ${Math.round(out.following.imageGrowthPerMinute)} B/min; ${Math.round(out.following.requestsPerMinute)} requests/min`,
    );
    log(`main thread: ${out.tasks.count} long tasks, longest ${Math.round(out.tasks.longest)} ms, ${out.tasks.over50} over 50 ms`);
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

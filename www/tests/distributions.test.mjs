// Histogram heatmaps and region statistics in the stream view (issue 32),
// against `benches/inputs/distributions_archive.rs`'s dist.dendro (an hour
// at 1 s, a five-minute gap without rows, a tail event, a counter and a
// cumulative histogram that reset once). What the page shows is compared
// with the same figures computed here, independently, from `dendro cat`'s
// rows: a heatmap's per-pixel-column sums and quantile lines exactly (they
// are integers and bucket edges), a region's statistics within 1e-9
// relative (the same doubles, summed in the same order), and with what
// `dendro stats --json` prints for the same region. The demo's latency
// heatmap is drawn and photographed.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { cat, dendro, tsOf } from "./cli.mjs";
import { ROOT, launch, missingPrerequisite, newPage, parseJsonExact, screenshot, serve } from "./helpers.mjs";

const T = { timeout: 180_000 };
const missing = missingPrerequisite();
const DIR = join(ROOT, "target", "bench-distributions");
const FILE = join(DIR, "dist.dendro");
const BUCKETS = 16;
const BOUNDS = Array.from({ length: BUCKETS + 1 }, (_, i) => 2 ** i);
const QUANTILES = [["p50", 0.5], ["p90", 0.9], ["p99", 0.99], ["p999", 0.999]];

/** dist.dendro, written when missing by the example program (built by `cargo test`, else through cargo run). */
function ensureArchive() {
  if (existsSync(FILE)) return;
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(ROOT, "target");
  const built = ["debug", "release"].map((p) => join(targetDir, p, "examples/distributions_archive")).find((b) => existsSync(b));
  const [cmd, args] = built ? [built, [DIR]] : ["cargo", ["run", "--quiet", "--example", "distributions_archive", "--", DIR]];
  execFileSync(cmd, args, { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"], timeout: 600_000 });
}

function close(a, b) {
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}

/** The upper edge of the first bucket whose running count reaches ⌈q·total⌉ (NaN: nothing counted). */
function quantile(counts, q) {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return NaN;
  const rank = Math.min(total, Math.max(1, Math.ceil(q * total)));
  let run = 0;
  for (let b = 0; b < counts.length; b++) {
    run += counts[b];
    if (run >= rank) return BOUNDS[b + 1];
  }
  return NaN;
}

function maxBucket(counts) {
  for (let b = counts.length - 1; b >= 0; b--) if (counts[b] > 0) return BOUNDS[b + 1];
  return NaN;
}

function nearestRank(values, q) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length, Math.max(1, Math.ceil(q * s.length))) - 1];
}

/** Interval counts of a histogram's rows in order: a cumulative one's first row is a baseline, a fall of the total a reset. */
function intervals(rows, column, cumulative) {
  const out = [];
  let prev = null;
  for (const r of rows) {
    const c = r[column].map(Number);
    if (!cumulative) out.push(c);
    else if (prev) {
      const fell = c.reduce((a, b) => a + b, 0) < prev.reduce((a, b) => a + b, 0);
      out.push(fell ? c : c.map((v, i) => v - prev[i]));
    }
    prev = c;
  }
  return out;
}

describe("histogram heatmaps and region statistics", () => {
  let server;
  let browser;
  let rows;

  before(async () => {
    assert.equal(missing, null, missing ?? "");
    ensureArchive();
    rows = cat(FILE, 1, "api");
    assert.equal(rows.length, 3_300, "an hour at 1 s less the five-minute gap");
    server = await serve({ "/dist.dendro": FILE });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(page, cols, extra = "") {
    const q = new URLSearchParams({ url: "/dist.dendro", source: "1", stream: "api" });
    for (const c of cols) q.append("col", c);
    await page.goto(`${server.url}/?${q}${extra}`);
    await page.locator('[data-testid="heatmap"][data-state="drawn"]').first().waitFor({ timeout: 60_000 });
  }

  function heatmapOf(page, column = "latency") {
    return page.locator(`[data-testid="heatmap"][data-column="${column}"]`).evaluate((el) => {
      const d = el.dendroHeatmap;
      return {
        from: String(d.from),
        to: String(d.to),
        pixels: d.pixels,
        rows: d.rows,
        counts: Array.from(d.counts),
        present: Array.from(d.present),
        lines: Object.fromEntries(Object.entries(d.lines).map(([k, v]) => [k, Array.from(v)])),
        drawn: el.dataset.drawn,
      };
    });
  }

  /** The sums and lines a heatmap of [from, to] in `pixels` columns must hold, from cat's rows. */
  function expectedHeatmap(from, to, pixels, column = "latency", cumulative = false) {
    const inWindow = rows.filter((r) => tsOf(r) >= from && tsOf(r) <= to);
    const span = to - from + 1n;
    const counts = new Array(pixels * BUCKETS).fill(0);
    const present = new Array(pixels).fill(0);
    // A cumulative row's interval is its difference from the row before,
    // which may lie before the window; the stream's first row has none.
    const before = rows.filter((r) => tsOf(r) < from).at(-1);
    const led = cumulative && before ? [before, ...inWindow] : inWindow;
    const ivs = intervals(led, column, cumulative);
    const used = cumulative && !before ? inWindow.slice(1) : inWindow;
    used.forEach((r, i) => {
      const p = Math.min(pixels - 1, Number(((tsOf(r) - from) * BigInt(pixels)) / span));
      present[p] = 1;
      ivs[i].forEach((c, b) => (counts[p * BUCKETS + b] += c));
    });
    const per = (p) => counts.slice(p * BUCKETS, (p + 1) * BUCKETS);
    const lines = Object.fromEntries(QUANTILES.map(([k, q]) => [k, Array.from({ length: pixels }, (_, p) => quantile(per(p), q))]));
    lines.max = Array.from({ length: pixels }, (_, p) => maxBucket(per(p)));
    return { counts, present, lines, rows: used.length };
  }

  function assertHeatmap(got, want, what) {
    assert.equal(got.rows, want.rows, `${what}: rows summed`);
    assert.deepEqual(got.present, want.present, `${what}: columns with rows`);
    assert.deepEqual(got.counts, want.counts, `${what}: summed counts per pixel column`);
    for (const k of Object.keys(want.lines)) assert.deepEqual(got.lines[k].map(String), want.lines[k].map(String), `${what}: line ${k}`);
  }

  /** Drags across `locator`'s plot area from fraction a to b of its width, holding Shift when asked. */
  async function drag(page, locator, a, b, shift) {
    await locator.scrollIntoViewIfNeeded();
    const box = await locator.boundingBox();
    if (shift) await page.keyboard.down("Shift");
    await page.mouse.move(box.x + box.width * a, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * b, box.y + box.height / 2, { steps: 6 });
    await page.mouse.up();
    if (shift) await page.keyboard.up("Shift");
  }

  it("draws the exact per-column sums and quantile lines, absent rows unlike zero counts, and refetches a zoomed window", T, async () => {
    const page = await newPage(browser);
    await open(page, ["latency", "queue"]);
    const got = await heatmapOf(page);
    assertHeatmap(got, expectedHeatmap(BigInt(got.from), BigInt(got.to), got.pixels), "whole stream");
    assert.ok(got.present.includes(0) && got.present.includes(1), "the gap's columns have no rows");
    // The tail event reaches the top buckets: zooming out did not lose it.
    assert.equal(Math.max(...got.lines.max.filter((v) => !Number.isNaN(v))), BOUNDS[BUCKETS]);
    // A column without rows is painted hatched, a present column's empty bucket pale: never the same.
    const colours = await page.locator('[data-testid="heatmap"] canvas').evaluate((canvas, d) => {
      const ctx = canvas.getContext("2d");
      const u = canvas.closest(".uplot");
      const over = u.querySelector(".u-over");
      const ob = over.getBoundingClientRect();
      const cb = canvas.getBoundingClientRect();
      const absent = d.present.indexOf(0, d.present.indexOf(1));
      const zero = d.present.findIndex((p, i) => p === 1 && d.counts[i * 16 + 15] === 0);
      const px = (col, frac) => {
        const x = Math.round((ob.left - cb.left + ((col + 0.5) / d.pixels) * ob.width) * devicePixelRatio);
        const y = Math.round((ob.top - cb.top + frac * ob.height) * devicePixelRatio);
        return Array.from(ctx.getImageData(x, y, 1, 1).data).join(",");
      };
      // Sample a few heights in the gap (the hatch is stripes), one in the zero cell (the top bucket).
      return { absent: [0.02, 0.05, 0.33, 0.5, 0.66].map((f) => px(absent, f)), zero: px(zero, 0.02) };
    }, got);
    assert.ok(!colours.absent.every((c) => c === colours.zero), `hatched ${colours.absent} vs zero ${colours.zero}`);
    assert.ok(new Set(colours.absent).size > 1, `the gap is striped: ${colours.absent}`);
    await screenshot(page, "heatmap-quantiles.png", page.locator('[data-testid="stream-view"]'));
    // Hovering a cell names its bucket, count and rate.
    const over = page.locator('[data-testid="heatmap"] .u-over');
    const ob = await over.boundingBox();
    await page.mouse.move(ob.x + ob.width * 0.2, ob.y + ob.height * 0.6);
    assert.match(await page.locator('[data-testid="heatmap-readout"]').innerText(), /bucket \[\d+, \d+\) us · count [\d,]+ · [\d.e+-]+ \/s/);
    // A plain drag zooms: the heatmap asks for the new window only, and its sums are that window's.
    await drag(page, over, 0.15, 0.25, false);
    await page.waitForFunction((n) => {
      const el = document.querySelector('[data-testid="heatmap"]');
      return el?.dataset.state === "drawn" && el.dataset.drawn !== n;
    }, got.drawn);
    const zoomed = await heatmapOf(page);
    const url = new URL(page.url());
    assert.equal(zoomed.from, url.searchParams.get("from"));
    assert.equal(zoomed.to, url.searchParams.get("to"));
    assertHeatmap(zoomed, expectedHeatmap(BigInt(zoomed.from), BigInt(zoomed.to), zoomed.pixels), "zoomed");
    assert.ok(zoomed.rows < got.rows / 5, "only the window's rows");
    // Zoomed into the gap, where no segment lies: every column drawn without rows, not an error.
    await over.dblclick();
    await page.waitForFunction((n) => {
      const el = document.querySelector('[data-testid="heatmap"]');
      return el?.dataset.state === "drawn" && el.dataset.drawn !== n;
    }, zoomed.drawn);
    const whole = await heatmapOf(page);
    assert.ok(whole.rows > zoomed.rows, "a double-click returns to the whole stream");
    await drag(page, over, 0.53, 0.55, false);
    await page.waitForFunction((n) => {
      const el = document.querySelector('[data-testid="heatmap"]');
      return el?.dataset.state === "drawn" && el.dataset.drawn !== n;
    }, whole.drawn);
    const gap = await heatmapOf(page);
    assert.equal(rows.filter((r) => tsOf(r) >= BigInt(gap.from) && tsOf(r) <= BigInt(gap.to)).length, 0, "the window lies in the gap");
    assert.equal(gap.rows, 0);
    assert.ok(gap.present.every((p) => p === 0), "every column without rows");
    assert.match(await page.locator('[data-testid="heatmap"]').innerText(), /No rows in this window/);
    await page.context().close();
  });

  it("draws the demo's request latency with its tail", T, async () => {
    const demo = join(mkdtempSync(join(tmpdir(), "dendro-dist-demo-")), "demo.dendro");
    dendro("demo", "--minutes", "30", demo);
    const desc = parseJsonExact(dendro("describe", "--json", demo));
    const src = desc.sources[0];
    assert.ok(src.streams.some((s) => s.name === "latency"), "the demo records latency histograms");
    const demoServer = await serve({ "/demo.dendro": demo });
    try {
      const page = await newPage(browser);
      const q = new URLSearchParams({ url: "/demo.dendro", source: String(src.id), stream: "latency" });
      await page.goto(`${demoServer.url}/?${q}`);
      const heat = page.locator('[data-testid="heatmap"][data-state="drawn"]');
      await heat.first().waitFor({ timeout: 60_000 });
      assert.equal(await heat.first().getAttribute("data-column"), "request_ns", "a stream of histograms opens on its first");
      const d = await heatmapOf(page, "request_ns");
      assert.ok(d.rows > 0 && d.present.includes(1));
      // The tail event: somewhere the p99.9 line stands well above the median's.
      const p50 = d.lines.p50.filter((v) => !Number.isNaN(v));
      const p999 = d.lines.p999.filter((v) => !Number.isNaN(v));
      assert.ok(Math.max(...p999) >= 8 * Math.min(...p50), `p99.9 up to ${Math.max(...p999)}, p50 from ${Math.min(...p50)}`);
      await screenshot(page, "demo-latency-heatmap.png", page.locator('[data-testid="stream-view"]'));
      await page.context().close();
    } finally {
      await demoServer.close();
    }
  });

  it("sums a cumulative histogram's intervals across its reset", T, async () => {
    const page = await newPage(browser);
    await open(page, ["latency_total"]);
    const got = await heatmapOf(page, "latency_total");
    assertHeatmap(got, expectedHeatmap(BigInt(got.from), BigInt(got.to), got.pixels, "latency_total", true), "cumulative");
    // A window starting on a row: that row's counts are in column 0, its
    // baseline the row before the window (the per-interval column's counts
    // are the same intervals).
    const from = tsOf(rows[1000]);
    const to = tsOf(rows[1400]);
    await open(page, ["latency_total", "latency"], `&from=${from}&to=${to}`);
    await page.locator('[data-testid="heatmap"][data-column="latency"][data-state="drawn"]').waitFor({ timeout: 60_000 });
    const cum = await heatmapOf(page, "latency_total");
    assert.equal(cum.from, String(from));
    assertHeatmap(cum, expectedHeatmap(from, to, cum.pixels, "latency_total", true), "cumulative, zoomed");
    const per = await heatmapOf(page, "latency");
    assert.deepEqual(cum.counts.slice(0, BUCKETS), per.counts.slice(0, BUCKETS), "column 0 holds the window's first row");
    const first = rows[1000].latency.map(Number);
    assert.ok(first.every((c, b) => cum.counts[b] >= c) && first.some((c) => c > 0), "its counts among column 0's");
    await page.context().close();
  });

  it("opens straight into a gap: the heatmap says there are no rows and draws empty", T, async () => {
    const page = await newPage(browser);
    // The middle of the five minutes without rows.
    let k = 1;
    while (tsOf(rows[k]) - tsOf(rows[k - 1]) < 60_000_000_000n) k++;
    const from = tsOf(rows[k - 1]) + 60_000_000_000n;
    const to = tsOf(rows[k]) - 60_000_000_000n;
    await open(page, ["latency"], `&from=${from}&to=${to}`);
    const gap = await heatmapOf(page);
    assert.equal(gap.rows, 0);
    assert.ok(gap.present.every((p) => p === 0), "every column without rows");
    const el = page.locator('[data-testid="heatmap"]');
    assert.equal(await el.getAttribute("data-state"), "drawn");
    assert.match(await page.locator('[data-testid="heatmap-empty"]').innerText(), /^No rows in this window \(.*no rows.*\)\.$/);
    assert.doesNotMatch(await el.innerText(), /NotFound|not found/i);
    await screenshot(page, "heatmap-gap.png", el);
    await page.context().close();
  });

  it("shows the region's statistics from its rows after a Shift-drag, and clears them with Esc", T, async () => {
    const page = await newPage(browser);
    await open(page, ["latency", "latency_total", "requests", "queue"]);
    assert.match(await page.locator('[data-testid="plot-help"]').innerText(), /hold Shift while dragging/);
    const queuePlot = page.locator('[data-testid="plot"][data-column="queue"] .u-over');
    await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor();
    const before = new URL(page.url()).searchParams.get("from");
    // Across the gap and the reset (00:45).
    await drag(page, queuePlot, 0.4, 0.9, true);
    const panel = page.locator('[data-testid="region-panel"][data-state="shown"]');
    await panel.waitFor({ timeout: 60_000 });
    assert.equal(new URL(page.url()).searchParams.get("from"), before, "a Shift-drag does not zoom");
    const from = BigInt(await panel.getAttribute("data-from"));
    const to = BigInt(await panel.getAttribute("data-to"));
    const inRegion = rows.filter((r) => tsOf(r) >= from && tsOf(r) <= to);
    assert.ok(inRegion.some((r) => tsOf(r) === 1_767_225_600_000_000_000n + 2_700n * 1_000_000_000n), "the region holds the reset");
    const shown = async (series, stat) => {
      const cell = panel.locator(`tr[data-series="${series}"] td[data-stat="${stat}"] [data-value]`);
      return (await cell.count()) === 0 ? null : Number(await cell.getAttribute("data-value"));
    };
    // A gauge.
    const q = inRegion.map((r) => Number(r.queue));
    const secs = (i) => Number(tsOf(inRegion[i]) - tsOf(inRegion[i - 1])) / 1e9;
    let trap = 0;
    for (let i = 1; i < q.length; i++) trap += ((q[i] + q[i - 1]) / 2) * secs(i);
    const gauge = { count: q.length, min: Math.min(...q), max: Math.max(...q), mean: q.reduce((a, b) => a + b, 0) / q.length, p50: nearestRank(q, 0.5), p99: nearestRank(q, 0.99), last_minus_first: q[q.length - 1] - q[0], integral: trap };
    for (const [k, v] of Object.entries(gauge)) assert.ok(close(await shown("queue", k), v), `queue ${k}: ${await shown("queue", k)} vs ${v}`);
    assert.equal(await shown("queue", "mean_rate"), null, "a gauge has no rate");
    // A counter across its reset: statistics of its per-second rates.
    const c = inRegion.map((r) => Number(r.requests));
    const rates = [];
    let increase = 0;
    for (let i = 1; i < c.length; i++) {
      const inc = c[i] >= c[i - 1] ? c[i] - c[i - 1] : c[i];
      increase += inc;
      rates.push(inc / secs(i));
    }
    const span = Number(tsOf(inRegion[inRegion.length - 1]) - tsOf(inRegion[0])) / 1e9;
    const counter = { count: c.length, min: Math.min(...rates), max: Math.max(...rates), mean: rates.reduce((a, b) => a + b, 0) / rates.length, p50: nearestRank(rates, 0.5), p99: nearestRank(rates, 0.99), last_minus_first: c[c.length - 1] - c[0], mean_rate: increase / span, integral: increase };
    for (const [k, v] of Object.entries(counter)) assert.ok(close(await shown("requests", k), v), `requests ${k}: ${await shown("requests", k)} vs ${v}`);
    // Histograms: the region's summed distribution, per-interval and cumulative.
    for (const [name, cumulative] of [["latency", false], ["latency_total", true]]) {
      const ivs = intervals(inRegion, name, cumulative);
      const sum = new Array(BUCKETS).fill(0);
      for (const iv of ivs) iv.forEach((v, b) => (sum[b] += v));
      assert.equal(await shown(name, "rows"), ivs.length, `${name} rows`);
      assert.equal(await shown(name, "total"), sum.reduce((a, b) => a + b, 0), `${name} total`);
      for (const [k, p] of QUANTILES) assert.equal(await shown(name, k), quantile(sum, p), `${name} ${k}`);
      assert.equal(await shown(name, "max_bucket"), maxBucket(sum), `${name} max bucket`);
    }
    // `dendro stats`, the same function on the command line, prints what the page shows.
    const cli = parseJsonExact(dendro("stats", FILE, "--source", "1", "--stream", "api", "--from", String(from), "--to", String(to), "--json"));
    assert.equal(Number(cli.rows), inRegion.length);
    for (const col of cli.columns) {
      for (const k of ["count", "min", "max", "mean", "p50", "p99", "last_minus_first", "mean_rate", "integral"]) {
        assert.equal(await shown(col.name, k), col[k] === null ? null : Number(col[k]), `${col.name} ${k}: page vs dendro stats`);
      }
    }
    for (const hist of cli.histograms) {
      for (const k of ["rows", "total", "p50", "p90", "p99", "p999", "max_bucket"]) assert.equal(await shown(hist.name, k), Number(hist[k]), `${hist.name} ${k}: page vs dendro stats`);
    }
    assert.deepEqual(cli.columns.map((c) => c.name).sort(), ["queue", "requests"]);
    assert.deepEqual(cli.histograms.map((c) => c.name).sort(), ["latency", "latency_total"]);
    // The band is drawn on the plots; the panel is what the screenshot shows.
    await screenshot(page, "region-panel.png", page.locator('[data-testid="stream-view"]'));
    await page.keyboard.press("Escape");
    await page.waitForFunction(() => document.querySelector('[data-testid="region-panel"]')?.hidden === true);
    // A region inside the gap has no rows, and says so.
    const heat = page.locator('[data-testid="heatmap"][data-column="latency"] .u-over');
    await drag(page, heat, 0.52, 0.56, true);
    await panel.waitFor({ timeout: 60_000 });
    assert.match(await page.locator('[data-testid="region-empty"]').innerText(), /^No rows in this region/);
    await page.locator('[data-action="close-region"]').click();
    assert.equal(await page.locator('[data-testid="region-panel"]').isHidden(), true, "the close button clears it");
    await page.context().close();
  });
});

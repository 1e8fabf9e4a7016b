// The engine's regionStats and heatmap calls through the real client and
// worker (createEngine in a page), on tests/web/histograms.dendro: what
// the page gets equals `dendro stats --json` for the same region (the
// same Rust function, here through the worker, its transfer of typed
// arrays and the client), the heatmap's pixels add up to the window's
// distribution, the schema marks the histogram columns, and a hostile
// size is refused in words. Needs www/pkg (scripts/build-wasm.sh) and the
// dendro binary in target/.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { bundleEngine } from "../support/index.mjs";
import { CHROMIUM, ROOT, launch, newPage, serve } from "./helpers.mjs";

const T = { timeout: 120_000 };
const ARCHIVE = join(ROOT, "tests", "web", "histograms.dendro");
const engineDir = join(tmpdir(), "dendro-distributions-engine-test");

function dendro(args) {
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(ROOT, "target");
  const bin = [process.env.DENDRO_BIN, join(targetDir, "release/dendro"), join(targetDir, "debug/dendro")].filter(Boolean).find((b) => existsSync(b));
  const [cmd, pre] = bin ? [bin, []] : ["cargo", ["run", "--quiet", "--bin", "dendro", "--"]];
  return execFileSync(cmd, [...pre, ...args], { cwd: ROOT, encoding: "utf8" });
}

const missing = !existsSync(CHROMIUM) ? `${CHROMIUM} is missing` : !existsSync(join(ROOT, "www/pkg/dendro_bg.wasm")) ? "www/pkg is not built" : null;
let browser;
let server;

before(async () => {
  if (missing) return;
  await bundleEngine(engineDir);
  server = await serve({ "/engine/": engineDir, "/work/": join(ROOT, "tests", "web") });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const FROM = 1_700_000_100_000_000_000n;
const TO = 1_700_000_450_000_000_000n;

describe("the engine's distributions calls", { skip: missing ?? false }, () => {
  it("answer regionStats as dendro stats does, and heatmaps that add up", T, async () => {
    const page = await newPage(browser);
    await page.goto(`${server.url}/engine/index.html`);
    await page.waitForFunction(() => typeof window.createEngine === "function");
    const got = await page.evaluate(
      async ([from, to]) => {
        const engine = window.createEngine();
        const bytes = await (await fetch("/work/histograms.dendro")).arrayBuffer();
        const h = await engine.open(bytes, "histograms.dendro");
        const schema = await h.schema(1, "s");
        const stats = await h.regionStats({ source: 1, stream: "s", from: BigInt(from), to: BigInt(to) });
        const map = await h.heatmap({ source: 1, stream: "s", column: "h", from: BigInt(from), to: BigInt(to), pixels: 1000 });
        let refused = null;
        try {
          await h.heatmap({ source: 1, stream: "s", column: "h", from: BigInt(from), to: BigInt(to), pixels: 100000 });
        } catch (e) {
          refused = { kind: e.kind, message: e.message };
        }
        const empty = await h.regionStats({ source: 1, stream: "s", from: 0n, to: 1n });
        return {
          histogramColumns: schema.columns.filter((c) => c.histogram).map((c) => [c.name, c.histogram.cumulation, c.histogram.bounds]),
          stats: {
            rows: stats.rows,
            from: String(stats.from),
            columns: stats.columns,
            histograms: stats.histograms.map((x) => ({ ...x, counts: Array.from(x.counts) })),
            countsTyped: stats.histograms.every((x) => x.counts instanceof Float64Array),
            problems: stats.problems,
          },
          map: {
            totals: Array.from(map.totals),
            counts: Array.from(map.counts),
            present: Array.from(map.present),
            rates: Array.from(map.rates),
            pixel_seconds: map.pixel_seconds,
            buckets: map.buckets,
            rows: map.rows,
            p99: Array.from(map.lines.p99),
          },
          refused,
          empty: empty.empty,
        };
      },
      [String(FROM), String(TO)],
    );
    await page.context().close();
    assert.deepEqual(got.histogramColumns, [
      ["h", "counter", [0, 1, 2, 4, 8, 16]],
      ["d", "delta", [0, 1, 2, 4, 8, 16]],
    ]);
    const cli = JSON.parse(dendro(["stats", ARCHIVE, "--source", "1", "--stream", "s", "--from", String(FROM), "--to", String(TO), "--json"]));
    assert.equal(got.stats.rows, cli.rows);
    assert.equal(got.stats.from, String(FROM));
    assert.ok(got.stats.countsTyped, "histogram counts arrive as Float64Array");
    const close = (a, b) => (a === null ? b === null : Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b)));
    for (const c of cli.columns) {
      const ours = got.stats.columns.find((x) => x.name === c.name);
      for (const key of ["count", "min", "max", "mean", "p50", "p99", "last_minus_first", "increase", "mean_rate", "integral"]) {
        assert.ok(close(ours[key], c[key]), `${c.name}.${key}: ${ours[key]} against ${c[key]}`);
      }
    }
    for (const hc of cli.histograms) {
      const ours = got.stats.histograms.find((x) => x.name === hc.name);
      assert.deepEqual(ours.counts, hc.counts);
      for (const key of ["total", "rows", "p50", "p90", "p99", "p999", "max_bucket"]) assert.equal(ours[key], hc[key], `${hc.name}.${key}`);
    }
    // The heatmap's pixel columns hold every interval of h in the window,
    // the first row's included (its baseline is the row before the
    // window): the per-interval column d's distribution, which counts the
    // same intervals (h is d's running total). The region's own h leaves
    // the first row out: rows outside a region are never used.
    const h = cli.histograms.find((x) => x.name === "h");
    const d = cli.histograms.find((x) => x.name === "d");
    assert.equal(got.map.totals.reduce((a, b) => a + b, 0), d.total);
    const perBucket = Array.from({ length: got.map.buckets }, (_, b) => got.map.counts.filter((_, i) => i % got.map.buckets === b).reduce((a, x) => a + x, 0));
    assert.deepEqual(perBucket, d.counts);
    assert.equal(got.map.rows, h.rows + 1);
    assert.ok(h.total < d.total);
    assert.ok(got.map.rates.every((r, i) => r === got.map.counts[i] / got.map.pixel_seconds));
    assert.ok(got.map.present.includes(0) && got.map.present.includes(1), "1,000 pixels over 350 rows: some absent");
    assert.equal(got.map.p99.length, 1000);
    assert.equal(got.refused?.kind, "NotFound");
    assert.match(got.refused.message, /pixel columns/);
    assert.match(got.empty, /no rows/);
  });
});

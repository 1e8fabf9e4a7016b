// The first drawing of a window is a preview from the segments' footer
// statistics (the plots' data-state="preview", the status line saying
// so), then the exact envelope replaces it in place (data-state="drawn").
// What the page draws is checked against the engine's own answers for the
// same request, made in a separate engine page: the preview equals its
// preview, the exact drawing its readRange, and the preview's band holds
// the exact envelope. A zoom while a window is refined ends exact for the
// new window. Screenshots of both states go to target/screenshots/.
//
// The archive is `dendro demo --size 10` (written once into
// target/preview-test/ by the dendro binary in target/).

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { bundleEngine } from "../support/index.mjs";
import { ROOT, SCREENSHOTS, launch, missingPrerequisite, newPage, screenshot, serve } from "./helpers.mjs";

const T = { timeout: 180_000 };
const WORK = join(ROOT, "target", "preview-test");
const DEMO = join(WORK, "demo10.dendro");

function demoArchive() {
  if (existsSync(DEMO)) return;
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(ROOT, "target");
  const bin = [process.env.DENDRO_BIN, join(targetDir, "release/dendro"), join(targetDir, "debug/dendro")].filter(Boolean).find((b) => existsSync(b));
  const [cmd, args] = bin ? [bin, []] : ["cargo", ["run", "--quiet", "--bin", "dendro", "--"]];
  execFileSync(cmd, [...args, "demo", `${DEMO}.partial`, "--size", "10"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"], timeout: 600_000 });
  return rename(`${DEMO}.partial`, DEMO);
}

const missing = missingPrerequisite();
let browser;
let server;
const engineDir = join(tmpdir(), "dendro-preview-test-engine");

before(async () => {
  if (missing) return;
  await mkdir(WORK, { recursive: true });
  await demoArchive();
  await bundleEngine(engineDir);
  server = await serve({ "/engine/": engineDir, "/work/": WORK });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/**
 * Records in the viewer page: every readRange it sends (its arguments,
 * bigints as "123n"), the worker's answers by id (partial or not, and an
 * error's kind), each change of the plots' data-state, and at the first
 * "preview" after `window.__armed` is set, what every plot drew and its
 * canvas.
 */
async function recorder(page) {
  await page.addInitScript(() => {
    const w = window;
    w.__sent = [];
    w.__answers = [];
    w.__states = [];
    w.__previews = [];
    const big = (a) => (typeof a === "bigint" ? `${a}n` : a);
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (m, t) {
      if (m && typeof m === "object" && m.op === "call" && m.method === "readRange") w.__sent.push({ id: m.id, args: m.args.map(big) });
      if (m && typeof m === "object" && m.op === "cancel") w.__sent.push({ cancel: m.ids });
      return post.call(this, m, t);
    };
    const Original = window.Worker;
    window.Worker = class extends Original {
      constructor(...args) {
        super(...args);
        this.addEventListener("message", (e) => {
          const d = e.data;
          if (d && typeof d === "object" && "id" in d) w.__answers.push({ id: d.id, ok: d.ok, partial: d.partial === true, kind: d.error?.kind });
        });
      }
    };
    const series = (p) => {
      const s = p.dendroPlot;
      return s && { column: p.dataset.column, ts: Array.from(s.ts, String), min: Array.from(s.min), max: Array.from(s.max) };
    };
    new MutationObserver((records) => {
      for (const r of records) {
        const el = r.target;
        if (!(el instanceof HTMLElement) || el.dataset.testid !== "plots") continue;
        const state = el.dataset.state;
        if (w.__states.at(-1) === state) continue;
        w.__states.push(state);
        if (state === "preview") {
          const plots = [...el.querySelectorAll('[data-testid="plot"]')];
          w.__previews.push({
            status: document.querySelector('[data-testid="plot-status"]')?.textContent ?? "",
            plots: plots.map(series).filter(Boolean),
            canvas: plots[0]?.querySelector("canvas")?.toDataURL("image/png") ?? null,
            sent: w.__sent.filter((x) => x.id).length,
          });
        }
      }
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-state"] });
  });
}

/** Asks a fresh engine (the engine page) for `args`' preview and exact envelope, as plain arrays. */
async function engineAnswers(args) {
  const page = await newPage(browser);
  await page.goto(`${server.url}/engine/index.html`);
  await page.waitForFunction(() => typeof window.createEngine === "function");
  const out = await page.evaluate(async (args) => {
    const unbig = (a) => (typeof a === "string" && /^-?\d+n$/.test(a) ? BigInt(a.slice(0, -1)) : a);
    const [source, stream, from, to, columns, maxPoints, rates] = args.map(unbig);
    const engine = window.createEngine();
    const bytes = await (await fetch("/work/demo10.dendro")).arrayBuffer();
    const h = await engine.open(bytes, "demo10.dendro");
    const plain = (env) =>
      env && {
        preview: env.preview === true,
        segments_unsummarized: env.segments_unsummarized ?? 0,
        ts: Array.from(env.ts, String),
        columns: env.columns.map((c) => ({ name: c.name, gaps: c.gaps ?? 0, min: Array.from(c.min), max: Array.from(c.max) })),
      };
    let preview = null;
    const exact = await h.readRange(source, stream, from, to, {
      columns: columns ?? undefined,
      maxPoints: maxPoints ?? undefined,
      rates: rates ?? undefined,
      onPreview: (p) => (preview = plain(p)),
    });
    const plainExact = await h.readRange(source, stream, from, to, { columns: columns ?? undefined, maxPoints: maxPoints ?? undefined, rates: rates ?? undefined });
    return { preview, exact: plain(exact), again: plain(plainExact) };
  }, args);
  await page.context().close();
  return out;
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i] || (Number.isNaN(x) && Number.isNaN(b[i])));

/** Every plot drawn equals the engine's answer for its column. */
function assertDrawn(plots, env, what) {
  assert.ok(plots.length > 0, `${what}: plots drawn`);
  for (const p of plots) {
    const c = env.columns.find((x) => x.name === p.column);
    assert.ok(c, `${what}: the engine answered column ${p.column}`);
    assert.deepEqual(p.ts, env.ts, `${what}: ${p.column}'s points`);
    assert.ok(same(p.min, c.min) && same(p.max, c.max), `${what}: ${p.column}'s values`);
  }
}

// A prerequisite missing is a failure, not a quiet skip of everything below.
it("has what it needs to run", () => assert.equal(missing, null, missing ?? ""));

describe("a plot's preview from footer statistics", { skip: missing ?? false }, () => {
  it("draws the preview, then the exact envelope in place; a zoom meanwhile ends exact for the new window", T, async () => {
    const page = await newPage(browser, { viewport: { width: 1440, height: 1100 } });
    await recorder(page);
    await page.goto(`${server.url}/?url=/work/demo10.dendro`);
    const plots = page.locator('[data-testid="plots"]').first();
    await plots.locator('[data-testid="plot"] canvas').first().waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="plots"][data-state="drawn"]').first().waitFor({ timeout: 60_000 });

    const rec = await page.evaluate(() => ({ states: window.__states, previews: window.__previews, sent: window.__sent }));
    const p = rec.states.indexOf("preview");
    assert.ok(p >= 0, `the preview was drawn (states ${rec.states.join(" ")})`);
    assert.ok(!rec.states.slice(0, p).includes("drawn"), `the preview came first (states ${rec.states.join(" ")})`);
    const first = rec.previews[0];
    assert.match(first.status, /from segment statistics .*refining…/);
    const asked = rec.sent.filter((x) => x.id);
    const args = asked.at(-1).args;
    assert.equal(args[7], true, "the page asked for a preview");
    const engine = await engineAnswers(args);
    assert.ok(engine.preview?.preview, "the engine has a preview of this window");
    assert.equal(engine.exact.preview, false);
    assertDrawn(first.plots, engine.preview, "the preview");
    // Drawn exact: what readRange answers, with or without a preview asked.
    const drawn = await plots.evaluate((el) =>
      [...el.querySelectorAll('[data-testid="plot"]')].map((p) => ({
        column: p.dataset.column,
        ts: Array.from(p.dendroPlot.ts, String),
        min: Array.from(p.dendroPlot.min),
        max: Array.from(p.dendroPlot.max),
      })),
    );
    assertDrawn(drawn, engine.again, "the exact plot");
    assertDrawn(drawn, engine.exact, "the exact plot (the answer after a preview)");
    assert.doesNotMatch(await page.locator('[data-testid="plot-status"]').first().innerText(), /refining/);
    // The band holds the exact envelope, bucket by bucket, in every column
    // whose segments all have statistics.
    let held = 0;
    for (const c of engine.preview.columns) {
      if (c.gaps > 0 || engine.preview.segments_unsummarized > 0) continue;
      const x = engine.exact.columns.find((e) => e.name === c.name);
      engine.exact.ts.forEach((t, k) => {
        if (Number.isNaN(x.min[k])) return;
        const j = engine.preview.ts.indexOf(t);
        assert.ok(j >= 0, `${c.name}: the preview has the bucket at ${t}`);
        assert.ok(c.min[j] <= x.min[k] && c.max[j] >= x.max[k], `${c.name} at ${t}: ${c.min[j]}..${c.max[j]} holds ${x.min[k]}..${x.max[k]}`);
        held++;
      });
    }
    assert.ok(held > 100, `${held} buckets held`);

    // What each state looks like.
    await mkdir(SCREENSHOTS, { recursive: true });
    if (first.canvas) await writeFile(join(SCREENSHOTS, "plot-preview.png"), Buffer.from(first.canvas.split(",")[1], "base64"));
    await screenshot(page, "plot-exact.png", plots.locator('[data-testid="plot"]').first());

    assert.deepEqual(page.problems, []);
    await page.context().close();

    // A fresh page: as soon as the whole span's preview is drawn, zoom
    // (drag across the plot). The page ends on the zoomed window, exact.
    const again = await newPage(browser, { viewport: { width: 1440, height: 1100 } });
    await recorder(again);
    await again.goto(`${server.url}/?url=/work/demo10.dendro`);
    const group = again.locator('[data-testid="plots"]').first();
    await again.waitForFunction(() => window.__previews.length > 0 || window.__states.includes("drawn"), null, { timeout: 60_000, polling: 5 });
    const whole = (await again.evaluate(() => window.__sent.filter((x) => x.id))).at(-1);
    const over = group.locator('[data-testid="plot"]').first().locator(".u-over");
    await over.scrollIntoViewIfNeeded();
    const ob = await over.boundingBox();
    await again.mouse.move(ob.x + ob.width * 0.3, ob.y + ob.height / 2);
    await again.mouse.down();
    await again.mouse.move(ob.x + ob.width * 0.6, ob.y + ob.height / 2, { steps: 2 });
    await again.mouse.up();
    await again.waitForFunction((id) => window.__sent.filter((x) => x.id).at(-1).id > id, whole.id, { timeout: 30_000 });
    const zoom = (await again.evaluate(() => window.__sent.filter((x) => x.id))).at(-1);
    await again.waitForFunction(
      (id) => window.__answers.some((a) => a.id === id && !a.partial) && document.querySelector('[data-testid="plots"]')?.dataset.state === "drawn",
      zoom.id,
      { timeout: 60_000 },
    );
    const answers = await again.evaluate(() => window.__answers);
    const wholeAnswer = answers.find((a) => a.id === whole.id && !a.partial);
    // Informational: whether the zoom came while the whole span was refined
    // (its answer then "Cancelled", or never drawn) depends on this host's speed.
    console.log(`# the whole span's exact read, zoomed away from after its preview: ${wholeAnswer ? (wholeAnswer.ok ? "answered" : wholeAnswer.kind) : "no answer"}`);
    const end = await engineAnswers(zoom.args);
    const finalDrawn = await group.evaluate((el) =>
      [...el.querySelectorAll('[data-testid="plot"]')].map((p) => ({
        column: p.dataset.column,
        ts: Array.from(p.dendroPlot.ts, String),
        min: Array.from(p.dendroPlot.min),
        max: Array.from(p.dendroPlot.max),
      })),
    );
    assertDrawn(finalDrawn, end.again, "after the zoom");
    assert.doesNotMatch(await again.locator('[data-testid="plot-status"]').first().innerText(), /refining/);
    assert.deepEqual(again.problems, []);
    await again.context().close();
  });

  it("decoding in the engine worker itself (no decoder worker), the preview comes first all the same", T, async () => {
    const page = await newPage(browser);
    await page.goto(`${server.url}/engine/index.html`);
    await page.waitForFunction(() => typeof window.createEngine === "function");
    const r = await page.evaluate(async () => {
      const bytes = await (await fetch("/work/demo10.dendro")).arrayBuffer();
      const answers = [];
      for (const isolateDecoding of [false, true]) {
        const engine = window.createEngine({ isolateDecoding });
        const h = await engine.open(bytes.slice(0), "demo10.dendro");
        const d = await h.describe();
        const s = d.sources[0];
        const st = s.streams[0];
        const order = [];
        let preview = null;
        const env = await h.readRange(s.id, st.name, st.segments[0].first_ts, st.segments.at(-1).last_ts, {
          maxPoints: 800,
          onPreview: (p) => {
            order.push("preview");
            preview = { ts: Array.from(p.ts, String), columns: p.columns.map((c) => [c.name, Array.from(c.min), Array.from(c.max)]) };
          },
        });
        order.push("exact");
        answers.push({ order, preview, exact: { ts: Array.from(env.ts, String), columns: env.columns.map((c) => [c.name, Array.from(c.min), Array.from(c.max)]) } });
        engine.terminate();
      }
      return answers;
    });
    const [inWorker, isolated] = r;
    assert.deepEqual(inWorker.order, ["preview", "exact"]);
    assert.deepEqual(isolated.order, ["preview", "exact"]);
    assert.deepEqual(inWorker.preview, isolated.preview, "the same preview either way");
    assert.deepEqual(inWorker.exact, isolated.exact, "the same exact envelope either way");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("a refinement cancelled while it runs stops; the next window is exact", T, async () => {
    const page = await newPage(browser);
    await recorder(page);
    await page.goto(`${server.url}/engine/index.html`);
    await page.waitForFunction(() => typeof window.createEngine === "function");
    const r = await page.evaluate(async () => {
      const engine = window.createEngine();
      const bytes = await (await fetch("/work/demo10.dendro")).arrayBuffer();
      const h = await engine.open(bytes, "demo10.dendro");
      const d = await h.describe();
      const st = d.sources.flatMap((s) => s.streams.map((x) => ({ source: s.id, ...x }))).sort((a, b) => b.segments.length - a.segments.length)[0];
      const from = st.segments[0].first_ts;
      const to = st.segments.at(-1).last_ts;
      const schema = await h.schema(st.source, st.name);
      const numeric = /^(Int|UInt|Float)/;
      const columns = schema.columns.filter((c) => numeric.test(c.type) && c.name !== schema.ts_column).slice(0, 6).map((c) => c.name);
      const stop = new AbortController();
      let previewed = false;
      const first = h
        .readRange(st.source, st.name, from, to, {
          columns,
          maxPoints: 900,
          signal: stop.signal,
          onPreview: () => {
            previewed = true;
            stop.abort();
          },
        })
        .then(
          () => "answered",
          (e) => e.kind,
        );
      const mid = from + (to - from) / 3n;
      const next = await h.readRange(st.source, st.name, mid, to, { columns, maxPoints: 700 });
      const again = await h.readRange(st.source, st.name, mid, to, { columns, maxPoints: 700 });
      const eq = (a, b) => a.length === b.length && a.every((x, i) => x === b[i] || (Number.isNaN(x) && Number.isNaN(b[i])));
      return {
        previewed,
        first: await first,
        segments: st.segments.length,
        same: next.ts.length === again.ts.length && next.columns.every((c, i) => eq(c.min, again.columns[i].min) && eq(c.max, again.columns[i].max)),
        points: next.ts.length,
      };
    });
    assert.ok(r.segments > 1, `${r.segments} segments`);
    assert.equal(r.previewed, true, "a preview came first");
    assert.equal(r.first, "Cancelled");
    // The worker itself stopped the read (between two batches of segments
    // sent to its decoder) rather than finish a window no longer wanted.
    const answers = await page.evaluate(() => window.__answers);
    const worker = answers.filter((a) => !a.partial && a.id === answers.find((x) => x.partial)?.id);
    assert.deepEqual(worker.map((a) => a.kind), ["Cancelled"], "the worker answered the withdrawn read Cancelled");
    assert.ok(r.points > 0 && r.same, "the next window is read whole and exact");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

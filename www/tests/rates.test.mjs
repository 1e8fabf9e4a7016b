// Counters as rates, the self-describing encoder's live tail, and getting
// around between streams (issue 13), against a `dendro demo` archive: its
// rows are written with the self-describing encoder (counters marked in
// the field metadata) and it ends in a live tail.
//
// What the page draws is compared with what `dendro cat` prints for the
// same rows: the plot's own data (`dendroPlot` on a plot's element: the
// timestamps and the min/max it handed uPlot) when every row is shown.
// Rates are computed here from cat's running totals, a fall counting as a
// reset (the new total is the increase), as Prometheus's rate() takes it.

import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { cat, dendro, plotData, ratesOf, tsOf } from "./cli.mjs";
import { launch, missingPrerequisite, newPage, parseJsonExact, screenshot, serve } from "./helpers.mjs";

const T = { timeout: 120_000 };

function close(a, b) {
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}

const missing = missingPrerequisite();

describe("counters, live tails and streams", () => {
  let server;
  let browser;
  let file;
  let desc;

  before(async () => {
    assert.equal(missing, null, missing ?? "");
    file = join(mkdtempSync(join(tmpdir(), "dendro-rates-")), "demo.dendro");
    dendro("demo", "--minutes", "12", file);
    desc = parseJsonExact(dendro("describe", "--json", file));
    server = await serve({ "/demo.dendro": file });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** Opens the demo at `stream` of `source` over [from, to], and waits for its plots to be drawn. */
  async function open(page, source, stream, from, to, cols = []) {
    const q = new URLSearchParams({ url: "/demo.dendro", source: String(source), stream, from: String(from), to: String(to) });
    for (const c of cols) q.append("col", c);
    await page.goto(`${server.url}/?${q}`);
    await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
  }

  it("plots the typed live tail with the values dendro cat prints", T, async () => {
    const src = desc.sources[0];
    const st = src.streams.find((s) => s.name === "memory");
    assert.ok(st && st.live_rows > 0, "the demo's memory stream ends in a live tail");
    const [a, b] = st.live_span.map(BigInt);
    const rows = cat(file, src.id, "memory").filter((r) => tsOf(r) >= a && tsOf(r) <= b);
    assert.equal(rows.length, st.live_rows, "cat prints the live tail's rows");
    const column = "used_bytes";
    const page = await newPage(browser);
    await open(page, src.id, "memory", a, b, [column]);
    const d = await plotData(page, column);
    assert.equal(d.reduced, false, "every row of the tail is drawn");
    assert.equal(d.as, "raw", "a gauge is drawn as it is");
    assert.deepEqual(d.ts, rows.map((r) => String(tsOf(r))), "the tail's timestamps");
    for (let i = 0; i < rows.length; i++) assert.ok(close(d.max[i], Number(rows[i][column])), `row ${i}: ${d.max[i]} vs ${rows[i][column]}`);
    // The lane and the notice say the tail is read, not opaque.
    const live = page.locator('[data-testid="live"]').first();
    assert.equal(await live.getAttribute("data-readable"), "true");
    assert.match(await page.locator('[data-testid="live-note"]').innerText(), /plotted and tabled/);
    // Tabled after the last segment: the rows table offers the tail.
    await page.locator('[data-testid="segment-select"]').selectOption("live");
    const table = page.locator('[data-testid="live-rows"]');
    await table.waitFor();
    assert.equal(await table.getAttribute("data-rows"), String(st.live_rows));
    await screenshot(page, "live-tail-typed.png", page.locator(`[data-testid="stream-view"]`));
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("plots counters as per-second rates equal to those computed from dendro cat, and raw on request", T, async () => {
    const src = desc.sources[0];
    const all = cat(file, src.id, "cpu");
    const column = Object.keys(all[0]).find((k) => /_ns$/.test(k));
    assert.ok(column, "the demo's cpu stream has counters (…_ns)");
    // The last 300 rows: every row shown.
    const tail = all.slice(-300);
    const from = tsOf(tail[0]);
    const to = tsOf(tail[tail.length - 1]);
    const page = await newPage(browser);
    await open(page, src.id, "cpu", from, to, [column]);
    const d = await plotData(page, column);
    assert.equal(d.as, "rate", "a counter is drawn as its rate by default");
    assert.equal(d.reduced, false);
    const expected = ratesOf(all, column);
    const offset = all.length - tail.length;
    assert.equal(d.ts.length, tail.length);
    let compared = 0;
    for (let i = 0; i < tail.length; i++) {
      const want = expected[offset + i];
      const got = d.max[i];
      if (want === null) {
        assert.ok(Number.isNaN(got), `row ${i}: no rate expected, got ${got}`);
        continue;
      }
      // The window's first row has a rate only if the engine read the row before it.
      if (i === 0 && Number.isNaN(got)) continue;
      assert.ok(close(got, want), `row ${i}: rate ${got} vs ${want}`);
      compared++;
    }
    assert.ok(compared >= tail.length - 1, `${compared} rates compared`);
    await screenshot(page, "counter-rates.png", page.locator(`[data-testid="stream-view"]`));
    // Raw on request: the running totals themselves.
    const drawn = Number(await page.locator('[data-testid="plots"]').getAttribute("data-drawn"));
    await page.locator(`[data-testid="plot"][data-column="${column}"] [data-testid="rate-toggle"]`).click();
    await page.waitForFunction((n) => Number(document.querySelector('[data-testid="plots"]')?.dataset.drawn) > n && document.querySelector('[data-testid="plots"]')?.dataset.state === "drawn", drawn);
    const raw = await plotData(page, column);
    assert.equal(raw.as, "raw");
    for (let i = 0; i < tail.length; i++) assert.ok(close(raw.max[i], Number(tail[i][column])), `raw row ${i}`);
    // A person's mark: a gauge marked as a counter is drawn as a rate.
    const gauge = Object.keys(all[0]).find((k) => k !== "ts" && !/_ns$/.test(k) && typeof all[0][k] === "number");
    if (gauge) {
      const box = page.locator(`input[data-counter="${gauge}"]`);
      if ((await box.count()) > 0) assert.equal(await box.isChecked(), false, `${gauge} is not a counter by its metadata`);
    }
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("shows a counter reset as no negative rate", T, async () => {
    // The demo restarts the agent of its second host two thirds of the way in: its counters start again from zero.
    const src = desc.sources[1];
    const all = cat(file, src.id, "cpu");
    const column = Object.keys(all[0]).find((k) => /_ns$/.test(k));
    let reset = -1;
    for (let i = 1; i < all.length; i++) if (Number(all[i][column]) < Number(all[i - 1][column])) reset = i;
    assert.ok(reset > 0, "the second host's counters reset");
    const win = all.slice(Math.max(0, reset - 60), reset + 60);
    const page = await newPage(browser);
    await open(page, src.id, "cpu", tsOf(win[0]), tsOf(win[win.length - 1]), [column]);
    const d = await plotData(page, column);
    assert.equal(d.as, "rate");
    const finite = d.min.filter((v) => Number.isFinite(v));
    assert.ok(finite.length >= win.length - 1, "a rate for every row");
    assert.ok(Math.min(...finite) >= 0, `no negative rate (lowest ${Math.min(...finite)})`);
    const expected = ratesOf(all, column);
    const at = d.ts.indexOf(String(tsOf(all[reset])));
    assert.ok(at >= 0, "the reset's row is drawn");
    assert.ok(close(d.max[at], expected[reset]), `the reset's rate is the new total over the interval: ${d.max[at]} vs ${expected[reset]}`);
    await screenshot(page, "counter-reset.png", page.locator(`[data-testid="stream-view"]`));
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("brings a stream picked anywhere into sight and focus, and steps between streams with the keys", T, async () => {
    const page = await newPage(browser, { viewport: { width: 1280, height: 700 } });
    await page.goto(`${server.url}/?url=/demo.dendro`);
    await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
    const inSight = () =>
      page.locator('[data-testid="stream-view"]').evaluate((el) => {
        const r = el.getBoundingClientRect();
        return r.top >= -1 && r.top < window.innerHeight * 0.6;
      });
    const shown = () => page.locator('[data-testid="stream-view"]').evaluate((el) => `${el.dataset.source}/${el.dataset.stream}`);
    const focused = () => page.evaluate(() => !!document.activeElement?.closest('[data-testid="stream-view"]'));
    // A card's stream, while the page is scrolled to the top.
    await page.evaluate(() => window.scrollTo(0, 0));
    const row = page.locator('[data-testid="source"]').nth(1).locator('[data-testid="stream-row"]').first();
    const want = `${await page.locator('[data-testid="source"]').nth(1).getAttribute("data-source")}/${await row.getAttribute("data-stream")}`;
    await row.locator("button").click();
    await page.waitForFunction((w) => {
      const el = document.querySelector('[data-testid="stream-view"]');
      return el && `${el.dataset.source}/${el.dataset.stream}` === w;
    }, want);
    assert.ok(await inSight(), "the stream view was scrolled into sight");
    assert.ok(await focused(), "the stream view has the focus");
    // A timeline lane, after scrolling back up.
    await page.evaluate(() => window.scrollTo(0, 0));
    const lane = page.locator(".dv-tl-name").nth(2);
    await lane.click();
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="stream-view"]');
      const r = el?.getBoundingClientRect();
      return !!r && r.top >= -1 && r.top < window.innerHeight * 0.6;
    });
    assert.ok(await focused());
    // j steps to the next stream, k back.
    const before = await shown();
    await page.keyboard.press("j");
    await page.waitForFunction((b) => {
      const el = document.querySelector('[data-testid="stream-view"]');
      return el && `${el.dataset.source}/${el.dataset.stream}` !== b;
    }, before);
    const next = await shown();
    await page.keyboard.press("k");
    await page.waitForFunction((b) => {
      const el = document.querySelector('[data-testid="stream-view"]');
      return el && `${el.dataset.source}/${el.dataset.stream}` === b;
    }, before);
    assert.notEqual(next, before);
    // Down on a lane's name moves to the next lane's.
    await page.locator(".dv-tl-name").first().focus();
    await page.keyboard.press("ArrowDown");
    assert.equal(await page.evaluate(() => Array.from(document.querySelectorAll(".dv-tl-name")).indexOf(document.activeElement)), 1);
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});

// Derived series in the stream view (issue 32), against a `dendro demo`
// archive: what the page plots for an expression is compared, row by
// row, with the same expression computed here from `dendro cat`'s rows;
// a division by zero is a gap; a mistake is explained beside the box; the
// expression lives in the address and survives a reload.

import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { cat, dendro, plotData, ratesOf, tsOf } from "./cli.mjs";
import { launch, missingPrerequisite, newPage, parseJsonExact, screenshot, serve } from "./helpers.mjs";

const T = { timeout: 120_000 };
const missing = missingPrerequisite();

/** Relative tolerance: the page and this test compute the same doubles in the same order. */
function close(a, b) {
  return Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(a), Math.abs(b));
}

describe("derived series", () => {
  let server;
  let browser;
  let file;
  let src;
  let rows;
  let window;

  before(async () => {
    assert.equal(missing, null, missing ?? "");
    file = join(mkdtempSync(join(tmpdir(), "dendro-derived-")), "demo.dendro");
    dendro("demo", "--minutes", "12", file);
    const desc = parseJsonExact(dendro("describe", "--json", file));
    src = desc.sources[0];
    const st = src.streams.find((s) => s.name === "memory");
    const a = BigInt(st.segments[0].first_ts);
    // Five minutes: every row is drawn (no envelope), so the page's values are the rows'.
    window = [a, a + 300_000_000_000n];
    rows = cat(file, src.id, "memory").filter((r) => tsOf(r) >= window[0] && tsOf(r) <= window[1]);
    assert.ok(rows.length > 100, "the window holds rows");
    server = await serve({ "/demo.dendro": file });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(page, extra = {}) {
    const q = new URLSearchParams({ url: "/demo.dendro", source: String(src.id), stream: "memory", from: String(window[0]), to: String(window[1]) });
    for (const [k, v] of Object.entries(extra)) for (const x of [].concat(v)) q.append(k, x);
    await page.goto(`${server.url}/?${q}`);
    await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
  }

  async function derivedData(page, text) {
    return page.locator(`[data-testid="derived-plot"][data-expr="${text}"]`).evaluate((el) => {
      const d = el.dendroPlot;
      return d ? { ts: Array.from(d.ts, String), min: Array.from(d.min), max: Array.from(d.max), reduced: d.reduced } : null;
    });
  }

  async function typeExpr(page, text) {
    const drawn = Number((await page.locator('[data-testid="plots"]').getAttribute("data-drawn")) ?? 0);
    await page.locator('[data-testid="derived-input"]').fill(text);
    await page.locator('[data-testid="derived-input"]').press("Enter");
    await page.locator(`[data-testid="plots"][data-state="drawn"]:not([data-drawn="${drawn}"])`).waitFor({ timeout: 30_000 });
  }

  it("plots 100 * a / b with the values computed from dendro cat", T, async () => {
    const page = await newPage(browser);
    await open(page, { col: "used_bytes" });
    const text = "100 * used_bytes / total_bytes";
    await typeExpr(page, text);
    const d = await derivedData(page, text);
    assert.ok(d, "the derived plot drew");
    assert.equal(d.reduced, false, "every row of the window is drawn");
    assert.deepEqual(d.ts, rows.map((r) => String(tsOf(r))));
    rows.forEach((r, i) => {
      const want = (100 * Number(r.used_bytes)) / Number(r.total_bytes);
      assert.ok(close(d.max[i], want) && d.min[i] === d.max[i], `row ${i}: ${d.max[i]} vs ${want}`);
    });
    // The address holds it; a reload plots it again.
    assert.ok(new URL(page.url()).searchParams.getAll("expr").includes(text), page.url());
    await page.reload();
    await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
    const again = await derivedData(page, text);
    assert.deepEqual(again?.max, d.max, "the reloaded page plots the same series");
    await screenshot(page, "derived-series.png", page.locator('[data-testid="stream-view"]'));
    await page.context().close();
  });

  it("evaluates rate() on the counter's per-row rates, and a division by zero is a gap", T, async () => {
    const page = await newPage(browser);
    await open(page, { col: "used_bytes", expr: ["rate(page_faults) / 2", "used_bytes / (free_bytes - free_bytes)"] });
    const d = await derivedData(page, "rate(page_faults) / 2");
    const rates = ratesOf(cat(file, src.id, "memory"), "page_faults");
    const all = cat(file, src.id, "memory");
    const first = all.findIndex((r) => tsOf(r) >= window[0]);
    let compared = 0;
    rows.forEach((r, i) => {
      const want = rates[first + i];
      if (want === null) return;
      compared++;
      assert.ok(close(d.max[i], want / 2), `row ${i}: ${d.max[i]} vs ${want / 2}`);
    });
    assert.ok(compared > rows.length - 2, "rates compared on the window's rows");
    const z = await derivedData(page, "used_bytes / (free_bytes - free_bytes)");
    assert.equal(z.max.length, rows.length);
    assert.ok(z.max.every((v) => Number.isNaN(v)), "a division by zero gives gaps, never an infinity");
    await page.context().close();
  });

  it("explains an unknown column and a syntax error beside the box", T, async () => {
    const page = await newPage(browser);
    await open(page, { col: "used_bytes" });
    const input = page.locator('[data-testid="derived-input"]');
    const err = page.locator('[data-testid="derived-error"]');
    await input.fill("used_bytes / nope");
    await input.press("Enter");
    await page.waitForFunction(() => document.querySelector('[data-testid="derived-error"]')?.textContent?.includes("nope"));
    assert.match(await err.innerText(), /at character 14: there is no column named "nope" in this stream/);
    assert.equal(await err.getAttribute("data-at"), "13");
    await input.fill("(used_bytes +");
    await input.press("Enter");
    await page.waitForFunction(() => document.querySelector('[data-testid="derived-error"]')?.textContent?.includes("end of the expression"));
    assert.match(await err.innerText(), /at character 14: expected a number, a column name or "\(" but found the end of the expression/);
    assert.equal(await page.locator('[data-testid="derived-plot"]').count(), 0, "nothing is plotted for a mistake");
    await screenshot(page, "derived-error.png", page.locator('[data-testid="derived-form"]'));
    // An expression from the address that does not parse is explained the same way.
    await open(page, { col: "used_bytes", expr: "<img src=x onerror=alert(1)>" });
    assert.match(await err.innerText(), /at character 1: "<" is not part of an expression/);
    assert.equal(await page.locator("img[src=x]").count(), 0, "typed text is never markup");
    await page.context().close();
  });
});

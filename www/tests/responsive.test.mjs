// What keeps the page responsive on big or wide archives: the row table
// builds only the cells in view (columns as well as rows), and the
// timeline's wheel pans in proportion to the wheel's delta.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as esbuild from "esbuild";
import { WWW, launch, missingPrerequisite, newPage, serve } from "./helpers.mjs";

const missing = missingPrerequisite();
const T = { timeout: 60_000 };
const active = (page) => page.locator(".dv-tab-panel:not([hidden])");

/** vtable.ts bundled for a bare page, as `window.VT`. */
async function vtableBundle() {
  const dir = mkdtempSync(join(tmpdir(), "dendro-vt-"));
  const entry = join(dir, "entry.ts");
  writeFileSync(entry, `export { VirtualTable } from ${JSON.stringify(join(WWW, "src/ui/vtable.ts"))};`);
  const out = join(dir, "vt.js");
  await esbuild.build({ entryPoints: [entry], bundle: true, format: "iife", globalName: "VT", outfile: out, logLevel: "error" });
  return readFileSync(out, "utf8");
}

describe("responsive views", () => {
  let server;
  let browser;

  before(async () => {
    if (missing) return;
    server = await serve();
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  // A prerequisite missing is a failure, not a quiet skip of everything below.
  it("has what it needs to run", () => assert.equal(missing, null, missing ?? ""));

  it("builds a bounded number of cells for a 500-column table, and the far columns when scrolled to", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/");
    await page.evaluate(
      ({ code }) => {
        // The page's own stylesheet (viewer.css) stays; its app goes.
        document.body.textContent = "";
        // A script element would need the CSP's blessing; the test's own
        // evaluate does not.
        (0, eval)(code);
        const root = document.createElement("div");
        root.className = "dv-root";
        root.style.width = "1000px";
        document.body.appendChild(root);
        const cols = Array.from({ length: 500 }, (_, i) => ({ name: `c${i}`, width: 110 }));
        const t = new window.VT.VirtualTable(cols, 10_000, (r, c) => `${r}:${c}`);
        root.appendChild(t.el);
        window.__vt = t;
      },
      { code: await vtableBundle() },
    );
    const settle = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    await settle();
    const counts = () =>
      page.evaluate(() => ({
        cells: document.querySelectorAll(".dv-vt-rows .dv-vt-cell:not(.dv-vt-idx)").length,
        rows: document.querySelectorAll(".dv-vt-rows .dv-vt-row").length,
        head: document.querySelectorAll(".dv-vt-head .dv-vt-cell:not(.dv-vt-idx)").length,
      }));
    const first = await counts();
    assert.ok(first.rows > 0 && first.rows < 40, `rows built: ${first.rows}`);
    // 1000 px of 110 px columns: about 10 in view, a few either side.
    assert.ok(first.head > 0 && first.head <= 16, `header cells built: ${first.head}`);
    assert.ok(first.cells <= first.rows * 16, `cells built: ${first.cells} for ${first.rows} rows`);
    assert.equal(await page.locator(".dv-vt-rows .dv-vt-row").first().locator(".dv-vt-cell").nth(1).innerText(), "0:0");

    // Scrolled to the far right: the last columns are there, in place.
    await page.evaluate(() => {
      const vp = document.querySelector(".dv-vt-viewport");
      vp.scrollLeft = vp.scrollWidth;
    });
    await settle();
    const far = await counts();
    assert.ok(far.cells <= far.rows * 16, `cells built after scrolling: ${far.cells}`);
    const placed = await page.evaluate(() => {
      const vp = document.querySelector(".dv-vt-viewport");
      const cells = [...document.querySelectorAll(".dv-vt-rows .dv-vt-row:first-child .dv-vt-cell")];
      const last = cells[cells.length - 1];
      const head = [...document.querySelectorAll(".dv-vt-head .dv-vt-cell")].pop();
      const v = vp.getBoundingClientRect();
      return { text: last.textContent, head: head.textContent, lastRight: last.getBoundingClientRect().right - v.left, headRight: head.getBoundingClientRect().right - v.left, width: vp.clientWidth };
    });
    assert.match(placed.text, /:499$/);
    assert.match(placed.head, /^c499/);
    assert.ok(Math.abs(placed.lastRight - placed.headRight) < 1, `cell and header line up (${placed.lastRight}, ${placed.headRight})`);
    assert.ok(Math.abs(placed.lastRight - placed.width) < 2, `the last column ends at the viewport's edge (${placed.lastRight} of ${placed.width})`);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("pans the timeline by the wheel's delta, and ctrl+wheel still zooms", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/?url=/fixtures/a_single_sealed.dendro");
    const panel = active(page);
    await panel.locator('[data-testid="lane"]').first().waitFor({ timeout: 20_000 });
    const body = panel.locator(".dv-tl-body");
    const wheel = (init) =>
      body.evaluate((el, init) => el.dispatchEvent(new WheelEvent("wheel", { bubbles: true, cancelable: true, ...init })), init);
    const win = async (prev) => {
      await page.waitForFunction((p) => {
        const q = new URLSearchParams(location.search);
        return q.has("from") && `${q.get("from")}:${q.get("to")}` !== p;
      }, prev);
      const q = new URL(page.url()).searchParams;
      return [BigInt(q.get("from")), BigInt(q.get("to"))];
    };
    // Zoom in first (ctrl+wheel), so the window is narrower than the archive.
    await wheel({ ctrlKey: true, deltaY: -100, clientX: 0 });
    const w0 = await win("");
    const width = Number(w0[1] - w0[0]);
    const track = await panel.locator(".dv-tl-axis").evaluate((el) => el.clientWidth);
    await wheel({ shiftKey: true, deltaY: 40 });
    const w1 = await win(`${w0[0]}:${w0[1]}`);
    await wheel({ shiftKey: true, deltaY: 160 });
    const w2 = await win(`${w1[0]}:${w1[1]}`);
    await wheel({ deltaX: -80 });
    const w3 = await win(`${w2[0]}:${w2[1]}`);
    const step = (a, b) => Number(b[0] - a[0]) / width;
    const near = (got, want, what) => assert.ok(Math.abs(got - want) < want * 0.1 + 0.003, `${what}: moved ${got} of the window, expected ${want}`);
    near(step(w0, w1), 40 / track, "40 px");
    near(step(w1, w2), 160 / track, "160 px");
    near(-step(w2, w3), 80 / track, "80 px back");
    // The window's width does not change when panning.
    assert.ok(Math.abs(Number(w2[1] - w2[0]) - width) <= width * 0.01);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

// The progressive first plot (issue 33): a window over many segments of
// an archive read in place is drawn first from a sample of its segments'
// footers (labelled a sample, in coarse buckets), then from every footer,
// then exact, in that order, each step saying what it is. The archive is
// served by the static test server (no accelerator), so the browser reads
// it by range as it would any large file.

import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { DIST, launch, missingPrerequisite, newPage, screenshot } from "./helpers.mjs";
import { startServer } from "../support/index.mjs";
import { dendro, plotData } from "./cli.mjs";

const T = { timeout: 180_000 };

describe("progressive first plot", () => {
  let browser;
  let server;
  /** Once set, each answer waits this long: the steps after the sample stay on screen long enough to be photographed. */
  let pause = 0;
  before(async () => {
    const missing = missingPrerequisite();
    assert.equal(missing, null, missing ?? "");
    browser = await launch();
    const dir = mkdtempSync(join(tmpdir(), "dendro-progressive-"));
    // An hour sealed every 10 s: 360 segments a stream, past the sample's 64.
    dendro("demo", "--hosts", "1", "--seal-every", "10", join(dir, "many.dendro"));
    server = await startServer({ root: DIST, mounts: { "/a/": dir }, gate: () => new Promise((r) => setTimeout(r, pause)) });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it("draws a labelled sample, then every footer, then the exact envelope", T, async () => {
    const page = await newPage(browser);
    const seen = [];
    const shots = [];
    await page.exposeFunction("__stage", async (state, status, points) => {
      seen.push({ state, status, points });
      if (state === "sample" || state === "preview") {
        if (state === "sample") pause = 300;
        shots.push(screenshot(page, `progressive-${state}.png`, page.locator('[data-testid="plots"]')).catch(() => null));
      }
    });
    await page.addInitScript(() => {
      // Every change of a plot group's state, with the status line it came with.
      new MutationObserver((records) => {
        for (const r of records) {
          const el = r.target;
          const state = el.dataset?.state;
          if (el.dataset?.testid !== "plots" || !["sample", "preview", "drawn"].includes(state)) continue;
          const plot = el.querySelector('[data-testid="plot"]');
          window.__stage(state, el.querySelector('[data-testid="plot-status"]')?.textContent ?? "", plot?.dendroPlot?.ts.length ?? -1);
        }
      }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-state"] });
    });
    await page.goto(`${server.url}/?url=${encodeURIComponent("/a/many.dendro")}&mode=lazy&source=1&stream=cpu&col=load1`);
    await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 120_000 });
    pause = 0;
    await Promise.all(shots);
    await screenshot(page, "progressive-exact.png", page.locator('[data-testid="plots"]'));

    const states = seen.map((s) => s.state).filter((s, i, all) => s !== all[i - 1]);
    assert.deepEqual(states, ["sample", "preview", "drawn"], JSON.stringify(seen, null, 1));
    const [sample, preview, exact] = ["sample", "preview", "drawn"].map((st) => seen.find((s) => s.state === st));
    const m = /a sample: footer statistics of (\d+) of 360 segments spread evenly in time, in (\d+) coarse buckets \(the data may reach beyond this band\), refining…/.exec(sample.status);
    assert.ok(m, sample.status);
    assert.ok(Number(m[1]) < 360 && Number(m[1]) >= 32, sample.status);
    assert.ok(sample.points <= 64 && sample.points > 0, `the sample is coarse: ${sample.points} points`);
    assert.match(preview.status, /from segment statistics \(360 segments\), refining…/);
    assert.ok(preview.points > sample.points, "every footer draws the window's buckets");
    assert.doesNotMatch(exact.status, /sample|refining/);
    assert.match(exact.status, /segments read/);
    const drawn = await plotData(page, "load1");
    assert.ok(drawn.reduced && drawn.ts.length === exact.points);
    assert.deepEqual(page.problems, []);
  });
});

// `dendro serve` as an accelerator (issue 33): a page served with its
// archive asks the server for the window's envelope and says so; the same
// window read by range in the browser draws the same values; a server that
// declines (here: a test hook that makes it refuse every envelope as busy)
// is read by range, and the page says why, asking the person nothing.

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { DIST, ROOT, launch, missingPrerequisite, newPage, screenshot } from "./helpers.mjs";
import { dendroBin, plotData } from "./cli.mjs";

const T = { timeout: 180_000 };

/** `dendro serve --root www/dist FILE` with `env`; resolves with the child and its port. */
function served(file, env = {}) {
  const child = spawn(dendroBin(), ["serve", "--port", "0", "--root", DIST, file], { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"], env: { ...process.env, ...env } });
  return new Promise((resolve, reject) => {
    let said = "";
    child.stdout.on("data", (b) => {
      said += b;
      const port = /127\.0\.0\.1:(\d+)\//.exec(said)?.[1];
      if (port) resolve({ child, port: Number(port) });
    });
    child.on("exit", (code) => reject(new Error(`dendro serve exited (${code}): ${said}`)));
  });
}

describe("dendro serve as an accelerator", () => {
  let browser;
  let file;
  const servers = [];
  before(async () => {
    const missing = missingPrerequisite();
    assert.equal(missing, null, missing ?? "");
    browser = await launch();
    file = join(mkdtempSync(join(tmpdir(), "dendro-accel-")), "demo.dendro");
    execFileSync(dendroBin(), ["demo", "--hosts", "1", "--seal-every", "60", file]);
  });
  after(async () => {
    await browser?.close();
    for (const s of servers) s.child.kill();
  });

  /** The page on `port`, the demo's cpu stream read in place, plotted; what it drew and said. */
  async function plotted(port, name) {
    const page = await newPage(browser);
    await page.goto(`http://127.0.0.1:${port}/?url=${encodeURIComponent("/archives/demo.dendro")}&mode=lazy&source=1&stream=cpu&col=load1`);
    const plots = page.locator('[data-testid="plots"][data-state="drawn"]');
    await plots.waitFor({ timeout: 60_000 });
    const status = await page.locator('[data-testid="plot-status"]').textContent();
    const via = await plots.getAttribute("data-via");
    const data = await plotData(page, "load1");
    await screenshot(page, name, page.locator('[data-testid="plots"]'));
    return { page, status, via, data };
  }

  it("draws the server's envelope, equal to the one read by range, and falls back when the server says no", T, async () => {
    const fast = await served(file);
    servers.push(fast);
    const busy = await served(file, { DENDRO_SERVE_TEST_ENVELOPE: "concurrent=0" });
    servers.push(busy);

    const server = await plotted(fast.port, "accelerator-server.png");
    assert.equal(server.via, "server", server.status);
    assert.match(server.status, /computed by the server \(dendro serve\)/);
    assert.deepEqual(server.page.problems, []);

    const browserRead = await plotted(busy.port, "accelerator-fallback.png");
    assert.equal(browserRead.via, "browser", browserRead.status);
    assert.match(browserRead.status, /read by range in this browser \(the server's envelope was not used: the server declined \(503: the server is computing 0 envelopes already/);
    // The refusal itself is the one thing the console may say.
    assert.deepEqual(browserRead.page.problems.filter((p) => !/status of 503/.test(p)), []);

    assert.ok(server.data && server.data.reduced && server.data.ts.length > 10, "a reduced envelope was drawn");
    assert.deepEqual(server.data, browserRead.data, "the server's envelope is the browser's for the same window");
  });
});

// A dropped file that changes on disk: the viewer keeps the drop's
// file-system handle (Chromium's DataTransferItem.getAsFileSystemHandle)
// and offers to reload the newer version in the same tab.
//
// A synthetic drop cannot carry a real handle, so the page's
// getAsFileSystemHandle is replaced by one whose getFile() answers what the
// test says is on disk. What is tested is the viewer's side: that it asks
// during the drop, looks again when the window gains focus, says what
// changed, and reloads in place.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { FIXTURES, dropFile, launch, loadManifests, missingPrerequisite, newPage, screenshot, serve } from "./helpers.mjs";

const missing = missingPrerequisite();
const T = { timeout: 60_000, skip: !!missing };
const panel = (page) => page.locator(".dv-tab-panel:not([hidden])");

/** Replaces the drop's handles with fakes the test controls through window.__disk. */
async function fakeHandles(page) {
  await page.addInitScript(() => {
    const w = window;
    w.__looks = 0;
    DataTransferItem.prototype.getAsFileSystemHandle = function () {
      const dropped = this.getAsFile();
      return Promise.resolve({
        kind: "file",
        name: dropped.name,
        getFile: async () => {
          w.__looks++;
          if (w.__diskGone) throw new DOMException("gone", "NotFoundError");
          return w.__disk ?? dropped;
        },
      });
    };
  });
}

/** Makes the page look at its file now (as a person coming back to the window would) and waits for the look. */
async function lookAgain(page) {
  const before = await page.evaluate(() => window.__looks);
  await page.evaluate(() => window.dispatchEvent(new Event("focus")));
  await page.waitForFunction((n) => window.__looks > n, before);
  // The look's answer is handled in the same task as its promise settles.
  await page.evaluate(() => new Promise((r) => setTimeout(r, 0)));
}

async function putOnDisk(page, path, name) {
  const b64 = (await readFile(path)).toString("base64");
  await page.evaluate(
    ({ b64, name }) => {
      const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      window.__disk = new File([bin], name, { lastModified: Date.now() + 60_000 });
    },
    { b64, name },
  );
}

describe("a dropped file that changes on disk", () => {
  let server;
  let browser;
  let manifests;

  before(async () => {
    if (missing) return;
    server = await serve();
    browser = await launch();
    manifests = new Map((await loadManifests()).map((m) => [m.stem, m]));
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  // A prerequisite missing is a failure, not a quiet skip of everything below.
  it("has what it needs to run", () => assert.equal(missing, null, missing ?? ""));

  it("is offered for reload, and reloads in the same tab", T, async () => {
    const page = await newPage(browser);
    await fakeHandles(page);
    await page.goto(server.url + "/");
    const name = "recording.dendro";
    await dropFile(page, join(FIXTURES, "a_single_sealed.dendro"), name);
    const sources = () => panel(page).locator('[data-field="sources"]').getAttribute("data-value");
    await panel(page).locator('[data-testid="overview"]').waitFor({ timeout: 20_000 });
    assert.equal(await sources(), String(manifests.get("a_single_sealed").overview.sources));

    // Unchanged, and then unreadable for a moment: nothing to offer.
    await lookAgain(page);
    await page.evaluate(() => (window.__diskGone = true));
    await lookAgain(page);
    await page.evaluate(() => (window.__diskGone = false));
    assert.equal(await page.locator('[data-testid="file-changed"]').count(), 0, "no notice while the file is as it was");

    await putOnDisk(page, join(FIXTURES, "b_multi_source.dendro"), name);
    await lookAgain(page);
    const notice = page.locator('[data-testid="file-changed"]');
    await notice.waitFor();
    assert.match(await notice.innerText(), /recording\.dendro changed on disk: now [\d.]+ [KM]?i?B, modified \d{4}-\d\d-\d\d/);
    assert.equal(await sources(), String(manifests.get("a_single_sealed").overview.sources), "not reloaded until asked");
    await screenshot(page, "file-changed.png", notice);

    await page.locator('[data-testid="reload-file"]').click();
    const want = String(manifests.get("b_multi_source").overview.sources);
    await page.waitForFunction(
      (want) => document.querySelector('.dv-tab-panel:not([hidden]) [data-field="sources"]')?.getAttribute("data-value") === want,
      want,
    );
    assert.equal(await page.locator('[data-testid="tab"]').count(), 1, "reloaded in its tab, not a new one");
    assert.equal(await notice.count(), 0, "the notice went with the old version");

    // The reloaded file is watched in turn.
    await putOnDisk(page, join(FIXTURES, "a_single_sealed.dendro"), name);
    await lookAgain(page);
    await page.locator('[data-testid="file-changed"]').waitFor();
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("closing the tab stops looking at the file", T, async () => {
    const page = await newPage(browser);
    await fakeHandles(page);
    await page.goto(server.url + "/");
    await dropFile(page, join(FIXTURES, "a_single_sealed.dendro"), "x.dendro");
    await panel(page).locator('[data-testid="overview"]').waitFor({ timeout: 20_000 });
    await lookAgain(page);
    await page.locator('[data-testid="tab"] .dv-tab-close').click();
    const looks = await page.evaluate(() => window.__looks);
    await page.evaluate(() => window.dispatchEvent(new Event("focus")));
    await page.evaluate(() => new Promise((r) => setTimeout(r, 0)));
    assert.equal(await page.evaluate(() => window.__looks), looks, "a closed tab's file is not read again");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

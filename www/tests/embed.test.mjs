// The three ways to embed the viewer, through their example pages:
// the ES module, the <dendro-viewer> element and the iframe with postMessage;
// and the page a user copies (examples/embed_viewer.html), served beside the
// built viewer as its comment says.

import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { FIXTURES, ROOT, inkOnCanvases, launch, missingPrerequisite, newPage, screenshot, serve } from "./helpers.mjs";

const missing = missingPrerequisite();
const T = { timeout: 60_000, skip: !!missing };
const SAMPLE_BYTES = missing ? 0 : statSync(join(FIXTURES, "b_multi_source.dendro")).size;

describe("embedding examples", () => {
  let server;
  let browser;

  before(async () => {
    if (missing) return;
    server = await serve({ "/embed_viewer.html": join(ROOT, "examples/embed_viewer.html") });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it("has what it needs to run", () => assert.equal(missing, null, missing ?? ""));

  it("mountViewer(element, { url | bytes }) shows the archive inside the host page", T, async () => {
    const page = await newPage(browser);
    // Nothing the example asks for is missing, the worker's fetches included.
    const missingFiles = [];
    page.context().on("response", (r) => r.status() >= 400 && missingFiles.push(`${r.status()} ${new URL(r.url()).pathname}`));
    await page.goto(server.url + "/examples/module.html");
    assert.match(await page.locator('[data-testid="own-file"]').innerText(), /\?src=URL/, "the page says how to open your own file");
    await page.locator('#status[data-state="ok"]').waitFor({ timeout: 20_000 });
    const viewer = page.locator("#viewer");
    // Playwright's CSS locators reach into the open shadow root.
    await viewer.locator('[data-field="sources"][data-value="2"]').waitFor();
    assert.equal(await viewer.locator('[data-field="rows"]').getAttribute("data-value"), "272");
    await viewer.locator('[data-testid="plot"] canvas').first().waitFor({ timeout: 20_000 });
    await viewer.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 20_000 });
    const ink = await inkOnCanvases(viewer.locator('[data-testid="plot"] canvas').first());
    assert.ok(ink[0] > 0.01, "the embedded plot draws");
    // The viewer's styles stay in its shadow root: the host's body font is untouched.
    const hostFont = await page.evaluate(() => getComputedStyle(document.body).fontSize);
    assert.equal(hostFont, "14px");

    await page.locator("#as-bytes").click();
    await page.waitForFunction(() => document.querySelector("#status")?.dataset.bytesLeft !== undefined);
    assert.equal(await page.locator("#status").getAttribute("data-bytes-left"), String(SAMPLE_BYTES), "the host's buffer was copied, not detached");
    assert.equal(await viewer.locator('[data-testid="tab"]').count(), 2);
    await screenshot(page, "embed-module.png");
    assert.deepEqual(missingFiles, []);
    assert.deepEqual(page.problems, []);
    assert.deepEqual(await page.cspViolations(), []);
    await page.context().close();
  });

  it("mountViewer(element, { file }) opens a host page's file", T, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/examples/module.html");
    await page.locator('#status[data-state="ok"]').waitFor({ timeout: 20_000 });
    await page.locator("#pick").setInputFiles(join(FIXTURES, "a_single_sealed.dendro"));
    const viewer = page.locator("#viewer");
    await viewer.locator('.dv-tab-panel:not([hidden]) [data-field="rows"][data-value="200"]').waitFor({ timeout: 20_000 });
    await page.context().close();
  });

  it("<dendro-viewer src=...> renders the archive", T, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/examples/custom-element.html");
    await page.locator('#status[data-state="ok"]').waitFor({ timeout: 20_000 });
    const el = page.locator("dendro-viewer");
    await el.locator('[data-field="streams"][data-value="6"]').waitFor();
    await el.locator('[data-testid="lane"]').first().waitFor();
    assert.equal(await el.locator('[data-testid="lane"]').count(), 6);
    // Changing the attribute opens another archive.
    await page.evaluate(() => document.querySelector("dendro-viewer").setAttribute("src", "../fixtures/a_single_sealed.dendro"));
    await el.locator('.dv-tab-panel:not([hidden]) [data-field="rows"][data-value="200"]').waitFor({ timeout: 20_000 });
    await screenshot(page, "embed-element.png");
    assert.deepEqual(page.problems, []);
    assert.deepEqual(await page.cspViolations(), []);
    await page.context().close();
  });

  it("examples/embed_viewer.html shows an archive by URL and a picked file", T, async () => {
    const page = await newPage(browser);
    const missingFiles = [];
    page.context().on("response", (r) => r.status() >= 400 && missingFiles.push(`${r.status()} ${new URL(r.url()).pathname}`));
    await page.goto(server.url + "/embed_viewer.html");
    const byUrl = page.locator("#by-url");
    await byUrl.locator('[data-field="sources"][data-value="2"]').waitFor({ timeout: 20_000 });
    await page.locator("#pick").setInputFiles(join(FIXTURES, "a_single_sealed.dendro"));
    await page.locator('#status[data-state="ok"]').waitFor({ timeout: 20_000 });
    await page.locator("#mine").locator('[data-field="rows"][data-value="200"]').waitFor({ timeout: 20_000 });
    assert.deepEqual(missingFiles, []);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("iframe mode: handshake, then {dendro: {buffer, name}} over postMessage", T, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/examples/iframe.html");
    await page.locator('#status[data-state="ok"]').waitFor({ timeout: 20_000 });
    assert.match(await page.locator("#status").innerText(), /opened sample\.dendro/);
    const frame = page.frameLocator("#frame");
    await frame.locator('[data-field="sources"][data-value="2"]').waitFor();
    assert.equal(await frame.locator('[data-field="name"] .dv-stat-value').innerText(), "sample.dendro");
    // The framed page is in embed mode: no address box, and it leaves the frame's URL alone.
    assert.equal(await frame.locator(".dv-url-form").count(), 0);
    await screenshot(page, "embed-iframe.png");

    // A message with a buffer that is not an archive is answered with the reason.
    const answer = await page.evaluate(
      () =>
        new Promise((resolve) => {
          const f = document.getElementById("frame");
          addEventListener("message", (ev) => {
            if (ev.source === f.contentWindow && ev.data?.dendro?.opened?.ok === false) resolve(ev.data.dendro.opened);
          });
          const buffer = new TextEncoder().encode("just some text, no archive").buffer;
          f.contentWindow.postMessage({ dendro: { buffer, name: "notes.txt" } }, location.origin, [buffer]);
        }),
    );
    assert.equal(answer.error.kind, "NotAnArchive");
    assert.match(answer.error.title, /notes\.txt is not a dendro archive/);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

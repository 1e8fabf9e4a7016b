// The two-way embedding API (www/src/embedding.ts) through the example
// page www/examples/events.html, once for each way to embed: mountViewer,
// <dendro-viewer> and the iframe. Each gets `ready` and `opened`; its
// host's setWindow, setCursor, addNote and setTheme act on the viewer and
// come back as `view-changed` and `note-added`; a person's cursor, region
// and note come out as `cursor`, `selection` and `note-added`; a payload
// that is wrong comes back as `error` in words. An iframe hears nothing
// from an origin its allow-list leaves out.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { launch, missingPrerequisite, newPage, screenshot, serve } from "./helpers.mjs";

const T = { timeout: 90_000 };
const missing = missingPrerequisite();
const FROM = 1_700_000_010_000_000_000n;
const TO = 1_700_000_060_000_000_000n;

/** The events named `name` the host has heard, bigints as "123n". */
function eventsOf(page, name) {
  return page
    .evaluate((name) => JSON.stringify((window.dendroHost?.events ?? []).filter((x) => x.name === name).map((x) => x.detail), (_k, v) => (typeof v === "bigint" ? `${v}n` : v)), name)
    .then((s) => JSON.parse(s));
}

/** Waits for an event the host heard that `match` accepts; its detail. Waits on the page's events, never on a clock. */
async function heard(page, name, match = () => true) {
  for (let seen = 0; ; ) {
    const list = await eventsOf(page, name);
    const hit = list.find(match);
    if (hit) return hit;
    seen = list.length;
    await page.waitForFunction(([name, seen]) => (window.dendroHost?.events ?? []).filter((x) => x.name === name).length > seen, [name, seen], { timeout: 30_000 });
  }
}

describe("embedding events and actions", { skip: missing ?? false }, () => {
  let server;
  let browser;

  before(async () => {
    server = await serve();
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  for (const way of ["module", "element", "iframe"]) {
    it(`${way}: events out, actions in`, T, async () => {
      const page = await newPage(browser);
      await page.goto(`${server.url}/examples/events.html?way=${way}`);
      // The viewer: in the shadow root (Playwright's locators reach in), or in the frame.
      const viewer = way === "iframe" ? page.frameLocator("iframe") : page.locator("#slot");
      assert.deepEqual(await heard(page, "ready"), { version: 1 });
      const opened = await heard(page, "opened");
      assert.equal(opened.ok, true);
      assert.equal(opened.sources, 2);
      await viewer.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });

      // setWindow: the plots show it, and the host hears the view change.
      await page.evaluate(([a, b]) => window.dendroHost.send("setWindow", { from: BigInt(a), to: String(b) }), [String(FROM), String(TO)]);
      const view = await heard(page, "view-changed", (d) => d.from === `${FROM}n`);
      assert.equal(view.to, `${TO}n`);
      assert.equal(view.stream, "cpu");
      // setCursor: the timeline's cursor line moves there.
      await page.evaluate((a) => window.dendroHost.send("setCursor", { at: BigInt(a) }), String(FROM + 20_000_000_000n));
      await viewer.locator('[data-testid="timeline-cursor"]:not([hidden])').waitFor();
      // addNote: listed, and told back.
      await page.evaluate((a) => window.dendroHost.send("addNote", { source: 1, from: a, text: "from the host <b>x</b>" }), String(FROM + 5_000_000_000n));
      const note = await heard(page, "note-added");
      assert.deepEqual(note, { source: 1, from: `${FROM + 5_000_000_000n}n`, to: null, text: "from the host <b>x</b>" });
      await viewer.locator('[data-testid="notes"][data-count="1"]').waitFor();
      // setTheme.
      await page.evaluate(() => window.dendroHost.send("setTheme", { theme: "dark" }));
      await viewer.locator('[data-testid="viewer"][data-theme="dark"]').waitFor();
      // A wrong payload is refused in words.
      await page.evaluate(() => window.dendroHost.send("setWindow", { from: "soon", to: "1" }).catch(() => {}));
      const err = await heard(page, "error", (d) => d.action === "setWindow");
      assert.match(err.message, /setWindow: from must be a timestamp in nanoseconds/);
      await page.evaluate(() => window.dendroHost.send("launch", {}).catch(() => {}));
      assert.match((await heard(page, "error", (d) => /no such action/.test(d.message))).message, /the actions are open, setWindow, setCursor, addNote, setTheme/);

      // A person: the cursor over a plot, a Shift-drag region, a note.
      const over = viewer.locator('[data-testid="plot"] .u-over').first();
      await over.scrollIntoViewIfNeeded();
      const ob = await over.boundingBox();
      await page.mouse.move(ob.x + ob.width * 0.3, ob.y + ob.height / 2);
      await page.mouse.move(ob.x + ob.width * 0.35, ob.y + ob.height / 2);
      const cursor = await heard(page, "cursor", (d) => d.at !== null);
      assert.ok(BigInt(cursor.at.slice(0, -1)) > FROM && BigInt(cursor.at.slice(0, -1)) < TO, `the cursor is inside the window: ${cursor.at}`);
      await page.keyboard.down("Shift");
      await page.mouse.down();
      await page.mouse.move(ob.x + ob.width * 0.6, ob.y + ob.height / 2, { steps: 4 });
      await page.mouse.up();
      await page.keyboard.up("Shift");
      const sel = await heard(page, "selection", (d) => d.from !== null);
      assert.ok(BigInt(sel.from.slice(0, -1)) < BigInt(sel.to.slice(0, -1)));
      await page.mouse.move(ob.x + ob.width * 0.5, ob.y + ob.height / 2);
      await page.keyboard.press("n");
      const input = viewer.locator('[data-testid="note-input"]');
      await input.fill("a person's note");
      await input.press("Enter");
      await heard(page, "note-added", (d) => d.text === "a person's note");
      // Each told once, in the shape embedding.ts declares.
      const notesHeard = await eventsOf(page, "note-added");
      assert.deepEqual(notesHeard.map((n) => Object.keys(n).sort().join()), ["from,source,text,to", "from,source,text,to"]);
      assert.ok((await eventsOf(page, "selection")).every((d) => Object.keys(d).sort().join() === "from,to"));
      await screenshot(page, `embed-events-${way}.png`);
      assert.deepEqual(page.problems, []);
      await page.context().close();
    });
  }

  it("iframe: messages from an origin not on the allow-list are ignored", T, async () => {
    const page = await newPage(browser);
    await page.goto(`${server.url}/examples/events.html?way=iframe&origins=${encodeURIComponent("https://dashboard.example")}`);
    const frame = page.frameLocator("iframe");
    await frame.locator('[data-testid="viewer"]').waitFor();
    const inner = page.frames().find((f) => f.url().includes("index.html"));
    // Messages from one source arrive in order: once a marker sent after the
    // actions has arrived, the actions were heard (and, here, ignored).
    const marker = inner.evaluate(() => new Promise((r) => addEventListener("message", (e) => e.data?.marker && r(true))));
    await page.evaluate(async () => {
      const f = document.querySelector("iframe").contentWindow;
      for (const m of [{ ping: true }, { action: "setTheme", payload: { theme: "dark" } }, { action: "open", payload: { url: new URL("sample.dendro", location.href).href } }, { url: new URL("sample.dendro", location.href).href }]) {
        f.postMessage({ dendro: m }, "*");
      }
      f.postMessage({ marker: true }, "*");
    });
    assert.equal(await marker, true);
    assert.equal(await frame.locator('[data-testid="viewer"]').getAttribute("data-theme"), null, "no theme set");
    assert.equal(await frame.locator('[data-testid="tab"]').count(), 0, "nothing opened");
    const events = await page.evaluate(() => window.dendroHost.events.map((e) => e.name));
    assert.deepEqual(events, [], "and no event reached a host whose origin is not on the list");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

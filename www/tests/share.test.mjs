// Shared links in the page (issue 35): twenty notes marked on a plot and
// on the timeline travel in a link under 2 KB, and a fresh browser
// context (no localStorage, no server but the archive's) opening it draws
// the same window, the same plots and the same notes; a link opened on
// another archive says so in words and opens what it can; hostile links
// are refused in words or shown as text; today's plain parameters are
// the link the first test starts from.

import assert from "node:assert/strict";
import { inflateRawSync, deflateRawSync } from "node:zlib";
import { after, before, describe, it } from "node:test";
import { launch, missingPrerequisite, newPage, screenshot, serve } from "./helpers.mjs";

const T = { timeout: 120_000 };
const missing = missingPrerequisite();
const FROM = 1_700_000_010_000_000_000n;
const TO = 1_700_000_070_000_000_000n;
/** The notes' colour on a canvas (noteplot.ts NOTE_COLOR). */
const NOTE_RGB = [219, 39, 119];

const unpack = (v) => JSON.parse(inflateRawSync(Buffer.from(v, "base64url")).toString());
const pack = (o) => deflateRawSync(Buffer.from(JSON.stringify(o))).toString("base64url");

async function drawn(page) {
  await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
}

/** What the page shows: the window, every plot's drawn series, the notes listed and flagged, and note-coloured pixels on the plots. */
async function shown(page) {
  const plots = await page.locator('[data-testid="plot"]').evaluateAll((els) =>
    els.map((el) => {
      const d = el.dendroPlot;
      return { column: el.dataset.column, ts: d ? Array.from(d.ts, String) : null, min: d ? Array.from(d.min) : null, max: d ? Array.from(d.max) : null };
    }),
  );
  const notes = await page.locator('[data-testid="note"]').evaluateAll((els) =>
    els.map((el) => ({ source: el.dataset.source, from: el.dataset.from, to: el.dataset.to, text: el.querySelector('[data-testid="note-text"]').textContent })),
  );
  const ink = await page.locator('[data-testid="plot"] canvas').evaluateAll(
    (cs, [R, G, B]) =>
      cs.reduce((n, c) => {
        const { data } = c.getContext("2d").getImageData(0, 0, c.width, c.height);
        for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 200 && Math.abs(data[i] - R) < 30 && Math.abs(data[i + 1] - G) < 30 && Math.abs(data[i + 2] - B) < 30) n++;
        return n;
      }, 0),
    NOTE_RGB,
  );
  return {
    window: await page.locator('[data-testid="window"]').textContent(),
    plots,
    notes,
    flags: await page.locator('[data-testid="note-flag"]').count(),
    ink,
  };
}

describe("shared links", { skip: missing ?? false }, () => {
  let server;
  let browser;
  let link;

  before(async () => {
    server = await serve({ "/other/b_multi_source.dendro": new URL("../../../shared/fixtures/schema5/s5a_multi_source.dendro", import.meta.url).pathname });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it("a link with 20 notes is under 2 KB and restores the same window, plots and notes in a fresh context", T, async () => {
    const page = await newPage(browser);
    // Today's plain parameters: an old link, which opens as it always did.
    await page.goto(`${server.url}/?url=/fixtures/b_multi_source.dendro&source=1&stream=cpu&from=${FROM}&to=${TO}`);
    await drawn(page);
    const track = page.locator('.dv-tl-srcrow[data-source="1"] .dv-tl-srctrack');
    const box = await track.boundingBox();
    const input = page.locator('[data-testid="note-input"]');
    for (let i = 0; i < 19; i++) {
      const x = box.x + 12 + (i * (box.width - 40)) / 19;
      const y = box.y + box.height / 2;
      await page.keyboard.down("Alt");
      await page.mouse.move(x, y);
      await page.mouse.down();
      // Every fourth a region (a drag), the rest instants (a click).
      if (i % 4 === 0) await page.mouse.move(x + 20, y, { steps: 4 });
      await page.mouse.up();
      await page.keyboard.up("Alt");
      assert.ok(await input.evaluate((el) => el.getRootNode().activeElement === el), "the mark puts the note box in focus");
      await input.fill(`#${i} ${i % 4 === 0 ? "region" : "spike"} after deploy ${1000 + i}`);
      await input.press("Enter");
    }
    // The twentieth: N with the pointer over a plot marks the cursor's instant.
    const plot = page.locator('[data-testid="plot"] .u-over').first();
    await plot.scrollIntoViewIfNeeded();
    const pb = await plot.boundingBox();
    await page.mouse.move(pb.x + pb.width * 0.6, pb.y + pb.height / 2);
    await page.keyboard.press("n");
    await input.fill("#19 cursor: <b>not bold</b>");
    await input.press("Enter");
    await page.locator('[data-testid="notes"][data-count="20"]').waitFor();
    await drawn(page);
    const before = await shown(page);
    assert.equal(before.notes.length, 20);
    assert.equal(before.notes.filter((n) => n.to !== "").length, 5, "five regions: " + JSON.stringify(before.notes));
    assert.ok(before.flags >= 20, `every note is flagged on the timeline (${before.flags})`);
    assert.ok(before.ink > 50, `notes are drawn on the plots (${before.ink} pixels)`);
    assert.ok(before.notes.some((n) => n.text === "#19 cursor: <b>not bold</b>"));
    await screenshot(page, "share-notes-timeline.png", page.locator('[data-testid="timeline"]'));
    await screenshot(page, "share-notes-plot.png", page.locator('[data-testid="plot"]').first());
    await screenshot(page, "share-notes-panel.png", page.locator('[data-testid="notes"]'));

    await page.locator('[data-testid="share-button"]').click();
    link = await page.locator('[data-testid="share-link"]').inputValue();
    assert.ok(link.length < 2048, `a link with 20 notes is ${link.length} bytes`);
    console.log(`# a link with 20 notes: ${link.length} bytes`);
    assert.equal(new URL(link).searchParams.size, 1, "one parameter");
    assert.deepEqual(page.problems, []);

    // A fresh context: nothing stored, only the link.
    const fresh = await newPage(browser);
    await fresh.goto(link);
    await drawn(fresh);
    await fresh.locator('[data-testid="notes"][data-count="20"]').waitFor();
    await fresh.waitForFunction(() => !new URLSearchParams(location.search).has("v"));
    const after = await shown(fresh);
    assert.deepEqual(after, before);
    const q = new URL(fresh.url()).searchParams;
    assert.equal(q.get("stream"), "cpu", "the address goes back to plain parameters");
    assert.equal(q.get("from"), String(FROM));
    assert.equal(await fresh.locator('[data-testid="link-mismatch"]').count(), 0, "the same archive: no warning");
    // The notes are kept with the archive: a reload without the link still has them.
    await fresh.reload();
    await drawn(fresh);
    await fresh.locator('[data-testid="notes"][data-count="20"]').waitFor();
    assert.deepEqual(fresh.problems, []);
    await fresh.context().close();
    await page.context().close();
  });

  it("a link opened on another archive says so in words and opens what it can", T, async () => {
    assert.ok(link, "the first test made a link");
    const o = unpack(new URL(link).searchParams.get("v"));
    o.u = ["/other/b_multi_source.dendro"];
    const page = await newPage(browser);
    await page.goto(`${server.url}/?v=${pack(o)}`);
    const warn = page.locator('[data-testid="link-mismatch"]');
    await warn.waitFor({ timeout: 30_000 });
    assert.match(await warn.textContent(), /This link was made on a different archive: none of its 2 sources is in b_multi_source\.dendro/);
    await drawn(page);
    assert.equal(await page.locator('[data-testid="note"]').count(), 20, "its notes are shown (source 1 is there too)");
    assert.equal(new URL(page.url()).searchParams.get("stream"), "cpu");
    await screenshot(page, "share-mismatch.png", null);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("hostile links: note text stays text, a newer version and a damaged link are refused in words", T, async () => {
    const page = await newPage(browser);
    const hostile = '<img src=x onerror="alert(1)">\u202eevil';
    await page.goto(`${server.url}/?v=${pack({ v: 1, u: ["/fixtures/b_multi_source.dendro"], s: 1, t: "cpu", n: [[1, "1700000020000000000", 0, hostile]] })}`);
    await drawn(page);
    const note = page.locator('[data-testid="note-text"]');
    await note.waitFor();
    assert.equal(await page.locator('[data-testid="notes"] img').count(), 0, "no element made from a note");
    assert.match(await note.textContent(), /<img src=x onerror="alert\(1\)">/);
    await page.goto(`${server.url}/?v=${pack({ v: 2, t: "cpu" })}`);
    await page.locator(".dv-toast").filter({ hasText: "link version 2" }).waitFor();
    await page.goto(`${server.url}/?v=${pack({ v: 1 }).slice(0, 3)}x`);
    await page.locator(".dv-toast").filter({ hasText: "damaged" }).waitFor();
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

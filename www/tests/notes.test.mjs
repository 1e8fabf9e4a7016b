// Notes in the page (issue 35) on a `dendro demo` archive, which has
// events of its own: a note marked on a plot (N) and one on the timeline
// (Alt-drag) show on the plots and beside the events; edited, deleted,
// kept across a reload (localStorage, by the archive's identity) and not
// shown on another archive; a link made on the archive and opened on a
// later state of it (compacted: the same uuids, another catalog) says it
// changed; exported as a JSON file and imported into a
// fresh browser; a notes file that is not one, or hostile, is refused in
// words or shown as text.

import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { dendro } from "./cli.mjs";
import { launch, missingPrerequisite, newPage, parseJsonExact, screenshot, serve } from "./helpers.mjs";

const T = { timeout: 120_000 };
const missing = missingPrerequisite();

describe("notes", { skip: missing ?? false }, () => {
  let server;
  let browser;
  let dir;
  let src;
  let exported;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "dendro-notes-"));
    const file = join(dir, "demo.dendro");
    dendro("demo", "--minutes", "12", file);
    src = parseJsonExact(dendro("describe", "--json", file)).sources[0];
    // The same archive in a later state: its small segments merged (the same uuids, another catalog).
    const later = join(dir, "later.dendro");
    copyFileSync(file, later);
    dendro("compact", "--target-rows", "100000", later);
    server = await serve({ "/demo.dendro": file, "/later.dendro": later });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const notes = (page) => page.locator('[data-testid="note"]');
  const texts = (page) => page.locator('[data-testid="note-text"]').allTextContents();

  async function open(page, url = "/demo.dendro") {
    await page.goto(`${server.url}/?url=${url}&source=${src.id}&stream=memory`);
    await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
  }

  it("are marked on a plot and on the timeline, shown beside the events, edited, deleted and kept", T, async () => {
    const page = await newPage(browser);
    await open(page);
    const input = page.locator('[data-testid="note-input"]');
    // N over a plot: an instant at the cursor.
    const over = page.locator('[data-testid="plot"] .u-over').first();
    await over.scrollIntoViewIfNeeded();
    const ob = await over.boundingBox();
    await page.mouse.move(ob.x + ob.width * 0.4, ob.y + ob.height / 2);
    await page.keyboard.press("n");
    assert.match(await page.locator('[data-testid="note-where"]').textContent(), new RegExp(`^at .*, source ${src.id}$`));
    await screenshot(page, "notes-composer.png", null);
    await input.fill("GC pause");
    await input.press("Enter");
    // Alt-drag on the source's lane: a region.
    const track = page.locator(`.dv-tl-srcrow[data-source="${src.id}"] .dv-tl-srctrack`);
    await track.scrollIntoViewIfNeeded();
    const tb = await track.boundingBox();
    const altDrag = async () => {
      await page.keyboard.down("Alt");
      await page.mouse.move(tb.x + tb.width * 0.6, tb.y + tb.height / 2);
      await page.mouse.down();
      await page.mouse.move(tb.x + tb.width * 0.7, tb.y + tb.height / 2, { steps: 4 });
      await page.mouse.up();
      await page.keyboard.up("Alt");
    };
    await altDrag();
    assert.match(await page.locator('[data-testid="note-where"]').textContent(), /^over /);
    // Esc lets a mark go; the next Alt-drag marks again.
    await input.press("Escape");
    assert.match(await page.locator('[data-testid="note-where"]').textContent(), /^over the window shown/);
    await altDrag();
    await input.fill("deploy window");
    await input.press("Enter");
    await page.locator('[data-testid="notes"][data-count="2"]').waitFor();
    assert.deepEqual(await texts(page), ["GC pause", "deploy window"].sort((a, b) => (a === "GC pause" ? -1 : 1)));
    const regions = await notes(page).evaluateAll((els) => els.map((e) => e.dataset.to !== ""));
    assert.deepEqual(regions.sort(), [false, true]);
    assert.ok((await page.locator('[data-testid="event"]').count()) >= 1, "the archive's own events are flagged");
    assert.ok((await page.locator('[data-testid="note-flag"]').count()) >= 2, "and the notes beside them");
    await screenshot(page, "notes-timeline-events.png", page.locator('[data-testid="timeline"]'));
    await screenshot(page, "notes-plot.png", page.locator('[data-testid="plot"]').first());

    // Edit in place, then delete.
    await notes(page).first().locator('[data-action="edit-note"]').click();
    const edit = page.locator('[data-testid="note-edit"]');
    await edit.fill("GC pause (young gen)");
    await edit.press("Enter");
    await page.locator('[data-testid="note-text"]', { hasText: "GC pause (young gen)" }).waitFor();
    await notes(page).filter({ hasText: "deploy window" }).locator('[data-action="delete-note"]').click();
    await page.locator('[data-testid="notes"][data-count="1"]').waitFor();
    assert.equal(await page.locator('[data-testid="note-flag"]').count(), 1, "the timeline drops a deleted note");

    // Kept with the archive: a reload (no link) shows it.
    await page.reload();
    await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
    await page.locator('[data-testid="notes"][data-count="1"]').waitFor();
    assert.deepEqual(await texts(page), ["GC pause (young gen)"]);

    // Exported as a file.
    const [download] = await Promise.all([page.waitForEvent("download"), page.locator('[data-testid="notes-export"]').click()]);
    exported = join(dir, "exported.notes.json");
    await download.saveAs(exported);
    const file = JSON.parse(readFileSync(exported, "utf8"));
    assert.equal(file.kind, "dendro-notes");
    assert.equal(file.notes.length, 1);
    assert.equal(file.notes[0].text, "GC pause (young gen)");

    // A link made here, opened on the archive's later state, says it changed.
    await page.locator('[data-testid="share-button"]').click();
    const link = new URL(await page.locator('[data-testid="share-link"]').inputValue());
    const o = JSON.parse(inflateRawSync(Buffer.from(link.searchParams.get("v"), "base64url")).toString());
    o.u = ["/later.dendro"];
    const fresh = await newPage(browser);
    await fresh.goto(`${server.url}/?v=${deflateRawSync(Buffer.from(JSON.stringify(o))).toString("base64url")}`);
    const warn = fresh.locator('[data-testid="link-mismatch"]');
    await warn.waitFor({ timeout: 30_000 });
    assert.match(await warn.textContent(), /^later\.dendro has changed since this link was made \(its catalog of segments is not the same\)/);
    await fresh.locator('[data-testid="notes"][data-count="1"]').waitFor();
    assert.deepEqual(fresh.problems, []);
    await fresh.context().close();

    // Another archive (other uuids) has notes of its own: none.
    await page.goto(`${server.url}/?url=/fixtures/b_multi_source.dendro`);
    await page.locator('[data-testid="notes"][data-count="0"]').waitFor({ timeout: 30_000 });
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("are imported from a file into a fresh browser, and a bad or hostile file is refused in words or kept as text", T, async () => {
    assert.ok(exported, "the first test exported a file");
    const page = await newPage(browser);
    await open(page);
    await page.locator('[data-testid="notes"][data-count="0"]').waitFor();
    const picker = page.locator('[data-testid="notes-import"]');
    await picker.setInputFiles(exported);
    await page.locator('[data-testid="notes"][data-count="1"]').waitFor();
    assert.deepEqual(await texts(page), ["GC pause (young gen)"]);
    // Importing it again adds nothing.
    await picker.setInputFiles(exported);
    await page.locator('[data-testid="notes"][data-count="1"]').waitFor();

    const problem = page.locator('[data-testid="notes-problem"]');
    const bad = join(dir, "bad.json");
    writeFileSync(bad, '{"kind":"dendro-notes","version":3,"notes":[]}');
    await picker.setInputFiles(bad);
    await problem.filter({ hasText: "bad.json is a notes file of version 3; this viewer reads version 1" }).waitFor();
    const hostile = join(dir, "hostile.json");
    const base = JSON.parse(readFileSync(exported, "utf8"));
    base.notes = [
      { ...base.notes[0], id: "h1", text: '<img src=x onerror="alert(1)"><script>alert(2)</script>' },
      { ...base.notes[0], id: "h2", source: 999, text: "of a source not here" },
    ];
    writeFileSync(hostile, JSON.stringify(base));
    await picker.setInputFiles(hostile);
    await page.locator('[data-testid="notes"][data-count="2"]').waitFor();
    await problem.filter({ hasText: "1 of the notes in hostile.json are of sources this archive does not have" }).waitFor();
    assert.equal(await page.locator('[data-testid="notes"] img, [data-testid="notes"] script').count(), 0);
    assert.ok((await texts(page)).some((t) => t.includes('<img src=x onerror="alert(1)">')));
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

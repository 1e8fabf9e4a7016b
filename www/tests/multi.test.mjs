// Several archives in one page: ?url= repeated, several files picked or
// dropped at once, a folder picked or dropped (sorted by content, the rest
// named), the same archive twice, a truncated archive among many, hostile
// file names; closing a tab gives its archive back to the engine; and two
// embedded viewers in one sync group sharing a cursor and a window.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { dendroBin } from "./cli.mjs";
import { DIST, FIXTURES, ROOT, launch, missingPrerequisite, newPage, screenshot, serve } from "./helpers.mjs";

const missing = missingPrerequisite();
const T = { timeout: 90_000, skip: !!missing };
const A = "a_single_sealed.dendro";
const B = "b_multi_source.dendro";
const H = "h_negative_ts.dendro";
const HOSTILE = ['<img src=x onerror="alert(1)">.dendro', "\u202Eevil\u202C.txt", "line\nbreak.bin"];

const tabs = (page) => page.locator('[data-testid="tab"]');
const shown = (page) => page.locator(".dv-tab-panel:not([hidden])");

/** What the page shows of its tabs: name and state, in order. */
const tabList = (page) => tabs(page).evaluateAll((els) => els.map((e) => `${e.querySelector(".dv-tab-name").textContent}:${e.dataset.state}`));

/** Waits until no tab is loading. */
async function settled(page, n) {
  await page.waitForFunction((n) => {
    const t = [...document.querySelectorAll('[data-testid="tab"]')];
    return t.length === n && t.every((e) => e.dataset.state !== "loading");
  }, n, { timeout: 30_000 });
}

describe("several archives in one page", () => {
  let server;
  let browser;
  let dir;

  before(async () => {
    if (missing) return;
    server = await serve();
    browser = await launch();
    dir = mkdtempSync(join(tmpdir(), "dendro-multi-"));
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("has what it needs to run", () => assert.equal(missing, null, missing ?? ""));

  it("opens every ?url= in a tab, the one named by active in front, says which is the same archive twice, and a reload restores it", T, async () => {
    const page = await newPage(browser);
    const q = `?url=/fixtures/${A}&url=/fixtures/${B}&url=/examples/sample.dendro&active=1&compare=cpu&shift=-1h`;
    await page.goto(server.url + "/" + q);
    await settled(page, 3);
    assert.deepEqual(await tabList(page), [`${A}:open`, `${B}:open`, "sample.dendro:open"]);
    assert.equal(await page.locator('[data-testid="tab"].dv-active .dv-tab-name').textContent(), B);
    // sample.dendro is b_multi_source.dendro served again: equal source uuids.
    const dup = page.locator('[data-tab] > [data-testid="duplicate"]');
    assert.equal(await dup.count(), 1);
    assert.match(await dup.textContent(), /^sample\.dendro holds the same data as b_multi_source\.dendro: All 2 of its sources are open already there/);
    assert.equal(await tabs(page).nth(2).evaluate((e) => e.classList.contains("dv-duplicate")), true);
    await page.waitForFunction(() => new URLSearchParams(location.search).has("stream"));
    const params = new URLSearchParams(await page.evaluate(() => location.search));
    assert.deepEqual(params.getAll("url"), [`/fixtures/${A}`, `/fixtures/${B}`, "/examples/sample.dendro"]);
    assert.equal(params.get("active"), "1");
    assert.equal(params.get("compare"), "cpu");
    assert.equal(params.get("shift"), "-1h");
    const stream = params.get("stream");
    await page.reload();
    await settled(page, 3);
    assert.equal(await page.locator('[data-testid="tab"].dv-active .dv-tab-name').textContent(), B);
    await page.waitForFunction(() => new URLSearchParams(location.search).has("stream"));
    const again = new URLSearchParams(await page.evaluate(() => location.search));
    assert.equal(again.get("stream"), stream);
    assert.deepEqual(again.getAll("url"), params.getAll("url"));
    // Closing the first copy makes the second the one counted.
    await tabs(page).nth(1).locator(".dv-tab-close").click();
    await page.waitForFunction(() => !document.querySelector('[data-tab] > [data-testid="duplicate"]'));
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("keeps a single-url link working as it did", T, async () => {
    const page = await newPage(browser);
    await page.goto(`${server.url}/?url=/fixtures/${A}`);
    await settled(page, 1);
    await page.waitForFunction(() => new URLSearchParams(location.search).has("stream"));
    const params = new URLSearchParams(await page.evaluate(() => location.search));
    assert.deepEqual(params.getAll("url"), [`/fixtures/${A}`]);
    assert.equal(params.has("active"), false);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("opens several files picked at once: a non-archive named with the reason, a truncated archive named in its tab, the rest open", T, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/");
    await page.locator('[data-testid="file-input"]').setInputFiles([A, B, "i_not_sqlite.txt", "i_truncated_half.dendro"].map((f) => join(FIXTURES, f)));
    await settled(page, 3);
    assert.deepEqual(await tabList(page), [`${A}:open`, `${B}:open`, "i_truncated_half.dendro:error"]);
    assert.equal(await page.locator('[data-testid="tab"].dv-active .dv-tab-name').textContent(), A, "the first stays in front");
    const report = page.locator('[data-testid="many-report"]');
    assert.match(await report.locator("b").textContent(), /^4 files: opened 3 archives; 1 file not an archive this viewer reads:/);
    assert.deepEqual(await report.locator('[data-testid="refused"]').allTextContents(), ["i_not_sqlite.txt: not a dendro archive: not a SQLite database"]);
    await tabs(page).nth(2).click();
    assert.match(await shown(page).locator('[data-testid="error-message"]').textContent(), /i_truncated_half\.dendro/);
    await screenshot(page, "multi-picked.png");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("opens a picked folder's archives, sorted by content, and names the rest without rendering their names as markup", T, async () => {
    const folder = join(dir, "fleet");
    mkdirSync(join(folder, "deeper"), { recursive: true });
    copyFileSync(join(FIXTURES, A), join(folder, "host-a.data")); // an archive by content, whatever its name
    copyFileSync(join(FIXTURES, H), join(folder, "deeper", "host-h.dendro"));
    copyFileSync(join(FIXTURES, "i_foreign_app.sqlite"), join(folder, "other.sqlite"));
    writeFileSync(join(folder, "empty.dendro"), "");
    for (const name of HOSTILE) writeFileSync(join(folder, name.replace(/\//g, "_")), "not an archive at all, just words");
    const page = await newPage(browser);
    await page.goto(server.url + "/");
    await page.locator('[data-testid="folder-input"]').setInputFiles(folder);
    await settled(page, 2);
    const names = (await tabList(page)).sort();
    assert.deepEqual(names, ["fleet/deeper/host-h.dendro:open", "fleet/host-a.data:open"]);
    const report = page.locator('[data-testid="many-report"]');
    assert.match(await report.locator("b").textContent(), /^Folder fleet: opened 2 archives; 5 files not archives this viewer reads:$/);
    const refused = (await report.locator('[data-testid="refused"]').allTextContents()).sort();
    assert.equal(refused.length, 5);
    assert.ok(refused.some((r) => /^fleet\/empty\.dendro: not a dendro archive: .*empty/.test(r)), refused.join("\n"));
    assert.ok(refused.some((r) => /^fleet\/other\.sqlite: not a dendro archive: /.test(r)), refused.join("\n"));
    assert.ok(refused.some((r) => r.startsWith('fleet/<img src=x onerror="alert(1)">.dendro: not a dendro archive')), refused.join("\n"));
    // Nothing from a file name became an element, and the direction override is shown, not obeyed.
    assert.equal(await page.locator("img").count(), 0);
    assert.ok(refused.some((r) => r.includes("\\u{202E}")), "the bidi override is escaped: " + refused.join(" | "));
    await screenshot(page, "multi-folder.png");
    assert.deepEqual(page.problems, []);
    assert.deepEqual(await page.cspViolations(), []);
    await page.context().close();
  });

  it("says a folder of no archives is one, and opens nothing", T, async () => {
    const folder = join(dir, "notes");
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, "a.txt"), "words");
    copyFileSync(join(FIXTURES, "i_not_archive.sqlite"), join(folder, "b.db"));
    const page = await newPage(browser);
    await page.goto(server.url + "/");
    await page.locator('[data-testid="folder-input"]').setInputFiles(folder);
    const report = page.locator('[data-testid="many-report"]');
    await report.waitFor({ timeout: 20_000 });
    assert.equal(await report.locator("b").textContent(), "Folder notes: opened 0 archives; 2 files not archives this viewer reads:");
    const refused = (await report.locator('[data-testid="refused"]').allTextContents()).sort();
    assert.equal(refused[0], "notes/a.txt: not a dendro archive: not a SQLite database");
    assert.match(refused[1], /^notes\/b\.db: not a dendro archive: a SQLite database without dendro's header stamp/);
    assert.equal(await tabs(page).count(), 0);
    assert.equal(await page.locator('[data-testid="dropzone"]').count(), 1, "the welcome stays");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("walks a dropped folder of thousands of files without hanging, and says what it left out", T, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/");
    const b64 = (await readFile(join(FIXTURES, A))).toString("base64");
    // A synthetic drop cannot carry a folder: the items' entries are made
    // here, as Chromium's would be for a folder of 2,500 small files and an
    // archive, 3 folders deep.
    const t0 = Date.now();
    await page.evaluate(({ b64, n }) => {
      const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const file = (path, bytes) => ({ isFile: true, isDirectory: false, name: path.split("/").pop(), fullPath: path, file: (ok) => ok(new File([bytes], path.split("/").pop())) });
      const folder = (path, children) => ({
        isFile: false,
        isDirectory: true,
        name: path.split("/").pop(),
        fullPath: path,
        createReader: () => {
          let at = 0;
          return { readEntries: (ok) => setTimeout(() => ok(children.slice(at, (at += 100)))) };
        },
      });
      const notes = Array.from({ length: n }, (_, i) => file(`/logs/deep/er/note-${i}.txt`, `note ${i}`));
      const root = folder("/logs", [file("/logs/run.dendro", bin), folder("/logs/deep", [folder("/logs/deep/er", notes)])]);
      DataTransferItem.prototype.webkitGetAsEntry = () => root;
      const dt = new DataTransfer();
      dt.items.add(new File([""], "logs"));
      for (const type of ["dragenter", "dragover", "drop"]) document.body.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
    }, { b64, n: 2500 });
    const report = page.locator('[data-testid="many-report"]');
    // The archive found first opens while the rest are sorted.
    await page.locator('[data-testid="tab"][data-state="open"]').waitFor({ timeout: 60_000 });
    const firstOpen = Date.now() - t0;
    await report.waitFor({ timeout: 60_000 });
    await settled(page, 1);
    assert.deepEqual(await tabList(page), ["logs/run.dendro:open"]);
    assert.match(await report.locator("b").textContent(), /^Folder logs: opened 1 archive; 1,999 files not archives/);
    assert.equal(await report.locator('[data-testid="refused"]').count(), 40);
    const leftOut = await report.locator('[data-testid="left-out"]').allTextContents();
    assert.deepEqual(leftOut, ["1,959 more files not archives", "501 files or folders not looked at: at most 2000 files, 8 folders deep"]);
    console.log(`# a dropped folder of 2,501 files: its archive open after ${firstOpen} ms, all sorted after ${Date.now() - t0} ms`);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

describe("embedded viewers in one sync group", () => {
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

  it("move one cursor: the other viewer's plot and timeline follow in the same task, and a window chosen in one is the other's", T, async () => {
    const page = await newPage(browser, { viewport: { width: 1600, height: 1000 } });
    await page.goto(`${server.url}/examples/sync.html?src=/fixtures/${B}&src=/fixtures/${B}`);
    await page.locator('#status[data-state="ok"]').waitFor({ timeout: 30_000 });
    const left = page.locator("#left");
    const right = page.locator("#right");
    for (const v of [left, right]) await v.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
    // A mouse move over the left plot, and in the same task the right's cursor.
    const r = await page.evaluate(() => {
      const over = (id) => document.getElementById(id).shadowRoot.querySelector('[data-testid="plot"] .u-over');
      const cursorX = (id) => document.getElementById(id).shadowRoot.querySelector('[data-testid="plot"] .u-cursor-x').style.transform;
      const line = (id) => document.getElementById(id).shadowRoot.querySelector('[data-testid="timeline-cursor"]');
      const a = over("left").getBoundingClientRect();
      const b = over("right").getBoundingClientRect();
      const x = a.left + a.width * 0.3;
      over("left").dispatchEvent(new MouseEvent("mousemove", { clientX: x, clientY: a.top + a.height / 2, bubbles: true }));
      return { left: cursorX("left"), right: cursorX("right"), widths: [a.width, b.width], timeline: !line("right").hidden };
    });
    const px = (t) => Number(/translate\(([-\d.]+)px/.exec(t)?.[1]);
    assert.ok(px(r.left) > 0, r.left);
    assert.ok(Math.abs(px(r.right) / r.widths[1] - px(r.left) / r.widths[0]) < 0.01, `${r.left} vs ${r.right}`);
    assert.equal(r.timeline, true, "the right viewer's timeline shows the cursor");
    // Leaving the left plot hides the right's cursor.
    const gone = await page.evaluate(() => {
      const root = document.getElementById("left").shadowRoot;
      root.querySelector('[data-testid="plot"] .u-over').dispatchEvent(new MouseEvent("mouseleave", { bubbles: false }));
      return document.getElementById("right").shadowRoot.querySelector('[data-testid="plot"] .u-cursor-x').style.transform;
    });
    assert.ok(px(gone) < 0, gone);
    // A window dragged on the left plot is the right viewer's window.
    const label = (v) => v.locator('[data-testid="window"]').textContent();
    const before = await label(right);
    for (const v of [left, right]) await v.locator('[data-testid="plot"]').first().scrollIntoViewIfNeeded();
    const box = await left.locator('[data-testid="plot"] .u-over').first().boundingBox();
    await page.mouse.move(box.x + box.width * 0.2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    await page.waitForFunction((before) => {
      const w = (id) => document.getElementById(id).shadowRoot.querySelector('[data-testid="window"]').textContent;
      return w("left") !== before && w("left") === w("right");
    }, before);
    assert.notEqual(await label(right), before, "the right viewer's window moved");
    assert.equal(await label(left), await label(right));
    // The mouse over the left plot: the right shows the cursor too.
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2);
    await screenshot(page, "multi-sync-group.png");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("closing a tab gives its archive back to the engine", T, async () => {
    const page = await newPage(browser);
    await page.goto(`${server.url}/examples/sync.html?src=/fixtures/${A}&src=/fixtures/${B}`);
    await page.locator('#status[data-state="ok"]').waitFor({ timeout: 30_000 });
    const stats = () => page.evaluate(() => document.getElementById("left").viewer.engineStats());
    // One engine serves every viewer of the page.
    assert.equal((await stats()).archives, 2);
    await page.evaluate((u) => document.getElementById("left").open({ url: u }), `/fixtures/${H}`);
    assert.equal((await stats()).archives, 3);
    await page.locator("#left").locator('[data-testid="tab"]').nth(1).locator(".dv-tab-close").click();
    await page.waitForFunction(async () => (await document.getElementById("left").viewer.engineStats()).archives === 2);
    const left = await page.evaluate(() => document.getElementById("left").viewer.archives.list().map((a) => a.name));
    assert.deepEqual(left, [A]);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

/** Starts `dendro serve DIR` on a free port; resolves once it listens, with what it printed so far. */
function serveDir(dir) {
  const child = spawn(dendroBin(), ["serve", "--port", "0", "--root", DIST, dir], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (b) => {
      out += b;
      const m = /every archive listed at http:\/\/127\.0\.0\.1:(\d+)\//.exec(out);
      if (m) resolve({ child, port: Number(m[1]), out });
    });
    child.stderr.on("data", (b) => (out += b));
    child.on("exit", (code) => reject(new Error(`dendro serve exited (${code}): ${out}`)));
  });
}

describe("dendro serve DIR", () => {
  let browser;
  let dir;

  before(async () => {
    if (missing) return;
    browser = await launch();
    dir = mkdtempSync(join(tmpdir(), "dendro-serve-dir-"));
  });

  after(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("lists every archive of the folder on the page, names the other files, and opens them all at once", T, async () => {
    copyFileSync(join(FIXTURES, A), join(dir, "web-01.dendro"));
    copyFileSync(join(FIXTURES, H), join(dir, "web-02.dendro"));
    copyFileSync(join(FIXTURES, "i_truncated_half.dendro"), join(dir, "cut.dendro"));
    writeFileSync(join(dir, '<img src=x onerror="alert(1)">.txt'), "words");
    const served = await serveDir(dir);
    try {
      assert.match(served.out, /: 2 archive\(s\), 2 other file\(s\) skipped/);
      const page = await newPage(browser);
      await page.goto(`http://127.0.0.1:${served.port}/?list=/archives.json`);
      const listing = page.locator('[data-testid="listing"]');
      await listing.waitFor({ timeout: 20_000 });
      assert.match(await listing.locator("b").textContent(), /^2 archives served at \/archives\.json$/);
      assert.deepEqual(
        (await listing.locator('[data-testid="listed"] .dv-mono').allTextContents()),
        ["web-01.dendro", "web-02.dendro"],
      );
      const skipped = await listing.locator('[data-testid="skipped"]').allTextContents();
      assert.equal(skipped.length, 2);
      assert.ok(skipped.some((t) => t.startsWith("cut.dendro: ")), skipped.join("\n"));
      assert.ok(skipped.includes('<img src=x onerror="alert(1)">.txt: not a dendro archive: not a SQLite database'), skipped.join("\n"));
      assert.equal(await page.locator("img").count(), 0);
      await listing.locator('[data-testid="open-all"]').click();
      await settled(page, 2);
      assert.deepEqual(await tabList(page), ["web-01.dendro:open", "web-02.dendro:open"]);
      await page.waitForFunction(() => new URLSearchParams(location.search).getAll("url").length === 2);
      assert.deepEqual(new URLSearchParams(await page.evaluate(() => location.search)).getAll("url"), ["/archives/web-01.dendro", "/archives/web-02.dendro"]);
      await screenshot(page, "multi-serve-dir.png");
      assert.deepEqual(page.problems, []);
      await page.context().close();
    } finally {
      served.child.kill();
    }
  });
});

// The viewer page against the real engine and the shared fixtures: each
// sound archive shows what its manifest says, each refused file shows why,
// plots draw, the timeline zooms them, and the URL brings the view back.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  dropFile,
  inkOnCanvases,
  launch,
  missingPrerequisite,
  newPage,
  pixelsNear,
  refusalFixtures,
  schema5Fixtures,
  screenshot,
  serve,
  soundFixtures,
} from "./helpers.mjs";

const missing = missingPrerequisite();
// Schema 4 (0.3.4) and schema 5 (0.6.1): the manifests have one shape.
const sound = missing ? [] : [...(await soundFixtures()), ...(await schema5Fixtures())];
const refusals = missing ? [] : await refusalFixtures();
const T = { timeout: 60_000 };

const active = (page) => page.locator(".dv-tab-panel:not([hidden])");
const digits = (s) => (s ?? "").replace(/[^\d-]/g, "");

/** The overview, source cards and timeline agree with a fixture's manifest. */
async function expectManifest(page, m) {
  const panel = active(page);
  await panel.locator('[data-testid="overview"]').waitFor({ timeout: 20_000 });
  const field = (k) => panel.locator(`[data-field="${k}"]`);
  const o = m.overview;
  for (const [k, v] of [
    ["sources", o.sources],
    ["streams", o.streams],
    ["segments", o.segments],
    ["rows", o.rows],
    ["file_bytes", m.file_bytes],
    ["schema_version", m.sniff.version],
  ]) {
    assert.equal(await field(k).getAttribute("data-value"), String(v), `${m.stem}: overview ${k}`);
  }
  assert.equal(await field("name").locator(".dv-stat-value").innerText(), m.file, `${m.stem}: file name`);
  if (o.span) {
    assert.equal(await field("span").getAttribute("data-from"), String(o.span[0]), `${m.stem}: span start`);
    assert.equal(await field("span").getAttribute("data-to"), String(o.span[1]), `${m.stem}: span end`);
  } else {
    assert.equal(await field("span").getAttribute("data-from"), null);
  }
  const badge = panel.locator('[data-testid="verify"][data-state]');
  await badge.waitFor({ timeout: 20_000 });
  assert.equal(await badge.getAttribute("data-state"), m.verify.sound ? "sound" : "problems", `${m.stem}: verify badge`);

  for (const src of m.sources ?? []) {
    const card = panel.locator(`[data-testid="source"][data-source="${src.id}"]`);
    const chips = (await card.locator('[data-testid="label"]').allInnerTexts()).map((t) => t.replace(/\s+/g, "")).sort();
    const want = Object.entries(src.labels).map(([k, v]) => `${k}${v}`.replace(/\s+/g, "")).sort();
    assert.deepEqual(chips, want, `${m.stem}: labels of source ${src.id}`);
    assert.equal((await card.locator('[data-testid="uuid"]').innerText()).trim(), src.uuid ?? "none", `${m.stem}: uuid`);
    assert.equal(await card.locator('[data-testid="complete"]').getAttribute("data-complete"), String(src.complete), `${m.stem}: complete`);
    if (!src.complete) assert.match(await card.locator('[data-testid="complete"]').innerText(), /data after the last row may be missing/);
    assert.equal(await card.locator('[data-testid="anchor"]').getAttribute("data-value"), String(src.clock_anchor_wall_ns), `${m.stem}: clock anchor`);
    const [lo, hi] = src.span ?? [];
    if (lo !== undefined) {
      const dd = card.locator("dd[data-from]");
      assert.equal(await dd.getAttribute("data-from"), String(lo), `${m.stem}: source ${src.id} span start`);
      assert.equal(await dd.getAttribute("data-to"), String(hi), `${m.stem}: source ${src.id} span end`);
    }
    for (const st of src.streams) {
      const row = card.locator(`[data-testid="stream-row"][data-stream="${st.name}"] td`);
      const cells = await row.allInnerTexts();
      assert.deepEqual(
        cells.slice(1, 5).map(digits),
        [st.sealed_segment_count, st.sealed_rows, st.live_wal_rows, st.caller_rows_count].map(String),
        `${m.stem}: stream ${src.id}/${st.name} counts`,
      );
      const lane = panel.locator(`[data-testid="lane"][data-source="${src.id}"][data-stream="${st.name}"]`);
      assert.equal(await lane.count(), 1, `${m.stem}: one timeline lane for ${src.id}/${st.name}`);
      const segs = await lane.locator('[data-testid="segment"]').evaluateAll((els) => els.reduce((n, e) => n + Number(e.dataset.count ?? 1), 0));
      assert.equal(segs, st.sealed_segment_count, `${m.stem}: segment blocks in lane ${st.name}`);
      const live = lane.locator('[data-testid="live"]');
      if (st.live_wal_rows > 0) assert.equal(await live.getAttribute("data-rows"), String(st.live_wal_rows), `${m.stem}: live tail of ${st.name}`);
      else assert.equal(await live.count(), 0);
    }
    if (src.caller_rows && Object.keys(src.caller_rows).length > 0) {
      const names = new Set(src.streams.map((s) => s.name));
      const others = Object.entries(src.caller_rows)
        .filter(([n]) => !names.has(n))
        .map(([n, c]) => `${n}=${c.count}`)
        .sort();
      const shown = (
        await card.locator('[data-testid="caller-name"]').evaluateAll((els) =>
          els.map((e) => `${e.querySelector(".dv-caller-name")?.textContent}=${e.querySelector('[data-testid="caller-count"]')?.dataset.count}`),
        )
      ).sort();
      assert.deepEqual(shown, others, `${m.stem}: caller row names that are not streams, with their counts`);
    }
  }
  const lanes = await panel.locator('[data-testid="lane"]').count();
  assert.equal(lanes, o.streams, `${m.stem}: a lane per stream`);
}

describe("viewer page", () => {
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

  it("has what it needs to run (built page, engine, Chromium, fixtures)", () => {
    assert.equal(missing, null, missing ?? "");
  });

  for (const m of sound) {
    it(`shows ${m.file} as its manifest says (synthetic drop)`, { ...T, skip: !!missing }, async () => {
      const page = await newPage(browser);
      await page.goto(server.url + "/");
      await page.locator('[data-testid="dropzone"]').waitFor();
      await dropFile(page, m.path);
      await expectManifest(page, m);
      assert.deepEqual(page.problems, []);
      assert.deepEqual(await page.cspViolations(), []);
      await page.context().close();
    });

    it(`shows ${m.file} as its manifest says (file input)`, { ...T, skip: !!missing }, async () => {
      const page = await newPage(browser);
      await page.goto(server.url + "/");
      await page.locator('[data-testid="file-input"]').setInputFiles(m.path);
      await expectManifest(page, m);
      assert.deepEqual(page.problems, []);
      await page.context().close();
    });
  }

  it("shows a stream with only a live tail as a live tail with its row count", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/?url=/fixtures/b_multi_source.dendro");
    const lane = active(page).locator('[data-testid="lane"][data-source="1"][data-stream="net"]');
    await lane.waitFor({ timeout: 20_000 });
    assert.equal(await lane.locator('[data-testid="segment"]').count(), 0);
    const live = lane.locator('[data-testid="live"]');
    assert.equal(await live.getAttribute("data-rows"), "17");
    assert.equal(await live.getAttribute("aria-label"), "17 live rows · not readable without the writer's encoder");
    const label = lane.locator('[data-testid="live-label"]');
    assert.equal(await label.innerText(), "17 live rows · not readable without the writer's encoder");
    assert.ok(await label.evaluate((e) => e.scrollWidth <= e.clientWidth + 1), "the whole label is visible");
    assert.ok((await live.boundingBox()).width >= 8, "the live tail is drawn, not left out");
    await lane.locator(".dv-tl-name").click();
    const view = active(page).locator('[data-testid="stream-view"][data-source="1"][data-stream="net"]');
    await view.waitFor();
    assert.match(await view.locator('[data-testid="live-only"]').innerText(), /17 rows, all in the live tail/);
    assert.match(await view.locator('[data-testid="live-note"]').innerText(), /not readable without the writer's encoder/);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  for (const m of refusals) {
    it(`refuses ${m.file} with a message a person understands`, { ...T, skip: !!missing }, async () => {
      const page = await newPage(browser);
      await page.goto(server.url + "/");
      await dropFile(page, m.path);
      const panel = active(page);
      const err = panel.locator('[data-testid="error"]');
      const kind = m.open?.error?.kind;
      if (kind === "NotAnArchive" || kind === "UnsupportedSchema") {
        await err.waitFor({ timeout: 20_000 });
        assert.equal(await err.getAttribute("data-kind"), kind, `${m.file}: kind`);
        const title = await err.locator('[data-testid="error-title"]').innerText();
        const hint = await err.locator('[data-testid="error-hint"]').innerText();
        const message = await err.locator('[data-testid="error-message"]').innerText();
        assert.ok(message.trim().length > 10, `${m.file}: the engine's message is shown`);
        if (kind === "UnsupportedSchema") {
          assert.match(title, new RegExp(`schema version ${m.sniff.version}\\b`), `${m.file}: says which version`);
          assert.match(hint, new RegExp(`an unsupported schema version ${m.sniff.version}; this viewer reads versions 4 and 5`), `${m.file}: hint`);
        } else {
          assert.match(title, /is not a dendro archive/);
          // Worded from the engine's detail and application_id, not its message.
          const want = {
            i_foreign_app: /a SQLite database of another application \(id 0x12345678\)/,
            i_not_sqlite: /not a SQLite file/,
            i_empty_file: /The file is empty/,
            i_not_archive: /a SQLite database, but not one written by dendro \(its application id is 0\)/,
            i_truncated_header: /too short to be a SQLite database/,
          }[m.stem];
          assert.ok(want, `${m.file}: an expectation for every refusal fixture`);
          assert.match(hint, want, `${m.file}: says what it looks like instead`);
        }
      } else {
        // A damaged file: refused on open, or opened and then failing verify.
        const either = panel.locator('[data-testid="error"], [data-testid="verify"][data-state]');
        await either.first().waitFor({ timeout: 20_000 });
        if (await err.count()) {
          const k = await err.getAttribute("data-kind");
          assert.ok(["Corrupt", "NotAnArchive"].includes(k), `${m.file}: refused as ${k}`);
          assert.ok((await err.locator('[data-testid="error-message"]').innerText()).length > 10);
        } else {
          const state = await panel.locator('[data-testid="verify"]').getAttribute("data-state");
          assert.notEqual(state, "sound", `${m.file}: a truncated file must not verify as sound`);
        }
      }
      if (m.stem === "i_foreign_app") await screenshot(page, "error-foreign-app.png");
      assert.deepEqual(page.problems.filter((p) => !p.startsWith("console.error")), []);
      await page.context().close();
    });
  }

  it("reports a failed download in the page", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/?url=/no-such-archive.dendro");
    const err = active(page).locator('[data-testid="error"]');
    await err.waitFor({ timeout: 20_000 });
    assert.equal(await err.getAttribute("data-kind"), "LoadFailed");
    assert.match(await err.innerText(), /404/);
    await page.context().close();
  });

  it("shows download progress for ?url=", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/?url=/slow/fixtures/b_multi_source.dendro");
    const bar = page.locator('[data-testid="progress"]');
    await page.waitForFunction(() => {
      const p = document.querySelector('[data-testid="progress"]');
      return p && p.hasAttribute("value") && p.value > 0 && p.value < p.max;
    }, null, { timeout: 20_000 });
    assert.match(await page.locator(".dv-loading-what").innerText(), /Downloading… .* of 64\.0 KiB \(\d+%\)/);
    assert.equal(await bar.getAttribute("max"), "65536");
    // The server holds the second half until now.
    server.releaseSlow();
    await active(page).locator('[data-testid="overview"]').waitFor({ timeout: 30_000 });
    await page.context().close();
  });

  it("keeps several archives open in tabs", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/");
    const picks = sound.filter((m) => ["a_single_sealed", "b_multi_source", "h_negative_ts"].includes(m.stem));
    for (const m of picks) {
      await dropFile(page, m.path);
      await active(page).locator('[data-testid="overview"]').waitFor({ timeout: 20_000 });
    }
    const tabs = page.locator('[data-testid="tab"]');
    assert.equal(await tabs.count(), picks.length);
    await tabs.nth(0).click();
    await expectManifest(page, picks[0]);
    await tabs.nth(1).locator(".dv-tab-close").click();
    assert.equal(await tabs.count(), picks.length - 1);
    await page.context().close();
  });

  it("plots numeric columns (non-blank canvas) and the timeline zooms them", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/");
    const m = sound.find((x) => x.stem === "a_single_sealed");
    await dropFile(page, m.path);
    const panel = active(page);
    const plot = panel.locator('[data-testid="plot"][data-column="value"]');
    await plot.locator("canvas").waitFor({ timeout: 20_000 });
    const status = panel.locator('[data-testid="plot-status"]');
    await page.waitForFunction(() => /200 rows in this window/.test(document.querySelector('[data-testid="plot-status"]')?.textContent ?? ""));
    assert.match(await status.innerText(), /every row shown/);
    // uPlot has drawn that answer into the canvas.
    await panel.locator('[data-testid="plots"][data-state="drawn"]').waitFor();
    const ink = await inkOnCanvases(plot.locator("canvas"));
    assert.ok(ink[0] > 0.01, `the plot canvas has ink (${ink[0]})`);
    const blue = await pixelsNear(plot.locator("canvas"), [37, 99, 235]);
    assert.ok(blue[0] > 200, `the series line is drawn (${blue[0]} series-coloured pixels)`);

    // Drag across the timeline: the window narrows and the plot refetches.
    const before = await panel.locator('[data-testid="window"]').innerText();
    const lane = panel.locator('[data-testid="lane"]').first().locator(".dv-tl-track");
    await lane.scrollIntoViewIfNeeded();
    const box = await lane.boundingBox();
    await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    await page.waitForFunction(
      (b) => document.querySelector('[data-testid="window"]')?.textContent !== b,
      before,
    );
    await page.waitForFunction(() => {
      const t = document.querySelector('[data-testid="plot-status"]')?.textContent ?? "";
      const m = /^([\d,]+) rows in this window/.exec(t);
      return m && Number(m[1].replace(/,/g, "")) < 200 && Number(m[1].replace(/,/g, "")) > 0;
    });
    assert.match(page.url(), /from=\d+&to=\d+/);

    // Drag across the plot: the same, from the plot side.
    const over = plot.locator(".u-over");
    await over.scrollIntoViewIfNeeded();
    const ob = await over.boundingBox();
    await page.mouse.move(ob.x + ob.width * 0.2, ob.y + ob.height / 2);
    await page.mouse.down();
    await page.mouse.move(ob.x + ob.width * 0.6, ob.y + ob.height / 2, { steps: 5 });
    await page.mouse.up();
    await page.waitForFunction(() => {
      const t = document.querySelector('[data-testid="plot-status"]')?.textContent ?? "";
      const m = /^([\d,]+) rows in this window/.exec(t);
      return m && Number(m[1].replace(/,/g, "")) < 60;
    });
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("drops a zoom it no longer shows before the engine starts on it", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser);
    // What the page sends its engine worker, what the worker answers, and
    // the worker itself, so the test can hold it.
    await page.addInitScript(() => {
      const w = window;
      w.__sent = [];
      w.__answers = [];
      const post = Worker.prototype.postMessage;
      Worker.prototype.postMessage = function (m, t) {
        if (m && typeof m === "object") w.__sent.push({ op: m.op, method: m.method, id: m.id, ids: m.ids });
        return post.call(this, m, t);
      };
      const Original = window.Worker;
      window.Worker = class extends Original {
        constructor(...args) {
          super(...args);
          if (String(args[0]).endsWith("/worker.js")) w.__engine = this;
          this.addEventListener("message", (e) => {
            const d = e.data;
            if (d && typeof d === "object" && "id" in d) w.__answers.push({ id: d.id, ok: d.ok, kind: d.error?.kind });
          });
        }
      };
    });
    await page.goto(server.url + "/");
    const m = sound.find((x) => x.stem === "a_single_sealed");
    await dropFile(page, m.path);
    const panel = active(page);
    const plot = panel.locator('[data-testid="plot"][data-column="value"]');
    await plot.locator("canvas").waitFor({ timeout: 20_000 });
    await page.waitForFunction(() => /^200 rows in this window/.test(document.querySelector('[data-testid="plot-status"]')?.textContent ?? ""));
    await panel.locator('[data-testid="verify"][data-state]').waitFor({ timeout: 20_000 });
    const readRanges = () => page.evaluate(() => window.__sent.filter((x) => x.op === "call" && x.method === "readRange").map((x) => x.id));
    const first = await readRanges();

    // Hold the worker as a long decode would (the test-only "hold", sent
    // with id 0, which no page request uses): what the page asks next
    // queues behind it. Zoom twice meanwhile.
    await page.evaluate(() => window.__engine.postMessage({ op: "hold", id: 0 }));
    const lane = panel.locator('[data-testid="lane"]').first().locator(".dv-tl-track");
    await lane.scrollIntoViewIfNeeded();
    const box = await lane.boundingBox();
    await page.mouse.move(box.x + box.width * 0.2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.7, box.y + box.height / 2, { steps: 4 });
    await page.mouse.up();
    // The first zoom's window has gone to the worker (and waits there).
    await page.waitForFunction((n) => window.__sent.filter((x) => x.op === "call" && x.method === "readRange").length > n, first.length);
    const [zoom1] = (await readRanges()).slice(first.length);
    const over = plot.locator(".u-over");
    const ob = await over.boundingBox();
    await page.mouse.move(ob.x + ob.width * 0.3, ob.y + ob.height / 2);
    await page.mouse.down();
    await page.mouse.move(ob.x + ob.width * 0.5, ob.y + ob.height / 2, { steps: 4 });
    await page.mouse.up();
    // The second zoom goes out, and the page withdraws the first.
    await page.waitForFunction((n) => window.__sent.filter((x) => x.op === "call" && x.method === "readRange").length > n + 1, first.length);
    await page.waitForFunction((id) => window.__sent.some((x) => x.op === "cancel" && x.ids.includes(id)), zoom1);
    const zoom2 = (await readRanges()).at(-1);
    assert.equal(await page.evaluate((id) => window.__answers.some((a) => a.id === id), zoom1), false, "nothing ran while the worker was held");
    await page.evaluate(() => window.__engine.postMessage({ op: "release", id: 0 }));

    await page.waitForFunction(() => {
      const t = document.querySelector('[data-testid="plot-status"]')?.textContent ?? "";
      const n = /^([\d,]+) rows in this window/.exec(t);
      return n && Number(n[1].replace(/,/g, "")) < 60;
    });
    await panel.locator('[data-testid="plots"][data-state="drawn"]').waitFor();
    const answers = await page.evaluate(() => window.__answers);
    assert.equal(answers.find((a) => a.id === 0)?.ok, true, "the hold answered once released");
    assert.equal(answers.find((a) => a.id === zoom1)?.kind, "Cancelled", "the engine never ran the first zoom");
    assert.equal(answers.find((a) => a.id === zoom2)?.ok, true, "the zoom on screen was read");
    // Answers come in order: the hold's, then the withdrawn zoom's, then the kept one's.
    const order = answers.map((a) => a.id).filter((id) => [0, zoom1, zoom2].includes(id));
    assert.deepEqual(order, [0, zoom1, zoom2]);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("counts the caller rows under each name that is no stream, __proto__ included", { ...T, skip: !!missing }, async () => {
    // g_caller_index plus three rows under a name that is a JavaScript
    // object's prototype key, and a label by that name.
    const dir = mkdtempSync(join(tmpdir(), "dendro-callers-"));
    const path = join(dir, "callers.dendro");
    execFileSync("python3", [
      "-c",
      [
        "import shutil, sqlite3, sys",
        "shutil.copyfile(sys.argv[1], sys.argv[2])",
        "db = sqlite3.connect(sys.argv[2])",
        "db.executemany('INSERT INTO caller_rows(source_id, stream, ts, blob) VALUES (1, ?, ?, ?)', [('__proto__', t, b'x') for t in (1, 2, 3)])",
        "db.execute(\"UPDATE sources SET labels = json_set(labels, '$.__proto__', 'a label') WHERE id = 1\")",
        "db.commit()",
      ].join("\n"),
      sound.find((x) => x.stem === "g_caller_index").path,
      path,
    ]);
    const page = await newPage(browser);
    await page.goto(server.url + "/");
    await dropFile(page, path);
    const card = active(page).locator('[data-testid="source"][data-source="1"]');
    await card.waitFor({ timeout: 20_000 });
    const chips = await card.locator('[data-testid="caller-name"]').evaluateAll((els) =>
      els.map((e) => [e.querySelector(".dv-caller-name")?.textContent, e.querySelector('[data-testid="caller-count"]')?.textContent]),
    );
    assert.deepEqual(chips.sort(), [
      ["__proto__", "· 3 rows"],
      ["registry", "· 2 rows"],
    ]);
    const labels = (await card.locator('[data-testid="label"]').allInnerTexts()).map((t) => t.replace(/\s+/g, ""));
    assert.ok(labels.includes("__proto__alabel"), `the label named __proto__ is shown: ${labels.join(" | ")}`);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("shows a segment's rows in a virtualized table and caller rows with previews", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/?url=/fixtures/g_caller_index.dendro&source=1&stream=a");
    const panel = active(page);
    const table = panel.locator('[data-testid="rows"] [data-testid="vtable"]');
    await table.waitFor({ timeout: 20_000 });
    assert.equal(await table.getAttribute("data-rows"), "12");
    const header = await table.locator(".dv-vt-head").innerText();
    assert.match(header, /ts/);
    assert.match(header, /value/);
    assert.match(header, /label/);
    assert.match(await panel.locator(".dv-caller-index").innerText(), /labels:/);
    const callers = panel.locator('[data-testid="caller-rows"] [data-testid="vtable"]');
    await callers.waitFor();
    assert.equal(await callers.getAttribute("data-rows"), "5");
    const text = await callers.innerText();
    assert.match(text, /hex/i);
    assert.match(text, /utf-8/i);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("round-trips the view through the URL", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/?url=/fixtures/b_multi_source.dendro");
    const panel = active(page);
    const lane = panel.locator('[data-testid="lane"][data-source="2"][data-stream="disk"]');
    await lane.waitFor({ timeout: 20_000 });
    await lane.locator(".dv-tl-name").click();
    await panel.locator('[data-testid="stream-view"][data-stream="disk"] [data-testid="plot"] canvas').waitFor();
    await lane.scrollIntoViewIfNeeded();
    const box = await lane.locator(".dv-tl-track").boundingBox();
    await page.mouse.move(box.x + box.width * 0.25, box.y + 5);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.7, box.y + 5, { steps: 4 });
    await page.mouse.up();
    await page.locator('[data-tz="local"]').click();
    await page.waitForFunction(() => /tz=local/.test(location.search) && /from=/.test(location.search));
    const url = page.url();
    const q = new URL(url).searchParams;
    assert.equal(q.get("url"), "/fixtures/b_multi_source.dendro");
    assert.equal(q.get("source"), "2");
    assert.equal(q.get("stream"), "disk");
    assert.deepEqual(q.getAll("col"), ["value"]);
    const windowText = await panel.locator('[data-testid="window"]').innerText();

    const again = await newPage(browser);
    await again.goto(url);
    const p2 = active(again);
    const view = p2.locator('[data-testid="stream-view"][data-source="2"][data-stream="disk"]');
    await view.waitFor({ timeout: 20_000 });
    assert.equal(await p2.locator('[data-testid="window"]').innerText(), windowText);
    assert.ok(await again.locator('[data-tz="local"]').evaluate((b) => b.classList.contains("dv-on")));
    assert.ok(await view.locator('input[data-column="value"]').isChecked());
    assert.ok(await p2.locator('[data-testid="lane"][data-source="2"][data-stream="disk"]').evaluate((e) => e.classList.contains("dv-selected")));
    await again.waitForFunction(() => document.location.search.includes("stream=disk"));
    assert.equal(new URL(again.url()).searchParams.get("from"), q.get("from"));
    assert.equal(new URL(again.url()).searchParams.get("to"), q.get("to"));
    assert.deepEqual(again.problems, []);
    await again.context().close();
    await page.context().close();
  });

  it("saves screenshots of the overview, the timeline and a plot", { ...T, skip: !!missing }, async () => {
    const page = await newPage(browser, { viewport: { width: 1440, height: 1100 } });
    await page.goto(server.url + "/?url=/fixtures/b_multi_source.dendro&source=2&stream=disk");
    const panel = active(page);
    await panel.locator('[data-testid="verify"][data-state]').waitFor({ timeout: 20_000 });
    await panel.locator('[data-testid="plot"] canvas').first().waitFor();
    await page.waitForFunction(() => /rows in this window/.test(document.querySelector('[data-testid="plot-status"]')?.textContent ?? ""));
    await panel.locator('[data-testid="plots"][data-state="drawn"]').waitFor();
    await screenshot(page, "page.png");
    await screenshot(page, "full-page.png", null, { fullPage: true });
    // Element shots scroll the page; they come last so the sticky bar stays on top above.
    await screenshot(page, "overview.png", panel.locator('[data-testid="overview"]'));
    await screenshot(page, "sources.png", panel.locator('[data-testid="sources"]'));
    await screenshot(page, "timeline.png", panel.locator('[data-testid="timeline"]'));
    await screenshot(page, "stream.png", panel.locator('[data-testid="stream-view"]'));
    await screenshot(page, "plot.png", panel.locator('[data-testid="plot"]').first());
    await page.context().close();
  });
});

// The compare view (issue 31): one stream across every source of several
// archives on one wall-clock axis, small multiples past six sources, the
// fleet strip, the time-shift comparison, and what cannot be compared said
// in words.
//
// Every drawn value is checked against one computed here from what
// `dendro cat` prints and what the archive's SQLite catalog holds (read
// with python3's sqlite3): the wall-clock offset of each source is the
// median of its clock_offsets rows; the values are the rows themselves
// when every row is drawn; the strip's peak is the window's largest row;
// the time shift's A − B is worked out bucket by bucket as
// src/read/shift.rs defines it, from the rows.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { cat, dendro, ratesOf, tsOf } from "./cli.mjs";
import { launch, missingPrerequisite, newPage, parseJsonExact, screenshot, serve } from "./helpers.mjs";

const T = { timeout: 180_000 };
const missing = missingPrerequisite();
const COLUMN = "used_bytes";
const STREAM = "memory";
/** What the second archive's first source's clock says on top of the first's: 7 s. */
const SKEW = 7_000_000_000n;

function sql(file, query) {
  const out = execFileSync("python3", ["-c", "import sqlite3,sys,json; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2]).fetchall(); c.commit(); print(json.dumps([[str(x) for x in row] for row in r]))", file, query], {
    encoding: "utf8",
  });
  return JSON.parse(out);
}

/** The lower middle of a source's clock observations: the offset the engine draws it by. */
function medianOffset(file, source) {
  const all = sql(file, `SELECT offset_ns FROM clock_offsets WHERE source_id = ${source}`).map((r) => BigInt(r[0]));
  all.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return all.length === 0 ? 0n : all[Math.floor((all.length - 1) / 2)];
}

/** Bucket bounds as src/read/envelope.rs cuts [lo, hi] into n. */
function bounds(lo, hi, n) {
  const width = hi - lo + 1n;
  const N = BigInt(n);
  const out = [];
  for (let k = 0n; k <= N; k++) out.push(lo + (k * width + N - 1n) / N);
  return out;
}

function bucketOf(b, t) {
  let k = 0;
  while (k < b.length - 2 && t >= b[k + 1]) k++;
  return k;
}

async function drawnCompare(page) {
  return page.locator('[data-testid="compare-view"]').evaluate((el) => {
    const d = el.dendroCompare;
    if (!d) return null;
    const out = { layout: d.layout, from: String(d.from), to: String(d.to), columns: {} };
    for (const [c, list] of Object.entries(d.columns))
      out.columns[c] = list.map((s) => ({ key: s.key, label: s.label, ts: Array.from(s.ts, String), offset: String(s.offset), min: Array.from(s.min), max: Array.from(s.max), as: s.as, reduced: s.reduced }));
    return out;
  });
}

async function waitDrawn(page, after = 0) {
  await page.waitForFunction(
    (n) => {
      const el = document.querySelector('[data-testid="compare-view"]');
      return el && (el.dataset.state === "drawn" || el.dataset.state === "empty" || el.dataset.state === "failed") && Number(el.dataset.drawn ?? 0) > n;
    },
    after,
    { timeout: 60_000 },
  );
  const state = await page.locator('[data-testid="compare-view"]').getAttribute("data-state");
  if (state === "failed") throw new Error(await page.locator('[data-testid="compare-status"]').innerText());
}

describe("compare across sources, archives and time", () => {
  let server;
  let browser;
  let dir;
  const files = {};
  let span;

  before(async () => {
    assert.equal(missing, null, missing ?? "");
    dir = mkdtempSync(join(tmpdir(), "dendro-compare-"));
    for (const name of ["a", "b", "e"]) {
      files[name] = join(dir, `${name}.dendro`);
      dendro("demo", "--minutes", "12", files[name]);
    }
    // b's first host: a wall clock 7 s ahead of its timestamps.
    sql(files.b, `UPDATE clock_offsets SET offset_ns = offset_ns + ${SKEW} WHERE source_id = 1`);
    // b's second host: its wall clock set 5 s forward after its first observation;
    // its third: no observation at all.
    sql(files.b, `UPDATE clock_offsets SET offset_ns = offset_ns + 5000000000 WHERE source_id = 2 AND ts > (SELECT MIN(ts) FROM clock_offsets WHERE source_id = 2)`);
    sql(files.b, `DELETE FROM clock_offsets WHERE source_id = 3`);
    // c: a's very sources again (equal uuids).
    files.c = join(dir, "c.dendro");
    copyFileSync(files.a, files.c);
    files.h = join(dir, "hostile.dendro");
    dendro("demo", "--minutes", "3", "--hostile", files.h);
    files.fleet = join(dir, "fleet.dendro");
    dendro("demo", "--minutes", "4", "--hosts", "32", files.fleet);
    const mounts = {};
    for (const [k, f] of Object.entries(files)) mounts[`/${k}.dendro`] = f;
    server = await serve(mounts);
    browser = await launch();
    const desc = parseJsonExact(dendro("describe", "--json", files.a));
    const st = desc.sources[0].streams.find((s) => s.name === STREAM);
    const first = st.segments[0].first_ts;
    span = [BigInt(first), BigInt(st.segments[st.segments.length - 1].last_ts)];
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function url(names, params) {
    const q = new URLSearchParams();
    for (const n of names) q.append("url", `/${n}.dendro`);
    for (const [k, v] of Object.entries(params)) for (const x of [v].flat()) q.append(k, String(x));
    return `${server.url}/?${q}`;
  }

  it("overlays two archives by their clocks, each value the row dendro cat prints", T, async () => {
    const page = await newPage(browser);
    // Three minutes in the middle: every row drawn (fewer rows than pixels).
    const from = span[0] + 120_000_000_000n;
    const to = from + 180_000_000_000n;
    await page.goto(url(["a", "b"], { compare: STREAM, col: COLUMN, from, to }));
    await waitDrawn(page);
    const d = await drawnCompare(page);
    assert.equal(d.layout, "overlay");
    const series = d.columns[COLUMN];
    assert.equal(series.length, 6, "three hosts in each of two archives");
    const labels = await page.locator('[data-testid="legend-label"]').allInnerTexts();
    assert.ok(labels.some((l) => l.includes("a.dendro") && l.includes("host=web-01")), labels.join(" | "));
    assert.ok(labels.some((l) => l.includes("b.dendro") && l.includes("host=db-01")), labels.join(" | "));
    let compared = 0;
    for (const s of series) {
      const [archive, source] = s.label.startsWith("a.dendro") ? ["a", Number(s.key.split("/")[1])] : ["b", Number(s.key.split("/")[1])];
      const off = medianOffset(files[archive], source);
      assert.equal(BigInt(s.offset), off, `${s.label}: placed by the median of its clock offsets`);
      const rows = cat(files[archive], source, STREAM).filter((r) => tsOf(r) >= BigInt(d.from) - off && tsOf(r) <= BigInt(d.to) - off);
      assert.equal(s.reduced, false, "every row drawn");
      assert.deepEqual(s.ts, rows.map((r) => String(tsOf(r))), `${s.label}: its rows in the window`);
      rows.forEach((r, i) => assert.equal(s.max[i], Number(r[COLUMN]), `${s.label} row ${i}`));
      compared += rows.length;
    }
    assert.ok(compared > 900, `${compared} values compared`);
    // b's first host is placed 7 s later than a's by its clock.
    const a1 = series.find((s) => s.label.startsWith("a.dendro") && s.label.includes("web-01"));
    const b1 = series.find((s) => s.label.startsWith("b.dendro") && s.label.includes("web-01"));
    assert.equal(BigInt(b1.offset) - BigInt(a1.offset) - (medianOffset(files.b, 1) - medianOffset(files.a, 1)), 0n);
    assert.ok(BigInt(b1.offset) - BigInt(a1.offset) >= SKEW - 10_000n);
    // The doubts, in words, next to the legend entries they concern (and no others).
    const doubts = await page.locator('[data-testid="legend-entry"]').evaluateAll((els) =>
      els.map((e) => ({ label: e.querySelector('[data-testid="legend-label"]').textContent, doubts: [...e.querySelectorAll('[data-testid="alignment-doubt"]')].map((d) => [d.dataset.kind, d.textContent]) })),
    );
    const of = (archive, host) => doubts.find((d) => d.label.startsWith(archive) && d.label.includes(host)).doubts;
    assert.deepEqual(of("a.dendro", "web-01"), []);
    assert.deepEqual(of("b.dendro", "web-01"), [], "a steady skew is aligned, not doubted");
    assert.deepEqual(of("b.dendro", "web-02").map((d) => d[0]), ["clock_steps"]);
    assert.match(of("b.dendro", "web-02")[0][1], /its wall clock stepped 1 time \(largest step 5 s\)/);
    assert.deepEqual(of("b.dendro", "db-01").map((d) => d[0]), ["no_wall_offset"]);
    assert.match(of("b.dendro", "db-01")[0][1], /no clock offsets recorded/);
    // The URL keeps the comparison.
    await page.waitForFunction(() => new URLSearchParams(location.search).get("compare") === "memory");
    await screenshot(page, "compare-two-archives.png", page.locator('[data-testid="compare-view"]'));
    // Show/hide: hiding one leaves five drawn.
    const drawn = Number(await page.locator('[data-testid="compare-view"]').getAttribute("data-drawn"));
    await page.locator('[data-testid="series-toggle"]').first().uncheck();
    await waitDrawn(page, drawn);
    assert.equal((await drawnCompare(page)).columns[COLUMN].length, 5);
    // A manual shift moves one source by exactly that much.
    const again = Number(await page.locator('[data-testid="compare-view"]').getAttribute("data-drawn"));
    // (Behind a small button in the legend where the alignment has no doubt.)
    if (!(await page.locator('[data-testid="shift-input"]').nth(1).isVisible())) await page.locator('[data-testid="shift-toggle"]').nth(1).click();
    await page.locator('[data-testid="shift-input"]').nth(1).fill("-2.5");
    await page.locator('[data-testid="shift-input"]').nth(1).dispatchEvent("change");
    await waitDrawn(page, again);
    const moved = (await drawnCompare(page)).columns[COLUMN].find((s) => s.key === series[1].key);
    assert.equal(BigInt(moved.offset), BigInt(series[1].offset) - 2_500_000_000n);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("draws a counter as the rates the rows give, resets included, and its running total on request, as the stream view does", T, async () => {
    const page = await newPage(browser);
    const counter = "page_faults";
    // Around the demo's agent restart on its second host, where every counter starts from zero again.
    const [[restart]] = sql(files.a, `SELECT json_extract(value, '$.timestamp') FROM sources AS s, json_each(json_extract(s.metadata, '$.events'), '$.events') WHERE s.id = 2 AND json_extract(value, '$.kind') = 'producer_epoch'`);
    const from = BigInt(restart) - 90_000_000_000n;
    const to = BigInt(restart) + 90_000_000_000n;
    await page.goto(url(["a"], { compare: STREAM, col: counter, from, to }));
    await waitDrawn(page);
    const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
    const check = (list, as) => {
      let compared = 0;
      for (const s of list) {
        assert.equal(s.as, as);
        assert.equal(s.reduced, false, "every row drawn");
        const rows = cat(files.a, Number(s.key.split("/")[1]), STREAM);
        const rates = ratesOf(rows, counter);
        const at = new Map(rows.map((r, i) => [String(tsOf(r)), i]));
        s.ts.forEach((t, k) => {
          const i = at.get(t);
          assert.ok(i !== undefined, `a drawn point at a row's ts (${t})`);
          const want = as === "rate" ? rates[i] : Number(rows[i][counter]);
          // The window's first row has a rate only if the engine read the row before it.
          if (want === null || (as === "rate" && k === 0 && Number.isNaN(s.max[k]))) return;
          assert.ok(close(s.max[k], want) && close(s.min[k], want), `${s.label} row ${i}: ${s.max[k]} vs ${want}`);
          compared++;
        });
      }
      return compared;
    };
    const drawn = await drawnCompare(page);
    assert.ok(check(drawn.columns[counter], "rate") > 300, "rates compared");
    const fell = (await drawnCompare(page)).columns[counter].some((s) => {
      const rows = cat(files.a, Number(s.key.split("/")[1]), STREAM).filter((r) => s.ts.includes(String(tsOf(r))));
      return rows.some((r, i) => i > 0 && Number(r[counter]) < Number(rows[i - 1][counter]));
    });
    assert.ok(fell, "a reset lies in the window");
    assert.equal(await page.locator('[data-testid="compare-view"] [data-testid="rate-toggle"]').getAttribute("data-mode"), "rate");
    const n = Number(await page.locator('[data-testid="compare-view"]').getAttribute("data-drawn"));
    await page.locator('[data-testid="compare-view"] [data-testid="rate-toggle"]').click();
    await waitDrawn(page, n);
    assert.ok(check((await drawnCompare(page)).columns[counter], "raw") > 300, "running totals compared");
    assert.equal(await page.locator('[data-testid="compare-view"] [data-testid="rate-toggle"]').getAttribute("data-mode"), "raw");
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("draws more than six sources as rows on one y-scale, and a source opened twice once", T, async () => {
    const page = await newPage(browser);
    await page.goto(url(["a", "b", "e", "c"], { compare: STREAM, col: COLUMN }));
    await waitDrawn(page);
    const d = await drawnCompare(page);
    assert.equal(d.layout, "rows");
    assert.equal(d.columns[COLUMN].length, 9, "c's three sources are a's: left out");
    assert.equal(await page.locator('[data-testid="compare-row"]').count(), 9);
    const notes = (await page.locator('[data-testid="compare-notes"]').innerText()).split("\n");
    // Whichever of a and c opened first counts; the other's sources are named as copies.
    const copies = notes.filter((n) => /^Source \d+ of (a|c)\.dendro is the same source as source \d+ of (a|c)\.dendro \(equal uuid [0-9a-f-]{36}\): drawn once\.$/.test(n));
    assert.equal(copies.length, 3, notes.join(" | "));
    assert.ok(copies.every((n) => n.includes("a.dendro") && n.includes("c.dendro")), copies.join(" | "));
    await screenshot(page, "compare-small-multiples.png", page.locator('[data-testid="compare-view"]'));
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("says in words when there is nothing to compare, and keeps hostile labels inert", T, async () => {
    const page = await newPage(browser);
    await page.goto(url(["a", "h"], { compare: "no-such-stream" }));
    await waitDrawn(page);
    assert.match(await page.locator('[data-testid="compare-notes"]').innerText(), /No open archive has a stream named “no-such-stream”/);
    const p2 = await newPage(browser);
    await p2.goto(url(["h", "a"], { compare: "cpu" }));
    await waitDrawn(p2);
    const legend = p2.locator('[data-testid="compare-legend"]');
    assert.equal(await legend.locator("img, script, iframe, a, b, i").count(), 0, "no markup from a label");
    assert.match(await legend.innerText(), /[<>]/, "the hostile labels are shown as text");
    assert.deepEqual(await p2.cspViolations(), []);
    assert.deepEqual(p2.problems, []);
    await page.close();
    await p2.close();
  });

  it("is entered from the stream view", T, async () => {
    const page = await newPage(browser);
    await page.goto(url(["a"], { source: 1, stream: STREAM }));
    const shown = page.locator(".dv-tab-panel:not([hidden])");
    await shown.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
    await shown.locator('[data-testid="compare-button"]').click();
    await waitDrawn(page);
    assert.equal(await page.locator('[data-testid="compare-view"]').getAttribute("data-stream"), STREAM);
    assert.equal((await page.locator('[data-testid="legend-entry"]').count()) >= 3, true);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("draws a fleet strip of 32 hosts whose peaks are the rows' maxima, and opens a host's stream from its row", T, async () => {
    const page = await newPage(browser, { viewport: { width: 1280, height: 800 } });
    await page.goto(url(["fleet"], { compare: STREAM, col: COLUMN }));
    await waitDrawn(page);
    const drawn = Number(await page.locator('[data-testid="compare-view"]').getAttribute("data-drawn"));
    // Every state the view passes through, and what the strip said meanwhile.
    await page.evaluate(() => {
      const view = document.querySelector('[data-testid="compare-view"]');
      window.__states = [];
      new MutationObserver(() => {
        const badge = view.querySelector('[data-testid="strip-preview"]');
        window.__states.push(`${view.dataset.state}|${badge && !badge.hidden ? badge.textContent : ""}`);
      }).observe(view, { attributes: true, subtree: true, childList: true });
    });
    await page.locator('[data-mode="strip"]').click();
    await waitDrawn(page, drawn);
    assert.equal(await page.locator('[data-testid="strip-row"]').count(), 32);
    const states = await page.evaluate(() => window.__states);
    assert.ok(
      states.some((s) => s.startsWith("preview|Preview from footer statistics")),
      `drawn first from footer statistics, and said so: ${[...new Set(states)].slice(0, 8).join("; ")}`,
    );
    assert.equal(await page.locator('[data-testid="strip-row"][data-exact="true"]').count(), 32, "every row exact once drawn");
    assert.equal(await page.locator('[data-testid="strip-preview"]').isHidden(), true, "the preview's label gone once exact");
    // At 1280×800, each row's name beside its colours, all 32 rows within one screen, nothing past the right edge.
    const boxes = await page.locator('[data-testid="strip-row"]').evaluateAll((rows) =>
      rows.map((r) => {
        const n = r.querySelector(".dv-strip-name").getBoundingClientRect();
        const c = r.querySelector("canvas").getBoundingClientRect();
        return { name: (n.top + n.bottom) / 2, colours: (c.top + c.bottom) / 2, top: c.top, bottom: c.bottom, right: c.right, width: c.width };
      }),
    );
    for (const b of boxes) {
      assert.ok(Math.abs(b.name - b.colours) <= 1, `a row's name and colours on one line (${b.name} vs ${b.colours})`);
      assert.ok(b.right <= 1280 && b.width > 600, `a row's colours within the screen (right edge ${b.right}, ${b.width} px wide)`);
    }
    assert.ok(boxes[boxes.length - 1].bottom - boxes[0].top <= 600, "32 rows in less than a screen");
    await page.locator('[data-testid="strip-sort"]').selectOption("peak");
    const rows = await page.locator('[data-testid="fleet-strip"]').evaluate((el) =>
      el.dendroStrip.map((r) => ({ key: r.key, peak: r.peak, offset: String(r.offset) })),
    );
    const view = await drawnWindow(page);
    for (const r of rows.slice(0, 8)) {
      const source = Number(r.key.split("/")[1]);
      const off = BigInt(r.offset);
      const want = Math.max(...cat(files.fleet, source, STREAM).filter((x) => tsOf(x) >= view.from - off && tsOf(x) <= view.to - off).map((x) => Number(x[COLUMN])));
      assert.equal(r.peak, want, `source ${source}: the strip's peak is its largest row`);
    }
    for (let i = 1; i < rows.length; i++) assert.ok(rows[i - 1].peak >= rows[i].peak, "sorted by peak");
    await screenshot(page, "compare-fleet-strip.png", page.locator('[data-testid="compare-view"]'));
    const first = Number(rows[0].key.split("/")[1]);
    await page.locator('[data-testid="strip-row"]').first().click();
    await page.waitForFunction((s) => document.querySelector('[data-testid="stream-view"]')?.dataset.source === String(s), first);
    assert.equal(await page.locator('[data-testid="stream-view"]').getAttribute("data-stream"), STREAM);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("draws window B on window A's axis and A − B exactly as the rows give it, with gaps where either has none", T, async () => {
    const page = await newPage(browser, { viewport: { width: 1600, height: 1000 } });
    const shift = 300_000_000_000n;
    // B starts three minutes before the first row: gaps there.
    const from = span[0] + 120_000_000_000n;
    const to = from + 240_000_000_000n;
    await page.goto(url(["a"], { compare: STREAM, col: COLUMN, from, to, shift: "300s" }));
    await waitDrawn(page);
    assert.equal(await page.locator('[data-testid="compare-view"]').getAttribute("data-mode"), "shift");
    const d = await drawnShift(page);
    assert.equal(BigInt(d.shift), shift);
    const { both, gaps } = checkDifference(d, files.a);
    assert.ok(both > 40 && gaps > 100, `${both} differences, ${gaps} gaps`);
    await screenshot(page, "compare-time-shift.png", page.locator('[data-testid="compare-view"]'));
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("compares the span after an event on the timeline with as long a span before it", T, async () => {
    const page = await newPage(browser, { viewport: { width: 1600, height: 1000 } });
    await page.goto(url(["a"], { compare: STREAM, col: COLUMN, shift: "300s" }));
    await waitDrawn(page);
    const drawn = Number(await page.locator('[data-testid="compare-view"]').getAttribute("data-drawn"));
    const before = await drawnShift(page);
    const source = Number(before.member.split("/")[1]);
    // The source's events, as the archive's catalog holds them.
    // (Its reserved key `events` holds JSON text: {"events": [{timestamp, …}]}, ts past 2^53.)
    const ev = `json_extract(metadata, '$.events')`;
    const [[count, earliest]] = sql(files.a, `SELECT json_array_length(${ev}, '$.events'), (SELECT MIN(json_extract(value, '$.timestamp')) FROM json_each(${ev}, '$.events')) FROM sources WHERE id = ${source}`);
    assert.ok(Number(count) > 0, "the demo's source has an event");
    const at = BigInt(earliest);
    const options = await page.locator('[data-testid="shift-event"] option').allInnerTexts();
    assert.equal(options.length, Number(count) + 1, "one choice per event, and none");
    await page.locator('[data-testid="shift-event"]').selectOption("0");
    await waitDrawn(page, drawn);
    const d = await drawnShift(page);
    const off = BigInt(d.offset);
    const rows = cat(files.a, source, STREAM).map((r) => tsOf(r));
    const [first, last] = [rows.reduce((a, b) => (b < a ? b : a)), rows.reduce((a, b) => (b > a ? b : a))];
    // The window's length, or less where the rows end sooner on either side.
    let want = BigInt(before.to) - BigInt(before.from);
    if (last - at < want) want = last - at;
    if (at - first < want) want = at - first;
    assert.equal(BigInt(d.from) - off, at, "A starts at the event");
    assert.equal(BigInt(d.to) - BigInt(d.from), want, "A is the span after it");
    assert.equal(BigInt(d.shift), want, "B is as long a span before it");
    const { both } = checkDifference(d, files.a);
    assert.ok(both > 10, `${both} differences`);
    assert.equal(await page.locator('[data-testid="shift-event"]').inputValue(), "0", "the event chosen is shown chosen");
    await screenshot(page, "compare-shift-event.png", page.locator('[data-testid="compare-view"]'));
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});

async function drawnWindow(page) {
  const d = await drawnCompare(page);
  return { from: BigInt(d.from), to: BigInt(d.to) };
}

async function drawnShift(page) {
  return page.locator('[data-testid="time-shift"]').evaluate((el) => {
    const x = el.dendroShift;
    const arr = (a) => Array.from(a);
    return {
      member: x.member,
      shift: String(x.shift),
      offset: String(x.offset),
      from: String(x.from),
      to: String(x.to),
      buckets: x.buckets,
      ts: Array.from(x.paired.ts, String),
      d_min: arr(x.paired.d_min),
      d_max: arr(x.paired.d_max),
      b_max: arr(x.paired.b_max),
    };
  });
}

/**
 * Checks a drawn time shift's A − B bucket by bucket against the rows
 * `dendro cat` prints of `file` (as src/read/shift.rs defines it): exact
 * where both sides have a row, a gap where either has none. Answers how
 * many buckets of each.
 */
function checkDifference(d, file) {
  const shift = BigInt(d.shift);
  const source = Number(d.member.split("/")[1]);
  const off = BigInt(d.offset);
  const lo = BigInt(d.from) - off;
  const hi = BigInt(d.to) - off;
  const all = cat(file, source, STREAM);
  const b = bounds(lo, hi, d.buckets);
  const fold = (rows, by) => {
    const mn = new Array(d.buckets).fill(NaN);
    const mx = new Array(d.buckets).fill(NaN);
    for (const r of rows) {
      const t = tsOf(r) + by;
      if (t < lo || t > hi) continue;
      const k = bucketOf(b, t);
      const v = Number(r[COLUMN]);
      mn[k] = Number.isNaN(mn[k]) ? v : Math.min(mn[k], v);
      mx[k] = Number.isNaN(mx[k]) ? v : Math.max(mx[k], v);
    }
    return [mn, mx];
  };
  const [amin, amax] = fold(all, 0n);
  const [bmin, bmax] = fold(all, shift);
  assert.deepEqual(d.ts, b.slice(0, d.buckets).map(String));
  let both = 0;
  let gaps = 0;
  for (let k = 0; k < d.buckets; k++) {
    const want = amax[k] - bmax[k];
    if (Number.isNaN(want)) {
      assert.ok(Number.isNaN(d.d_max[k]), `bucket ${k}: a gap where either side has no row`);
      gaps++;
    } else {
      assert.equal(d.d_max[k], want, `bucket ${k}: A − B`);
      assert.equal(d.d_min[k], amin[k] - bmin[k]);
      both++;
    }
  }
  return { both, gaps };
}

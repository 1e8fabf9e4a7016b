// Huge and odd catalogs: 100,000 segments in one stream, 10,000 streams in
// one source, 1,000 sources, and megabyte labels. Each opens, keeps the DOM
// bounded, says in words what it left out, offers the way to the rest (a
// filter, "show more"), and plots a stream picked out of it. The open time
// and the longest main-thread task are printed, not asserted: they are
// measurements of this machine.
//
// The archives are written by `benches/inputs/huge_catalogs.rs` into
// target/huge-catalogs/ (once; about a minute in a debug build): the
// example binary cargo built, else `cargo run --example huge_catalogs`. A
// missing builder or page is a failure, not a skip.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ROOT, launch, missingPrerequisite, newPage, recordOpen, screenshot, serve } from "./helpers.mjs";

const SHAPES = ["segments100k", "streams10k", "sources1k", "labels1m"];
const DIR = process.env.DENDRO_HUGE_DIR ?? join(ROOT, "target", "huge-catalogs");

function hugeArchives() {
  if (SHAPES.every((s) => existsSync(join(DIR, `${s}.dendro`)))) return `${DIR} (already there)`;
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(ROOT, "target");
  const built = [join(targetDir, "debug/examples/huge_catalogs"), join(targetDir, "release/examples/huge_catalogs")].find((b) => existsSync(b));
  const [cmd, args] = built ? [built, [DIR]] : ["cargo", ["run", "--quiet", "--example", "huge_catalogs", "--", DIR]];
  execFileSync(cmd, args, { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"], timeout: 1_800_000 });
  for (const s of SHAPES) assert.ok(existsSync(join(DIR, `${s}.dendro`)), `${cmd} wrote no ${s}.dendro`);
  return `${DIR}, written by ${cmd}`;
}

const missing = missingPrerequisite();
const made = missing ? null : hugeArchives();
console.log(`# huge archives in ${made ?? "nowhere"}`);

// A hang guard, far above what any of these takes.
const T = { timeout: 300_000 };
const active = (page) => page.locator(".dv-tab-panel:not([hidden])");
const nodes = (page) => page.evaluate(() => document.getElementsByTagName("*").length);
const figures = [];

/**
 * Opens a huge archive through the file input, as a person picking it
 * would, and waits for the page to settle: the overview, the timeline,
 * the first plot drawn and verify's verdict. Returns what it measured.
 */
async function open(page, shape) {
  await page.goto(page.serverUrl + "/");
  const record = await recordOpen(page, {
    overview: '[data-testid="overview"]',
    // A large catalog read in place: its outline, the rows still being counted.
    outline: '[data-testid="listing"]',
    counting: '[data-testid="overview"] [data-field="rows"][data-value="counting"]',
    timeline: '[data-testid="lane"]',
    // A preview from footer statistics, where the page draws one first.
    preview: '[data-testid="plots"][data-state="preview"]',
    plot: '[data-testid="plots"][data-state="drawn"]',
  });
  await page.locator('[data-testid="file-input"]').setInputFiles(join(DIR, `${shape}.dendro`));
  const panel = active(page);
  await panel.locator('[data-testid="overview"]').waitFor({ timeout: 120_000 });
  await panel.locator('[data-testid="lane"]').first().waitFor({ timeout: 120_000 });
  await panel.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 120_000 });
  await page.waitForFunction(() => window.__open.at.plot !== undefined);
  const opened = await record();
  // verify reads every segment, in the worker, after the first plot.
  await panel.locator('[data-testid="verify"][data-state]').waitFor({ timeout: 240_000 });
  assert.equal(await panel.locator('[data-testid="verify"]').getAttribute("data-state"), "sound", `${shape} verifies as sound`);
  const settled = await record();
  const dom = await nodes(page);
  const fig = {
    shape,
    overview_ms: opened.at.overview,
    outline_ms: opened.at.outline,
    counting_ms: opened.at.counting,
    preview_ms: opened.at.preview,
    first_plot_ms: opened.at.plot,
    longest_task_ms: Math.max(0, ...settled.longtasks),
    long_tasks: settled.longtasks.length,
    dom_nodes: dom,
  };
  figures.push(fig);
  console.log(
    `# ${shape}: ${fig.outline_ms !== undefined ? `outline on screen ${fig.outline_ms} ms, ` : ""}overview on screen ${fig.overview_ms} ms after the pick, preview drawn ${fig.preview_ms ?? "-"} ms, exact plot drawn ${fig.first_plot_ms} ms;` +
      ` longest main-thread task ${fig.longest_task_ms} ms (${fig.long_tasks} over 50 ms up to verify's verdict); ${dom} DOM nodes`,
  );
  return { panel, fig };
}

/** Waits for the stream view of `stream` to draw its plot, and returns its status line. */
async function plotted(panel, stream) {
  const view = panel.locator(`[data-testid="stream-view"][data-stream="${stream}"]`);
  await view.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 120_000 });
  return view.locator('[data-testid="plot-status"]').innerText();
}

describe("huge and odd catalogs", () => {
  let server;
  let browser;

  before(async () => {
    assert.equal(missing, null, missing ?? "");
    server = await serve();
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (figures.length) {
      console.log("# shape          overview     preview  exact plot  longest task  DOM nodes");
      for (const f of figures)
        console.log(
          `# ${f.shape.padEnd(14)} ${String(f.overview_ms).padStart(6)} ms ${String(f.preview_ms ?? "-").padStart(8)} ms ${String(f.first_plot_ms).padStart(8)} ms ${String(f.longest_task_ms).padStart(9)} ms ${String(f.dom_nodes).padStart(10)}`,
        );
    }
  });

  const fresh = async () => {
    const page = await newPage(browser);
    page.serverUrl = server.url;
    return page;
  };

  it("a stream of 100,000 segments: merged blocks on its lane, a plot that zooms", T, async () => {
    const page = await fresh();
    const { panel, fig } = await open(page, "segments100k");
    assert.equal(await panel.locator('[data-field="segments"]').getAttribute("data-value"), "100000");
    // Read in place (84 MB), the catalog's outline was up while its
    // 100,000 rows were listed, its rows counted after, and then gone.
    assert.ok(fig.outline_ms !== undefined && fig.counting_ms !== undefined, `an outline first: ${JSON.stringify(fig)}`);
    assert.equal(await panel.locator('[data-testid="listing"]').count(), 0);
    assert.equal(await panel.locator('[data-field="rows"]').getAttribute("data-value"), "400000");
    const lane = panel.locator('[data-testid="lane"]');
    assert.equal(await lane.count(), 1);
    // The whole stream in view: neighbours too narrow to tell apart are one block.
    const blocks = await lane.locator('[data-testid="segment"]').count();
    assert.ok(blocks >= 1 && blocks <= 320, `a bounded number of blocks on the lane (${blocks})`);
    const merged = await lane.locator('[data-testid="segment"][data-count]').evaluateAll((els) => els.reduce((n, e) => n + Number(e.dataset.count), 0));
    assert.ok(merged > 99_000, `merged blocks stand for the segments (${merged})`);
    assert.ok(fig.dom_nodes < 3_000, `the DOM stays small (${fig.dom_nodes} nodes)`);
    // A segment picker for 100,000 is a seq box, not a menu.
    assert.match(await panel.locator(".dv-seg-picker").innerText(), /of 100,000/);
    const before = await plotted(panel, "metrics");
    assert.match(before, /^400,000 rows in this window/);
    // The whole span is more segments than the engine reads for one plot:
    // a spread sample, and the plot says so.
    const plots = panel.locator('[data-testid="stream-view"][data-stream="metrics"] [data-testid="plots"]');
    assert.match(before, /approximate: [\d,]+ segments \([\d,]+ rows\) not read, zoom in for the exact envelope/);
    assert.equal(await plots.getAttribute("data-approximate"), "true");
    await screenshot(page, "huge-segments100k-approximate.png", plots);

    // Drag across a tenth of the lane: the window narrows, the plot reads it again.
    const track = lane.locator(".dv-tl-track");
    await track.scrollIntoViewIfNeeded();
    const box = await track.boundingBox();
    await page.mouse.move(box.x + box.width * 0.45, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.55, box.y + box.height / 2, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => {
      const m = /^([\d,]+) rows in this window/.exec(document.querySelector('[data-testid="plot-status"]')?.textContent ?? "");
      return m && Number(m[1].replace(/,/g, "")) < 100_000;
    });
    await panel.locator('[data-testid="plots"][data-state="drawn"]').waitFor();
    const zoomed = await lane.locator('[data-testid="segment"]').count();
    assert.ok(zoomed <= 320, `still a bounded number of blocks after zooming (${zoomed})`);
    // A tenth of that (about 1,000 segments) is within the budget: exact.
    const narrower = await track.boundingBox();
    await page.mouse.move(narrower.x + narrower.width * 0.45, narrower.y + narrower.height / 2);
    await page.mouse.down();
    await page.mouse.move(narrower.x + narrower.width * 0.55, narrower.y + narrower.height / 2, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => {
      const m = /^([\d,]+) rows in this window/.exec(document.querySelector('[data-testid="plot-status"]')?.textContent ?? "");
      return m && Number(m[1].replace(/,/g, "")) < 10_000;
    });
    await panel.locator('[data-testid="plots"][data-state="drawn"]').waitFor();
    assert.equal(await plots.getAttribute("data-approximate"), "false");
    assert.doesNotMatch(await plotted(panel, "metrics"), /approximate/);
    assert.ok((await nodes(page)) < 3_000);
    await screenshot(page, "huge-segments100k.png");
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("read in place, a large catalog shows its outline and cards first; a stream picked meanwhile opens once it is listed", T, async () => {
    const page = await fresh();
    // The engine's listing is held back (the test-only hold goes to the
    // worker just ahead of the page's describe), so the outline stays up
    // for as long as the test looks at it.
    await page.addInitScript(() => {
      const w = window;
      const post = Worker.prototype.postMessage;
      Worker.prototype.postMessage = function (m, t) {
        if (m && m.op === "call" && m.method === "describe" && !w.__held) {
          w.__held = this;
          post.call(this, { op: "hold", id: 0 });
        }
        return post.call(this, m, t);
      };
    });
    await page.goto(page.serverUrl + "/?mode=lazy");
    await page.locator('[data-testid="file-input"]').setInputFiles(join(DIR, "streams10k.dendro"));
    const panel = active(page);
    await panel.locator('[data-testid="listing"]').waitFor({ timeout: 60_000 });
    assert.match(await panel.locator('[data-testid="listing"]').innerText(), /^Listing the catalog's 10,000 segments/);
    const rows = panel.locator('[data-testid="stream-row"]');
    await rows.first().waitFor();
    assert.equal(await panel.locator('[data-field="streams"]').getAttribute("data-value"), "10000");
    assert.equal(await panel.locator('[data-field="segments"]').getAttribute("data-value"), "10000");
    assert.equal(await panel.locator('[data-field="rows"]').getAttribute("data-value"), "counting");
    assert.equal(await rows.count(), 20, "the card's first streams, from the outline");
    const name = await rows.nth(2).locator("button").innerText();
    // The sealed rows estimated from each stream's first segment (four rows each), until counted.
    assert.match(await rows.nth(2).innerText(), /^\S+\s+1\s+≈ 4\s/);
    assert.equal(await panel.locator('[data-field="rows"] .dv-stat-main').innerText(), "≈ 40,000");
    assert.equal(await panel.locator('[data-testid="lane"]').count(), 0, "no timeline before the listing");
    // A stream picked in the outline's card: not the first, which opens by itself.
    await rows.nth(2).locator("button").click();
    await page.evaluate(() => window.__held.postMessage({ op: "release", id: 0 }));
    assert.match(await plotted(panel, name), /rows in this window/);
    assert.equal(await panel.locator('[data-testid="stream-view"]').getAttribute("data-stream"), name);
    assert.equal(await panel.locator('[data-testid="listing"]').count(), 0);
    assert.match(await panel.locator('[data-field="rows"]').getAttribute("data-value"), /^[1-9]\d*$/, "the rows counted");
    assert.match(await rows.nth(2).innerText(), /^\S+\s+1\s+[\d,]+\s/);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("10,000 streams in a source: the first lanes, what was left out, and a filter to the rest", T, async () => {
    const page = await fresh();
    const { panel, fig } = await open(page, "streams10k");
    assert.equal(await panel.locator('[data-field="streams"]').getAttribute("data-value"), "10000");
    assert.equal(await panel.locator('[data-testid="lane"]').count(), 200);
    assert.equal(
      await panel.locator('[data-testid="lanes-more-text"]').innerText(),
      "Showing the first 200 of 10,000 streams on the timeline. Filter to find others, or",
    );
    assert.equal(await panel.locator('[data-testid="lanes-more-button"]').innerText(), "show 200 more");
    const card = panel.locator('[data-testid="source"]');
    assert.equal(await card.locator('[data-testid="stream-row"]').count(), 20);
    assert.equal(await card.locator('[data-testid="streams-more-text"]').innerText(), "Showing the first 20 of 10,000 streams.");
    assert.equal(await card.locator('[data-testid="streams-more-button"]').innerText(), "Show 200 more");
    assert.match(await panel.locator('[data-testid="finder-count"]').innerText(), /1 source, 10,000 streams/);
    assert.ok(fig.dom_nodes < 6_000, `the DOM stays bounded (${fig.dom_nodes} nodes)`);
    // Only the lanes in sight of their scrolling box are drawn.
    const drawn = await panel.locator('[data-testid="lane"] [data-testid="segment"]').count();
    assert.ok(drawn > 0 && drawn < 80, `lanes drawn: ${drawn} of 200`);
    await screenshot(page, "huge-streams10k.png");
    await screenshot(page, "huge-streams10k-timeline.png", panel.locator('[data-testid="timeline"]'));

    // A card's "show more" builds its next 200 rows.
    await card.locator('[data-testid="streams-more-button"]').click();
    assert.equal(await card.locator('[data-testid="stream-row"]').count(), 220);
    assert.equal(await card.locator('[data-testid="streams-more-text"]').innerText(), "Showing the first 220 of 10,000 streams.");

    // The timeline's "show more" builds the next 200 lanes, no more.
    await panel.locator('[data-testid="lanes-more-button"]').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="lane"]').length === 400);
    assert.match(await panel.locator('[data-testid="lanes-more-text"]').innerText(), /^Showing the first 400 of 10,000 streams/);

    // The last stream, far past the cap, found by the filter and plotted.
    await panel.locator('[data-testid="filter"]').fill("temp.s09999");
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="lane"]').length === 1);
    assert.match(await panel.locator('[data-testid="finder-count"]').innerText(), /^1 source and 1 stream match/);
    assert.equal(await panel.locator('[data-testid="lanes-more"]').count(), 0, "nothing left out of one match");
    assert.equal(await card.locator('[data-testid="stream-row"]').count(), 1);
    assert.match(await card.locator('[data-testid="streams-filtered"]').innerText(), /9,999 other streams of this source hidden by the filter/);
    await panel.locator('[data-testid="lane"][data-stream="temp.s09999"] .dv-tl-name').click();
    assert.match(await plotted(panel, "temp.s09999"), /^4 rows in this window/);
    await screenshot(page, "huge-streams10k-filtered.png");

    // Clearing the filter brings back the first lanes; the open stream keeps its lane.
    await panel.locator('[data-testid="filter"]').fill("");
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="lane"]').length === 201);
    assert.ok(await panel.locator('[data-testid="lane"][data-stream="temp.s09999"]').evaluate((e) => e.classList.contains("dv-selected")));
    assert.ok((await nodes(page)) < 6_000);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("1,000 sources: the first cards and lanes, more on request, one found by its label", T, async () => {
    const page = await fresh();
    const { panel, fig } = await open(page, "sources1k");
    assert.equal(await panel.locator('[data-field="sources"]').getAttribute("data-value"), "1000");
    assert.equal(await panel.locator('[data-testid="source"]').count(), 24);
    assert.equal(
      await panel.locator('[data-testid="sources-more-text"]').innerText(),
      "Showing the first 24 of 1,000 sources. Type in the filter above to find one.",
    );
    assert.equal(await panel.locator('[data-testid="lane"]').count(), 200);
    assert.match(await panel.locator('[data-testid="lanes-more-text"]').innerText(), /^Showing the first 200 of 1,000 streams, from 200 of 1,000 sources on the timeline/);
    assert.ok(fig.dom_nodes < 8_000, `the DOM stays bounded (${fig.dom_nodes} nodes)`);
    await screenshot(page, "huge-sources1k.png");
    await screenshot(page, "huge-sources1k-timeline.png", panel.locator('[data-testid="timeline"]'));

    await panel.locator('[data-testid="sources-more-button"]').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="source"]').length === 48);
    assert.match(await panel.locator('[data-testid="sources-more-text"]').innerText(), /^Showing the first 48 of 1,000 sources/);

    // Found by a label value, opened from its card, plotted.
    await panel.locator('[data-testid="filter"]').fill("host-0999");
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="source"]').length === 1);
    const card = panel.locator('[data-testid="source"]');
    assert.equal(await card.getAttribute("data-source"), "1000");
    assert.equal(await panel.locator('[data-testid="lane"]').count(), 1);
    await card.locator('[data-testid="stream-row"][data-stream="cpu"]').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="stream-view"]')?.dataset.source === "1000");
    assert.match(await plotted(panel, "cpu"), /^4 rows in this window/);
    // Words of a query must all be found: a rack and a host that are not together match nothing.
    await panel.locator('[data-testid="filter"]').fill("rack-0 host-0999");
    await panel.locator('[data-testid="sources"] .dv-empty-note').waitFor();
    assert.equal(await panel.locator('[data-testid="source"]').count(), 0);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("megabyte labels and a 100,000-character stream name: cut, reachable, inert, plottable", T, async () => {
    const page = await fresh();
    const { panel, fig } = await open(page, "labels1m");
    const card = panel.locator('[data-testid="source"]');
    assert.equal(await card.locator('[data-testid="label"]').count(), 40);
    assert.equal(await card.locator('[data-testid="labels-more"]').innerText(), "Showing 40 of 5,003 labels · show all");
    const longest = await page.evaluate(() => Math.max(...Array.from(document.querySelectorAll(".dv-ft"), (e) => e.textContent.length)));
    assert.ok(longest < 2_000, `no rendered string is enormous (${longest} chars)`);
    assert.ok(fig.dom_nodes < 3_000, `the DOM stays bounded (${fig.dom_nodes} nodes)`);
    // Megabyte strings are cut, with a button to the whole of each.
    const key = card.locator('[data-testid="label"]').filter({ hasText: "a 1 MB label key begins here" });
    assert.equal(await key.locator(".dv-more").innerText(), "… +1,048,536 chars");
    const meta = card.locator('[data-testid="metadata"]');
    assert.equal(await meta.locator(".dv-more").innerText(), "… +1,048,336 chars");
    await key.locator(".dv-more").click();
    const whole = page.locator(".dv-dialog[open] .dv-fullvalue");
    await whole.waitFor();
    assert.equal(await whole.evaluate((t) => t.value.length), 1_048_576);
    await page.locator(".dv-dialog[open] .dv-dialog-head button").click();

    // Every label, in a virtualized table.
    await card.locator('[data-testid="labels-more"]').click();
    const table = page.locator('.dv-dialog[open] [data-testid="labels-table"]');
    await table.waitFor();
    assert.equal(await table.getAttribute("data-rows"), "5003");
    const rows = await table.locator(".dv-vt-row").count();
    assert.ok(rows > 0 && rows < 60, `rows built: ${rows} of 5,003`);
    await screenshot(page, "huge-labels1m-dialog.png");
    await page.locator(".dv-dialog[open] .dv-dialog-head button").click();

    // The stream with a 100,000-character name has a lane, opens, and plots.
    const lane = panel.locator('[data-testid="lane"]').filter({ hasText: "a 100,000-character stream name" });
    await lane.locator(".dv-tl-name").click();
    const view = panel.locator('[data-testid="stream-view"]');
    await page.waitForFunction(() => (document.querySelector('[data-testid="stream-view"]')?.dataset.stream ?? "").length === 100_000);
    await view.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 60_000 });
    assert.match(await view.locator('[data-testid="plot-status"]').innerText(), /^4 rows in this window/);
    await screenshot(page, "huge-labels1m.png");
    assert.deepEqual(page.problems, []);
    assert.deepEqual(await page.cspViolations(), []);
    await page.context().close();
  });
});

// Layouts that hold in an embed: the viewer mounted in a host page (the ES
// module example) at 800, 1,250 and 1,600 px wide shows its overview,
// source cards, timeline and stream view with no text over other text and
// none running out of the viewer. A text's box is the box of its glyphs
// (a Range over the text node), clipped by every scrolling or clipping
// ancestor, so text cut off with an ellipsis or scrolled out of sight is
// not counted. Screenshots land in target/screenshots/layout-*.png.
//
// The archive is a demo archive (three hosts, ten minutes) written by the
// project's own `dendro demo`, as in hostile.test.mjs.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ROOT, launch, missingPrerequisite, newPage, screenshot, serve } from "./helpers.mjs";

const WIDTHS = [800, 1250, 1600];
/** The host page's margin on each side of the viewer (examples.css). */
const HOST_MARGIN = 20;

function demoArchive() {
  const out = join(mkdtempSync(join(tmpdir(), "dendro-layout-")), "demo.dendro");
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(ROOT, "target");
  const built = [process.env.DENDRO_BIN, join(targetDir, "debug/dendro"), join(targetDir, "release/dendro")]
    .filter(Boolean)
    .find((b) => existsSync(b));
  const [cmd, args] = built
    ? [built, ["demo", "--minutes", "10", out]]
    : ["cargo", ["run", "--quiet", "--bin", "dendro", "--", "demo", "--minutes", "10", out]];
  execFileSync(cmd, args, { cwd: ROOT, stdio: "pipe", timeout: 600_000 });
  assert.ok(existsSync(out), `${cmd} demo wrote nothing`);
  return out;
}

const missing = missingPrerequisite();
const archive = missing ? null : demoArchive();

/**
 * Runs in the page: the glyph boxes of every visible text in `sel`'s
 * shadow root (or subtree), clipped by clipping ancestors, and the pairs
 * of texts that overlap by more than `slack` px both ways, and the texts
 * that reach outside the viewer's box.
 */
function textProblems({ sel, slack }) {
  const hostEl = document.querySelector(sel);
  const inner = hostEl.querySelector(".dendro-viewer-host");
  const root = inner?.shadowRoot ?? hostEl.shadowRoot ?? hostEl;
  const frame = hostEl.getBoundingClientRect();
  const parentOf = (el) => el.parentElement ?? (el.getRootNode() instanceof ShadowRoot ? el.getRootNode().host : null);
  const clipOf = (el) => {
    let box = { l: -Infinity, t: -Infinity, r: Infinity, b: Infinity };
    for (let a = el; a && a !== document.documentElement; a = parentOf(a)) {
      const cs = getComputedStyle(a);
      if (cs.overflowX !== "visible" || cs.overflowY !== "visible" || cs.contain.includes("paint")) {
        const r = a.getBoundingClientRect();
        if (cs.overflowX !== "visible") box = { ...box, l: Math.max(box.l, r.left), r: Math.min(box.r, r.right) };
        if (cs.overflowY !== "visible") box = { ...box, t: Math.max(box.t, r.top), b: Math.min(box.b, r.bottom) };
      }
    }
    return box;
  };
  const texts = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.textContent.trim()) continue;
    const el = n.parentElement;
    if (!el || !el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
    const clip = clipOf(el);
    range.selectNodeContents(n);
    for (const r of range.getClientRects()) {
      const box = { l: Math.max(r.left, clip.l), t: Math.max(r.top, clip.t), r: Math.min(r.right, clip.r), b: Math.min(r.bottom, clip.b) };
      if (box.r - box.l < 1 || box.b - box.t < 1) continue;
      texts.push({ box, node: n, text: n.textContent.trim().slice(0, 40), cls: el.className || el.tagName });
    }
  }
  const overlaps = [];
  for (let i = 0; i < texts.length; i++) {
    for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i];
      const b = texts[j];
      if (a.node === b.node) continue;
      const w = Math.min(a.box.r, b.box.r) - Math.max(a.box.l, b.box.l);
      const h = Math.min(a.box.b, b.box.b) - Math.max(a.box.t, b.box.t);
      if (w > slack && h > slack) overlaps.push(`"${a.text}" (${a.cls}) and "${b.text}" (${b.cls}) by ${w.toFixed(0)}x${h.toFixed(0)} px`);
    }
  }
  const outside = texts
    .filter((t) => t.box.l < frame.left - slack || t.box.r > frame.right + slack)
    .map((t) => `"${t.text}" (${t.cls}) spans ${t.box.l.toFixed(0)}..${t.box.r.toFixed(0)}, the viewer ${frame.left.toFixed(0)}..${frame.right.toFixed(0)}`);
  return { count: texts.length, overlaps: overlaps.slice(0, 20), overlapCount: overlaps.length, outside: outside.slice(0, 20) };
}

describe("layout in an embed", () => {
  let server;
  let browser;

  before(async () => {
    if (missing) return;
    server = await serve({ "/layout/demo.dendro": archive });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it("has what it needs to run", () => assert.equal(missing, null, missing ?? ""));

  for (const width of WIDTHS) {
    it(`at ${width} px: overview, source cards, timeline and stream view without overlapping text`, { timeout: 120_000, skip: !!missing }, async () => {
      const page = await newPage(browser, { viewport: { width: width + 2 * HOST_MARGIN, height: 1000 } });
      await page.goto(server.url + "/examples/module.html?src=/layout/demo.dendro");
      // The whole viewer laid out at its natural height, so one screenshot holds every section.
      // (Through the CSSOM: the example's CSP forbids inline style elements.)
      await page.evaluate(() => (document.querySelector(".viewer-box").style.height = "auto"));
      await page.locator('#status[data-state="ok"]').waitFor({ timeout: 30_000 });
      const viewer = page.locator("#viewer");
      assert.equal(Math.round((await viewer.boundingBox()).width), width, "the viewer is as wide as asked");
      await viewer.locator('[data-testid="verify"][data-state="sound"]').waitFor({ timeout: 30_000 });
      await viewer.locator('[data-testid="lane"]').first().waitFor();
      // The stream view of the first lane's stream.
      await viewer.locator('[data-testid="lane"] .dv-tl-name').first().click();
      await viewer.locator('[data-testid="stream-view"]').waitFor();
      await viewer.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
      // No tooltip left open by the pointer (an overlay, meant to cover what is under it).
      await page.mouse.move(0, 0);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

      const shots = {
        overview: viewer.locator('[data-testid="overview"]'),
        sources: viewer.locator('[data-testid="sources"]'),
        timeline: viewer.locator('[data-testid="timeline"]'),
        stream: viewer.locator('[data-testid="stream-view"]'),
      };
      for (const [name, loc] of Object.entries(shots)) {
        assert.ok(await loc.first().isVisible(), `${name} is shown`);
        await screenshot(page, `layout-${width}-${name}.png`, loc.first());
      }
      await screenshot(page, `layout-${width}.png`, null, { fullPage: true });

      const found = await page.evaluate(textProblems, { sel: "#viewer", slack: 1 });
      assert.ok(found.count > 50, `texts measured: ${found.count}`);
      assert.deepEqual(found.overlaps, [], `${found.overlapCount} overlapping text pair(s) at ${width} px`);
      assert.deepEqual(found.outside, [], `text outside the viewer at ${width} px`);
      assert.deepEqual(page.problems, []);
      await page.context().close();
    });
  }
});

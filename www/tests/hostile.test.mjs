// An archive whose labels and metadata are hostile (markup and script
// payloads, megabyte strings, control and bidi characters) renders as inert
// text and leaves the page usable.
//
// The archive comes from, in order: a ready file named by
// DENDRO_HOSTILE_ARCHIVE; the project's builder `dendro demo --hostile OUT`
// (DENDRO_BIN, or target/{release,debug}/dendro); else make_hostile.py,
// which rewrites the strings of a copy of a sound fixture with python3's
// sqlite3. Without any of them the test is skipped and says why.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { FIXTURES, ROOT, WWW, dropFile, launch, missingPrerequisite, newPage, screenshot, serve } from "./helpers.mjs";

function hostileArchive() {
  const given = process.env.DENDRO_HOSTILE_ARCHIVE;
  if (given) return existsSync(given) ? { path: given, by: "DENDRO_HOSTILE_ARCHIVE" } : { why: `DENDRO_HOSTILE_ARCHIVE=${given} does not exist` };
  const dir = mkdtempSync(join(tmpdir(), "dendro-hostile-"));
  const reasons = [];
  const bins = [process.env.DENDRO_BIN, join(ROOT, "target/release/dendro"), join(ROOT, "target/debug/dendro")].filter(Boolean);
  const bin = bins.find((b) => existsSync(b));
  if (bin) {
    const out = join(dir, "hostile.dendro");
    try {
      execFileSync(bin, ["demo", "--hostile", out], { stdio: "pipe", timeout: 120_000 });
      if (existsSync(out)) return { path: out, by: `${bin} demo --hostile` };
      reasons.push(`\`${bin} demo --hostile\` wrote nothing`);
    } catch (e) {
      reasons.push(`\`dendro demo --hostile\` is not available (${String(e.stderr ?? e.message).split("\n")[0]})`);
    }
  } else reasons.push("no dendro binary");
  const out = join(dir, "hostile-patched.dendro");
  try {
    execFileSync("python3", [join(WWW, "tests/make_hostile.py"), join(FIXTURES, "b_multi_source.dendro"), out], { stdio: "pipe", timeout: 60_000 });
    return { path: out, by: `make_hostile.py (${reasons.join("; ")})` };
  } catch (e) {
    reasons.push(`make_hostile.py failed (${String(e.stderr ?? e.message).split("\n")[0]})`);
  }
  return { why: reasons.join("; ") };
}

const missing = missingPrerequisite();
const hostile = missing ? { why: missing } : hostileArchive();
if (hostile.why) console.log(`# hostile-strings test skipped: ${hostile.why}`);
else console.log(`# hostile archive from ${hostile.by}`);

describe("hostile strings", () => {
  let server;
  let browser;

  before(async () => {
    if (hostile.why) return;
    server = await serve();
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it("renders a hostile archive inertly and stays usable", { timeout: 120_000, skip: hostile.why ?? false }, async () => {
    const page = await newPage(browser);
    await page.addInitScript(() => {
      window.__executed = [];
      for (const name of ["alert", "confirm", "prompt"]) window[name] = (...a) => window.__executed.push([name, ...a]);
    });
    await page.goto(server.url + "/");
    const t0 = Date.now();
    await dropFile(page, hostile.path, "hostile.dendro");
    const panel = page.locator(".dv-tab-panel:not([hidden])");
    await panel.locator('[data-testid="overview"]').waitFor({ timeout: 60_000 });
    await panel.locator('[data-testid="source"]').first().waitFor();
    const took = Date.now() - t0;

    // Nothing ran: no dialogs, no handlers, no CSP reports of blocked inline code.
    assert.deepEqual(await page.evaluate(() => window.__executed), []);
    assert.deepEqual(await page.cspViolations(), []);
    assert.deepEqual(page.problems, []);
    // No element from the file became markup in the viewer.
    const injected = await page.evaluate(() => document.querySelectorAll(".dv-root script, .dv-root img, .dv-root iframe, .dv-root object, .dv-root embed, .dv-root svg, .dv-root a[href^='javascript']").length);
    assert.equal(injected, 0);
    // Long strings are cut for display, with a way to the whole value.
    const longest = await page.evaluate(() => Math.max(...Array.from(document.querySelectorAll(".dv-ft"), (e) => e.textContent.length)));
    assert.ok(longest < 5000, `no rendered string is enormous (${longest} chars)`);
    // Bidi and control characters are isolated and shown as escapes.
    const bidi = await page.evaluate(() => getComputedStyle(document.querySelector(".dv-ft")).unicodeBidi);
    assert.equal(bidi, "isolate");

    // Still usable: the zone toggle and the timeline answer.
    await page.locator('[data-tz="local"]').click();
    await page.locator('[data-tz="utc"]').click();
    const more = panel.locator(".dv-more").first();
    if (await more.count()) {
      await more.click();
      await page.locator(".dv-dialog[open] .dv-fullvalue").waitFor();
      await page.locator(".dv-dialog[open] .dv-dialog-head button").click();
    }
    await screenshot(page, "hostile.png", null, { fullPage: false });
    await screenshot(page, "hostile-timeline.png", panel.locator('[data-testid="timeline"]'));
    // Events from the reserved key are markers on the timeline.
    assert.ok((await panel.locator('[data-testid="event"]').count()) >= 1, "events are marked on the timeline");
    console.log(`# hostile archive: overview in ${took} ms`);
    await page.context().close();
  });
});

// An archive whose labels and metadata are hostile (markup and script
// payloads, megabyte strings, control and bidi characters) renders as inert
// text and leaves the page usable.
//
// The archive is written by the project's own builder, `dendro demo
// --hostile OUT`: the binary named by DENDRO_BIN, else the one cargo built
// (CARGO_TARGET_DIR or target/, debug or release), else `cargo run`. A
// missing builder or page is a failure, not a skip: this test must run.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ROOT, dropFile, launch, missingPrerequisite, newPage, recordOpen, screenshot, serve } from "./helpers.mjs";

function hostileArchive() {
  const out = join(mkdtempSync(join(tmpdir(), "dendro-hostile-")), "hostile.dendro");
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(ROOT, "target");
  const built = [process.env.DENDRO_BIN, join(targetDir, "debug/dendro"), join(targetDir, "release/dendro")]
    .filter(Boolean)
    .find((b) => existsSync(b));
  const [cmd, args] = built
    ? [built, ["demo", "--hostile", "--minutes", "10", out]]
    : ["cargo", ["run", "--quiet", "--bin", "dendro", "--", "demo", "--hostile", "--minutes", "10", out]];
  execFileSync(cmd, args, { cwd: ROOT, stdio: "pipe", timeout: 600_000 });
  assert.ok(existsSync(out), `${cmd} demo --hostile wrote nothing`);
  return { path: out, by: `${cmd} demo --hostile` };
}

const missing = missingPrerequisite();
const hostile = missing ? { why: missing } : hostileArchive();
console.log(`# hostile archive from ${hostile.by ?? "nowhere"}`);

describe("hostile strings", () => {
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
  });

  it("renders a hostile archive inertly and stays usable", { timeout: 120_000 }, async () => {
    const page = await newPage(browser);
    await page.addInitScript(() => {
      window.__executed = [];
      for (const name of ["alert", "confirm", "prompt"]) window[name] = (...a) => window.__executed.push([name, ...a]);
    });
    await page.goto(server.url + "/");
    // Timed by the page's own clock, from the drop to the frame the first source card is in.
    const record = await recordOpen(page, { cards: '[data-testid="source"]' });
    await dropFile(page, hostile.path, "hostile.dendro");
    const panel = page.locator(".dv-tab-panel:not([hidden])");
    await panel.locator('[data-testid="overview"]').waitFor({ timeout: 60_000 });
    await panel.locator('[data-testid="source"]').first().waitFor();
    await page.waitForFunction(() => window.__open.at.cards !== undefined);
    const took = (await record()).at.cards;

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
    console.log(`# hostile archive: source cards on screen ${took} ms after the drop`);
    await page.context().close();
  });
});

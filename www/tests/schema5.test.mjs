// The viewer on schema-5 archives the original's 0.6.1 wrote: the overview
// says which schema, each archive shows its documents (kind, name, current
// revision), a document's history opens on demand with every revision's
// body, and a body is shown as the text it is, never as markup.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { FIXTURES, launch, missingPrerequisite, newPage, screenshot, serve } from "./helpers.mjs";

const missing = missingPrerequisite();
const T = { timeout: 60_000 };
const active = (page) => page.locator(".dv-tab-panel:not([hidden])");

/**
 * A copy of s5a whose notes.text body is markup that would run if it were
 * HTML, with more than the viewer lists: a document of 205 revisions
 * (a.many/history) and 205 documents of one revision (zz.bulk/n000...).
 */
const HOSTILE_BODY = '{"text":"<img src=x onerror=\\"alert(1)\\"><b>bold</b><script>alert(2)</script>"}';

function hostileCopy(dir) {
  const path = join(dir, "s5a_hostile.dendro");
  copyFileSync(join(FIXTURES, "schema5", "s5a_multi_source.dendro"), path);
  execFileSync("python3", [
    "-c",
    "import sqlite3, sys\n" +
      "c = sqlite3.connect(sys.argv[1])\n" +
      "c.execute(\"UPDATE documents SET body = ? WHERE kind = 'notes.text'\", (sys.argv[2],))\n" +
      "for i in range(205):\n" +
      "    c.execute(\"INSERT INTO documents(uuid, kind, name, schema, body, created_wall_ns) VALUES (?, 'a.many', 'history', 's/1', ?, ?)\", ('m%d' % i, '{\"i\":%d}' % i, i))\n" +
      "    c.execute(\"INSERT INTO documents(uuid, kind, name, schema, body, created_wall_ns) VALUES (?, 'zz.bulk', ?, 's/1', '{}', 0)\", ('b%d' % i, 'n%03d' % i))\n" +
      "c.commit()\n" +
      "c.execute('PRAGMA wal_checkpoint(TRUNCATE)')\n" +
      "c.close()\n",
    path,
    HOSTILE_BODY,
  ]);
  return path;
}

describe("schema-5 archives in the viewer", { skip: !!missing }, () => {
  let browser;
  let server;
  let dir;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "dendro-s5-"));
    hostileCopy(dir);
    browser = await launch();
    server = await serve({ "/schema5/": join(FIXTURES, "schema5"), "/scratch/": dir });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("lists the documents, says schema 5, and opens a history with its bodies", T, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/?url=/schema5/s5a_multi_source.dendro");
    const panel = active(page);
    const docs = panel.locator('[data-testid="documents"]');
    await docs.waitFor({ timeout: 20_000 });
    assert.equal(await panel.locator('[data-field="schema_version"]').getAttribute("data-value"), "5");
    assert.equal(await docs.locator('[data-testid="documents-summary"]').innerText(), "2 current, 5 revisions");
    const rows = docs.locator('[data-testid="document"]');
    assert.equal(await rows.count(), 3);
    const kinds = await rows.evaluateAll((rs) => rs.map((r) => [r.dataset.kind, r.dataset.name, r.dataset.deleted]));
    assert.deepEqual(kinds, [
      ["notes.text", "ünïcødé ✓", "false"],
      ["report.selection", "q3", "true"],
      ["viewer.view", "overview", "false"],
    ]);
    assert.match(await rows.nth(1).innerText(), /deleted \(revision 4\)/);
    assert.match(await rows.nth(2).innerText(), /#2/);
    await screenshot(page, "schema5-documents.png", docs);

    await rows.nth(2).locator('[data-testid="document-history"]').click();
    const dialog = page.locator("dialog.dv-dialog");
    const revisions = dialog.locator('[data-testid="document-revision"]');
    await revisions.first().waitFor();
    assert.deepEqual(await revisions.evaluateAll((rs) => rs.map((r) => r.dataset.id)), ["2", "1"]);
    assert.equal(
      await revisions.first().locator('[data-testid="document-body"]').innerText(),
      '{"streams":["cpu","mem","q"],"window_s":120,"pinned":[{"source":"web-01"}]}',
    );
    assert.match(await revisions.first().innerText(), /current/);
    assert.match(await revisions.first().innerText(), /supersedes #1/);
    await screenshot(page, "schema5-document-history.png", dialog);
    await dialog.getByText("Close").click();

    // The deleted document's history: the deletion, then the body it deleted.
    await rows.nth(1).locator('[data-testid="document-history"]').click();
    await revisions.first().waitFor();
    assert.deepEqual(await revisions.evaluateAll((rs) => rs.map((r) => [r.dataset.id, r.dataset.deleted])), [
      ["4", "true"],
      ["3", "false"],
    ]);
    assert.match(await revisions.first().innerText(), /deletes the document/);
    assert.deepEqual(page.problems, []);
    assert.deepEqual(await page.cspViolations(), []);
    await page.context().close();
  });

  it("shows a body that holds markup as its characters", T, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/?url=/scratch/s5a_hostile.dendro");
    const panel = active(page);
    const row = panel.locator('[data-testid="document"][data-kind="notes.text"]');
    await row.waitFor({ timeout: 20_000 });
    await row.locator('[data-testid="document-history"]').click();
    const body = page.locator('dialog.dv-dialog [data-testid="document-body"]');
    await body.waitFor();
    assert.equal(await body.innerText(), HOSTILE_BODY);
    assert.equal(await page.locator("dialog.dv-dialog img, dialog.dv-dialog b, dialog.dv-dialog script").count(), 0);
    await screenshot(page, "schema5-hostile-body.png", page.locator("dialog.dv-dialog"));
    assert.deepEqual(page.problems, [], "no alert, no error");
    await page.context().close();
  });

  it("lists at most 200 documents and 200 revisions of one, and counts the rest", T, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/?url=/scratch/s5a_hostile.dendro");
    const docs = active(page).locator('[data-testid="documents"]');
    await docs.waitFor({ timeout: 20_000 });
    assert.equal(await docs.locator('[data-testid="documents-summary"]').innerText(), "208 current, 415 revisions");
    assert.equal(await docs.locator('[data-testid="document"]').count(), 200);
    assert.match(await docs.innerText(), /… 9 more documents not shown\./);
    const many = docs.locator('[data-testid="document"][data-kind="a.many"]');
    assert.match(await many.innerText(), /205/);
    await many.locator('[data-testid="document-history"]').click();
    const revisions = page.locator('dialog.dv-dialog [data-testid="document-revision"]');
    await revisions.first().waitFor();
    assert.equal(await revisions.count(), 200);
    assert.equal(await revisions.first().locator('[data-testid="document-body"]').innerText(), '{"i":204}');
    assert.match(await page.locator("dialog.dv-dialog").innerText(), /… 5 older revisions not shown\./);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  it("shows no documents section for a schema-4 archive", T, async () => {
    const page = await newPage(browser);
    await page.goto(server.url + "/?url=/fixtures/g_caller_index.dendro");
    const panel = active(page);
    await panel.locator('[data-testid="overview"]').waitFor({ timeout: 20_000 });
    await panel.locator('[data-testid="sources"]').waitFor({ timeout: 20_000 });
    assert.equal(await panel.locator('[data-field="schema_version"]').getAttribute("data-value"), "4");
    assert.equal(await panel.locator('[data-testid="documents"]').count(), 0);
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});

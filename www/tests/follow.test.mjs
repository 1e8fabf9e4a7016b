// Following an archive while it is written (issue 13): `dendro demo
// --live` appends once a second and seals every few seconds, `dendro
// serve` serves it from consistent images, and the page (?follow) draws
// what is appended without a reload.
//
// Every wait is for an event in the page (a plot's newest drawn row, the
// follow status); the one bound is the brief's: a row appended after the
// page opened is drawn within 2 s of its append, so with a row a second
// the wait for one is at most 3 s.

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, renameSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { DIST, ROOT, launch, missingPrerequisite, newPage, parseJsonExact, screenshot } from "./helpers.mjs";
import { cat, dendro, dendroBin, plotData, tsOf } from "./cli.mjs";

const T = { timeout: 180_000 };
const SEAL_EVERY = 8;

/** Starts `dendro serve` on `port` (0: any) and resolves with its port once it listens. */
function startServe(file, port = 0, env = {}) {
  const child = spawn(dendroBin(), ["serve", "--port", String(port), "--root", DIST, file], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (b) => {
      out += b;
      const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.stderr.on("data", (b) => (out += b));
    child.on("exit", (code) => reject(new Error(`dendro serve exited (${code}): ${out}`)));
  });
}

/** Starts `dendro demo --live` and resolves once the archive describes (its history is written). */
async function startWriter(file, seconds) {
  const child = spawn(dendroBin(), ["demo", "--live", "--for", String(seconds), "--minutes", "3", "--hosts", "2", "--seal-every", String(SEAL_EVERY), file], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr.on("data", (b) => (err += b));
  const exited = new Promise((r) => child.on("exit", r));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`dendro demo --live exited: ${err}`);
    if (existsSync(file)) {
      try {
        const d = parseJsonExact(dendro("describe", "--json", file));
        if (d.sources.length > 0 && d.sources.every((s) => s.streams.some((st) => st.live_rows > 0))) return { child, exited };
      } catch {
        // Not yet a readable archive.
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Records in the page every answer each plot draws: its number of points and its newest timestamp. */
async function recordDraws(page) {
  await page.addInitScript(() => {
    const log = [];
    window.__draws = log;
    new MutationObserver(() => {
      for (const el of document.querySelectorAll('[data-testid="plot"]')) {
        const d = el.dendroPlot;
        const key = `${el.dataset.column}:${el.dataset.drawn}`;
        if (!d || el.__logged === key) continue;
        el.__logged = key;
        log.push({ column: el.dataset.column, points: d.ts.length, newest: d.ts.length ? String(d.ts[d.ts.length - 1]) : null });
      }
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-drawn"] });
  });
}

/** The newest timestamp the plot of `column` drew, as a BigInt (or -1). */
async function newestDrawn(page, column) {
  const d = await plotData(page, column);
  return d && d.ts.length ? BigInt(d.ts[d.ts.length - 1]) : -1n;
}

/** Waits until the plot of `column` has drawn a row newer than `than`; resolves with the page's time it took (ms). */
async function drawnAfter(page, column, than, timeout) {
  const handle = await page.waitForFunction(
    ({ column, than }) => {
      const el = document.querySelector(`[data-testid="plot"][data-column="${column}"]`);
      const d = el?.dendroPlot;
      if (!d || d.ts.length === 0) return false;
      return d.ts[d.ts.length - 1] > BigInt(than) ? String(d.ts[d.ts.length - 1]) : false;
    },
    { column, than: String(than) },
    { timeout, polling: "raf" },
  );
  return BigInt(await handle.jsonValue());
}

/** A copy of archive `from` at `to` with SQL `statements` run on its catalog (python3's sqlite3, as viewer.test.mjs does). */
function edited(from, to, statements) {
  execFileSync("python3", [
    "-c",
    ["import json, shutil, sqlite3, sys", "shutil.copyfile(sys.argv[1], sys.argv[2])", "db = sqlite3.connect(sys.argv[2])", "for s in json.loads(sys.argv[3]): db.execute(s)", "db.commit()", "db.close()"].join("\n"),
    from,
    to,
    JSON.stringify(statements),
  ]);
  return parseJsonExact(dendro("describe", "--json", to));
}

const missing = missingPrerequisite();

describe("following an archive being written", () => {
  let browser;
  let dir;

  before(async () => {
    assert.equal(missing, null, missing ?? "");
    dir = mkdtempSync(join(tmpdir(), "dendro-follow-"));
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
  });

  it("draws appended rows, moves sealed rows from the tail without a gap or duplicate, resumes after the server restarts, and reports complete", T, async () => {
    const file = join(dir, "live.dendro");
    const writer = await startWriter(file, 60);
    let serve = await startServe(file);
    const page = await newPage(browser);
    try {
      const column = "used_bytes";
      const q = new URLSearchParams({ url: `/archives/${basename(file)}`, follow: "1", source: "1", stream: "memory" });
      q.append("col", column);
      await recordDraws(page);
      await page.goto(`http://127.0.0.1:${serve.port}/?${q}`);
      await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
      await page.locator('[data-testid="follow"][data-on="true"]').waitFor();
      // Appended after the page opened: drawn within 2 s of its append (a row a second).
      const first = await newestDrawn(page, column);
      assert.ok(first > 0n, "the plot drew rows");
      const second = await drawnAfter(page, column, first, 3000);
      const third = await drawnAfter(page, column, second, 3000);
      assert.ok(third > second && second > first);
      await screenshot(page, "follow-live.png", page.locator(`[data-testid="stream-view"]`));

      // A seal while watching: the segment count grows; the rows drawn go on without a gap or a duplicate.
      const segments = async () => Number((await page.locator('[data-testid="stream-stats"]').innerText()).match(/segments\s+([\d,]+)/)?.[1]?.replace(/,/g, ""));
      const before = await segments();
      await page.waitForFunction(
        (n) => Number(document.querySelector('[data-testid="stream-stats"]')?.textContent?.match(/segments\s*([\d,]+)/)?.[1]?.replace(/,/g, "")) > n,
        before,
        { timeout: (SEAL_EVERY + 4) * 1000 },
      );
      // The first answer drawn after the seal.
      const afterSeal = await drawnAfter(page, column, await newestDrawn(page, column), 3000);
      assert.ok(afterSeal > third);
      const d = await plotData(page, column);
      assert.equal(d.reduced, false, "every row is drawn");
      const ts = d.ts.map(BigInt);
      for (let i = 1; i < ts.length; i++) {
        assert.ok(ts[i] > ts[i - 1], `no duplicate or disorder at ${i}: ${ts[i - 1]} then ${ts[i]}`);
        assert.ok(ts[i] - ts[i - 1] < 1_600_000_000n, `no gap at ${i}: ${ts[i] - ts[i - 1]} ns between rows a second apart`);
      }
      // What the page drew equals the archive's rows over that span, sealed and live alike.
      const rows = cat(file, 1, "memory").filter((r) => tsOf(r) >= ts[0] && tsOf(r) <= ts[ts.length - 1]);
      assert.deepEqual(d.ts, rows.map((r) => String(tsOf(r))));
      for (let i = 0; i < rows.length; i++) assert.equal(d.max[i], Number(rows[i][column]), `row ${i}`);
      // Never an empty plot while following (a seal included).
      const draws = await page.evaluate(() => window.__draws);
      assert.ok(draws.length > 3);
      assert.ok(draws.every((x) => x.points > 0), `an empty plot was drawn: ${JSON.stringify(draws.filter((x) => x.points === 0))}`);

      // The server is killed mid-follow: the page says so, and resumes when it is back.
      const port = serve.port;
      serve.child.kill("SIGKILL");
      await page.locator('[data-testid="follow-status"][data-state="reconnecting"]').waitFor({ timeout: 10_000 });
      const gone = await newestDrawn(page, column);
      serve = await startServe(file, port);
      await drawnAfter(page, column, gone, 10_000);
      await page.locator('[data-testid="follow-status"][data-state="watching"]').waitFor({ timeout: 5000 });
      await screenshot(page, "follow-resumed.png", page.locator(`[data-testid="stream-view"]`));

      // Panning back turns following off; the button turns it on again.
      await page.locator('[data-testid="timeline"] button[title="Earlier"]').click();
      await page.locator('[data-testid="follow"][data-on="false"]').waitFor();
      await page.locator('[data-testid="follow"]').click();
      await page.locator('[data-testid="follow"][data-on="true"]').waitFor();

      // The writer finishes: complete appears without a reload.
      await writer.exited;
      await page.locator('[data-testid="follow-status"][data-state="complete"]').waitFor({ timeout: 10_000 });
      assert.deepEqual(page.problems.filter((p) => !/Failed to load resource|net::ERR_CONNECTION_REFUSED/.test(p)), []);
    } finally {
      await page.close();
      writer.child.kill("SIGKILL");
      serve.child.kill("SIGKILL");
    }
  });

  it("takes a newer image in place: a new seal's count, a new stream, an evicted segment gone, without rebuilding what stayed", T, async () => {
    // Two states of one archive, as a follower meets them: in the second,
    // the memory stream sealed a segment and lost its oldest to retention
    // (so its segment count is the same), and the network stream appeared.
    const full = join(dir, "states.dendro");
    dendro("demo", "--minutes", "12", "--hosts", "1", "--seal-every", "60", full);
    const d = parseJsonExact(dendro("describe", "--json", full));
    const id = d.sources[0].id;
    const seqs = d.sources[0].streams.find((s) => s.name === "memory").segments.map((s) => Number(s.seq));
    assert.ok(seqs.length >= 5, `the demo sealed memory ${seqs.length} times`);
    const oldest = seqs[0];
    const newest = seqs[seqs.length - 1];
    const first = edited(full, join(dir, "first.dendro"), [
      ...["segments", "wal", "caller_rows"].map((t) => `DELETE FROM ${t} WHERE source_id = ${id} AND stream = 'network'`),
      `DELETE FROM segments WHERE source_id = ${id} AND stream = 'memory' AND seq = ${newest}`,
    ]);
    const second = edited(full, join(dir, "second.dendro"), [`DELETE FROM segments WHERE source_id = ${id} AND stream = 'memory' AND seq = ${oldest}`]);
    const streamOf = (desc, name) => desc.sources[0].streams.find((s) => s.name === name);
    assert.equal(streamOf(first, "network"), undefined);
    assert.equal(streamOf(first, "memory").segments.length, streamOf(second, "memory").segments.length, "the same count before and after");
    const segmentsOf = (desc) => desc.sources[0].streams.reduce((n, s) => n + s.segments.length, 0);

    const live = join(dir, "states-live.dendro");
    copyFileSync(join(dir, "first.dendro"), live);
    const serve = await startServe(live);
    const page = await newPage(browser);
    try {
      const q = new URLSearchParams({ url: `/archives/${basename(live)}`, follow: "1", source: String(id), stream: "memory" });
      await page.goto(`http://127.0.0.1:${serve.port}/?${q}`);
      await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
      const lane = (name) => page.locator(`[data-testid="lane"][data-source="${id}"][data-stream="${name}"]`);
      const cardRow = (name) => page.locator(`[data-testid="source"][data-source="${id}"] [data-testid="stream-row"][data-stream="${name}"]`);
      await lane("memory").locator(`[data-testid="segment"][data-seq="${oldest}"]`).waitFor();
      assert.equal(await lane("network").count(), 0);
      assert.equal(await cardRow("network").count(), 0);
      // Marks on what should be kept, not built again.
      await lane("memory").evaluate((el) => (el.__kept = true));
      await cardRow("memory").evaluate((el) => (el.__kept = true));

      // The writer's next state, as a new image of the same URL.
      copyFileSync(join(dir, "second.dendro"), `${live}.next`);
      renameSync(`${live}.next`, live);
      await page.locator(`[data-field="streams"][data-value="${second.sources[0].streams.length}"]`).waitFor({ timeout: 10_000 });
      assert.equal(await page.locator('[data-field="segments"]').getAttribute("data-value"), String(segmentsOf(second)));
      // The new stream: a lane with its row count, and a row on the card.
      const net = streamOf(second, "network");
      await lane("network").waitFor();
      assert.equal(await lane("network").locator(".dv-tl-count").innerText(), `${(net.sealed_rows + net.live_rows).toLocaleString("en-US")} rows`);
      await cardRow("network").waitFor();
      assert.equal(await cardRow("network").locator("td").nth(1).innerText(), String(net.segments.length));
      // The memory lane: the evicted segment gone, the sealed one drawn.
      await lane("memory").locator(`[data-testid="segment"][data-seq="${newest}"]`).waitFor();
      assert.equal(await lane("memory").locator(`[data-testid="segment"][data-seq="${oldest}"]`).count(), 0, "the evicted segment is gone from the lane");
      const mem = streamOf(second, "memory");
      assert.equal(await cardRow("memory").locator("td").nth(1).innerText(), String(mem.segments.length));
      assert.equal(await cardRow("memory").locator("td").nth(2).innerText(), mem.sealed_rows.toLocaleString("en-US"));
      // The stream view: its counts, and a picker that offers the new segment and not the evicted one.
      await page.waitForFunction(
        (n) => /segments\s*([\d,]+)/.exec(document.querySelector('[data-testid="stream-stats"]')?.textContent ?? "")?.[1] === n,
        String(mem.segments.length),
      );
      const picker = page.locator('[data-testid="segment-select"]');
      await picker.locator(`option[value="${newest}"]`).waitFor({ state: "attached" });
      assert.equal(await picker.locator(`option[value="${oldest}"]`).count(), 0, "the evicted segment is not offered");
      // What stayed was patched, not built again.
      assert.equal(await lane("memory").evaluate((el) => el.__kept === true), true, "the memory lane was kept");
      assert.equal(await cardRow("memory").evaluate((el) => el.__kept === true), true, "the memory row of the card was kept");
      assert.deepEqual(page.problems, []);
    } finally {
      await page.close();
      serve.child.kill("SIGKILL");
    }
  });

  it("opens a live archive whose images go before its catalog is read: it reads on from the newest image, keeping what it read", T, async () => {
    // A live archive whose writer was killed: its -wal keeps the frames, so
    // dendro serve answers from images, and nothing changes meanwhile, so
    // what the page shows can be compared with the file.
    const file = join(dir, "left.dendro");
    const writer = await startWriter(file, 60);
    writer.child.kill("SIGKILL");
    await writer.exited;
    assert.ok(statSync(`${file}-wal`).size > 0, "the -wal holds frames");
    const d = parseJsonExact(dendro("describe", "--json", file));
    // Each of the first four images answers one ranged read and is then no
    // longer held (the server's test hook), as images go when a busy writer
    // outpaces a reader on a busy host: an open that starts over, or gives
    // up after four attempts, cannot finish.
    const serve = await startServe(file, 0, { DENDRO_SERVE_TEST_RETIRE: "1,4" });
    const page = await newPage(browser);
    try {
      const q = new URLSearchParams({ url: `/archives/${basename(file)}`, follow: "1", source: String(d.sources[0].id), stream: "memory" });
      await page.goto(`http://127.0.0.1:${serve.port}/?${q}`);
      await page.locator('[data-testid="overview"], [data-testid="error"]').first().waitFor({ timeout: 60_000 });
      assert.equal(await page.locator('[data-testid="error"]').count(), 0, await page.locator('[data-testid="error"]').innerText().catch(() => ""));
      // What is shown is the file's one committed state, not a mix of images.
      let streams = 0;
      let segments = 0;
      let rows = 0;
      for (const src of d.sources)
        for (const st of src.streams) {
          streams++;
          segments += st.segments.length;
          rows += Number(st.sealed_rows) + Number(st.live_rows);
        }
      const value = (field) => page.locator(`[data-field="${field}"]`).getAttribute("data-value");
      assert.equal(await value("sources"), String(d.sources.length));
      assert.equal(await value("streams"), String(streams));
      assert.equal(await value("segments"), String(segments));
      assert.equal(await value("rows"), String(rows));
      await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 30_000 });
      assert.deepEqual(page.problems.filter((p) => !/412/.test(p)), []);
    } finally {
      await page.close();
      serve.child.kill("SIGKILL");
    }
  });

  it("keeps verify's verdict across newer images, verifies the newest in turn, and shows a problem a newer image brings", T, async () => {
    const full = join(dir, "verify.dendro");
    dendro("demo", "--minutes", "12", "--hosts", "1", "--seal-every", "60", full);
    const d = parseJsonExact(dendro("describe", "--json", full));
    const id = d.sources[0].id;
    const seqs = d.sources[0].streams.find((s) => s.name === "memory").segments.map((s) => Number(s.seq));
    const newest = seqs[seqs.length - 1];
    const where = `source_id = ${id} AND stream = 'memory' AND seq = ${newest}`;
    // Three states: without the newest segment; with it (sealed since);
    // with its bytes damaged (same catalog identity, no Parquet magic).
    edited(full, join(dir, "v1.dendro"), [`DELETE FROM segments WHERE ${where}`]);
    edited(full, join(dir, "v2.dendro"), []);
    edited(full, join(dir, "v3.dendro"), [`UPDATE segments SET bytes = zeroblob(length(bytes)) WHERE ${where}`]);
    const segmentsOf = (desc) => desc.sources.reduce((n, src) => n + src.streams.reduce((m, s) => m + s.segments.length, 0), 0);

    const live = join(dir, "verify-live.dendro");
    copyFileSync(join(dir, "v1.dendro"), live);
    const serve = await startServe(live);
    const page = await newPage(browser);
    const swap = (name) => {
      copyFileSync(join(dir, name), `${live}.next`);
      renameSync(`${live}.next`, live);
    };
    try {
      const q = new URLSearchParams({ url: `/archives/${basename(live)}`, follow: "1", source: String(id), stream: "memory" });
      await page.goto(`http://127.0.0.1:${serve.port}/?${q}`);
      const badge = page.locator('[data-testid="verify"]');
      await page.locator('[data-testid="verify"][data-state="idle"]').click();
      await page.locator('[data-testid="verify"][data-state="sound"][data-current="true"]').waitFor({ timeout: 30_000 });
      const first = Number(await badge.getAttribute("data-verified"));
      assert.equal(first, segmentsOf(d) - 1);
      // Every state and text the badge shows from here on.
      await badge.evaluate((el) => {
        window.__badge = [];
        const note = () => window.__badge.push(`${el.dataset.state}|${el.textContent}`);
        new MutationObserver(note).observe(el, { attributes: true, childList: true, characterData: true, subtree: true });
      });

      // A newer image with one more segment: the verdict stays, the new segment is verified.
      swap("v2.dendro");
      await page.locator(`[data-field="segments"][data-value="${segmentsOf(d)}"]`).waitFor({ timeout: 10_000 });
      await page.locator(`[data-testid="verify"][data-state="sound"][data-current="true"][data-verified="${segmentsOf(d)}"]`).waitFor({ timeout: 30_000 });
      assert.equal(await badge.getAttribute("data-pending"), "0");
      const seen = await page.evaluate(() => window.__badge);
      assert.ok(seen.length > 0);
      assert.ok(
        seen.every((s) => s.startsWith("sound|✓ sound")),
        `the badge never went back to verifying or idle: ${JSON.stringify(seen)}`,
      );

      // A newer image whose segment is damaged: the verdict for it is shown.
      swap("v3.dendro");
      await page.locator('[data-testid="verify"][data-state="problems"][data-current="true"]').waitFor({ timeout: 30_000 });
      assert.match(await badge.innerText(), /✗ 1 problem/);
      assert.deepEqual(page.problems, []);
    } finally {
      await page.close();
      serve.child.kill("SIGKILL");
    }
  });

  it("follows through mountViewer({follow}) and <dendro-viewer follow> as the page does", T, async () => {
    const file = join(dir, "embedded.dendro");
    const writer = await startWriter(file, 40);
    const serve = await startServe(file);
    const page = await newPage(browser);
    try {
      await page.goto(`http://127.0.0.1:${serve.port}/`);
      const url = `/archives/${basename(file)}`;
      await page.evaluate(async (url) => {
        const m = await import("/dendro-viewer.js");
        for (const id of ["mounted", "element"]) {
          const div = document.createElement("div");
          div.id = id;
          div.style.height = "900px";
          document.body.prepend(div);
        }
        m.mountViewer(document.getElementById("mounted"), { url, follow: true });
        const el = document.createElement("dendro-viewer");
        el.setAttribute("follow", "");
        el.setAttribute("src", url);
        document.getElementById("element").appendChild(el);
      }, url);
      for (const host of ["#mounted", "#element"]) {
        const scope = page.locator(host);
        await scope.locator('[data-testid="follow"][data-on="true"]').waitFor({ timeout: 30_000 });
        const plot = scope.locator('[data-testid="plot"]').first();
        await plot.waitFor({ timeout: 30_000 });
        await page.waitForFunction((sel) => {
          const el = document.querySelector(sel);
          const p = (el?.shadowRoot ?? el?.querySelector(".dendro-viewer-host")?.shadowRoot)?.querySelector('[data-testid="plot"]');
          return p?.dendroPlot?.ts.length > 0;
        }, host.startsWith("#mounted") ? "#mounted .dendro-viewer-host" : "#element dendro-viewer");
        const newest = async () =>
          page.evaluate((sel) => {
            const el = document.querySelector(sel);
            const d = el.shadowRoot.querySelector('[data-testid="plot"]').dendroPlot;
            return String(d.ts[d.ts.length - 1]);
          }, host.startsWith("#mounted") ? "#mounted .dendro-viewer-host" : "#element dendro-viewer");
        const first = BigInt(await newest());
        await page.waitForFunction(
          ({ sel, first }) => {
            const d = document.querySelector(sel).shadowRoot.querySelector('[data-testid="plot"]').dendroPlot;
            return d.ts[d.ts.length - 1] > BigInt(first);
          },
          { sel: host.startsWith("#mounted") ? "#mounted .dendro-viewer-host" : "#element dendro-viewer", first: String(first) },
          { timeout: 3000 },
        );
      }
      assert.deepEqual(page.problems, []);
    } finally {
      await page.close();
      writer.child.kill("SIGKILL");
      serve.child.kill("SIGKILL");
    }
  });
});

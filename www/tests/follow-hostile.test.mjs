// A follow server that lies in `Dendro-Changed` (issue 29): the page's
// worker must not spend itself on the list. A server lists which 4 KiB
// units changed since the image the follower has; a list of one range
// covering 2^53 units (a few hundred bytes of header) once had the worker
// drop units one by one for ever, and the page froze. A list the worker
// cannot trust (wider than the file, out of order, too long) now costs
// the follower its page cache, read again from the new image, and
// following goes on.
//
// The server here is a small node one: the page and its scripts from
// www/dist (the tests' static server, proxied), and one "live" archive
// whose every image is the same fixture's bytes under a new ETag.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { FIXTURES, launch, missingPrerequisite, newPage, serve } from "./helpers.mjs";

const missing = missingPrerequisite();

/** The hostile lists, one per new image, in the order the follower meets them. */
const LISTS = [
  // One range of 2^53 units: the loop that was.
  "0-9007199254740990",
  // Units far past the end of a 64 KiB file.
  "1,100000-100001",
  // Out of order, and overlapping.
  "5-9,2-3",
];

/**
 * Starts the hostile server in front of `statics` (the tests' static
 * server): image 1 at first, then, each time the follower revalidates the
 * newest image, the next one with the next hostile list, and after the
 * last, 304 for ever. With `churn`, every revalidation gets a new image
 * instead, and every read of an image but the first is refused (412), as
 * if the writer always outran the reader. Notes every request to the
 * archive.
 */
async function hostileFollowServer(statics, bytes, { churn = false } = {}) {
  const seen = [];
  let newest = 1;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/archives/live.dendro") {
      const up = httpRequest(`${statics}${req.url}`, { method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on("error", () => res.destroy());
      req.pipe(up);
      return;
    }
    const ifNone = req.headers["if-none-match"] ?? null;
    const ifMatch = req.headers["if-match"] ?? null;
    seen.push({ ifNone, ifMatch, range: req.headers.range ?? null });
    const etag = (n) => `"img-${n}"`;
    let changed = null;
    if (churn && ifMatch === null && ifNone !== null) {
      // A new image at every probe, gone before it can be read.
      newest += 1;
    } else if (churn && ifMatch !== null && ifMatch !== etag(1)) {
      res.writeHead(412);
      res.end();
      return;
    } else if (ifMatch === null && ifNone === etag(newest)) {
      if (newest > LISTS.length) {
        res.writeHead(304, { etag: etag(newest) });
        res.end();
        return;
      }
      changed = `${etag(newest)} 4096 ${LISTS[newest - 1]}`;
      newest += 1;
    }
    if (ifMatch !== null && !/^"img-\d+"$/.test(ifMatch)) {
      res.writeHead(412);
      res.end();
      return;
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
    if (!m) {
      res.writeHead(416, { "content-range": `bytes */${bytes.length}` });
      res.end();
      return;
    }
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]), bytes.length - 1);
    const headers = {
      "content-type": "application/octet-stream",
      "accept-ranges": "bytes",
      "cache-control": "no-store",
      etag: ifMatch ?? etag(newest),
      "access-control-expose-headers": "ETag, Dendro-Changed",
      "content-range": `bytes ${start}-${end}/${bytes.length}`,
    };
    if (changed) headers["dendro-changed"] = changed;
    res.writeHead(206, headers);
    res.end(bytes.subarray(start, end + 1));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    close: () => new Promise((r) => server.close(r)),
  };
}

describe("a follow server that lies about what changed", () => {
  let statics;
  let hostile;
  let browser;

  before(async () => {
    assert.equal(missing, null, missing ?? "");
    statics = await serve();
    hostile = await hostileFollowServer(statics.url, readFileSync(join(FIXTURES, "b_multi_source.dendro")));
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await hostile?.close();
    await statics?.close();
  });

  it("reads each image whole again instead of trusting a changed list wider than the file, and keeps following", { timeout: 120_000 }, async () => {
    const page = await newPage(browser);
    try {
      await page.goto(`${hostile.url}/?${new URLSearchParams({ url: "/archives/live.dendro", follow: "1" })}`);
      await page.locator('[data-testid="overview"], [data-testid="error"]').first().waitFor({ timeout: 60_000 });
      assert.equal(await page.locator('[data-testid="error"]').count(), 0);
      // Every hostile image was taken, and the follower asks on from the last.
      const last = `"img-${LISTS.length + 1}"`;
      const deadline = Date.now() + 60_000;
      while (!hostile.seen.some((s) => s.ifNone === last) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      assert.ok(
        hostile.seen.some((s) => s.ifNone === last),
        `the follower never revalidated ${last}: ${JSON.stringify(hostile.seen.slice(-5))}`,
      );
      // No list was trusted: each image's catalog was read from the network again.
      for (let n = 2; n <= LISTS.length + 1; n++) {
        assert.ok(
          hostile.seen.some((s) => s.ifMatch === `"img-${n}"`),
          `image ${n} read nothing past its probe: its list was trusted`,
        );
      }
      assert.equal(await page.locator('[data-testid="error"]').count(), 0);
      assert.deepEqual(page.problems, []);
    } finally {
      await page.close();
    }
  });
});

describe("a follow server whose images never hold still", () => {
  let statics;
  let churning;
  let browser;

  before(async () => {
    assert.equal(missing, null, missing ?? "");
    statics = await serve();
    churning = await hostileFollowServer(statics.url, readFileSync(join(FIXTURES, "b_multi_source.dendro")), { churn: true });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await churning?.close();
    await statics?.close();
  });

  it("backs off after a few images replaced while read, says so, and does not probe in a tight loop", { timeout: 120_000 }, async () => {
    const page = await newPage(browser);
    try {
      await page.goto(`${churning.url}/?${new URLSearchParams({ url: "/archives/live.dendro", follow: "1" })}`);
      await page.locator('[data-testid="overview"]').waitFor({ timeout: 60_000 });
      // Probes in 8 s: four a second when all is well; a retry at once
      // after every replaced image made hundreds.
      const probes = () => churning.seen.filter((s) => s.ifMatch === null && s.ifNone !== null).length;
      const before = probes();
      await new Promise((r) => setTimeout(r, 8000));
      const made = probes() - before;
      assert.ok(made > 0, "the follower stopped asking");
      assert.ok(made <= 60, `${made} probes in 8 s`);
      await page.locator('[data-testid="follow-status"][data-state="reconnecting"]').waitFor({ timeout: 30_000 });
      assert.deepEqual(page.problems.filter((p) => !/412/.test(p)), []);
    } finally {
      await page.close();
    }
  });
});

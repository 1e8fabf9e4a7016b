// Archives read in place (issue 12): every shared fixture reads the same
// whether it is copied whole into the engine or read in place, a range at
// a time, from a dropped (disk-backed) File or over HTTP ranges: describe,
// every segment decoded and a reduced window, compared as digests. An
// archive rewritten on the server between two reads is reported as
// "Changed", in words, and never read as a mix of two versions; so is a
// picked file modified on disk. The viewer says which mode it is in.
//
// The engine runs as the page runs it (www/src/engine/, bundled with
// www/pkg by www/support/engine-page.mjs); the viewer tests use www/dist.
// The archive for the change tests is written by benches/inputs/big_archive.rs
// (4 MB: four segments of about 1 MiB, so their pages are not read by the
// open) into target/lazy-test/.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { appendFile, copyFile, mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { bundleEngine, startServer } from "../support/index.mjs";
import { dendro } from "./cli.mjs";
import { FIXTURES, ROOT, launch, missingPrerequisite, newPage, schema5Fixtures, serve, soundFixtures } from "./helpers.mjs";

const T = { timeout: 180_000 };
const WORK = join(ROOT, "target", "lazy-test");
const BIG = join(WORK, "four-segments.dendro");
// Enough segments for a catalog of a few dozen scattered leaf pages.
const MANY = join(WORK, "many-segments.dendro");

function bigArchive(path = BIG, mb = 4) {
  if (existsSync(path)) return;
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(ROOT, "target");
  const built = [join(targetDir, "release/examples/big_archive"), join(targetDir, "debug/examples/big_archive")].find((b) => existsSync(b));
  const [cmd, args] = built ? [built, [path, String(mb)]] : ["cargo", ["run", "--quiet", "--example", "big_archive", "--", path, String(mb)]];
  execFileSync(cmd, args, { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"], timeout: 1_800_000 });
}

/**
 * Runs in the page: a SHA-256 of everything a viewer reads from `h`
 * (describe; documents' histories; every segment decoded, and its caller
 * index; a reduced window of each stream),
 * with its errors' kinds and messages in place of what failed.
 */
async function digestInPage(h) {
  const text = (v) =>
    JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : ArrayBuffer.isView(x) ? Array.from(x, String).join(",") : x));
  const attempt = async (f) => {
    try {
      return text(await f());
    } catch (e) {
      return `error ${e.kind}: ${e.message}`;
    }
  };
  const parts = [];
  const d = await h.describe();
  parts.push(text(d));
  // A schema-5 file's documents and its caller indexes (segment_indexes).
  for (const doc of d.documents ?? []) parts.push(await attempt(() => h.documentHistory(doc.kind, doc.name)));
  for (const s of d.sources)
    for (const st of s.streams) {
      for (const seg of st.segments) {
        parts.push(await attempt(() => h.readSegment(s.id, st.name, seg.seq)));
        parts.push(await attempt(() => h.callerIndex(s.id, st.name, seg.seq)));
      }
      if (st.segments.length > 0) {
        const from = st.segments[0].first_ts;
        const to = st.segments[st.segments.length - 1].last_ts;
        parts.push(await attempt(() => h.readRange(s.id, st.name, from, to, { maxPoints: 300 })));
      }
      parts.push(await attempt(() => h.liveTail(s.id, st.name)));
    }
  const bytes = new TextEncoder().encode(parts.join("\n"));
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return { digest: Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join(""), parts: parts.length };
}

const missing = missingPrerequisite();
let browser;
let server;
const engineDir = join(tmpdir(), "dendro-lazy-test-engine");

before(async () => {
  if (missing) return;
  await mkdir(WORK, { recursive: true });
  bigArchive();
  bigArchive(MANY, 40);
  await bundleEngine(engineDir);
  server = await serve({ "/engine/": engineDir, "/work/": WORK });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** The engine page, with a file input the test fills with files on disk. */
async function enginePage() {
  const page = await newPage(browser);
  await page.goto(`${server.url}/engine/index.html`);
  await page.waitForFunction(() => typeof window.createEngine === "function");
  await page.evaluate(() => {
    const input = document.createElement("input");
    input.type = "file";
    input.multiple = true;
    input.id = "files";
    document.body.append(input);
  });
  return page;
}

/**
 * A fresh engine page with a demo archive as its writer left it (seals
 * and inserts reused freed pages, so chains and live rows lie scattered)
 * picked in the file input, written once; `window.openCpu()` opens it in
 * place and answers its first source's cpu stream.
 */
async function fragmentedDemoPage() {
  const file = join(WORK, "live-tail.dendro");
  if (!existsSync(file)) dendro("demo", "--size", "10", "--hosts", "1", file);
  const page = await enginePage();
  await page.locator("#files").setInputFiles(file);
  await page.evaluate(() => {
    window.openCpu = async () => {
      const engine = window.createEngine();
      const f = document.getElementById("files").files[0];
      const h = await engine.openFile(f, f.name);
      const d = await h.describe();
      const source = d.sources[0];
      return { engine, h, source, st: source.streams.find((x) => x.name === "cpu") };
    };
  });
  return page;
}

/** www/src/engine/sources.ts bundled for Node, for its pure parts (the read pool, the coalescing). */
async function sourcesModule() {
  const esbuild = await import("esbuild");
  const out = join(tmpdir(), `dendro-sources-${process.pid}.mjs`);
  await esbuild.build({ entryPoints: [join(ROOT, "www/src/engine/sources.ts")], bundle: true, format: "esm", platform: "neutral", outfile: out, logLevel: "warning" });
  return import(out);
}

describe("reads in flight together", () => {
  it("runs a batch's reads concurrently, never more bytes in flight than the budget unless one read alone is", async () => {
    const { pooled, nearby } = await sourcesModule();
    const trace = async (sizes, budget) => {
      let running = 0;
      let bytes = 0;
      let peak = { running: 0, bytes: 0 };
      const out = await pooled(
        sizes,
        16,
        async (n) => {
          running++;
          bytes += n;
          peak = { running: Math.max(peak.running, running), bytes: Math.max(peak.bytes, bytes) };
          await new Promise((r) => setTimeout(r, 2));
          running--;
          bytes -= n;
          return n * 2;
        },
        (n) => n,
        budget,
      );
      return { out, peak };
    };
    // Small reads: many at once, up to the count limit.
    const small = await trace(Array(40).fill(3), 1000);
    assert.deepEqual(small.out, Array(40).fill(6), "results in order");
    assert.equal(small.peak.running, 16);
    // Large ones: as many as the budget holds.
    const large = await trace(Array(12).fill(30), 100);
    assert.equal(large.peak.running, 3);
    assert.ok(large.peak.bytes <= 100, JSON.stringify(large.peak));
    // One larger than the budget still runs, alone.
    const huge = await trace([500, 10, 500, 10], 100);
    assert.deepEqual(huge.out, [1000, 20, 1000, 20]);
    assert.equal(huge.peak.bytes, 500);
    // Ranges a few KiB apart are read as one span; far apart, each its own.
    const spans = nearby([[0, 4096], [8192, 4096], [10 << 20, 4096]]);
    assert.deepEqual(spans.map((s) => [s.start, s.end, s.members]), [[0, 12288, [0, 1]], [10 << 20, (10 << 20) + 4096, [2]]]);
  });
});

// A prerequisite missing is a failure, not a quiet skip of everything below.
it("has what it needs to run", () => assert.equal(missing, null, missing ?? ""));

describe("an archive read in place", { skip: missing ?? false }, () => {
  it("reads every shared fixture as it reads the whole file: dropped and over HTTP", T, async () => {
    const fixtures = [...(await soundFixtures()), ...(await schema5Fixtures())];
    assert.ok(fixtures.length >= 7, `only ${fixtures.length} sound fixtures`);
    const page = await enginePage();
    await page.locator("#files").setInputFiles(fixtures.map((f) => f.path));
    const results = await page.evaluate(
      async ({ names, urls, digestSrc }) => {
        const digest = eval(`(${digestSrc})`);
        const engine = window.createEngine();
        const files = Array.from(document.getElementById("files").files);
        const out = [];
        for (const [i, name] of names.entries()) {
          const file = files.find((f) => f.name === name);
          const whole = await engine.open(await file.arrayBuffer(), name);
          const dropped = await engine.openFile(file, name);
          const http = await engine.openUrl(urls[i], name, { minLazyBytes: 0 });
          const row = { name, modes: [whole.mode, dropped.mode, http?.mode ?? null] };
          row.whole = await digest(whole);
          row.dropped = await digest(dropped);
          row.http = http ? await digest(http) : null;
          row.stats = [await whole.lazyStats(), await dropped.lazyStats(), http ? await http.lazyStats() : null];
          for (const h of [whole, dropped, http]) await h?.close();
          out.push(row);
        }
        engine.terminate();
        return out;
      },
      { names: fixtures.map((f) => basename(f.path)), urls: fixtures.map((f) => f.url), digestSrc: digestInPage.toString() },
    );
    for (const r of results) {
      assert.deepEqual(r.modes, ["memory", "lazy", "lazy"], `${r.name}: modes`);
      assert.ok(r.whole.parts >= 1, `${r.name}: read something`);
      assert.equal(r.dropped.digest, r.whole.digest, `${r.name}: a dropped file read in place reads as the whole file`);
      assert.equal(r.http.digest, r.whole.digest, `${r.name}: a URL read by ranges reads as the whole file`);
      assert.equal(r.stats[0], null, `${r.name}: no traffic figures in memory mode`);
      const [, dropped, http] = r.stats;
      assert.ok(dropped.fetches > 0 && dropped.fetchedBytes <= dropped.size, `${r.name}: the file was read in ranges, no byte twice`);
      assert.ok(http.fetches > 0 && http.fetchedBytes <= http.size, `${r.name}: the URL was read in ranges, no byte twice`);
    }
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("opens a large archive by reading its catalog only, and a segment's pages when it is read", T, async () => {
    const page = await enginePage();
    const r = await page.evaluate(async () => {
      const engine = window.createEngine();
      const h = await engine.openUrl("/work/four-segments.dendro", "four-segments.dendro", { minLazyBytes: 0 });
      const d = await h.describe();
      const opened = await h.lazyStats();
      const st = d.sources[0].streams[0];
      const last = st.segments[st.segments.length - 1];
      await h.readSegment(d.sources[0].id, st.name, last.seq);
      const read = await h.lazyStats();
      engine.terminate();
      return { opened, read, segmentBytes: last.bytes };
    });
    assert.ok(r.opened.fetchedBytes < r.opened.size / 4, `the open read ${r.opened.fetchedBytes} of ${r.opened.size} bytes`);
    assert.ok(r.read.fetchedBytes - r.opened.fetchedBytes >= r.segmentBytes, "the segment's pages were read when it was decoded");
    assert.ok(r.read.fetchedBytes - r.opened.fetchedBytes < 2 * r.segmentBytes + (64 << 10), "and not much more");
    await page.close();
  });

  it("brings a scattered catalog in with a few batched reads: multi-range requests where the server answers them", T, async () => {
    const page = await enginePage();
    await page.locator("#files").setInputFiles(MANY);
    const name = basename(MANY);
    await page.evaluate(() => {
      window.engine = window.createEngine();
      window.text = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : x));
    });
    // Each way of opening in turn, with the requests it made.
    const describeBy = async (how) => {
      const from = server.requests.length;
      const r = await page.evaluate(
        async ({ how, name }) => {
          const file = document.getElementById("files").files[0];
          const h =
            how === "whole"
              ? await window.engine.open(await file.arrayBuffer(), name)
              : how === "dropped"
                ? await window.engine.openFile(file, name)
                : await window.engine.openUrl(how === "multi" ? `/multi/work/${name}` : `/work/${name}`, name, { minLazyBytes: 0 });
          const d = await h.describe();
          const out = { describe: window.text(d), segments: d.sources[0].streams[0].segments.length, stats: await h.lazyStats() };
          await h.close();
          return out;
        },
        { how, name },
      );
      r.requests = server.requests.slice(from).filter((q) => q.path === `/work/${name}`);
      return r;
    };
    const whole = await describeBy("whole");
    const by = {};
    for (const how of ["dropped", "multi", "single"]) {
      const r = await describeBy(how);
      by[how] = r;
      assert.equal(r.describe, whole.describe, `${how}: describe reads as the whole file`);
      if (how === "dropped") continue;
      const several = r.requests.filter((q) => q.range?.includes(","));
      if (how === "multi") {
        // The scattered leaves (one segment's row each, a MiB apart) came
        // in multipart answers: a handful of requests, not one per segment.
        assert.ok(r.segments >= 30, `${r.segments} segments`);
        assert.ok(several.length >= 1 && several.every((q) => q.status === 206), "multi-range requests were answered");
        assert.ok(r.requests.length < 12, `${r.requests.length} requests to open and describe ${r.segments} segments`);
      } else {
        // A server that refuses several ranges (416): each is asked alone.
        assert.ok(several.length >= 1 && several.every((q) => q.status === 416), "the plain server refused multi-range requests");
        assert.ok(r.requests.length > by.multi.requests.length + 5, "so the ranges were asked for one by one");
      }
    }
    await page.evaluate(() => window.engine.terminate());
    await page.close();
  });

  it("reads a plot's footers by range, fetched ahead in one batch, and segments in one read each, as the whole file reads them", T, async () => {
    const page = await enginePage();
    await page.locator("#files").setInputFiles(MANY);
    const name = basename(MANY);
    await page.evaluate(() => {
      window.engine = window.createEngine();
      window.text = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : ArrayBuffer.isView(x) ? Array.from(x, String).join(",") : x));
    });
    const readBy = async (how) => {
      await page.evaluate(
        async ({ how, name }) => {
          const file = document.getElementById("files").files[0];
          const h =
            how === "whole"
              ? await window.engine.open(await file.arrayBuffer(), name)
              : how === "dropped"
                ? await window.engine.openFile(file, name)
                : await window.engine.openUrl(`/multi/work/${name}`, name, { minLazyBytes: 0 });
          const d = await h.describe();
          const st = d.sources[0].streams[0];
          window.opened = { h, source: d.sources[0].id, st, from: st.segments[0].first_ts, to: st.segments[st.segments.length - 1].last_ts };
        },
        { how, name },
      );
      const requestsBefore = server.requests.length;
      // Four buckets over 40 segments: most lie inside one and are answered by their footers.
      const few = await page.evaluate(async () => {
        const { h, source, st, from, to } = window.opened;
        const before = await h.lazyStats();
        const env = await h.readRange(source, st.name, from, to, { maxPoints: 4 });
        const after = await h.lazyStats();
        return { text: window.text(env), fromStats: env.segments_from_stats, decoded: env.segments_read, bytes: before && after.fetchedBytes - before.fetchedBytes };
      });
      const requests = server.requests.slice(requestsBefore).filter((q) => q.path === `/work/${name}`);
      const rest = await page.evaluate(async () => {
        const { h, source, st, from, to } = window.opened;
        const many = await h.readRange(source, st.name, from, to, { maxPoints: 5000 });
        const seg = await h.readSegment(source, st.name, st.segments[7].seq);
        await h.close();
        return { many: window.text(many), seg: window.text(seg), largest: Math.max(...st.segments.map((x) => x.bytes)) };
      });
      return { few, requests, ...rest };
    };
    const whole = await readBy("whole");
    assert.ok(whole.few.fromStats >= 20, `${whole.few.fromStats} segments from footers`);
    for (const how of ["dropped", "http"]) {
      const r = await readBy(how);
      assert.equal(r.few.text, whole.few.text, `${how}: the envelope from footers reads as the whole file's`);
      assert.equal(r.many, whole.many, `${how}: every segment decoded reads as the whole file's`);
      assert.equal(r.seg, whole.seg, `${how}: a segment reads as the whole file's`);
      // The footers' pages, and each decoded segment's chain: not a segment's worth per footer.
      assert.ok(r.few.bytes <= r.few.decoded * r.largest + (1 << 20), `${how}: ${r.few.bytes} bytes for ${r.few.fromStats} footers and ${r.few.decoded} segments`);
      if (how === "http") {
        // One multi-range request for the footers, one request per decoded segment.
        assert.ok(r.requests.some((q) => q.range?.includes(",") && q.status === 206), "the footers came in a multi-range request");
        assert.ok(r.requests.length <= r.few.decoded + 3, `${r.requests.length} requests for ${r.few.fromStats} footers and ${r.few.decoded} segments`);
      }
    }
    await page.evaluate(() => window.engine.terminate());
    await page.close();
  });

  it("fetches a wide stream's long footers ahead with the rest, not one request each", T, async () => {
    // The demo's cpu streams have hundreds of columns: footers of tens of KB.
    // Copied, so that each payload's pages lie in one run (a writer that
    // pruned reuses freed pages, and those chains are read through SQLite).
    const wide = join(WORK, "wide-footers.dendro");
    if (!existsSync(wide)) {
      const demo = join(WORK, "wide-footers-demo.dendro");
      await rm(demo, { force: true });
      dendro("demo", "--size", "10", "--hosts", "1", demo);
      dendro("copy", demo, wide);
    }
    const page = await enginePage();
    const name = basename(wide);
    await page.evaluate(async (name) => {
      window.engine = window.createEngine();
      const h = await window.engine.openUrl(`/multi/work/${name}`, name, { minLazyBytes: 0 });
      const d = await h.describe();
      const st = d.sources[0].streams.find((x) => x.name === "cpu");
      const schema = await h.schema(d.sources[0].id, st.name);
      const columns = schema.columns.filter((c) => c.name !== schema.ts_column && /^(Int|UInt|Float)/.test(c.type)).slice(0, 8).map((c) => c.name);
      window.wide = { h, source: d.sources[0].id, st, columns };
    }, name);
    const before = server.requests.length;
    const r = await page.evaluate(async () => {
      const { h, source, st, columns } = window.wide;
      const from = st.segments[0].first_ts;
      const to = st.segments[st.segments.length - 1].last_ts;
      // A few buckets, several segments each: most lie inside one and come from their footers.
      const env = await h.readRange(source, st.name, from, to, { columns, maxPoints: 3 });
      window.engine.terminate();
      return { segments: st.segments.length, fromStats: env.segments_from_stats, decoded: env.segments_read, columns: columns.length };
    });
    const requests = server.requests.slice(before).filter((q) => q.path === `/work/${name}`);
    assert.ok(r.columns > 0 && r.fromStats >= 6, `${r.fromStats} of ${r.segments} segments from footers (${r.columns} columns)`);
    // The footers in one multi-range request, and one request a decoded segment.
    assert.ok(requests.some((q) => q.range?.includes(",") && q.status === 206), "the footers came in a multi-range request");
    assert.ok(requests.length <= r.decoded + 1, `${requests.length} requests for ${r.fromStats} footers and ${r.decoded} decoded segments: ${requests.map((q) => q.range).join(" ")}`);
    await page.close();
  });

  it("fetches a live tail's rows ahead in batches, not one waited read per page", T, async () => {
    // Not copied: the writer's inserts reused freed pages, so a stream's
    // live rows and their overflow pages lie scattered through the file.
    const page = await fragmentedDemoPage();
    const r = await page.evaluate(async () => {
      const { engine, h, source, st } = await window.openCpu();
      const schema = await h.schema(source.id, st.name);
      const columns = schema.columns.filter((c) => c.name !== schema.ts_column && /^(Int|UInt|Float)/.test(c.type)).slice(0, 8).map((c) => c.name);
      const last = st.segments[st.segments.length - 1];
      const before = await h.lazyStats();
      // The tail alone: every live row lies after the last segment.
      const env = await h.readRange(source.id, st.name, last.last_ts + 1n, st.live_span[1], { columns, maxPoints: 500 });
      const after = await h.lazyStats();
      engine.terminate();
      const waited = (s) => s.fetches - s.primed;
      return {
        readable: source.live_readable,
        live: st.live_rows,
        inWindow: env.live_rows_in_window,
        decoded: env.segments_read,
        waited: waited(after) - waited(before),
        primed: after.primed - before.primed,
      };
    });
    assert.ok(r.readable && r.live >= 20 && r.inWindow === r.live && r.decoded === 0, JSON.stringify(r));
    // Read as SQLite asks for them, the tail's index and leaf pages (and
    // overflow pages, for wider rows) were read one waited miss at a time,
    // scattered where the writer found free pages. Now they come in the
    // prefetch's batches, and the read itself waits for nothing.
    assert.ok(r.waited === 0, `${r.waited} waited reads for ${r.live} live rows: ${JSON.stringify(r)}`);
    assert.ok(r.primed > 0, JSON.stringify(r));
    await page.close();
  });

  it("reads no segment of a writer-made archive through SQLite's pager, however its chains break", T, async () => {
    // The demo as its writer left it: seals and prunes reused freed pages,
    // so its payloads' chains break every few pages. Every segment of every
    // stream is read whole, by chunks and by footer; the engine counts the
    // payloads it had to leave to SQLite (a page at a time, a read each).
    const page = await fragmentedDemoPage();
    const r = await page.evaluate(async () => {
      const { engine, h, source } = await window.openCpu();
      let segments = 0;
      for (const st of source.streams) {
        if (st.segments.length === 0) continue;
        const from = st.segments[0].first_ts;
        const to = st.segments.at(-1).last_ts;
        await h.readRange(source.id, st.name, from, to, { maxPoints: 7 });
        await h.readRange(source.id, st.name, from, to, {});
        for (const g of st.segments) await h.readSegment(source.id, st.name, g.seq);
        segments += st.segments.length;
      }
      const stats = await h.lazyStats();
      engine.terminate();
      return { segments, sqlitePayloads: stats.sqlitePayloads };
    });
    assert.ok(r.segments >= 20, JSON.stringify(r));
    assert.equal(r.sqlitePayloads, 0, `segments read through SQLite's pager: ${JSON.stringify(r)}`);
    await page.close();
  });

  it("prefetches a stream's window so that its plot's read fetches nothing more ahead", T, async () => {
    // The page sends the prefetch as soon as it knows the stream to plot,
    // and builds its cards meanwhile. The demo's chains are fragmented
    // (the writer's seals reuse freed pages), the harder case.
    const page = await fragmentedDemoPage();
    const r = await page.evaluate(async () => {
      const { engine, h, source, st } = await window.openCpu();
      const from = st.segments[0].first_ts;
      const to = st.live_span[1];
      const opened = await h.lazyStats();
      await h.prefetch(source.id, st.name, from, to);
      const prefetched = await h.lazyStats();
      const schema = await h.schema(source.id, st.name);
      const columns = schema.columns.filter((c) => c.name !== schema.ts_column && /^(Int|UInt|Float)/.test(c.type)).slice(0, 8).map((c) => c.name);
      let previews = 0;
      const env = await h.readRange(source.id, st.name, from, to, { columns, maxPoints: 500, onPreview: () => previews++ });
      const read = await h.lazyStats();
      engine.terminate();
      return {
        segments: st.segments.length,
        decoded: env.segments_read,
        previews,
        prefetchPrimed: prefetched.primed - opened.primed,
        readPrimed: read.primed - prefetched.primed,
      };
    });
    assert.ok(r.segments >= 3 && r.previews === 1 && r.decoded === r.segments, JSON.stringify(r));
    assert.ok(r.prefetchPrimed > 0, `the prefetch fetched nothing: ${JSON.stringify(r)}`);
    assert.equal(r.readPrimed, 0, `the read fetched ahead again what the prefetch should have: ${JSON.stringify(r)}`);
    await page.close();
  });

  it("outlines a large catalog from its indexes, reading a few pages, before listing it", T, async () => {
    // MANY: a stream of about forty 1 MiB segments, its catalog's leaves a
    // MiB apart. The page asks for an outline from 256 segments; this asks
    // from 0, and again from 256 to see the null below the threshold.
    const page = await enginePage();
    await page.locator("#files").setInputFiles(MANY);
    const r = await page.evaluate(async () => {
      const text = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : x));
      const engine = window.createEngine();
      const file = document.getElementById("files").files[0];
      const small = await engine.openFile(file, file.name);
      const belowThreshold = await small.outline();
      await small.close();
      const whole = await engine.open(await file.arrayBuffer(), file.name);
      const inMemory = await whole.outline(0);
      const full = await whole.describe();
      await whole.close();
      const h = await engine.openFile(file, file.name);
      const opened = await h.lazyStats();
      const outline = await h.outline(0);
      const outlined = await h.lazyStats();
      const described = await h.describe();
      const listed = await h.lazyStats();
      engine.terminate();
      const st = outline.sources[0].streams[0];
      const fullSt = full.sources[0].streams[0];
      return {
        belowThreshold,
        inMemory,
        flagged: outline.outline === true && described.outline === undefined,
        listedNone: outline.sources.every((s) => s.streams.every((x) => x.segments.length === 0 && x.sealed_rows === 0)),
        outline: text(st.outline),
        expected: text({
          segments: fullSt.segments.length,
          first_ts: fullSt.segments[0].first_ts,
          last_ts: fullSt.segments.at(-1).last_ts,
          // The sealed rows estimated from the first segment's, until counted.
          rows_estimate: fullSt.segments[0].rows * fullSt.segments.length,
        }),
        sameDescription: text(described) === text(full),
        sameRest: text(outline.sources.map((s) => ({ ...s, streams: s.streams.map(({ name, live_rows, live_span, caller_rows }) => ({ name, live_rows, live_span, caller_rows })) }))) ===
          text(full.sources.map((s) => ({ ...s, streams: s.streams.map(({ name, live_rows, live_span, caller_rows }) => ({ name, live_rows, live_span, caller_rows })) }))),
        segments: fullSt.segments.length,
        outlinePages: (outlined.fetchedBytes - opened.fetchedBytes) / 4096,
        listingPages: (listed.fetchedBytes - outlined.fetchedBytes) / 4096,
      };
    });
    assert.equal(r.belowThreshold, null, "below the threshold, no outline");
    assert.equal(r.inMemory, null, "held in memory, no outline");
    assert.ok(r.flagged && r.listedNone, JSON.stringify(r));
    assert.equal(r.outline, r.expected, "the stream's count and sealed span");
    assert.ok(r.sameRest, "sources, streams, live tails and caller rows as describe says");
    assert.ok(r.sameDescription, "the description after it as the whole file's");
    // The indexes and the first segment's leaf: a few pages. The listing
    // then reads a leaf per few segments, each a MiB from the next.
    console.log(`# outline of ${r.segments} segments: ${r.outlinePages} pages read, then ${r.listingPages} by the listing`);
    assert.ok(r.segments >= 30, `${r.segments} segments`);
    assert.ok(r.outlinePages <= 6, `the outline read ${r.outlinePages} pages`);
    assert.ok(r.listingPages >= r.segments / 4, `the listing read ${r.listingPages} pages after it`);
    await page.close();
  });

  it("says the archive changed when the server's copy is rewritten between reads", T, async () => {
    const dir = join(WORK, "changing");
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await copyFile(BIG, join(dir, "a.dendro"));
    const changing = await startServer({ root: engineDir, mounts: { "/engine/": engineDir, "/changing/": dir } });
    const page = await newPage(browser);
    await page.goto(`${changing.url}/engine/index.html`);
    await page.waitForFunction(() => typeof window.createEngine === "function");
    await page.evaluate(async () => {
      const engine = window.createEngine();
      window.h = await engine.openUrl("/changing/a.dendro", "a.dendro", { minLazyBytes: 0 });
      window.d = await window.h.describe();
    });
    // Rewritten on the server: its ETag and length change.
    await appendFile(join(dir, "a.dendro"), Buffer.alloc(4096, 7));
    const r = await page.evaluate(async () => {
      const st = window.d.sources[0].streams[0];
      const last = st.segments[st.segments.length - 1];
      const outcome = async (f) => {
        try {
          await f();
          return { ok: true };
        } catch (e) {
          return { ok: false, kind: e.kind, message: e.message };
        }
      };
      const first = await outcome(() => window.h.readSegment(window.d.sources[0].id, st.name, last.seq));
      // Every later read fails the same way, even of pages read before.
      const again = await outcome(() => window.h.readSegment(window.d.sources[0].id, st.name, st.segments[0].seq));
      // A plot from footers too: a message, never a plot of two versions.
      const plot = await outcome(() => window.h.readRange(window.d.sources[0].id, st.name, st.segments[0].first_ts, last.last_ts, { maxPoints: 2 }));
      return { first, again, plot };
    });
    assert.equal(r.first.ok, false, "no data from a file that changed");
    assert.equal(r.first.kind, "Changed", r.first.message);
    assert.match(r.first.message, /a\.dendro: the file changed while it was being read/);
    assert.match(r.first.message, /ETag|bytes/);
    assert.equal(r.again.kind, "Changed");
    assert.equal(r.plot.ok, false, "no plot from a file that changed");
    assert.equal(r.plot.kind, "Changed", r.plot.message);
    await page.close();
    await changing.close();
  });

  it("says the archive changed when a picked file is modified on disk", T, async () => {
    const path = join(WORK, "picked.dendro");
    await copyFile(BIG, path);
    const page = await enginePage();
    await page.locator("#files").setInputFiles(path);
    await page.evaluate(async () => {
      const engine = window.createEngine();
      const file = document.getElementById("files").files[0];
      window.h = await engine.openFile(file, file.name);
      window.d = await window.h.describe();
    });
    await appendFile(path, Buffer.alloc(4096, 7));
    const r = await page.evaluate(async () => {
      const st = window.d.sources[0].streams[0];
      const last = st.segments[st.segments.length - 1];
      try {
        await window.h.readSegment(window.d.sources[0].id, st.name, last.seq);
        return { ok: true };
      } catch (e) {
        return { ok: false, kind: e.kind, message: e.message };
      }
    });
    assert.equal(r.ok, false, "no data from a file that changed");
    assert.equal(r.kind, "Changed", r.message);
    await page.close();
  });

  it("the viewer reads a drop in place in lazy mode, says so, and shows what memory mode shows", T, async () => {
    const viewer = await startServer({ root: join(ROOT, "www", "dist"), mounts: { "/fixtures/": FIXTURES } });
    const shown = {};
    for (const mode of ["memory", "lazy"]) {
      const page = await newPage(browser);
      await page.goto(`${viewer.url}/?mode=${mode}`);
      await page.locator('[data-testid="file-input"]').setInputFiles(join(FIXTURES, "b_multi_source.dendro"));
      const overview = page.locator('[data-testid="overview"]');
      await overview.waitFor();
      await page.locator('[data-testid="plots"][data-state="drawn"]').first().waitFor();
      shown[mode] = await overview.evaluate((el) =>
        Object.fromEntries(Array.from(el.querySelectorAll("[data-field]"), (f) => [f.dataset.field, f.dataset.value ?? null])),
      );
      assert.deepEqual(page.problems, [], `${mode}: no page errors`);
      await page.close();
    }
    assert.equal(shown.memory.mode, "memory");
    assert.equal(shown.lazy.mode, "lazy");
    for (const key of ["file_bytes", "sources", "streams", "segments", "rows", "span"])
      assert.equal(shown.lazy[key], shown.memory[key], `overview field ${key}`);
    await viewer.close();
  });
});

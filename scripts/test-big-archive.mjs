// An archive past 4 GiB in the browser (issue 12): wasm32 cannot address
// it, so only the lazy mode opens it. Writes a 4.5 GiB archive once (one
// stream of ~1 MiB segments, through the transaction API:
// benches/inputs/big_archive.rs, in release; a minute or two and 4.6 GB of disk,
// kept in target/big-archive/), then in headless Chromium, from a picked
// (disk-backed) File and over HTTP ranges: opens it, describes it, and
// reads a plot's window over its last segment, whose values the writer
// made recognisable. Not in scripts/test.sh: it is slow and needs the
// disk; run it by hand or in a nightly job.
//
//   node scripts/test-big-archive.mjs [SIZE_MB]   (default 4608)
//
// Needs www/pkg (scripts/build-wasm.sh). Exits 1 on a failure.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundleEngine, launch, root, startServer } from "../www/support/index.mjs";

const sizeMb = Number(process.argv[2] ?? 4608);
const dir = join(root, "target", "big-archive");
const path = join(dir, `big${sizeMb}.dendro`);
mkdirSync(dir, { recursive: true });
if (!existsSync(path)) {
  console.log(`test-big-archive: writing ${path}`);
  execFileSync("cargo", ["run", "--release", "--quiet", "--example", "big_archive", "--", path, String(sizeMb)], { cwd: root, stdio: "inherit" });
}
const size = statSync(path).size;
console.log(`test-big-archive: ${path}: ${(size / 2 ** 30).toFixed(2)} GiB`);

const engineDir = join(tmpdir(), "dendro-big-archive-engine");
await bundleEngine(engineDir);
const server = await startServer({ root: engineDir, mounts: { "/engine/": engineDir, "/big/": dir } });
const browser = await launch();
let failed = 0;

async function check(how, open) {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(e.message));
  await page.goto(`${server.url}/engine/index.html`);
  await page.waitForFunction(() => typeof window.createEngine === "function");
  await page.evaluate(() => {
    const input = document.createElement("input");
    input.type = "file";
    input.id = "file";
    document.body.append(input);
  });
  await page.locator("#file").setInputFiles(path);
  const name = path.split("/").pop();
  const r = await page.evaluate(
    async ({ how, name }) => {
      const t0 = performance.now();
      const engine = window.createEngine();
      const h =
        how === "file"
          ? await engine.openFile(document.getElementById("file").files[0], name)
          : await engine.openUrl(`/big/${name}`, name, { minLazyBytes: 0 });
      const d = await h.describe();
      const described = performance.now() - t0;
      const src = d.sources[0];
      const st = src.streams[0];
      const last = st.segments[st.segments.length - 1];
      const env = await h.readRange(src.id, st.name, last.first_ts, last.last_ts, { maxPoints: 1000 });
      const plotted = performance.now() - t0;
      const col = env.columns.find((c) => c.name === "value");
      let lo = Infinity;
      let hi = -Infinity;
      for (let i = 0; i < col.min.length; i++) {
        lo = Math.min(lo, col.min[i]);
        hi = Math.max(hi, col.max[i]);
      }
      const stats = await h.lazyStats();
      engine.terminate();
      return {
        fileBytes: d.file_bytes,
        segments: st.segments.length,
        lastSeq: last.seq,
        points: env.ts.length,
        lo,
        hi,
        described: Math.round(described),
        plotted: Math.round(plotted),
        fetches: stats.fetches,
        fetchedBytes: stats.fetchedBytes,
      };
    },
    { how, name },
  );
  // The writer's values in segment `seq`: (seq % 100) + a ramp in [0, 1) + noise in [0, 1).
  const base = r.lastSeq % 100;
  const ok =
    problems.length === 0 &&
    r.fileBytes === size &&
    r.fileBytes > 2 ** 32 === size > 2 ** 32 &&
    r.points > 100 &&
    r.lo >= base &&
    r.hi < base + 2 &&
    r.hi - r.lo > 1;
  console.log(
    `${ok ? "ok  " : "FAIL"} ${how}: ${r.segments} segments; described in ${r.described} ms, last segment (${r.lastSeq}) plotted ` +
      `in ${r.plotted} ms with ${r.points} points in [${r.lo.toFixed(2)}, ${r.hi.toFixed(2)}]; ` +
      `${r.fetches} reads, ${(r.fetchedBytes / 2 ** 20).toFixed(2)} MiB of ${(size / 2 ** 20).toFixed(0)} MiB` +
      (problems.length ? `; page errors: ${problems.join("; ")}` : ""),
  );
  if (!ok) failed++;
  await page.close();
}

try {
  await check("file");
  await check("http");
} finally {
  await browser.close();
  await server.close();
}
process.exit(failed ? 1 : 0);

// Benchmarks opening a shared link (issue 35) against opening the same
// view from today's plain parameters, on the real page (www/dist) in
// headless Chromium, each run in a fresh browser context (nothing stored):
// time from navigation to the plots drawn, A B B A ... so drift falls on
// both sides alike. The link carries 20 notes on b_multi_source (one of
// the shared fixtures); the plain address carries none (it cannot).
//
//   node benches/browser/share.mjs [--runs N]

import { deflateRawSync } from "node:zlib";
import { join } from "node:path";
import { launch, root, startServer } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const runs = Number(args.includes("--runs") ? args[args.indexOf("--runs") + 1] : 7) || 7;
const FROM = 1_700_000_010_000_000_000n;
const width = 50_000_000_000n;
const url = "/fixtures/b_multi_source.dendro";
const server = await startServer({ root: join(root, "www/dist"), mounts: { "/fixtures/": join(root, "../shared/fixtures") } });
const browser = await launch();

const notes = Array.from({ length: 20 }, (_, i) => [1, String(BigInt(i) * 2_000_000_000n), i % 4 === 0 ? "1000000000" : 0, `#${i} spike after deploy ${1000 + i}`]);
const v = deflateRawSync(Buffer.from(JSON.stringify({ v: 1, u: [url], s: 1, t: "cpu", c: ["value"], f: String(FROM), o: String(width), n: notes }))).toString("base64url");
const arms = {
  plain: `${server.url}/?url=${url}&source=1&stream=cpu&col=value&from=${FROM}&to=${FROM + width}`,
  link: `${server.url}/?v=${v}`,
};

async function once(address, wantNotes) {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  const page = await context.newPage();
  const t0 = Date.now();
  await page.goto(address);
  await page.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 60_000 });
  if (wantNotes) await page.locator(`[data-testid="notes"][data-count="${wantNotes}"]`).waitFor();
  const ms = Date.now() - t0;
  await context.close();
  return ms;
}

const times = { plain: [], link: [] };
await once(arms.plain, 0); // warm the server's and the browser's caches of the page itself
for (let r = 0; r < runs; r++) {
  const order = r % 2 === 0 ? ["plain", "link"] : ["link", "plain"];
  for (const arm of order) times[arm].push(await once(arms[arm], arm === "link" ? 20 : 0));
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(`link address: ${arms.link.length - server.url.length} bytes after the origin (20 notes)`);
for (const arm of ["plain", "link"]) console.log(`${arm}: median ${median(times[arm])} ms to plots drawn (runs: ${times[arm].join(", ")})`);
console.log(`ratio link / plain: ${(median(times.link) / median(times.plain)).toFixed(2)}`);
await browser.close();
await server.close();

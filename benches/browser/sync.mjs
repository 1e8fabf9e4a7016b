// How soon the cursor moved over a plot in one embedded viewer reaches a
// second viewer of the same sync group (issue 31: within one animation
// frame). The page is examples/sync.html (two <dendro-viewer sync-group>)
// with an archive in each; the mouse is moved over the left viewer's
// first plot by real input events (DevTools' Input domain), one move a
// frame, and for each move the page records:
//
//   latency   from the left plot's first listener of the event to the
//             moment the right viewer's plot cursor has moved (a
//             MutationObserver on its style, which runs at the end of the
//             event's task): what the sync costs
//   input     from the event's timeStamp to that first listener: the
//             browser's input pipeline, which no page code shortens
//   frame     whether that happened before the next animation frame
//             (the count of requestAnimationFrame callbacks run since the
//             event is still zero)
//
// Prints the median and p95 latency (ms) and the share of moves that
// arrived within the frame, per run and over all runs.
//
//   node benches/browser/sync.mjs [--runs N] [--moves N] [--archive FILE] [--dist DIR]
//
// Builds nothing: www/dist must be built (npm run build:www).
import { existsSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { launch, root, startServer } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const runs = Number(opt("--runs")) || 5;
const moves = Number(opt("--moves")) || 120;
const dist = opt("--dist") ?? join(root, "www/dist");
const archive = opt("--archive") ?? join(root, "..", "shared", "fixtures", "b_multi_source.dendro");
if (!existsSync(join(dist, "examples/sync.html"))) {
  console.error(`bench-sync: ${dist}/examples/sync.html is missing: run \`npm run build:www\``);
  process.exit(2);
}

const server = await startServer({ root: dist, mounts: { "/data/": dirname(archive) } });
const browser = await launch();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))];
const all = [];
const inputs = [];
let within = 0;
for (let run = 0; run < runs; run++) {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const src = `/data/${encodeURIComponent(basename(archive))}`;
  await page.goto(`${server.url}/examples/sync.html?src=${src}&src=${src}`);
  await page.locator('#status[data-state="ok"]').waitFor({ timeout: 60_000 });
  for (const id of ["#left", "#right"]) await page.locator(`${id} [data-testid="plots"][data-state="drawn"]`).waitFor({ timeout: 60_000 });
  await page.evaluate(() => {
    const w = window;
    w.__sync = [];
    const right = document.getElementById("right").shadowRoot.querySelector('[data-testid="plot"] .u-cursor-x');
    const over = document.getElementById("left").shadowRoot.querySelector('[data-testid="plot"] .u-over');
    let pending = null;
    let frames = 0;
    const tick = () => {
      frames++;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
    over.addEventListener("mousemove", (ev) => (pending = { t: performance.now(), input: performance.now() - ev.timeStamp, frames }), true);
    new MutationObserver(() => {
      if (!pending) return;
      w.__sync.push({ ms: performance.now() - pending.t, input: pending.input, sameFrame: frames === pending.frames });
      pending = null;
    }).observe(right, { attributes: true, attributeFilter: ["style"] });
  });
  // The plots sit below the overview: bring the first into sight (the
  // right viewer's, beside it, comes with it).
  await page.locator('#left [data-testid="plot"] .u-over').first().scrollIntoViewIfNeeded();
  const box = await page.locator('#left [data-testid="plot"] .u-over').first().boundingBox();
  for (let i = 0; i < moves; i++) {
    const f = 0.1 + 0.8 * ((i * 37) % moves) / moves;
    await page.mouse.move(box.x + box.width * f, box.y + box.height / 2);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  }
  const got = await page.evaluate(() => window.__sync);
  const ms = got.map((g) => g.ms);
  const same = got.filter((g) => g.sameFrame).length;
  const input = got.map((g) => g.input);
  inputs.push(...input);
  all.push(...ms);
  within += same;
  console.log(`run ${run + 1}: ${got.length}/${moves} moves reached the right viewer; latency median ${median(ms).toFixed(2)} ms, p95 ${p95(ms).toFixed(2)} ms (input before it ${median(input).toFixed(1)} ms); within the frame ${same}/${got.length}`);
  await context.close();
}
console.log(`all runs: ${all.length} moves, latency median ${median(all).toFixed(2)} ms, p95 ${p95(all).toFixed(2)} ms (input pipeline before it: median ${median(inputs).toFixed(1)} ms), within the frame ${within}/${all.length} (${((within / all.length) * 100).toFixed(1)}%)`);
await browser.close();
await server.close();

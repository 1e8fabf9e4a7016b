// How fast a worker in headless Chromium reads a dropped (disk-backed)
// File: the floor under issue 12's "segment decode in place against the
// whole file" ratio, which adds such a read to every cold decode. For
// ranges the size of a segment, spread over the file, it times a
// `FileReaderSync` read, a `Blob.arrayBuffer()` read, the same range as
// 2, 4 and 8 slices read at once, and an in-memory copy of as many bytes.
// Medians of twelve ranges a page, three fresh pages.
//
//   node benches/browser/file-read.mjs [FILE] [--bytes N]
//
// FILE defaults to the 100 MB archive of benches/browser/in-place.mjs
// (target/bench-lazy/big100.dendro); --bytes to 1.8 MB, about one of its
// segments.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launch, root, startServer } from "../../www/support/index.mjs";

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const file = args.find((a, i) => !a.startsWith("--") && args[i - 1] !== "--bytes") ?? join(root, "target/bench-lazy/big100.dendro");
const bytes = Number(opt("--bytes")) || 1_800_000;

/** Runs in the worker: the timings for one File. */
function measure(size) {
  onmessage = async (e) => {
    const file = e.data;
    const N = 12;
    const offsets = Array.from({ length: N }, (_, i) => Math.floor(((i + 1) * (file.size - size)) / (N + 1)));
    const median = (a) => a.sort((x, y) => x - y)[a.length >> 1];
    const reader = new FileReaderSync();
    reader.readAsArrayBuffer(file.slice(0, 4096));
    const out = {};
    const time = async (name, read) => {
      const t = [];
      // A different shift per way, so no way reads another's ranges again.
      const shift = Object.keys(out).length * 4099;
      for (const o of offsets) {
        const a = performance.now();
        await read(Math.min(o + shift, file.size - size));
        t.push(performance.now() - a);
      }
      out[name] = Math.round(median(t) * 10) / 10;
    };
    await time("FileReaderSync", (o) => reader.readAsArrayBuffer(file.slice(o, o + size)));
    await time("arrayBuffer", (o) => file.slice(o, o + size).arrayBuffer());
    for (const parts of [2, 4, 8]) {
      const step = Math.ceil(size / parts);
      await time(`arrayBuffer x${parts}`, (o) =>
        Promise.all(Array.from({ length: parts }, (_, k) => file.slice(o + k * step, o + Math.min(size, (k + 1) * step)).arrayBuffer())),
      );
    }
    const from = new Uint8Array(size);
    const to = new Uint8Array(size);
    const a = performance.now();
    for (let i = 0; i < 20; i++) to.set(from);
    out["memory copy"] = Math.round(((performance.now() - a) / 20) * 100) / 100;
    postMessage(out);
  };
}

const dir = await mkdtemp(join(tmpdir(), "dendro-file-read-"));
await writeFile(join(dir, "worker.js"), `(${measure})(${bytes});`);
await writeFile(
  join(dir, "index.html"),
  `<!doctype html><input type=file id=f><script>
window.run = (file) => new Promise((done) => { const w = new Worker("worker.js"); w.onmessage = (e) => done(e.data); w.postMessage(file); });
</script>`,
);
const server = await startServer({ root: dir });
const browser = await launch();
try {
  console.error(`bench-file-read: ${bytes} bytes at a time from ${file}, 3 fresh pages, median of 12 ranges each (ms)`);
  for (let run = 0; run < 3; run++) {
    const page = await browser.newPage();
    await page.goto(`${server.url}/index.html`);
    await page.locator("#f").setInputFiles(file);
    console.log(JSON.stringify(await page.evaluate(() => window.run(document.getElementById("f").files[0]))));
    await page.close();
  }
} finally {
  await browser.close();
  await server.close();
}

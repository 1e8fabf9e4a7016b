// Builds the viewer into www/dist/:
//   main.js            the page (index.html)
//   dendro-viewer.js   the embedding module (mountViewer, <dendro-viewer>)
//   worker.js          the engine worker (www/src/engine/worker.ts)
//   decoder.js         its decoder worker (www/src/engine/decoder.ts)
//   viewer.css         uPlot's sheet + ours
//   dendro_bg.wasm     copied from www/pkg/ (wasm-pack output)
//   index.html, examples/
//
// Usage: node www/build.mjs [--dev]   (--dev: no minification)

import { existsSync } from "node:fs";
import { copyFile, cp, mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const www = dirname(fileURLToPath(import.meta.url));
const root = dirname(www);
const dist = join(www, "dist");
const pkg = join(www, "pkg");
const dev = process.argv.includes("--dev");

const common = {
  bundle: true,
  format: "esm",
  target: ["es2022", "chrome111", "firefox115", "safari16.4"],
  sourcemap: "linked",
  minify: !dev,
  legalComments: "linked",
  logLevel: "warning",
  loader: { ".css": "text" },
};

const warn = (msg) => console.warn(`build:www: ${msg}`);

async function build() {
  await rm(dist, { recursive: true, force: true });
  await mkdir(dist, { recursive: true });

  const workerEntry = join(www, "src/engine/worker.ts");
  const entries = [
    { in: join(www, "src/main.ts"), out: "main" },
    { in: join(www, "src/embed.ts"), out: "dendro-viewer" },
  ];
  if (existsSync(workerEntry)) entries.push({ in: workerEntry, out: "worker" });
  else warn("www/src/engine/worker.ts is missing: no worker bundle (the engine is not built yet)");
  const decoderEntry = join(www, "src/engine/decoder.ts");
  if (existsSync(decoderEntry)) entries.push({ in: decoderEntry, out: "decoder" });

  // Each entry is its own self-contained bundle: the page, the embed module
  // and the worker are loaded independently, and the worker must not pull
  // in any UI code.
  const opts = entries.map((e) => ({ ...common, entryPoints: [e], outdir: dist }));
  await Promise.all(opts.map((o) => esbuild.build(o)));

  const uplotCss = await readFile(join(root, "node_modules/uplot/dist/uPlot.min.css"), "utf8");
  const ours = await readFile(join(www, "viewer.css"), "utf8");
  await writeFile(join(dist, "viewer.css"), `/* uPlot (MIT) */\n${uplotCss}\n${ours}`);
  await copyFile(join(www, "index.html"), join(dist, "index.html"));
  await cp(join(www, "examples"), join(dist, "examples"), { recursive: true });

  let wasm = 0;
  if (existsSync(pkg)) {
    for (const f of await readdir(pkg)) {
      if (f.endsWith(".wasm")) {
        await copyFile(join(pkg, f), join(dist, f));
        wasm++;
      }
    }
  }
  if (wasm === 0) warn("no www/pkg/*.wasm to copy: run wasm-pack first (the page will report that the engine failed to load)");
  console.log(`build:www: wrote ${dist}`);
}

build().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});

// Builds the viewer into www/dist/:
//   main.js            the page (index.html)
//   dendro-viewer.js   the embedding module (mountViewer, <dendro-viewer>)
//   worker.js          the engine worker (www/src/engine/worker.ts)
//   decoder.js         its decoder worker (www/src/engine/decoder.ts)
//   viewer.css         uPlot's sheet + ours
//   dendro_bg.wasm     copied from www/pkg/ (wasm-pack output)
//   index.html, examples/
//
// With --package it builds the npm package instead, into www/dist-pkg/
// (`npm run pack:package` then packs it): the same sources, with
//   dendro-viewer.js   mountViewer, <dendro-viewer>   (package entry ".")
//   engine.js          the engine client alone        (package entry "./engine")
//   shared-*.js        what the two share (esbuild's splitting)
//   worker.js, decoder.js, dendro_bg.wasm, and the page (index.html,
//   main.js, viewer.css) for the iframe way, all side by side
//   types/             declarations (tsc, emitDeclarationOnly)
//   package.json (written here), README.md (from www/PACKAGE.md)
//
// Usage: node www/build.mjs [--dev] [--package]   (--dev: no minification)

import { existsSync } from "node:fs";
import { copyFile, cp, mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const www = dirname(fileURLToPath(import.meta.url));
const root = dirname(www);
const dist = join(www, "dist");
const pkg = join(www, "pkg");
const dev = process.argv.includes("--dev");
const asPackage = process.argv.includes("--package");

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

/** The package's manifest: only what the tarball needs, versioned with the crate. */
async function manifest() {
  const cargo = await readFile(join(root, "Cargo.toml"), "utf8");
  const version = /^version\s*=\s*"([^"]+)"/m.exec(cargo)?.[1];
  const license = /^license\s*=\s*"([^"]+)"/m.exec(cargo)?.[1];
  if (!version || !license) throw new Error("Cargo.toml: no version or license in [package]");
  return {
    name: "dendro-viewer",
    version,
    description: "Browser viewer for dendro telemetry archives (wasm engine in a worker): mount it, use <dendro-viewer>, or drive the engine yourself.",
    license,
    type: "module",
    main: "./dendro-viewer.js",
    module: "./dendro-viewer.js",
    types: "./types/embed.d.ts",
    exports: {
      ".": { types: "./types/embed.d.ts", default: "./dendro-viewer.js" },
      "./engine": { types: "./types/engine/index.d.ts", default: "./engine.js" },
      // For the iframe way and for bundlers that need to copy the runtime files.
      "./worker.js": "./worker.js",
      "./decoder.js": "./decoder.js",
      "./dendro_bg.wasm": "./dendro_bg.wasm",
      "./index.html": "./index.html",
      "./package.json": "./package.json",
    },
    // Importing the main entry defines the <dendro-viewer> element.
    sideEffects: ["./dendro-viewer.js"],
    files: [
      "dendro-viewer.js",
      "engine.js",
      "shared-*.js",
      "worker.js",
      "decoder.js",
      "dendro_bg.wasm",
      "index.html",
      "main.js",
      "viewer.css",
      "types/",
    ],
    keywords: ["dendro", "telemetry", "parquet", "sqlite", "wasm", "viewer", "web-component"],
  };
}

async function buildPackage() {
  const out = join(www, "dist-pkg");
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  // Bundlers minify again anyway; shipping readable code costs little after gzip
  // but the wasm dominates, so stay minified like the page. Licence notices stay
  // in the files (legalComments "eof"), and there are no source maps (they would
  // point at sources the tarball does not hold).
  const lib = { ...common, sourcemap: false, legalComments: "eof" };
  await esbuild.build({
    ...lib,
    entryPoints: [
      { in: join(www, "src/embed.ts"), out: "dendro-viewer" },
      { in: join(www, "src/engine/index.ts"), out: "engine" },
    ],
    splitting: true,
    chunkNames: "shared-[hash]",
    outdir: out,
  });
  const alone = [
    { in: join(www, "src/engine/worker.ts"), out: "worker" },
    { in: join(www, "src/engine/decoder.ts"), out: "decoder" },
    { in: join(www, "src/main.ts"), out: "main" },
  ];
  await Promise.all(alone.map((e) => esbuild.build({ ...lib, entryPoints: [e], outdir: out })));

  const wasm = join(pkg, "dendro_bg.wasm");
  if (!existsSync(wasm)) throw new Error("www/pkg/dendro_bg.wasm is missing: run `npm run build:wasm` first");
  // What a user installs never has the engine's test hooks (a trap on purpose).
  if ((await readFile(join(pkg, "dendro.js"), "utf8")).includes("__crashForTests"))
    throw new Error("www/pkg was built with --test-hooks: run `bash scripts/build-wasm.sh` (no hooks) before packing");
  await copyFile(wasm, join(out, "dendro_bg.wasm"));
  const uplotCss = await readFile(join(root, "node_modules/uplot/dist/uPlot.min.css"), "utf8");
  const ours = await readFile(join(www, "viewer.css"), "utf8");
  await writeFile(join(out, "viewer.css"), `/* uPlot (MIT) */\n${uplotCss}\n${ours}`);
  await copyFile(join(www, "index.html"), join(out, "index.html"));
  await copyFile(join(www, "PACKAGE.md"), join(out, "README.md"));

  execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(www, "tsconfig.package.json")], {
    stdio: "inherit",
  });
  await writeFile(join(out, "package.json"), JSON.stringify(await manifest(), null, 2) + "\n");
  console.log(`build:www: wrote ${out}`);
}

(asPackage ? buildPackage() : build()).catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});

// Shared by scripts/test-engine.mjs and benches/browser/engine.mjs: bundle the
// engine client and worker (www/src/engine/) with the wasm package from
// www/pkg, serve them on 127.0.0.1, and open a page in headless Chromium.

import { createServer } from "node:http";
import { copyFile, mkdir, readFile, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { chromium } from "playwright-core";

export const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

/**
 * Bundles into `out`: entry.js (exposes createEngine and the raw wasm
 * package on window), worker.js, decoder.js, dendro_bg.wasm, index.html. `wasm` picks
 * another build of the module than www/pkg's (to compare builds whose
 * JavaScript glue is the same).
 */
export async function bundleEngine(out, { wasm = join(root, "www/pkg/dendro_bg.wasm") } = {}) {
  if (!existsSync(wasm)) throw new Error(`${wasm} is missing: run scripts/build-wasm.sh first`);
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const common = { bundle: true, format: "esm", target: "es2022", logLevel: "warning", outdir: out };
  await esbuild.build({
    ...common,
    stdin: {
      contents: [
        'import { createEngine } from "./www/src/engine/client.ts";',
        'import init, * as pkg from "./www/pkg/dendro.js";',
        "window.createEngine = createEngine;",
        'window.rawEngine = async () => { await init({ module_or_path: new URL("./dendro_bg.wasm", import.meta.url) }); return pkg; };',
      ].join("\n"),
      resolveDir: root,
      sourcefile: "entry.js",
      loader: "js",
    },
    entryNames: "entry",
  });
  await esbuild.build({
    ...common,
    entryPoints: { worker: join(root, "www/src/engine/worker.ts"), decoder: join(root, "www/src/engine/decoder.ts") },
  });
  await copyFile(wasm, join(out, "dendro_bg.wasm"));
  const { writeFile } = await import("node:fs/promises");
  await writeFile(join(out, "index.html"), '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module" src="entry.js"></script>\n');
}

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".css": "text/css; charset=utf-8",
};

/** Serves `mounts` ({ "/prefix/": "/dir" }) on 127.0.0.1; resolves to { url, close }. */
export function serve(mounts) {
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    for (const [prefix, dir] of Object.entries(mounts)) {
      if (!path.startsWith(prefix)) continue;
      const file = normalize(join(dir, path.slice(prefix.length)));
      if (!file.startsWith(dir)) break;
      try {
        const body = await readFile(file);
        res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
        res.end(body);
      } catch {
        res.writeHead(404).end();
      }
      return;
    }
    res.writeHead(404).end();
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

/** Headless Chromium as this machine runs it (see ../shared/TOOLCHAIN.md). */
export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-sync",
      "--disable-quic",
    ],
  });
}

/** Opens the engine page; console errors and page errors are collected. */
export async function enginePage(browser, url) {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  await page.goto(`${url}/engine/index.html`);
  await page.waitForFunction(() => typeof window.createEngine === "function");
  return { page, problems };
}

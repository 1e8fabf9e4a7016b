// The npm package as a dashboard author gets it: the tarball `npm pack`
// wrote (`npm run pack:package`) installed into a scratch project, a page
// importing it bundled by esbuild, Vite and webpack 5, each served on 127.0.0.1
// and opened in headless Chromium on an archive. Nothing is copied out of
// the package by hand except what its README tells esbuild users to copy.
//
// Vite and webpack come from the npm registry (or npm's cache) into the
// scratch project, at the versions below: the repository's own devDependencies stay
// as they are. esbuild and TypeScript are the repository's.
//
// Prints what the dashboard loads, gzipped (JS and wasm), for DESIGN.md,
// and fails when the wasm is over its budget.

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { copyFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";
import { FIXTURES, ROOT, launch, missingPrerequisite, newPage } from "../tests/helpers.mjs";
import { startServer } from "../support/index.mjs";

const VITE = "vite@7.3.8";
const WEBPACK = ["webpack@5.113.0", "webpack-cli@6.0.1"];
const version = /^version\s*=\s*"([^"]+)"/m.exec(readFileSync(join(ROOT, "Cargo.toml"), "utf8"))?.[1];
const TARBALL = join(ROOT, "target", `dendro-viewer-${version}.tgz`);
const ARCHIVE = join(FIXTURES, "b_multi_source.dendro");
const T = { timeout: 240_000 };
/** What the wasm a dashboard loads may weigh, gzip -9 (issue 15; raised for issues 31, 32 and 34: docs/measurements/2026-12-07-wasm-size.md). */
const WASM_BUDGET = 1_250_000;

function missing() {
  const m = missingPrerequisite();
  if (m && !/www\/dist/.test(m)) return m;
  if (!existsSync(TARBALL)) return `${TARBALL} is missing: run \`npm run pack:package\``;
  return null;
}
const why = missing();

const npm = (cwd, ...args) => execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, stdio: "pipe", encoding: "utf8" });

/** The dashboard's page: it imports the package the way its README says. */
function writeDashboard(dir) {
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(
    join(dir, "index.html"),
    `<!doctype html>
<html><head><meta charset="utf-8"><title>a dashboard</title><link rel="icon" href="data:,">
<style>body{margin:0;font:14px system-ui} #viewer{height:700px}</style>
<script type="module" src="./src/main.js"></script></head>
<body><header id="status">loading…</header><div id="viewer"></div>
<dendro-viewer id="el" style="display:block;height:500px"></dendro-viewer></body></html>
`,
  );
  writeFileSync(
    join(dir, "src", "main.js"),
    `import { mountViewer } from "dendro-viewer";
import { createEngine } from "dendro-viewer/engine";

const status = document.getElementById("status");
const src = new URLSearchParams(location.search).get("src");
mountViewer(document.getElementById("viewer"), {
  url: src,
  onOpen: (r) => {
    status.textContent = r.ok ? "opened " + r.name : "failed: " + r.error.title;
    status.dataset.state = r.ok ? "ok" : "error";
  },
});
document.getElementById("el").setAttribute("src", src);

// The engine on its own: a second worker, driven directly.
const engine = createEngine();
const bytes = await (await fetch(src)).arrayBuffer();
const archive = await engine.open(bytes, "direct.dendro");
const d = await archive.describe();
document.body.dataset.engineSources = String(d.sources.length);
`,
  );
  // Typed use of both entries, checked by tsc against the package's declarations.
  writeFileSync(
    join(dir, "src", "typed.ts"),
    `import { mountViewer, DendroViewerElement, type MountedViewer, type OpenResult } from "dendro-viewer";
import { createEngine, EngineFailure, type Description, type Engine } from "dendro-viewer/engine";

const v: MountedViewer = mountViewer(document.body, { url: "a.dendro", onOpen: (r: OpenResult) => void r.name });
const el: DendroViewerElement = document.createElement("dendro-viewer") as DendroViewerElement;
const engine: Engine = createEngine({ cacheBytes: 1 << 24 });
export async function count(bytes: ArrayBuffer): Promise<number> {
  try {
    const d: Description = await (await engine.open(bytes, "x")).describe();
    return d.sources.length;
  } catch (e) {
    if (e instanceof EngineFailure) return e.kind === "NotAnArchive" ? -1 : -2;
    throw e;
  }
}
void v.ready;
void el.open({ url: "b.dendro" });
`,
  );
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { target: "ES2022", module: "ESNext", moduleResolution: "bundler", lib: ["ES2022", "DOM"], strict: true, noEmit: true, types: [] },
      files: ["src/typed.ts"],
    }),
  );
}

/** Opens the built dashboard; returns what it loaded (path -> bytes), checking that it all worked. */
async function openDashboard(browser, outDir, what, running = null) {
  const server = running ?? (await startServer({ root: outDir, mounts: { "/data/run.dendro": ARCHIVE } }));
  const page = await newPage(browser);
  const loaded = new Map();
  const failed = [];
  page.on("response", async (r) => {
    const url = new URL(r.url());
    if (r.status() >= 400) failed.push(`${r.status()} ${url.pathname}`);
    else if (/\.(js|wasm)$/.test(url.pathname)) {
      // A response can still be arriving when the test closes the page
      // (a chunk the viewer loads late): it was loaded all the same.
      loaded.set(url.pathname, 0);
      const body = await r.body().catch(() => null);
      if (body) loaded.set(url.pathname, body.length);
    }
  });
  // An aborted request is the viewer's own doing (it stops a download once a range read answers).
  page.on("requestfailed", (r) => {
    if (!/ERR_ABORTED/.test(r.failure()?.errorText ?? "")) failed.push(`failed ${r.url()}: ${r.failure()?.errorText}`);
  });
  // Workers' own fetches (the wasm) are seen by the context, not the page.
  page.context().on("response", async (r) => {
    const url = new URL(r.url());
    if (r.status() >= 400) failed.push(`${r.status()} ${url.pathname}`);
  });
  try {
    await page.goto(`${server.url}/index.html?src=/data/run.dendro`);
    await page.locator('#status[data-state="ok"]').waitFor({ timeout: 60_000 });
    const viewer = page.locator("#viewer");
    await viewer.locator('[data-field="sources"][data-value="2"]').waitFor();
    await viewer.locator('[data-testid="plots"][data-state="drawn"]').waitFor({ timeout: 60_000 });
    await page.locator('#el [data-field="rows"][data-value="272"]').waitFor({ timeout: 60_000 });
    await page.waitForFunction(() => document.body.dataset.engineSources === "2", null, { timeout: 60_000 });
    assert.deepEqual(failed, [], `${what}: requests that failed`);
    assert.deepEqual(page.problems, [], `${what}: errors in the page`);
  } finally {
    await page.context().close();
    if (!running) await server.close();
  }
  return loaded;
}

/** Gzipped sizes of the built files a dashboard loads (the wasm is fetched by the worker, so listed from disk). */
function sizes(outDir, what) {
  const files = [];
  const walk = (d) => {
    for (const f of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, f.name);
      if (f.isDirectory()) walk(p);
      else if (/\.(js|wasm)$/.test(f.name)) files.push(p);
    }
  };
  walk(outDir);
  let js = 0;
  let wasm = 0;
  const lines = [];
  for (const p of files.sort()) {
    const raw = readFileSync(p);
    const gz = gzipSync(raw, { level: 9 }).length;
    if (p.endsWith(".wasm")) wasm += gz;
    else js += gz;
    lines.push(`  ${p.slice(outDir.length + 1)}: ${(raw.length / 1024).toFixed(0)} KiB, ${(gz / 1024).toFixed(0)} KiB gzipped`);
  }
  console.log(`${what}: JS ${(js / 1024).toFixed(0)} KiB gzipped, wasm ${wasm} bytes gzipped (budget ${WASM_BUDGET})\n${lines.join("\n")}`);
  assert.ok(wasm <= WASM_BUDGET, `${what}: the wasm a dashboard loads is ${wasm} bytes gzipped, over the budget of ${WASM_BUDGET}`);
  return { js, wasm };
}

// A prerequisite missing is a failure, not a quiet skip of everything below.
it("has what it needs to run", () => assert.equal(why, null, why ?? ""));

describe("the npm package in a dashboard", { skip: why ?? false }, () => {
  let dir;
  let browser;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "dendro-dashboard-"));
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "a-dashboard", private: true, type: "module" }));
    // From the tarball file alone: the package has no dependencies.
    npm(dir, "install", "--offline", TARBALL);
    writeDashboard(dir);
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
  });

  it("installs only what its files list names, with declarations tsc accepts", T, () => {
    const pkg = join(dir, "node_modules", "dendro-viewer");
    const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
    assert.equal(manifest.name, "dendro-viewer");
    assert.equal(manifest.version, version);
    assert.deepEqual(manifest.dependencies ?? {}, {});
    for (const f of ["dendro-viewer.js", "engine.js", "worker.js", "decoder.js", "dendro_bg.wasm", "index.html", "main.js", "viewer.css", "README.md", "types/embed.d.ts", "types/engine/index.d.ts"])
      assert.ok(existsSync(join(pkg, f)), `${f} is in the package`);
    const top = readdirSync(pkg).filter((f) => !/^(shared-[A-Z0-9]+\.js|types)$/.test(f)).sort();
    assert.deepEqual(top, ["README.md", "decoder.js", "dendro-viewer.js", "dendro_bg.wasm", "engine.js", "index.html", "main.js", "package.json", "viewer.css", "worker.js"]);
    execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(dir, "tsconfig.json")], { stdio: "pipe", encoding: "utf8" });
  });

  it("bundled by esbuild, with the three runtime files beside the bundle as the README says", T, async () => {
    const out = join(dir, "out-esbuild");
    await esbuild.build({ entryPoints: [join(dir, "src/main.js")], bundle: true, minify: true, format: "esm", outdir: join(out, "src"), logLevel: "error" });
    await copyFile(join(dir, "index.html"), join(out, "index.html"));
    // README: "cp node_modules/dendro-viewer/{worker.js,decoder.js,dendro_bg.wasm} dist/"
    for (const f of ["worker.js", "decoder.js", "dendro_bg.wasm"]) await copyFile(join(dir, "node_modules/dendro-viewer", f), join(out, "src", f));
    await openDashboard(browser, out, "esbuild");
    sizes(out, "esbuild bundle");
  });

  it("bundled by `vite build` with no configuration at all", T, async () => {
    npm(dir, "install", "--prefer-offline", "--save-dev", VITE);
    execFileSync(join(dir, "node_modules/.bin/vite"), ["build", "--logLevel", "warn"], { cwd: dir, stdio: "pipe", encoding: "utf8" });
    const out = join(dir, "dist");
    const wasm = readdirSync(join(out, "assets")).filter((f) => f.endsWith(".wasm"));
    assert.equal(wasm.length, 1, `vite emitted one wasm (${wasm.join(", ")})`);
    const loaded = await openDashboard(browser, out, "vite");
    assert.ok([...loaded.keys()].some((p) => basename(dirname(p)) === "assets"), "the page loaded vite's assets");
    sizes(out, "vite build");
  });

  it("served by `vite` (dev), with the one setting the README names for it", T, async () => {
    assert.ok(existsSync(join(dir, "node_modules/.bin/vite")), "vite was installed by the build test");
    // README: under vite dev, optimizeDeps: { exclude: ["dendro-viewer"] }.
    writeFileSync(join(dir, "vite.config.js"), 'export default { optimizeDeps: { exclude: ["dendro-viewer"] } };\n');
    mkdirSync(join(dir, "public/data"), { recursive: true });
    await copyFile(ARCHIVE, join(dir, "public/data/run.dendro"));
    const dev = spawn(join(dir, "node_modules/.bin/vite"), ["--port", "0", "--strictPort", "false", "--host", "127.0.0.1"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    try {
      const url = await new Promise((resolve, reject) => {
        let out = "";
        dev.stdout.on("data", (d) => {
          out += d;
          const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out.replace(/\x1b\[[0-9;]*m/g, ""));
          if (m) resolve(`http://127.0.0.1:${m[1]}`);
        });
        dev.on("exit", (code) => reject(new Error(`vite dev exited (${code}): ${out}`)));
      });
      await openDashboard(browser, null, "vite dev", { url, close: async () => {} });
    } finally {
      dev.kill();
      rmSync(join(dir, "vite.config.js"));
    }
  });

  it("bundled by `webpack --mode production` with no configuration at all", T, async () => {
    npm(dir, "install", "--prefer-offline", "--save-dev", ...WEBPACK);
    // webpack's defaults: src/index.js in, main.js out (a classic script, hence defer);
    // only the output folder is named, so it does not land in vite's.
    await copyFile(join(dir, "src/main.js"), join(dir, "src/index.js"));
    const out = join(dir, "dist-webpack");
    execFileSync(join(dir, "node_modules/.bin/webpack"), ["--mode", "production", "--no-stats", "--output-path", out], { cwd: dir, stdio: "pipe", encoding: "utf8" });
    writeFileSync(
      join(out, "index.html"),
      readFileSync(join(dir, "index.html"), "utf8").replace('<script type="module" src="./src/main.js"></script>', '<script defer src="./main.js"></script>'),
    );
    assert.equal(readdirSync(out).filter((f) => f.endsWith(".wasm")).length, 1, "webpack emitted the wasm");
    await openDashboard(browser, out, "webpack");
    sizes(out, "webpack");
  });
});

// Shared set-up for the page tests: the built viewer, the shared fixtures,
// a static server and Debian's Chromium driven by playwright-core.

import { existsSync } from "node:fs";
import { mkdir, readFile, readdir } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../support/index.mjs";

export const WWW = dirname(dirname(fileURLToPath(import.meta.url)));
export const ROOT = dirname(WWW);
export const DIST = join(WWW, "dist");
export const FIXTURES = process.env.DENDRO_FIXTURES ?? join(ROOT, "..", "shared", "fixtures");
export const SCREENSHOTS = join(ROOT, "target", "screenshots");
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** Why the page tests cannot run here, or null when they can. */
export function missingPrerequisite() {
  if (!existsSync(join(DIST, "index.html"))) return "www/dist is not built: run `npm run build:www`";
  if (!existsSync(join(DIST, "worker.js"))) return "www/dist/worker.js is missing: the engine worker was not built";
  if (!existsSync(join(DIST, "dendro_bg.wasm"))) return "www/dist/dendro_bg.wasm is missing: run wasm-pack, then `npm run build:www`";
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} is missing: apt-get install chromium`;
  if (!existsSync(FIXTURES)) return `fixtures not found at ${FIXTURES} (set DENDRO_FIXTURES)`;
  return null;
}

/**
 * JSON.parse, except integer literals longer than 15 digits come back as
 * strings: nanosecond timestamps do not survive a trip through a double.
 */
export function parseJsonExact(text) {
  let out = "";
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; ) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i += 2;
      else {
        if (c === '"') inString = false;
        i++;
      }
      continue;
    }
    if (c === '"') {
      inString = true;
      i++;
      continue;
    }
    if (c === "-" || (c >= "0" && c <= "9")) {
      let j = i + 1;
      while (j < text.length && /[0-9.eE+-]/.test(text[j])) j++;
      if (/^-?\d{16,}$/.test(text.slice(i, j))) {
        out += text.slice(last, i) + '"' + text.slice(i, j) + '"';
        last = j;
      }
      i = j;
      continue;
    }
    i++;
  }
  return JSON.parse(out + text.slice(last));
}

/**
 * The manifests of the fixtures in `sub` (a folder of FIXTURES: "" for the
 * schema-4 set, "schema5/" for the original's 0.6.1 set), each with its
 * file's `path` and its address under the test server's `/fixtures/`.
 */
export async function loadManifests(sub = "") {
  const dir = join(FIXTURES, sub);
  const names = (await readdir(dir)).filter((f) => f.endsWith(".manifest.json")).sort();
  const out = [];
  for (const n of names) {
    const m = parseJsonExact(await readFile(join(dir, n), "utf8"));
    if (!m.file || !existsSync(join(dir, m.file))) continue;
    out.push({ ...m, path: join(dir, m.file), url: `/fixtures/${sub}${m.file}`, stem: basename(n, ".manifest.json") });
  }
  return out;
}

/** Archives a correct reader opens (their manifest says open.ok), of schema 4. */
export async function soundFixtures() {
  return (await loadManifests()).filter((m) => m.open?.ok === true && m.file.endsWith(".dendro"));
}

/** The schema-5 archives the original's 0.6.1 wrote; all of them open. */
export async function schema5Fixtures() {
  return (await loadManifests("schema5/")).filter((m) => m.open?.ok === true);
}

/** Files a correct reader refuses (the i_* fixtures). */
export async function refusalFixtures() {
  return (await loadManifests()).filter((m) => m.stem.startsWith("i_"));
}

// One way to start the browser, shared with the benches.
export { launch } from "../support/index.mjs";

export async function serve(extraMounts = {}) {
  return startServer({
    root: DIST,
    mounts: {
      "/fixtures/": FIXTURES,
      "/examples/sample.dendro": join(FIXTURES, "b_multi_source.dendro"),
      ...extraMounts,
    },
  });
}

/**
 * A fresh page that records what must never happen: uncaught errors, error
 * logs, CSP violations, dialogs (alert() from an injected script).
 */
export async function newPage(browser, opts = {}) {
  const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1440, height: 1000 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console.error: ${m.text()}`);
  });
  page.on("dialog", async (d) => {
    problems.push(`dialog: ${d.type()} ${d.message()}`);
    await d.dismiss();
  });
  await page.addInitScript(() => {
    const w = window;
    w.__csp = [];
    document.addEventListener("securitypolicyviolation", (e) => w.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  page.problems = problems;
  page.cspViolations = () => page.evaluate(() => window.__csp ?? []);
  return page;
}

/** Drop a file on the page with a synthetic DataTransfer + DragEvent, as a person's drag would. */
export async function dropFile(page, path, name = basename(path), selector = "body") {
  const b64 = (await readFile(path)).toString("base64");
  await page.evaluate(
    ({ b64, name, selector }) => {
      const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bin], name, { type: "application/octet-stream" }));
      const target = document.querySelector(selector) ?? document.body;
      for (const type of ["dragenter", "dragover", "drop"]) {
        target.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, composed: true, dataTransfer: dt }));
      }
    },
    { b64, name, selector },
  );
}

/**
 * Starts recording in the page, from the next file dropped or picked
 * (its drop or change event, by the page's clock): for each named
 * selector, the frame at which it first matches, and the main thread's
 * long tasks. Returns a function that reads the record:
 * { t0, at: { name: ms after t0 }, longtasks: [ms...] }. Measurements to
 * print, not to assert on.
 */
export async function recordOpen(page, selectors) {
  await page.evaluate((selectors) => {
    const r = { t0: null, at: {}, longtasks: [] };
    window.__open = r;
    const start = () => {
      if (r.t0 === null) r.t0 = performance.now();
    };
    document.addEventListener("drop", start, true);
    document.addEventListener("change", start, true);
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (r.t0 !== null && e.startTime + e.duration > r.t0) r.longtasks.push(Math.round(e.duration));
    }).observe({ type: "longtask" });
    const waiting = new Map(Object.entries(selectors));
    const seen = new MutationObserver(() => {
      if (r.t0 === null) return;
      for (const [name, sel] of waiting) {
        if (!document.querySelector(sel)) continue;
        waiting.delete(name);
        requestAnimationFrame(() => (r.at[name] = Math.round(performance.now() - r.t0)));
      }
      if (waiting.size === 0) seen.disconnect();
    });
    seen.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state"] });
  }, selectors);
  return () => page.evaluate(() => window.__open);
}

export async function screenshot(page, name, locator, opts = {}) {
  await mkdir(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, name);
  if (locator) await locator.screenshot({ path });
  else await page.screenshot({ path, fullPage: !!opts.fullPage });
  return path;
}

/** Fraction of sampled canvas pixels that are neither transparent nor near-white. */
export async function inkOnCanvases(locator) {
  return locator.evaluateAll((canvases) =>
    canvases.map((c) => {
      const ctx = c.getContext("2d");
      if (!ctx || c.width === 0 || c.height === 0) return 0;
      const { data } = ctx.getImageData(0, 0, c.width, c.height);
      let ink = 0;
      let seen = 0;
      for (let i = 0; i < data.length; i += 4 * 7) {
        seen++;
        const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
        if (a > 0 && !(r > 235 && g > 235 && b > 235)) ink++;
      }
      return ink / seen;
    }),
  );
}

/** Pixels close to a colour (the first series' stroke), to tell data from axes. */
export async function pixelsNear(locator, [R, G, B], tol = 40) {
  return locator.evaluateAll(
    (canvases, { R, G, B, tol }) =>
      canvases.map((c) => {
        const ctx = c.getContext("2d");
        if (!ctx || c.width === 0) return 0;
        const { data } = ctx.getImageData(0, 0, c.width, c.height);
        let n = 0;
        for (let i = 0; i < data.length; i += 4) {
          if (data[i + 3] > 0 && Math.abs(data[i] - R) < tol && Math.abs(data[i + 1] - G) < tol && Math.abs(data[i + 2] - B) < tol) n++;
        }
        return n;
      }),
    { R, G, B, tol },
  );
}

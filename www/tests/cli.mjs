// The dendro command line for the page tests (its binary as cargo built
// it), what `dendro cat` prints as rows, rates computed from them, and
// what a plot last drew.

import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT, parseJsonExact } from "./helpers.mjs";

/** The dendro binary cargo built (DENDRO_BIN, else target/{debug,release}). */
export function dendroBin() {
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(ROOT, "target");
  const built = [process.env.DENDRO_BIN, join(targetDir, "debug/dendro"), join(targetDir, "release/dendro")]
    .filter(Boolean)
    .find((b) => existsSync(b));
  if (!built) throw new Error("no dendro binary: run `cargo build --bin dendro --features test-hooks` (or set DENDRO_BIN)");
  return built;
}

export function dendro(...args) {
  return execFileSync(dendroBin(), args, { cwd: ROOT, encoding: "utf8", maxBuffer: 256 << 20, timeout: 120_000 });
}

/** `dendro cat` of one stream as rows, timestamps as BigInt. */
export function cat(file, source, stream) {
  return dendro("cat", file, "--source", String(source), "--stream", stream)
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => parseJsonExact(l));
}

/** A row's timestamp as BigInt nanoseconds (cat prints ns integers; long ones arrive as strings). */
export function tsOf(row, name = "ts") {
  const v = row[name];
  return BigInt(v);
}

/** Per-second rates of a running total, a fall being a reset; null for the first row. */
export function ratesOf(rows, column, ts = "ts") {
  const out = [];
  let last = null;
  for (const r of rows) {
    const v = Number(r[column]);
    const t = tsOf(r, ts);
    if (r[column] === null || r[column] === undefined || !Number.isFinite(v)) {
      out.push(null);
      continue;
    }
    if (last === null || t <= last.t) out.push(null);
    else {
      const inc = v >= last.v ? v - last.v : v;
      out.push(inc / (Number(t - last.t) / 1e9));
    }
    last = { t, v };
  }
  return out;
}

/** What the plot of `column` drew last: { ts: string[], min: number[], max: number[], as, reduced }. */
export async function plotData(page, column) {
  return page.locator(`[data-testid="plot"][data-column="${column}"]`).evaluate((el) => {
    const d = el.dendroPlot;
    if (!d) return null;
    return { ts: Array.from(d.ts, String), min: Array.from(d.min), max: Array.from(d.max), as: d.as, reduced: d.reduced };
  });
}


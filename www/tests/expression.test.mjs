// The derived-series parser and evaluator (www/src/ui/expression.ts),
// bundled with esbuild and run under Node: precedence, rate(), gaps for
// division by zero and missing values, and errors that say where.

import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, it } from "node:test";
import * as esbuild from "esbuild";
import { WWW } from "./helpers.mjs";

const dir = mkdtempSync(join(tmpdir(), "dendro-expr-"));
const entry = join(dir, "entry.ts");
writeFileSync(entry, `export * from ${JSON.stringify(join(WWW, "src/ui/expression.ts"))};`);
await esbuild.build({ entryPoints: [entry], bundle: true, format: "esm", platform: "neutral", outfile: join(dir, "out.mjs"), logLevel: "error" });
const { parseExpr, evaluate, inputsOf, ExprError, MAX_EXPR_CHARS } = await import(pathToFileURL(join(dir, "out.mjs")).href);

const COLS = ["a", "b", "c", "rx_bytes", "eth0.tx", "odd name", 'q"uote'];

/** Evaluates `src` with the given inputs (arrays of numbers, NaN for missing). */
function run(src, inputs) {
  const e = parseExpr(src, COLS);
  const n = Object.values(inputs)[0]?.length ?? 1;
  const map = new Map(Object.entries(inputs).map(([k, v]) => [k, Float64Array.from(v)]));
  return Array.from(evaluate(e, map, n));
}

function fails(src, at, pattern) {
  assert.throws(
    () => parseExpr(src, COLS),
    (e) => {
      assert.ok(e instanceof ExprError, `${src}: ${e}`);
      assert.equal(e.at, at, `${src}: ${e.message}`);
      assert.match(e.message, pattern);
      assert.match(e.message, new RegExp(`^at character ${at + 1}: `));
      return true;
    },
  );
}

describe("derived-series expressions", () => {
  it("keeps the usual precedence, left to right", () => {
    assert.deepEqual(run("a + b * c", { a: [1], b: [2], c: [3] }), [7]);
    assert.deepEqual(run("(a + b) * c", { a: [1], b: [2], c: [3] }), [9]);
    assert.deepEqual(run("a - b - c", { a: [10], b: [2], c: [3] }), [5]);
    assert.deepEqual(run("a / b / c", { a: [24], b: [2], c: [3] }), [4]);
    assert.deepEqual(run("100 * a / b", { a: [1, 3], b: [4, 4] }), [25, 75]);
    assert.deepEqual(run("-a * -b", { a: [2], b: [3] }), [6]);
    assert.deepEqual(run("a - -b", { a: [2], b: [3] }), [5]);
    assert.deepEqual(run("1.5e2 + .5 + a", { a: [0] }), [150.5]);
  });
  it("reads rate() as its own input, and names every input once", () => {
    const e = parseExpr("rate(a) / rate(b) + a", COLS);
    assert.deepEqual([...inputsOf(e)].sort(), ["a", "rate:a", "rate:b"]);
    assert.deepEqual(run("rate(a) / rate(b)", { "rate:a": [10, 6], "rate:b": [5, 3] }), [2, 2]);
  });
  it("reads names with dots, and any name in double quotes", () => {
    assert.deepEqual(run('eth0.tx + "odd name" + "q\\"uote"', { "eth0.tx": [1], "odd name": [2], 'q"uote': [4] }), [7]);
  });
  it("gives a gap, not an infinity, for a division by zero or a missing value", () => {
    const out = run("a / b", { a: [1, 0, 1, NaN, -1], b: [0, 0, 2, 1, 0] });
    assert.ok(Number.isNaN(out[0]) && Number.isNaN(out[1]) && Number.isNaN(out[3]) && Number.isNaN(out[4]));
    assert.equal(out[2], 0.5);
    assert.ok(out.every((v) => !Number.isFinite(v) ? Number.isNaN(v) : true), "never ±Infinity");
    // Overflow to infinity is a gap too.
    assert.ok(Number.isNaN(run("a * a", { a: [1e200] })[0]));
  });
  it("says where an unknown column or a syntax error is, in words", () => {
    fails("a / nope", 4, /no column named "nope"/);
    fails("a +", 3, /expected a number, a column name or "\(" but found the end/);
    fails("a b", 2, /expected an operator .* but found "b"/);
    fails("(a + b", 6, /expected "\)" to close the "\(" at character 1/);
    fails("a + b)", 5, /this "\)" closes nothing/);
    fails("a % b", 2, /"%" is not part of an expression/);
    fails("sum(a)", 0, /"sum" is not a function/);
    fails("rate(a + b)", 7, /rate\(\) takes one column name/);
    fails("rate(3)", 5, /expected a column name but found "3"/);
    fails('"odd name', 0, /never closed/);
    fails("   ", 0, /empty/);
    fails("1e999", 0, /too large/);
  });
  it("bounds the work a text can ask for", () => {
    fails("a+".repeat(MAX_EXPR_CHARS) + "a", MAX_EXPR_CHARS, /at most/);
    fails("(".repeat(60) + "a" + ")".repeat(60), 41, /nested more than/);
    fails("-".repeat(60) + "a", 41, /nested more than/);
  });
  it("never runs the text as code", () => {
    // Things eval would run are refused by the tokenizer.
    fails("a; globalThis.x = 1", 1, /";" is not part/);
    fails("constructor", 0, /no column named "constructor"/);
    fails("__proto__ + a", 0, /no column named "__proto__"/);
  });
});

describe("derived series in the address", async () => {
  const sdir = mkdtempSync(join(tmpdir(), "dendro-expr-state-"));
  const sentry = join(sdir, "entry.ts");
  writeFileSync(sentry, `export * from ${JSON.stringify(join(WWW, "src/ui/state.ts"))};`);
  await esbuild.build({ entryPoints: [sentry], bundle: true, format: "esm", platform: "neutral", outfile: join(sdir, "out.mjs"), logLevel: "error" });
  const state = await import(pathToFileURL(join(sdir, "out.mjs")).href);
  it("round-trips, and an address without them reads as before", () => {
    const s = { source: 1, stream: "disk", columns: ["a"], exprs: ["100 * a / b", 'rate("x y") / 2'] };
    const search = state.stateToSearch(s, "");
    assert.deepEqual(state.parseState(search), s);
    assert.deepEqual(state.parseState("?source=1&stream=disk&col=a"), { source: 1, stream: "disk", columns: ["a"] });
    assert.equal(state.stateToSearch({ source: 1, stream: "disk" }, "?expr=a"), "?source=1&stream=disk", "the viewer owns expr");
  });
  it("takes at most a few, each bounded", () => {
    const q = new URLSearchParams();
    for (let i = 0; i < 10; i++) q.append("expr", `a + ${i}`);
    q.append("expr", "a".repeat(MAX_EXPR_CHARS + 1));
    assert.deepEqual(state.parseState("?" + q).exprs, ["a + 0", "a + 1", "a + 2", "a + 3"]);
  });
});

describe("a derived series reduced for drawing", async () => {
  const rdir = mkdtempSync(join(tmpdir(), "dendro-expr-reduce-"));
  const rentry = join(rdir, "entry.ts");
  writeFileSync(rentry, `export * from ${JSON.stringify(join(WWW, "src/ui/derived.ts"))};`);
  await esbuild.build({ entryPoints: [rentry], bundle: true, format: "esm", platform: "neutral", outfile: join(rdir, "out.mjs"), logLevel: "error" });
  const { reduce } = await import(pathToFileURL(join(rdir, "out.mjs")).href);
  it("keeps each bucket's min and max of finite values, a bucket of gaps a gap, an empty bucket out", () => {
    // Ten rows over [0, 99], four buckets of 25 ns; rows 30..49 absent.
    const ts = BigInt64Array.from([0n, 10n, 20n, 24n, 25n, 26n, 75n, 80n, 90n, 99n]);
    const v = Float64Array.from([5, -1, 7, NaN, NaN, NaN, 3, 9, 1, 2]);
    const r = reduce(ts, [v], 0n, 99n, 4);
    assert.deepEqual(Array.from(r.ts), [0n, 25n, 75n], "bucket 2 (50..74) holds no row");
    assert.deepEqual(Array.from(r.min[0]), [-1, NaN, 1]);
    assert.deepEqual(Array.from(r.max[0]), [7, NaN, 9]);
  });
});

// The wasm engine's heatmap and region statistics under Node: the same
// day of a 64-bucket histogram as `cargo bench --bench distributions`
// (86,400 rows in 24 segments, written by it to
// target/bench-distributions.dendro), opened in memory with the engine
// the viewer loads (www/pkg, built by scripts/build-wasm.sh; release for
// figures worth quoting). Cold: a freshly opened archive, so every
// segment is decoded; warm: segments from the engine's decode cache, so
// what is left is the summing and the conversion to JS. Medians of wall
// time in milliseconds, one JSON line per figure.
//
//   cargo bench --bench distributions && node benches/browser/distributions.mjs [--runs N]

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Archive, initSync } from "../../www/pkg/dendro.js";

const root = join(fileURLToPath(import.meta.url), "../../..");
const args = process.argv.slice(2);
const runs = Number(args[args.indexOf("--runs") + 1]) || 9;
initSync({ module: readFileSync(join(root, "www/pkg/dendro_bg.wasm")) });
const bytes = readFileSync(join(root, "target/bench-distributions.dendro"));

const T0 = 1_700_000_000_000_000_000n;
const T1 = T0 + 86_400n * 1_000_000_000n - 1n;
const median = (v) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)];
function time(f) {
  const t = performance.now();
  f();
  return performance.now() - t;
}
function figure(name, values) {
  console.log(JSON.stringify({ figure: name, median: median(values), unit: "ms", runs: values.length }));
}

const cold = [];
const warm = { 1000: [], 4000: [] };
const stats = [];
for (let i = 0; i < runs; i++) {
  const a = Archive.open(new Uint8Array(bytes), `day-${i}.dendro`);
  cold.push(time(() => a.heatmap(1, "http", "latency_ns", T0, T1, 1000)));
  for (const px of [1000, 4000]) warm[px].push(time(() => a.heatmap(1, "http", "latency_ns", T0, T1, px)));
  stats.push(time(() => a.regionStats(1, "http", T0, T1, undefined)));
  const map = a.heatmap(1, "http", "latency_ns", T0, T1, 1000);
  if (map.rows !== 86_399) throw new Error(`expected 86,399 rows summed, got ${map.rows}`);
  a.free();
}
figure("wasm_heatmap_day_64_buckets_decode_and_sum_1000px", cold);
figure("wasm_heatmap_day_64_buckets_cached_1000px", warm[1000]);
figure("wasm_heatmap_day_64_buckets_cached_4000px", warm[4000]);
figure("wasm_region_stats_day_64_buckets_cached", stats);

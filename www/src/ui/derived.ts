// A derived series' values over a window: the rows its inputs hold, read
// whole from the engine (every row, not an envelope: `a / b` of two
// envelopes is not the envelope of `a / b`), evaluated row by row, then
// reduced to a min/max envelope per pixel bucket for drawing, as the
// engine reduces columns. A window of more rows than `DERIVED_ROW_CAP`
// is not evaluated: the plot says so and asks for a narrower window.

import type { ArchiveHandle, RangeEnvelope } from "../engine/types";
import { type Expr, evaluate, inputKey, inputsOf } from "./expression";

/** Rows a derived series is evaluated over at most (its inputs are held whole while it is). */
export const DERIVED_ROW_CAP = 500_000;

export interface DerivedSpec {
  /** The text as typed (the plot's name and its URL form). */
  text: string;
  expr: Expr;
}

/** What the derived plots draw: an envelope like the engine's, or why there is none. */
export interface DerivedAnswer {
  env: RangeEnvelope;
  /** Set when the window holds more rows than DERIVED_ROW_CAP (nothing evaluated). */
  tooMany?: number;
}

/**
 * Reads the inputs of `specs` over [from, to] and evaluates them. The
 * envelope holds one column per spec, named by its text.
 */
export async function readDerived(
  handle: ArchiveHandle,
  source: number,
  stream: string,
  from: bigint,
  to: bigint,
  specs: DerivedSpec[],
  buckets: number,
  signal: AbortSignal,
): Promise<DerivedAnswer> {
  const keys = new Set<string>();
  for (const s of specs) inputsOf(s.expr, keys);
  const raw = new Set<string>();
  const rates = new Set<string>();
  for (const k of keys) {
    if (k.startsWith("rate:")) rates.add(k.slice(5));
    else raw.add(k);
  }
  const ask = (columns: string[], asRates: boolean) =>
    handle.readRange(source, stream, from, to, { columns, maxPoints: DERIVED_ROW_CAP, ...(asRates ? { rates: columns } : {}), signal });
  // A counter read both as stored and as a rate needs two answers (the engine gives a column one way).
  const [plain, rated] = await Promise.all([raw.size > 0 ? ask([...raw], false) : null, rates.size > 0 ? ask([...rates], true) : null]);
  const answers = [plain, rated].filter((a): a is RangeEnvelope => a !== null);
  const first = answers[0]!;
  const base: RangeEnvelope = { ...first, columns: [] };
  const big = answers.find((a) => a.reduced);
  if (big) return { env: { ...base, ts: new BigInt64Array(0), reduced: false }, tooMany: big.rows_in_window };
  const ts = first.ts;
  const n = ts.length;
  const inputs = new Map<string, Float64Array>();
  const put = (a: RangeEnvelope | null, asRates: boolean) => {
    if (!a) return;
    if (a.ts.length !== n) throw new Error("the engine answered the derived series' inputs with different rows");
    for (const c of a.columns) inputs.set(inputKey(c.name, asRates), c.min);
  };
  put(plain, false);
  put(rated, true);
  // A column the engine returned no numeric values for is missing everywhere.
  for (const k of keys) if (!inputs.has(k)) inputs.set(k, new Float64Array(n).fill(NaN));
  const values = specs.map((s) => evaluate(s.expr, inputs, n));
  if (n <= buckets) {
    return { env: { ...base, ts, reduced: false, columns: specs.map((s, i) => ({ name: s.text, min: values[i]!, max: values[i]! })) } };
  }
  const reduced = reduce(ts, values, from, to, buckets);
  return { env: { ...base, ts: reduced.ts, reduced: true, columns: specs.map((s, i) => ({ name: s.text, min: reduced.min[i]!, max: reduced.max[i]! })) } };
}

/**
 * Folds rows into `buckets` equal time buckets over [from, to], each
 * keeping its start, and the min and max of each series' finite values
 * (NaN where a bucket has none). Buckets holding no row are left out.
 */
export function reduce(ts: BigInt64Array, series: Float64Array[], from: bigint, to: bigint, buckets: number) {
  const span = to - from + 1n;
  const nb = BigInt(buckets);
  const mins = series.map(() => new Float64Array(buckets).fill(NaN));
  const maxs = series.map(() => new Float64Array(buckets).fill(NaN));
  const used = new Uint8Array(buckets);
  for (let i = 0; i < ts.length; i++) {
    const t = ts[i]!;
    if (t < from || t > to) continue;
    const b = Number(((t - from) * nb) / span);
    used[b] = 1;
    series.forEach((v, k) => {
      const x = v[i]!;
      if (Number.isNaN(x)) return;
      const lo = mins[k]!;
      const hi = maxs[k]!;
      if (!(lo[b]! <= x)) lo[b] = x;
      if (!(hi[b]! >= x)) hi[b] = x;
    });
  }
  let m = 0;
  for (let b = 0; b < buckets; b++) m += used[b]!;
  const outTs = new BigInt64Array(m);
  const outMin = series.map(() => new Float64Array(m));
  const outMax = series.map(() => new Float64Array(m));
  let j = 0;
  for (let b = 0; b < buckets; b++) {
    if (!used[b]) continue;
    outTs[j] = from + (span * BigInt(b)) / nb;
    series.forEach((_, k) => {
      outMin[k]![j] = mins[k]![b]!;
      outMax[k]![j] = maxs[k]![b]!;
    });
    j++;
  }
  return { ts: outTs, min: outMin, max: outMax };
}

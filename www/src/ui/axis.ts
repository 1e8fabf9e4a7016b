// Wall-clock tick positions and labels, shared by the timeline and the plots.
//
// Ticks are chosen in integer nanoseconds from a ladder of "round" steps and
// aligned to the chosen zone's wall clock (a tick every 5 minutes falls on
// :00, :05, ... local time when the zone is local).

import {
  NS_PER_DAY,
  NS_PER_HOUR,
  NS_PER_MIN,
  NS_PER_MS,
  NS_PER_S,
  NS_PER_US,
  type TimeZoneMode,
  clockPart,
  datePart,
  floorDiv,
  localOffsetNs,
  parts,
} from "./format";

const STEPS: bigint[] = (() => {
  const out: bigint[] = [];
  for (const base of [1n, NS_PER_US, NS_PER_MS]) for (const m of [1n, 2n, 5n, 10n, 20n, 50n, 100n, 200n, 500n]) out.push(base * m);
  for (const s of [1n, 2n, 5n, 10n, 15n, 30n]) out.push(s * NS_PER_S);
  for (const m of [1n, 2n, 5n, 10n, 15n, 30n]) out.push(m * NS_PER_MIN);
  for (const hr of [1n, 2n, 3n, 6n, 12n]) out.push(hr * NS_PER_HOUR);
  for (const d of [1n, 2n, 7n, 14n, 30n, 91n, 182n, 365n, 730n, 1826n, 3652n, 7305n, 18262n, 36525n]) out.push(d * NS_PER_DAY);
  return out;
})();

export interface Tick {
  ns: bigint;
  /** The fine part of the label (clock or fraction). */
  label: string;
  /** The coarse context (date, or date and minute), set where it changes. */
  context: string | null;
}

/** The smallest step from the ladder giving at most `maxTicks` ticks over `range`. */
export function pickStep(range: bigint, maxTicks: number): bigint {
  const want = range / BigInt(Math.max(1, Math.floor(maxTicks)));
  for (const s of STEPS) if (s >= want && s > 0n) return s;
  return STEPS[STEPS.length - 1]!;
}

export function ticks(from: bigint, to: bigint, maxTicks: number, tz: TimeZoneMode): Tick[] {
  if (to <= from) return [];
  const step = pickStep(to - from, maxTicks);
  const off = tz === "local" ? localOffsetNs(from) : 0n;
  // First multiple of `step` (in the zone's wall clock) at or after `from`.
  let t = floorDiv(from + off, step) * step - off;
  if (t < from) t += step;
  const out: Tick[] = [];
  let prevContext = "";
  for (let n = 0; t <= to && n < 1000; n++, t += step) {
    const p = parts(t, tz);
    let label: string;
    let context: string;
    if (step >= NS_PER_DAY) {
      label = datePart(p);
      context = "";
    } else if (step >= NS_PER_MIN) {
      label = clockPart(p, 0).slice(0, 5);
      context = datePart(p);
    } else if (step >= NS_PER_S) {
      label = clockPart(p, 0);
      context = datePart(p);
    } else {
      const digits = step >= NS_PER_MS ? 3 : step >= NS_PER_US ? 6 : 9;
      label = clockPart(p, digits).slice(6); // "SS.fff..."
      context = `${datePart(p)} ${clockPart(p, 0).slice(0, 5)}`;
    }
    out.push({ ns: t, label, context: context !== prevContext && context !== "" ? context : null });
    prevContext = context;
  }
  return out;
}

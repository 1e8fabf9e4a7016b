// Formatting of counts, byte sizes, instants and durations for display.
//
// Timestamps in an archive are signed 64-bit nanoseconds since the Unix
// epoch; they arrive as bigint and stay bigint until a value is printed, so
// nothing is rounded to a double on the way to the screen.

export type TimeZoneMode = "utc" | "local";

export const NS_PER_US = 1_000n;
export const NS_PER_MS = 1_000_000n;
export const NS_PER_S = 1_000_000_000n;
export const NS_PER_MIN = 60n * NS_PER_S;
export const NS_PER_HOUR = 60n * NS_PER_MIN;
export const NS_PER_DAY = 24n * NS_PER_HOUR;

export const I64_MIN = -(2n ** 63n);
export const I64_MAX = 2n ** 63n - 1n;

/** 1234567 -> "1,234,567" (fixed locale so tests and screenshots are stable). */
export function count(n: number | bigint): string {
  return n.toLocaleString("en-US");
}

/** 65536 -> "64.0 KiB". */
export function bytes(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

/** Floor division for bigint (rounds toward negative infinity). */
export function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return (a % b !== 0n && (a < 0n) !== (b < 0n)) ? q - 1n : q;
}

/** Modulo with the sign of the divisor (always >= 0 for b > 0). */
export function floorMod(a: bigint, b: bigint): bigint {
  const r = a % b;
  return r !== 0n && (r < 0n) !== (b < 0n) ? r + b : r;
}

/** Offset of local time from UTC at the given instant, in nanoseconds (east positive). */
export function localOffsetNs(ns: bigint): bigint {
  const ms = Number(floorDiv(ns, NS_PER_MS));
  const d = new Date(clampMs(ms));
  return BigInt(-d.getTimezoneOffset()) * NS_PER_MIN;
}

/** Date handles +-8.64e15 ms; archive timestamps reach +-9.2e15 ms. */
function clampMs(ms: number): number {
  return Math.max(-8.64e15, Math.min(8.64e15, ms));
}

export interface Parts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** Nanoseconds within the second, 0..999_999_999. */
  frac: number;
}

export function parts(ns: bigint, tz: TimeZoneMode): Parts {
  const secs = floorDiv(ns, NS_PER_S);
  const frac = Number(floorMod(ns, NS_PER_S));
  const d = new Date(clampMs(Number(secs) * 1000));
  // The same fields either way; only which clock reads them differs.
  const utc = tz === "utc";
  return {
    year: utc ? d.getUTCFullYear() : d.getFullYear(),
    month: (utc ? d.getUTCMonth() : d.getMonth()) + 1,
    day: utc ? d.getUTCDate() : d.getDate(),
    hour: utc ? d.getUTCHours() : d.getHours(),
    minute: utc ? d.getUTCMinutes() : d.getMinutes(),
    second: utc ? d.getUTCSeconds() : d.getSeconds(),
    frac,
  };
}

const p2 = (n: number): string => String(n).padStart(2, "0");

function yearStr(y: number): string {
  if (y >= 0 && y <= 9999) return String(y).padStart(4, "0");
  return (y < 0 ? "-" : "+") + String(Math.abs(y)).padStart(6, "0");
}

export function datePart(p: Parts): string {
  return `${yearStr(p.year)}-${p2(p.month)}-${p2(p.day)}`;
}

export function clockPart(p: Parts, fracDigits: number): string {
  let s = `${p2(p.hour)}:${p2(p.minute)}:${p2(p.second)}`;
  if (fracDigits > 0) s += "." + String(p.frac).padStart(9, "0").slice(0, fracDigits);
  return s;
}

/** The fewest of 0, 3, 6 or 9 fraction digits that print `ns` exactly. */
export function fracDigitsFor(ns: bigint): number {
  if (ns % NS_PER_S === 0n) return 0;
  if (ns % NS_PER_MS === 0n) return 3;
  if (ns % NS_PER_US === 0n) return 6;
  return 9;
}

/** "2023-11-14 22:13:20.000" in the chosen zone. */
export function instant(ns: bigint, tz: TimeZoneMode, fracDigits?: number): string {
  const digits = fracDigits ?? Math.max(3, fracDigitsFor(ns));
  const p = parts(ns, tz);
  return `${datePart(p)} ${clockPart(p, digits)}`;
}

/** Both ends printed with the same precision, the shared date not repeated. */
export function span(from: bigint, to: bigint, tz: TimeZoneMode): string {
  const digits = Math.max(fracDigitsFor(from), fracDigitsFor(to));
  const a = parts(from, tz);
  const b = parts(to, tz);
  const left = `${datePart(a)} ${clockPart(a, digits)}`;
  const right = datePart(a) === datePart(b) ? clockPart(b, digits) : `${datePart(b)} ${clockPart(b, digits)}`;
  return `${left} → ${right}`;
}

export function zoneLabel(tz: TimeZoneMode, at: bigint = 0n): string {
  if (tz === "utc") return "UTC";
  const off = Number(localOffsetNs(at) / NS_PER_MIN);
  const sign = off < 0 ? "−" : "+";
  const a = Math.abs(off);
  let name = "local";
  try {
    name = Intl.DateTimeFormat().resolvedOptions().timeZone || "local";
  } catch {
    /* keep "local" */
  }
  return `${name} (UTC${sign}${p2(Math.floor(a / 60))}:${p2(a % 60)})`;
}

/** A length of time in nanoseconds for people: "1 m 57 s", "10 ns", "3.2 ms". */
export function duration(ns: bigint): string {
  if (ns < 0n) return "−" + duration(-ns);
  if (ns === 0n) return "0 s";
  if (ns < NS_PER_US) return `${ns} ns`;
  if (ns < NS_PER_MS) return `${trim(Number(ns) / 1e3)} µs`;
  if (ns < NS_PER_S) return `${trim(Number(ns) / 1e6)} ms`;
  if (ns < NS_PER_MIN) return `${trim(Number(ns) / 1e9)} s`;
  const units: [bigint, string][] = [
    [365n * NS_PER_DAY, "y"],
    [NS_PER_DAY, "d"],
    [NS_PER_HOUR, "h"],
    [NS_PER_MIN, "m"],
    [NS_PER_S, "s"],
  ];
  for (let i = 0; i < units.length; i++) {
    const [size, name] = units[i]!;
    if (ns < size) continue;
    const head = `${ns / size} ${name}`;
    const next = units[i + 1];
    if (!next) return head;
    const rest = (ns % size) / next[0];
    return rest > 0n ? `${head} ${rest} ${next[1]}` : head;
  }
  return `${ns} ns`;
}

function trim(v: number): string {
  return v >= 100 ? v.toFixed(0) : v >= 10 ? stripZeros(v.toFixed(1)) : stripZeros(v.toFixed(2));
}

function stripZeros(s: string): string {
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

/** Compact numbers for plot axes: 1234 -> "1.23k", 9.2e18 -> "9.22e18". */
export function compactNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (a >= 1e15 || a < 1e-4) return v.toExponential(2).replace("e+", "e");
  const units: [number, string][] = [
    [1e12, "T"],
    [1e9, "G"],
    [1e6, "M"],
    [1e3, "k"],
  ];
  for (const [size, suffix] of units) {
    if (a >= size) return stripZeros((v / size).toPrecision(3)) + suffix;
  }
  return stripZeros(v.toPrecision(4));
}

/**
 * An axis label: as compact as compactNumber, but with enough digits that
 * neighbouring ticks `incr` apart never print the same (1.000864G, 1.000866G).
 */
export function axisNumber(v: number, incr: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (a >= 1e15 || (a < 1e-4 && incr < 1e-4)) return v.toExponential(Math.max(1, Math.min(8, Math.ceil(Math.log10(a / Math.abs(incr || a))) + 1))).replace("e+", "e");
  const units: [number, string][] = [
    [1e12, "T"],
    [1e9, "G"],
    [1e6, "M"],
    [1e3, "k"],
    [1, ""],
  ];
  const [size, suffix] = units.find(([u]) => a >= u) ?? [1, ""];
  const step = Math.abs(incr) / size;
  const decimals = step > 0 && step < 1 ? Math.min(8, Math.ceil(-Math.log10(step) - 1e-9)) : 0;
  return stripZeros((v / size).toFixed(decimals)) + suffix;
}

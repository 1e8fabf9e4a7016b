// The view as a URL: which archives (those that came from a URL), which
// source and stream, which columns, which time window, which zone, and
// what the compare view compares. Bookmarking the page or sharing its
// address reopens the same view. Every parameter is documented in
// www/README.md ("URL parameters").

import { MAX_DERIVED, MAX_EXPR_CHARS } from "./expression";
import type { TimeZoneMode } from "./format";
import type { ArchiveIdentity } from "./identity";
import type { Note } from "./notes";

export interface ViewState {
  /** The archive this view shows, when it came from a URL (the first `url`). */
  url?: string;
  /** Every `url` given, in order (repeatable; a single one is `[url]`). */
  urls?: string[];
  /** Which of `urls` is shown (its tab), 0-based; source, stream and columns are its. */
  active?: number;
  source?: number;
  stream?: string;
  columns?: string[];
  /** Derived series (expressions over the stream's columns), as typed. */
  exprs?: string[];
  from?: bigint;
  to?: bigint;
  tz?: TimeZoneMode;
  /** The stream name the compare view compares across sources and archives. */
  compare?: string;
  /** The time shift of the compare view's second window, in nanoseconds (B drawn at A's time: B = A − shift). */
  shift?: bigint;
  /** Notes a shared link carries (link.ts), for the archive in front: added to its own. */
  notes?: Note[];
  /** The archive a shared link was made on: the page says so when the one opened is another. */
  made?: ArchiveIdentity;
}

const INT = /^-?\d{1,19}$/;
/** How many `url` parameters are read at most: a link cannot open an unbounded number of archives. */
export const MAX_URLS = 64;

const UNITS: [string, bigint][] = [
  ["d", 86_400_000_000_000n],
  ["h", 3_600_000_000_000n],
  ["m", 60_000_000_000n],
  ["s", 1_000_000_000n],
  ["ms", 1_000_000n],
  ["us", 1_000n],
  ["ns", 1n],
];
const I64_MAX = (1n << 63n) - 1n;

/**
 * A shift as written in a URL: whole nanoseconds (`-3600000000000`) or a
 * whole number of a unit (`-1h`, `1d`, `250ms`; d h m s ms us ns). Null
 * when it is neither, or past what a timestamp holds.
 */
export function parseShift(text: string): bigint | null {
  const m = /^(-?\d{1,19})(d|h|m|s|ms|us|ns)?$/.exec(text.trim());
  if (!m) return null;
  const unit = UNITS.find(([u]) => u === (m[2] ?? "ns"))![1];
  const v = BigInt(m[1]!) * unit;
  return v > I64_MAX || v < -I64_MAX ? null : v;
}

/** A shift in the largest unit that writes it exactly (`86400000000000` is `1d`). */
export function shiftText(ns: bigint): string {
  if (ns === 0n) return "0";
  for (const [u, n] of UNITS) if (ns % n === 0n) return `${ns / n}${u}`;
  return `${ns}ns`;
}

export function parseState(search: string): ViewState {
  const q = new URLSearchParams(search);
  const s: ViewState = {};
  const urls = q.getAll("url").filter((u) => u !== "").slice(0, MAX_URLS);
  if (urls.length > 0) {
    s.urls = urls;
    const active = q.get("active");
    const k = active && /^\d{1,3}$/.test(active) ? Number(active) : 0;
    s.active = k < urls.length ? k : 0;
    s.url = urls[s.active]!;
  }
  const source = q.get("source");
  if (source && /^\d{1,15}$/.test(source)) s.source = Number(source);
  const stream = q.get("stream");
  if (stream !== null && stream !== "") s.stream = stream;
  const cols = q.getAll("col");
  if (cols.length > 0) s.columns = cols;
  // Bounded: a link cannot ask for more series, or longer ones, than the page plots.
  const exprs = q.getAll("expr").filter((e) => e.trim() !== "" && e.length <= MAX_EXPR_CHARS).slice(0, MAX_DERIVED);
  if (exprs.length > 0) s.exprs = exprs;
  const from = q.get("from");
  const to = q.get("to");
  if (from && to && INT.test(from) && INT.test(to)) {
    const a = BigInt(from);
    const b = BigInt(to);
    if (b > a) {
      s.from = a;
      s.to = b;
    }
  }
  const tz = q.get("tz");
  if (tz === "utc" || tz === "local") s.tz = tz;
  const compare = q.get("compare");
  if (compare !== null && compare !== "") s.compare = compare;
  const shift = q.get("shift");
  const ns = shift === null ? null : parseShift(shift);
  if (ns !== null && ns !== 0n) s.shift = ns;
  return s;
}

const OWNED = ["url", "active", "source", "stream", "col", "expr", "from", "to", "tz", "compare", "shift"];

/** Serialises the view into a query string, keeping parameters the viewer does not own. */
export function stateToSearch(state: ViewState, keep: string): string {
  const q = new URLSearchParams(keep);
  for (const k of OWNED) q.delete(k);
  const urls = state.urls ?? (state.url ? [state.url] : []);
  for (const u of urls.slice(0, MAX_URLS)) q.append("url", u);
  if (urls.length > 1 && state.active !== undefined && state.active > 0 && state.active < urls.length) q.set("active", String(state.active));
  if (state.source !== undefined) q.set("source", String(state.source));
  if (state.stream !== undefined) q.set("stream", state.stream);
  for (const c of state.columns ?? []) q.append("col", c);
  for (const e of state.exprs ?? []) q.append("expr", e);
  if (state.from !== undefined && state.to !== undefined) {
    q.set("from", state.from.toString());
    q.set("to", state.to.toString());
  }
  if (state.tz && state.tz !== "utc") q.set("tz", state.tz);
  if (state.compare !== undefined && state.compare !== "") q.set("compare", state.compare);
  if (state.shift !== undefined && state.shift !== 0n) q.set("shift", shiftText(state.shift));
  // URLSearchParams would write "/" and ":" as %2F and %3A; both are legal
  // in a query, and an address people read and share is better without.
  const enc = (v: string) => encodeURIComponent(v).replace(/%2F/gi, "/").replace(/%3A/gi, ":");
  const s = [...q.entries()].map(([k, v]) => `${enc(k)}=${enc(v)}`).join("&");
  return s ? "?" + s : "";
}

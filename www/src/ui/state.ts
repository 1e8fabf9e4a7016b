// The view as a URL: which archive (when it came from a URL), which source
// and stream, which columns, which time window, which zone. Bookmarking the
// page or sharing its address reopens the same view.

import { MAX_DERIVED, MAX_EXPR_CHARS } from "./expression";
import type { TimeZoneMode } from "./format";

export interface ViewState {
  url?: string;
  source?: number;
  stream?: string;
  columns?: string[];
  /** Derived series (expressions over the stream's columns), as typed. */
  exprs?: string[];
  from?: bigint;
  to?: bigint;
  tz?: TimeZoneMode;
}

const INT = /^-?\d{1,19}$/;

export function parseState(search: string): ViewState {
  const q = new URLSearchParams(search);
  const s: ViewState = {};
  const url = q.get("url");
  if (url) s.url = url;
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
  return s;
}

/** Serialises the view into a query string, keeping parameters the viewer does not own. */
export function stateToSearch(state: ViewState, keep: string): string {
  const q = new URLSearchParams(keep);
  for (const k of ["url", "source", "stream", "col", "expr", "from", "to", "tz"]) q.delete(k);
  if (state.url) q.set("url", state.url);
  if (state.source !== undefined) q.set("source", String(state.source));
  if (state.stream !== undefined) q.set("stream", state.stream);
  for (const c of state.columns ?? []) q.append("col", c);
  for (const e of state.exprs ?? []) q.append("expr", e);
  if (state.from !== undefined && state.to !== undefined) {
    q.set("from", state.from.toString());
    q.set("to", state.to.toString());
  }
  if (state.tz && state.tz !== "utc") q.set("tz", state.tz);
  // URLSearchParams would write "/" and ":" as %2F and %3A; both are legal
  // in a query, and an address people read and share is better without.
  const enc = (v: string) => encodeURIComponent(v).replace(/%2F/gi, "/").replace(/%3A/gi, ":");
  const s = [...q.entries()].map(([k, v]) => `${enc(k)}=${enc(v)}`).join("&");
  return s ? "?" + s : "";
}

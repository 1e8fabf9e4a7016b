// Derived facts about a described archive: spans, totals, gaps.

import type { Description, SegmentInfo, SourceInfo, StreamInfo } from "../engine/types";
import { NS_PER_S, floorDiv } from "./format";

export type Span = [bigint, bigint];

function widen(acc: Span | null, a: bigint, b: bigint): Span {
  if (!acc) return [a, b];
  return [a < acc[0] ? a : acc[0], b > acc[1] ? b : acc[1]];
}

/** A described archive does not change, so each stream's span is worked out once. */
const sealedSpans = new WeakMap<StreamInfo, Span | null>();

export function sealedSpan(st: StreamInfo): Span | null {
  const known = sealedSpans.get(st);
  if (known !== undefined) return known;
  let s: Span | null = st.outline ? [st.outline.first_ts, st.outline.last_ts] : null;
  for (const seg of st.segments) s = widen(s, seg.first_ts, seg.last_ts);
  sealedSpans.set(st, s);
  return s;
}

/** Sealed segments and the live tail together. */
export function streamSpan(st: StreamInfo): Span | null {
  let s = sealedSpan(st);
  if (st.live_span) s = widen(s, st.live_span[0], st.live_span[1]);
  return s;
}

/** The span that covers every part's span (null when none has one). */
function coverOf<T>(parts: readonly T[], spanOfPart: (part: T) => Span | null): Span | null {
  let s: Span | null = null;
  for (const part of parts) {
    const t = spanOfPart(part);
    if (t) s = widen(s, t[0], t[1]);
  }
  return s;
}

export function sourceSpan(src: SourceInfo): Span | null {
  return coverOf(src.streams, streamSpan);
}

export function archiveSpan(d: Description): Span | null {
  return coverOf(d.sources, sourceSpan);
}

export interface Totals {
  sources: number;
  streams: number;
  segments: number;
  sealedRows: number;
  liveRows: number;
  rows: number;
  sealedBytes: number;
  /** false for an outline: sealed rows and bytes are not counted yet. */
  counted: boolean;
}

export function totals(d: Description): Totals {
  const t: Totals = { sources: d.sources.length, streams: 0, segments: 0, sealedRows: 0, liveRows: 0, rows: 0, sealedBytes: 0, counted: !d.outline };
  for (const src of d.sources) {
    for (const st of src.streams) {
      t.streams++;
      t.segments += st.outline?.segments ?? st.segments.length;
      t.sealedRows += st.sealed_rows;
      t.liveRows += st.live_rows;
      for (const seg of st.segments) t.sealedBytes += seg.bytes;
    }
  }
  t.rows = t.sealedRows + t.liveRows;
  return t;
}

/** The window shown when nothing narrower was asked for: the span with a little margin. */
export function fullWindow(span: Span | null): Span {
  if (!span) {
    const now = BigInt(Date.now()) * 1_000_000n;
    return [now - 3600n * NS_PER_S, now];
  }
  const [a, b] = span;
  const width = b - a;
  if (width <= 0n) return [a - NS_PER_S / 2n, a + NS_PER_S / 2n];
  const pad = width / 50n > 0n ? width / 50n : 1n;
  return [a - pad, b + pad];
}

/** A plot origin near the start of the window: whole seconds, so x values stay small and exact. */
export function originFor(span: Span): bigint {
  return floorDiv(span[0], NS_PER_S) * NS_PER_S;
}

export interface Gap {
  from: bigint;
  to: bigint;
  after: SegmentInfo;
  before: SegmentInfo;
  /** Seqs that are missing between the two segments. */
  missingSeqs: number;
}

/**
 * Holes in a stream's sealed data: time between two consecutive segments
 * much longer than the stream's usual spacing of rows, or segments whose seq
 * numbers skip (removed by retention or never written).
 */
export function gaps(st: StreamInfo): Gap[] {
  const segs = [...st.segments].sort((x, y) => (x.first_ts < y.first_ts ? -1 : x.first_ts > y.first_ts ? 1 : x.seq - y.seq));
  const spacings: number[] = [];
  for (const s of segs) if (s.rows > 1) spacings.push(Number(s.last_ts - s.first_ts) / (s.rows - 1));
  spacings.sort((a, b) => a - b);
  const typical = spacings.length > 0 ? spacings[Math.floor(spacings.length / 2)]! : null;
  const out: Gap[] = [];
  for (let i = 1; i < segs.length; i++) {
    const a = segs[i - 1]!;
    const b = segs[i]!;
    const dt = Number(b.first_ts - a.last_ts);
    const missing = b.seq - a.seq - 1;
    const timeGap = typical !== null && typical > 0 && dt > 3 * typical;
    if (timeGap || missing > 0) out.push({ from: a.last_ts, to: b.first_ts, after: a, before: b, missingSeqs: Math.max(0, missing) });
  }
  return out;
}

const NUMERIC = /^(U?Int(8|16|32|64)|Float(16|32|64)|Boolean)$/;

export function isNumericType(type: string): boolean {
  return NUMERIC.test(type);
}

// ---------------------------------------------------------------------------
// What changed between two descriptions (a followed archive's images)

/** Whether two descriptions of a stream list the same segments: the same seqs, rows, times and sizes, in order. */
export function sameSegments(a: StreamInfo, b: StreamInfo): boolean {
  const x = a.segments;
  const y = b.segments;
  if (x === y) return true;
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    const p = x[i]!;
    const q = y[i]!;
    if (p.seq !== q.seq || p.rows !== q.rows || p.first_ts !== q.first_ts || p.last_ts !== q.last_ts || p.bytes !== q.bytes || p.caller_index !== q.caller_index) return false;
  }
  return true;
}

/** Whether a timeline lane drawn for `a` is still right for `b`: the same segments and the same live tail. */
export function sameLane(a: StreamInfo, b: StreamInfo): boolean {
  const s = a.live_span;
  const t = b.live_span;
  const sameLive = a.live_rows === b.live_rows && (s === t || (s !== null && t !== null && s[0] === t[0] && s[1] === t[1]));
  return sameLive && sameSegments(a, b);
}

/** Whether two string maps (labels, metadata) hold the same entries in the same order. */
export function sameEntries(a: Record<string, string>, b: Record<string, string>): boolean {
  if (a === b) return true;
  const x = Object.keys(a);
  const y = Object.keys(b);
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    const k = x[i]!;
    if (k !== y[i] || a[k] !== b[k]) return false;
  }
  return true;
}

// The accelerator: a window's envelope asked of the server that serves the
// archive, where it offers one (`dendro serve`, src/bin/dendro/serve/envelope.rs),
// instead of reading footers and segments by range. The server runs the
// same range reader natively; its answer is a few kilobytes.
//
// Offered means: the archive's own answer (the open's probe) carried
// `Dendro-Envelope` with the version this page speaks. Any other version,
// none, or a refusal (a window too costly, the server busy, the file
// changed) and the worker reads by range as from any server: the page
// never asks the person anything, it says which path drew the plot.

import type { RangeEnvelope } from "./types";

/** The version of the query and answer this page speaks. */
export const ENVELOPE_VERSION = "1";

/** The header an archive's answer offers the accelerator with. */
export const ENVELOPE_HEADER = "dendro-envelope";

/** An archive the server offers envelopes of: its URL and the validator of the file opened. */
export interface Offer {
  url: string;
  etag: string | null;
}

/**
 * The offer an archive's probe makes: the header's value must be the
 * version this page speaks, else the answer is `why` not.
 */
export function offerOf(url: string, etag: string | null, header: string | null): { offer: Offer } | { why: string } {
  if (header === null) return { why: "the server does not compute envelopes" };
  if (header.trim() !== ENVELOPE_VERSION) return { why: `the server computes envelopes of another version (${header.trim().slice(0, 20)})` };
  return { offer: { url, etag } };
}

/** What a readRange asks, as the server's query reads it. */
export interface Window {
  source: number;
  stream: string;
  from: bigint;
  to: bigint;
  columns: string[] | null;
  maxPoints: number;
  rates: string[] | null;
}

/** The query of `window` on `url`: `envelope=1`, then one pair per field, repeated for columns and rates. */
export function envelopeUrl(url: string, w: Window): string {
  const e = encodeURIComponent;
  const parts = [
    `envelope=${ENVELOPE_VERSION}`,
    `source=${w.source}`,
    `stream=${e(w.stream)}`,
    `from=${w.from}`,
    `to=${w.to}`,
    `points=${w.maxPoints}`,
  ];
  // `cols` says the list is given even when it is empty.
  if (w.columns) parts.push("cols=", ...w.columns.map((c) => `col=${e(c)}`));
  for (const r of w.rates ?? []) parts.push(`rate=${e(r)}`);
  return `${url}${url.includes("?") ? "&" : "?"}${parts.join("&")}`;
}

/** The envelope the server computed, or why there is none (its words, with the status). */
export type Asked = { envelope: RangeEnvelope; bytes: number } | { why: string };

/** The most bytes an answer may have: 4,096 points of 64 columns. */
const MAX_ANSWER = 8 + 4096 * 8 * (1 + 2 * 64) + (64 << 10);

/** Asks the server for the window's envelope; never throws. */
export async function askEnvelope(offer: Offer, w: Window, signal?: AbortSignal): Promise<Asked> {
  let res: Response;
  try {
    res = await fetch(envelopeUrl(offer.url, w), {
      cache: "no-store",
      ...(offer.etag ? { headers: { "If-Match": offer.etag } } : {}),
      ...(signal ? { signal } : {}),
    });
  } catch (e) {
    return { why: `the server could not be asked (${e instanceof Error ? e.message : String(e)})` };
  }
  const length = Number(res.headers.get("content-length") ?? "0");
  if (length > MAX_ANSWER) {
    void res.body?.cancel().catch(() => {});
    return { why: `the server's answer is too large (${length} bytes)` };
  }
  const body = new Uint8Array(await res.arrayBuffer().catch(() => new ArrayBuffer(0)));
  if (!res.ok) {
    const words = new TextDecoder().decode(body.subarray(0, 300)).trim();
    return { why: `the server declined (${res.status}: ${words || res.statusText})` };
  }
  if (res.headers.get(ENVELOPE_HEADER)?.trim() !== ENVELOPE_VERSION) return { why: "the server answered another version" };
  const envelope = parseEnvelope(body);
  return typeof envelope === "string" ? { why: `the server's answer cannot be read: ${envelope}` } : { envelope, bytes: body.byteLength };
}

/**
 * The answer's body (see `encode` in src/bin/dendro/serve/envelope.rs): a
 * line of JSON padded to a multiple of 8 bytes, then the timestamps and
 * each column's minima and maxima, little-endian. A string says what is
 * wrong with it.
 */
export function parseEnvelope(body: Uint8Array): RangeEnvelope | string {
  const line = body.indexOf(10) + 1;
  if (line <= 0 || line % 8 !== 0) return "no header line";
  let head: unknown;
  try {
    head = JSON.parse(new TextDecoder().decode(body.subarray(0, line)));
  } catch {
    return "the header line is not JSON";
  }
  const h = head as Record<string, unknown>;
  const count = (k: string): number => (typeof h[k] === "number" && Number.isSafeInteger(h[k]) && (h[k] as number) >= 0 ? (h[k] as number) : NaN);
  const n = count("points");
  const names = Array.isArray(h["columns"]) && h["columns"].every((c) => typeof c === "string") ? (h["columns"] as string[]) : null;
  if (!names || Number.isNaN(n)) return "the header names no points or columns";
  if (body.byteLength !== line + 8 * n * (1 + 2 * names.length)) return "its length does not match its header";
  const counts = ["rows_in_window", "live_rows_in_window", "segments_read", "segments_from_stats", "segments_left_out", "rows_left_out"].map(count);
  if (counts.some(Number.isNaN) || typeof h["reduced"] !== "boolean") return "its header lacks counts";
  // Copied out, so each array starts aligned and can be transferred alone.
  const words = body.slice(line).buffer;
  const ts = new BigInt64Array(words, 0, n);
  const values = new Float64Array(words, 8 * n);
  return {
    rows_in_window: counts[0]!,
    live_rows_in_window: counts[1]!,
    segments_read: counts[2]!,
    segments_from_stats: counts[3]!,
    segments_left_out: counts[4]!,
    rows_left_out: counts[5]!,
    reduced: h["reduced"],
    ts: ts.slice(),
    columns: names.map((name, k) => ({ name, min: values.slice(2 * n * k, 2 * n * k + n), max: values.slice(2 * n * k + n, 2 * n * (k + 1)) })),
  };
}

// The reserved metadata keys a writer fills in, parsed for display.
//
// Their values are JSON text inside a metadata string. Nanosecond
// timestamps in them exceed 2^53, so integers are kept exact (as bigint)
// by quoting long integer literals before JSON.parse.

/** JSON.parse, except integer literals too long for a double come back as strings. */
export function parseJsonExact(text: string): unknown {
  let out = "";
  let i = 0;
  let inString = false;
  let last = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (inString) {
      if (c === "\\") i += 2;
      else {
        if (c === '"') inString = false;
        i++;
      }
      continue;
    }
    if (c === '"') {
      inString = true;
      i++;
      continue;
    }
    if (c === "-" || (c >= "0" && c <= "9")) {
      let j = i + 1;
      while (j < text.length && /[0-9.eE+-]/.test(text[j]!)) j++;
      const tok = text.slice(i, j);
      if (/^-?\d{16,}$/.test(tok)) {
        out += text.slice(last, i) + '"' + tok + '"';
        last = j;
      }
      i = j;
      continue;
    }
    i++;
  }
  out += text.slice(last);
  return JSON.parse(out);
}

/** An integer from parsed JSON (number or exact string) as bigint, or null. */
export function toBigInt(v: unknown): bigint | null {
  if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
  if (typeof v === "string" && /^-?\d+$/.test(v)) return BigInt(v);
  if (typeof v === "bigint") return v;
  return null;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A short display string for any JSON value (strings verbatim, others as JSON). */
export function jsonText(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === undefined) return "";
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

export interface WriterSession {
  session: string;
  clock_anchor_wall_ns: bigint | null;
  dendro: string;
  resumed_after_ts: bigint | null;
  /** Keys this viewer does not know, kept for display. */
  extra: Record<string, unknown>;
}

export interface ArchiveEvent {
  timestamp: bigint;
  description: string;
  kind: string | null;
  details: unknown;
  id: string | null;
}

export interface ProducerEpoch {
  epoch: string;
  from_ts: bigint | null;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; why: string };

export function parseWriterSessions(text: string): Parsed<WriterSession[]> {
  let v: unknown;
  try {
    v = parseJsonExact(text);
  } catch (e) {
    return { ok: false, why: "not valid JSON" };
  }
  if (!Array.isArray(v)) return { ok: false, why: "expected a JSON array of sessions" };
  const out: WriterSession[] = [];
  for (const item of v) {
    if (!isObj(item)) return { ok: false, why: "a session entry is not an object" };
    const { session, clock_anchor_wall_ns, dendro, resumed_after_ts, ...extra } = item;
    out.push({
      session: jsonText(session),
      clock_anchor_wall_ns: toBigInt(clock_anchor_wall_ns),
      dendro: jsonText(dendro),
      resumed_after_ts: toBigInt(resumed_after_ts),
      extra,
    });
  }
  return { ok: true, value: out };
}

export function parseEvents(text: string): Parsed<ArchiveEvent[]> {
  let v: unknown;
  try {
    v = parseJsonExact(text);
  } catch {
    return { ok: false, why: "not valid JSON" };
  }
  const list = isObj(v) ? v["events"] : Array.isArray(v) ? v : undefined;
  if (!Array.isArray(list)) return { ok: false, why: 'expected {"events": [...]}' };
  const out: ArchiveEvent[] = [];
  for (const item of list) {
    if (!isObj(item)) return { ok: false, why: "an event is not an object" };
    const ts = toBigInt(item["timestamp"]);
    if (ts === null) return { ok: false, why: "an event has no integer timestamp" };
    out.push({
      timestamp: ts,
      description: jsonText(item["description"]),
      kind: item["kind"] === undefined || item["kind"] === null ? null : jsonText(item["kind"]),
      details: item["details"],
      id: item["id"] === undefined || item["id"] === null ? null : jsonText(item["id"]),
    });
  }
  return { ok: true, value: out };
}

export function parseProducerEpochs(text: string): Parsed<ProducerEpoch[]> {
  let v: unknown;
  try {
    v = parseJsonExact(text);
  } catch {
    return { ok: false, why: "not valid JSON" };
  }
  if (!Array.isArray(v)) return { ok: false, why: "expected a JSON array of epochs" };
  const out: ProducerEpoch[] = [];
  for (const item of v) {
    if (!isObj(item)) return { ok: false, why: "an epoch entry is not an object" };
    out.push({ epoch: jsonText(item["epoch"]), from_ts: toBigInt(item["from_ts"]) });
  }
  return { ok: true, value: out };
}

export const RESERVED_KEYS = ["writer_sessions", "events", "producer_epochs"] as const;

// A shared link: the whole view (archives by URL, source, stream, columns,
// derived series, window, zone, compare stream and shift), the notes of
// the archive in front, and which archive it was made on, as JSON
// compressed with deflate-raw (the browser's CompressionStream) and
// written in base64url in one parameter, `v`. The page opening it needs
// no server beyond the archives' own.
//
// A link is hostile input: its length, its unpacked size, its version and
// every field are checked before the view takes anything from it, and a
// refusal says why in words. Note text stays text (notes.ts).

import { MAX_DERIVED, MAX_EXPR_CHARS } from "./expression";
import { type ArchiveIdentity, LINK_UUIDS } from "./identity";
import { MAX_NOTES, MAX_NOTE_CHARS, type Note, checkNote } from "./notes";
import { MAX_URLS, type ViewState } from "./state";

/** The link format this viewer writes and reads. */
export const LINK_VERSION = 1;
/** The longest `v` read (characters): past any address a browser keeps. */
export const MAX_LINK_CHARS = 32 * 1024;
/** What a link may unpack to at most (bytes): a link cannot make the page inflate a bomb. */
export const MAX_LINK_JSON = 256 * 1024;
/** Columns a link may name at most. */
const MAX_COLUMNS = 64;
const MAX_NAME_CHARS = 1024;
const MAX_URL_CHARS = 4096;

/** A link as read: the view, and the identity of the archive it was made on, if it says. */
export interface SharedView {
  state: ViewState;
  made?: ArchiveIdentity;
}

/** Why a link was refused, in words; `LinkError.message` is shown to the person. */
export class LinkError extends Error {}

function b64url(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function unb64url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new LinkError("The link's view is damaged: it has characters base64url does not use (was it cut or changed?).");
  let bin: string;
  try {
    bin = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
  } catch {
    throw new LinkError("The link's view is damaged: it is not base64url (was it cut?).");
  }
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

async function deflate(text: string): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Inflates at most `limit` bytes; more is refused, and the rest never inflated. */
async function inflate(bytes: Uint8Array, limit: number): Promise<string> {
  const reader = new Blob([bytes as BlobPart]).stream().pipeThrough(new DecompressionStream("deflate-raw")).getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) throw new LinkError(`The link's view unpacks to more than ${limit / 1024} KiB, more than any view this viewer writes; it was not opened.`);
      parts.push(value);
    }
  } catch (e) {
    if (e instanceof LinkError) throw e;
    throw new LinkError("The link's view is damaged: it does not unpack (deflate) — was it cut or changed?");
  } finally {
    void reader.cancel().catch(() => {});
  }
  const all = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(all);
  } catch {
    throw new LinkError("The link's view is damaged: it is not UTF-8 text.");
  }
}

/**
 * The text of `v` for a view, its notes (the archive in front's) and the
 * archive it is of. Notes are written relative to the window's start
 * (shorter numbers), without their ids.
 */
export async function encodeView(state: ViewState, notes: readonly Note[], made: ArchiveIdentity | null): Promise<string> {
  const base = state.from ?? 0n;
  const o: Record<string, unknown> = { v: LINK_VERSION };
  const urls = state.urls ?? (state.url ? [state.url] : []);
  if (urls.length > 0) o["u"] = urls.slice(0, MAX_URLS);
  if (state.active) o["a"] = state.active;
  if (state.source !== undefined) o["s"] = state.source;
  if (state.stream !== undefined) o["t"] = state.stream;
  if (state.columns?.length) o["c"] = state.columns;
  if (state.exprs?.length) o["e"] = state.exprs;
  if (state.from !== undefined && state.to !== undefined) {
    o["f"] = state.from.toString();
    o["o"] = (state.to - state.from).toString();
  }
  if (state.tz === "local") o["z"] = "local";
  if (state.compare) o["k"] = state.compare;
  if (state.shift) o["h"] = state.shift.toString();
  if (notes.length > 0) o["n"] = notes.slice(0, MAX_NOTES).map((n) => [n.source, (n.from - base).toString(), n.to === null ? 0 : (n.to - n.from).toString(), n.text]);
  if (made) o["i"] = [made.uuids.slice(0, LINK_UUIDS), made.count, made.digest];
  return b64url(await deflate(JSON.stringify(o)));
}

function field<T>(o: Record<string, unknown>, key: string, what: string, ok: (v: unknown) => v is T): T | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (!ok(v)) throw new LinkError(`The link's view is not one this viewer can read: its ${what} is not right.`);
  return v;
}

const isString = (max: number) => (v: unknown): v is string => typeof v === "string" && v !== "" && v.length <= max;
const isList = (max: number, each: (v: unknown) => boolean) => (v: unknown): v is string[] => Array.isArray(v) && v.length <= max && v.every(each);
const isIndex = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isNs = (v: unknown): v is string => typeof v === "string" && /^-?\d{1,19}$/.test(v);

/** Reads `v`: the view it carries, or a LinkError that says why not. */
export async function decodeView(text: string): Promise<SharedView> {
  if (text.length > MAX_LINK_CHARS) throw new LinkError(`The link's view is ${text.length} characters long, more than the ${MAX_LINK_CHARS} this viewer reads; it was not opened.`);
  const json = await inflate(unb64url(text), MAX_LINK_JSON);
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    throw new LinkError("The link's view is damaged: it is not JSON.");
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new LinkError("The link's view is damaged: it is not a view.");
  const o = v as Record<string, unknown>;
  if (o["v"] !== LINK_VERSION) {
    const said = typeof o["v"] === "number" ? `version ${o["v"]}` : "no version";
    throw new LinkError(`This link was made by another version of the viewer (link ${said}); this viewer reads link version ${LINK_VERSION}. Open it with the viewer it was made with, or ask for a new link.`);
  }
  const state: ViewState = {};
  const urls = field(o, "u", "list of archives", isList(MAX_URLS, isString(MAX_URL_CHARS)));
  if (urls && urls.length > 0) {
    state.urls = urls;
    const a = field(o, "a", "archive in front", isIndex) ?? 0;
    state.active = a < urls.length ? a : 0;
    state.url = urls[state.active]!;
  }
  const source = field(o, "s", "source", isIndex);
  if (source !== undefined) state.source = source;
  const stream = field(o, "t", "stream", isString(MAX_NAME_CHARS));
  if (stream !== undefined) state.stream = stream;
  const cols = field(o, "c", "columns", isList(MAX_COLUMNS, isString(MAX_NAME_CHARS)));
  if (cols) state.columns = cols;
  const exprs = field(o, "e", "derived series", isList(MAX_DERIVED, isString(MAX_EXPR_CHARS)));
  if (exprs) state.exprs = exprs;
  const from = field(o, "f", "window", isNs);
  const width = field(o, "o", "window", isNs);
  if (from !== undefined && width !== undefined && BigInt(width) > 0n) {
    state.from = BigInt(from);
    state.to = state.from + BigInt(width);
  }
  if (field(o, "z", "zone", (x): x is string => x === "local")) state.tz = "local";
  const compare = field(o, "k", "compared stream", isString(MAX_NAME_CHARS));
  if (compare !== undefined) state.compare = compare;
  const shift = field(o, "h", "time shift", isNs);
  if (shift !== undefined && BigInt(shift) !== 0n) state.shift = BigInt(shift);
  const notes = field(o, "n", "notes", (x): x is unknown[][] => Array.isArray(x) && x.length <= MAX_NOTES && x.every((n) => Array.isArray(n) && n.length === 4));
  if (notes) state.notes = notes.map((n, i) => linkNote(n, state.from ?? 0n, i));
  const made = field(o, "i", "archive identity", (x): x is [string[], number, string] =>
    Array.isArray(x) && x.length === 3 && isList(LINK_UUIDS, isString(64))(x[0]) && isIndex(x[1]) && typeof x[2] === "string" && /^[0-9a-f]{16}$/.test(x[2]),
  );
  return made ? { state, made: { uuids: made[0], count: made[1], digest: made[2] } } : { state };
}

function linkNote(n: unknown[], base: bigint, i: number): Note {
  const [source, at, len, text] = n;
  if (!isNs(at) || !(len === 0 || isNs(len)) || typeof text !== "string") throw new LinkError(`The link's note ${i + 1} is not one this viewer can read.`);
  const from = base + BigInt(at);
  const to = len === 0 || BigInt(len as string) <= 0n ? null : from + BigInt(len as string);
  try {
    return checkNote({ source, from: from.toString(), to: to === null ? null : to.toString(), text: text.slice(0, MAX_NOTE_CHARS) }, `note ${i + 1}`);
  } catch (e) {
    throw new LinkError(`The link's ${(e as Error).message}.`);
  }
}

/** The address of the page for a shared view: this page with only `v`. */
export function linkAddress(v: string, loc: { origin: string; pathname: string } = location): string {
  return `${loc.origin}${loc.pathname}?v=${v}`;
}

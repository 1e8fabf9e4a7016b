// Many files at once: a dropped folder walked, several files picked or
// dropped together, sorted by content before anything is opened.
//
// Every file's first 100 bytes go to the engine's sniff (what an open
// checks before it reads anything else), so a folder of a thousand files
// costs a thousand small reads, in batches, not a thousand opens; the
// files that are not archives are listed in words with the reason. Walking
// and opening are bounded (MAX_FILES looked at, MAX_OPEN opened): a folder
// of a hundred thousand files cannot hang the page, and the report says
// what was left out.

import type { Sniffed } from "../engine/types";
import { fileText, h } from "./dom";
import { plural } from "./catalog";

/** Files a dropped or picked folder is read for, at most. */
export const MAX_FILES = 2000;
/** Archives opened from one drop or pick, at most (each is a tab and an engine handle). */
export const MAX_OPEN = 64;
/** Folders below a dropped one that are walked, at most this deep. */
const MAX_DEPTH = 8;
/** Entries of one folder listed at most (names only; files past MAX_FILES are counted, not read). */
const LIST_ENTRIES = 4 * MAX_FILES;
/** Headers read and sent to the engine at once. */
const BATCH = 200;
/** What the engine's sniff needs of a file. */
const HEADER_BYTES = 100;

/** A file and the name it is shown by (its path inside a dropped or picked folder). */
export interface Named {
  file: File;
  name: string;
}

/** Files sorted by content. */
export interface Sorted {
  archives: Named[];
  /** Not archives this build reads, with the engine's words for why. */
  refused: { name: string; why: string }[];
  /** Files past MAX_FILES that were not looked at, and folders past MAX_DEPTH. */
  leftOut: number;
}

/** Files of a folder picker (`webkitdirectory`) or a plain multiple pick, named by their path. */
export function picked(files: FileList | File[]): Named[] {
  return Array.from(files, (file) => ({ file, name: file.webkitRelativePath || file.name }));
}

/** Files found a batch at a time, and what was left out once they are all found. */
export interface Walk {
  chunks: AsyncIterable<Named[]>;
  /** Files past MAX_FILES and folders past MAX_DEPTH: final once `chunks` is done. */
  leftOut(): number;
}

/**
 * What a drop holds, folders walked: files as they are, every file below a
 * folder (to MAX_FILES files, MAX_DEPTH deep), found a batch at a time so
 * the first are sorted (and opened) while the rest are still being found.
 * Null when nothing dropped is a folder (the caller then takes
 * `dataTransfer.files` as they are). Call it inside the drop event: the
 * items are gone after it.
 */
export function droppedFolders(items: DataTransferItemList | undefined): Walk | null {
  const entries: FileSystemEntry[] = [];
  for (const item of Array.from(items ?? [])) {
    if (item.kind !== "file") continue;
    const entry = typeof item.webkitGetAsEntry === "function" ? item.webkitGetAsEntry() : null;
    if (entry) entries.push(entry);
  }
  if (!entries.some((e) => e.isDirectory)) return null;
  let leftOut = 0;
  return { chunks: walk(entries, (n) => (leftOut += n)), leftOut: () => leftOut };
}

async function* walk(roots: FileSystemEntry[], skipped: (n: number) => void): AsyncGenerator<Named[]> {
  let found = 0;
  const asFile = (e: FileSystemEntry) =>
    new Promise<Named | null>((resolve) =>
      (e as FileSystemFileEntry).file(
        (file) => resolve({ file, name: e.fullPath.replace(/^\//, "") || file.name }),
        () => resolve(null),
      ),
    );
  // Breadth first: the files of a folder before those of its subfolders.
  const folders: [FileSystemEntry[], number][] = [[roots, 0]];
  while (folders.length > 0) {
    const [list, depth] = folders.shift()!;
    for (let i = 0; i < list.length; i += BATCH) {
      const part = list.slice(i, i + BATCH);
      const files = part.filter((e) => e.isFile);
      const room = Math.max(0, MAX_FILES - found);
      skipped(Math.max(0, files.length - room));
      const got = (await Promise.all(files.slice(0, room).map(asFile))).filter((n): n is Named => n !== null);
      found += got.length;
      if (got.length > 0) yield got;
      for (const dir of part.filter((e) => e.isDirectory)) {
        if (depth >= MAX_DEPTH || found >= MAX_FILES) {
          skipped(1);
          continue;
        }
        folders.push([await readFolder(dir as FileSystemDirectoryEntry), depth + 1]);
      }
    }
  }
}

/**
 * A folder's entries: readEntries answers a batch at a time (100 in
 * Chromium) until empty. Names are cheap to list, files are not: up to
 * LIST_ENTRIES are listed (so what is left out can be counted), the files
 * among them are then taken up to MAX_FILES.
 */
async function readFolder(dir: FileSystemDirectoryEntry): Promise<FileSystemEntry[]> {
  const reader = dir.createReader();
  const out: FileSystemEntry[] = [];
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((resolve) => reader.readEntries(resolve, () => resolve([])));
    if (batch.length === 0) break;
    out.push(...batch);
    if (out.length >= LIST_ENTRIES) break;
  }
  return out;
}

/**
 * Sorts files by their first bytes, through the engine's sniff: archives
 * this build reads, and the rest with the reason. Looks at MAX_FILES at
 * most, BATCH at a time, telling `progress` after each batch the archives
 * it found (a browser reads a file's first bytes in about a millisecond,
 * so a large folder takes seconds: its archives open meanwhile).
 */
export async function sortByContent(
  files: Named[] | AsyncIterable<Named[]>,
  sniff: (headers: ArrayBuffer[]) => Promise<Sniffed[]>,
  progress: (found: Named[], looked: number) => void = () => {},
): Promise<Sorted> {
  const out: Sorted = { archives: [], refused: [], leftOut: 0 };
  let looked = 0;
  const batches: AsyncIterable<Named[]> | Named[][] = Array.isArray(files) ? chunked(files) : files;
  for await (const part of batches) {
    const room = Math.max(0, MAX_FILES - looked);
    out.leftOut += Math.max(0, part.length - room);
    const batch = part.slice(0, room);
    if (batch.length === 0) continue;
    const headers = await Promise.all(
      batch.map((n) =>
        n.file
          .slice(0, HEADER_BYTES)
          .arrayBuffer()
          .catch(() => null),
      ),
    );
    const readable = batch.filter((_, k) => headers[k] !== null);
    const verdicts = await sniff(headers.filter((b): b is ArrayBuffer => b !== null));
    batch.forEach((n, k) => {
      if (headers[k] === null) out.refused.push({ name: n.name, why: "the browser could not read it" });
    });
    const found: Named[] = [];
    readable.forEach((n, k) => {
      const v = verdicts[k];
      if (v?.readable) found.push(n);
      else out.refused.push({ name: n.name, why: v?.text ?? "not judged" });
    });
    out.archives.push(...found);
    looked += batch.length;
    progress(found, looked);
  }
  return out;
}

function chunked(files: Named[]): Named[][] {
  const out: Named[][] = [];
  for (let i = 0; i < files.length; i += BATCH) out.push(files.slice(i, i + BATCH));
  return out;
}

/** Lines of the report shown at most; the rest are counted. */
const REPORT_LINES = 40;

/**
 * The report of a many-file open, in words: how many archives opened, which
 * files were not archives and why, what was left out. Null when there is
 * nothing to say beyond the tabs themselves.
 */
export function manyReport(what: string, sorted: Sorted, notOpened: Named[], close: () => void): HTMLElement | null {
  if (sorted.refused.length === 0 && sorted.leftOut === 0 && notOpened.length === 0) return null;
  const opened = sorted.archives.length - notOpened.length;
  const lines: HTMLElement[] = [];
  for (const r of sorted.refused.slice(0, REPORT_LINES)) {
    lines.push(h("li", { data: { testid: "refused" } }, h("span", { class: "dv-mono" }, fileText(r.name, { max: 160, more: false })), ": ", fileText(r.why, { max: 300, more: false })));
  }
  const more: string[] = [];
  if (sorted.refused.length > REPORT_LINES) more.push(`${plural(sorted.refused.length - REPORT_LINES, "more file")} not archives`);
  if (notOpened.length > 0) more.push(`${plural(notOpened.length, "more archive")} not opened: at most ${MAX_OPEN} open from one drop`);
  if (sorted.leftOut > 0) more.push(`${plural(sorted.leftOut, "file or folder", "files or folders")} not looked at: at most ${MAX_FILES} files, ${MAX_DEPTH} folders deep`);
  const head = `${what}: opened ${plural(opened, "archive")}` + (sorted.refused.length > 0 ? `; ${plural(sorted.refused.length, "file")} not ${sorted.refused.length === 1 ? "an archive" : "archives"} this viewer reads:` : ".");
  return h(
    "div",
    { class: "dv-many-report", role: "status", data: { testid: "many-report" } },
    h("div", { class: "dv-many-head" }, h("b", null, fileText(head, { max: 400, more: false })), h("button", { type: "button", class: "dv-tab-close", "aria-label": "Dismiss", on: { click: close } }, "×")),
    lines.length > 0 ? h("ul", { class: "dv-many-list" }, lines) : null,
    ...more.map((m) => h("p", { class: "dv-muted dv-small", data: { testid: "left-out" } }, m)),
  );
}

/** The archives a `dendro serve DIR` offers (its `/archives.json`), and the files it skipped. */
export interface Listing {
  archives: { name: string; url: string; bytes: number }[];
  skipped: { name: string; reason: string }[];
}

/** A listing larger than this is refused rather than parsed. */
const LISTING_BYTES = 4 << 20;
/** Entries of a listing shown at most. */
const LISTING_ENTRIES = 2000;

/**
 * Fetches and checks a listing: every field typed, at most LISTING_BYTES
 * long; anything else is an error in words naming the address.
 */
export async function fetchListing(url: string): Promise<Listing> {
  const bad = (why: string) => new Error(`${url} is not a listing of archives: ${why}`);
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new Error(`The request for ${url} failed (${e instanceof Error ? e.message : String(e)}).`);
  }
  if (!res.ok) throw new Error(`The server answered ${res.status} for ${url}.`);
  const text = await res.text();
  if (text.length > LISTING_BYTES) throw bad(`it is over ${LISTING_BYTES >> 20} MiB long`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw bad("it is not JSON");
  }
  const obj = raw as { archives?: unknown; skipped?: unknown };
  if (typeof raw !== "object" || raw === null || !Array.isArray(obj.archives)) throw bad("it has no list of archives");
  const str = (v: unknown): v is string => typeof v === "string";
  const archives = (obj.archives as unknown[]).flatMap((a) => {
    const x = a as { name?: unknown; url?: unknown; bytes?: unknown };
    return typeof a === "object" && a !== null && str(x.name) && str(x.url) ? [{ name: x.name, url: x.url, bytes: typeof x.bytes === "number" ? x.bytes : 0 }] : [];
  });
  const skipped = (Array.isArray(obj.skipped) ? (obj.skipped as unknown[]) : []).flatMap((a) => {
    const x = a as { name?: unknown; reason?: unknown };
    return typeof a === "object" && a !== null && str(x.name) && str(x.reason) ? [{ name: x.name, reason: x.reason }] : [];
  });
  return { archives, skipped };
}

/** A listing as a panel: each archive with a button to open it, "open all" (at most MAX_OPEN), the skipped files with the reason. */
export function listingPanel(from: string, listing: Listing, open: (urls: string[]) => void, bytesText: (n: number) => string): HTMLElement {
  const shown = listing.archives.slice(0, LISTING_ENTRIES);
  const rows = shown.map((a) =>
    h(
      "li",
      { data: { testid: "listed" } },
      h("button", { type: "button", class: "dv-btn dv-btn-xs", on: { click: () => open([a.url]) } }, "Open"),
      " ",
      h("span", { class: "dv-mono" }, fileText(a.name, { max: 160, more: false })),
      h("span", { class: "dv-muted" }, ` ${bytesText(a.bytes)}`),
    ),
  );
  const skipped = listing.skipped.slice(0, REPORT_LINES).map((s) =>
    h("li", { data: { testid: "skipped" } }, h("span", { class: "dv-mono" }, fileText(s.name, { max: 160, more: false })), ": ", fileText(s.reason, { max: 300, more: false })),
  );
  const all = listing.archives.slice(0, MAX_OPEN).map((a) => a.url);
  return h(
    "section",
    { class: "dv-many-report dv-listing", data: { testid: "listing" } },
    h(
      "div",
      { class: "dv-many-head" },
      h("b", null, fileText(`${plural(listing.archives.length, "archive")} served at ${from}`, { max: 300, more: false })),
      all.length > 1 ? h("button", { type: "button", class: "dv-btn dv-btn-primary dv-btn-xs", data: { testid: "open-all" }, on: { click: () => open(all) } }, listing.archives.length > MAX_OPEN ? `Open the first ${MAX_OPEN}` : "Open all") : null,
    ),
    rows.length > 0 ? h("ul", { class: "dv-many-list" }, rows) : h("p", { class: "dv-muted" }, "No archives here."),
    listing.archives.length > shown.length ? h("p", { class: "dv-muted dv-small" }, `${plural(listing.archives.length - shown.length, "more archive")} not listed.`) : null,
    skipped.length > 0 ? h("p", null, `${plural(listing.skipped.length, "file")} skipped, not archives this viewer reads:`) : null,
    skipped.length > 0 ? h("ul", { class: "dv-many-list" }, skipped) : null,
  );
}

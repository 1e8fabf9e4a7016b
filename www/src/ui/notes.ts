// Notes: a short text a person pins to an instant or a region of one
// source's time. They are kept per archive (localStorage, keyed by the
// archive's identity: its sources' uuids, see identity.ts), carried in
// shared links (link.ts), exported and imported as a JSON file, and drawn
// on every plot of their source and on the timeline.
//
// Note text comes from links and files other people made: it is hostile
// like any string from a file, and reaches the page only as text
// (`fileText`, text nodes); a note's fields are checked here before any
// other code sees them.

/** One note: a point (`to` null) or a region [from, to] of source `source`'s time, in nanoseconds. */
export interface Note {
  id: string;
  source: number;
  from: bigint;
  to: bigint | null;
  text: string;
}

/** What a plot or a lane draws of a note. */
export interface NoteMark {
  from: bigint;
  to: bigint | null;
  text: string;
}

/** The longest note text, in UTF-16 units: a note is a remark, not a document. */
export const MAX_NOTE_CHARS = 280;
/** Notes kept per archive at most (and read from one link or file). */
export const MAX_NOTES = 200;
/** An exported file read at most (bytes): MAX_NOTES full notes fit several times. */
export const MAX_NOTES_FILE = 1 << 20;

const I64 = /^-?\d{1,19}$/;
const I64_MAX = (1n << 63n) - 1n;

/** A timestamp written as a decimal string (bigint does not survive JSON); null when it is not one. */
export function nsOf(v: unknown): bigint | null {
  if (typeof v !== "string" || !I64.test(v)) return null;
  const n = BigInt(v);
  return n > I64_MAX || n < -I64_MAX - 1n ? null : n;
}

let idCounter = 0;
/** A note's id: unique in this page and, with the clock and a random part, across pages. */
export function newNoteId(): string {
  idCounter++;
  const r = typeof crypto !== "undefined" && "getRandomValues" in crypto ? crypto.getRandomValues(new Uint32Array(1))[0]! : Math.floor(Math.random() * 2 ** 32);
  return `${Date.now().toString(36)}${idCounter.toString(36)}${r.toString(36)}`.slice(0, 24);
}

/**
 * A note read from outside (a link, a file, localStorage): every field
 * checked, the text cut to MAX_NOTE_CHARS. Throws an Error that says
 * which field is wrong.
 */
export function checkNote(v: unknown, where: string): Note {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error(`${where}: a note must be an object`);
  const o = v as Record<string, unknown>;
  const source = o["source"];
  if (typeof source !== "number" || !Number.isSafeInteger(source) || source < 0) throw new Error(`${where}: "source" must be a source id (a whole number)`);
  const from = nsOf(o["from"]);
  if (from === null) throw new Error(`${where}: "from" must be a timestamp in nanoseconds, written as a string of digits`);
  let to: bigint | null = null;
  if (o["to"] !== undefined && o["to"] !== null) {
    to = nsOf(o["to"]);
    if (to === null || to <= from) throw new Error(`${where}: "to" must be a timestamp after "from", or null for a point`);
  }
  const text = o["text"];
  if (typeof text !== "string" || text.trim() === "") throw new Error(`${where}: "text" must be a string that is not empty`);
  const id = typeof o["id"] === "string" && /^[A-Za-z0-9_-]{1,32}$/.test(o["id"]) ? o["id"] : newNoteId();
  return { id, source, from, to, text: text.slice(0, MAX_NOTE_CHARS) };
}

/** Notes as plain JSON values (timestamps as strings). */
export function notesJson(notes: readonly Note[]): unknown[] {
  return notes.map((n) => ({ id: n.id, source: n.source, from: n.from.toString(), to: n.to === null ? null : n.to.toString(), text: n.text }));
}

/** The kind of file `exportFile` writes, checked on import. */
const FILE_KIND = "dendro-notes";

/** The text of an exported notes file. */
export function exportFile(notes: readonly Note[], archive: string): string {
  return JSON.stringify({ kind: FILE_KIND, version: 1, archive, notes: notesJson(notes) }, null, 1);
}

/** An exported notes file read back: every note checked; an Error in words otherwise. */
export function parseNotesFile(text: string, name: string): Note[] {
  if (text.length > MAX_NOTES_FILE) throw new Error(`${name} is larger than a notes file can be (${MAX_NOTES_FILE} bytes)`);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error(`${name} is not a notes file: it is not JSON`);
  }
  if (typeof v !== "object" || v === null || (v as { kind?: unknown }).kind !== FILE_KIND) throw new Error(`${name} is not a notes file: it has no "kind": "${FILE_KIND}"`);
  const version = (v as { version?: unknown }).version;
  if (version !== 1) throw new Error(`${name} is a notes file of version ${JSON.stringify(version)}; this viewer reads version 1`);
  const list = (v as { notes?: unknown }).notes;
  if (!Array.isArray(list)) throw new Error(`${name}: "notes" must be a list`);
  if (list.length > MAX_NOTES) throw new Error(`${name} holds ${list.length} notes; at most ${MAX_NOTES} are read`);
  return list.map((n, i) => checkNote(n, `${name}, note ${i + 1}`));
}

const STORE_PREFIX = "dendro.notes.";

/** localStorage when the page may use it (an opaque origin or a blocked store throws). */
function storage(): Storage | null {
  try {
    return typeof localStorage === "undefined" ? null : localStorage;
  } catch {
    return null;
  }
}

/**
 * The notes of one archive. `key` names it in localStorage (its
 * identity); null keeps the notes in this page only (an archive without
 * source uuids has no identity to keep them under).
 */
export class NoteBook {
  private list: Note[] = [];
  private readonly listeners = new Set<() => void>();

  constructor(readonly key: string | null) {
    const s = key ? storage() : null;
    const raw = s?.getItem(STORE_PREFIX + key);
    if (!raw) return;
    try {
      const v: unknown = JSON.parse(raw);
      if (Array.isArray(v)) for (const [i, n] of v.slice(0, MAX_NOTES).entries()) this.list.push(checkNote(n, `stored note ${i + 1}`));
    } catch {
      // A stored list this viewer cannot read (another version's, or
      // edited by hand) is left where it is rather than shown wrong.
      this.list = [];
    }
  }

  all(): readonly Note[] {
    return this.list;
  }

  /** The marks of `source`'s notes, for a plot or a lane. */
  marks(source: number): NoteMark[] {
    return this.list.filter((n) => n.source === source);
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Adds notes (from a person, a link or a file); one with an id already here replaces it. Returns how many were added or replaced. */
  add(notes: readonly Note[]): number {
    let n = 0;
    for (const note of notes) {
      // The same note again (a link opened twice, a file imported twice) is not a second note.
      if (this.list.some((x) => x.id !== note.id && x.source === note.source && x.from === note.from && x.to === note.to && x.text === note.text)) continue;
      const i = this.list.findIndex((x) => x.id === note.id);
      if (i >= 0) this.list[i] = note;
      else if (this.list.length < MAX_NOTES) this.list.push(note);
      else continue;
      n++;
    }
    this.list.sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
    if (n > 0) this.changed();
    return n;
  }

  edit(id: string, text: string): void {
    const note = this.list.find((x) => x.id === id);
    const t = text.trim().slice(0, MAX_NOTE_CHARS);
    if (!note || t === "" || t === note.text) return;
    note.text = t;
    this.changed();
  }

  remove(id: string): void {
    const i = this.list.findIndex((x) => x.id === id);
    if (i < 0) return;
    this.list.splice(i, 1);
    this.changed();
  }

  private changed(): void {
    const s = this.key ? storage() : null;
    try {
      if (s && this.list.length > 0) s.setItem(STORE_PREFIX + this.key, JSON.stringify(notesJson(this.list)));
      else s?.removeItem(STORE_PREFIX + this.key);
    } catch {
      // A full store: the notes stay in this page (and in links and exports).
    }
    for (const fn of this.listeners) fn();
  }
}

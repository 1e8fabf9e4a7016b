// The archives open in one viewer, for whatever looks across them (the
// compare view, the fleet strip): what is open, under which name, and which
// of its sources are copies of sources open already.
//
// A viewer owns one registry (`Viewer.archives`). An entry is added once its
// archive is described and removed when its tab closes (its engine handle is
// closed then: nothing here holds on to it). The same archive opened twice,
// or two archives holding the same source (equal source uuids), is told
// apart here so that no comparison draws one source twice: the source
// counts once, under the archive opened first, and the later archive lists
// it in `duplicates` (the viewer says so in words in that archive's tab).

import type { ArchiveHandle, Description, SourceInfo } from "../engine/types";

/** One open archive, as the registry lists it. */
export interface OpenArchive {
  /** Unique within the page for as long as the page lives (the tab's id). */
  readonly id: number;
  /** The file's or URL's name, as given: a string from outside (render with `fileText`). */
  readonly name: string;
  /** The URL it was opened from; null for a dropped or picked file, or bytes. */
  readonly url: string | null;
  /** The engine handle to read it through. A followed archive moves to newer images: read this each time. */
  readonly handle: ArchiveHandle;
  /** The newest description (a followed archive's grows). */
  readonly description: Description;
  /**
   * Its sources already open in an archive earlier in the list (equal
   * uuid), by source id: leave them out of any comparison.
   */
  readonly duplicates: ReadonlyMap<number, Duplicate>;
}

/** A source that is a copy of one open in an earlier archive. */
export interface Duplicate {
  uuid: string;
  /** The archive (and its source id) that holds the copy counted. */
  of: { archive: number; name: string; source: number };
}

/** A source to compare, from the archive that counts it. */
export interface ComparedSource {
  archive: OpenArchive;
  source: SourceInfo;
}

/** What the registry needs of an open archive's view: its current handle and description. */
export interface LiveArchive {
  readonly handle: ArchiveHandle;
  readonly desc: Description;
}

interface Entry extends OpenArchive {
  duplicates: Map<number, Duplicate>;
}

export class ArchiveRegistry {
  private entries: Entry[] = [];
  private readonly listeners = new Set<(list: readonly OpenArchive[]) => void>();

  /** The open archives, in the order they opened. */
  list(): readonly OpenArchive[] {
    return this.entries;
  }

  get(id: number): OpenArchive | undefined {
    return this.entries.find((e) => e.id === id);
  }

  /**
   * Calls `fn` with the new list whenever an archive is added or removed
   * (and so whenever `duplicates` may have changed). Returns the way to stop.
   */
  onChange(fn: (list: readonly OpenArchive[]) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * Every source of every open archive once, in opening order: a source
   * whose uuid an earlier archive holds is left out (it is in that
   * archive's entry as a duplicate).
   */
  sources(): ComparedSource[] {
    const out: ComparedSource[] = [];
    for (const archive of this.entries) {
      for (const source of archive.description.sources) if (!archive.duplicates.has(source.id)) out.push({ archive, source });
    }
    return out;
  }

  /** The viewer's side: an archive described in tab `id` (again, when reopened in the same tab). */
  add(id: number, name: string, url: string | null, view: LiveArchive): OpenArchive {
    this.entries = this.entries.filter((e) => e.id !== id);
    const entry: Entry = {
      id,
      name,
      url,
      get handle() {
        return view.handle;
      },
      get description() {
        return view.desc;
      },
      duplicates: new Map(),
    };
    this.entries.push(entry);
    this.recount();
    return entry;
  }

  /** The viewer's side: tab `id` closed (or is being reopened). */
  remove(id: number): void {
    const before = this.entries.length;
    this.entries = this.entries.filter((e) => e.id !== id);
    if (this.entries.length !== before) this.recount();
  }

  /** Works out every entry's duplicates from scratch (opening order decides who counts) and tells the listeners. */
  private recount(): void {
    const seen = new Map<string, { archive: number; name: string; source: number }>();
    for (const e of this.entries) {
      e.duplicates = new Map();
      for (const src of e.description.sources) {
        if (src.uuid === null) continue;
        const first = seen.get(src.uuid);
        if (first) e.duplicates.set(src.id, { uuid: src.uuid, of: first });
        else seen.set(src.uuid, { archive: e.id, name: e.name, source: src.id });
      }
    }
    for (const fn of [...this.listeners]) fn(this.entries);
  }
}

/**
 * The duplicates of one archive in words, for its tab: null when it has
 * none. Names come from files: render the answer with `fileText`.
 */
export function duplicatesText(a: OpenArchive): string | null {
  if (a.duplicates.size === 0) return null;
  const total = a.description.sources.length;
  const others = [...new Set([...a.duplicates.values()].map((d) => d.of.name))];
  const where = others.length === 1 ? others[0]! : `${others.length} archives opened before it (${others.slice(0, 3).join(", ")}${others.length > 3 ? ", …" : ""})`;
  const which = a.duplicates.size === total ? (total === 1 ? "Its one source is" : `All ${total} of its sources are`) : `${a.duplicates.size} of its ${total} sources are`;
  return `${a.name} holds the same data as ${where}: ${which} open already there (equal source uuids). Comparisons use the copy opened first and leave these out.`;
}

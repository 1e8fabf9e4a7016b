// Which archive a view is of: the uuids of its sources (a writer gives
// each source one when it is created, so copies of an archive share them
// and another archive does not), and a digest of its catalog (every
// source's streams and sealed segments), which changes when segments are
// sealed, evicted or rewritten. Notes are kept under the uuids; a shared
// link records both, so the page opening it can say in words whether it
// shows the archive the link was made on, a later state of it, or another.

import type { Description } from "../engine/types";

export interface ArchiveIdentity {
  /** The sources' uuids, sorted; a source without one is left out. In a link, the first LINK_UUIDS of them. */
  uuids: string[];
  /** How many uuids the archive has (a link records only the first few). */
  count: number;
  /** 16 hex digits over the catalog's sealed segments (not a security hash: it tells states apart). */
  digest: string;
}

/** Two 32-bit FNV-1a hashes with different seeds, as 16 hex digits. */
function fnv64(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}

/** The identity of the archive `desc` describes (a full description, not an outline). */
export function identityOf(desc: Description): ArchiveIdentity {
  const uuids = desc.sources.flatMap((s) => (s.uuid ? [s.uuid] : [])).sort();
  const parts: string[] = [String(desc.schema_version)];
  for (const s of desc.sources) {
    parts.push(`s${s.id}:${s.uuid ?? ""}`);
    for (const st of s.streams) {
      parts.push(`t${st.name.length}:${st.name}`);
      for (const g of st.segments) parts.push(`${g.seq},${g.rows},${g.first_ts},${g.last_ts},${g.bytes}`);
    }
  }
  return { uuids, count: uuids.length, digest: fnv64(parts.join("\n")) };
}

/** How many uuids a link records: enough to tell archives apart, few enough for a short link. */
export const LINK_UUIDS = 8;

/** The key notes are kept under: the sorted uuids; null when the archive has no uuid to be known by. */
export function notesKey(id: ArchiveIdentity): string | null {
  return id.uuids.length > 0 ? fnv64(id.uuids.join(",")) : null;
}

/**
 * What a page showing archive `here` says about a link made on `made`:
 * null when it is the same archive in the same state, else the words.
 */
export function mismatchText(made: ArchiveIdentity, here: ArchiveIdentity, name: string): string | null {
  const mine = new Set(here.uuids);
  const shared = made.uuids.filter((u) => mine.has(u)).length;
  if (made.digest === here.digest && shared === made.uuids.length && made.count === here.count) return null;
  if ((made.count > 0 && shared === 0) || (made.count === 0) !== (here.count === 0))
    return `This link was made on a different archive: none of its ${made.count} source${made.count === 1 ? "" : "s"} is in ${name}. What the link names that is here (stream, columns, window) is shown; its notes may point at other data.`;
  if (shared < made.uuids.length || here.count !== made.count)
    return `This link was made on an archive of ${made.count} sources, some of them in ${name} (${here.count} sources): it is a different archive. What the link names that is here is shown.`;
  return `${name} has changed since this link was made (its catalog of segments is not the same): the link's window and notes are shown on the archive as it is now.`;
}

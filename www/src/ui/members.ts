// Who takes part in a comparison of one stream name: every source that has
// the stream, across every open archive, each once; the words for who does
// not (no such stream, the same source twice: the registry of open
// archives, archives.ts, knows which sources are copies); and the legend
// name that tells each one apart from the others.

import type { Alignment, Engine, SourceInfo, StreamInfo } from "../engine/types";
import type { OpenArchive } from "./archives";
import { streamSpan } from "./model";

/** One source's stream in a comparison. */
export interface Member {
  /** Stable and unique within the comparison: "archive id/source id". */
  key: string;
  archive: OpenArchive;
  source: SourceInfo;
  stream: StreamInfo;
  /** The archive's name and the labels that tell this source apart. */
  label: string;
  /** The labels named in `label` ([key, value]), for the legend's chips. */
  parts: [string, string][];
  /** Where it lands on the wall-clock axis; set by `align`. */
  alignment: Alignment | null;
}

/** What `gather` found. */
export interface Gathered {
  members: Member[];
  /** Sentences about sources left out (the same source twice, no such stream). */
  notes: string[];
}

/** The longest label value put in a legend (the rest is cut with an ellipsis). */
const LABEL_MAX = 40;

export function gather(archives: readonly OpenArchive[], stream: string): Gathered {
  const members: Member[] = [];
  const notes: string[] = [];
  let without = 0;
  for (const archive of archives) {
    for (const source of archive.description.sources) {
      const st = source.streams.find((s) => s.name === stream);
      if (!st) {
        without++;
        continue;
      }
      const copy = archive.duplicates.get(source.id);
      if (copy) {
        notes.push(
          `Source ${source.id} of ${archive.name} is the same source as source ${copy.of.source} of ${copy.of.name} (equal uuid ${copy.uuid}): drawn once.`,
        );
        continue;
      }
      members.push({ key: `${archive.id}/${source.id}`, archive, source, stream: st, label: "", parts: [], alignment: null });
    }
  }
  if (without > 0) notes.push(`${without} source${without === 1 ? " has" : "s have"} no stream of this name and ${without === 1 ? "is" : "are"} left out.`);
  name(members);
  return { members, notes };
}

/**
 * Names each member by its archive (when more than one archive takes
 * part) and the labels whose values differ between members; a source id
 * where that still leaves two alike.
 */
function name(members: Member[]): void {
  const keys = new Set<string>();
  for (const m of members) for (const k of Object.keys(m.source.labels)) keys.add(k);
  const differing = [...keys].sort().filter((k) => {
    const seen = new Set(members.map((m) => (Object.hasOwn(m.source.labels, k) ? m.source.labels[k] : undefined)));
    return seen.size > 1;
  });
  const archives = new Set(members.map((m) => m.archive.id)).size;
  // One label that tells every source of an archive apart is enough (a
  // host's region and role add nothing): `host` first, then by name.
  const ordered = [...differing].sort((a, b) => (a === "host" ? -1 : b === "host" ? 1 : 0));
  const alone = ordered.find((k) => {
    const seen = new Set(members.map((m) => `${m.archive.id}\u0000${Object.hasOwn(m.source.labels, k) ? m.source.labels[k] : "\u0001"}`));
    return seen.size === members.length;
  });
  const named = alone !== undefined ? [alone] : differing;
  for (const m of members) {
    m.parts = named.filter((k) => Object.hasOwn(m.source.labels, k)).map((k) => [k, cut(m.source.labels[k]!)]);
    const words = m.parts.map(([k, v]) => `${cut(k)}=${v}`);
    m.label = [archives > 1 ? m.archive.name : null, ...words].filter((w) => w !== null).join(" · ");
  }
  const counts = new Map<string, number>();
  for (const m of members) counts.set(m.label, (counts.get(m.label) ?? 0) + 1);
  for (const m of members) if ((counts.get(m.label) ?? 0) > 1 || m.label === "") m.label = [m.label, `source ${m.source.id}`].filter((w) => w !== "").join(" · ");
}

function cut(v: string): string {
  return v.length > LABEL_MAX ? v.slice(0, LABEL_MAX - 1) + "…" : v;
}

/** Asks the engine where each member lands on the wall-clock axis. */
export async function align(engine: Engine, members: Member[]): Promise<void> {
  const out = await engine.align(members.map((m) => ({ handle: m.archive.handle, source: m.source.id, span: streamSpan(m.stream) })));
  members.forEach((m, i) => (m.alignment = out[i] ?? null));
}

/** The wall-clock span every member's rows fall in, with their manual shifts; null when none has rows. */
export function wallSpan(members: Member[], shift: (m: Member) => bigint): [bigint, bigint] | null {
  let span: [bigint, bigint] | null = null;
  for (const m of members) {
    const a = m.alignment;
    if (!a || a.wall_from === null || a.wall_to === null) continue;
    const lo = a.wall_from + shift(m);
    const hi = a.wall_to + shift(m);
    span = span ? [lo < span[0] ? lo : span[0], hi > span[1] ? hi : span[1]] : [lo, hi];
  }
  return span;
}

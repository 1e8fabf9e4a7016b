// Which part of a large catalog the page builds: a filter over sources and
// streams, and the caps that keep the DOM and each frame's work bounded
// however many sources, streams or segments an archive holds. Nothing here
// touches the DOM; the views call it and say in words what they left out.

import type { Description, SourceInfo, StreamInfo } from "../engine/types";
import { count } from "./format";

/** How much of a catalog is built before a person asks for more. */
export const CAPS = {
  /** Source cards built at first, and per "show more". */
  sourceCards: 24,
  /** Rows of a card's stream table at first, and per "show more". */
  cardStreams: 20,
  /** Stream lanes on the timeline at first, and per "show more". */
  lanes: 200,
  /** Label chips on a source card (the rest are one click away). */
  labelChips: 40,
  /** Caller-row names on a source card at first, and per "show more". */
  callerNames: 40,
  /** Metadata rows on a source card at first, and per "show more". */
  metadataRows: 60,
} as const;

/** A source that passes the filter, and those of its streams that do. */
export interface Match {
  source: SourceInfo;
  streams: StreamInfo[];
}

export interface Filtered {
  /** The filter as typed (trimmed); "" shows everything. */
  query: string;
  matches: Match[];
  /** Streams in `matches`. */
  streams: number;
}

/** What a source is found by: "source 12", its uuid, and its labels as key=value. */
const haystacks = new WeakMap<SourceInfo, string>();
function haystack(src: SourceInfo): string {
  let s = haystacks.get(src);
  if (s === undefined) {
    const parts = [`source ${src.id}`, src.uuid ?? ""];
    for (const [k, v] of Object.entries(src.labels)) parts.push(`${k}=${v}`);
    s = parts.join("\n").toLowerCase();
    haystacks.set(src, s);
  }
  return s;
}

/**
 * The sources and streams a filter keeps. Each word of the query must be
 * found (case-insensitively) in the stream's name or in its source's id,
 * uuid or labels. A source all of whose words match keeps every stream;
 * a source with no stream kept is shown only when it matches itself.
 */
export function filterCatalog(desc: Description, query: string): Filtered {
  const q = query.trim();
  const words = q.toLowerCase().split(/\s+/).filter((w) => w !== "");
  const matches: Match[] = [];
  let streams = 0;
  for (const source of desc.sources) {
    if (words.length === 0) {
      matches.push({ source, streams: source.streams });
      streams += source.streams.length;
      continue;
    }
    const hay = haystack(source);
    const missing = words.filter((w) => !hay.includes(w));
    if (missing.length === 0) {
      matches.push({ source, streams: source.streams });
      streams += source.streams.length;
      continue;
    }
    const kept = source.streams.filter((st) => {
      const name = st.name.toLowerCase();
      return missing.every((w) => name.includes(w));
    });
    if (kept.length > 0) {
      matches.push({ source, streams: kept });
      streams += kept.length;
    }
  }
  return { query: q, matches, streams };
}

/** Whether any view of this archive would leave something out at first. */
export function needsFilter(desc: Description): boolean {
  let streams = 0;
  for (const src of desc.sources) {
    streams += src.streams.length;
    if (src.streams.length > CAPS.cardStreams) return true;
  }
  return desc.sources.length > CAPS.sourceCards || streams > CAPS.lanes;
}

/** "source" / "sources", with the count printed for people. */
export function plural(n: number, one: string, many = one + "s"): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

/**
 * What a capped list says about itself: "Showing 24 of 1,000 sources"
 * (with "matching …" when filtered), or null when nothing is left out.
 */
export function shownText(shown: number, total: number, noun: string, filtered = false): string | null {
  if (shown >= total) return null;
  const what = `${count(total)} ${total === 1 ? noun : noun + "s"}`;
  return `Showing ${shown === 0 ? "none" : `the first ${count(shown)}`} of ${what}${filtered ? " matching the filter" : ""}`;
}

// Where a stream's segments and gaps lie, indexed so that the timeline
// finds those meeting a window by binary search: a lane of 100,000
// segments costs a frame the ones in view, not a walk over all of them.

import type { SegmentInfo, StreamInfo } from "../engine/types";
import { type Gap, gaps, sameSegments } from "./model";

/**
 * A stream's segments and gaps ordered by start, with their times as
 * doubles (ns after the first segment's start) and the latest end so far,
 * so the ones meeting a window are found by binary search. Built once per
 * stream: a described archive does not change.
 */
export interface LaneIndex {
  base: bigint;
  segs: SegmentInfo[];
  first: Float64Array;
  reach: Float64Array;
  gaps: Gap[];
  gapFrom: Float64Array;
  gapReach: Float64Array;
}

const indexes = new WeakMap<StreamInfo, LaneIndex>();

export function laneIndex(st: StreamInfo): LaneIndex {
  const known = indexes.get(st);
  if (known) return known;
  const byStart = (x: SegmentInfo, y: SegmentInfo) => (x.first_ts < y.first_ts ? -1 : x.first_ts > y.first_ts ? 1 : x.seq - y.seq);
  const segs = [...st.segments].sort(byStart);
  const base = segs[0]?.first_ts ?? 0n;
  const first = new Float64Array(segs.length);
  const reach = new Float64Array(segs.length);
  let far = -Infinity;
  segs.forEach((seg, i) => {
    first[i] = Number(seg.first_ts - base);
    far = Math.max(far, Number(seg.last_ts - base));
    reach[i] = far;
  });
  const gs = gaps(st).sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
  const gapFrom = new Float64Array(gs.length);
  const gapReach = new Float64Array(gs.length);
  far = -Infinity;
  gs.forEach((g, i) => {
    gapFrom[i] = Number(g.from - base);
    far = Math.max(far, Number(g.to - base));
    gapReach[i] = far;
  });
  const index = { base, segs, first, reach, gaps: gs, gapFrom, gapReach };
  indexes.set(st, index);
  return index;
}

/**
 * A newer description of a stream (a followed archive's next image)
 * takes over the older one's index when their segments are the same, so
 * a lane of many segments is not sorted again every second.
 */
export function carryIndex(from: StreamInfo, to: StreamInfo): void {
  const known = indexes.get(from);
  if (known && !indexes.has(to) && sameSegments(from, to)) indexes.set(to, known);
}

/** The first i whose reach is at least `at` (reach never decreases). */
export function firstReaching(reach: Float64Array, at: number): number {
  let lo = 0;
  let hi = reach.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (reach[mid]! < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// How `describe`'s answer crosses from the worker to the page. Its
// segments travel as one column per field for the whole archive, each
// stream naming its run of rows, rather than as one small object per
// segment: the page deserializes a message on its main thread, and
// 100,000 objects holding bigints took it half a second there, six typed
// arrays next to nothing. The client rebuilds the `Description` of
// types.ts, so no caller sees the difference.

import type { Description, SegmentInfo, SourceInfo, StreamInfo } from "./types";

/** Every segment of an archive, one column per field of `SegmentInfo`. */
export interface SegmentColumns {
  seq: Float64Array;
  rows: Float64Array;
  first_ts: BigInt64Array;
  last_ts: BigInt64Array;
  bytes: Float64Array;
  /** 1 where the segment has a caller index. */
  caller_index: Uint8Array;
}

/** A stream whose segments are rows `[start, end)` of the archive's columns. */
export type PackedStream = Omit<StreamInfo, "segments"> & { segments: { start: number; end: number } };

export type PackedSource = Omit<SourceInfo, "streams"> & { streams: PackedStream[] };

export type PackedDescription = Omit<Description, "sources"> & { sources: PackedSource[]; segments: SegmentColumns };

/** In the worker: the engine's description with its segments as columns. */
export function packDescription(d: Description): PackedDescription {
  let n = 0;
  for (const src of d.sources) for (const st of src.streams) n += st.segments.length;
  const cols: SegmentColumns = {
    seq: new Float64Array(n),
    rows: new Float64Array(n),
    first_ts: new BigInt64Array(n),
    last_ts: new BigInt64Array(n),
    bytes: new Float64Array(n),
    caller_index: new Uint8Array(n),
  };
  let at = 0;
  const sources = d.sources.map((src) => ({
    ...src,
    streams: src.streams.map((st) => {
      const start = at;
      for (const seg of st.segments) {
        cols.seq[at] = seg.seq;
        cols.rows[at] = seg.rows;
        cols.first_ts[at] = seg.first_ts;
        cols.last_ts[at] = seg.last_ts;
        cols.bytes[at] = seg.bytes;
        cols.caller_index[at] = seg.caller_index ? 1 : 0;
        at++;
      }
      return { ...st, segments: { start, end: at } };
    }),
  }));
  return { ...d, sources, segments: cols };
}

/** In the page: the description as types.ts declares it. */
export function unpackDescription(p: PackedDescription): Description {
  const c = p.segments;
  const segmentsOf = ({ start, end }: { start: number; end: number }): SegmentInfo[] => {
    const out: SegmentInfo[] = new Array<SegmentInfo>(end - start);
    for (let i = start; i < end; i++) {
      out[i - start] = {
        seq: c.seq[i]!,
        rows: c.rows[i]!,
        first_ts: c.first_ts[i]!,
        last_ts: c.last_ts[i]!,
        bytes: c.bytes[i]!,
        caller_index: c.caller_index[i] === 1,
      };
    }
    return out;
  };
  const { segments: _columns, ...rest } = p;
  return {
    ...rest,
    sources: p.sources.map((src) => ({ ...src, streams: src.streams.map((st) => ({ ...st, segments: segmentsOf(st.segments) })) })),
  };
}

// How `describe`'s answer crosses from the worker to the page. Its
// segments travel as one column per field for the whole archive, each
// stream naming its run of rows, rather than as one small object per
// segment: the page deserializes a message on its main thread, and
// 100,000 objects holding bigints took it half a second there, six typed
// arrays next to nothing. The client rebuilds the `Description` of
// types.ts, so no caller sees the difference. The engine builds the
// columns itself (`describePacked`, src/wasm/convert.rs), rather than one
// object per segment first.

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

// Messages between the engine worker and its decoder worker (decoder.ts).
// Segment bytes go in and decoded rows come out, both transferred; both
// workers find what to transfer with `transferables`.

/** What the engine worker asks its decoder. */
export type DecoderRequest =
  /**
   * Decode segments for an envelope: per segment, the time axis and numeric
   * columns packed, one buffer per batch (`Packed`).
   */
  | { id: number; op: "packed"; segments: ArrayBuffer[]; columns: string[] | null }
  /** Decode for the page: a DecodedBatch of `columns` (every column when null). */
  | { id: number; op: "batch"; bytes: ArrayBuffer; columns: string[] | null }
  /** Makes the decoder's module trap, as a hostile segment would. For tests. */
  | { id: number; op: "crash"; what: string };

/** Sent once, when the decoder has loaded its module (or failed to). */
export type DecoderHello = { hello: true; ok: boolean; cause?: string };

/** One segment of a "packed" request: its batches packed, or why not. */
export type Packed = { ok: true; batches: Uint8Array[] } | { ok: false; cause: string };

export type DecoderReply =
  /** `value`: a DecodedBatch for "batch", a `Packed` per segment for "packed". */
  | { id: number; ok: true; value: unknown }
  /**
   * `cause`: what the decoder said (the segment is named by the engine
   * worker, which knows it). `trapped`: the decoder's instance trapped and
   * is unusable; the engine worker replaces it. `at`: for "packed", which
   * of the segments it was decoding.
   */
  | { id: number; ok: false; cause: string; trapped?: boolean; at?: number };

/** Every ArrayBuffer under typed arrays in `value`, to transfer with the message that holds it. */
export function transferables(value: unknown, out: Set<ArrayBuffer> = new Set()): ArrayBuffer[] {
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer) out.add(value.buffer);
  } else if (Array.isArray(value)) {
    // Arrays of strings or numbers hold no buffers; skip the walk.
    if (value.length > 0 && typeof value[0] === "object") for (const v of value) transferables(v, out);
  } else if (typeof value === "object" && value !== null) {
    for (const v of Object.values(value)) transferables(v, out);
  }
  return [...out];
}

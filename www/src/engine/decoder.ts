// The decoder: a second instance of the engine's WebAssembly module, in a
// worker of its own, that holds no archive. The engine worker (worker.ts)
// reads a segment's bytes out of its archive and hands them over here,
// transferred; this worker decodes them and hands back either packed rows
// for an envelope (src/read/packed.rs) or the decoded batch as the page
// wants it. If the Parquet or Arrow crates trap on a hostile segment, only
// this instance is lost: it says so, and the engine worker starts another
// while every archive stays open.

import init, * as module from "../../pkg/dendro.js";
import { decodeBatch, decodePacked } from "../../pkg/dendro.js";
import { type DecoderHello, type DecoderReply, type DecoderRequest, type Packed, transferables } from "./decoder-protocol";

interface DecoderScope {
  postMessage(message: DecoderReply | DecoderHello, transfer: Transferable[]): void;
  onmessage: ((e: MessageEvent<DecoderRequest>) => void) | null;
}
const scope = self as unknown as DecoderScope;

/** The module's test hooks, present only in a build with `--test-hooks`. */
const hooks = module as unknown as { __crashForTests?: (what: string) => void };

const ready: Promise<string | null> = init({ module_or_path: new URL("./dendro_bg.wasm", import.meta.url) }).then(
  () => null,
  (e: unknown) => `the decoder could not load its WebAssembly module: ${e instanceof Error ? e.message : String(e)}`,
);

void ready.then((failed) => scope.postMessage(failed ? { hello: true, ok: false, cause: failed } : { hello: true, ok: true }, []));

/** Set after a trap: the instance must not be called again. */
let trapped: string | null = null;

/** Which segment of a "packed" request is being decoded, for a trap's report. */
let at = 0;

function decode(req: DecoderRequest): unknown {
  switch (req.op) {
    case "packed": {
      const out: Packed[] = [];
      for (at = 0; at < req.segments.length; at++) {
        try {
          out.push({ ok: true, batches: decodePacked(new Uint8Array(req.segments[at]!), req.columns ?? undefined) as Uint8Array[] });
        } catch (e) {
          if (e instanceof WebAssembly.RuntimeError) throw e;
          out.push({ ok: false, cause: e instanceof Error ? e.message : String(e) });
        }
      }
      return out;
    }
    case "batch":
      return decodeBatch(new Uint8Array(req.bytes), req.columns ?? undefined);
    case "crash":
      if (!hooks.__crashForTests) throw new Error("this decoder was built without test hooks");
      hooks.__crashForTests(req.what);
      return null;
  }
}

scope.onmessage = (e: MessageEvent<DecoderRequest>) => {
  const req = e.data;
  void ready.then((failed) => {
    if (failed) return scope.postMessage({ id: req.id, ok: false, cause: failed }, []);
    if (trapped) return scope.postMessage({ id: req.id, ok: false, trapped: true, cause: trapped }, []);
    try {
      at = 0;
      const value = decode(req);
      scope.postMessage({ id: req.id, ok: true, value }, transferables(value));
    } catch (err) {
      if (err instanceof WebAssembly.RuntimeError) {
        trapped = err.message;
        return scope.postMessage({ id: req.id, ok: false, trapped: true, cause: err.message, at }, []);
      }
      scope.postMessage({ id: req.id, ok: false, cause: err instanceof Error ? err.message : String(err) }, []);
    }
  });
};

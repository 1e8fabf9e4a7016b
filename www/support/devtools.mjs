// Shared by benches/browser/viewer.mjs and benches/browser/in-place.mjs: the
// DevTools side of a viewer page in headless Chromium (a session that also
// reaches the page's dedicated workers) and the worker module that keeps
// their WebAssembly memories in reach, for memory figures; and the
// renderer processes' resident memory.

import { readdirSync, readFileSync } from "node:fs";

/**
 * A DevTools session on `page` that also reaches its dedicated workers
 * (attached without flattening, so their messages go through this
 * session). `workers` holds the session ids of the workers alive now;
 * `inWorker(id, method, params)` sends one protocol call to a worker.
 */
export async function attachDevtools(context, page) {
  const cdp = await context.newCDPSession(page);
  const workers = [];
  const waiting = new Map();
  let next = 1;
  cdp.on("Target.attachedToTarget", (e) => {
    if (e.targetInfo.type === "worker") workers.push(e.sessionId);
  });
  cdp.on("Target.detachedFromTarget", (e) => {
    const i = workers.indexOf(e.sessionId);
    if (i >= 0) workers.splice(i, 1);
  });
  cdp.on("Target.receivedMessageFromTarget", (e) => {
    const m = JSON.parse(e.message);
    const w = m.id !== undefined ? waiting.get(m.id) : undefined;
    if (!w) return;
    waiting.delete(m.id);
    if (m.error) w.reject(new Error(`${m.error.message}`));
    else w.resolve(m.result);
  });
  await cdp.send("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  const inWorker = (sessionId, method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      cdp.send("Target.sendMessageToTarget", { sessionId, message: JSON.stringify({ id, method, params }) }).catch(reject);
    });
  return { cdp, workers, inWorker };
}

/**
 * A worker module to import ahead of a worker's own script: it notes the
 * memory of every WebAssembly instance the worker creates, in
 * `self.__wasmMemories` (all of them) and `self.__wasmMemory` (the newest).
 * (Looking the memory up with Runtime.queryObjects instead crashed the
 * renderer now and then when it ran during an open.)
 */
export const WASM_MEMORY_HOOK = `const note = (r) => {
  const exports = (r.instance ?? r).exports ?? {};
  for (const v of Object.values(exports))
    if (v instanceof WebAssembly.Memory) {
      (self.__wasmMemories ??= new Set()).add(v);
      self.__wasmMemory = v;
    }
  return r;
};
const instantiate = WebAssembly.instantiate;
const streaming = WebAssembly.instantiateStreaming;
WebAssembly.instantiate = (...a) => instantiate.apply(WebAssembly, a).then(note);
if (streaming) WebAssembly.instantiateStreaming = (...a) => streaming.apply(WebAssembly, a).then(note);
`;

/** The resident set, in bytes, of Chromium's renderer processes started from this script. */
export function rendererRss() {
  const self = process.pid;
  const parent = new Map();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {}
  }
  const under = (p) => {
    for (let q = p, i = 0; q > 1 && i < 20; q = parent.get(q) ?? 0, i++) if (q === self) return true;
    return false;
  };
  let rss = 0;
  for (const pid of parent.keys()) {
    if (!under(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--type=renderer")) continue;
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (m) rss += Number(m[1]) * 1024;
    } catch {}
  }
  return rss;
}

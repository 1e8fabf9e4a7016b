// The engine client on its own, without the viewer's UI: the npm package's
// `dendro-viewer/engine` entry. `createEngine()` starts the engine worker
// (worker.js beside this module), which starts the decoder worker and
// loads dendro_bg.wasm from beside itself.

export { createEngine, EngineFailure, type EngineOptions } from "./client";
export type * from "./types";

// The harness the viewer's tests and the browser benchmarks share, so a
// benchmark never imports a test file and a test never imports a
// benchmark: a static server with ranges (server.mjs), the engine alone on
// a page and headless Chromium as this machine runs it (engine-page.mjs),
// memory sampled through the DevTools protocol (devtools.mjs), and the
// count of a canvas's inked pixels (ink.mjs).

export * from "./server.mjs";
export * from "./engine-page.mjs";
export * from "./devtools.mjs";
export * from "./ink.mjs";

// The standalone viewer page (index.html), and its iframe mode.
//
// Plain page: drop or pick files or a folder, or open ?url=A&url=B...
// (each in a tab), or ?list=ADDRESS (the archives `dendro serve DIR`
// lists, each with a button); the view is mirrored in the query string
// (www/README.md, "URL parameters"). With ?embed (iframe mode) the page posts
// {dendro: {ready: true}} to its parent and then opens any
// {dendro: {buffer, name}} the parent posts to it ({dendro: {ping: true}}
// makes it repeat the handshake, for a parent that started listening late).
// It also takes the embedding API's actions ({dendro: {action, payload}})
// and tells its events ({dendro: {event, detail}}, embedding.ts). With
// ?origins=https://a.example,https://b.example only messages from those
// origins are heard, and events go only to them; without, events go to
// the origin of the parent's last message, once it has sent one.
// ?mode=lazy or ?mode=memory overrides how files and URLs are opened (see
// ViewerOptions.openMode). ?follow follows URLs a writer appends to (see
// ViewerOptions.follow), in the plain page and the iframe alike. ?v=
// is a shared link (ui/link.ts): the whole view and its notes, packed;
// once its archives have opened the address goes back to plain parameters.

import { type OpenResult, Viewer } from "./ui/viewer";
import { ViewerBridge, type ViewerEventName, type ViewerEvents } from "./embedding";
import { LinkError, decodeView } from "./ui/link";
import { type ViewState, parseState, stateToSearch } from "./ui/state";

const params = new URLSearchParams(location.search);
const iframeMode = params.has("embed") && window.parent !== window;
const state = parseState(location.search);
const app = document.getElementById("app") ?? document.body;
const modeParam = params.get("mode");
const openMode = modeParam === "lazy" || modeParam === "memory" ? modeParam : "auto";
const follow = params.has("follow") && params.get("follow") !== "0";
app.textContent = "";

let replyOrigin = "*";
/** The origins a host allowed (?origins=), exact: scheme, host and port. */
const allowed = (params.get("origins") ?? "")
  .split(",")
  .map((o) => o.trim())
  .filter((o) => /^https?:\/\/[^/?#\s]+$/.test(o))
  .slice(0, 16);
let bridge: ViewerBridge | null = null;

const viewer = new Viewer(app, {
  embedded: iframeMode,
  urlState: !iframeMode,
  dropOnDocument: true,
  openMode,
  follow,
  ...(state.tz ? { tz: state.tz } : {}),
  ...(iframeMode ? { onOpen: (r: OpenResult) => reportToParent(r), onView: (s) => bridge?.viewChanged(s) } : {}),
});

window.addEventListener("error", (ev) => {
  viewer.toast(ev.message || "an error in the page");
});
window.addEventListener("unhandledrejection", (ev) => {
  const r: unknown = ev.reason;
  viewer.toast(r instanceof Error ? r.message : typeof r === "object" && r && "message" in r ? String((r as { message: unknown }).message) : String(r));
});

if (iframeMode) installParentBridge();
else void start();

async function start(): Promise<void> {
  const link = params.get("v");
  let s: ViewState = state;
  if (link !== null) {
    try {
      const shared = await decodeView(link);
      s = shared.made ? { ...shared.state, made: shared.made } : shared.state;
      if (s.tz) viewer.setTz(s.tz);
    } catch (e) {
      viewer.toast(e instanceof LinkError ? e.message : `The link could not be read: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  viewer.setCompare({ ...(s.compare !== undefined ? { compare: s.compare } : {}), ...(s.shift !== undefined ? { shift: s.shift } : {}) });
  // `compare=STREAM`: the compare view, once the archives given (by URL, or dropped later) have opened.
  if (s.compare !== undefined) viewer.comparison.whenOpen(s.compare, { columns: s.columns, from: s.from, to: s.to, shift: s.shift });
  const list = params.get("list");
  if (list) void viewer.showListing(list);
  if (s.urls) await viewer.openUrls(s.urls, s);
  if (link !== null) {
    // The link's notes are kept with the archive now: the address need not carry them.
    const q = new URLSearchParams(location.search);
    q.delete("v");
    const plain = "?" + q.toString();
    history.replaceState(history.state, "", location.pathname + stateToSearch(parseState(plain), plain) + location.hash);
  }
}

/** Tells the parent an event: to every allowed origin, or to the one that spoke last. */
function tell<K extends ViewerEventName>(event: K, detail: ViewerEvents[K]): void {
  const msg = { dendro: { event, detail } };
  if (allowed.length > 0) for (const o of allowed) window.parent.postMessage(msg, o);
  else if (replyOrigin !== "*") window.parent.postMessage(msg, replyOrigin);
}

function installParentBridge(): void {
  const parentWin = window.parent;
  bridge = new ViewerBridge(viewer, tell);
  window.addEventListener("message", (ev: MessageEvent) => {
    if (ev.source !== parentWin) return;
    // A host that gave an allow-list is heard only from those origins.
    if (allowed.length > 0 && !allowed.includes(ev.origin)) return;
    const data: unknown = ev.data;
    if (typeof data !== "object" || data === null) return;
    const msg = (data as { dendro?: unknown }).dendro;
    if (typeof msg !== "object" || msg === null) return;
    const m = msg as { buffer?: unknown; name?: unknown; url?: unknown; ping?: unknown; action?: unknown; payload?: unknown };
    if (m.ping === true) {
      parentWin.postMessage({ dendro: { ready: true } }, "*");
      tell("ready", { version: 1 });
      return;
    }
    replyOrigin = ev.origin && ev.origin !== "null" ? ev.origin : "*";
    if (m.action !== undefined) {
      void bridge?.act(m.action, m.payload).catch(() => {});
      return;
    }
    const name = typeof m.name === "string" && m.name !== "" ? m.name : "archive.dendro";
    if (m.buffer instanceof ArrayBuffer) void viewer.openBytes(m.buffer, name);
    else if (ArrayBuffer.isView(m.buffer)) {
      const v = m.buffer;
      void viewer.openBytes(new Uint8Array(v.buffer, v.byteOffset, v.byteLength).slice().buffer, name);
    } else if (typeof m.url === "string") void viewer.openUrl(m.url);
  });
  // The handshake carries nothing about the page, so any parent may hear it.
  parentWin.postMessage({ dendro: { ready: true } }, "*");
  tell("ready", { version: 1 });
}

function reportToParent(r: OpenResult): void {
  const opened = r.ok
    ? { name: r.name, ok: true, sources: r.description.sources.length }
    : { name: r.name, ok: false, error: { kind: r.error.kind, title: r.error.title, message: r.error.message } };
  window.parent.postMessage({ dendro: { opened } }, allowed.length > 0 ? (allowed.includes(replyOrigin) ? replyOrigin : allowed[0]!) : replyOrigin);
  bridge?.opened(r);
}

// The embedding API both ways (PACKAGE.md, "Events and actions"), the same
// names and payloads whichever way the viewer is embedded (?way=module,
// element or iframe): the viewer's events are logged on the right, the
// buttons send it actions. `window.dendroHost` is for the page tests.
import { mountViewer } from "../dendro-viewer.js";

const way = new URLSearchParams(location.search).get("way") || "module";
const src = new URL(new URLSearchParams(location.search).get("src") || "sample.dendro", location.href).href;
const slot = document.getElementById("slot");
const log = document.getElementById("log");
const status = document.getElementById("status");
const events = [];
let span = null;

/** Every event: kept for the tests, shown as a line (text only: payloads carry file strings). */
function heard(name, detail) {
  events.push({ name, detail });
  if (name === "opened") status.textContent = detail.ok ? `opened ${detail.name}` : `could not open ${detail.name}`;
  if (name === "view-changed" && detail.from !== undefined) span = [detail.from, detail.to];
  const li = document.createElement("li");
  li.dataset.event = name;
  li.textContent = `${name} ${JSON.stringify(detail, (_k, v) => (typeof v === "bigint" ? `${v}n` : v))}`;
  log.prepend(li);
  while (log.childElementCount > 40) log.lastElementChild.remove();
}

let send;
if (way === "element") {
  const el = document.createElement("dendro-viewer");
  el.className = "viewer-box";
  for (const name of ["ready", "opened", "view-changed", "cursor", "selection", "note-added", "error"]) el.addEventListener(`dendro-${name}`, (ev) => heard(name, ev.detail));
  el.setAttribute("src", src);
  slot.appendChild(el);
  send = (name, payload) => el.send(name, payload);
} else if (way === "iframe") {
  const frame = document.createElement("iframe");
  frame.className = "viewer-frame";
  frame.title = "dendro viewer";
  // The allow-list: this page's origin alone may talk to the viewer.
  const origins = new URLSearchParams(location.search).get("origins") || location.origin;
  frame.src = `../index.html?embed=1&origins=${encodeURIComponent(origins)}`;
  const target = new URL(frame.src, location.href).origin;
  let opened = false;
  window.addEventListener("message", (ev) => {
    if (ev.source !== frame.contentWindow || ev.origin !== target) return;
    const m = ev.data && ev.data.dendro;
    if (m && m.ready && !opened) {
      opened = true;
      send("open", { url: src });
    }
    if (m && typeof m.event === "string") heard(m.event, m.detail);
  });
  send = (action, payload) => {
    frame.contentWindow.postMessage({ dendro: { action, payload } }, target);
    return Promise.resolve();
  };
  slot.appendChild(frame);
  frame.addEventListener("load", () => frame.contentWindow.postMessage({ dendro: { ping: true } }, target));
} else {
  const box = document.createElement("div");
  box.className = "viewer-box";
  slot.appendChild(box);
  const v = mountViewer(box, { url: src, on: { ready: (d) => heard("ready", d) } });
  for (const name of ["opened", "view-changed", "cursor", "selection", "note-added", "error"]) v.on(name, (d) => heard(name, d));
  send = (name, payload) => v.send(name, payload);
}

const middle = () => {
  if (!span) return null;
  const w = span[1] - span[0];
  return [span[0] + w / 4n, span[1] - w / 4n];
};
document.getElementById("zoom").addEventListener("click", () => {
  const m = middle();
  if (m) void send("setWindow", { from: m[0], to: m[1] }).catch(() => {});
});
document.getElementById("note").addEventListener("click", () => {
  const m = middle();
  if (m) void send("addNote", { source: 1, from: (m[0] + m[1]) / 2n, text: "noted by the host" }).catch(() => {});
});
document.getElementById("theme").addEventListener("click", () => void send("setTheme", { theme: "dark" }).catch(() => {}));

window.dendroHost = { way, events, send: (name, payload) => send(name, payload) };

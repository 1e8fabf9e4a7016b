// Embedding the viewer in another page (bundled as dendro-viewer.js):
//
//   import { mountViewer } from "./dendro-viewer.js";
//   const v = mountViewer(element, { url: "run.dendro" });   // or { file } or { bytes }
//
//   <script type="module" src="dendro-viewer.js"></script>
//   <dendro-viewer src="run.dendro"></dendro-viewer>
//
// The viewer lives in a shadow root with its own styles, so the host page's
// CSS and the viewer's do not leak into each other. The engine worker
// (worker.js) and dendro_bg.wasm are loaded from beside this module.
//
// Both tell their host what happens and take actions from it, with the
// names and payloads declared once in embedding.ts: `on(name, fn)` and
// `send(name, payload)` on a mounted viewer; `dendro-NAME` DOM events,
// `send`, and the `theme`, `from` and `to` attributes on the element.

import uplotCss from "uplot/dist/uPlot.min.css";
import viewerCss from "../viewer.css";
import type { TimeZoneMode } from "./ui/format";
import { type OpenResult, Viewer } from "./ui/viewer";
import { ViewerBridge, type ViewerActionName, type ViewerActions, type ViewerEventName, type ViewerEvents } from "./embedding";

export type { OpenResult } from "./ui/viewer";
export { VIEWER_ACTIONS, VIEWER_EVENTS } from "./embedding";
export type { ViewerActionName, ViewerActions, ViewerEventName, ViewerEvents } from "./embedding";

/** A listener for each event it names. */
export type ViewerListeners = { [K in ViewerEventName]?: (detail: ViewerEvents[K]) => void };

export interface MountSource {
  file?: File | Blob;
  /** Copied before it goes to the worker: the caller's buffer stays usable. */
  bytes?: ArrayBuffer | Uint8Array;
  url?: string;
  /** Display name (defaults to the file's name or the URL's last segment). */
  name?: string;
}

export interface MountOptions extends MountSource {
  tz?: TimeZoneMode;
  /**
   * Viewers of this page mounted with the same group share one cursor and
   * one time window: the cursor moved in one moves in the others at once.
   */
  syncGroup?: string;
  /** Follow a URL while a writer appends to it (ViewerOptions.follow). */
  follow?: boolean;
  onOpen?: (r: OpenResult) => void;
  /** Listeners for the viewer's events (embedding.ts); more with `on`. */
  on?: ViewerListeners;
}

export interface MountedViewer {
  readonly viewer: Viewer;
  /** Settles when the archive given at mount time has opened (or failed); null when none was given. */
  readonly ready: Promise<OpenResult | null>;
  open(src: MountSource): Promise<OpenResult | null>;
  /** Listens for one event (`ready` comes after mountViewer returns); returns how to stop. */
  on<K extends ViewerEventName>(name: K, fn: (detail: ViewerEvents[K]) => void): () => void;
  /** Asks the viewer for an action; rejects (and fires `error`) when its payload is refused. */
  send<K extends ViewerActionName>(name: K, payload: ViewerActions[K]): Promise<void>;
  destroy(): void;
}

/** A viewer and its bridge to the host: `emit` is how this way of embedding tells the host. */
function bridged(
  container: ShadowRoot,
  options: Pick<MountOptions, "tz" | "syncGroup" | "follow" | "onOpen">,
  emit: <K extends ViewerEventName>(name: K, detail: ViewerEvents[K]) => void,
): { viewer: Viewer; bridge: ViewerBridge } {
  let bridge: ViewerBridge | null = null;
  const viewer = new Viewer(container, {
    embedded: true,
    ...(options.follow ? { follow: true } : {}),
    ...(options.tz ? { tz: options.tz } : {}),
    ...(options.syncGroup ? { syncGroup: options.syncGroup } : {}),
    onOpen: (r) => {
      options.onOpen?.(r);
      bridge?.opened(r);
    },
    onView: (s) => bridge?.viewChanged(s),
  });
  bridge = new ViewerBridge(viewer, emit);
  queueMicrotask(() => emit("ready", { version: 1 }));
  return { viewer, bridge };
}

let sheet: CSSStyleSheet | null = null;

function adoptStyles(root: ShadowRoot): void {
  const text = uplotCss + "\n" + viewerCss;
  if ("adoptedStyleSheets" in root && typeof CSSStyleSheet !== "undefined" && "replaceSync" in CSSStyleSheet.prototype) {
    if (!sheet) {
      sheet = new CSSStyleSheet();
      sheet.replaceSync(text);
    }
    root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
  } else {
    const style = document.createElement("style");
    style.textContent = text;
    root.appendChild(style);
  }
}

function openInto(viewer: Viewer, src: MountSource): Promise<OpenResult | null> {
  if (src.file) return viewer.openFile(src.file, undefined, src.name);
  if (src.bytes) {
    const b = src.bytes;
    const copy = b instanceof ArrayBuffer ? b.slice(0) : b.slice().buffer;
    return viewer.openBytes(copy as ArrayBuffer, src.name ?? "archive.dendro");
  }
  if (src.url) return viewer.openUrl(src.url);
  return Promise.resolve(null);
}

export function mountViewer(element: HTMLElement, options: MountOptions = {}): MountedViewer {
  const holder = document.createElement("div");
  holder.className = "dendro-viewer-host";
  holder.style.height = "100%";
  element.appendChild(holder);
  const shadow = holder.attachShadow({ mode: "open" });
  adoptStyles(shadow);
  const listeners = new Map<ViewerEventName, Set<(d: never) => void>>();
  const on = <K extends ViewerEventName>(name: K, fn: (d: ViewerEvents[K]) => void) => {
    const set = listeners.get(name) ?? new Set();
    listeners.set(name, set);
    set.add(fn as (d: never) => void);
    return () => void set.delete(fn as (d: never) => void);
  };
  for (const [k, fn] of Object.entries(options.on ?? {})) if (fn) on(k as ViewerEventName, fn as (d: unknown) => void);
  const { viewer, bridge } = bridged(shadow, options, (name, detail) => {
    for (const fn of listeners.get(name) ?? []) (fn as (d: typeof detail) => void)(detail);
  });
  return {
    viewer,
    ready: openInto(viewer, options),
    open: (src) => openInto(viewer, src),
    on,
    send: (name, payload) => bridge.act(name, payload),
    destroy() {
      bridge.destroy();
      viewer.destroy();
      holder.remove();
    },
  };
}

/**
 * `<dendro-viewer src="archive.dendro" tz="local" follow sync-group="g"
 * theme="dark" from="NS" to="NS">`; fires `dendro-open` with an
 * OpenResult, and `dendro-NAME` for each event of embedding.ts.
 * `sync-group` is read when the element is connected; `theme` and
 * `from`/`to` (setWindow) whenever they change.
 */
export class DendroViewerElement extends HTMLElement {
  static get observedAttributes(): string[] {
    return ["src", "theme", "from", "to"];
  }

  private viewer: Viewer | null = null;
  private bridge: ViewerBridge | null = null;

  connectedCallback(): void {
    if (this.viewer) return;
    const shadow = this.shadowRoot ?? this.attachShadow({ mode: "open" });
    adoptStyles(shadow);
    const tz = this.getAttribute("tz");
    const group = this.getAttribute("sync-group");
    const { viewer, bridge } = bridged(
      shadow,
      {
        ...(group ? { syncGroup: group } : {}),
        ...(this.hasAttribute("follow") ? { follow: true } : {}),
        ...(tz === "local" || tz === "utc" ? { tz } : {}),
        onOpen: (r) => this.dispatchEvent(new CustomEvent("dendro-open", { detail: r, bubbles: true, composed: true })),
      },
      (name, detail) => this.dispatchEvent(new CustomEvent(`dendro-${name}`, { detail, bubbles: true, composed: true })),
    );
    this.viewer = viewer;
    this.bridge = bridge;
    const src = this.getAttribute("src");
    if (src) void viewer.openUrl(src);
    this.attributeActions();
  }

  attributeChangedCallback(name: string, oldValue: string | null, value: string | null): void {
    if (name === "src" && this.viewer && value && value !== oldValue) void this.viewer.openUrl(value);
    else if (name !== "src" && value !== oldValue) this.attributeActions(name);
  }

  /** `theme`, and `from` with `to`, as actions (a bad value fires `dendro-error`). */
  private attributeActions(only?: string): void {
    const b = this.bridge;
    if (!b) return;
    const theme = this.getAttribute("theme");
    if (theme && only !== "from" && only !== "to") void b.act("setTheme", { theme }).catch(() => {});
    const from = this.getAttribute("from");
    const to = this.getAttribute("to");
    if (from && to && only !== "theme") void b.act("setWindow", { from, to }).catch(() => {});
  }

  /** Asks the viewer for an action (embedding.ts); rejects (and fires `dendro-error`) when refused. */
  send<K extends ViewerActionName>(name: K, payload: ViewerActions[K]): Promise<void> {
    if (!this.bridge) return Promise.reject(new Error("<dendro-viewer> must be in the document before send()"));
    return this.bridge.act(name, payload);
  }

  /** Open a file, bytes or a URL in this element. */
  open(src: MountSource): Promise<OpenResult | null> {
    if (!this.viewer) throw new Error("<dendro-viewer> must be in the document before open()");
    return openInto(this.viewer, src);
  }
}

if (typeof customElements !== "undefined" && !customElements.get("dendro-viewer")) {
  customElements.define("dendro-viewer", DendroViewerElement);
}

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

import uplotCss from "uplot/dist/uPlot.min.css";
import viewerCss from "../viewer.css";
import type { TimeZoneMode } from "./ui/format";
import { type OpenResult, Viewer } from "./ui/viewer";

export type { OpenResult } from "./ui/viewer";

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
}

export interface MountedViewer {
  readonly viewer: Viewer;
  /** Settles when the archive given at mount time has opened (or failed); null when none was given. */
  readonly ready: Promise<OpenResult | null>;
  open(src: MountSource): Promise<OpenResult | null>;
  destroy(): void;
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
  const viewer = new Viewer(shadow, {
    embedded: true,
    ...(options.follow ? { follow: true } : {}),
    ...(options.tz ? { tz: options.tz } : {}),
    ...(options.syncGroup ? { syncGroup: options.syncGroup } : {}),
    ...(options.onOpen ? { onOpen: options.onOpen } : {}),
  });
  return {
    viewer,
    ready: openInto(viewer, options),
    open: (src) => openInto(viewer, src),
    destroy() {
      viewer.destroy();
      holder.remove();
    },
  };
}

/**
 * `<dendro-viewer src="archive.dendro" tz="local" follow sync-group="g">`;
 * fires `dendro-open` with an OpenResult. `sync-group` is read when the
 * element is connected.
 */
export class DendroViewerElement extends HTMLElement {
  static get observedAttributes(): string[] {
    return ["src"];
  }

  private viewer: Viewer | null = null;

  connectedCallback(): void {
    if (this.viewer) return;
    const shadow = this.shadowRoot ?? this.attachShadow({ mode: "open" });
    adoptStyles(shadow);
    const tz = this.getAttribute("tz");
    const group = this.getAttribute("sync-group");
    this.viewer = new Viewer(shadow, {
      embedded: true,
      ...(group ? { syncGroup: group } : {}),
      ...(this.hasAttribute("follow") ? { follow: true } : {}),
      ...(tz === "local" || tz === "utc" ? { tz } : {}),
      onOpen: (r) => this.dispatchEvent(new CustomEvent("dendro-open", { detail: r, bubbles: true, composed: true })),
    });
    const src = this.getAttribute("src");
    if (src) void this.viewer.openUrl(src);
  }

  attributeChangedCallback(name: string, oldValue: string | null, value: string | null): void {
    if (name === "src" && this.viewer && value && value !== oldValue) void this.viewer.openUrl(value);
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

// The two-way embedding API, declared once: the events a viewer tells its
// host and the actions a host asks of it, with their payloads. The three
// ways to embed carry the same names and payloads: `mountViewer`
// (`on(name, fn)`, `send(name, payload)`), `<dendro-viewer>` (DOM events
// named `dendro-NAME` with the payload as `detail`, and `send`), and the
// iframe (`postMessage`: `{dendro: {event, detail}}` out, `{dendro:
// {action, payload}}` in, from origins on the allow-list only).
//
// Timestamps are bigint nanoseconds, as the archives store them
// (structured clone carries bigint through postMessage); an action may
// give one as a decimal string too, for hosts that build JSON.
//
// A payload from a host is checked here before the viewer sees it: a
// message from a page is untrusted input like a file.

import type { Viewer } from "./ui/viewer";

/** What the viewer tells its host. */
export interface ViewerEvents {
  /** The viewer is built and listens for actions. */
  ready: { version: 1 };
  /** An archive opened (or did not: `ok` false, with the error's words). */
  opened: { name: string; ok: boolean; sources?: number; error?: { kind: string; title: string; message: string } };
  /** The view in front changed: its archive, source, stream, columns, window. */
  "view-changed": { url?: string; source?: number; stream?: string; columns?: string[]; from?: bigint; to?: bigint };
  /** The page's cursor moved (null: it left every plot). */
  cursor: { at: bigint | null };
  /** A region was selected (Shift-drag across a plot) or cleared (null ends). */
  selection: { from: bigint | null; to: bigint | null };
  /** A note was added (by a person, or by `addNote`). */
  "note-added": { source: number; from: bigint; to: bigint | null; text: string };
  /** Something failed: an archive that did not open, an action refused. */
  error: { message: string; action?: string };
}

/** What a host asks of the viewer. */
export interface ViewerActions {
  /** Opens an archive in a new tab: from a URL, or bytes (copied). */
  open: { url?: string; bytes?: ArrayBuffer | Uint8Array; name?: string };
  /** Shows this window in every plot (where the archive has data in it). */
  setWindow: { from: bigint | string; to: bigint | string };
  /** Moves the cursor of every plot (null hides it). */
  setCursor: { at: bigint | string | null };
  /** Adds a note to the archive in front (an instant when `to` is absent). */
  addNote: { source: number; from: bigint | string; to?: bigint | string | null; text: string };
  /** Light or dark colours. */
  setTheme: { theme: "light" | "dark" };
}

export type ViewerEventName = keyof ViewerEvents;
export type ViewerActionName = keyof ViewerActions;

/** Every event, in the order the documentation lists them. */
export const VIEWER_EVENTS: readonly ViewerEventName[] = ["ready", "opened", "view-changed", "cursor", "selection", "note-added", "error"];
/** Every action. */
export const VIEWER_ACTIONS: readonly ViewerActionName[] = ["open", "setWindow", "setCursor", "addNote", "setTheme"];

/**
 * The DOM events the viewer's parts dispatch inside its root for notes
 * and regions (annotate.ts, region.ts), not composed: they stay in the
 * shadow root, apart from the `dendro-NAME` events an element fires.
 */
export const NOTE_ADDED_EVENT = "dv-note-added";
export const SELECTION_EVENT = "dv-selection";

/** Why an action was refused: its message says which field, in words. */
export class ActionError extends Error {}

function ns(v: unknown, what: string): bigint {
  if (typeof v === "bigint") return v;
  if (typeof v === "string" && /^-?\d{1,19}$/.test(v)) return BigInt(v);
  throw new ActionError(`${what} must be a timestamp in nanoseconds (a bigint, or a string of digits)`);
}

function record(v: unknown, action: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new ActionError(`${action}: the payload must be an object`);
  return v as Record<string, unknown>;
}

/**
 * Joins a viewer to its host: `emit` tells the host an event, `act` does
 * what the host asks. One per embedded viewer.
 */
export class ViewerBridge {
  private readonly stops: (() => void)[] = [];
  /** Who moves the cursor and window for the host on the viewer's sync bus. */
  private readonly me = {};
  /** The last view told, so an unchanged view is not told again. */
  private lastView = "";

  constructor(
    private readonly viewer: Viewer,
    private readonly emit: <K extends ViewerEventName>(name: K, detail: ViewerEvents[K]) => void,
  ) {
    this.stops.push(viewer.sync.onCursor((at, by) => by !== this.me && emit("cursor", { at })));
    const root = viewer.root;
    const onNote = (ev: Event) => {
      const n = (ev as CustomEvent<{ source: number; from: bigint; to: bigint | null; text: string }>).detail;
      emit("note-added", { source: n.source, from: n.from, to: n.to, text: n.text });
    };
    const onSelection = (ev: Event) => {
      const r = (ev as CustomEvent<[bigint, bigint] | null>).detail;
      emit("selection", r ? { from: r[0], to: r[1] } : { from: null, to: null });
    };
    root.addEventListener(NOTE_ADDED_EVENT, onNote);
    root.addEventListener(SELECTION_EVENT, onSelection);
    this.stops.push(() => root.removeEventListener(NOTE_ADDED_EVENT, onNote));
    this.stops.push(() => root.removeEventListener(SELECTION_EVENT, onSelection));
  }

  /** Tells the host an archive opened (the viewer's onOpen). */
  opened(r: { ok: true; name: string; description: { sources: unknown[] } } | { ok: false; name: string; error: { kind: string; title: string; message: string } }): void {
    if (r.ok) this.emit("opened", { name: r.name, ok: true, sources: r.description.sources.length });
    else {
      const error = { kind: r.error.kind, title: r.error.title, message: r.error.message };
      this.emit("opened", { name: r.name, ok: false, error });
      this.emit("error", { message: `${r.name}: ${error.title}: ${error.message}` });
    }
  }

  /** Tells the host the view changed (the viewer's onView). */
  viewChanged(s: ViewerEvents["view-changed"]): void {
    const d: ViewerEvents["view-changed"] = {};
    for (const k of ["url", "source", "stream", "columns", "from", "to"] as const) if (s[k] !== undefined) (d as Record<string, unknown>)[k] = s[k];
    const key = JSON.stringify(d, (_k, x: unknown) => (typeof x === "bigint" ? x.toString() : x));
    if (key === this.lastView) return;
    this.lastView = key;
    this.emit("view-changed", d);
  }

  /**
   * Does what the host asked, once its payload is checked; a refusal is
   * told as an `error` event and rejects.
   */
  async act(name: unknown, payload: unknown): Promise<void> {
    try {
      await this.run(name, payload);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      this.emit("error", { message, ...(typeof name === "string" && name.length <= 40 ? { action: name } : {}) });
      throw e;
    }
  }

  private async run(name: unknown, payload: unknown): Promise<void> {
    if (typeof name !== "string" || !(VIEWER_ACTIONS as readonly string[]).includes(name)) throw new ActionError(`no such action; the actions are ${VIEWER_ACTIONS.join(", ")}`);
    const p = record(payload, name);
    const v = this.viewer;
    switch (name as ViewerActionName) {
      case "open": {
        const label = typeof p["name"] === "string" && p["name"] !== "" ? p["name"] : undefined;
        const bytes = p["bytes"];
        if (bytes instanceof ArrayBuffer || ArrayBuffer.isView(bytes)) {
          const b = bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
          await v.openBytes(b.slice().buffer, label ?? "archive.dendro");
        } else if (typeof p["url"] === "string" && p["url"] !== "") await v.openUrl(p["url"]);
        else throw new ActionError("open: give a url (a string) or bytes (an ArrayBuffer or a typed array)");
        return;
      }
      case "setWindow": {
        const from = ns(p["from"], "setWindow: from");
        const to = ns(p["to"], "setWindow: to");
        if (to <= from) throw new ActionError("setWindow: to must be after from");
        v.sync.setWindow(from, to, this.me);
        return;
      }
      case "setCursor":
        v.sync.cursor(p["at"] === null ? null : ns(p["at"], "setCursor: at"), this.me);
        return;
      case "addNote": {
        const view = v.activeView();
        if (!view?.notes) throw new ActionError("addNote: no archive is open to note");
        view.notes.addNote(p);
        return;
      }
      case "setTheme": {
        const theme = p["theme"];
        if (theme !== "light" && theme !== "dark") throw new ActionError('setTheme: theme must be "light" or "dark"');
        v.root.dataset["theme"] = theme;
        return;
      }
    }
  }

  destroy(): void {
    for (const s of this.stops) s();
  }
}

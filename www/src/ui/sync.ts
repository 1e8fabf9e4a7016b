// One cursor and one time window for every plot that shares a sync bus.
//
// A viewer has a bus; viewers mounted with the same `syncGroup` (an option
// of `mountViewer`, the `sync-group` attribute of `<dendro-viewer>`) share
// one, so the cursor moved in one reaches the others in the same call
// stack: synchronously, before the next animation frame. Times on the bus
// are timestamps in nanoseconds as the archives store them (what every x
// axis shows), never a plot's own seconds-from-origin, so plots with
// different origins (different archives) agree on an instant.
//
// uPlot's own cursor sync keeps the plots of one group (one stream view)
// together: it moves them by pixel position and value, and assumes one x
// scale. The bus joins those groups, the timeline and other viewers:
// `syncPlugin` (syncplot.ts) publishes what uPlot's sync publishes and moves the group's
// first plot when the bus speaks, and uPlot's sync carries it to the rest.


/** What a member hears: `ns` null when the cursor left every plot. */
export type CursorListener = (ns: bigint | null, by: unknown) => void;
export type WindowListener = (from: bigint, to: bigint, by: unknown) => void;

export class SyncBus {
  private readonly cursors = new Set<CursorListener>();
  private readonly windows = new Set<WindowListener>();
  /** The cursor last published (null: none), for members that join late. */
  cursorAt: bigint | null = null;
  /** The window last published, for members that join (or are shown) later. */
  window: [bigint, bigint] | null = null;
  /** Set while a publication is delivered: what members do in answer is not published again. */
  private delivering = false;

  constructor(readonly group: string | null) {}

  /** Moves the cursor of every member but `by` (the publisher) to `ns`. */
  cursor(ns: bigint | null, by: unknown): void {
    if (this.delivering) return;
    this.cursorAt = ns;
    this.deliver(() => {
      for (const fn of this.cursors) fn(ns, by);
    });
  }

  /** Sets the window of every member but `by`. */
  setWindow(from: bigint, to: bigint, by: unknown): void {
    if (this.delivering || to <= from) return;
    if (this.window && this.window[0] === from && this.window[1] === to) return;
    this.window = [from, to];
    this.deliver(() => {
      for (const fn of this.windows) fn(from, to, by);
    });
  }

  onCursor(fn: CursorListener): () => void {
    this.cursors.add(fn);
    return () => this.cursors.delete(fn);
  }

  onWindow(fn: WindowListener): () => void {
    this.windows.add(fn);
    return () => this.windows.delete(fn);
  }

  private deliver(run: () => void): void {
    this.delivering = true;
    try {
      run();
    } finally {
      this.delivering = false;
    }
  }
}

const groups = new Map<string, SyncBus>();

/**
 * The bus of sync group `name`, shared by every viewer of this page that
 * names it; a private bus when `name` is absent or empty.
 */
export function syncBus(name?: string | null): SyncBus {
  if (!name) return new SyncBus(null);
  let bus = groups.get(name);
  if (!bus) {
    bus = new SyncBus(name);
    groups.set(name, bus);
  }
  return bus;
}

const buses = new WeakMap<Element, SyncBus>();

/** Makes `bus` the one for every plot built below `root` (a viewer's root element). */
export function provideBus(root: Element, bus: SyncBus): void {
  root.classList.add("dv-sync-root");
  buses.set(root, bus);
}

/** The bus of the viewer `el` is in (null outside any): found when first needed, so plot code need not carry it. */
export function busOf(el: Element): SyncBus | null {
  const root = el.closest(".dv-sync-root");
  return root ? (buses.get(root) ?? null) : null;
}

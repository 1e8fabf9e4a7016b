// The uPlot side of the page's sync bus (sync.ts): a plugin that publishes
// a plot's cursor to its viewer's bus and moves the plot when the bus
// speaks. Kept apart from the bus so that the bus, which the embedding
// API's declarations reach, names no uPlot type.

import type uPlot from "uplot";
import { busOf, type SyncBus } from "./sync";

/**
 * A uPlot plugin joining a plot to its viewer's bus. `toNs`/`toX` convert
 * between the plot's x values and timestamps. Give it to one plot per
 * uPlot sync group (`leader`) to follow the bus, to all to publish; a plot
 * without a uPlot sync key is its own group.
 */
export function syncPlugin(el: Element, toNs: (x: number) => bigint, toX: (ns: bigint) => number, leader: () => boolean): uPlot.Plugin {
  let bus: SyncBus | null = null;
  let stop: (() => void) | null = null;
  const me = {};
  return {
    hooks: {
      init: (u: uPlot) => {
        // uPlot publishes every cursor move of a person (and of setCursor
        // with its pub flag): the filter sees them all, whatever the key.
        const sync = u.cursor.sync;
        if (!sync) return;
        const filters = sync.filters ?? {};
        const pub = filters.pub;
        sync.filters = {
          ...filters,
          pub: (type, src, x, y, w, h, i) => {
            bus ??= busOf(el);
            if (bus && (type === "mousemove" || type === "mouseleave")) {
              const ns = type === "mouseleave" || x < 0 ? null : toNs(src.posToVal(x, "x"));
              bus.cursor(ns, me);
            }
            return pub ? pub(type, src, x, y, w, h, i) : true;
          },
        };
      },
      ready: (u: uPlot) => {
        bus ??= busOf(el);
        if (!bus) return;
        // uPlot's typings leave out setCursor's third argument: publish to
        // the plot's own uPlot sync group, which carries the move to the rest.
        const move = u.setCursor as (o: { left: number; top: number }, fire?: boolean, pub?: boolean) => void;
        const follow = (ns: bigint | null, by: unknown) => {
          if (by === me || !leader()) return;
          const left = ns === null ? -10 : u.valToPos(toX(ns), "x");
          const inside = left >= 0 && left <= u.bbox.width / devicePixelRatio;
          const top = u.cursor.top !== undefined && u.cursor.top >= 0 ? u.cursor.top : u.bbox.height / devicePixelRatio / 2;
          move(inside ? { left, top } : { left: -10, top: -10 }, true, true);
        };
        stop = bus.onCursor(follow);
        if (bus.cursorAt !== null) follow(bus.cursorAt, null);
      },
      destroy: () => {
        stop?.();
        stop = null;
      },
    },
  };
}

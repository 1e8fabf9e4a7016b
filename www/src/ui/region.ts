// Region statistics: a drag with Shift held across any plot of the stream
// view marks a region of time; a panel shows, for each series plotted,
// the engine's statistics of the rows in that region (computed in the
// worker from the rows themselves, never from what the plots drew). A
// plain drag still zooms. Esc, or the panel's close button, clears it.
//
// This file holds the drag's wiring (shared by every plot), the band
// that shows the region on each plot, and the panel.

import type uPlot from "uplot";

/** The modifier that turns a drag from a zoom into a region, in words for the page's help. */
export const REGION_MODIFIER = "Shift";

/**
 * uPlot hooks for a plot's drag: without Shift, `zoom(a, b)`; with
 * Shift, `region(a, b)` (x values, a < b). The drag's box is cleared
 * either way: the region is drawn by `regionBand`, on every plot.
 */
export function dragHooks(zoom: (a: number, b: number) => void, region: (a: number, b: number) => void): Pick<uPlot.Hooks.Arrays, "setSelect" | "ready"> {
  let shift = false;
  return {
    ready: [
      (u) => {
        // uPlot's setSelect carries no event: the drag's modifier is noted as it starts.
        u.over.addEventListener("mousedown", (ev) => (shift = ev.shiftKey), { capture: true });
      },
    ],
    setSelect: [
      (u) => {
        const { left, width } = u.select;
        if (width < 3) return;
        const a = u.posToVal(left, "x");
        const b = u.posToVal(left + width, "x");
        u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
        if (!(b > a)) return;
        if (shift) region(a, b);
        else zoom(a, b);
      },
    ],
  };
}

/** A draw hook that shades the region `get()` returns (x values), if any. */
export function regionBand(get: () => [number, number] | null): (u: uPlot) => void {
  return (u) => {
    const r = get();
    if (!r) return;
    const x0 = Math.max(u.bbox.left, u.valToPos(r[0], "x", true));
    const x1 = Math.min(u.bbox.left + u.bbox.width, u.valToPos(r[1], "x", true));
    if (!(x1 > x0)) return;
    const ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = "rgba(217, 119, 6, 0.14)";
    ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
    ctx.strokeStyle = "rgba(217, 119, 6, 0.8)";
    ctx.lineWidth = Math.max(1, devicePixelRatio);
    ctx.beginPath();
    ctx.moveTo(Math.round(x0) + 0.5, u.bbox.top);
    ctx.lineTo(Math.round(x0) + 0.5, u.bbox.top + u.bbox.height);
    ctx.moveTo(Math.round(x1) - 0.5, u.bbox.top);
    ctx.lineTo(Math.round(x1) - 0.5, u.bbox.top + u.bbox.height);
    ctx.stroke();
    ctx.restore();
  };
}

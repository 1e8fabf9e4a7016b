// Notes on a plot: a uPlot draw hook that marks each note of the plot's
// source (a dashed line at a point, a band over a region) with the start
// of its text. Apart from notes.ts so that the embedding API's
// declarations, which reach the notes, name no uPlot type. Canvas text
// is drawn, never parsed: a hostile note is only pixels here.

import type uPlot from "uplot";
import type { NoteMark } from "./notes";

/** The colour of notes on plots and on the timeline (viewer.css `--dv-note`). */
export const NOTE_COLOR = "219, 39, 119";
/** Characters of a note's text written on a plot (the whole text is in the notes panel). */
const LABEL_CHARS = 40;

/** A draw hook marking `get()`'s notes; `toX` maps a timestamp to the plot's x value. */
export function noteMarks(get: () => NoteMark[], toX: (ns: bigint) => number): (u: uPlot) => void {
  return (u) => {
    const notes = get();
    if (notes.length === 0) return;
    const { left, top, width, height } = u.bbox;
    const ctx = u.ctx;
    const px = Math.max(1, devicePixelRatio);
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    ctx.font = `${11 * px}px system-ui, sans-serif`;
    ctx.textBaseline = "top";
    // A label that would run into the one before it is left off (its line stays; the panel lists every note).
    let free = -Infinity;
    for (const n of notes) {
      const x0 = u.valToPos(toX(n.from), "x", true);
      const x1 = n.to === null ? x0 : u.valToPos(toX(n.to), "x", true);
      if (x1 < left - 1 || x0 > left + width + 1) continue;
      if (n.to !== null) {
        ctx.fillStyle = `rgba(${NOTE_COLOR}, 0.10)`;
        ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
      }
      ctx.strokeStyle = `rgba(${NOTE_COLOR}, 0.9)`;
      ctx.lineWidth = px;
      ctx.setLineDash([4 * px, 3 * px]);
      ctx.beginPath();
      ctx.moveTo(Math.round(x0) + 0.5, top);
      ctx.lineTo(Math.round(x0) + 0.5, top + height);
      ctx.stroke();
      const label = n.text.length > LABEL_CHARS ? n.text.slice(0, LABEL_CHARS - 1) + "…" : n.text;
      const at = Math.max(left, x0) + 3 * px;
      if (at < free) continue;
      ctx.fillStyle = `rgba(${NOTE_COLOR}, 1)`;
      ctx.fillText(label, at, top + 2 * px);
      free = at + ctx.measureText(label).width + 6 * px;
    }
    ctx.restore();
  };
}

// The fleet strip: one column of one stream across every source, one thin
// row per source coloured by value, so the odd host stands out among
// fifty. Each row holds one value per pixel of the shared wall-clock
// window (the bucket max or min falling in that pixel), painted on one
// colour scale for every row. Rows sort by name, by peak (largest max) or
// by mean (of the pixels' maxima). A click on a row opens that source's
// stream view over the same window.
//
// The strip is drawn twice. First every row from its segments' footer
// statistics (`previewRange`: nothing decoded, a few footer reads per
// source), said on the strip to be a preview; then each row is read
// exactly and repainted in place, a source at a time, so that thirty-two
// exact reads queued in the one engine worker never stand between the
// person and a first picture. A row keeps its pixels only (two numbers a
// pixel), never the envelope it was folded from.

import type { RangeEnvelope } from "../engine/types";
import { fileText, h, replace } from "./dom";
import type { Member } from "./members";
import { formatValue } from "./plots";

export interface StripHost {
  readonly members: Member[];
  readonly from: bigint;
  readonly to: bigint;
  offsetOf(m: Member): bigint;
  rates(columns: string[]): string[];
  read(m: Member, columns: string[], maxPoints: number, signal?: AbortSignal): Promise<RangeEnvelope>;
  /** The footer-statistics preview of what `read` answers; null where the engine has none. */
  preview(m: Member, columns: string[], maxPoints: number, signal?: AbortSignal): Promise<RangeEnvelope | null>;
  /** The strip is up as a preview (said in `text`) while its rows are read exactly. */
  previewed(text: string): void;
  openMember(m: Member): void;
}

export type StripSort = "name" | "peak" | "mean";
export type StripColour = "max" | "min";

/** Height of one source's row, CSS px. */
export const STRIP_ROW_PX = 14;
/** Width of the names' column, CSS px. */
const NAME_PX = 220;
/** Exact reads sent ahead of their answers: the worker runs one at a time, the next waits there, not in a round trip. */
const AHEAD = 2;

/** One row as drawn, for tests: its member, its pixels' values, the sort keys, and whether it is exact yet. */
export interface StripRow {
  key: string;
  label: string;
  offset: bigint;
  /** Per pixel of the window: the largest and smallest value falling in it (NaN: none). */
  max: Float64Array;
  min: Float64Array;
  peak: number;
  mean: number;
  /** false: from footer statistics (a band holding the exact values), or not read yet. */
  exact: boolean;
  /** Rows in the window, once exact. */
  rows: number;
}

export class FleetStrip {
  readonly el: HTMLElement;
  private sort: StripSort = "name";
  private colour: StripColour = "max";
  private rows: StripRow[] = [];
  private readonly list: HTMLElement;
  private readonly scale: HTMLElement;
  private readonly badge: HTMLElement;
  private readonly abort = new AbortController();
  private readonly canvases = new Map<string, HTMLCanvasElement>();
  private frame = 0;

  constructor(
    private readonly host: StripHost,
    private readonly column: string,
    private readonly width: number,
  ) {
    const select = <T extends string>(label: string, testid: string, options: [T, string][], on: (v: T) => void) =>
      h(
        "label",
        { class: "dv-muted" },
        label,
        " ",
        h(
          "select",
          { data: { testid }, on: { change: (e: Event) => on((e.target as HTMLSelectElement).value as T) } },
          options.map(([v, text]) => h("option", { value: v }, text)),
        ),
      );
    this.list = h("div", { class: "dv-strip-rows", role: "list" });
    this.scale = h("div", { class: "dv-strip-scale dv-muted", data: { testid: "strip-scale" } });
    this.badge = h("span", { class: "dv-strip-badge", data: { testid: "strip-preview" }, hidden: true });
    this.el = h(
      "div",
      { class: "dv-strip", data: { testid: "fleet-strip", column } },
      h(
        "div",
        { class: "dv-strip-controls" },
        select<StripSort>("Sort by", "strip-sort", [["name", "name"], ["peak", "peak"], ["mean", "mean"]], (v) => {
          this.sort = v;
          this.paint();
        }),
        select<StripColour>("Colour by", "strip-colour", [["max", "bucket max"], ["min", "bucket min"]], (v) => {
          this.colour = v;
          this.paint();
        }),
        this.scale,
        this.badge,
      ),
      this.list,
    );
  }

  destroy(): void {
    this.abort.abort();
    cancelAnimationFrame(this.frame);
  }

  private pixels(): number {
    return Math.max(50, this.width - NAME_PX);
  }

  /** Draws every row from footer statistics, then reads each exactly; answers the status line once all are exact. */
  async draw(): Promise<string> {
    const members = this.host.members;
    const columns = [this.column];
    const w = this.pixels();
    const signal = this.abort.signal;
    this.rows = members.map((m) => ({ key: m.key, label: m.label, offset: this.host.offsetOf(m), max: nans(w), min: nans(w), peak: NaN, mean: NaN, exact: false, rows: 0 }));
    // Previews: each a few footer reads, no decoding. A source whose
    // footers say nothing of the column (or a counter read as a rate)
    // stays blank until its exact read.
    const previews = await Promise.all(members.map((m) => this.host.preview(m, columns, w, signal).catch(() => null)));
    if (signal.aborted) throw new DOMException("aborted", "AbortError");
    previews.forEach((p, i) => p && this.fold(this.rows[i]!, p));
    this.paint();
    this.say(0);
    this.host.previewed(`${members.length} sources · a preview from the segments' footer statistics: each pixel's band holds the exact values; reading them exactly…`);
    // Exact, a source at a time (AHEAD in the worker's queue), each row
    // repainted as it comes.
    let next = 0;
    let done = 0;
    const worker = async () => {
      while (next < members.length) {
        const i = next++;
        const env = await this.host.read(members[i]!, columns, w, signal);
        const row = this.rows[i]!;
        row.max.fill(NaN);
        row.min.fill(NaN);
        this.fold(row, env);
        row.exact = true;
        row.rows = env.rows_in_window;
        this.say(++done);
        this.repaintSoon();
      }
    };
    await Promise.all(Array.from({ length: Math.min(AHEAD, members.length) }, worker));
    cancelAnimationFrame(this.frame);
    this.paint();
    this.badge.hidden = true;
    const rate = this.host.rates(columns).length > 0 ? " (as a rate per second)" : "";
    return `${members.length} sources · ${this.column}${rate}, one row each, coloured by each pixel's ${this.colour === "max" ? "maximum" : "minimum"}`;
  }

  private say(exact: number): void {
    this.badge.hidden = false;
    this.badge.textContent = `Preview from footer statistics · ${exact} of ${this.rows.length} rows exact`;
    this.el.dataset["exact"] = String(exact);
  }

  /** Folds an envelope's buckets into a row's pixels (a bucket spans ts[i] to ts[i + 1]), and its sort keys. */
  private fold(row: StripRow, env: RangeEnvelope): void {
    const col = env.columns.find((c) => c.name === this.column);
    if (col) {
      const w = row.max.length;
      const span = Number(this.host.to - this.host.from);
      const x = (t: bigint) => Math.floor((Number(t + row.offset - this.host.from) / span) * w);
      for (let i = 0; i < env.ts.length; i++) {
        const hi = col.max[i]!;
        const lo = col.min[i]!;
        if (!Number.isFinite(hi) && !Number.isFinite(lo)) continue;
        const x0 = Math.max(0, x(env.ts[i]!));
        const next = env.ts[i + 1];
        const x1 = Math.min(w, Math.max(x0 + 1, next !== undefined ? x(next) : x0 + 1));
        for (let k = x0; k < x1; k++) {
          if (Number.isFinite(hi) && !(row.max[k]! >= hi)) row.max[k] = hi;
          if (Number.isFinite(lo) && !(row.min[k]! <= lo)) row.min[k] = lo;
        }
      }
    }
    let peak = -Infinity;
    let sum = 0;
    let n = 0;
    for (const v of row.max) {
      if (!Number.isFinite(v)) continue;
      if (v > peak) peak = v;
      sum += v;
      n++;
    }
    row.peak = n > 0 ? peak : NaN;
    row.mean = n > 0 ? sum / n : NaN;
  }

  private values(r: StripRow): Float64Array {
    return this.colour === "max" ? r.max : r.min;
  }

  private sorted(): StripRow[] {
    const rows = [...this.rows];
    const byNumber = (k: "peak" | "mean") => (a: StripRow, b: StripRow) => (Number.isNaN(a[k]) ? 1 : Number.isNaN(b[k]) ? -1 : b[k] - a[k]);
    if (this.sort === "name") rows.sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
    else rows.sort(byNumber(this.sort));
    return rows;
  }

  private range(): [number, number] {
    let lo = Infinity;
    let hi = -Infinity;
    for (const r of this.rows)
      for (const v of this.values(r)) {
        if (!Number.isFinite(v)) continue;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    return [lo, hi];
  }

  /** Rebuilds the rows in their sorted order and paints them all. */
  private paint(): void {
    const rows = this.sorted();
    (this.el as HTMLElement & { dendroStrip?: StripRow[] }).dendroStrip = rows;
    const w = this.pixels();
    this.canvases.clear();
    replace(
      this.list,
      rows.map((r) => {
        const member = this.host.members.find((m) => m.key === r.key)!;
        const canvas = h("canvas", { class: "dv-strip-canvas", width: String(w), height: "1", style: { width: `${w}px` } }) as HTMLCanvasElement;
        this.canvases.set(r.key, canvas);
        return h(
          "button",
          {
            type: "button",
            role: "listitem",
            class: "dv-strip-row",
            data: { testid: "strip-row", member: r.key },
            on: { click: () => this.host.openMember(member) },
          },
          h(
            "span",
            { class: "dv-strip-name", style: { width: `${NAME_PX - 8}px` }, title: r.label },
            // The legend is not beside the strip: a doubtful alignment is marked on the row.
            (member.alignment?.doubts.length ?? 0) > 0 ? h("span", { title: member.alignment!.doubts.map((d) => d.words).join(" ") }, "⚠ ") : null,
            fileText(r.label, { max: 60, more: false }),
          ),
          canvas,
        );
      }),
    );
    this.repaint();
  }

  private repaintSoon(): void {
    if (this.frame !== 0) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.repaint();
    });
  }

  /** Paints every row's pixels on the current colour scale (one ImageData a row), in place. */
  private repaint(): void {
    const [lo, hi] = this.range();
    replace(this.scale, Number.isFinite(lo) ? `scale ${formatValue(lo)} … ${formatValue(hi)}` : "no values in this window");
    for (const r of this.rows) {
      const canvas = this.canvases.get(r.key);
      const ctx = canvas?.getContext("2d");
      if (!canvas || !ctx) continue;
      const row = canvas.closest<HTMLElement>('[data-testid="strip-row"]');
      if (row) {
        row.dataset["exact"] = String(r.exact);
        row.title = `Open this source's stream view over the same window (peak ${formatValue(r.peak)}, mean ${formatValue(r.mean)}${r.exact ? "" : ", from footer statistics"})`;
      }
      const vals = this.values(r);
      const img = ctx.createImageData(vals.length, 1);
      const d = img.data;
      for (let k = 0; k < vals.length; k++) {
        const v = vals[k]!;
        const [cr, cg, cb] = Number.isFinite(v) ? ramp(hi > lo ? (v - lo) / (hi - lo) : 0.5) : EMPTY;
        d[4 * k] = cr;
        d[4 * k + 1] = cg;
        d[4 * k + 2] = cb;
        d[4 * k + 3] = 255;
      }
      ctx.putImageData(img, 0, 0);
    }
  }
}

function nans(n: number): Float64Array {
  return new Float64Array(n).fill(NaN);
}

/** A pixel with no value. */
const EMPTY: [number, number, number] = [246, 248, 250];

const STOPS: [number, number, number][] = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
];

/** A perceptually even ramp from dark blue (low) through teal to yellow (high). */
function ramp(t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const [a, b] = [STOPS[i]!, STOPS[i + 1]!];
  const c = (k: 0 | 1 | 2) => Math.round(a[k] + (b[k] - a[k]) * f);
  return [c(0), c(1), c(2)];
}

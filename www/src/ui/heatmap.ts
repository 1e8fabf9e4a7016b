// A histogram column drawn as a heatmap: time across, buckets up, each
// cell coloured by its count per second (log scale by default), with the
// quantile lines p50, p90, p99, p99.9 and the highest non-empty bucket
// over it. It is a uPlot chart like the stream view's other plots (same
// time axis, same drag to zoom, Shift-drag for a region): the cells are
// painted by the first series' path builder, the quantiles are ordinary
// line series on the bucket scale.
//
// The numbers come from the engine (`ArchiveHandle.heatmap`): per pixel column
// the exact sum of the bucket counts of the rows it covers (so zooming out
// never loses a tail), the rows it covers (0: no row, drawn hatched, not
// as zero counts), and the quantiles of the summed counts. Nothing here
// sums or estimates; zooming asks the engine for the new window only.

import uPlot from "uplot";
import type { Heatmap } from "../engine/types";
import { debounce, fileText, h, replace, setText } from "./dom";
import { explain } from "./errors";
import { axisNumber, count, instant, type TimeZoneMode } from "./format";
import { timeAxis } from "./plots";
import { dragHooks, regionBand } from "./region";

export interface HeatmapHost {
  origin: bigint;
  tz(): TimeZoneMode;
  onWindow(from: bigint, to: bigint): void;
  fullWindow(): [bigint, bigint];
  onRegion(from: bigint, to: bigint): void;
  region(): [bigint, bigint] | null;
  /** The engine's heatmap of `column` over [from, to] in at most `columns` pixel columns. */
  read(column: string, from: bigint, to: bigint, pixels: number, signal: AbortSignal): Promise<Heatmap>;
}

/** The quantile lines drawn, in order, with their labels. */
const LINES: [keyof Heatmap["lines"], string][] = [
  ["p50", "p50"],
  ["p90", "p90"],
  ["p99", "p99"],
  ["p999", "p99.9"],
  ["max", "max bucket"],
];

const QUANTILE_COLORS = ["#ffffff", "#ff9f1c", "#ff2d55", "#d946ef", "#111827"];
const ZERO_COLOR = "#f1f3f6";
const HEIGHT = 240;

/** 256 colours from dark blue through teal and green to yellow: low rates dark, high rates bright, as [r, g, b]. */
const RGB: [number, number, number][] = (() => {
  const stops: [number, number, number][] = [
    [48, 18, 59],
    [40, 86, 160],
    [32, 145, 140],
    [94, 201, 98],
    [253, 231, 37],
  ];
  const out: [number, number, number][] = [];
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * (stops.length - 1);
    const k = Math.min(stops.length - 2, Math.floor(t));
    const f = t - k;
    const a = stops[k]!;
    const b = stops[k + 1]!;
    out.push([Math.round(a[0] + (b[0] - a[0]) * f), Math.round(a[1] + (b[1] - a[1]) * f), Math.round(a[2] + (b[2] - a[2]) * f)]);
  }
  return out;
})();
/** The palette as CSS colours, for the legend. */
const PALETTE: string[] = RGB.map(([r, g, b]) => `rgb(${r},${g},${b})`);

/** An opaque colour as one pixel of an ImageData seen as 32-bit words (byte order R, G, B, A in memory). */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
function word(r: number, g: number, b: number): number {
  return LITTLE_ENDIAN ? ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0 : ((r << 24) | (g << 16) | (b << 8) | 255) >>> 0;
}
const WORDS = Uint32Array.from(RGB, ([r, g, b]) => word(r, g, b));
const ZERO_WORD = word(0xf1, 0xf3, 0xf6);

/** Where value `v` sits on the bucket scale: bucket b's lower edge is b, its upper edge b + 1. */
export function bucketPosition(bounds: Float64Array, v: number): number {
  const nb = bounds.length - 1;
  if (!Number.isFinite(v)) return NaN;
  if (v <= bounds[0]!) return 0;
  if (v >= bounds[nb]!) return nb;
  let lo = 0;
  let hi = nb;
  // bounds[lo] <= v < bounds[hi]
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (bounds[mid]! <= v) lo = mid;
    else hi = mid;
  }
  return lo + (v - bounds[lo]!) / (bounds[lo + 1]! - bounds[lo]!);
}

export class HeatmapPlot {
  readonly el: HTMLElement;
  private readonly status: HTMLElement;
  private readonly readout: HTMLElement;
  private readonly legend: HTMLElement;
  private plot: uPlot | null = null;
  private data: Heatmap | null = null;
  private from = 0n;
  private to = 1n;
  private log = true;
  private token = 0;
  private drawnCount = 0;
  private inflight: AbortController | null = null;
  private lastKey = "";
  /** The colour scale of the answer drawn: the smallest and largest non-zero rate. */
  private scale: [number, number] = [1, 1];
  private hatch: CanvasPattern | null = null;
  private readonly scheduleFetch = debounce(() => void this.fetch(), 120);

  constructor(
    private readonly host: HeatmapHost,
    readonly column: string,
    private readonly unit: string | undefined,
    private readonly width: () => number,
  ) {
    this.status = h("div", { class: "dv-plot-status" });
    this.readout = h("span", { class: "dv-plot-readout", data: { testid: "heatmap-readout" } });
    this.legend = h("div", { class: "dv-heat-legend", data: { testid: "heatmap-legend" } });
    const scaleBtn = h("button", {
      type: "button",
      class: "dv-btn dv-btn-xs",
      data: { testid: "heatmap-scale" },
      title: "Colour by count per second on a log scale (default) or a linear one",
    });
    const paintScale = () => {
      scaleBtn.textContent = this.log ? "log colour" : "linear colour";
      scaleBtn.dataset["scale"] = this.log ? "log" : "linear";
    };
    paintScale();
    scaleBtn.addEventListener("click", () => {
      this.log = !this.log;
      paintScale();
      if (this.data) this.paintLegend();
      this.plot?.redraw(false, false);
    });
    this.el = h(
      "div",
      { class: "dv-plot dv-heatmap", data: { testid: "heatmap", column } },
      h(
        "div",
        { class: "dv-plot-head" },
        h("span", { class: "dv-plot-name" }, fileText(column, { max: 60, more: false })),
        h("span", { class: "dv-plot-type" }, "histogram", unit ? " · " : "", unit ? fileText(unit, { max: 20, more: false }) : ""),
        scaleBtn,
        this.readout,
      ),
      this.status,
      this.legend,
    );
  }

  destroy(): void {
    this.token++;
    this.inflight?.abort();
    this.plot?.destroy();
    this.plot = null;
  }

  setWindow(from: bigint, to: bigint): void {
    this.from = from;
    this.to = to;
    this.plot?.setScale("x", { min: this.toX(from), max: this.toX(to) });
    // The first window is asked for at once; later ones wait out a drag or a pan.
    if (this.lastKey === "" && !this.data) void this.fetch();
    else this.scheduleFetch();
  }

  /** The archive changed under the same window: ask again, keeping the drawing until the answer. */
  refresh(): void {
    this.lastKey = "";
    this.scheduleFetch();
  }

  redraw(): void {
    this.plot?.redraw(false, false);
  }

  private toX(ns: bigint): number {
    return Number(ns - this.host.origin) / 1e9;
  }

  private toNs(x: number): bigint {
    return this.host.origin + BigInt(Math.round(x * 1e9));
  }

  private async fetch(): Promise<void> {
    const w = this.width();
    // About one pixel column per pixel of the plotting area (the y axis takes ~60).
    const columns = Math.max(50, Math.min(4096, Math.round(w - 70)));
    const key = `${this.from}:${this.to}:${columns}`;
    if (key === this.lastKey) return;
    this.lastKey = key;
    const token = ++this.token;
    this.inflight?.abort();
    const ctl = new AbortController();
    this.inflight = ctl;
    this.el.dataset["state"] = "reading";
    this.status.classList.add("dv-busy");
    let answer: Heatmap;
    try {
      answer = await this.host.read(this.column, this.from, this.to, columns, ctl.signal);
    } catch (e) {
      if (token !== this.token) return;
      const x = explain(e, this.column);
      // A window no segment overlaps (a gap zoomed into) has no histogram
      // for the engine to describe: shown as what it is, a window without
      // rows, in the buckets of the answer drawn before.
      if (x.kind === "NotFound" && this.data) {
        this.status.classList.remove("dv-busy");
        this.inflight = null;
        this.draw({ ...noRows(this.data, this.from, this.to, columns), empty: x.message }, w);
        return;
      }
      this.lastKey = "";
      this.status.classList.remove("dv-busy");
      this.el.dataset["state"] = "failed";
      replace(this.status, h("span", { class: "dv-error-inline" }, `${x.title}: `, fileText(x.message, { max: 300, more: false })));
      return;
    }
    if (token !== this.token) return;
    this.inflight = null;
    this.status.classList.remove("dv-busy");
    this.draw(answer, w);
  }

  private draw(a: Heatmap, w: number): void {
    this.data = a;
    (this.el as HTMLElement & { dendroHeatmap?: Heatmap }).dendroHeatmap = a;
    const n = a.pixels;
    let lo = Infinity;
    let hi = 0;
    for (let i = 0; i < a.rates.length; i++) {
      const r = a.rates[i]!;
      if (r > 0) {
        if (r < lo) lo = r;
        if (r > hi) hi = r;
      }
    }
    this.scale = hi > 0 ? [lo, hi] : [1, 1];
    let absent = 0;
    for (let c = 0; c < n; c++) absent += a.present[c] ? 0 : 1;
    const problems = a.problems.length + a.problems_left_out;
    if (a.rows === 0) {
      // A window without rows (a gap opened or zoomed into) is drawn
      // empty, every column hatched, and says so in words.
      replace(this.status, h("span", { data: { testid: "heatmap-empty" } }, "No rows in this window", a.empty ? [" (", fileText(a.empty, { max: 300, more: false }), ")"] : null, "."));
    } else setText(
      this.status,
      `${count(a.rows)} rows in this window · ${count(a.buckets)} buckets · ${count(n)} columns of ${fmt(a.pixel_seconds)} s` +
        (absent > 0 ? ` · ${count(absent)} without rows (hatched)` : "") +
        (problems > 0 ? ` · ${count(problems)} row${problems === 1 ? "" : "s"} left out: ` : ""),
    );
    if (problems > 0) this.status.append(fileText(a.problems.slice(0, 3).map((p) => p.message).join("; "), { max: 400 }));
    this.paintLegend();
    const x0 = this.toX(a.from);
    const xs = new Float64Array(n);
    for (let c = 0; c < n; c++) xs[c] = x0 + c * a.pixel_seconds;
    const bounds = Float64Array.from(a.histogram.bounds);
    const lines = LINES.map(([key]) => Array.from(a.lines[key], (v) => (Number.isNaN(v) ? null : bucketPosition(bounds, v))));
    const data = [xs, new Float64Array(n), ...lines] as uPlot.AlignedData;
    this.el.dataset["state"] = "drawing";
    if (this.plot) this.plot.setData(data, true);
    else this.plot = new uPlot(this.options(w), data, this.el);
  }

  private paintLegend(): void {
    const [lo, hi] = this.scale;
    const bar = h("span", { class: "dv-heat-bar", style: { background: `linear-gradient(90deg, ${PALETTE[0]}, ${PALETTE[64]}, ${PALETTE[128]}, ${PALETTE[192]}, ${PALETTE[255]})` } });
    replace(
      this.legend,
      h("span", null, `${fmt(lo)} /s`),
      bar,
      h("span", null, `${fmt(hi)} /s`, this.log ? " (log)" : ""),
      h("span", { class: "dv-heat-key" }, h("span", { class: "dv-heat-sw", style: { background: ZERO_COLOR } }), "zero"),
      h("span", { class: "dv-heat-key" }, h("span", { class: "dv-heat-sw dv-heat-sw-absent" }), "no rows"),
      LINES.map(([, label], i) => h("span", { class: "dv-heat-key" }, h("span", { class: "dv-heat-line", style: { background: QUANTILE_COLORS[i]! } }), label)),
    );
  }

  /** The palette index of `rate` (> 0) on the colour scale in force. */
  private shade(rate: number): number {
    const [lo, hi] = this.scale;
    let t: number;
    if (hi <= lo) t = 1;
    else if (this.log) t = (Math.log(rate) - Math.log(lo)) / (Math.log(hi) - Math.log(lo));
    else t = rate / hi;
    return Math.max(0, Math.min(255, Math.round(t * 255)));
  }

  /**
   * The cells, painted under the quantile lines (the first series' path
   * builder): written into one ImageData of the plotting area and put
   * once, since a fillRect with its own fill style per cell (63,616 of
   * them for a day at 64 buckets) took most of the drawing; columns
   * without rows are hatched over it, a run at a time.
   */
  private paintCells(u: uPlot): null {
    const a = this.data;
    if (!a) return null;
    const ctx = u.ctx;
    const nb = a.buckets;
    const { left, top, width, height } = u.bbox;
    const W = Math.max(1, Math.round(width));
    const H = Math.max(1, Math.round(height));
    const L = Math.round(left);
    const T = Math.round(top);
    // Each bucket's rows of the image, [y0, y1): bucket 0 at the bottom.
    const ys = new Int32Array(nb + 1);
    for (let b = 0; b <= nb; b++) ys[b] = Math.max(0, Math.min(H, Math.round(u.valToPos(b, "y", true)) - T));
    const x0 = this.toX(a.from);
    const xs = new Int32Array(a.pixels + 1);
    for (let c = 0; c <= a.pixels; c++) xs[c] = Math.max(0, Math.min(W, Math.round(u.valToPos(x0 + c * a.pixel_seconds, "x", true)) - L));
    const image = ctx.createImageData(W, H);
    const px = new Uint32Array(image.data.buffer);
    const colours = new Uint32Array(nb);
    for (let c = 0; c < a.pixels; c++) {
      const xa = xs[c]!;
      // At least one pixel wide, as the cells were drawn before.
      const xb = Math.min(W, Math.max(xs[c + 1]!, xa + 1));
      if (!a.present[c] || xa >= W) continue;
      for (let b = 0; b < nb; b++) {
        const r = a.rates[c * nb + b]!;
        colours[b] = r > 0 ? WORDS[this.shade(r)]! : ZERO_WORD;
      }
      for (let b = 0; b < nb; b++) {
        const y1 = ys[b]!;
        const y0 = Math.min(ys[b + 1]!, y1 - 1);
        for (let y = Math.max(0, y0); y < y1; y++) px.fill(colours[b]!, y * W + xa, y * W + xb);
      }
    }
    // Blank where no cell is: an ImageData starts transparent, and put
    // replaces what is under it, so the plot's background shows through.
    ctx.putImageData(image, L, T);
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    this.hatch ??= hatchPattern(ctx);
    ctx.fillStyle = this.hatch ?? "#ddd";
    for (let c = 0; c < a.pixels; ) {
      if (a.present[c]) {
        c++;
        continue;
      }
      const start = c;
      while (c < a.pixels && !a.present[c]) c++;
      ctx.fillRect(L + xs[start]!, top, Math.max(1, xs[c]! - xs[start]!), height);
    }
    ctx.restore();
    return null;
  }

  private drawn(): void {
    if (this.el.dataset["state"] !== "drawing") return;
    this.drawnCount++;
    this.el.dataset["state"] = "drawn";
    this.el.dataset["drawn"] = String(this.drawnCount);
  }

  private hover(u: uPlot): void {
    const a = this.data;
    const { left, top } = u.cursor;
    if (!a || left === undefined || top === undefined || left < 0 || top < 0) {
      this.readout.textContent = "";
      return;
    }
    const c = Math.floor((u.posToVal(left, "x") - this.toX(a.from)) / a.pixel_seconds);
    if (c < 0 || c >= a.pixels) {
      this.readout.textContent = "";
      return;
    }
    const nb = a.buckets;
    const b = Math.min(nb - 1, Math.max(0, Math.floor(u.posToVal(top, "y"))));
    const start = a.from + BigInt(Math.round(c * a.pixel_seconds * 1e9));
    const when = `${instant(start, this.host.tz(), 3)} +${fmt(a.pixel_seconds)} s`;
    if (!a.present[c]) {
      this.readout.textContent = `${when} · no rows`;
      return;
    }
    const bounds = a.histogram.bounds;
    const unit = this.unit ? ` ${this.unit}` : "";
    this.readout.textContent = `${when} · bucket [${fmt(bounds[b]!)}, ${fmt(bounds[b + 1]!)})${unit} · count ${count(a.counts[c * nb + b]!)} · ${fmt(a.rates[c * nb + b]!)} /s`;
  }

  private options(width: number): uPlot.Options {
    const nb = () => this.data?.buckets ?? 1;
    const drag = dragHooks(
      (x0, x1) => this.host.onWindow(this.toNs(x0), this.toNs(x1)),
      (x0, x1) => this.host.onRegion(this.toNs(x0), this.toNs(x1)),
    );
    const region = () => {
      const r = this.host.region();
      return r ? ([this.toX(r[0]), this.toX(r[1])] as [number, number]) : null;
    };
    return {
      width,
      height: HEIGHT,
      legend: { show: false },
      padding: [6, 12, 0, 4],
      cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
      scales: {
        x: { time: false, range: () => [this.toX(this.from), this.toX(this.to)] },
        y: { range: () => [0, nb()] },
      },
      axes: [
        timeAxis({ toNs: (x) => this.toNs(x), toX: (ns) => this.toX(ns), xmin: () => this.toX(this.from), xmax: () => this.toX(this.to), tz: () => this.host.tz() }),
        {
          size: 58,
          stroke: "#57606a",
          grid: { show: false },
          ticks: { stroke: "#d0d7de", width: 1, size: 4 },
          font: "11px system-ui, sans-serif",
          // Ticks on bucket edges, as many as fit, labelled with the edge's value.
          splits: (u) => {
            const edges = nb();
            const step = Math.max(1, Math.ceil(edges / Math.max(2, Math.floor(u.bbox.height / devicePixelRatio / 18))));
            const out: number[] = [];
            for (let b = 0; b <= edges; b += step) out.push(b);
            return out;
          },
          values: (_u, splits) => splits.map((b) => {
            const v = this.data?.histogram.bounds[b];
            return v === undefined ? "" : axisNumber(v, Math.abs(v) / 100 || 1);
          }),
        },
      ],
      series: [
        {},
        { label: "cells", paths: (u) => this.paintCells(u), points: { show: false } },
        ...LINES.map(([, label], i) => ({ label, stroke: QUANTILE_COLORS[i]!, width: 1.5, points: { show: false } })),
      ],
      hooks: {
        draw: [regionBand(region), () => this.drawn()],
        setSelect: drag.setSelect,
        setCursor: [(u) => this.hover(u)],
        ready: [
          ...drag.ready!,
          (u) => {
            u.over.addEventListener("dblclick", () => this.host.onWindow(...this.host.fullWindow()));
          },
        ],
      },
    };
  }
}

/** A window without rows, in the buckets of `like`: every column absent, no counts, no lines. */
function noRows(like: Heatmap, from: bigint, to: bigint, pixels: number): Heatmap {
  const cells = pixels * like.buckets;
  const none = () => new Float64Array(pixels).fill(NaN);
  return {
    ...like,
    from,
    to,
    pixels,
    pixel_seconds: (Number(to - from) + 1) / pixels / 1e9,
    counts: new Float64Array(cells),
    rates: new Float64Array(cells),
    present: new Uint8Array(pixels),
    totals: new Float64Array(pixels),
    lines: { p50: none(), p90: none(), p99: none(), p999: none(), max: none() },
    rows: 0,
    empty: null,
    problems: [],
    problems_left_out: 0,
  };
}

/** Diagonal grey stripes: a column the stream has no row in (not a column of zero counts). */
function hatchPattern(ctx: CanvasRenderingContext2D): CanvasPattern | null {
  const c = document.createElement("canvas");
  c.width = 8;
  c.height = 8;
  const g = c.getContext("2d");
  if (!g) return null;
  g.fillStyle = "#ffffff";
  g.fillRect(0, 0, 8, 8);
  g.strokeStyle = "#b8bfc8";
  g.lineWidth = 1.5;
  g.beginPath();
  g.moveTo(0, 8);
  g.lineTo(8, 0);
  g.stroke();
  return ctx.createPattern(c, "repeat");
}

function fmt(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v !== 0 && (Math.abs(v) >= 1e7 || Math.abs(v) < 1e-3)) return v.toExponential(3);
  return String(Number(v.toPrecision(6)));
}

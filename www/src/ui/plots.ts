// Plots of a stream's numeric columns against its timestamp, with uPlot.
//
// One small plot per column, stacked, sharing the x window and a synced
// cursor. Data comes from `readRange` with maxPoints about one per pixel, so
// a window of a million rows arrives as a min/max envelope (drawn as a band)
// and a narrow window arrives row by row. Zooming (drag across a plot, or
// the timeline) asks the engine again for the new window.
//
// A window whose exact answer needs segments decoded is first drawn from
// the segments' footer statistics (a band that holds the exact envelope,
// see RangeEnvelope.preview), then redrawn exact in place: the plots keep
// their drawing until each answer is drawn, never going blank between.
//
// The group says where it is in `data-state` ("reading", "drawing",
// "preview", "drawn", "failed", "empty"): "preview" once the preview is
// drawn while the exact answer is read, "drawn" once uPlot has drawn the
// exact answer to the latest request into every plot, with `data-drawn`
// counting the exact answers drawn. Tests and embedders wait for that,
// not for time.

import uPlot from "uplot";
import type { ArchiveHandle, ColumnSchema, RangeEnvelope } from "../engine/types";
import { ticks } from "./axis";
import { clear, debounce, fileText, h, replace, setText } from "./dom";
import { explain } from "./errors";
import { axisNumber, count, instant, type TimeZoneMode } from "./format";
import { syncPlugin } from "./sync";

export interface PlotHost {
  handle: ArchiveHandle;
  source: number;
  stream: string;
  /** x = seconds since this instant. */
  origin: bigint;
  tz(): TimeZoneMode;
  onWindow(from: bigint, to: bigint): void;
  /** The window a double-click returns to. */
  fullWindow(): [bigint, bigint];
  /** A person switched counter `name` between its rate (raw false) and its running total. */
  onRaw(name: string, raw: boolean): void;
}

/** What a plot last drew, on its element as `dendroPlot` (for tests and embedders). */
export interface DrawnSeries {
  ts: BigInt64Array;
  min: Float64Array;
  max: Float64Array;
  /** "rate": per-second rates of a counter; "raw": the stored values. */
  as: "rate" | "raw";
  reduced: boolean;
}

export const PALETTE = ["#2563eb", "#0d9488", "#c2410c", "#7c3aed", "#be123c", "#4d7c0f", "#0369a1", "#a16207"];

interface ColumnPlot {
  name: string;
  box: HTMLElement;
  readout: HTMLElement;
  /** The rate/raw switch, shown for counters. */
  rateBtn: HTMLButtonElement;
  plot: uPlot | null;
  color: string;
  /** Whether the answer being drawn has values for this plot. */
  expected: boolean;
  /** The answer (counted by `PlotGroup.gen`) this plot last drew. */
  drawnGen: number;
  /** The answer this plot shows (a preview may leave some plots as they were). */
  env: RangeEnvelope | null;
}

let syncCounter = 0;

export class PlotGroup {
  readonly el: HTMLElement;
  private readonly status: HTMLElement;
  private readonly list: HTMLElement;
  private plots: ColumnPlot[] = [];
  private selected: string[] = [];
  /** Columns read as counters, and of those the ones plotted as rates. */
  private counters = new Set<string>();
  private rates: string[] = [];
  private from = 0n;
  private to = 1n;
  private xmin = 0;
  private xmax = 1;
  private token = 0;
  /** Answers handed to uPlot so far. */
  private gen = 0;
  private readonly syncKey = `dendro-${++syncCounter}`;
  private readonly resize: ResizeObserver;
  private lastWidth = 0;
  /** The group's content width as last measured or observed; 0 until then. */
  private measured = 0;
  private data: RangeEnvelope | null = null;
  /** The columns the answer being drawn holds as rates. */
  private drawnRates = new Set<string>();
  /** Whether the answer being drawn is a preview from footer statistics. */
  private drawingPreview = false;
  /** The request last sent, so an identical one (a resize, a repeated window) is not sent again. */
  private lastKey = "";
  private firstDrawn: () => void = () => {};
  /** Settles when the first plot has been drawn (or its fetch failed). */
  readonly firstPlot = new Promise<void>((r) => (this.firstDrawn = r));
  private readonly scheduleFetch = debounce(() => void this.fetch(), 120);
  /** Withdraws the request in flight, which a newer window or the plot's end makes moot. */
  private inflight: AbortController | null = null;

  constructor(
    private readonly host: PlotHost,
    private readonly columns: ColumnSchema[],
  ) {
    this.status = h("div", { class: "dv-plot-status", data: { testid: "plot-status" } });
    this.list = h("div", { class: "dv-plot-list" });
    this.el = h("div", { class: "dv-plots", data: { testid: "plots" } }, this.status, this.list);
    this.resize = new ResizeObserver((entries) => {
      const box = entries[entries.length - 1]?.contentRect.width ?? 0;
      // A hidden tab (or a collapsed panel) has no size: nothing to fetch or
      // draw until it has one again.
      if (box <= 0) return;
      this.measured = box;
      const w = this.width();
      if (Math.abs(w - this.lastWidth) < 2) return;
      this.lastWidth = w;
      if (!this.plots.some((p) => p.plot)) return;
      for (const p of this.plots) p.plot?.setSize({ width: w, height: plotHeight(this.plots.length) });
      this.scheduleFetch();
    });
    this.resize.observe(this.el);
  }

  destroy(): void {
    this.resize.disconnect();
    this.inflight?.abort();
    this.inflight = null;
    this.token++;
    for (const p of this.plots) p.plot?.destroy();
    this.plots = [];
  }

  /**
   * The plots' width in CSS px. Measured once (a layout, before the rest of
   * the stream view is built), then kept up to date by the ResizeObserver, so
   * a fetch does not force a layout of whatever was built since.
   */
  private width(): number {
    if (this.measured <= 0) this.measured = this.el.clientWidth;
    return Math.max(320, this.measured || 800);
  }

  /** Which columns are counters, and which of them to plot as rates: refetches when that changed. */
  setCounters(counters: Set<string>, rates: string[]): void {
    this.counters = counters;
    this.rates = rates;
    for (const p of this.plots) this.paintRate(p);
    if (this.plots.length > 0) void this.fetch();
  }

  private paintRate(p: ColumnPlot): void {
    const counter = this.counters.has(p.name);
    const rate = this.rates.includes(p.name);
    p.rateBtn.hidden = !counter;
    p.rateBtn.textContent = rate ? "rate /s" : "raw total";
    p.rateBtn.dataset["mode"] = rate ? "rate" : "raw";
    p.rateBtn.title = rate ? "A counter, plotted as its increase per second (a fall is a reset). Click for the raw running total." : "A counter, plotted as its raw running total. Click for its rate per second.";
    p.box.dataset["as"] = rate ? "rate" : "raw";
  }

  setColumns(names: string[]): void {
    this.selected = names;
    this.lastKey = "";
    for (const p of this.plots) p.plot?.destroy();
    this.plots = [];
    clear(this.list);
    if (names.length === 0) {
      this.status.textContent = "Pick a numeric column to plot it.";
      this.el.dataset["state"] = "empty";
      return;
    }
    names.forEach((name, i) => {
      const col = this.columns.find((c) => c.name === name);
      const readout = h("span", { class: "dv-plot-readout" });
      const rateBtn = h("button", {
        type: "button",
        class: "dv-btn dv-btn-xs dv-rate-toggle",
        data: { testid: "rate-toggle" },
        on: { click: () => this.host.onRaw(name, this.rates.includes(name)) },
      });
      const box = h(
        "div",
        { class: "dv-plot", data: { testid: "plot", column: name } },
        h(
          "div",
          { class: "dv-plot-head" },
          h("span", { class: "dv-plot-swatch", style: { background: PALETTE[i % PALETTE.length]! } }),
          h("span", { class: "dv-plot-name" }, fileText(name, { max: 60, more: false })),
          col ? h("span", { class: "dv-plot-type" }, col.type) : null,
          rateBtn,
          readout,
        ),
      );
      this.list.appendChild(box);
      const p: ColumnPlot = { name, box, readout, rateBtn, plot: null, color: PALETTE[i % PALETTE.length]!, expected: false, drawnGen: 0, env: null };
      this.paintRate(p);
      this.plots.push(p);
    });
    void this.fetch();
  }

  /** The archive changed under the same window (it is followed): ask again, keeping the drawing until the answer is drawn. */
  refresh(): void {
    this.lastKey = "";
    void this.fetch(this.data !== null);
  }

  setWindow(from: bigint, to: bigint): void {
    this.from = from;
    this.to = to;
    this.xmin = this.toX(from);
    this.xmax = this.toX(to);
    for (const p of this.plots) p.plot?.setScale("x", { min: this.xmin, max: this.xmax });
    this.scheduleFetch();
  }

  /** The zone changed: relabel axes and readouts. */
  relabel(): void {
    for (const p of this.plots) p.plot?.redraw(false, true);
  }

  private toX(ns: bigint): number {
    return Number(ns - this.host.origin) / 1e9;
  }

  private toNs(x: number): bigint {
    return this.host.origin + BigInt(Math.round(x * 1e9));
  }

  /**
   * Asks the engine for the window and draws the answer. `quiet` (a
   * followed archive's refresh, every second) keeps the status line as it
   * is until the answer comes: writing "Reading…" and back would cost the
   * page two layouts for nothing a person needs to see.
   */
  private async fetch(quiet = false): Promise<void> {
    if (this.selected.length === 0) {
      this.firstDrawn();
      return;
    }
    const maxPoints = Math.max(100, Math.round(this.width()));
    const rates = this.rates.filter((r) => this.selected.includes(r));
    const key = `${this.from}:${this.to}:${maxPoints}:${JSON.stringify(this.selected)}:${JSON.stringify(rates)}`;
    if (key === this.lastKey) return;
    this.lastKey = key;
    const token = ++this.token;
    // The window asked for before is no longer the one to show: if the
    // engine has not started on it, it never will.
    this.inflight?.abort();
    const inflight = new AbortController();
    this.inflight = inflight;
    if (!quiet) {
      this.status.textContent = "Reading…";
      this.status.classList.add("dv-busy");
    }
    this.el.dataset["state"] = "reading";
    let env: RangeEnvelope;
    try {
      env = await this.host.handle.readRange(this.host.source, this.host.stream, this.from, this.to, {
        columns: this.selected,
        maxPoints,
        rates,
        signal: inflight.signal,
        // A followed archive's refresh keeps its drawing until the exact answer.
        ...(quiet ? {} : { onPreview: (preview: RangeEnvelope) => token === this.token && this.showPreview(preview, rates) }),
      });
    } catch (e) {
      if (token !== this.token) return;
      this.lastKey = "";
      this.firstDrawn();
      const x = explain(e, this.host.stream);
      this.status.classList.remove("dv-busy");
      this.el.dataset["state"] = "failed";
      replace(this.status, h("span", { class: "dv-error-inline" }, `${x.title}: `, fileText(x.message, { max: 300, more: false })));
      return;
    }
    if (token !== this.token) return;
    this.inflight = null;
    this.status.classList.remove("dv-busy");
    this.data = env;
    setText(
      this.status,
      `${count(env.rows_in_window + env.rows_left_out)} rows in this window · ` +
      (env.reduced ? `min/max envelope of ${count(env.ts.length)} buckets` : "every row shown") +
      ` · ${count(env.segments_read)} segment${env.segments_read === 1 ? "" : "s"} read` +
      (env.segments_from_stats > 0 ? `, ${count(env.segments_from_stats)} from footer statistics` : "") +
      (env.segments_left_out > 0
        ? ` · approximate: ${count(env.segments_left_out)} segments (${count(env.rows_left_out)} rows) not read, zoom in for the exact envelope`
        : ""),
    );
    this.el.dataset["approximate"] = String(env.segments_left_out > 0);
    this.drawnRates = new Set(rates);
    this.draw(env, false);
    this.firstDrawn();
  }

  /**
   * Draws a preview from footer statistics while the exact answer is read:
   * only the plots it has values for (a counter read as a rate has none
   * until its rows are decoded), the others keep what they show.
   */
  private showPreview(env: RangeEnvelope, rates: string[]): void {
    const drawable = env.columns.filter((c) => !rates.includes(c.name) && c.max.some((v) => !Number.isNaN(v)));
    if (drawable.length === 0) return;
    const gaps = env.columns.reduce((n, c) => n + (c.gaps ?? 0), 0) + (env.segments_unsummarized ?? 0);
    setText(
      this.status,
      `${count(env.rows_in_window + env.rows_left_out)} rows in this window · ` +
        `from segment statistics (${count(env.segments_from_stats)} segment${env.segments_from_stats === 1 ? "" : "s"}), refining…` +
        (gaps > 0 ? ` · ${count(gaps)} without statistics` : ""),
    );
    this.drawnRates = new Set(rates);
    this.draw({ ...env, columns: drawable }, true);
    this.firstDrawn();
  }

  private draw(env: RangeEnvelope, preview: boolean): void {
    const n = env.ts.length;
    const xs = new Float64Array(n);
    for (let i = 0; i < n; i++) xs[i] = this.toX(env.ts[i]!);
    const w = this.width();
    this.gen++;
    this.drawingPreview = preview;
    this.el.dataset["state"] = "drawing";
    for (const p of this.plots) p.expected = env.columns.some((c) => c.name === p.name);
    if (!this.plots.some((p) => p.expected)) {
      this.el.dataset["state"] = preview ? "preview" : "drawn";
      if (!preview) this.el.dataset["drawn"] = String(this.gen);
    }
    for (const p of this.plots) {
      const col = env.columns.find((c) => c.name === p.name);
      // A preview leaves the plots it has nothing for as they are.
      if (!col && preview) continue;
      const note = p.box.querySelector(".dv-plot-note");
      note?.remove();
      p.env = env;
      if (!col) {
        p.plot?.destroy();
        p.plot = null;
        p.box.appendChild(h("div", { class: "dv-plot-note" }, "The engine returned no numeric values for this column."));
        continue;
      }
      const data: uPlot.AlignedData = [xs, gapsAsNull(col.max), gapsAsNull(col.min)];
      const drawnSeries: DrawnSeries = { ts: env.ts, min: col.min, max: col.max, as: this.drawnRates.has(p.name) ? "rate" : "raw", reduced: env.reduced };
      (p.box as HTMLElement & { dendroPlot?: DrawnSeries }).dendroPlot = drawnSeries;
      if (n === 0) p.box.appendChild(h("div", { class: "dv-plot-note" }, "No rows in this window."));
      if (p.plot) {
        p.plot.setData(data, true);
      } else {
        p.plot = new uPlot(this.options(p, w), data, p.box);
      }
    }
  }

  /** uPlot drew `p`: once every plot has drawn the latest answer, the group says so. */
  private drawn(p: ColumnPlot): void {
    const state = this.el.dataset["state"];
    // A redraw of the previous answer while a new one is read says nothing.
    if (state !== "drawing" && state !== "drawn" && state !== "preview") return;
    p.drawnGen = this.gen;
    p.box.dataset["drawn"] = String(this.gen);
    if (this.plots.every((q) => !q.expected || q.drawnGen === this.gen)) {
      this.el.dataset["state"] = this.drawingPreview ? "preview" : "drawn";
      if (!this.drawingPreview) this.el.dataset["drawn"] = String(this.gen);
    }
  }

  private options(p: ColumnPlot, width: number): uPlot.Options {
    const tz = () => this.host.tz();
    const fill = p.color + "2e";
    // Dots on the rows themselves when every row is shown and they are far apart.
    const sparse = (u: uPlot, _s: number, i0: number, i1: number) => p.env?.reduced === false && i1 - i0 < u.bbox.width / devicePixelRatio / 10;
    return {
      width,
      height: plotHeight(this.plots.length),
      legend: { show: false },
      padding: [6, 12, 0, 4],
      // The page's cursor (sync.ts): the first plot drawn follows it, uPlot's sync the rest.
      plugins: [syncPlugin(p.box, (x) => this.toNs(x), (ns) => this.toX(ns), () => this.plots.find((q) => q.plot) === p)],
      cursor: {
        sync: { key: this.syncKey, setSeries: false },
        drag: { x: true, y: false, setScale: false },
        points: { size: 5 },
      },
      scales: {
        x: { time: false, range: () => [this.xmin, this.xmax] },
        y: {
          range: (_u, min, max) => {
            if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
            if (min === max) {
              const d = Math.abs(min) * 0.1 || 1;
              return [min - d, max + d];
            }
            const pad = (max - min) * 0.08;
            return [min - pad, max + pad];
          },
        },
      },
      axes: timeAxes((ns) => this.toX(ns), (x) => this.toNs(x), () => [this.xmin, this.xmax], tz),
      series: [
        {},
        { label: "max", stroke: p.color, width: 1.25, points: { show: sparse, size: 4, fill: p.color } },
        { label: "min", stroke: p.color, width: 1.25, points: { show: sparse, size: 4, fill: p.color } },
      ],
      bands: [{ series: [1, 2], fill }],
      hooks: {
        draw: [() => this.drawn(p)],
        setSelect: [selectToWindow((x) => this.toNs(x), (a, b) => this.host.onWindow(a, b))],
        setCursor: [
          (u) => {
            const i = u.cursor.idx;
            const d = p.env;
            if (i === null || i === undefined || !d) {
              p.readout.textContent = "";
              return;
            }
            const ts = d.ts[i];
            const mx = u.data[1]?.[i];
            const mn = u.data[2]?.[i];
            if (ts === undefined) return;
            const unit = this.drawnRates.has(p.name) ? " /s" : "";
            const value =
              mx === null || mx === undefined
                ? "no value"
                : mn === mx
                  ? formatValue(mx) + unit
                  : `min ${formatValue(mn ?? NaN)} · max ${formatValue(mx)}${unit}`;
            // A bucket is labelled by its start, to the precision its width warrants.
            const bucket = d.reduced && d.ts.length > 1 ? (this.to - this.from) / BigInt(d.ts.length) : 0n;
            const digits = !d.reduced ? undefined : bucket >= 1_000_000_000n ? 0 : bucket >= 1_000_000n ? 3 : bucket >= 1_000n ? 6 : 9;
            p.readout.textContent = `${instant(ts, tz(), digits)}${d.reduced ? " bucket" : ""}  ${value}`;
          },
        ],
        ready: [
          (u) => {
            u.over.addEventListener("dblclick", () => {
              const [a, b] = this.host.fullWindow();
              this.host.onWindow(a, b);
            });
          },
        ],
      },
    };
  }
}

/** A drag across a plot (uPlot's select) as a window chosen: the selection is cleared, `onWindow` told its ends. */
export function selectToWindow(toNs: (x: number) => bigint, onWindow: (from: bigint, to: bigint) => void): (u: uPlot) => void {
  return (u) => {
    const { left, width: w } = u.select;
    if (w < 3) return;
    const a = u.posToVal(left, "x");
    const b = u.posToVal(left + w, "x");
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    if (b > a) onWindow(toNs(a), toNs(b));
  };
}

/**
 * The time axis (wall-clock ticks in the chosen zone) and the value axis
 * of a plot whose x is `toX(ns)`; shared by the stream view's plots and
 * the compare view's.
 */
export function timeAxes(toX: (ns: bigint) => number, toNs: (x: number) => bigint, range: () => [number, number], tz: () => TimeZoneMode): uPlot.Axis[] {
  return [
    {
      size: 34,
      stroke: "#57606a",
      grid: { stroke: "#eaeef2", width: 1 },
      ticks: { stroke: "#d0d7de", width: 1, size: 4 },
      font: "11px system-ui, sans-serif",
      splits: (u) => {
        const min = u.scales["x"]?.min ?? range()[0];
        const max = u.scales["x"]?.max ?? range()[1];
        return ticks(toNs(min), toNs(max), Math.max(2, Math.floor(u.width / 110)), tz()).map((t) => toX(t.ns));
      },
      values: (u, splits) => {
        const min = u.scales["x"]?.min ?? range()[0];
        const max = u.scales["x"]?.max ?? range()[1];
        const list = ticks(toNs(min), toNs(max), Math.max(2, Math.floor(u.width / 110)), tz());
        const right = u.bbox.width / devicePixelRatio;
        return splits.map((v, i) => {
          const t = list[i];
          if (!t) return "";
          // A label centred on a tick near the right edge would be cut: leave it off.
          const room = right - u.valToPos(v, "x");
          if (room < t.label.length * 3.4) return "";
          return t.context ? `${t.label}\n${t.context}` : t.label;
        });
      },
    },
    {
      size: 58,
      stroke: "#57606a",
      grid: { stroke: "#eaeef2", width: 1 },
      ticks: { stroke: "#d0d7de", width: 1, size: 4 },
      font: "11px system-ui, sans-serif",
      values: (_u, splits, _axis, _space, incr) => splits.map((v) => axisNumber(v, incr)),
    },
  ];
}

function plotHeight(n: number): number {
  return n <= 2 ? 190 : n <= 4 ? 150 : 120;
}

export function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString("en-US");
  return Math.abs(v) >= 1e15 || (Math.abs(v) < 1e-4 && v !== 0) ? v.toExponential(6) : String(Number(v.toPrecision(10)));
}

/** uPlot leaves a hole for null; NaN (a bucket with no finite value) becomes null. */
export function gapsAsNull(a: Float64Array): Float64Array | (number | null)[] {
  let hasNaN = false;
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i]!)) {
      hasNaN = true;
      break;
    }
  }
  if (!hasNaN) return a;
  return Array.from(a, (v) => (Number.isNaN(v) ? null : v));
}


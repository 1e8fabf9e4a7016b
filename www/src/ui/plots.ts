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
import { dragHooks, regionBand, takeSelection } from "./region";
import { noteMarks } from "./noteplot";
import type { NoteMark } from "./notes";
import { DERIVED_ROW_CAP, type DerivedAnswer, type DerivedSpec, readDerived } from "./derived";
import { syncPlugin } from "./syncplot";

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
  /** A person removed the derived series typed as `text`. */
  onRemoveDerived?(text: string): void;
  /** A person dragged with Shift held over [from, to]: statistics of that region. */
  onRegion?(from: bigint, to: bigint): void;
  /** The region shown, shaded on every plot; null for none. */
  region?(): [bigint, bigint] | null;
  /** The notes of this plot's source (annotate.ts), marked on it. */
  notes?(): NoteMark[];
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
  /** Set on a derived series' plot: its expression, evaluated over the window's rows. */
  derived?: DerivedSpec;
}

let syncCounter = 0;

export class PlotGroup {
  readonly el: HTMLElement;
  private readonly status: HTMLElement;
  private readonly list: HTMLElement;
  private plots: ColumnPlot[] = [];
  private selected: string[] = [];
  /** Derived series, plotted after the columns. */
  private derivedSpecs: DerivedSpec[] = [];
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
  /**
   * Whether the answer being drawn is a preview from footer statistics:
   * "sample" from a sample of the window's segments, "preview" from every
   * footer (or the segment budget's spread), null for the exact answer.
   */
  private drawingPreview: "sample" | "preview" | null = null;
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
    this.rebuild();
  }

  /** The derived series to plot after the columns (each read from the window's rows). */
  setDerived(specs: DerivedSpec[]): void {
    this.derivedSpecs = specs;
    this.rebuild();
  }

  private rebuild(): void {
    const names = this.selected;
    const specs = this.derivedSpecs;
    this.lastKey = "";
    for (const p of this.plots) p.plot?.destroy();
    this.plots = [];
    clear(this.list);
    if (names.length === 0 && specs.length === 0) {
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
    specs.forEach((spec, j) => {
      const i = names.length + j;
      const readout = h("span", { class: "dv-plot-readout" });
      const rateBtn = h("button", { type: "button", class: "dv-btn dv-btn-xs", hidden: true });
      const box = h(
        "div",
        { class: "dv-plot dv-plot-derived", data: { testid: "derived-plot", expr: spec.text } },
        h(
          "div",
          { class: "dv-plot-head" },
          h("span", { class: "dv-plot-swatch", style: { background: PALETTE[i % PALETTE.length]! } }),
          h("span", { class: "dv-plot-name", title: "A derived series, evaluated on every row of the window" }, "= ", fileText(spec.text, { max: 80, more: false })),
          h("span", { class: "dv-plot-type" }, "derived"),
          h(
            "button",
            { type: "button", class: "dv-btn dv-btn-xs", "aria-label": `remove ${spec.text}`, data: { action: "remove-derived" }, on: { click: () => this.host.onRemoveDerived?.(spec.text) } },
            "remove",
          ),
          readout,
        ),
      );
      this.list.appendChild(box);
      this.plots.push({ name: spec.text, box, readout, rateBtn, plot: null, color: PALETTE[i % PALETTE.length]!, expected: false, drawnGen: 0, env: null, derived: spec });
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

  /** Draws again as it is (the region shown changed). */
  redraw(): void {
    for (const p of this.plots) p.plot?.redraw(false, false);
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
    if (this.selected.length === 0 && this.derivedSpecs.length === 0) {
      this.firstDrawn();
      return;
    }
    const maxPoints = Math.max(100, Math.round(this.width()));
    const rates = this.rates.filter((r) => this.selected.includes(r));
    const specs = this.derivedSpecs;
    const key = `${this.from}:${this.to}:${maxPoints}:${JSON.stringify(this.selected)}:${JSON.stringify(rates)}:${JSON.stringify(specs.map((s) => s.text))}`;
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
    // Derived series read their rows beside the columns' envelope; a failure is theirs alone.
    const derived: Promise<DerivedAnswer | Error> | null =
      specs.length > 0
        ? readDerived(this.host.handle, this.host.source, this.host.stream, this.from, this.to, specs, maxPoints, inflight.signal).catch((e: unknown) => (e instanceof Error ? e : new Error(explain(e, this.host.stream).message)))
        : null;
    try {
      const d = this.selected.length === 0 ? await derived : null;
      env = d !== null
        ? { ...(d instanceof Error ? EMPTY_ENVELOPE : d.env), columns: [] }
        : await this.host.handle.readRange(this.host.source, this.host.stream, this.from, this.to, {
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
    const derivedAnswer = derived ? await derived : null;
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
        : "") +
      viaText(env),
    );
    this.el.dataset["approximate"] = String(env.segments_left_out > 0);
    if (env.via) this.el.dataset["via"] = env.via;
    else delete this.el.dataset["via"];
    this.drawnRates = new Set(rates);
    this.draw(env, null, derivedAnswer);
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
    const all = env.segments_from_stats + env.segments_left_out;
    const what = env.sample
      ? `a sample: footer statistics of ${count(env.segments_from_stats)} of ${count(all)} segments spread evenly in time, in ${count(env.ts.length)} coarse buckets (the data may reach beyond this band)`
      : env.segments_left_out > 0
        ? `from segment statistics (${count(env.segments_from_stats)} of ${count(all)} segments, a spread sample)`
        : `from segment statistics (${count(env.segments_from_stats)} segment${env.segments_from_stats === 1 ? "" : "s"})`;
    setText(
      this.status,
      `${count(env.rows_in_window + env.rows_left_out)} rows in this window · ${what}, refining…` + (gaps > 0 ? ` · ${count(gaps)} without statistics` : ""),
    );
    this.drawnRates = new Set(rates);
    this.draw({ ...env, columns: drawable }, env.sample ? "sample" : "preview");
    this.firstDrawn();
  }

  private draw(env: RangeEnvelope, stage: "sample" | "preview" | null, derived: DerivedAnswer | Error | null = null): void {
    const preview = stage !== null;
    const n = env.ts.length;
    const xs = this.xsOf(env);
    const dxs = derived && !(derived instanceof Error) ? this.xsOf(derived.env) : null;
    const w = this.width();
    this.gen++;
    this.drawingPreview = stage;
    this.el.dataset["state"] = "drawing";
    for (const p of this.plots) p.expected = p.derived ? !preview && dxs !== null && derived !== null && !(derived instanceof Error) && !derived.tooMany : env.columns.some((c) => c.name === p.name);
    if (!this.plots.some((p) => p.expected)) {
      this.el.dataset["state"] = stage ?? "drawn";
      if (!preview) this.el.dataset["drawn"] = String(this.gen);
    }
    for (const p of this.plots) {
      if (p.derived) {
        if (!preview) this.drawDerived(p, derived, dxs, w);
        continue;
      }
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

  private xsOf(env: RangeEnvelope): Float64Array {
    const xs = new Float64Array(env.ts.length);
    for (let i = 0; i < xs.length; i++) xs[i] = this.toX(env.ts[i]!);
    return xs;
  }

  /** A derived series' plot: its evaluated envelope, or why there is none. */
  private drawDerived(p: ColumnPlot, answer: DerivedAnswer | Error | null, xs: Float64Array | null, w: number): void {
    p.box.querySelector(".dv-plot-note")?.remove();
    const col = answer && !(answer instanceof Error) && !answer.tooMany ? answer.env.columns.find((c) => c.name === p.name) : undefined;
    if (!answer || answer instanceof Error || answer.tooMany !== undefined || !col || !xs) {
      p.plot?.destroy();
      p.plot = null;
      p.env = null;
      delete (p.box as HTMLElement & { dendroPlot?: DrawnSeries }).dendroPlot;
      const why =
        answer instanceof Error
          ? `Could not read this series' columns: ${answer.message}`
          : answer?.tooMany !== undefined
            ? `This window holds ${count(answer.tooMany)} rows; a derived series is evaluated on every row, for windows of at most ${count(DERIVED_ROW_CAP)}: zoom in to see it.`
            : "Nothing to evaluate.";
      p.box.appendChild(h("div", { class: "dv-plot-note", data: { testid: "derived-note" } }, fileText(why, { max: 400, more: false })));
      return;
    }
    const env = answer!.env;
    p.env = env;
    (p.box as HTMLElement & { dendroPlot?: DrawnSeries }).dendroPlot = { ts: env.ts, min: col.min, max: col.max, as: "raw", reduced: env.reduced };
    if (env.ts.length === 0) p.box.appendChild(h("div", { class: "dv-plot-note" }, "No rows in this window."));
    const data: uPlot.AlignedData = [xs, gapsAsNull(col.max), gapsAsNull(col.min)];
    if (p.plot) p.plot.setData(data, true);
    else p.plot = new uPlot(this.options(p, w), data, p.box);
  }

  /** uPlot drew `p`: once every plot has drawn the latest answer, the group says so. */
  private drawn(p: ColumnPlot): void {
    const state = this.el.dataset["state"];
    // A redraw of the previous answer while a new one is read says nothing.
    if (state !== "drawing" && state !== "drawn" && state !== "preview" && state !== "sample") return;
    p.drawnGen = this.gen;
    p.box.dataset["drawn"] = String(this.gen);
    if (this.plots.every((q) => !q.expected || q.drawnGen === this.gen)) {
      this.el.dataset["state"] = this.drawingPreview ?? "drawn";
      if (!this.drawingPreview) this.el.dataset["drawn"] = String(this.gen);
    }
  }

  private options(p: ColumnPlot, width: number): uPlot.Options {
    const tz = () => this.host.tz();
    const fill = p.color + "2e";
    // Dots on the rows themselves when every row is shown and they are far apart.
    const sparse = (u: uPlot, _s: number, i0: number, i1: number) => p.env?.reduced === false && i1 - i0 < u.bbox.width / devicePixelRatio / 10;
    const drag = dragHooks(
      (a, b) => this.host.onWindow(this.toNs(a), this.toNs(b)),
      (a, b) => this.host.onRegion?.(this.toNs(a), this.toNs(b)),
    );
    const region = () => {
      const r = this.host.region?.();
      return r ? ([this.toX(r[0]), this.toX(r[1])] as [number, number]) : null;
    };
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
        draw: [regionBand(region), noteMarks(() => this.host.notes?.() ?? [], (ns) => this.toX(ns)), () => this.drawn(p)],
        setSelect: drag.setSelect,
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
          ...drag.ready!,
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

/** The envelope of a window the columns were not read for (only derived series are plotted). */
/** Which path computed an answer of an archive from a URL, in words for the status line. */
function viaText(env: RangeEnvelope): string {
  if (env.via === "server") return " · computed by the server (dendro serve)";
  if (env.via !== "browser") return "";
  return " · read by range in this browser" + (env.declined ? ` (the server's envelope was not used: ${env.declined})` : "");
}

const EMPTY_ENVELOPE: RangeEnvelope = {
  rows_in_window: 0,
  live_rows_in_window: 0,
  segments_read: 0,
  segments_from_stats: 0,
  segments_left_out: 0,
  rows_left_out: 0,
  reduced: false,
  ts: new BigInt64Array(0),
  columns: [],
};

/** What a time axis needs of its plot: x in seconds from an origin, the window, the zone. */
export interface TimeView {
  toNs(x: number): bigint;
  toX(ns: bigint): number;
  xmin(): number;
  xmax(): number;
  tz(): TimeZoneMode;
}

/** The x axis every plot of the stream view shares: instants in the zone, labels kept off a cut right edge. */
export function timeAxis(v: TimeView): uPlot.Axis {
  const list = (u: uPlot) => {
    const min = u.scales["x"]?.min ?? v.xmin();
    const max = u.scales["x"]?.max ?? v.xmax();
    return ticks(v.toNs(min), v.toNs(max), Math.max(2, Math.floor(u.width / 110)), v.tz());
  };
  return {
    size: 34,
    stroke: "#57606a",
    grid: { stroke: "#eaeef2", width: 1 },
    ticks: { stroke: "#d0d7de", width: 1, size: 4 },
    font: "11px system-ui, sans-serif",
    splits: (u) => list(u).map((t) => v.toX(t.ns)),
    values: (u, splits) => {
      const labels = list(u);
      const right = u.bbox.width / devicePixelRatio;
      return splits.map((x, i) => {
        const t = labels[i];
        if (!t) return "";
        // A label centred on a tick near the right edge would be cut: leave it off.
        const room = right - u.valToPos(x, "x");
        if (room < t.label.length * 3.4) return "";
        return t.context ? `${t.label}\n${t.context}` : t.label;
      });
    },
  };
}

/** A drag across a plot (uPlot's select) as a window chosen: the selection is cleared, `onWindow` told its ends. */
export function selectToWindow(toNs: (x: number) => bigint, onWindow: (from: bigint, to: bigint) => void): (u: uPlot) => void {
  return (u) => {
    const r = takeSelection(u);
    if (r) onWindow(toNs(r[0]), toNs(r[1]));
  };
}

/**
 * The time axis (wall-clock ticks in the chosen zone) and the value axis
 * of a plot whose x is `toX(ns)`; shared by the stream view's plots and
 * the compare view's.
 */
export function timeAxes(toX: (ns: bigint) => number, toNs: (x: number) => bigint, range: () => [number, number], tz: () => TimeZoneMode): uPlot.Axis[] {
  return [
    timeAxis({ toNs, toX, xmin: () => range()[0], xmax: () => range()[1], tz }),
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


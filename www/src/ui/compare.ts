// The compare view: one stream name across every source that has it, in
// every open archive, on one wall-clock axis.
//
// Each source is placed by the engine's alignment (its clock observations,
// src/read/align.rs), plus a manual shift a person may add when the
// alignment is doubtful; the doubts are said next to the legend, in the
// engine's words. Values are read with `readRange`, as the stream view
// reads them: one point per pixel at most, a min/max envelope per bucket,
// counters as per-second rates with resets taken as the engine takes them.
// Up to six sources are overlaid, one colour each; past that, small
// multiples: a row per source on one time axis and one y-scale.
//
// The plots join the page's sync bus (sync.ts): the cursor moved here
// moves every other plot of the page and of its sync group, and a window
// chosen here is the group's window (the axis is wall-clock time, which is
// each archive's own ts up to its clock offset).
//
// Three ways to look: the overlay (or small multiples), the fleet strip
// (fleet.ts) and the time-shift comparison of one source (shift.ts). The
// view says where it is in `data-state` ("reading", "drawn", "failed",
// "empty"), counting the answers drawn in `data-drawn`; what it drew is on
// its element as `dendroCompare`, for tests and embedders.

import uPlot from "uplot";
import type { ColumnSchema, Engine, RangeEnvelope } from "../engine/types";
import { clear, debounce, fileText, h, replace, setText } from "./dom";
import { explain } from "./errors";
import { FleetStrip } from "./fleet";
import type { TimeZoneMode } from "./format";
import type { OpenArchive } from "./archives";
import { align, gather, type Member, wallSpan } from "./members";
import { isNumericType } from "./model";
import { formatValue, gapsAsNull, PALETTE, selectToWindow, timeAxes } from "./plots";
import { ShiftCompare } from "./shift";
import { busOf, type SyncBus } from "./sync";
import { syncPlugin } from "./syncplot";
import { markedCounter } from "./stream";

export interface CompareHost {
  engine: Engine;
  archives(): readonly OpenArchive[];
  tz(): TimeZoneMode;
  /** Opens a source's stream view over a window of its own timestamps. */
  openStream(archive: OpenArchive, source: number, stream: string, from: bigint, to: bigint): void;
  close(): void;
  /** The view's state changed (columns, window, shifts, mode): the URL may follow. */
  changed(): void;
}

export type CompareMode = "overlay" | "strip" | "shift";

export interface CompareInit {
  columns?: string[] | undefined;
  from?: bigint | undefined;
  to?: bigint | undefined;
  mode?: CompareMode | undefined;
  /** Manual shifts by member key, ns. */
  shifts?: Map<string, bigint> | undefined;
  /** The time shift's B = A − shift, ns (the URL's `shift`). */
  shift?: bigint | undefined;
}

/** Past this many sources, one row each instead of one overlay. */
export const OVERLAY_MAX = 6;

/** One member's series of one column as drawn (wall = ts + offset). */
export interface DrawnMember {
  key: string;
  label: string;
  /** The member's own timestamps of each point. */
  ts: BigInt64Array;
  /** Added to ts to place it on the shared axis: the alignment's offset plus the manual shift. */
  offset: bigint;
  min: Float64Array;
  max: Float64Array;
  as: "rate" | "raw";
  reduced: boolean;
}

/** What the view last drew, on its element as `dendroCompare`. */
export interface DrawnCompare {
  layout: "overlay" | "rows";
  /** Bands from footer statistics, drawn while the exact envelopes are read. */
  preview: boolean;
  from: bigint;
  to: bigint;
  columns: Record<string, DrawnMember[]>;
}

/** Colours past the plots' palette, so that up to sixteen sources differ. */
const MORE = ["#db2777", "#0891b2", "#65a30d", "#9333ea", "#ea580c", "#475569", "#b45309", "#15803d"];
const COLOURS = [...PALETTE, ...MORE];

export function colourOf(i: number): string {
  return COLOURS[i % COLOURS.length]!;
}

export class CompareView {
  readonly el: HTMLElement;
  members: Member[] = [];
  private notes: string[] = [];
  private schema: ColumnSchema[] = [];
  private selected: string[] = [];
  private readonly hidden = new Set<string>();
  /** Counters a person asked to see raw (their running totals) rather than as rates. */
  private readonly raw = new Set<string>();
  private readonly shifts: Map<string, bigint>;
  mode: CompareMode;
  /** The time shift: B = A − shiftBy, of member shiftMember. */
  private shiftByNs: bigint;
  shiftMember: string | null = null;
  from = 0n;
  to = 1n;
  private full: [bigint, bigint] = [0n, 1n];
  private readonly status: HTMLElement;
  private readonly legend: HTMLElement;
  private readonly noteBox: HTMLElement;
  private readonly columnBox: HTMLElement;
  private readonly body: HTMLElement;
  private readonly modeBtns: Record<CompareMode, HTMLButtonElement>;
  private plots: uPlot[] = [];
  private token = 0;
  private gen = 0;
  private inflight: AbortController | null = null;
  private strip: FleetStrip | null = null;
  private shiftView: ShiftCompare | null = null;
  private destroyed = false;
  private readonly refetch = debounce(() => void this.draw(), 150);
  private bus: SyncBus | null = null;
  private stopBus: (() => void) | null = null;

  constructor(
    private readonly host: CompareHost,
    readonly stream: string,
    private readonly init0: CompareInit = {},
  ) {
    this.mode = init0.mode ?? (init0.shift !== undefined ? "shift" : "overlay");
    this.shiftByNs = init0.shift ?? 86_400_000_000_000n;
    this.shifts = new Map(init0.shifts ?? []);
    const modeBtn = (m: CompareMode, text: string) =>
      h("button", { type: "button", class: "dv-seg-btn", data: { mode: m }, on: { click: () => this.setMode(m) } }, text);
    this.modeBtns = { overlay: modeBtn("overlay", "Overlay"), strip: modeBtn("strip", "Fleet strip"), shift: modeBtn("shift", "Time shift") };
    this.status = h("div", { class: "dv-plot-status", data: { testid: "compare-status" } }, "Gathering sources…");
    this.legend = h("div", { class: "dv-compare-legend", data: { testid: "compare-legend" } });
    this.noteBox = h("div", { class: "dv-compare-notes", data: { testid: "compare-notes" } });
    this.columnBox = h("div", { class: "dv-compare-columns", data: { testid: "compare-columns" } });
    this.body = h("div", { class: "dv-compare-body" });
    this.el = h(
      "section",
      { class: "dv-panel dv-compare", data: { testid: "compare-view", stream, state: "reading" } },
      h(
        "div",
        { class: "dv-panel-head" },
        h("h2", { class: "dv-stream-title" }, "Compare ", h("span", { class: "dv-stream-name" }, fileText(stream, { max: 80 })), " across sources"),
        h("span", { class: "dv-spacer" }),
        h("span", { class: "dv-seg-group", role: "group", "aria-label": "Compare how" }, this.modeBtns.overlay, this.modeBtns.strip, this.modeBtns.shift),
        h("button", { type: "button", class: "dv-btn", data: { action: "fit-compare" }, on: { click: () => this.setWindow(...this.full) } }, "Fit all"),
        h("button", { type: "button", class: "dv-btn", "aria-label": "close the comparison", data: { action: "close-compare" }, on: { click: () => this.host.close() } }, "×"),
      ),
      this.noteBox,
      this.columnBox,
      this.status,
      h("div", { class: "dv-compare-grid" }, this.legend, this.body),
    );
    this.paintMode();
  }

  /** Gathers, aligns and draws; settles once the first drawing is done (or failed). Call once the view is in the page. */
  async init(): Promise<void> {
    this.bus = busOf(this.el);
    this.stopBus = this.bus?.onWindow((a, b, by) => by !== this && this.applyWindow(a, b)) ?? null;
    const found = gather(this.host.archives(), this.stream);
    this.members = found.members;
    this.notes = found.notes;
    if (this.members.length === 0) {
      this.notes.unshift(`No open archive has a stream named “${this.stream}”: nothing to compare.`);
      this.paintNotes();
      this.finish("empty", "Nothing to compare.");
      return;
    }
    try {
      await align(this.host.engine, this.members);
      const first = this.members[0]!;
      this.schema = (await first.archive.handle.schema(first.source.id, this.stream)).columns;
    } catch (e) {
      this.fail(e);
      return;
    }
    if (this.destroyed) return;
    if (this.members.length === 1) this.notes.push("Only one source has this stream: nothing to overlay it with, but its fleet strip and time shift still work.");
    const numeric = this.numeric();
    const wanted = (this.init0.columns ?? []).filter((c) => numeric.includes(c));
    this.selected = wanted.length > 0 ? wanted : numeric.slice(0, 1);
    this.full = wallSpan(this.members, (m) => this.shiftOf(m)) ?? [0n, 1n];
    if (this.full[1] <= this.full[0]) this.full = [this.full[0], this.full[0] + 1_000_000_000n];
    const [a, b] = [this.init0.from, this.init0.to];
    [this.from, this.to] = a !== undefined && b !== undefined && b > a ? [a, b] : this.full;
    this.paintNotes();
    this.paintColumns();
    this.paintLegend();
    await this.draw();
  }

  destroy(): void {
    this.destroyed = true;
    this.stopBus?.();
    this.inflight?.abort();
    for (const p of this.plots) p.destroy();
    this.strip?.destroy();
    this.shiftView?.destroy();
  }

  columns(): string[] {
    return this.selected;
  }

  /** The manual shift added to a member's alignment, ns. */
  shiftOf(m: Member): bigint {
    return this.shifts.get(m.key) ?? 0n;
  }

  /** Manual shifts that are not zero, by member key (for the URL). */
  manualShifts(): Map<string, bigint> {
    return new Map([...this.shifts].filter(([, v]) => v !== 0n));
  }

  /** Where a member's own ts lands on the shared axis. */
  offsetOf(m: Member): bigint {
    return (m.alignment?.offset_ns ?? 0n) + this.shiftOf(m);
  }

  get shiftBy(): bigint {
    return this.shiftByNs;
  }

  set shiftBy(ns: bigint) {
    this.shiftByNs = ns;
    this.host.changed();
  }

  /** Opens a source's stream view over the window shown here, in its own timestamps. */
  openMember(m: Member): void {
    const off = this.offsetOf(m);
    this.host.openStream(m.archive, m.source.id, this.stream, this.from - off, this.to - off);
  }

  /** A window chosen here: the page's other plots follow. */
  setWindow(from: bigint, to: bigint): void {
    if (to <= from) return;
    this.bus?.setWindow(from, to, this);
    this.applyWindow(from, to);
  }

  private applyWindow(from: bigint, to: bigint): void {
    if (to <= from || this.members.length === 0) return;
    this.from = from;
    this.to = to;
    this.host.changed();
    this.refetch();
  }

  setMode(mode: CompareMode): void {
    if (mode === this.mode) return;
    this.mode = mode;
    this.paintMode();
    this.host.changed();
    void this.draw();
  }

  private paintMode(): void {
    for (const [m, b] of Object.entries(this.modeBtns)) b.classList.toggle("dv-on", m === this.mode);
    this.el.dataset["mode"] = this.mode;
  }

  private numeric(): string[] {
    return this.schema.filter((c) => c.name !== "ts" && isNumericType(c.type) && !/^Timestamp/.test(c.type)).map((c) => c.name);
  }

  /** Counters read as per-second rates, by the field metadata as the stream view reads it. */
  rates(columns: string[]): string[] {
    return columns.filter((c) => this.isCounter(c) && !this.raw.has(c));
  }

  private isCounter(c: string): boolean {
    const col = this.schema.find((s) => s.name === c);
    return !!col && markedCounter(col.metadata);
  }

  /** A person switched counter `name` between its rate per second and its raw running total, as in the stream view. */
  showRaw(name: string, raw: boolean): void {
    if (raw) this.raw.add(name);
    else this.raw.delete(name);
    this.paintColumns();
    void this.draw();
  }

  private paintNotes(): void {
    replace(
      this.noteBox,
      this.notes.map((n) => h("p", { class: "dv-compare-note", data: { testid: "compare-note" } }, fileText(n, { max: 400 }))),
    );
  }

  private paintColumns(): void {
    const numeric = this.numeric();
    if (numeric.length === 0) {
      replace(this.columnBox, h("span", { class: "dv-muted" }, "This stream has no numeric column to compare."));
      return;
    }
    replace(
      this.columnBox,
      h("span", { class: "dv-muted" }, "Columns: "),
      numeric.slice(0, 200).map((c) =>
        h(
          "label",
          { class: "dv-chip dv-chip-sm" },
          h("input", {
            type: "checkbox",
            checked: this.selected.includes(c),
            data: { column: c },
            on: {
              change: (e: Event) => {
                const on = (e.target as HTMLInputElement).checked;
                this.selected = on ? [...this.selected, c] : this.selected.filter((s) => s !== c);
                this.host.changed();
                void this.draw();
              },
            },
          }),
          fileText(c, { max: 40 }),
          this.rates([c]).length > 0 ? h("span", { class: "dv-muted" }, " /s") : null,
        ),
      ),
    );
  }

  /**
   * The legend: one compact line per source (show/hide, its colour, its
   * name: the archive and the labels that tell it apart), the alignment's
   * doubts in words under it, and a manual shift behind a small button
   * (open at once where the alignment is doubtful or a shift is set), so
   * that thirty-two sources fit beside the plot in a box of their own.
   */
  private paintLegend(): void {
    replace(
      this.legend,
      this.members.map((m, i) => {
        const doubts = m.alignment?.doubts ?? [];
        const shiftInput = h("input", {
          type: "number",
          step: "any",
          class: "dv-shift-input",
          value: String(Number(this.shiftOf(m)) / 1e9),
          title: "Seconds added to this source's place on the time axis, on top of its clock alignment",
          "aria-label": `manual shift of ${m.label} in seconds`,
          data: { testid: "shift-input" },
          on: {
            change: (e: Event) => {
              const v = Number((e.target as HTMLInputElement).value);
              if (!Number.isFinite(v) || Math.abs(v) > 1e9) return;
              this.shifts.set(m.key, BigInt(Math.round(v * 1e9)));
              this.host.changed();
              void this.draw();
            },
          },
        });
        const shiftBox = h("label", { class: "dv-legend-shift dv-muted", hidden: doubts.length === 0 && this.shiftOf(m) === 0n }, "shift ", shiftInput, " s");
        return h(
          "div",
          { class: "dv-legend-row", data: { testid: "legend-entry", member: m.key, doubtful: String(doubts.length > 0) } },
          h(
            "div",
            { class: "dv-legend-line" },
            h(
              "label",
              { class: "dv-legend-name", title: m.label },
              h("input", {
                type: "checkbox",
                checked: !this.hidden.has(m.key),
                "aria-label": `show ${m.label}`,
                data: { testid: "series-toggle" },
                on: {
                  change: (e: Event) => {
                    if ((e.target as HTMLInputElement).checked) this.hidden.delete(m.key);
                    else this.hidden.add(m.key);
                    void this.draw();
                  },
                },
              }),
              h("span", { class: "dv-swatch", style: { background: colourOf(i) } }),
              h("span", { class: "dv-legend-text", data: { testid: "legend-label" } }, fileText(m.label, { max: 160, more: false })),
            ),
            h(
              "button",
              {
                type: "button",
                class: "dv-legend-shift-btn",
                title: "Shift this source on the time axis by hand",
                "aria-label": `shift ${m.label} by hand`,
                data: { testid: "shift-toggle" },
                on: { click: () => (shiftBox.hidden = !shiftBox.hidden) },
              },
              "⇆",
            ),
          ),
          doubts.map((d) => h("div", { class: "dv-legend-doubt", data: { testid: "alignment-doubt", kind: d.kind } }, "⚠ ", fileText(d.words, { max: 300 }))),
          shiftBox,
        );
      }),
    );
  }

  private finish(state: string, text: string | null): void {
    this.el.dataset["state"] = state;
    if (text !== null) setText(this.status, text);
    // An empty answer is an answer too: a test or embedder waiting for one stops waiting.
    if (state === "drawn" || state === "empty") this.el.dataset["drawn"] = String(++this.gen);
  }

  private fail(e: unknown): void {
    const x = explain(e, this.stream);
    this.el.dataset["state"] = "failed";
    replace(this.status, h("span", { class: "dv-error-inline" }, `${x.title}: `, fileText(x.message, { max: 300, more: false })));
  }

  private width(): number {
    return Math.max(240, Math.floor((this.body.clientWidth || 800) - 8));
  }

  /** Draws the current mode over the current window. */
  private async draw(): Promise<void> {
    if (this.destroyed || this.members.length === 0) return;
    const token = ++this.token;
    this.inflight?.abort();
    this.el.dataset["state"] = "reading";
    setText(this.status, "Reading…");
    for (const p of this.plots) p.destroy();
    this.plots = [];
    this.strip?.destroy();
    this.strip = null;
    this.shiftView?.destroy();
    this.shiftView = null;
    if (this.selected.length === 0) {
      clear(this.body);
      this.finish("empty", "No column chosen.");
      return;
    }
    if (this.mode === "strip") {
      this.strip = new FleetStrip(this, this.selected[0]!, this.width());
      replace(this.body, this.strip.el);
      await this.settle(token, this.strip.draw());
      return;
    }
    if (this.mode === "shift") {
      this.shiftView = new ShiftCompare(this, this.host.engine, this.selected[0]!, this.width(), this.host.tz);
      replace(this.body, this.shiftView.el);
      await this.settle(token, this.shiftView.draw());
      return;
    }
    const inflight = new AbortController();
    this.inflight = inflight;
    const shown = this.members.filter((m) => !this.hidden.has(m.key));
    const maxPoints = Math.max(100, this.width());
    // First from the footers' statistics, every source at once (a few
    // footer reads each, nothing decoded), said to be a preview; then the
    // exact envelopes, drawn in its place.
    // (Sent in this order: the worker answers in the order asked.)
    const previewing = Promise.all(shown.map((m) => this.preview(m, this.selected, maxPoints, inflight.signal).catch(() => null)));
    const exact = Promise.all(shown.map((m) => this.read(m, this.selected, maxPoints, inflight.signal)));
    exact.catch(() => {});
    const previews = await previewing;
    if (token !== this.token || this.destroyed) return;
    if (previews.some((p) => p !== null)) {
      this.paintOverlay(shown, previews, true);
      this.previewed(
        `${shown.length} of ${this.members.length} sources · a preview from the segments' footer statistics: each band holds the exact values; reading them exactly…`,
      );
    }
    let envs: RangeEnvelope[];
    try {
      envs = await exact;
    } catch (e) {
      if (token === this.token) this.fail(e);
      return;
    }
    if (token !== this.token || this.destroyed) return;
    const drawn = this.paintOverlay(shown, envs, false);
    const rows = envs.reduce((n, e) => n + e.rows_in_window, 0);
    const approx = envs.some((e) => e.segments_left_out > 0);
    this.finish(
      "drawn",
      `${shown.length} of ${this.members.length} sources · ${rows.toLocaleString("en-US")} rows in this window` +
        (drawn.layout === "rows" ? " · one row per source (more than six), shared time axis and y-scale" : "") +
        (approx ? " · approximate: some segments not read, zoom in for the exact envelope" : ""),
    );
  }

  /** Draws the overlay (or rows) of `envs`, one per source shown (null: nothing yet); a preview's are bands from footer statistics. */
  private paintOverlay(shown: Member[], envs: (RangeEnvelope | null)[], preview: boolean): DrawnCompare {
    for (const p of this.plots) p.destroy();
    this.plots = [];
    const rates = new Set(this.rates(this.selected));
    const drawn: DrawnCompare = { layout: shown.length > OVERLAY_MAX ? "rows" : "overlay", from: this.from, to: this.to, preview, columns: {} };
    for (const col of this.selected) {
      drawn.columns[col] = shown.map((m, i) => {
        const env = envs[i];
        const c = env?.columns.find((x) => x.name === col);
        const n = env?.ts.length ?? 0;
        return {
          key: m.key,
          label: m.label,
          ts: env?.ts ?? new BigInt64Array(0),
          offset: this.offsetOf(m),
          min: c?.min ?? new Float64Array(n).fill(NaN),
          max: c?.max ?? new Float64Array(n).fill(NaN),
          as: rates.has(col) ? "rate" : "raw",
          reduced: env?.reduced ?? true,
        };
      });
    }
    (this.el as HTMLElement & { dendroCompare?: DrawnCompare }).dendroCompare = drawn;
    replace(
      this.body,
      this.selected.map((col) => this.plotColumn(col, drawn.columns[col]!, shown)),
    );
    return drawn;
  }

  private async settle(token: number, drawing: Promise<string>): Promise<void> {
    try {
      const text = await drawing;
      if (token === this.token && !this.destroyed) this.finish("drawn", text);
    } catch (e) {
      if (token === this.token) this.fail(e);
    }
  }

  /** A member's window of `columns`, read over its own timestamps. */
  read(m: Member, columns: string[], maxPoints: number, signal?: AbortSignal, from = this.from, to = this.to): Promise<RangeEnvelope> {
    const off = this.offsetOf(m);
    return m.archive.handle.readRange(m.source.id, this.stream, from - off, to - off, {
      columns,
      maxPoints,
      rates: this.rates(columns),
      ...(signal ? { signal } : {}),
    });
  }

  /** The footer-statistics preview of what `read` answers over the view's window (null: none). */
  preview(m: Member, columns: string[], maxPoints: number, signal?: AbortSignal): Promise<RangeEnvelope | null> {
    const off = this.offsetOf(m);
    return m.archive.handle.previewRange(m.source.id, this.stream, this.from - off, this.to - off, {
      columns,
      maxPoints,
      rates: this.rates(columns),
      ...(signal ? { signal } : {}),
    });
  }

  /** A drawing is up as a preview while the exact answers are read: said in the status line and `data-state`. */
  previewed(text: string): void {
    if (this.destroyed) return;
    this.el.dataset["state"] = "preview";
    setText(this.status, text);
  }

  /** One column: an overlay of every source shown, or a row per source past six. */
  private plotColumn(col: string, series: DrawnMember[], shown: Member[]): HTMLElement {
    const origin = this.from;
    const toX = (ns: bigint) => Number(ns - origin) / 1e9;
    const toNs = (x: number) => origin + BigInt(Math.round(x * 1e9));
    const range = (): [number, number] => [toX(this.from), toX(this.to)];
    const xs = (s: DrawnMember) => Float64Array.from(s.ts, (t) => toX(t + s.offset));
    const rate = series[0]?.as === "rate";
    // The stream view's switch, the same words: a counter as its rate or its running total.
    const rateBtn = this.isCounter(col)
      ? h(
          "button",
          {
            type: "button",
            class: "dv-btn dv-btn-xs",
            data: { testid: "rate-toggle", mode: rate ? "rate" : "raw" },
            title: rate ? "A counter, plotted as its increase per second (a fall is a reset). Click for the raw running total." : "A counter, plotted as its raw running total. Click for its rate per second.",
            on: { click: () => this.showRaw(col, rate) },
          },
          rate ? "rate /s" : "raw total",
        )
      : null;
    const box = h("div", { class: "dv-compare-column", data: { testid: "compare-plot", column: col } }, h("div", { class: "dv-plot-head" }, fileText(col, { max: 80 }), " ", rateBtn));
    const colourAt = (s: DrawnMember) => colourOf(this.members.findIndex((m) => m.key === s.key));
    const opts = (height: number, ser: uPlot.Series[], bands: uPlot.Band[], y?: [number, number]): uPlot.Options => ({
      width: this.width(),
      height,
      legend: { show: false },
      padding: [6, 12, 0, 4],
      cursor: { sync: { key: `dendro-compare-${this.stream}` }, drag: { x: true, y: false, setScale: false } },
      scales: { x: { time: false, range }, y: y ? { range: () => y } : {} },
      axes: timeAxes(toX, toNs, range, this.host.tz),
      series: [{}, ...ser],
      bands,
      // The first plot drawn follows the bus for all (uPlot's own sync carries the rest).
      plugins: [syncPlugin(box, toNs, toX, ((lead) => () => lead)(this.plots.length === 0))],
      hooks: { setSelect: [selectToWindow(toNs, (a, b) => this.setWindow(a, b))] },
    });
    const pair = (s: DrawnMember): uPlot.Series[] => [
      { label: `${s.label} max`, stroke: colourAt(s), width: 1.25, value: (_u, v) => formatValue(v) },
      { label: `${s.label} min`, stroke: colourAt(s), width: 1.25 },
    ];
    if (series.length <= OVERLAY_MAX) {
      const tables = series.map((s) => [xs(s), gapsAsNull(s.max), gapsAsNull(s.min)] as uPlot.AlignedData);
      const data = tables.length > 0 ? uPlot.join(tables, tables.map(() => [1, 1])) : ([[]] as uPlot.AlignedData);
      const bands = series.map((s, i): uPlot.Band => ({ series: [1 + 2 * i, 2 + 2 * i], fill: colourAt(s) + "26" }));
      const target = h("div", { class: "dv-plot" });
      box.appendChild(target);
      this.plots.push(new uPlot(opts(220, series.flatMap(pair), bands), data, target));
      return box;
    }
    // Small multiples: one shared y-scale over every source's values.
    let lo = Infinity;
    let hi = -Infinity;
    for (const s of series) {
      for (const v of s.min) if (v < lo) lo = v;
      for (const v of s.max) if (v > hi) hi = v;
    }
    const y: [number, number] = Number.isFinite(lo) && Number.isFinite(hi) ? (lo === hi ? [lo - 1, hi + 1] : [lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05]) : [0, 1];
    series.forEach((s, i) => {
      const target = h("div", { class: "dv-plot dv-compare-row", data: { testid: "compare-row", member: s.key } }, h("div", { class: "dv-compare-row-name" }, fileText(shown[i]!.label, { max: 120, more: false })));
      box.appendChild(target);
      const data: uPlot.AlignedData = [xs(s), gapsAsNull(s.max), gapsAsNull(s.min)];
      // One time axis for all, under the last row (the rows share it); past
      // a dozen rows, lower ones: thirty-two sources in less than two screens.
      const last = i === series.length - 1;
      const o = opts((series.length > 12 ? 30 : 48) + (last ? 40 : 0), pair(s), [{ series: [1, 2], fill: colourAt(s) + "26" }], y);
      if (!last) o.axes = o.axes!.map((a, k) => (k === 0 ? { ...a, show: false } : a));
      this.plots.push(new uPlot(o, data, target));
    });
    return box;
  }
}

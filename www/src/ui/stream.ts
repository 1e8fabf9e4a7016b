// The stream view: schema, plots of numeric columns, the rows of a segment,
// the live tail, and caller rows stored under the stream's name.

import type { ArchiveHandle, CallerRow, DecodedColumn, SourceInfo, StreamInfo, StreamSchema } from "../engine/types";
import { type Child, copyButton, debounce, fileText, h, replace, setText } from "./dom";
import { explain } from "./errors";
import { I64_MAX, I64_MIN, bytes, count, span as fmtSpan, type TimeZoneMode } from "./format";
import { isNumericType, sameLane, sameSegments, streamSpan } from "./model";
import type { Dialog } from "./overlay";
import { PlotGroup } from "./plots";
import type { DerivedSpec } from "./derived";
import { derivedForm, parseDerived } from "./derivedform";
import { HeatmapPlot } from "./heatmap";
import { REGION_MODIFIER, RegionPanel } from "./region";
import { readHeatmap, readRegion } from "./distributions";
import { blobCell, callerRowCell, callerRowColumns, cellRenderer, previewBlob, vcolumn } from "./values";
import { VirtualTable } from "./vtable";
import type { NoteMark } from "./notes";

export interface StreamHost {
  handle: ArchiveHandle;
  origin: bigint;
  dialog: Dialog;
  tz(): TimeZoneMode;
  window(): [bigint, bigint];
  fullWindow(): [bigint, bigint];
  onWindow(from: bigint, to: bigint): void;
  onColumns(columns: string[]): void;
  /** Open the stream before (-1) or after (+1) this one; null when there is none. */
  step(dir: -1 | 1): void;
  /** Compare this stream name across every source of every open archive (absent: no such button). */
  compare?(name: string): void;
  /** A stream's schema (one asked for ahead, as the archive opened, where it is that stream's). */
  schema(source: number, stream: string): Promise<StreamSchema>;
  /** The notes of `source` (annotate.ts), marked on every plot. */
  notes?(source: number): NoteMark[];
}

/** Field metadata the self-describing encoder (and the demo) write for a counter. */
export const KIND_KEY = "dendro.kind";

/** Whether a column's field metadata marks it as a counter (a running total). */
export function markedCounter(metadata: Record<string, string>): boolean {
  return metadata[KIND_KEY] === "counter";
}

const DEFAULT_PLOTS = 8;
/** Schema rows built at first on a wide stream. */
const SCHEMA_ROWS = 60;

export class StreamView {
  readonly el: HTMLElement;
  private plots: PlotGroup | null = null;
  private schema: StreamSchema | null = null;
  private selected: string[] = [];
  private readonly schemaBox: HTMLElement;
  private readonly plotBox: HTMLElement;
  private readonly rowsBox: HTMLElement;
  private readonly callerBox: HTMLElement;
  /** The seq whose rows are shown, "live" for the live tail, null for none yet. */
  private rowsSeq: number | "live" | null = null;
  private destroyed = false;
  /** Columns a person marked (true) or unmarked (false) as counters, over the metadata's word. */
  private readonly marks = new Map<string, boolean>();
  /** Counters a person chose to see raw rather than as rates. */
  private readonly raw = new Set<string>();
  private readonly liveBox: HTMLElement;
  private readonly stats: HTMLElement;
  /** Bumped by every rows render, so a slower earlier one never overwrites a later one. */
  private rowsToken = 0;
  /** Whether the engine reads this stream's live tail (the source's encoder is the self-describing one). */
  private readonly liveReadable: boolean;
  /** Derived series typed by a person (or from the URL), plotted after the columns. */
  private derived: DerivedSpec[] = [];
  /** Histogram columns drawn as heatmaps, and their plots. */
  private heatSelected: string[] = [];
  private heatmaps: HeatmapPlot[] = [];
  private readonly heatBox: HTMLElement;
  private readonly region: RegionPanel;

  constructor(
    private readonly host: StreamHost,
    public source: SourceInfo,
    public stream: StreamInfo,
    private readonly wantColumns: string[] | undefined,
    private readonly wantSeq: number | undefined,
    private readonly wantExprs: string[] = [],
  ) {
    const st = stream;
    const span = streamSpan(st);
    const tz = host.tz();
    this.liveReadable = source.live_readable;
    const stats = h("div", { class: "dv-stream-stats", data: { testid: "stream-stats" } });
    this.stats = stats;
    paintStats(stats, st, tz);
    this.schemaBox = h("div", { class: "dv-schema", data: { testid: "schema" } }, h("div", { class: "dv-muted" }, "Reading schema…"));
    this.plotBox = h("div", { class: "dv-plot-area" });
    this.rowsBox = h("div", { class: "dv-rows", data: { testid: "rows" } });
    this.callerBox = h("div", { class: "dv-caller", data: { testid: "caller-rows" } });
    this.heatBox = h("div", { class: "dv-heatmaps", data: { testid: "heatmaps" } });
    this.region = new RegionPanel({
      read: (from, to, signal) => readRegion(this.host.handle, this.source.id, this.stream.name, from, to, this.regionSeries(), signal),
      tz: () => this.host.tz(),
      cleared: () => this.redrawPlots(),
      unsummarised: () => this.exprs(),
    });

    const labels = Object.entries(source.labels)
      .slice(0, 6)
      .map(([k, v]) => h("span", { class: "dv-chip dv-chip-sm" }, fileText(k, { max: 24 }), "=", fileText(v, { max: 40 })));
    this.el = h(
      "section",
      { class: "dv-panel dv-stream", data: { testid: "stream-view", source: source.id, stream: st.name } },
      h(
        "div",
        { class: "dv-panel-head" },
        h("h2", { tabindex: "-1", class: "dv-stream-title", data: { testid: "stream-title" } }, "Stream ", h("span", { class: "dv-stream-name" }, fileText(st.name, { max: 80 }))),
        h("span", { class: "dv-muted" }, `source ${source.id}`),
        labels,
        h("span", { class: "dv-spacer" }),
        h(
          "button",
          {
            type: "button",
            class: "dv-btn",
            title: "The stream before this one (k or [)",
            "aria-label": "previous stream",
            data: { action: "prev-stream" },
            on: { click: () => this.host.step(-1) },
          },
          "◀",
        ),
        h(
          "button",
          {
            type: "button",
            class: "dv-btn",
            title: "The stream after this one (j or ])",
            "aria-label": "next stream",
            data: { action: "next-stream" },
            on: { click: () => this.host.step(1) },
          },
          "▶",
        ),
        host.compare
          ? h(
              "button",
              {
                type: "button",
                class: "dv-btn",
                title: "Overlay this stream of every source of every open archive on one wall-clock axis",
                data: { action: "compare-stream", testid: "compare-button" },
                on: { click: () => this.host.compare?.(st.name) },
              },
              "Compare across sources",
            )
          : null,
        span
          ? h(
              "button",
              {
                type: "button",
                class: "dv-btn",
                title: "Set the window to this stream's span",
                data: { action: "fit-stream" },
                on: { click: () => this.host.onWindow(...this.host.fullWindow()) },
              },
              "Fit stream",
            )
          : null,
      ),
      stats,
      (this.liveBox = h("div", { class: "dv-live-slot" }, st.live_rows > 0 ? liveNotice(st, this.liveReadable, tz) : null)),
      h("div", { class: "dv-stream-grid" }, this.schemaBox, this.plotBox),
      this.region.el,
      this.rowsBox,
      st.caller_rows > 0 ? this.callerBox : null,
    );
  }

  /** Settles once the first plot is drawn, or when there is nothing to plot. */
  firstPlot(): Promise<void> {
    return this.plots?.firstPlot ?? Promise.resolve();
  }

  /**
   * A newer description of this stream (the archive is followed): the
   * counts, the live notice, the plots and the rows shown follow it. The
   * plots keep their drawing until the new answer is drawn.
   */
  update(source: SourceInfo, stream: StreamInfo): void {
    const before = this.stream;
    this.source = source;
    this.stream = stream;
    const tz = this.host.tz();
    paintStats(this.stats, stream, tz);
    const notice = stream.live_rows > 0 ? liveNotice(stream, this.liveReadable, tz) : null;
    if (this.liveBox.textContent !== (notice?.textContent ?? "")) replace(this.liveBox, notice);
    // A seal and an eviction in one image can leave the counts as they
    // were: what changed is the segments themselves.
    if (sameLane(before, stream)) return;
    if (!this.schema) {
      // Nothing was readable before: start over now that something is.
      if (stream.segments.length > 0 || (this.liveReadable && stream.live_rows > 0)) void this.init();
      return;
    }
    this.plots?.refresh();
    for (const m of this.heatmaps) m.refresh();
    if (this.rowsSeq === "live") {
      // A seal moved the tail's rows into a segment: show that segment's.
      const last = stream.segments[stream.segments.length - 1];
      if (stream.live_rows === 0 && last) void this.renderRows(last.seq);
      else void this.renderRows("live", true);
    } else if (this.rowsSeq !== null) {
      const seq = this.rowsSeq;
      const was = before.segments.find((s) => s.seq === seq);
      const now = stream.segments.find((s) => s.seq === seq);
      if (!now) {
        // The segment shown was removed (retention): the first one in the window instead.
        const [a, b] = this.host.window();
        const next = stream.segments.find((s) => s.last_ts >= a && s.first_ts <= b) ?? stream.segments[stream.segments.length - 1];
        if (next) void this.renderRows(next.seq);
        else if (this.liveTabled()) void this.renderRows("live");
      } else if (!was || was.rows !== now.rows || was.first_ts !== now.first_ts || was.last_ts !== now.last_ts || was.bytes !== now.bytes) {
        // The same seq holds other rows now (a rewrite): read it again.
        void this.renderRows(seq);
      } else if (!sameSegments(before, stream)) {
        // Only the picker's list changed.
        void this.renderRows(seq, true);
      } else {
        // Only the live tail did: its entry in the picker says so.
        const opt = this.rowsBox.querySelector<HTMLOptionElement>('option[value="live"]');
        if (opt) setText(opt, this.liveOptionText(this.host.tz()));
        else if (this.liveTabled() !== (before.live_rows > 0 && before.live_span !== null)) void this.renderRows(seq, true);
      }
    }
  }

  /** Moves the keyboard's focus to this view's heading (without scrolling: the caller does that). */
  focus(): void {
    const title = this.el.querySelector<HTMLElement>(".dv-stream-title");
    title?.focus({ preventScroll: true });
  }

  async init(): Promise<void> {
    const st = this.stream;
    if (st.segments.length === 0 && !(this.liveReadable && st.live_rows > 0)) {
      replace(
        this.schemaBox,
        h("div", { class: "dv-muted" }, "No sealed segments, so no schema to read: every row of this stream is in the live tail."),
      );
      replace(
        this.plotBox,
        h(
          "div",
          { class: "dv-live-only", data: { testid: "live-only" } },
          h("span", { class: "dv-sw dv-sw-live dv-sw-big" }),
          h(
            "div",
            null,
            h("b", null, `${count(st.live_rows)} rows, all in the live tail`),
            h("div", null, "They are committed, but not readable without the writer's encoder; nothing is sealed yet to plot."),
          ),
        ),
      );
    } else {
      try {
        this.schema = await this.host.schema(this.source.id, st.name);
      } catch (e) {
        if (this.destroyed) return;
        const x = explain(e, st.name);
        replace(this.schemaBox, h("div", { class: "dv-error-inline" }, x.title, ": ", fileText(x.message, { max: 400 })));
        return;
      }
      if (this.destroyed) return;
      // The plots' readRange goes out first: the schema table (hundreds of
      // rows on a wide stream) is built while the engine answers.
      this.pickColumns();
      this.renderPlots();
      this.renderSchema();
      void this.renderRows(this.initialSeq());
    }
    if (st.caller_rows > 0) void this.renderCallerRows();
  }

  destroy(): void {
    this.destroyed = true;
    this.plots?.destroy();
    for (const m of this.heatmaps) m.destroy();
    this.region.destroy();
  }

  columns(): string[] {
    return [...this.heatSelected, ...this.selected];
  }

  /** The derived series plotted, as typed. */
  exprs(): string[] {
    return this.derived.map((d) => d.text);
  }

  setWindow(from: bigint, to: bigint): void {
    this.plots?.setWindow(from, to);
    for (const m of this.heatmaps) m.setWindow(from, to);
    this.followWindow(from, to);
  }

  /** The rows shown follow the window: a segment left outside it gives way to the first one inside. */
  private readonly followWindow = debounce((from: bigint, to: bigint) => {
    if (!this.schema || this.rowsSeq === null || this.rowsSeq === "live") return;
    const cur = this.stream.segments.find((s) => s.seq === this.rowsSeq);
    if (cur && cur.last_ts >= from && cur.first_ts <= to) return;
    const hit = this.stream.segments.find((s) => s.last_ts >= from && s.first_ts <= to);
    if (hit) void this.renderRows(hit.seq);
  }, 250);

  relabel(): void {
    this.plots?.relabel();
    paintStats(this.stats, this.stream, this.host.tz());
    if (this.rowsSeq !== null) void this.renderRows(this.rowsSeq);
  }

  /** Show the rows of one segment (the timeline calls this on a click). */
  showSegment(seq: number | "live"): void {
    if (this.schema) void this.renderRows(seq);
  }

  private numericColumns(): string[] {
    if (!this.schema) return [];
    return this.schema.columns.filter((c) => c.name !== this.schema?.ts_column && isNumericType(c.type)).map((c) => c.name);
  }

  /** Whether `name` is read as a counter: a person's mark, else the field metadata's. */
  isCounter(name: string): boolean {
    const mark = this.marks.get(name);
    if (mark !== undefined) return mark;
    const col = this.schema?.columns.find((c) => c.name === name);
    return !!col && markedCounter(col.metadata);
  }

  /** The plotted counters shown as per-second rates (all, unless a person asked for raw). */
  private rates(): string[] {
    return this.selected.filter((c) => this.isCounter(c) && !this.raw.has(c));
  }

  private counters(): Set<string> {
    return new Set(this.numericColumns().filter((c) => this.isCounter(c)));
  }

  /** A person marked or unmarked `name` as a counter. */
  markCounter(name: string, on: boolean): void {
    this.marks.set(name, on);
    this.pushRates();
  }

  /** A person switched a counter between its rate and its raw running total. */
  showRaw(name: string, raw: boolean): void {
    if (raw) this.raw.add(name);
    else this.raw.delete(name);
    this.pushRates();
  }

  private pushRates(): void {
    this.plots?.setCounters(this.counters(), this.rates());
    // Keep the schema table's boxes in step (a plot's toggle does not touch them).
    for (const box of this.schemaBox.querySelectorAll<HTMLInputElement>("input[data-counter]")) {
      box.checked = this.isCounter(box.dataset["counter"] ?? "");
    }
  }

  /** Histogram columns (the engine gives their buckets), drawn as heatmaps. */
  private histogramColumns(): string[] {
    return this.schema?.columns.filter((c) => c.histogram !== undefined).map((c) => c.name) ?? [];
  }

  private pickColumns(): void {
    const numeric = this.numericColumns();
    const hist = this.histogramColumns();
    const want = this.wantColumns?.filter((c) => numeric.includes(c));
    const wantHeat = this.wantColumns?.filter((c) => hist.includes(c));
    const asked = (want?.length ?? 0) + (wantHeat?.length ?? 0) > 0;
    this.selected = asked ? want! : numeric.slice(0, DEFAULT_PLOTS);
    // A stream of histograms shows its first one at once: the chart people come for.
    this.heatSelected = asked ? wantHeat! : hist.slice(0, 1);
  }

  /** The series a region's statistics cover: the plotted columns and heatmaps (derived series are evaluated in the page, not summarised by the engine). */
  private regionSeries(): string[] {
    return [...this.heatSelected, ...this.selected];
  }

  /** A Shift-drag marked [from, to]: its statistics, and its band on every plot. */
  private showRegion(from: bigint, to: bigint): void {
    // Synced plots each report the one drag.
    const cur = this.region.current();
    if (cur && cur[0] === from && cur[1] === to) return;
    void this.region.show(from, to);
    this.redrawPlots();
  }

  /** Draws the plots again as they are (the region or the notes shown changed). */
  redrawPlots(): void {
    this.plots?.redraw();
    for (const m of this.heatmaps) m.redraw();
  }

  private renderHeatmaps(): void {
    for (const m of this.heatmaps) m.destroy();
    const cols = this.schema?.columns ?? [];
    const [a, b] = this.host.window();
    this.heatmaps = this.heatSelected.map((name) => {
      const unit = cols.find((c) => c.name === name)?.histogram?.unit ?? undefined;
      const m = new HeatmapPlot(
        {
          origin: this.host.origin,
          tz: () => this.host.tz(),
          onWindow: (x, y) => this.host.onWindow(x, y),
          fullWindow: () => this.host.fullWindow(),
          onRegion: (x, y) => this.showRegion(x, y),
          region: () => this.region.current(),
          read: (column, from, to, n, signal) => readHeatmap(this.host.handle, this.source.id, this.stream.name, column, from, to, n, signal),
        },
        name,
        unit,
        () => Math.max(320, this.heatBox.clientWidth || 800),
      );
      return m;
    });
    replace(this.heatBox, this.heatmaps.map((m) => m.el));
    for (const m of this.heatmaps) m.setWindow(a, b);
  }

  private renderSchema(all = false): void {
    const schema = this.schema!;
    const numeric = this.numericColumns();
    // A wide stream's table starts with its first columns (and any plotted
    // one); the rest are built when asked for.
    const shown = all || schema.columns.length <= SCHEMA_ROWS ? schema.columns : schema.columns.filter((c, i) => i < SCHEMA_ROWS || this.selected.includes(c.name));
    const hidden = schema.columns.length - shown.length;
    const numericSet = new Set(numeric);
    const histSet = new Set(this.histogramColumns());
    const rows = shown.map((c) => {
      const plottable = numericSet.has(c.name);
      const box = plottable || histSet.has(c.name)
        ? h("input", {
            type: "checkbox",
            "aria-label": `plot ${c.name}`,
            data: { column: c.name },
            on: { change: (ev) => this.toggleColumn(c.name, (ev.target as HTMLInputElement).checked) },
          })
        : null;
      if (box) box.checked = this.selected.includes(c.name) || this.heatSelected.includes(c.name);
      const counterBox = plottable
        ? h("input", {
            type: "checkbox",
            "aria-label": `${c.name} is a counter`,
            title: "A counter is a running total: plotted as its rate per second",
            data: { counter: c.name },
            on: { change: (ev) => this.markCounter(c.name, (ev.target as HTMLInputElement).checked) },
          })
        : null;
      if (counterBox) counterBox.checked = this.isCounter(c.name);
      const meta = Object.entries(c.metadata);
      const row = h(
        "tr",
        { class: (plottable ? "" : "dv-muted-row") + (meta.length > 0 ? " dv-has-meta" : "") },
        h("td", { class: "dv-check" }, box),
        h(
          "td",
          { class: "dv-colname" },
          // Breaks only between the parts of a name (core0_|user_|ns), never inside one.
          fileText(c.name, { max: 60, what: "column name", words: true }),
          c.name === schema.ts_column ? h("span", { class: "dv-tag dv-tag-ts", title: "rows are ordered by this column" }, "ts") : null,
        ),
        h("td", { class: "dv-mono dv-type" }, c.type, c.nullable ? h("span", { class: "dv-muted" }, " null") : null),
        h("td", { class: "dv-check" }, counterBox),
      );
      if (meta.length === 0) return row;
      // The field's metadata on a line of its own under the column, as wide
      // as the table, wrapping rather than cut; a long value opens whole.
      return [
        row,
        h(
          "tr",
          { class: "dv-meta-row" + (plottable ? "" : " dv-muted-row") },
          h("td", null),
          h(
            "td",
            { class: "dv-meta", colspan: "3", data: { testid: "column-metadata" } },
            meta.slice(0, 6).map(([k, v]) => h("span", { class: "dv-meta-item" }, fileText(k, { max: 40, what: "metadata key" }), ": ", fileText(v, { max: 120, what: `metadata ${k.slice(0, 60)}` }))),
            meta.length > 6
              ? h(
                  "button",
                  {
                    type: "button",
                    class: "dv-btn dv-btn-quiet dv-btn-xs",
                    on: {
                      click: () =>
                        this.host.dialog.open(
                          "Field metadata",
                          h("p", null, "column ", fileText(c.name, { max: 200, what: "column name" })),
                          h(
                            "table",
                            { class: "dv-table dv-meta-table" },
                            h("tbody", null, meta.slice(0, 500).map(([k, v]) => h("tr", null, h("th", { class: "dv-meta-key" }, fileText(k, { max: 60, what: "metadata key" })), h("td", null, fileText(v, { max: 600, what: `metadata ${k.slice(0, 60)}` }))))),
                          ),
                        ),
                    },
                  },
                  `all ${count(meta.length)} keys`,
                )
              : null,
          ),
        ),
      ];
    });
    replace(
      this.schemaBox,
      h("div", { class: "dv-subhead" }, ...schemaHead(schema, this.stream.segments.length === 0)),
      h(
        "table",
        { class: "dv-table dv-schema-table" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            h("th", null, ""),
            h("th", null, "column"),
            h("th", null, "type"),
            h("th", { title: "Counters (running totals) are plotted as rates per second" }, "counter"),
          ),
        ),
        h("tbody", null, rows),
      ),
      hidden > 0
        ? h(
            "button",
            { type: "button", class: "dv-btn dv-schema-more", data: { testid: "schema-more" }, on: { click: () => this.renderSchema(true) } },
            `Show the other ${count(hidden)} columns`,
          )
        : null,
    );
  }

  private toggleColumn(name: string, on: boolean): void {
    const hist = this.histogramColumns();
    if (hist.includes(name)) {
      const set = new Set(this.heatSelected);
      if (on) set.add(name);
      else set.delete(name);
      this.heatSelected = hist.filter((c) => set.has(c));
      this.renderHeatmaps();
      this.host.onColumns(this.columns());
      return;
    }
    const numeric = this.numericColumns();
    const set = new Set(this.selected);
    if (on) set.add(name);
    else set.delete(name);
    this.selected = numeric.filter((c) => set.has(c));
    this.plots?.setCounters(this.counters(), this.rates());
    this.plots?.setColumns(this.selected);
    this.host.onColumns(this.columns());
  }

  private renderPlots(): void {
    const schema = this.schema!;
    if (this.numericColumns().length === 0 && this.histogramColumns().length === 0) {
      replace(this.plotBox, h("div", { class: "dv-muted dv-pad" }, "This stream has no numeric columns to plot; its rows are below."));
      return;
    }
    const host = this.host;
    this.plots = new PlotGroup(
      {
        get handle() {
          return host.handle;
        },
        source: this.source.id,
        stream: this.stream.name,
        origin: this.host.origin,
        tz: () => this.host.tz(),
        onWindow: (a, b) => this.host.onWindow(a, b),
        fullWindow: () => this.host.fullWindow(),
        onRaw: (name, raw) => this.showRaw(name, raw),
        onRemoveDerived: (text) => this.setDerived(this.derived.filter((d) => d.text !== text)),
        onRegion: (a, b) => this.showRegion(a, b),
        region: () => this.region.current(),
        notes: () => this.host.notes?.(this.source.id) ?? [],
      },
      schema.columns,
    );
    this.plots.setCounters(this.counters(), this.rates());
    const form = derivedForm(this.numericColumns(), this.wantExprs, (spec) => this.setDerived([...this.derived.filter((d) => d.text !== spec.text), spec]));
    this.derived = parseDerived(this.wantExprs, this.numericColumns());
    const help = h(
      "div",
      { class: "dv-muted dv-small dv-plot-help", data: { testid: "plot-help" } },
      `Drag across a plot to zoom; hold ${REGION_MODIFIER} while dragging for the statistics of that region (Esc clears); double-click for the whole stream.`,
    );
    // A stream of histograms alone has no columns to plot or derive from.
    const numeric = this.numericColumns().length > 0;
    form.hidden = !numeric;
    this.plots.el.hidden = !numeric;
    replace(this.plotBox, form, help, this.heatBox, this.plots.el);
    this.renderHeatmaps();
    const [a, b] = this.host.window();
    this.plots.setWindow(a, b);
    this.plots.setColumns(this.selected);
    if (this.derived.length > 0) this.plots.setDerived(this.derived);
  }

  private setDerived(specs: DerivedSpec[]): void {
    this.derived = specs;
    this.plots?.setDerived(specs);
    this.host.onColumns(this.columns());
  }

  private initialSeq(): number | "live" {
    const segs = this.stream.segments;
    if (segs.length === 0) return "live";
    if (this.wantSeq !== undefined && segs.some((s) => s.seq === this.wantSeq)) return this.wantSeq;
    const [a] = this.host.window();
    const hit = segs.find((s) => s.last_ts >= a);
    return (hit ?? segs[0]!).seq;
  }

  private async renderRows(seq: number | "live", quiet = false): Promise<void> {
    if (seq === "live") return this.renderLiveRows(quiet);
    if (quiet && this.rowsSeq === seq) {
      // Only the picker changed (a new segment): the rows shown stay.
      const picker = this.rowsBox.querySelector(".dv-subhead");
      if (picker) replace(picker as HTMLElement, "Rows", h("span", { class: "dv-muted" }, " of segment "), this.segmentPicker(seq, this.host.tz()));
      return;
    }
    const token = ++this.rowsToken;
    this.rowsSeq = seq;
    const st = this.stream;
    const tz = this.host.tz();
    const picker = this.segmentPicker(seq, tz);
    const body = h("div", { class: "dv-muted dv-pad" }, "Decoding…");
    const indexBox = h("div", { class: "dv-caller-index" });
    replace(
      this.rowsBox,
      h("div", { class: "dv-subhead" }, "Rows", h("span", { class: "dv-muted" }, " of segment "), picker),
      indexBox,
      body,
    );
    const seg = st.segments.find((s) => s.seq === seq);
    if (seg?.caller_index) void this.renderCallerIndex(seq, indexBox);
    try {
      const batch = await this.host.handle.readSegment(this.source.id, st.name, seq);
      if (this.destroyed || this.rowsToken !== token) return;
      const tsName = this.schema?.ts_column ?? null;
      const table = this.rowsTable(batch.columns, batch.rows, tsName);
      replace(body, table.el);
      body.className = "";
    } catch (e) {
      this.rowsFailed(body, token, e, st.name);
    }
  }

  /** Decoded columns as a scrolling table, the time column shown as instants. */
  private rowsTable(columns: DecodedColumn[], rows: number, tsName: string | null): VirtualTable {
    const cols = columns.map((c) => vcolumn(c, c.name === tsName));
    const renderers = columns.map((c) => cellRenderer(c, c.name === tsName, () => this.host.tz()));
    return new VirtualTable(cols, rows, (r, c) => renderers[c]?.(r) ?? "");
  }

  /** Rows that could not be read say why in the table's place, unless a newer request took it. */
  private rowsFailed(body: HTMLElement, token: number, e: unknown, stream: string): void {
    if (this.destroyed || this.rowsToken !== token) return;
    const x = explain(e, stream);
    replace(body, h("div", { class: "dv-error-inline" }, x.title, ": ", fileText(x.message, { max: 400 })));
  }

  /** Whether the live tail is offered in the rows table, after the last segment. */
  private liveTabled(): boolean {
    return this.liveReadable && this.stream.live_rows > 0 && this.stream.live_span !== null;
  }

  /**
   * The live tail's rows, read through the engine as it reads them for the
   * plots (every row of the tail's span, numeric columns), tabled after the
   * last sealed segment's.
   */
  private async renderLiveRows(quiet = false): Promise<void> {
    const token = ++this.rowsToken;
    this.rowsSeq = "live";
    const st = this.stream;
    const tz = this.host.tz();
    const head = h("div", { class: "dv-subhead" }, "Rows", h("span", { class: "dv-muted" }, " of "), this.segmentPicker("live", tz));
    // Following, the table shown stays until the new one is ready.
    const kept = quiet ? this.rowsBox.querySelector<HTMLElement>(".dv-live-body") : null;
    const body = kept ?? h("div", { class: "dv-muted dv-pad dv-live-body" }, "Reading the live tail…");
    replace(this.rowsBox, head, body);
    const span = st.live_span;
    if (!span) return;
    const numeric = this.numericColumns();
    try {
      const env = await this.host.handle.readRange(this.source.id, st.name, span[0], span[1], { columns: numeric });
      if (this.destroyed || this.rowsToken !== token) return;
      // Sealed rows sharing the window's first instant are the segment's, not the tail's.
      let first = 0;
      while (first < env.ts.length && env.ts[first]! < span[0]) first++;
      const n = env.ts.length - first;
      const tsName = this.schema?.ts_column ?? "ts";
      const tsType = this.schema?.columns.find((c) => c.name === tsName)?.type ?? "Timestamp(Nanosecond, None)";
      const columns: DecodedColumn[] = [{ name: tsName, type: tsType, values: env.ts.slice(first) }];
      for (const name of numeric) {
        const c = env.columns.find((x) => x.name === name);
        if (!c) continue;
        const values = c.min.slice(first);
        let nulls: Uint8Array | undefined;
        for (let i = 0; i < n; i++) {
          if (Number.isNaN(values[i]!)) (nulls ??= new Uint8Array(n))[i] = 1;
        }
        const type = this.schema?.columns.find((x) => x.name === name)?.type ?? "Float64";
        // Integers arrive as doubles: shown as the integers they are.
        const col: DecodedColumn = { name, type: /^Float/.test(type) ? type : "Float64", values };
        if (nulls) col.nulls = nulls;
        columns.push(col);
      }
      const table = this.rowsTable(columns, n, tsName);
      table.el.dataset["testid"] = "live-rows";
      table.el.dataset["rows"] = String(n);
      replace(body, table.el);
      body.className = "dv-live-body";
    } catch (e) {
      this.rowsFailed(body, token, e, st.name);
    }
  }

  /**
   * Which segment's rows to show: a menu for a few segments; for many, a
   * seq box with previous/next (a menu of thousands costs a long layout).
   * A readable live tail is the last entry.
   */
  private segmentPicker(seq: number | "live", tz: TimeZoneMode): HTMLElement {
    const segs = this.stream.segments;
    const live = this.liveTabled();
    if (segs.length <= 100 || seq === "live") {
      const select = h("select", { class: "dv-select", "aria-label": "segment", data: { testid: "segment-select" } });
      for (const s of segs) {
        const opt = h("option", { value: String(s.seq) }, `seq ${s.seq} · ${count(s.rows)} rows · ${fmtSpan(s.first_ts, s.last_ts, tz)}`);
        if (s.seq === seq) opt.selected = true;
        select.appendChild(opt);
      }
      if (live) {
        const opt = h("option", { value: "live" }, this.liveOptionText(tz));
        if (seq === "live") opt.selected = true;
        select.appendChild(opt);
      }
      select.addEventListener("change", () => void this.renderRows(select.value === "live" ? "live" : Number(select.value)));
      return select;
    }
    const i = Math.max(0, segs.findIndex((s) => s.seq === seq));
    const cur = segs[i]!;
    const go = (j: number) => {
      const s = segs[Math.max(0, Math.min(segs.length - 1, j))];
      if (s) void this.renderRows(s.seq);
    };
    const box = h("input", {
      type: "number",
      class: "dv-seq-input",
      "aria-label": "segment seq",
      value: String(seq),
      min: String(segs[0]!.seq),
      max: String(segs[segs.length - 1]!.seq),
      data: { testid: "segment-seq" },
    });
    box.addEventListener("change", () => {
      const want = Number(box.value);
      let j = segs.findIndex((s) => s.seq >= want);
      if (j < 0) j = segs.length - 1;
      go(j);
    });
    return h(
      "span",
      { class: "dv-seg-picker" },
      h("button", { type: "button", class: "dv-btn", "aria-label": "previous segment", disabled: i === 0, on: { click: () => go(i - 1) } }, "◀"),
      h("span", { class: "dv-muted" }, "seq "),
      box,
      h("button", { type: "button", class: "dv-btn", "aria-label": "next segment", disabled: i === segs.length - 1, on: { click: () => go(i + 1) } }, "▶"),
      live ? h("button", { type: "button", class: "dv-btn", data: { testid: "live-rows-button" }, on: { click: () => void this.renderRows("live") } }, "live tail") : null,
      h("span", { class: "dv-muted dv-small" }, ` ${count(i + 1)} of ${count(segs.length)} · ${count(cur.rows)} rows · ${fmtSpan(cur.first_ts, cur.last_ts, tz)}`),
    );
  }

  private liveOptionText(tz: TimeZoneMode): string {
    const sp = this.stream.live_span;
    return `live tail · ${count(this.stream.live_rows)} rows${sp ? ` · ${fmtSpan(sp[0], sp[1], tz)}` : ""}`;
  }

  private async renderCallerIndex(seq: number, box: HTMLElement): Promise<void> {
    try {
      const idx = await this.host.handle.callerIndex(this.source.id, this.stream.name, seq);
      if (this.destroyed || !idx) return;
      const p = previewBlob(idx, 400);
      replace(
        box,
        h("span", { class: "dv-tag" }, "caller index"),
        ` ${bytes(idx.byteLength)} · `,
        blobCell(idx, `caller index of seq ${seq}`),
        " ",
        p.kind === "utf8" ? copyButton(() => new TextDecoder().decode(idx)) : null,
      );
    } catch (e) {
      const x = explain(e, this.stream.name);
      replace(box, h("span", { class: "dv-error-inline" }, "caller index: ", fileText(x.message, { max: 300 })));
    }
  }

  private async renderCallerRows(): Promise<void> {
    replace(
      this.callerBox,
      h("div", { class: "dv-subhead" }, "Caller rows", h("span", { class: "dv-muted" }, ` · ${count(this.stream.caller_rows)} stored under this stream's name`)),
      h("div", { class: "dv-muted dv-pad" }, "Reading…"),
    );
    const content = await callerRowsTable(this.host.handle, this.source.id, this.stream.name, () => this.host.tz());
    if (this.destroyed) return;
    this.callerBox.lastChild?.remove();
    this.callerBox.appendChild(content);
  }
}

/** A table of every caller row under `name` (used by the stream view and the source card). */
export async function callerRowsTable(handle: ArchiveHandle, source: number, name: string, tz: () => TimeZoneMode): Promise<HTMLElement> {
  let rows: CallerRow[];
  try {
    rows = await handle.callerRows(source, name, I64_MIN, I64_MAX);
  } catch (e) {
    const x = explain(e, name);
    return h("div", { class: "dv-error-inline" }, x.title, ": ", fileText(x.message, { max: 400 }));
  }
  const table = new VirtualTable(callerRowColumns(), rows.length, callerRowCell(rows, tz, name), {
    height: Math.min(260, 30 + rows.length * 22),
  });
  return table.el;
}

/** The stream's counts and span, each written only when it differs (the view is patched while followed). */
function paintStats(box: HTMLElement, st: StreamInfo, tz: TimeZoneMode): void {
  const span = streamSpan(st);
  const values: [string, string][] = [
    ["segments", count(st.segments.length)],
    ["sealed rows", count(st.sealed_rows)],
    ["live rows", count(st.live_rows)],
    ["caller rows", count(st.caller_rows)],
    ["span", span ? fmtSpan(span[0], span[1], tz) : "—"],
  ];
  if (box.children.length !== values.length) replace(box, values.map(([label, value]) => stat(label, value)));
  else values.forEach(([, value], i) => setText(box.children[i]!.querySelector("b")!, value));
}

function stat(label: string, value: Child): HTMLElement {
  return h("span", { class: "dv-stat-inline" }, h("span", { class: "dv-muted" }, label), " ", h("b", null, value));
}

function liveNotice(st: StreamInfo, readable: boolean, tz: TimeZoneMode): HTMLElement {
  return h(
    "div",
    { class: "dv-live-note" + (readable ? " dv-live-note-read" : ""), data: { testid: "live-note", rows: st.live_rows, readable: String(readable) } },
    h("span", { class: "dv-sw dv-sw-live" + (readable ? " dv-sw-live-read" : "") }),
    h("b", null, `Live tail: ${count(st.live_rows)} rows`),
    st.live_span ? ` (${fmtSpan(st.live_span[0], st.live_span[1], tz)})` : "",
    readable
      ? " — committed and not yet sealed; written with the self-describing encoder, so plotted and tabled after the sealed rows."
      : " — committed, but not readable without the writer's encoder.",
  );
}

/** The schema table's heading: its size and what a person can do with it. */
function schemaHead(schema: StreamSchema, fromMetadata: boolean): Child[] {
  return [
    "Schema",
    h(
      "span",
      { class: "dv-muted" },
      ` · ${schema.columns.length} columns · tick to plot` + (fromMetadata ? " · from the source's metadata (nothing sealed yet)" : ""),
    ),
  ];
}

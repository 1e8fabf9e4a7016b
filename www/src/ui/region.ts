// Region statistics: a drag with Shift held across any plot of the stream
// view marks a region of time; a panel shows, for each series plotted,
// the engine's statistics of the rows in that region (computed in the
// worker from the rows themselves, never from what the plots drew). A
// plain drag still zooms. Esc, or the panel's close button, clears it.
//
// This file holds the drag's wiring (shared by every plot), the band
// that shows the region on each plot, and the panel.

import type uPlot from "uplot";
import type { RegionColumnStats, RegionHistogramStats, RegionStats } from "../engine/types";
import { fileText, h, replace } from "./dom";
import { explain } from "./errors";
import { count, duration, span, type TimeZoneMode } from "./format";
import { SELECTION_EVENT } from "../embedding";

/** The modifier that turns a drag from a zoom into a region, in words for the page's help. */
export const REGION_MODIFIER = "Shift";

/**
 * Whether the drag in progress began with Shift held. One for the page:
 * plots whose cursors are synced each get the drag's selection (and run
 * their setSelect), though only one saw the mouse go down.
 */
let shift = false;

/**
 * uPlot hooks for a plot's drag: without Shift, `zoom(a, b)`; with
 * Shift, `region(a, b)` (x values, a < b). The drag's box is cleared
 * either way: the region is drawn by `regionBand`, on every plot.
 */
export function dragHooks(zoom: (a: number, b: number) => void, region: (a: number, b: number) => void): Pick<uPlot.Hooks.Arrays, "setSelect" | "ready"> {
  return {
    ready: [
      (u) => {
        // uPlot's setSelect carries no event: the drag's modifier is noted as it starts.
        u.over.addEventListener("mousedown", (ev) => (shift = ev.shiftKey), { capture: true });
      },
    ],
    setSelect: [
      (u) => {
        const r = takeSelection(u);
        if (!r) return;
        if (shift) region(r[0], r[1]);
        else zoom(r[0], r[1]);
      },
    ],
  };
}

/** The x range a person dragged across (null when too narrow to mean one), and the selection cleared. */
export function takeSelection(u: uPlot): [number, number] | null {
  const { left, width } = u.select;
  if (width < 3) return null;
  const a = u.posToVal(left, "x");
  const b = u.posToVal(left + width, "x");
  u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
  return b > a ? [a, b] : null;
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

export interface RegionHost {
  /** The engine's statistics over [from, to] of the series named. */
  read(from: bigint, to: bigint, signal: AbortSignal): Promise<RegionStats>;
  tz(): TimeZoneMode;
  /** The region was cleared (Esc, the close button): the plots drop its band. */
  cleared(): void;
  /** Series plotted that the engine does not summarise (derived series), named in a note. */
  unsummarised(): string[];
}

/**
 * The panel under the plots: empty until a region is marked, then the
 * statistics of each series plotted. Esc or the close button clears it.
 */
export class RegionPanel {
  readonly el: HTMLElement;
  private region: [bigint, bigint] | null = null;
  private token = 0;
  private inflight: AbortController | null = null;
  private readonly onKey = (ev: KeyboardEvent) => {
    if (ev.key === "Escape" && this.region) {
      ev.preventDefault();
      this.clear();
    }
  };

  constructor(private readonly host: RegionHost) {
    this.el = h("div", { class: "dv-region", data: { testid: "region-panel" }, hidden: true });
    document.addEventListener("keydown", this.onKey);
  }

  current(): [bigint, bigint] | null {
    return this.region;
  }

  destroy(): void {
    document.removeEventListener("keydown", this.onKey);
    this.inflight?.abort();
    this.token++;
  }

  clear(): void {
    this.region = null;
    this.inflight?.abort();
    this.token++;
    this.el.hidden = true;
    delete this.el.dataset["state"];
    replace(this.el);
    this.host.cleared();
    this.el.dispatchEvent(new CustomEvent(SELECTION_EVENT, { detail: null, bubbles: true }));
  }

  /** Marks [from, to] and asks the engine for its statistics. */
  async show(from: bigint, to: bigint): Promise<void> {
    this.region = [from, to];
    this.el.dispatchEvent(new CustomEvent(SELECTION_EVENT, { detail: [from, to], bubbles: true }));
    const token = ++this.token;
    this.inflight?.abort();
    const ctl = new AbortController();
    this.inflight = ctl;
    this.el.hidden = false;
    this.el.dataset["state"] = "reading";
    this.el.dataset["from"] = String(from);
    this.el.dataset["to"] = String(to);
    const body = h("div", { class: "dv-muted dv-pad" }, "Reading the region's rows…");
    replace(this.el, this.head(from, to), body);
    let answer: RegionStats;
    try {
      answer = await this.host.read(from, to, ctl.signal);
    } catch (e) {
      if (token !== this.token) return;
      const x = explain(e, "region");
      this.el.dataset["state"] = "failed";
      replace(body, h("span", { class: "dv-error-inline" }, `${x.title}: `, fileText(x.message, { max: 300, more: false })));
      return;
    }
    if (token !== this.token) return;
    (this.el as HTMLElement & { dendroRegion?: unknown }).dendroRegion = answer;
    this.el.dataset["state"] = "shown";
    if (answer.empty !== null || answer.rows === 0) {
      replace(body, h("div", { class: "dv-pad", data: { testid: "region-empty" } }, "No rows in this region", answer.empty ? [" (", fileText(answer.empty, { max: 300, more: false }), ")"] : null, "."));
      body.className = "";
      return;
    }
    const problems = answer.problems.length + answer.problems_left_out;
    const derived = this.host.unsummarised();
    replace(
      body,
      h(
        "div",
        { class: "dv-muted dv-small" },
        `${count(answer.rows)} rows in the region`,
        derived.length > 0 ? [" · not summarised here (derived series are evaluated in the page, not by the engine): ", fileText(derived.join(", "), { max: 200, more: false })] : null,
      ),
      regionTables(answer.columns, answer.histograms),
      problems > 0
        ? h(
            "div",
            { class: "dv-error-inline", data: { testid: "region-problems" } },
            `${count(problems)} row${problems === 1 ? "" : "s"} left out: `,
            fileText(answer.problems.slice(0, 3).map((p) => p.message).join("; "), { max: 400 }),
          )
        : null,
    );
    body.className = "";
  }

  private head(from: bigint, to: bigint): HTMLElement {
    const tz = this.host.tz();
    return h(
      "div",
      { class: "dv-subhead dv-region-head" },
      "Region ",
      h("span", { class: "dv-muted" }, `${span(from, to, tz)} · ${duration(to - from)} · statistics of the rows themselves (Esc closes)`),
      h("span", { class: "dv-spacer" }),
      h("button", { type: "button", class: "dv-btn dv-btn-xs", "aria-label": "close region statistics", data: { action: "close-region" }, on: { click: () => this.clear() } }, "close"),
    );
  }
}

const SCALAR_COLUMNS: [keyof RegionColumnStats, string, string][] = [
  ["count", "rows", "Rows in the region with a value"],
  ["min", "min", ""],
  ["max", "max", ""],
  ["mean", "mean", ""],
  ["p50", "p50", "Nearest-rank median"],
  ["p99", "p99", "Nearest-rank 99th percentile"],
  ["last_minus_first", "last − first", "The last stored value minus the first"],
  ["mean_rate", "mean rate /s", "Counters: the increase per second between the region's first and last row (a fall is a reset)"],
  ["integral", "integral", "Over time, in value × seconds: a gauge by the trapezoid rule, a counter its increase"],
];

const HISTOGRAM_COLUMNS: [keyof RegionHistogramStats, string][] = [
  ["rows", "rows"],
  ["total", "total count"],
  ["p50", "p50"],
  ["p90", "p90"],
  ["p99", "p99"],
  ["p999", "p99.9"],
  ["max_bucket", "max bucket"],
];

function regionTables(columns: RegionColumnStats[], hists: RegionHistogramStats[]): HTMLElement {
  return h(
    "div",
    { class: "dv-region-tables" },
    columns.length > 0
      ? h(
          "table",
          { class: "dv-table dv-region-table", data: { testid: "region-table" } },
          h("thead", null, h("tr", null, h("th", null, "series"), SCALAR_COLUMNS.map(([, label, title]) => h("th", title ? { title } : null, label)))),
          h(
            "tbody",
            null,
            columns.map((s) =>
              h(
                "tr",
                { data: { series: s.name, kind: s.kind ?? "" } },
                h("th", null, fileText(s.name, { max: 60, more: false }), s.kind === "counter" ? h("span", { class: "dv-muted", title: "min to p99 are of the per-second rates, as plotted" }, " (rates)") : null),
                SCALAR_COLUMNS.map(([key]) => h("td", { data: { stat: String(key) } }, cell(s[key] as number | null, key === "count"))),
              ),
            ),
          ),
        )
      : null,
    hists.length > 0
      ? h(
          "table",
          { class: "dv-table dv-region-table", data: { testid: "region-histograms" } },
          h("thead", null, h("tr", null, h("th", null, "histogram"), HISTOGRAM_COLUMNS.map(([, label]) => h("th", null, label)))),
          h(
            "tbody",
            null,
            hists.map((s) =>
              h(
                "tr",
                { data: { series: s.name, kind: "histogram" } },
                h("th", null, fileText(s.name, { max: 60, more: false }), s.histogram.unit ? h("span", { class: "dv-muted" }, " (", fileText(s.histogram.unit, { max: 20, more: false }), ")") : null),
                HISTOGRAM_COLUMNS.map(([key]) => h("td", { data: { stat: String(key) } }, cell(s[key] as number | null, key === "rows" || key === "total"))),
              ),
            ),
          ),
        )
      : null,
  );
}

/** A statistic as shown; the exact value rides along in data-value for tests and copying. */
function cell(v: number | null, integer: boolean): HTMLElement {
  if (v === null || Number.isNaN(v)) return h("span", { class: "dv-muted" }, "—");
  const text = integer && Number.isInteger(v) ? count(v) : Math.abs(v) >= 1e9 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(6) : String(Number(v.toPrecision(9)));
  return h("span", { data: { value: String(v) } }, text);
}

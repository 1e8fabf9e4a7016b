// Time-shift comparison of one source's stream: window A (the compare
// view's window) against window B, the same length `shift` earlier (an
// hour, a day, a week, or any number of seconds), B drawn on A's axis and
// the difference A − B drawn as its own series below.
//
// Or before and after an event of the source (its `events`, the
// timeline's markers): A is the span after it, B as long a span before
// it. The span is the window's length, or less where the recording ends
// sooner on either side, so that both have rows.
//
// Both windows are read from the engine with the same point budget, and
// the engine pairs them (`pairShift`, src/read/shift.rs): bucket by bucket
// on A's axis, exact where both have a value, a gap where either has none.

import uPlot from "uplot";
import type { Engine, PairedShift, RangeEnvelope } from "../engine/types";
import { fileText, h, replace } from "./dom";
import { instant, type TimeZoneMode } from "./format";
import type { Member } from "./members";
import { marksOf } from "./overview";
import { formatValue, gapsAsNull, timeAxes } from "./plots";
import { streamSpan } from "./model";

export interface ShiftHost {
  readonly members: Member[];
  readonly from: bigint;
  readonly to: bigint;
  offsetOf(m: Member): bigint;
  /** B = A − shiftBy (ns); the member compared with itself. Kept by the host, so a redraw or the URL keeps them. */
  shiftBy: bigint;
  shiftMember: string | null;
  read(m: Member, columns: string[], maxPoints: number, signal?: AbortSignal, from?: bigint, to?: bigint): Promise<RangeEnvelope>;
  /** Moves the shared window (every plot of the page follows). */
  setWindow(from: bigint, to: bigint): void;
}

/** Events offered in the picker at most (the first by time). */
const EVENTS_MAX = 500;

/**
 * Windows A (after) and B (before) around an event at `at` (the member's
 * own ts): `{ from, to }` of A in the member's own ts and the shift B = A −
 * shift. The span is `length`, or less where the stream's rows end sooner
 * on either side; null where the event has no rows on one side.
 */
export function aroundEvent(at: bigint, length: bigint, span: [bigint, bigint] | null): { from: bigint; to: bigint; shift: bigint } | null {
  let d = length;
  if (span) {
    const after = span[1] - at;
    const before = at - span[0];
    if (after <= 0n || before <= 0n) return null;
    if (after < d) d = after;
    if (before < d) d = before;
  }
  if (d <= 0n) return null;
  return { from: at, to: at + d, shift: d };
}

const S = 1_000_000_000n;
const PRESETS: [string, bigint][] = [
  ["1 hour earlier", 3600n * S],
  ["1 day earlier", 86_400n * S],
  ["1 week earlier", 7n * 86_400n * S],
];

/** What the comparison last drew, on its element as `dendroShift`: the pairing on A's own axis. */
export interface DrawnShift {
  member: string;
  /** B = A − shift, ns. */
  shift: bigint;
  /** Added to the paired ts (A's own) to place them on the shared axis. */
  offset: bigint;
  from: bigint;
  to: bigint;
  buckets: number;
  paired: PairedShift;
}

export class ShiftCompare {
  readonly el: HTMLElement;
  private readonly plotBox: HTMLElement;
  private plots: uPlot[] = [];
  private readonly abort = new AbortController();

  constructor(
    private readonly host: ShiftHost,
    private readonly engine: Engine,
    private readonly column: string,
    private readonly width: number,
    private readonly tz: () => TimeZoneMode,
  ) {
    const members = host.members;
    if (!members.some((m) => m.key === host.shiftMember)) host.shiftMember = members[0]?.key ?? null;
    const memberSelect = h(
      "select",
      {
        data: { testid: "shift-member" },
        on: {
          change: (e: Event) => {
            host.shiftMember = (e.target as HTMLSelectElement).value;
            void this.redraw();
          },
        },
      },
      members.map((m) => h("option", { value: m.key, selected: m.key === host.shiftMember }, fileText(m.label, { max: 80, more: false }))),
    );
    const seconds = h("input", {
      type: "number",
      step: "any",
      class: "dv-shift-input",
      value: String(Number(host.shiftBy) / 1e9),
      "aria-label": "B is this many seconds before A",
      data: { testid: "shift-seconds" },
      on: {
        change: (e: Event) => {
          const v = Number((e.target as HTMLInputElement).value);
          if (!Number.isFinite(v) || v === 0 || Math.abs(v) > 1e10) return;
          host.shiftBy = BigInt(Math.round(v * 1e9));
          void this.redraw();
        },
      },
    }) as HTMLInputElement;
    const preset = (text: string, by: bigint) =>
      h(
        "button",
        {
          type: "button",
          class: "dv-btn dv-btn-xs",
          on: {
            click: () => {
              host.shiftBy = by;
              seconds.value = String(Number(by) / 1e9);
              void this.redraw();
            },
          },
        },
        text,
      );
    this.plotBox = h("div", { class: "dv-shift-plots" });
    const eventPick = this.eventPicker();
    this.el = h(
      "div",
      { class: "dv-shift", data: { testid: "time-shift", column } },
      h(
        "div",
        { class: "dv-strip-controls" },
        h("label", { class: "dv-muted" }, "Source ", memberSelect),
        h("label", { class: "dv-muted" }, "B is ", seconds, " s before A"),
        PRESETS.map(([t, by]) => preset(t, by)),
        eventPick,
      ),
      this.plotBox,
    );
  }

  /**
   * The member's events as a select: choosing one makes A the span after it
   * and B the span before it (`aroundEvent`). The event A starts at is shown
   * chosen; null when the source has no events.
   */
  private eventPicker(): HTMLElement | null {
    const host = this.host;
    const m = host.members.find((x) => x.key === host.shiftMember);
    if (!m) return null;
    const events = marksOf(m.source)
      .events.filter((e) => typeof e.timestamp === "bigint")
      .sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0))
      .slice(0, EVENTS_MAX);
    if (events.length === 0) return null;
    const off = host.offsetOf(m);
    const span = streamSpan(m.stream);
    const current = events.findIndex((e) => e.timestamp + off === host.from && host.to - host.from === host.shiftBy);
    const select = h(
      "select",
      {
        data: { testid: "shift-event" },
        "aria-label": "compare before and after an event",
        on: {
          change: (e: Event) => {
            const ev = events[Number((e.target as HTMLSelectElement).value)];
            if (!ev) return;
            const w = aroundEvent(ev.timestamp, host.to - host.from, span);
            if (!w) return;
            host.shiftBy = w.shift;
            host.setWindow(w.from + off, w.to + off);
          },
        },
      },
      h("option", { value: "", selected: current < 0 }, "—"),
      events.map((ev, i) => {
        const usable = aroundEvent(ev.timestamp, host.to - host.from, span) !== null;
        const words = [ev.kind, ev.description].filter((w) => w !== null && w !== "").join(": ");
        return h("option", { value: String(i), selected: i === current, disabled: !usable }, fileText(`${instant(ev.timestamp + off, this.tz(), 0)} · ${words || "event"}`, { max: 100, more: false }));
      }),
    );
    return h("label", { class: "dv-muted", title: "A: the span after the event; B: as long a span before it (the window's length, or less where the rows end sooner)" }, "Before/after event ", select);
  }

  destroy(): void {
    this.abort.abort();
    for (const p of this.plots) p.destroy();
  }

  private redraw(): Promise<string> {
    const host = this.el.closest('[data-testid="compare-view"]') as HTMLElement | null;
    if (host) host.dataset["state"] = "reading";
    return this.draw().then((text) => {
      if (host) {
        host.dataset["state"] = "drawn";
        host.dataset["drawn"] = String(Number(host.dataset["drawn"] ?? "0") + 1);
      }
      return text;
    });
  }

  /** Reads both windows, has the engine pair them, and draws A, B and A − B. */
  async draw(): Promise<string> {
    const m = this.host.members.find((x) => x.key === this.host.shiftMember);
    if (!m) return "No source to shift.";
    const shift = this.host.shiftBy;
    const buckets = Math.max(100, this.width);
    const cols = [this.column];
    const { from, to } = this.host;
    const [a, b] = await Promise.all([
      this.host.read(m, cols, buckets, this.abort.signal, from, to),
      this.host.read(m, cols, buckets, this.abort.signal, from - shift, to - shift),
    ]);
    const off = this.host.offsetOf(m);
    // About one row per bucket where rows are fewer than pixels: finer
    // buckets would leave every other one empty and the lines in pieces.
    const rows = Math.max(a.rows_in_window, b.rows_in_window);
    const pairedBuckets = Math.max(10, Math.min(buckets, rows));
    const side = (env: RangeEnvelope) => {
      const c = env.columns.find((x) => x.name === this.column);
      const nan = new Float64Array(env.ts.length).fill(NaN);
      return { ts: env.ts, min: c?.min ?? nan, max: c?.max ?? nan };
    };
    const paired = await this.engine.pairShift(from - off, to - off, pairedBuckets, side(a), side(b), shift);
    const drawn: DrawnShift = { member: m.key, shift, offset: off, from, to, buckets: pairedBuckets, paired };
    (this.el as HTMLElement & { dendroShift?: DrawnShift }).dendroShift = drawn;
    for (const p of this.plots) p.destroy();
    this.plots = [];
    const origin = from;
    const toX = (ns: bigint) => Number(ns - origin) / 1e9;
    const toNs = (x: number) => origin + BigInt(Math.round(x * 1e9));
    const range = (): [number, number] => [toX(from), toX(to)];
    const xs = Float64Array.from(paired.ts, (t) => toX(t + off));
    const opts = (height: number, series: uPlot.Series[], bands: uPlot.Band[]): uPlot.Options => ({
      width: this.width,
      height,
      legend: { show: false },
      padding: [6, 12, 0, 4],
      cursor: { sync: { key: "dendro-shift" } },
      scales: { x: { time: false, range } },
      axes: timeAxes(toX, toNs, range, this.tz),
      series: [{}, ...series],
      bands,
    });
    // Dots as well as lines: a value between two gaps has no line to draw.
    const line = (label: string, stroke: string, dash?: number[]): uPlot.Series => ({
      label,
      stroke,
      width: 1.25,
      points: { show: true, size: 3, fill: stroke },
      ...(dash ? { dash } : {}),
      value: (_u, v) => formatValue(v),
    });
    const top = h("div", { class: "dv-plot", data: { testid: "shift-plot" } });
    const bottom = h("div", { class: "dv-plot", data: { testid: "shift-diff" } });
    const ago = Number(shift) / 1e9;
    replace(
      this.plotBox,
      h("div", { class: "dv-plot-head" }, h("span", { style: { color: "#2563eb" } }, "A: this window"), " · ", h("span", { style: { color: "#c2410c" } }, `B: ${ago} s earlier, drawn on A's axis`)),
      top,
      h("div", { class: "dv-plot-head" }, "A − B (a gap where either has no value)"),
      bottom,
    );
    this.plots.push(
      new uPlot(
        opts(200, [line("A max", "#2563eb"), line("A min", "#2563eb"), line("B max", "#c2410c", [4, 3]), line("B min", "#c2410c", [4, 3])], [
          { series: [1, 2], fill: "#2563eb22" },
          { series: [3, 4], fill: "#c2410c22" },
        ]),
        [xs, gapsAsNull(paired.a_max), gapsAsNull(paired.a_min), gapsAsNull(paired.b_max), gapsAsNull(paired.b_min)],
        top,
      ),
    );
    this.plots.push(
      new uPlot(opts(140, [line("A−B max", "#7c3aed"), line("A−B min", "#7c3aed")], [{ series: [1, 2], fill: "#7c3aed22" }]), [xs, gapsAsNull(paired.d_max), gapsAsNull(paired.d_min)], bottom),
    );
    let both = 0;
    for (const v of paired.d_max) if (!Number.isNaN(v)) both++;
    return `${m.label}: A against B ${ago} s earlier · ${both} of ${paired.ts.length} buckets have a value on both sides`;
  }
}

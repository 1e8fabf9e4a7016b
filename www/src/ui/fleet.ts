// The fleet strip: one column of one stream across every source, one thin
// row per source coloured by value, so the odd host stands out among
// fifty. Each row is the engine's envelope of that source over the shared
// wall-clock window, one bucket per pixel at most, painted on a canvas:
// each point's colour is its bucket's max (or min), on one colour scale
// for every row. Rows sort by name, by peak (largest max) or by mean (of
// the bucket maxima). A click on a row opens that source's stream view
// over the same window.

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
  openMember(m: Member): void;
}

export type StripSort = "name" | "peak" | "mean";
export type StripColour = "max" | "min";

/** Height of one source's row, CSS px. */
const ROW_PX = 12;
/** Width of the names' column, CSS px. */
const NAME_PX = 220;

/** One row as drawn, for tests: its member, the points' own ts and values, and the sort keys. */
export interface StripRow {
  key: string;
  label: string;
  ts: BigInt64Array;
  offset: bigint;
  values: Float64Array;
  peak: number;
  mean: number;
}

export class FleetStrip {
  readonly el: HTMLElement;
  private sort: StripSort = "name";
  private colour: StripColour = "max";
  private rows: StripRow[] = [];
  private readonly list: HTMLElement;
  private readonly scale: HTMLElement;
  private abort = new AbortController();
  private envs: RangeEnvelope[] = [];

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
          this.rows = this.build();
          this.paint();
        }),
        this.scale,
      ),
      this.list,
    );
  }

  destroy(): void {
    this.abort.abort();
  }

  /** Reads every source's envelope and paints the rows; answers the status line. */
  async draw(): Promise<string> {
    const members = this.host.members;
    const columns = [this.column];
    const points = Math.max(50, this.width - NAME_PX);
    this.envs = await Promise.all(members.map((m) => this.host.read(m, columns, points, this.abort.signal)));
    this.rows = this.build();
    this.paint();
    const rate = this.host.rates(columns).length > 0 ? " (as a rate per second)" : "";
    return `${members.length} sources · ${this.column}${rate}, one row each, coloured by each pixel's ${this.colour === "max" ? "maximum" : "minimum"}`;
  }

  private build(): StripRow[] {
    return this.host.members.map((m, i) => {
      const env = this.envs[i]!;
      const col = env.columns.find((c) => c.name === this.column);
      const values = (this.colour === "max" ? col?.max : col?.min) ?? new Float64Array(env.ts.length).fill(NaN);
      const max = col?.max ?? values;
      let peak = -Infinity;
      let sum = 0;
      let n = 0;
      for (const v of max) {
        if (!Number.isFinite(v)) continue;
        if (v > peak) peak = v;
        sum += v;
        n++;
      }
      return { key: m.key, label: m.label, ts: env.ts, offset: this.host.offsetOf(m), values, peak: n > 0 ? peak : NaN, mean: n > 0 ? sum / n : NaN };
    });
  }

  private sorted(): StripRow[] {
    const rows = [...this.rows];
    const byNumber = (k: "peak" | "mean") => (a: StripRow, b: StripRow) => (Number.isNaN(a[k]) ? 1 : Number.isNaN(b[k]) ? -1 : b[k] - a[k]);
    if (this.sort === "name") rows.sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
    else rows.sort(byNumber(this.sort));
    return rows;
  }

  private paint(): void {
    let lo = Infinity;
    let hi = -Infinity;
    for (const r of this.rows)
      for (const v of r.values) {
        if (!Number.isFinite(v)) continue;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    replace(this.scale, Number.isFinite(lo) ? `scale ${formatValue(lo)} … ${formatValue(hi)}` : "no values in this window");
    const rows = this.sorted();
    (this.el as HTMLElement & { dendroStrip?: StripRow[] }).dendroStrip = rows;
    const w = Math.max(50, this.width - NAME_PX);
    const span = Number(this.host.to - this.host.from);
    replace(
      this.list,
      rows.map((r) => {
        const member = this.host.members.find((m) => m.key === r.key)!;
        const canvas = h("canvas", { class: "dv-strip-canvas", width: String(w), height: String(ROW_PX) }) as HTMLCanvasElement;
        const ctx = canvas.getContext("2d");
        if (ctx) {
          ctx.fillStyle = "#f6f8fa";
          ctx.fillRect(0, 0, w, ROW_PX);
          for (let i = 0; i < r.ts.length; i++) {
            const v = r.values[i]!;
            if (!Number.isFinite(v)) continue;
            const x0 = Math.floor((Number(r.ts[i]! + r.offset - this.host.from) / span) * w);
            const next = r.ts[i + 1];
            const x1 = next !== undefined ? Math.floor((Number(next + r.offset - this.host.from) / span) * w) : x0 + 1;
            ctx.fillStyle = ramp(hi > lo ? (v - lo) / (hi - lo) : 0.5);
            ctx.fillRect(x0, 0, Math.max(1, x1 - x0), ROW_PX);
          }
        }
        return h(
          "button",
          {
            type: "button",
            role: "listitem",
            class: "dv-strip-row",
            title: `Open this source's stream view over the same window (peak ${formatValue(r.peak)}, mean ${formatValue(r.mean)})`,
            data: { testid: "strip-row", member: r.key },
            on: { click: () => this.host.openMember(member) },
          },
          h("span", { class: "dv-strip-name", style: { width: `${NAME_PX - 8}px` } }, fileText(r.label, { max: 60, more: false })),
          canvas,
        );
      }),
    );
  }
}

/** A perceptually even ramp from dark blue (low) through teal to yellow (high). */
function ramp(t: number): string {
  const stops: [number, number, number][] = [
    [68, 1, 84],
    [59, 82, 139],
    [33, 145, 140],
    [94, 201, 98],
    [253, 231, 37],
  ];
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const [a, b] = [stops[i]!, stops[i + 1]!];
  const c = (k: 0 | 1 | 2) => Math.round(a[k] + (b[k] - a[k]) * f);
  return `rgb(${c(0)},${c(1)},${c(2)})`;
}

// The timeline: one lane per stream on a shared wall-clock axis.
//
// Sealed segments are solid blocks, holes between them are marked, and the
// live tail is a hatched block carrying its row count: rows that exist but
// cannot be decoded without the writer's encoder are never drawn as nothing.
// Dragging across the lanes (or the zoom buttons, or ctrl+wheel) sets the
// time window that the stream view plots.
//
// However large the archive, a frame's work is bounded: lanes are built for
// the first streams the filter keeps (a line says how many were left out,
// with a button for more); past a few dozen lanes they scroll in a box of
// their own and only those in sight are drawn; and a lane with more
// segments in the window than it has room for merges them into blocks of
// a minimum width, found by binary search rather than by a walk over all.

import type { SegmentInfo, SourceInfo, StreamInfo } from "../engine/types";
import { ticks } from "./axis";
import { CAPS, type Filtered, plural, shownText } from "./catalog";
import { type Child, clear, fileText, h, moreBar, replace, setText } from "./dom";
import { bytes, count, duration, instant, span as fmtSpan, type TimeZoneMode, zoneLabel } from "./format";
import { carryIndex, firstReaching, laneIndex } from "./laneindex";
import { type Span, sameEntries, sameLane, streamSpan } from "./model";
import type { Tooltip } from "./overlay";
import { type SyncBus, busOf } from "./sync";
import type { ArchiveEvent, ProducerEpoch, WriterSession } from "../engine/types";
import { noteFlags } from "./annotate";
import type { NoteMark } from "./notes";

export interface TimelineHost {
  tz(): TimeZoneMode;
  tooltip: Tooltip;
  onWindow(from: bigint, to: bigint): void;
  onSelect(source: number, stream: string, seq?: number): void;
  /** The notes of `source` (annotate.ts), flagged on its lanes beside its events. */
  notes?(source: number): NoteMark[];
  /** Alt held: a drag (a region) or a click (an instant, `to` null) on a source's lane marks where a note goes. */
  onNote?(source: number, from: bigint, to: bigint | null): void;
}

export interface SourceMarks {
  events: ArchiveEvent[];
  epochs: ProducerEpoch[];
  sessions: WriterSession[];
}

interface Lane {
  /** The source's id, and the stream's name for a stream's lane (see laneKey). */
  key: string;
  source: SourceInfo;
  stream: StreamInfo | null;
  row: HTMLElement;
  label: HTMLElement;
  track: HTMLElement;
  /** A stream lane's row count. */
  count: HTMLElement | null;
  /** A source lane that says the source has no streams. */
  noStreams: boolean;
  /** In sight (always, unless the lanes scroll in their own box). */
  visible: boolean;
  /** What the track was last drawn for (window, width, zone); "" when never. */
  drawn: string;
}

const MIN_WINDOW = 10n; // ns
/** Past this many rows, the lanes scroll in a box and only those in sight are drawn. */
const LAZY_ROWS = 40;
/** Blocks a lane draws at most across its width: narrower neighbours merge. */
const MAX_BLOCKS = 150;
/** Segments in the window up to which positions are worked out exactly, in bigint. */
const EXACT_SEGMENTS = 2000;

export class Timeline {
  readonly el: HTMLElement;
  private readonly body: HTMLElement;
  private readonly overlay: HTMLElement;
  private readonly grid: HTMLElement;
  private readonly axisTrack: HTMLElement;
  private readonly miniTrack: HTMLElement;
  private readonly windowLabel: HTMLElement;
  private readonly lanesBox: HTMLElement;
  private readonly moreSlot: HTMLElement;
  private lanes: Lane[] = [];
  private from: bigint;
  private to: bigint;
  private readonly resize: ResizeObserver;
  private sight: IntersectionObserver | null = null;
  /** The axis track's width and offset in the body, as last measured. */
  private lastWidth = 0;
  private axisLeft = 0;
  private readonly miniWin = h("div", { class: "dv-tl-mini-win" });
  /** What the filter keeps; lanes are built for its first `laneLimit` streams. */
  private catalog: Filtered;
  private laneLimit: number = CAPS.lanes;
  /** The stream open in the stream view, given a lane past the cap. */
  private opened: StreamInfo | null = null;
  private selected: { source: number; stream: string | null } | null = null;
  /** The page's cursor (sync.ts) across the lanes, and the bus it comes by once the timeline is in the page. */
  private readonly cursorLine = h("div", { class: "dv-tl-cursor", hidden: true, data: { testid: "timeline-cursor" } });
  private cursorAt: bigint | null = null;
  private bus: SyncBus | null = null;
  private unsync: (() => void) | null = null;

  constructor(
    private readonly host: TimelineHost,
    catalog: Filtered,
    private full: Span,
    private marks: Map<number, SourceMarks>,
  ) {
    [this.from, this.to] = full;
    this.catalog = catalog;
    this.windowLabel = h("span", { class: "dv-tl-window", data: { testid: "window" } });
    const zoomIn = h("button", { type: "button", class: "dv-btn", title: "Zoom in", on: { click: () => this.zoom(0.5) } }, "+");
    const zoomOut = h("button", { type: "button", class: "dv-btn", title: "Zoom out", on: { click: () => this.zoom(2) } }, "−");
    const left = h("button", { type: "button", class: "dv-btn", title: "Earlier", on: { click: () => this.pan(-0.5) } }, "◀");
    const right = h("button", { type: "button", class: "dv-btn", title: "Later", on: { click: () => this.pan(0.5) } }, "▶");
    const fit = h(
      "button",
      { type: "button", class: "dv-btn", title: "Show the whole archive", data: { action: "fit" }, on: { click: () => this.host.onWindow(this.full[0], this.full[1]) } },
      "Fit",
    );
    const legend = h(
      "span",
      { class: "dv-legend" },
      h("span", { class: "dv-sw dv-sw-seg" }),
      "sealed segment",
      h("span", { class: "dv-sw dv-sw-gap" }),
      "gap",
      h("span", { class: "dv-sw dv-sw-live" }),
      "live tail",
      h("span", { class: "dv-sw dv-sw-event" }),
      "event",
    );
    const head = h(
      "div",
      { class: "dv-panel-head" },
      h("h2", null, "Timeline"),
      this.windowLabel,
      h("span", { class: "dv-spacer" }),
      legend,
      h("span", { class: "dv-btn-group" }, left, zoomOut, zoomIn, right, fit),
    );
    this.miniTrack = h("div", { class: "dv-tl-track dv-tl-mini", title: "Whole archive: click to move the window here" });
    this.axisTrack = h("div", { class: "dv-tl-track dv-tl-axis" });
    this.overlay = h("div", { class: "dv-tl-overlay" });
    this.grid = h("div", { class: "dv-tl-overlay dv-tl-grid" });
    this.lanesBox = h("div", { class: "dv-tl-lanes", data: { testid: "lanes" } });
    this.moreSlot = h("div", { class: "dv-tl-more" });
    this.body = h(
      "div",
      { class: "dv-tl-body" },
      this.grid,
      h("div", { class: "dv-tl-row dv-tl-minirow" }, h("div", { class: "dv-tl-label dv-muted" }, "whole archive"), this.miniTrack),
      h("div", { class: "dv-tl-row dv-tl-axisrow" }, h("div", { class: "dv-tl-label dv-tl-zone" }), this.axisTrack),
      this.lanesBox,
      this.overlay,
    );
    const hint = h("div", { class: "dv-hint" }, "Drag across the lanes to zoom (the plots follow) · ctrl+wheel zooms, shift+wheel pans · click a lane to open its stream");
    this.el = h("section", { class: "dv-panel dv-timeline", data: { testid: "timeline" } }, head, this.body, this.moreSlot, hint);
    this.buildLanes();
    this.installPointer();
    // The track's width and offset are read here, after a layout, and
    // kept: a render (every update of a followed archive) then writes
    // without reading layout back, so it forces none.
    this.resize = new ResizeObserver(() => {
      const w = this.axisTrack.clientWidth;
      const left = this.axisTrack.offsetLeft;
      if (w === this.lastWidth && left === this.axisLeft) return;
      this.lastWidth = w;
      this.axisLeft = left;
      this.render();
    });
    this.resize.observe(this.body);
    this.overlay.appendChild(this.cursorLine);
  }

  destroy(): void {
    this.unsync?.();
    this.resize.disconnect();
    this.sight?.disconnect();
  }

  window(): Span {
    return [this.from, this.to];
  }

  setWindow(from: bigint, to: bigint): void {
    this.from = from;
    this.to = to;
    this.render();
  }

  setSelected(source: number, stream: string | null): void {
    this.selected = { source, stream };
    for (const lane of this.lanes) {
      const on = !!lane.stream && lane.source.id === source && lane.stream.name === stream;
      lane.row.classList.toggle("dv-selected", on);
    }
  }

  /** Lanes for what the filter now keeps, from its first streams again. */
  setCatalog(catalog: Filtered): void {
    this.catalog = catalog;
    this.laneLimit = CAPS.lanes;
    this.buildLanes();
    this.render();
  }

  /**
   * A newer description of the archive (it is being followed). Lanes are
   * matched to the new streams by source id and name: a lane whose stream
   * kept its segments and live tail keeps its drawing (unless the window
   * moved), its row count is patched in place, and only the streams new to
   * the timeline get rows built; lanes of streams gone are removed.
   */
  update(catalog: Filtered, full: Span, marks: Map<number, SourceMarks>, window: Span): void {
    this.catalog = catalog;
    this.full = full;
    this.marks = marks;
    [this.from, this.to] = window;
    const open = this.opened;
    if (open) {
      this.opened = null;
      for (const m of catalog.matches) {
        const st = m.streams.find((s) => s.name === open.name && this.selected?.source === m.source.id);
        if (st) this.opened = st;
      }
    }
    this.buildLanes();
    this.render();
  }

  /**
   * The stream now open: it keeps a lane while the filter lets it through,
   * even past the cap (opened from the URL, or a card, or a filter since
   * cleared).
   */
  reveal(st: StreamInfo): void {
    if (this.opened === st) return;
    this.opened = st;
    if (this.lanes.some((l) => l.stream === st)) return;
    this.buildLanes();
    this.render();
  }

  // -------------------------------------------------------------------------
  // Building lanes

  /**
   * Places the rows: the first `laneLimit` streams kept, and the open one
   * if it is kept. A row already built for the same source or stream is
   * kept and takes the newer description; only the others are built.
   */
  private buildLanes(): void {
    const old = new Map<string, Lane>();
    for (const lane of this.lanes) old.set(lane.key, lane);
    const lanes: Lane[] = [];
    let streams = 0;
    let sources = 0;
    const opened = this.opened;
    let openedShown = false;
    // A source can head two runs of lanes (the open stream's, past the
    // cap): each occurrence of a key is matched to the same occurrence.
    const seen = new Map<string, number>();
    const key = (src: SourceInfo, st: StreamInfo | null) => {
      const base = laneKey(src, st);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      return n === 0 ? base : `${base}#${n}`;
    };
    const place = (src: SourceInfo, take: StreamInfo[], noStreams: boolean) => {
      const k = key(src, null);
      lanes.push(this.sourceLane(old.get(k), k, src, noStreams));
      for (const st of take) {
        const k = key(src, st);
        lanes.push(this.streamLane(old.get(k), k, src, st));
      }
    };
    for (const m of this.catalog.matches) {
      if (streams >= this.laneLimit) break;
      const take = m.streams.slice(0, this.laneLimit - streams);
      if (opened && !take.includes(opened) && m.streams.includes(opened)) take.push(opened);
      if (opened && take.includes(opened)) openedShown = true;
      place(m.source, take, m.source.streams.length === 0);
      streams += Math.min(take.length, this.laneLimit - streams);
      sources++;
    }
    // The open stream, kept by the filter, of a source past the cap.
    if (opened && !openedShown) {
      const m = this.catalog.matches.find((x) => x.streams.includes(opened));
      if (m) place(m.source, [opened], false);
    }
    const same = lanes.length === this.lanes.length && lanes.every((l, i) => l === this.lanes[i]);
    this.lanes = lanes;
    if (!same || lanes.length === 0) this.placeRows();

    const total = this.catalog.streams;
    const note = shownText(streams, total, "stream", this.catalog.query !== "");
    const srcNote = sources < this.catalog.matches.length ? `, from ${count(sources)} of ${plural(this.catalog.matches.length, "source")}` : "";
    const text = note ? `${note}${srcNote} on the timeline. Filter to find others, or` : "";
    if (this.moreSlot.dataset["text"] !== text) {
      this.moreSlot.dataset["text"] = text;
      replace(
        this.moreSlot,
        note
          ? moreBar(
              text,
              {
                label: `show ${count(Math.min(CAPS.lanes, total - streams))} more`,
                onClick: () => {
                  this.laneLimit += CAPS.lanes;
                  this.buildLanes();
                  this.render();
                },
              },
              "lanes-more",
            )
          : null,
      );
    }
    if (!same) this.watchSight();
    if (this.selected) this.setSelected(this.selected.source, this.selected.stream);
  }

  /** Puts the lanes' rows in the box in order, moving only those out of place. */
  private placeRows(): void {
    let at = this.lanesBox.firstChild;
    for (const lane of this.lanes) {
      if (at === lane.row) at = at.nextSibling;
      else this.lanesBox.insertBefore(lane.row, at);
    }
    while (at) {
      const next = at.nextSibling;
      at.remove();
      at = next;
    }
    if (this.catalog.matches.length === 0) {
      this.lanesBox.appendChild(
        h("div", { class: "dv-empty-note" }, this.catalog.query ? "No source or stream matches the filter." : "This archive holds no sources yet."),
      );
    }
  }

  /** Many rows: they scroll in their own box, and only lanes in sight are drawn. */
  private watchSight(): void {
    this.sight?.disconnect();
    this.sight = null;
    const tall = this.lanes.length > LAZY_ROWS;
    this.lanesBox.classList.toggle("dv-tl-tall", tall);
    if (!tall) {
      for (const lane of this.lanes) lane.visible = true;
      return;
    }
    for (const lane of this.lanes) lane.visible = false;
    const byRow = new Map(this.lanes.map((l) => [l.row, l]));
    this.sight = new IntersectionObserver(
      (entries) => {
        let newly = false;
        for (const e of entries) {
          const lane = byRow.get(e.target as HTMLElement);
          if (!lane) continue;
          lane.visible = e.isIntersecting;
          if (e.isIntersecting) newly = true;
        }
        if (newly) this.renderLanes();
      },
      { root: this.lanesBox, rootMargin: "120px 0px" },
    );
    for (const lane of this.lanes) this.sight.observe(lane.row);
  }

  /** A source's row (its name, labels and marks), `known` patched when there is one. */
  private sourceLane(known: Lane | undefined, key: string, src: SourceInfo, noStreams: boolean): Lane {
    if (known) {
      const before = known.source;
      known.source = src;
      if (before.complete !== src.complete || !sameEntries(before.labels, src.labels) || known.noStreams !== noStreams) {
        known.noStreams = noStreams;
        replace(known.label, ...this.sourceLabel(src, noStreams));
      }
      if (!sameMarks(before, src)) known.drawn = "";
      return known;
    }
    const label = h("div", { class: "dv-tl-label dv-tl-srclabel" }, ...this.sourceLabel(src, noStreams));
    const track = h("div", { class: "dv-tl-track dv-tl-srctrack" });
    const row = h("div", { class: "dv-tl-row dv-tl-srcrow", data: { source: src.id } }, label, track);
    const lane: Lane = { key, source: src, stream: null, row, label, track, count: null, noStreams, visible: true, drawn: "" };
    // The tooltip reads the lane's source when shown: the newest description's.
    this.host.tooltip.attach(label, () => {
      const s = lane.source;
      const entries = Object.entries(s.labels);
      return [
        h("b", null, `Source ${s.id}`),
        s.complete ? null : h("div", null, "may be incomplete: data after the last row may be missing"),
        entries.slice(0, 20).map(([k, v]) => h("div", null, fileText(k, { max: 40, more: false }), " = ", fileText(v, { max: 80, more: false }))),
        entries.length > 20 ? h("div", { class: "dv-muted" }, `and ${count(entries.length - 20)} more labels (on the source's card)`) : null,
      ];
    });
    return lane;
  }

  private sourceLabel(src: SourceInfo, noStreams: boolean): Child[] {
    const entries = Object.entries(src.labels);
    const brief = h(
      "span",
      { class: "dv-tl-srcbrief" },
      entries.slice(0, 3).map(([k, v], i) => [i > 0 ? " · " : "", fileText(k, { max: 16, more: false }), "=", fileText(v, { max: 24, more: false })]),
      noStreams ? h("span", { class: "dv-tl-note" }, " · no streams") : null,
    );
    return [h("b", null, `Source ${src.id}`), src.complete ? null : h("span", { class: "dv-tl-incomplete" }, "incomplete"), brief];
  }

  /** A stream's lane, `known` patched when there is one: its count in place, its drawing kept while still right. */
  private streamLane(known: Lane | undefined, key: string, src: SourceInfo, st: StreamInfo): Lane {
    if (known) {
      const before = known.stream!;
      if (before !== st) {
        if (!sameLane(before, st) || !sameMarks(known.source, src)) known.drawn = "";
        carryIndex(before, st);
        known.stream = st;
        known.source = src;
        setText(known.count!, rowsText(st));
      }
      return known;
    }
    const name = h(
      "button",
      { type: "button", class: "dv-tl-name", data: { streamNav: "lanes" }, on: { click: () => this.host.onSelect(src.id, st.name) } },
      fileText(st.name, { max: 40, more: false }),
    );
    const info = h("span", { class: "dv-tl-count" }, rowsText(st));
    const label = h("div", { class: "dv-tl-label" }, name, info);
    const track = h("div", { class: "dv-tl-track" });
    const row = h("div", { class: "dv-tl-row dv-tl-lane", data: { source: src.id, stream: st.name, testid: "lane" } }, label, track);
    track.addEventListener("click", (ev) => {
      if (this.dragged) return;
      const seg = (ev.target as HTMLElement).closest<HTMLElement>(".dv-seg");
      const seq = seg?.dataset["seq"];
      this.host.onSelect(src.id, st.name, seq !== undefined ? Number(seq) : undefined);
    });
    return { key, source: src, stream: st, row, label, track, count: info, noStreams: false, visible: true, drawn: "" };
  }

  // -------------------------------------------------------------------------
  // Drawing

  private x(ts: bigint, width: number): number {
    return (Number(ts - this.from) / Number(this.to - this.from)) * width;
  }

  /**
   * Draws the window: label, overview strip, axis and the lanes in sight.
   * `measure` reads the track's size first (the tab was hidden, so the
   * size kept may be stale); otherwise the size the ResizeObserver last
   * saw is used, and nothing here reads layout.
   */
  render(measure = false): void {
    this.host.tooltip.hide();
    if (measure || this.lastWidth <= 0) {
      this.lastWidth = this.axisTrack.clientWidth;
      this.axisLeft = this.axisTrack.offsetLeft;
    }
    const width = this.lastWidth;
    const tz = this.host.tz();
    const zone = this.body.querySelector(".dv-tl-zone");
    if (zone) setText(zone, zoneLabel(tz, this.from));
    setText(this.windowLabel, `${fmtSpan(this.from, this.to, tz)}  (${duration(this.to - this.from)})`);
    this.renderMini();
    if (width <= 0) return;
    this.renderAxis(width, tz);
    this.renderLanes();
    for (const layer of [this.overlay, this.grid]) {
      layer.style.left = `${this.axisLeft}px`;
      layer.style.width = `${width}px`;
    }
    if (!this.bus) {
      this.bus = busOf(this.el);
      this.unsync = this.bus?.onCursor((ns, by) => by !== this && this.placeCursor(ns)) ?? null;
      if (this.bus) this.cursorAt = this.bus.cursorAt;
    }
    this.placeCursor(this.cursorAt);
  }

  /** Draws the page's cursor at `ns` (hidden when null or outside the window). */
  private placeCursor(ns: bigint | null): void {
    this.cursorAt = ns;
    const w = this.lastWidth;
    const inside = ns !== null && ns >= this.from && ns <= this.to && w > 0;
    this.cursorLine.hidden = !inside;
    if (inside) this.cursorLine.style.transform = `translateX(${(Number(ns - this.from) / Number(this.to - this.from)) * w}px)`;
  }

  /** The notes changed: every lane is drawn again. */
  notesChanged(): void {
    for (const lane of this.lanes) lane.drawn = "";
    this.renderLanes();
  }

  /** Draws the lanes in sight that are not drawn for this window, width and zone yet. */
  private renderLanes(): void {
    const width = this.lastWidth;
    if (width <= 0) return;
    const tz = this.host.tz();
    const key = `${this.from}:${this.to}:${width}:${tz}`;
    for (const lane of this.lanes) {
      if (!lane.visible || lane.drawn === key) continue;
      lane.drawn = key;
      clear(lane.track);
      if (lane.stream) this.renderLane(lane.source, lane.stream, lane.track, width, tz);
      else this.renderSourceMarks(lane.source, lane.track, width, tz);
    }
  }

  private renderMini(): void {
    const [a, b] = this.full;
    const total = Number(b - a);
    if (total <= 0) {
      this.miniWin.remove();
      return;
    }
    const l = Math.max(0, Math.min(1, Number(this.from - a) / total));
    const r = Math.max(0, Math.min(1, Number(this.to - a) / total));
    this.miniWin.style.left = `${l * 100}%`;
    this.miniWin.style.width = `${Math.max(0.4, (r - l) * 100)}%`;
    if (this.miniWin.parentNode !== this.miniTrack) this.miniTrack.appendChild(this.miniWin);
  }

  private renderAxis(width: number, tz: TimeZoneMode): void {
    clear(this.axisTrack);
    clear(this.grid);
    const list = ticks(this.from, this.to, Math.max(2, Math.floor(width / 95)), tz);
    for (const t of list) {
      const x = this.x(t.ns, width);
      // A label that would be cut by the right edge is left off; its line stays.
      const room = width - x > (t.context ? Math.max(t.label.length, t.context.length) : t.label.length) * 6.5;
      if (room) {
        const tick = h("div", { class: "dv-tick", style: { left: `${x}px` } }, h("span", { class: "dv-tick-label" }, t.label));
        if (t.context) tick.appendChild(h("span", { class: "dv-tick-context" }, t.context));
        this.axisTrack.appendChild(tick);
      }
      this.grid.appendChild(h("div", { class: "dv-gridline", style: { left: `${x}px` } }));
    }
  }

  private renderSourceMarks(src: SourceInfo, track: HTMLElement, width: number, tz: TimeZoneMode): void {
    track.append(...noteFlags(this.host.notes?.(src.id) ?? [], (ns) => this.x(ns, width), width, this.host.tooltip, tz));
    const m = this.marks.get(src.id);
    if (!m) return;
    for (const ev of m.events) {
      const x = this.x(ev.timestamp, width);
      if (x < -8 || x > width + 8) continue;
      const flag = h("div", { class: "dv-event-flag", style: { left: `${x}px` }, data: { testid: "event" } });
      this.host.tooltip.attach(flag, () => eventTip(ev, tz));
      track.appendChild(flag);
    }
    for (const ep of m.epochs) {
      if (ep.from_ts === null) continue;
      const x = this.x(ep.from_ts, width);
      if (x < -8 || x > width + 8) continue;
      const mark = h("div", { class: "dv-epoch-flag", style: { left: `${x}px` } }, fileText(`epoch ${ep.epoch}`, { max: 14, more: false }));
      const at = ep.from_ts;
      this.host.tooltip.attach(mark, () => [h("b", null, "Producer epoch "), fileText(ep.epoch, { max: 80, more: false }), h("div", null, `from ${instant(at, tz)}`)]);
      track.appendChild(mark);
    }
    for (const s of m.sessions) {
      if (s.resumed_after_ts === null) continue;
      const x = this.x(s.resumed_after_ts, width);
      if (x < -8 || x > width + 8) continue;
      const mark = h("div", { class: "dv-session-flag", style: { left: `${x}px` } });
      const at = s.resumed_after_ts;
      this.host.tooltip.attach(mark, () => [h("b", null, "Writer session resumed"), h("div", null, "session "), fileText(s.session, { max: 60, more: false }), h("div", null, `after ${instant(at, tz)}`)]);
      track.appendChild(mark);
    }
  }

  private renderLane(src: SourceInfo, st: StreamInfo, track: HTMLElement, width: number, tz: TimeZoneMode): void {
    const m = this.marks.get(src.id);
    if (m) {
      for (const ev of m.events) {
        const x = this.x(ev.timestamp, width);
        if (x >= 0 && x <= width) track.appendChild(h("div", { class: "dv-event-line", style: { left: `${x}px` } }));
      }
    }
    for (const n of this.host.notes?.(src.id) ?? []) {
      const x = this.x(n.from, width);
      if (x >= 0 && x <= width) track.appendChild(h("div", { class: "dv-note-line", style: { left: `${x}px` } }));
    }
    const span = streamSpan(st);
    if (span) {
      const a = Math.max(-1, this.x(span[0], width));
      const b = Math.min(width + 1, this.x(span[1], width));
      if (b >= 0 && a <= width) track.appendChild(h("div", { class: "dv-extent", style: { left: `${a}px`, width: `${Math.max(1, b - a)}px` } }));
    }
    const index = laneIndex(st);
    // The window in the index's doubles, a little wider so rounding loses nothing.
    const lo = Number(this.from - index.base);
    const hi = Number(this.to - index.base);
    const slack = (hi - lo) * 0.01 + 1;
    const scale = width / (hi - lo);
    // Blocks narrower than this merge with their neighbours, so a lane
    // draws at most about MAX_BLOCKS of them, whatever the zoom.
    const minBlock = Math.max(4, width / MAX_BLOCKS);

    for (let i = firstReaching(index.gapReach, lo - slack); i < index.gaps.length && index.gapFrom[i]! <= hi + slack; i++) {
      const g = index.gaps[i]!;
      const a = this.x(g.from, width);
      const b = this.x(g.to, width);
      if (b < 0 || a > width || b - a < Math.max(3, minBlock / 2)) continue;
      const el = h("div", { class: "dv-gap", style: { left: `${Math.max(0, a)}px`, width: `${Math.min(width, b) - Math.max(0, a)}px` } });
      if (b - a > 60) el.appendChild(h("span", null, `gap ${duration(g.to - g.from)}`));
      this.host.tooltip.attach(el, () => [
        h("b", null, `Gap of ${duration(g.to - g.from)}`),
        h("div", null, `between seq ${g.after.seq} and seq ${g.before.seq}`),
        g.missingSeqs > 0 ? h("div", null, `${g.missingSeqs} seq number${g.missingSeqs === 1 ? "" : "s"} absent`) : null,
        h("div", { class: "dv-muted" }, fmtSpan(g.from, g.to, tz)),
      ]);
      track.appendChild(el);
    }

    // Sealed segments, merged where they would be narrower than minBlock.
    let group: { x0: number; x1: number; lastW: number; segs: SegmentInfo[] } | null = null;
    const flush = () => {
      if (!group) return;
      const g = group;
      const w = Math.max(2, g.x1 - g.x0);
      const el = h("div", {
        class: "dv-seg" + (g.segs.length > 1 ? " dv-seg-many" : ""),
        style: { left: `${g.x0}px`, width: `${w}px` },
        data: g.segs.length === 1 ? { seq: g.segs[0]!.seq, testid: "segment" } : { testid: "segment", count: g.segs.length },
      });
      if (g.segs.length === 1 && w > 46) el.appendChild(h("span", null, `#${g.segs[0]!.seq}`));
      else if (g.segs.length > 1 && w > 70) el.appendChild(h("span", null, `${count(g.segs.length)} segments`));
      this.host.tooltip.attach(el, () => segmentTip(g.segs, tz));
      track.appendChild(el);
      group = null;
    };
    const start = firstReaching(index.reach, lo - slack);
    let end = start;
    while (end < index.segs.length && index.first[end]! <= hi + slack) end++;
    // Few segments in the window: exact positions from the bigint times.
    // Many: from the doubles, which are a fraction of a pixel off at most
    // when the window holds thousands of segments.
    const exact = end - start <= EXACT_SEGMENTS;
    for (let i = start; i < end; i++) {
      const seg = index.segs[i]!;
      const x0 = exact ? this.x(seg.first_ts, width) : (index.first[i]! - lo) * scale;
      const x1 = exact ? this.x(seg.last_ts, width) : (Number(seg.last_ts - index.base) - lo) * scale;
      if (x1 < -2 || x0 > width + 2) continue;
      const c0 = Math.max(-2, x0);
      const c1 = Math.min(width + 2, Math.max(x1, x0 + 2));
      // Neighbours too narrow to tell apart become one block; wider ones
      // keep a 1px seam between them.
      const narrow = c1 - c0 < minBlock;
      if (group && c0 <= group.x1 + 1.5 && (narrow || group.lastW < minBlock || group.x1 - group.x0 < minBlock)) {
        group.x1 = Math.max(group.x1, c1);
        group.lastW = c1 - c0;
        group.segs.push(seg);
      } else {
        flush();
        group = { x0: c0, x1: c1 - (c1 - c0 > 6 ? 1 : 0), lastW: c1 - c0, segs: [seg] };
      }
    }
    flush();
    if (st.live_rows > 0) this.renderLive(src, st, track, width, tz);
  }

  private renderLive(src: SourceInfo, st: StreamInfo, track: HTMLElement, width: number, tz: TimeZoneMode): void {
    let a: number;
    let b: number;
    if (st.live_span) {
      a = this.x(st.live_span[0], width);
      b = this.x(st.live_span[1], width);
      if (b < -2 || a > width + 2) return;
      a = Math.max(-2, a);
      b = Math.min(width + 2, Math.max(b, a + 8));
    } else {
      // Rows with no known times still exist: draw them at the end of the stream.
      const sealedEnd = st.segments.length > 0 ? this.x(st.segments[st.segments.length - 1]!.last_ts, width) : width / 2;
      a = Math.min(width - 40, Math.max(0, sealedEnd + 2));
      b = a + 40;
    }
    const rows = count(st.live_rows);
    const readable = src.live_readable;
    const full = readable ? `${rows} live rows · plotted with the sealed rows` : `${rows} live rows · not readable without the writer's encoder`;
    const el = h("div", {
      class: "dv-live" + (readable ? " dv-live-read" : ""),
      style: { left: `${a}px`, width: `${b - a}px` },
      data: { testid: "live", rows: st.live_rows, readable: String(readable) },
      "aria-label": full,
    });
    // The label may run past a narrow block into the empty lane beside it
    // (a live tail is normally the last thing in its lane).
    const need = full.length * 6.3 + 12;
    const right = width - a;
    const label = h("span", { class: "dv-live-label", data: { testid: "live-label" } }, full);
    if (right >= Math.min(need, 150) || right >= b) {
      label.style.left = `${Math.max(0, a) + 3}px`;
      label.style.maxWidth = `${Math.max(20, right - 6)}px`;
    } else {
      label.style.right = `${Math.max(0, width - b) + 3}px`;
      label.style.maxWidth = `${Math.max(20, b - 6)}px`;
      // The label reaches left over the lane's segments: the "#seq" tags it
      // would cover go (each segment still has its tooltip).
      const labelLeft = b - 3 - Math.min(need, b - 6);
      for (const tag of track.querySelectorAll<HTMLElement>(".dv-seg > span")) {
        const segLeft = parseFloat(tag.parentElement?.style.left ?? "0");
        if (segLeft + (tag.textContent ?? "").length * 6.3 + 12 > labelLeft) tag.remove();
      }
    }
    this.host.tooltip.attach(el, () => [
      h("b", null, `Live tail: ${count(st.live_rows)} rows`),
      h("div", null, "Committed by the writer, but not yet sealed into a segment."),
      h(
        "div",
        null,
        readable
          ? "Written with the self-describing encoder: plotted and tabled after the sealed rows."
          : "Not readable without the writer's encoder.",
      ),
      st.live_span ? h("div", { class: "dv-muted" }, fmtSpan(st.live_span[0], st.live_span[1], tz)) : null,
    ]);
    track.appendChild(el);
    track.appendChild(label);
  }

  // -------------------------------------------------------------------------
  // Zooming and panning

  private zoom(factor: number, anchor = 0.5): void {
    const w = Number(this.to - this.from);
    const nw = Math.max(Number(MIN_WINDOW), w * factor);
    const at = this.from + BigInt(Math.round(w * anchor));
    const from = at - BigInt(Math.round(nw * anchor));
    this.host.onWindow(from, from + BigInt(Math.round(nw)));
  }

  private pan(fraction: number): void {
    const d = BigInt(Math.round(Number(this.to - this.from) * fraction));
    this.host.onWindow(this.from + d, this.to + d);
  }

  private dragged = false;

  private installPointer(): void {
    let start: number | null = null;
    let sel: HTMLElement | null = null;
    let noteLane: Lane | null = null;
    const rel = (ev: PointerEvent): number => {
      const r = this.axisTrack.getBoundingClientRect();
      return Math.max(0, Math.min(r.width, ev.clientX - r.left));
    };
    this.body.addEventListener("pointerdown", (ev) => {
      const t = ev.target as HTMLElement;
      if (ev.button !== 0 || !t.closest(".dv-tl-track") || t.closest(".dv-tl-mini")) return;
      start = rel(ev);
      this.dragged = false;
      noteLane = ev.altKey ? (this.lanes.find((l) => l.row.contains(t)) ?? null) : null;
      sel = h("div", { class: "dv-tl-sel", style: { left: `${start}px`, width: "0px" } });
      this.overlay.appendChild(sel);
      this.body.setPointerCapture(ev.pointerId);
    });
    this.body.addEventListener("pointerleave", () => this.bus?.cursor(null, this));
    this.body.addEventListener("pointermove", (ev) => {
      if (start === null || !sel) {
        // Over the lanes or the axis (not dragging): the page's cursor is here.
        const t = ev.target as HTMLElement;
        if (!this.bus || this.lastWidth <= 0 || !t.closest?.(".dv-tl-track") || t.closest(".dv-tl-mini")) return;
        const ns = this.from + BigInt(Math.round((rel(ev) / this.lastWidth) * Number(this.to - this.from)));
        this.placeCursor(ns);
        this.bus.cursor(ns, this);
        return;
      }
      const x = rel(ev);
      if (Math.abs(x - start) > 3) this.dragged = true;
      sel.style.left = `${Math.min(x, start)}px`;
      sel.style.width = `${Math.abs(x - start)}px`;
    });
    const end = (ev: PointerEvent) => {
      if (start === null) return;
      const x = rel(ev);
      const s = start;
      start = null;
      sel?.remove();
      sel = null;
      if (this.body.hasPointerCapture(ev.pointerId)) this.body.releasePointerCapture(ev.pointerId);
      const width = this.axisTrack.clientWidth;
      const w = Number(this.to - this.from);
      const a = this.from + BigInt(Math.round((Math.min(s, x) / width) * w));
      const b = this.from + BigInt(Math.round((Math.max(s, x) / width) * w));
      if (noteLane && this.host.onNote) {
        this.host.onNote(noteLane.source.id, a, this.dragged ? b : null);
        // Not a zoom, and the click that follows selects no lane.
        this.dragged = true;
      } else if (this.dragged && b - a >= MIN_WINDOW) this.host.onWindow(a, b);
      if (!this.dragged) return;
      // The click that follows a drag must not select a lane.
      setTimeout(() => (this.dragged = false), 0);
    };
    this.body.addEventListener("pointerup", end);
    this.body.addEventListener("pointercancel", end);
    this.body.addEventListener(
      "wheel",
      (ev) => {
        if (ev.ctrlKey || ev.metaKey) {
          ev.preventDefault();
          const r = this.axisTrack.getBoundingClientRect();
          const anchor = Math.max(0, Math.min(1, (ev.clientX - r.left) / r.width));
          this.zoom(ev.deltaY > 0 ? 1.25 : 0.8, anchor);
        } else if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
          ev.preventDefault();
          // In proportion to the delta: a swipe across the lanes' width
          // moves the window by its width, however the browser merged the
          // events (a mouse notch, 100 px, is a tenth of a 1000 px track).
          const d = (ev.shiftKey && ev.deltaY !== 0 ? ev.deltaY : ev.deltaX) * wheelUnit(ev, this.axisTrack.clientWidth);
          const width = this.axisTrack.clientWidth || 1000;
          if (d !== 0) this.pan(Math.max(-1, Math.min(1, d / width)));
        }
      },
      { passive: false },
    );
    this.miniTrack.addEventListener("click", (ev) => {
      const r = this.miniTrack.getBoundingClientRect();
      const f = (ev.clientX - r.left) / r.width;
      const [a, b] = this.full;
      const center = a + BigInt(Math.round(Number(b - a) * f));
      const half = (this.to - this.from) / 2n;
      this.host.onWindow(center - half, center + half);
    });
  }
}

/** What matches a lane across descriptions: its source's id, and its stream's name. */
function laneKey(src: SourceInfo, st: StreamInfo | null): string {
  return st ? `${src.id}\u0000${st.name}` : `${src.id}`;
}

function rowsText(st: StreamInfo): string {
  return `${count(st.sealed_rows + st.live_rows)} rows`;
}

/** Whether the timeline's marks (events, epochs, resumed sessions) of two descriptions of a source are the same. */
function sameMarks(a: SourceInfo, b: SourceInfo): boolean {
  for (const k of ["events", "producer_epochs", "writer_sessions"]) if (a.metadata[k] !== b.metadata[k]) return false;
  return true;
}

/** Pixels per unit of a wheel event's delta. */
function wheelUnit(ev: WheelEvent, width: number): number {
  if (ev.deltaMode === WheelEvent.DOM_DELTA_LINE) return 40;
  if (ev.deltaMode === WheelEvent.DOM_DELTA_PAGE) return width || 1000;
  return 1;
}

function segmentTip(segs: SegmentInfo[], tz: TimeZoneMode): Child {
  if (segs.length === 1) {
    const s = segs[0]!;
    return [
      h("b", null, `Segment seq ${s.seq}`),
      h("div", null, `${count(s.rows)} rows · ${bytes(s.bytes)} (${count(s.bytes)} bytes)`),
      h("div", null, `caller index: ${s.caller_index ? "present" : "none"}`),
      h("div", { class: "dv-muted" }, fmtSpan(s.first_ts, s.last_ts, tz)),
    ];
  }
  let rows = 0;
  let size = 0;
  let indexed = 0;
  for (const s of segs) {
    rows += s.rows;
    size += s.bytes;
    if (s.caller_index) indexed++;
  }
  const first = segs[0]!;
  const last = segs[segs.length - 1]!;
  return [
    h("b", null, `${count(segs.length)} segments (seq ${first.seq}–${last.seq})`),
    h("div", null, `${count(rows)} rows · ${bytes(size)}`),
    h("div", null, `caller index on ${indexed} of ${segs.length}`),
    h("div", { class: "dv-muted" }, fmtSpan(first.first_ts, last.last_ts, tz)),
    h("div", { class: "dv-muted" }, "zoom in to see them one by one"),
  ];
}

function eventTip(ev: ArchiveEvent, tz: TimeZoneMode): Child {
  return [
    h("b", null, "Event", ev.kind !== null ? [" · ", fileText(ev.kind, { max: 40, more: false })] : null),
    h("div", null, fileText(ev.description, { max: 300, more: false })),
    h("div", { class: "dv-muted" }, instant(ev.timestamp, tz)),
    ev.id !== null ? h("div", { class: "dv-muted" }, "id ", fileText(ev.id, { max: 60, more: false })) : null,
    ev.details !== undefined && ev.details !== null
      ? h("div", { class: "dv-mono" }, fileText(typeof ev.details === "string" ? ev.details : JSON.stringify(ev.details), { max: 300, more: false }))
      : null,
  ];
}

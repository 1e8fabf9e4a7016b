// One open archive: overview, sources, timeline and the selected stream,
// sharing one time window.

import type { ArchiveHandle, Description } from "../engine/types";
import { CAPS, type Filtered, filterCatalog, needsFilter, plural, shownText } from "./catalog";
import { debounce, h, moreBar, replace } from "./dom";
import { type TimeZoneMode, count, floorDiv } from "./format";
import { type Span, archiveSpan, fullWindow, originFor, streamSpan } from "./model";
import { Overview, marksOf, sourceCard } from "./overview";
import type { Dialog, Tooltip } from "./overlay";
import type { ViewState } from "./state";
import { StreamView } from "./stream";
import { type SourceMarks, Timeline } from "./timeline";

export interface ArchiveHost {
  tz(): TimeZoneMode;
  tooltip: Tooltip;
  dialog: Dialog;
  /** The view changed (selection, window, columns): the URL may follow. */
  changed(view: ArchiveView): void;
}

export interface ArchiveMeta {
  name: string;
  url: string | null;
}

/**
 * An archive read in place first shows at most this many bytes of its
 * first stream's segments, the newest: a window over everything reads
 * every segment's footer, which SQLite reaches only by walking the
 * segment's whole overflow chain, so for a file of gigabytes the whole
 * file. The timeline still spans the archive; zooming out shows the rest.
 */
export const FIRST_VIEW_IN_PLACE_BYTES = 8 << 20;

/** The newest segments of `st` up to `budget` bytes (at least one), as a span; null when all fit. */
function newestSpan(st: Description["sources"][number]["streams"][number], budget: number): Span | null {
  const segs = st.segments;
  let bytes = 0;
  let k = segs.length;
  while (k > 0 && bytes + segs[k - 1]!.bytes <= budget) bytes += segs[--k]!.bytes;
  if (k === 0) return null;
  if (k === segs.length) k--;
  const end = streamSpan(st)?.[1] ?? segs[segs.length - 1]!.last_ts;
  return [segs[k]!.first_ts, end];
}

interface Pick {
  source: number;
  stream: string;
  seq?: number | undefined;
  columns?: string[] | undefined;
  notify?: boolean;
}

export class ArchiveView {
  readonly el: HTMLElement;
  private readonly overview: Overview;
  /** Built a frame after the overview, with the sources and the stream view. */
  private timeline: Timeline | null = null;
  /** The stream to open once built. */
  private pending: Pick | null = null;
  private destroyed = false;
  private readonly streamSlot: HTMLElement;
  private readonly sources: HTMLElement;
  private readonly overviewHost: Parameters<typeof sourceCard>[0];
  /** What the filter keeps; everything until someone types in it. */
  private filtered: Filtered;
  /** Source cards to build: the first batch, more on request. */
  private cardLimit: number = CAPS.sourceCards;
  private cardsBuilt = 0;
  /** After the cards: what they left out, and "show more". */
  private readonly sourcesFoot = h("div", { class: "dv-sources-foot" });
  private readonly finder: HTMLElement | null;
  private readonly finderCount: HTMLElement;
  private streamView: StreamView | null = null;
  private streamInit: Promise<void> = Promise.resolve();
  private readonly full: Span;
  private readonly origin: bigint;
  private from: bigint;
  private to: bigint;

  constructor(
    private readonly host: ArchiveHost,
    readonly handle: ArchiveHandle,
    readonly desc: Description,
    readonly meta: ArchiveMeta,
    init: ViewState = {},
  ) {
    this.full = fullWindow(archiveSpan(desc));
    this.origin = originFor(this.full);
    [this.from, this.to] = init.from !== undefined && init.to !== undefined && init.to > init.from ? [init.from, init.to] : this.full;

    const overviewHost = {
      handle,
      name: meta.name,
      url: meta.url,
      dialog: host.dialog,
      tz: () => host.tz(),
      onSelect: (source: number, stream: string) => this.select(source, stream),
    };
    this.overviewHost = overviewHost;
    this.overview = new Overview(overviewHost, desc);
    this.streamSlot = h("div", { class: "dv-stream-slot" });
    this.sources = h("section", { class: "dv-sources", data: { testid: "sources" } });
    this.filtered = filterCatalog(desc, "");
    // An archive too large to show whole at first gets a filter: the way
    // to any source or stream the caps left out.
    this.finderCount = h("span", { class: "dv-finder-count", data: { testid: "finder-count" } });
    this.finder = needsFilter(desc) ? this.buildFinder() : null;
    // The overview goes in alone, so it is laid out and painted on its own;
    // the source cards, timeline and stream view follow once that frame is
    // up (a frame, then a task, so they do not join the overview's paint).
    this.el = h(
      "div",
      { class: "dv-archive", data: { testid: "archive" } },
      this.overview.el,
      this.finder,
      desc.sources.length === 0
        ? h("div", { class: "dv-panel dv-empty-archive" }, "This archive is sound but empty: it holds no sources, streams or rows yet.")
        : null,
    );

    // Open the asked-for stream, else the first one with sealed rows to plot.
    let pick: Pick | null = null;
    if (init.source !== undefined && init.stream !== undefined) {
      const src = desc.sources.find((s) => s.id === init.source);
      if (src?.streams.some((s) => s.name === init.stream)) pick = { source: init.source, stream: init.stream, columns: init.columns };
    }
    if (!pick) {
      outer: for (const src of desc.sources)
        for (const st of src.streams)
          if (st.segments.length > 0) {
            pick = { source: src.id, stream: st.name, columns: init.columns };
            break outer;
          }
    }
    this.pending = pick;
    if (pick && handle.mode === "lazy" && !(init.from !== undefined && init.to !== undefined && init.to > init.from)) {
      const st = desc.sources.find((x) => x.id === pick.source)?.streams.find((x) => x.name === pick.stream);
      const newest = st ? newestSpan(st, FIRST_VIEW_IN_PLACE_BYTES) : null;
      if (newest) [this.from, this.to] = fullWindow(newest);
    }

    let started = false;
    const build = () => {
      if (started || this.destroyed) return;
      started = true;
      this.build();
    };
    requestAnimationFrame(() => setTimeout(build, 0));
    // A page whose frames are throttled (hidden, or an offscreen iframe) still builds.
    setTimeout(build, 250);
  }

  private buildFinder(): HTMLElement {
    const input = h("input", {
      type: "search",
      class: "dv-finder-input",
      placeholder: "Filter by stream name, label, source id…",
      "aria-label": "Filter sources and streams",
      data: { testid: "filter" },
    });
    const apply = debounce(() => this.setFilter(input.value), 150);
    input.addEventListener("input", apply);
    const el = h(
      "div",
      { class: "dv-finder", data: { testid: "finder" } },
      h("span", { class: "dv-finder-label" }, "Find"),
      input,
      this.finderCount,
    );
    this.paintFinderCount();
    return el;
  }

  private paintFinderCount(): void {
    const f = this.filtered;
    let total = 0;
    for (const src of this.desc.sources) total += src.streams.length;
    this.finderCount.textContent = f.query
      ? `${plural(f.matches.length, "source")} and ${plural(f.streams, "stream")} match, of ${plural(this.desc.sources.length, "source")} and ${plural(total, "stream")}`
      : `${plural(this.desc.sources.length, "source")}, ${plural(total, "stream")}: too many to show at once; type to find one`;
  }

  /** Narrows the source cards and the timeline's lanes to what matches `query`. */
  setFilter(query: string): void {
    if (query.trim() === this.filtered.query) return;
    this.filtered = filterCatalog(this.desc, query);
    this.cardLimit = CAPS.sourceCards;
    this.paintFinderCount();
    this.renderSources();
    this.timeline?.setCatalog(this.filtered);
  }

  /** The first source cards of what the filter keeps, and a line saying what was left out. */
  private renderSources(): void {
    if (!this.timeline) return;
    const f = this.filtered;
    this.cardsBuilt = 0;
    replace(
      this.sources,
      f.matches.length === 0 && f.query ? h("div", { class: "dv-panel dv-empty-note" }, "No source or stream matches the filter.") : null,
      this.sourcesFoot,
    );
    this.moreSources(this.cardLimit);
  }

  /** Builds the next `n` cards (only those: the ones built stay) and says what is still left out. */
  private moreSources(n: number): void {
    const f = this.filtered;
    const next = f.matches.slice(this.cardsBuilt, this.cardsBuilt + n);
    for (const m of next) this.sources.insertBefore(sourceCard(this.overviewHost, m.source, m.streams, f.query !== ""), this.sourcesFoot);
    this.cardsBuilt += next.length;
    this.cardLimit = Math.max(this.cardLimit, this.cardsBuilt);
    const note = shownText(this.cardsBuilt, f.matches.length, "source", f.query !== "");
    const left = f.matches.length - this.cardsBuilt;
    replace(
      this.sourcesFoot,
      note
        ? moreBar(
            `${note}.${this.finder ? " Type in the filter above to find one." : ""}`,
            { label: `Show ${count(Math.min(CAPS.sourceCards, left))} more`, onClick: () => this.moreSources(CAPS.sourceCards) },
            "sources-more",
          )
        : null,
    );
  }

  private build(): void {
    const desc = this.desc;
    const marks = new Map<number, SourceMarks>();
    for (const src of desc.sources) marks.set(src.id, marksOf(src));
    const timeline = new Timeline(
      {
        tz: () => this.host.tz(),
        tooltip: this.host.tooltip,
        onWindow: (a, b) => this.setWindow(a, b),
        onSelect: (source, stream, seq) => this.select(source, stream, seq),
      },
      this.filtered,
      this.full,
      marks,
    );
    this.timeline = timeline;
    this.renderSources();
    if (desc.sources.length > 0) this.el.append(this.sources, timeline.el);
    this.el.append(this.streamSlot);
    timeline.setWindow(this.from, this.to);

    const pick = this.pending;
    this.pending = null;
    if (pick) this.select(pick.source, pick.stream, pick.seq, pick.columns, pick.notify ?? false);
    // verify reads every segment; the worker answers in order, so it waits
    // until the first plot is up (or a moment has passed) instead of
    // standing in front of it. Read in place, it reads the whole file
    // again: past a size, or over the network, it waits for a click.
    if (this.overview.verifiesOnClick) return;
    const first = this.streamView ? this.streamInit.then(() => this.streamView?.firstPlot()) : Promise.resolve();
    void Promise.race([first, new Promise((r) => setTimeout(r, 2500))]).then(() => this.overview.verify());
  }

  destroy(): void {
    this.destroyed = true;
    this.streamView?.destroy();
    this.timeline?.destroy();
  }

  /** Called when the tab becomes visible (sizes were zero while hidden). */
  shown(): void {
    this.timeline?.render();
  }

  setWindow(from: bigint, to: bigint): void {
    if (to <= from) return;
    // Ends rounded to about a thousandth of the width: a dragged window reads
    // (and bookmarks) as 22:16:45.919 rather than 22:16:45.919604113.
    const q = 10n ** BigInt(Math.max(0, Math.floor(Math.log10(Number(to - from) / 1000))));
    from = floorDiv(from, q) * q;
    to = -floorDiv(-to, q) * q;
    this.from = from;
    this.to = to;
    this.timeline?.setWindow(from, to);
    this.streamView?.setWindow(from, to);
    this.host.changed(this);
  }

  select(source: number, stream: string, seq?: number, columns?: string[], notify = true): void {
    const src = this.desc.sources.find((s) => s.id === source);
    const st = src?.streams.find((s) => s.name === stream);
    if (!src || !st) return;
    if (!this.timeline) {
      // Not built yet: the stream view opens with the rest.
      this.pending = { source, stream, seq, columns, notify };
      return;
    }
    if (this.streamView && this.streamView.source.id === source && this.streamView.stream.name === stream) {
      if (seq !== undefined) this.streamView.showSegment(seq);
      return;
    }
    this.streamView?.destroy();
    const keep = columns ?? (this.streamView ? this.streamView.columns() : undefined);
    // A stream that would be a sliver (or absent) in the current window is
    // brought into view when a person picks it; a window from the URL stays.
    const sp = streamSpan(st);
    if (notify && sp) {
      const w = Number(this.to - this.from);
      const outside = sp[1] < this.from || sp[0] > this.to;
      if (outside || Number(sp[1] - sp[0]) < w * 0.02) [this.from, this.to] = fullWindow(sp);
      this.timeline.setWindow(this.from, this.to);
    }
    this.streamView = new StreamView(
      {
        handle: this.handle,
        origin: this.origin,
        dialog: this.host.dialog,
        tz: () => this.host.tz(),
        window: () => [this.from, this.to],
        fullWindow: () => (sp ? fullWindow(sp) : this.full),
        onWindow: (a, b) => this.setWindow(a, b),
        onColumns: () => this.host.changed(this),
      },
      src,
      st,
      keep,
      seq,
    );
    replace(this.streamSlot, this.streamView.el);
    // A stream past the timeline's cap (opened from the URL or a card) gets its lane.
    this.timeline.reveal(st);
    this.timeline.setSelected(source, stream);
    this.streamInit = this.streamView.init().then(() => this.host.changed(this));
    if (notify) {
      this.host.changed(this);
      // Bring the new stream view into sight without a smooth scroll that
      // would move the timeline while the pointer is still on it.
      const r = this.streamSlot.getBoundingClientRect();
      if (r.top > window.innerHeight - 120) this.streamSlot.scrollIntoView({ block: "start" });
    }
  }

  tzChanged(): void {
    this.overview.relabel();
    this.renderSources();
    this.timeline?.render();
    this.streamView?.relabel();
  }

  state(): ViewState {
    const s: ViewState = {};
    if (this.meta.url) s.url = this.meta.url;
    if (this.pending) {
      s.source = this.pending.source;
      s.stream = this.pending.stream;
      if (this.pending.columns && this.pending.columns.length > 0) s.columns = this.pending.columns;
    } else if (this.streamView) {
      s.source = this.streamView.source.id;
      s.stream = this.streamView.stream.name;
      const cols = this.streamView.columns();
      if (cols.length > 0) s.columns = cols;
    }
    if (this.from !== this.full[0] || this.to !== this.full[1]) {
      s.from = this.from;
      s.to = this.to;
    }
    return s;
  }
}

// One open archive: overview, sources, timeline and the selected stream,
// sharing one time window.

import type { ArchiveHandle, Description, Engine, FollowTraffic, SourceInfo, StreamInfo, StreamSchema } from "../engine/types";
import { CAPS, type Filtered, filterCatalog, needsFilter, plural, shownText } from "./catalog";
import { debounce, h, moreBar, replace, setText } from "./dom";
import { explain, isChanged } from "./errors";
import { type TimeZoneMode, count, floorDiv } from "./format";
import { type Span, archiveSpan, fullWindow, originFor, streamSpan, totals } from "./model";
import { NotesPanel } from "./annotate";
import { DocumentsSection } from "./documents";
import { Overview, type OverviewHost, SourceCard, marksOf } from "./overview";
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
  /** Compare stream `name` across every source of every open archive. */
  compare?(name: string): void;
  /**
   * Whether an archive opens quietly: no first plot unless a stream was
   * asked for, and verify on a click (absent: not quietly). The viewer
   * says so for tabs behind the one in front while a comparison is open
   * or asked for, and for the one in front until the comparison has
   * drawn (then `openFirst`): thirty-two archives' first plots and
   * verifies, or one wide stream's, would hold the worker ahead of it.
   */
  quiet?(): boolean;
  /**
   * Whether a comparison is open or asked for: verify then waits for a
   * click in the tab in front too. Once started it holds the worker for
   * the whole file (16 s for 98 MB read in place), and the comparison's
   * reads waited behind it.
   */
  comparing?(): boolean;
  /** A person chose this window (not a followed archive's own move): other plots on the page may follow. */
  windowChosen?(view: ArchiveView, from: bigint, to: bigint): void;
}

export interface ArchiveMeta {
  name: string;
  url: string | null;
  /** Follow the URL while a writer appends to it: the engine that opened it. */
  follow?: Engine;
}

/** The main-thread time of the last update's parts (ms), for benchmarks. */
export let lastUpdate: Record<string, number> = {};

/** How often a followed archive is revalidated (ms); a 304 costs a header. */
export const FOLLOW_POLL_MS = 250;
/** The longest wait between attempts while the server cannot be reached (ms). */
const FOLLOW_RETRY_MAX_MS = 2000;
/**
 * How many images replaced while being read are followed by an immediate
 * retry; past that (a server whose images never hold still) the retries
 * back off as after a failure.
 */
const FOLLOW_REPLACED_AT_ONCE = 3;

interface Pick {
  source: number;
  stream: string;
  seq?: number | undefined;
  columns?: string[] | undefined;
  notify?: boolean;
}

/** The window a view opens on: the one asked for, if it is one, else the whole span. */
function startWindow(init: ViewState, full: Span): Span {
  return init.from !== undefined && init.to !== undefined && init.to > init.from ? [init.from, init.to] : full;
}

export class ArchiveView {
  readonly el: HTMLElement;
  private readonly overview: Overview;
  /** A schema-5 archive's documents (null for schema 4, which has none). */
  private readonly documents: DocumentsSection | null;
  /** Built a frame after the overview, with the sources and the stream view. */
  private timeline: Timeline | null = null;
  /** The stream to open once built. */
  private pending: Pick | null = null;
  /** The first stream's schema, asked for as the archive opened (see the constructor). */
  private schemaAhead: { source: number; stream: string; handle: ArchiveHandle; schema: Promise<StreamSchema> } | null = null;
  private destroyed = false;
  private readonly streamSlot: HTMLElement;
  private readonly sources: HTMLElement;
  private readonly overviewHost: OverviewHost;
  /** What the filter keeps; everything until someone types in it. */
  private filtered: Filtered;
  /** Source cards to build: the first batch, more on request. */
  private cardLimit: number = CAPS.sourceCards;
  /** The cards built, in order. */
  private cards: SourceCard[] = [];
  /** After the cards: what they left out, and "show more". */
  private readonly sourcesFoot = h("div", { class: "dv-sources-foot" });
  private readonly finder: HTMLElement | null;
  private readonly finderCount: HTMLElement;
  private streamView: StreamView | null = null;
  /** The archive's notes (annotate.ts), built with the timeline. */
  notes: NotesPanel | null = null;
  private streamInit: Promise<void> = Promise.resolve();
  private full: Span;
  private origin: bigint;
  /** Shown in place of the timeline and plots while an outline waits for the full description (see `described`). */
  private listingNote: HTMLElement | null = null;
  private from: bigint;
  private to: bigint;
  /** Following: the window keeps the newest data in sight (off when a person pans back). */
  private following = false;
  private readonly followBar: HTMLElement | null = null;
  private readonly followBtn: HTMLButtonElement | null = null;
  private readonly followStatus: HTMLElement | null = null;
  /** The image replaced last, closed at the next update (reads in flight on it finish). */
  private previous: ArchiveHandle | null = null;
  private followTimer: ReturnType<typeof setTimeout> | null = null;
  /** Images opened since the first, and the traffic of the URL so far. */
  private updates = 0;
  traffic: FollowTraffic = { netBytes: 0, requests: 0, units: 0 };

  constructor(
    private readonly host: ArchiveHost,
    public handle: ArchiveHandle,
    public desc: Description,
    readonly meta: ArchiveMeta,
    private readonly init: ViewState = {},
  ) {
    this.full = fullWindow(archiveSpan(desc));
    this.origin = originFor(this.full);
    [this.from, this.to] = startWindow(init, this.full);

    const overviewHost = {
      handle: handle as ArchiveHandle,
      name: meta.name,
      url: meta.url,
      dialog: host.dialog,
      tz: () => host.tz(),
      onSelect: (source: number, stream: string) => this.select(source, stream),
      followed: !!(meta.follow && meta.url),
    };
    this.overviewHost = overviewHost;
    this.overview = new Overview(overviewHost, desc);
    this.documents = DocumentsSection.for(overviewHost, desc);
    this.streamSlot = h("div", { class: "dv-stream-slot" });
    this.sources = h("section", { class: "dv-sources", data: { testid: "sources" } });
    this.filtered = filterCatalog(desc, "");
    // An archive too large to show whole at first gets a filter: the way
    // to any source or stream the caps left out.
    this.finderCount = h("span", { class: "dv-finder-count", data: { testid: "finder-count" } });
    this.finder = needsFilter(desc) ? this.buildFinder() : null;
    if (meta.follow && meta.url) {
      this.followBtn = h(
        "button",
        {
          type: "button",
          class: "dv-btn dv-follow",
          title: "Keep the newest data in sight as the writer appends (panning back turns this off)",
          data: { testid: "follow", on: "false" },
          on: { click: () => this.setFollow(!this.following) },
        },
        "Follow",
      );
      this.followStatus = h("span", { class: "dv-muted dv-small", data: { testid: "follow-status", state: "watching" } }, "watching for new data");
      this.followBar = h("div", { class: "dv-follow-bar", data: { testid: "follow-bar" } }, this.followBtn, " ", this.followStatus);
      this.following = true;
    }
    // The overview goes in alone, so it is laid out and painted on its own;
    // the source cards, timeline and stream view follow once that frame is
    // up (a frame, then a task, so they do not join the overview's paint).
    this.el = h(
      "div",
      { class: "dv-archive", data: { testid: "archive" } },
      this.overview.el,
      this.documents?.el ?? null,
      this.followBar,
      this.finder,
      desc.sources.length === 0
        ? h("div", { class: "dv-panel dv-empty-archive" }, "This archive is sound but empty: it holds no sources, streams or rows yet.")
        : null,
    );
    // An outline (a large archive read in place): the overview's counts
    // and span now, the cards, timeline and plots once `described` brings
    // the full description.
    if (desc.outline) {
      this.listingNote = h(
        "div",
        { class: "dv-panel dv-listing-note", data: { testid: "listing" } },
        `Listing the catalog's ${plural(totals(desc).segments, "segment")}: the timeline and plots follow…`,
      );
      this.el.append(this.listingNote);
      // The source cards from the outline too, a frame after the overview
      // (a stream picked in one opens once the listing is read).
      requestAnimationFrame(() => setTimeout(() => this.outlineCards(), 0));
      return;
    }
    this.begin();
  }

  /**
   * The full description after an outline: the overview takes its counts,
   * and the view is built as it is for an archive described at once.
   */
  described(desc: Description): void {
    if (this.destroyed || !this.desc.outline) return;
    this.desc = desc;
    this.full = fullWindow(archiveSpan(desc));
    this.origin = originFor(this.full);
    [this.from, this.to] = startWindow(this.init, this.full);
    this.overview.update(desc);
    this.documents?.update(desc);
    this.filtered = filterCatalog(desc, this.filtered.query);
    if (this.finder) this.paintFinderCount();
    this.listingNote?.remove();
    this.listingNote = null;
    this.begin();
  }

  /** An outline's source cards, before the timeline: their streams' rows are counted once `described`. */
  private outlineCards(): void {
    if (this.destroyed || !this.desc.outline || !this.listingNote) return;
    this.renderSources();
    if (this.desc.sources.length > 0) this.el.insertBefore(this.sources, this.listingNote);
  }

  /** Picks the stream to open, asks ahead for what its plot reads, and builds the rest a frame later. */
  private begin(): void {
    const { desc, handle, init } = this;
    // The stream picked in an outline's cards, else the asked-for one,
    // else the first one with sealed rows to plot.
    let pick: Pick | null = this.pending;
    if (!pick && init.source !== undefined && init.stream !== undefined) {
      const src = desc.sources.find((s) => s.id === init.source);
      if (src?.streams.some((s) => s.name === init.stream)) pick = { source: init.source, stream: init.stream, columns: init.columns };
    }
    if (!pick && this.host.quiet?.() !== true) {
      const first = firstPlotted(desc);
      if (first) pick = { ...first, columns: init.columns };
    }
    this.pending = pick;
    // The first plot's schema is asked for now and, read in place, its
    // footers fetched, while this frame and the cards are built (the
    // worker is idle meanwhile), not once the stream view is up.
    if (pick) {
      const schema = handle.schema(pick.source, pick.stream);
      schema.catch(() => {});
      this.schemaAhead = { source: pick.source, stream: pick.stream, handle, schema };
      if (handle.mode === "lazy") void handle.prefetch(pick.source, pick.stream, this.from, this.to).catch(() => {});
    }
    this.el.addEventListener("keydown", (ev) => this.onKey(ev));
    if (this.following) {
      this.paintFollow();
      this.followWindow();
      this.scheduleFollow(FOLLOW_POLL_MS);
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
    // Built with the timeline, or from an outline before it.
    if (!this.timeline && !this.desc.outline) return;
    const f = this.filtered;
    this.cards = [];
    replace(
      this.sources,
      f.matches.length === 0 && f.query ? h("div", { class: "dv-panel dv-empty-note" }, "No source or stream matches the filter.") : null,
      this.sourcesFoot,
    );
    this.moreSources(this.cardLimit);
  }

  /**
   * The cards take a newer description in place: a card of a source still
   * among the first kept is patched (see SourceCard.update), a source new
   * there gets a card, and the cards of sources gone are removed.
   */
  private patchSources(): void {
    if (!this.timeline) return;
    const f = this.filtered;
    if (f.matches.length === 0 || this.sources.querySelector(":scope > .dv-empty-note")) {
      this.renderSources();
      return;
    }
    const old = new Map(this.cards.map((c) => [c.id, c]));
    const next = f.matches.slice(0, Math.max(this.cardLimit, this.cards.length));
    const filtered = f.query !== "";
    this.cards = next.map((m) => {
      const card = old.get(m.source.id);
      if (card) card.update(m.source, m.streams, filtered);
      return card ?? new SourceCard(this.overviewHost, m.source, m.streams, filtered);
    });
    let at = this.sources.firstChild;
    for (const card of this.cards) {
      if (at === card.el) at = at.nextSibling;
      else this.sources.insertBefore(card.el, at);
    }
    while (at && at !== this.sourcesFoot) {
      const gone = at;
      at = at.nextSibling;
      gone.remove();
    }
    this.moreSources(0);
  }

  /** Builds the next `n` cards (only those: the ones built stay) and says what is still left out. */
  private moreSources(n: number): void {
    const f = this.filtered;
    const next = f.matches.slice(this.cards.length, this.cards.length + n);
    for (const m of next) {
      const card = new SourceCard(this.overviewHost, m.source, m.streams, f.query !== "");
      this.sources.insertBefore(card.el, this.sourcesFoot);
      this.cards.push(card);
    }
    const built = this.cards.length;
    this.cardLimit = Math.max(this.cardLimit, built);
    const note = shownText(built, f.matches.length, "source", f.query !== "");
    const left = f.matches.length - built;
    const text = note ? `${note}.${this.finder ? " Type in the filter above to find one." : ""}` : "";
    if (this.sourcesFoot.dataset["text"] === text && n === 0) return;
    this.sourcesFoot.dataset["text"] = text;
    replace(
      this.sourcesFoot,
      note
        ? moreBar(
            text,
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
    const tz = () => this.host.tz();
    const notes = new NotesPanel({ tz, window: () => [this.from, this.to], source: () => this.streamView?.source.id ?? null, show: (a, b) => this.setWindow(a, b), name: this.meta.name }, desc, this.init);
    this.notes = notes;
    const timeline = new Timeline(
      {
        tz,
        tooltip: this.host.tooltip,
        onWindow: (a, b) => this.setWindow(a, b),
        onSelect: (source, stream, seq) => this.select(source, stream, seq),
        notes: (s) => notes.book.marks(s),
        onNote: (s, a, b) => notes.setMark(s, a, b),
      },
      this.filtered,
      this.full,
      marks,
    );
    this.timeline = timeline;
    this.renderSources();
    if (desc.sources.length > 0) this.el.append(this.sources, timeline.el);
    if (notes.warning) this.el.prepend(notes.warning);
    notes.book.onChange(() => {
      timeline.notesChanged();
      this.streamView?.redrawPlots();
    });
    notes.listen(this.el);
    // Under the plots: the timeline and the plots stay next to each other.
    this.el.append(this.streamSlot);
    if (desc.sources.length > 0) this.el.append(notes.el);
    timeline.setWindow(this.from, this.to);

    const pick = this.pending;
    this.pending = null;
    if (pick) this.select(pick.source, pick.stream, pick.seq, pick.columns, pick.notify ?? false);
    // verify reads every segment; the worker runs it only when no other
    // request waits, but once started it holds the worker, so it is sent
    // when the first plot is up (or a moment has passed) instead of
    // standing in front of it. The moment counts from the stream view's
    // start, when its plot's request is on its way: counted from here, a
    // slow schema let verify in ahead of the plot, which then waited for
    // a whole file's reading. Read in place, verify reads the whole file
    // again: past a size, or over the network, it waits for a click.
    if (this.overview.verifiesOnClick) return;
    if (this.host.quiet?.() === true || this.host.comparing?.() === true) {
      this.overview.verifyLater();
      return;
    }
    const moment = () => new Promise<void>((r) => setTimeout(r, 2500));
    const first = this.streamView
      ? this.streamInit.then(() => Promise.race([this.streamView?.firstPlot(), moment()]))
      : Promise.resolve();
    void first.catch(() => {}).then(() => this.overview.verify());
  }

  destroy(): void {
    this.destroyed = true;
    if (this.followTimer !== null) clearTimeout(this.followTimer);
    this.followTimer = null;
    void this.previous?.close().catch(() => {});
    this.previous = null;
    this.streamView?.destroy();
    this.timeline?.destroy();
    this.notes?.destroy();
  }

  // -------------------------------------------------------------------------
  // Following an archive a writer appends to

  private setFollow(on: boolean): void {
    if (!this.followBtn || on === this.following) return;
    this.following = on;
    this.paintFollow();
    if (on) this.followWindow();
  }

  private paintFollow(): void {
    if (!this.followBtn) return;
    this.followBtn.dataset["on"] = String(this.following);
    this.followBtn.textContent = this.following ? "● Following" : "Follow";
    this.followBtn.setAttribute("aria-pressed", String(this.following));
  }

  /**
   * The follow status, after every revalidation (four a second). Only what
   * changed is written: an unchanged text or attribute written again
   * would still cost the page a style and layout pass.
   */
  private status(text: string, state: string): void {
    const el = this.followStatus;
    if (!el) return;
    setText(el, text);
    const set = (k: string, v: string) => {
      if (el.dataset[k] !== v) el.dataset[k] = v;
    };
    set("state", state);
    // The URL's traffic so far, for benchmarks and embedders.
    set("netBytes", String(this.traffic.netBytes));
    set("requests", String(this.traffic.requests));
    set("updates", String(this.updates));
    set("cost", JSON.stringify(lastUpdate));
  }

  private scheduleFollow(ms: number): void {
    if (this.destroyed) return;
    this.followTimer = setTimeout(() => void this.poll(0), ms);
  }

  /** Revalidates the URL; a newer image replaces the view's data in place. */
  private async poll(failures: number, replaced = 0): Promise<void> {
    this.followTimer = null;
    const engine = this.meta.follow;
    const url = this.meta.url;
    if (!engine || !url || this.destroyed) return;
    let wait = FOLLOW_POLL_MS;
    try {
      const r = await engine.follow(url, this.meta.name, this.handle);
      if (this.destroyed) {
        if (!r.unchanged) void r.handle.close().catch(() => {});
        return;
      }
      this.traffic = { netBytes: r.netBytes, requests: r.requests, units: r.units };
      if (!r.unchanged) {
        let desc: Description;
        try {
          desc = await r.handle.describe();
        } catch (e) {
          void r.handle.close().catch(() => {});
          throw e;
        }
        if (this.destroyed) {
          void r.handle.close().catch(() => {});
          return;
        }
        this.update(r.handle, desc);
      }
      this.status(this.complete() ? "complete: the writer finished" : `up to date · ${this.updates} update${this.updates === 1 ? "" : "s"}`, this.complete() ? "complete" : "watching");
      failures = 0;
    } catch (e) {
      if (this.destroyed) return;
      if (isChanged(e) && replaced < FOLLOW_REPLACED_AT_ONCE) {
        // The image was replaced while it was read (a busy writer): the newest one at once.
        this.followTimer = setTimeout(() => void this.poll(failures, replaced + 1), 0);
        return;
      }
      failures++;
      wait = Math.min(FOLLOW_RETRY_MAX_MS, FOLLOW_POLL_MS * 2 ** failures);
      const x = explain(e, this.meta.name);
      this.status(`reconnecting… (${x.message.slice(0, 160)})`, "reconnecting");
      this.followTimer = setTimeout(() => void this.poll(failures), wait);
      return;
    }
    this.scheduleFollow(wait);
  }

  /** Whether every source says its writer finished. */
  private complete(): boolean {
    return this.desc.sources.length > 0 && this.desc.sources.every((s) => s.complete);
  }

  /** The newest instant the archive holds. */
  private newest(): bigint | null {
    let end: bigint | null = null;
    for (const src of this.desc.sources)
      for (const st of src.streams) {
        const sp = streamSpan(st);
        if (sp && (end === null || sp[1] > end)) end = sp[1];
      }
    return end;
  }

  /** While following, the window keeps its width and ends at the newest data. */
  private followTarget(): [bigint, bigint] | null {
    const end = this.newest();
    if (end === null) return null;
    const width = this.to - this.from;
    const to = end + width / 50n;
    return [to - width, to];
  }

  private followWindow(): void {
    if (!this.following) return;
    const w = this.followTarget();
    if (w && w[1] !== this.to) this.applyWindow(w[0], w[1]);
  }

  /**
   * A newer image of the archive: the overview, source cards, timeline
   * and the stream view take its description in place. The plots keep
   * drawing the previous answer until the new one is drawn, so a seal
   * (rows moving from the tail to a segment) never shows an empty plot.
   */
  update(handle: ArchiveHandle, desc: Description): void {
    const old = this.previous;
    this.previous = this.handle;
    void old?.close().catch(() => {});
    this.handle = handle;
    this.desc = desc;
    const gen = ++this.updates;
    this.overviewHost.handle = handle;
    const wasFull = this.from === this.full[0] && this.to === this.full[1];
    this.full = fullWindow(archiveSpan(desc));
    if (wasFull && !this.following) [this.from, this.to] = this.full;
    // The window first, so the timeline draws once and the plots ask once.
    if (this.following) {
      const w = this.followTarget();
      if (w) [this.from, this.to] = w;
    }
    // Everything is patched in place (counts and spans written where they
    // changed, rows built only for what is new). In three tasks, so the
    // page can paint between them: the overview and the timeline; the
    // source cards; the stream view (its plots ask the engine again).
    const t0 = performance.now();
    this.overview.update(desc);
    this.documents?.update(desc);
    this.filtered = filterCatalog(desc, this.filtered.query);
    if (this.finder) this.paintFinderCount();
    if (this.timeline) {
      const marks = new Map<number, SourceMarks>();
      for (const src of desc.sources) marks.set(src.id, marksOf(src));
      this.timeline.update(this.filtered, this.full, marks, [this.from, this.to]);
      if (this.sources.parentElement !== this.el && desc.sources.length > 0) {
        this.el.querySelector(".dv-empty-archive")?.remove();
        this.el.insertBefore(this.sources, this.streamSlot);
        this.el.insertBefore(this.timeline.el, this.streamSlot);
      }
    }
    const t1 = performance.now();
    const cost: Record<string, number> = { overviewAndTimeline: t1 - t0 };
    const current = () => !this.destroyed && this.updates === gen;
    setTimeout(() => {
      if (!current()) return;
      const t2 = performance.now();
      this.patchSources();
      cost["sources"] = performance.now() - t2;
      setTimeout(() => {
        if (!current()) return;
        const t3 = performance.now();
        this.updateStream();
        cost["stream"] = performance.now() - t3;
        // Where an update's main-thread time goes (bench-follow reads these).
        lastUpdate = cost;
      }, 0);
    }, 0);
  }

  /** The stream view takes the newer description (or one opens, if nothing could be before). */
  private updateStream(): void {
    const view = this.streamView;
    if (view) {
      const found = this.find(view.source.id, view.stream.name);
      view.setWindow(this.from, this.to);
      if (found) view.update(found[0], found[1]);
      this.timeline?.reveal(found?.[1] ?? view.stream);
      this.timeline?.setSelected(view.source.id, view.stream.name);
      this.host.changed(this);
    } else if (this.timeline && !this.pending) {
      // Nothing was open (nothing to plot at first): open what now has rows.
      outer: for (const src of this.desc.sources)
        for (const st of src.streams)
          if (st.segments.length > 0 || (src.live_readable && st.live_rows > 0)) {
            this.select(src.id, st.name, undefined, undefined, false);
            break outer;
          }
    }
  }

  private find(source: number, stream: string): [SourceInfo, StreamInfo] | null {
    const src = this.desc.sources.find((s) => s.id === source);
    const st = src?.streams.find((s) => s.name === stream);
    return src && st ? [src, st] : null;
  }

  /** Called when the tab becomes visible (sizes were zero while hidden). */
  shown(): void {
    this.timeline?.render(true);
  }

  /** A window a person chose (a drag, the wheel, a button): following stops unless it still shows the newest data. */
  setWindow(from: bigint, to: bigint): void {
    if (to <= from) return;
    if (this.following) {
      const end = this.newest();
      if (end !== null && to < end) this.setFollow(false);
    }
    this.applyWindow(from, to);
    this.host.windowChosen?.(this, this.from, this.to);
  }

  /** The window shown, and the whole archive's. */
  spans(): { window: Span; full: Span } {
    return { window: [this.from, this.to], full: this.full };
  }

  private applyWindow(from: bigint, to: bigint): void {
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
    this.notes?.windowChanged();
    this.host.changed(this);
  }

  /** Opens the first stream with sealed rows, as an archive not opened quietly does, unless a stream is open or on its way. */
  openFirst(): void {
    if (this.destroyed || this.streamView || this.pending) return;
    const first = firstPlotted(this.desc);
    if (first) this.select(first.source, first.stream, undefined, this.init.columns, false);
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
      if (notify) this.bringIntoSight();
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
    const self = this;
    this.streamView = new StreamView(
      {
        get handle() {
          return self.handle;
        },
        origin: this.origin,
        dialog: this.host.dialog,
        tz: () => this.host.tz(),
        window: () => [this.from, this.to],
        fullWindow: () => {
          const cur = this.find(source, stream);
          const span = cur ? streamSpan(cur[1]) : sp;
          return span ? fullWindow(span) : this.full;
        },
        onWindow: (a, b) => this.setWindow(a, b),
        onColumns: () => this.host.changed(this),
        step: (dir) => this.step(dir),
        ...(this.host.compare ? { compare: this.host.compare } : {}),
        notes: (s) => this.notes?.book.marks(s) ?? [],
        schema: (source, stream) => {
          const ahead = this.schemaAhead;
          this.schemaAhead = null;
          const same = ahead && ahead.source === source && ahead.stream === stream && ahead.handle === this.handle;
          return same ? ahead.schema : this.handle.schema(source, stream);
        },
      },
      src,
      st,
      keep,
      seq,
      this.exprsFor(source, stream),
    );
    replace(this.streamSlot, this.streamView.el);
    this.notes?.windowChanged();
    // A stream past the timeline's cap (opened from the URL or a card) gets its lane.
    this.timeline.reveal(st);
    this.timeline.setSelected(source, stream);
    this.streamInit = this.streamView.init().then(() => this.host.changed(this));
    if (notify) {
      this.host.changed(this);
      this.bringIntoSight();
    }
  }

  /**
   * The stream view into sight and the keyboard's focus on it, wherever
   * the stream was picked (a source card, a timeline lane, the keys). No
   * smooth scroll: it would move the timeline while the pointer is on it.
   */
  private bringIntoSight(): void {
    const view = this.streamView;
    if (!view) return;
    const r = view.el.getBoundingClientRect();
    const vh = window.innerHeight || document.documentElement.clientHeight;
    // In sight: its head is on screen and it is not mostly below the fold.
    if (r.top < 0 || r.top > vh * 0.5) view.el.scrollIntoView({ block: "start" });
    view.focus();
  }

  /** The streams in the order the page lists them (sources by id, streams by name), within the filter. */
  private order(): [number, string][] {
    const out: [number, string][] = [];
    for (const m of this.filtered.matches) for (const st of m.streams) out.push([m.source.id, st.name]);
    return out;
  }

  /** Opens the stream before (-1) or after (+1) the one shown, wrapping at the ends. */
  step(dir: -1 | 1): void {
    const list = this.order();
    if (list.length === 0) return;
    const cur = this.streamView;
    const i = cur ? list.findIndex(([s, n]) => s === cur.source.id && n === cur.stream.name) : -1;
    const next = list[(i + dir + list.length) % list.length] ?? list[0]!;
    this.select(next[0], next[1]);
  }

  /** j / ] and k / [ step through streams from anywhere in the archive, except while typing. */
  private onKey(ev: KeyboardEvent): void {
    if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target as HTMLElement | null;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    const dir = ev.key === "j" || ev.key === "]" ? 1 : ev.key === "k" || ev.key === "[" ? -1 : 0;
    if (dir !== 0) {
      ev.preventDefault();
      this.step(dir);
      return;
    }
    // Up and down on a stream's button in a card or a lane move to its neighbour's.
    if ((ev.key === "ArrowDown" || ev.key === "ArrowUp") && t?.closest("[data-stream-nav]")) {
      const all = Array.from(this.el.querySelectorAll<HTMLElement>(`[data-stream-nav="${t.closest<HTMLElement>("[data-stream-nav]")!.dataset["streamNav"]}"]`));
      const i = all.indexOf(t.closest<HTMLElement>("[data-stream-nav]")!);
      const next = all[i + (ev.key === "ArrowDown" ? 1 : -1)];
      if (next) {
        ev.preventDefault();
        next.focus();
      }
    }
  }

  tzChanged(): void {
    this.overview.relabel();
    this.renderSources();
    this.timeline?.render();
    this.streamView?.relabel();
  }

  /** The derived series the address asked for, once, for the stream it named. */
  private exprsFor(source: number, stream: string): string[] | undefined {
    const want = this.init.exprs;
    if (!want || this.exprsUsed || this.init.source !== source || this.init.stream !== stream) return undefined;
    this.exprsUsed = true;
    return want;
  }
  private exprsUsed = false;

  state(): ViewState {
    const s: ViewState = {};
    if (this.meta.url) s.url = this.meta.url;
    if (this.pending) {
      s.source = this.pending.source;
      s.stream = this.pending.stream;
      if (this.pending.columns && this.pending.columns.length > 0) s.columns = this.pending.columns;
      const exprs = this.exprsUsed || this.init.source !== s.source || this.init.stream !== s.stream ? undefined : this.init.exprs;
      if (exprs) s.exprs = exprs;
    } else if (this.streamView) {
      s.source = this.streamView.source.id;
      s.stream = this.streamView.stream.name;
      const cols = this.streamView.columns();
      if (cols.length > 0) s.columns = cols;
      const exprs = this.streamView.exprs();
      if (exprs.length > 0) s.exprs = exprs;
    }
    if (this.from !== this.full[0] || this.to !== this.full[1]) {
      s.from = this.from;
      s.to = this.to;
    }
    return s;
  }
}

/** The first stream with sealed rows to plot, in the description's order. */
function firstPlotted(desc: Description): { source: number; stream: string } | null {
  for (const src of desc.sources) for (const st of src.streams) if (st.segments.length > 0) return { source: src.id, stream: st.name };
  return null;
}

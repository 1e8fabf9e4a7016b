// The overview of an archive (file, counts, span, verify badge) and one card
// per source (labels, uuid, completeness, clock anchor, streams, metadata
// with the reserved keys rendered for people).

import type {
  ArchiveEvent,
  ArchiveHandle,
  Description,
  ProducerEpoch,
  Reserved,
  SourceInfo,
  StreamInfo,
  VerifyReport,
  WriterSession,
} from "../engine/types";
import { CAPS, plural, shownText } from "./catalog";
import { type Child, copyButton, fileText, h, moreBar, replace, setText } from "./dom";
import { explain, isChanged } from "./errors";
import { bytes, count, duration, instant, span as fmtSpan, type TimeZoneMode } from "./format";
import { archiveSpan, sameEntries, sourceSpan, streamSpan, totals } from "./model";
import type { Dialog } from "./overlay";
import { callerRowsTable } from "./stream";
import { VirtualTable } from "./vtable";

export interface OverviewHost {
  handle: ArchiveHandle;
  name: string;
  url: string | null;
  dialog: Dialog;
  tz(): TimeZoneMode;
  onSelect(source: number, stream: string): void;
  /** Followed: newer images replace the one shown (and verified). */
  followed?: boolean;
}

type CountField = "sources" | "streams" | "segments" | "rows";

/**
 * Writes a stat's shown value (its first text, before any sub-line) and
 * its data-value, each only when it differs.
 */
function setValue(stat: HTMLElement, text: string, raw: string | number, title?: string): void {
  const value = stat.querySelector<HTMLElement>(".dv-stat-value")!;
  let main = value.firstElementChild as HTMLElement | null;
  if (!main || !main.classList.contains("dv-stat-main")) main = value.insertBefore(h("span", { class: "dv-stat-main" }), value.firstChild);
  setText(main, text);
  if (title !== undefined && main.title !== title) main.title = title;
  if (stat.dataset["value"] !== String(raw)) stat.dataset["value"] = String(raw);
}

function field(label: string, key: string, value: Child, raw?: string | number | bigint, extra?: Record<string, string>): HTMLElement {
  return h(
    "div",
    { class: "dv-stat", data: { field: key, ...(raw !== undefined ? { value: String(raw) } : {}), ...(extra ?? {}) } },
    h("div", { class: "dv-stat-label" }, label),
    h("div", { class: "dv-stat-value" }, value),
  );
}

/**
 * Verify reads every page of an archive. Read in place, that is the whole
 * file again: done at once for a local file up to this size (a fraction of
 * a second), on a click for a larger one or one read over the network.
 */
export const AUTO_VERIFY_IN_PLACE_BYTES = 256 << 20;

export class Overview {
  readonly el: HTMLElement;
  /** Verify waits for a click (see AUTO_VERIFY_IN_PLACE_BYTES) rather than starting by itself. */
  readonly verifiesOnClick: boolean;
  private readonly badge: HTMLElement;
  private readonly spanValue: HTMLElement;
  /** The counts' fields, patched in place when the archive changes. */
  private readonly counts: Record<CountField, HTMLElement>;
  private readonly size: HTMLElement;
  /** Bumped by every newer description (a followed archive's newer image). */
  private generation = 0;
  /** Verify was asked for (by itself or a click): newer images are verified too. */
  private verifyWanted = false;
  /** A verify is running; `verifyAgain`: a newer image came meanwhile. */
  private verifying = false;
  private verifyAgain = false;
  /** The last verdict, and the segments of the image it was about. */
  private verdict: { report: VerifyReport; segments: Set<string>; generation: number } | null = null;

  constructor(
    private readonly host: OverviewHost,
    private desc: Description,
  ) {
    const span = archiveSpan(desc);
    const lazy = host.handle.mode === "lazy";
    this.verifiesOnClick = lazy && (host.url !== null || desc.file_bytes > AUTO_VERIFY_IN_PLACE_BYTES);
    this.badge = h("button", { type: "button", class: "dv-badge", data: { testid: "verify" } });
    if (this.verifiesOnClick) this.verifyOnClick();
    else {
      this.badge.className = "dv-badge dv-badge-wait";
      this.badge.textContent = "verifying…";
    }
    this.spanValue = h("span");
    const spanExtra: Record<string, string> = span ? { from: span[0].toString(), to: span[1].toString() } : {};
    const countField = (label: string, key: CountField) => field(label, key, null, "");
    this.counts = {
      sources: countField("Sources", "sources"),
      streams: countField("Streams", "streams"),
      segments: countField("Segments", "segments"),
      rows: countField("Rows", "rows"),
    };
    this.size = field("Size", "file_bytes", null, desc.file_bytes);
    this.el = h(
      "section",
      { class: "dv-overview", data: { testid: "overview" } },
      field("File", "name", fileText(host.name, { max: 80, what: "file name" }), undefined),
      this.size,
      field(
        "Read",
        "mode",
        h(
          "span",
          {
            title: lazy
              ? "Read in place: only the pages a view needs are read, through a bounded cache, so any size opens"
              : "Copied whole into the viewer's memory",
          },
          lazy ? "in place" : "in memory",
        ),
        host.handle.mode,
      ),
      field("Schema", "schema_version", `v${desc.schema_version}`, desc.schema_version),
      this.counts.sources,
      this.counts.streams,
      this.counts.segments,
      this.counts.rows,
      field("Span", "span", this.spanValue, span ? "" : "none", spanExtra),
      field("Verify", "verify", this.badge),
    );
    this.el.querySelector('[data-field="span"]')?.classList.add("dv-stat-wide");
    setValue(this.size, bytes(desc.file_bytes), desc.file_bytes, `${count(desc.file_bytes)} bytes`);
    this.paintCounts();
    this.relabel();
  }

  /** Verify waits for a click on the badge (something else holds the worker meanwhile). */
  verifyLater(): void {
    this.verifyOnClick();
  }

  /** The badge as a button that starts verify (the archive read in place, or a newer image of it). */
  private verifyOnClick(): void {
    this.badge.className = "dv-badge";
    this.badge.textContent = "verify…";
    this.badge.dataset["state"] = "idle";
    this.badge.title = "Verify reads every page of the archive; read in place, that means reading the whole file again";
    this.badge.onclick = () => {
      this.badge.onclick = null;
      this.badge.className = "dv-badge dv-badge-wait";
      this.badge.textContent = "verifying…";
      delete this.badge.dataset["state"];
      void this.verify();
    };
  }

  /**
   * A newer description of the archive (it is followed): the counts, size
   * and span are patched in place. A verdict stays: segments are immutable,
   * so what verify found of those already verified still holds; the badge
   * says how many are new, and once verify was asked for, the newest image
   * is verified in turn (one verify at a time, never restarted).
   */
  update(desc: Description): void {
    const before = this.desc;
    this.desc = desc;
    // After an outline comes the same image's full description, not a newer image.
    const newer = !before.outline;
    if (newer) this.generation++;
    setValue(this.size, bytes(desc.file_bytes), desc.file_bytes, `${count(desc.file_bytes)} bytes`);
    this.paintCounts();
    const a = archiveSpan(before);
    const b = archiveSpan(desc);
    if (a?.[0] !== b?.[0] || a?.[1] !== b?.[1]) {
      const stat = this.spanValue.closest<HTMLElement>(".dv-stat");
      if (stat) {
        stat.dataset["value"] = b ? "" : "none";
        if (b) {
          stat.dataset["from"] = b[0].toString();
          stat.dataset["to"] = b[1].toString();
        } else {
          delete stat.dataset["from"];
          delete stat.dataset["to"];
        }
      }
      this.relabel();
    }
    if (this.verdict) this.paintVerdict();
    // After the plots have asked for the newer image: the worker answers in order.
    if (this.verifyWanted && newer) setTimeout(() => void this.verify(), VERIFY_AFTER_UPDATE_MS);
  }

  private paintCounts(): void {
    const t = totals(this.desc);
    setValue(this.counts.sources, count(t.sources), t.sources);
    setValue(this.counts.streams, count(t.streams), t.streams);
    setValue(this.counts.segments, count(t.segments), t.segments);
    const rows = this.counts.rows;
    if (t.counted) setValue(rows, count(t.rows), t.rows, "");
    // An outline: the sealed rows are estimated from each stream's first
    // segment at once, and counted by the listing, on its way.
    else {
      const estimate = this.desc.sources.reduce((n, s) => s.streams.reduce((m, st) => m + (st.outline?.rows_estimate ?? 0) + st.live_rows, n), 0);
      setValue(rows, `≈ ${count(estimate)}`, "counting", "Estimated from each stream's first segment; the catalog's segments are being listed, and their rows are counted then");
    }
    const live = t.liveRows > 0 ? ` ${count(t.liveRows)} live` : "";
    const value = rows.querySelector<HTMLElement>(".dv-stat-value")!;
    let sub = value.querySelector<HTMLElement>(".dv-stat-sub");
    if (live && !sub) sub = value.appendChild(h("span", { class: "dv-stat-sub" }));
    if (sub) {
      if (live) setText(sub, live);
      else sub.remove();
    }
  }

  relabel(): void {
    const span = archiveSpan(this.desc);
    const tz = this.host.tz();
    if (!span) replace(this.spanValue, h("span", { class: "dv-muted" }, "no rows"));
    else
      replace(
        this.spanValue,
        fmtSpan(span[0], span[1], tz),
        h("span", { class: "dv-stat-sub" }, ` ${duration(span[1] - span[0])}${tz === "utc" ? " · UTC" : ""}`),
      );
  }

  /**
   * Verifies the archive, and while it is followed, each newer image in
   * turn: a call while one runs only marks that the newest is to be
   * verified after it. Each verdict is shown for the segments it covered.
   */
  async verify(): Promise<void> {
    this.verifyWanted = true;
    if (this.verifying) {
      this.verifyAgain = true;
      return;
    }
    this.verifying = true;
    try {
      do {
        this.verifyAgain = false;
        const gen = this.generation;
        const verifying = this.desc;
        let report: VerifyReport;
        try {
          report = await this.host.handle.verify();
        } catch (e) {
          // Followed, the image went while it was verified: the newest is
          // verified next (now, if it is already here; else when it comes).
          if (gen !== this.generation) {
            this.verifyAgain = true;
            continue;
          }
          if (!(this.host.followed && isChanged(e))) this.verifyFailed(e);
          return;
        }
        // The segments of the image verified: as described now, unless a
        // newer image came meanwhile (an outline's full description is the
        // same image, so its segments count).
        const segments = segmentKeys(gen === this.generation ? this.desc : verifying);
        this.verdict = { report, segments, generation: gen };
        this.paintVerdict();
        // A newer image came meanwhile: after a pause, so verify does not stand in front of every plot.
        if (gen !== this.generation) {
          this.verifyAgain = true;
          await new Promise((r) => setTimeout(r, VERIFY_AGAIN_MS));
        }
      } while (this.verifyAgain);
    } finally {
      this.verifying = false;
    }
  }

  private verifyFailed(e: unknown): void {
    const x = explain(e, this.host.name);
    this.badge.className = "dv-badge dv-badge-bad";
    this.badge.textContent = "verify failed";
    this.badge.dataset["state"] = "failed";
    this.badge.onclick = () => this.host.dialog.open(x.title, h("p", null, x.hint), h("pre", { class: "dv-pre" }, fileText(x.message, { max: 4000 })));
  }

  /**
   * The badge for the last verdict: sound or its problems, and the
   * segments of the image shown that it did not cover yet (sealed since
   * the image it verified), written only where they changed.
   */
  private paintVerdict(): void {
    const v = this.verdict;
    if (!v) return;
    const { report } = v;
    let pending = 0;
    for (const k of segmentKeys(this.desc)) if (!v.segments.has(k)) pending++;
    const current = v.generation === this.generation;
    const set = (k: string, value: string) => {
      if (this.badge.dataset[k] !== value) this.badge.dataset[k] = value;
    };
    set("state", report.sound ? "sound" : "problems");
    set("pending", String(pending));
    set("current", String(current));
    set("verified", String(v.segments.size));
    const more = pending > 0 ? ` · ${plural(pending, "new segment")} to verify` : "";
    const cls = report.sound ? "dv-badge dv-badge-ok" : "dv-badge dv-badge-bad";
    if (this.badge.className !== cls) this.badge.className = cls;
    setText(this.badge, (report.sound ? "✓ sound" : `✗ ${plural(report.problems.length, "problem")}`) + more);
    const title = report.sound
      ? current
        ? "Every check of the archive passed"
        : `Every check passed for the ${plural(v.segments.size, "segment")} of an earlier image; the newest image is verified next`
      : "Problems found by verify; click for the list";
    if (this.badge.title !== title) this.badge.title = title;
    this.badge.onclick = report.sound
      ? null
      : () =>
          this.host.dialog.open(
            "Problems found by verify",
            h(
              "table",
              { class: "dv-table" },
              h("thead", null, h("tr", null, h("th", null, "kind"), h("th", null, "problem"))),
              h(
                "tbody",
                null,
                report.problems.slice(0, 500).map((p) => h("tr", null, h("td", { class: "dv-mono" }, fileText(p.kind, { max: 40 })), h("td", null, fileText(p.message, { max: 600 })))),
              ),
            ),
          );
  }
}

/** A followed archive's newer image is verified this long after the last verify ended (ms). */
const VERIFY_AGAIN_MS = 2000;
/** ... and this long after it came, so that the plots' requests are ahead of verify in the worker (ms). */
const VERIFY_AFTER_UPDATE_MS = 250;

/**
 * Every sealed segment of a description, keyed as the engine's caches
 * key them: seq and the catalog's identity of the segment (rows, first
 * and last ts, bytes), so a seq reused by a rewrite is another segment.
 */
function segmentKeys(desc: Description): Set<string> {
  const out = new Set<string>();
  for (const src of desc.sources)
    for (const st of src.streams)
      for (const g of st.segments) out.add(`${src.id}\u0000${st.name}\u0000${g.seq}\u0000${g.rows}\u0000${g.first_ts}\u0000${g.last_ts}\u0000${g.bytes}`);
  return out;
}

// ---------------------------------------------------------------------------
// Sources

/** A table in a box that scrolls sideways instead of squeezing its cells. */
function scrollX(tag: "table", attrs: Parameters<typeof h>[1], ...children: Child[]): HTMLElement {
  return h("div", { class: "dv-scroll-x" }, h(tag, attrs, ...children));
}

export interface ParsedMarks {
  events: ArchiveEvent[];
  epochs: ProducerEpoch[];
  sessions: WriterSession[];
}

export function marksOf(src: SourceInfo): ParsedMarks {
  const { events: ev, producer_epochs: ep, writer_sessions: ws } = src.reserved;
  return {
    events: ev?.ok ? ev.value : [],
    epochs: ep?.ok ? ep.value : [],
    sessions: ws?.ok ? ws.value : [],
  };
}

/** A stream's row in a card, with the cells an update patches. */
interface StreamRow {
  tr: HTMLElement;
  segments: HTMLElement;
  sealed: HTMLElement;
  live: HTMLElement;
  caller: HTMLElement;
  span: HTMLElement;
}

/**
 * One source's card: completeness, labels, uuid, clock anchor, span, its
 * streams (a batch at a time), caller-row names and metadata. A newer
 * description (the archive is followed) is taken in place: counts and
 * spans are patched, a part whose content changed (labels, metadata,
 * caller-row names) is rebuilt, and only streams new to the card get rows.
 */
export class SourceCard {
  readonly el: HTMLElement;
  private src: SourceInfo;
  private streams: StreamInfo[];
  private filtered: boolean;
  private completeness: HTMLElement;
  private chips: HTMLElement;
  private kv: HTMLElement;
  private readonly spanDd: HTMLElement;
  private readonly tbody = h("tbody", null);
  private readonly streamsFoot = h("div", { class: "dv-card-foot" });
  private readonly table: HTMLElement;
  private streamsBox: HTMLElement;
  private filterNote: HTMLElement | null;
  private callers: HTMLElement | null;
  private meta: HTMLElement;
  /** Rows built, by stream name, and how many the card shows (more on request). */
  private readonly rows = new Map<string, StreamRow>();
  private built = 0;

  constructor(
    private readonly host: OverviewHost,
    src: SourceInfo,
    streams: StreamInfo[] = src.streams,
    filtered = false,
  ) {
    this.src = src;
    this.streams = streams;
    this.filtered = filtered;
    const tz = host.tz();
    this.completeness = completeness(src);
    this.chips = labelChips(host, src);
    this.spanDd = h("dd");
    this.paintSpan(tz);
    this.kv = this.identity(tz);
    this.table = h(
      "table",
      { class: "dv-table dv-streams-table" },
      h(
        "thead",
        null,
        h("tr", null, h("th", null, "stream"), h("th", { class: "dv-right" }, "segments"), h("th", { class: "dv-right" }, "sealed rows"), h("th", { class: "dv-right" }, "live rows"), h("th", { class: "dv-right" }, "caller rows"), h("th", { class: "dv-right" }, "span")),
      ),
      this.tbody,
    );
    this.showStreams(CAPS.cardStreams);
    this.streamsBox = this.streamsPart();
    this.filterNote = this.filterPart();
    this.callers = callerNames(host, src);
    this.meta = metadataTable(host, src);
    this.el = h(
      "article",
      { class: "dv-card dv-source", data: { source: src.id, testid: "source" } },
      h("header", { class: "dv-card-head" }, h("h3", null, `Source ${src.id}`), this.completeness),
      this.chips,
      this.kv,
      this.streamsBox,
      this.filterNote,
      this.callers,
      this.meta,
    );
  }

  get id(): number {
    return this.src.id;
  }

  /** A newer description of this source, and the streams of it the filter keeps. */
  update(src: SourceInfo, streams: StreamInfo[] = src.streams, filtered = false): void {
    const before = this.src;
    this.src = src;
    const hadStreams = this.streams.length > 0;
    const hadAny = before.streams.length > 0;
    this.streams = streams;
    this.filtered = filtered;
    const tz = this.host.tz();
    if (before.complete !== src.complete) this.completeness = swap(this.completeness, completeness(src));
    if (!sameEntries(before.labels, src.labels)) this.chips = swap(this.chips, labelChips(this.host, src));
    if (before.uuid !== src.uuid || before.clock_anchor_wall_ns !== src.clock_anchor_wall_ns) this.kv = swap(this.kv, this.identity(tz));
    this.paintSpan(tz);
    this.showStreams(0);
    if (hadStreams !== streams.length > 0 || hadAny !== src.streams.length > 0) this.streamsBox = swap(this.streamsBox, this.streamsPart());
    this.filterNote = swapOrPlace(this.filterNote, this.filterPart(), this.streamsBox);
    if (!sameCallerNames(before, src)) this.callers = swapOrPlace(this.callers, callerNames(this.host, src), this.filterNote ?? this.streamsBox);
    if (!sameEntries(before.metadata, src.metadata)) {
      const open = (this.meta as HTMLDetailsElement).open;
      const wasDefault = open === Object.keys(before.metadata).length <= 20;
      this.meta = swap(this.meta, metadataTable(this.host, src));
      // A block a person opened or closed stays so.
      if (!wasDefault) (this.meta as HTMLDetailsElement).open = open;
    }
  }

  private identity(tz: TimeZoneMode): HTMLElement {
    const src = this.src;
    return h(
      "dl",
      { class: "dv-kv" },
      h("dt", null, "uuid"),
      h("dd", { class: "dv-mono", data: { testid: "uuid" } }, src.uuid === null ? h("span", { class: "dv-muted" }, "none") : fileText(src.uuid, { max: 64 })),
      h("dt", null, "clock anchor"),
      h(
        "dd",
        { data: { testid: "anchor", value: src.clock_anchor_wall_ns.toString() } },
        instant(src.clock_anchor_wall_ns, tz, 9),
        h("span", { class: "dv-muted dv-small" }, ` (${src.clock_anchor_wall_ns} ns)`),
      ),
      h("dt", null, "span"),
      this.spanDd,
    );
  }

  private paintSpan(tz: TimeZoneMode): void {
    const span = sourceSpan(this.src);
    const d = this.spanDd.dataset;
    if (span) {
      d["from"] = span[0].toString();
      d["to"] = span[1].toString();
    } else {
      delete d["from"];
      delete d["to"];
    }
    setText(this.spanDd, span ? `${fmtSpan(span[0], span[1], tz)} (${duration(span[1] - span[0])})` : "no rows");
  }

  /**
   * Shows the first streams, `more` beyond those already shown: rows
   * built before are patched and kept, new streams get rows, streams gone
   * lose theirs, and the foot says what is left out.
   */
  private showStreams(more: number): void {
    const tz = this.host.tz();
    const streams = this.streams;
    const shown = streams.slice(0, Math.max(CAPS.cardStreams, this.built + more));
    this.built = shown.length;
    const keep = new Set<string>();
    let at = this.tbody.firstChild;
    for (const st of shown) {
      keep.add(st.name);
      let row = this.rows.get(st.name);
      if (row) patchStreamRow(row, st, tz);
      else {
        row = streamRow(this.host, this.src, st, tz);
        this.rows.set(st.name, row);
      }
      if (at === row.tr) at = at.nextSibling;
      else this.tbody.insertBefore(row.tr, at);
    }
    for (const [name, row] of this.rows)
      if (!keep.has(name)) {
        row.tr.remove();
        this.rows.delete(name);
      }
    const note = shownText(this.built, streams.length, "stream", this.filtered);
    const text = note ?? "";
    if (this.streamsFoot.dataset["text"] === text) return;
    this.streamsFoot.dataset["text"] = text;
    replace(
      this.streamsFoot,
      note
        ? moreBar(
            `${note}.`,
            { label: `Show ${count(Math.min(CAPS.lanes, streams.length - this.built))} more`, onClick: () => this.showStreams(CAPS.lanes) },
            "streams-more",
          )
        : null,
    );
  }

  private streamsPart(): HTMLElement {
    if (this.streams.length > 0) return h("div", { class: "dv-card-streams" }, this.table, this.streamsFoot);
    return h("div", { class: "dv-muted" }, this.src.streams.length > 0 ? "No stream matches the filter." : "No streams.");
  }

  private filterPart(): HTMLElement | null {
    const hidden = this.src.streams.length - this.streams.length;
    return hidden > 0 && this.streams.length > 0
      ? h("div", { class: "dv-muted dv-small", data: { testid: "streams-filtered" } }, `${plural(hidden, "other stream")} of this source hidden by the filter.`)
      : null;
  }
}

/** Replaces `old` by `next` where it stands. */
function swap(old: HTMLElement, next: HTMLElement): HTMLElement {
  old.replaceWith(next);
  return next;
}

/**
 * Replaces an optional part: `old` by `next` (either may be null), a new
 * part going after `after`. An equal part (the same text) is kept.
 */
function swapOrPlace(old: HTMLElement | null, next: HTMLElement | null, after: HTMLElement): HTMLElement | null {
  if (old && next && old.textContent === next.textContent) return old;
  if (old && next) return swap(old, next);
  if (old) old.remove();
  if (next) after.after(next);
  return next;
}

function completeness(src: SourceInfo): HTMLElement {
  return src.complete
    ? h("span", { class: "dv-badge dv-badge-ok", data: { testid: "complete", complete: "true" } }, "complete")
    : h("span", { class: "dv-badge dv-badge-warn", data: { testid: "complete", complete: "false" } }, "may be incomplete: data after the last row may be missing");
}

function labelChips(host: OverviewHost, src: SourceInfo): HTMLElement {
  const labelEntries = Object.entries(src.labels);
  return h(
    "div",
    { class: "dv-chips", data: { testid: "labels" } },
    labelEntries.length === 0 ? h("span", { class: "dv-muted" }, "no labels") : null,
    labelEntries.slice(0, CAPS.labelChips).map(([k, v]) =>
      h("span", { class: "dv-chip", data: { testid: "label" } }, h("span", { class: "dv-chip-k" }, fileText(k, { max: 40, what: "label name" })), h("span", { class: "dv-chip-v" }, fileText(v, { max: 80, what: `label ${k.slice(0, 60)}` }))),
    ),
    labelEntries.length > CAPS.labelChips
      ? h(
          "button",
          {
            type: "button",
            class: "dv-btn dv-btn-quiet dv-chip-more",
            data: { testid: "labels-more" },
            on: { click: () => host.dialog.open(`Labels of source ${src.id}`, labelsTable(labelEntries)) },
          },
          `Showing ${CAPS.labelChips} of ${count(labelEntries.length)} labels · show all`,
        )
      : null,
  );
}

function sameCallerNames(a: SourceInfo, b: SourceInfo): boolean {
  const x = a.caller_row_names;
  const y = b.caller_row_names;
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    const n = x[i]!;
    if (n !== y[i]) return false;
    const p = Object.hasOwn(a.caller_row_counts ?? {}, n) ? a.caller_row_counts[n] : undefined;
    const q = Object.hasOwn(b.caller_row_counts ?? {}, n) ? b.caller_row_counts[n] : undefined;
    if (p !== q) return false;
  }
  return true;
}

function streamRow(host: OverviewHost, src: SourceInfo, st: StreamInfo, tz: TimeZoneMode): StreamRow {
  const cell = (cls: string) => h("td", { class: cls });
  const row: StreamRow = {
    tr: h("tr", { class: "dv-clickable", data: { stream: st.name, testid: "stream-row" }, on: { click: () => host.onSelect(src.id, st.name) } }),
    segments: cell("dv-right dv-mono"),
    sealed: cell("dv-right dv-mono"),
    live: cell("dv-right dv-mono"),
    caller: cell("dv-right dv-mono"),
    span: cell("dv-right dv-small"),
  };
  row.tr.append(
    h("td", null, h("button", { type: "button", class: "dv-link", data: { streamNav: "cards" } }, fileText(st.name, { max: 50 }))),
    row.segments,
    row.sealed,
    row.live,
    row.caller,
    row.span,
  );
  patchStreamRow(row, st, tz);
  return row;
}

/** A stream row's counts and span, each written only when it differs. */
function patchStreamRow(row: StreamRow, st: StreamInfo, tz: TimeZoneMode): void {
  const sp = streamSpan(st);
  // An outline counts a stream's segments but not yet their rows.
  setText(row.segments, count(st.outline ? st.outline.segments : st.segments.length));
  setText(row.sealed, st.outline ? `≈ ${count(st.outline.rows_estimate)}` : count(st.sealed_rows));
  setText(row.live, count(st.live_rows));
  row.live.classList.toggle("dv-live-text", st.live_rows > 0);
  setText(row.caller, count(st.caller_rows));
  setText(row.span, sp ? duration(sp[1] - sp[0]) : "—");
  const title = sp ? fmtSpan(sp[0], sp[1], tz) : "";
  if (row.span.title !== title) row.span.title = title;
}

/** Every label of a source, in a virtualized table: thousands cost a screenful of rows. */
function labelsTable(entries: [string, string][]): HTMLElement {
  const table = new VirtualTable(
    [
      { name: "label", width: 260 },
      { name: "value", width: 520 },
    ],
    entries.length,
    (r, c) => {
      const e = entries[r];
      if (!e) return "";
      return c === 0 ? fileText(e[0], { max: 60, what: "label name" }) : fileText(e[1], { max: 120, what: `label ${e[0].slice(0, 60)}` });
    },
    { height: 420 },
  );
  table.el.dataset["testid"] = "labels-table";
  return table.el;
}

/** Names in caller_rows that are no stream, as buttons; a long list a batch at a time. */
function callerNames(host: OverviewHost, src: SourceInfo): HTMLElement | null {
  const names = src.caller_row_names;
  if (names.length === 0) return null;
  const chip = (name: string) =>
    h(
      "button",
      {
        type: "button",
        class: "dv-chip dv-chip-btn",
        title: "Show these caller rows",
        data: { testid: "caller-name" },
        on: {
          click: async () => {
            host.dialog.open(`Caller rows “${name.length > 60 ? name.slice(0, 60) + "…" : name}” of source ${src.id}`, h("div", { class: "dv-muted" }, "Reading…"));
            const table = await callerRowsTable(host.handle, src.id, name, host.tz);
            host.dialog.open(`Caller rows of source ${src.id}`, h("div", { class: "dv-muted" }, "name ", fileText(name, { max: 200 })), table);
          },
        },
      },
      fileText(name, { max: 40, class: "dv-caller-name" }),
      callerCount(Object.hasOwn(src.caller_row_counts ?? {}, name) ? src.caller_row_counts[name] : undefined),
    );
  const line = h("div", { class: "dv-kv-line" }, h("span", { class: "dv-muted" }, "Caller rows under other names: "));
  const foot = h("span");
  line.appendChild(foot);
  let built = 0;
  const build = (n: number) => {
    const next = names.slice(built, built + n);
    built += next.length;
    for (const name of next) line.insertBefore(chip(name), foot);
    const note = shownText(built, names.length, "name");
    replace(foot, note ? moreBar(`${note}.`, { label: "Show more", onClick: () => build(CAPS.callerNames * 5) }, "caller-names-more") : null);
  };
  build(CAPS.callerNames);
  return line;
}

function metadataTable(host: OverviewHost, src: SourceInfo): HTMLElement {
  const entries = Object.entries(src.metadata);
  const tz = host.tz();
  const tbody = h("tbody", null);
  const more = h("div");
  let built = 0;
  const build = (n: number) => {
    const next = entries.slice(built, built + n);
    built += next.length;
    tbody.append(
      ...next.map(([k, v]) =>
        h(
          "tr",
          { data: { key: k.length <= 64 ? k : "" } },
          h("th", { class: "dv-meta-key" }, fileText(k, { max: 48, what: "metadata key" })),
          h("td", null, reservedValue(src.reserved, k, v, tz) ?? plainValue(k, v)),
        ),
      ),
    );
    const note = shownText(built, entries.length, "key");
    replace(more, note ? moreBar(`${note}.`, { label: `Show ${count(Math.min(CAPS.lanes, entries.length - built))} more`, onClick: () => build(CAPS.lanes) }, "metadata-more") : null);
  };
  build(CAPS.metadataRows);
  return h(
    "details",
    { class: "dv-meta-block", open: entries.length <= 20 },
    h("summary", null, `Metadata · ${count(entries.length)} key${entries.length === 1 ? "" : "s"}`),
    entries.length === 0 ? h("div", { class: "dv-muted" }, "none") : h("table", { class: "dv-table dv-meta-table", data: { testid: "metadata" } }, tbody),
    more,
  );
}

function plainValue(key: string, v: string): Child {
  return h("div", { class: "dv-meta-val" }, fileText(v, { max: 240, what: `metadata ${key.slice(0, 60)}` }), v.length > 40 ? copyButton(() => v) : null);
}

function rawToggle(key: string, v: string): HTMLElement {
  return h("details", { class: "dv-raw" }, h("summary", null, "raw JSON"), h("div", { class: "dv-mono dv-small" }, fileText(v, { max: 2000, what: `metadata ${key}` }), copyButton(() => v)));
}

function invalid(key: string, v: string, why: string): Child {
  return [h("div", { class: "dv-warn-inline" }, `reserved key, but ${why}; shown as written:`), plainValue(key, v)];
}

/** Entries of a reserved key shown in its table; the raw JSON beside it holds them all. */
const RESERVED_ROWS = 200;

/**
 * A reserved key's entries as a table: how many there are (and how many
 * are shown), a header, the rows, and the raw value behind a toggle.
 */
function reservedTable(
  at: { testid: string; key: string; v: string; count: number },
  summary: string,
  headers: string[],
  rows: HTMLElement[],
): HTMLElement {
  return h(
    "div",
    { data: { testid: at.testid } },
    h("div", { class: "dv-muted dv-small" }, summary, reservedCut(at.count)),
    scrollX(
      "table",
      { class: "dv-table dv-subtable" },
      h("thead", null, h("tr", null, headers.map((t) => h("th", null, t)))),
      h("tbody", null, rows),
    ),
    rawToggle(at.key, at.v),
  );
}

function reservedCut(n: number): string {
  return n > RESERVED_ROWS ? ` · showing the first ${RESERVED_ROWS}; the raw JSON holds all ${count(n)}` : "";
}

/** The reserved keys rendered for people, as the engine parsed them; null for ordinary keys. */
function reservedValue(reserved: Reserved, key: string, v: string, tz: TimeZoneMode): Child | null {
  if (key === "writer_sessions" && reserved.writer_sessions) {
    const p = reserved.writer_sessions;
    if (!p.ok) return invalid(key, v, p.why);
    return reservedTable(
      { testid: "writer-sessions", key, v, count: p.value.length },
      `${p.value.length} writer session${p.value.length === 1 ? "" : "s"}`,
      ["session", "dendro", "clock anchor", "resumed after"],
      p.value.slice(0, RESERVED_ROWS).map((s) =>
        h(
          "tr",
          null,
          h("td", { class: "dv-mono" }, fileText(s.session, { max: 40 })),
          h("td", { class: "dv-mono" }, fileText(s.dendro, { max: 24 })),
          h("td", { class: "dv-mono" }, s.clock_anchor_wall_ns === null ? "—" : instant(s.clock_anchor_wall_ns, tz, 9)),
          h("td", { class: "dv-mono" }, s.resumed_after_ts === null ? "—" : instant(s.resumed_after_ts, tz)),
        ),
      ),
    );
  }
  if (key === "events" && reserved.events) {
    const p = reserved.events;
    if (!p.ok) return invalid(key, v, p.why);
    return reservedTable(
      { testid: "events", key, v, count: p.value.length },
      `${p.value.length} event${p.value.length === 1 ? "" : "s"}, marked on the timeline`,
      ["time", "kind", "description", "details"],
      p.value.slice(0, RESERVED_ROWS).map((e) =>
        h(
          "tr",
          null,
          h("td", { class: "dv-mono" }, instant(e.timestamp, tz)),
          h("td", null, e.kind === null ? "" : fileText(e.kind, { max: 30 })),
          h("td", null, fileText(e.description, { max: 160 })),
          h("td", { class: "dv-mono dv-small" }, e.details === null ? "" : fileText(e.details, { max: 120 }), e.id !== null ? [" ", h("span", { class: "dv-muted" }, "id "), fileText(e.id, { max: 40 })] : null),
        ),
      ),
    );
  }
  if (key === "producer_epochs" && reserved.producer_epochs) {
    const p = reserved.producer_epochs;
    if (!p.ok) return invalid(key, v, p.why);
    return h(
      "div",
      { data: { testid: "epochs" } },
      p.value.length > RESERVED_ROWS ? h("div", { class: "dv-muted dv-small" }, `${p.value.length} epochs`, reservedCut(p.value.length)) : null,
      h(
        "table",
        { class: "dv-table dv-subtable" },
        h("thead", null, h("tr", null, h("th", null, "epoch"), h("th", null, "from"))),
        h(
          "tbody",
          null,
          p.value.slice(0, RESERVED_ROWS).map((e) => h("tr", null, h("td", { class: "dv-mono" }, fileText(e.epoch, { max: 40 })), h("td", { class: "dv-mono" }, e.from_ts === null ? "—" : instant(e.from_ts, tz)))),
        ),
      ),
      rawToggle(key, v),
    );
  }
  return null;
}

/** "· 1,234 rows" beside a caller-row name; nothing when the engine gave no count. */
function callerCount(n: number | undefined): HTMLElement | null {
  if (n === undefined) return null;
  return h("span", { class: "dv-caller-count", data: { testid: "caller-count", count: n } }, `· ${count(n)} row${n === 1 ? "" : "s"}`);
}

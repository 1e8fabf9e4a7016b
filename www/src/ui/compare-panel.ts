// Where the compare view lives in a viewer, and when it opens: above the
// tabs' panels, gathered from the viewer's registry of open archives
// (archives.ts). A comparison asked for before its archives are open (the
// URL's `compare`, with archives given by URL or dropped later) opens once
// none is loading; an open one is gathered again when the set of open
// archives changes (one dropped, one closed).

import type { Engine } from "../engine/types";
import type { ArchiveRegistry, OpenArchive } from "./archives";
import { type CompareInit, CompareView } from "./compare";
import { h, replace } from "./dom";
import type { TimeZoneMode } from "./format";
import type { ViewState } from "./state";

export interface ComparePanelHost {
  engine(): Engine;
  archives: ArchiveRegistry;
  tz(): TimeZoneMode;
  /** Whether an archive is still being opened. */
  loading(): boolean;
  /** Opens a source's stream view over a window of its own timestamps. */
  openStream(archive: OpenArchive, source: number, stream: string, from: bigint, to: bigint): void;
  /** The comparison opened has drawn (or said why it cannot): what waited for the worker may go. */
  settled?(): void;
  /** What the URL keeps of the comparison changed (empty: none is open). */
  changed(c: Pick<ViewState, "compare" | "shift">): void;
}

export class ComparePanel {
  readonly el = h("div", { class: "dv-compare-slot" });
  /** The compare view open, if any. */
  view: CompareView | null = null;
  private pending: { stream: string; init: CompareInit } | null = null;
  /** The comparison open has drawn once. */
  drawn = false;
  /** The archives (ids) the open comparison was gathered from. */
  private gathered = "";

  constructor(private readonly host: ComparePanelHost) {}

  /** Opens (or reopens) the comparison of stream `name`; settles once it has drawn (or said why it cannot). */
  open(name: string, init: CompareInit = {}): Promise<void> {
    const before = this.view;
    before?.destroy();
    const view = new CompareView(
      {
        engine: this.host.engine(),
        archives: () => this.host.archives.list(),
        tz: this.host.tz,
        openStream: this.host.openStream,
        close: () => this.close(),
        changed: () => this.tell(),
      },
      name,
      before && before.stream === name ? { columns: before.columns(), from: before.from, to: before.to, mode: before.mode, shift: before.shiftBy, ...init } : init,
    );
    this.view = view;
    this.gathered = this.ids();
    replace(this.el, view.el);
    this.tell();
    this.drawn = false;
    return view.init().finally(() => {
      if (this.view !== view) return;
      this.drawn = true;
      this.host.settled?.();
    });
  }

  /** Whether a comparison is open or waiting for its archives. */
  active(): boolean {
    return this.view !== null || this.pending !== null;
  }

  /** Opens the comparison of `stream` once no archive is loading (at once if none is). */
  whenOpen(stream: string, init: CompareInit = {}): void {
    this.pending = { stream, init };
    this.again();
  }

  /** An archive opened or failed to: the comparison asked for opens, or the open one takes in the new set. */
  again(): void {
    if (this.host.loading()) return;
    const ids = this.ids();
    if (ids === "") return;
    const p = this.pending;
    if (p) {
      this.pending = null;
      void this.open(p.stream, p.init);
    } else if (this.view && ids !== this.gathered) void this.open(this.view.stream);
  }

  /** Tab `id` closed: a comparison drawing from it is gathered again. */
  closed(id: number): void {
    if (this.view?.members.some((m) => m.archive.id === id)) void this.open(this.view.stream);
  }

  close(): void {
    this.view?.destroy();
    this.view = null;
    replace(this.el);
    this.tell();
  }

  private ids(): string {
    return this.host.archives
      .list()
      .map((a) => a.id)
      .join(",");
  }

  private tell(): void {
    const v = this.view;
    this.host.changed(v ? { compare: v.stream, ...(v.mode === "shift" ? { shift: v.shiftBy } : {}) } : {});
  }
}

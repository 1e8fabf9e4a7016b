// The viewer: getting files in (drop, picker, URL, bytes), one tab per open
// archive, the zone toggle, and the page-level overlays.

import { createEngine } from "../engine/client";
import type { ArchiveHandle, Description, Engine, EngineStats, OpenMode } from "../engine/types";
import { ArchiveView } from "./archive";
import { ArchiveRegistry, duplicatesText } from "./archives";
import { ComparePanel } from "./compare-panel";
import { FULL_VALUE_EVENT, type FullValueDetail, debounce, fileText, h, replace, setText } from "./dom";
import { type Explained, LoadError, errorPanel, explain, isChanged } from "./errors";
import { bytes, count, instant, type TimeZoneMode } from "./format";
import { type FileSource, FileWatch, handlesOf, stampOf } from "./filewatch";
import { fetchWithProgress, nameFromUrl, readFile } from "./load";
import { MAX_FILES, MAX_OPEN, type Named, droppedFolders, fetchListing, listingPanel, manyReport, picked, sortByContent } from "./many";
import { Dialog, Tooltip } from "./overlay";
import { showShareBox } from "./share";
import { type ViewState, stateToSearch } from "./state";
import { type SyncBus, provideBus, syncBus } from "./sync";

let sharedEngine: Engine | null = null;

/** One engine (one worker) per page, shared by every viewer on it. */
function engine(): Engine {
  if (!sharedEngine) sharedEngine = createEngine();
  return sharedEngine;
}

export type OpenResult =
  | { ok: true; name: string; description: Description }
  | { ok: false; name: string; error: Explained };

export interface ViewerOptions {
  /** Compact chrome for embedding (no URL box, smaller header). */
  embedded?: boolean;
  /** Keep the page's query string in step with the view, for bookmarks. */
  urlState?: boolean;
  /** Accept files dropped anywhere on the document, not only on the viewer. */
  dropOnDocument?: boolean;
  /** Told about every archive that opened or failed to. */
  onOpen?: (r: OpenResult) => void;
  tz?: TimeZoneMode;
  /**
   * How a file or URL is opened: "memory" copies it whole into the engine,
   * "lazy" reads it in place a range at a time; "auto" (the default) reads
   * in place from LAZY_FROM_BYTES up and copies what is smaller. Bytes
   * handed over already in memory (openBytes) are always copied.
   */
  openMode?: OpenMode | "auto";
  /**
   * Follow archives opened from a URL while a writer appends to them
   * (`dendro serve` serving `dendro demo --live`, say): new seals, streams,
   * sources, the live tail's growth and `complete` appear without a
   * reload, and the plots keep the newest data in sight until a person
   * pans back. The URL is read in place, a range at a time.
   */
  follow?: boolean;
  /**
   * Viewers of one page given the same group share one cursor and one time
   * window (see sync.ts); without it the viewer's plots share their own.
   */
  syncGroup?: string;
  /** Told the view in front (state.ts) whenever it may have changed: the embedding API's `view-changed`. */
  onView?: (state: ViewState) => void;
}

/**
 * From this size up, "auto" reads a file or URL in place. Below it a whole
 * copy opens about as fast and makes every later read a memory read; above
 * it the copy's cost grows with the file while an in-place open does not
 * (DESIGN.md, "Larger than memory").
 */
export const LAZY_FROM_BYTES = 32 << 20;

/** How one archive is got: in place (null when it cannot be), or as bytes. */
interface Getter {
  lazy: (() => Promise<ArchiveHandle | null>) | null;
  bytes: (progress: (loaded: number, total: number | null) => void) => Promise<ArrayBuffer>;
  /** The size, when known before anything is read. */
  size?: number;
  /** Follow it: the engine revalidates it while the view is open. */
  follow?: boolean;
  /**
   * Followed: the newest image, read on from `failed` (an image the
   * server stopped holding before its catalog was read) through the same
   * page cache, with the pages it holds now; null when there is nothing
   * newer.
   */
  resume?: (failed: ArchiveHandle) => Promise<{ handle: ArchiveHandle; units: number } | null>;
}

/**
 * An interrupted open of a followed archive resumes on a newer image for
 * as long as each attempt gets further (more pages held than after the
 * one before); it gives up after this many attempts in a row that do not.
 */
const OPEN_STALLS = 4;


type TabState =
  | { kind: "loading" }
  | { kind: "archive"; view: ArchiveView; handle: ArchiveHandle }
  | { kind: "error"; error: Explained };

interface Tab {
  id: number;
  name: string;
  url: string | null;
  el: HTMLElement;
  button: HTMLElement;
  state: TabState;
  /** A dropped file's handle, looked at again for newer versions. */
  watch?: FileWatch;
}

let tabCounter = 0;

export class Viewer {
  readonly root: HTMLElement;
  readonly tooltip: Tooltip;
  readonly dialog: Dialog;
  private readonly tabBar: HTMLElement;
  private readonly main: HTMLElement;
  private readonly welcome: HTMLElement;
  private readonly dropOverlay: HTMLElement;
  private readonly fileInput: HTMLInputElement;
  private readonly toasts: HTMLElement;
  private readonly tzButtons: Record<TimeZoneMode, HTMLButtonElement>;
  private tabs: Tab[] = [];
  private active: Tab | null = null;
  /** The archives open here, for views that look across them (archives.ts). */
  readonly archives = new ArchiveRegistry();
  /** The cursor and window every plot of this viewer (and its sync group) shares. */
  readonly sync: SyncBus;
  /** What the compare view compares, kept in the URL (state.ts). */
  private compareState: Pick<ViewState, "compare" | "shift"> = {};
  /** The compare view's place above the tabs' panels, and when it opens (compare-panel.ts). */
  readonly comparison: ComparePanel = new ComparePanel({
    engine: () => engine(),
    archives: this.archives,
    tz: () => this.tzMode,
    loading: () => this.tabs.some((t) => t.state.kind === "loading"),
    openStream: (archive, source, stream, from, to) => {
      const tab = this.tabs.find((t) => t.id === archive.id);
      if (!tab || tab.state.kind !== "archive") return;
      this.activate(tab);
      tab.state.view.select(source, stream);
      tab.state.view.setWindow(from, to);
    },
    changed: (c) => this.setCompare(c),
    // The tab in front waited quietly for the comparison's first drawing: its first plot now.
    settled: () => {
      if (this.active?.state.kind === "archive") this.active.state.view.openFirst();
    },
  });
  /** Set while tabs are added in a batch: the first stays in front. */
  private background = false;
  /** Set while this viewer applies a window from its sync group, so it is not published back. */
  private following = false;
  private readonly folderInput: HTMLInputElement;
  private readonly reports: HTMLElement;
  private tzMode: TimeZoneMode;
  private readonly cleanup: (() => void)[] = [];
  private readonly syncUrl = debounce(() => this.writeUrl(), 80);

  constructor(
    container: HTMLElement | ShadowRoot,
    private readonly opts: ViewerOptions = {},
  ) {
    this.tzMode = opts.tz ?? "utc";
    this.fileInput = h("input", { type: "file", multiple: true, class: "dv-file-input", "aria-label": "Open archive files", data: { testid: "file-input" } });
    this.fileInput.addEventListener("change", () => {
      const files = picked(this.fileInput.files ?? []);
      this.fileInput.value = "";
      if (files.length === 1) void this.openFile(files[0]!.file);
      else if (files.length > 1) void this.openMany(files, `${files.length} files`);
    });
    this.folderInput = h("input", { type: "file", multiple: true, class: "dv-file-input", "aria-label": "Open a folder of archives", data: { testid: "folder-input" } });
    this.folderInput.webkitdirectory = true;
    this.folderInput.addEventListener("change", () => {
      const files = picked(this.folderInput.files ?? []);
      this.folderInput.value = "";
      const top = files[0]?.name.split("/")[0] ?? "the folder";
      void this.openMany(files, `Folder ${top}`);
    });
    const pick = () => this.fileInput.click();
    const pickFolder = () => this.folderInput.click();
    this.tabBar = h("nav", { class: "dv-tabs", role: "tablist", "aria-label": "Open archives" });
    this.tzButtons = {
      utc: h("button", { type: "button", class: "dv-seg-btn", data: { tz: "utc" }, on: { click: () => this.setTz("utc") } }, "UTC"),
      local: h("button", { type: "button", class: "dv-seg-btn", data: { tz: "local" }, on: { click: () => this.setTz("local") } }, "Local"),
    };
    const urlInput = h("input", { type: "url", class: "dv-url-input", placeholder: "https://…/archive.dendro", "aria-label": "Archive URL" });
    const urlForm = h(
      "form",
      {
        class: "dv-url-form",
        on: {
          submit: (ev) => {
            ev.preventDefault();
            const u = urlInput.value.trim();
            if (u) void this.openUrl(u);
          },
        },
      },
      urlInput,
      h("button", { type: "submit", class: "dv-btn" }, "Open URL"),
    );
    const bar = h(
      "header",
      { class: "dv-bar" },
      h("span", { class: "dv-brand" }, h("span", { class: "dv-logo" }), "dendro"),
      this.tabBar,
      h("span", { class: "dv-spacer" }),
      h("button", { type: "button", class: "dv-btn dv-btn-primary", data: { testid: "open-file" }, on: { click: pick } }, "Open file…"),
      opts.embedded ? null : urlForm,
      opts.embedded ? null : h("button", { type: "button", class: "dv-btn", data: { testid: "share-button" }, on: { click: () => void this.share() } }, "Share link"),
      h("span", { class: "dv-seg-group", role: "group", "aria-label": "Time zone" }, this.tzButtons.utc, this.tzButtons.local),
    );
    this.welcome = this.buildWelcome(pick, pickFolder);
    this.main = h("main", { class: "dv-main" }, this.welcome);
    this.dropOverlay = h("div", { class: "dv-drop-overlay", hidden: true }, h("div", { class: "dv-drop-box" }, "Drop to open the archive"));
    this.toasts = h("div", { class: "dv-toasts", "aria-live": "polite" });
    this.reports = h("div", { class: "dv-reports" });
    this.root = h("div", { class: "dv-root" + (opts.embedded ? " dv-embedded" : ""), data: { testid: "viewer" } }, bar, this.fileInput, this.folderInput, this.reports, this.comparison.el, this.main, this.dropOverlay, this.toasts);
    container.appendChild(this.root);
    this.sync = syncBus(opts.syncGroup);
    provideBus(this.root, this.sync);
    this.cleanup.push(this.sync.onWindow((a, b, by) => by !== this && this.followWindow(a, b)));
    this.archives.onChange(() => this.paintDuplicates());
    this.tooltip = new Tooltip(this.root);
    this.dialog = new Dialog(this.root);
    this.root.addEventListener(FULL_VALUE_EVENT, (ev) => {
      const d = (ev as CustomEvent<FullValueDetail>).detail;
      this.dialog.fullValue(d.title, d.value);
    });
    this.installDrop();
    this.paintTz();
    // Start the worker and its module's compilation now, so they overlap the
    // person's drop and the file's reading instead of following them.
    engine();
  }

  private buildWelcome(pick: () => void, pickFolder: () => void): HTMLElement {
    return h(
      "div",
      { class: "dv-welcome" },
      h(
        "div",
        { class: "dv-dropzone", data: { testid: "dropzone" } },
        h("div", { class: "dv-drop-icon", "aria-hidden": "true" }),
        h("h1", null, "Drop a .dendro archive here"),
        h(
          "p",
          null,
          "or anywhere on this page, or ",
          h("button", { type: "button", class: "dv-btn dv-btn-primary", on: { click: pick } }, "choose files…"),
          " ",
          h("button", { type: "button", class: "dv-btn", data: { testid: "open-folder" }, on: { click: pickFolder } }, "a folder…"),
        ),
        h("p", { class: "dv-muted" }, "Files are read in this browser tab, by a worker; nothing is uploaded. Open several (or a folder) to compare them: each opens in a tab, and their plots share one cursor and one time window."),
      ),
    );
  }

  // -------------------------------------------------------------------------
  // Getting files in

  private installDrop(): void {
    const target: EventTarget = this.opts.dropOnDocument ? document : this.root;
    let depth = 0;
    const hasFiles = (ev: DragEvent) => !!ev.dataTransfer && Array.from(ev.dataTransfer.types).includes("Files");
    const onEnter = (ev: Event) => {
      const d = ev as DragEvent;
      if (!hasFiles(d)) return;
      d.preventDefault();
      depth++;
      this.dropOverlay.hidden = false;
    };
    const onOver = (ev: Event) => {
      const d = ev as DragEvent;
      if (!hasFiles(d)) return;
      d.preventDefault();
      if (d.dataTransfer) d.dataTransfer.dropEffect = "copy";
    };
    const onLeave = () => {
      depth = Math.max(0, depth - 1);
      if (depth === 0) this.dropOverlay.hidden = true;
    };
    const onDrop = (ev: Event) => {
      const d = ev as DragEvent;
      depth = 0;
      this.dropOverlay.hidden = true;
      const files = Array.from(d.dataTransfer?.files ?? []);
      if (files.length === 0) return;
      d.preventDefault();
      // A folder among what was dropped: walk it, sort by content.
      const folders = droppedFolders(d.dataTransfer?.items);
      if (folders) {
        const what = files.length === 1 ? `Folder ${files[0]!.name}` : `${files.length} dropped items`;
        void this.openMany(folders.chunks, what, folders.leftOut);
        return;
      }
      const handles = handlesOf(d.dataTransfer?.items);
      if (files.length === 1) {
        void this.openDropped(files[0]!, handles[0] ?? Promise.resolve(null), null);
        return;
      }
      void this.openMany(picked(files), `${files.length} dropped files`, () => 0, handles);
    };
    const pairs: [string, (ev: Event) => void][] = [
      ["dragenter", onEnter],
      ["dragover", onOver],
      ["dragleave", onLeave],
      ["drop", onDrop],
    ];
    for (const [n, fn] of pairs) target.addEventListener(n, fn);
    this.cleanup.push(() => {
      for (const [n, fn] of pairs) target.removeEventListener(n, fn);
    });
  }

  openFile(file: File | Blob, init?: ViewState, name?: string): Promise<OpenResult> {
    const n = name ?? (file instanceof File ? file.name : "archive.dendro");
    return this.load(n, null, this.fileGetter(file, n), init);
  }

  /**
   * Opens many files at once: sorted by content first (the engine's sniff
   * of each one's first bytes), archives opened in tabs (at most MAX_OPEN;
   * the first stays in front), the rest named in a report with the reason.
   * `handles`: the dropped files' handles, by position, to watch them.
   */
  async openMany(files: Named[] | AsyncIterable<Named[]>, what: string, leftOut = () => 0, handles: Promise<FileSource | null>[] = []): Promise<OpenResult[]> {
    const opened: Promise<OpenResult>[] = [];
    // The first archive found comes to the front when nothing else is.
    let front = this.active === null;
    const open = (found: Named[]) => {
      this.background = !front;
      try {
        for (const n of found) {
          if (opened.length >= MAX_OPEN) break;
          const k = Array.isArray(files) ? files.indexOf(n) : -1;
          opened.push(handles[k] ? this.openDropped(n.file, handles[k], null, undefined, n.name) : this.openFile(n.file, undefined, n.name));
          this.background = true;
          front = false;
        }
      } finally {
        this.background = false;
      }
    };
    const status = h("div", { class: "dv-many-report", role: "status", data: { testid: "many-progress" } });
    if (!Array.isArray(files) || files.length > 200) this.reports.appendChild(status);
    let sorted;
    try {
      sorted = await sortByContent(
        files,
        (headers) => engine().sniff(headers),
        (found, looked) => {
          open(found);
          setText(status, `${what}: sorting files by content (at most ${count(MAX_FILES)})… ${count(looked)} looked at, ${count(opened.length)} opened`);
        },
      );
    } catch (e) {
      this.toast(`${what} could not be sorted: ${explain(e, what).message}`);
      return Promise.all(opened);
    } finally {
      status.remove();
    }
    sorted.leftOut += leftOut();
    const report = manyReport(what, sorted, sorted.archives.slice(MAX_OPEN), () => report?.remove());
    if (report) this.reports.appendChild(report);
    if (sorted.archives.length === 0 && !report) this.toast(`${what}: nothing to open.`);
    return Promise.all(opened);
  }

  /**
   * Opens every URL in a tab, in order: the one at `init.active` gets the
   * view `init` describes (source, stream, columns) and stays in front;
   * every one opens on its window.
   */
  openUrls(urls: string[], init: ViewState = {}): Promise<OpenResult[]> {
    const { source: _s, stream: _t, columns: _c, notes: _n, made: _m, ...shared } = init;
    const active = init.active ?? 0;
    const opened: Promise<OpenResult>[] = [];
    try {
      urls.forEach((u, i) => {
        this.background = i !== active && (i > 0 || active > 0);
        opened.push(this.openUrl(u, i === active ? { ...init, url: u } : { ...shared, url: u }));
      });
    } finally {
      this.background = false;
    }
    return Promise.all(opened);
  }

  /** Lists the archives a `dendro serve DIR` offers (`?list=/archives.json`), each with a button to open it. */
  async showListing(url: string): Promise<void> {
    let panel: HTMLElement;
    try {
      const listing = await fetchListing(url);
      panel = listingPanel(url, listing, (urls) => void this.openUrls(urls), bytes);
    } catch (e) {
      panel = h("div", { class: "dv-many-report", role: "alert", data: { testid: "listing" } }, fileText(e instanceof Error ? e.message : String(e), { max: 600 }));
    }
    this.reports.appendChild(panel);
  }

  /** The engine's counters: what it holds now (closing a tab gives its archive's share back). */
  engineStats(): Promise<EngineStats> {
    return engine().stats();
  }

  private fileGetter(file: File | Blob, name: string): Getter {
    const mode = this.opts.openMode ?? "auto";
    const lazy = mode === "lazy" || (mode === "auto" && file.size >= LAZY_FROM_BYTES);
    return {
      lazy: lazy ? () => engine().openFile(file, name) : null,
      bytes: () => (file instanceof File ? readFile(file) : file.arrayBuffer()),
      size: file.size,
    };
  }

  /**
   * Opens a dropped file (into `into`, reloading it, or a new tab) and,
   * where the browser gave its handle, watches it for a newer version.
   */
  private async openDropped(file: File, handle: Promise<FileSource | null>, into: Tab | null, init?: ViewState, name = file.name): Promise<OpenResult> {
    const tab = into ?? this.addTab(name, null);
    const opened = this.load(name, null, this.fileGetter(file, name), init, tab);
    const source = await handle;
    if (source && this.tabs.includes(tab)) {
      tab.watch?.stop();
      tab.watch = new FileWatch(source, stampOf(file), (newer) => this.offerReload(tab, newer, source));
    }
    return opened;
  }

  /** Says in the tab that its file changed on disk, with a button to reload it. */
  private offerReload(tab: Tab, newer: File, source: FileSource): void {
    const text = `${tab.name} changed on disk: now ${bytes(newer.size)}, modified ${instant(BigInt(Math.trunc(newer.lastModified)) * 1_000_000n, this.tzMode, 0)}.`;
    const old = tab.el.querySelector<HTMLElement>('[data-testid="file-changed"]');
    const notice = h(
      "div",
      { class: "dv-file-changed", role: "status", data: { testid: "file-changed" } },
      h("span", null, fileText(text, { max: 300 })),
      h("button", { type: "button", class: "dv-btn dv-btn-primary", data: { testid: "reload-file" }, on: { click: () => void this.reload(tab, newer, source) } }, "Reload"),
    );
    if (old) old.replaceWith(notice);
    else tab.el.prepend(notice);
  }

  /** Opens the newest version of a watched file in its tab, keeping the view's place. */
  private async reload(tab: Tab, seen: File, source: FileSource): Promise<void> {
    const file = await source.getFile().catch(() => seen);
    const init = tab.state.kind === "archive" ? tab.state.view.state() : undefined;
    this.retire(tab);
    await this.openDropped(file, Promise.resolve(source), tab, init, tab.name);
  }

  /** The buffer is handed to the worker (detached here). */
  openBytes(buffer: ArrayBuffer, name: string, init?: ViewState): Promise<OpenResult> {
    return this.load(name, null, { lazy: null, bytes: () => Promise.resolve(buffer), size: buffer.byteLength }, init);
  }

  /**
   * Reads the URL in place when its server answers Range requests (and,
   * in "auto" mode, the file is at least LAZY_FROM_BYTES), else downloads
   * it whole.
   */
  openUrl(url: string, init?: ViewState, opts: { follow?: boolean } = {}): Promise<OpenResult> {
    const name = nameFromUrl(url);
    const mode = this.opts.openMode ?? "auto";
    const minLazyBytes = mode === "lazy" ? 0 : LAZY_FROM_BYTES;
    if (opts.follow ?? this.opts.follow) {
      return this.load(
        name,
        url,
        {
          lazy: async () => {
            const r = await engine().follow(url, name, null);
            return r.unchanged ? null : r.handle;
          },
          bytes: () => Promise.reject(new LoadError(`${url} cannot be followed: its server does not answer range requests`)),
          follow: true,
          resume: async (failed) => {
            const r = await engine().follow(url, name, failed);
            return r.unchanged ? null : { handle: r.handle, units: r.units };
          },
        },
        init,
      );
    }
    return this.load(
      name,
      url,
      {
        lazy: mode === "memory" ? null : () => engine().openUrl(url, name, { minLazyBytes }),
        bytes: (progress) => fetchWithProgress(url, progress),
      },
      init,
    );
  }

  private async load(name: string, url: string | null, getter: Getter, init?: ViewState, tab: Tab = this.addTab(name, url)): Promise<OpenResult> {
    tab.state = { kind: "loading" };
    tab.button.dataset["state"] = "loading";
    const bar = h("progress", { class: "dv-progress", data: { testid: "progress" } });
    const what = h("div", { class: "dv-loading-what" }, url ? "Downloading…" : "Reading the file…");
    replace(tab.el, h("div", { class: "dv-loading", data: { testid: "loading" } }, h("div", { class: "dv-loading-name" }, fileText(name, { max: 120 })), what, bar));
    let handle: ArchiveHandle | null = null;
    let size = getter.size;
    if (getter.lazy) {
      what.textContent = url ? "Reading the archive's catalog from the server…" : "Reading the archive's catalog…";
      try {
        handle = await getter.lazy();
      } catch (e) {
        return this.fail(tab, e, size);
      }
    }
    if (!handle) {
      const opened = await this.openWhole(tab, getter, what, bar);
      if ("failed" in opened) return opened.failed;
      ({ handle, size } = opened);
    }
    // A large archive read in place: its outline is on screen while the
    // catalog is listed (a read per few segments, scattered through the
    // file). Not for a followed one, whose images come and go meanwhile.
    // The description is asked for with it, so the worker lists the
    // catalog while this page draws the outline.
    let early: ArchiveView | null = null;
    let described: Promise<Description> | null = null;
    if (handle.mode === "lazy" && !getter.follow) {
      const outlined = handle.outline().catch(() => null);
      described = handle.describe();
      described.catch(() => {});
      const outline = await outlined;
      if (outline && this.tabs.includes(tab)) {
        early = this.showArchive(tab, handle, outline, name, url, getter, init);
      }
    }
    let desc: Description;
    // Followed, the image being read may go before its catalog is read (a
    // writer faster than this reader, on a busy host): the open reads on
    // from the newest image, keeping every page it read that the writer
    // did not change, rather than starting over.
    let units = -1;
    let stalls = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        desc = await (described ?? handle.describe());
        break;
      } catch (e) {
        described = null;
        const failed = handle;
        if (!getter.resume || !isChanged(e)) {
          early?.destroy();
          void failed.close().catch(() => {});
          return this.fail(tab, e, size);
        }
        let next: { handle: ArchiveHandle; units: number } | null;
        try {
          next = await getter.resume(failed);
        } catch (e2) {
          next = null;
          e = e2;
        } finally {
          void failed.close().catch(() => {});
        }
        if (!next) return this.fail(tab, e, size);
        stalls = next.units > units ? 0 : stalls + 1;
        units = next.units;
        handle = next.handle;
        if (stalls >= OPEN_STALLS) {
          void handle.close().catch(() => {});
          return this.fail(tab, e, size);
        }
        what.textContent = `The archive changed while it was read; reading on from its newest image (attempt ${attempt + 1})…`;
      }
    }
    if (!this.tabs.includes(tab)) {
      early?.destroy();
      void handle.close().catch(() => {});
      return { ok: true, name, description: desc };
    }
    if (early) early.described(desc);
    const view = early ?? this.showArchive(tab, handle, desc, name, url, getter, init);
    this.archives.add(tab.id, name, url, view);
    this.comparison.again();
    const r: OpenResult = { ok: true, name, description: desc };
    this.opts.onOpen?.(r);
    return r;
  }

  /** Gets the whole file's bytes (with progress) and copies them into the engine. */
  private async openWhole(
    tab: Tab,
    getter: Getter,
    what: HTMLElement,
    bar: HTMLProgressElement,
  ): Promise<{ handle: ArchiveHandle; size: number } | { failed: OpenResult }> {
    let buf: ArrayBuffer;
    try {
      buf = await getter.bytes((loaded, total) => {
        if (total !== null && total > 0) {
          bar.max = total;
          bar.value = loaded;
          what.textContent = `Downloading… ${bytes(loaded)} of ${bytes(total)} (${Math.floor((loaded / total) * 100)}%)`;
        } else {
          bar.removeAttribute("value");
          what.textContent = `Downloading… ${bytes(loaded)}`;
        }
      });
    } catch (e) {
      return { failed: this.fail(tab, e, undefined) };
    }
    const size = buf.byteLength;
    what.textContent = `Opening ${bytes(size)} in the worker…`;
    bar.removeAttribute("value");
    try {
      return { handle: await engine().open(buf, tab.name), size };
    } catch (e) {
      return { failed: this.fail(tab, e, size) };
    }
  }

  /** The archive's view in its tab, from a description or an outline of it. */
  private showArchive(
    tab: Tab,
    handle: ArchiveHandle,
    desc: Description,
    name: string,
    url: string | null,
    getter: Getter,
    init: ViewState | undefined,
  ): ArchiveView {
    const view = new ArchiveView(
      {
        tz: () => this.tzMode,
        tooltip: this.tooltip,
        dialog: this.dialog,
        changed: (v) => this.viewChanged(v),
        compare: (stream) => void this.comparison.open(stream),
        // While a comparison opens, every tab keeps the worker free for it;
        // the tab in front opens its first plot once it has drawn (settled).
        quiet: () => this.comparison.active() && (this.active !== tab || !this.comparison.drawn),
        comparing: () => this.comparison.active(),
        windowChosen: (v, a, b) => {
          if (!this.following && this.active?.state.kind === "archive" && this.active.state.view === v) this.sync.setWindow(a, b, this);
        },
      },
      handle,
      desc,
      { name, url, ...(getter.follow ? { follow: engine() } : {}) },
      init,
    );
    tab.state = { kind: "archive", view, handle };
    tab.button.dataset["state"] = "open";
    tab.button.dataset["mode"] = handle.mode;
    replace(tab.el, view.el);
    if (this.active === tab) {
      view.shown();
      this.takeGroupWindow(view);
      this.syncUrl();
    }
    return view;
  }

  private fail(tab: Tab, e: unknown, size: number | undefined): OpenResult {
    const x = explain(e, tab.name, size);
    tab.state = { kind: "error", error: x };
    tab.button.dataset["state"] = "error";
    replace(tab.el, errorPanel(x, tab.url));
    if (!(e instanceof LoadError) && !(typeof e === "object" && e !== null && "kind" in e)) console.error(e);
    this.comparison.again();
    const r: OpenResult = { ok: false, name: tab.name, error: x };
    this.opts.onOpen?.(r);
    return r;
  }

  // -------------------------------------------------------------------------
  // Tabs

  private addTab(name: string, url: string | null): Tab {
    const id = ++tabCounter;
    const el = h("div", { class: "dv-tab-panel", role: "tabpanel", data: { tab: id } });
    const button = h(
      "div",
      { class: "dv-tab", role: "tab", data: { tab: id, state: "loading", testid: "tab" }, tabindex: "0" },
      h("span", { class: "dv-tab-dot" }),
      h("span", { class: "dv-tab-name" }, fileText(name, { max: 36, more: false })),
      h("button", { type: "button", class: "dv-tab-close", "aria-label": "Close", title: "Close this archive" }, "×"),
    );
    const tab: Tab = { id, name, url, el, button, state: { kind: "loading" } };
    button.addEventListener("click", (ev) => {
      if ((ev.target as HTMLElement).closest(".dv-tab-close")) this.closeTab(tab);
      else this.activate(tab);
    });
    button.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") this.activate(tab);
    });
    this.tabs.push(tab);
    this.tabBar.appendChild(button);
    this.welcome.remove();
    this.main.appendChild(el);
    if (this.background && this.active) el.hidden = true;
    else this.activate(tab);
    return tab;
  }

  private activate(tab: Tab): void {
    this.active = tab;
    for (const t of this.tabs) {
      const on = t === tab;
      t.el.hidden = !on;
      t.button.classList.toggle("dv-active", on);
      t.button.setAttribute("aria-selected", String(on));
    }
    if (tab.state.kind === "archive") {
      tab.state.view.shown();
      this.takeGroupWindow(tab.state.view);
    }
    this.syncUrl();
  }

  /** A window another plot of the sync group chose: the tab in front takes it (the others when shown). */
  private followWindow(from: bigint, to: bigint): void {
    if (this.active?.state.kind === "archive") this.takeGroupWindow(this.active.state.view, [from, to]);
  }

  /**
   * Shows the sync group's window in `view` where it overlaps the
   * archive's span: an archive with nothing in that window keeps its own
   * rather than showing an empty plot.
   */
  private takeGroupWindow(view: ArchiveView, w: [bigint, bigint] | null = this.sync.window): void {
    if (!w) return;
    const { window: mine, full } = view.spans();
    if (w[1] <= full[0] || w[0] >= full[1] || (mine[0] === w[0] && mine[1] === w[1])) return;
    this.following = true;
    try {
      view.setWindow(w[0], w[1]);
    } finally {
      this.following = false;
    }
  }

  /** Says in each tab whose sources are copies of ones open in an earlier tab (archives.ts). */
  private paintDuplicates(): void {
    for (const t of this.tabs) {
      const entry = this.archives.get(t.id);
      const text = entry ? duplicatesText(entry) : null;
      const old = t.el.querySelector<HTMLElement>(':scope > [data-testid="duplicate"]');
      t.button.classList.toggle("dv-duplicate", text !== null);
      if (!text) {
        old?.remove();
        continue;
      }
      const note = h("div", { class: "dv-file-changed", role: "status", data: { testid: "duplicate" } }, fileText(text, { max: 600 }));
      if (old) old.replaceWith(note);
      else t.el.prepend(note);
    }
  }

  closeTab(tab: Tab): void {
    const i = this.tabs.indexOf(tab);
    if (i < 0) return;
    this.tabs.splice(i, 1);
    tab.button.remove();
    tab.el.remove();
    this.retire(tab);
    if (this.active === tab) {
      const next = this.tabs[Math.min(i, this.tabs.length - 1)];
      this.active = null;
      if (next) this.activate(next);
      else {
        this.main.appendChild(this.welcome);
        this.syncUrl();
      }
    }
  }

  /** Lets go of what a tab holds: its view, its archive, its file watch. */
  private retire(tab: Tab): void {
    tab.watch?.stop();
    delete tab.watch;
    this.archives.remove(tab.id);
    this.comparison.closed(tab.id);
    if (tab.state.kind === "archive") {
      tab.state.view.destroy();
      // A followed view has moved on to newer images of the archive.
      void tab.state.view.handle.close().catch(() => {});
      tab.state = { kind: "loading" };
    }
  }

  // -------------------------------------------------------------------------
  // Zone and URL

  setTz(tz: TimeZoneMode): void {
    if (tz === this.tzMode) return;
    this.tzMode = tz;
    this.paintTz();
    for (const t of this.tabs) if (t.state.kind === "archive") t.state.view.tzChanged();
    this.syncUrl();
  }

  private paintTz(): void {
    for (const [k, b] of Object.entries(this.tzButtons)) b.classList.toggle("dv-on", k === this.tzMode);
  }

  private viewChanged(view: ArchiveView): void {
    if (this.active?.state.kind === "archive" && this.active.state.view === view) this.syncUrl();
  }

  /** The compare view's part of the URL (state.ts): what it compares, and the shift. */
  setCompare(c: Pick<ViewState, "compare" | "shift">): void {
    this.compareState = { ...c };
    this.syncUrl();
  }

  compare(): Pick<ViewState, "compare" | "shift"> {
    return { ...this.compareState };
  }

  /**
   * The page's address for this view: every archive opened from a URL (in
   * tab order), which of them is in front with its source, stream and
   * columns, the window, the zone, and the compare view's state.
   */
  private writeUrl(): void {
    const state = this.viewState();
    this.opts.onView?.(state);
    if (!this.opts.urlState) return;
    const search = stateToSearch(state, location.search);
    if (search !== location.search) history.replaceState(history.state, "", location.pathname + search + location.hash);
  }

  /** A link to this view with the notes of the archive in front (link.ts), shown under the bar; its address. */
  share(): Promise<string> {
    const notes = this.active?.state.kind === "archive" ? this.active.state.view.notes : null;
    return showShareBox(this.reports, this.viewState(), notes?.book.all() ?? [], notes?.identity ?? null);
  }

  /** The view of the tab in front; null while none is open. */
  activeView(): ArchiveView | null {
    return this.active?.state.kind === "archive" ? this.active.state.view : null;
  }

  private viewState(): ViewState {
    let state: ViewState = {};
    const t = this.active;
    if (t?.state.kind === "archive") state = t.state.view.state();
    else if (t?.url) state = { url: t.url };
    const urls = this.tabs.flatMap((x) => (x.url ? [x.url] : []));
    state.urls = urls;
    if (t?.url) state.active = this.tabs.filter((x) => x.url).indexOf(t);
    else {
      // The tab in front is a file, which no URL can name: its source and
      // stream would be taken for another archive's.
      delete state.source;
      delete state.stream;
      delete state.columns;
    }
    Object.assign(state, this.compareState);
    const cmp = this.comparison.view;
    if (cmp) {
      state.columns = cmp.columns();
      state.from = cmp.from;
      state.to = cmp.to;
    }
    state.tz = this.tzMode;
    return state;
  }

  toast(text: string): void {
    const el = h("div", { class: "dv-toast", role: "alert" }, h("b", null, "Something went wrong. "), fileText(text, { max: 400 }));
    const close = h("button", { type: "button", class: "dv-tab-close", "aria-label": "Dismiss" }, "×");
    close.addEventListener("click", () => el.remove());
    el.appendChild(close);
    this.toasts.appendChild(el);
    setTimeout(() => el.remove(), 15000);
  }

  destroy(): void {
    for (const t of [...this.tabs]) this.closeTab(t);
    for (const fn of this.cleanup) fn();
    this.root.remove();
  }
}

// The notes panel of one archive's view: the list of its notes (each
// edited in place, deleted, or clicked to show its time), the box that
// writes a new one, export and import as a JSON file, and the words when
// a shared link was made on another archive. A note is marked by a
// person by holding Alt while dragging (a region) or clicking (an
// instant) on the timeline, or by pressing N with the pointer over a
// plot (an instant at the cursor); with no mark, the note is of the
// window shown. Also the timeline's note flags (`noteFlags`).

import type { Description } from "../engine/types";
import { type Child, fileText, h, replace } from "./dom";
import { duration, instant, span, type TimeZoneMode } from "./format";
import { type ArchiveIdentity, identityOf, mismatchText, notesKey } from "./identity";
import { MAX_NOTES_FILE, MAX_NOTE_CHARS, type Note, NoteBook, type NoteMark, checkNote, exportFile, newNoteId, parseNotesFile } from "./notes";
import type { Tooltip } from "./overlay";
import type { ViewState } from "./state";
import { busOf } from "./sync";
import { ActionError, NOTE_ADDED_EVENT } from "../embedding";

export interface NotesHost {
  tz(): TimeZoneMode;
  /** The window shown: a note with no mark is of it. */
  window(): [bigint, bigint];
  /** The source of the stream in view (a plot's N), null when none is open. */
  source(): number | null;
  /** Shows a note's time: its region, or a window around its instant. */
  show(from: bigint, to: bigint): void;
  /** The archive's name, for the words and the exported file's name. */
  name: string;
}

/** A note being written: where it goes, before its text. */
interface Mark {
  source: number;
  from: bigint;
  to: bigint | null;
}

export class NotesPanel {
  readonly el: HTMLElement;
  /** The words when a shared link was made on another archive (or an earlier state of this one); null when not. */
  readonly warning: HTMLElement | null = null;
  readonly book: NoteBook;
  readonly identity: ArchiveIdentity;
  private readonly list: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly where: HTMLElement;
  private readonly problem: HTMLElement;
  private mark: Mark | null = null;
  private readonly form: HTMLFormElement;
  /** Whether the pointer is over a plot of this archive (N marks the cursor's instant). */
  private overPlot = false;
  private readonly onKey = (ev: KeyboardEvent) => {
    const t = ev.composedPath()[0] as HTMLElement | undefined;
    if ((ev.key !== "n" && ev.key !== "N") || ev.ctrlKey || ev.metaKey || ev.altKey || !this.overPlot) return;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName ?? ""))) return;
    const at = busOf(this.el)?.cursorAt ?? null;
    if (at === null) return;
    ev.preventDefault();
    this.markCursor(at);
  };

  constructor(
    private readonly host: NotesHost,
    private readonly desc: Description,
    init: Pick<ViewState, "notes" | "made">,
  ) {
    this.identity = identityOf(desc);
    this.book = new NoteBook(notesKey(this.identity));
    if (init.made) {
      const text = mismatchText(init.made, this.identity, host.name);
      if (text) this.warning = h("div", { class: "dv-link-mismatch", role: "alert", data: { testid: "link-mismatch" } }, fileText(text, { max: 600 }));
    }
    // A link's notes join this archive's (kept, like the person's own); the same note twice is one.
    if (init.notes) this.book.add(init.notes.filter((n) => desc.sources.some((s) => s.id === n.source)));
    this.input = h("input", { type: "text", class: "dv-note-input", maxlength: String(MAX_NOTE_CHARS), placeholder: "A note…", "aria-label": "Note text", data: { testid: "note-input" } });
    this.where = h("span", { class: "dv-muted dv-small", data: { testid: "note-where" } });
    this.input.addEventListener("keydown", (ev) => {
      if (ev.key !== "Escape" || !this.mark) return;
      ev.stopPropagation();
      this.setMark(null);
    });
    this.problem = h("span", { class: "dv-error-inline", data: { testid: "notes-problem" }, hidden: true });
    this.form = h(
      "form",
      {
        class: "dv-note-form",
        on: {
          submit: (ev) => {
            ev.preventDefault();
            this.addFromForm();
          },
        },
      },
      this.input,
      h("button", { type: "submit", class: "dv-btn", data: { testid: "note-add" } }, "Add note"),
      this.where,
    );
    const picker = h("input", { type: "file", accept: ".json,application/json", class: "dv-file-input", "aria-label": "Import notes", data: { testid: "notes-import" } });
    picker.addEventListener("change", () => {
      const f = picker.files?.[0];
      picker.value = "";
      if (f) void this.importFile(f);
    });
    this.list = h("ol", { class: "dv-notes-list", data: { testid: "notes-list" } });
    this.el = h(
      "section",
      { class: "dv-panel dv-notes", data: { testid: "notes" } },
      h(
        "div",
        { class: "dv-panel-head" },
        h("h2", null, "Notes"),
        h("span", { class: "dv-muted dv-small" }, "Alt-drag on the timeline marks a region, Alt-click an instant, N over a plot the cursor's instant"),
        h("span", { class: "dv-spacer" }),
        h("button", { type: "button", class: "dv-btn dv-btn-xs", data: { testid: "notes-export" }, on: { click: () => this.exportFile() } }, "Export…"),
        h("button", { type: "button", class: "dv-btn dv-btn-xs", on: { click: () => picker.click() } }, "Import…"),
        picker,
      ),
      this.form,
      this.problem,
      this.list,
    );
    this.book.onChange(() => this.paint());
    this.paint();
    this.paintWhere();
  }

  /** Watches the pointer over `root`'s plots, and N pressed meanwhile. */
  listen(root: HTMLElement): void {
    root.addEventListener("pointerover", (ev) => (this.overPlot = !!(ev.target as Element).closest?.(".uplot")));
    root.addEventListener("pointerleave", () => (this.overPlot = false));
    document.addEventListener("keydown", this.onKey);
  }

  destroy(): void {
    document.removeEventListener("keydown", this.onKey);
  }

  /** Where the next note goes: set by a drag or click on the timeline, or N over a plot. */
  setMark(source: number | null, from = 0n, to: bigint | null = null): void {
    this.mark = source === null ? null : { source, from, to: to !== null && to > from ? to : null };
    // While a mark waits for its text, the box floats at the foot of the
    // window, so the plot or lane marked stays in sight as it is written.
    this.form.classList.toggle("dv-note-pending", this.mark !== null);
    this.paintWhere();
    if (this.mark) this.input.focus({ preventScroll: true });
    else this.input.blur();
  }

  /** The window changed: a note without a mark is of the new one. */
  windowChanged(): void {
    if (!this.mark) this.paintWhere();
  }

  /** N with the pointer over a plot: an instant at `ns` of the stream in view's source. */
  markCursor(ns: bigint): void {
    const src = this.host.source();
    if (src !== null) this.setMark(src, ns, null);
  }

  private paintWhere(): void {
    const tz = this.host.tz();
    const m = this.mark;
    if (m) this.where.textContent = m.to === null ? `at ${instant(m.from, tz)}, source ${m.source}` : `over ${span(m.from, m.to, tz)}, source ${m.source}`;
    else {
      const src = this.host.source();
      const [a, b] = this.host.window();
      this.where.textContent = src === null ? "mark a place first (Alt-drag on the timeline)" : `over the window shown (${duration(b - a)}), source ${src}`;
    }
  }

  private addFromForm(): void {
    const text = this.input.value.trim();
    if (text === "") return;
    let m = this.mark;
    if (!m) {
      const src = this.host.source();
      if (src === null) return;
      const [a, b] = this.host.window();
      m = { source: src, from: a, to: b };
    }
    this.added({ id: newNoteId(), source: m.source, from: m.from, to: m.to, text: text.slice(0, MAX_NOTE_CHARS) });
    this.input.value = "";
    // Done writing: N over a plot marks the next one, rather than typing an "n" here.
    this.setMark(null);
  }

  /** A note a host asked for (the embedding API's addNote), its fields checked. */
  addNote(p: Record<string, unknown>): Note {
    const str = (v: unknown) => (typeof v === "bigint" ? v.toString() : v);
    let note: Note;
    try {
      note = checkNote({ source: p["source"], from: str(p["from"]), to: str(p["to"] ?? null), text: p["text"] }, "addNote");
    } catch (e) {
      throw new ActionError((e as Error).message);
    }
    if (!this.desc.sources.some((s) => s.id === note.source)) throw new ActionError(`addNote: ${this.host.name} has no source ${note.source}`);
    this.added(note);
    return note;
  }

  private added(note: Note): void {
    this.book.add([note]);
    this.el.dispatchEvent(new CustomEvent(NOTE_ADDED_EVENT, { detail: note, bubbles: true }));
  }

  private paint(): void {
    const tz = this.host.tz();
    const notes = this.book.all();
    this.el.dataset["count"] = String(notes.length);
    replace(
      this.list,
      notes.length === 0 ? h("li", { class: "dv-muted dv-small" }, "No notes yet.") : null,
      notes.map((n) => this.row(n, tz)),
    );
  }

  private row(n: Note, tz: TimeZoneMode): HTMLElement {
    const when = n.to === null ? instant(n.from, tz) : span(n.from, n.to, tz);
    const text = h("span", { class: "dv-note-text", data: { testid: "note-text" } }, fileText(n.text, { max: MAX_NOTE_CHARS, more: false }));
    const li = h(
      "li",
      { class: "dv-note", data: { testid: "note", id: n.id, source: n.source, from: n.from, to: n.to ?? "" } },
      h("button", { type: "button", class: "dv-btn dv-btn-xs dv-btn-quiet", title: "Show this time", on: { click: () => this.showNote(n) } }, when),
      h("span", { class: "dv-muted dv-small" }, ` source ${n.source} `),
      text,
      h("button", { type: "button", class: "dv-btn dv-btn-xs", data: { action: "edit-note" }, on: { click: () => this.editRow(li, text, n) } }, "edit"),
      h("button", { type: "button", class: "dv-btn dv-btn-xs", data: { action: "delete-note" }, on: { click: () => this.book.remove(n.id) } }, "delete"),
    );
    return li;
  }

  private editRow(li: HTMLElement, text: HTMLElement, n: Note): void {
    const box = h("input", { type: "text", class: "dv-note-input", maxlength: String(MAX_NOTE_CHARS), "aria-label": "Edit the note", data: { testid: "note-edit" } });
    box.value = n.text;
    box.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") this.book.edit(n.id, box.value);
      else if (ev.key === "Escape") this.paint();
      else return;
      ev.preventDefault();
      ev.stopPropagation();
    });
    li.replaceChild(box, text);
    box.focus();
  }

  private showNote(n: Note): void {
    if (n.to !== null) this.host.show(n.from, n.to);
    else {
      const [a, b] = this.host.window();
      const half = (b - a) / 2n;
      this.host.show(n.from - half, n.from + half);
    }
  }

  private exportFile(): void {
    const blob = new Blob([exportFile(this.book.all(), this.host.name)], { type: "application/json" });
    const a = h("a", { href: URL.createObjectURL(blob), download: `${this.host.name.replace(/[^\w.-]+/g, "_")}.notes.json` });
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }

  private async importFile(f: File): Promise<void> {
    this.problem.hidden = true;
    try {
      if (f.size > MAX_NOTES_FILE) throw new Error(`${f.name} is larger than a notes file can be (${MAX_NOTES_FILE} bytes)`);
      const notes = parseNotesFile(await f.text(), f.name);
      const here = notes.filter((n) => this.desc.sources.some((s) => s.id === n.source));
      this.book.add(here);
      if (here.length < notes.length) this.say(`${notes.length - here.length} of the notes in ${f.name} are of sources this archive does not have; they were left out.`);
    } catch (e) {
      this.say(e instanceof Error ? e.message : String(e));
    }
  }

  private say(text: string): void {
    replace(this.problem, fileText(text, { max: 400 }));
    this.problem.hidden = false;
  }
}

/**
 * The timeline's marks for notes on a lane: a flag with the note's text
 * on hover (and a band for a region). `x` maps a timestamp to the lane's
 * pixels; marks outside [0, width] are left out.
 */
export function noteFlags(notes: NoteMark[], x: (ns: bigint) => number, width: number, tooltip: Tooltip, tz: TimeZoneMode): HTMLElement[] {
  const out: HTMLElement[] = [];
  for (const n of notes) {
    const a = x(n.from);
    const b = n.to === null ? a : x(n.to);
    if (b < -8 || a > width + 8) continue;
    const tip = (): Child => [h("b", null, "Note"), h("div", null, n.to === null ? instant(n.from, tz) : span(n.from, n.to, tz)), fileText(n.text, { max: MAX_NOTE_CHARS, more: false })];
    if (n.to !== null) out.push(h("div", { class: "dv-note-band", style: { left: `${Math.max(0, a)}px`, width: `${Math.max(1, Math.min(width, b) - Math.max(0, a))}px` } }));
    const flag = h("div", { class: "dv-note-flag", style: { left: `${a}px` }, data: { testid: "note-flag" } });
    tooltip.attach(flag, tip);
    out.push(flag);
  }
  return out;
}

// The documents of a schema-5 archive: one row per (kind, name) with its
// current revision and how many it has, and on a click its history, every
// revision with its body. Bodies are the caller's JSON as stored: shown as
// text (fileText: text nodes, controls made visible), never parsed into
// markup, so a body holding HTML shows as the characters it is.

import type { ArchiveHandle, Description, DocumentInfo, DocumentRevision } from "../engine/types";
import { plural } from "./catalog";
import { fileText, h, replace } from "./dom";
import { explain } from "./errors";
import { count, instant, type TimeZoneMode } from "./format";
import type { Dialog } from "./overlay";

export interface DocumentsHost {
  handle: ArchiveHandle;
  name: string;
  dialog: Dialog;
  tz(): TimeZoneMode;
}

/** Documents listed at first; the rest are counted ("… more"). */
export const SHOWN_DOCUMENTS = 200;
/** Revisions a history shows, newest first; older ones are counted. */
export const SHOWN_REVISIONS = 200;
/** A body longer than this shows cut, with a way to see and copy the whole of it. */
const BODY_CHARS = 20_000;

export class DocumentsSection {
  readonly el: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly body: HTMLElement;
  private shown: DocumentInfo[] = [];

  /** The section for an archive that can hold documents (schema 5); null for schema 4. */
  static for(host: DocumentsHost, desc: Description): DocumentsSection | null {
    return desc.schema_version >= 5 ? new DocumentsSection(host, desc) : null;
  }

  private constructor(
    private readonly host: DocumentsHost,
    desc: Description,
  ) {
    this.summary = h("span", { class: "dv-muted", data: { testid: "documents-summary" } });
    this.body = h("div");
    this.el = h(
      "section",
      { class: "dv-panel dv-documents", data: { testid: "documents" } },
      h("h3", { class: "dv-documents-title" }, "Documents ", this.summary),
      this.body,
    );
    this.update(desc);
  }

  /** A newer description (a followed archive): rebuilt only when its documents changed. */
  update(desc: Description): void {
    const docs = desc.documents ?? [];
    if (docs.length === this.shown.length && docs.every((d, i) => same(d, this.shown[i]!)) && this.body.firstChild) return;
    this.shown = docs;
    const current = docs.filter((d) => !d.deleted).length;
    const revisions = docs.reduce((n, d) => n + d.revisions, 0);
    this.summary.textContent = `${count(current)} current, ${plural(revisions, "revision")}`;
    if (docs.length === 0) {
      replace(this.body, h("div", { class: "dv-muted" }, "This archive holds no documents."));
      return;
    }
    const rows = docs.slice(0, SHOWN_DOCUMENTS).map((d) => this.row(d));
    const left = docs.length - rows.length;
    replace(
      this.body,
      h(
        "table",
        { class: "dv-table dv-documents-table" },
        h("thead", null, h("tr", null, h("th", null, "kind"), h("th", null, "name"), h("th", null, "current revision"), h("th", null, "revisions"), h("th", null, ""))),
        h("tbody", null, rows),
      ),
      left > 0 ? h("div", { class: "dv-muted" }, `… ${plural(left, "more document")} not shown.`) : null,
    );
  }

  private row(d: DocumentInfo): HTMLElement {
    return h(
      "tr",
      { data: { testid: "document", kind: d.kind, name: d.name, deleted: String(d.deleted) } },
      h("td", { class: "dv-mono" }, fileText(d.kind, { max: 60, what: "document kind" })),
      h("td", null, fileText(d.name, { max: 80, what: "document name" })),
      h("td", null, d.deleted ? h("span", { class: "dv-muted" }, `deleted (revision ${d.current})`) : `#${d.current}`),
      h("td", null, count(d.revisions)),
      h(
        "td",
        null,
        h(
          "button",
          { type: "button", class: "dv-btn dv-btn-quiet", data: { testid: "document-history" }, on: { click: () => void this.history(d) } },
          "History",
        ),
      ),
    );
  }

  /** Opens the dialog with every revision of `d`, newest first, read from the engine now. */
  private async history(d: DocumentInfo): Promise<void> {
    const title = `Document ${d.kind} “${d.name.length > 60 ? d.name.slice(0, 60) + "…" : d.name}”`;
    this.host.dialog.open(title, h("div", { class: "dv-muted" }, "Reading…"));
    let revisions: DocumentRevision[];
    try {
      revisions = await this.host.handle.documentHistory(d.kind, d.name);
    } catch (e) {
      const x = explain(e, this.host.name);
      this.host.dialog.open(title, h("p", null, x.hint), h("pre", { class: "dv-pre" }, fileText(x.message, { max: 4000 })));
      return;
    }
    const tz = this.host.tz();
    const items = revisions
      .slice(-SHOWN_REVISIONS)
      .reverse()
      .map((r, i) =>
        h(
          "div",
          { class: "dv-document-revision", data: { testid: "document-revision", id: String(r.id), deleted: String(r.deleted) } },
          h(
            "div",
            { class: "dv-kv-line" },
            h("strong", null, `#${r.id}`),
            i === 0 ? h("span", { class: "dv-chip" }, r.deleted ? "deleted" : "current") : null,
            " ",
            h("span", { class: "dv-muted" }, instant(r.created_wall_ns, tz)),
            r.schema !== null ? [" · schema ", fileText(r.schema, { max: 80, what: "document schema" })] : null,
            r.supersedes !== null ? h("span", { class: "dv-muted" }, ` · supersedes #${r.supersedes}`) : null,
          ),
          r.body === null
            ? h("div", { class: "dv-muted" }, "No body: this revision deletes the document.")
            : h("pre", { class: "dv-pre dv-document-body", data: { testid: "document-body" } }, fileText(r.body, { max: BODY_CHARS, what: "document body" })),
        ),
      );
    this.host.dialog.open(
      title,
      h("div", { class: "dv-muted" }, fileText(d.name, { max: 200, what: "document name" }), ` · ${plural(revisions.length, "revision")}, newest first`),
      items.length > 0 ? items : h("div", { class: "dv-muted" }, "The archive no longer holds this document."),
      revisions.length > SHOWN_REVISIONS
        ? h("div", { class: "dv-muted" }, `… ${plural(revisions.length - SHOWN_REVISIONS, "older revision")} not shown.`)
        : null,
    );
  }
}

function same(a: DocumentInfo, b: DocumentInfo): boolean {
  return a.kind === b.kind && a.name === b.name && a.current === b.current && a.revisions === b.revisions && a.deleted === b.deleted;
}

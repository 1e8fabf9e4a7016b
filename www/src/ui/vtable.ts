// A virtualized table: only the rows in view exist in the DOM, so a segment
// of a million rows scrolls as smoothly as one of ten.

import { type Child, append, clear, fileText, h } from "./dom";

export interface VColumn {
  name: string;
  /** Shown under the name, e.g. the Arrow type. */
  sub?: string;
  width: number;
  align?: "left" | "right";
}

export interface VTableOptions {
  rowHeight?: number;
  /** Height of the scrolling area in px. */
  height?: number;
}

export class VirtualTable {
  readonly el: HTMLElement;
  private readonly viewport: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly rowsEl: HTMLElement;
  private readonly rowHeight: number;
  private frame = 0;
  private first = -1;
  private last = -1;

  constructor(
    private readonly columns: VColumn[],
    private readonly rowCount: number,
    private readonly cell: (row: number, col: number) => Child,
    opts: VTableOptions = {},
  ) {
    this.rowHeight = opts.rowHeight ?? 22;
    const total = columns.reduce((s, c) => s + c.width, 0) + 64;
    const header = h(
      "div",
      { class: "dv-vt-head", style: { width: `${total}px` } },
      h("div", { class: "dv-vt-cell dv-vt-idx" }, "#"),
      columns.map((c) =>
        h(
          "div",
          { class: "dv-vt-cell" + (c.align === "right" ? " dv-right" : ""), style: { width: `${c.width}px` } },
          h("span", { class: "dv-vt-name" }, fileText(c.name, { max: 40, more: false })),
          c.sub ? h("span", { class: "dv-vt-sub" }, c.sub) : null,
        ),
      ),
    );
    this.spacer = h("div", { class: "dv-vt-spacer", style: { height: `${rowCount * this.rowHeight}px`, width: `${total}px` } });
    this.rowsEl = h("div", { class: "dv-vt-rows" });
    this.spacer.appendChild(this.rowsEl);
    this.viewport = h(
      "div",
      { class: "dv-vt-viewport", style: { height: `${Math.min(opts.height ?? 340, 44 + rowCount * this.rowHeight + 16)}px` }, tabindex: "0" },
      header,
      this.spacer,
    );
    this.viewport.addEventListener("scroll", () => this.schedule(), { passive: true });
    this.el = h("div", { class: "dv-vt", data: { testid: "vtable", rows: rowCount } }, this.viewport);
    if (rowCount === 0) this.el.appendChild(h("div", { class: "dv-empty-note" }, "No rows."));
    new ResizeObserver(() => this.schedule()).observe(this.viewport);
    this.schedule();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  private render(): void {
    const top = this.viewport.scrollTop;
    const height = this.viewport.clientHeight || 340;
    const overscan = 8;
    const first = Math.max(0, Math.floor(top / this.rowHeight) - overscan);
    const last = Math.min(this.rowCount, Math.ceil((top + height) / this.rowHeight) + overscan);
    if (first === this.first && last === this.last) return;
    this.first = first;
    this.last = last;
    clear(this.rowsEl);
    this.rowsEl.style.transform = `translateY(${first * this.rowHeight}px)`;
    const frag = document.createDocumentFragment();
    for (let r = first; r < last; r++) {
      const row = h("div", { class: "dv-vt-row" + (r % 2 ? " dv-odd" : ""), style: { height: `${this.rowHeight}px` } });
      row.appendChild(h("div", { class: "dv-vt-cell dv-vt-idx" }, String(r)));
      this.columns.forEach((c, ci) => {
        const cellEl = h("div", { class: "dv-vt-cell" + (c.align === "right" ? " dv-right" : ""), style: { width: `${c.width}px` } });
        append(cellEl, [this.cell(r, ci)]);
        row.appendChild(cellEl);
      });
      frag.appendChild(row);
    }
    this.rowsEl.appendChild(frag);
  }
}

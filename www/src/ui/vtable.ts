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

  private readonly header: HTMLElement;
  /** Left edge of each column (after the index column), and the total at the end. */
  private readonly edges: number[];
  private firstCol = -1;
  private lastCol = -1;

  constructor(
    private readonly columns: VColumn[],
    private readonly rowCount: number,
    private readonly cell: (row: number, col: number) => Child,
    opts: VTableOptions = {},
  ) {
    this.rowHeight = opts.rowHeight ?? 22;
    this.edges = [IDX_WIDTH];
    for (const c of columns) this.edges.push(this.edges[this.edges.length - 1]! + c.width);
    const total = this.edges[this.edges.length - 1]!;
    this.header = h("div", { class: "dv-vt-head", style: { width: `${total}px` } });
    this.spacer = h("div", { class: "dv-vt-spacer", style: { height: `${rowCount * this.rowHeight}px`, width: `${total}px` } });
    this.rowsEl = h("div", { class: "dv-vt-rows" });
    this.spacer.appendChild(this.rowsEl);
    this.viewport = h(
      "div",
      { class: "dv-vt-viewport", style: { height: `${Math.min(opts.height ?? 340, 44 + rowCount * this.rowHeight + 16)}px` }, tabindex: "0" },
      this.header,
      this.spacer,
    );
    this.viewport.addEventListener("scroll", () => this.schedule(), { passive: true });
    this.el = h("div", { class: "dv-vt", data: { testid: "vtable", rows: rowCount, columns: columns.length } }, this.viewport);
    if (rowCount === 0) this.el.appendChild(h("div", { class: "dv-empty-note" }, "No rows."));
    // The header is there at once (its first columns, until the first
    // render knows the viewport's width); rows follow in a frame.
    [this.firstCol, this.lastCol] = this.columnRange(0, 1200);
    this.renderHeader();
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

  /** The columns that meet [left, right) in px, with a few either side. */
  private columnRange(left: number, right: number): [number, number] {
    const n = this.columns.length;
    // First column whose right edge is past `left`.
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.edges[mid + 1]! <= left) lo = mid + 1;
      else hi = mid;
    }
    let end = lo;
    while (end < n && this.edges[end]! < right) end++;
    return [Math.max(0, lo - COL_OVERSCAN), Math.min(n, end + COL_OVERSCAN)];
  }

  private render(): void {
    const top = this.viewport.scrollTop;
    const height = this.viewport.clientHeight || 340;
    const left = this.viewport.scrollLeft;
    const width = this.viewport.clientWidth || 1200;
    const overscan = 8;
    const first = Math.max(0, Math.floor(top / this.rowHeight) - overscan);
    const last = Math.min(this.rowCount, Math.ceil((top + height) / this.rowHeight) + overscan);
    const [firstCol, lastCol] = this.columnRange(left, left + width);
    const colsMoved = firstCol !== this.firstCol || lastCol !== this.lastCol;
    if (first === this.first && last === this.last && !colsMoved) return;
    this.first = first;
    this.last = last;
    if (colsMoved) {
      this.firstCol = firstCol;
      this.lastCol = lastCol;
      this.renderHeader();
    }
    clear(this.rowsEl);
    this.rowsEl.style.transform = `translateY(${first * this.rowHeight}px)`;
    // Columns left of the range are one spacer; those right of it need none
    // (the spacer element holds the full width).
    const skip = this.edges[firstCol]! - IDX_WIDTH;
    const frag = document.createDocumentFragment();
    for (let r = first; r < last; r++) {
      const row = h("div", { class: "dv-vt-row" + (r % 2 ? " dv-odd" : ""), style: { height: `${this.rowHeight}px` } });
      row.appendChild(h("div", { class: "dv-vt-cell dv-vt-idx" }, String(r)));
      if (skip > 0) row.appendChild(h("div", { class: "dv-vt-skip", style: { width: `${skip}px`, flex: "none" } }));
      for (let ci = firstCol; ci < lastCol; ci++) {
        const c = this.columns[ci]!;
        const cellEl = h("div", { class: "dv-vt-cell" + (c.align === "right" ? " dv-right" : ""), style: { width: `${c.width}px` } });
        append(cellEl, [this.cell(r, ci)]);
        row.appendChild(cellEl);
      }
      frag.appendChild(row);
    }
    this.rowsEl.appendChild(frag);
  }

  private renderHeader(): void {
    clear(this.header);
    const skip = this.edges[this.firstCol]! - IDX_WIDTH;
    this.header.append(
      h("div", { class: "dv-vt-cell dv-vt-idx" }, "#"),
      skip > 0 ? h("div", { class: "dv-vt-skip", style: { width: `${skip}px`, flex: "none" } }) : "",
    );
    for (let ci = this.firstCol; ci < this.lastCol; ci++) {
      const c = this.columns[ci]!;
      this.header.appendChild(
        h(
          "div",
          { class: "dv-vt-cell" + (c.align === "right" ? " dv-right" : ""), style: { width: `${c.width}px` } },
          h("span", { class: "dv-vt-name" }, fileText(c.name, { max: 40, more: false })),
          c.sub ? h("span", { class: "dv-vt-sub" }, c.sub) : null,
        ),
      );
    }
  }
}

/** Width of the row-number column (.dv-vt-idx in viewer.css). */
const IDX_WIDTH = 64;
/** Columns built beyond each side of the view. */
const COL_OVERSCAN = 2;

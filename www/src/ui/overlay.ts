// A hover tooltip and a modal dialog, both built from DOM nodes (never HTML
// strings), living inside the viewer's own root so they work in a shadow root.

import { type Child, append, clear, copyButton, h } from "./dom";

export class Tooltip {
  readonly el: HTMLElement;

  constructor(parent: Node) {
    this.el = h("div", { class: "dv-tip", role: "tooltip", hidden: true });
    parent.appendChild(this.el);
  }

  show(x: number, y: number, content: Child): void {
    clear(this.el);
    append(this.el, [content]);
    this.el.hidden = false;
    this.move(x, y);
  }

  move(x: number, y: number): void {
    const pad = 14;
    const w = this.el.offsetWidth;
    const hgt = this.el.offsetHeight;
    const left = x + pad + w > window.innerWidth ? Math.max(4, x - pad - w) : x + pad;
    const top = y + pad + hgt > window.innerHeight ? Math.max(4, y - pad - hgt) : y + pad;
    this.el.style.left = `${left}px`;
    this.el.style.top = `${top}px`;
  }

  hide(): void {
    this.el.hidden = true;
  }

  /** Show `content()` while the pointer is over `target`. */
  attach(target: HTMLElement, content: () => Child): void {
    target.addEventListener("pointerenter", (ev) => this.show(ev.clientX, ev.clientY, content()));
    target.addEventListener("pointermove", (ev) => this.move(ev.clientX, ev.clientY));
    target.addEventListener("pointerleave", () => this.hide());
  }
}

export class Dialog {
  readonly el: HTMLDialogElement;
  private readonly titleEl: HTMLElement;
  private readonly body: HTMLElement;

  constructor(parent: Node) {
    this.titleEl = h("h3", { class: "dv-dialog-title" });
    this.body = h("div", { class: "dv-dialog-body" });
    this.el = h(
      "dialog",
      { class: "dv-dialog" },
      h(
        "div",
        { class: "dv-dialog-head" },
        this.titleEl,
        h("button", { type: "button", class: "dv-btn dv-btn-quiet", on: { click: () => this.close() } }, "Close"),
      ),
      this.body,
    );
    this.el.addEventListener("click", (ev) => {
      if (ev.target === this.el) this.close();
    });
    parent.appendChild(this.el);
  }

  open(title: string, ...content: Child[]): void {
    this.titleEl.textContent = title;
    clear(this.body);
    append(this.body, content);
    if (!this.el.open) {
      if (typeof this.el.showModal === "function") this.el.showModal();
      else this.el.setAttribute("open", "");
    }
  }

  close(): void {
    if (this.el.open) this.el.close();
    clear(this.body);
  }

  /** The whole of a long string from a file: a read-only text box and a copy button. */
  fullValue(title: string, value: string): void {
    const area = h("textarea", { class: "dv-fullvalue", readonly: true, spellcheck: "false", dir: "auto" });
    area.value = value;
    this.open(
      title,
      h(
        "p",
        { class: "dv-muted" },
        `${value.length.toLocaleString("en-US")} characters. Shown as plain text; control and direction characters are not interpreted here.`,
        " ",
        copyButton(() => value, "Copy all"),
      ),
      area,
    );
  }
}

// DOM construction without HTML parsing.
//
// Every string that came out of an archive (labels, metadata, column names,
// blobs, the file's own name) reaches the page through text nodes made here.
// Nothing in the viewer assigns innerHTML, so markup in a file stays text.

export type Child = Node | string | number | bigint | null | undefined | false | Child[];

export interface Attrs {
  class?: string;
  /** data-* attributes (keys without the prefix). */
  data?: Record<string, string | number | bigint>;
  /** Listeners. */
  on?: { [K in keyof HTMLElementEventMap]?: (ev: HTMLElementEventMap[K]) => void };
  /** Inline style properties, set through CSSOM (allowed under a strict CSP). */
  style?: Partial<Record<string, string>>;
  [attr: string]: unknown;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) applyAttrs(el, attrs);
  append(el, children);
  return el;
}

function applyAttrs(el: HTMLElement, attrs: Attrs): void {
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = String(value);
    else if (key === "data") {
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) el.dataset[k] = String(v);
    } else if (key === "on") {
      for (const [ev, fn] of Object.entries(value as Record<string, EventListener>)) el.addEventListener(ev, fn);
    } else if (key === "style") {
      for (const [prop, v] of Object.entries(value as Record<string, string>)) el.style.setProperty(prop, v);
    } else if (key === "innerHTML" || key === "outerHTML" || key.startsWith("on")) {
      throw new Error(`refusing to set ${key} through h()`);
    } else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
}

export function append(parent: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(parent, c);
    else if (c instanceof Node) parent.appendChild(c);
    else parent.appendChild(document.createTextNode(String(c)));
  }
}

export function clear(el: Node): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export function replace(el: Node, ...children: Child[]): void {
  clear(el);
  append(el, children);
}

// ---------------------------------------------------------------------------
// Strings from a file

/**
 * Characters that are shown as visible escapes rather than passed to the
 * text renderer: C0/C1 controls, bidi embeddings/overrides/isolates and
 * marks, zero-width characters, line/paragraph separators, BOM.
 */
const INVISIBLE =
  /[\u0000-\u001f\u007f-\u009f\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\ufff9-\ufffb]/;
const INVISIBLE_SPLIT = new RegExp(`(${INVISIBLE.source})`, "u");

export function escapeFor(ch: string): string {
  switch (ch) {
    case "\n":
      return "\\n";
    case "\r":
      return "\\r";
    case "\t":
      return "\\t";
    default:
      return "\\u{" + (ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0") + "}";
  }
}

/** Plain-text rendering with the invisible characters escaped (for tooltips, copies into text, tests). */
export function visible(s: string): string {
  return s.split(INVISIBLE_SPLIT).map((part, i) => (i % 2 === 1 ? escapeFor(part) : part)).join("");
}

/** Cut at most `max` UTF-16 units without splitting a surrogate pair. */
export function cut(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = max;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return s.slice(0, end);
}

export interface FileTextOptions {
  /** Display at most this many UTF-16 units (default 200). */
  max?: number;
  class?: string;
  /** What the full-value dialog calls the value, e.g. "label host". */
  what?: string;
  /** false: mark a cut with "…" only, no button (for labels inside other controls). */
  more?: boolean;
  /**
   * Break a long value only after separators (`_ . - / :`), never inside
   * a word: for names like `core0_user_ns`. Use with `.dv-ft-words`, which
   * turns off breaking anywhere.
   */
  words?: boolean;
}

/** Where a name may break with `words`: after each separator. */
const WORD_BREAK = /(?<=[_.\-\/:])/;

/** Event a truncated string fires to ask its viewer to show the whole value. */
export const FULL_VALUE_EVENT = "dv-fullvalue";

export interface FullValueDetail {
  title: string;
  value: string;
}

/**
 * A string from an archive, rendered inertly: as text, isolated for bidi,
 * with control and bidi characters made visible, and truncated with a way to
 * see and copy the whole value.
 */
export function fileText(s: string, opts: FileTextOptions = {}): HTMLElement {
  const max = opts.max ?? 200;
  const shown = cut(s, max);
  const el = h("span", { class: "dv-ft" + (opts.words ? " dv-ft-words" : "") + (opts.class ? " " + opts.class : ""), dir: "auto" });
  const parts = shown.split(INVISIBLE_SPLIT);
  parts.forEach((part, i) => {
    if (part === "") return;
    if (i % 2 === 1) el.appendChild(h("span", { class: "dv-esc" }, escapeFor(part)));
    else if (opts.words)
      part.split(WORD_BREAK).forEach((w, j) => {
        if (j > 0) el.appendChild(document.createElement("wbr"));
        el.appendChild(document.createTextNode(w));
      });
    else el.appendChild(document.createTextNode(part));
  });
  if (s === "") el.appendChild(h("span", { class: "dv-empty" }, "(empty)"));
  if (shown.length < s.length && opts.more === false) {
    el.appendChild(h("span", { class: "dv-cut" }, "…"));
  } else if (shown.length < s.length) {
    const more = h(
      "button",
      {
        type: "button",
        class: "dv-more",
        on: {
          click: (ev) => {
            ev.stopPropagation();
            const detail: FullValueDetail = { title: opts.what ?? "Full value", value: s };
            (ev.currentTarget as HTMLElement).dispatchEvent(new CustomEvent(FULL_VALUE_EVENT, { bubbles: true, detail }));
          },
        },
      },
      `… +${(s.length - shown.length).toLocaleString("en-US")} chars`,
    );
    el.appendChild(more);
  }
  return el;
}

/** A copy-to-clipboard button for a full value. */
export function copyButton(value: () => string, label = "copy"): HTMLButtonElement {
  const b = h("button", { type: "button", class: "dv-copy", title: "Copy the full value" }, label);
  b.addEventListener("click", (ev) => {
    ev.stopPropagation();
    const done = (ok: boolean) => {
      b.textContent = ok ? "copied" : "copy failed";
      setTimeout(() => (b.textContent = label), 1200);
    };
    if (navigator.clipboard) navigator.clipboard.writeText(value()).then(() => done(true), () => done(false));
    else done(false);
  });
  return b;
}

/**
 * A line under a capped list saying what it left out ("Showing the first
 * 24 of 1,000 sources"), with a button that builds the next part of it.
 */
export function moreBar(text: string, more: { label: string; onClick: () => void } | null, testid: string): HTMLElement {
  return h(
    "div",
    { class: "dv-more-bar", role: "status", data: { testid } },
    h("span", { class: "dv-more-text", data: { testid: `${testid}-text` } }, text),
    more ? h("button", { type: "button", class: "dv-btn dv-btn-quiet dv-more-btn", data: { testid: `${testid}-button` }, on: { click: more.onClick } }, more.label) : null,
  );
}

export function debounce<A extends unknown[]>(fn: (...a: A) => void, ms: number): (...a: A) => void {
  let t: ReturnType<typeof setTimeout> | undefined;
  return (...a: A) => {
    if (t !== undefined) clearTimeout(t);
    t = setTimeout(() => {
      t = undefined;
      fn(...a);
    }, ms);
  };
}

/** Sets a node's text only when it differs: an unchanged count costs no style or layout work. */
export function setText(el: Node, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

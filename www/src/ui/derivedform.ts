// The stream view's box for a derived series: type an expression over
// the stream's columns, press Enter (or "Plot"), and it is plotted after
// the columns; a mistake is explained beside the box, in words, with the
// place in the text marked. Everything typed reaches the page as text.

import type { DerivedSpec } from "./derived";
import { h, replace } from "./dom";
import { ExprError, MAX_DERIVED, MAX_EXPR_CHARS, parseExpr } from "./expression";

/** The specs among `texts` that parse against `columns`; the others are left out (the form explains the first). */
export function parseDerived(texts: readonly string[], columns: readonly string[]): DerivedSpec[] {
  const out: DerivedSpec[] = [];
  for (const text of texts) {
    try {
      if (!out.some((d) => d.text === text)) out.push({ text, expr: parseExpr(text, columns) });
    } catch {
      // Explained by the form.
    }
  }
  return out.slice(-MAX_DERIVED);
}

export function derivedForm(columns: readonly string[], initial: readonly string[], add: (spec: DerivedSpec) => void): HTMLElement {
  const input = h("input", {
    type: "text",
    class: "dv-derived-input",
    maxlength: String(MAX_EXPR_CHARS),
    spellcheck: "false",
    autocomplete: "off",
    placeholder: columns.length >= 2 ? `e.g. 100 * ${nameOf(columns[0]!)} / ${nameOf(columns[1]!)}  or  rate(a) / rate(b)` : "e.g. 100 * a / b  or  rate(a) / rate(b)",
    "aria-label": "derived series expression",
    data: { testid: "derived-input" },
  });
  const error = h("div", { class: "dv-derived-error", role: "status", "aria-live": "polite", data: { testid: "derived-error" } });
  const explainAt = (text: string, e: ExprError) => {
    // The text with the place marked: before, the character (or the end), after.
    const at = Math.min(e.at, text.length);
    replace(
      error,
      h("span", null, "Cannot plot this: ", e.message, ". "),
      h("code", { class: "dv-derived-where" }, text.slice(0, at), h("mark", null, text.slice(at, at + 1) || " "), text.slice(at + 1)),
    );
    error.dataset["at"] = String(e.at);
  };
  const submit = () => {
    const text = input.value.trim();
    try {
      const expr = parseExpr(text, columns);
      replace(error);
      delete error.dataset["at"];
      input.value = "";
      add({ text, expr });
    } catch (e) {
      if (!(e instanceof ExprError)) throw e;
      explainAt(text, e);
    }
  };
  // An expression from the address that no longer parses (a column renamed) says why.
  for (const text of initial) {
    try {
      parseExpr(text, columns);
    } catch (e) {
      if (!(e instanceof ExprError)) throw e;
      input.value = text;
      explainAt(text, e);
      break;
    }
  }
  return h(
    "form",
    {
      class: "dv-derived",
      data: { testid: "derived-form" },
      on: {
        submit: (ev) => {
          ev.preventDefault();
          submit();
        },
      },
    },
    h(
      "label",
      { class: "dv-derived-label", title: "An expression over this stream's columns: + - * /, parentheses, numbers, rate(column). Quote other names: \"my column\". Evaluated on every row; a division by zero or a missing value is a gap." },
      "Derived series ",
      input,
    ),
    h("button", { type: "submit", class: "dv-btn", data: { action: "plot-derived" } }, "Plot"),
    error,
  );
}

/** A column as it is written in an expression: bare when it can be, else quoted. */
function nameOf(column: string): string {
  return /^[A-Za-z_][A-Za-z0-9_.]*$/.test(column) ? column : `"${column.replace(/["\\]/g, "\\$&")}"`;
}

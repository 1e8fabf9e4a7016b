// The "Share link" box: the view's link (link.ts) in a field to select,
// a button that copies it, and its length, so a person sees what they
// send. Built under the viewer's bar, replacing the one shown before.

import { h } from "./dom";
import { bytes } from "./format";
import type { ArchiveIdentity } from "./identity";
import { encodeView, linkAddress } from "./link";
import type { Note } from "./notes";
import type { ViewState } from "./state";

/** Builds the link of `state` with `notes` (the archive in front's) into `into`'s share box. */
export async function showShareBox(into: HTMLElement, state: ViewState, notes: readonly Note[], made: ArchiveIdentity | null): Promise<string> {
  const address = linkAddress(await encodeView(state, notes, made));
  const field = h("input", { type: "text", class: "dv-share-input", readonly: true, "aria-label": "Link to this view", data: { testid: "share-link" } });
  field.value = address;
  const status = h("span", { class: "dv-muted dv-small" }, `${bytes(address.length)}, ${notes.length} note${notes.length === 1 ? "" : "s"}`);
  const copy = h("button", { type: "button", class: "dv-btn dv-btn-xs" }, "Copy");
  copy.addEventListener("click", () => {
    field.select();
    void navigator.clipboard?.writeText(address).then(
      () => (status.textContent = "copied"),
      () => (status.textContent = "select the link and copy it"),
    );
  });
  const close = h("button", { type: "button", class: "dv-tab-close", "aria-label": "Close" }, "×");
  const box = h("div", { class: "dv-many-report dv-share", role: "status", data: { testid: "share" } }, h("b", null, "Link to this view "), field, copy, status, close);
  close.addEventListener("click", () => box.remove());
  into.querySelector(':scope > [data-testid="share"]')?.remove();
  into.appendChild(box);
  field.select();
  return address;
}

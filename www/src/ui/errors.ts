// Turning refusals and failures into sentences a person understands.

import { ERROR_KINDS } from "../engine/contract";
import type { EngineError, EngineErrorKind } from "../engine/types.ts";
import { type Child, fileText, h } from "./dom";

export type ProblemKind = EngineErrorKind | "LoadFailed";

export interface Explained {
  kind: ProblemKind;
  /** One line, in plain words. */
  title: string;
  /** What it means and what to do; may be empty. */
  hint: string;
  /** The engine's (or the browser's) own message, shown verbatim. */
  message: string;
}

export function isEngineError(e: unknown): e is EngineError {
  return (
    typeof e === "object" &&
    e !== null &&
    typeof (e as { kind?: unknown }).kind === "string" &&
    (ERROR_KINDS as readonly string[]).includes((e as { kind: string }).kind) &&
    typeof (e as { message?: unknown }).message === "string"
  );
}

/** The archive read in place changed under the reader (a followed URL: its image went). */
export function isChanged(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { kind?: unknown }).kind === "Changed";
}

/** A load that never reached the engine (network, HTTP status, reading the file). */
export class LoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LoadError";
  }
}

function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === "object" && e !== null && typeof (e as { message?: unknown }).message === "string")
    return (e as { message: string }).message;
  return String(e);
}

/** An application id as SQLite's header holds it, in the form people search for: 0x12345678. */
export function hexId(id: number): string {
  return "0x" + (id >>> 0).toString(16).padStart(8, "0");
}

/**
 * What a refused file is instead, in words, from the engine's structured
 * `detail` (never from the wording of its message). Empty when the engine
 * said nothing more.
 */
export function looksLike(e: EngineError, fileBytes?: number): string {
  switch (e.detail) {
    case "empty":
      return "The file is empty.";
    case "too_short":
      return "It is too short to be a SQLite database, let alone an archive.";
    case "not_sqlite":
      return "It is not a SQLite file at all.";
    case "unstamped":
      return "It is a SQLite database, but not one written by dendro (its application id is 0). A .rez recording from before dendro is upgraded by rezolus.";
    case "foreign_app":
      return `It is a SQLite database of another application${e.application_id === undefined ? "" : ` (id ${hexId(e.application_id)})`}.`;
    case "no_catalog":
      return "It is stamped as a dendro archive but holds none of its tables: a copy of the main file taken before the archive's creation was checkpointed looks like this.";
    case "incomplete_catalog":
      return "It is stamped as a dendro archive, but its catalog lacks a column, key or index that reading it relies on (the message says which). It was not written by a dendro writer, or was edited since.";
    case "schema_mismatch":
      return "It is stamped as a dendro archive, but its tables are those of another schema version than its header states (the message says which): edited since it was written, perhaps by hand. Reading it by either version's rules would misread it.";
    case undefined:
      return fileBytes === 0 ? "The file is empty." : "";
  }
}

export function explain(e: unknown, name: string, fileBytes?: number): Explained {
  if (e instanceof LoadError) {
    return { kind: "LoadFailed", title: `Could not load ${name}`, hint: "", message: e.message };
  }
  if (!isEngineError(e)) {
    return {
      kind: "Internal",
      title: `Something went wrong with ${name}`,
      hint: "This is a fault in the viewer, not in your file.",
      message: messageOf(e),
    };
  }
  const message = e.message;
  // A known kind keeps its name and the engine's message: only the words differ.
  const says = (title: string, hint: string): Explained => ({ kind: e.kind, title, hint, message });
  switch (e.kind) {
    case "NotAnArchive":
      return says(`${name} is not a dendro archive`, looksLike(e, fileBytes) || "dendro reads only archives it wrote.");
    case "UnsupportedSchema": {
      const v = e.version;
      const reads = e.supported_versions;
      const listed =
        reads === undefined || reads.length === 0
          ? ""
          : reads.length === 1
            ? `; this viewer reads version ${reads[0]}`
            : `; this viewer reads versions ${reads.slice(0, -1).join(", ")} and ${reads[reads.length - 1]}`;
      return says(
        v === undefined ? "Unsupported archive schema version" : `Unsupported archive schema version ${v}`,
        `It is a dendro archive of ${v === undefined ? "a schema version" : `an unsupported schema version ${v}`}${listed}. Open it with the release of dendro that wrote it.`,
      );
    }
    case "Corrupt":
      return says(
        `${name} is damaged`,
        "Some of its bytes do not read back as SQLite or Parquet. A file copied while its writer was running, or cut short in transfer, looks like this; copy it again after the writer has closed it.",
      );
    case "TooLarge":
      return says(
        `${name} is too large to open in this browser tab`,
        "Open a smaller archive, or export a time range of this one with the dendro command-line tool.",
      );
    case "NotFound":
      return says("Not found in this archive", "");
    case "Segment":
      return says("One segment could not be decoded", "The rest of the archive is still readable.");
    case "Cancelled":
      return says("Cancelled", "A newer request replaced this one.");
    case "Changed":
      return says(
        `${name} changed while it was being read`,
        "The viewer reads this archive in place, a part at a time, and the file (or the server's copy) was replaced or modified after it was opened. Nothing read after the change is shown. Open it again to see the new version.",
      );
    case "Unreadable":
      return says(
        `Part of ${name} could not be read`,
        "The viewer reads this archive in place, a part at a time: the file was moved or deleted, or the server stopped answering range requests. Open it again.",
      );
    case "Crashed":
      return says("The decoding worker stopped unexpectedly", "It has been restarted. Open the file again to continue.");
    default:
      return {
        kind: "Internal",
        title: `Something went wrong with ${name}`,
        hint: "This is a fault in the viewer or its engine, not necessarily in your file.",
        message,
      };
  }
}

/** The panel a tab shows when its archive could not be opened: the explanation, then the address it came from. */
export function errorPanel(x: Explained, url: string | null): HTMLElement {
  const parts: Child[] = [
    h("div", { class: "dv-error-icon", "aria-hidden": "true" }, "!"),
    h(
      "div",
      { class: "dv-error-text" },
      h("h2", { data: { testid: "error-title" } }, fileText(x.title, { max: 200 })),
      x.hint ? h("p", { data: { testid: "error-hint" } }, x.hint) : null,
      h("p", { class: "dv-error-message", data: { testid: "error-message" } }, fileText(x.message, { max: 2000 })),
      url ? h("p", { class: "dv-muted dv-small" }, "Address: ", fileText(url, { max: 300 })) : null,
    ),
  ];
  return h("div", { class: "dv-error", role: "alert", data: { testid: "error", kind: x.kind } }, parts);
}

// Turning refusals and failures into sentences a person understands.

import type { EngineError, EngineErrorKind } from "../engine/types.ts";

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

const KINDS: readonly string[] = [
  "NotAnArchive",
  "UnsupportedSchema",
  "Corrupt",
  "TooLarge",
  "NotFound",
  "Segment",
  "Crashed",
  "Internal",
];

export function isEngineError(e: unknown): e is EngineError {
  return (
    typeof e === "object" &&
    e !== null &&
    typeof (e as { kind?: unknown }).kind === "string" &&
    KINDS.includes((e as { kind: string }).kind) &&
    typeof (e as { message?: unknown }).message === "string"
  );
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

/** What a file that is not an archive looks like instead, read from the engine's message. */
export function looksLike(message: string, fileBytes?: number): string {
  const m = message.toLowerCase();
  if (fileBytes === 0 || m.includes("empty file") || m.includes("is empty")) return "The file is empty.";
  if (m.includes("another application")) {
    const id = /\((?:application[_ ])?id ([^)]+)\)/.exec(message);
    return `It is a SQLite database of another application${id ? ` (application id ${id[1]})` : ""}.`;
  }
  if (m.includes("not a sqlite")) return "It is not a SQLite file at all.";
  if (m.includes("header stamp") || m.includes("application id 0") || m.includes("application_id"))
    return "It is a SQLite database, but not one written by dendro.";
  if (m.includes("shorter than a sqlite header")) return "It is too short to be a SQLite database, let alone an archive.";
  if (m.includes("catalog")) return "It is a SQLite database without dendro's tables.";
  // Otherwise the engine's own words after "not a dendro archive:", as a sentence.
  const rest = /not a dendro archive:\s*(.+)$/is.exec(message)?.[1]?.trim();
  if (rest) return rest.charAt(0).toUpperCase() + rest.slice(1).replace(/\.?$/, ".");
  return "";
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
  switch (e.kind) {
    case "NotAnArchive":
      return {
        kind: e.kind,
        title: `${name} is not a dendro archive`,
        hint: looksLike(message, fileBytes) || "dendro reads only archives it wrote.",
        message,
      };
    case "UnsupportedSchema": {
      const v = /version\s+(-?\d+)/i.exec(message);
      const reads = /reads\s+(v?\d+(?:\s*(?:-|–|to|,)\s*v?\d+)*)/i.exec(message);
      return {
        kind: e.kind,
        title: v ? `Unsupported archive schema version ${v[1]}` : "Unsupported archive schema version",
        hint: `This archive was written by a ${v ? "different" : "newer or older"} release of dendro${
          reads ? `; this viewer reads ${reads[1]}` : ""
        }. Open it with a matching release.`,
        message,
      };
    }
    case "Corrupt":
      return {
        kind: e.kind,
        title: `${name} is damaged`,
        hint:
          "Some of its bytes do not read back as SQLite or Parquet. A file copied while its writer was running, or cut short in transfer, looks like this; copy it again after the writer has closed it.",
        message,
      };
    case "TooLarge":
      return {
        kind: e.kind,
        title: `${name} is too large to open in this browser tab`,
        hint: "Open a smaller archive, or export a time range of this one with the dendro command-line tool.",
        message,
      };
    case "NotFound":
      return { kind: e.kind, title: "Not found in this archive", hint: "", message };
    case "Segment":
      return {
        kind: e.kind,
        title: "One segment could not be decoded",
        hint: "The rest of the archive is still readable.",
        message,
      };
    case "Crashed":
      return {
        kind: e.kind,
        title: "The decoding worker stopped unexpectedly",
        hint: "It has been restarted. Open the file again to continue.",
        message,
      };
    default:
      return {
        kind: "Internal",
        title: `Something went wrong with ${name}`,
        hint: "This is a fault in the viewer or its engine, not necessarily in your file.",
        message,
      };
  }
}

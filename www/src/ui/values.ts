// Cell rendering for decoded columns and caller-row blobs.

import type { CallerRow, DecodedColumn } from "../engine/types";
import { type Child, fileText, h } from "./dom";
import { bytes, instant, type TimeZoneMode } from "./format";
import type { VColumn } from "./vtable";

export function isTimeType(type: string): boolean {
  return type.startsWith("Timestamp");
}

/** Nanoseconds per unit of an Arrow timestamp type, or null if not a timestamp. */
function timestampScale(type: string): bigint | null {
  if (!isTimeType(type)) return null;
  if (type.includes("Nanosecond")) return 1n;
  if (type.includes("Microsecond")) return 1_000n;
  if (type.includes("Millisecond")) return 1_000_000n;
  if (type.includes("Second")) return 1_000_000_000n;
  return 1n;
}

export function columnWidth(col: { name: string; type: string }, isTs: boolean): number {
  if (isTs || isTimeType(col.type)) return 230;
  if (/Utf8|String|Binary|List|Struct|Map/.test(col.type)) return 280;
  if (col.type === "Boolean") return 80;
  return 150;
}

export function vcolumn(col: { name: string; type: string }, isTs: boolean): VColumn {
  const numeric = /^(U?Int|Float|Decimal)/.test(col.type);
  return { name: col.name, sub: col.type, width: columnWidth(col, isTs), align: numeric && !isTs ? "right" : "left" };
}

/** A function giving the display of row `i` of `col`. */
export function cellRenderer(col: DecodedColumn, isTs: boolean, tz: () => TimeZoneMode): (i: number) => Child {
  const values = col.values;
  const nulls = col.nulls;
  const scale = isTs ? (timestampScale(col.type) ?? 1n) : timestampScale(col.type);
  const isNull = (i: number) => !!nulls && nulls[i] === 1;
  const nullCell = () => h("span", { class: "dv-null" }, "null");
  if (Array.isArray(values)) {
    return (i) => {
      const v = values[i];
      if (v === null || v === undefined || isNull(i)) return nullCell();
      return fileText(v, { max: 120, what: `${col.name}, row ${i}` });
    };
  }
  if (values instanceof BigInt64Array || values instanceof BigUint64Array) {
    return (i) => {
      if (isNull(i)) return nullCell();
      const v = values[i];
      if (v === undefined) return "";
      if (scale !== null) return h("span", { class: "dv-mono", title: `${v}` }, instant(BigInt(v) * scale, tz(), 9));
      return h("span", { class: "dv-mono" }, v.toString());
    };
  }
  if (col.type === "Boolean") {
    return (i) => (isNull(i) ? nullCell() : values[i] ? "true" : "false");
  }
  return (i) => {
    if (isNull(i)) return nullCell();
    const v = values[i];
    if (v === undefined) return "";
    if (scale !== null) return h("span", { class: "dv-mono" }, instant(BigInt(Math.trunc(v)) * scale, tz(), 9));
    return h("span", { class: "dv-mono" }, String(v));
  };
}

export interface BlobPreview {
  kind: "utf8" | "hex" | "empty";
  text: string;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Text when the blob is valid, mostly printable UTF-8; hex otherwise. */
export function previewBlob(blob: Uint8Array, max = 160): BlobPreview {
  if (blob.byteLength === 0) return { kind: "empty", text: "" };
  try {
    const text = decoder.decode(blob.subarray(0, Math.min(blob.byteLength, max * 4)));
    let controls = 0;
    for (const ch of text) {
      const c = ch.codePointAt(0) ?? 0;
      if ((c < 0x20 && c !== 0x0a && c !== 0x09 && c !== 0x0d) || c === 0x7f) controls++;
    }
    if (controls <= text.length / 20) return { kind: "utf8", text };
  } catch {
    // A multi-byte character cut by the preview length also lands here when
    // the blob is longer than the preview; try the whole blob once.
    if (blob.byteLength > max * 4) {
      try {
        decoder.decode(blob);
        return previewBlob(blob.subarray(0, max * 4 - 3), max);
      } catch {
        /* fall through to hex */
      }
    }
  }
  const shown = blob.subarray(0, Math.min(blob.byteLength, 48));
  let hex = Array.from(shown, (b) => b.toString(16).padStart(2, "0")).join(" ");
  if (blob.byteLength > shown.byteLength) hex += " …";
  return { kind: "hex", text: hex };
}

export function blobCell(blob: Uint8Array, what: string): Child {
  const p = previewBlob(blob);
  if (p.kind === "empty") return h("span", { class: "dv-null" }, "(empty)");
  if (p.kind === "hex") return h("span", { class: "dv-mono dv-hex" }, h("span", { class: "dv-tag" }, "hex"), " ", p.text);
  return h("span", null, h("span", { class: "dv-tag" }, "utf-8"), " ", fileText(p.text, { max: 120, what }));
}

export function callerRowColumns(): VColumn[] {
  return [
    { name: "timestamp", width: 230 },
    { name: "size", width: 90, align: "right" },
    { name: "preview", width: 520 },
  ];
}

export function callerRowCell(rows: CallerRow[], tz: () => TimeZoneMode, name: string): (r: number, c: number) => Child {
  return (r, c) => {
    const row = rows[r];
    if (!row) return "";
    if (c === 0) return h("span", { class: "dv-mono" }, instant(row.ts, tz(), 9));
    if (c === 1) return h("span", { class: "dv-mono", title: `${row.blob.byteLength} bytes` }, bytes(row.blob.byteLength));
    return blobCell(row.blob, `${name}, caller row ${r}`);
  };
}

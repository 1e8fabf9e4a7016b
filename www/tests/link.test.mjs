// Shared links, notes files and archive identity (www/src/ui/{link,notes,
// identity}.ts), bundled with esbuild and run under Node: a view and its
// notes survive the trip; a link is hostile input (a deflate bomb, a cut
// or changed link, an unknown version, fields of the wrong kind are
// refused in words, before anything else reads them); the words for a
// link opened on another archive.

import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { deflateRawSync } from "node:zlib";
import { describe, it } from "node:test";
import * as esbuild from "esbuild";
import { WWW } from "./helpers.mjs";

const dir = mkdtempSync(join(tmpdir(), "dendro-link-"));
const entry = join(dir, "entry.ts");
writeFileSync(
  entry,
  ["link", "notes", "identity"].map((m) => `export * from ${JSON.stringify(join(WWW, `src/ui/${m}.ts`))};`).join("\n"),
);
await esbuild.build({ entryPoints: [entry], bundle: true, format: "esm", platform: "neutral", outfile: join(dir, "out.mjs"), logLevel: "error" });
const L = await import(pathToFileURL(join(dir, "out.mjs")).href);

const b64url = (buf) => Buffer.from(buf).toString("base64url");
/** A `v` made by hand: any JSON, packed as a link is. */
const pack = (value) => b64url(deflateRawSync(Buffer.from(typeof value === "string" ? value : JSON.stringify(value))));

async function refused(v, pattern) {
  await assert.rejects(L.decodeView(v), (e) => {
    assert.ok(e instanceof L.LinkError, String(e));
    assert.match(e.message, pattern);
    return true;
  });
}

const T0 = 1_700_000_000_000_000_000n;

function twentyNotes() {
  return Array.from({ length: 20 }, (_, i) => ({
    id: `n${i}`,
    source: 1 + (i % 2),
    from: T0 + BigInt(i) * 3_000_000_000n + 7n,
    to: i % 3 === 0 ? T0 + BigInt(i) * 3_000_000_000n + 1_500_000_000n : null,
    text: `note ${i}: load rose after deploy #${100 + i}`,
  }));
}

describe("shared links", () => {
  it("carry the whole view and 20 notes in under 2 KB, and read back the same", async () => {
    const state = {
      urls: ["/fixtures/b_multi_source.dendro", "https://example.org/runs/second.dendro"],
      active: 1,
      source: 2,
      stream: "cpu",
      columns: ["value", "other col"],
      exprs: ["100 * value / 8"],
      from: T0 + 5n,
      to: T0 + 60_000_000_000n,
      tz: "local",
      compare: "cpu",
      shift: -3_600_000_000_000n,
    };
    const made = { uuids: ["370f3fe8-dc36-4d4d-8c58-3157f79cb7a3", "4d8dd7da-ed6f-4b1c-9040-fcebac272209"], count: 2, digest: "0123456789abcdef" };
    const v = await L.encodeView(state, twentyNotes(), made);
    const address = L.linkAddress(v, { origin: "https://viewer.example.org", pathname: "/dendro/" });
    assert.ok(address.length < 2048, `a link with 20 notes is ${address.length} bytes`);
    const back = await L.decodeView(v);
    assert.deepEqual(back.made, made);
    const { notes, ...rest } = back.state;
    assert.deepEqual(rest, { ...state, url: state.urls[1] });
    assert.equal(notes.length, 20);
    for (const [i, n] of twentyNotes().entries()) {
      assert.equal(notes[i].source, n.source);
      assert.equal(notes[i].from, n.from);
      assert.equal(notes[i].to, n.to);
      assert.equal(notes[i].text, n.text);
    }
  });

  it("grow with the notes they carry, a few dozen bytes a note (the figures in docs/measurements/2026-12-07-sharing.md)", async () => {
    const state = { urls: ["https://runs.example.org/2026/12/07/host-17.dendro"], source: 1, stream: "cpu", columns: ["value"], from: T0, to: T0 + 3_600_000_000_000n };
    const made = { uuids: Array.from({ length: 8 }, (_, i) => `4d8dd7da-ed6f-4b1c-9040-fcebac27220${i}`), count: 8, digest: "0123456789abcdef" };
    const notes = (n) =>
      Array.from({ length: n }, (_, i) => ({ id: `n${i}`, source: 1 + (i % 8), from: T0 + BigInt(i) * 17_000_000_123n, to: i % 3 === 0 ? T0 + BigInt(i) * 17_000_000_123n + 900_000_000_000n : null, text: `#${i} load rose after deploy ${1000 + i}, see ticket OPS-${4000 + i}` }));
    const sizes = [];
    for (const n of [0, 1, 20, 200]) {
      const v = await L.encodeView(state, notes(n), made);
      const json = JSON.stringify({ state: { ...state, from: String(state.from), to: String(state.to) }, notes: L.notesJson(notes(n)) }).length;
      sizes.push({ notes: n, link: L.linkAddress(v, { origin: "https://viewer.example.org", pathname: "/" }).length, json });
      assert.equal((await L.decodeView(v)).state.notes?.length ?? 0, n);
    }
    console.log(`# link sizes (address bytes / plain JSON of the same view): ${sizes.map((x) => `${x.notes} notes ${x.link} / ${x.json}`).join("; ")}`);
    assert.ok(sizes[2].link < 2048, "twenty notes under 2 KB");
    assert.ok(sizes.every((x, i) => i === 0 || x.link > sizes[i - 1].link));
  });

  it("refuse a deflate bomb without inflating it all", async () => {
    const v = b64url(deflateRawSync(Buffer.alloc(16 << 20, 0x20)));
    assert.ok(v.length < L.MAX_LINK_CHARS, "the bomb fits in a link");
    await refused(v, /unpacks to more than 256 KiB/);
  });

  it("refuse what is too long, cut, changed, or not JSON", async () => {
    await refused("A".repeat(L.MAX_LINK_CHARS + 1), /characters long, more than/);
    await refused("abc$def", /characters base64url does not use/);
    const good = await L.encodeView({ stream: "cpu" }, [], null);
    await refused(good.slice(0, 8), /damaged/);
    await refused(pack("{not json"), /not JSON/);
    await refused(pack("[1,2]"), /not a view/);
    await refused(b64url(Buffer.from([0xff, 0xfe, 0x00])), /damaged/);
  });

  it("refuse another version in words", async () => {
    await refused(pack({ v: 2, t: "cpu" }), /link version 2\); this viewer reads link version 1/);
    await refused(pack({ t: "cpu" }), /link no version/);
  });

  it("check every field", async () => {
    await refused(pack({ v: 1, s: -1 }), /its source is not right/);
    await refused(pack({ v: 1, t: 7 }), /its stream is not right/);
    await refused(pack({ v: 1, u: ["a", 3] }), /list of archives/);
    await refused(pack({ v: 1, u: Array(65).fill("a") }), /list of archives/);
    await refused(pack({ v: 1, c: ["x".repeat(2000)] }), /columns/);
    await refused(pack({ v: 1, e: ["a", "b", "c", "d", "e"] }), /derived series/);
    await refused(pack({ v: 1, f: "1e9", o: "5" }), /window/);
    await refused(pack({ v: 1, h: "1h" }), /time shift/);
    await refused(pack({ v: 1, i: [["u"], 1, "not hex"] }), /archive identity/);
    await refused(pack({ v: 1, n: [[1, "0", 0]] }), /notes/);
    await refused(pack({ v: 1, n: [[1, "x", 0, "t"]] }), /note 1 is not one/);
    await refused(pack({ v: 1, n: [["1", "0", 0, "t"]] }), /"source" must be a source id/);
    await refused(pack({ v: 1, n: [[1, "0", 0, "   "]] }), /"text" must be a string that is not empty/);
    await refused(pack({ v: 1, n: Array(201).fill([1, "0", 0, "t"]) }), /notes/);
    // Unknown keys are ignored; a window of no width is no window.
    const ok = await L.decodeView(pack({ v: 1, t: "cpu", extra: { deep: [1] }, f: "5", o: "0" }));
    assert.deepEqual(ok.state, { stream: "cpu" });
  });

  it("keep hostile note text as it is, cut to the longest note", async () => {
    const text = `<img src=x onerror=alert(1)>\u202e${"x".repeat(400)}`;
    const v = pack({ v: 1, n: [[1, "5", "10", text]] });
    const { state } = await L.decodeView(v);
    assert.equal(state.notes[0].text, text.slice(0, L.MAX_NOTE_CHARS));
    assert.equal(state.notes[0].from, 5n);
    assert.equal(state.notes[0].to, 15n);
  });
});

describe("notes files", () => {
  it("round-trip and refuse what is not one, in words", () => {
    const notes = twentyNotes();
    const back = L.parseNotesFile(L.exportFile(notes, "run.dendro"), "run.notes.json");
    assert.deepEqual(back, notes);
    assert.throws(() => L.parseNotesFile("{", "x.json"), /x\.json is not a notes file: it is not JSON/);
    assert.throws(() => L.parseNotesFile('{"kind":"other"}', "x.json"), /has no "kind": "dendro-notes"/);
    assert.throws(() => L.parseNotesFile('{"kind":"dendro-notes","version":9,"notes":[]}', "x.json"), /version 9; this viewer reads version 1/);
    assert.throws(() => L.parseNotesFile('{"kind":"dendro-notes","version":1,"notes":[{"source":1,"from":5,"text":"t"}]}', "x.json"), /x\.json, note 1: "from" must be a timestamp/);
    assert.throws(() => L.parseNotesFile('{"kind":"dendro-notes","version":1,"notes":[{"source":1,"from":"9","to":"3","text":"t"}]}', "x.json"), /"to" must be a timestamp after "from"/);
    assert.throws(() => L.parseNotesFile(" ".repeat(L.MAX_NOTES_FILE + 1), "big.json"), /larger than a notes file can be/);
  });

  it("one note twice is kept once", () => {
    const book = new L.NoteBook(null);
    const [a] = twentyNotes();
    assert.equal(book.add([a]), 1);
    assert.equal(book.add([{ ...a, id: "other" }]), 0);
    book.edit(a.id, "changed");
    assert.equal(book.all()[0].text, "changed");
    book.remove(a.id);
    assert.equal(book.all().length, 0);
  });
});

describe("archive identity", () => {
  const desc = (uuids, segs = 3) => ({
    schema_version: 4,
    sources: uuids.map((uuid, i) => ({ id: i + 1, uuid, streams: [{ name: "cpu", segments: Array.from({ length: segs }, (_, k) => ({ seq: k, rows: 10, first_ts: BigInt(k), last_ts: BigInt(k + 1), bytes: 100 })) }] })),
  });

  it("tells the same archive, a later state of it, and another apart in words", () => {
    const a = L.identityOf(desc(["u1", "u2"]));
    assert.equal(L.mismatchText(a, L.identityOf(desc(["u1", "u2"])), "a.dendro"), null);
    assert.match(L.mismatchText(a, L.identityOf(desc(["u1", "u2"], 4)), "a.dendro"), /a\.dendro has changed since this link was made/);
    assert.match(L.mismatchText(a, L.identityOf(desc(["u9"])), "b.dendro"), /made on a different archive: none of its 2 sources is in b\.dendro/);
    assert.match(L.mismatchText(a, L.identityOf(desc(["u1", "u3"])), "c.dendro"), /some of them in c\.dendro .*a different archive/);
    assert.equal(L.notesKey(L.identityOf(desc([null]))), null, "no uuid: no key to keep notes under");
  });
});

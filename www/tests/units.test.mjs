// Pure UI helpers (formatting, axis ticks, URL state,
// gap detection, escaping), bundled with esbuild and run under Node.

import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, it } from "node:test";
import * as esbuild from "esbuild";
import { WWW } from "./helpers.mjs";

const dir = mkdtempSync(join(tmpdir(), "dendro-units-"));
const entry = join(dir, "entry.ts");
writeFileSync(
  entry,
  ["format", "axis", "state", "model", "dom", "errors", "catalog", "laneindex", "archives", "sync"]
    .map((m) => `export * as ${m} from ${JSON.stringify(join(WWW, "src/ui", m + ".ts"))};`)
    .join("\n"),
);
await esbuild.build({ entryPoints: [entry], bundle: true, format: "esm", platform: "neutral", outfile: join(dir, "out.mjs"), logLevel: "error" });
const { format, axis, state, model, dom, errors, catalog, laneindex, archives, sync } = await import(pathToFileURL(join(dir, "out.mjs")).href);

const T0 = 1_700_000_000_000_000_000n;

describe("format", () => {
  it("prints instants exactly, before and after 1970", () => {
    assert.equal(format.instant(T0, "utc"), "2023-11-14 22:13:20.000");
    assert.equal(format.instant(T0 + 7n, "utc"), "2023-11-14 22:13:20.000000007");
    assert.equal(format.instant(-1n, "utc"), "1969-12-31 23:59:59.999999999");
    assert.equal(format.instant(-86_400_000_000_000n, "utc"), "1969-12-31 00:00:00.000");
    assert.equal(format.instant(0n, "utc", 0), "1970-01-01 00:00:00");
  });
  it("prints the int64 extremes without throwing", () => {
    assert.match(format.instant(format.I64_MAX, "utc"), /^2262-04-11 23:47:16\.854775807$/);
    assert.match(format.instant(format.I64_MIN, "utc"), /^1677-09-21 00:12:43\.145224192$/);
  });
  it("prints spans with a shared date once", () => {
    assert.equal(format.span(T0, T0 + 199_000_000_000n, "utc"), "2023-11-14 22:13:20 → 22:16:39");
  });
  it("prints durations and sizes for people", () => {
    assert.equal(format.duration(117_000_000_000n), "1 m 57 s");
    assert.equal(format.duration(10n), "10 ns");
    assert.equal(format.duration(86_410_000_000_000n), "1 d");
    assert.equal(format.duration(3_200_000n), "3.2 ms");
    assert.equal(format.bytes(65536), "64.0 KiB");
    assert.equal(format.bytes(512), "512 B");
    assert.equal(format.count(1234567), "1,234,567");
  });
  it("labels axis ticks with enough digits to tell them apart", () => {
    assert.equal(format.axisNumber(1_000_864_000, 2000), "1.000864G");
    assert.equal(format.axisNumber(1_000_866_000, 2000), "1.000866G");
    assert.equal(format.axisNumber(20, 5), "20");
    assert.equal(format.axisNumber(2.5e9, 5e8), "2.5G");
    assert.equal(format.axisNumber(-500, 500), "-500");
    assert.equal(format.axisNumber(0.25, 0.05), "0.25");
  });
  it("floor division rounds toward negative infinity", () => {
    assert.equal(format.floorDiv(-1n, 1000n), -1n);
    assert.equal(format.floorMod(-1n, 1000n), 999n);
  });
});

describe("axis ticks", () => {
  it("falls on round wall-clock times and stays inside the window", () => {
    const from = T0 + 1_234_567_890n;
    const to = from + 600_000_000_000n;
    const list = axis.ticks(from, to, 8, "utc");
    assert.ok(list.length >= 4 && list.length <= 9, `${list.length} ticks`);
    for (const t of list) {
      assert.ok(t.ns >= from && t.ns <= to);
      assert.equal(t.ns % 60_000_000_000n, 0n);
    }
    assert.ok(list[0].context, "the first tick carries the date");
  });
  it("goes down to nanoseconds", () => {
    const list = axis.ticks(-5n, 5n, 5, "utc");
    assert.ok(list.length >= 3);
    assert.match(list[0].label, /^59\.99999999\d$|^00\.000000000$/);
  });
});

describe("URL state", () => {
  it("round-trips and keeps foreign parameters", () => {
    const s = { url: "/a b.dendro", source: 2, stream: "disk/io", columns: ["value", "a,b"], from: -5n, to: T0, tz: "local" };
    const search = state.stateToSearch(s, "?embed=1&url=old");
    const back = state.parseState(search);
    assert.deepEqual(back, { ...s, urls: [s.url], active: 0 });
    assert.match(search, /embed=1/);
    assert.match(search, /url=\/a%20b\.dendro/);
  });
  it("ignores nonsense", () => {
    assert.deepEqual(state.parseState("?source=x&from=5&to=1&tz=mars&shift=1y&compare=&active=x"), {});
  });
  it("repeats url, names the one in front, and keeps a single-url link as it was", () => {
    assert.deepEqual(state.parseState("?url=a.dendro&stream=cpu"), { url: "a.dendro", urls: ["a.dendro"], active: 0, stream: "cpu" });
    const s = state.parseState("?url=a.dendro&url=b%26c.dendro&url=a.dendro&active=1&compare=cpu&col=user&shift=-1d&from=1&to=9");
    assert.deepEqual(s.urls, ["a.dendro", "b&c.dendro", "a.dendro"]);
    assert.equal(s.active, 1);
    assert.equal(s.url, "b&c.dendro");
    assert.equal(s.compare, "cpu");
    assert.equal(s.shift, -86_400_000_000_000n);
    assert.deepEqual(state.parseState(state.stateToSearch(s, "")), s);
    assert.equal(state.stateToSearch({ url: "x.dendro" }, ""), "?url=x.dendro");
    // An active past the list is the first; a list past MAX_URLS is cut.
    assert.equal(state.parseState("?url=a&active=3").active, 0);
    const many = Array.from({ length: state.MAX_URLS + 5 }, (_, i) => `url=${i}`).join("&");
    assert.equal(state.parseState("?" + many).urls.length, state.MAX_URLS);
  });
  it("reads a shift in nanoseconds or in a unit, and writes it in the largest exact unit", () => {
    assert.equal(state.parseShift("3600000000000"), 3_600_000_000_000n);
    assert.equal(state.parseShift("-1h"), -3_600_000_000_000n);
    assert.equal(state.parseShift("250ms"), 250_000_000n);
    assert.equal(state.parseShift("7us"), 7_000n);
    for (const bad of ["", "1y", "1.5h", "h", "--1s", "99999999999d"]) assert.equal(state.parseShift(bad), null, bad);
    assert.equal(state.shiftText(86_400_000_000_000n), "1d");
    assert.equal(state.shiftText(-90_000_000_000n), "-90s");
    assert.equal(state.shiftText(1_500_000n), "1500us");
    assert.equal(state.shiftText(7n), "7ns");
    assert.equal(state.parseState("?shift=0").shift, undefined);
  });
});

describe("catalog filter and caps", () => {
  const stream = (name) => ({ name, segments: [], sealed_rows: 0, live_rows: 1, live_span: null, caller_rows: 0 });
  const source = (id, labels, names) => ({ id, uuid: null, labels, metadata: {}, reserved: {}, complete: true, clock_anchor_wall_ns: 0n, caller_row_names: [], caller_row_counts: {}, streams: names.map(stream) });
  const desc = {
    file_bytes: 1,
    schema_version: 4,
    sources: [source(1, { host: "web-01", rack: "r1" }, ["cpu", "disk"]), source(2, { host: "db-01", rack: "r1" }, ["cpu", "wal"]), source(3, { host: "idle" }, [])],
  };
  const shape = (f) => f.matches.map((m) => `${m.source.id}:${m.streams.map((s) => s.name).join(",")}`);
  it("keeps everything for an empty query", () => {
    const f = catalog.filterCatalog(desc, "  ");
    assert.deepEqual(shape(f), ["1:cpu,disk", "2:cpu,wal", "3:"]);
    assert.equal(f.streams, 4);
  });
  it("keeps every stream of a source its labels match, and streams by name elsewhere", () => {
    assert.deepEqual(shape(catalog.filterCatalog(desc, "WEB-01")), ["1:cpu,disk"]);
    assert.deepEqual(shape(catalog.filterCatalog(desc, "wal")), ["2:wal"]);
    assert.deepEqual(shape(catalog.filterCatalog(desc, "source 3")), ["3:"]);
    assert.deepEqual(shape(catalog.filterCatalog(desc, "host=idle")), ["3:"]);
  });
  it("needs every word, each from the source or the stream's name", () => {
    assert.deepEqual(shape(catalog.filterCatalog(desc, "r1 cpu")), ["1:cpu", "2:cpu"]);
    assert.deepEqual(shape(catalog.filterCatalog(desc, "db cpu")), ["2:cpu"]);
    assert.deepEqual(shape(catalog.filterCatalog(desc, "web wal")), []);
  });
  it("says what a capped list left out", () => {
    assert.equal(catalog.shownText(24, 1000, "source"), "Showing the first 24 of 1,000 sources");
    assert.equal(catalog.shownText(0, 3, "stream", true), "Showing none of 3 streams matching the filter");
    assert.equal(catalog.shownText(5, 5, "stream"), null);
    assert.equal(catalog.needsFilter(desc), false);
  });
});

describe("lane index", () => {
  const seg = (seq, a, b) => ({ seq, rows: 2, first_ts: BigInt(a), last_ts: BigInt(b), bytes: 1, caller_index: false });
  // Out of order, and seq 1 reaches over seqs 2 and 3.
  const st = { name: "s", segments: [seg(2, 20, 25), seg(0, 0, 5), seg(1, 10, 100), seg(3, 30, 35), seg(4, 200, 205)], sealed_rows: 10, live_rows: 0, live_span: null, caller_rows: 0 };
  /** Seqs meeting [lo, hi], found the way the timeline finds them. */
  const meeting = (lo, hi) => {
    const x = laneindex.laneIndex(st);
    const out = [];
    for (let i = laneindex.firstReaching(x.reach, lo - Number(x.base)); i < x.segs.length && x.first[i] <= hi - Number(x.base); i++) {
      if (x.segs[i].last_ts >= BigInt(lo)) out.push(x.segs[i].seq);
    }
    return out;
  };
  it("orders segments by start and is built once per stream", () => {
    assert.deepEqual(laneindex.laneIndex(st).segs.map((s) => s.seq), [0, 1, 2, 3, 4]);
    assert.equal(laneindex.laneIndex(st), laneindex.laneIndex(st));
  });
  it("hands its index to the next description of the stream only when the segments are the same", () => {
    const next = { ...st, segments: st.segments.map((s) => ({ ...s })), live_rows: 5 };
    laneindex.carryIndex(st, next);
    assert.equal(laneindex.laneIndex(next), laneindex.laneIndex(st));
    const other = { ...st, segments: st.segments.slice(1).map((s) => ({ ...s })) };
    laneindex.carryIndex(st, other);
    assert.notEqual(laneindex.laneIndex(other), laneindex.laneIndex(st));
    assert.deepEqual(laneindex.laneIndex(other).segs.map((s) => s.seq), [0, 1, 3, 4]);
  });
  it("finds the segments meeting a window, one reaching over it included", () => {
    assert.deepEqual(meeting(40, 60), [1]);
    assert.deepEqual(meeting(22, 31), [1, 2, 3]);
    assert.deepEqual(meeting(101, 199), []);
    assert.deepEqual(meeting(-10, 1000), [0, 1, 2, 3, 4]);
  });
});

describe("model", () => {
  const seg = (seq, a, b, rows) => ({ seq, rows, first_ts: BigInt(a), last_ts: BigInt(b), bytes: 100, caller_index: false });
  it("finds holes in time and in seq numbers", () => {
    const st = { name: "s", segments: [seg(0, 0, 9, 10), seg(1, 10, 19, 10), seg(2, 100, 109, 10), seg(5, 110, 119, 10)], sealed_rows: 40, live_rows: 0, live_span: null, caller_rows: 0 };
    const g = model.gaps(st);
    assert.equal(g.length, 2);
    assert.equal(g[0].from, 19n);
    assert.equal(g[0].to, 100n);
    assert.equal(g[1].missingSeqs, 2);
  });
  it("tells a stream's next description apart by its segments and live tail, not only by its counts", () => {
    const a = { name: "s", segments: [seg(0, 0, 9, 10), seg(1, 10, 19, 10)], sealed_rows: 20, live_rows: 3, live_span: [20n, 22n], caller_rows: 0 };
    const same = { ...a, segments: a.segments.map((s) => ({ ...s })), live_span: [20n, 22n] };
    assert.ok(model.sameSegments(a, same) && model.sameLane(a, same));
    // A seal and an eviction in one step: the same count and rows, other segments.
    const moved = { ...a, segments: [seg(1, 10, 19, 10), seg(2, 20, 29, 10)] };
    assert.ok(!model.sameSegments(a, moved) && !model.sameLane(a, moved));
    // The same seq rewritten with other rows.
    const rewritten = { ...a, segments: [seg(0, 0, 9, 10), seg(1, 10, 18, 10)] };
    assert.ok(!model.sameSegments(a, rewritten));
    // The live tail grew.
    assert.ok(model.sameSegments(a, { ...a, live_rows: 4 }) && !model.sameLane(a, { ...a, live_rows: 4 }));
    assert.ok(!model.sameLane(a, { ...a, live_span: [20n, 23n] }));
    assert.ok(!model.sameLane(a, { ...a, live_rows: 0, live_span: null }));
  });
  it("compares labels and metadata entry by entry, order included", () => {
    assert.ok(model.sameEntries({ a: "1", b: "2" }, { a: "1", b: "2" }));
    assert.ok(!model.sameEntries({ a: "1", b: "2" }, { a: "1", b: "3" }));
    assert.ok(!model.sameEntries({ a: "1", b: "2" }, { b: "2", a: "1" }));
    assert.ok(!model.sameEntries({ a: "1" }, { a: "1", b: "2" }));
    assert.ok(model.sameEntries(JSON.parse('{"__proto__": "x"}'), JSON.parse('{"__proto__": "x"}')));
    assert.ok(!model.sameEntries(JSON.parse('{"__proto__": "x"}'), JSON.parse('{"__proto__": "y"}')));
  });
  it("includes live tails in spans and totals", () => {
    const desc = { file_bytes: 1, schema_version: 4, sources: [{ id: 1, uuid: null, labels: {}, metadata: {}, complete: true, clock_anchor_wall_ns: 0n, caller_row_names: [], streams: [{ name: "n", segments: [], sealed_rows: 0, live_rows: 17, live_span: [5n, 9n], caller_rows: 0 }] }] };
    assert.deepEqual(model.archiveSpan(desc), [5n, 9n]);
    assert.equal(model.totals(desc).rows, 17);
  });
});

describe("escaping and errors", () => {
  it("shows control and bidi characters as escapes", () => {
    assert.equal(dom.visible("a\u202Eb\u0000c\nd"), "a\\u{202E}b\\u{0000}c\\nd");
    assert.equal(dom.cut("ab\u{1F600}", 3), "ab");
  });
  it("says what a refused file looks like from the engine's detail, not its wording", () => {
    // Messages that name nothing: the words come from the structured fields.
    const x = errors.explain({ kind: "NotAnArchive", message: "f.sqlite: refused", detail: "foreign_app", application_id: 0x12345678 }, "f.sqlite", 8192);
    assert.equal(x.title, "f.sqlite is not a dendro archive");
    assert.match(x.hint, /a SQLite database of another application \(id 0x12345678\)/);
    assert.equal(x.message, "f.sqlite: refused", "the engine's own message is kept verbatim");
    const small = errors.explain({ kind: "NotAnArchive", message: "f: refused", detail: "foreign_app", application_id: 0x2a }, "f");
    assert.match(small.hint, /\(id 0x0000002a\)/);
    const want = {
      empty: /empty/,
      too_short: /too short to be a SQLite database/,
      not_sqlite: /not a SQLite file/,
      unstamped: /SQLite database, but not one written by dendro/,
      no_catalog: /holds none of its tables/,
      schema_mismatch: /tables are those of another schema version than its header states/,
    };
    for (const [detail, re] of Object.entries(want)) {
      assert.match(errors.explain({ kind: "NotAnArchive", message: "f: refused", detail }, "f", 100).hint, re, detail);
    }
    // A message that reads like another refusal does not override the detail.
    const lying = errors.explain({ kind: "NotAnArchive", message: "f: not a SQLite database of another application (id 0x1)", detail: "empty" }, "f", 5);
    assert.equal(lying.hint, "The file is empty.");
    const none = errors.explain({ kind: "NotAnArchive", message: "f: a SQLite database of another application (id 0x12345678)" }, "f", 9);
    assert.equal(none.hint, "dendro reads only archives it wrote.", "no detail, no guessing from the words");
    const v = errors.explain({ kind: "UnsupportedSchema", message: "w.dendro: refused", version: 99, supported_versions: [4, 5] }, "w.dendro");
    assert.equal(v.title, "Unsupported archive schema version 99");
    assert.match(v.hint, /an unsupported schema version 99; this viewer reads versions 4 and 5\./);
    const one = errors.explain({ kind: "UnsupportedSchema", message: "w.dendro: refused", version: 6, supported_versions: [4] }, "w.dendro");
    assert.match(one.hint, /schema version 6; this viewer reads version 4\./);
  });
});

describe("open archives (archives.ts)", () => {
  const src = (id, uuid) => ({ id, uuid, labels: {}, metadata: {}, reserved: {}, complete: true, clock_anchor_wall_ns: 0n, caller_row_names: [], caller_row_counts: {}, streams: [] });
  const view = (...sources) => ({ handle: { name: "h" }, desc: { file_bytes: 1, schema_version: 5, sources } });
  it("lists what is open in order and tells listeners of every change", () => {
    const r = new archives.ArchiveRegistry();
    const seen = [];
    const stop = r.onChange((list) => seen.push(list.map((a) => a.id)));
    r.add(1, "a.dendro", "/a.dendro", view(src(1, "u1")));
    r.add(2, "b.dendro", null, view(src(1, "u2")));
    assert.deepEqual(r.list().map((a) => [a.id, a.name, a.url]), [[1, "a.dendro", "/a.dendro"], [2, "b.dendro", null]]);
    r.remove(1);
    stop();
    r.remove(2);
    assert.deepEqual(seen, [[1], [1, 2], [2]]);
  });
  it("reads the view's handle and description as they are now", () => {
    const r = new archives.ArchiveRegistry();
    const v = view(src(1, "u1"));
    const a = r.add(1, "a", null, v);
    v.handle = { name: "newer image" };
    assert.equal(a.handle.name, "newer image");
  });
  it("counts a source once: equal uuids in a later archive are its duplicates, until the first closes", () => {
    const r = new archives.ArchiveRegistry();
    r.add(1, "a.dendro", null, view(src(1, "u1"), src(2, "u2"), src(3, null)));
    r.add(2, "copy of a.dendro", null, view(src(1, "u1"), src(2, "u2")));
    r.add(3, "c.dendro", null, view(src(7, "u2"), src(8, "u9"), src(9, null)));
    const ids = () => r.sources().map((s) => `${s.archive.id}:${s.source.id}`);
    assert.deepEqual(ids(), ["1:1", "1:2", "1:3", "3:8", "3:9"]);
    assert.deepEqual([...r.get(2).duplicates.keys()], [1, 2]);
    assert.deepEqual(r.get(3).duplicates.get(7).of, { archive: 1, name: "a.dendro", source: 2 });
    assert.match(archives.duplicatesText(r.get(2)), /^copy of a\.dendro holds the same data as a\.dendro: All 2 of its sources are open already/);
    assert.match(archives.duplicatesText(r.get(3)), /1 of its 3 sources are/);
    assert.equal(archives.duplicatesText(r.get(1)), null);
    r.remove(1);
    assert.deepEqual(ids(), ["2:1", "2:2", "3:8", "3:9"]);
    assert.equal(r.get(2).duplicates.size, 0);
    assert.equal(r.get(3).duplicates.get(7).of.archive, 2);
  });
});

describe("sync bus (sync.ts)", () => {
  it("tells every member but the publisher, and a named group is one bus", () => {
    const a = sync.syncBus("g1");
    assert.equal(sync.syncBus("g1"), a);
    assert.notEqual(sync.syncBus(""), sync.syncBus(""));
    const heard = [];
    const me = {};
    const other = {};
    const stop = a.onCursor((ns, by) => by !== me && heard.push(ns));
    a.onCursor((ns, by) => by !== other && heard.push(`other ${ns}`));
    a.cursor(5n, me);
    a.cursor(null, other);
    assert.deepEqual(heard, ["other 5", null]);
    assert.equal(a.cursorAt, null);
    stop();
  });
  it("does not publish again what a member does in answer, and drops a window it has", () => {
    const b = sync.syncBus(null);
    const seen = [];
    b.onWindow((from, to) => {
      seen.push([from, to]);
      b.setWindow(from - 1n, to + 1n, "echo"); // a member re-rounding the window it was told
    });
    b.setWindow(10n, 20n, "x");
    b.setWindow(10n, 20n, "x");
    b.setWindow(30n, 20n, "x");
    assert.deepEqual(seen, [[10n, 20n]]);
    assert.deepEqual(b.window, [10n, 20n]);
  });
});

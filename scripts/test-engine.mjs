// The engine as the page uses it, in headless Chromium: createEngine() from
// www/src/engine/client.ts, a real worker, the release wasm from www/pkg.
// Opens the shared fixtures through the worker and checks the contract of
// www/src/engine/types.ts end to end: transfers, BigInt timestamps, typed
// arrays, error kinds, several archives, close, and recovery after a trap.
//
//   node scripts/test-engine.mjs        (needs scripts/build-wasm.sh first)
//
// Prints one line per case and "N passed, M failed"; exits 1 on a failure.

import { join } from "node:path";
import { tmpdir } from "node:os";
import { bundleEngine, enginePage, launch, root, serve } from "../www/support/index.mjs";

const out = join(tmpdir(), "dendro-engine-test");
await bundleEngine(out);
const server = await serve({ "/engine/": out, "/fixtures/": join(root, "../shared/fixtures") });
const browser = await launch();
let passed = 0;
let failed = 0;

async function test(name, fn) {
  const { page, problems } = await enginePage(browser, server.url);
  try {
    await page.evaluate(fn);
    // A Crashed test logs the module's panic on purpose.
    const unexpected = name.includes("trap") ? [] : problems;
    if (unexpected.length) throw new Error(unexpected.join("; "));
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}\n     ${String(e.message ?? e).split("\n").join("\n     ")}`);
  } finally {
    await page.close();
  }
}

// Every function below runs in the page; `fetchFixture` and `check` are
// defined in each, since page.evaluate ships one function's source.

await test("open transfers the buffer and describe has BigInt timestamps", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  const engine = window.createEngine();
  const buf = await (await fetch("/fixtures/a_single_sealed.dendro")).arrayBuffer();
  const h = await engine.open(buf, "a_single_sealed.dendro");
  check(buf.byteLength === 0, "the caller's buffer was transferred (detached)");
  check(h.name === "a_single_sealed.dendro", "handle name");
  const d = await h.describe();
  check(d.file_bytes === 61440 && d.schema_version === 4, "file_bytes, schema_version");
  const s = d.sources[0];
  check(typeof s.clock_anchor_wall_ns === "bigint", "anchor is bigint");
  check(s.labels.host === "alpha", "labels are a plain object");
  const st = s.streams[0];
  check(st.name === "temps" && st.segments.length === 5 && st.sealed_rows === 200, "stream");
  check(typeof st.segments[0].first_ts === "bigint" && st.segments[0].first_ts === 1700000000000000000n, "first_ts");
  check(typeof st.segments[0].rows === "number" && st.live_span === null, "counts are numbers");
  check(Array.isArray(s.caller_row_names), "caller_row_names");
  engine.terminate();
});

await test("describe packed in the engine unpacks to the module's own describe, for every fixture", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  // Deep equality that tells BigInt from number and ignores key order.
  const same = (a, b, at) => {
    if (typeof a !== typeof b) throw new Error(`${at}: ${typeof a} against ${typeof b}`);
    if (a === null || typeof a !== "object") {
      check(a === b || (Number.isNaN(a) && Number.isNaN(b)), `${at}: ${String(a)} against ${String(b)}`);
      return;
    }
    check(Array.isArray(a) === Array.isArray(b), `${at}: array against object`);
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    check(ka.join() === kb.join(), `${at}: keys ${ka} against ${kb}`);
    for (const k of ka) same(a[k], b[k], `${at}.${k}`);
  };
  const pkg = await window.rawEngine();
  const engine = window.createEngine();
  let segments = 0;
  for (const name of ["a0_empty", "a_single_sealed", "b_multi_source", "g_caller_index", "h_negative_ts", "k_replication_b_applied"]) {
    const buf = await (await fetch(`/fixtures/${name}.dendro`)).arrayBuffer();
    const raw = pkg.Archive.open(new Uint8Array(buf), name);
    const want = raw.describe();
    raw.free();
    const h = await engine.open(buf, name);
    same(await h.describe(), want, name);
    for (const s of want.sources) for (const st of s.streams) segments += st.segments.length;
    await h.close();
  }
  check(segments > 10, `the fixtures hold segments to compare (${segments})`);
  engine.terminate();
});

await test("reserved metadata arrives parsed, timestamps exact, and verify counts covered rows", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  const engine = window.createEngine();
  const h = await engine.open(await (await fetch("/fixtures/b_multi_source.dendro")).arrayBuffer(), "b.dendro");
  const d = await h.describe();
  for (const s of d.sources) {
    const ws = s.reserved.writer_sessions;
    check(ws && ws.ok && ws.value.length >= 1, `source ${s.id} has parsed writer sessions`);
    const first = ws.value[0];
    check(typeof first.clock_anchor_wall_ns === "bigint", "a session's anchor is a bigint");
    check(first.clock_anchor_wall_ns === BigInt(JSON.parse(s.metadata.writer_sessions.replace(/(\d{16,})/g, '"$1"'))[0].clock_anchor_wall_ns), "the anchor is exact");
    check(typeof first.resumed === "boolean" && typeof first.dendro === "string", "session fields");
    check(!("events" in s.reserved) || s.metadata.events !== undefined, "a key is parsed only when present");
  }
  const v = await h.verify();
  check(typeof v.covered_wal_rows === "number" && (v.note === null || typeof v.note === "string"), "verify's covered rows and note");
  engine.terminate();
});

await test("schema, readSegment and readRange return the contract's shapes", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  const engine = window.createEngine();
  const h = await engine.open(await (await fetch("/fixtures/a_single_sealed.dendro")).arrayBuffer(), "a.dendro");
  const schema = await h.schema(1, "temps");
  check(schema.ts_column === "ts", "ts column");
  check(schema.columns.map((c) => `${c.name}:${c.type}`).join(",") === "ts:Int64,value:Int64,label:Utf8", "columns");
  const seg = await h.readSegment(1, "temps", 2);
  check(seg.rows === 40, "rows");
  const [ts, value, label] = seg.columns;
  check(ts.values instanceof BigInt64Array && value.values instanceof BigInt64Array, "Int64 as BigInt64Array");
  check(Array.isArray(label.values) && typeof label.values[0] === "string", "Utf8 as strings");
  check(ts.nulls === undefined, "no null bitmap without nulls");
  check(ts.values[0] === 1700000080000000000n, "first ts of seq 2");
  const only = await h.readSegment(1, "temps", 2, ["value"]);
  check(only.columns.length === 1 && only.columns[0].name === "value", "column projection");
  const t0 = 1700000000000000000n, s = 1000000000n;
  const r = await h.readRange(1, "temps", t0 + 50n * s, t0 + 89n * s, { maxPoints: 2000 });
  check(r.segments_read === 2 && r.rows_in_window === 40 && r.reduced === false, "window rows");
  check(r.ts instanceof BigInt64Array && r.ts.length === 40, "ts array");
  check(r.columns.length === 1 && r.columns[0].min instanceof Float64Array, "envelope columns");
  const all = await h.readRange(1, "temps", -(2n ** 63n), 2n ** 63n - 1n, { maxPoints: 7 });
  check(all.reduced && all.ts.length <= 7 && all.rows_in_window === 200, "reduced window");
  check(all.segments_read === 5 && all.segments_from_stats === 0, "40-row segments straddle 7 buckets of 200 rows");
  // Two buckets: the boundary falls inside seq 2; the other four come from their footers.
  const two = await h.readRange(1, "temps", -(2n ** 63n), 2n ** 63n - 1n, { maxPoints: 2 });
  check(two.segments_read === 1 && two.segments_from_stats === 4 && two.rows_in_window === 200, `footer statistics: ${two.segments_read} read, ${two.segments_from_stats} from statistics`);
  const cols = await h.readRange(1, "temps", t0, t0 + 10n * s, { columns: ["nope"] });
  check(cols.columns.length === 0 && cols.ts.length === 11, "columns filter");
  engine.terminate();
});

await test("live tails, caller indexes, caller rows and verify", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  const engine = window.createEngine();
  const b = await engine.open(await (await fetch("/fixtures/b_multi_source.dendro")).arrayBuffer(), "b.dendro");
  const d = await b.describe();
  const withTail = d.sources.flatMap((s) => s.streams.map((st) => [s.id, st])).filter(([, st]) => st.live_rows > 0);
  check(withTail.length >= 2, "fixture has live tails");
  for (const [id, st] of withTail) {
    const tail = await b.liveTail(id, st.name);
    check(tail.rows === st.live_rows && tail.first_ts === st.live_span[0] && tail.last_ts === st.live_span[1], `tail of ${st.name}`);
  }
  const g = await engine.open(await (await fetch("/fixtures/g_caller_index.dendro")).arrayBuffer(), "g.dendro");
  const gd = await g.describe();
  const src = gd.sources[0];
  const stream = src.streams.find((st) => st.segments.some((x) => x.caller_index));
  const index = await g.callerIndex(src.id, stream.name, stream.segments[0].seq);
  check(index instanceof Uint8Array && new TextDecoder().decode(index).startsWith("labels:"), "caller index bytes");
  const name = src.caller_row_names[0] ?? stream.name;
  const rows = await g.callerRows(src.id, name, -(2n ** 63n), 2n ** 63n - 1n);
  check(rows.length > 0 && typeof rows[0].ts === "bigint" && rows[0].blob instanceof Uint8Array, "caller rows");
  check(
    Object.keys(src.caller_row_counts).join() === src.caller_row_names.join() && src.caller_row_counts[name] === rows.length,
    `caller_row_counts ${JSON.stringify(src.caller_row_counts)} for ${rows.length} rows under ${name}`,
  );
  const report = await g.verify();
  check(report.sound === true && Array.isArray(report.problems) && report.problems.length === 0, "verify");
  engine.terminate();
});

await test("refusals reject with an Error carrying the kind and the file name", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  const engine = window.createEngine();
  // [file, kind, what the error carries besides kind and message]
  const cases = [
    ["i_not_sqlite.txt", "NotAnArchive", { detail: "not_sqlite" }],
    ["i_foreign_app.sqlite", "NotAnArchive", { detail: "foreign_app", application_id: 0x12345678 }],
    ["i_not_archive.sqlite", "NotAnArchive", { detail: "unstamped" }],
    ["i_truncated_header.dendro", "NotAnArchive", { detail: "too_short" }],
    ["i_wrong_version.dendro", "UnsupportedSchema", { version: 99, supported_versions: [4, 5] }],
    ["i_truncated_half.dendro", "Corrupt", {}],
    ["i_empty_file.dendro", "NotAnArchive", { detail: "empty" }],
  ];
  const extras = ["detail", "application_id", "version", "supported_versions"];
  for (const [file, kind, extra] of cases) {
    const buf = await (await fetch(`/fixtures/${file}`)).arrayBuffer();
    try {
      await engine.open(buf, file);
      throw new Error(`${file} opened`);
    } catch (e) {
      check(e instanceof Error && e.kind === kind, `${file}: ${e.kind} ${e.message}`);
      check(e.message.includes(file), `${file}: message names the file`);
      for (const key of extras) {
        check(JSON.stringify(e[key]) === JSON.stringify(extra[key]), `${file}: ${key} is ${JSON.stringify(e[key])}, expected ${JSON.stringify(extra[key])}`);
      }
    }
  }
  const h = await engine.open(await (await fetch("/fixtures/a_single_sealed.dendro")).arrayBuffer(), "a.dendro");
  for (const p of [h.readSegment(1, "temps", 99), h.schema(1, "nope"), h.liveTail(7, "temps")]) {
    try {
      await p;
      throw new Error("resolved");
    } catch (e) {
      check(e.kind === "NotFound", `NotFound: ${e.kind} ${e.message}`);
    }
  }
  engine.terminate();
});

await test("several archives at once; a closed handle is refused", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  const engine = window.createEngine();
  const get = async (f) => (await fetch(`/fixtures/${f}`)).arrayBuffer();
  const [a, b, h] = await Promise.all([
    engine.open(await get("a_single_sealed.dendro"), "a.dendro"),
    engine.open(await get("b_multi_source.dendro"), "b.dendro"),
    engine.open(await get("h_negative_ts.dendro"), "h.dendro"),
  ]);
  const [da, db, dh] = await Promise.all([a.describe(), b.describe(), h.describe()]);
  check(da.sources.length === 1 && db.sources.length === 2 && dh.sources.length >= 1, "three descriptions");
  check(dh.sources.some((s) => s.clock_anchor_wall_ns < 0n), "negative anchor survives as bigint");
  await b.close();
  try {
    await b.describe();
    throw new Error("closed handle answered");
  } catch (e) {
    check(e.kind === "NotFound", `closed: ${e.kind}`);
  }
  check((await a.readSegment(1, "temps", 0)).rows === 40, "a still open");
  engine.terminate();
  try {
    await a.describe();
    throw new Error("terminated engine answered");
  } catch (e) {
    check(e instanceof Error && typeof e.kind === "string", "terminated engine rejects");
  }
});

await test("a request cancelled before it starts is skipped by the worker", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  // Every message to and from the worker, as the client sends and gets them.
  const sent = [];
  const answers = [];
  const Original = window.Worker;
  const post = Original.prototype.postMessage;
  Original.prototype.postMessage = function (m, t) {
    sent.push(m);
    return post.call(this, m, t);
  };
  window.Worker = class extends Original {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (e) => answers.push(e.data));
    }
  };
  const engine = window.createEngine();
  window.Worker = Original;
  const h = await engine.open(await (await fetch("/fixtures/a_single_sealed.dendro")).arrayBuffer(), "a.dendro");
  const [lo, hi] = [-(2n ** 63n), 2n ** 63n - 1n];
  // The worker is held, as by a long decode; two windows queue behind it.
  const hold = engine.holdForTests();
  let held = true;
  void hold.done.then(() => (held = false));
  const ctl = new AbortController();
  const dropped = h.readRange(1, "temps", lo, hi, { maxPoints: 7, signal: ctl.signal });
  const kept = h.readRange(1, "temps", lo, hi, { maxPoints: 7 });
  ctl.abort();
  let e = null;
  try {
    await dropped;
  } catch (x) {
    e = x;
  }
  check(e instanceof Error && e.kind === "Cancelled" && e.name === "AbortError", `rejected with ${e?.kind} ${e?.name}`);
  check(held, "rejected at once, while the worker is still held");
  const before = sent.length;
  try {
    await h.readRange(1, "temps", lo, hi, { maxPoints: 7, signal: ctl.signal });
    throw new Error("an aborted signal's request resolved");
  } catch (x) {
    check(x.kind === "Cancelled", `already aborted: ${x.kind}`);
  }
  check(sent.length === before, "nothing is sent for a signal that had already fired");
  hold.release();
  await hold.done;
  const r = await kept;
  check(r.rows_in_window === 200, "the request queued behind it ran");
  const id = sent.find((m) => m.op === "call" && m.method === "readRange").id;
  check(sent.some((m) => m.op === "cancel" && m.ids.includes(id)), "the worker was told");
  // Answers come in order, so the dropped request's came before the kept one's.
  const answer = answers.find((a) => a.id === id);
  check(answer && answer.ok === false && answer.error.kind === "Cancelled", `the worker skipped it: ${JSON.stringify(answer)}`);
  check(answers.filter((a) => a.id === id).length === 1, "one answer per request");
  Original.prototype.postMessage = post;
  engine.terminate();
});

await test("verify waits behind requests sent after it, while it has not started", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  const engine = window.createEngine();
  const h = await engine.open(await (await fetch("/fixtures/b_multi_source.dendro")).arrayBuffer(), "b.dendro");
  const [lo, hi] = [-(2n ** 63n), 2n ** 63n - 1n];
  // The worker is held, as by a long read; verify is asked for first, then a plot's window and a segment's rows.
  const hold = engine.holdForTests();
  const order = [];
  const verified = h.verify().then((r) => (order.push("verify"), r));
  const plotted = h.readRange(2, "disk", lo, hi, { maxPoints: 50 }).then((r) => (order.push("readRange"), r));
  const rows = h.readSegment(2, "disk", 0).then((r) => (order.push("readSegment"), r));
  hold.release();
  await hold.done;
  const [report, env, batch] = await Promise.all([verified, plotted, rows]);
  check(order.join(",") === "readRange,readSegment,verify", `answered in the order ${order.join(",")}`);
  check(report.sound === true && env.rows_in_window > 0 && batch.rows > 0, "each answered in full");
  engine.terminate();
});

await test("a trap in the decoder costs the decoder only: archives stay open", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  const engine = window.createEngine({ cacheBytes: 0 });
  const inProcess = window.createEngine({ cacheBytes: 0, isolateDecoding: false });
  const bytes = async () => (await fetch("/fixtures/b_multi_source.dendro")).arrayBuffer();
  const h = await engine.open(await bytes(), "b.dendro");
  const ref = await inProcess.open(await bytes(), "b.dendro");
  const [lo, hi] = [-(2n ** 63n), 2n ** 63n - 1n];
  const same = async (what) => {
    for (const points of [3, 2000]) {
      const a = await h.readRange(2, "disk", lo, hi, { maxPoints: points });
      const b = await ref.readRange(2, "disk", lo, hi, { maxPoints: points });
      const text = (e) => JSON.stringify({ ...e, ts: [...e.ts].map(String), columns: e.columns.map((c) => [c.name, [...c.min], [...c.max]]) });
      check(text(a) === text(b), `${what}: readRange at ${points} points matches decoding in the engine's own instance`);
    }
    const a = await h.readSegment(2, "disk", 0);
    const b = await ref.readSegment(2, "disk", 0);
    check(JSON.stringify(a, (_, v) => (typeof v === "bigint" ? String(v) : ArrayBuffer.isView(v) ? [...v].map(String) : v)) ===
      JSON.stringify(b, (_, v) => (typeof v === "bigint" ? String(v) : ArrayBuffer.isView(v) ? [...v].map(String) : v)), `${what}: readSegment matches`);
  };
  await same("before");
  const what = 'segment 3 of stream "disk" (source 2) of b.dendro';
  try {
    await engine.crashDecoderForTests(what);
    throw new Error("the decoder did not trap");
  } catch (e) {
    check(e.kind === "Crashed", `kind ${e.kind}: ${e.message}`);
    check(e.message.includes(what) && e.message.includes("still open"), `names the segment: ${e.message}`);
  }
  // The same handle answers, through a new decoder; nothing was reopened.
  check((await h.describe()).sources.length === 2, "the archive is still open");
  await same("after");
  engine.terminate();
  inProcess.terminate();
});

await test("a segment the decoder cannot read is an error naming it", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  const engine = window.createEngine({ cacheBytes: 0 });
  const bytes = new Uint8Array(await (await fetch("/fixtures/a_single_sealed.dendro")).arrayBuffer());
  const manifest = await (await fetch("/fixtures/a_single_sealed.manifest.json")).json();
  const seg = manifest.sources[0].streams[0].segments.find((x) => x.seq === 0);
  // Where segment 0 sits (the file also holds stale copies of pages): the
  // run of its length whose FNV-1a matches the manifest's.
  const fnv = (from, len) => {
    let h = 0xcbf29ce484222325n;
    for (let i = from; i < from + len; i++) h = ((h ^ BigInt(bytes[i])) * 0x100000001b3n) & 0xffffffffffffffffn;
    return h.toString(16).padStart(16, "0");
  };
  let start = -1;
  for (let i = 0; i + seg.byte_len <= bytes.length && start < 0; i++) {
    if (bytes[i] === 0x50 && bytes[i + 1] === 0x41 && bytes[i + 2] === 0x52 && bytes[i + 3] === 0x31 && fnv(i, seg.byte_len) === seg.bytes_fnv) start = i;
  }
  check(start >= 0, "segment 0 found in the file");
  // Its footer length, just before the closing magic, now claims more than the segment holds.
  bytes.set([0xff, 0xff, 0xff, 0x7f], start + seg.byte_len - 8);
  const h = await engine.open(bytes.buffer, "lying.dendro");
  for (const p of [h.readSegment(1, "temps", 0), h.readRange(1, "temps", -(2n ** 63n), 2n ** 63n - 1n, { maxPoints: 100 })]) {
    try {
      await p;
      throw new Error("a lying footer was read");
    } catch (e) {
      check(e.kind === "Segment" && e.message.includes("segment 0") && e.message.includes("lying.dendro"), `${e.kind}: ${e.message}`);
    }
  }
  check((await h.readSegment(1, "temps", 1)).rows === 40, "the other segments are unharmed");
  engine.terminate();
});

await test("a trap restarts the worker and names the segment", async () => {
  const check = (ok, what) => { if (!ok) throw new Error(what); };
  const engine = window.createEngine();
  const bytes = async () => (await fetch("/fixtures/a_single_sealed.dendro")).arrayBuffer();
  const before = await engine.open(await bytes(), "a.dendro");
  const pending = before.describe();
  try {
    await engine.crashForTests('segment 3 of stream "temps" (source 1) of a.dendro');
    throw new Error("no crash");
  } catch (e) {
    check(e.kind === "Crashed", `kind ${e.kind}: ${e.message}`);
    check(e.message.includes('segment 3 of stream "temps"'), `names the segment: ${e.message}`);
  }
  await pending.catch(() => {});
  try {
    await before.describe();
    throw new Error("handle from before the crash answered");
  } catch (e) {
    check(e.kind === "Crashed" && e.message.includes("open it again"), `old handle: ${e.kind} ${e.message}`);
  }
  const after = await engine.open(await bytes(), "a.dendro");
  check((await after.describe()).sources.length === 1, "the restarted engine works");
  engine.terminate();
});

await browser.close();
await server.close();
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);

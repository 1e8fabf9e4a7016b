// `dendro serve` under many slow clients (issue 29): opens SLOW connections
// that each ask for a large file and then read it about a byte a second,
// and meanwhile times a normal client fetching `index.html` and a range of
// an archive. Not part of the test suite; figures go in
// docs/measurements/2026-12-07-serve-slow-clients.md.
//
//   node scripts/soak-serve.mjs [--bin PATH] [--slow N] [--tries N] [--settle MS]
//
// --bin defaults to $DENDRO_BIN or target/debug/dendro. Everything listens
// on 127.0.0.1 with a port the OS picks, and stops by itself.

import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const BIN = opt("--bin", process.env.DENDRO_BIN ?? join(ROOT, "target/debug/dendro"));
const SLOW = Number(opt("--slow", "200"));
const TRIES = Number(opt("--tries", "7"));
/** How long the slow clients have to connect and fill their buffers before the timing starts. */
const SETTLE_MS = Number(opt("--settle", "3000"));
/** A normal request not answered within this is counted as this (a timeout). */
const GIVE_UP_MS = 10_000;

const dir = mkdtempSync(join(tmpdir(), "dendro-soak-"));
const www = join(dir, "www");
const archive = join(dir, "sample.dendro");

function setup() {
  mkdirSync(www);
  writeFileSync(join(www, "index.html"), "<!doctype html><title>soak</title>" + "x".repeat(4000));
  // Larger than what the kernel buffers for a connection: a slow reader's
  // answer cannot be written out at once.
  const big = Buffer.alloc(64 << 20);
  for (let i = 0; i < big.length; i += 4096) big[i] = i & 0xff;
  writeFileSync(join(www, "big.bin"), big);
  copyFileSync(join(ROOT, "../shared/fixtures/b_multi_source.dendro"), archive);
}

function startServer() {
  const child = spawn(BIN, ["serve", "--port", "0", "--root", www, archive], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (b) => {
      out += b;
      const port = /on http:\/\/127\.0\.0\.1:(\d+)\//.exec(out)?.[1];
      const url = /\/\?url=(\S+)/.exec(out)?.[1];
      if (port && url) resolve({ child, port: Number(port), archiveUrl: decodeURIComponent(url) });
    });
    child.on("exit", (code) => reject(new Error(`dendro serve exited (${code}): ${out}`)));
  });
}

/** A client that asks for the large file and reads a byte a second. */
function slowClient(port) {
  const s = net.connect({ host: "127.0.0.1", port, readableHighWaterMark: 1 });
  s.on("error", () => {});
  s.on("connect", () => {
    s.write(`GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    s.pause();
  });
  const timer = setInterval(() => s.read(1), 1000);
  return () => {
    clearInterval(timer);
    s.destroy();
  };
}

/** One request on a fresh connection: resolves with its time in ms (GIVE_UP_MS when not answered). */
function timed(port, path, extra = "") {
  return new Promise((resolve) => {
    const start = performance.now();
    const s = net.connect({ host: "127.0.0.1", port });
    let got = Buffer.alloc(0);
    let done = false;
    const finish = (ok) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ ms: ok ? performance.now() - start : GIVE_UP_MS, ok });
    };
    const timer = setTimeout(() => finish(false), GIVE_UP_MS);
    s.on("error", () => finish(false));
    s.on("connect", () => s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close${extra}\r\n\r\n`));
    s.on("data", (b) => {
      got = Buffer.concat([got, b]);
      const head = got.indexOf("\r\n\r\n");
      if (head < 0) return;
      const len = Number(/content-length:\s*(\d+)/i.exec(got.subarray(0, head).toString())?.[1] ?? -1);
      const status = Number(got.subarray(9, 12).toString());
      if (len >= 0 && got.length - head - 4 >= len) finish(status === 200 || status === 206);
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function stats(list) {
  const ms = list.map((r) => r.ms).sort((a, b) => a - b);
  const failed = list.filter((r) => !r.ok).length;
  return { median: ms[Math.floor(ms.length / 2)], max: ms[ms.length - 1], failed };
}

async function main() {
  setup();
  const { child, port, archiveUrl } = await startServer();
  try {
    const quiet = { index: [], range: [] };
    for (let i = 0; i < TRIES; i++) {
      quiet.index.push(await timed(port, "/index.html"));
      quiet.range.push(await timed(port, archiveUrl, "\r\nRange: bytes=4096-8191"));
    }
    const stops = [];
    for (let i = 0; i < SLOW; i++) stops.push(slowClient(port));
    await sleep(SETTLE_MS);
    const loaded = { index: [], range: [] };
    for (let i = 0; i < TRIES; i++) {
      loaded.index.push(await timed(port, "/index.html"));
      loaded.range.push(await timed(port, archiveUrl, "\r\nRange: bytes=4096-8191"));
    }
    if (process.env.SOAK_VERBOSE) console.log(JSON.stringify(loaded));
    for (const stop of stops) stop();
    const fmt = (s) => `median ${s.median.toFixed(1)} ms, max ${s.max.toFixed(1)} ms${s.failed ? `, ${s.failed} not answered within ${GIVE_UP_MS / 1000} s` : ""}`;
    console.log(`binary: ${BIN}`);
    console.log(`no slow clients:  index.html ${fmt(stats(quiet.index))}; archive range ${fmt(stats(quiet.range))}`);
    console.log(`${SLOW} slow clients: index.html ${fmt(stats(loaded.index))}; archive range ${fmt(stats(loaded.range))}`);
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

#!/usr/bin/env python3
"""Memory and time of `dendro serve` following a large live archive.

    python3 benches/browser/follow-memory.py --dendro target/debug/dendro \
        --base demo.dendro --mb 1000 --seconds 60

A copy of `--base` (any archive, e.g. `dendro demo --size 100 demo.dendro`)
grows to about `--mb` megabytes with a table of filler blobs (readers
ignore tables they do not know), then a writer keeps it open in WAL mode
and commits a 3 KB row four times a second (a passive checkpoint every
10 s, as dendro's writer does), while a follower probes `dendro serve`
four times a second as the viewer's worker does (If-None-Match, the first
16 KiB, then the units `Dendro-Changed` lists, with If-Match). Prints the
server's peak RSS (VmHWM), its RSS at the end, and the time of each probe
that got a new image (the server takes the image inside that request).
"""

import argparse
import http.client
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import threading
import time


def rss(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(v.split()[0]) * 1024
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dendro", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--mb", type=int, default=1000)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--keep", help="reuse (or make) the grown copy here")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="dendro-follow-mem-")
    path = args.keep or os.path.join(work, "live.dendro")
    if not (args.keep and os.path.exists(path)):
        shutil.copyfile(args.base, path)
        db = sqlite3.connect(path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS bench_filler(n INTEGER PRIMARY KEY, b BLOB)")
        have = os.path.getsize(path)
        n = 0
        while have + n * 1_000_000 < args.mb * 1_000_000:
            db.execute("INSERT INTO bench_filler(b) VALUES (randomblob(1000000))")
            n += 1
            if n % 50 == 0:
                db.commit()
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
    size = os.path.getsize(path)

    writer = sqlite3.connect(path, check_same_thread=False)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE IF NOT EXISTS bench_tail(n INTEGER PRIMARY KEY, b BLOB)")
    writer.commit()
    stop = threading.Event()

    def write():
        k = 0
        last_ck = time.monotonic()
        while not stop.is_set():
            writer.execute("INSERT INTO bench_tail(b) VALUES (randomblob(3000))")
            writer.commit()
            k += 1
            if time.monotonic() - last_ck > 10:
                writer.execute("PRAGMA wal_checkpoint(PASSIVE)")
                last_ck = time.monotonic()
            time.sleep(0.25)

    root = os.path.join(work, "root")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<!doctype html>")
    server = subprocess.Popen(
        [args.dendro, "serve", "--port", "0", "--root", root, path],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    port = None
    for line in server.stdout:
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if m:
            port = int(m.group(1))
            break
    assert port, "dendro serve did not start"
    t = threading.Thread(target=write)
    t.start()
    url = "/archives/" + os.path.basename(path)
    etag = None
    new_image_ms = []
    unchanged = 0
    listed_units = 0
    samples = []
    end = time.monotonic() + args.seconds
    try:
        while time.monotonic() < end:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            headers = {"Range": "bytes=0-16383"}
            if etag:
                headers["If-None-Match"] = etag
            t0 = time.monotonic()
            conn.request("GET", url, headers=headers)
            r = conn.getresponse()
            r.read()
            took = (time.monotonic() - t0) * 1000
            if r.status == 304:
                unchanged += 1
            elif r.status == 206:
                if etag:
                    new_image_ms.append(took)
                etag = r.getheader("ETag")
                changed = r.getheader("Dendro-Changed") or ""
                parts = changed.split(" ", 2)
                runs = [p for p in (parts[2] if len(parts) > 2 else "").split(",") if p]
                # Reads what changed (as the worker does for what it held).
                for p in runs[:16]:
                    a, _, b = p.partition("-")
                    a, b = int(a), int(b or a)
                    listed_units += b - a + 1
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                    c.request("GET", url, headers={"Range": f"bytes={a * 4096}-{min(b, a + 15) * 4096 + 4095}", "If-Match": etag})
                    c.getresponse().read()
                    c.close()
            conn.close()
            samples.append(rss(server.pid)["VmRSS"])
            time.sleep(max(0, 0.25 - took / 1000))
        final = rss(server.pid)
    finally:
        stop.set()
        t.join()
        server.terminate()
        server.wait()
        writer.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"archive {size / 1e6:.0f} MB, {args.seconds} s followed")
    print(f"peak RSS (VmHWM) {final['VmHWM'] / 1e6:.0f} MB; RSS at the end {final['VmRSS'] / 1e6:.0f} MB; median RSS {statistics.median(samples) / 1e6:.0f} MB")
    print(f"probes {len(samples)}, 304s {unchanged}, new images {len(new_image_ms)}")
    if new_image_ms:
        q = statistics.quantiles(new_image_ms, n=10) if len(new_image_ms) > 1 else new_image_ms
        print(f"new images {len(new_image_ms)}: probe median {statistics.median(new_image_ms):.0f} ms, p90 {q[-1]:.0f} ms, max {max(new_image_ms):.0f} ms; 304s {unchanged}; units listed {listed_units}")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Replication soak (issue 29; not part of CI). A live demo archive is
# published over loopback to three subscribers for DURATION seconds
# (default 600):
#   - "stuck": a client that reads a little and then stops reading, again
#     and again (python3), which the publisher must drop without the
#     origin's -wal growing;
#   - "killed": `dendro subscribe --connect`, SIGKILLed and restarted at
#     random moments;
#   - "normal": `dendro subscribe --connect`, left alone.
# Every few seconds it samples the origin's -wal size and runs
# `PRAGMA wal_checkpoint(PASSIVE)` on it. At the end the writer finalizes,
# the replicas catch up, and each is compared with the origin: sources,
# labels, metadata, segments, caller rows, and every row of every stream
# (`dendro cat`). Prints the samples and a PASS/FAIL summary; exits 1 on
# FAIL.
#
#   scripts/soak-replicate.sh [DURATION_SECONDS] [WORK_DIR]
#
# Then (issue 36) the snapshot path under kills: the kill test of
# tests/replicate/kill_snapshot.rs with SNAPSHOT_KILLS kills of each side
# (default 24; CI runs 3), in release. SNAPSHOT_KILLS=0 skips it.
#
# Needs python3 (with its sqlite3 module). Builds the release `dendro`
# (CARGO_BUILD_JOBS is honoured) unless DENDRO names a binary to use.
# Listens on 127.0.0.1 only, on a port the OS picks.
set -euo pipefail

duration=${1:-600}
here=$(cd "$(dirname "$0")/.." && pwd)
work=${2:-$(mktemp -d -t dendro-soak.XXXXXX)}
mkdir -p "$work"
cd "$here"
if [[ -z ${DENDRO:-} ]]; then
  cargo build --release --quiet --bin dendro
fi
dendro=${DENDRO:-$here/target/release/dendro}
origin="$work/origin.dendro"
rm -f "$work"/*.dendro* "$work"/*.log "$work"/samples.tsv

pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill -9 "$pid" 2>/dev/null || true
  done
  [[ -n ${killer_pid:-} ]] && kill -9 "$killer_pid" 2>/dev/null || true
  [[ -n ${killed_pid:-} ]] && kill -9 "$(cat "$work/killed.pid" 2>/dev/null)" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT

echo "soak: ${duration}s in $work"
# The writer: an hour of history, then a tick a second, sealing every 30 s,
# finalizing cleanly when the soak ends.
"$dendro" demo "$origin" --live --for "$duration" --seal-every 30 >"$work/demo.log" 2>&1 &
demo_pid=$!
pids+=("$demo_pid")
for _ in $(seq 600); do
  grep -q "appending once a second" "$work/demo.log" 2>/dev/null && break
  sleep 0.1
done
sleep 2

"$dendro" publish "$origin" --listen 127.0.0.1:0 --write-timeout-ms 5000 \
  2>"$work/publish.log" &
pids+=($!)
port=""
for _ in $(seq 300); do
  port=$(sed -n 's/^publishing .* on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/publish.log")
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || { echo "the publisher did not start"; cat "$work/publish.log"; exit 1; }
echo "publisher on 127.0.0.1:$port"

# The stuck reader: reads 4 KB, then nothing for 40 s; a new connection
# each time.
python3 - "$port" "$duration" >"$work/stuck.log" 2>&1 <<'EOF' &
import socket, sys, time
port, duration = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + duration
n = 0
while time.time() < end:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    got = s.recv(4096)
    n += 1
    print(f"stuck connection {n}: read {len(got)} bytes, now reading nothing", flush=True)
    time.sleep(min(40, max(0, end - time.time())))
    s.close()
EOF
pids+=($!)

"$dendro" subscribe "$work/normal.dendro" --connect "127.0.0.1:$port" --json \
  >"$work/normal.log" 2>"$work/normal.err" &
normal_pid=$!
pids+=("$normal_pid")

# The killed subscriber: up for 1 to 20 s at a time, then SIGKILL.
(
  end=$((SECONDS + duration))
  kills=0
  while ((SECONDS < end)); do
    "$dendro" subscribe "$work/killed.dendro" --connect "127.0.0.1:$port" --json \
      >>"$work/killed.log" 2>>"$work/killed.err" &
    echo $! >"$work/killed.pid"
    sleep "$((RANDOM % 20 + 1)).$((RANDOM % 10))"
    kill -9 "$(cat "$work/killed.pid")" 2>/dev/null || true
    wait "$(cat "$work/killed.pid")" 2>/dev/null || true
    kills=$((kills + 1))
    echo "kill $kills" >>"$work/kills.log"
  done
) &
killer_pid=$!

# Samples: the origin's -wal size and a passive checkpoint, every 5 s.
python3 - "$origin" "$duration" "$work/samples.tsv" <<'EOF'
import os, sqlite3, sys, time
origin, duration, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
start = time.time()
with open(out, "w") as f:
    f.write("t_s\twal_bytes\tbusy\tlog_frames\tcheckpointed\n")
    while time.time() - start < duration:
        try:
            wal = os.path.getsize(origin + "-wal")
        except FileNotFoundError:
            wal = 0
        con = sqlite3.connect(origin, timeout=5)
        busy, log, done = con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        con.close()
        f.write(f"{time.time() - start:.0f}\t{wal}\t{busy}\t{log}\t{done}\n")
        f.flush()
        time.sleep(5)
EOF

# The writer finalizes at the end of its --for; then the killed one gets
# a last clean run, and both catch up.
wait "$demo_pid" || true
wait "$killer_pid" 2>/dev/null || true
"$dendro" subscribe "$work/killed.dendro" --connect "127.0.0.1:$port" --json \
  >>"$work/killed.log" 2>>"$work/killed.err" &
last_pid=$!
pids+=("$last_pid")
sleep 15
kill -INT "$normal_pid" "$last_pid"
wait "$normal_pid" "$last_pid" || true

python3 - "$dendro" "$origin" "$work" <<'EOF'
import hashlib, json, subprocess, sys
dendro, origin, work = sys.argv[1], sys.argv[2], sys.argv[3]

def view(path):
    d = json.loads(subprocess.check_output([dendro, "describe", "--json", "--all", path]))
    out = {}
    for s in d["sources"]:
        meta = {k: v for k, v in s["metadata"].items() if k != "writer_sessions"}
        streams = {}
        for st in s["streams"]:
            rows = subprocess.run(
                [dendro, "cat", path, "--source", str(s["id"]), "--stream", st["name"]],
                capture_output=True, check=True).stdout
            streams[st["name"]] = {
                "segments": [(g["rows"], g["first_ts"], g["last_ts"], g["bytes"])
                             for g in st["segments"]],
                "caller_rows": st.get("caller_rows"),
                "rows": rows.count(b"\n"),
                "rows_sha256": hashlib.sha256(rows).hexdigest(),
            }
        out[s["uuid"]] = {"labels": s["labels"], "metadata": meta,
                          "complete": s["complete"], "streams": streams}
    return out

want = view(origin)
rows = sum(st["rows"] for s in want.values() for st in s["streams"].values())
segs = sum(len(st["segments"]) for s in want.values() for st in s["streams"].values())
print(f"origin: {len(want)} sources, {segs} segments, {rows} rows")
ok = True
for name in ("normal", "killed"):
    got = view(f"{work}/{name}.dendro")
    if got == want:
        print(f"{name}: equal to the origin")
        continue
    ok = False
    print(f"{name}: DIFFERS from the origin")
    for uuid in sorted(set(want) | set(got)):
        a, b = want.get(uuid), got.get(uuid)
        if a is None or b is None:
            print(f"  source {uuid}: only in {'replica' if a is None else 'origin'}")
            continue
        for k in ("labels", "complete"):
            if a[k] != b[k]:
                print(f"  source {uuid}: {k} differs")
        keys = sorted(k for k in set(a["metadata"]) | set(b["metadata"])
                      if a["metadata"].get(k) != b["metadata"].get(k))
        if keys:
            print(f"  source {uuid}: metadata differs at {keys}")
        for st in sorted(set(a["streams"]) | set(b["streams"])):
            x, y = a["streams"].get(st), b["streams"].get(st)
            if x != y:
                brief = lambda v: v and {**v, "segments": len(v["segments"])}
                print(f"  source {uuid} stream {st}: origin {brief(x)} replica {brief(y)}")
open(f"{work}/equal.txt", "w").write("yes\n" if ok else "no\n")
EOF

python3 - "$work" <<'EOF'
import sys
work = sys.argv[1]
rows = [l.rstrip("\n").split("\t") for l in open(f"{work}/samples.tsv")][1:]
rows = [(int(t), int(w), int(b), int(l), int(c)) for t, w, b, l, c in rows]
print("t_s  wal_MB  busy  log  checkpointed")
for t, w, b, l, c in rows:
    print(f"{t:4d}  {w / 1e6:6.2f}  {b:4d}  {l:4d}  {c:4d}")
full = [t for t, w, b, l, c in rows if b == 0 and l == c]
longest, last = 0, 0
for t, *_ in rows:
    if t in full:
        last = t
    longest = max(longest, t - last)
max_wal = max(w for _, w, *_ in rows)
print(f"samples {len(rows)}, complete checkpoints {len(full)}, "
      f"longest stretch without one {longest} s, max -wal {max_wal / 1e6:.2f} MB")
equal = open(f"{work}/equal.txt").read().strip() == "yes"
passed = equal and max_wal < 64e6 and longest <= 60 and len(full) > len(rows) // 2
open(f"{work}/verdict.txt", "w").write("PASS\n" if passed else "FAIL\n")
EOF
echo "stuck connections: $(grep -c 'stuck connection' "$work/stuck.log" || true)," \
  "dropped by the publisher: $(grep -c 'subscriber dropped' "$work/publish.log" || true)," \
  "killed subscriber restarts: $(wc -l <"$work/kills.log" 2>/dev/null || echo 0)"
echo "reconnect lines (normal): $(grep -c reconnecting "$work/normal.err" || true)"
verdict=$(cat "$work/verdict.txt")
echo "soak: $verdict ($work)"
[[ $verdict == PASS ]] || exit 1

kills=${SNAPSHOT_KILLS:-24}
if ((kills > 0)); then
  echo "snapshot kills: $kills of each side"
  if DENDRO_SNAPSHOT_KILLS=$kills cargo test --release --quiet --test replicate \
    kill_snapshot -- --nocapture >"$work/snapshot-kills.log" 2>&1; then
    grep -E "kill moments|kills:" "$work/snapshot-kills.log" || true
    echo "snapshot kills: PASS"
  else
    grep -E "kill moments|kills:|panicked" -A3 "$work/snapshot-kills.log" || true
    echo "snapshot kills: FAIL ($work/snapshot-kills.log)"
    exit 1
  fi
fi

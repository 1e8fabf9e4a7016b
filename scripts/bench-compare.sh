#!/usr/bin/env bash
# Runs two revisions' benchmarks back to back, so a change that should
# cost nothing (a restructuring, a dependency trimmed) can be shown to be
# within noise: the same machine, the same load, old and new alternating
# round by round, the ratio new/old of each figure's median at the end.
# One revision's figures from another day say little on a shared machine.
#
#   scripts/bench-compare.sh [--quick] [--rounds N] [--benches "writer read replicate"]
#                            [--browser | --no-browser] OLD_REV NEW_REV
#
# --quick     each bench in a small mode, under a minute each here: writer
#             the reference workload only (DENDRO_BENCH_ONLY=reference,
#             its 3 runs), read `--quick --core --reps 7` (8 MB), replicate
#             `--quick --reps 3` (10 MB, 8 s of lag); the browser bench 3
#             runs on a 10 MB demo archive instead of 5 on 100 MB
# --rounds N  old then new, N times (default 3)
# --browser   also the viewer's first plot (scripts/bench-first-plot.mjs or
#             bench/browser/first-plot.mjs, whichever the revision has),
#             which builds each revision's wasm (scripts/build-wasm.sh) and
#             needs chromium; off by default
#
# Each revision is checked out (git worktree, detached) under
# ${CARGO_TARGET_DIR:-target}/compare/<rev>/src and built into its own
# target dir beside it, seeded with a copy of this checkout's
# target/release (and the first revision's, for the second) so that only
# the crate itself compiles. Outputs stay in .../compare/runs/. Build with
# CARGO_BUILD_JOBS set as the machine allows (it is passed through). The
# checkouts stay for the next run; `git worktree remove --force DIR` (or
# `git worktree prune` after deleting .../compare) drops them.
#
# On a loaded machine the quick figures of one revision against itself
# moved by up to 40% (docs/measurements/2026-12-07-wasm-size.md): read a
# ratio against that floor, or run without --quick and with more rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export PATH="$HOME/.cargo/bin:$PATH"

quick=0
rounds=3
benches="writer read replicate"
browser=0
revs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --rounds) rounds=$2; shift ;;
    --benches) benches=$2; shift ;;
    --browser) browser=1 ;;
    --no-browser) browser=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$repo/scripts/$(basename "$0")" | sed '$d'; exit 0 ;;
    -*) echo "bench-compare: unknown option $1" >&2; exit 2 ;;
    *) revs+=("$1") ;;
  esac
  shift
done
[ ${#revs[@]} -eq 2 ] || { echo "usage: $0 [--quick] [--rounds N] [--benches LIST] [--browser] OLD_REV NEW_REV" >&2; exit 2; }

say() { printf 'bench-compare: %s\n' "$*" >&2; }
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
base="$target/compare"
runs="$base/runs/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$runs"

# Checks a revision out and builds its benches (and, for --browser, its
# CLI and wasm); prints the directory the rest reads from.
prepare() {
  local rev=$1 seed=$2 sha dir
  sha=$(git rev-parse --short=10 "$rev^{commit}")
  dir="$base/$sha"
  if [ ! -d "$dir/src" ]; then
    git worktree add --detach "$dir/src" "$sha" >&2
  fi
  if [ ! -d "$dir/target/release" ] && [ -d "$seed/release" ]; then
    say "$rev: seeding $dir/target/release from $seed/release"
    mkdir -p "$dir/target"
    cp -a "$seed/release" "$dir/target/release"
  fi
  (
    cd "$dir/src"
    say "$rev ($sha): cargo bench --no-run"
    # shellcheck disable=SC2086
    CARGO_TARGET_DIR="$dir/target" cargo bench --no-run --message-format=json \
      $(printf -- '--bench %s ' $benches) >"$dir/build.json" 2>"$dir/build.log" \
      || { tail -20 "$dir/build.log" >&2; exit 1; }
    python3 - "$dir/build.json" "$dir" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]:
        with open(f"{sys.argv[2]}/bench-{m['target']['name']}", "w") as f:
            f.write(m["executable"])
EOF
    if [ "$browser" = 1 ]; then
      say "$rev ($sha): dendro CLI and wasm"
      CARGO_TARGET_DIR="$dir/target" cargo build --release --bin dendro 2>>"$dir/build.log"
      if [ ! -d "$dir/target/wasm32-unknown-unknown" ] && [ -d "$seed/wasm32-unknown-unknown" ]; then
        cp -a "$seed/wasm32-unknown-unknown" "$dir/target/"
        [ -d "$seed/wasm" ] && cp -a "$seed/wasm" "$dir/target/"
      fi
      ln -sfn "$repo/node_modules" node_modules
      CARGO_TARGET_DIR="$dir/target" bash scripts/build-wasm.sh 2>>"$dir/build.log"
    fi
  ) || exit 1
  echo "$dir"
}

old=$(prepare "${revs[0]}" "$target")
new=$(prepare "${revs[1]}" "$old/target")

archive=""
if [ "$browser" = 1 ]; then
  mb=$([ "$quick" = 1 ] && echo 10 || echo 100)
  archive="$base/demo$mb.dendro"
  if [ ! -f "$archive" ]; then
    say "writing $archive (dendro demo --size $mb, the old revision's CLI)"
    "$old/target/release/dendro" demo "$archive.partial" --size "$mb" >/dev/null
    mv "$archive.partial" "$archive"
  fi
fi

# Runs one bench of one revision; its stdout goes to OUT.
run() {
  local dir=$1 bench=$2 out=$3 args=() envs=()
  case "$bench" in
    writer) [ "$quick" = 1 ] && envs=(DENDRO_BENCH_ONLY=reference) ;;
    read) [ "$quick" = 1 ] && args=(--quick --core --reps 7) ;;
    replicate) [ "$quick" = 1 ] && args=(--quick --reps 3) ;;
  esac
  if [ "$bench" = first-plot ]; then
    # Wherever the revision keeps it (it moved to bench/browser/ in issue 30).
    local script
    for script in benches/browser/first-plot.mjs bench/browser/first-plot.mjs \
      scripts/bench-first-plot.mjs ""; do
      [ -z "$script" ] || [ -f "$dir/src/$script" ] && break
    done
    [ -n "$script" ] || { echo "no first-plot bench in $dir/src" >"$out.err"; return 1; }
    (cd "$dir/src" && node "$script" --runs "$([ "$quick" = 1 ] && echo 3 || echo 5)" \
      --archive "$archive" --stream cpu) >"$out" 2>"$out.err"
  else
    (cd "$dir/src" && env "${envs[@]}" "$(cat "$dir/bench-$bench")" "${args[@]}" --bench) \
      >"$out" 2>"$out.err"
  fi
}

list=$benches
[ "$browser" = 1 ] && list="$list first-plot"
for r in $(seq 1 "$rounds"); do
  for bench in $list; do
    for side in old new; do
      dir=$([ $side = old ] && echo "$old" || echo "$new")
      say "round $r/$rounds: $bench, $side (load $(cut -d' ' -f1-3 /proc/loadavg))"
      started=$(date +%s)
      run "$dir" "$bench" "$runs/$bench.$side.$r" || say "$bench ($side) failed: see $runs/$bench.$side.$r.err"
      say "  $(( $(date +%s) - started )) s"
    done
  done
done

# Every figure's median over the rounds, old and new, and new/old.
python3 - "$runs" "$rounds" "${revs[0]}" "${revs[1]}" $list <<'EOF'
import json, re, statistics, sys
runs, rounds, old_rev, new_rev, benches = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]

def figures(bench, text):
    """name -> (value, unit) from one run's stdout."""
    out = {}
    if bench == "writer":
        title = None
        for line in text.splitlines():
            m = re.match(r"(.*): median of \d+ runs", line)
            if m:
                title = m.group(1).split(",")[0].replace(" ", "_")
            m = re.match(r"\s+ticks/s\s+([\d.]+)", line)
            if m and title:
                out[f"{title}.ticks_per_s"] = (float(m.group(1)), "ticks/s")
            m = re.match(r"\s+CPU per tick\s+([\d.]+) ms", line)
            if m and title:
                out[f"{title}.cpu_ms_per_tick"] = (float(m.group(1)), "ms")
            m = re.match(r"seal latency, ([\d.]+) MiB segment: ([\d.]+) ms", line)
            if m:
                out[f"seal_latency_{m.group(1)}MiB"] = (float(m.group(2)), "ms")
    elif bench == "first-plot":
        for line in text.splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                for k in ("open", "describe", "schema", "preview", "exact", "total"):
                    out[f"first_plot.{k}"] = (float(row[k]), "ms")
    else:
        for line in text.splitlines():
            if line.startswith('{"figure"'):
                row = json.loads(line)
                out[row["figure"]] = (float(row["median"]), row["unit"])
    return out

print(f"# {old_rev} (old) vs {new_rev} (new): median over {rounds} alternating round(s)")
print("# rates (per s) are better higher, times (s, ms) better lower")
for bench in benches:
    per = {"old": {}, "new": {}}
    for side in per:
        for r in range(1, rounds + 1):
            try:
                text = open(f"{runs}/{bench}.{side}.{r}").read()
            except OSError:
                continue
            for name, (value, unit) in figures(bench, text).items():
                per[side].setdefault(name, ([], unit))[0].append(value)
    print(f"\n## {bench}")
    print(f"{'figure':<48} {'old':>12} {'new':>12} {'new/old':>8}  unit")
    for name in sorted(set(per["old"]) | set(per["new"])):
        o = per["old"].get(name)
        n = per["new"].get(name)
        om = statistics.median(o[0]) if o else float("nan")
        nm = statistics.median(n[0]) if n else float("nan")
        ratio = nm / om if o and n and om else float("nan")
        unit = (o or n)[1]
        print(f"{name:<48} {om:>12.4g} {nm:>12.4g} {ratio:>8.3f}  {unit}")
print(f"\nraw outputs: {runs}")
EOF

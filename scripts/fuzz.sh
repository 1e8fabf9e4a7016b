#!/usr/bin/env bash
# Fuzzes every parser for a bounded time (not part of CI).
#
#   bash scripts/fuzz.sh                 # every target, FUZZ_SECONDS each
#   bash scripts/fuzz.sh segment 600     # one target, 600 s
#   FUZZ_SECONDS=120 bash scripts/fuzz.sh
#
# Installs what it needs (nightly toolchain, cargo-fuzz) if missing, builds
# the seed corpora from the shared fixtures (../shared/fixtures, or
# $DENDRO_FIXTURES) and from tests/corpus/, runs the targets one at a time,
# and prints each one's executions. Findings land in fuzz/artifacts/<target>/:
# fix them, then keep the input under tests/corpus/<target>/, which
# tests/corpus.rs replays under plain `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

targets=(open_bytes verify segment describe envelope frames in_place)
if [[ $# -ge 1 ]]; then targets=("$1"); fi
seconds=${2:-${FUZZ_SECONDS:-180}}
fixtures=${DENDRO_FIXTURES:-$root/../shared/fixtures}

# Tools, idempotently.
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz
fi

# Seed corpora: libFuzzer writes new inputs into these folders, so they live
# under fuzz/corpus/ (ignored by git) and are filled afresh only where empty.
seed() {
  local target=$1 dir=fuzz/corpus/$1
  mkdir -p "$dir"
  if [[ -n $(ls -A "$dir") ]]; then return; fi
  if [[ -d tests/corpus/$target ]]; then cp tests/corpus/"$target"/* "$dir"/ 2>/dev/null || true; fi
  if [[ ! -d $fixtures ]]; then
    echo "fuzz.sh: no fixtures at $fixtures (set DENDRO_FIXTURES); seeding from tests/corpus only" >&2
    return
  fi
  case $target in
    open_bytes | verify | in_place)
      for f in "$fixtures"/*.dendro "$fixtures"/*.sqlite "$fixtures"/*.txt; do
        [[ -s $f ]] && cp "$f" "$dir/fixture_$(basename "$f")"
      done
      ;;
    segment)
      # Every segment payload of every fixture archive.
      python3 - "$fixtures" "$dir" <<'EOF'
import pathlib, sqlite3, sys
fixtures, out = map(pathlib.Path, sys.argv[1:])
for f in sorted(fixtures.glob("*.dendro")):
    try:
        db = sqlite3.connect(f"file:{f}?mode=ro&immutable=1", uri=True)
        rows = db.execute("SELECT source_id, stream, seq, bytes FROM segments").fetchall()
    except sqlite3.Error:
        continue
    for source, stream, seq, blob in rows:
        (out / f"fixture_{f.stem}_{source}_{stream}_{seq}").write_bytes(blob)
EOF
      ;;
    frames)
      for f in "$fixtures"/*.bin; do cp "$f" "$dir/fixture_$(basename "$f")"; done
      ;;
    describe | envelope)
      # Structured inputs: the kept corpus is the seed; libFuzzer finds
      # its way from there.
      ;;
  esac
}

echo "fuzz.sh: building the targets (nightly, no sanitizer)"
(cd fuzz && cargo +nightly fuzz build -s none)

declare -A runs
for target in "${targets[@]}"; do
  seed "$target"
  echo "fuzz.sh: $target for ${seconds}s from $(ls fuzz/corpus/"$target" | wc -l) inputs"
  log=fuzz/$target.log
  status=0
  # Whole files may be large; the structured targets read a program from
  # their input and go deeper with longer ones from the start.
  case $target in
    describe | envelope) lengths=(-max_len=4096 -len_control=0) ;;
    *) lengths=(-max_len=262144) ;;
  esac
  # FUZZ_ARGS: more libFuzzer flags, e.g. FUZZ_ARGS=-seed=1.
  # shellcheck disable=SC2086
  (cd fuzz && cargo +nightly fuzz run -s none "$target" corpus/"$target" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 "${lengths[@]}" \
    -print_final_stats=1 ${FUZZ_ARGS:-}) >"$log" 2>&1 || status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  size=$(du -sb fuzz/corpus/"$target" | cut -f1)
  found=$(ls fuzz/artifacts/"$target" 2>/dev/null | wc -l)
  runs[$target]="$execs executions, corpus $(ls fuzz/corpus/"$target" | wc -l) inputs ($size bytes), artifacts $found, exit $status"
  echo "fuzz.sh: $target: ${runs[$target]}"
  if [[ $status -ne 0 ]]; then tail -40 "$log"; fi
done

echo "fuzz.sh: summary (${seconds}s each)"
for target in "${targets[@]}"; do echo "  $target: ${runs[$target]}"; done

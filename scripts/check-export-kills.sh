#!/usr/bin/env bash
# Kills `dendro export` at random moments, a dozen times by default
# (KILLS=N for another count, SEED=n to replay one run), and checks after
# each that DuckDB reads the dataset as before the run or after it, never a
# mixture, and that the next export completes it
# (tests/rewrite/fleet_kill.rs; CI runs two kills). Needs DuckDB in
# ${CARGO_TARGET_DIR:-target}/venv (scripts/setup-test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${CARGO_TARGET_DIR:-target}/venv"
export DENDRO_PYTHON="$venv/bin/python"
export DENDRO_EXPORT_KILLS="${KILLS:-12}"
[ -n "${SEED:-}" ] && export DENDRO_EXPORT_KILL_SEED="$SEED"
exec cargo test --test rewrite -- fleet_kill --nocapture

#!/usr/bin/env bash
# Installs what the test suite (scripts/test.sh) needs beyond the build
# (scripts/setup.sh, run first): Debian's chromium and chromium-driver (the
# viewer's and the engine's browser tests), python3-venv when Python cannot
# make a virtual environment, rustup's clippy and rustfmt, cargo-machete
# (cargo install, into ~/.cargo), and DuckDB 2.0.0 in a virtual environment
# at ${CARGO_TARGET_DIR:-target}/venv (tests/rewrite/export_duckdb.rs runs
# it through DENDRO_PYTHON, which scripts/test.sh sets). Nothing goes into
# the system's Python. Idempotent.
#
#   scripts/setup-test.sh            install what is missing
#   scripts/setup-test.sh --dry-run  print what would be installed, change nothing
#
# Runs as any user: apt-get goes through sudo when not root.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "$@"
export PATH="$HOME/.cargo/bin:$PATH"
SETUP_NAME=setup-test
# shellcheck source=lib/install.sh
source scripts/lib/install.sh

need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
# Debian's python3 makes a venv only with python3-venv (ensurepip).
require python3 "install Debian's python3" \
  && { python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv); }
apt_install "${need_apt[@]}"

if require rustup "install Rust with rustup first"; then
  rustup component list --installed | grep -q '^clippy' || run rustup component add clippy
  rustup component list --installed | grep -q '^rustfmt' || run rustup component add rustfmt
fi

# Unused-dependency check: about 3 minutes of CPU to build.
if require cargo "install Rust with rustup first"; then
  if ! cargo-machete --version 2>/dev/null | grep -qF "0.9.2"; then
    run cargo install cargo-machete --version 0.9.2 --locked
  fi
fi

# DuckDB reads `dendro export` in tests/rewrite/export_duckdb.rs.
venv="${CARGO_TARGET_DIR:-target}/venv"
if ! "$venv/bin/python" -c 'import duckdb' 2>/dev/null; then
  [ -x "$venv/bin/python" ] || run python3 -m venv "$venv"
  run "$venv/bin/python" -m pip install --quiet --disable-pip-version-check duckdb==2.0.0
fi

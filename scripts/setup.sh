#!/usr/bin/env bash
# Installs what a fresh Debian machine with Rust and Node lacks for building
# and testing dendro. Idempotent: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

need_apt=()
command -v clang >/dev/null || need_apt+=(clang)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

rustup target list --installed | grep -qx wasm32-unknown-unknown \
  || rustup target add wasm32-unknown-unknown
rustup component list --installed | grep -q '^clippy' || rustup component add clippy
rustup component list --installed | grep -q '^rustfmt' || rustup component add rustfmt

# wasm-bindgen's CLI must match the crate pinned in Cargo.toml exactly.
bindgen_version=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' Cargo.toml | head -n1)
[ -n "$bindgen_version" ] || { echo "setup: no wasm-bindgen = \"=x.y.z\" pin in Cargo.toml" >&2; exit 1; }
if ! wasm-bindgen --version 2>/dev/null | grep -qF "$bindgen_version"; then
  # Not --locked: its lock file wants a crate version the registry lacks.
  cargo install wasm-bindgen-cli --version "$bindgen_version"
fi
if ! wasm-pack --version 2>/dev/null | grep -qF "0.15.1"; then
  cargo install wasm-pack --version 0.15.1
fi

# Unused-dependency check (scripts/test.sh): about 3 minutes of CPU to build.
if ! cargo-machete --version 2>/dev/null | grep -qF "0.9.2"; then
  cargo install cargo-machete --version 0.9.2 --locked
fi

# DuckDB reads `dendro export` in tests/rewrite/export_duckdb.rs.
if ! python3 -c 'import duckdb' 2>/dev/null; then
  python3 -m pip install --quiet duckdb==2.0.0
fi

if [ -f package-lock.json ]; then
  [ -d node_modules ] && npm ls --depth=0 >/dev/null 2>&1 || npm ci --no-audit --no-fund
fi

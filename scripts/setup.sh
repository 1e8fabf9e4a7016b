#!/usr/bin/env bash
# Installs what a fresh Debian machine with Rust (rustup) and Node lacks for
# building dendro and its viewer: Debian's clang (SQLite and zstd compiled
# for wasm32), the wasm32-unknown-unknown target, wasm-bindgen-cli and
# wasm-pack (cargo install, into ~/.cargo), and the npm packages of the
# build (node_modules). Nothing of the test suite: scripts/setup-test.sh
# adds that. Idempotent: each step is skipped when already done.
#
#   scripts/setup.sh            install what is missing
#   scripts/setup.sh --dry-run  print what would be installed, change nothing
#
# Runs as any user: apt-get goes through sudo when not root.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
SETUP_NAME=setup
# shellcheck source=lib/install.sh
source scripts/lib/install.sh

need_apt=()
command -v clang >/dev/null || need_apt+=(clang)
apt_install "${need_apt[@]}"

if require rustup "install Rust with rustup first"; then
  rustup target list --installed | grep -qx wasm32-unknown-unknown \
    || run rustup target add wasm32-unknown-unknown
fi

# wasm-bindgen's CLI must match the crate pinned in Cargo.toml exactly.
bindgen_version=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' Cargo.toml | head -n1)
[ -n "$bindgen_version" ] || { echo "setup: no wasm-bindgen = \"=x.y.z\" pin in Cargo.toml" >&2; exit 1; }
if require cargo "install Rust with rustup first"; then
  if ! wasm-bindgen --version 2>/dev/null | grep -qF "$bindgen_version"; then
    # Not --locked: its lock file wants a crate version the registry lacks.
    run cargo install wasm-bindgen-cli --version "$bindgen_version"
  fi
  if ! wasm-pack --version 2>/dev/null | grep -qF "0.15.1"; then
    run cargo install wasm-pack --version 0.15.1
  fi
fi

if [ -f package-lock.json ] && require npm "install Node.js and npm first"; then
  if ! { [ -d node_modules ] && npm ls --depth=0 >/dev/null 2>&1; }; then
    run npm ci --no-audit --no-fund
  fi
fi

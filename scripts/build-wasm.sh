#!/usr/bin/env bash
# Builds the browser engine (the reader half compiled to wasm32) into
# www/pkg with wasm-pack (--target web, out-name dendro), installing what a
# fresh machine lacks first: the wasm32 target, clang (SQLite and zstd are
# C), wasm-bindgen-cli at the version Cargo.toml pins, and wasm-pack.
# Idempotent; a second run with nothing changed takes seconds.
#
#   scripts/build-wasm.sh          release build, size-tuned, wasm-opt -Oz
#   scripts/build-wasm.sh --dev    debug build, no wasm-opt (fast, for tests)
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_PACK_VERSION=0.15.1
# The CLI must be exactly the version of the wasm-bindgen crate.
WASM_BINDGEN_VERSION=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' Cargo.toml | head -n1)
if [ -z "$WASM_BINDGEN_VERSION" ]; then
  echo "build-wasm: no wasm-bindgen = \"=x.y.z\" pin found in Cargo.toml" >&2
  exit 1
fi

profile=wasm
case "${1:-}" in
  --dev) profile=dev ;;
  "") ;;
  *) echo "usage: $0 [--dev]" >&2; exit 2 ;;
esac

say() { printf 'build-wasm: %s\n' "$*" >&2; }
export PATH="$HOME/.cargo/bin:$PATH"

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if ! command -v clang >/dev/null 2>&1; then
  say "installing clang (SQLite and zstd are compiled from C for wasm32)"
  sudo_=""
  [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq
  $sudo_ apt-get install -y --no-install-recommends clang
fi

if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  # Not --locked: its lock file wants a crate version the registry lacks.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi

if [ "$(wasm-pack --version 2>/dev/null)" != "wasm-pack $WASM_PACK_VERSION" ]; then
  say "installing wasm-pack $WASM_PACK_VERSION"
  cargo install wasm-pack --version "$WASM_PACK_VERSION"
fi

# SQLite features the reader never uses (full-text search, R-trees,
# sessions, debugging virtual tables): about 190 KB of wasm.
export SQLITE_WASM_RS_FLAGS="-USQLITE_ENABLE_FTS5 -USQLITE_ENABLE_RTREE -USQLITE_ENABLE_SESSION \
-USQLITE_ENABLE_PREUPDATE_HOOK -USQLITE_ENABLE_DBSTAT_VTAB -USQLITE_ENABLE_DBPAGE_VTAB \
-USQLITE_ENABLE_BYTECODE_VTAB -USQLITE_ENABLE_STMTVTAB -USQLITE_ENABLE_UNLOCK_NOTIFY \
-USQLITE_ENABLE_COLUMN_METADATA"

# wasm-pack's own wasm-opt step is off (--no-opt): it would pick up any
# wasm-opt on PATH, and Debian's (binaryen 108) emits a module that fails
# to load. The npm binaryen package's wasm-opt runs below instead.
if [ "$profile" = dev ]; then
  wasm-pack build --target web --out-dir www/pkg --out-name dendro --dev --no-opt . --no-default-features
  exit 0
fi
wasm-pack build --target web --out-dir www/pkg --out-name dendro --profile wasm --no-opt . --no-default-features

wasm=www/pkg/dendro_bg.wasm
wasm_opt=node_modules/.bin/wasm-opt
if [ ! -x "$wasm_opt" ]; then
  say "installing npm dev dependencies (binaryen's wasm-opt)"
  npm install --no-audit --no-fund
fi
# wasm-opt -Oz takes a while on a module this size: keep its output by the
# hash of its input, so an unchanged build does not redo it.
cache="${CARGO_TARGET_DIR:-target}/wasm-opt-cache"
mkdir -p "$cache"
key=$(sha256sum "$wasm" | cut -c1-32)
if [ ! -f "$cache/$key.wasm" ]; then
  say "wasm-opt -Oz ($(du -k "$wasm" | cut -f1) KB in)"
  "$wasm_opt" -Oz \
    --enable-bulk-memory --enable-mutable-globals --enable-nontrapping-float-to-int \
    --enable-sign-ext --enable-reference-types --enable-multivalue \
    "$wasm" -o "$cache/$key.tmp.wasm"
  mv "$cache/$key.tmp.wasm" "$cache/$key.wasm"
fi
cp "$cache/$key.wasm" "$wasm"
say "www/pkg/dendro_bg.wasm: $(du -k "$wasm" | cut -f1) KB, $(gzip -9c "$wasm" | wc -c | awk '{printf "%d", $1/1024}') KB gzipped"

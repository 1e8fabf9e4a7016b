#!/usr/bin/env bash
# Builds the browser engine (the reader half compiled to wasm32) into
# www/pkg with wasm-pack (--target web, out-name dendro), after
# scripts/setup.sh has installed what a fresh machine lacks.
# Idempotent; a second run with nothing changed takes seconds.
#
#   scripts/build-wasm.sh               release build, size-tuned, wasm-opt -Oz
#   scripts/build-wasm.sh --dev         debug build, no wasm-opt (fast)
#   scripts/build-wasm.sh --test-hooks  with the hooks the engine's tests and
#                                       benchmarks call (trap on purpose, a
#                                       bare decode); never what a user is served
set -euo pipefail
cd "$(dirname "$0")/.."

profile=wasm
features=()
for arg in "$@"; do
  case "$arg" in
    --dev) profile=dev ;;
    --test-hooks) features=(--features test-hooks) ;;
    *) echo "usage: $0 [--dev] [--test-hooks]" >&2; exit 2 ;;
  esac
done

say() { printf 'build-wasm: %s\n' "$*" >&2; }
export PATH="$HOME/.cargo/bin:$PATH"

# The toolchain (wasm32 target, clang, wasm-bindgen-cli at the pinned
# version, wasm-pack, npm packages including binaryen) is set up in one
# place; it skips whatever is already there.
bash scripts/setup.sh

# How SQLite and zstd are compiled for wasm32 (what the reader leaves out)
# is in .cargo/config.toml, which `wasm-pack test` reads too.

# wasm-pack's own wasm-opt step is off (--no-opt): it would pick up any
# wasm-opt on PATH, and Debian's (binaryen 108) emits a module that fails
# to load. The npm binaryen package's wasm-opt runs below instead.
if [ "$profile" = dev ]; then
  wasm-pack build --target web --out-dir www/pkg --out-name dendro --dev --no-opt . --no-default-features "${features[@]}"
  exit 0
fi
wasm-pack build --target web --out-dir www/pkg --out-name dendro --profile wasm --no-opt . --no-default-features "${features[@]}"

wasm=www/pkg/dendro_bg.wasm
wasm_opt=node_modules/.bin/wasm-opt
# -Oz, and no names or producers sections (the release module carries no
# debug info to strip; the flags keep it so).
opt_flags=(-Oz --strip-debug --strip-producers
  --enable-bulk-memory --enable-mutable-globals --enable-nontrapping-float-to-int
  --enable-sign-ext --enable-reference-types --enable-multivalue)
# wasm-opt -Oz takes a while on a module this size: keep its output by the
# hash of its input and flags, so an unchanged build does not redo it.
cache="${CARGO_TARGET_DIR:-target}/wasm-opt-cache"
mkdir -p "$cache"
key=$({ sha256sum "$wasm"; echo "${opt_flags[*]}"; } | sha256sum | cut -c1-32)
if [ ! -f "$cache/$key.wasm" ]; then
  say "wasm-opt -Oz ($(du -k "$wasm" | cut -f1) KB in)"
  "$wasm_opt" "${opt_flags[@]}" "$wasm" -o "$cache/$key.tmp.wasm"
  mv "$cache/$key.tmp.wasm" "$cache/$key.wasm"
fi
cp "$cache/$key.wasm" "$wasm"
say "www/pkg/dendro_bg.wasm: $(du -k "$wasm" | cut -f1) KB, $(gzip -9c "$wasm" | wc -c) bytes gzipped (gzip -9)"

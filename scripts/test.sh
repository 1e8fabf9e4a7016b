#!/usr/bin/env bash
# The whole test suite, as CI runs it: lints, native tests in both feature
# configurations, the wasm32 reader build, the wasm engine under Node and
# headless Chromium, and the viewer in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-test.sh
export PATH="$HOME/.cargo/bin:$PATH"

# The Python that tests/rewrite/export_duckdb.rs runs: the venv
# setup-test.sh made, with DuckDB in it.
target_dir=${CARGO_TARGET_DIR:-target}
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
export DENDRO_PYTHON="$target_dir/venv/bin/python"

step() { printf '\n== %s\n' "$*"; }

step "format"
cargo fmt --all -- --check

# The layout DESIGN.md describes: no import back up the layers (one at
# most), no two files importing each other, no file past 900 lines.
step "structure"
python3 scripts/structure-map.py --check

step "unused dependencies"
cargo machete

step "clippy (default features)"
cargo clippy --all-targets -- -D warnings
step "clippy (reader build)"
cargo clippy --no-default-features --lib --tests -- -D warnings

# Tests that cannot do their job on this machine say so here (see
# tests/common/mod.rs, skip) instead of passing quietly.
rm -rf "$target_dir/tmp/skipped"
step "tests (default features)"
cargo test
step "tests (reader build)"
cargo test --no-default-features --lib --tests

step "reader build for wasm32"
cargo check --target wasm32-unknown-unknown --no-default-features --lib

step "wasm engine: Node, headless Chrome, and the worker client"
bash scripts/test-wasm.sh

# test-wasm.sh left the engine with its test hooks in www/pkg: the viewer
# is tested, packed and left in www/dist (what `dendro serve` serves) as a
# user gets it, from the release build without them.
step "viewer: typecheck, build, headless Chromium"
bash scripts/build-wasm.sh
npm run typecheck
npm run build:www
# The page tests start `dendro serve` with its test hook (follow.test.mjs).
cargo build --bin dendro --features test-hooks
# So do the accelerator's limits (a costly window, a burst held up).
cargo test --features test-hooks --test serve_envelope
# The hooks are exports of the module and wrapped by its glue in www/pkg,
# which www/dist was built from (the page's own code names them in any
# build, so its bundles tell nothing).
if grep -qF __crashForTests www/pkg/dendro.js || grep -qaF __crashForTests www/dist/dendro_bg.wasm; then
  echo "test: www/dist was built from an engine with its test hooks" >&2
  exit 1
fi
npm run test:www

# The npm package as it would ship, installed and bundled in a scratch project.
step "npm package: packed, installed, bundled by esbuild and Vite, opened in Chromium"
npm run pack:package
npm run test:package

step "skipped tests"
if compgen -G "$target_dir/tmp/skipped/*.txt" >/dev/null; then
  echo "$(ls "$target_dir"/tmp/skipped/*.txt | wc -l) test(s) could not run here:"
  cat "$target_dir"/tmp/skipped/*.txt
else
  echo "none"
fi

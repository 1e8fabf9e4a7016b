#!/usr/bin/env bash
# The whole test suite, as CI runs it: lints, native tests in both feature
# configurations, the wasm32 reader build, the wasm engine under Node and
# headless Chromium, and the viewer in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

step() { printf '\n== %s\n' "$*"; }

step "format"
cargo fmt --all -- --check

step "unused dependencies"
cargo machete

step "clippy (default features)"
cargo clippy --all-targets -- -D warnings
step "clippy (reader build)"
cargo clippy --no-default-features --lib --tests -- -D warnings

# Tests that cannot do their job on this machine say so here (see
# tests/common/mod.rs, skip) instead of passing quietly.
rm -rf target/tmp/skipped
step "tests (default features)"
cargo test
step "tests (reader build)"
cargo test --no-default-features --lib --tests

step "reader build for wasm32"
cargo check --target wasm32-unknown-unknown --no-default-features --lib

step "wasm engine: Node, headless Chrome, and the worker client"
bash scripts/test-wasm.sh

step "viewer: typecheck, build, headless Chromium"
npm run typecheck
npm run build:www
npm run test:www

# The npm package as it would ship (no test hooks: build-wasm.sh rebuilds
# the release wasm without them), installed and bundled in a scratch project.
step "npm package: packed, installed, bundled by esbuild and Vite, opened in Chromium"
bash scripts/build-wasm.sh
npm run pack:package
npm run test:package

step "skipped tests"
if compgen -G "target/tmp/skipped/*.txt" >/dev/null; then
  echo "$(ls target/tmp/skipped/*.txt | wc -l) test(s) could not run here:"
  cat target/tmp/skipped/*.txt
else
  echo "none"
fi

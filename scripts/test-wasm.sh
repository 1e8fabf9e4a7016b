#!/usr/bin/env bash
# The browser engine's tests, as CI runs them:
#   1. the Rust cases (tests/web/cases.rs) compiled to wasm32 under Node,
#   2. the same cases in headless Chrome (tests/web_browser.rs sets
#      run_in_browser: without it they would be skipped with exit code 0),
#   3. the TypeScript client and worker end to end in headless Chromium.
# A run that passes fewer cases than the file declares fails, so a silent
# skip cannot pass for success.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

# The tests call the engine's test hooks (a trap on purpose, reductions
# of hand-made batches); the viewer a user is served is built without them.
bash scripts/build-wasm.sh --test-hooks

expected=$(grep -c '^#\[wasm_bindgen_test\]' tests/web/cases.rs)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

check() {
  local what=$1 passed
  passed=$(sed -n 's/.*test result: ok\. \([0-9][0-9]*\) passed.*/\1/p' "$log" | tail -n1)
  if [ "${passed:-0}" -lt "$expected" ]; then
    echo "test-wasm: $what passed ${passed:-0} of $expected cases" >&2
    exit 1
  fi
  echo "test-wasm: $what: $passed passed" >&2
}

wasm-pack test --node -- --no-default-features --features test-hooks --test web 2>&1 | tee "$log"
check "Node"

wasm-pack test --headless --chrome --chromedriver "${CHROMEDRIVER:-/usr/bin/chromedriver}" \
  -- --no-default-features --features test-hooks --test web_browser 2>&1 | tee "$log"
check "Chrome"

node scripts/test-engine.mjs

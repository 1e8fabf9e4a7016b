#!/usr/bin/env bash
# The main job: build the viewer, write a demo archive, and serve both on
# 127.0.0.1 (PORT, default 8080; PORT=0 picks a free one). Stop it with
# Ctrl-C. Installs only what the build needs (scripts/setup.sh, through
# build-wasm.sh); honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/build-wasm.sh   # runs scripts/setup.sh first
npm run build:www
cargo build --release --bin dendro
target_dir=${CARGO_TARGET_DIR:-target}
bin="$target_dir/release/dendro"
demo="$target_dir/demo.dendro"
# An archive written by an older build may lack what this one shows: write
# it again whenever the binary is newer than it.
if [ -f "$demo" ] && [ "$bin" -nt "$demo" ]; then
  echo "demo: $bin is newer than $demo: writing it again" >&2
  rm -f "$demo" "$demo-wal" "$demo-shm"
fi
if [ -f "$demo" ]; then
  echo "demo: reusing $demo (delete it to write a new one)" >&2
else
  "$bin" demo "$demo"
fi
# A release binary does not look for the viewer in the checkout: name it.
exec "$bin" serve "$demo" --root www/dist --port "${PORT:-8080}"

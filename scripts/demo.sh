#!/usr/bin/env bash
# The main job: build the viewer, write a demo archive, and serve both on
# 127.0.0.1 (PORT, default 8080). Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wasm.sh   # runs scripts/setup.sh first
npm run build:www
cargo build --release --bin dendro
demo=target/demo.dendro
[ -f "$demo" ] || target/release/dendro demo "$demo"
# A release binary does not look for the viewer in the checkout: name it.
exec target/release/dendro serve "$demo" --root www/dist --port "${PORT:-8080}"

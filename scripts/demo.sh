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
exec target/release/dendro serve "$demo" --port "${PORT:-8080}"

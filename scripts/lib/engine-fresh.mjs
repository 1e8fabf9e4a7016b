// Run before `tsc` (npm run typecheck): the viewer's types of the engine
// come from www/pkg, which scripts/build-wasm.sh generates from src/wasm.
// A missing or older www/pkg makes tsc report errors in code that is
// right (a call with an argument the old engine lacked), so say so first.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const declarations = "www/pkg/dendro.d.ts";
const rebuild = "rebuild it with `bash scripts/build-wasm.sh --dev` (or `npm run build:wasm`)";

function newestUnder(dir) {
  let newest = { path: null, mtime: 0 };
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const found = entry.isDirectory() ? newestUnder(path) : { path, mtime: statSync(path).mtimeMs };
    if (found.mtime > newest.mtime) newest = found;
  }
  return newest;
}

let built;
try {
  built = statSync(declarations).mtimeMs;
} catch {
  console.error(`typecheck: ${declarations} is missing: the engine has not been built; ${rebuild}.`);
  process.exit(1);
}
const source = newestUnder("src/wasm");
if (source.mtime > built) {
  console.error(`typecheck: ${declarations} is older than ${source.path}: the engine's types are stale; ${rebuild}.`);
  process.exit(1);
}

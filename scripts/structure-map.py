#!/usr/bin/env python3
"""The crate's structure map: which layer imports which, and which files
import each other in a circle.

Layers are the top-level modules of `src/`, ordered from the ground up in
LAYERS below. An arrow from a lower layer to a higher one runs "back up";
the issue that laid the house out allows at most one, and no circle
between files. Run it with no argument for the report; `--check` fails when the limits
are broken: more than one back arrow, any circle, a file past
`--max-lines N` (default 900 with --check), or the wasm glue past its own
limits (`src/wasm/mod.rs` under 400 lines, every file there under 600).
"""
import os
import re
import sys
from collections import defaultdict

# Ground first. A file may use anything at or below its own layer.
LAYERS = [
    "format", "error", "reserved",
    "pager", "container", "catalog", "segment",
    "read", "verify",
    "write", "replicate", "rewrite", "demo",
    "wasm",
]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def rust_files():
    for base, _dirs, names in os.walk(ROOT):
        inside = base[len(ROOT):]
        if (os.sep + "bin") in inside or (os.sep + "tests") in inside:
            continue
        for name in names:
            # Unit tests may reach anywhere; they are not the structure.
            if name.endswith(".rs") and name != "tests.rs":
                yield os.path.relpath(os.path.join(base, name), ROOT)


def module_path(rel):
    """src-relative file -> module path list (lib.rs -> [])."""
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return parts


FILES = {}


def file_for(mod):
    """The file that defines the longest prefix of a module path."""
    for n in range(len(mod), 0, -1):
        key = tuple(mod[:n])
        if key in FILES:
            return FILES[key]
    return None


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand_use(tree):
    """Expand a `use` tree (without the keyword) to flat paths."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, s):
        i = s.find("{")
        if i < 0:
            for item in split_top(s):
                out.append(prefix + item)
            return
        head = s[:i]
        body = s[i + 1:matching(s, i)]
        for item in split_top(body):
            walk(prefix + head, item)

    walk("", tree)
    return out


def matching(s, i):
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(s)


def split_top(s):
    items, depth, cur = [], 0, ""
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        items.append(cur)
    return items


def resolve(path, here):
    segs = [p for p in path.split("::") if p]
    if not segs:
        return None
    if segs[0] == "crate":
        return segs[1:]
    if segs[0] == "super":
        base = list(here)
        while segs and segs[0] == "super":
            base = base[:-1]
            segs = segs[1:]
        return base + segs
    if segs[0] == "self":
        return list(here) + segs[1:]
    return None


def main():
    for rel in rust_files():
        FILES[tuple(module_path(rel))] = rel
    # A file that is `foo.rs` beside `foo/` is the module `foo`.
    edges = defaultdict(set)  # file -> files
    for mod, rel in FILES.items():
        text = strip_comments(open(os.path.join(ROOT, rel)).read())
        # Test modules are part of the file but not of the structure.
        cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
        if cut:
            text = text[:cut.start()]
        here_mod = list(mod)
        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            paths += expand_use(m.group(1))
        paths += re.findall(r"\b((?:crate|super)(?:::\w+)+)", text)
        for p in paths:
            target = resolve(p.split(" as ")[0], here_mod)
            if not target:
                continue
            f = file_for(target)
            if f and f != rel:
                edges[rel].add(f)

    def layer(rel):
        top = module_path(rel)
        return top[0] if top else "lib"

    back = []
    for a, targets in edges.items():
        la = layer(a)
        if la not in LAYERS:
            continue
        for b in targets:
            lb = layer(b)
            if lb in LAYERS and LAYERS.index(lb) > LAYERS.index(la):
                back.append((a, b))
    circles = sorted({tuple(sorted((a, b))) for a, ts in edges.items()
                      for b in ts if a in edges.get(b, ())})
    # Longer circles between layers.
    lg = defaultdict(set)
    for a, ts in edges.items():
        for b in ts:
            if layer(a) != layer(b):
                lg[layer(a)].add(layer(b))

    print(f"files: {len(FILES)}")
    print(f"arrows back up the layers: {len(back)}")
    for a, b in sorted(back):
        print(f"  {a} -> {b}")
    print(f"import circles between two files: {len(circles)}")
    for a, b in circles:
        print(f"  {a} <-> {b}")
    print("layers and what they import:")
    for la in LAYERS + ["lib"]:
        if la in lg:
            print(f"  {la}: {', '.join(sorted(lg[la]))}")
    long_files = []
    limit = 900 if "--check" in sys.argv else None
    if "--max-lines" in sys.argv:
        limit = int(sys.argv[sys.argv.index("--max-lines") + 1])
    for base, _d, names in os.walk(ROOT):
        for name in names:
            if name.endswith(".rs"):
                p = os.path.join(base, name)
                n = sum(1 for _ in open(p))
                if limit and n > limit:
                    long_files.append((n, os.path.relpath(p, ROOT)))
    if limit:
        print(f"files over {limit} lines: {len(long_files)}")
        for n, p in sorted(long_files, reverse=True):
            print(f"  {p}: {n}")
    glue = []
    wasm = os.path.join(ROOT, "wasm")
    for name in sorted(os.listdir(wasm)) if os.path.isdir(wasm) else []:
        if name.endswith(".rs"):
            n = sum(1 for _ in open(os.path.join(wasm, name)))
            cap = 400 if name == "mod.rs" else 600
            if n >= cap:
                glue.append(f"wasm/{name}: {n} lines (under {cap} wanted)")
    print(f"wasm glue past its limits: {len(glue)}")
    for line in glue:
        print(f"  {line}")
    if "--check" in sys.argv:
        if len(back) > 1 or circles or long_files or glue:
            sys.exit(1)


if __name__ == "__main__":
    main()

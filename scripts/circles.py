#!/usr/bin/env python3
"""Find file circles in Rust crates: files that import each other, directly or round a ring.

    scripts/circles.py CRATE_SRC [CRATE_SRC ...] [--under PREFIX]

Each `.rs` file is a module; a path it names (`use crate::a::b::C`, `super::x`, `self::y`, or
`crate::a::f()` inline) is an edge to the file of the deepest module on that path, and a name a
module re-exports (`pub use child::C`) is followed to the file that defines it, so a `mod.rs` that
only gathers its children's names is not a hub of false circles. A child's `mod` declaration in
its parent is not an edge. Prints each circle (a strongly connected set of two or more files) and
exits 1 when there is one; `--under exec` looks only at files below `src/exec`.
"""

import re
import sys
from pathlib import Path

USE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M | re.S)
INLINE = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
COMMENT = re.compile(r"//[^\n]*")


def modules(src: Path) -> dict[tuple[str, ...], Path]:
    """Module path -> file, for every `.rs` below `src` (lib.rs and main.rs are the root)."""
    found = {}
    for f in src.rglob("*.rs"):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts.pop()
        found[tuple(parts)] = f
    return found


def expand(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` -> [`a::b`, `a::c::d`, `a::c::e`] (an `as` rename dropped)."""
    # `as` is a word only while the spaces are there: `Pass` and `Class` keep their `as`.
    tree = re.sub(r"\s+as\s+", "@", tree.strip())
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree.split("@")[0]]
    head, rest = tree.split("{", 1)
    body = rest[: rest.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur:
        parts.append(cur)
    out = []
    for p in parts:
        if p == "self":
            out.append(head.rstrip(":"))
        elif p:
            out.extend(head + q for q in expand(p))
    return out


def absolute(module: tuple[str, ...], path: str) -> tuple[str, ...] | None:
    """A `crate::`, `super::` or `self::` path from `module`, made absolute; None for others."""
    segs = [s for s in re.sub(r"\bas\b.*$", "", path).split("::") if s]
    if not segs or segs[0] not in ("crate", "super", "self"):
        return None
    base = list(module)
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    while segs and segs[0] in ("super", "self"):
        if segs[0] == "super":
            if not base:
                return None
            base.pop()
        segs = segs[1:]
    return tuple(base + segs)


def main() -> int:
    args = sys.argv[1:]
    under = None
    if "--under" in args:
        i = args.index("--under")
        under = tuple(args[i + 1].split("/"))
        del args[i : i + 2]
    failed = False
    for src in map(Path, args):
        mods = modules(src)
        texts = {m: COMMENT.sub("", f.read_text()) for m, f in mods.items()}
        # A module's re-exports: name -> the absolute path it names.
        reexports: dict[tuple[str, ...], dict[str, tuple[str, ...]]] = {}
        for m, text in texts.items():
            for vis, tree in USE.findall(text):
                if not vis:
                    continue
                for p in expand(tree):
                    a = absolute(m, p)
                    if a:
                        reexports.setdefault(m, {})[a[-1]] = a

        def owner(path: tuple[str, ...], seen: int = 0) -> tuple[str, ...]:
            """The module file that defines what `path` names."""
            for n in range(len(path), -1, -1):
                if path[:n] in mods:
                    m, rest = path[:n], path[n:]
                    if rest and seen < 8 and rest[0] in reexports.get(m, {}):
                        target = reexports[m][rest[0]]
                        if target != path:
                            return owner(target + rest[1:], seen + 1)
                    return m
            return ()

        edges: dict[tuple[str, ...], set[tuple[str, ...]]] = {m: set() for m in mods}
        for m, text in texts.items():
            paths = [p for _, tree in USE.findall(text) for p in expand(tree)]
            paths += INLINE.findall(text)
            for p in paths:
                a = absolute(m, p)
                if a is None:
                    continue
                o = owner(a)
                # Naming a child module is how a parent declares and re-exports it.
                if o != m and o[: len(m)] != m:
                    edges[m].add(o)
        for ring in rings(edges):
            files = sorted(str(mods[m].relative_to(src)) for m in ring)
            if under and not all(
                mods[m].relative_to(src).parts[: len(under)] == under for m in ring
            ):
                continue
            failed = True
            print(f"{src}: file circle: {' <-> '.join(files)}")
    return 1 if failed else 0


def rings(edges):
    """Strongly connected sets of two or more nodes (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(edges.get(nxt, ()))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                ring = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    ring.append(w)
                    if w == node:
                        break
                if len(ring) > 1:
                    out.append(ring)
    return out


if __name__ == "__main__":
    sys.exit(main())

"""The structure's figures, for the notes of a refactoring: run before and after.

    python bench/structure.py

Prints the largest modules and functions, the import floors inside ``klogtool/log`` (the
longest chain of imports between its packages, and between its modules), and how many modules
name ``max_batch_bytes`` (the modules a new read bound had to be threaded through before
``ReadLimits``) and how many functions default a bound. ``duplicates --most 200`` gives the
duplicated pairs.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "klogtool"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {_module(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _functions(tree: ast.AST) -> list[tuple[int, str]]:
    return [
        ((node.end_lineno or node.lineno) - node.lineno + 1, node.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _imports(tree: ast.AST, known: set[str]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found |= {n for n in names if n in known}
    return found


def _defaulted(tree: ast.AST, name: str) -> int:
    """How many functions take a parameter ``name`` with a default value."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            positional = [*a.posonlyargs, *a.args]
            with_default = positional[len(positional) - len(a.defaults) :]
            with_default += [
                k for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None
            ]
            count += any(arg.arg == name for arg in with_default)
    return count


def _group(module: str) -> str:
    """``klogtool.log.read.diff`` → ``log/read``; a module at the top of log/ → ``log/*.py``."""
    parts = module.split(".")
    if len(parts) > 3 and parts[1] == "log":
        return f"log/{parts[2]}"
    return "log/*.py" if parts[1:2] == ["log"] else parts[1]


def _longest(graph: dict[str, set[str]]) -> list[str]:
    @functools.cache
    def chain(node: str, seen: frozenset[str] = frozenset()) -> tuple[str, ...]:
        best: tuple[str, ...] = ()
        for nxt in graph.get(node, ()):
            if nxt not in seen and nxt != node:
                c = chain(nxt, seen | {node})
                best = max(best, c, key=len)
        return (node, *best)

    return list(max((chain(n) for n in graph), key=len, default=()))


def main() -> int:
    sources = _sources()
    trees = {m: ast.parse(p.read_text(), str(p)) for m, p in sources.items()}
    lines = sorted(((len(p.read_text().splitlines()), m) for m, p in sources.items()), reverse=True)
    print("largest modules (lines):")
    for n, m in lines[:8]:
        print(f"  {n:5} {m}")
    funcs = sorted(
        ((n, f"{m}.{f}") for m, t in trees.items() for n, f in _functions(t)), reverse=True
    )
    print("largest functions (lines):")
    for n, f in funcs[:8]:
        print(f"  {n:5} {f}")

    known = set(sources)
    log = {m for m in sources if m.startswith("klogtool.log")}
    deps = {m: _imports(trees[m], known) for m in sources}
    modules = {m: {d for d in deps[m] if d in log} for m in log}
    groups: dict[str, set[str]] = {}
    for m in log:
        groups.setdefault(_group(m), set()).update(
            _group(d) for d in modules[m] if _group(d) != _group(m)
        )
    chain = _longest(groups)
    print(f"import floors between log/ packages: {len(chain)} ({' → '.join(chain)})")
    chain = _longest(modules)
    print(f"import floors between log/ modules: {len(chain)} ({' → '.join(c[9:] for c in chain)})")
    outside = sorted(
        f"{m} → {d}"
        for m in log
        for d in deps[m]
        if d.split(".")[1:2] in (["commands"], ["output"], ["cli"], ["spark"], ["manpages"])
    )
    print(f"log/ imports of commands, output, cli, spark, manpages: {len(outside)}")
    for line in outside:
        print(f"  {line}")

    pattern = re.compile(r"\bmax_batch_bytes\b")
    naming = [m for m, p in sources.items() if pattern.search(p.read_text())]
    outside = [m for m in naming if not m.startswith("klogtool.formats")]
    print(f"modules naming max_batch_bytes: {len(naming)} ({len(outside)} outside formats)")
    for bound in ("max_batch_bytes", "limits"):
        log_defaults = sum(_defaulted(trees[m], bound) for m in log)
        all_defaults = sum(_defaulted(t, bound) for t in trees.values())
        print(f"functions defaulting {bound}: {all_defaults} ({log_defaults} in log/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The seam to the native engine (``klogtool._native``, built from ``native/``):

- ``klogtool/formats/engine.py`` is the one module that imports it; the adapters beside their
  python twins (``log/rewrite/native_clean``, ``log/read/native_render``,
  ``log/export/native_columns``) reach it only through ``engine.native_module()``, and no
  module but engine.py touches engine's private names;
- every ``klogtool/...py`` (or ``.pyi``) or ``native/...rs`` path that a comment of the crate
  names exists;
- the stub ``klogtool/_native.pyi`` names every attribute the code uses of the module and, when
  the module is built, exactly the module's public names (and each class's public methods).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "klogtool"
ENGINE = PACKAGE / "formats" / "engine.py"
STUB = PACKAGE / "_native.pyi"
ADAPTERS = (
    PACKAGE / "log" / "rewrite" / "native_clean.py",
    PACKAGE / "log" / "read" / "native_render.py",
    PACKAGE / "log" / "read" / "native_stats.py",
    PACKAGE / "log" / "export" / "native_columns.py",
)
NATIVE = "klogtool._native"


def _tree(path: Path, source: str | None = None) -> ast.Module:
    return ast.parse(path.read_text() if source is None else source, str(path))


def native_imports(path: Path, source: str | None = None) -> list[int]:
    """Lines of ``path`` that import the native module, in any spelling."""
    lines = []
    for node in ast.walk(_tree(path, source)):
        if isinstance(node, ast.Import):
            if any(a.name == NATIVE or a.name.startswith(NATIVE + ".") for a in node.names):
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == NATIVE or node.module.startswith(NATIVE + "."):
                lines.append(node.lineno)
            elif node.module == "klogtool" and any(a.name == "_native" for a in node.names):
                lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and node.value == NATIVE:  # importlib and kin
            lines.append(node.lineno)
    return lines


def engine_private_uses(path: Path, source: str | None = None) -> list[str]:
    """``engine._name`` uses in ``path`` (engine imported as ``engine``)."""
    return [
        f"{path.name}:{node.lineno}: engine.{node.attr}"
        for node in ast.walk(_tree(path, source))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "engine"
        and node.attr.startswith("_")
    ]


def test_only_the_engine_imports_the_native_module() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != ENGINE
        for line in native_imports(path)
    ]
    assert not found, f"only formats/engine.py imports {NATIVE}: {found}"
    assert native_imports(ENGINE), "formats/engine.py no longer imports the native module"


def test_the_adapters_reach_it_through_the_engine() -> None:
    for path in ADAPTERS:
        tree = _tree(path)
        uses = {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "engine"
        }
        assert "native_module" in uses, f"{path.name} does not ask engine.native_module()"
    private = [
        u for p in sorted(PACKAGE.rglob("*.py")) if p != ENGINE for u in engine_private_uses(p)
    ]
    assert not private, f"private names of formats/engine.py used elsewhere: {private}"


def test_planted_import_and_private_use_are_caught() -> None:
    adapter = ADAPTERS[1]
    text = adapter.read_text()
    assert not native_imports(adapter) and not engine_private_uses(adapter)
    assert native_imports(adapter, text + "\nimport klogtool._native\n")
    assert native_imports(adapter, text + "\nfrom klogtool import _native\n")
    assert engine_private_uses(adapter, text + "\nengine._active\n")


# -- paths the crate's comments name ---------------------------------------------------------
PATH = re.compile(r"(?<![\w/.])(klogtool/[\w/]+\.pyi?|native/[\w/]+\.rs)\b")


def named_paths(text: str) -> list[str]:
    """Paths ``klogtool/...py(i)`` and ``native/...rs`` in the comments (from ``//`` on) of
    Rust code."""
    return [
        m
        for line in text.splitlines()
        if "//" in line
        for m in PATH.findall(line[line.index("//") :])
    ]


def test_paths_named_in_the_crate_exist() -> None:
    sources = sorted((ROOT / "native" / "src").rglob("*.rs"))
    assert sources
    named = {(p.relative_to(ROOT), path) for p in sources for path in named_paths(p.read_text())}
    assert len(named) > 5, named  # the crate names its Python twins
    missing = sorted(f"{rs}: {path}" for rs, path in named if not (ROOT / path).exists())
    assert not missing, "comments name files that do not exist:\n" + "\n".join(missing)


def test_a_planted_stale_path_is_caught() -> None:
    assert named_paths("//! after `klogtool/log/cleaner.py`") == ["klogtool/log/cleaner.py"]
    assert named_paths("let a = 1; // see native/src/python.rs") == ["native/src/python.rs"]
    assert named_paths('let p = "klogtool/x.py";') == []  # code, not a comment
    assert not (ROOT / "klogtool/log/cleaner.py").exists()


# -- the stub --------------------------------------------------------------------------------
def stub_names(source: str | None = None) -> tuple[set[str], dict[str, set[str]]]:
    """The stub's run-time names (functions, classes that are not TypedDicts, variables that
    are not type aliases) and each class's public methods and properties."""
    names: set[str] = set()
    methods: dict[str, set[str]] = {}
    for node in _tree(STUB, source).body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            if any(isinstance(b, ast.Name) and b.id == "TypedDict" for b in node.bases):
                continue  # for type checkers only
            names.add(node.name)
            methods[node.name] = {
                f.name
                for f in node.body
                if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")
            }
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            alias = isinstance(node.annotation, ast.Name) and node.annotation.id == "TypeAlias"
            if not alias:
                names.add(node.target.id)
    return names, methods


def used_of_native() -> set[str]:
    """What engine.py and the adapters use of the native module: attributes of the names they
    hold it under (``_native``, ``_active``, ``native``) and the engine's NativeModule
    protocol's members."""
    used: set[str] = set()
    for path in (ENGINE, *ADAPTERS):
        tree = _tree(path)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("_native", "_active", "native")
            ):
                used.add(node.attr)
            elif isinstance(node, ast.ClassDef) and node.name == "NativeModule":
                used |= {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
    return used


def test_the_stub_names_what_the_code_uses() -> None:
    names, _ = stub_names()
    used = used_of_native()
    assert {"render_records", "OffsetMap", "Columns", "crc32c"} <= used, used
    assert not used - names, f"used of the native module but not in the stub: {used - names}"


def test_the_stub_matches_the_built_module() -> None:
    native = pytest.importorskip(NATIVE, reason="the native module is not built")
    names, methods = stub_names()
    public = {n for n in dir(native) if not n.startswith("_")} | {"__version__"}
    assert names == public, (
        f"in the module, not the stub: {sorted(public - names)}; "
        f"in the stub, not the module: {sorted(names - public)}"
    )
    for cls, declared in methods.items():
        built = {n for n in dir(getattr(native, cls)) if not n.startswith("_")}
        assert declared == built, (cls, sorted(built ^ declared))


def test_a_planted_stub_mismatch_is_caught() -> None:
    text = STUB.read_text()
    names, methods = stub_names()
    assert "Rendered" not in names and "ColumnBuffers" not in names  # type-only names
    assert "take" in methods["Columns"] and "__version__" in names
    planted, _ = stub_names(text + "\ndef not_in_the_module() -> None: ...\n")
    assert "not_in_the_module" in planted
    without = text.replace("def render_records(", "def render_records_old(")
    assert "render_records" not in stub_names(without)[0]

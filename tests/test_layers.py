"""The architecture, checked: formats → log → commands, and one seam to the native engine.

- ``klogtool.formats`` imports nothing of klogtool outside itself, and no click, rich, pyarrow
  or pyspark (it knows bytes, not files, terminals or data frames).
- ``klogtool.log`` imports no click or rich (it is the library behind the commands).
- The commands, the CLI and the Spark source reach the format layer only through its public
  surface: names of ``klogtool/formats/__init__.py``'s ``__all__``.
- Only ``klogtool/formats/engine.py`` imports the native module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import klogtool.formats as formats

PACKAGE = Path(__file__).resolve().parent.parent / "klogtool"


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every import in a file (names empty for ``import x``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, [a.name for a in node.names]))
    return found


def _files(*parts: str) -> list[Path]:
    return sorted(PACKAGE.joinpath(*parts).rglob("*.py"))


def _top(module: str) -> str:
    return module.split(".")[0]


def test_format_layer_is_pure() -> None:
    for path in _files("formats"):
        for module, _ in _imports(path):
            assert _top(module) not in ("click", "rich", "pyarrow", "pyspark"), (path, module)
            if _top(module) == "klogtool":
                allowed = module.startswith("klogtool.formats") or (
                    module == "klogtool._native" and path.name == "engine.py"
                )
                assert allowed, f"{path} imports {module}"


def test_log_layer_has_no_user_interface() -> None:
    for path in _files("log"):
        for module, _ in _imports(path):
            assert _top(module) not in ("click", "rich"), (path, module)


def test_the_rest_uses_the_public_surface() -> None:
    outside = [*_files("commands"), *_files("spark"), *PACKAGE.glob("*.py")]
    for path in outside:
        for module, names in _imports(path):
            if module.startswith("klogtool.formats"):
                assert module == "klogtool.formats", f"{path} imports {module}"
                unknown = set(names) - set(formats.__all__)
                assert not unknown, f"{path} imports {unknown} from klogtool.formats"


def test_only_the_engine_seam_imports_the_native_module() -> None:
    for path in _files():
        for module, names in _imports(path):
            native = module == "klogtool._native" or (module == "klogtool" and "_native" in names)
            assert not native or path == PACKAGE / "formats" / "engine.py", path


def test_public_surface_lists_what_it_exports() -> None:
    assert formats.__all__ == sorted(formats.__all__)
    for name in formats.__all__:
        assert getattr(formats, name) is not None, name

"""The architecture, checked: formats → log → commands, and one seam to the native engine.

- ``klogtool.formats`` imports nothing of klogtool outside itself, and no click, rich, pyarrow
  or pyspark (it knows bytes, not files, terminals or data frames).
- ``klogtool.log`` imports no click or rich (it is the library behind the commands).
- The commands, the CLI and the Spark source reach the format layer only through its public
  surface: names of ``klogtool/formats/__init__.py``'s ``__all__``.
- Only ``klogtool/formats/engine.py`` imports the native module (tests/test_native_seam.py).
- Inside ``klogtool.log`` the workflow packages (``log/read``, ``log/check``, ``log/repair``,
  ``log/rewrite``, ``log/export``) are siblings, not a stack: a package imports its own
  modules, the modules at the top of ``log/`` (``log/*.py``), formats, codes, errors and
  events, and no other package; ``log/*.py`` imports no package of ``log``. ``log`` never
  imports commands, output, cli, spark or manpages; spark never imports commands. Each rule is
  also shown to catch a planted violation.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import klogtool.formats as formats

PACKAGE = Path(__file__).resolve().parent.parent / "klogtool"


def _imports(path: Path, source: str | None = None) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every import in a file (names empty for ``import x``)."""
    found = []
    text = path.read_text() if source is None else source
    for node in ast.walk(ast.parse(text, str(path))):
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


def test_public_surface_lists_what_it_exports() -> None:
    assert formats.__all__ == sorted(formats.__all__)
    for name in formats.__all__:
        assert getattr(formats, name) is not None, name


# -- the log layer's rooms -------------------------------------------------------------------
LOG_GROUPS = ("read", "check", "repair", "rewrite", "export")
# What a package of log/ may import besides itself and log/*.py.
# (``klogtool`` itself: its ``__version__``.)
BELOW_LOG = ("klogtool.formats", "klogtool.codes", "klogtool.errors", "klogtool.events")
ABOVE_LOG = ("commands", "output", "cli", "spark", "manpages")


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(module: str, names: list[str]) -> list[str]:
    """The klogtool modules an import names: ``from klogtool.log import splits`` names
    ``klogtool.log.splits``, ``from klogtool.log.splits import plan_splits`` the module."""
    if not module.startswith("klogtool"):
        return []
    base = PACKAGE.parent.joinpath(*module.split("."))
    subs = [f"{module}.{n}" for n in names if (base / f"{n}.py").exists() or (base / n).is_dir()]
    return subs or [module]


def _group(module: str) -> str | None:
    """``klogtool.log.read.diff`` → ``read``; a module at the top of log/ → None."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "log" else None


def log_violations(path: Path, source: str | None = None) -> list[str]:
    """What a module of klogtool.log or klogtool.spark imports against the rules above."""
    me = _module_of(path)
    found = []
    for module, names in _imports(path, source):
        for target in _targets(module, names):
            top = target.split(".")[1] if "." in target else ""
            if me.startswith("klogtool.spark"):
                if top == "commands":
                    found.append(f"{me} imports {target}: spark never imports commands")
                continue
            if top in ABOVE_LOG:
                found.append(f"{me} imports {target}: log never imports {top}")
            elif top == "log":
                mine, theirs = _group(me), _group(target)
                if target.count(".") == 2 and target.split(".")[2] in LOG_GROUPS:
                    theirs = target.split(".")[2]  # the package itself
                if theirs is not None and theirs != mine:
                    where = f"log/{mine}/" if mine else "log/*.py"
                    found.append(f"{me} imports {target}: {where} imports no package log/{theirs}/")
            elif target != "klogtool" and not target.startswith(BELOW_LOG) and _group(me):
                found.append(
                    f"{me} imports {target}: a log package imports only log/*.py, "
                    "formats, codes, errors and events"
                )
    return found


def test_log_packages_are_siblings() -> None:
    found = [v for path in [*_files("log"), *_files("spark")] for v in log_violations(path)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("where", "source", "rule"),
    [
        ("log/read/diff.py", "from klogtool.log.check import verifier", "imports no package"),
        ("log/export/spec.py", "from klogtool.log.read.dumper import Dumper", "imports no package"),
        ("log/splits.py", "from klogtool.log.export import spec", "log/*.py imports no package"),
        ("log/read/finder.py", "import klogtool.shown", "imports only log/*.py"),
        ("log/atomic.py", "from klogtool.output import Output", "never imports output"),
        ("log/read/stats.py", "from klogtool.commands import _options", "never imports commands"),
        ("log/check/verifier.py", "from klogtool import cli", "never imports cli"),
        ("log/files.py", "from klogtool.spark import source", "never imports spark"),
        ("log/rewrite/cleaner.py", "import klogtool.manpages", "never imports manpages"),
        ("spark/source.py", "from klogtool.commands._options import x", "never imports commands"),
    ],
)
def test_each_rule_catches_a_planted_violation(where: str, source: str, rule: str) -> None:
    found = log_violations(PACKAGE / where, source)
    assert found and rule in found[0], found

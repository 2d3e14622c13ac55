"""The registry of finding and error codes (klogtool/codes.py) is complete, used and documented.

Statically, over the source: outside the format layer a code is always ``Code.<NAME>``, never a
string; the format layer's string codes are all registered; every registered code is emitted
somewhere; a finding's literal severity is one its code allows. At run time, the whole suite
runs with ``KLOGTOOL_STRICT_CODES=1`` (conftest.py), so every Finding and KlogtoolError created
checks its code and severity against the registry.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from klogtool import codes
from klogtool.codes import Code, Severity
from klogtool.errors import InputError
from klogtool.log.findings import Finding

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "klogtool"
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "codes.py")


def _in_formats(path: Path) -> bool:
    return "formats" in path.relative_to(PACKAGE).parts


def _code_params() -> dict[str, int]:
    """Functions and classes taking a ``code`` argument: name -> its positional index."""
    found: dict[str, int] = {"Finding": 1}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                names = [a.arg for a in node.args.posonlyargs + node.args.args]
                if "code" in names:
                    skip = 1 if names[0] in ("self", "cls") else 0
                    name = node.name
                    if name == "__init__":
                        continue  # the classes' own names are below
                    found[name] = names.index("code") - skip
    # FormatError(message, position, code) and its subclasses
    found.update({n: 2 for n in _format_error_classes()})
    return found


def _format_error_classes() -> set[str]:
    tree = ast.parse((PACKAGE / "formats" / "errors.py").read_text())
    return {n.name for n in tree.body if isinstance(n, ast.ClassDef)}


def _code_arguments(tree: ast.Module, params: dict[str, int]) -> list[ast.expr]:
    """Expressions in a code's place: ``code=``, a code parameter's position, ``code = ...`` in
    a class body, and what ``.code``/``["code"]`` is compared with."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found += [k.value for k in node.keywords if k.arg in ("code", "error_code")]
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            idx = params.get(name or "")
            if idx is not None and idx < len(node.args):
                found.append(node.args[idx])
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "code" for t in stmt.targets
                ):
                    found.append(stmt.value)
        elif isinstance(node, ast.Compare):
            left = node.left
            is_code = (isinstance(left, ast.Attribute) and left.attr == "code") or (
                isinstance(left, ast.Subscript)
                and isinstance(left.slice, ast.Constant)
                and left.slice.value == "code"
            )
            if is_code:
                found += node.comparators
    return found


def _strings(expr: ast.expr, constants: dict[str, str]) -> list[str]:
    """The string literals an expression may evaluate to (through module constants)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.Name) and expr.id in constants:
        return [constants[expr.id]]
    if isinstance(expr, ast.IfExp):
        return _strings(expr.body, constants) + _strings(expr.orelse, constants)
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in expr.elts for s in _strings(e, constants)]
    return []


def _module_constants(tree: ast.Module) -> dict[str, str]:
    return {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }


def _walk_sources() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in SOURCES]


def test_outside_the_format_layer_codes_are_never_strings() -> None:
    params = _code_params()
    for path, tree in _walk_sources():
        if _in_formats(path):
            continue
        for expr in _code_arguments(tree, params):
            literal = _strings(expr, {})
            assert not literal, f"{path}:{expr.lineno}: code {literal} spelled as a string"
            built = [n for n in ast.walk(expr) if isinstance(n, ast.JoinedStr)]
            assert not built, f"{path}:{expr.lineno}: a code built from a string"


def test_the_format_layers_codes_are_registered() -> None:
    params = _code_params()
    seen = set()
    for path, tree in _walk_sources():
        if not _in_formats(path):
            continue
        consts = _module_constants(tree)
        for expr in _code_arguments(tree, params):
            for s in _strings(expr, consts):
                assert codes.lookup(s) is not None, f"{path}:{expr.lineno}: {s!r} not registered"
                seen.add(s)
    # the walk finds the codes it must: one from each way they are spelled
    assert {"crc-mismatch", "index-sanity", "bad-magic", "bad-record-count"} <= seen


def _used_codes() -> set[str]:
    used: set[str] = set()
    params = _code_params()
    for path, tree in _walk_sources():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "Code"
            ):
                used.add(Code[node.attr].value)
        if _in_formats(path):
            consts = _module_constants(tree)
            for expr in _code_arguments(tree, params):
                used.update(_strings(expr, consts))
    # the native engine's own one-line errors end in "(code)" (native/src/guard.rs)
    known = {c.value for c in Code}
    for rs in (ROOT / "native" / "src").glob("*.rs"):
        used.update(set(re.findall(r"\(([a-z0-9-]+)\)\\n", rs.read_text())) & known)
    return used


def test_every_registered_code_is_emitted_somewhere() -> None:
    unused = {c.value for c in Code} - _used_codes()
    assert not unused, f"registered but never used: {sorted(unused)}"


def test_literal_severities_agree_with_the_registry() -> None:
    """``Finding("warning", Code.X, ...)``: X must list warning (the runtime check catches
    the severities computed at run time)."""
    checked, wrong = 0, []
    for path, tree in _walk_sources():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and len(node.args) >= 2):
                continue
            sev, code = node.args[0], node.args[1]
            if (
                isinstance(sev, ast.Constant)
                and sev.value in ("error", "warning")
                and isinstance(code, ast.Attribute)
                and isinstance(code.value, ast.Name)
                and code.value.id == "Code"
            ):
                if Severity(sev.value) not in Code[code.attr].severities:
                    wrong.append(
                        f"{path}:{node.lineno}: {code.attr} is not registered as {sev.value}"
                    )
                checked += 1
    assert not wrong
    assert checked > 50


def test_the_reference_page_is_generated_from_the_registry() -> None:
    page = (ROOT / "docs" / "codes.md").read_text()
    assert page == codes.reference(), "regenerate: python -m klogtool.codes > docs/codes.md"
    for code in Code:
        assert code.description and code.severities, code


def test_codes_are_json_strings() -> None:
    import json

    assert json.dumps({"code": Code.CRC_MISMATCH}) == '{"code": "crc-mismatch"}'
    assert f"({Code.NOT_FOUND})" == "(not-found)"


def test_the_runtime_check_rejects_what_is_not_registered() -> None:
    assert codes.STRICT, "conftest.py sets KLOGTOOL_STRICT_CODES=1 for the whole suite"
    with pytest.raises(AssertionError, match="no-such-code"):
        Finding("error", "no-such-code", "p", None, None, "m")
    with pytest.raises(AssertionError, match="warning"):
        Finding("warning", Code.CRC_MISMATCH, "p", None, None, "m")  # an error, never a warning
    with pytest.raises(AssertionError, match="fatal"):
        InputError("m", code=Code.INDEX_MISSING)  # a warning finding, never fatal
    Finding("warning", Code.INDEX_MISSING, "p", None, None, "m")

"""The read context (klogtool/log/context.py: the bounds, the engine, the progress listener)
reaches every read of the library.

The format layer's readers take ``max_batch_bytes`` with a default, for a user's one-off call.
The log layer must never lean on a default: a call that leaves the bound out is a pass missed
(a command's --max-batch-bytes would not hold there), and a context made up on the way would
lose the engine chosen and the bar. So in ``klogtool/log``:

- every call of a batch's decoding methods names the bound;
- no function takes ``ctx``, ``limits``, ``max_batch_bytes`` or ``progress`` with a default,
  and no options dataclass has a ``ctx`` or ``limits`` field with one;
- no module but ``context.py`` makes a context (``ReadContext.of``) or asks the process which
  engine runs (``engine.name()``): both come from the command's context.

Each rule is shown to catch a planted violation.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.cli import run

from klogtool.formats import codecs
from klogtool.formats.batch import Record
from klogtool.formats.payloads.control import ABORT, encode_end_txn_marker
from klogtool.formats.v2 import encode_batch

LOG = Path(__file__).resolve().parent.parent / "klogtool" / "log"
CONTEXT = "klogtool/log/context.py"
T0 = 1_700_000_000_000
DECODERS = ("records", "control_type", "records_area", "native_input")
BOUNDS = ("ctx", "limits", "max_batch_bytes", "progress")


def violations(source: str, where: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in DECODERS and not node.args and not node.keywords:
                found.append(f"{where}:{node.lineno}: .{node.func.attr}() without its bound")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            positional = [*a.posonlyargs, *a.args]
            defaulted = positional[len(positional) - len(a.defaults) :]
            defaulted += [k for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d]
            for arg in defaulted:  # (ReadContext.of defaults them: it is for the callers)
                if arg.arg in BOUNDS and where != CONTEXT:
                    found.append(f"{where}:{node.lineno}: {node.name}() defaults {arg.arg}")
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.target.id in ("ctx", "limits")
                    and stmt.value is not None
                    and not _required_field(stmt.value)
                ):
                    found.append(f"{where}:{stmt.lineno}: {node.name}.{stmt.target.id} defaulted")
        elif isinstance(node, ast.Attribute) and where != CONTEXT:
            made = node.attr == "of" and isinstance(node.value, ast.Name)
            if made and node.value.id == "ReadContext":  # type: ignore[attr-defined]
                found.append(f"{where}:{node.lineno}: a ReadContext made up in the log layer")
            asked = node.attr == "name" and isinstance(node.value, ast.Name)
            if asked and node.value.id == "engine":  # type: ignore[attr-defined]
                found.append(f"{where}:{node.lineno}: engine.name() instead of ctx.engine")
    return found


def _required_field(value: ast.expr) -> bool:
    """``field(kw_only=True)`` and the like: a dataclass field without a default."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "field"
        and not any(k.arg in ("default", "default_factory") for k in value.keywords)
    )


def test_the_log_layer_passes_its_bounds() -> None:
    found = [
        v
        for path in sorted(LOG.rglob("*.py"))
        for v in violations(path.read_text(), str(path.relative_to(LOG.parent.parent)))
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "for r in batch.records(): pass",
        "t = batch.control_type()",
        "def walk(view, limits=DEFAULT_LIMITS): pass",
        "def walk(view, *, max_batch_bytes: int = 1 << 20): pass",
        "def walk(view, ctx=None): pass",
        "def walk(view, progress=None): pass",
        "class Options:\n    ctx: ReadContext = ReadContext.of()",
        "class Options:\n    limits: ReadLimits = DEFAULT_LIMITS",
        "class Options:\n    ctx: ReadContext = field(default=None)",
        "def walk(view): return scan(view, ReadContext.of())",
        "threads = 2 if engine.name() == 'native' else 1",
    ],
)
def test_each_rule_catches_a_planted_violation(source: str) -> None:
    assert violations(source, "planted.py")


# -- the three commands that had no --max-batch-bytes (transactions, rebuild-index,
# truncate-recovery) read markers within it --------------------------------------------------
def _partition_with_a_gzip_marker(tmp_path: Path) -> Path:
    """One transaction of producer 7 (offsets 0-1) and its ABORT marker (offset 2), the
    marker gzip-compressed: its records area decompresses to about 20 bytes."""
    part = tmp_path / "t-0"
    part.mkdir()
    key, value = encode_end_txn_marker(ABORT, 5)
    data = encode_batch(
        [Record(0, T0, b"k0", b"v0"), Record(1, T0, b"k1", b"v1")],
        is_transactional=True,
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
    )
    marker = encode_batch(
        [Record(2, T0, key, value)],
        compression=codecs.GZIP,
        is_control=True,
        is_transactional=True,
        producer_id=7,
        producer_epoch=0,
    )
    (part / "00000000000000000000.log").write_bytes(data + marker)
    return part


@pytest.mark.parametrize(
    ("args", "read", "not_read"),
    [
        (["transactions"], '"state":"aborted"', "exceeds the limit of 8 bytes"),
        (["rebuild-index", "--dry-run"], ".txnindex", None),
        (["truncate-recovery", "--dry-run"], ".txnindex", None),
    ],
)
def test_the_bound_reaches_the_markers(
    tmp_path: Path, args: list[str], read: str, not_read: str | None
) -> None:
    """Within the default bound the ABORT marker is read (the transaction is aborted, the
    .txnindex gets its entry); within 8 bytes it is not, and transactions says why."""
    part = _partition_with_a_gzip_marker(tmp_path)
    _code, default, _err = run(*args, "--format", "jsonl", str(part))
    _code, bounded, _err = run(*args, "--format", "jsonl", str(part), "--max-batch-bytes", "8")
    assert read in default and read not in bounded, (default, bounded)
    if not_read is not None:
        assert not_read in bounded and not_read not in default

"""The read bounds (klogtool/formats/limits.py's ReadLimits) reach every read of the library.

The format layer's readers take ``max_batch_bytes`` with a default, for a user's one-off call.
The log layer must never lean on that default: a call that leaves the bound out is a pass
missed (a command's --max-batch-bytes would not hold there). So in ``klogtool/log``:

- every call of a batch's decoding methods names the bound;
- no function takes ``limits`` or ``max_batch_bytes`` with a default (an options dataclass may:
  its default is the user's, and the commands always set it).

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
T0 = 1_700_000_000_000
DECODERS = ("records", "control_type", "records_area", "native_input")
BOUNDS = ("limits", "max_batch_bytes")


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
            for arg in defaulted:
                if arg.arg in BOUNDS:
                    found.append(f"{where}:{node.lineno}: {node.name}() defaults {arg.arg}")
    return found


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

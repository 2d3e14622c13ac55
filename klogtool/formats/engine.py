"""The engine seam: the one module that imports the native engine (``klogtool._native``).

Two engines implement the format layer's hot paths. The **python** engine is the reference:
every decoder in this package. The **native** engine (Rust, ``native/`` in the source tree)
decodes well-formed message format v2 batches into columns; wherever a batch is not
well-formed, or is one of the rare kinds it leaves alone (legacy messages, control batches,
odd framings), it answers ``None`` and the caller reads that batch with the python engine, so
every error, message and byte position comes from one place and the engines cannot disagree.

``KLOGTOOL_ENGINE=python|native`` chooses at start-up (default: native when it is built);
:func:`use` switches at run time (the test suite runs every test under both).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

NATIVE = "native"
PYTHON = "python"
ENGINES = (NATIVE, PYTHON)

_native: ModuleType | None
try:
    from klogtool import _native
except ImportError:  # not built: a source checkout without Rust, or a pure-Python install
    _native = None

_active: ModuleType | None = None


class EngineUnavailableError(RuntimeError):
    """``KLOGTOOL_ENGINE=native`` (or ``use("native")``) where the native engine is not built."""


def use(name: str) -> None:
    """Make ``name`` (``native`` or ``python``) the engine for what follows."""
    global _active
    if name not in ENGINES:
        raise ValueError(f"KLOGTOOL_ENGINE must be one of {', '.join(ENGINES)}, not {name!r}")
    if name == NATIVE and _native is None:
        raise EngineUnavailableError(
            "the native engine is not built in this installation (pip install -e . compiles "
            "it; it needs a Rust toolchain): use KLOGTOOL_ENGINE=python"
        )
    _active = _native if name == NATIVE else None


def name() -> str:
    """The engine in use."""
    return NATIVE if _active is not None else PYTHON


def native_available() -> bool:
    return _native is not None


def check_v2(data: memoryview, max_batch_bytes: int) -> tuple[int, bool, int] | None:
    """``(records, offsets increase inside the batch's range, largest timestamp)`` of a whole
    well-formed v2 batch, or None: read it with the python engine."""
    if _active is None:
        return None
    result: tuple[int, bool, int] | None = _active.check_v2(data, max_batch_bytes)
    return result


def record_columns(max_batch_bytes: int) -> Any | None:
    """A native builder of record columns in Arrow's layout (``add(batch_view, index)`` → count
    or None, ``take()`` → buffers), or None under the python engine."""
    if _active is None:
        return None
    return _active.Columns(max_batch_bytes)


_chosen = os.environ.get("KLOGTOOL_ENGINE", "").strip().lower()
if _chosen:
    use(_chosen)
elif _native is not None:
    _active = _native

"""Optional extras the core install does without: a test of what needs one skips, saying so,
when it is missing (the suite passes with only the ``test`` extra installed)."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

HAS_PYARROW = find_spec("pyarrow") is not None
needs_pyarrow = pytest.mark.skipif(
    not HAS_PYARROW, reason="export and object storage need pyarrow (the spark or storage extra)"
)


def skip_unless_pyarrow(argv: list[str]) -> None:
    """Skip a command line that exports (or reads object storage) without pyarrow."""
    if not HAS_PYARROW and ("export" in argv[:1] or any("://" in a for a in argv)):
        pytest.skip("export and object storage need pyarrow (the spark or storage extra)")

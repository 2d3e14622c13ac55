"""export's Arrow allocations go through malloc (klogtool/log/export/__init__.py), which
returns the record batches' memory at once; a user's ARROW_DEFAULT_MEMORY_POOL wins."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("pyarrow")

PROBE = (
    "import klogtool.log.export.exporter, pyarrow as pa\n"
    "print(pa.default_memory_pool().backend_name)\n"
)


@pytest.mark.parametrize(("given", "expected"), [(None, "system"), ("mimalloc", "mimalloc")])
def test_the_arrow_memory_pool(given: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if given is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = given
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == expected

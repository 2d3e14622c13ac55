"""export's Arrow allocations go through malloc (``klogtool.cli.main`` chooses it), which
returns the record batches' memory at once; a user's ARROW_DEFAULT_MEMORY_POOL wins. Importing
the library changes no environment variable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("pyarrow")

PROBE = (
    "import os, klogtool.log.export.exporter\n"
    "assert 'ARROW_DEFAULT_MEMORY_POOL' not in os.environ or {given!r}\n"
    "from klogtool.cli import main\n"
    "try:\n"
    "    main(['--version'])\n"
    "except SystemExit:\n"
    "    pass\n"
    "import pyarrow as pa\n"
    "print(pa.default_memory_pool().backend_name)\n"
)


@pytest.mark.parametrize(("given", "expected"), [(None, "system"), ("mimalloc", "mimalloc")])
def test_the_arrow_memory_pool(given: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if given is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = given
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(given=given)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.splitlines()[-1] == expected

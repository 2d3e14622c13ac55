"""The local engine's export process does not import pandas (commands._spark.
pyarrow_without_pandas: pyarrow would import it, a quarter of a second of CPU, only to ask
whether the Python objects it converts are pandas ones), yet ``to_pandas()`` still works in
that process afterwards."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import LOGDIR

pytest.importorskip("pyarrow", reason="export writes with pyarrow (the spark extra)")

PROBE = (
    "import sys\n"
    "from klogtool.cli import main\n"
    "try:\n"
    "    main(['--no-progress', 'export', '--jobs', '{jobs}', '--to', '{to}', {dest!r}, {src!r}])\n"
    "except SystemExit as e:\n"
    "    assert e.code == 0, e.code\n"
    "print('imported:', 'pandas' in sys.modules)\n"
    "try:\n"
    "    import pandas  # noqa: F401\n"
    "except ImportError:\n"
    "    print('after: no pandas')\n"
    "else:\n"
    "    import pyarrow as pa\n"
    "    frame = pa.table({{'a': [1]}}).to_pandas()\n"
    "    print('after:', type(frame).__name__, pa.array(pandas.Series([1.5, None])).null_count)\n"
)


@pytest.mark.parametrize(("to", "jobs"), [("parquet", 1), ("jsonl", 1), ("parquet", 2)])
def test_a_local_export_leaves_pandas_alone(tmp_path: Path, to: str, jobs: int) -> None:
    code = PROBE.format(jobs=jobs, to=to, dest=str(tmp_path / "out"), src=str(LOGDIR))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert "imported: False" in out  # not by the export
    assert out[-1] in ("after: no pandas", "after: DataFrame 1")  # and usable after it

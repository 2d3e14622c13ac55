"""The cluster path, not only local mode: ``klogtool export --master spark://127.0.0.1:PORT``
against a real standalone master and worker on 127.0.0.1, started from the pyspark package's
``bin/spark-class`` (see standalone.py; the ``standalone_export`` fixture runs it in the
background from the start of the Spark tests and always stops the daemons)."""

from __future__ import annotations

import json

from spark_env import require_spark
from spark_expect import assert_int64_micros, dump_rows_for_compare, table_rows
from support.paths import LOGDIR

require_spark()

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402


def test_export_on_a_standalone_cluster(standalone_export) -> None:
    try:
        r = standalone_export.result(timeout=400)
    finally:
        standalone_export.stop()  # the daemons are not needed any more (idempotent)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["type"] == "summary" and summary["rows"] == 190
    assert standalone_export.master_url.startswith("spark://127.0.0.1:")
    files = sorted(standalone_export.dest.glob("*.parquet"))
    assert files and (standalone_export.dest / "_SUCCESS").is_file()
    for f in files:
        assert_int64_micros(f)
    table = pa.concat_tables(pq.read_table(f) for f in files)
    assert table_rows(table) == dump_rows_for_compare([str(LOGDIR)])

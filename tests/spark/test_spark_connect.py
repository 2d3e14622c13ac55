"""``klogtool export --remote sc://…``: a real Spark Connect server on 127.0.0.1 (started from
the pyspark package's ``spark-submit``), the export run from a client process, the rows
compared with the pure-Python dump. The server's process group is always killed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_env import LOOPBACK, free_port, kill_group, require_spark
from spark_expect import assert_int64_micros, dump_rows_for_compare, table_rows
from support.paths import LOGDIR

require_spark()
if os.environ.get("KLOGTOOL_REQUIRE_SPARK"):
    import grpc  # noqa: F401  # CI installs the connect extra: a missing client is a failure
else:
    pytest.importorskip("grpc", reason="Spark Connect needs the `connect` extra (grpcio)")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402


def _wait_for_port(port: int, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the Spark Connect server exited before listening")
        with socket.socket() as s:
            if s.connect_ex((LOOPBACK, port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"the Spark Connect server did not listen on {port} in {timeout} s")


def _start_server(home: Path, tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """A Connect server on a free port. Another process can take the port before the JVM
    binds it: the server then exits (spark.port.maxRetries=0) and starts again on another."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP=LOOPBACK)
    for attempt in range(1, 4):
        port = free_port()
        with open(tmp_path / f"server-{attempt}.log", "wb") as log:
            server = subprocess.Popen(
                [
                    str(home / "bin" / "spark-submit"),
                    "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                    "--master", "local[2]",
                    "--conf", f"spark.connect.grpc.binding.address={LOOPBACK}",
                    "--conf", f"spark.connect.grpc.binding.port={port}",
                    "--conf", "spark.port.maxRetries=0",
                    "--conf", f"spark.driver.bindAddress={LOOPBACK}",
                    "--conf", f"spark.driver.host={LOOPBACK}",
                    "--conf", "spark.ui.enabled=false",
                    "--conf", f"spark.pyspark.python={sys.executable}",
                    "spark-internal",
                ],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            _wait_for_port(port, server, 120)
            return server, port
        except RuntimeError:
            if attempt == 3:
                raise
    raise AssertionError("unreachable")


def test_export_through_spark_connect(tmp_path: Path) -> None:
    import pyspark

    server, port = _start_server(Path(pyspark.__file__).resolve().parent, tmp_path)
    try:
        dest = tmp_path / "out"
        r = subprocess.run(
            [
                sys.executable, "-m", "klogtool", "export", str(LOGDIR), "--to", "parquet",
                str(dest), "--remote", f"sc://{LOOPBACK}:{port}", "--format", "jsonl",
            ],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        kill_group(server)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout.splitlines()[-1])
    assert summary["type"] == "summary" and summary["rows"] == 190
    files = sorted(dest.glob("*.parquet"))
    assert files
    for f in files:
        assert_int64_micros(f)
    table = pa.concat_tables(pq.read_table(f) for f in files)
    assert table_rows(table) == dump_rows_for_compare([str(LOGDIR)])

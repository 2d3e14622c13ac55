"""The Spark pipeline over object storage: ``export --engine spark`` and ``verify --engine
spark`` read the fixtures from the S3 server on 127.0.0.1 (tests/support/s3.py), the export
writes its Parquet back to it, and both give what the local engine gives on the local disk.

Each runs as its own process: Spark's Python workers take the S3 settings (the standard AWS
variables) from the environment the JVM started with, and the session fixture's JVM started
before the S3 server."""

from __future__ import annotations

import json
from pathlib import Path

from spark_env import require_spark
from support.cli import run, run_subprocess
from support.paths import LOGS
from support.s3 import BUCKET, S3Server, s3_server  # noqa: F401  (the fixture)

require_spark()

SPARK = ("--engine", "spark", "--master", "local[2]")


def _rows(where: str) -> list[dict]:
    import pyarrow.dataset as ds

    rows = ds.dataset(where, format="parquet").to_table().to_pylist()
    return sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"]))


def test_spark_exports_from_s3_to_s3_the_local_rows(s3_server: S3Server, tmp_path: Path) -> None:  # noqa: F811
    logs = s3_server.upload(LOGS / "logdir", "spark/logdir")
    code, _, err = run(
        "export", "--engine", "local", "--to", "parquet", str(tmp_path / "l"), "logdir"
    )
    assert code == 0, err
    dest = f"s3://{BUCKET}/spark/out"
    p = run_subprocess("export", logs, *SPARK, "--to", "parquet", dest, "--format", "jsonl")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["rows"] == 190 and summary["destination"] == dest
    assert _rows(dest) == _rows(str(tmp_path / "l"))


def test_spark_verifies_s3_as_the_local_verify_does(s3_server: S3Server) -> None:  # noqa: F811
    uri = s3_server.upload(LOGS, "spark/verify")
    local = run("verify", "--format", "jsonl", "logdir", "corrupt/crc-flip-0")
    p = run_subprocess(
        "verify", "--format", "jsonl", *SPARK, f"{uri}/logdir", f"{uri}/corrupt/crc-flip-0"
    )
    assert p.returncode == local[0] == 1, p.stderr
    assert p.stdout.replace(f"{uri}/", "") == local[1]

"""klogtool on a real Spark standalone cluster whose nodes have no Rust (issue 26): a master and
two workers of one core each on 127.0.0.1, started from the pyspark package's
``bin/spark-class``; the executors run a venv installed from klogtool's wheel, packed by
venv-pack and shipped with ``spark.archives`` as ``./environment`` (and
``spark.pyspark.python=./environment/bin/python``, as Spark's Python packaging docs and
docs/cluster.md say). ``export`` and ``verify --engine spark`` on the fixtures give the local
engine's rows and findings. The cluster machinery is bench/bench_spark.py's; every process
it starts is killed at the end, whatever happens.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import pytest
from spark_env import ROOT, TEST_JAVA_OPTIONS, require_spark
from spark_expect import assert_int64_micros, dump_rows_for_compare, table_rows
from support.cli import run
from support.paths import LOGDIR
from support.s3 import BUCKET, S3Server, s3_server  # noqa: F401  (the fixture)

require_spark()

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

CORRUPT = ROOT / "fixtures" / "logs" / "corrupt"


class Cluster(NamedTuple):
    daemons: Any  # bench_spark.Cluster
    driver: Path  # the driver's working directory (./environment is the venv)
    conf: list[str]  # --conf arguments: the packed venv, memory, JVM flags
    env: dict[str, str]  # the driver's environment


def klogtool(
    args: list[str], cluster: Cluster, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m klogtool ARGS`` in its own process group (its JVM and Python workers
    included), killed as a whole if it overruns."""
    cmd = [sys.executable, "-m", "klogtool", "--no-progress", *args]
    p = subprocess.Popen(
        cmd,
        cwd=cluster.driver,
        env={**cluster.env, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # whatever it left behind
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def parquet_rows(root: Path) -> list:
    files = sorted(root.glob("*.parquet"))
    assert files and (root / "_SUCCESS").is_file()
    for f in files:
        assert_int64_micros(f)
    return table_rows(pa.concat_tables(pq.read_table(f) for f in files))


@pytest.fixture(scope="module")
def cluster(
    bench_spark: ModuleType, packed_klogtool_env, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """The cluster both tests run on (a JVM start-up saved), stopped however they end."""
    bs = bench_spark
    venv, archive = packed_klogtool_env
    tmp = tmp_path_factory.mktemp("cluster")
    with bs.Cluster(
        tmp / "daemons", workers=2, cores=1, memory="1g", java_options=TEST_JAVA_OPTIONS
    ) as c:
        # client mode: the driver plans the data source in a Python worker started with the
        # same relative ./environment/bin/python, here the venv itself
        yield Cluster(
            c,
            bs.driver_dir(tmp / "driver", venv),
            bs.cluster_conf(
                archive,
                {
                    "spark.executor.memory": "512m",
                    "spark.driver.extraJavaOptions": TEST_JAVA_OPTIONS,
                    "spark.executor.extraJavaOptions": TEST_JAVA_OPTIONS,
                },
            ),
            bs.klogtool_env(),
        )


def test_export_and_verify_on_a_two_worker_cluster(cluster: Cluster, tmp_path: Path) -> None:
    master = ["--master", cluster.daemons.master_url, *cluster.conf]
    dest = tmp_path / "spark-out"
    export = klogtool(
        ["export", str(LOGDIR), *master, "--to", "parquet", str(dest), "--format", "jsonl"],
        cluster,
        timeout=240,
    )
    assert export.returncode == 0, export.stderr[-3000:]
    verify = klogtool(
        ["verify", str(LOGDIR), str(CORRUPT), *master, "--format", "jsonl"],
        cluster,
        timeout=240,
    )
    # one executor on each worker, each in a directory holding the unpacked archive
    work = cluster.daemons.workdir
    executors = sorted(work.glob("work-*/app-*/*/environment/bin/python"))
    assert {p.relative_to(work).parts[0] for p in executors} == {"work-0", "work-1"}, executors
    summary = json.loads(export.stdout.splitlines()[-1])
    assert summary["type"] == "summary" and summary["rows"] == 190

    local_out = tmp_path / "local-out"
    code, _, err = run(
        "export", str(LOGDIR), "--engine", "local", "--to", "parquet", str(local_out)
    )
    assert code == 0, err
    rows = parquet_rows(dest)
    assert rows == parquet_rows(local_out) == dump_rows_for_compare([str(LOGDIR)])

    local = run("verify", str(LOGDIR), str(CORRUPT), "--format", "jsonl")
    assert (verify.returncode, verify.stdout) == local[:2], verify.stderr[-3000:]
    assert local[0] == 1 and '"type":"finding"' in local[1].replace(" ", "")


def test_export_and_verify_from_s3_to_s3_on_the_cluster(
    cluster: Cluster,
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The executors (and the driver's planning worker) read the segments from the S3 server
    on 127.0.0.1, with the standard AWS variables given to them as executor environment; the
    export's tasks write their Parquet back to it with pyarrow (no Hadoop S3 connector on the
    cluster), and verify finds what the local verify finds."""
    import pyarrow.dataset as ds

    uri = s3_server.upload(LOGDIR.parent, f"cluster/{tmp_path.name}")
    env = [
        arg for k, v in s3_server.env.items() for arg in ("--conf", f"spark.executorEnv.{k}={v}")
    ]
    master = ["--master", cluster.daemons.master_url, *cluster.conf, *env]
    dest = f"s3://{BUCKET}/cluster/{tmp_path.name}-out"
    export = klogtool(
        ["export", f"{uri}/logdir", *master, "--to", "parquet", dest, "--format", "jsonl"],
        cluster,
        timeout=240,
        env=s3_server.env,
    )
    assert export.returncode == 0, export.stderr[-3000:]
    assert json.loads(export.stdout.splitlines()[-1])["rows"] == 190
    written = ds.dataset(dest, format="parquet").to_table()
    assert table_rows(written) == dump_rows_for_compare([str(LOGDIR)])
    keys = s3_server.client().list_objects_v2(Bucket=BUCKET, Prefix=f"cluster/{tmp_path.name}-out/")
    assert f"cluster/{tmp_path.name}-out/_SUCCESS" in {o["Key"] for o in keys["Contents"]}

    verify = klogtool(
        ["verify", f"{uri}/logdir", f"{uri}/corrupt", *master, "--format", "jsonl"],
        cluster,
        timeout=240,
        env=s3_server.env,
    )
    local = run("verify", "logdir", "corrupt", "--format", "jsonl")
    assert verify.returncode == local[0] == 1, verify.stderr[-3000:]
    assert verify.stdout.replace(f"{uri}/", "") == local[1]

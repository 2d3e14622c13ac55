"""Fixtures for the Spark tests: ONE session-scoped ``local[2]`` SparkSession, started through
klogtool's own :func:`klogtool.spark.get_session` (worker Python = this interpreter, loopback
binding, UI off, few shuffle partitions, the JVM flags that make it start fastest), the real
corpus's expected rows, and for
test_cluster.py the wheel, a venv-pack'd venv of it and bench/bench_spark.py (the cluster
machinery, as a fixture).

Helpers live in spark_env.py, not here: pytest imports every conftest.py as the module
``conftest``, so helpers shared between test modules live in named modules
(tests/support/, spark_env.py).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from spark_env import (
    REQUIRED,
    ROOT,
    TEST_JAVA_OPTIONS,
    require_spark,
)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_spark()
    from klogtool.spark import get_session

    tmp = tmp_path_factory.mktemp("spark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session, owned = get_session(
        "local[2]",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.local.dir": str(tmp / "local"),
            "spark.sql.warehouse.dir": str(tmp / "warehouse"),
            "spark.driver.extraJavaOptions": f"{TEST_JAVA_OPTIONS} "
            f"-Dderby.system.home={tmp / 'derby'}",
        },
        quiet=True,
    )
    assert owned
    yield session
    session.stop()


@pytest.fixture(scope="session")
def corpus() -> tuple[list[str], list[Any]]:
    """The real corpus's segment directories and their dump rows (computed once)."""
    from spark_expect import corpus_dirs, dump_rows_for_compare
    from support.paths import CORPUS

    if not (CORPUS / "MANIFEST.md").is_file():
        pytest.skip(f"real-broker corpus not found at {CORPUS}")
    dirs = corpus_dirs()
    return dirs, dump_rows_for_compare(dirs)


@functools.cache
def _bench_spark() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "klogtool_bench_spark", ROOT / "bench" / "bench_spark.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def bench_spark() -> ModuleType:
    """bench/bench_spark.py, whose cluster machinery (Cluster, packed_env, cluster_conf)
    test_cluster.py shares: a fixture, since test modules cannot import a conftest."""
    return _bench_spark()


@pytest.fixture(scope="session")
def klogtool_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """klogtool's x86_64 wheel, built once per run by release/build.py (cargo's dir kept in
    native/target-wheel between runs, as tests/test_wheel.py keeps it)."""
    sys.path.insert(0, str(ROOT / "release"))
    import build

    if shutil.which("cargo") is None or not build.installed_targets():
        pytest.skip("no Rust toolchain here to build the wheel with")
    wheel: Path = _bench_spark().build_wheel(tmp_path_factory.mktemp("dist"))
    return wheel


@pytest.fixture(scope="session")
def packed_klogtool_env(
    klogtool_wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """A venv installed from the wheel (and pyarrow), and its venv-pack archive: what a
    cluster's executors unpack as ./environment. (venv, archive)."""
    require_spark()
    try:
        import venv_pack  # noqa: F401
    except ImportError:
        reason = "venv-pack is not installed (pip install '.[test]')"
        if REQUIRED:
            pytest.fail(f"{reason} (KLOGTOOL_REQUIRE_SPARK=1)")
        pytest.skip(reason)
    env: tuple[Path, Path] = _bench_spark().packed_env(
        klogtool_wheel, tmp_path_factory.mktemp("env")
    )
    return env

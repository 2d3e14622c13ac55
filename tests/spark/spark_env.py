"""What the Spark tests share (imported as ``spark_env``; pytest imports every conftest.py as
the module ``conftest``, so helpers do not live in conftest.py here).

The tests skip, with the reason, where pyspark, pyarrow or Java is missing; ``.ci/run`` sets
``KLOGTOOL_REQUIRE_SPARK=1`` so that in CI a missing piece fails instead.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

REQUIRED = os.environ.get("KLOGTOOL_REQUIRE_SPARK") == "1"
ROOT = Path(__file__).resolve().parent.parent.parent


def _missing(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (KLOGTOOL_REQUIRE_SPARK=1)")
    pytest.skip(reason, allow_module_level=True)


def java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(
        (home and os.path.exists(os.path.join(home, "bin", "java"))) or shutil.which("java")
    )


def require_pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        _missing("pyarrow is not installed (pip install '.[spark]')")
    return pyarrow


def require_spark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        _missing("pyspark is not installed (pip install '.[spark]')")
    require_pyarrow()
    if not java_available():
        _missing("no Java runtime (Spark needs Java 17+ on PATH or in JAVA_HOME)")


# Measured on the project's machine: C1-only JIT and the serial GC cut a test run by a quarter.
TEST_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A free loopback port (held open until it is bound)."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


def kill_group(p: subprocess.Popen[Any]) -> None:
    """Stop the process group of ``p``: SIGTERM, then SIGKILL if it lingers."""
    if p.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=15)
            return
        except subprocess.TimeoutExpired:
            continue


def spark_available() -> bool:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return java_available()

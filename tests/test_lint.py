"""ruff and mypy are part of the test suite, so the one test command checks them too."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_ruff_check() -> None:
    r = _run("ruff", "check", "klogtool", "tests", "bench", "fixtures", "release")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_ruff_format() -> None:
    r = _run("ruff", "format", "--check", "klogtool", "tests", "bench", "fixtures", "release")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy() -> None:
    pytest.importorskip("mypy")
    # klogtool.spark subclasses pyspark's classes: without their types (the spark extra) a
    # strict mypy cannot check it
    pytest.importorskip("pyspark", reason="mypy checks klogtool/spark against the spark extra")
    r = _run(sys.executable, "-m", "mypy", "klogtool")
    assert r.returncode == 0, r.stdout + r.stderr

"""What the commands with ``--engine spark`` share: importing the extra, the session."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

import click

from klogtool.codes import Code
from klogtool.errors import KlogtoolError

EXTRA_HINT = "pip install 'klogtool[spark]' (and, for --engine spark, a Java 17+ runtime)"


def require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise KlogtoolError(
            "this needs pyarrow, which is not installed", code=Code.PYARROW_MISSING, hint=EXTRA_HINT
        ) from None


class _NoPandas:
    """A finder that says pandas is not installed (a :data:`sys.meta_path` entry)."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "pandas":
            raise ModuleNotFoundError("No module named 'pandas'", name=name)
        return None


def pyarrow_without_pandas() -> None:
    """Spare this process the import of pandas (0.27 s of CPU, a tenth of exporting 256 MiB
    to Parquet). pyarrow imports it at its first conversion of a Python object (``pa.array``,
    ``pa.scalar``, a compute function's Python argument) only to ask whether the object is a
    pandas one, and keeps the answer: asked here, while pandas cannot be imported, it answers
    no for the rest of the process (``to_pandas()`` still imports pandas when called). For the
    local engine's process and the workers it forks, which convert only lists and numbers;
    not under Spark (whose Arrow code converts pandas objects), nor where pandas is loaded."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.scalar(0)  # the first conversion: pyarrow looks for pandas now
    finally:
        sys.meta_path.remove(finder)


def check_target(master: str | None, remote: str | None) -> None:
    if master and remote:
        raise click.UsageError("--master and --remote exclude each other")


@contextmanager
def spark_session(
    master: str | None, remote: str | None, conf: dict[str, str], verbosity: int
) -> Iterator[tuple[Any, Any]]:
    """``(spark, klogtool.spark.jobs)``; a session started here is stopped at the end."""
    try:
        from klogtool.spark import jobs, session
    except ImportError as e:
        raise KlogtoolError(
            f"the Spark engine is not installed ({e})",
            code=Code.SPARK_MISSING,
            hint=EXTRA_HINT + "; or --engine local",
        ) from None
    spark, owned = session.get_session(master, remote, conf, quiet=verbosity < 1)
    try:
        yield spark, jobs
    finally:
        if owned:
            try:
                spark.stop()
            except Exception:
                pass  # the job's outcome matters, not a failing shutdown

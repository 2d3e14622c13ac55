"""What the commands with ``--engine spark`` share: importing the extra, the session."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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

"""Helpers shared by test modules (a named module: every ``conftest.py`` is imported as
``conftest``, so importing from one is ambiguous).

The real broker-written corpus is ``../shared/corpus/real`` beside the checkout (as CI lays it
out), or ``KLOGTOOL_CORPUS``; it is read by path, never copied into the project."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from klogtool.formats import v2
from klogtool.formats.batch import LOG_APPEND_TIME

_BESIDE = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real"
CORPUS = Path(os.environ.get("KLOGTOOL_CORPUS", str(_BESIDE)))

needs_corpus = pytest.mark.skipif(
    not (CORPUS / "MANIFEST.md").is_file(), reason=f"real-broker corpus not found at {CORPUS}"
)


def _b(x: object) -> bytes | None:
    return None if x is None else bytes(x)  # type: ignore[call-overload]


def norm_record(r: object) -> tuple:
    """``(offset, timestamp, key, value, headers)`` with payloads as ``bytes``; works for
    klogtool records and kafka-python records alike."""
    return (
        r.offset,  # type: ignore[attr-defined]
        r.timestamp,  # type: ignore[attr-defined]
        _b(r.key),  # type: ignore[attr-defined]
        _b(r.value),  # type: ignore[attr-defined]
        tuple((k, _b(v)) for k, v in r.headers),  # type: ignore[attr-defined]
    )


def careful_records(batch: Any) -> list[tuple]:
    """Every record of a v2 ``batch`` through the careful one-record decoder alone, as
    ``norm_record(r) + (sequence, attributes)``: the reference the fast decode loop must match."""
    area = batch.records_area()
    buf = bytes(area)
    pos, out = 0, []
    for _ in range(batch.count):
        rec, pos = v2._decode_record(
            buf, area, pos, batch.base_offset, batch.base_timestamp, batch.base_sequence, None, 0
        )
        out.append(rec)
    assert pos == len(buf)
    if batch.timestamp_type == LOG_APPEND_TIME:
        out = [r._replace(timestamp=batch.max_timestamp) for r in out]
    return [full_record(r) for r in out]


def full_record(r: Any) -> tuple:
    return norm_record(r) + (r.sequence, r.attributes)


@contextmanager
def lock_held_by_another_process(log_dir: Path) -> Iterator[None]:
    """Another process holds ``log_dir/.lock`` with an fcntl lock, as a running broker does."""
    lock = log_dir / ".lock"
    lock.touch()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, time\n"
            f"fd = os.open({str(lock)!r}, os.O_RDWR)\n"
            "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()

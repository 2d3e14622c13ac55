"""Opening log files read-only: mmap for regular files, a spooled temp file for stdin.

Callers get a ``memoryview`` whose memory stays flat however large the file: pages are read
by the OS on demand and dropped under pressure.
"""

from __future__ import annotations

import functools
import mmap
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import engine
from klogtool.formats.batch import LOG_OVERHEAD
from klogtool.formats.records import ScanResult, not_a_log
from klogtool.log import storage
from klogtool.log.context import Progress

STDIN = "-"


@contextmanager
def mapped(path: Path | str, *, lazy: bool = False) -> Iterator[memoryview]:
    """A read-only view of a file's bytes (``-`` = stdin, spooled to a temp file first).

    A file in object storage is fetched into a temporary file first, in large ranged reads;
    with ``lazy`` only as the reader asks for ranges (:func:`need`): a reader that seeks by an
    index must ask for every range it reads, and walk with ``SegmentScanner(need=...)``."""
    if str(path) == STDIN:
        with tempfile.TemporaryFile() as spool:
            shutil.copyfileobj(sys.stdin.buffer, spool, 1 << 20)
            spool.flush()
            with _map_fd(spool, "-") as view:
                yield view
        return
    if isinstance(path, str):
        path = storage.as_path(path)
    if isinstance(path, storage.RemotePath):
        remote = storage.spool(path)  # the same file read again (another check) is not refetched
        if not lazy:
            remote.fill()
        with _map_fd(remote.file, str(path)) as view:
            key = id(view.obj)
            if lazy:
                _SPOOLS[key] = remote
            try:
                yield view
            finally:
                _SPOOLS.pop(key, None)
        return
    with open(path, "rb") as f, _map_fd(f, str(path)) as view:
        _DESCRIPTORS[id(view.obj)] = f.fileno()
        try:
            yield view
        finally:
            _DESCRIPTORS.pop(id(view.obj), None)


_SPOOLS: dict[int, storage.Spool] = {}  # the views of remote files mapped now, by mapping
_DESCRIPTORS: dict[int, int] = {}  # the open file of each local mapping, by mapping


def descriptor(view: memoryview) -> int | None:
    """The descriptor of the local file :func:`mapped` maps as ``view`` (while mapped): a
    forked worker inherits it, and maps the very file this process reads
    (:func:`mapped_descriptor`), whatever was renamed over its path since."""
    return _DESCRIPTORS.get(id(view.obj))


@contextmanager
def mapped_descriptor(fd: int, name: str) -> Iterator[memoryview]:
    """The file open as ``fd`` mapped read-only (its own descriptor: ``fd`` stays open)."""
    with os.fdopen(os.dup(fd), "rb") as f, _map_fd(f, name) as view:
        yield view


def need(view: memoryview, start: int, end: int) -> None:
    """Make the bytes ``[start, end)`` of a file mapped by :func:`mapped` readable (they
    always are, but for a remote file mapped ``lazy``); ``view`` may be a slice of it, the
    positions are the file's."""
    spool = _SPOOLS.get(id(view.obj))
    if spool is not None:
        spool.need(start, end)


def need_entry(view: memoryview, position: int) -> None:
    """:func:`need` for the whole log entry (batch) at ``position`` of the file ``view`` maps."""
    spool = _SPOOLS.get(id(view.obj))
    if spool is not None:
        spool.need(position, position + LOG_OVERHEAD)
        size = int.from_bytes(view[position + 8 : position + LOG_OVERHEAD], "big", signed=True)
        spool.need(position, position + LOG_OVERHEAD + max(size, 0))


def fetcher(
    view: memoryview, *, ahead: bool = True, until: int | None = None
) -> Callable[[int, int], None] | None:
    """:func:`need` for ``view`` as ``SegmentScanner``'s ``need``, or None for a file that
    needs none. Without ``ahead`` only the bytes asked for are fetched (a peek at a segment's
    first batch), else a window past them (a walk), not past ``until`` (where the walk
    stops: the batches that start before it are fetched whole all the same)."""
    spool = _SPOOLS.get(id(view.obj))
    if spool is None:
        return None
    return functools.partial(spool.need, ahead=ahead, until=until)


@contextmanager
def _map_fd(f: BinaryIO, name: str) -> Iterator[memoryview]:
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        yield memoryview(b"")
        return
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if hasattr(mm, "madvise") and hasattr(mmap, "MADV_SEQUENTIAL"):
        mm.madvise(mmap.MADV_SEQUENTIAL)
    view = memoryview(mm)
    try:
        with engine.watched(view, name):  # the file shrinking under the read: one line
            yield view
    finally:
        try:
            view.release()
            mm.close()
        except BufferError:
            pass  # a caller still holds a slice (e.g. a record value): the GC unmaps it later


def read_small(path: Path, limit: int = 16 << 20) -> bytes:
    """Whole contents of a small file (checkpoints, snapshots), refusing absurd sizes."""
    size = path.stat().st_size
    if size > limit:
        raise OSError(f"{path}: {size} bytes is too large for this kind of file")
    return path.read_bytes()


PHASE_STEP = 8 << 20  # bytes between reports inside one segment


class Walked:
    """Progress through a segment by position: :meth:`at` reports every PHASE_STEP bytes (a
    byte is never reported twice: a second walk from the start adds nothing until it passes
    the first), :meth:`add` reports a count, :meth:`done` the rest of the segment; the sink
    hears byte counts."""

    def __init__(self, sink: Callable[[int], None] | None):
        self.sink = sink
        self.reported = 0  # bytes of the current segment reported

    def at(self, position: int) -> None:
        if self.sink is not None and position - self.reported >= PHASE_STEP:
            self.add(position - self.reported)

    def add(self, n: int) -> None:
        if self.sink is not None:
            self.sink(n)
        self.reported += n

    def done(self, size: int) -> None:
        if size > self.reported:
            self.add(size - self.reported)
        self.reported = 0


def phase_walk(progress: Progress, phase: str, total: int) -> Walked:
    """A :class:`Walked` for one phase (of ``total`` bytes) of work done in phases over the
    same segments (compact: reading, the offset map, cleaning)."""
    return Walked(lambda n: progress.phase(phase, n, total))


def refuse_not_a_log(result: ScanResult | None, path: str) -> None:
    """A ``.log`` from which no entry can be read (a PNG under a segment's name) is no Kafka
    file: the reading commands that report a partition as a whole end there (exit 3)."""
    if result is not None and (bad := not_a_log(result)) is not None:
        raise InputError(
            f"not a Kafka log segment: {bad}", path=path, position=0, code=Code.NOT_A_LOG
        )

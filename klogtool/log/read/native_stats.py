"""The native engine's adapter for ``stats``' per-record aggregates
(:mod:`klogtool.log.read.stats`): a partition's record loop kept in Rust
(``native/src/stats.rs``), so that no record becomes a Python object, with the python loop's
arithmetic, hash (BLAKE2b, 8 bytes) and sketches' tie-breaking, so that the finished
:class:`~klogtool.log.read.stats.PartitionStats` is the one the python engine makes. None
wherever stats must count in Python; the module reaches the native engine only through
:func:`klogtool.formats.engine.native_module`.

What stays in Python: the batch-level counts (volume, codecs, magics, producers), the what-if
sample and its compression (one implementation of each codec, so the sizes agree), control
batches and v0/v1 message sets (their records are handed in with :func:`add_rows`), and the
HyperLogLog's estimate (Python's float arithmetic, from the registers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from klogtool.formats import engine

if TYPE_CHECKING:
    from typing_extensions import Buffer

# a record the python engine read: (key, value length or None, timestamp, header count, header
# bytes: names in characters, values in bytes)
Row = tuple[bytes | None, int | None, int, int, int]


class Records(Protocol):
    """``klogtool._native.StatsRecords``: one partition's per-record aggregates."""

    def batch(
        self, batch: Buffer, max_batch_bytes: int, aborted: bool, expired: bool
    ) -> tuple[int, int] | None: ...
    def area(self, limit: int) -> bytes: ...
    def add_rows(self, rows: list[Row], aborted: bool, expired: bool) -> None: ...
    def finish(self) -> dict[str, Any]: ...


def records(now: int, exact_keys: int, heavy_counters: int, where: str) -> Records | None:
    """A partition's native aggregates (``now`` in ms, the exact key set's bound, the heaviest
    keys' counters), or None: count in Python (the python engine, or bounds the kernel does
    not take)."""
    native = engine.native_module()
    if native is None or heavy_counters < 1 or exact_keys < 0:
        return None
    make: Callable[[int, int, int], Records] = native.StatsRecords
    return engine.call(where, make, now, exact_keys, heavy_counters)


def count_batch(
    kernel: Records,
    data: Buffer,
    max_batch_bytes: int,
    aborted: bool,
    expired: bool,
    where: str,
) -> tuple[int, int] | None:
    """Count the records of a whole v2 batch (not a control batch): ``(records, uncompressed
    records area bytes)``, or None: nothing was counted, read the batch in Python."""
    return engine.call(where, kernel.batch, data, max_batch_bytes, aborted, expired)


def area(kernel: Records, limit: int, where: str) -> bytes:
    """The last counted batch's decompressed records area, at most ``limit`` bytes."""
    return engine.call(where, kernel.area, limit) or b""


def add_rows(
    kernel: Records, rows: Iterable[Row], aborted: bool, expired: bool, where: str
) -> None:
    """Records the python engine read, in order."""
    engine.call(where, kernel.add_rows, list(rows), aborted, expired)


def finish(kernel: Records, where: str) -> dict[str, Any]:
    """The finished aggregates, by name (:meth:`PartitionStats.take_native
    <klogtool.log.read.stats.PartitionStats.take_native>` puts them where the python loop
    leaves its own)."""
    d = engine.call(where, kernel.finish)
    assert d is not None
    return d

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

import heapq
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from klogtool.formats import engine

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from klogtool.log.read.stats import PartitionStats, StatsOptions

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


def records(options: StatsOptions, where: str) -> Records | None:
    """A partition's native aggregates, or None: count in Python (the python engine, or
    options the kernel does not take)."""
    native = engine.native_module()
    if native is None or options.heavy_counters < 1 or options.exact_keys < 0:
        return None
    make: Callable[[int, int, int], Records] = native.StatsRecords
    return engine.call(where, make, options.now, options.exact_keys, options.heavy_counters)


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


def finish(kernel: Records, st: PartitionStats, where: str) -> None:
    """Put the finished aggregates into ``st`` where the python loop leaves them, so that
    :meth:`PartitionStats.finish` ends the same way."""
    from klogtool.log.read.stats import HyperLogLog

    d = engine.call(where, kernel.finish)
    assert d is not None
    for name in ("key_sizes", "value_sizes", "header_sizes", "header_counts"):
        h, s = getattr(st, name), d[name]
        h.buckets, h.count, h.nulls, h.total = s["buckets"], s["count"], s["nulls"], s["total"]
        h.min, h.max = s["min"], s["max"]
    for name in ("tombstones", "no_timestamp", "out_of_order", "future"):
        setattr(st, name, d[name])
    for name in ("aborted", "keyless", "keyed"):
        setattr(st, name, d[name])
    st.first_timestamp = d["first_timestamp"]
    st._max_ts = d["max_ts"]
    st.times.width = d["time_width"]
    st.times.counts = d["time_counts"]
    top = st.top_keys
    top.counts = {h: c for h, _label, c, _e in d["top"]}
    top.errors = {h: e for h, _label, _c, e in d["top"]}
    top.labels = {h: label for h, label, _c, _e in d["top"]}
    top.floor = d["top_floor"]
    top._heap = [(c, h) for h, c in top.counts.items()]
    heapq.heapify(top._heap)
    st._keys = None
    st.distinct_exact = d["distinct_exact"]
    st.top_exact = d["top_exact"]
    if d["exact"] is not None:
        distinct, expired = d["exact"]
        st.distinct_keys = float(distinct)
        st.superseded = float(st.keyed - distinct)
        st.tombstones_expired = expired
    else:
        hll = HyperLogLog()
        hll.registers = bytearray(d["hll"])
        st._hll = hll
        st._expired_after = d["expired_after"]

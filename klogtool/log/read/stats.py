"""``stats`` as a library: what is in segments, partitions, topics and log dirs, in numbers.

One pass over every record, with memory that does not grow with the data:

* Volume: records, batches, bytes on disk and uncompressed (the batch with its records area
  decompressed), per codec, and the compression ratio.
* Sizes: key, value and header sizes in fixed log2 buckets (bucket ``b`` holds sizes in
  ``[2**(b-1), 2**b)``, bucket 0 the size 0); percentiles are read off the buckets,
  interpolated linearly inside one (so within a factor of two, exact at min and max).
* Time: first and last record timestamps, records per time bucket (buckets of a power-of-two
  number of seconds, doubled whenever more than :data:`TIME_BUCKETS` would be needed), records
  whose timestamp is below the previous record's in the partition, in offset order (out of
  order: inversions between neighbours, so one future-dated record counts once, for the
  record after it; records without a timestamp are skipped), records after ``now``
  (future), and records by timestamp type (CreateTime, LogAppendTime).
* Producers: distinct producer ids (exact up to :data:`MAX_PRODUCERS`, then only the ones seen
  first), records of idempotent and of transactional batches, the largest producers.
* Keys, per partition (compaction is per partition): distinct keys, exact in a set of 64-bit
  key hashes (BLAKE2b) up to ``exact_keys`` keys; past that, a :class:`HyperLogLog`
  (2**14 registers, Ertl's unbiased estimator, standard error 1.04/sqrt(m) = 0.81 %). The
  heaviest keys come from a :class:`TopCounter` (space-saving, :data:`HEAVY_COUNTERS`
  counters): while the key set is
  exact their counts are exact; afterwards each count is a range ``[count - error, count]``
  that holds the true count, with every error at most ``floor <= keyed records / counters``,
  and every key seen more often than ``floor`` is counted. Keyless and tombstone shares.
* Compaction potential: the share of a partition's data records (control records aside) that
  a compaction of the whole log would remove now. The rule, from the cleaner
  (:mod:`klogtool.log.rewrite.cleaner`, ``Cleaner._retain``): a keyless record goes; a record whose
  key appears again later in the partition is superseded and goes; the latest record of a key
  goes when it is a tombstone (null value) of a v2 batch whose delete horizon (KIP-534) is at or
  before ``now``; records of aborted transactions go (the cleaner discards them first, so they
  neither supersede nor count as keys). Which transactions aborted comes from a header pass
  (:func:`klogtool.log.txnstates.transaction_states`). Not counted: transaction markers (the
  cleaner keeps one until its transaction's data is gone and ``delete.retention.ms`` passed),
  and the cleaner's bounds (active segment, last stable offset,
  ``min.compaction.lag.ms``, the dirty ratio): it is what could go, not what the next
  cleaning pass will take. Past the exact key bound, superseded records are estimated as keyed
  records minus the estimated distinct keys, and expired tombstones seen after the switch are
  all counted (``compaction_estimated`` is then true).
* What if: a sample of batches' uncompressed records areas (up to ``sample_bytes``, spread over
  the data by size; an area past the budget is cut at it) is compressed batch by batch with
  every codec (zstd at levels 1, 3, 9, 19) through :func:`klogtool.formats.codecs.compress`,
  with the time it took; an area larger than :data:`WHAT_IF_PIECE` in pieces of that size. The
  slow levels compress a part of the sample spread over it (:data:`WHAT_IF_PART`).

:func:`collect` gives one :class:`PartitionStats` per partition (with ``jobs > 1`` from a
process pool), :func:`total` merges them, :func:`what_if` measures the sample.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from klogtool.formats import codecs
from klogtool.formats.batch import (
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    Batch,
)
from klogtool.formats.errors import FormatError
from klogtool.formats.records import CLEAN, ZERO_FILL, SegmentScanner
from klogtool.formats.v2 import RECORD_BATCH_OVERHEAD, DefaultBatch
from klogtool.log.context import ReadContext
from klogtool.log.epochs import EpochRow, EpochRuns, read_checkpoint, timeline
from klogtool.log.layout import LEADER_EPOCH_CHECKPOINT
from klogtool.log.partition import load_partition
from klogtool.log.pool import processes, worker_deaths
from klogtool.log.read import native_stats
from klogtool.log.read.finder import Target, resolve_targets
from klogtool.log.record_filter import ABORTED, first_offset
from klogtool.log.remote_tier import TierCache
from klogtool.log.segment import mapped, refuse_not_a_log
from klogtool.log.txnstates import TransactionStates, transaction_states

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.log.remote_layouts import TieredReads

Obj = dict[str, Any]

SIZE_BUCKETS = 41  # log2 buckets: sizes up to 2**40 bytes
TIME_BUCKETS = 512  # the most time buckets kept before their width doubles
CHART_BUCKETS = 40  # buckets in the records-per-time chart
EXACT_KEYS = 1_000_000
MAX_PRODUCERS = 100_000
TOP = 10  # heaviest keys and largest producers reported
HEAVY_COUNTERS = 1024  # space-saving counters for the heaviest keys, per partition
SAMPLE_BYTES = 8 << 20
# The what-if compresses a sampled records area in pieces of at most this (Kafka's default
# largest batch, message.max.bytes): a compressor's memory grows with its input (zstd at level
# 19 takes ~90 MB for a 9 MB area, the records of a million-record batch; ~17 MB for 1 MiB).
WHAT_IF_PIECE = 1 << 20
HLL_P = 14
HLL_STANDARD_ERROR = 1.04 / (1 << HLL_P) ** 0.5
# The rows of the slow levels compress at most this much of the sample, spread over it (their
# ``bytes`` scaled to the whole sample, their ratio and speed measured on that part): zstd at
# level 19 runs at 0.5-3 MB/s (3-18 s for the 8 MiB default sample; every other row together
# takes well under a second), level 9 at 15-25 MB/s on JSON-like values. Batches are
# compressed one by one, so a ratio is an average over batches: a part spread over the
# sample estimates it as the whole does, less precisely.
WHAT_IF_PART: dict[str, int] = {"zstd-9": 2 << 20, "zstd-19": 128 << 10}
# (label, codec id, level): what each "what if" row compresses with
WHAT_IF_CODECS: tuple[tuple[str, int, int | None], ...] = (
    ("gzip", codecs.GZIP, None),
    ("snappy", codecs.SNAPPY, None),
    ("lz4", codecs.LZ4, None),
    ("zstd-1", codecs.ZSTD, 1),
    ("zstd-3", codecs.ZSTD, 3),
    ("zstd-9", codecs.ZSTD, 9),
    ("zstd-19", codecs.ZSTD, 19),
)
_ROWS_AT_ONCE = 4096  # records read in Python handed to the native kernel at a time
_LEGACY_HEADER = {0: 14, 1: 22}  # crc, magic, attributes, [timestamp], key and value lengths
_MASK64 = (1 << 64) - 1


def key_hash(key: bytes | memoryview) -> int:
    """The 64-bit hash keys are counted by (BLAKE2b: the same in every process)."""
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


# -- sketches -------------------------------------------------------------------------------------
class HyperLogLog:
    """Flajolet et al.'s HyperLogLog over 64-bit hashes, ``2**p`` one-byte registers, read by
    Ertl's improved estimator (:meth:`estimate`).

    Standard error 1.04/sqrt(2**p) (0.81 % at p = 14, 16 KiB), less with few keys; no
    large-range correction is needed with 64-bit hashes."""

    def __init__(self, p: int = HLL_P) -> None:
        self.p = p
        self.m = 1 << p
        self.registers = bytearray(self.m)

    @property
    def standard_error(self) -> float:
        return float(1.04 / self.m**0.5)

    def add(self, h: int) -> None:
        q = 64 - self.p
        i = h >> q
        rank = q - (h & ((1 << q) - 1)).bit_length() + 1
        if rank > self.registers[i]:
            self.registers[i] = rank

    def merge(self, other: HyperLogLog) -> None:
        assert other.p == self.p
        self.registers = bytearray(map(max, self.registers, other.registers))

    def estimate(self) -> float:
        """O. Ertl, "New cardinality estimation methods for HyperLogLog sketches" (2017,
        arXiv:1706.07290), the improved raw estimator: one formula over the registers'
        histogram, with no bias to measure (under 0.1 % over 200 key sets) at any number of
        keys. The original switched from linear counting to its raw estimate at 2.5 * m and
        ran up to +4 % high just past it; this has no switch and, unlike HyperLogLog++, no
        empirical bias tables."""
        m, q = self.m, 64 - self.p
        counts = [self.registers.count(k) for k in range(q + 2)]  # ranks 0 .. q + 1
        # alpha_inf * m**2 / (m sigma(C_0/m) + sum C_k 2**-k + m tau(1 - C_(q+1)/m) 2**-q),
        # the sum by Horner's rule from k = q down
        z = m * _hll_tau(1 - counts[q + 1] / m)
        for k in range(q, 0, -1):
            z = 0.5 * (z + counts[k])
        z += m * _hll_sigma(counts[0] / m)  # infinite with no register set: the estimate is 0
        # z is 0 only with every register at its top, past what 64-bit hashes tell apart
        return m * m / (2 * math.log(2)) / z if z else float(1 << 64)


def _hll_sigma(x: float) -> float:
    """Ertl's sigma(x) = x + sum over k >= 1 of x**(2**k) * 2**(k-1), x the share of
    registers still 0: their term, which makes the estimate right with few keys."""
    if x == 1:
        return math.inf
    y, z = 1.0, x
    while True:  # x**(2**k) falls doubly exponentially: z stops changing in a few dozen steps
        x *= x
        last = z
        z += x * y
        y += y
        if z == last:
            return z


def _hll_tau(x: float) -> float:
    """Ertl's tau(x) = (1 - x - sum over k >= 1 of (1 - x**(2**-k))**2 * 2**-k) / 3, x the
    share of registers below the top rank q + 1: their term (it matters only near 2**64 keys)."""
    if x in (0, 1):
        return 0.0
    y, z = 1.0, 1 - x
    while True:  # the roots near 1.0 and the terms fall 8-fold a step: z stops changing
        x = math.sqrt(x)
        last = z
        y *= 0.5
        z -= (1 - x) ** 2 * y
        if z == last:
            return z / 3


class TopCounter:
    """Metwally et al.'s space-saving: the heaviest items of a stream in ``k`` counters.

    Each counted item has a count and an error: its true count lies in
    ``[count - error, count]``. ``floor`` bounds everything else: an item without a counter was
    seen at most ``floor`` times, and no counted item's error exceeds it. When the table is
    full a newcomer takes the counter of the lightest item (found through a lazy min-heap):
    it starts at that count plus one, with that count as its error. The counts then add up to
    at most the items seen, ``N``, so ``floor <= N / k``: every item seen more than ``N / k``
    times has a counter. Merges follow Agarwal et al.'s mergeable summaries (a counter missing
    on one side counts that side's floor, as count and as error), which keeps both bounds."""

    def __init__(self, k: int = HEAVY_COUNTERS) -> None:
        self.k = k
        self.counts: dict[int, int] = {}
        self.errors: dict[int, int] = {}
        self.labels: dict[int, bytes] = {}
        self.floor = 0
        self._heap: list[tuple[int, int]] = []  # (count when pushed, item): one per item

    def add(self, h: int, label: bytes | memoryview, n: int = 1) -> None:
        counts = self.counts
        c = counts.get(h)
        if c is not None:
            counts[h] = c + n
            return
        heap = self._heap
        if len(counts) < self.k:
            base = self.floor
            heapq.heappush(heap, (base + n, h))
        else:
            while True:  # the lightest item: heap entries lag behind their counts
                base, low = heap[0]
                current = counts[low]
                if current == base:
                    break
                heapq.heapreplace(heap, (current, low))
            heapq.heapreplace(heap, (base + n, h))
            del counts[low], self.errors[low], self.labels[low]
            if base > self.floor:
                self.floor = base
        counts[h] = base + n
        self.errors[h] = base
        self.labels[h] = bytes(label[:64])

    def settle(self, exact: dict[int, int], floor: int) -> None:
        """Known true counts for the counted items (``exact``) and a new bound ``floor`` on
        every other item: each count becomes ``max(true, floor)`` (so the lightest counter
        still bounds the items without one), its error what that adds to the truth."""
        self.counts = {h: max(exact[h], floor) for h in self.counts}
        self.errors = {h: c - exact[h] for h, c in self.counts.items()}
        self.floor = floor
        self._heap = [(c, h) for h, c in self.counts.items()]
        heapq.heapify(self._heap)

    def merge(self, other: TopCounter) -> None:
        f1, f2 = self.floor, other.floor
        counts: dict[int, int] = {}
        errors: dict[int, int] = {}
        for h in self.counts.keys() | other.counts.keys():
            counts[h] = self.counts.get(h, f1) + other.counts.get(h, f2)
            errors[h] = self.errors.get(h, f1) + other.errors.get(h, f2)
        labels = {**other.labels, **self.labels}
        kept = heapq.nlargest(self.k + 1, counts.items(), key=lambda kv: (kv[1], -kv[0]))
        floor = f1 + f2
        if len(kept) > self.k:  # the heaviest item left out bounds the ones left out
            floor = max(floor, kept.pop()[1])
        self.counts = dict(kept)
        self.errors = {h: errors[h] for h in self.counts}
        self.labels = {h: labels[h] for h in self.counts}
        self.floor = floor
        self._heap = [(c, h) for h, c in self.counts.items()]
        heapq.heapify(self._heap)

    def top(self, n: int) -> list[tuple[int, bytes, int, int]]:
        """``(hash, label, count, error)`` of the ``n`` heaviest counts, heaviest first."""
        best = heapq.nlargest(n, self.counts.items(), key=lambda kv: (kv[1], -kv[0]))
        return [(h, self.labels[h], c, self.errors[h]) for h, c in best]


class SizeHistogram:
    """Sizes in log2 buckets (see the module docstring), with nulls counted apart."""

    def __init__(self) -> None:
        self.buckets = [0] * SIZE_BUCKETS
        self.count = 0
        self.nulls = 0
        self.total = 0
        self.min: int | None = None
        self.max: int | None = None

    def add(self, n: int) -> None:
        self.buckets[min(n.bit_length(), SIZE_BUCKETS - 1)] += 1
        self.count += 1
        self.total += n
        if self.min is None or n < self.min:
            self.min = n
        if self.max is None or n > self.max:
            self.max = n

    def merge(self, other: SizeHistogram) -> None:
        self.buckets = [a + b for a, b in zip(self.buckets, other.buckets, strict=True)]
        self.count += other.count
        self.nulls += other.nulls
        self.total += other.total
        self.min = _opt(min, self.min, other.min)
        self.max = _opt(max, self.max, other.max)

    def percentile(self, q: float) -> float | None:
        """The ``q`` quantile (0..1), interpolated inside its bucket, clamped to [min, max]."""
        if not self.count or self.min is None or self.max is None:
            return None
        rank = q * self.count
        seen = 0
        for b, n in enumerate(self.buckets):
            if not n:
                continue
            if seen + n >= rank:
                lo, hi = bucket_bounds(b)
                lo, hi = max(lo, self.min), min(hi, self.max)
                value = lo + (hi - lo) * max(0.0, rank - seen) / n
                return float(max(self.min, min(self.max, value)))
            seen += n
        return float(self.max)

    def as_obj(self) -> Obj:
        return {
            "count": self.count,
            "nulls": self.nulls,
            "bytes": self.total,
            "min": self.min,
            "max": self.max,
            "mean": round(self.total / self.count, 1) if self.count else None,
            "p50": _round(self.percentile(0.5)),
            "p90": _round(self.percentile(0.9)),
            "p99": _round(self.percentile(0.99)),
            "buckets": [
                {"from": bucket_bounds(b)[0], "to": bucket_bounds(b)[1], "count": n}
                for b, n in enumerate(self.buckets)
                if n
            ],
        }


def _opt(pick: Callable[[int, int], int], a: int | None, b: int | None) -> int | None:
    """``pick(a, b)`` of the ones that are not None."""
    return b if a is None else a if b is None else pick(a, b)


def bucket_bounds(b: int) -> tuple[int, int]:
    """Bucket ``b``'s sizes, inclusive: 0 → (0, 0), 1 → (1, 1), 2 → (2, 3), 3 → (4, 7)..."""
    if b == 0:
        return 0, 0
    return 1 << (b - 1), (1 << b) - 1


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


class TimeBuckets:
    """Records per time bucket; the width (ms) doubles when the span needs more buckets."""

    def __init__(self, width: int = 1000) -> None:
        self.width = width
        self.counts: dict[int, int] = {}

    def add(self, ts: int, n: int = 1) -> None:
        i = ts // self.width
        counts = self.counts
        counts[i] = counts.get(i, 0) + n
        if len(counts) > TIME_BUCKETS:
            self._widen()

    def _widen(self) -> None:
        while len(self.counts) > TIME_BUCKETS or (
            self.counts and max(self.counts) - min(self.counts) > 64 * TIME_BUCKETS
        ):
            self.width *= 2
            widened: dict[int, int] = {}
            for i, n in self.counts.items():
                widened[i // 2] = widened.get(i // 2, 0) + n
            self.counts = widened

    def merge(self, other: TimeBuckets) -> None:
        while self.width < other.width:
            self.width *= 2
            self.counts = _halve(self.counts)
        theirs = dict(other.counts)
        width = other.width
        while width < self.width:
            width *= 2
            theirs = _halve(theirs)
        for i, n in theirs.items():
            self.counts[i] = self.counts.get(i, 0) + n
        if len(self.counts) > TIME_BUCKETS:
            self._widen()

    def chart(self, n: int = CHART_BUCKETS) -> tuple[int, int, list[int]]:
        """``(start ms, bucket width ms, counts)``: at most ``n`` equal buckets from the first
        record's bucket to the last's, empty ones included."""
        if not self.counts:
            return 0, self.width, []
        lo, hi = min(self.counts), max(self.counts)
        per = max(1, -(-(hi - lo + 1) // n))
        out = [0] * (-(-(hi - lo + 1) // per))
        for i, c in self.counts.items():
            out[(i - lo) // per] += c
        return lo * self.width, per * self.width, out


def _halve(counts: dict[int, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for i, n in counts.items():
        out[i // 2] = out.get(i // 2, 0) + n
    return out


# -- per partition ------------------------------------------------------------------------------
@dataclass
class StatsOptions:
    now: int = 0  # ms: future timestamps and expired delete horizons are judged against it
    exact_keys: int = EXACT_KEYS
    heavy_counters: int = HEAVY_COUNTERS  # space-saving counters for the heaviest keys
    sample_bytes: int = SAMPLE_BYTES
    sample_fraction: float = 1.0  # of the on-disk bytes whose records areas are sampled
    ctx: ReadContext = field(kw_only=True)


@dataclass
class PartitionStats:
    """The aggregates of one partition (or of several, after :meth:`merge`)."""

    path: str
    topic: str | None = None
    partition: int | None = None
    # the topic's cleanup.policy and where it came from (the host's metadata log, or Kafka's
    # default: config_sources' words), set by the caller that knows the host's configs
    cleanup_policy: str | None = None
    cleanup_policy_source: str | None = None
    partitions: int = 1
    segments: int = 0
    batches: int = 0
    records: int = 0
    control_records: int = 0
    bytes_on_disk: int = 0  # of the batches read
    bytes_uncompressed: int = 0
    unreadable_bytes: int = 0
    problems: list[str] = field(default_factory=list)
    # a whole partition's leader-epoch timeline (klogtool.log.epochs); None for a total or
    # for segments named one by one
    epochs: list[EpochRow] | None = None
    remote_tier: dict[str, Any] | None = None  # a tiered partition's (remote_tier.TierSummary)
    codecs: dict[str, list[int]] = field(default_factory=dict)  # name: [batches, records, bytes]
    magics: dict[int, int] = field(default_factory=dict)  # magic: batches
    key_sizes: SizeHistogram = field(default_factory=SizeHistogram)
    value_sizes: SizeHistogram = field(default_factory=SizeHistogram)
    header_sizes: SizeHistogram = field(default_factory=SizeHistogram)
    header_counts: SizeHistogram = field(default_factory=SizeHistogram)
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    out_of_order: int = 0
    future: int = 0
    no_timestamp: int = 0  # v0 records, and timestamps of -1
    create_time: int = 0
    log_append_time: int = 0
    times: TimeBuckets = field(default_factory=TimeBuckets)
    idempotent_records: int = 0
    transactional_records: int = 0
    producers: dict[int, int] = field(default_factory=dict)  # producer id: records
    producers_truncated: bool = False
    keyed: int = 0
    keyless: int = 0
    aborted: int = 0  # records of aborted transactions
    tombstones: int = 0
    distinct_keys: float = 0.0
    distinct_exact: bool = True
    superseded: float = 0.0
    tombstones_expired: int = 0
    top_keys: TopCounter = field(default_factory=TopCounter)
    top_exact: bool = True
    sample: list[bytes] = field(default_factory=list)  # uncompressed records areas
    sample_records: int = 0
    # the exact phase: key hash -> count * 2 + (latest record is an expired tombstone)
    _keys: dict[int, int] | None = field(default_factory=dict, repr=False)
    _hll: HyperLogLog | None = field(default=None, repr=False)
    _expired_after: int = 0  # expired tombstones seen past the exact phase
    _max_ts: int = -1
    _prev_ts: int = -1  # the previous record's timestamp (out of order: below it)

    # -- derived --------------------------------------------------------------------------------
    @property
    def data_records(self) -> int:
        return self.records - self.control_records

    @property
    def compaction_removable(self) -> float:
        n = self.keyless + self.superseded + self.tombstones_expired + self.aborted
        return min(float(self.data_records), n)

    @property
    def compaction_estimated(self) -> bool:
        return not self.distinct_exact

    def take_native(self, d: dict[str, Any]) -> None:
        """Put the native kernel's finished aggregates (:func:`native_stats.finish`) where the
        python loop leaves them, so that :meth:`finish` ends the same way."""
        for name in ("key_sizes", "value_sizes", "header_sizes", "header_counts"):
            h, s = getattr(self, name), d[name]
            h.buckets, h.count, h.nulls, h.total = s["buckets"], s["count"], s["nulls"], s["total"]
            h.min, h.max = s["min"], s["max"]
        for name in ("tombstones", "no_timestamp", "out_of_order", "future"):
            setattr(self, name, d[name])
        for name in ("aborted", "keyless", "keyed"):
            setattr(self, name, d[name])
        self.first_timestamp = d["first_timestamp"]
        self._max_ts = d["max_ts"]
        self.times.width = d["time_width"]
        self.times.counts = d["time_counts"]
        top = self.top_keys
        top.counts = {h: c for h, _label, c, _e in d["top"]}
        top.errors = {h: e for h, _label, _c, e in d["top"]}
        top.labels = {h: label for h, label, _c, _e in d["top"]}
        top.floor = d["top_floor"]
        top._heap = [(c, h) for h, c in top.counts.items()]
        heapq.heapify(top._heap)
        self._keys = None
        self.distinct_exact = d["distinct_exact"]
        self.top_exact = d["top_exact"]
        if d["exact"] is not None:
            distinct, expired = d["exact"]
            self.distinct_keys = float(distinct)
            self.superseded = float(self.keyed - distinct)
            self.tombstones_expired = expired
        else:
            hll = HyperLogLog()
            hll.registers = bytearray(d["hll"])
            self._hll = hll
            self._expired_after = d["expired_after"]

    def finish(self) -> None:
        """Turn the exact key set into counts and drop it (it is not merged or shipped)."""
        if self._max_ts >= 0:
            self.last_timestamp = self._max_ts
        if self._keys is not None:
            keys = self._keys
            self.distinct_keys = float(len(keys))
            self.superseded = float(self.keyed - len(keys))
            self.tombstones_expired = sum(v & 1 for v in keys.values())
            _settle_top(self.top_keys, keys)
            self._keys = None
        elif self._hll is not None:
            est = self._hll.estimate()
            self.distinct_keys = est
            self.superseded = max(0.0, self.keyed - est)
            self.tombstones_expired += self._expired_after
            self._expired_after = 0
            self.top_exact = False
            self._hll = None

    def merge(self, o: PartitionStats) -> None:
        """Add a finished partition's aggregates to these (a total)."""
        for name in (
            "partitions",
            "segments",
            "batches",
            "records",
            "control_records",
            "bytes_on_disk",
            "bytes_uncompressed",
            "unreadable_bytes",
            "out_of_order",
            "future",
            "no_timestamp",
            "create_time",
            "log_append_time",
            "idempotent_records",
            "transactional_records",
            "keyed",
            "keyless",
            "aborted",
            "tombstones",
            "distinct_keys",
            "superseded",
            "tombstones_expired",
            "sample_records",
        ):
            setattr(self, name, getattr(self, name) + getattr(o, name))
        self.problems += o.problems
        for name, (b, r, n) in o.codecs.items():
            mine = self.codecs.setdefault(name, [0, 0, 0])
            mine[0] += b
            mine[1] += r
            mine[2] += n
        for magic, n in o.magics.items():
            self.magics[magic] = self.magics.get(magic, 0) + n
        for h in ("key_sizes", "value_sizes", "header_sizes", "header_counts"):
            getattr(self, h).merge(getattr(o, h))
        self.first_timestamp = _opt(min, self.first_timestamp, o.first_timestamp)
        self.last_timestamp = _opt(max, self.last_timestamp, o.last_timestamp)
        self.times.merge(o.times)
        for pid, n in o.producers.items():
            if pid in self.producers or len(self.producers) < MAX_PRODUCERS:
                self.producers[pid] = self.producers.get(pid, 0) + n
            else:
                self.producers_truncated = True
        self.producers_truncated |= o.producers_truncated
        self.distinct_exact &= o.distinct_exact
        self.top_exact &= o.top_exact
        self.top_keys.merge(o.top_keys)
        self.sample += o.sample

    # -- output ---------------------------------------------------------------------------------
    def as_obj(self, scope: str = "partition", what_if: Obj | None = None) -> events.StatsStats:
        """The ``stats`` object (docs/stats.md); the total (``scope`` "total") carries the
        what-if last (:func:`what_if`; None without a sample)."""
        start, width, counts = self.times.chart()
        share = _share
        codec_rows = {
            name: {"batches": b, "records": r, "bytes": n}
            for name, (b, r, n) in sorted(self.codecs.items())
        }
        producers = sorted(self.producers.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]
        heaviest = self.top_keys.top(TOP)
        obj: events.StatsStats = {
            "type": "stats",
            "scope": scope,
            "path": self.path,
            "topic": self.topic,
            "partition": self.partition,
            "partitions": self.partitions,
            "segments": self.segments,
            "volume": {
                "batches": self.batches,
                "records": self.records,
                "control_records": self.control_records,
                "bytes_on_disk": self.bytes_on_disk,
                "bytes_uncompressed": self.bytes_uncompressed,
                "compression_ratio": round(self.bytes_uncompressed / self.bytes_on_disk, 3)
                if self.bytes_on_disk
                else None,
                "codecs": codec_rows,
                "magics": {str(k): v for k, v in sorted(self.magics.items())},
                "unreadable_bytes": self.unreadable_bytes,
            },
            "sizes": {
                "key": self.key_sizes.as_obj(),
                "value": self.value_sizes.as_obj(),
                "headers": self.header_sizes.as_obj(),
                "header_count": self.header_counts.as_obj(),
            },
            "time": {
                "first_timestamp": self.first_timestamp,
                "last_timestamp": self.last_timestamp,
                "out_of_order": self.out_of_order,
                "future": self.future,
                "no_timestamp": self.no_timestamp,
                "create_time": self.create_time,
                "log_append_time": self.log_append_time,
                "bucket_start": start,
                "bucket_ms": width,
                "buckets": counts,
            },
            "producers": {
                "count": len(self.producers),
                "count_truncated": self.producers_truncated,
                "idempotent_records": self.idempotent_records,
                "idempotent_share": share(self.idempotent_records, self.data_records),
                "transactional_records": self.transactional_records,
                "transactional_share": share(self.transactional_records, self.data_records),
                "largest": [{"producer_id": p, "records": n} for p, n in producers],
            },
            "keys": {
                "keyed": self.keyed,
                "keyless": self.keyless,
                "keyless_share": share(self.keyless, self.data_records),
                "distinct": round(self.distinct_keys),
                "distinct_exact": self.distinct_exact,
                "distinct_standard_error": None if self.distinct_exact else HLL_STANDARD_ERROR,
                "tombstones": self.tombstones,
                "tombstone_share": share(self.tombstones, self.data_records),
                "heaviest": [_key_obj(label, n, error) for _h, label, n, error in heaviest],
                # exact only if every count listed is: a total gives a key that one partition
                # did not count that partition's floor as its error (a range), and so may a
                # partition of more keys than counters its lightest counted keys
                "heaviest_exact": self.top_exact and not any(e for *_, e in heaviest),
                "heaviest_counters": self.top_keys.k,
                "heaviest_floor": self.top_keys.floor,
                "compaction": {
                    "removable": round(self.compaction_removable),
                    "share": share(self.compaction_removable, self.data_records),
                    "superseded": round(self.superseded),
                    "keyless": self.keyless,
                    "aborted": self.aborted,
                    "tombstones_expired": self.tombstones_expired,
                    "estimated": self.compaction_estimated,
                    "cleanup_policy": self.cleanup_policy,
                    "cleanup_policy_source": self.cleanup_policy_source,
                },
            },
            "problems": self.problems,
        }
        if scope == "total":
            obj["what_if"] = what_if
        elif self.epochs is not None:
            obj["epochs"] = [asdict(e) for e in self.epochs]
        if self.remote_tier is not None:
            obj["remote_tier"] = self.remote_tier
        return obj


def _key_obj(label: bytes, n: int, error: int) -> Obj:
    """A heavy key: as text when it is UTF-8, else in base64 (at most its first 64 bytes), with
    its count's bounds: ``records_min <= true count <= records``."""
    counts = {"records": n, "records_min": n - error, "error": error}
    try:
        return {"key": label.decode("utf-8"), **counts}
    except UnicodeDecodeError:
        import base64

        return {"key_base64": base64.b64encode(label).decode("ascii"), **counts}


def _share(n: float, d: int) -> float | None:
    return round(n / d, 4) if d else None


# -- the walk -----------------------------------------------------------------------------------
class _Sampler:
    """Which batches' records areas go to the what-if sample: spread evenly by on-disk bytes."""

    def __init__(self, fraction: float, budget: int) -> None:
        self.fraction = fraction
        self.budget = budget
        self.credit = 0.0
        self.taken = 0

    def wants(self, size: int) -> bool:
        if self.taken >= self.budget:
            return False
        self.credit += self.fraction * size
        return self.credit > 0

    @property
    def room(self) -> int:
        """Uncompressed bytes the sample may still take."""
        return max(0, self.budget - self.taken)

    def took(self, size: int, n: int) -> None:
        """A batch of ``size`` bytes on disk, ``n`` uncompressed, was taken."""
        self.credit -= size
        self.taken += n


def partition_stats(
    target: Target,
    options: StatsOptions,
    sampler: _Sampler | None = None,
) -> PartitionStats:
    """Walk every batch and record of one partition (or of the segments named)."""
    advance = options.ctx.progress.advance
    st = PartitionStats(target.display, target.topic, target.partition)
    st.top_keys = TopCounter(options.heavy_counters)
    sampler = sampler or _Sampler(options.sample_fraction, options.sample_bytes)
    txns = transaction_states(target.segments, options.ctx.limits)
    runs = EpochRuns()
    # the native engine: the record loop in Rust (klogtool/log/read/native_stats.py)
    kernel = native_stats.records(
        options.now, options.exact_keys, options.heavy_counters, target.display
    )
    for files, display in zip(target.segments, target.seg_displays, strict=True):
        assert files.log is not None
        st.segments += 1
        with mapped(files.log) as buf:
            scanner = SegmentScanner(buf, check_crc=False, stop_on_crc=False)
            reported = 0
            for batch in scanner:
                before = st.records
                runs.add(batch, first_offset(batch))
                try:
                    _batch(st, batch, options, sampler, txns, kernel, display)
                except FormatError as e:
                    st.problems.append(
                        f"{display}:{batch.position}: cannot decode the records: {e} ({e.code})"
                    )
                if batch.position - reported >= 4 << 20:
                    advance(batch.position - reported, st.records - before)
                    reported = batch.position
                else:
                    advance(0, st.records - before)
            advance(len(buf) - reported, 0)
            result = scanner.result
            refuse_not_a_log(result, str(files.log))  # as the transactions scan did
            if result is not None and result.end not in (CLEAN, ZERO_FILL):
                st.unreadable_bytes += result.size - result.stopped_at
                st.problems.append(
                    f"{display}:{result.stopped_at}: the last {result.size - result.stopped_at} "
                    f"bytes cannot be read ({result.error or result.end})"
                )
    if target.whole and target.directory is not None:
        entries, _ = read_checkpoint(target.directory / LEADER_EPOCH_CHECKPOINT)
        st.epochs = timeline(entries, runs.runs)
    if kernel is not None:
        st.take_native(native_stats.finish(kernel, target.display))
    st.finish()
    return st


def _batch(
    st: PartitionStats,
    batch: Batch,
    opts: StatsOptions,
    sampler: _Sampler,
    txns: TransactionStates,
    kernel: native_stats.Records | None = None,
    display: str = "",
) -> None:
    st.batches += 1
    size = batch.size
    st.bytes_on_disk += size
    magic = batch.magic
    st.magics[magic] = st.magics.get(magic, 0) + 1
    codec = codecs.CODEC_NAMES.get(batch.compression, str(batch.compression))
    if batch.is_control:
        n = sum(1 for _ in batch.records(opts.ctx.limits.max_batch_bytes))
        st.records += n
        st.control_records += n
        st.bytes_uncompressed += size
        _codec(st, codec, n, size)
        return
    if kernel is not None:
        _batch_native(st, batch, opts, sampler, txns, kernel, display, codec)
        return
    if isinstance(batch, DefaultBatch):
        _v2_volume(st, batch, opts, sampler)
    lat = batch.timestamp_type == LOG_APPEND_TIME
    pid = batch.producer_id if magic >= 2 else -1
    txn = batch.is_transactional
    aborted = txn and txns.state(batch) == ABORTED
    # per record
    now = opts.now
    horizon = batch.delete_horizon_ms
    expired = horizon is not None and horizon <= now
    ks, vs, hs, hc = st.key_sizes, st.value_sizes, st.header_sizes, st.header_counts
    times = st.times
    keys = st._keys
    top = st.top_keys
    # a compressed v0/v1 wrapper: its inner messages, uncompressed, are counted per record
    legacy_header = _LEGACY_HEADER.get(magic) if batch.compression != codecs.NONE else None
    if magic < 2 and legacy_header is None:
        st.bytes_uncompressed += size
    n = 0
    for r in batch.records(opts.ctx.limits.max_batch_bytes):
        n += 1
        key, value = r.key, r.value
        if legacy_header is not None:
            st.bytes_uncompressed += LOG_OVERHEAD + legacy_header
            st.bytes_uncompressed += (len(key) if key is not None else 0) + (
                len(value) if value is not None else 0
            )
        if value is None:
            vs.nulls += 1
            st.tombstones += 1
        else:
            vs.add(len(value))
        headers = r.headers
        if headers:
            hc.add(len(headers))
            hs.add(sum(len(k) + (len(v) if v is not None else 0) for k, v in headers))
        else:
            hc.add(0)
            hs.add(0)
        ts = r.timestamp
        if ts < 0:
            st.no_timestamp += 1
        else:
            if ts < st._prev_ts:  # below the previous record's (one with a timestamp)
                st.out_of_order += 1
            st._prev_ts = ts
            if ts > st._max_ts:
                st._max_ts = ts
            if st.first_timestamp is None or ts < st.first_timestamp:
                st.first_timestamp = ts
            if ts > now:
                st.future += 1
            times.add(ts)
        if aborted:  # removed by the cleaner whatever its key
            st.aborted += 1
            if key is not None:
                ks.add(len(key))
            else:
                ks.nulls += 1
            continue
        if key is None:
            ks.nulls += 1
            st.keyless += 1
            continue
        ks.add(len(key))
        st.keyed += 1
        h = key_hash(key)
        bit = 1 if value is None and expired else 0
        if keys is not None:
            c = keys.get(h)
            if c is None and len(keys) >= opts.exact_keys:
                _to_hll(st)
                keys = None
            else:
                keys[h] = ((c >> 1) + 1 << 1 if c is not None else 2) | bit
                top.add(h, key)
                continue
        top.add(h, key)
        assert st._hll is not None
        st._hll.add(h)
        st._expired_after += bit
    _batch_counted(st, batch, codec, n, lat, pid, txn)


def _batch_counted(
    st: PartitionStats, batch: Batch, codec: str, n: int, lat: bool, pid: int, txn: bool
) -> None:
    """A batch's ``n`` records counted: what they add up to per batch."""
    st.records += n
    if lat:
        st.log_append_time += n
    elif batch.magic >= 1:
        st.create_time += n
    if pid >= 0:
        st.idempotent_records += n
        if txn:
            st.transactional_records += n
        prods = st.producers
        if pid in prods or len(prods) < MAX_PRODUCERS:
            prods[pid] = prods.get(pid, 0) + n
        else:
            st.producers_truncated = True
    _codec(st, codec, n, batch.size)


def _batch_native(
    st: PartitionStats,
    batch: Batch,
    opts: StatsOptions,
    sampler: _Sampler,
    txns: TransactionStates,
    kernel: native_stats.Records,
    display: str,
    codec: str,
) -> None:
    """``_batch`` past its control-batch case under the native engine: a v2 batch's records
    counted in Rust; one the kernel refuses, and v0/v1 message sets, read here and their
    records handed to the kernel (which holds the per-record aggregates)."""
    magic = batch.magic
    lat = batch.timestamp_type == LOG_APPEND_TIME
    pid = batch.producer_id if magic >= 2 else -1
    txn = batch.is_transactional
    aborted = txn and txns.state(batch) == ABORTED
    horizon = batch.delete_horizon_ms
    expired = horizon is not None and horizon <= opts.now
    where = f"{display}:{batch.position}"
    max_bytes = opts.ctx.limits.max_batch_bytes
    if isinstance(batch, DefaultBatch):
        counted = native_stats.count_batch(kernel, batch.data, max_bytes, aborted, expired, where)
        if counted is not None:
            n, area_len = counted
            size = batch.size
            compressed = batch.compression != codecs.NONE
            st.bytes_uncompressed += RECORD_BATCH_OVERHEAD + area_len if compressed else size
            if sampler.wants(size):  # as _v2_volume samples
                room = sampler.room
                if compressed:
                    piece: bytes | memoryview = native_stats.area(kernel, room, where)
                else:
                    area = batch.data[RECORD_BATCH_OVERHEAD:]
                    piece = area if len(area) <= room else area[:room]
                st.sample.append(bytes(piece))
                st.sample_records += batch.count
                sampler.took(size, len(piece))
            _batch_counted(st, batch, codec, n, lat, pid, txn)
            return
        _v2_volume(st, batch, opts, sampler)
    legacy_header = _LEGACY_HEADER.get(magic) if batch.compression != codecs.NONE else None
    if magic < 2 and legacy_header is None:
        st.bytes_uncompressed += batch.size
    rows: list[native_stats.Row] = []
    n = 0
    try:
        for r in batch.records(max_bytes):
            if len(rows) >= _ROWS_AT_ONCE:  # a million-record v0/v1 wrapper: memory stays flat
                native_stats.add_rows(kernel, rows, aborted, expired, where)
                n += len(rows)
                rows = []
            key, value, headers = r.key, r.value, r.headers
            if legacy_header is not None:
                st.bytes_uncompressed += LOG_OVERHEAD + legacy_header
                st.bytes_uncompressed += (len(key) if key is not None else 0) + (
                    len(value) if value is not None else 0
                )
            rows.append(
                (
                    None if key is None else bytes(key),
                    None if value is None else len(value),
                    r.timestamp,
                    len(headers),
                    sum(len(k) + (len(v) if v is not None else 0) for k, v in headers),
                )
            )
    finally:  # the records read before a bad one count, as in the python loop
        native_stats.add_rows(kernel, rows, aborted, expired, where)
    _batch_counted(st, batch, codec, n + len(rows), lat, pid, txn)


def _v2_volume(
    st: PartitionStats, batch: DefaultBatch, opts: StatsOptions, sampler: _Sampler
) -> None:
    """A v2 batch's uncompressed bytes, and its records area in the codec sample if wanted."""
    size = batch.size
    records_area: bytes | memoryview | None = None
    if batch.compression == codecs.NONE:
        st.bytes_uncompressed += size
    else:
        records_area = batch.records_area(opts.ctx.limits.max_batch_bytes)
        st.bytes_uncompressed += RECORD_BATCH_OVERHEAD + len(records_area)
    if sampler.wants(size):
        area = records_area if records_area is not None else batch.data[RECORD_BATCH_OVERHEAD:]
        # the sample holds at most its budget: a batch of a million records (one area of many
        # MB) is cut at it
        room = sampler.room
        piece = area if len(area) <= room else area[:room]
        st.sample.append(bytes(piece))
        st.sample_records += batch.count
        sampler.took(size, len(piece))


def _to_hll(st: PartitionStats) -> None:
    """Past the exact bound: the key set goes into a HyperLogLog (and is dropped)."""
    assert st._keys is not None
    hll = HyperLogLog()
    expired = 0
    tc = st.top_keys
    for h, v in st._keys.items():
        hll.add(h)
        expired += v & 1
    _settle_top(tc, st._keys)
    st._keys = None
    st._hll = hll
    st._expired_after = expired
    st.distinct_exact = False
    st.top_exact = False


def _settle_top(tc: TopCounter, keys: dict[int, int]) -> None:
    """The heaviest keys' counters, given the exact key counts: the counted keys get their
    true counts, bounded below by the heaviest key without a counter (see
    :meth:`TopCounter.settle`)."""
    counted = tc.counts
    floor = max((v >> 1 for h, v in keys.items() if h not in counted), default=0)
    tc.settle({h: keys[h] >> 1 for h in counted}, floor)


def _codec(st: PartitionStats, name: str, records: int, size: int) -> None:
    row = st.codecs.setdefault(name, [0, 0, 0])
    row[0] += 1
    row[1] += records
    row[2] += size


# -- runs ---------------------------------------------------------------------------------------
def attach_remote_tier(st: PartitionStats, target: Target, tiers: TierCache) -> None:
    """A whole tiered partition's remote tier, from the __remote_log_metadata partitions of
    its broker (describe's ``remote_tier`` but its type and path)."""
    part = target.directory
    if not target.whole or part is None or tiers.tier_for(part.parent) is None:
        return
    summary = tiers.summary_of(load_partition(part))
    if summary is not None:
        obj: dict[str, Any] = dict(summary.as_obj(target.display))
        del obj["type"], obj["path"]
        st.remote_tier = obj


def targets(
    paths: list[str], topics: Iterable[str] = (), remote: TieredReads | None = None
) -> list[Target]:
    """The partitions PATHs stand for (see :func:`klogtool.log.read.finder.resolve_targets`), only
    those of ``topics`` when any are named."""
    found = resolve_targets(paths, remote)
    wanted = set(topics)
    return [t for t in found if not wanted or t.topic in wanted]


def collect(
    found: list[Target],
    options: StatsOptions,
    *,
    jobs: int = 1,
) -> Iterator[PartitionStats]:
    """One finished :class:`PartitionStats` per target, in order (``jobs`` processes)."""
    total = sum(t.size for t in found)
    if total > options.sample_bytes:
        options.sample_fraction = options.sample_bytes / total
    if jobs <= 1 or len(found) <= 1:
        sampler = _Sampler(options.sample_fraction, options.sample_bytes)
        for t in found:
            yield partition_stats(t, options, sampler)
        return
    left = list(found)  # the first is waited for (named should its worker die)
    with (
        processes(options.ctx, min(jobs, len(found))) as pool,
        worker_deaths(lambda: f"partition {left[0].display}"),
    ):
        futures = [pool.submit(partition_stats, t, options) for t in found]
        for t, fut in zip(found, futures, strict=True):
            st = fut.result()
            left.pop(0)
            options.ctx.progress.advance(t.size, st.records)
            yield st


def total(parts: Iterable[PartitionStats], path: str = "total") -> PartitionStats:
    """The merge of finished partitions' aggregates. Distinct keys add up: a key is counted
    once per partition it is in (compaction works per partition)."""
    out = PartitionStats(path, partitions=0)
    out._keys = None
    for p in parts:
        out.merge(p)
    return out


@dataclass
class WhatIf:
    codec: str
    bytes: int  # the sample's records areas, compressed batch by batch
    ratio: float  # uncompressed / compressed
    seconds: float
    estimated_bytes: int  # the whole data's records areas at this ratio (plus batch headers)
    sample_bytes: int = 0
    error: str | None = None

    def as_obj(self) -> Obj:
        return {
            "codec": self.codec,
            "bytes": self.bytes,
            "ratio": round(self.ratio, 3),
            "seconds": round(self.seconds, 4),
            "mb_per_s": round(self.sample_bytes / 1e6 / self.seconds, 1)
            if self.seconds > 0
            else None,
            "estimated_bytes": self.estimated_bytes,
            "error": self.error,
        }


def what_if(stats: PartitionStats, sample_bytes: int = SAMPLE_BYTES) -> Obj | None:
    """Compress the sample with every codec: the total's ``what_if`` object, ``{"sample": its
    description, "codecs": one row per codec}``, or None when nothing was sampled."""
    sample: list[bytes] = []
    taken = 0
    for area in stats.sample:
        if taken >= sample_bytes:
            break
        sample.append(area)
        taken += len(area)
    overhead = RECORD_BATCH_OVERHEAD * stats.batches
    data_bytes = max(0, stats.bytes_uncompressed - overhead)
    rows: list[WhatIf] = []
    if taken:
        rows.append(WhatIf("none", taken, 1.0, 0.0, stats.bytes_uncompressed, taken))
    for label, codec, level in WHAT_IF_CODECS if taken else ():
        part = _spread(sample, taken, WHAT_IF_PART.get(label, taken))
        part_bytes = sum(len(a) for a in part)
        started = time.perf_counter()
        try:
            size = sum(
                len(codecs.compress(codec, piece, magic=2, level=level))
                for a in part
                for piece in _pieces(a)
            )
        except FormatError as e:
            rows.append(WhatIf(label, 0, 0.0, 0.0, 0, part_bytes, error=str(e)))
            continue
        seconds = time.perf_counter() - started
        ratio = part_bytes / size if size else 0.0
        rows.append(
            WhatIf(
                label,
                size if part_bytes == taken else round(size * taken / part_bytes),
                ratio,
                seconds,
                overhead + round(data_bytes / ratio) if ratio else 0,
                part_bytes,
            )
        )
    if not rows:
        return None
    described = {"batches": len(sample), "bytes": taken, "records": stats.sample_records}
    return {"sample": described, "codecs": [r.as_obj() for r in rows]}


def _spread(sample: list[bytes], taken: int, budget: int) -> list[bytes | memoryview]:
    """At most ``budget`` of the sample's ``taken`` bytes: areas spread evenly over it by
    size (as :class:`_Sampler` spreads the sample over the data), the last one cut at the
    budget; the whole sample when it fits."""
    if taken <= budget:
        return list(sample)
    part: list[bytes | memoryview] = []
    credit = 0.0
    got = 0
    for area in sample:
        if got >= budget:
            break
        credit += budget / taken * len(area)
        if credit > 0:
            piece = memoryview(area)[: budget - got]
            part.append(piece)
            got += len(piece)
            credit -= len(area)
    return part


def _pieces(area: bytes | memoryview) -> Iterator[memoryview]:
    """A records area in pieces of at most :data:`WHAT_IF_PIECE` bytes (views, no copies)."""
    view = memoryview(area)
    for i in range(0, len(view), WHAT_IF_PIECE):
        yield view[i : i + WHAT_IF_PIECE]

"""Replica divergence: compare two copies of a partition (or two log dirs) batch by batch.

A and B are walked in offset order in lockstep, one batch at a time, without decoding: a batch
is identified by its offset range, and two batches with the same range are the same when their
bytes are (the stored CRC is compared first, then the bytes, which also covers the partition
leader epoch and base offset that the CRC does not). Records are decoded only where the two
copies differ: to find the first differing record, to decide whether the difference is what the
log cleaner does, and with ``deep`` to name the record fields that differ.

Per partition the verdict is one of (checked in this order):

* ``diverged``: the histories differ from offset ``diverged_at`` on. Replication copies batches
  byte for byte, so a batch that is only on one side inside the range both cover, a batch whose
  offsets overlap a differently cut batch, or a pair of batches with the same offsets but
  different bytes (a different leader epoch included) is divergence, unless compaction
  explains it. The truncation offset is worked out by the broker's rule (KIP-101, KIP-279;
  :func:`truncation_offset`).
* ``equal-modulo-compaction``: one side's records are the other's minus what the cleaner
  removes (records superseded by a later record with the same key, tombstones, keyless records,
  aborted transactions, transaction markers), with the same offsets and contents.
* ``different-start-offsets``: the log start offsets differ (retention ran on one side); the
  range both cover is compared.
* ``prefix``: one side is a prefix of the other (a lagging replica).
* ``identical``.

A torn tail (an incomplete last batch, which the broker's recovery cuts off) and corruption in
the middle of a segment (where the walk of that segment stops) are reported as differences of
kind ``torn-tail`` and ``corrupt``; the verdict is made on whole batches.

Memory stays flat: segments are mapped and walked batch by batch; at most one batch of each
side is decoded at a time, and its records are compared as they are decoded, by offset (a
batch of millions of tiny records is never held as a Python object per record; only a batch
whose offsets do not increase is compared as lists). Compaction checking keeps, per key that
the compacted side dropped and no later record has superseded yet, a 16-byte digest (like the
cleaner's own offset map).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import checkpoint
from klogtool.formats.batch import Batch, Record
from klogtool.formats.codecs import codec_name
from klogtool.formats.errors import FormatError
from klogtool.formats.limits import ReadLimits
from klogtool.formats.payloads.control import ABORT
from klogtool.formats.records import CORRUPT, TORN_TAIL, SegmentScanner, not_a_log
from klogtool.log import layout, pool, storage
from klogtool.log.context import ReadContext
from klogtool.log.epochs import EpochRuns, read_checkpoint, timeline
from klogtool.log.files import classify_dir, live
from klogtool.log.partition import (
    RECOVERY_POINT,
    PartitionView,
    load_partition,
    read_offset_checkpoint,
)
from klogtool.log.remote_tier import TierCache
from klogtool.log.segment import mapped, read_small

if TYPE_CHECKING:
    from klogtool import events

A, B = "a", "b"

IDENTICAL = "identical"
PREFIX = "prefix"
DIVERGED = "diverged"
MODULO_COMPACTION = "equal-modulo-compaction"
DIFFERENT_START = "different-start-offsets"
ONLY_IN_A = "only-in-a"  # a partition of log dir A that log dir B does not have
ONLY_IN_B = "only-in-b"
VERDICTS = (IDENTICAL, PREFIX, DIVERGED, MODULO_COMPACTION, DIFFERENT_START, ONLY_IN_A, ONLY_IN_B)
# A partition compared with several followers counts once in the summary, by the first of its
# verdicts in this order: a copy missing or diverged says more than one that lags.
_WORST_FIRST = (
    ONLY_IN_A,
    ONLY_IN_B,
    DIVERGED,
    MODULO_COMPACTION,
    DIFFERENT_START,
    PREFIX,
    IDENTICAL,
)

# kinds of differences
CHANGED = "changed"
ONLY_A = "only-in-a"
ONLY_B = "only-in-b"
TORN = "torn-tail"
CORRUPT_KIND = "corrupt"

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

# Batch header fields compared for a pair with the same offsets but different bytes.
HEADER_FIELDS = (
    "partition_leader_epoch",
    "magic",
    "crc",
    "size",
    "attributes",
    "compression",
    "timestamp_type",
    "max_timestamp",
    "base_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "is_transactional",
    "is_control",
    "delete_horizon_ms",
    "count",
)
# What the cleaner keeps when it rewrites a batch (docs/kafka-rules.md: Compaction): a difference
# in any of
# these cannot be compaction.
_KEPT_BY_CLEANER = (
    "partition_leader_epoch",
    "magic",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "is_transactional",
    "is_control",
    "timestamp_type",
)
RECORD_FIELDS = (
    "key",
    "value",
    "headers",
    "timestamp",
    "producer_id",
    "producer_epoch",
    "sequence",
)


@dataclass
class DiffOptions:
    leader: str = A  # the side treated as the leader for the truncation offset
    deep: bool = False  # name the record fields that differ in every changed pair
    max_differences: int = 100  # per partition; 0 = all
    # the replicas' names on the command line (a, b, c, ...) of sides A and B
    names: tuple[str, str] = (A, B)
    ctx: ReadContext = field(kw_only=True)

    def replicas(self) -> dict[str, str]:
        return {A: self.names[0], B: self.names[1]}


# --------------------------------------------------------------------------------------------
# the leader epoch cache and the broker's truncation rule


class EpochCache:
    """A replica's leader epoch cache (``LeaderEpochFileCache``): (epoch, start offset) entries,
    both strictly increasing."""

    def __init__(self, entries: list[checkpoint.EpochEntry] | None = None) -> None:
        self.entries: list[checkpoint.EpochEntry] = list(entries or [])

    def __bool__(self) -> bool:
        return bool(self.entries)

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1].epoch if self.entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """The broker's ``assign``: a new entry when the epoch differs from the latest or starts
        below it; entries with an epoch >= it or a start >= it are removed first."""
        if epoch < 0 or start_offset < 0:
            return
        if self.entries:
            last = self.entries[-1]
            if epoch == last.epoch and start_offset >= last.start_offset:
                return
        self.entries = [
            e for e in self.entries if e.epoch < epoch and e.start_offset < start_offset
        ]
        self.entries.append(checkpoint.EpochEntry(epoch, start_offset))

    def truncate_from_end(self, end_offset: int) -> None:
        """Entries starting at or after ``end_offset`` go (the log was truncated there)."""
        self.entries = [e for e in self.entries if e.start_offset < end_offset]

    def truncate_from_start(self, start_offset: int) -> None:
        """Entries starting at or before ``start_offset`` go, but the last of them, which now
        starts at ``start_offset`` (the log start offset moved)."""
        below = [e for e in self.entries if e.start_offset <= start_offset]
        if below:
            rest = [e for e in self.entries if e.start_offset > start_offset]
            self.entries = [checkpoint.EpochEntry(below[-1].epoch, start_offset), *rest]

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """``LeaderEpochFileCache.endOffsetFor``: (the largest epoch <= ``requested``, the
        offset where it ends: the start of the next larger epoch, or the log end offset for the
        latest); (UNDEFINED, UNDEFINED) when ``requested`` is undefined or above every epoch;
        (``requested``, the first start offset) when it is below every epoch."""
        if requested == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.entries[-1].epoch == requested:
            return requested, log_end_offset
        higher = next((e for e in self.entries if e.epoch > requested), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = [e for e in self.entries if e.epoch <= requested]
        if not floor:
            return requested, higher.start_offset
        return floor[-1].epoch, higher.start_offset

    def epoch_at(self, offset: int) -> int | None:
        """The epoch the cache gives ``offset`` (that of the last entry starting at or before
        it), or None."""
        i = bisect_right([e.start_offset for e in self.entries], offset)
        return self.entries[i - 1].epoch if i else None

    def as_list(self) -> list[list[int]]:
        return [[e.epoch, e.start_offset] for e in self.entries]


@dataclass
class Truncation:
    """Where the follower truncates by the broker's rule, and the exchange that got there."""

    leader: str
    follower: str
    offset: int
    rule: str  # "leader-epoch" (KIP-101/KIP-279) or "high-watermark" (no epoch to ask for)
    steps: list[dict[str, int]]
    follower_log_end_offset: int
    election: dict[str, Any] | None = None  # the leader's new epoch (see :func:`elect`)

    @property
    def records_truncated(self) -> int:
        return max(0, self.follower_log_end_offset - self.offset)

    def as_obj(self) -> dict[str, Any]:
        return {
            "leader": self.leader,
            "follower": self.follower,
            "offset": self.offset,
            "rule": self.rule,
            "offsets_truncated": self.records_truncated,
            "election": self.election,
            "steps": self.steps,
        }


def elect(
    leader: EpochCache,
    leader_leo: int,
    follower: EpochCache,
    *,
    epochs_seen: int | None = None,
    cached_at_end: checkpoint.EpochEntry | None = None,
) -> tuple[EpochCache, dict[str, Any]]:
    """The leader's epoch cache once it has become leader (``Partition.makeLeader``): the broker
    caches its new leader epoch at its log end offset before it answers any follower, so the
    epoch is greater than every epoch either side has seen (``epochs_seen``: the largest in
    either side's checkpoint or batches, the entries the load drops included). When the
    leader's leader-epoch-checkpoint already holds an entry at its log end offset
    (``cached_at_end``, which the load drops) above both caches' latest epochs, that is the
    election, as the checkpoint shows it. Returns the cache and the election
    (``{"epoch", "start_offset", "source": "leader-epoch-checkpoint"|"assumed"}``)."""
    latest = max(
        (e.epoch for e in (*leader.entries[-1:], *follower.entries[-1:])), default=UNDEFINED_EPOCH
    )
    cache = EpochCache(leader.entries)
    cache.truncate_from_end(leader_leo)
    if (
        cached_at_end is not None
        and cached_at_end.start_offset == leader_leo
        and cached_at_end.epoch > latest
    ):
        epoch, source = cached_at_end.epoch, "leader-epoch-checkpoint"
    else:
        seen = latest if epochs_seen is None else max(latest, epochs_seen)
        epoch, source = seen + 1, "assumed"
    cache.assign(epoch, leader_leo)
    return cache, {"epoch": epoch, "start_offset": leader_leo, "source": source}


def truncation_offset(
    leader: EpochCache,
    leader_leo: int,
    follower: EpochCache,
    follower_leo: int,
    follower_high_watermark: int,
    *,
    leader_name: str = A,
    follower_name: str = B,
) -> Truncation:
    """The offset the follower truncates to (``AbstractFetcherThread.getOffsetTruncationState``).

    The follower asks the leader for the end offset of its latest epoch E; the leader answers
    (the largest epoch L <= E it has, where L ends). If the follower has L too, it truncates to
    min(leader's end of L, its own end of L, its log end offset). If it does not (KIP-279), it
    truncates to the end of its own largest epoch below L and asks again. Without an epoch to
    ask for, or when the leader has no answer, it truncates to its high watermark."""
    cache = EpochCache(follower.entries)
    leo = follower_leo
    steps: list[dict[str, int]] = []
    for _ in range(len(follower.entries) + 2):
        epoch = cache.latest_epoch
        if epoch is None:
            break
        l_epoch, l_end = leader.end_offset_for(epoch, leader_leo)
        step = {"follower_epoch": epoch, "leader_epoch": l_epoch, "leader_end_offset": l_end}
        steps.append(step)
        if l_end == UNDEFINED_EPOCH_OFFSET:
            break
        f_epoch, f_end = cache.end_offset_for(l_epoch, leo)
        if f_end == UNDEFINED_EPOCH_OFFSET:
            step["truncate_to"] = min(l_end, leo)
            return Truncation(
                leader_name, follower_name, step["truncate_to"], "leader-epoch", steps, follower_leo
            )
        step["follower_end_offset"] = f_end
        if f_epoch != l_epoch:
            # the follower does not have the leader's epoch: cut to the end of its own largest
            # epoch below it and ask again (KIP-279)
            leo = min(f_end, leo)
            step["truncate_to"] = leo
            cache.truncate_from_end(leo)
            continue
        step["truncate_to"] = min(f_end, l_end, leo)
        return Truncation(
            leader_name, follower_name, step["truncate_to"], "leader-epoch", steps, follower_leo
        )
    hw = min(follower_high_watermark, leo)
    return Truncation(leader_name, follower_name, hw, "high-watermark", steps, follower_leo)


# --------------------------------------------------------------------------------------------
# what is reported


@dataclass
class Difference:
    partition: str
    kind: str  # changed | only-in-a | only-in-b | torn-tail | corrupt
    base_offset: int | None
    last_offset: int | None
    a: dict[str, Any] | None
    b: dict[str, Any] | None
    fields: list[str] = field(default_factory=list)  # header fields that differ (changed)
    first_differing_offset: int | None = None  # the first record that differs (changed)
    records: list[dict[str, Any]] | None = None  # with deep: the records that differ
    explained_by: str | None = None  # "compaction", or None: part of the divergence

    def as_obj(self) -> events.DiffDifference:
        """The ``difference`` object."""
        return {
            "type": "difference",
            "partition": self.partition,
            "kind": self.kind,
            "base_offset": self.base_offset,
            "last_offset": self.last_offset,
            "a": self.a,
            "b": self.b,
            "fields": self.fields,
            "first_differing_offset": self.first_differing_offset,
            "records": self.records,
            "explained_by": self.explained_by,
        }


@dataclass
class PartitionDiff:
    partition: str
    a: str | None
    b: str | None
    verdict: str
    leader: str
    start_offsets: dict[str, int | None]
    end_offsets: dict[str, int | None]
    common_batches: int = 0  # identical batches in the range both cover
    diverged_at: int | None = None
    epochs_at_divergence: dict[str, dict[str, int | None]] | None = None
    truncation: dict[str, Any] | None = None
    truncation_misses_divergence: bool = False
    compacted: str | None = None  # the side whose records are the other's minus compaction
    lagging: str | None = None
    lag_offsets: int = 0
    lag_records: int = 0
    lag_bytes: int = 0
    torn_tail: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    epochs: dict[str, dict[str, Any]] = field(default_factory=dict)
    differences: int = 0
    differences_shown: int = 0
    notes: list[str] = field(default_factory=list)
    # the follower's records that the leader does not hold, and those it truncates that the
    # leader holds the same and it fetches again (see :func:`follower_offsets`)
    lost: dict[str, Any] | None = None
    refetched: dict[str, Any] | None = None
    # the command line's names of sides a and b (with three replicas or more, a pair's sides
    # are two of them, the one named first as a)
    replicas: dict[str, str] = field(default_factory=lambda: {A: A, B: B})

    def as_obj(self, *, ok: bool) -> events.DiffPartitionDiff:
        """The ``partition-diff`` object (``ok``: whether the verdict counts as agreement under
        the command's options, :func:`accepted`)."""
        return {
            "type": "partition-diff",
            "partition": self.partition,
            "a": self.a,
            "b": self.b,
            "replicas": self.replicas,
            "verdict": self.verdict,
            "leader": self.leader,
            "start_offsets": self.start_offsets,
            "end_offsets": self.end_offsets,
            "common_batches": self.common_batches,
            "diverged_at": self.diverged_at,
            "epochs_at_divergence": self.epochs_at_divergence,
            "truncation": self.truncation,
            "truncation_misses_divergence": self.truncation_misses_divergence,
            "compacted": self.compacted,
            "lagging": self.lagging,
            "lag_offsets": self.lag_offsets,
            "lag_records": self.lag_records,
            "lag_bytes": self.lag_bytes,
            "torn_tail": self.torn_tail,
            "epochs": self.epochs,
            "differences": self.differences,
            "differences_shown": self.differences_shown,
            "notes": self.notes,
            "lost": self.lost,
            "refetched": self.refetched,
            "ok": ok,
        }


@dataclass
class DiffSummary:
    verdicts: dict[str, str] = field(default_factory=dict)  # partition -> its worst verdict
    differences: int = 0
    ok: bool = True

    def count(self, pd: PartitionDiff, ok: bool) -> None:
        """Counts a partition's verdict (``ok``: :func:`accepted` under the options); a
        partition seen again (against another follower) keeps the worse of its verdicts."""
        seen = self.verdicts.get(pd.partition)
        if seen is None or _WORST_FIRST.index(pd.verdict) < _WORST_FIRST.index(seen):
            self.verdicts[pd.partition] = pd.verdict
        self.differences += pd.differences
        self.ok = self.ok and ok

    @property
    def partitions(self) -> int:
        return len(self.verdicts)

    @property
    def by_verdict(self) -> dict[str, int]:
        """How many partitions have each verdict, in the order of VERDICTS."""
        counts = dict.fromkeys(VERDICTS, 0)
        for verdict in self.verdicts.values():
            counts[verdict] += 1
        return counts

    def as_obj(self) -> events.DiffSummary:
        """The ``summary`` object: a count per verdict, in the order of VERDICTS."""
        v = self.by_verdict
        return {
            "type": "summary",
            "partitions": self.partitions,
            "identical": v[IDENTICAL],
            "prefix": v[PREFIX],
            "diverged": v[DIVERGED],
            "equal_modulo_compaction": v[MODULO_COMPACTION],
            "different_start_offsets": v[DIFFERENT_START],
            "only_in_a": v[ONLY_IN_A],
            "only_in_b": v[ONLY_IN_B],
            "differences": self.differences,
            "ok": self.ok,
        }


def accepted(pd: PartitionDiff, *, allow_lag: bool, allow_compaction: bool) -> bool:
    """Whether a partition's verdict counts as agreement (exit 0) under the options. Lag is
    accepted only on the follower's side: a leader that lags makes the follower discard what
    it holds past the leader's log end, which is a truncation, never agreement."""
    lag_ok = pd.lagging is None or (allow_lag and pd.lagging != pd.leader)
    if pd.verdict == IDENTICAL:
        return True
    if pd.verdict == PREFIX:
        return lag_ok
    if pd.verdict == MODULO_COMPACTION:
        return allow_compaction and lag_ok
    return False


# --------------------------------------------------------------------------------------------
# pairing the inputs


@dataclass(frozen=True)
class Pair:
    name: str
    a: Path | None
    b: Path | None
    a_display: str | None
    b_display: str | None


def _kind_of(arg: str) -> tuple[str, Path]:
    path = storage.path_of(arg)
    if not path.exists():
        raise InputError("no such file or directory", path=arg, code=Code.NOT_FOUND)
    if not path.is_dir():
        raise InputError(
            "expected a partition directory or a log directory", path=arg, code=Code.NOT_A_DIR
        )
    try:
        return ("partition" if classify_dir(path, arg) is None else "log-dir"), path
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=arg, code=Code.UNREADABLE) from e


def pair_partitions(a: str, b: str) -> list[Pair]:
    """Two partition dirs make one pair; two log dirs pair their partitions by name (a
    partition in only one of them makes a pair with one side missing)."""
    kind_a, pa = _kind_of(a)
    kind_b, pb = _kind_of(b)
    if kind_a != kind_b:
        raise InputError(
            f"A is a {kind_a} directory and B a {kind_b} directory: give two partition "
            "directories or two log directories",
            path=b,
            code=Code.MISMATCHED_INPUTS,
        )
    if kind_a == "partition":
        return [Pair(pa.name, pa, pb, a, b)]
    la, lb = layout.scan_log_dir(pa), layout.scan_log_dir(pb)
    names_a = {p.name: p for p in live(la.partitions if la else [])}
    names_b = {p.name: p for p in live(lb.partitions if lb else [])}
    pairs = []
    for name in sorted(names_a.keys() | names_b.keys()):
        pairs.append(
            Pair(
                name,
                names_a.get(name),
                names_b.get(name),
                storage.child(a, name) if name in names_a else None,
                storage.child(b, name) if name in names_b else None,
            )
        )
    return pairs


# --------------------------------------------------------------------------------------------
# one side's walk


@dataclass
class _Ref:
    batch: Batch
    path: str
    base: int
    last: int


class _Side:
    """One copy of the partition, walked batch by batch in offset order."""

    def __init__(self, name: str, path: Path, display: str) -> None:
        self.name = name
        self.display = display
        try:
            self.view: PartitionView = load_partition(path)
        except OSError as e:
            raise InputError(
                f"cannot read: {e.strerror}", path=display, code=Code.UNREADABLE
            ) from e
        except FormatError as e:
            raise InputError(str(e), path=display, position=e.position, code=e.code) from e
        # per segment of the view, the epochs LogSegment.recover would assign walking it: each
        # batch's epoch above every earlier one in the segment (see epoch_cache)
        self.segment_epochs: list[list[checkpoint.EpochEntry]] = []
        self.epoch_runs = EpochRuns()  # the leader-epoch timeline, from the batches' side
        self.end_offset: int | None = None  # after the last whole batch
        self.first_offset: int | None = None
        self.tails: list[dict[str, Any]] = []  # torn tails and corruption (where a walk stopped)
        # set by epoch_cache(): the largest epoch of the checkpoint or the batches, and the
        # checkpoint's entry at the log end offset
        self.epochs_seen: int | None = None
        self.max_batch_epoch = UNDEFINED_EPOCH
        self.cached_at_end: checkpoint.EpochEntry | None = None

    @property
    def log_start_offset(self) -> int:
        return self.view.log_start_offset

    def _segment_display(self, log: Path) -> str:
        return storage.child(self.display, log.name)

    def batches(self) -> Iterator[_Ref]:
        for seg in self.view.segments:
            display = self._segment_display(seg.log)
            points: list[checkpoint.EpochEntry] = []
            self.segment_epochs.append(points)
            try:
                with mapped(seg.log) as buf:
                    scanner = SegmentScanner(buf, check_crc=False, strict=True)
                    for batch in scanner:
                        base = batch.base_offset
                        last = batch.last_offset
                        if self.end_offset is not None and base < self.end_offset:
                            # segments that overlap: what a broker never wrote; skipped
                            self.tails.append(
                                {
                                    "kind": CORRUPT_KIND,
                                    "path": display,
                                    "position": batch.position,
                                    "bytes": batch.size,
                                    "message": f"offsets {base}..{last} do not increase "
                                    f"(the previous batch ended at {self.end_offset - 1})",
                                }
                            )
                            continue
                        if self.first_offset is None:
                            self.first_offset = base
                        self.end_offset = last + 1
                        self.epoch_runs.add(batch, base)
                        epoch = batch.partition_leader_epoch
                        if batch.magic >= 2 and epoch >= 0:
                            if not points or epoch > points[-1].epoch:
                                points.append(checkpoint.EpochEntry(epoch, base))
                            self.max_batch_epoch = max(self.max_batch_epoch, epoch)
                        yield _Ref(batch, display, base, last)
                    result = scanner.result
                    assert result is not None
            except OSError as e:
                raise InputError(
                    f"cannot read: {e.strerror}", path=display, code=Code.UNREADABLE
                ) from e
            except FormatError as e:  # a legacy wrapper that cannot be decompressed
                raise InputError(str(e), path=display, position=e.position, code=e.code) from e
            bad = not_a_log(result)
            if bad is not None:
                raise InputError(
                    f"not a Kafka log segment: {bad}",
                    path=display,
                    position=bad.position,
                    code=bad.code,
                )
            if result.end in (TORN_TAIL, CORRUPT):
                self.tails.append(
                    {
                        "kind": TORN if result.end == TORN_TAIL else CORRUPT_KIND,
                        "path": display,
                        "position": result.stopped_at,
                        "bytes": result.size - result.stopped_at,
                        "message": None if result.error is None else str(result.error),
                    }
                )

    def epoch_cache(self) -> tuple[EpochCache, str, list[str]]:
        """The epoch cache the broker loads (``LogLoader.load``): the leader-epoch-checkpoint (a
        missing one is created empty), plus the epochs ``LogSegment.recover`` assigns in the
        segments the load recovers (a batch's epoch when above the cache's latest), cut to the
        log (entries at or past the log end offset dropped, the first moved to the log start
        offset)."""
        notes: list[str] = []
        leo = self.log_end_offset
        cp = self.view.leader_epoch_checkpoint
        self.epochs_seen = self.max_batch_epoch if self.max_batch_epoch >= 0 else None
        cache, source = EpochCache(), "batches"
        if cp is not None:
            try:
                cache = EpochCache(checkpoint.parse_leader_epoch_checkpoint(read_small(cp)))
            except (OSError, FormatError) as e:
                notes.append(
                    f"{self.name}: leader-epoch-checkpoint unreadable ({e}): taken as empty"
                )
            else:
                source = "leader-epoch-checkpoint"
                epochs = [e.epoch for e in cache.entries]
                if self.epochs_seen is not None:
                    epochs.append(self.epochs_seen)
                self.epochs_seen = max(epochs, default=None)
                # an epoch cached at the log end offset (a leader that has written nothing in
                # it yet): the load drops it, the election keeps it (``elect``)
                self.cached_at_end = next((e for e in cache.entries if e.start_offset == leo), None)
        recovered = self._recovered_segments()
        for i in recovered:
            for entry in self.segment_epochs[i]:
                latest = cache.latest_epoch
                if latest is None or entry.epoch > latest:
                    cache.assign(entry.epoch, entry.start_offset)
        if source == "batches":
            notes.append(self._rebuilt_note(recovered))
        had = bool(cache)
        cache.truncate_from_end(leo)
        cache.truncate_from_start(self.log_start_offset)
        if had and not cache:
            notes.append(f"{self.name}: no leader epoch below the log end offset")
        return cache, (source if cache else "none"), notes

    @property
    def clean_shutdown(self) -> bool:
        """Whether the log dir holds ``.kafka_cleanshutdown``: the broker then skips recovery."""
        return (self.view.log_dir / checkpoint.CLEAN_SHUTDOWN_NAME).is_file()

    def _recovered_segments(self) -> list[int]:
        """The segments the broker's load recovers, in its order (``LogLoader``): each whose
        offset index is missing, then after an unclean shutdown every one from the segment
        holding the recovery point (``recovery-point-offset-checkpoint``, 0 without one) on."""
        segments = self.view.segments
        order = [i for i, s in enumerate(segments) if s.files.index is None]
        if not self.clean_shutdown:
            tp = self.view.tp
            points = read_offset_checkpoint(self.view.log_dir, RECOVERY_POINT)
            point = points.get(tp, 0) if tp is not None else 0
            first = max((i for i, s in enumerate(segments) if s.base_offset <= point), default=0)
            order += range(first, len(segments))
        return order

    def _rebuilt_note(self, recovered: list[int]) -> str:
        """What is left of the leader epochs without a leader-epoch-checkpoint."""
        head = f"{self.name}: no leader-epoch-checkpoint"
        n = len(set(recovered))
        segments = f"{n} segment{'' if n == 1 else 's'}"
        if not self.clean_shutdown:
            return (
                f"{head}: epochs rebuilt from the batches of the {segments} the broker "
                "recovers after an unclean shutdown (from the recovery point on)"
            )
        rebuilt = (
            f", but those of the {segments} it recovers for a missing offset index" if n else ""
        )
        return (
            f"{head} after a clean shutdown (.kafka_cleanshutdown): the broker skips recovery "
            f"and starts with no leader epochs{rebuilt}; as a follower without an epoch it "
            "truncates to its high watermark"
        )

    @property
    def log_end_offset(self) -> int:
        if self.end_offset is not None:
            return self.end_offset
        return max(self.view.log_start_offset, self.view.first_base)


# --------------------------------------------------------------------------------------------
# decoding and comparing records


def _bytes(v: memoryview | bytes | None) -> bytes | None:
    return None if v is None else bytes(v)


@dataclass(frozen=True)
class _Rec:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    sequence: int

    @classmethod
    def of(cls, r: Record) -> _Rec:
        return cls(
            r.offset,
            r.timestamp,
            _bytes(r.key),
            _bytes(r.value),
            tuple((k, _bytes(v)) for k, v in r.headers),
            r.sequence,
        )

    def content(self) -> tuple[Any, ...]:
        return (self.timestamp, self.key, self.value, self.headers, self.sequence)


def _records(batch: Batch, limits: ReadLimits) -> Iterator[_Rec]:
    """A batch's records, decoded one at a time (bounded memory whatever it holds)."""
    return map(_Rec.of, batch.records(limits.max_batch_bytes))


class _Unordered(Exception):
    """A batch's record offsets do not increase: it is compared as lists instead."""


# a pair of records with the same offset (or one side's alone)
_Pair = tuple[_Rec | None, _Rec | None]


def _by_offset(ra: Iterator[_Rec], rb: Iterator[_Rec]) -> Iterator[_Pair]:
    """Two batches' records paired by offset, in increasing offset order, as they are
    decoded; raises :class:`_Unordered` where a side's offsets do not increase."""

    def increasing(records: Iterator[_Rec]) -> Iterator[_Rec]:
        last = None
        for r in records:
            if last is not None and r.offset <= last:
                raise _Unordered
            last = r.offset
            yield r

    ia, ib = increasing(ra), increasing(rb)
    x, y = next(ia, None), next(ib, None)
    while x is not None or y is not None:
        if y is None or (x is not None and x.offset < y.offset):
            yield x, None
            x = next(ia, None)
        elif x is None or y.offset < x.offset:
            yield None, y
            y = next(ib, None)
        else:
            yield x, y
            x, y = next(ia, None), next(ib, None)


def _listed_pairs(ra: Iterable[_Rec], rb: Iterable[_Rec]) -> Iterator[_Pair]:
    """:func:`_by_offset` for records in any order (held as lists; the last record of an
    offset that appears twice counts)."""
    by_a = {r.offset: r for r in ra}
    by_b = {r.offset: r for r in rb}
    for offset in sorted(by_a.keys() | by_b.keys()):
        yield by_a.get(offset), by_b.get(offset)


def _record_difference(
    x: _Rec | None, y: _Rec | None, ba: Batch, bb: Batch
) -> dict[str, Any] | None:
    """The record only on one side, or the fields of the two records that differ (None:
    none)."""
    if x is None or y is None:
        r = x if x is not None else y
        assert r is not None
        return {"offset": r.offset, "only_in": A if y is None else B}
    diffs = []
    for name in RECORD_FIELDS:
        va, vb = _show_field(name, x, ba), _show_field(name, y, bb)
        if name in ("key", "value", "headers"):
            same = getattr(x, name) == getattr(y, name)
        else:
            same = va == vb
        if not same:
            diffs.append({"field": name, "a": va, "b": vb})
    return {"offset": x.offset, "fields": diffs} if diffs else None


@dataclass
class _Compared:
    """Two batches' records compared by offset (see :func:`_compare`)."""

    first: int | None = None  # the first differing offset
    b_in_a: bool = True  # every record of B is in A, the same
    a_in_b: bool = True
    common: int = 0  # offsets both sides have the same record at
    records: list[dict[str, Any]] | None = None  # with deep: the records that differ


def _compare(pairs: Iterable[_Pair], ba: Batch, bb: Batch, deep: bool) -> _Compared:
    producer_differs = (ba.producer_id, ba.producer_epoch) != (bb.producer_id, bb.producer_epoch)
    c = _Compared(records=[] if deep else None)
    first_a = first_b = None  # A's first record that differs; B's first record A has not
    for x, y in pairs:
        if x is None:
            c.b_in_a = False
            if first_b is None:
                first_b = y.offset if y is not None else None
        elif y is None:
            c.a_in_b = False
            if first_a is None:
                first_a = x.offset
        elif x.content() != y.content():
            c.b_in_a = c.a_in_b = False
            if first_a is None:
                first_a = x.offset
        else:
            c.common += 1
            if producer_differs and first_a is None:
                first_a = x.offset
        if c.records is not None:
            d = _record_difference(x, y, ba, bb)
            if d is not None:
                c.records.append(d)
    c.first = first_a if first_a is not None else first_b
    return c


def show(v: bytes | None, limit: int = 64) -> str | None:
    """A value for people and JSON: text when it is printable UTF-8, else hex; long values
    cut with their size."""
    if v is None:
        return None
    head = v[:limit]
    try:
        text = head.decode("utf-8")
        shown = text if text.isprintable() else None
    except UnicodeDecodeError:
        shown = None
    if shown is None:
        shown = "0x" + head.hex()
    return shown if len(v) <= limit else f"{shown}... ({len(v)} B)"


def _show_field(name: str, rec: _Rec, batch: Batch) -> Any:
    if name in ("key", "value"):
        return show(getattr(rec, name))
    if name == "headers":
        return [[k, show(v)] for k, v in rec.headers]
    if name in ("producer_id", "producer_epoch"):
        return getattr(batch, name)
    return getattr(rec, name)


def record_differences(
    ba: Batch, ra: Iterable[_Rec], bb: Batch, rb: Iterable[_Rec]
) -> list[dict[str, Any]]:
    """Per offset of either side: the record only on one side, or the fields that differ."""
    return [
        d for x, y in _listed_pairs(ra, rb) if (d := _record_difference(x, y, ba, bb)) is not None
    ]


def _header(b: Batch, name: str) -> Any:
    return getattr(b, name)


def batch_info(ref: _Ref) -> dict[str, Any]:
    b = ref.batch
    return {
        "path": ref.path,
        "position": b.position,
        "base_offset": ref.base,
        "last_offset": ref.last,
        "records": b.count,
        "size": b.size,
        "crc": b.crc,
        "crc_valid": b.crc_valid,
        "leader_epoch": b.partition_leader_epoch,
        "magic": b.magic,
        "attributes": b.attributes,
        "compression": codec_name(b.compression),
        "timestamp_type": b.timestamp_type,
        "base_timestamp": b.base_timestamp,
        "max_timestamp": b.max_timestamp,
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control,
        "delete_horizon_ms": b.delete_horizon_ms,
    }


# --------------------------------------------------------------------------------------------
# compaction: one side's records are the other's minus what the cleaner removes


def _digest(key: bytes) -> bytes:
    return hashlib.md5(key, usedforsecurity=False).digest()


class _Compaction:
    """Whether the differences so far are what the log cleaner does to the full side."""

    def __init__(self, limits: ReadLimits) -> None:
        self.side: str | None = None  # the compacted side
        self.pending_keys: dict[bytes, int] = {}  # dropped key -> offset, not yet superseded
        # producer -> (first offset, keys) of transactional batches dropped whole: aborted
        # data needs no later key, so an ABORT marker clears their keys
        self.pending_txns: dict[int, tuple[int, list[bytes]]] = {}
        self.limits = limits

    @property
    def pending(self) -> bool:
        return bool(self.pending_keys or self.pending_txns)

    def earliest_pending(self) -> int | None:
        return min(self.pending_keys.values(), default=None)

    def choose(self, compacted: str) -> bool:
        if self.side is None:
            self.side = compacted
        return self.side == compacted

    def see(self, batch: Batch, records: Iterable[_Rec] | None = None) -> None:
        """A batch of the full side's history, in offset order: its records supersede pending
        keys, its ABORT marker clears the keys of its producer's dropped batches."""
        if batch.is_control:
            txn = self.pending_txns.pop(batch.producer_id, None)
            if txn is not None and batch.control_type(self.limits.max_batch_bytes) == ABORT:
                first, digests = txn
                for d in digests:
                    if self.pending_keys.get(d, -1) >= first:
                        del self.pending_keys[d]
            return
        if not self.pending_keys:
            return
        for r in records if records is not None else _records(batch, self.limits):
            self._supersede(r)

    def _supersede(self, r: _Rec) -> None:
        if r.key is not None:
            d = _digest(r.key)
            seen = self.pending_keys.get(d)
            if seen is not None and seen < r.offset:
                del self.pending_keys[d]

    def drop(self, batch: Batch, records: Iterable[tuple[_Rec, bool]], any_kept: bool) -> None:
        """The full side's ``records`` of ``batch``, each with whether the compacted side kept
        it (``any_kept``: some were), the others removed: each removed record with a key and a
        value must be superseded by a later record with the same key (checked as the walk goes
        on), unless its transaction was aborted."""
        if batch.is_control:
            self.see(batch)  # a marker the cleaner removed still ends its transaction
            return
        txn: list[bytes] | None = None
        if batch.is_transactional and batch.producer_id >= 0 and not any_kept:
            _first, txn = self.pending_txns.setdefault(batch.producer_id, (batch.base_offset, []))
        for r, kept in records:
            self._supersede(r)
            if kept or r.key is None or r.value is None:
                continue  # kept, keyless (the cleaner drops those) or a tombstone
            d = _digest(r.key)
            self.pending_keys.setdefault(d, r.offset)
            if txn is not None:
                txn.append(d)


# --------------------------------------------------------------------------------------------
# comparing one pair


def _contains(ref: _Ref | None, offset: int) -> bool:
    return ref is not None and ref.base <= offset <= ref.last


class _Walk:
    def __init__(self, pair: Pair, sa: _Side, sb: _Side, options: DiffOptions) -> None:
        self.pair = pair
        self.sides = {A: sa, B: sb}
        self.options = options
        self.compaction = _Compaction(options.ctx.limits)
        self.diverged_at: int | None = None
        self.batch_epochs_at: dict[str, int | None] = {A: None, B: None}
        self.differences = 0
        self.shown = 0
        self.common = 0
        self.lag = {A: [0, 0], B: [0, 0]}  # records, bytes past the other side's end
        # side -> (batches of the differences that fail their CRC, where the first is)
        self.crc_failures: dict[str, tuple[int, str]] = {}

    # -- reporting ---------------------------------------------------------------------------
    def _emit(self, d: Difference) -> Iterator[Difference]:
        self.differences += 1
        for name, info in ((A, d.a), (B, d.b)):
            if info is not None and info.get("crc_valid") is False:
                count, first = self.crc_failures.get(
                    name, (0, f"{info['path']}:{info['position']}")
                )
                self.crc_failures[name] = (count + 1, first)
        limit = self.options.max_differences
        if limit == 0 or self.shown < limit:
            self.shown += 1
            yield d

    def _diverge(self, offset: int, ra: _Ref | None, rb: _Ref | None) -> None:
        if self.diverged_at is not None:
            return
        self.diverged_at = offset
        for name, ref in ((A, ra), (B, rb)):
            if _contains(ref, offset):
                assert ref is not None
                self.batch_epochs_at[name] = ref.batch.partition_leader_epoch

    # -- the walk ----------------------------------------------------------------------------
    def run(self) -> Iterator[Difference]:
        sa, sb = self.sides[A], self.sides[B]
        start = max(sa.log_start_offset, sb.log_start_offset)
        ita = (r for r in sa.batches() if r.last >= start)
        itb = (r for r in sb.batches() if r.last >= start)
        a, b = next(ita, None), next(itb, None)
        while a is not None and b is not None:
            if a.base == b.base and a.last == b.last:
                yield from self._pair(a, b)
                a, b = next(ita, None), next(itb, None)
            elif a.last < b.base:
                yield from self._only(A, a, b)
                a = next(ita, None)
            elif b.last < a.base:
                yield from self._only(B, b, a)
                b = next(itb, None)
            else:  # overlapping, differently cut: another history
                self._diverge(min(a.base, b.base), a, b)
                if a.last <= b.last:
                    yield from self._only(A, a, b, overlap=True)
                    a = next(ita, None)
                else:
                    yield from self._only(B, b, a, overlap=True)
                    b = next(itb, None)
        # the tail: what one side has past the other's end
        for name, ref, it in ((A, a, ita), (B, b, itb)):
            while ref is not None:
                self.lag[name][0] += ref.batch.count
                self.lag[name][1] += ref.batch.size
                if self.diverged_at is not None:
                    yield from self._emit(self._only_in(name, ref))
                elif self.compaction.pending:
                    self.compaction.see(ref.batch)
                ref = next(it, None)
        for name in (A, B):
            for t in self.sides[name].tails:
                yield from self._emit(
                    Difference(
                        self.pair.name,
                        t["kind"],
                        None,
                        None,
                        t if name == A else None,
                        t if name == B else None,
                    )
                )

    def _pair(self, a: _Ref, b: _Ref) -> Iterator[Difference]:
        ba, bb = a.batch, b.batch
        if ba.crc == bb.crc and ba.size == bb.size and ba.data == bb.data:
            self.common += 1
            if self.diverged_at is None and self.compaction.pending:
                self.compaction.see(ba)
            return
        fields = [f for f in HEADER_FIELDS if _header(ba, f) != _header(bb, f)]
        if "base_offset" not in fields and ba.base_offset != bb.base_offset:
            fields.insert(0, "base_offset")
        d = Difference(
            self.pair.name, CHANGED, a.base, a.last, batch_info(a), batch_info(b), fields
        )
        if self.diverged_at is not None and not self.options.deep:
            yield from self._emit(d)
            return
        try:
            c, pairs = self._compare(ba, bb)
        except FormatError as e:
            d.records = [{"decode_error": f"{e} ({e.code})"}]
            self._diverge(a.base, a, b)
            yield from self._emit(d)
            return
        first = c.first
        d.first_differing_offset = first
        if self.options.deep:
            d.records = c.records
        if self.diverged_at is None:
            if self._compaction_explains(ba, bb, c, pairs):
                d.explained_by = "compaction"
            else:
                epoch_differs = ba.partition_leader_epoch != bb.partition_leader_epoch
                at = a.base if first is None or epoch_differs else first
                self._diverge(at, a, b)
        yield from self._emit(d)

    def _compare(self, ba: Batch, bb: Batch) -> tuple[_Compared, Callable[[], Iterator[_Pair]]]:
        """The two batches' records compared as they are decoded, and how to pair them again
        (decoded again): as lists where a side's offsets do not increase."""
        limit = self.options.ctx.limits
        deep = self.options.deep

        def streamed() -> Iterator[_Pair]:
            return _by_offset(_records(ba, limit), _records(bb, limit))

        try:
            return _compare(streamed(), ba, bb, deep), streamed
        except _Unordered:
            ra, rb = list(_records(ba, limit)), list(_records(bb, limit))

            def listed() -> Iterator[_Pair]:
                return _listed_pairs(ra, rb)

            return _compare(listed(), ba, bb, deep), listed

    def _compaction_explains(
        self, ba: Batch, bb: Batch, c: _Compared, pairs: Callable[[], Iterator[_Pair]]
    ) -> bool:
        if any(_header(ba, f) != _header(bb, f) for f in _KEPT_BY_CLEANER):
            return False
        b_in_a, a_in_b = c.b_in_a, c.a_in_b
        if b_in_a and a_in_b:
            # the same records, another header: the cleaner only rewrites an unchanged batch
            # to give it a delete horizon
            if (ba.delete_horizon_ms is None) == (bb.delete_horizon_ms is None):
                return False
            compacted = A if ba.delete_horizon_ms is not None else B
        elif b_in_a:
            compacted = B
        elif a_in_b:
            compacted = A
        else:
            return False
        if not self.compaction.choose(compacted):
            return False
        # the full side's records, each with whether the compacted side has it (the same)
        if compacted == A:
            full_batch = bb
            full = ((y, x is not None) for x, y in pairs() if y is not None)
        else:
            full_batch = ba
            full = ((x, y is not None) for x, y in pairs() if x is not None)
        self.compaction.drop(full_batch, full, c.common > 0)
        return True

    def _only_in(self, name: str, ref: _Ref) -> Difference:
        """A batch that only side ``name`` has."""
        return Difference(
            self.pair.name,
            ONLY_A if name == A else ONLY_B,
            ref.base,
            ref.last,
            batch_info(ref) if name == A else None,
            batch_info(ref) if name == B else None,
        )

    def _only(
        self, name: str, ref: _Ref, other: _Ref, overlap: bool = False
    ) -> Iterator[Difference]:
        d = self._only_in(name, ref)
        if self.diverged_at is None and not overlap:
            compacted = B if name == A else A  # the side without the batch
            explained = False
            if self.compaction.choose(compacted):
                try:
                    records = (
                        iter(())
                        if ref.batch.is_control
                        else _records(ref.batch, self.options.ctx.limits)
                    )
                    self.compaction.drop(ref.batch, ((r, False) for r in records), False)
                    explained = True
                except FormatError:
                    explained = False
            if explained:
                d.explained_by = "compaction"
            else:
                self._diverge(ref.base, ref if name == A else other, other if name == A else ref)
        yield from self._emit(d)


def diff_partition(pair: Pair, options: DiffOptions) -> Iterator[Difference | PartitionDiff]:
    """The differences of one pair as they are found, then its verdict."""
    if pair.a is None or pair.b is None:
        yield PartitionDiff(
            pair.name,
            pair.a_display,
            pair.b_display,
            ONLY_IN_A if pair.b is None else ONLY_IN_B,
            options.leader,
            {A: None, B: None},
            {A: None, B: None},
            replicas=options.replicas(),
        )
        return
    assert pair.a_display is not None and pair.b_display is not None
    sa = _Side(A, pair.a, pair.a_display)
    sb = _Side(B, pair.b, pair.b_display)
    walk = _Walk(pair, sa, sb, options)
    yield from walk.run()
    comp = walk.compaction
    if walk.diverged_at is None and comp.pending_keys:
        at = comp.earliest_pending()
        assert at is not None
        walk._diverge(at, None, None)
    pd = PartitionDiff(
        pair.name,
        pair.a_display,
        pair.b_display,
        IDENTICAL,
        options.leader,
        {A: sa.log_start_offset, B: sb.log_start_offset},
        {A: sa.log_end_offset, B: sb.log_end_offset},
        common_batches=walk.common,
        differences=walk.differences,
        differences_shown=walk.shown,
        replicas=options.replicas(),
    )
    pd.torn_tail = {
        name: next((t for t in s.tails if t["kind"] == TORN), None)
        for name, s in ((A, sa), (B, sb))
    }
    caches: dict[str, EpochCache] = {}
    for name, s in ((A, sa), (B, sb)):
        cache, source, notes = s.epoch_cache()
        caches[name] = cache
        entries, _ = read_checkpoint(s.view.leader_epoch_checkpoint)
        pd.epochs[name] = {
            "source": source,
            "entries": cache.as_list(),
            "timeline": [asdict(r) for r in timeline(entries, s.epoch_runs.runs)],
        }
        pd.notes += notes
        if s.tails:
            pd.notes.append(
                f"{name}: the walk of {len(s.tails)} segment{'' if len(s.tails) == 1 else 's'} "
                "stopped early (torn tail or "
                "corruption): only whole batches before it are compared"
            )
    for name, (count, first) in sorted(walk.crc_failures.items()):
        pd.notes.append(
            f"{name}: {count:,} {'batch fails its' if count == 1 else 'batches fail their'} "
            f"CRC, the first at {first}: a corrupt copy, "
            "not a divergence of histories (repair or re-replicate it)"
        )
    for name in (A, B):
        records, size = walk.lag[name]
        if records or size:
            pd.lagging = B if name == A else A
            pd.lag_records, pd.lag_bytes = records, size
    if pd.lagging is not None:
        ahead = A if pd.lagging == B else B
        ends = pd.end_offsets
        pd.lag_offsets = (ends[ahead] or 0) - (ends[pd.lagging] or 0)
    if walk.diverged_at is not None:
        pd.verdict = DIVERGED
        pd.diverged_at = walk.diverged_at
        pd.epochs_at_divergence = {
            name: {
                "batch": walk.batch_epochs_at[name],
                "cache": caches[name].epoch_at(walk.diverged_at),
            }
            for name in (A, B)
        }
    elif comp.side is not None:
        pd.verdict = MODULO_COMPACTION
        pd.compacted = comp.side
    elif sa.log_start_offset != sb.log_start_offset:
        pd.verdict = DIFFERENT_START
        pd.notes += _head_in_remote_storage(sa, sb)
    elif pd.lagging is not None:
        pd.verdict = PREFIX
    if pd.verdict != IDENTICAL:
        leader = options.leader
        follower = B if leader == A else A
        sl, sf = (sa, sb) if leader == A else (sb, sa)
        hw, _source = sf.view.high_watermark()
        seen = [e for e in (sl.epochs_seen, sf.epochs_seen) if e is not None]
        elected, election = elect(
            caches[leader],
            sl.log_end_offset,
            caches[follower],
            epochs_seen=max(seen, default=None),
            cached_at_end=sl.cached_at_end,
        )
        t = truncation_offset(
            elected,
            sl.log_end_offset,
            caches[follower],
            sf.log_end_offset,
            hw,
            leader_name=leader,
            follower_name=follower,
        )
        t.election = election
        pd.truncation = t.as_obj()
        # at most to the leader's log end: a fetch past it is out of range, and the follower
        # truncates to the leader's log end offset
        cut = min(t.offset, sl.log_end_offset)
        pd.lost, pd.refetched = follower_offsets(
            pd,
            follower,
            cut,
            (sf.log_start_offset, sf.log_end_offset),
            (sl.log_start_offset, sl.log_end_offset),
        )
        if pd.lagging == leader and pd.verdict in (PREFIX, MODULO_COMPACTION) and pd.lost:
            lost = pd.lost
            pd.notes.append(
                f"the leader ({leader}) lags: follower {follower} truncates to {cut} and "
                f"discards {lost['offsets']:,} offsets ({lost['from_offset']}.."
                f"{lost['to_offset']}) that {leader} does not have; --allow-lag accepts only a "
                "lagging follower"
            )
        if pd.diverged_at is not None and t.offset > pd.diverged_at:
            pd.truncation_misses_divergence = True
            if t.rule != "leader-epoch":
                why = "no leader epoch answer: the follower falls back to its high watermark"
            elif not caches[leader]:
                why = (
                    "the leader has no epoch but the one it is elected in, so it answers any "
                    "earlier epoch with its log end offset"
                )
            else:
                why = (
                    "the same epoch on both sides, which the leader epoch exchange cannot tell "
                    "apart"
                )
            pd.notes.append(
                f"the broker's rule truncates follower {follower} to {t.offset}, above the "
                f"divergence at {pd.diverged_at}: the replicas would stay different ({why})"
            )
    yield pd


def _head_in_remote_storage(sa: _Side, sb: _Side) -> list[str]:
    """A tiered topic's replica that starts later, its missing head held in remote storage
    (a new replica fetches from the tiered offset, KIP-1023): not records lost. Told by the
    __remote_log_metadata partitions beside either side."""
    late, early = (sa, sb) if sa.log_start_offset > sb.log_start_offset else (sb, sa)
    head = (early.log_start_offset, late.log_start_offset - 1)
    tiers = TierCache()
    for side in (late, early):
        summary = tiers.summary_of(side.view)
        span = None if summary is None else summary.remote.offsets()
        if summary is None or span is None:
            continue
        gaps = [g for g in summary.remote.gaps() if g[0] <= head[1] and g[1] >= head[0]]
        if span[0] <= head[0] and span[1] >= head[1] and not gaps:
            return [
                f"{late.name}'s head {head[0]}..{head[1]} is in remote storage "
                f"({summary.remote.metadata_partition}): a replica of a tiered topic starts "
                "at the tiered offset (KIP-1023); no record is missing"
            ]
    return []


def follower_offsets(
    pd: PartitionDiff,
    follower: str,
    cut: int,
    follower_range: tuple[int, int],
    leader_range: tuple[int, int],
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """What the follower loses and what it only re-fetches, each ``{side, replica, path,
    from_offset, to_offset, offsets}`` or None. It truncates to ``cut`` and fetches the
    leader's records from there (``AbstractFetcherThread``). The leader holds the follower's
    records the same from its log start up to where the histories part (``diverged_at``, else
    the leader's log end; a compacted copy holds the same history): those at or above ``cut``
    are re-fetched. The follower's records from there to its log end are lost: truncated, or
    kept past a truncation that misses the divergence (records the leader does not have).
    The ranges are ``(log start, log end)``."""
    f_start, f_end = follower_range
    l_start, l_end = leader_range
    same_until = l_end if pd.diverged_at is None else pd.diverged_at

    def span(first: int, end: int) -> dict[str, Any] | None:
        if first >= end:
            return None
        return {
            "side": follower,
            "replica": pd.replicas[follower],
            "path": pd.a if follower == A else pd.b,
            "from_offset": first,
            "to_offset": end - 1,
            "offsets": end - first,
        }

    lost = span(max(same_until, f_start), f_end)
    return lost, span(max(cut, f_start, l_start), min(same_until, f_end))


def diff(
    a: str, b: str, options: DiffOptions, *, jobs: int = 1
) -> Iterator[Difference | PartitionDiff]:
    """Every difference and every partition verdict of A against B, streamed in partition
    order; partitions are compared by ``jobs`` processes."""
    pairs = pair_partitions(a, b)
    work = partial(diff_partition, options=options)
    yield from pool.spooled(
        options.ctx,
        work,
        pairs,
        jobs,
        prefix="klogtool-diff-",
        part=lambda p: f"partition {p.name}",
    )

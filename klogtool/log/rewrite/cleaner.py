"""Log compaction, offline: what the broker's ``LogCleaner`` does to one partition
(docs/kafka-rules.md: Compaction), with every decision recorded.

Ranges (``LogCleanerManager.cleanableOffsets``): the first dirty offset is the
``cleaner-offset-checkpoint`` entry (reset to the log start offset when missing, below it or
beyond the log end); the uncleanable bound is the smallest of the last stable offset (the
first offset of the earliest open transaction, at most the high watermark), the active
segment's base offset and, with ``min.compaction.lag.ms``, the base offset of the first dirty
segment whose largest timestamp is younger than the lag; it is rounded down to the base offset
of the segment holding it. The active segment is never cleaned.

The offset map (``buildOffsetMap``) holds key (MD5) -> last offset over the dirty range, from
records of non-control, non-aborted batches. Then every segment below the bound (the clean
section too) is recopied, in groups (``groupSegmentsBySize``), each into one segment named
after its first: a record is kept when it is the latest of its key and is not a tombstone past
its delete horizon; keyless records go; aborted transactional batches go whole; transaction
markers go once no data of their transaction is left and their delete horizon has passed.
A batch keeps its offsets, producer id/epoch, base sequence, flags and codec; a batch that
loses records is rebuilt (the codec's default level, like the cleaner); one that keeps
tombstones (or is a removable marker) gets the KIP-534 delete horizon (now +
``delete.retention.ms``); the last batch of a producer still active, and the last batch below
the bound, survive as an empty 61-byte header even when all their records go.

:func:`plan_compaction` is pure and returns a :class:`CompactionPlan` (ranges, eligibility and
the per-segment answer to "why is this (not) compacting"); with ``simulate`` it also runs the
cleaning without writing, for exact per-segment counts and sizes. :func:`execute_compaction`
writes the groups through the ``.cleaned``/``.swap`` protocol and updates
``cleaner-offset-checkpoint``.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from klogtool.codes import Code
from klogtool.errors import InputError, KlogtoolError, RefusedError
from klogtool.formats import codecs
from klogtool.formats.batch import LOG_APPEND_TIME, Batch, Record
from klogtool.formats.errors import FormatError
from klogtool.formats.index import (
    AbortedTxn,
    encode_offset_index,
    encode_time_index,
    encode_txn_index,
    iter_txn_index,
)
from klogtool.formats.legacy import encode_wrapper
from klogtool.formats.limits import ReadLimits
from klogtool.formats.payloads.control import ABORT, COMMIT
from klogtool.formats.records import SegmentScanner
from klogtool.formats.v2 import DefaultBatch, reencode
from klogtool.log import layout
from klogtool.log.atomic import CLEANED, FileOps, swap_in_cleaned
from klogtool.log.context import ReadContext
from klogtool.log.indexer import build_indexes
from klogtool.log.partition import (
    CLEANER,
    PartitionContext,
    PartitionView,
    PlanInputs,
    load_partition,
    update_offset_checkpoint,
)
from klogtool.log.rewrite import native_clean
from klogtool.log.segment import Walked, mapped, phase_walk, read_small
from klogtool.log.topicconfig import LONG_MAX, TopicConfig, refuse_assumed
from klogtool.log.txnreplay import TxnReplay
from klogtool.log.writing import (
    Notice,
    SkipPartition,
    check_batch_offsets,
    require_readable_end,
    unreadable,
)

if TYPE_CHECKING:
    from klogtool import events

INT32_MAX = (1 << 31) - 1

# segment status
CLEAN_SECTION = "clean"
DIRTY = "dirty"
UNCLEANABLE = "uncleanable"
ACTIVE = "active"

# batch retention (MemoryRecords.RecordFilter.BatchRetention)
_DELETE, _DELETE_EMPTY, _RETAIN_EMPTY = "delete", "delete-empty", "retain-empty"


@dataclass
class SegmentStats:
    """One source segment: its place in the ranges and what the cleaning did to it."""

    base_offset: int
    size: int
    status: str  # CLEAN_SECTION | DIRTY | UNCLEANABLE | ACTIVE
    why: str
    largest_timestamp: int
    group: int | None = None  # index of its cleaning group (None: not cleaned)
    batches_in: int = 0
    records_in: int = 0
    kept: int = 0
    superseded: int = 0
    tombstones_expired: int = 0
    aborted: int = 0
    keyless: int = 0
    markers_removed: int = 0  # control batches dropped
    empty_batches_kept: int = 0  # batches written as an empty header (producer state)
    tombstones_kept: int = 0
    delete_horizon_ms: int | None = None  # the latest horizon given or kept
    batches_out: int = 0
    bytes_after: int | None = None  # None: not measured

    @property
    def removed(self) -> int:
        return self.superseded + self.tombstones_expired + self.aborted + self.keyless

    def counts(self) -> events.CompactSegmentCounts:
        return {
            "records_in": self.records_in,
            "kept": self.kept,
            "superseded": self.superseded,
            "tombstones_expired": self.tombstones_expired,
            "aborted": self.aborted,
            "keyless": self.keyless,
            "markers_removed": self.markers_removed,
            "empty_batches_kept": self.empty_batches_kept,
            "tombstones_kept": self.tombstones_kept,
        }

    def as_obj(self, partition: str, *, measured: bool) -> events.CompactSegment:
        """The ``segment`` object (``partition``: its partition dir); ``measured``: whether
        the cleaning ran or was simulated, so that a cleaned segment's counts and bytes after
        are known (they are left out, or null, otherwise)."""
        cleaned = measured and self.group is not None
        counts: events.CompactSegmentCounts = self.counts() if cleaned else {}
        return {
            "type": "segment",
            "partition": partition,
            "base_offset": self.base_offset,
            "status": self.status,
            "why": self.why,
            "group": self.group,
            "largest_timestamp": self.largest_timestamp,
            **counts,
            "delete_horizon_ms": self.delete_horizon_ms,
            "bytes_before": self.size,
            "bytes_after": self.bytes_after if cleaned else None,
        }


@dataclass
class Producer:
    """A producer as the broker's ProducerStateManager has it after loading the log."""

    epoch: int
    last_data_offset: int | None
    last_timestamp: int
    txn_first_offset: int | None = None


@dataclass
class _Segment:
    base_offset: int
    path: Path
    size: int
    mtime_ns: int
    largest_timestamp: int
    next_offset: int
    index_bytes: int
    timeindex_bytes: int
    first_batch_timestamp: int
    txns: list[AbortedTxn]


@dataclass
class CompactionPlan(PartitionContext):
    last_stable_offset: int
    first_dirty_offset: int
    first_dirty_source: str
    uncleanable_offset: int
    uncleanable_reason: str
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    dirty_ratio: float
    eligible: bool  # whether the broker's cleaner would pick this log now
    eligibility: str
    end_offset: int | None  # the new cleaner checkpoint; None: nothing to clean
    groups: list[list[int]]  # base offsets of the segments of each group
    segments: list[SegmentStats]
    map_size: int
    map_capacity: int
    map_full: bool  # the dirty range did not fit: a further pass has more to clean
    legacy_delete_horizon_ms: int
    active_producers: int
    simulated: bool
    notes: list[str] = field(default_factory=list)
    _cleaner: _Cleaner | None = field(default=None, repr=False)

    @property
    def nothing_to_clean(self) -> bool:
        return self.end_offset is None

    @property
    def why_not(self) -> str | None:
        """Why the cleaner has nothing to do here, in one sentence (None if it has)."""
        if self.end_offset is not None:
            return None
        return (
            f"the first dirty offset {self.first_dirty_offset} is not below the first "
            f"uncleanable offset {self.first_uncleanable_offset} ({self.uncleanable_reason})"
        )

    def as_obj(self, *, n_pass: int, ran: bool) -> events.CompactPartition:
        """The ``partition`` object: the outcome of pass ``n_pass`` (``ran``: it was carried
        out)."""
        return {
            "type": "partition",
            "partition": str(self.path),
            "topic": self.topic,
            "now": self.now,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark,
            "high_watermark_source": self.high_watermark_source,
            "last_stable_offset": self.last_stable_offset,
            "first_dirty_offset": self.first_dirty_offset,
            "first_dirty_source": self.first_dirty_source,
            "first_uncleanable_offset": self.first_uncleanable_offset,
            "uncleanable_reason": self.uncleanable_reason,
            "dirty_ratio": round(self.dirty_ratio, 6),
            "clean_bytes": self.clean_bytes,
            "cleanable_bytes": self.cleanable_bytes,
            "eligible": self.eligible,
            "eligibility": self.eligibility,
            "end_offset": self.end_offset,
            "groups": self.groups,
            "pass": n_pass,
            "keys_mapped": self.map_size,
            "map_capacity": self.map_capacity,
            "map_full": self.map_full,
            "active_producers": self.active_producers,
            "compacted": ran,
            "why_not": self.why_not,
            "notes": self.notes,
        }


# ------------------------------------------------------------------------------ transactions
class _TxnTracker:
    """``CleanedTransactionMetadata``: aborted transactions met so far, to drop their data
    and decide which markers may go."""

    def __init__(self) -> None:
        self._queue: list[tuple[int, int, AbortedTxn]] = []
        self._seq = 0
        # pid -> [AbortedTxn, last observed | None]
        self.ongoing_aborted: dict[int, list[Any]] = {}
        self.ongoing_committed: set[int] = set()
        self.cleaned_index: list[AbortedTxn] = []

    def add(self, txns: list[AbortedTxn]) -> None:
        for t in txns:
            heapq.heappush(self._queue, (t.first_offset, self._seq, t))
            self._seq += 1

    def _consume_up_to(self, offset: int) -> None:
        q = self._queue
        while q and q[0][0] <= offset:
            _, _, txn = heapq.heappop(q)
            self.ongoing_aborted.setdefault(txn.producer_id, [txn, None])

    def on_control(self, batch: Batch, control_type: int | None) -> bool:
        """Whether the control batch may be discarded."""
        self._consume_up_to(batch.last_offset)
        if control_type is None:
            return True  # an empty control batch was already cleaned
        pid = batch.producer_id
        if control_type == ABORT:
            meta = self.ongoing_aborted.pop(pid, None)
            if meta is not None and meta[1] is not None:
                self.cleaned_index.append(meta[0])
                return False  # keep the marker until the aborted data is gone
            return True
        if control_type == COMMIT:
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch(self, batch: Batch) -> bool:
        """Whether the data batch belongs to an aborted transaction."""
        self._consume_up_to(batch.last_offset)
        if batch.is_transactional:
            meta = self.ongoing_aborted.get(batch.producer_id)
            if meta is not None:
                meta[1] = batch.last_offset
                return True
            self.ongoing_committed.add(batch.producer_id)
        return False


def _control_type(batch: Batch, limits: ReadLimits) -> int | None:
    """The batch's control type; None for an empty control batch. A record whose key is not
    valid counts as unknown (-1): kept, like ControlRecordType.UNKNOWN. Errors reading the
    records are raised. (A v2 batch has records exactly when its record count is not 0.)"""
    control_type = batch.control_type(limits.max_batch_bytes)
    if control_type is None and batch.count != 0:
        return -1
    return control_type


# ------------------------------------------------------------------------------ the cleaner
class _Cleaner:
    def __init__(
        self,
        segments: list[_Segment],
        config: TopicConfig,
        now: int,
        producers: dict[int, Producer],
        ctx: ReadContext,
    ):
        self.segments = segments
        self.config = config
        self.now = now
        self.limits = ctx.limits
        self.progress = ctx.progress
        self.offset_map = native_clean.offset_map()
        self.latest_offset = -1
        self.end_offset = 0
        self.map_full = False
        self.legacy_horizon = 0
        self.active = {
            pid: p
            for pid, p in producers.items()
            if p.txn_first_offset is not None
            or now - p.last_timestamp < config.producer_id_expiration_ms
        }

    # -- aborted transactions from the txn indexes --------------------------------------------
    def collect_aborted(self, start: int, upper: int) -> list[AbortedTxn]:
        """``UnifiedLog.collectAbortedTransactions``: from the segment holding ``start``
        onwards until an entry's last stable offset reaches ``upper``."""
        out: list[AbortedTxn] = []
        first = 0
        for i, s in enumerate(self.segments):
            if s.base_offset <= start:
                first = i
        for s in self.segments[first:]:
            for t in s.txns:
                if t.last_offset >= start and t.first_offset < upper:
                    out.append(t)
                if t.last_stable_offset >= upper:
                    return out
        return out

    # -- the offset map ---------------------------------------------------------------------
    @property
    def map_capacity(self) -> int:
        """Keys the broker's SkimpyOffsetMap takes before it is full: 24-byte slots (MD5 +
        offset) of the dedupe buffer (at most 2 GiB), times the load factor."""
        slots = min(self.config.dedupe_buffer_size, INT32_MAX) // 24
        return int(slots * self.config.dedupe_load_factor)

    def build_map(self, first_dirty: int, end: int) -> None:
        """``Cleaner.buildOffsetMap``: the last offset of each key over [first_dirty, end),
        until the map is full. ``end_offset`` is where this pass's cleaning stops (the new
        checkpoint): past the last mapped offset, or ``end`` when everything fit."""
        tracker = _TxnTracker()
        tracker.add(self.collect_aborted(first_dirty, end))
        omap = self.offset_map
        md5 = hashlib.md5
        capacity = self.map_capacity
        latest = -1
        dirty = [s for s in self.segments if s.base_offset < end and s.next_offset > first_dirty]
        walked = phase_walk(self.progress, "building the offset map", sum(s.size for s in dirty))
        for i, s in enumerate(dirty):
            with mapped(s.path) as buf:
                try:
                    for batch in SegmentScanner(buf):
                        walked.at(batch.position)
                        if batch.last_offset < first_dirty:
                            continue
                        if batch.is_control:
                            tracker.on_control(batch, _control_type(batch, self.limits))
                        elif not tracker.on_batch(batch):
                            added = native_clean.map_batch(
                                omap,
                                batch.data,
                                self.limits.max_batch_bytes,
                                first_dirty,
                                capacity,
                                f"{s.path}:{batch.position}",
                            )
                            if added is not None:  # the native engine put its keys
                                full, last_put = added
                                latest = latest if last_put is None else last_put
                                if full:
                                    self.map_full = True
                                    self.latest_offset, self.end_offset = latest, latest + 1
                                    return
                                latest = batch.last_offset
                                continue
                            for r in batch.records(self.limits.max_batch_bytes):
                                if r.key is not None and r.offset >= first_dirty:
                                    if len(omap) >= capacity:
                                        self.map_full = True
                                        self.latest_offset, self.end_offset = latest, latest + 1
                                        return
                                    omap[md5(r.key).digest()] = latest = r.offset
                        latest = batch.last_offset
                except FormatError as e:
                    raise unreadable(e, s.path) from None
            walked.done(s.size)
            # past gaps at the segment's end, up to the next segment
            latest = dirty[i + 1].base_offset - 1 if i + 1 < len(dirty) else end - 1
        self.latest_offset, self.end_offset = end - 1, end

    # -- cleaning -------------------------------------------------------------------------------
    def clean_group(
        self,
        group: list[int],
        tracker: _TxnTracker,
        stats: dict[int, SegmentStats],
        walked: Walked | None = None,
    ) -> Iterator[bytes]:
        """The batches of the cleaned segment replacing the segments ``group`` (indexes into
        ``self.segments``); fills ``stats`` and ``tracker.cleaned_index``."""
        tracker.cleaned_index = []
        for i in group:
            s = self.segments[i]
            st = stats[s.base_offset]
            nxt = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
            upper = nxt if nxt is not None else s.next_offset
            tracker.add(self.collect_aborted(s.base_offset, upper))
            retain_legacy = s.mtime_ns // 1_000_000 > self.legacy_horizon
            st.bytes_after = 0
            with mapped(s.path) as buf:
                scanner = SegmentScanner(buf)
                try:
                    for batch in scanner:
                        if walked is not None:
                            walked.at(batch.position)
                        out = self._filter(batch, tracker, st, retain_legacy)
                        if out is not None:
                            st.batches_out += 1
                            st.bytes_after += len(out)
                            yield out
                except FormatError as e:
                    raise unreadable(e, s.path) from None
            if walked is not None:
                walked.done(s.size)

    def _last_of_producer(self, batch: Batch) -> bool:
        p = self.active.get(batch.producer_id)
        if p is None:
            return False
        if p.last_data_offset is not None:
            return batch.last_offset == p.last_data_offset
        return batch.is_control and batch.producer_epoch == p.epoch

    def _filter(
        self, batch: Batch, tracker: _TxnTracker, st: SegmentStats, retain_legacy: bool
    ) -> bytes | None:
        st.batches_in += 1
        now = self.now
        is_v2 = isinstance(batch, DefaultBatch)
        if batch.is_control:
            can_discard = tracker.on_control(batch, _control_type(batch, self.limits))
            horizon = batch.delete_horizon_ms
            discard_records = can_discard and horizon is not None and horizon <= now
        else:
            can_discard = tracker.on_batch(batch)
            discard_records = can_discard
        marker_for_empty_txn = can_discard and batch.is_control
        if batch.producer_id >= 0 and self._last_of_producer(batch):
            retention = _RETAIN_EMPTY
        elif batch.last_offset + 1 == self.end_offset:
            retention = _RETAIN_EMPTY  # keep the last offset of the cleaning round
        elif discard_records:
            retention = _DELETE
        else:
            retention = _DELETE_EMPTY
        if retention == _DELETE:
            if batch.is_control:
                st.markers_removed += 1
            else:
                n = batch.count
                st.records_in += n
                st.aborted += n
            return None
        # Two passes over the batch's records, none kept as objects: the first decides which
        # records stay (one byte each), the second encodes them. A batch of millions of tiny
        # records then costs its decompressed size, not a Python object per record.
        decided: tuple[bytes | bytearray, int] | None = None
        if is_v2 and not discard_records and not batch.is_control:
            decided = self._decide_natively(batch, st)
        keep, tombstones = decided or self._decide(batch, discard_records, retain_legacy, st)
        n_records = len(keep)
        n_retained = keep.count(1)
        if not batch.is_control:
            st.records_in += n_records

        def retained() -> Iterator[Record]:
            for r, k in zip(batch.records(self.limits.max_batch_bytes), keep, strict=True):
                if k:
                    yield r

        if n_retained:
            if not batch.is_control:
                st.kept += n_retained
                st.tombstones_kept += tombstones
            if is_v2:
                assert isinstance(batch, DefaultBatch)
                need_horizon = (
                    tombstones > 0 or marker_for_empty_txn
                ) and batch.delete_horizon_ms is None
                if n_retained == n_records and not need_horizon:
                    if batch.delete_horizon_ms is not None and tombstones:
                        st.delete_horizon_ms = batch.delete_horizon_ms
                    return bytes(batch.data)
                horizon = (
                    # Kafka's sum wraps around 64 bits past the largest timestamp, to a horizon
                    # long past that drops the tombstones at the next clean: this keeps them.
                    min(now + self.config.delete_retention_ms, LONG_MAX)
                    if need_horizon
                    else batch.delete_horizon_ms
                )
                if horizon is not None and (tombstones or marker_for_empty_txn):
                    st.delete_horizon_ms = horizon
                # MemoryRecordsBuilder: the base timestamp is the first retained record's
                return reencode(
                    batch,
                    keep=keep,
                    max_batch_bytes=self.limits.max_batch_bytes,
                    base_timestamp=None,
                    max_timestamp=(
                        batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
                    ),
                    delete_horizon_ms=horizon,
                )
            if n_retained == n_records or batch.compression == codecs.NONE:
                return bytes(batch.data)
            lat = batch.timestamp_type == LOG_APPEND_TIME
            return encode_wrapper(
                retained(),
                magic=batch.magic,
                compression=batch.compression,
                timestamp_type=batch.timestamp_type if batch.magic > 0 else 0,
                log_append_time=batch.max_timestamp if lat else None,
            )
        if retention == _RETAIN_EMPTY and is_v2:
            assert isinstance(batch, DefaultBatch)
            st.empty_batches_kept += 1
            return reencode(
                batch, [], compression=codecs.NONE, base_timestamp=-1, delete_horizon_ms=None
            )
        # DELETE_EMPTY; or RETAIN_EMPTY of a legacy entry, where Kafka's cleaner throws
        # ("Empty batches are only supported for magic v2"): dropped here.
        if batch.is_control:
            st.markers_removed += 1
        return None

    def _decide(
        self, batch: Batch, discard_records: bool, retain_legacy: bool, st: SegmentStats
    ) -> tuple[bytearray, int]:
        """Which records of ``batch`` stay (one byte each) and how many of them are
        tombstones."""
        keep = bytearray()
        tombstones = 0
        for r in batch.records(self.limits.max_batch_bytes):
            if discard_records:
                if not batch.is_control:
                    st.aborted += 1
                keep.append(0)
                continue
            if batch.is_control or self._retain(r, batch, retain_legacy, st):
                keep.append(1)
                if r.value is None and not batch.is_control:
                    tombstones += 1
            else:
                keep.append(0)
        return keep, tombstones

    def _decide_natively(self, batch: Batch, st: SegmentStats) -> tuple[bytes, int] | None:
        """:meth:`_decide` for a v2 data batch by the native engine (None: decide in Python),
        by the rules of :meth:`_retain`."""
        horizon = batch.delete_horizon_ms
        decided = native_clean.retain_batch(
            self.offset_map,
            batch.data,
            self.limits.max_batch_bytes,
            self.latest_offset,
            horizon is None or self.now < horizon,  # whether its tombstones stay
            f"byte {batch.position}",
        )
        if decided is None:
            return None
        keep, keyless, superseded, expired, tombstones = decided
        st.keyless += keyless
        st.superseded += superseded
        st.tombstones_expired += expired
        return keep, tombstones

    def _retain(self, r: Record, batch: Batch, retain_legacy: bool, st: SegmentStats) -> bool:
        if r.offset > self.latest_offset:
            return True
        if r.key is None:
            st.keyless += 1
            return False
        found = self.offset_map.get(hashlib.md5(r.key).digest(), -1)
        if r.offset < found:
            st.superseded += 1
            return False
        if r.value is not None:
            return True
        if batch.magic >= 2:
            horizon = batch.delete_horizon_ms
            retain = horizon is None or self.now < horizon
        else:
            retain = retain_legacy
        if not retain:
            st.tombstones_expired += 1
        return retain


# ------------------------------------------------------------------------------ planning
def _scan(view: PartitionView, ctx: ReadContext) -> tuple[list[_Segment], dict[int, Producer]]:
    """Every segment's batch headers: next offsets, first batch timestamps and the producer
    state (the broker's rebuild of ProducerStateManager); the txn indexes."""
    limits = ctx.limits
    walked = phase_walk(ctx.progress, "reading segments", sum(i.size for i in view.segments))
    segments: list[_Segment] = []
    producers: dict[int, Producer] = {}
    replay = TxnReplay()
    floor = 0
    for info in view.segments:
        recovered: list[AbortedTxn] = []
        path = info.log
        next_offset = info.base_offset
        first_ts = -1
        floor = max(floor, info.base_offset)
        with mapped(path) as buf:
            scanner = SegmentScanner(buf)
            try:
                for batch in scanner:
                    walked.at(batch.position)
                    check_batch_offsets(batch, info.base_offset, floor, path)
                    floor = batch.last_offset + 1
                    if next_offset == info.base_offset and first_ts == -1:
                        first_ts = batch.max_timestamp  # getFirstBatchTimestamp
                    next_offset = batch.last_offset + 1
                    if batch.producer_id < 0:
                        continue
                    aborted = replay.feed(batch, limits)
                    if aborted is not None:
                        recovered.append(aborted)
                    _track_producer(producers, batch, limits)
            except FormatError as e:
                raise unreadable(e, path) from None
            require_readable_end(scanner, path)
        walked.done(info.size)
        txns: list[AbortedTxn] = []
        if info.files.index is None:
            # the broker recovers a segment whose offset index is missing (e.g. after it
            # completed an interrupted swap), rebuilding its .txnindex from the log
            txns = recovered
        elif info.files.txnindex is not None:
            try:
                txns = list(iter_txn_index(read_small(info.files.txnindex, 1 << 31)))
            except FormatError as e:
                raise InputError(
                    str(e), path=str(info.files.txnindex), position=e.position, code=e.code
                ) from None
        segments.append(
            _Segment(
                info.base_offset,
                path,
                info.size,
                info.mtime_ns,
                info.largest_timestamp,
                max(next_offset, info.base_offset),
                info.index_bytes,
                info.timeindex_bytes,
                first_ts,
                txns,
            )
        )
    return segments, producers


def _track_producer(producers: dict[int, Producer], batch: Batch, limits: ReadLimits) -> None:
    pid = batch.producer_id
    p = producers.get(pid)
    if p is None:
        p = producers[pid] = Producer(batch.producer_epoch, None, batch.max_timestamp)
    if batch.producer_epoch != p.epoch:
        p.epoch = batch.producer_epoch
        p.last_data_offset = None
    p.last_timestamp = batch.max_timestamp
    if batch.is_control:
        if _control_type(batch, limits) in (ABORT, COMMIT):
            p.txn_first_offset = None
        return
    p.last_data_offset = batch.last_offset
    if batch.is_transactional and p.txn_first_offset is None:
        p.txn_first_offset = batch.base_offset


def _group_segments(
    segs: list[_Segment], cleanable: list[int], config: TopicConfig, first_uncleanable: int
) -> list[list[int]]:
    """``groupSegmentsBySize`` over the segments ``cleanable`` (indexes, in order)."""
    groups: list[list[int]] = []
    rest = list(cleanable)
    while rest:
        head = rest.pop(0)
        group = [head]
        log_size = segs[head].size
        index_size = segs[head].index_bytes
        time_size = segs[head].timeindex_bytes
        while rest:
            nxt = segs[rest[0]]
            last_estimate = (
                segs[rest[1]].base_offset - 1 if len(rest) > 1 else first_uncleanable - 1
            )
            if not (
                log_size + nxt.size <= config.segment_bytes
                and index_size + nxt.index_bytes <= config.segment_index_bytes
                and time_size + nxt.timeindex_bytes <= config.segment_index_bytes
                and (nxt.size == 0 or last_estimate - segs[group[0]].base_offset <= INT32_MAX)
            ):
                break
            group.append(rest.pop(0))
            log_size += nxt.size
            index_size += nxt.index_bytes
            time_size += nxt.timeindex_bytes
        groups.append(group)
    return groups


def plan_compaction(
    view: PartitionView,
    config: TopicConfig,
    *,
    now: int,
    high_watermark: int | str | None = None,
    ctx: ReadContext,
    simulate: bool = False,
) -> CompactionPlan:
    """Where the cleaner would clean ``view`` at time ``now`` and why; with ``simulate``, the
    exact outcome per segment (the cleaning is run, nothing is written). ``ctx.progress``
    hears of each phase's bytes (reading segments, building the offset map, cleaning)."""
    segs, producers = _scan(view, ctx)
    notes: list[str] = []
    part = PartitionContext.load(view, config, now=now, high_watermark=high_watermark)
    leo = part.log_end_offset
    hw, hw_source = part.high_watermark, part.high_watermark_source
    if hw_source.startswith("no "):
        notes.append(
            f"no high watermark checkpointed: the broker starts from the log start offset and "
            f"cleans nothing "
            f"until replication catches up (--high-watermark log-end to use the log end "
            f"offset {leo})"
        )
    # last stable offset: the earliest open transaction, at most the high watermark
    open_txns = [
        (p.txn_first_offset, pid) for pid, p in producers.items() if p.txn_first_offset is not None
    ]
    lso, lso_reason = hw, f"high watermark {hw}, {hw_source}"
    if open_txns:
        first, pid = min(open_txns)
        if first < lso:
            lso = first
            lso_reason = f"last stable offset {first} (open transaction of producer {pid})"
    first_dirty, fd_source = _first_dirty(view)
    # uncleanable bound
    candidates: list[tuple[int, str]] = [(lso, lso_reason)]
    active_base = segs[-1].base_offset if segs else leo
    candidates.append((active_base, f"active segment at {active_base}"))
    if config.min_compaction_lag_ms > 0:
        start_i = _floor_index(segs, first_dirty)
        for s in segs[start_i:-1]:
            if s.largest_timestamp > now - config.min_compaction_lag_ms:
                candidates.append(
                    (
                        s.base_offset,
                        f"min.compaction.lag.ms {config.min_compaction_lag_ms}: segment "
                        f"{s.base_offset}'s largest timestamp {s.largest_timestamp} is newer "
                        f"than now - lag",
                    )
                )
                break
    uncleanable, un_reason = min(candidates, key=lambda c: c[0])
    # rounded down to the segment holding it (the active segment if it is past the others)
    fu_i = _floor_index(segs, uncleanable)
    first_uncleanable = segs[fu_i].base_offset if segs and fu_i < len(segs) - 1 else active_base
    if segs and uncleanable < segs[0].base_offset:
        first_uncleanable = segs[0].base_offset
    cleanable_bytes = sum(
        segs[i].size
        for i in _log_segments(segs, min(first_dirty, first_uncleanable), first_uncleanable)
    )
    clean_bytes = sum(segs[i].size for i in _log_segments(segs, -1, first_dirty))
    total = clean_bytes + cleanable_bytes
    ratio = cleanable_bytes / total if total else 0.0
    if first_dirty >= first_uncleanable or cleanable_bytes == 0:
        eligible, eligibility = False, "nothing cleanable"
    else:
        eligible, eligibility = _eligibility(segs, config, now, first_dirty, ratio)
    stats = _statuses(segs, leo, first_dirty, first_uncleanable, un_reason)
    cleaner = _Cleaner(segs, config, now, producers, ctx)
    end_offset: int | None = None
    groups: list[list[int]] = []
    if first_dirty < first_uncleanable:
        if cleaner.map_capacity < 1:
            raise InputError(
                f"a dedupe buffer of {config.dedupe_buffer_size} bytes holds no key "
                f"(log.cleaner.dedupe.buffer.size: 24 bytes a key, at load factor "
                f"{config.dedupe_load_factor})",
                path=str(view.path),
                code=Code.BAD_CONFIG,
            )
        cleaner.build_map(first_dirty, first_uncleanable)
        end_offset = cleaner.end_offset
        if cleaner.map_full:
            notes.append(
                f"the offset map is full ({cleaner.map_capacity:,} keys for a dedupe buffer of "
                f"{config.dedupe_buffer_size:,} bytes): this pass cleans up to offset "
                f"{end_offset - 1}; the rest of the dirty range is left to the next pass"
            )
            for st in stats.values():
                if st.status == DIRTY and st.base_offset >= end_offset:
                    st.why = "in the dirty range, left to the next pass (the offset map is full)"
        # "legacy delete horizon": the last clean-section segment's mtime - delete.retention.ms
        clean_section = _log_segments(segs, 0, first_dirty)
        last_clean_mtime = segs[clean_section[-1]].mtime_ns // 1_000_000 if clean_section else 0
        cleaner.legacy_horizon = last_clean_mtime - config.delete_retention_ms
        cleanable = [i for i, s in enumerate(segs) if s.base_offset < end_offset]
        idx_groups = _group_segments(segs, cleanable, config, first_uncleanable)
        groups = [[segs[i].base_offset for i in g] for g in idx_groups]
        for gi, g in enumerate(idx_groups):
            for i in g:
                stats[segs[i].base_offset].group = gi
        if simulate:
            tracker = _TxnTracker()
            walked = phase_walk(ctx.progress, "cleaning", sum(segs[i].size for i in cleanable))
            for g in idx_groups:
                for _ in cleaner.clean_group(g, tracker, stats, walked):
                    pass
    return CompactionPlan(
        **part.context_fields(),
        last_stable_offset=lso,
        first_dirty_offset=first_dirty,
        first_dirty_source=fd_source,
        uncleanable_offset=uncleanable,
        uncleanable_reason=un_reason,
        first_uncleanable_offset=first_uncleanable,
        clean_bytes=clean_bytes,
        cleanable_bytes=cleanable_bytes,
        dirty_ratio=ratio,
        eligible=eligible,
        eligibility=eligibility,
        end_offset=end_offset,
        groups=groups,
        segments=[stats[s.base_offset] for s in segs],
        map_size=len(cleaner.offset_map),
        map_capacity=cleaner.map_capacity,
        map_full=cleaner.map_full,
        legacy_delete_horizon_ms=cleaner.legacy_horizon,
        active_producers=len(cleaner.active),
        simulated=simulate,
        notes=notes,
        _cleaner=cleaner,
    )


def _first_dirty(view: PartitionView) -> tuple[int, str]:
    """Where the dirty range starts (the cleaner checkpoint, kept inside the log), and why."""
    log_start, leo = view.log_start_offset, view.log_end_offset
    cp = view.checkpointed(CLEANER)
    if cp is None:
        return log_start, "log start offset: no cleaner checkpoint"
    if cp < log_start:
        return log_start, f"log start offset (checkpoint {cp} is below it)"
    if cp > leo:
        return log_start, f"log start offset (checkpoint {cp} is beyond the log end {leo})"
    return cp, CLEANER


def _eligibility(
    segs: list[_Segment], config: TopicConfig, now: int, first_dirty: int, ratio: float
) -> tuple[bool, str]:
    """Whether the broker's cleaner would pick a log with something cleanable: its dirty
    ratio, or max.compaction.lag.ms forcing it."""
    if ratio > config.min_cleanable_dirty_ratio:
        return True, (
            f"dirty ratio {ratio:.3f} > min.cleanable.dirty.ratio "
            f"{config.min_cleanable_dirty_ratio}"
        )
    start_i = _floor_index(segs, first_dirty)
    firsts = [s.first_batch_timestamp for s in segs[start_i:-1] if s.first_batch_timestamp > 0]
    if firsts and config.max_compaction_lag_ms < (1 << 63) - 1:
        if min(firsts) < now - max(config.max_compaction_lag_ms, 0):
            return True, (
                f"max.compaction.lag.ms {config.max_compaction_lag_ms} has passed for the "
                f"earliest dirty segment (dirty ratio {ratio:.3f})"
            )
    return False, (
        f"dirty ratio {ratio:.3f} <= min.cleanable.dirty.ratio "
        f"{config.min_cleanable_dirty_ratio}: the broker would not pick this log yet"
    )


def _statuses(
    segs: list[_Segment], leo: int, first_dirty: int, first_uncleanable: int, un_reason: str
) -> dict[int, SegmentStats]:
    """Each segment's place for the cleaner (active, uncleanable, clean section, dirty)."""
    stats: dict[int, SegmentStats] = {}
    for i, s in enumerate(segs):
        upper = segs[i + 1].base_offset if i + 1 < len(segs) else leo
        if i == len(segs) - 1:
            status, why = ACTIVE, "the active segment is never cleaned"
        elif s.base_offset == first_uncleanable:
            status, why = UNCLEANABLE, f"the first uncleanable segment: {un_reason}"
        elif s.base_offset > first_uncleanable:
            status, why = UNCLEANABLE, "after the first uncleanable segment"
        elif upper <= first_dirty:
            status, why = (
                CLEAN_SECTION,
                f"below the first dirty offset {first_dirty} (recopied, like the cleaner does)",
            )
        else:
            status, why = DIRTY, "in the dirty range"
        stats[s.base_offset] = SegmentStats(s.base_offset, s.size, status, why, s.largest_timestamp)
    return stats


def _floor_index(segs: list[_Segment], offset: int) -> int:
    """Index of the segment holding ``offset`` (the last whose base is <= it; 0 if none)."""
    found = 0
    for i, s in enumerate(segs):
        if s.base_offset <= offset:
            found = i
    return found


def _log_segments(segs: list[_Segment], start: int, end: int) -> list[int]:
    """``UnifiedLog.logSegments(start, end)``: from the segment holding ``start`` to the last
    whose base offset is below ``end``."""
    if start >= end:
        return []
    floor = max((s.base_offset for s in segs if s.base_offset <= start), default=start)
    return [i for i, s in enumerate(segs) if floor <= s.base_offset < end]


# ------------------------------------------------------------------------------ writing
@dataclass
class CompactionResult:
    groups_written: int = 0
    segments_replaced: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    checkpoint_updated: bool = False


def execute_compaction(
    ops: FileOps,
    plan: CompactionPlan,
    *,
    index_interval_bytes: int | None = None,
) -> CompactionResult:
    """Clean and swap in each group, then checkpoint the end offset. Fills ``plan``'s
    per-segment stats with what was done; the plan's context hears of the bytes cleaned."""
    res = CompactionResult()
    cleaner = plan._cleaner
    if plan.end_offset is None or cleaner is None:
        return res
    interval = (
        index_interval_bytes
        if index_interval_bytes is not None
        else plan.config.index_interval_bytes
    )
    by_base = {s.base_offset: i for i, s in enumerate(cleaner.segments)}
    stats = {s.base_offset: s for s in plan.segments}
    for s in plan.segments:  # counts from a simulation are replaced by the real ones
        if s.group is not None:
            fresh = SegmentStats(s.base_offset, s.size, s.status, s.why, s.largest_timestamp)
            fresh.group = s.group
            stats[s.base_offset] = fresh
    tracker = _TxnTracker()
    part = plan.path
    grouped = [by_base[b] for bases in plan.groups for b in bases]
    walked = phase_walk(
        cleaner.progress, "cleaning", sum(cleaner.segments[i].size for i in grouped)
    )
    for bases in plan.groups:
        group = [by_base[b] for b in bases]
        base = bases[0]
        log_path = part / (layout.segment_name(base, ".log") + CLEANED)
        written = [log_path]
        try:
            ops.write(log_path, cleaner.clean_group(group, tracker, stats, walked))
            last = cleaner.segments[group[-1]]
            ops.set_mtime(log_path, last.mtime_ns)  # the cleaner keeps the last one's mtime
            with mapped(log_path) as buf:
                built = build_indexes(buf, base, index_interval_bytes=interval)
            files = {
                ".index": encode_offset_index(built.offsets, base),
                ".timeindex": encode_time_index(built.times, base),
            }
            if tracker.cleaned_index:
                files[".txnindex"] = encode_txn_index(tracker.cleaned_index)
            for ext, data in files.items():
                p = part / (layout.segment_name(base, ext) + CLEANED)
                written.append(p)
                ops.write(p, [data])
        except (InputError, FormatError, ValueError):
            for p in written:  # nothing of this group is swapped in
                if p.exists():
                    ops.unlink(p)
            raise
        swap_in_cleaned(ops, part, written, list(bases))
        res.groups_written += 1
        res.segments_replaced += len(bases)
        res.bytes_before += sum(cleaner.segments[i].size for i in group)
        res.bytes_after += sum(stats[b].bytes_after or 0 for b in bases)
    plan.segments = [stats[s.base_offset] for s in plan.segments]
    if plan.topic is not None and plan.partition is not None:
        res.checkpoint_updated = update_offset_checkpoint(
            ops, plan.log_dir, CLEANER, (plan.topic, plan.partition), plan.end_offset
        )
    return res


@dataclass
class CompactionPass:
    """One cleaning of a partition: its plan, whether it ran, and what it wrote."""

    plan: CompactionPlan
    n_pass: int
    ran: bool
    result: CompactionResult | None


# The configs a cleaning removes records by: which segments it may clean, when tombstones
# and markers go (cleanup.policy too when a log dir is scanned: selected_for_compaction).
DECIDED_BY = ("min.compaction.lag.ms", "delete.retention.ms")


def _topic_of(path: Path) -> str | None:
    parsed = layout.parse_partition_dir_name(path.name)
    return parsed[0] if parsed else None


def selected_for_compaction(inputs: PlanInputs) -> Callable[[Path, bool], Notice | None]:
    """compact's choice among the partitions of its PATHs: one named is compacted whatever
    its cleanup.policy; one of a log dir only when its policy contains compact, and said
    skipped (exit 1) when that policy would only be assumed."""

    def include(path: Path, named: bool) -> Notice | None:
        if named:
            return None
        topic = _topic_of(path)
        (policy,) = inputs.explained(topic, path, ["cleanup.policy"])
        if policy["assumed"] and not inputs.assume_defaults:
            refused = refuse_assumed(topic, ["cleanup.policy"], inputs.host_of(path), str(path))
            return Notice(f"{path}: skipped: {refused.message}", skipped=True)
        if "compact" in str(policy["value"]).split(","):
            return None
        return Notice(
            f"{path}: skipped: cleanup.policy of {topic} does not contain compact", "info"
        )

    return include


def compact_partition(
    path: Path,
    ops: FileOps,
    *,
    inputs: PlanInputs,
    dry_run: bool,
    only_eligible: bool,
    ctx: ReadContext,
) -> Iterator[CompactionPass | Notice]:
    """The partition step of ``compact`` (for :func:`klogtool.log.writing.each_partition`):
    plan, clean unless ``dry_run``, and, when the offset map filled, clean on from the new
    checkpoint as the broker's next cleanings would (a dry run only sees the first pass).
    ``ctx.progress`` hears each planning's and cleaning's phases, titled with the pass."""
    for n_pass in itertools.count(1):
        try:
            view = load_partition(path)
            topic = _topic_of(path)
            config = inputs.config_of(topic, path)
            if config.remote_storage_enable:
                raise RefusedError(
                    f"{topic} is a tiered topic (remote.storage.enable=true, "
                    f"{inputs.sources_of(topic, path).get('remote.storage.enable')}): Kafka "
                    "never compacts one, and klogtool does not change its remote segments",
                    path=str(path),
                    code=Code.TIERED_TOPIC,
                )
            plan = plan_compaction(
                view,
                config,
                now=inputs.now,
                high_watermark=inputs.high_watermark,
                simulate=dry_run,
                ctx=ctx.titled(f"{path.name}: pass {n_pass}"),
            )
            if not plan.nothing_to_clean:
                inputs.require_known(topic, path, DECIDED_BY)
        except (KlogtoolError, FormatError) as e:
            raise SkipPartition(path, e) from e
        run = not dry_run and not plan.nothing_to_clean
        if only_eligible and not plan.eligible:
            run = False
            plan.notes.append("--only-eligible: not compacted")
        res = None
        if run:
            res = execute_compaction(ops, plan)
        yield CompactionPass(plan, n_pass, run, res)
        if res is None or not plan.map_full:
            return
        if not res.checkpoint_updated:  # the next pass would start from the same place
            yield Notice(
                f"{path}: the offset map filled at offset {plan.end_offset}, but no "
                f"cleaner-offset-checkpoint entry moved there (is the directory named "
                f"TOPIC-PARTITION?): rerun with a larger --dedupe-buffer-size",
                skipped=True,
            )
            return

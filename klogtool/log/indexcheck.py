"""The checks of a segment's ``.index``, ``.timeindex`` and ``.txnindex`` against its log.

One place for them: ``verify`` runs them inside its walk of each segment, ``rebuild-index
--check`` and ``truncate-recovery`` (deciding which indexes to rewrite) run them over a walk
of their own, and ``explain`` sorts findings with :func:`about_index`.

Indexes written by live appends may differ from rebuilt ones and still be valid, so entries
are checked for what matters to a broker (docs/kafka-rules.md, "Index rebuild"): the broker's
sanity check, a trimmed file, increasing entries, and that a lookup through an entry can
never skip a record; the ``.txnindex`` must list every aborted transaction the log's replay
gives, at its ABORT marker. :class:`SegmentIndexCheck` is fed the segment's batches in log
order, so the index entries are merged into the one walk and memory stays flat.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klogtool.codes import Code
from klogtool.formats import index
from klogtool.formats.batch import Batch
from klogtool.formats.errors import FormatError
from klogtool.formats.limits import ReadLimits
from klogtool.formats.records import SegmentScanner
from klogtool.log import layout
from klogtool.log.findings import Finding
from klogtool.log.segment import Walked, mapped, read_small
from klogtool.log.txnreplay import TxnReplay, event_of

OFFSET_ENTRY = 8
TIME_ENTRY = 12
TXN_ENTRY = index.TXN_INDEX_ENTRY_SIZE


@dataclass(frozen=True)
class _IndexKind:
    label: str  # for messages
    entry_size: int
    sanity_check: Callable[[bytes, int], None]
    zero_tail: Callable[[bytes], int]
    entries: Callable[..., Iterator[Any]]
    out_of_order: Callable[[Any, Any], bool]
    describe: Callable[[Any], str]
    sanity: Code
    not_trimmed: Code
    not_increasing: Code


_OFFSET_INDEX = _IndexKind(
    "offset index",
    OFFSET_ENTRY,
    index.sanity_check_offset_index,
    index.offset_index_zero_tail,
    index.iter_offset_index,
    lambda a, b: b.offset <= a.offset or b.position < a.position,
    lambda e: f"(offset {e.offset}, position {e.position})",
    Code.INDEX_SANITY,
    Code.INDEX_NOT_TRIMMED,
    Code.INDEX_NOT_INCREASING,
)
_TIME_INDEX = _IndexKind(
    "time index",
    TIME_ENTRY,
    index.sanity_check_time_index,
    index.time_index_zero_tail,
    index.iter_time_index,
    lambda a, b: b.timestamp <= a.timestamp or b.offset < a.offset,
    lambda e: f"(timestamp {e.timestamp}, offset {e.offset})",
    Code.TIMEINDEX_SANITY,
    Code.TIMEINDEX_NOT_TRIMMED,
    Code.TIMEINDEX_NOT_INCREASING,
)
_SANITY = {
    layout.INDEX: (index.sanity_check_offset_index, Code.INDEX_SANITY),
    layout.TIMEINDEX: (index.sanity_check_time_index, Code.TIMEINDEX_SANITY),
    layout.TXNINDEX: (index.sanity_check_txn_index, Code.TXNINDEX_SANITY),
}

# Every code this module emits: the findings about index files.
INDEX_CODES = frozenset(
    {
        *(c for k in (_OFFSET_INDEX, _TIME_INDEX) for c in (k.not_trimmed, k.not_increasing)),
        *(code for _, code in _SANITY.values()),
        Code.INDEX_MISSING,
        Code.TIMEINDEX_MISSING,
        Code.INDEX_NOT_ON_BATCH,
        Code.INDEX_MIS_SEEKS,
        Code.INDEX_BEYOND_LOG,
        Code.TIMEINDEX_TIMESTAMP_TOO_LARGE,
        Code.TIMEINDEX_MIS_SEEKS,
        Code.TIMEINDEX_BEYOND_LOG,
        Code.TIMEINDEX_FINAL_ENTRY_MISSING,
        Code.TXNINDEX_CORRUPT,
        Code.TXNINDEX_NOT_INCREASING,
        Code.TXNINDEX_BAD_RANGE,
        Code.TXNINDEX_MARKER_NOT_FOUND,
        Code.TXNINDEX_MISSING_ABORT,
        Code.TXNINDEX_FIRST_OFFSET_TOO_HIGH,
        Code.TXNINDEX_LSO_TOO_HIGH,
    }
)


def time_entry_batch(last_offsets: Sequence[int], offset: int, start: int = 0) -> int:
    """Which batch a time index entry's offset stands for, of batches whose last offsets are
    ``last_offsets`` (increasing, in log order), from batch ``start`` on: the first whose last
    offset is at or after it (``len(last_offsets)``: none, the offset is past the log). A
    broker's lookup by time reads from there, so the offset may be any offset of that batch:
    brokers before KAFKA-16310 (3.8) indexed the offset of its max-timestamp record, later
    ones its last offset. (:meth:`SegmentIndexCheck.after_batch` applies the same rule as it
    walks the batches.)"""
    return bisect_left(last_offsets, offset, lo=start)


def about_index(code: str) -> bool:
    """Whether a finding code is about an index file (not the log)."""
    return code in INDEX_CODES


class SegmentIndexCheck:
    """The index checks of one segment: :meth:`load`, then :meth:`batch` for every batch of
    the log in order, then :meth:`end`. ``txns`` holds the transactions open at the segment's
    start (an aborted transaction begun in an earlier segment belongs in this .txnindex) and
    is carried on to the next segment. ``files`` counts the index files read."""

    def __init__(
        self,
        seg: layout.SegmentFiles,
        txns: TxnReplay,
        *,
        active: bool,
        limits: ReadLimits,
    ):
        self.seg = seg
        self.txns = txns
        self.active = active
        self.limits = limits
        self.files = 0
        self.offsets: list[index.OffsetIndexEntry] = []
        self.times: list[index.TimeIndexEntry] = []
        self.oi = 0  # next offset-index entry to match against a batch start
        self.ti = 0  # next time-index entry to match against a batch's last offset
        self.prev_last: int | None = None
        self.prior_max = -1  # the largest timestamp before the current batch
        self.running_max = -1
        self.last_offset: int | None = None
        self.aborts: set[int] = set()
        self.expected_txns: list[tuple[int, int, int]] = []  # (producer id, first, last)

    # -- loading -----------------------------------------------------------------------------
    def missing(self) -> Iterator[Finding]:
        """Warnings for a missing .index or .timeindex (the broker creates them on load)."""
        seg, path = self.seg, str(self.seg.log)
        if seg.index is None:
            yield Finding(
                "warning",
                Code.INDEX_MISSING,
                path,
                None,
                seg.base_offset,
                "no .index file: the broker rebuilds it by recovering the segment",
            )
        if seg.timeindex is None:
            yield Finding(
                "warning",
                Code.TIMEINDEX_MISSING,
                path,
                None,
                seg.base_offset,
                "no .timeindex file: the broker creates an empty one",
            )

    def load(self, prev_last: int | None = None) -> list[Finding]:
        """Read the .index and .timeindex; their file-level findings. ``prev_last``: the
        previous segment's last offset, if the walk continues one."""
        findings: list[Finding] = []
        self.prev_last = prev_last
        self.offsets = self._load(self.seg.index, _OFFSET_INDEX, findings)
        self.times = self._load(self.seg.timeindex, _TIME_INDEX, findings)
        return findings

    def _load(self, path: Path | None, kind: _IndexKind, findings: list[Finding]) -> list[Any]:
        """The entries of an index that a lookup would use, with the broker's sanity check,
        untrimmed zero slots and entry order reported; entries after a disorder are dropped."""
        if path is None:
            return []
        self.files += 1
        base = self.seg.base_offset
        buf = read_small(path, 1 << 31)
        try:
            kind.sanity_check(buf, base)
        except FormatError as e:
            findings.append(
                Finding(
                    "error",
                    kind.sanity,
                    str(path),
                    e.position,
                    None,
                    f"broker sanity check fails: {e}",
                )
            )
        size = kind.entry_size
        zero_tail = kind.zero_tail(buf)
        real = len(buf) // size - zero_tail
        if zero_tail:
            findings.append(
                Finding(
                    "warning" if self.active else "error",
                    kind.not_trimmed,
                    str(path),
                    real * size,
                    None,
                    f"{zero_tail} zero-filled slots after {real} entries "
                    f"(a preallocated {kind.label} "
                    + (
                        "of the active segment: the broker resets it on load)"
                        if self.active
                        else "of an inactive segment: the broker reads every slot as an entry)"
                    ),
                )
            )
        entries = list(kind.entries(buf[: real * size], base, stop_at_zero_fill=False))
        for i in range(1, len(entries)):
            prev, entry = entries[i - 1], entries[i]
            if kind.out_of_order(prev, entry):
                findings.append(
                    Finding(
                        "error",
                        kind.not_increasing,
                        str(path),
                        i * size,
                        entry.offset,
                        f"{kind.label} entry {i} {kind.describe(entry)} does not follow "
                        f"{kind.describe(prev)}",
                    )
                )
                return entries[:i]
        return entries

    # -- the walk ----------------------------------------------------------------------------
    def before_batch(self, batch: Batch) -> Iterator[Finding]:
        """Offset index entries pointing at or before this batch's start."""
        pos = batch.position
        while self.oi < len(self.offsets) and self.offsets[self.oi].position <= pos:
            yield from self._offset_entry(self.offsets[self.oi], self.oi, pos)
            self.oi += 1

    def after_batch(self, batch: Batch) -> Iterator[Finding]:
        """The batch's transaction event; time index entries whose offset falls in it."""
        last = batch.last_offset
        self.prior_max = self.running_max
        if batch.max_timestamp > self.running_max:
            self.running_max = batch.max_timestamp
        ev = event_of(batch, self.limits)
        if ev is not None:
            txn = self.txns.apply(ev)
            if ev.aborted:
                self.aborts.add(ev.offset)
            if txn is not None:
                self.expected_txns.append((txn.producer_id, txn.first_offset, txn.last_offset))
        # the entries at or before this batch's last offset are its (time_entry_batch)
        while self.ti < len(self.times) and self.times[self.ti].offset <= last:
            yield from self._time_entry(self.times[self.ti], self.ti)
            self.ti += 1
        self.prev_last = last
        self.last_offset = last

    def _offset_entry(self, e: index.OffsetIndexEntry, i: int, batch_pos: int) -> Iterator[Finding]:
        path = str(self.seg.index)
        if e.position != batch_pos:
            yield Finding(
                "error",
                Code.INDEX_NOT_ON_BATCH,
                path,
                i * OFFSET_ENTRY,
                e.offset,
                f"offset index entry (offset {e.offset}, position {e.position}) does "
                f"not point at the start of a batch",
            )
        elif self.prev_last is not None and e.offset <= self.prev_last and batch_pos > 0:
            yield Finding(
                "error",
                Code.INDEX_MIS_SEEKS,
                path,
                i * OFFSET_ENTRY,
                e.offset,
                f"offset index entry (offset {e.offset}, position {e.position}): "
                f"offset {e.offset} lies in the batch before that position, so a "
                f"fetch of it would skip records",
            )

    def _time_entry(self, t: index.TimeIndexEntry, i: int) -> Iterator[Finding]:
        """An entry (T, O) is usable when no batch before O's batch has a timestamp above T
        (else a time lookup would skip it) and T has been reached by O's batch."""
        path = str(self.seg.timeindex)
        if t.timestamp > self.running_max:
            yield Finding(
                "error",
                Code.TIMEINDEX_TIMESTAMP_TOO_LARGE,
                path,
                i * TIME_ENTRY,
                t.offset,
                f"time index entry (timestamp {t.timestamp}, offset {t.offset}): no "
                f"batch up to that offset has a timestamp that large (max "
                f"{self.running_max})",
            )
        elif self.prior_max > t.timestamp:
            yield Finding(
                "error",
                Code.TIMEINDEX_MIS_SEEKS,
                path,
                i * TIME_ENTRY,
                t.offset,
                f"time index entry (timestamp {t.timestamp}, offset {t.offset}): "
                f"earlier batches already reach timestamp {self.prior_max}, so a time "
                f"lookup through this entry would skip them",
            )

    # -- the end -----------------------------------------------------------------------------
    def end(self, stopped_at: int) -> Iterator[Finding]:
        """Entries past the readable log (which ends at byte ``stopped_at``), the time index's
        final entry, and the .txnindex against the aborts the walk saw."""
        for e in self.offsets[self.oi :]:  # entries past the start of the last batch
            beyond = e.position >= stopped_at
            yield Finding(
                "error",
                Code.INDEX_BEYOND_LOG if beyond else Code.INDEX_NOT_ON_BATCH,
                str(self.seg.index),
                self.oi * OFFSET_ENTRY,
                e.offset,
                f"offset index entry (offset {e.offset}, position {e.position}) "
                + (
                    "points past the end of the readable log"
                    if beyond
                    else "does not point at the start of a batch"
                ),
            )
            self.oi += 1
        for t in self.times[self.ti :]:
            yield Finding(
                "error",
                Code.TIMEINDEX_BEYOND_LOG,
                str(self.seg.timeindex),
                self.ti * TIME_ENTRY,
                t.offset,
                f"time index entry (timestamp {t.timestamp}, offset "
                f"{t.offset}) points past the last offset of the log",
            )
            self.ti += 1
        yield from self._final_time_entry()
        yield from self._txn_index()

    def _final_time_entry(self) -> Iterator[Finding]:
        if self.active:
            return
        top, times = self.running_max, self.times
        if times and top > times[-1].timestamp:
            message = (
                f"the time index's last timestamp {times[-1].timestamp} is below the "
                f"segment's max timestamp {top}: time retention would judge this segment by "
                f"an older time"
            )
        elif not times and top >= 0 and self.seg.timeindex is not None:
            message = (
                f"the time index is empty but the segment's max timestamp is {top}: time "
                f"retention falls back to the file's mtime"
            )
        else:
            return
        yield Finding(
            "warning",
            Code.TIMEINDEX_FINAL_ENTRY_MISSING,
            str(self.seg.timeindex),
            None,
            self.last_offset,
            message,
        )

    def _txn_index(self) -> Iterator[Finding]:
        seg = self.seg
        entries: list[index.AbortedTxn] = []
        if seg.txnindex is not None:
            self.files += 1
            path = str(seg.txnindex)
            buf = read_small(seg.txnindex, 1 << 31)
            try:
                index.sanity_check_txn_index(buf, seg.base_offset)
                entries = list(index.iter_txn_index(buf))
            except FormatError as e:
                yield Finding("error", Code.TXNINDEX_CORRUPT, path, e.position, None, str(e))
                return
            yield from self._txn_entries(path, entries)
        listed = {(t.producer_id, t.last_offset) for t in entries}
        # Without an .index the broker recovers the segment, which rebuilds the .txnindex.
        rebuilt = seg.index is None
        for pid, first, last in self.expected_txns:
            if (pid, last) not in listed:
                yield Finding(
                    "warning" if rebuilt else "error",
                    Code.TXNINDEX_MISSING_ABORT,
                    str(seg.txnindex or seg.log),
                    None,
                    last,
                    f"aborted transaction of producer {pid} ({first}..{last}) is not "
                    f"in the .txnindex: "
                    + (
                        "the broker rebuilds it, as this segment has no .index"
                        if rebuilt
                        else "consumers reading committed data would see its records"
                    ),
                )

    def _txn_entries(self, path: str, entries: list[index.AbortedTxn]) -> Iterator[Finding]:
        prev = None
        for i, t in enumerate(entries):
            if prev is not None and t.last_offset <= prev:
                yield Finding(
                    "error",
                    Code.TXNINDEX_NOT_INCREASING,
                    path,
                    i * TXN_ENTRY,
                    t.last_offset,
                    f"aborted transaction ending at {t.last_offset} follows one ending at {prev}",
                )
            if t.first_offset > t.last_offset:
                yield Finding(
                    "error",
                    Code.TXNINDEX_BAD_RANGE,
                    path,
                    i * TXN_ENTRY,
                    t.first_offset,
                    f"aborted transaction range {t.first_offset}..{t.last_offset} is reversed",
                )
            if t.last_offset not in self.aborts:
                yield Finding(
                    "error",
                    Code.TXNINDEX_MARKER_NOT_FOUND,
                    path,
                    i * TXN_ENTRY,
                    t.last_offset,
                    f"no ABORT marker at offset {t.last_offset} "
                    f"(producer {t.producer_id}) in the log",
                )
            prev = t.last_offset


def check_segment_indexes(
    seg: layout.SegmentFiles,
    *,
    active: bool,
    open_txns: dict[int, int],
    limits: ReadLimits,
    walked: Walked | None = None,
) -> list[Finding]:
    """Every finding about this segment's index files, from a walk of its own over the log
    (batch headers; a marker's record): what ``verify`` reports about them."""
    assert seg.log is not None
    check = SegmentIndexCheck(seg, TxnReplay(dict(open_txns)), active=active, limits=limits)
    found = check.load()
    with mapped(seg.log) as buf:
        scanner = SegmentScanner(buf, check_crc=False, strict=True)
        for batch in scanner:
            if walked is not None:
                walked.at(batch.position)
            found += check.before_batch(batch)
            found += check.after_batch(batch)
        result = scanner.result
    assert result is not None
    found += check.end(result.stopped_at)
    return found


def index_alone(path: Path, kind: str, base: int) -> Iterator[Finding]:
    """An index file without its segment's .log: the broker's sanity check only."""
    check, code = _SANITY[kind]
    try:
        check(read_small(path, 1 << 31), base)
    except FormatError as e:
        yield Finding("error", code, str(path), e.position, None, f"broker sanity check fails: {e}")
    yield Finding(
        "warning",
        Code.LOG_MISSING,
        str(path),
        None,
        base,
        "no sibling .log: entries were not checked against the log (the broker deletes index "
        "files that have no log)",
    )


def txn_entry_problems(
    path: Path, existing: bytes, rebuilt: Sequence[index.AbortedTxn]
) -> list[Finding]:
    """Entries of an existing .txnindex that claim more than the log supports.

    For the same aborted transaction (producer, ABORT marker offset): a first offset above the
    log's exposes the transaction's earlier records to read_committed consumers; a last stable
    offset above the log's can end the broker's collection of aborted transactions too early
    (``TransactionIndex.collectAbortedTxns``). Compaction only ever moves a rebuild's values
    later, so an existing value above the rebuild's is never the cleaner's doing.
    """
    try:
        entries = list(index.iter_txn_index(existing))
    except FormatError:
        return []  # the other checks report it
    truth = {(t.producer_id, t.last_offset): t for t in rebuilt}
    out = []
    for i, t in enumerate(entries):
        r = truth.get((t.producer_id, t.last_offset))
        if r is None:
            continue
        for field_, code in (
            ("first_offset", Code.TXNINDEX_FIRST_OFFSET_TOO_HIGH),
            ("last_stable_offset", Code.TXNINDEX_LSO_TOO_HIGH),
        ):
            have, want = getattr(t, field_), getattr(r, field_)
            if have > want:
                out.append(
                    Finding(
                        "error",
                        code,
                        str(path),
                        i * TXN_ENTRY,
                        t.last_offset,
                        f"aborted transaction of producer {t.producer_id} ending at "
                        f"{t.last_offset}: {field_.replace('_', ' ')} {have}, but the log "
                        f"says {want} (read_committed consumers could be served aborted "
                        f"records)",
                    )
                )
    return out

"""Transaction replay: which transactions are open, which are aborted, and each aborted one's
``.txnindex`` entry — the broker's rule, written once (docs/kafka-rules.md, "Transactions").

Fed every batch of a partition in log order, a :class:`TxnReplay` follows the broker's
producer state (``ProducerStateManager``/``ProducerAppendInfo``): a transactional data batch
opens its producer's transaction (at its base offset) unless one is open; a COMMIT or ABORT
marker closes it. Each aborted transaction that had data becomes an entry of the ``.txnindex``
of the marker's segment, with the last stable offset at the abort: the first offset of the
earliest transaction still open, else the marker's offset + 1.

``verify``, ``rebuild-index``, ``truncate-recovery``, ``compact``, ``convert-format`` and
``transactions`` (its open transactions and the partition's last stable offset) all replay
through this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, TypeVar

from klogtool.formats.batch import Batch
from klogtool.formats.errors import FormatError
from klogtool.formats.index import AbortedTxn
from klogtool.formats.limits import ReadLimits
from klogtool.formats.payloads.control import ABORT, COMMIT
from klogtool.formats.records import SegmentScanner
from klogtool.formats.snapshot import parse_snapshot
from klogtool.log import layout
from klogtool.log.segment import mapped, read_small

_T = TypeVar("_T")


def end_marker(batch: Batch, limits: ReadLimits) -> bool | None:
    """For a transaction marker batch: True for ABORT, False for COMMIT; None otherwise (an
    empty control batch left by the cleaner, another control type, an unreadable key)."""
    try:
        type_id = batch.control_type(limits.max_batch_bytes)
    except FormatError:
        return None  # unreadable records: no marker either
    if type_id == ABORT:
        return True
    if type_id == COMMIT:
        return False
    return None


class TxnEvent(NamedTuple):
    """What a batch means to the replay, small enough to come back from a pool worker.
    ``begin``: a transactional data batch at ``offset`` (its base offset); else a COMMIT or
    ABORT (``aborted``) marker at ``offset``."""

    begin: bool
    producer_id: int
    offset: int
    aborted: bool = False


def event_of(batch: Batch, limits: ReadLimits) -> TxnEvent | None:
    """The batch's event, or None when it does not touch transactions."""
    pid = batch.producer_id
    if pid < 0 or batch.magic < 2:
        return None
    if batch.is_control:
        aborted = end_marker(batch, limits)
        return None if aborted is None else TxnEvent(False, pid, batch.last_offset, aborted)
    if batch.is_transactional:
        return TxnEvent(True, pid, batch.base_offset)
    return None


@dataclass
class TxnReplay:
    """The open transactions (producer id -> first offset: the broker's ``ongoingTxns``).

    :meth:`begin`, :meth:`end` and :meth:`last_stable_offset` are the rule; :meth:`apply` and
    :meth:`feed` replay events and batches with it, and callers that read markers their own way
    (``transactions``) or walk one segment without the state before it (``headers``) call
    the three directly."""

    open: dict[int, int] = field(default_factory=dict)
    source: str = "log start"  # where the state came from (a producer snapshot, or the log start)

    def copy(self) -> TxnReplay:
        return TxnReplay(dict(self.open), self.source)

    def begin(self, producer_id: int, offset: int) -> bool:
        """A transactional data batch of ``producer_id`` at ``offset`` (its base offset): it
        opens the producer's transaction unless one is open. Whether it opened one."""
        if producer_id in self.open:
            return False
        self.open[producer_id] = offset
        return True

    def end(self, producer_id: int) -> int | None:
        """A COMMIT or ABORT marker of ``producer_id``: it closes the producer's transaction.
        The transaction's first offset, or None when none was open."""
        return self.open.pop(producer_id, None)

    def last_stable_offset(self, default: _T) -> int | _T:
        """The first offset of the earliest transaction still open, else ``default`` (the log
        end offset; at an abort, the marker's offset + 1)."""
        return min(self.open.values(), default=default)

    def apply(self, ev: TxnEvent) -> AbortedTxn | None:
        """Replay one event; an aborted transaction with data comes back as its index entry."""
        if ev.begin:
            self.begin(ev.producer_id, ev.offset)
            return None
        first = self.end(ev.producer_id)
        if first is None or not ev.aborted:
            return None  # a marker with no data of its transaction left: no index entry
        lso = self.last_stable_offset(ev.offset + 1)
        return AbortedTxn(0, ev.producer_id, first, ev.offset, lso)

    def feed(self, batch: Batch, limits: ReadLimits) -> AbortedTxn | None:
        ev = event_of(batch, limits)
        return None if ev is None else self.apply(ev)

    def replay(self, events: Iterable[TxnEvent]) -> Iterator[AbortedTxn]:
        for ev in events:
            txn = self.apply(ev)
            if txn is not None:
                yield txn


def replay_aborted_txns(
    segments: list[tuple[int, Path]], limits: ReadLimits
) -> dict[int, list[AbortedTxn]]:
    """Per segment base offset, the .txnindex entries recovery would write (log order)."""
    replay = TxnReplay()
    out: dict[int, list[AbortedTxn]] = {}
    for base, path in segments:
        entries: list[AbortedTxn] = []
        with mapped(path) as buf:
            for batch in SegmentScanner(buf, check_crc=False, strict=False):
                txn = replay.feed(batch, limits)
                if txn is not None:
                    entries.append(txn)
        out[base] = entries
    return out


def state_before(part: layout.PartitionDir, base_offset: int, limits: ReadLimits) -> TxnReplay:
    """The open transactions when the segment at ``base_offset`` of ``part`` starts.

    As the broker's recovery: the newest producer snapshot at or below the segment's base
    offset that reads cleanly (CRC valid) gives the state, and the batches between the snapshot
    and the segment are replayed. Without a usable snapshot the replay starts at the first
    segment.
    """
    segs = [s for s in part.segments if s.log is not None]
    first_base = segs[0].base_offset if segs else base_offset
    state = TxnReplay()
    start = -1
    for snap in reversed(part.snapshots):
        offset = layout.offset_from_name(snap)
        if offset is None or offset > base_offset or offset < first_base:
            continue
        try:
            parsed = parse_snapshot(read_small(snap))
        except (FormatError, OSError):
            continue
        state = TxnReplay(
            {
                e.producer_id: e.current_txn_first_offset
                for e in parsed.entries
                if e.current_txn_first_offset >= 0
            },
            f"producer snapshot {snap.name}",
        )
        start = offset
        break
    for i, seg in enumerate(segs):
        if seg.base_offset >= base_offset:
            break
        if start >= 0 and i + 1 < len(segs) and segs[i + 1].base_offset <= start:
            continue  # wholly below the snapshot
        assert seg.log is not None
        with mapped(seg.log) as buf:
            for batch in SegmentScanner(buf, check_crc=False, strict=False):
                if batch.last_offset >= start:
                    state.feed(batch, limits)
    return state


def chain(
    initial: TxnReplay, events: Sequence[Sequence[TxnEvent]]
) -> list[tuple[dict[int, int], list[AbortedTxn]]]:
    """Per segment's events (in order): the open transactions at its start, and its aborted
    transactions."""
    out = []
    state = initial.copy()
    for evs in events:
        at_start = dict(state.open)
        out.append((at_start, list(state.replay(evs))))
    return out

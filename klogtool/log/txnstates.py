"""Which transaction each batch of a partition belongs to, and how it ended: the states that
``find --transaction`` and export's ``--where`` filter on (committed, aborted, still open, or
none: not transactional), from one replay of the partition's batch headers and markers
(:class:`klogtool.log.txnreplay.TxnReplay`, the broker's rule)."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from klogtool.formats.batch import Batch
from klogtool.formats.limits import ReadLimits
from klogtool.formats.records import SegmentScanner
from klogtool.log import layout
from klogtool.log.record_filter import ABORTED, COMMITTED, MAX_OFFSET, NONE, OPEN
from klogtool.log.segment import mapped
from klogtool.log.txnreplay import TxnReplay, end_marker, event_of

_STATE_CODES = {COMMITTED: 0, ABORTED: 1, OPEN: 2}
_STATE_NAMES = {v: k for k, v in _STATE_CODES.items()}


class TransactionStates:
    """Per producer: its transactions' first offsets, end offsets and states (compact arrays)."""

    def __init__(self, limits: ReadLimits) -> None:
        self.limits = limits
        self.by_pid: dict[int, tuple[array[int], array[int], bytearray]] = {}

    def add(self, pid: int, first: int, end: int, state: str) -> None:
        firsts, ends, states = self.by_pid.setdefault(pid, (array("q"), array("q"), bytearray()))
        firsts.append(first)
        ends.append(end)
        states.append(_STATE_CODES[state])

    def state(self, batch: Batch) -> str:
        if batch.magic < 2 or not batch.is_transactional or batch.producer_id < 0:
            return NONE
        if batch.is_control:
            aborted = end_marker(batch, self.limits)
            if aborted is None:
                return NONE
            return ABORTED if aborted else COMMITTED
        found = self.by_pid.get(batch.producer_id)
        if found is None:
            return OPEN
        firsts, ends, states = found
        offset = batch.base_offset
        i = bisect.bisect_right(firsts, offset) - 1
        if i >= 0 and offset <= ends[i]:
            return _STATE_NAMES[states[i]]
        return OPEN


def transaction_states(
    segments: Sequence[layout.SegmentFiles], limits: ReadLimits
) -> TransactionStates:
    """Every transaction of a partition's ``segments`` (in offset order): a header pass, only
    markers' records decoded. A transaction ends at its marker; one still open at the end of
    the log lasts to the end of the offsets. A segment that cannot be read to its end counts
    as far as it can be read (the commands report why, as they read it themselves)."""
    txns = TransactionStates(limits)
    replay = TxnReplay()
    for seg in segments:
        if seg.log is None:
            continue
        with mapped(seg.log) as buf:
            for batch in SegmentScanner(buf, check_crc=False):
                ev = event_of(batch, limits)
                if ev is None:
                    continue
                if ev.begin:
                    replay.begin(ev.producer_id, ev.offset)
                    continue
                first = replay.end(ev.producer_id)
                if first is not None:
                    state = ABORTED if ev.aborted else COMMITTED
                    txns.add(ev.producer_id, first, batch.base_offset, state)
    for pid, first in replay.open.items():
        txns.add(pid, first, MAX_OFFSET, OPEN)
    return txns


def segment_transaction_states(log_path: str, limits: ReadLimits) -> TransactionStates:
    """The transactions of the partition that the segment ``log_path`` belongs to (of the
    segment alone when its directory is not a partition's). Kept per process for the last few
    partitions, as long as their ``.log`` files are unchanged."""
    directory = Path(log_path).parent
    if layout.parse_partition_dir_name(directory.name) is not None:
        segments: tuple[layout.SegmentFiles, ...] = tuple(
            s for s in layout.scan_partition_dir(directory).segments if s.log is not None
        )
    else:
        segments = (layout.segment_files(Path(log_path), layout.LOG),)
    signature = tuple(
        (str(s.log), st.st_size, st.st_mtime_ns)
        for s in segments
        if s.log is not None
        for st in (s.log.stat(),)
    )
    states = _STATES_CACHE.pop((signature, limits), None) or transaction_states(segments, limits)
    _STATES_CACHE[(signature, limits)] = states  # the most recent last
    while len(_STATES_CACHE) > 8:
        del _STATES_CACHE[next(iter(_STATES_CACHE))]
    return states


_STATES_CACHE: dict[tuple[Any, ...], TransactionStates] = {}

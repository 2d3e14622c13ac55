"""One walk over a segment's batch headers, as ``LogSegment.recover`` does it: where the valid
bytes end and why, the rebuilt ``.index``/``.timeindex``, and the segment's transaction
events (docs/kafka-rules.md: Loading and recovery, Index rebuild)."""

from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import dataclass

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import index
from klogtool.formats.batch import LOG_OVERHEAD, Batch
from klogtool.formats.crc import CrcPrefetch, crc32c, crc_prefetch
from klogtool.formats.errors import CorruptRecordError, FormatError
from klogtool.formats.limits import ReadLimits
from klogtool.formats.records import CLEAN, CORRUPT, ReleaseBehind, ScanResult
from klogtool.formats.v2 import (
    BATCH_HEADER,
    CONTROL_FLAG,
    CRC_START,
    MIN_LENGTH,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG,
    DefaultBatch,
)
from klogtool.log.findings import Finding
from klogtool.log.indexer import DEFAULT_INDEX_INTERVAL_BYTES, build_indexes
from klogtool.log.segment import Walked, mapped
from klogtool.log.txnreplay import TxnEvent, TxnReplay, end_marker, event_of

INT32_MAX = (1 << 31) - 1


OFFSET_OVERFLOW = Code.OFFSET_OVERFLOW  # a ScanResult.error code: the broker splits the segment


@dataclass(frozen=True)
class SegmentScan:
    """What one walk over a segment found (picklable: it comes back from pool workers)."""

    path: str
    base_offset: int
    size: int
    valid_bytes: int  # where recovery truncates
    end: str  # records.CLEAN / TORN_TAIL / ZERO_FILL / CORRUPT
    error_code: str | None
    error: str | None
    batches: int
    records: int  # only counted with count_records (legacy wrappers are decompressed for it)
    first_offset: int | None
    last_offset: int | None
    max_timestamp: int
    index_bytes: bytes  # the rebuilt .index (trimmed) for the valid prefix
    timeindex_bytes: bytes
    events: tuple[TxnEvent, ...]
    # the offset in the header of the entry where a corrupt walk stopped, when it can be read
    # (verify's findings name that entry's offset, not the last good one)
    stopped_offset: int | None = None

    @property
    def next_offset(self) -> int:
        """The log end offset if this were the last segment (its base when it is empty)."""
        return self.base_offset if self.last_offset is None else self.last_offset + 1

    @property
    def clean(self) -> bool:
        return self.end == CLEAN

    @property
    def not_a_log(self) -> bool:
        """No entry could be read from byte 0 (records.not_a_log): not a Kafka file. A CRC
        mismatch in the first batch is corruption of a Kafka file, as in any later batch."""
        return (
            self.batches == 0
            and self.end == CORRUPT
            and self.valid_bytes == 0
            and self.error_code != Code.CRC_MISMATCH
        )

    @property
    def error_offset(self) -> int | None:
        """The offset a finding about where the walk stopped names: the stopped entry's own
        offset when its header reads, else the last good one."""
        if self.end == CORRUPT and self.stopped_offset is not None:
            return self.stopped_offset
        return self.last_offset

    def not_a_log_finding(self) -> Finding:
        return Finding(
            "error", Code.NOT_A_LOG, self.path, 0, None, f"not a Kafka log segment: {self.error}"
        )


class _Stop(Exception):
    def __init__(self, error: FormatError):
        super().__init__(error.message)
        self.error = error


class _EventCollector:
    """The producer-state side of the walk: transaction events, counts, offsets."""

    def __init__(
        self,
        base_offset: int,
        limits: ReadLimits,
        *,
        prev_last_offset: int | None = None,
        count_records: bool = False,
        check_range: bool = True,
        walked: Walked | None = None,
    ):
        self.limits = limits
        self.walked = walked
        self.base_offset = base_offset
        self.prev_last = prev_last_offset
        self.count_records = count_records
        self.check_range = check_range
        self.events: list[TxnEvent] = []
        # the transactions opened in this segment: a data batch of one adds no event
        self.replay = TxnReplay()
        self.batches = 0
        self.records = 0
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.max_timestamp = -1

    def __call__(self, batch: Batch) -> None:
        if self.walked is not None:
            self.walked.at(batch.position)
        last = batch.last_offset
        if self.check_range and not 0 <= last - self.base_offset <= INT32_MAX:
            raise _Stop(
                CorruptRecordError(
                    f"last offset {last} is out of range for a segment with base offset "
                    f"{self.base_offset} (the broker splits such a segment on load)",
                    batch.position,
                    OFFSET_OVERFLOW,
                )
            )
        if self.batches == 0 and self.prev_last is not None:
            first = batch.header_offset
            if first <= self.prev_last:
                raise _Stop(
                    CorruptRecordError(
                        f"offset {first} does not increase (the previous segment ended at "
                        f"{self.prev_last})",
                        batch.position,
                        Code.OFFSET_NOT_INCREASING,
                    )
                )
        self.batches += 1
        if self.first_offset is None:
            self.first_offset = batch.header_offset
        self.last_offset = last
        if batch.max_timestamp > self.max_timestamp:
            self.max_timestamp = batch.max_timestamp
        if self.count_records:
            try:
                self.records += batch.count
            except FormatError:
                pass  # an unreadable legacy wrapper: its records cannot be counted
        ev = event_of(batch, self.limits)
        if ev is None:
            return
        if not ev.begin:
            self.events.append(ev)
            self.replay.end(ev.producer_id)
        elif self.replay.begin(ev.producer_id, ev.offset):
            self.events.append(ev)


_TIME_ENTRY = struct.Struct(">qi")


def _fast_scan(
    view: memoryview,
    base_offset: int,
    index_interval_bytes: int,
    prev_last_offset: int | None,
    path: str,
    count_records: bool,
    limits: ReadLimits,
    walked: Walked | None = None,
    ahead: CrcPrefetch | None = None,
) -> SegmentScan | None:
    """:func:`scan_segment` for the common case, a segment of valid v2 batches to its end,
    in one tight loop over the batch headers (no batch objects, no scanner).

    Returns None at the first thing it does not handle (another magic, a bad size, CRC or
    offset, a torn or zero-filled tail, a position beyond 2^31-1): the caller then walks the
    segment again with the general scanner, which is the reference for every rule here
    (docs/kafka-rules.md: Loading and recovery, Index rebuild; the tests compare both walks).
    Like the scanner, it takes CRCs computed ahead (``ahead``) and drops the pages it has
    passed.
    """
    n = len(view)
    release = ReleaseBehind(view)
    unpack = BATCH_HEADER.unpack_from
    crc = crc32c
    limit = base_offset + INT32_MAX
    offsets: list[int] = []  # relative offset, position, relative offset, position, ...
    times: list[tuple[int, int]] = []
    events: list[TxnEvent] = []
    replay = TxnReplay()  # the transactions opened in this segment (as in _EventCollector)
    begin, end_txn = replay.begin, replay.end
    max_ts, max_ts_offset = -1, base_offset
    last_time_ts = -1
    bytes_at_last_entry = 0
    prev_last = prev_last_offset
    first_offset: int | None = None
    batches = records = 0
    pos = 0
    while pos < n:
        if walked is not None:
            walked.at(pos)
        if n - pos < RECORD_BATCH_OVERHEAD:
            return None
        (bo, length, _epoch, magic, stored_crc, attrs, delta, _bts, mts, pid, _pe, _seq,
         count) = unpack(view, pos)  # fmt: skip
        end = pos + LOG_OVERHEAD + length
        last = bo + delta
        if (
            magic != 2
            or length < MIN_LENGTH
            or end > n
            or delta < 0
            or count < 0
            or (prev_last is not None and bo <= prev_last)
            or not base_offset <= last <= limit
            or pos > INT32_MAX
            or ((ahead is not None and ahead.get(pos)) or crc(view[pos + CRC_START : end]))
            != stored_crc
        ):
            return None
        if pid >= 0 and attrs & (CONTROL_FLAG | TRANSACTIONAL_FLAG):
            if attrs & CONTROL_FLAG:
                aborted = end_marker(DefaultBatch(view[pos:end], pos), limits)
                if aborted is not None:
                    events.append(TxnEvent(False, pid, last, aborted))
                    end_txn(pid)
            elif begin(pid, bo):
                events.append(TxnEvent(True, pid, bo))
        if mts > max_ts:
            max_ts, max_ts_offset = mts, last
        if pos - bytes_at_last_entry > index_interval_bytes:
            offsets += (last - base_offset, pos)
            if max_ts > last_time_ts:
                times.append((max_ts, max_ts_offset - base_offset))
                last_time_ts = max_ts
            bytes_at_last_entry = pos
        if first_offset is None:
            first_offset = bo
        batches += 1
        if count_records:
            records += count
        prev_last = last
        pos = end
        release(pos)
    if max_ts > last_time_ts:
        times.append((max_ts, max_ts_offset - base_offset))
    index_entries = array("i", offsets)
    if sys.byteorder == "little":
        index_entries.byteswap()
    return SegmentScan(
        path=path,
        base_offset=base_offset,
        size=n,
        valid_bytes=n,
        end=CLEAN,
        error_code=None,
        error=None,
        batches=batches,
        records=records,
        first_offset=first_offset,
        last_offset=prev_last if batches else None,
        max_timestamp=max_ts,
        index_bytes=index_entries.tobytes(),
        timeindex_bytes=b"".join([_TIME_ENTRY.pack(t, o) for t, o in times]),
        events=tuple(events),
    )


def scan_segment(
    buf: bytes | memoryview,
    base_offset: int,
    *,
    limits: ReadLimits,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    prev_last_offset: int | None = None,
    count_records: bool = False,
    path: str = "",
    fast: bool = True,
    walked: Walked | None = None,
) -> SegmentScan:
    """Walk one segment: rebuilt indexes, transaction events, where the valid bytes end.

    The walk is the broker's recovery walk (size, CRC, structure, zero fill, torn tail) made
    strict in what no broker writes but its recovery lets through: a magic outside 0..2,
    negative offset deltas or record counts, offsets that do not increase (within the segment,
    and from ``prev_last_offset``, the previous segment's last offset). A batch whose offset
    does not fit the segment (relative offset outside 0..2^31-1) also ends the walk, with
    error code ``offset-overflow``: the broker splits such a segment rather than truncating it.

    ``fast``: try :func:`_fast_scan` first (the same result, several times faster, for the
    common all-valid v2 segment); ``False`` walks with the general scanner only. ``walked``
    hears of the walk's position (progress inside one large segment).
    """
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    if len(view) > INT32_MAX:
        raise InputError(
            "larger than 2 GiB: not a Kafka segment (index positions are 32-bit)",
            path=path,
            code=Code.SEGMENT_TOO_LARGE,
        )
    if fast:
        ahead = crc_prefetch(view)
        try:
            quick = _fast_scan(
                view,
                base_offset,
                index_interval_bytes,
                prev_last_offset,
                path,
                count_records,
                limits,
                walked=walked,
                ahead=ahead,
            )
        finally:
            if ahead is not None:
                ahead.close()
        if quick is not None:
            return quick
    collector = _EventCollector(
        base_offset,
        limits,
        prev_last_offset=prev_last_offset,
        count_records=count_records,
        walked=walked,
    )
    try:
        built = build_indexes(
            view,
            base_offset,
            index_interval_bytes=index_interval_bytes,
            strict=True,
            on_batch=collector,
        )
        result = built.scan
    except _Stop as stop:
        pos = stop.error.position or 0
        built = build_indexes(
            view[:pos], base_offset, index_interval_bytes=index_interval_bytes, strict=True
        )
        result = ScanResult(
            size=len(view),
            valid_bytes=pos,
            stopped_at=pos,
            end=CORRUPT,
            error=stop.error,
            batches=collector.batches,
            first_offset=collector.first_offset,
            last_offset=collector.last_offset,
        )
    err = result.error
    return SegmentScan(
        path=path,
        base_offset=base_offset,
        size=len(view),
        valid_bytes=result.valid_bytes,
        end=result.end,
        error_code=err.code if err is not None else None,
        error=str(err) if err is not None else None,
        batches=collector.batches,
        records=collector.records,
        first_offset=collector.first_offset,
        last_offset=collector.last_offset,
        max_timestamp=collector.max_timestamp,
        index_bytes=index.encode_offset_index(built.offsets, base_offset),
        timeindex_bytes=index.encode_time_index(built.times, base_offset),
        events=tuple(collector.events),
        stopped_offset=_entry_offset(view, result.valid_bytes) if result.end == CORRUPT else None,
    )


def _entry_offset(view: memoryview, pos: int) -> int | None:
    """The offset field of the entry at ``pos`` (its first 8 bytes), if they are there."""
    if len(view) - pos < 8:
        return None
    offset: int = struct.unpack_from(">q", view, pos)[0]
    return offset


@dataclass(frozen=True)
class ScanTask:
    path: str
    base_offset: int
    limits: ReadLimits
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    prev_last_offset: int | None = None
    count_records: bool = False


def run_scan_task(task: ScanTask, walked: Walked | None = None) -> SegmentScan:
    """:func:`scan_segment` over a file (the unit of work of the process pool)."""
    with mapped(task.path) as buf:
        return scan_segment(
            buf,
            task.base_offset,
            limits=task.limits,
            index_interval_bytes=task.index_interval_bytes,
            prev_last_offset=task.prev_last_offset,
            count_records=task.count_records,
            path=task.path,
            walked=walked,
        )

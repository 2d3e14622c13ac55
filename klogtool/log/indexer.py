"""Building a segment's indexes exactly as the broker's ``LogSegment.recover`` does.

docs/kafka-rules.md: Index rebuild: an offset-index entry (batch LAST offset, batch START position)
whenever more
than ``index_interval_bytes`` were written since the last entry (the first batch is never
indexed); a time-index entry (running max timestamp, last offset of the earliest batch that
reached it) alongside each offset entry when the max grew, and a final one at the end.
Batch headers only: records are never decoded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from klogtool.formats.batch import Batch
from klogtool.formats.index import OffsetIndexEntry, TimeIndexEntry
from klogtool.formats.records import ScanResult, SegmentScanner

DEFAULT_INDEX_INTERVAL_BYTES = 4096


@dataclass(frozen=True)
class BuiltIndexes:
    offsets: list[OffsetIndexEntry]
    times: list[TimeIndexEntry]
    scan: ScanResult  # where the valid bytes end (recovery truncates there)


def build_indexes(
    buf: bytes | memoryview,
    base_offset: int,
    *,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    strict: bool = False,
    on_batch: Callable[[Batch], None] | None = None,
) -> BuiltIndexes:
    """Index entries for the valid prefix of a segment (the broker's recovery walk).

    ``strict=False`` walks like the broker (magic and offset order not checked); the walk stops
    at the first invalid batch either way, as recovery does. ``on_batch`` sees every valid batch
    before it is indexed (the producer-state side of ``LogSegment.recover``); an exception it
    raises ends the walk and propagates.
    """
    offsets: list[OffsetIndexEntry] = []
    times: list[TimeIndexEntry] = []
    max_ts = -1
    max_ts_offset = base_offset
    bytes_at_last_entry = 0
    scanner = SegmentScanner(buf, strict=strict, stop_on_crc=True)
    for batch in scanner:
        if on_batch is not None:
            on_batch(batch)
        pos = batch.position
        if batch.max_timestamp > max_ts:
            max_ts = batch.max_timestamp
            max_ts_offset = batch.last_offset
        if pos - bytes_at_last_entry > index_interval_bytes:
            offsets.append(OffsetIndexEntry(batch.last_offset, pos))
            if max_ts > (times[-1].timestamp if times else -1):
                times.append(TimeIndexEntry(max_ts, max_ts_offset))
            bytes_at_last_entry = pos
    if max_ts > (times[-1].timestamp if times else -1):
        times.append(TimeIndexEntry(max_ts, max_ts_offset))
    result = scanner.result
    assert result is not None  # set once the scanner is exhausted
    return BuiltIndexes(offsets, times, result)

""".index (OffsetIndex), .timeindex (TimeIndex) and .txnindex (TransactionIndex) files.

Bytes in, entries out; bytes out for the encoders. Kafka's rules (docs/kafka-rules.md,
Partition directory files):

* ``.index``: 8-byte slots ``relative_offset:int32, position:int32``. An untrimmed (preallocated)
  file is zero-filled; the broker's loader counts every slot as an entry, DumpLogSegments stops at
  the first slot ``i > 0`` whose relative offset is 0. Both readings are offered
  (``stop_at_zero_fill``).
* ``.timeindex``: 12-byte slots ``timestamp:int64, relative_offset:int32``, same zero-fill rule.
* ``.txnindex``: 34-byte AbortedTxn entries, never preallocated; a trailing partial entry is
  ignored (reported by :func:`txn_index_trailing_bytes`). Only the first byte of the int16
  version is read (Kafka's quirk); a version above 0 is an error.

A trailing partial slot of an ``.index``/``.timeindex`` is ignored by the iterators (the broker
rounds the length down); :func:`sanity_check_offset_index` / :func:`sanity_check_time_index`
report it, exactly like the broker's ``sanityCheck``.

Positions in errors are byte positions in the buffer passed in. Encoders raise ``ValueError`` for
entries that Kafka would refuse to append.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from klogtool.formats.errors import FormatError, UnsupportedError

Buffer = bytes | bytearray | memoryview

OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12
TXN_INDEX_ENTRY_SIZE = 34
TXN_INDEX_CURRENT_VERSION = 0
MAX_RELATIVE_OFFSET = 2**31 - 1

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# OffsetIndex slot: relativeOffset, position
_OFFSET_INDEX_ENTRY = struct.Struct(">ii")
# TimeIndex slot: timestamp, relativeOffset
_TIME_INDEX_ENTRY = struct.Struct(">qi")
# AbortedTxn as Kafka reads it: version is only the first byte (signed), the second is skipped.
_ABORTED_TXN_READ = struct.Struct(">bxqqqq")
# AbortedTxn as Kafka writes it: version int16, producerId, firstOffset, lastOffset,
# lastStableOffset.
_ABORTED_TXN = struct.Struct(">hqqqq")

_SANITY = "index-sanity"


class OffsetIndexEntry(NamedTuple):
    """One .index entry; ``offset`` is absolute (segment base offset + relative offset)."""

    offset: int
    position: int


class TimeIndexEntry(NamedTuple):
    """One .timeindex entry; ``offset`` is absolute."""

    timestamp: int
    offset: int


class AbortedTxn(NamedTuple):
    """One .txnindex entry (``version`` as Kafka reads it: the first byte only)."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def _view(buf: Buffer) -> memoryview:
    mv = memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def _zero_tail_slots(mv: memoryview, entry_size: int) -> int:
    """Number of whole slots at the end of the whole-slot area that are all zero bytes."""
    slots = len(mv) // entry_size
    end = slots * entry_size
    chunk = 1 << 16
    zeros = bytes(chunk)
    pos = end
    while pos > 0:
        start = max(0, pos - chunk)
        part = mv[start:pos]
        if part != zeros[: pos - start]:
            last_nonzero = start + len(bytes(part).rstrip(b"\x00")) - 1
            return slots - 1 - last_nonzero // entry_size
        pos = start
    return slots


# --------------------------------------------------------------------------------------------
# .index


def offset_index_slots(buf: Buffer) -> int:
    """Entries as the broker counts them when it opens the file (``length // 8``)."""
    return len(buf) // OFFSET_INDEX_ENTRY_SIZE


def offset_index_zero_tail(buf: Buffer) -> int:
    """How many trailing 8-byte slots are all zero (preallocation padding).

    Counts from the end and includes slot 0 when the whole file is zeros (an (base, 0) entry is
    never written by a broker: the batch at position 0 is never indexed). A trailing partial slot
    is not counted.
    """
    return _zero_tail_slots(_view(buf), OFFSET_INDEX_ENTRY_SIZE)


def iter_offset_index(
    buf: Buffer, base_offset: int, *, stop_at_zero_fill: bool
) -> Iterator[OffsetIndexEntry]:
    """Entries of an .index file.

    ``stop_at_zero_fill=True``: stop at the first slot ``i > 0`` whose relative offset is 0
    (DumpLogSegments). ``False``: every whole slot is an entry (the broker's loader).
    """
    mv = _view(buf)
    end = (len(mv) // OFFSET_INDEX_ENTRY_SIZE) * OFFSET_INDEX_ENTRY_SIZE
    for i, (relative_offset, position) in enumerate(_OFFSET_INDEX_ENTRY.iter_unpack(mv[:end])):
        if stop_at_zero_fill and relative_offset == 0 and i > 0:
            return
        yield OffsetIndexEntry(base_offset + relative_offset, position)


def sanity_check_offset_index(buf: Buffer, base_offset: int) -> None:
    """The broker's ``OffsetIndex.sanityCheck``; raises FormatError (code ``index-sanity``)."""
    mv = _view(buf)
    length = len(mv)
    entries = length // OFFSET_INDEX_ENTRY_SIZE
    if entries:
        last_pos = (entries - 1) * OFFSET_INDEX_ENTRY_SIZE
        relative_offset, _ = _OFFSET_INDEX_ENTRY.unpack_from(mv, last_pos)
        last_offset = base_offset + relative_offset
        if last_offset < base_offset:
            raise FormatError(
                f"Corrupt index found, index file has non-zero size but the last offset is "
                f"{last_offset} which is less than the base offset {base_offset}",
                last_pos,
                _SANITY,
            )
    if length % OFFSET_INDEX_ENTRY_SIZE:
        raise FormatError(
            f"Index file is corrupt, found {length} bytes which is neither positive nor a "
            f"multiple of {OFFSET_INDEX_ENTRY_SIZE}",
            entries * OFFSET_INDEX_ENTRY_SIZE,
            _SANITY,
        )


_WARM_OFFSET_SLOTS = 8192 // OFFSET_INDEX_ENTRY_SIZE  # AbstractIndex.warmEntries


def offset_index_lookup(buf: Buffer, base_offset: int, target: int) -> int:
    """The position the broker's ``OffsetIndex.lookup(target)`` gives: that of the entry with
    the largest offset at or below ``target``, 0 when none is. Searched as Kafka's
    ``AbstractIndex.indexSlotRangeFor`` does (every whole slot an entry, zero-filled ones too;
    the last 8 KiB of slots first), so an index out of order gives what it gives the broker."""
    mv = _view(buf)
    slots = len(mv) // OFFSET_INDEX_ENTRY_SIZE

    def offset(slot: int) -> int:
        relative: int = _OFFSET_INDEX_ENTRY.unpack_from(mv, slot * OFFSET_INDEX_ENTRY_SIZE)[0]
        return base_offset + relative

    if slots == 0:
        return 0
    hot = max(0, slots - 1 - _WARM_OFFSET_SLOTS)
    if offset(hot) < target:
        lo, hi = hot, slots - 1
    elif offset(0) > target:
        return 0
    else:
        lo, hi = 0, hot
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        found = offset(mid)
        if found > target:
            hi = mid - 1
        elif found < target:
            lo = mid
        else:
            lo = hi = mid
    position: int = _OFFSET_INDEX_ENTRY.unpack_from(mv, lo * OFFSET_INDEX_ENTRY_SIZE)[1]
    return position


def encode_offset_index(entries: Iterable[OffsetIndexEntry], base_offset: int) -> bytes:
    """A trimmed .index file. Offsets must be strictly increasing, relative offsets and
    positions in [0, 2^31-1]."""
    out = bytearray()
    last: int | None = None
    for offset, position in entries:
        relative = offset - base_offset
        if not 0 <= relative <= MAX_RELATIVE_OFFSET:
            raise ValueError(
                f"offset {offset} is out of range for an index with base offset {base_offset}"
            )
        if not 0 <= position <= _INT32_MAX:
            raise ValueError(f"position {position} is out of range for an index entry")
        if last is not None and offset <= last:
            raise ValueError(f"index offsets must strictly increase: {offset} after {last}")
        last = offset
        out += _OFFSET_INDEX_ENTRY.pack(relative, position)
    return bytes(out)


# --------------------------------------------------------------------------------------------
# .timeindex


def time_index_slots(buf: Buffer) -> int:
    """Entries as the broker counts them when it opens the file (``length // 12``)."""
    return len(buf) // TIME_INDEX_ENTRY_SIZE


def time_index_zero_tail(buf: Buffer) -> int:
    """How many trailing 12-byte slots are all zero (see :func:`offset_index_zero_tail`)."""
    return _zero_tail_slots(_view(buf), TIME_INDEX_ENTRY_SIZE)


def iter_time_index(
    buf: Buffer, base_offset: int, *, stop_at_zero_fill: bool
) -> Iterator[TimeIndexEntry]:
    """Entries of a .timeindex file (same ``stop_at_zero_fill`` rule as the offset index:
    the slot's relative offset is 0 and ``i > 0``, whatever its timestamp)."""
    mv = _view(buf)
    end = (len(mv) // TIME_INDEX_ENTRY_SIZE) * TIME_INDEX_ENTRY_SIZE
    for i, (timestamp, relative_offset) in enumerate(_TIME_INDEX_ENTRY.iter_unpack(mv[:end])):
        if stop_at_zero_fill and relative_offset == 0 and i > 0:
            return
        yield TimeIndexEntry(timestamp, base_offset + relative_offset)


def sanity_check_time_index(buf: Buffer, base_offset: int) -> None:
    """The broker's ``TimeIndex.sanityCheck``; raises FormatError (code ``index-sanity``)."""
    mv = _view(buf)
    length = len(mv)
    entries = length // TIME_INDEX_ENTRY_SIZE
    if entries:
        last_pos = (entries - 1) * TIME_INDEX_ENTRY_SIZE
        first_timestamp, _ = _TIME_INDEX_ENTRY.unpack_from(mv, 0)
        last_timestamp, relative_offset = _TIME_INDEX_ENTRY.unpack_from(mv, last_pos)
        last_offset = base_offset + relative_offset
        if last_timestamp < first_timestamp:
            raise FormatError(
                f"Corrupt time index found, time index file has non-zero size but the last "
                f"timestamp is {last_timestamp} which is less than the first timestamp "
                f"{first_timestamp}",
                last_pos,
                _SANITY,
            )
        if last_offset < base_offset:
            raise FormatError(
                f"Corrupt time index found, time index file has non-zero size but the last "
                f"offset is {last_offset} which is less than the first offset {base_offset}",
                last_pos,
                _SANITY,
            )
    if length % TIME_INDEX_ENTRY_SIZE:
        raise FormatError(
            f"Time index file is corrupt, found {length} bytes which is neither positive nor a "
            f"multiple of {TIME_INDEX_ENTRY_SIZE}",
            entries * TIME_INDEX_ENTRY_SIZE,
            _SANITY,
        )


def encode_time_index(entries: Iterable[TimeIndexEntry], base_offset: int) -> bytes:
    """A trimmed .timeindex file. As ``TimeIndex.maybeAppend`` leaves them: timestamps strictly
    increasing, offsets non-decreasing, relative offsets in [0, 2^31-1]."""
    out = bytearray()
    last: TimeIndexEntry | None = None
    for timestamp, offset in entries:
        relative = offset - base_offset
        if not 0 <= relative <= MAX_RELATIVE_OFFSET:
            raise ValueError(
                f"offset {offset} is out of range for a time index with base offset {base_offset}"
            )
        if not _INT64_MIN <= timestamp <= _INT64_MAX:
            raise ValueError(f"timestamp {timestamp} does not fit in an int64")
        if last is not None:
            if timestamp <= last.timestamp:
                raise ValueError(
                    f"time index timestamps must strictly increase: {timestamp} after "
                    f"{last.timestamp}"
                )
            if offset < last.offset:
                raise ValueError(
                    f"time index offsets must not decrease: {offset} after {last.offset}"
                )
        last = TimeIndexEntry(timestamp, offset)
        out += _TIME_INDEX_ENTRY.pack(timestamp, relative)
    return bytes(out)


# --------------------------------------------------------------------------------------------
# .txnindex


def txn_index_trailing_bytes(buf: Buffer) -> int:
    """Bytes of a trailing partial entry (< 34), which the broker ignores."""
    return len(buf) % TXN_INDEX_ENTRY_SIZE


def iter_txn_index(buf: Buffer) -> Iterator[AbortedTxn]:
    """Entries of a .txnindex file. A version (first byte) above 0 raises UnsupportedError at
    that entry, as the broker's iterator does; a trailing partial entry is skipped."""
    mv = _view(buf)
    end = (len(mv) // TXN_INDEX_ENTRY_SIZE) * TXN_INDEX_ENTRY_SIZE
    for pos in range(0, end, TXN_INDEX_ENTRY_SIZE):
        txn = AbortedTxn._make(_ABORTED_TXN_READ.unpack_from(mv, pos))
        if txn.version > TXN_INDEX_CURRENT_VERSION:
            raise UnsupportedError(
                f"Unexpected aborted transaction version {txn.version} in transaction index, "
                f"current version is {TXN_INDEX_CURRENT_VERSION}",
                pos,
                "unsupported-version",
            )
        yield txn


def _txn_str(txn: AbortedTxn) -> str:
    return (
        f"AbortedTxn(version={txn.version}, producerId={txn.producer_id}, "
        f"firstOffset={txn.first_offset}, lastOffset={txn.last_offset}, "
        f"lastStableOffset={txn.last_stable_offset})"
    )


def sanity_check_txn_index(buf: Buffer, base_offset: int) -> None:
    """The broker's ``TransactionIndex.sanityCheck``: every entry's last offset must be at least
    the segment base offset. Raises FormatError (code ``index-sanity``), or UnsupportedError for
    an unknown entry version (the broker's iterator fails first)."""
    for i, txn in enumerate(iter_txn_index(buf)):
        if txn.last_offset < base_offset:
            raise FormatError(
                f"Last offset of aborted transaction {_txn_str(txn)} in index is less than "
                f"start offset {base_offset}",
                i * TXN_INDEX_ENTRY_SIZE,
                _SANITY,
            )


def encode_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    """A .txnindex file. Version must be 0, last offsets strictly increasing (as
    ``TransactionIndex.append`` requires), all fields int64."""
    out = bytearray()
    last: int | None = None
    for txn in entries:
        if txn.version != TXN_INDEX_CURRENT_VERSION:
            raise ValueError(f"aborted transaction version must be 0, not {txn.version}")
        for name in ("producer_id", "first_offset", "last_offset", "last_stable_offset"):
            value = getattr(txn, name)
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise ValueError(f"{name} {value} does not fit in an int64")
        if last is not None and txn.last_offset <= last:
            raise ValueError(
                f"The last offset of appended transactions must increase sequentially, but "
                f"{txn.last_offset} is not greater than current last offset {last}"
            )
        last = txn.last_offset
        out += _ABORTED_TXN.pack(
            txn.version, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
        )
    return bytes(out)

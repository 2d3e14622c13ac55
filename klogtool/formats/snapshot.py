"""Producer state snapshots, ``<offset>.snapshot`` (docs/kafka-rules.md, Partition directory
files).

Layout: ``version:int16`` (must be 1), ``crc:uint32`` (CRC-32C over bytes [6, EOF)),
``count:int32``, then ``count`` 46-byte producer entries. Kafka reads the whole structure first
(a short file is a schema error), then checks the version, then the CRC. Bytes after the last
entry are not rejected by the broker (they are covered by the CRC); they are reported in
:attr:`ProducerSnapshot.trailing_bytes`.

Positions in errors are byte positions in the buffer passed in. :func:`encode_snapshot` raises
``ValueError`` for fields that do not fit their Kafka types.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from klogtool.formats.crc import crc32c
from klogtool.formats.errors import (
    CrcMismatchError,
    FormatError,
    TruncatedError,
    UnsupportedError,
)

Buffer = bytes | bytearray | memoryview

PRODUCER_SNAPSHOT_VERSION = 1
CRC_OFFSET = 2
PRODUCER_ENTRIES_OFFSET = 6  # CRC coverage starts here (the count is covered)

# Header: version, crc, producer_entries count
_SNAPSHOT_HEADER = struct.Struct(">hIi")
# Entry: producer_id, producer_epoch, last_sequence, last_offset, offset_delta, timestamp,
# coordinator_epoch, current_txn_first_offset
_PRODUCER_ENTRY = struct.Struct(">qhiqiqiq")

# The crc field alone, filled in after the entries are written
_CRC = struct.Struct(">I")

HEADER_SIZE = _SNAPSHOT_HEADER.size  # 10
ENTRY_SIZE = _PRODUCER_ENTRY.size  # 46

_INT32_MAX = 2**31 - 1


def first_sequence(last_sequence: int, offset_delta: int) -> int:
    """``lastSequence - offsetDelta`` with Kafka's int32 wrap (``DefaultRecordBatch
    .decrementSequence``): sequences wrap from Integer.MAX_VALUE to 0."""
    if last_sequence < offset_delta:
        return _INT32_MAX - (offset_delta - last_sequence) + 1
    return last_sequence - offset_delta


class ProducerEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int  # last data offset, -1 if none
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1 = no ongoing transaction

    @property
    def has_batch_metadata(self) -> bool:
        """Kafka keeps batch metadata (sequence/offset info) only when last_offset >= 0."""
        return self.last_offset >= 0

    @property
    def first_sequence(self) -> int:
        return first_sequence(self.last_sequence, self.offset_delta)


@dataclass(frozen=True)
class ProducerSnapshot:
    version: int
    crc: int
    computed_crc: int
    entries: tuple[ProducerEntry, ...]
    trailing_bytes: int = 0

    @property
    def crc_valid(self) -> bool:
        return self.crc == self.computed_crc


def parse_snapshot(buf: Buffer, *, check_crc: bool = True) -> ProducerSnapshot:
    """Parse a producer snapshot.

    Raises TruncatedError (header or entries cut short; checked before any allocation),
    UnsupportedError (code ``unsupported-version``, version != 1), FormatError (code
    ``bad-count``, negative count) and, when ``check_crc`` is true, CrcMismatchError. With
    ``check_crc=False`` a mismatch is only reported through ``crc_valid``.
    """
    mv = memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    size = len(mv)
    if size < HEADER_SIZE:
        raise TruncatedError(
            f"Snapshot failed schema validation: {size} bytes is shorter than the "
            f"{HEADER_SIZE}-byte header",
            size,
        )
    version, crc, count = _SNAPSHOT_HEADER.unpack_from(mv, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise UnsupportedError(
            f"Snapshot contained an unknown file version {version}", 0, "unsupported-version"
        )
    if count < 0:
        raise FormatError(
            f"Snapshot failed schema validation: array size {count} cannot be negative",
            PRODUCER_ENTRIES_OFFSET,
            "bad-count",
        )
    available = (size - HEADER_SIZE) // ENTRY_SIZE
    if count > available:
        raise TruncatedError(
            f"Snapshot failed schema validation: {count} producer entries announced but only "
            f"{size - HEADER_SIZE} bytes ({available} entries) follow the header",
            HEADER_SIZE + available * ENTRY_SIZE,
        )
    computed = crc32c(mv[PRODUCER_ENTRIES_OFFSET:])
    if check_crc and crc != computed:
        raise CrcMismatchError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}",
            CRC_OFFSET,
        )
    end = HEADER_SIZE + count * ENTRY_SIZE
    entries = tuple(
        ProducerEntry._make(fields) for fields in _PRODUCER_ENTRY.iter_unpack(mv[HEADER_SIZE:end])
    )
    return ProducerSnapshot(version, crc, computed, entries, size - end)


def encode_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    """A version-1 snapshot with a valid CRC, entries in the order given."""
    items = list(entries)
    out = bytearray(HEADER_SIZE + ENTRY_SIZE * len(items))
    _SNAPSHOT_HEADER.pack_into(out, 0, PRODUCER_SNAPSHOT_VERSION, 0, len(items))
    pos = HEADER_SIZE
    for entry in items:
        try:
            _PRODUCER_ENTRY.pack_into(out, pos, *entry)
        except struct.error as e:
            raise ValueError(f"producer entry {entry} does not fit the snapshot layout: {e}") from e
        pos += ENTRY_SIZE
    _CRC.pack_into(out, CRC_OFFSET, crc32c(out[PRODUCER_ENTRIES_OFFSET:]))
    return bytes(out)

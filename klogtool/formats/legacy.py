"""Message formats v0 and v1: plain messages and compressed wrapper messages.

A shallow entry is ``[offset:int64][size:int32][crc:uint32][magic][attributes]
[timestamp:int64, v1 only][key length:int32][key][value length:int32][value]``. A compressed
entry is a wrapper whose value is the compressed concatenation of inner entries; its offset is
the offset of the LAST inner message. See docs/kafka-rules.md: Record formats
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from klogtool.formats import codecs, engine
from klogtool.formats.batch import (
    CREATE_TIME,
    DEFAULT_MAX_BATCH_BYTES,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    NO_TIMESTAMP_TYPE,
    Batch,
    NativeWrapper,
    Record,
    make_record,
)
from klogtool.formats.crc import crc32
from klogtool.formats.errors import (
    CorruptRecordError,
    FormatError,
    LimitExceededError,
    UnsupportedError,
)

# offset, size, crc, magic, attributes
ENTRY_HEADER = struct.Struct(">qiIbb")
TIMESTAMP = struct.Struct(">q")
LENGTH = struct.Struct(">i")
CRC_START = 16  # CRC-32 covers [magic, end of message)
RECORD_OVERHEAD = {0: 14, 1: 22}  # crc, magic, attributes, (timestamp), key/value lengths
MIN_RECORD_SIZE = 14
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08


class _Message:
    """The fields of one legacy message (shallow entry or inner message)."""

    __slots__ = ("offset", "crc", "magic", "attributes", "timestamp", "key", "value", "data")
    offset: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: memoryview | None
    value: memoryview | None
    data: memoryview

    def __init__(self, data: memoryview, position: int):
        if len(data) < LOG_OVERHEAD + MIN_RECORD_SIZE:
            raise CorruptRecordError(
                f"Found record size {len(data) - LOG_OVERHEAD} smaller than minimum record "
                f"overhead ({MIN_RECORD_SIZE})",
                position,
                "record-too-small",
            )
        self.data = data
        self.offset, _size, self.crc, self.magic, self.attributes = ENTRY_HEADER.unpack_from(data)
        pos = 18
        if self.magic >= 1:
            if len(data) < LOG_OVERHEAD + RECORD_OVERHEAD[1]:
                raise CorruptRecordError(
                    f"v1 message of {len(data) - LOG_OVERHEAD} bytes is smaller than the v1 "
                    f"overhead ({RECORD_OVERHEAD[1]})",
                    position,
                    "record-too-small",
                )
            (self.timestamp,) = TIMESTAMP.unpack_from(data, pos)
            pos += 8
        else:
            self.timestamp = -1
        self.key, pos = _read_bytes(data, pos, position, "key")
        self.value, pos = _read_bytes(data, pos, position, "value")
        if pos != len(data):
            raise CorruptRecordError(
                f"message has {len(data) - pos} bytes after its value", position, "corrupt-record"
            )

    def compute_crc(self) -> int:
        return crc32(self.data[CRC_START:])


def _read_bytes(
    data: memoryview, pos: int, position: int, what: str
) -> tuple[memoryview | None, int]:
    if pos + 4 > len(data):
        raise CorruptRecordError(
            f"message ends before its {what} length", position, "corrupt-record"
        )
    (n,) = LENGTH.unpack_from(data, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise CorruptRecordError(f"invalid {what} length {n}", position, "corrupt-record")
        return None, pos
    if pos + n > len(data):
        raise CorruptRecordError(
            f"{what} length {n} runs past the end of the message", position, "corrupt-record"
        )
    return data[pos : pos + n], pos + n


class LegacyBatch(Batch):
    """A v0/v1 shallow entry: one plain message, or a compressed wrapper."""

    __slots__ = ("position", "size", "_msg", "_inner")

    partition_leader_epoch = -1
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    base_timestamp = -1
    is_transactional = False
    is_control = False
    delete_horizon_ms = None

    def __init__(self, data: memoryview, position: int = 0):
        self._msg = _Message(data, position)
        self.size = len(data)
        self.position = position
        self._inner: _Unpacked | None = None

    @property
    def data(self) -> memoryview:
        return self._msg.data

    @property
    def magic(self) -> int:
        return self._msg.magic

    @property
    def crc(self) -> int:
        return self._msg.crc

    @property
    def attributes(self) -> int:
        return self._msg.attributes

    @property
    def key(self) -> memoryview | None:
        return self._msg.key

    @property
    def value(self) -> memoryview | None:
        return self._msg.value

    @property
    def compression(self) -> int:
        return self._msg.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        if self._msg.magic == 0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self._msg.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        return self._msg.timestamp

    @property
    def last_offset(self) -> int:
        return self._msg.offset

    @property
    def header_offset(self) -> int:
        return self._msg.offset

    @property
    def base_offset(self) -> int:
        if self.compression == codecs.NONE:
            return self._msg.offset
        return self._wrapper().first_offset

    @property
    def count(self) -> int:
        if self.compression == codecs.NONE:
            return 1
        return self._wrapper().n_records

    def compute_crc(self) -> int:
        return self._msg.compute_crc()

    def records(self, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> Iterator[Record]:
        msg = self._msg
        if self.compression == codecs.NONE:
            record = Record(
                msg.offset,
                msg.timestamp,
                msg.key,
                msg.value,
                (),
                -1,
                msg.attributes,
                msg.crc,
                msg.compute_crc() == msg.crc,
            )
            return iter((record,))
        kept: list[_Fields] = []
        return self._inner_records(self._wrapper(max_batch_bytes, kept), kept)

    def _wrapper(
        self, limit: int = DEFAULT_MAX_BATCH_BYTES, kept: list[_Fields] | None = None
    ) -> _Unpacked:
        """The decompressed inner message set, checked whole once (so that every error is
        raised before the first record) and kept as bytes only: records are made a chunk at a
        time, so a wrapper of millions of tiny messages costs its decompressed size, not a
        Python object per message. The first unpacking appends the first chunk's record
        fields to ``kept`` as it checks them (at inner offsets, with their own timestamps).
        Every call
        holds ``limit``, also when an earlier call (a larger limit, or none) already
        decompressed it."""
        if self._inner is None:
            self._inner = self._unpack(limit, kept)
        elif len(self._inner.raw) > limit:
            raise LimitExceededError(
                f"decompressed data of {len(self._inner.raw)} bytes exceeds the limit of {limit}",
                self.position,
            )
        return self._inner

    def _unpack(self, limit: int, kept: list[_Fields] | None) -> _Unpacked:
        msg = self._msg
        pos0 = self.position
        where = f"byte {pos0}"
        codec = self.compression
        if codec == codecs.ZSTD:
            raise UnsupportedError(
                f"ZSTD compression is not supported for magic {msg.magic}", pos0, "unsupported"
            )
        if codec not in codecs.CODEC_NAMES:
            raise UnsupportedError(f"Unknown compression type id {codec}", pos0, "unsupported")
        if msg.value is None:
            raise CorruptRecordError(
                "Found invalid compressed record set with null value", pos0, "corrupt-record"
            )
        # the native engine's decompression, else (or for anything it is unsure of) the
        # reference's, which says what is wrong
        native = engine.legacy_decompress(codec, msg.value, msg.magic, max(limit, 0), where)
        try:
            raw = memoryview(
                native
                if native is not None
                else codecs.decompress(codec, msg.value, magic=msg.magic, limit=limit)
            )
        except FormatError as e:
            raise e.at(pos0) from None  # positions inside the compressed value are relative
        scanned = engine.legacy_scan(raw, msg.magic, where) or _plain_walk(raw, msg.magic, 0, kept)
        made_to = 0
        if scanned is not None:
            count, first_rel, last_rel = scanned[:3]
            if len(scanned) > 3:  # _plain_walk's, which made the first chunk's fields
                made_to = scanned[3]
        else:  # something unusual: the careful walk says what, or reads it
            if kept:
                kept.clear()
            count = 0
            first_rel = last_rel = 0
            for m in _inner_messages(raw, pos0):
                if count == 0:
                    first_rel = m.offset
                last_rel = m.offset
                count += 1
        if count == 0:
            raise CorruptRecordError(
                "Found invalid compressed record set with no inner records", pos0, "corrupt-record"
            )
        wrapper_offset = msg.offset
        if msg.magic >= 1:
            if wrapper_offset == 0:
                shift = 0  # librdkafka compatibility: a wrapper at offset 0 means base 0
            elif wrapper_offset < last_rel:
                raise CorruptRecordError(
                    f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{wrapper_offset}' is less than the last inner message offset '{last_rel}'",
                    pos0,
                    "corrupt-record",
                )
            else:
                shift = wrapper_offset - last_rel
        else:
            shift = 0
        return _Unpacked(raw, shift, count, first_rel + shift, scanned is not None, made_to)

    def native_input(
        self, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    ) -> tuple[memoryview, NativeWrapper] | None:
        """The message set the native engine reads and how its records are made (see
        :meth:`_making`): a plain message is a set of one, at its own offset; a compressed
        wrapper's is its decompressed inner set. None for an unusual set, or one that cannot
        be read (``records()`` says why)."""
        if self.compression == codecs.NONE:
            return self.data, self._making(0)
        try:
            unpacked = self._wrapper(max_batch_bytes)
        except FormatError:
            return None
        return (unpacked.raw, self._making(unpacked.shift)) if unpacked.plain else None

    def _making(self, shift: int) -> NativeWrapper:
        """(magic, shift added to inner offsets, the timestamp of every record or None)."""
        msg = self._msg
        log_append = msg.magic >= 1 and msg.attributes & TIMESTAMP_TYPE_MASK
        return msg.magic, shift, msg.timestamp if log_append else None

    def _inner_records(self, unpacked: _Unpacked, kept: list[_Fields]) -> Iterator[Record]:
        if not unpacked.plain:
            return self._careful_records(unpacked)
        making = self._making(unpacked.shift)
        if not kept and unpacked.plain and unpacked.n_records <= _LISTED_RECORDS:
            records = engine.records_legacy(unpacked.raw, making, f"byte {self.position}")
            if records is not None:
                return iter(records)
        return _plain_records(unpacked.raw, kept, unpacked.made_to if kept else 0, *making)

    def _careful_records(self, unpacked: _Unpacked) -> Iterator[Record]:
        _, shift, fixed_ts = self._making(unpacked.shift)
        for m in _inner_messages(unpacked.raw, self.position):
            yield Record(
                m.offset + shift,
                m.timestamp if fixed_ts is None else fixed_ts,
                m.key,
                m.value,
                (),
                -1,
                m.attributes,
                m.crc,
                m.compute_crc() == m.crc,
            )


class _Unpacked(NamedTuple):
    raw: memoryview  # the decompressed inner message set
    shift: int  # added to inner offsets (v1 relative offsets)
    n_records: int
    first_offset: int
    plain: bool  # every inner message has the wrapper's magic and its lengths add up
    made_to: int  # where the first chunk of fields the first walk made ends (0: none made)


# The inner message headers up to the key length, for each magic.
_INNER_HEAD = {0: struct.Struct(">qiIbbi"), 1: struct.Struct(">qiIbbqi")}


# The fields of an inner message that a record is made of: offset (inner), timestamp, key,
# value, attributes, stored CRC-32, whether it holds. Made while the set is checked, before the
# offset shift is known.
_Fields = tuple[int, int, memoryview | None, memoryview | None, int, int, bool]


_CHUNK_RECORDS = 1024  # records made per step: bounds memory whatever the wrapper holds


def _plain_walk(
    raw: memoryview, magic: int, pos: int, kept: list[_Fields] | None, stop: bool = False
) -> tuple[int, int, int, int] | None:
    """Walks an inner message set from ``pos`` while its messages all have ``magic``, no
    compression and consistent lengths: returns (count, first offset, last offset, position
    after the last record made), or None for anything else (the careful walk then reads it or
    says what is wrong). Appends the fields of the first :data:`_CHUNK_RECORDS` messages to
    ``kept`` (at their inner offsets and own timestamps) and, with ``stop``, ends there."""
    head = _INNER_HEAD.get(magic)
    if head is None:
        return None
    unpack = head.unpack_from
    length = LENGTH.unpack_from
    hsize = head.size
    crc_of = zlib.crc32
    make = 0 if kept is None else _CHUNK_RECORDS
    count = first = last = made_to = 0
    n = len(raw)
    try:
        while pos < n:
            fields = unpack(raw, pos)
            end = pos + LOG_OVERHEAD + fields[1]
            klen = fields[-1]
            if fields[3] != magic or fields[4] & COMPRESSION_MASK or end > n or klen < -1:
                return None
            p = pos + hsize + klen if klen > 0 else pos + hsize
            (vlen,) = length(raw, p)
            if vlen < -1 or (p + 4 + vlen if vlen > 0 else p + 4) != end:
                return None
            offset = fields[0]
            if count == 0:
                first = offset
            last = offset
            count += 1
            if count <= make:
                crc = fields[2]
                kept.append(  # type: ignore[union-attr]  # make > 0: kept is a list
                    (
                        offset,
                        fields[5] if magic else -1,
                        raw[pos + hsize : p] if klen >= 0 else None,
                        raw[p + 4 : end] if vlen >= 0 else None,
                        fields[4],
                        crc,
                        crc_of(raw[pos + CRC_START : end]) == crc,
                    )
                )
                made_to = end
            elif stop:
                break
            pos = end
    except struct.error:  # a header past the end
        return None
    return count, first, last, made_to


def _plain_records(
    raw: memoryview,
    kept: list[_Fields],
    pos: int,
    magic: int,
    shift: int,
    fixed_ts: int | None,
) -> Iterator[Record]:
    """The records of an inner message set :func:`_plain_walk` accepted: those of ``kept``
    (the first chunk's fields, made while the set was checked, which end at ``pos``; empty if
    it was checked before), then the rest a chunk at a time."""
    make = make_record
    while True:
        if not kept:
            walked = _plain_walk(raw, magic, pos, kept, stop=True) if pos < len(raw) else None
            if walked is None:  # the end (the set was accepted whole, so nothing else)
                return
            pos = walked[3]
        for offset, timestamp, key, value, attributes, crc, valid in kept:
            yield make(
                offset + shift,
                timestamp if fixed_ts is None else fixed_ts,
                key,
                value,
                (),
                -1,
                attributes,
                crc,
                valid,
            )
        kept = []


_LISTED_RECORDS = 4096  # the most records the native engine returns in one list


def _inner_messages(raw: memoryview, pos0: int) -> Iterator[_Message]:
    """The inner messages of a decompressed wrapper value, one at a time, checked."""
    pos = 0
    n = len(raw)
    while pos < n:
        if pos + LOG_OVERHEAD > n:
            raise CorruptRecordError(
                "compressed message set ends inside an entry header", pos0, "corrupt-record"
            )
        (size,) = LENGTH.unpack_from(raw, pos + 8)
        if size < MIN_RECORD_SIZE or pos + LOG_OVERHEAD + size > n:
            raise CorruptRecordError(
                f"invalid inner message size {size} in compressed message set",
                pos0,
                "corrupt-record",
            )
        m = _Message(raw[pos : pos + LOG_OVERHEAD + size], pos0)
        if m.attributes & COMPRESSION_MASK:
            raise CorruptRecordError(
                "Inner messages must not be compressed", pos0, "corrupt-record"
            )
        yield m
        pos += LOG_OVERHEAD + size


# -- encoding -----------------------------------------------------------------------------------
def encode_message(
    offset: int,
    key: bytes | memoryview | None,
    value: bytes | memoryview | None,
    *,
    magic: int,
    timestamp: int = -1,
    timestamp_type: int = CREATE_TIME,
    compression: int = codecs.NONE,
) -> bytes:
    """One shallow entry (``[offset][size][message]``), as ``LegacyRecord.write`` lays it out."""
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    attributes = compression & COMPRESSION_MASK
    if magic == 1 and timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += TIMESTAMP.pack(timestamp)
    for part in (key, value):
        if part is None:
            body += LENGTH.pack(-1)
        else:
            body += LENGTH.pack(len(part))
            body += part
    return struct.pack(">qiI", offset, len(body) + 4, crc32(body)) + bytes(body)


def encode_wrapper(
    records: Iterable[Record],
    *,
    magic: int,
    compression: int,
    timestamp_type: int = CREATE_TIME,
    log_append_time: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """A compressed wrapper holding ``records`` (absolute offsets, gaps kept).

    Inner offsets are absolute for v0 and relative to the first record for v1; the wrapper
    carries the last record's offset and the max timestamp (or the append time). One pass over
    ``records`` (any iterable), each encoded as it comes: memory is the encoded size.
    """
    if compression == codecs.NONE:
        raise ValueError("a wrapper must be compressed")
    if magic == 0:
        timestamp_type = CREATE_TIME
    if magic > 0 and timestamp_type == LOG_APPEND_TIME and log_append_time is None:
        raise ValueError("LogAppendTime wrappers need log_append_time")
    first: int | None = None
    last = 0
    largest: int | None = None
    inner = bytearray()
    for r in records:
        if first is None:
            first = r.offset
        if magic == 0:
            ts = -1
        elif timestamp_type == LOG_APPEND_TIME:
            assert log_append_time is not None
            ts = log_append_time
        else:
            ts = r.timestamp
        if largest is None or ts > largest:
            largest = ts
        last = r.offset
        inner += encode_message(
            r.offset if magic == 0 else r.offset - first,
            r.key,
            r.value,
            magic=magic,
            timestamp=ts,
            timestamp_type=timestamp_type,
        )
    if first is None or largest is None:
        raise ValueError("a wrapper needs at least one record")
    payload = codecs.compress(compression, bytes(inner), magic=magic, level=compression_level)
    if magic == 0:
        wrapper_ts = -1
    elif timestamp_type == LOG_APPEND_TIME:
        wrapper_ts = log_append_time if log_append_time is not None else -1
    else:
        wrapper_ts = largest
    return encode_message(
        last,
        None,
        payload,
        magic=magic,
        timestamp=wrapper_ts,
        timestamp_type=timestamp_type,
        compression=compression,
    )

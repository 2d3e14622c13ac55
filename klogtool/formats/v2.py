"""Message format v2: record batches (``DefaultRecordBatch``) and records (``DefaultRecord``).

The 61-byte batch header decodes eagerly; records decode (and decompress) only when
:meth:`DefaultBatch.records` is iterated.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

from klogtool.formats import codecs, engine
from klogtool.formats.batch import (
    CREATE_TIME,
    DEFAULT_MAX_BATCH_BYTES,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    Batch,
    Header,
    Record,
    make_record,
)
from klogtool.formats.crc import crc32c
from klogtool.formats.errors import (
    CorruptRecordError,
    FormatError,
    TruncatedError,
    UnencodableError,
)
from klogtool.formats.varint import encode_varint, encode_varlong

MAGIC = 2
# base_offset, length, partition_leader_epoch, magic, crc, attributes, last_offset_delta,
# base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, records_count
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
RECORD_BATCH_OVERHEAD = BATCH_HEADER.size  # 61
CRC_START = 21  # CRC-32C covers [attributes, end of batch)
MIN_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49
MIN_RECORD_SIZE = 7  # length, attributes, ts delta, offset delta, key len, value len, headers

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40

_INT32_MAX = 0x7FFFFFFF


class DefaultBatch(Batch):
    """A v2 record batch header over a view of the whole batch."""

    __slots__ = (
        "position",
        "size",
        "data",
        "_base_offset",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "records_count",
    )
    # the header's fields, in slots (Batch declares them read-only: here they are assigned once)
    position: int
    size: int
    data: memoryview
    _base_offset: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    def __init__(self, data: memoryview, position: int = 0):
        if len(data) < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"Record batch is corrupt (the size {len(data)} is smaller than the minimum "
                f"allowed overhead {RECORD_BATCH_OVERHEAD})",
                position,
                "batch-too-small",
            )
        (
            self._base_offset,
            length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = BATCH_HEADER.unpack_from(data)
        self.size = length + LOG_OVERHEAD
        if self.size != len(data):
            raise CorruptRecordError(
                f"batch length field {length} does not match the {len(data)} bytes given",
                position,
                "bad-length",
            )
        self.data = data
        self.position = position

    # -- header-derived fields --------------------------------------------------------------
    @property
    def base_offset(self) -> int:
        return self._base_offset

    @property
    def header_offset(self) -> int:
        return self._base_offset

    @property
    def last_offset(self) -> int:
        return self._base_offset + self.last_offset_delta

    @property
    def count(self) -> int:
        return self.records_count

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG else None

    @property
    def last_sequence(self) -> int:
        return sequence_at(self.base_sequence, self.last_offset_delta)

    def compute_crc(self) -> int:
        return crc32c(self.data[CRC_START:])

    def control_type(self, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> int | None:
        if not self.attributes & CONTROL_FLAG:
            return None
        # imported here: the payload decoders cost start-up, and control batches are rare
        from klogtool.formats.payloads.control import decode_control_key

        for record in self.records(max_batch_bytes):
            try:
                return decode_control_key(record.key)[1]
            except FormatError:
                return None  # an invalid key: ControlRecordType.parse would throw
        return None

    # -- records -----------------------------------------------------------------------------
    def records_area(self, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> memoryview | bytes:
        """The bytes holding the records: a zero-copy view when uncompressed, else the fresh
        decompressed ``bytes`` (indexed and sliced faster than a view of them)."""
        raw = self.data[RECORD_BATCH_OVERHEAD:]
        codec = self.attributes & COMPRESSION_MASK
        if codec == codecs.NONE:
            return raw
        try:
            return codecs.decompress(codec, raw, magic=MAGIC, limit=max_batch_bytes)
        except FormatError as e:
            # Codec positions are relative to the compressed records: anchor them in the file.
            raise e.at(self.position + RECORD_BATCH_OVERHEAD) from None

    def records(self, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> Iterator[Record]:
        records = engine.records_v2(
            self.data,
            max_batch_bytes,
            self.position,
            lambda pos, done: self._records_from(max_batch_bytes, pos, done),
        )
        if records is not None:  # the native engine reads it (payloads are bytes then)
            return records
        return self._records_from(max_batch_bytes, 0, 0)

    def _records_from(self, max_batch_bytes: int, pos: int, done: int) -> Iterator[Record]:
        """The records after the first ``done``, which end at ``pos`` of the records area."""
        count = self.records_count
        if count < 0:
            raise CorruptRecordError(
                f"Found invalid record count {count} in magic v2 batch",
                self.position + 57,
                "bad-record-count",
            )
        area = self.records_area(max_batch_bytes)
        compressed = self.compression != codecs.NONE
        # Each record takes at least 7 bytes: reject absurd counts before iterating.
        if count * MIN_RECORD_SIZE > len(area):
            raise CorruptRecordError(
                f"declared record count {count} cannot fit in {len(area)} bytes of records",
                self.position + 57,
                "bad-record-count",
            )
        if self.attributes & TIMESTAMP_TYPE_MASK:
            fixed_ts = self.max_timestamp
        else:
            fixed_ts = None
        # Keys and values slice ``area`` (zero-copy when uncompressed); varints are read from
        # ``bytes``, which index faster than views, unless the copy would pass the memory bound.
        buf = area if isinstance(area, bytes) or len(area) > max_batch_bytes else bytes(area)
        chunks = _record_chunks(
            buf,
            area,
            count,
            self._base_offset,
            self.base_timestamp,
            fixed_ts,
            self.base_sequence,
            # Positions inside decompressed data mean nothing on disk: report the batch start.
            None if compressed else self.position + RECORD_BATCH_OVERHEAD,
            self.position,
            pos,
            done,
        )
        return chain.from_iterable(chunks)


def sequence_at(base_sequence: int, delta: int) -> int:
    """Sequence ``delta`` records after ``base_sequence``, wrapping past Int.MAX to 0."""
    if base_sequence < 0:
        return -1
    seq = base_sequence + delta
    return seq - _INT32_MAX - 1 if seq > _INT32_MAX else seq


def _slow_varint(
    buf: memoryview | bytes, pos: int, max_bytes: int, anchor: int | None, batch_pos: int
) -> tuple[int, int]:
    """Any varint; returns (zig-zag-decoded value, new pos)."""
    value = 0
    shift = 0
    start = pos
    end = len(buf)
    while True:
        if pos >= end:
            raise TruncatedError(
                "record varint runs past the end of the batch",
                batch_pos if anchor is None else anchor + start,
                "corrupt-record",
            )
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if pos - start >= max_bytes:
            raise CorruptRecordError(
                "Found invalid record structure (varint too long)",
                batch_pos if anchor is None else anchor + start,
                "corrupt-record",
            )
    # Java's readVarint/readVarlong shift surplus high bits of the last byte out of the int/long
    value &= 0xFFFFFFFF if max_bytes == 5 else 0xFFFFFFFFFFFFFFFF
    return _zigzag(value), pos


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


# Zig-zag values of one-byte varints (_ZIGZAG1[b0]) and two-byte ones (_ZIGZAG2[b1][b0]); a
# second byte >= 0x80 (a longer varint) is out of _ZIGZAG2's range.
_ZIGZAG1 = tuple(_zigzag(v) for v in range(1 << 7))
_ZIGZAG2 = tuple(
    tuple(0 if b0 < 0x80 else _zigzag((b0 & 0x7F) | b1 << 7) for b0 in range(1 << 8))
    for b1 in range(1 << 7)
)
_FAST_MAX_DELTA = (1 << 13) - 1  # the largest offset delta a two-byte varint holds
_MAX_HEADER_BLOCKS = 256  # distinct header blocks kept per chunk of records
_CHUNK_RECORDS = 1024  # records decoded per call: bounds memory whatever the batch holds


def _record_chunks(
    buf: bytes | memoryview,
    view: memoryview | bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    fixed_ts: int | None,
    base_sequence: int,
    anchor: int | None,
    batch_pos: int,
    pos: int = 0,
    done: int = 0,
) -> Iterator[Iterable[Record]]:
    """The records of a batch a chunk at a time (bounded memory whatever the batch holds),
    after the first ``done``, which end at ``pos``. Records before a corrupt one are yielded
    before its error is raised."""
    # Sequences that may wrap past Int.MAX are left to the careful decoder.
    wraps = base_sequence > _INT32_MAX - _FAST_MAX_DELTA
    left = count - done
    while left > 0:
        n = min(left, _CHUNK_RECORDS)
        chunk: list[Record] = []
        while len(chunk) < n:
            if not wraps:
                try:
                    pos = _decode_fast(
                        chunk, buf, view, pos, n - len(chunk), base_offset, base_timestamp,
                        fixed_ts, base_sequence,
                    )  # fmt: skip
                    break
                except _CarefulFrom as slow:
                    pos = slow.pos
            try:
                record, pos = _decode_record(
                    buf, view, pos, base_offset, base_timestamp, base_sequence, anchor,
                    batch_pos, fixed_ts,
                )  # fmt: skip
            except FormatError:
                yield chunk
                raise
            chunk.append(record)
        yield chunk
        left -= n
    if pos != len(buf):
        raise _corrupt(
            f"Incorrect declared batch size, records still remaining in file "
            f"({len(buf) - pos} bytes after {count} records)",
            anchor,
            pos,
            batch_pos,
            "bad-record-count",
        )


class _CarefulFrom(Exception):
    """The fast loop met a record it does not handle: decode it carefully from ``pos``."""

    def __init__(self, pos: int):
        self.pos = pos


def _decode_fast(
    out: list[Record],
    buf: bytes | memoryview,
    view: memoryview | bytes,
    pos: int,
    n: int,
    base_offset: int,
    base_timestamp: int,
    fixed_ts: int | None,
    base_sequence: int,
) -> int:
    """The hot loop: appends ``n`` records to ``out`` and returns the new position. A
    LogAppendTime batch's records all have its ``fixed_ts``.

    One- and two-byte varints (nearly all of them) are decoded inline by table, longer ones by
    :func:`_slow_varint`; timestamp deltas test for those first, as after a delete horizon all
    of them are long. Anything unusual (a bad length, a sequence that wraps, the end of the
    buffer) raises :class:`_CarefulFrom` at the start of that record, and
    :func:`_decode_record` decodes it or says what is wrong."""
    z1 = _ZIGZAG1
    z2 = _ZIGZAG2
    slow = _slow_varint
    append = out.append
    make = make_record  # a record of all nine fields, without calling the class
    idempotent = base_sequence >= 0
    names: dict[bytes | memoryview, str] = {}  # header keys repeat: decode each once
    # Whole header blocks repeat too (a content type, a source): records with the same bytes
    # share one tuple, whose values view the first such record's bytes.
    blocks: dict[bytes | memoryview, tuple[Header, ...]] = {}
    # Or all but the last value repeats (a trace id last): the last block parsed, split there;
    # a block of the same length that starts with the same bytes parses the same up to there.
    same_start: bytes | memoryview = b""
    same_headers: tuple[Header, ...] = ()
    same_name = ""
    same_length = -1 if isinstance(buf, bytes) else -2  # only bytes have startswith
    for _ in range(n):
        start = pos
        try:
            b = buf[pos]
            if b < 0x80:
                length = z1[b]
                pos += 1
            else:
                try:
                    length = z2[buf[pos + 1]][b]
                    pos += 2
                except IndexError:  # a longer varint, or the end of the buffer
                    length, pos = slow(buf, pos, 5, None, 0)
            rec_end = pos + length
            attributes = buf[pos]
            b = buf[pos + 1]
            if b < 0x80:
                ts_delta = z1[b]
                pos += 2
            elif (b1 := buf[pos + 2]) < 0x80:
                ts_delta = z2[b1][b]
                pos += 3
            else:
                ts_delta, pos = slow(buf, pos + 1, 10, None, 0)
            b = buf[pos]
            if b < 0x80:
                off_delta = z1[b]
                pos += 1
            else:
                try:
                    off_delta = z2[buf[pos + 1]][b]
                    pos += 2
                except IndexError:  # a longer varint, or the end of the buffer
                    off_delta, pos = slow(buf, pos, 5, None, 0)
                    if base_sequence + off_delta > _INT32_MAX:
                        raise _CarefulFrom(start) from None
            b = buf[pos]
            if b < 0x80:
                klen = z1[b]
                pos += 1
            else:
                try:
                    klen = z2[buf[pos + 1]][b]
                    pos += 2
                except IndexError:  # a longer varint, or the end of the buffer
                    klen, pos = slow(buf, pos, 5, None, 0)
            if klen >= 0:
                end = pos + klen
                key = view[pos:end]
                pos = end
            elif klen == -1:
                key = None
            else:
                raise _CarefulFrom(start)
            b = buf[pos]
            if b < 0x80:
                vlen = z1[b]
                pos += 1
            else:
                try:
                    vlen = z2[buf[pos + 1]][b]
                    pos += 2
                except IndexError:  # a longer varint, or the end of the buffer
                    vlen, pos = slow(buf, pos, 5, None, 0)
            if vlen >= 0:
                end = pos + vlen
                value = view[pos:end]
                pos = end
            elif vlen == -1:
                value = None
            else:
                raise _CarefulFrom(start)
            if buf[pos] == 0:
                headers: tuple[Header, ...] = ()
                pos += 1
            else:
                raw = buf[pos:rec_end]
                cached = blocks.get(raw)
                if cached is not None:
                    headers = cached
                    pos += len(raw)  # not rec_end: a slice past the buffer's end is shorter
                elif len(raw) == same_length and buf.startswith(same_start, pos):  # type: ignore[union-attr]
                    pos += len(same_start)
                    headers = (*same_headers, (same_name, view[pos:rec_end]))
                    pos += len(raw) - len(same_start)
                else:
                    headers, pos = _fast_headers(buf, view, pos, names, start)
                    if pos == rec_end:
                        if len(blocks) < _MAX_HEADER_BLOCKS:
                            blocks[raw] = headers
                        name, last = headers[-1]
                        if last is not None and same_length != -2:
                            same_length = len(raw)
                            same_start = raw[: same_length - len(last)]
                            same_headers = headers[:-1]
                            same_name = name
        except (IndexError, TypeError, FormatError, ValueError):
            # (ValueError: a writable view cannot key the header caches; the careful decoder,
            # which has none, reads such a record)
            raise _CarefulFrom(start) from None
        # Slices past the end of the buffer are cut short, so a record whose lengths disagree
        # with its length field, or with the buffer, cannot end exactly at rec_end.
        if pos != rec_end:
            raise _CarefulFrom(start)
        append(
            make(
                base_offset + off_delta,
                base_timestamp + ts_delta if fixed_ts is None else fixed_ts,
                key,
                value,
                headers,
                base_sequence + off_delta if idempotent else -1,
                attributes,
                None,
                None,
            )
        )
    return pos


def _fast_headers(
    buf: bytes | memoryview,
    view: memoryview | bytes,
    pos: int,
    names: dict[bytes | memoryview, str],
    start: int,
) -> tuple[tuple[Header, ...], int]:
    """The headers of a record in the fast loop (1 to 63 of them, short lengths; anything
    else raises :class:`_CarefulFrom`); ``names`` caches decoded header keys."""
    z1 = _ZIGZAG1
    b = buf[pos]
    if b >= 0x80 or b & 1:  # a long or negative count: the careful path
        raise _CarefulFrom(start)
    pos += 1
    hl: list[Header] = []
    for _ in range(z1[b]):
        b = buf[pos]
        if b >= 0x80 or b & 1:  # a long or negative key length
            raise _CarefulFrom(start)
        end = pos + 1 + z1[b]
        raw = buf[pos + 1 : end]
        hkey = names.get(raw)
        if hkey is None:
            hkey = names[raw] = str(raw, "utf-8", "replace")
        b = buf[end]
        if b < 0x80:
            hvlen = z1[b]
            pos = end + 1
        else:
            hvlen = _ZIGZAG2[buf[end + 1]][b]
            pos = end + 2
        if hvlen >= 0:
            end = pos + hvlen
            hl.append((hkey, view[pos:end]))
            pos = end
        elif hvlen == -1:
            hl.append((hkey, None))
        else:
            raise _CarefulFrom(start)
    return tuple(hl), pos


def _decode_record(
    buf: bytes | memoryview,
    view: memoryview | bytes,
    pos: int,
    base_offset: int,
    base_timestamp: int,
    base_sequence: int,
    anchor: int | None,
    batch_pos: int,
    fixed_ts: int | None = None,
) -> tuple[Record, int]:
    """One record, every field checked as Kafka's ``DefaultRecord.readFrom`` checks it:
    returns (record fields, new position) or raises at the position of the record. A
    LogAppendTime batch's records all have its ``fixed_ts``."""
    start = pos
    try:
        length, pos = _slow_varint(buf, pos, 5, anchor, batch_pos)
        body = pos
        rec_end = pos + length
        if length < 0 or rec_end > len(buf):
            raise _corrupt(
                f"record length {length} runs past the end of the batch",
                anchor,
                start,
                batch_pos,
            )
        attributes = buf[pos]
        ts_delta, pos = _slow_varint(buf, pos + 1, 10, anchor, batch_pos)
        off_delta, pos = _slow_varint(buf, pos, 5, anchor, batch_pos)
        fields: list[memoryview | bytes | None] = []
        for what in ("key", "value"):
            size, pos = _slow_varint(buf, pos, 5, anchor, batch_pos)
            if size >= 0:
                if pos + size > rec_end:
                    raise _corrupt(
                        f"{what} length {size} runs past the record", anchor, start, batch_pos
                    )
                fields.append(view[pos : pos + size])
                pos += size
            elif size == -1:
                fields.append(None)
            else:
                raise _corrupt(f"invalid {what} length {size}", anchor, start, batch_pos)
        hcount, pos = _slow_varint(buf, pos, 5, anchor, batch_pos)
        headers, pos = _decode_headers(
            buf, view, pos, rec_end, hcount, batch_pos if anchor is None else anchor + start
        )
    except IndexError:
        raise TruncatedError(
            "record runs past the end of the batch",
            batch_pos if anchor is None else anchor + start,
            "corrupt-record",
        ) from None
    if pos != rec_end:
        raise _corrupt(
            f"Invalid record size: expected to read {length} bytes in record payload, "
            f"but instead read {pos - body}",
            anchor,
            start,
            batch_pos,
        )
    record = Record(
        base_offset + off_delta,
        base_timestamp + ts_delta if fixed_ts is None else fixed_ts,
        fields[0],
        fields[1],
        headers,
        sequence_at(base_sequence, off_delta),
        attributes,
    )
    return record, pos


def _corrupt(
    message: str, anchor: int | None, rel: int, batch_pos: int, code: str = "corrupt-record"
) -> CorruptRecordError:
    """An error at ``rel`` in the records area (or at the batch, for decompressed data)."""
    return CorruptRecordError(message, batch_pos if anchor is None else anchor + rel, code)


def _decode_headers(
    buf: bytes | memoryview,
    view: memoryview | bytes,
    pos: int,
    rec_end: int,
    hcount: int,
    where: int,
) -> tuple[tuple[Header, ...], int]:
    """``hcount`` headers from ``pos``, up to ``rec_end``; errors are reported at ``where``."""
    # Each header takes at least 2 bytes: reject counts that cannot fit before allocating.
    if hcount < 0 or hcount * 2 > rec_end - pos or rec_end > len(buf):
        raise CorruptRecordError(
            f"Found invalid number of record headers {hcount}", where, "corrupt-record"
        )
    headers: list[Header] = []
    for _ in range(hcount):
        hklen, pos = _slow_varint(buf, pos, 5, None, where)
        if hklen < 0 or pos + hklen > rec_end:
            raise CorruptRecordError(f"invalid header key length {hklen}", where, "corrupt-record")
        hkey = str(buf[pos : pos + hklen], "utf-8", "replace")
        pos += hklen
        hvlen, pos = _slow_varint(buf, pos, 5, None, where)
        if hvlen < 0:
            if hvlen != -1:
                raise CorruptRecordError(
                    f"invalid header value length {hvlen}", where, "corrupt-record"
                )
            hval = None
        else:
            if pos + hvlen > rec_end:
                raise CorruptRecordError(
                    f"header value length {hvlen} runs past the record", where, "corrupt-record"
                )
            hval = view[pos : pos + hvlen]
            pos += hvlen
        headers.append((hkey, hval))
    return tuple(headers), pos


# -- encoding -----------------------------------------------------------------------------------
def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | memoryview | None,
    value: bytes | memoryview | None,
    headers: Iterable[Header] = (),
    attributes: int = 0,
) -> bytes:
    parts = [
        bytes((attributes & 0xFF,)),
        encode_varlong(timestamp_delta),
        encode_varint(offset_delta),
    ]
    if key is None:
        parts.append(b"\x01")  # varint -1
    else:
        parts.append(encode_varint(len(key)))
        parts.append(bytes(key))
    if value is None:
        parts.append(b"\x01")
    else:
        parts.append(encode_varint(len(value)))
        parts.append(bytes(value))
    headers = tuple(headers)
    parts.append(encode_varint(len(headers)))
    for hkey, hval in headers:
        hk = hkey.encode("utf-8")
        parts.append(encode_varint(len(hk)))
        parts.append(hk)
        if hval is None:
            parts.append(b"\x01")
        else:
            parts.append(encode_varint(len(hval)))
            parts.append(bytes(hval))
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def encode_batch(
    records: Iterable[Record],
    *,
    base_offset: int | None = None,
    last_offset_delta: int | None = None,
    partition_leader_epoch: int = -1,
    compression: int = codecs.NONE,
    compression_level: int | None = None,
    timestamp_type: int = CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Build one v2 batch exactly as Kafka's ``MemoryRecordsBuilder`` lays it out.

    Records keep their absolute offsets (gaps allowed, as after compaction). ``base_offset``
    defaults to the first record's offset and ``last_offset_delta`` to the last record's delta
    (pass both for an empty batch, or to keep a compacted batch's original last offset).
    Timestamp deltas are relative to ``base_timestamp`` (default: the first record's timestamp,
    or ``delete_horizon_ms`` when given, which also sets the delete-horizon attribute bit).
    ``max_timestamp`` defaults to the largest record timestamp (CreateTime) and must be given
    for LogAppendTime.
    """
    # One pass over ``records`` (any iterable): each record is encoded as it comes, so a batch
    # of millions of tiny records costs its encoded size, not a Python object per record.
    it = iter(records)
    first = next(it, None)
    if first is None and (base_offset is None or last_offset_delta is None):
        raise ValueError("an empty batch needs an explicit base_offset and last_offset_delta")
    if base_offset is None:
        assert first is not None
        base_offset = first.offset
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    elif base_timestamp is None:
        base_timestamp = first.timestamp if first is not None else -1
    _check_header(timestamp_type, max_timestamp, compression)
    body = bytearray()
    count = 0
    largest: int | None = None
    largest_offset = -1
    last = first
    if first is not None:
        for r in chain((first,), it):
            try:
                body += encode_record(
                    r.offset - base_offset,
                    r.timestamp - base_timestamp,
                    r.key,
                    r.value,
                    r.headers,
                    r.attributes,
                )
            except UnencodableError:
                if -(1 << 63) <= r.timestamp - base_timestamp < 1 << 63:
                    raise
                raise UnencodableError(
                    f"the record at offset {r.offset} has timestamp {r.timestamp}, more than "
                    f"2^63 - 1 ms from its batch's base timestamp {base_timestamp} (Kafka's "
                    "encoder would wrap the difference around 64 bits)"
                ) from None
            count += 1
            if largest is None or r.timestamp > largest:
                largest = r.timestamp
                largest_offset = r.offset
            last = r
    if largest is not None and largest >= 1 << 63 and max_timestamp is None:
        raise UnencodableError(
            f"the record at offset {largest_offset} has timestamp {largest}, past 2^63 - 1 ms: "
            "its batch's max timestamp cannot hold it (Kafka's reader wraps it around 64 bits)"
        )
    if last_offset_delta is None:
        assert last is not None
        last_offset_delta = last.offset - base_offset
    return _finish_batch(
        body,
        count,
        largest,
        base_offset=base_offset,
        last_offset_delta=last_offset_delta,
        partition_leader_epoch=partition_leader_epoch,
        compression=compression,
        compression_level=compression_level,
        timestamp_type=timestamp_type,
        is_transactional=is_transactional,
        is_control=is_control,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        delete_horizon_ms=delete_horizon_ms,
    )


def _check_header(timestamp_type: int, max_timestamp: int | None, compression: int) -> None:
    if max_timestamp is None and timestamp_type == LOG_APPEND_TIME:
        raise ValueError("LogAppendTime batches need an explicit max_timestamp")
    if compression not in codecs.CODEC_NAMES:
        raise ValueError(f"unknown compression id {compression}")


def _finish_batch(
    body: bytearray,
    count: int,
    largest: int | None,
    *,
    base_offset: int,
    last_offset_delta: int,
    partition_leader_epoch: int,
    compression: int,
    compression_level: int | None,
    timestamp_type: int,
    is_transactional: bool,
    is_control: bool,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    base_timestamp: int,
    max_timestamp: int | None,
    delete_horizon_ms: int | None,
) -> bytes:
    """The batch around an encoded records area: compression, header, CRC (both engines)."""
    if max_timestamp is None:
        max_timestamp = -1 if largest is None else largest
    if compression != codecs.NONE:
        body = bytearray(
            codecs.compress(compression, memoryview(body), magic=MAGIC, level=compression_level)
        )
    attributes = compression
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG
    if is_control:
        attributes |= CONTROL_FLAG
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG
    length = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(body)
    out = bytearray(RECORD_BATCH_OVERHEAD)
    BATCH_HEADER.pack_into(
        out,
        0,
        base_offset,
        length,
        partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    out += body
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def reencode(
    batch: DefaultBatch,
    records: Iterable[Record] | None = None,
    *,
    keep: bytes | bytearray | None = None,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    **overrides: Any,
) -> bytes:
    """Rebuild ``batch`` keeping every header field but ``overrides``: with other ``records``,
    or its own (only those whose ``keep`` byte is not 0, one byte per record, when given).
    The native engine re-encodes a batch's own records without a Python object per record;
    both engines give the same bytes."""
    fields: dict[str, Any] = dict(
        base_offset=batch.base_offset,
        last_offset_delta=batch.last_offset_delta,
        partition_leader_epoch=batch.partition_leader_epoch,
        compression=batch.compression,
        timestamp_type=batch.timestamp_type,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        max_timestamp=batch.max_timestamp,
        delete_horizon_ms=batch.delete_horizon_ms,
    )
    if batch.delete_horizon_ms is None:
        fields["base_timestamp"] = batch.base_timestamp
    fields.update(overrides)
    if records is None:
        native = _reencode_native(batch, keep, max_batch_bytes, fields)
        if native is not None:
            return native
        records = batch.records(max_batch_bytes)
        if keep is not None:
            records = (r for r, k in zip(records, keep, strict=True) if k)
    try:
        return encode_batch(records, **fields)
    except UnencodableError as e:
        raise e.at(batch.position) from None


# encode_batch's keyword arguments (a test holds the two equal)
_ENCODE_FIELDS = frozenset(
    (
        "base_offset",
        "last_offset_delta",
        "partition_leader_epoch",
        "compression",
        "compression_level",
        "timestamp_type",
        "is_transactional",
        "is_control",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "base_timestamp",
        "max_timestamp",
        "delete_horizon_ms",
    )
)


def _reencode_native(
    batch: DefaultBatch,
    keep: bytes | bytearray | None,
    max_batch_bytes: int,
    fields: dict[str, Any],
) -> bytes | None:
    """:func:`reencode` of the batch's own records by the native engine, or None."""
    base_offset = fields["base_offset"]
    if base_offset is None or fields["last_offset_delta"] is None:
        return None  # set from the records: the Python encoder does that
    if not fields.keys() <= _ENCODE_FIELDS:
        return None  # encode_batch says what it does not know
    horizon = fields["delete_horizon_ms"]
    done = engine.reencode_v2(
        batch.data,
        max_batch_bytes,
        keep,
        base_offset,
        horizon if horizon is not None else fields.get("base_timestamp"),
        batch.position,
    )
    if done is None:
        return None
    area, count, largest, base_timestamp = done
    _check_header(fields["timestamp_type"], fields["max_timestamp"], fields["compression"])
    return _finish_batch(
        bytearray(area),
        count,
        largest,
        base_offset=base_offset,
        last_offset_delta=fields["last_offset_delta"],
        partition_leader_epoch=fields["partition_leader_epoch"],
        compression=fields["compression"],
        compression_level=fields.get("compression_level"),
        timestamp_type=fields["timestamp_type"],
        is_transactional=fields["is_transactional"],
        is_control=fields["is_control"],
        producer_id=fields["producer_id"],
        producer_epoch=fields["producer_epoch"],
        base_sequence=fields["base_sequence"],
        base_timestamp=-1 if base_timestamp is None else base_timestamp,
        max_timestamp=fields["max_timestamp"],
        delete_horizon_ms=horizon,
    )

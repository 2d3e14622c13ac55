"""``Batch.control_type()`` against control batches built here byte by byte (struct, zlib,
gzip and a CRC-32C written out below), not with klogtool's encoders: Kafka's
``ControlRecordType.parse`` reads the key of the batch's first record, ``version:int16`` +
``type:int16``."""

from __future__ import annotations

import gzip
import struct
import zlib

import pytest

from klogtool.formats.errors import FormatError
from klogtool.formats.legacy import LegacyBatch
from klogtool.formats.limits import DEFAULT_LIMITS, ReadLimits
from klogtool.formats.v2 import DefaultBatch
from klogtool.log.read.diff import _Compaction
from klogtool.log.rewrite.cleaner import _control_type as cleaner_control_type
from klogtool.log.txnreplay import end_marker


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)  # zig-zag
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def record(key: bytes | None, value: bytes | None, offset_delta: int = 0) -> bytes:
    def field(b: bytes | None) -> bytes:
        return varint(-1) if b is None else varint(len(b)) + b

    body = b"\x00" + varint(0) + varint(offset_delta) + field(key) + field(value) + varint(0)
    return varint(len(body)) + body


def v2_batch(
    records: list[bytes],
    *,
    control: bool = True,
    transactional: bool = True,
    codec: int = 0,
    base_offset: int = 40,
) -> DefaultBatch:
    attributes = codec | (0x10 if transactional else 0) | (0x20 if control else 0)
    area = b"".join(records)
    if codec == 1:
        area = gzip.compress(area)
    last_delta = max(len(records) - 1, 0)
    after_crc = (
        struct.pack(">hiqqqhii", attributes, last_delta, 1000, 1000, 7, 0, -1, len(records)) + area
    )
    body = struct.pack(">ibI", 0, 2, crc32c(after_crc)) + after_crc
    return DefaultBatch(memoryview(struct.pack(">qi", base_offset, len(body)) + body))


def control_key(type_id: int, version: int = 0) -> bytes:
    return struct.pack(">hh", version, type_id)


END_TXN_VALUE = struct.pack(">hi", 0, 3)  # EndTransactionMarker v0, coordinator epoch 3


def test_abort() -> None:
    batch = v2_batch([record(control_key(0), END_TXN_VALUE)])
    assert batch.control_type() == 0
    assert end_marker(batch, DEFAULT_LIMITS) is True
    assert _diff_abort_clears_keys(batch)


def test_commit() -> None:
    batch = v2_batch([record(control_key(1), END_TXN_VALUE)])
    assert batch.control_type() == 1
    assert end_marker(batch, DEFAULT_LIMITS) is False
    assert not _diff_abort_clears_keys(batch)


def test_commit_compressed() -> None:
    batch = v2_batch([record(control_key(1), END_TXN_VALUE)], codec=1)
    assert batch.control_type() == 1


def test_higher_key_version_is_read_as_v0() -> None:
    assert v2_batch([record(control_key(0, version=5), END_TXN_VALUE)]).control_type() == 0


def test_unknown_type_keeps_its_id() -> None:
    batch = v2_batch([record(control_key(99), b"whatever")])
    assert batch.control_type() == 99
    assert end_marker(batch, DEFAULT_LIMITS) is None
    assert cleaner_control_type(batch, ReadLimits(1 << 20)) == 99


def test_only_the_first_record_counts() -> None:
    batch = v2_batch([record(control_key(1), END_TXN_VALUE), record(control_key(0), b"", 1)])
    assert batch.control_type() == 1


@pytest.mark.parametrize(
    "key",
    [control_key(0)[:3], b"", None, control_key(0, version=-1)],
    ids=["short", "empty", "null", "negative-version"],
)
def test_invalid_key(key: bytes | None) -> None:
    batch = v2_batch([record(key, END_TXN_VALUE)])
    assert batch.control_type() is None
    assert end_marker(batch, DEFAULT_LIMITS) is None
    # the cleaner keeps such a marker, as Kafka's UNKNOWN: not None (None = an empty batch)
    assert cleaner_control_type(batch, ReadLimits(1 << 20)) == -1
    assert not _diff_abort_clears_keys(batch)  # an invalid key is no ABORT


def _diff_abort_clears_keys(batch: DefaultBatch) -> bool:
    """Whether ``diff``'s compaction check reads ``batch`` as the ABORT of producer 7's
    dropped transaction (whose keys it then no longer waits for)."""
    compaction = _Compaction(ReadLimits(1 << 20))
    compaction.pending_keys[b"k"] = 10
    compaction.pending_txns[7] = (10, [b"k"])
    compaction.see(batch)
    return not compaction.pending_keys


def test_empty_control_batch() -> None:
    batch = v2_batch([])
    assert batch.is_control
    assert batch.control_type() is None
    assert end_marker(batch, DEFAULT_LIMITS) is None
    assert cleaner_control_type(batch, ReadLimits(1 << 20)) is None
    assert not _diff_abort_clears_keys(batch)


def test_not_a_control_batch() -> None:
    # a transactional data batch whose record looks like an ABORT marker
    batch = v2_batch([record(control_key(0), END_TXN_VALUE)], control=False)
    assert not batch.is_control
    assert batch.control_type() is None


def test_legacy_batch() -> None:
    for magic in (0, 1):
        timestamp = struct.pack(">q", 1000) if magic == 1 else b""
        after_crc = (
            struct.pack(">bb", magic, 0)
            + timestamp
            + struct.pack(">i", 4)
            + control_key(0)
            + struct.pack(">i", 6)
            + END_TXN_VALUE
        )
        message = struct.pack(">I", zlib.crc32(after_crc)) + after_crc
        batch = LegacyBatch(memoryview(struct.pack(">qi", 5, len(message)) + message))
        assert batch.magic == magic
        assert not batch.is_control
        assert batch.control_type() is None


def test_read_errors_are_raised() -> None:
    raw = v2_batch([record(control_key(0), END_TXN_VALUE)], codec=1)
    data = bytearray(raw.data)
    data[61:] = b"\x1f\x8b" + b"\x00" * (len(data) - 63)  # a gzip stream that is not one
    broken = DefaultBatch(memoryview(bytes(data)))
    with pytest.raises(FormatError):
        broken.control_type()
    assert end_marker(broken, DEFAULT_LIMITS) is None  # the replay reads no marker there
    with pytest.raises(FormatError):
        cleaner_control_type(broken, ReadLimits(1 << 20))


def test_max_batch_bytes() -> None:
    batch = v2_batch([record(control_key(0), END_TXN_VALUE)], codec=1)
    with pytest.raises(FormatError):
        batch.control_type(max_batch_bytes=4)
    assert end_marker(batch, ReadLimits(4)) is None
    assert batch.control_type(max_batch_bytes=1 << 20) == 0

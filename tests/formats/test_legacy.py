"""Message formats v0 and v1 (plain messages and compressed wrappers) against kafka-python.

kafka-python's ``LegacyRecordBatchBuilder`` is a *producer*: it writes a compressed wrapper at
offset 0 with timestamp 0 and leaves offset assignment to the broker. Tests therefore read its
output both as produced and after the broker's in-place offset assignment (the wrapper's
offset field is outside the CRC, docs/kafka-rules.md: Record formats), which is what lands in a
segment.
"""

from __future__ import annotations

import struct
import zlib
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.codec import gzip_decode, lz4_decode, lz4_decode_old_kafka, snappy_decode
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
from support.fuzz import fuzz
from support.records import norm_record

from klogtool.formats import codecs, engine, legacy
from klogtool.formats.batch import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE, Record
from klogtool.formats.errors import CorruptRecordError, FormatError, UnsupportedError
from klogtool.formats.records import CLEAN, SegmentScanner, read_batch


@pytest.fixture(autouse=True, params=["fast", "careful"])
def inner_reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: wrappers read by the fast inner loop, and by the careful walk it
    hands unusual message sets to (which must read what the fast loop reads)."""
    if request.param == "careful":
        monkeypatch.setattr(legacy, "_plain_walk", lambda *args, **kwargs: None)
        monkeypatch.setattr(engine, "legacy_scan", lambda *args, **kwargs: None)
    return str(request.param)


LEGACY_CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4]
WRAPPER_CODECS = LEGACY_CODECS[1:]
IDS = [codecs.CODEC_NAMES[c] for c in LEGACY_CODECS]
WIDS = IDS[1:]
T0 = 1_500_000_000_000
KP_DECODE = {
    codecs.GZIP: gzip_decode,
    codecs.SNAPPY: snappy_decode,
    codecs.LZ4: lz4_decode,
}


# -- helpers ------------------------------------------------------------------------------------
def rows(n: int = 20, *, start: int = 0, gaps: bool = True, repeat: int = 1) -> list[tuple]:
    """``(offset, timestamp, key, value)``: null keys, null and empty values, offset gaps,
    a timestamp going backwards; values compress well."""
    out = []
    off = start
    for i in range(n):
        key = None if i % 4 == 0 else b"key%d" % (i % 5)
        value = None if i % 6 == 2 else b"" if i % 6 == 3 else (b"val %05d ~~~~~ " % i) * repeat
        out.append((off, T0 + 11 * i - (99 if i == 5 else 0), key, value))
        off += 2 if gaps and i % 5 == 4 else 1
    return out


def kp_build(magic: int, codec: int, data: list[tuple]) -> bytearray:
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for off, ts, key, value in data:
        assert b.append(off, timestamp=ts, key=key, value=value) is not None
    return bytearray(b.build())


def set_offset(buf: bytearray, offset: int) -> bytearray:
    """The broker's in-place offset assignment: the offset field is not covered by the CRC."""
    struct.pack_into(">q", buf, 0, offset)
    return buf


def flip_to_log_append_time(buf: bytearray, append_time: int) -> bytearray:
    """The broker's in-place v1 LogAppendTime: wrapper attributes + timestamp + CRC only."""
    buf[17] |= 0x08
    struct.pack_into(">q", buf, 18, append_time)
    struct.pack_into(">I", buf, 12, zlib.crc32(bytes(buf[16:])) & 0xFFFFFFFF)
    return buf


def scan(buf: bytes) -> list[legacy.LegacyBatch]:
    scanner = SegmentScanner(buf)
    batches = list(scanner)
    assert scanner.result.end == CLEAN and scanner.result.error is None, scanner.result
    assert all(isinstance(b, legacy.LegacyBatch) for b in batches)
    return batches


def ours(buf: bytes) -> list[tuple]:
    return [norm_record(r) for b in scan(buf) for r in b.records()]


def kp_norm(r) -> tuple:
    off, ts, key, value, headers = norm_record(r)
    return (off, -1 if ts is None else ts, key, value, headers)


def theirs(buf: bytes) -> list[tuple]:
    """kafka-python's reading, with every wrapper and inner CRC validated."""
    mr = MemoryRecords(bytes(buf))
    out = []
    while mr.has_next():
        batch = mr.next_batch()
        assert isinstance(batch, LegacyRecordBatch)
        assert batch.validate_crc()
        for r in batch:
            assert r.validate_crc()
            out.append(kp_norm(r))
    assert mr.valid_bytes() == len(buf)
    return out


def expect(data: list[tuple], magic: int, *, shift: int = 0, ts: int | None = None) -> list:
    return [
        (off + shift, -1 if magic == 0 else ts if ts is not None else t, k, v, ())
        for off, t, k, v in data
    ]


def inner_entries(wrapper: bytes) -> list:
    """Decompress a wrapper's value with kafka-python's codecs and parse the inner message set
    with kafka-python's MemoryRecords: ``[(offset, timestamp, attributes, crc_ok)]``."""
    (batch,) = scan(wrapper)
    value = bytes(batch.value)
    codec = batch.compression
    if codec == codecs.LZ4 and batch.magic == 0:
        raw = lz4_decode_old_kafka(value)
    else:
        raw = KP_DECODE[codec](value)
    out = []
    mr = MemoryRecords(raw)
    while mr.has_next():
        inner = mr.next_batch()
        (rec,) = list(inner)
        out.append((rec.offset, rec.timestamp, inner.compression_type, rec.validate_crc()))
    return out


def as_records(data: list[tuple]) -> list[Record]:
    return [Record(off, ts, k, v) for off, ts, k, v in data]


# -- seed facts -----------------------------------------------------------------------------------
def test_seed_v0_message():
    buf = legacy.encode_message(0, b"key", b"value", magic=0)
    assert len(buf) == 34
    assert struct.unpack_from(">I", buf, 12)[0] == 592888119
    assert buf == bytes(kp_build(0, codecs.NONE, [(0, None, b"key", b"value")]))
    (batch,) = scan(buf)
    assert batch.crc == 592888119 and batch.crc_valid
    assert batch.size == 34 and batch.timestamp_type == NO_TIMESTAMP_TYPE
    (rec,) = batch.records()
    assert norm_record(rec) == (0, -1, b"key", b"value", ())
    assert rec.crc == 592888119 and rec.crc_valid


def test_seed_v1_message():
    buf = legacy.encode_message(0, b"key", b"value", magic=1, timestamp=T0)
    assert len(buf) == 42
    assert buf == bytes(kp_build(1, codecs.NONE, [(0, T0, b"key", b"value")]))
    (batch,) = scan(buf)
    assert batch.timestamp_type == CREATE_TIME and batch.max_timestamp == T0


# -- kafka-python writes, klogtool reads --------------------------------------------------------
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_uncompressed_message_set(magic):
    data = rows(start=1000)
    buf = bytes(kp_build(magic, codecs.NONE, data))
    batches = scan(buf)
    assert len(batches) == len(data)
    for b, (off, t, _k, _v) in zip(batches, data, strict=True):
        assert b.magic == magic and b.compression == codecs.NONE and b.crc_valid
        assert b.base_offset == b.last_offset == off and b.count == 1
        assert b.timestamp_type == (NO_TIMESTAMP_TYPE if magic == 0 else CREATE_TIME)
        assert b.max_timestamp == (-1 if magic == 0 else t)
        assert (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)
        assert b.partition_leader_epoch == -1 and not b.is_transactional and not b.is_control
    assert ours(buf) == expect(data, magic) == theirs(buf)


@pytest.mark.parametrize("codec", WRAPPER_CODECS, ids=WIDS)
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_wrapper_as_produced(magic, codec):
    # v1: inner offsets relative 0..n-1 (with gaps), wrapper offset 0 -> the librdkafka rule
    # (base 0) applies; v0: inner offsets absolute.
    data = rows(start=0 if magic == 1 else 300)
    buf = bytes(kp_build(magic, codec, data))
    (batch,) = scan(buf)
    assert batch.compression == codec and batch.crc_valid and batch.last_offset == 0
    # kafka-python quirk: its wrapper carries timestamp 0, where Kafka's producer writes the
    # max inner timestamp (docs/kafka-rules.md: Record formats). Record timestamps come from the
    # inner messages.
    assert batch.max_timestamp == (-1 if magic == 0 else 0)
    assert ours(buf) == expect(data, magic) == theirs(buf)


@pytest.mark.parametrize("codec", WRAPPER_CODECS, ids=WIDS)
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_wrapper_after_broker_offset_assignment(magic, codec):
    base = 7_000_000
    data = rows()
    if magic == 0:  # absolute inner offsets
        data = [(base + off, *rest) for off, *rest in data]
        buf = bytes(set_offset(kp_build(0, codec, data), data[-1][0]))
        want = expect(data, 0)
    else:  # relative inner offsets; wrapper = absolute offset of the last inner message
        buf = bytes(set_offset(kp_build(1, codec, data), base + data[-1][0]))
        want = expect(data, 1, shift=base)
    (batch,) = scan(buf)
    assert batch.crc_valid
    assert batch.last_offset == want[-1][0] and batch.base_offset == want[0][0]
    assert batch.count == len(data)
    assert ours(buf) == want == theirs(buf)
    assert all(r.crc_valid for r in batch.records())


@pytest.mark.parametrize("codec", WRAPPER_CODECS, ids=WIDS)
def test_kafka_python_v1_wrapper_flipped_to_log_append_time(codec):
    data = rows(8)
    buf = bytes(flip_to_log_append_time(set_offset(kp_build(1, codec, data), 50), T0 + 5000))
    (batch,) = scan(buf)
    assert batch.crc_valid and batch.timestamp_type == LOG_APPEND_TIME
    assert batch.max_timestamp == T0 + 5000
    want = expect(data, 1, shift=50 - data[-1][0], ts=T0 + 5000)
    assert ours(buf) == want == theirs(buf)


@pytest.mark.parametrize("codec", WRAPPER_CODECS, ids=WIDS)
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_large_wrapper(magic, codec):
    data = [(i, T0 + i, None, (b"%06d:" % i) * 40) for i in range(600)]  # ~150 KiB inner
    buf = bytes(set_offset(kp_build(magic, codec, data), 599))
    (batch,) = scan(buf)
    assert batch.compression == codec and batch.crc_valid
    assert ours(buf) == expect(data, magic) == theirs(buf)


def test_kafka_python_lz4_headers():
    # kafka-python's magic-0 lz4 keeps the KAFKA-3160 header checksum (over magic+FLG+BD), as
    # Kafka does: 04 22 4D 18 60 40 1A. For magic >= 1 it uses lz4.frame with a content-size
    # field (FLG 0x68), which Kafka itself never writes (0x60) but its reader skips.
    data = rows(5)
    (b0,) = scan(bytes(kp_build(0, codecs.LZ4, data)))
    assert bytes(b0.value[:7]) == bytes.fromhex("04224d1860401a")
    (b1,) = scan(bytes(kp_build(1, codecs.LZ4, data)))
    assert bytes(b1.value[:6]) == bytes.fromhex("04224d186840")


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=IDS)
@pytest.mark.parametrize("magic", [0, 1])
def test_memory_records_builder(magic, codec):
    b = MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=1 << 30, offset=40)
    data = []
    for i in range(30):
        if i % 7 == 6:
            b.skip(3)
        off = b.next_offset()
        assert b.append(T0 + i, None if i % 3 else b"k", b"abc abc abc %d" % i) is not None
        data.append((off, T0 + i, None if i % 3 else b"k", b"abc abc abc %d" % i))
    b.close()
    buf = bytearray(b.buffer())
    if codec != codecs.NONE:
        # inner offsets are what MemoryRecordsBuilder assigned (absolute 40..); for v1 the
        # broker would have written relative ones -- read it as produced, wrapper offset 0
        # (v0: absolute inner offsets; v1: wrapper 0 means "no shift")
        (batch,) = scan(bytes(buf))
        assert batch.compression == codec
    assert ours(bytes(buf)) == expect(data, magic) == theirs(bytes(buf))


# -- klogtool writes, kafka-python reads --------------------------------------------------------
@pytest.mark.parametrize("magic", [0, 1])
def test_klogtool_messages_in_kafka_python(magic):
    data = rows(start=10)
    buf = b"".join(
        legacy.encode_message(off, k, v, magic=magic, timestamp=t) for off, t, k, v in data
    )
    assert theirs(buf) == expect(data, magic) == ours(buf)
    assert buf == bytes(kp_build(magic, codecs.NONE, data))  # byte for byte


def test_klogtool_v1_log_append_time_message():
    buf = legacy.encode_message(
        3, b"k", b"v", magic=1, timestamp=T0, timestamp_type=LOG_APPEND_TIME
    )
    (batch,) = scan(buf)
    assert batch.timestamp_type == LOG_APPEND_TIME
    mr = MemoryRecords(buf)
    kb = mr.next_batch()
    assert kb.validate_crc() and kb.timestamp_type == LOG_APPEND_TIME
    assert [kp_norm(r) for r in kb] == [(3, T0, b"k", b"v", ())]


@pytest.mark.parametrize("codec", WRAPPER_CODECS, ids=WIDS)
@pytest.mark.parametrize("magic", [0, 1])
def test_klogtool_wrapper_in_kafka_python(magic, codec):
    data = rows(start=900_000)  # gaps included: v1 relative offsets keep them
    buf = legacy.encode_wrapper(as_records(data), magic=magic, compression=codec)
    (batch,) = scan(buf)
    assert batch.last_offset == data[-1][0] and batch.base_offset == data[0][0]
    # wrapper timestamp: max inner timestamp (CreateTime), -1 for v0
    assert batch.max_timestamp == (-1 if magic == 0 else max(t for _, t, _, _ in data))
    assert theirs(buf) == expect(data, magic) == ours(buf)
    inner = inner_entries(buf)
    if magic == 0:  # absolute inner offsets, no timestamps
        assert [o for o, *_ in inner] == [d[0] for d in data]
        assert all(t is None for _, t, _, _ in inner)
    else:  # relative to the first record, each record keeps its own timestamp
        assert [o for o, *_ in inner] == [d[0] - data[0][0] for d in data]
        assert [t for _, t, _, _ in inner] == [d[1] for d in data]
    assert all(attrs == 0 and ok for _, _, attrs, ok in inner)
    if codec == codecs.LZ4:
        header = "04224d1860401a" if magic == 0 else "04224d18604082"
        assert bytes(batch.value[:7]) == bytes.fromhex(header)


@pytest.mark.parametrize("codec", WRAPPER_CODECS, ids=WIDS)
def test_klogtool_v1_log_append_time_wrapper(codec):
    data = rows(9, start=77)
    buf = legacy.encode_wrapper(
        as_records(data),
        magic=1,
        compression=codec,
        timestamp_type=LOG_APPEND_TIME,
        log_append_time=T0 + 42,
    )
    (batch,) = scan(buf)
    assert batch.timestamp_type == LOG_APPEND_TIME and batch.max_timestamp == T0 + 42
    assert theirs(buf) == expect(data, 1, ts=T0 + 42) == ours(buf)
    # Kafka's builder writes the append time into every inner record too
    # (docs/kafka-rules.md, Record formats)
    assert [t for _, t, _, _ in inner_entries(buf)] == [T0 + 42] * len(data)


@pytest.mark.parametrize("codec", WRAPPER_CODECS, ids=WIDS)
@pytest.mark.parametrize("magic", [0, 1])
def test_klogtool_large_wrapper_in_kafka_python(magic, codec):
    data = [(i, T0 + i, b"%d" % i, (b"%07d|" % i) * 25) for i in range(700)]
    buf = legacy.encode_wrapper(as_records(data), magic=magic, compression=codec)
    assert theirs(buf) == expect(data, magic) == ours(buf)


@pytest.mark.parametrize("log_append", [False, True])
def test_wrapper_larger_than_a_chunk(log_append):
    # 2,500 inner messages: records are made 1,024 at a time, the first chunk while the set is
    # checked; inner offsets are relative (the wrapper's is 12,499) and the append time
    # replaces each record's own
    n = 2 * legacy._CHUNK_RECORDS + 452
    data = [(10_000 + i, T0 + i, b"k%d" % i, b"value-%d" % i) for i in range(n)]
    buf = legacy.encode_wrapper(
        as_records(data),
        magic=1,
        compression=codecs.GZIP,
        timestamp_type=LOG_APPEND_TIME if log_append else CREATE_TIME,
        log_append_time=T0 + 7,
    )
    want = expect(data, 1, ts=T0 + 7 if log_append else None)
    (batch,) = scan(buf)
    first = [norm_record(r) for r in batch.records()]
    again = list(batch.records())  # unpacked already: every record made in chunks
    assert first == want == [norm_record(r) for r in again] == theirs(buf)
    (fresh,) = scan(buf)
    assert fresh.count == n  # count() unpacks without making records; records() then makes all
    assert [norm_record(r) for r in fresh.records()] == want
    assert all(r.crc_valid for r in again)
    third = list(batch.records())
    assert third == again and not any(a is b for a, b in zip(again, third, strict=True))


@pytest.mark.parametrize("codec", WRAPPER_CODECS, ids=WIDS)
def test_inner_crc_checked_when_asked(codec):
    inner = bytearray(
        b"".join(
            legacy.encode_message(i, None, b"value-%d" % i, magic=1, timestamp=T0) for i in range(3)
        )
    )
    inner[len(inner) // 3 + 12] ^= 0xFF  # the second message's stored CRC
    value = codecs.compress(codec, memoryview(bytes(inner)), magic=1)
    buf = legacy.encode_message(2, None, value, magic=1, timestamp=T0, compression=codec)
    (batch,) = scan(buf)
    records = list(batch.records())
    assert [r.crc_valid for r in records] == [True, False, True]
    assert [r.value for r in records] == [b"value-0", b"value-1", b"value-2"]
    changed = records[0]._replace(crc_valid=False)  # a field like any other
    assert changed.crc_valid is False and changed._asdict()["crc_valid"] is False
    assert records[0].crc_valid is True


def test_a_shift_past_64_bits_is_read_in_python():
    # negative inner offsets under a wrapper at the largest offset: the shift does not fit in
    # 64 bits (the native engine takes 64-bit integers), the records' offsets do
    top = (1 << 63) - 1
    inner = b"".join(
        legacy.encode_message(rel, None, b"v%d" % rel, magic=1, timestamp=T0) for rel in (-6, -5)
    )
    value = codecs.compress(codecs.GZIP, inner, magic=1)
    buf = legacy.encode_message(top, None, value, magic=1, timestamp=T0, compression=codecs.GZIP)
    (batch,) = scan(buf)
    assert [(r.offset, r.value) for r in batch.records()] == [(top - 1, b"v-6"), (top, b"v-5")]
    _left_to_python(batch)


def test_a_negative_magic_is_read_in_python():
    # the python engine reads a magic byte of 0xFF as a v0 message; the native engine takes
    # magic 0 and 1 only (it raised OverflowError: found by bench/fuzz.py, seed 1128)
    buf = bytearray(legacy.encode_message(7, b"k", b"v", magic=0))
    buf[16] = 0xFF
    struct.pack_into(">I", buf, 12, zlib.crc32(bytes(buf[16:])))
    batch = read_batch(memoryview(bytes(buf)), 0)  # the scanner stops at such a magic
    assert batch.magic == -1
    assert [(r.offset, bytes(r.key), bytes(r.value)) for r in batch.records()] == [(7, b"k", b"v")]
    _left_to_python(batch)


def _left_to_python(batch: legacy.LegacyBatch) -> None:
    """The native engine answers None (read it in Python) for every use of ``batch``, and the
    engines agree on its records, lines and columns."""
    source = batch.native_input()  # None under the careful walk alone
    assert source is None or engine.records_legacy(source[0], source[1], "test") is None
    stats: Counter = Counter()
    fuzz.compare_engines(batch, stats)
    assert stats["legacy-agreed"] == 1, stats


def test_zstd_is_not_a_legacy_codec():
    with pytest.raises(UnsupportedError):
        legacy.encode_wrapper([Record(0, T0, None, b"x")], magic=1, compression=codecs.ZSTD)


# -- the v1 relative-offset rules ------------------------------------------------------------
def _v1_wrapper_at(wrapper_offset: int, rel: list[int], codec: int = codecs.GZIP) -> bytes:
    data = [(o, T0 + o, None, b"v%d" % o) for o in rel]
    return bytes(set_offset(kp_build(1, codec, data), wrapper_offset))


def test_v1_wrapper_at_offset_zero_is_base_zero():
    buf = _v1_wrapper_at(0, [0, 1, 4, 5])
    assert [r[0] for r in ours(buf)] == [0, 1, 4, 5]
    assert [r[0] for r in theirs(buf)] == [0, 1, 4, 5]


def test_v1_wrapper_offset_below_last_inner_is_an_error():
    buf = _v1_wrapper_at(3, [0, 1, 4, 5])
    (batch,) = scan(buf)  # framing and CRC are fine ...
    with pytest.raises(CorruptRecordError) as ei:
        list(batch.records())  # ... the offsets are not (InvalidRecordException in Kafka)
    assert ei.value.position == 0
    # kafka-python quirk: a negative computed base is silently ignored and the relative
    # offsets are returned as absolute ones
    assert [r[0] for r in theirs(buf)] == [0, 1, 4, 5]


def test_v1_wrapper_with_v0_inner_messages_uses_wrapper_magic():
    # KAFKA-4298: inner magic need not match; the relative-offset rule follows the wrapper
    inner = b"".join(legacy.encode_message(o, None, b"x%d" % o, magic=0) for o in (0, 1, 2))
    value = codecs.compress(codecs.GZIP, inner, magic=1)
    buf = legacy.encode_message(102, None, value, magic=1, timestamp=T0, compression=codecs.GZIP)
    (batch,) = scan(buf)
    recs = list(batch.records())
    assert [r.offset for r in recs] == [100, 101, 102]
    assert [r.timestamp for r in recs] == [-1, -1, -1]  # v0 inner messages carry none


# -- structural errors --------------------------------------------------------------------------
def _wrapper_with(inner: bytes, *, magic: int = 1, codec: int = codecs.GZIP, value=...) -> bytes:
    """A wrapper whose attributes say ``codec`` around ``inner`` (gzip-compressed when
    ``codec`` is not a legacy codec) or around the given raw ``value``; CRC valid."""
    if value is ...:
        real = codec if codec in WRAPPER_CODECS else codecs.GZIP
        value = codecs.compress(real, inner, magic=magic)
    buf = bytearray(legacy.encode_message(5, None, value, magic=magic, timestamp=T0))
    buf[17] |= codec
    struct.pack_into(">I", buf, 12, zlib.crc32(bytes(buf[16:])) & 0xFFFFFFFF)
    return bytes(buf)


def _msgs(n: int, **kw) -> bytes:
    return b"".join(
        legacy.encode_message(i, None, b"v", magic=1, timestamp=T0, **kw) for i in range(n)
    )


@pytest.mark.parametrize(
    "buf, exc",
    [
        (_wrapper_with(_msgs(2), value=None), CorruptRecordError),  # null wrapper value
        (_wrapper_with(b""), CorruptRecordError),  # no inner messages
        (_wrapper_with(_msgs(2, compression=codecs.GZIP)), CorruptRecordError),  # nested
        (_wrapper_with(_msgs(2) + b"\0\0\0"), CorruptRecordError),  # junk after inner set
        (_wrapper_with(_msgs(2)[:-1]), CorruptRecordError),  # inner message cut short
        (_wrapper_with(_msgs(2), codec=codecs.ZSTD), UnsupportedError),
        (_wrapper_with(_msgs(2), codec=5), UnsupportedError),
        (_wrapper_with(_msgs(2), codec=7, magic=0), UnsupportedError),
        (_wrapper_with(b"", value=b"\x1f\x8b\x08garbage"), FormatError),
    ],
    ids=["null-value", "empty", "nested", "junk", "cut", "zstd", "codec5", "codec7", "bad-gzip"],
)
def test_bad_wrappers(buf, exc):
    (batch,) = scan(buf)
    assert batch.crc_valid
    with pytest.raises(exc):
        list(batch.records())


@pytest.mark.parametrize("magic", [0, 1])
def test_bad_messages(magic):
    good = bytearray(legacy.encode_message(0, b"k", b"v", magic=magic, timestamp=T0))
    key_len_pos = 18 if magic == 0 else 26
    for patch, value in [(key_len_pos, -2), (key_len_pos, 100), (len(good) - 5, 2)]:
        buf = bytearray(good)
        struct.pack_into(">i", buf, patch, value)
        with pytest.raises(CorruptRecordError) as ei:
            legacy.LegacyBatch(memoryview(bytes(buf)), 4096)
        assert ei.value.position == 4096
    with pytest.raises(CorruptRecordError):  # smaller than the record overhead
        legacy.LegacyBatch(memoryview(bytes(good[:25])))
    if magic == 1:  # a v1 header needs 22 bytes
        short = bytearray(legacy.encode_message(0, None, None, magic=0))
        short[16] = 1
        with pytest.raises(CorruptRecordError):
            legacy.LegacyBatch(memoryview(bytes(short)))


# -- hypothesis round trips -------------------------------------------------------------------
payload = st.one_of(st.none(), st.binary(max_size=30))


@st.composite
def legacy_cases(draw):
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.sampled_from(LEGACY_CODECS))
    n = draw(st.integers(1, 10))
    off = draw(st.integers(0, 2**60))
    recs = []
    for _ in range(n):
        recs.append(Record(off, draw(st.integers(-1, 2**50)), draw(payload), draw(payload)))
        off += draw(st.sampled_from([1, 1, 2, 1000]))
    ts_type = draw(st.sampled_from([CREATE_TIME, LOG_APPEND_TIME])) if magic == 1 else CREATE_TIME
    append_time = draw(st.integers(0, 2**50))
    return magic, codec, recs, ts_type, append_time


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(legacy_cases())
def test_random_legacy_round_trip(case):
    magic, codec, recs, ts_type, append_time = case
    log_append = ts_type == LOG_APPEND_TIME
    if codec == codecs.NONE:
        buf = b"".join(
            legacy.encode_message(
                r.offset,
                r.key,
                r.value,
                magic=magic,
                timestamp=append_time if log_append else r.timestamp,
                timestamp_type=ts_type,
            )
            for r in recs
        )
    else:
        buf = legacy.encode_wrapper(
            recs,
            magic=magic,
            compression=codec,
            timestamp_type=ts_type,
            log_append_time=append_time,
        )
    want = [
        (
            r.offset,
            -1 if magic == 0 else append_time if log_append else r.timestamp,
            r.key,
            r.value,
            (),
        )
        for r in recs
    ]
    batches = scan(buf)
    assert all(b.crc_valid and b.magic == magic for b in batches)
    assert ours(buf) == want
    assert theirs(buf) == want
    want_type = NO_TIMESTAMP_TYPE if magic == 0 else ts_type
    assert all(b.timestamp_type == want_type for b in batches)
    assert all(r.crc_valid for b in batches for r in b.records())


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=8, unique=True).map(sorted),
    st.integers(0, 2**40),
)
def test_random_v1_wrapper_offsets(rel, wrapper_offset):
    buf = _v1_wrapper_at(wrapper_offset, rel, codecs.SNAPPY)
    (batch,) = scan(buf)
    if wrapper_offset == 0:
        assert [r.offset for r in batch.records()] == rel
    elif wrapper_offset < rel[-1]:
        with pytest.raises(CorruptRecordError):
            list(batch.records())
    else:
        base = wrapper_offset - rel[-1]
        assert [r.offset for r in batch.records()] == [base + o for o in rel]
        assert [r[0] for r in theirs(buf)] == [base + o for o in rel]

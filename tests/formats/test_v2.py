"""Message format v2 (record batches) and Kafka's varints, proved against independent references.

The reference implementation is kafka-python (``kafka.record``), which is an independent code
base: batches it builds must read identically in klogtool, and batches klogtool builds must
read identically (CRC included) in kafka-python. Where kafka-python is not what a real broker
writes, the test says so and follows the broker (docs/kafka-rules.md) instead.
"""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
from support.records import careful_records, full_record, norm_record

from klogtool.formats import codecs, engine, v2, varint
from klogtool.formats.batch import CREATE_TIME, LOG_APPEND_TIME, Record
from klogtool.formats.errors import (
    CorruptRecordError,
    FormatError,
    TruncatedError,
    UnencodableError,
)
from klogtool.formats.records import CLEAN, SegmentScanner

V2_CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]
CODEC_IDS = [codecs.CODEC_NAMES[c] for c in V2_CODECS]
T0 = 1_700_000_000_000
INT32_MAX = 2**31 - 1


# -- helpers ------------------------------------------------------------------------------------
def sample(n: int = 24, *, value_repeat: int = 1) -> list[tuple]:
    """``(offset_delta, timestamp, key, value, headers)`` rows covering null keys, null and empty
    values, headers (incl. a null header value and non-ASCII keys), offset gaps (compaction)
    and a timestamp that goes backwards. Values compress well, so kafka-python really
    compresses (it falls back to an uncompressed batch when compression does not help)."""
    rows = []
    delta = 0
    for i in range(n):
        key = None if i % 5 == 0 else b"key-%d" % (i % 7)
        if i % 7 == 3:
            value = None
        elif i % 7 == 4:
            value = b""
        else:
            value = (b"value-%06d|abcabcabc|" % i) * (1 + i % 4) * value_repeat
        headers = (
            []
            if i % 3
            else [("h1", b"x"), ("empty", b""), ("null", None), ("\u00fcn\u00ef", b"\x00\xff")]
        )
        ts = T0 + 37 * i - (500 if i == 3 else 0)
        rows.append((delta, ts, key, value, headers))
        delta += 1 if i % 4 else 3
    return rows


def kp_build(
    codec: int, rows: list[tuple], *, pid: int = -1, epoch: int = -1, seq: int = -1, tx=False
) -> bytearray:
    """A batch built by kafka-python's producer-side builder (base offset 0, as produced)."""
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=tx,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=1 << 30,
    )
    for delta, ts, key, value, headers in rows:
        assert b.append(delta, timestamp=ts, key=key, value=value, headers=headers) is not None
    return bytearray(b.build())


def broker_assign(buf: bytearray, base_offset: int, leader_epoch: int) -> bytearray:
    """What the broker does on append: rewrite baseOffset and partitionLeaderEpoch in place,
    neither of which the CRC covers (docs/kafka-rules.md: Record formats)."""
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    return buf


def broker_log_append_time(buf: bytearray, append_time: int) -> bytearray:
    """DefaultRecordBatch.setMaxTimestamp(LOG_APPEND_TIME, t): set attribute bit 3, write the
    max timestamp, recompute the CRC (records and their deltas are left alone)."""
    buf[22] |= 0x08
    struct.pack_into(">q", buf, 35, append_time)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return buf


def only_batch(buf: bytes) -> v2.DefaultBatch:
    scanner = SegmentScanner(buf)
    batches = list(scanner)
    assert scanner.result.end == CLEAN and scanner.result.error is None
    assert len(batches) == 1 and isinstance(batches[0], v2.DefaultBatch)
    return batches[0]


def kp_batches(buf: bytes) -> list[DefaultRecordBatch]:
    mr = MemoryRecords(bytes(buf))
    out = []
    while mr.has_next():
        out.append(mr.next_batch())
    assert mr.valid_bytes() == len(buf)
    return out


def records_area(batch: v2.DefaultBatch) -> bytes:
    return bytes(batch.records_area())


# -- seed facts -----------------------------------------------------------------------------------
def test_seed_single_record_batch_is_76_bytes():
    rec = Record(0, T0, b"key", b"value")
    ours = v2.encode_batch([rec])
    assert len(ours) == 76
    theirs = broker_assign(kp_build(codecs.NONE, [(0, T0, b"key", b"value", [])]), 0, -1)
    assert len(theirs) == 76
    assert ours == bytes(theirs)


def test_seed_ten_keyless_six_byte_values_is_191_bytes():
    recs = [Record(i, T0 + 6 * i, None, b"abcdef") for i in range(10)]  # deltas < 64 ms
    ours = v2.encode_batch(recs)
    assert len(ours) == 191
    theirs = kp_build(codecs.NONE, [(i, T0 + 6 * i, None, b"abcdef", []) for i in range(10)])
    assert len(theirs) == 191
    assert [norm_record(r) for r in only_batch(ours).records()] == [
        (i, T0 + 6 * i, None, b"abcdef", ()) for i in range(10)
    ]


# -- kafka-python writes, klogtool reads --------------------------------------------------------
@pytest.mark.parametrize("codec", V2_CODECS, ids=CODEC_IDS)
@pytest.mark.parametrize(
    "producer",
    [
        dict(pid=-1, epoch=-1, seq=-1, tx=False),
        dict(pid=4242, epoch=7, seq=100, tx=False),
        dict(pid=2**40 + 3, epoch=32767, seq=INT32_MAX - 5, tx=True),  # sequence wraps to 0
    ],
    ids=["plain", "idempotent", "transactional-wrap"],
)
def test_kafka_python_batch_reads_identically(codec, producer):
    rows = sample()
    buf = broker_assign(kp_build(codec, rows, **producer), 5000, 9)
    batch = only_batch(bytes(buf))
    assert batch.compression == codec  # kafka-python really compressed it
    assert batch.crc_valid
    assert batch.magic == 2
    assert batch.base_offset == 5000
    assert batch.last_offset == 5000 + rows[-1][0]
    assert batch.count == len(rows)
    assert batch.partition_leader_epoch == 9
    assert batch.timestamp_type == CREATE_TIME
    assert batch.base_timestamp == rows[0][1]
    assert batch.max_timestamp == max(r[1] for r in rows)
    assert batch.producer_id == producer["pid"]
    assert batch.producer_epoch == producer["epoch"]
    assert batch.base_sequence == producer["seq"]
    assert batch.is_transactional is producer["tx"]
    assert batch.is_control is False
    assert batch.delete_horizon_ms is None
    got = list(batch.records())
    want = [(5000 + d, ts, k, v, tuple(h)) for d, ts, k, v, h in rows]
    assert [norm_record(r) for r in got] == want
    seq = producer["seq"]
    want_seq = [-1 if seq < 0 else (seq + d) % (INT32_MAX + 1) for d, *_ in rows]
    assert [r.sequence for r in got] == want_seq
    if producer["seq"] == INT32_MAX - 5:
        assert 0 in want_seq  # the wrap really happened
        assert batch.last_sequence == want_seq[-1]
    # and kafka-python agrees about its own bytes (guards the reference itself)
    (kb,) = kp_batches(buf)
    assert kb.validate_crc()
    assert [norm_record(r) for r in kb] == want


@pytest.mark.parametrize("codec", V2_CODECS, ids=CODEC_IDS)
def test_kafka_python_batch_with_log_append_time(codec):
    rows = sample(8)
    buf = broker_log_append_time(broker_assign(kp_build(codec, rows), 77, 1), T0 + 99_999)
    batch = only_batch(bytes(buf))
    assert batch.crc_valid and batch.timestamp_type == LOG_APPEND_TIME
    assert batch.max_timestamp == T0 + 99_999
    # every record reads as the append time, stored deltas are ignored
    assert [r.timestamp for r in batch.records()] == [T0 + 99_999] * len(rows)
    (kb,) = kp_batches(buf)
    assert kb.validate_crc()
    assert [norm_record(r) for r in kb] == [norm_record(r) for r in batch.records()]


@pytest.mark.parametrize("codec", V2_CODECS, ids=CODEC_IDS)
def test_kafka_python_large_batch_spans_several_blocks(codec):
    # > 64 KiB of records: several lz4 blocks (64 KiB max) / xerial snappy chunks (32 KiB)
    rows = [(i, T0 + i, b"k%d" % i, (b"%08d-" % i) * 20, []) for i in range(1500)]
    buf = broker_assign(kp_build(codec, rows), 0, 0)
    batch = only_batch(bytes(buf))
    assert batch.compression == codec and batch.crc_valid
    assert len(records_area(batch)) > 3 * 64 * 1024
    assert [norm_record(r) for r in batch.records()] == [
        (d, ts, k, v, ()) for d, ts, k, v, _ in rows
    ]


@pytest.mark.parametrize("codec", V2_CODECS, ids=CODEC_IDS)
def test_memory_records_builder_with_compaction_gaps(codec):
    # kafka-python's MemoryRecordsBuilder (skip() exists "for testing compacted records")
    b = MemoryRecordsBuilder(
        magic=2,
        compression_type=codec,
        batch_size=1 << 30,
        producer_id=11,
        producer_epoch=2,
        base_sequence=0,
    )
    want = []
    for i in range(40):
        if i % 6 == 5:
            b.skip(4)
        off = b.next_offset()
        value = b"payload payload payload %d" % (i % 3)
        assert b.append(T0 + i, b"k%d" % (i % 4), value) is not None
        want.append((off, T0 + i, b"k%d" % (i % 4), value, ()))
    b.close()
    buf = bytes(b.buffer())
    batch = only_batch(buf)
    assert batch.compression == codec and batch.crc_valid
    assert [norm_record(r) for r in batch.records()] == want
    assert batch.last_offset == want[-1][0]
    assert batch.count == 40 and batch.last_offset_delta + 1 > batch.count  # gaps


def test_kafka_python_empty_builder_quirk():
    # kafka-python can build a batch with no records; it writes baseTimestamp/maxTimestamp 0
    # where Kafka writes -1 (an emptied batch). klogtool reads what is there.
    buf = kp_build(codecs.NONE, [])
    batch = only_batch(bytes(buf))
    assert batch.count == 0 and batch.crc_valid and list(batch.records()) == []
    assert batch.base_timestamp == 0


# -- klogtool writes, kafka-python reads --------------------------------------------------------
def as_records(rows: list[tuple], base: int) -> list[Record]:
    return [Record(base + d, ts, k, v, tuple(h)) for d, ts, k, v, h in rows]


@pytest.mark.parametrize("codec", V2_CODECS, ids=CODEC_IDS)
@pytest.mark.parametrize("tx", [False, True], ids=["idempotent", "transactional"])
def test_klogtool_batch_reads_identically_in_kafka_python(codec, tx):
    recs = as_records(sample(), 123_456_789)
    buf = v2.encode_batch(
        recs,
        compression=codec,
        partition_leader_epoch=3,
        producer_id=99,
        producer_epoch=4,
        base_sequence=INT32_MAX - 2,
        is_transactional=tx,
    )
    (kb,) = kp_batches(buf)
    assert kb.validate_crc()
    assert kb.magic == 2
    assert kb.compression_type == codec
    assert kb.base_offset == 123_456_789
    assert kb.last_offset == recs[-1].offset
    assert kb.leader_epoch == 3
    assert kb.timestamp_type == CREATE_TIME
    assert kb.first_timestamp == recs[0].timestamp
    assert kb.max_timestamp == max(r.timestamp for r in recs)
    assert (kb.producer_id, kb.producer_epoch, kb.base_sequence) == (99, 4, INT32_MAX - 2)
    assert kb.last_sequence == only_batch(buf).last_sequence
    assert kb.is_transactional is tx and not kb.is_control_batch
    assert kb.records_count == len(recs)
    assert [norm_record(r) for r in kb] == [norm_record(r) for r in recs]


@pytest.mark.parametrize("codec", V2_CODECS, ids=CODEC_IDS)
def test_klogtool_log_append_time_batch_in_kafka_python(codec):
    recs = as_records(sample(10), 10)
    buf = v2.encode_batch(
        recs, compression=codec, timestamp_type=LOG_APPEND_TIME, max_timestamp=T0 + 12345
    )
    (kb,) = kp_batches(buf)
    assert kb.validate_crc()
    assert kb.timestamp_type == LOG_APPEND_TIME
    got = list(kb)
    assert [r.timestamp for r in got] == [T0 + 12345] * len(recs)
    assert all(r.timestamp_type == LOG_APPEND_TIME for r in got)
    assert [norm_record(r)[2:] for r in got] == [norm_record(r)[2:] for r in recs]
    assert [r.timestamp for r in only_batch(buf).records()] == [T0 + 12345] * len(recs)


@pytest.mark.parametrize("codec", V2_CODECS, ids=CODEC_IDS)
def test_klogtool_large_batch_in_kafka_python(codec):
    recs = [Record(i, T0 + i, None, (b"%07d;" % i) * 30) for i in range(1000)]
    buf = v2.encode_batch(recs, compression=codec)
    batch = only_batch(buf)
    assert len(records_area(batch)) > 2 * 64 * 1024
    if codec == codecs.LZ4:  # Kafka's frame: independent 64 KiB blocks, no checksums
        assert buf[61:68] == bytes.fromhex("04224d18604082")
    if codec == codecs.SNAPPY:  # xerial header, then 32 KiB chunks
        assert buf[61:77] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    (kb,) = kp_batches(buf)
    assert kb.validate_crc()
    assert [norm_record(r) for r in kb] == [norm_record(r) for r in recs]


@pytest.mark.parametrize("marker", [0, 1], ids=["ABORT", "COMMIT"])
def test_control_batch_both_ways(marker):
    key = struct.pack(">hh", 0, marker)
    value = struct.pack(">hi", 0, 17)  # version 0 + coordinator epoch
    buf = v2.encode_batch(
        [Record(500, T0, key, value)],
        is_control=True,
        is_transactional=True,
        producer_id=77,
        producer_epoch=3,
        base_sequence=-1,
        partition_leader_epoch=2,
    )
    batch = only_batch(buf)
    assert batch.is_control and batch.is_transactional and batch.crc_valid
    (rec,) = batch.records()
    assert rec.offset == 500 and rec.sequence == -1
    assert struct.unpack(">hh", rec.key) == (0, marker)
    assert struct.unpack(">hi", rec.value) == (0, 17)
    (kb,) = kp_batches(buf)
    assert kb.validate_crc() and kb.is_control_batch and kb.is_transactional
    (krec,) = list(kb)
    assert krec.type == marker and krec.version == 0
    assert (krec.abort, krec.commit) == (marker == 0, marker == 1)
    assert norm_record(krec) == norm_record(rec)


def test_empty_batch_both_ways():
    # an emptied batch as compaction leaves it: count 0, header kept
    # (docs/kafka-rules.md, Compaction)
    buf = v2.encode_batch(
        [],
        base_offset=1000,
        last_offset_delta=9,
        producer_id=5,
        producer_epoch=1,
        base_sequence=40,
        max_timestamp=T0,
    )
    batch = only_batch(buf)
    assert batch.count == 0 and batch.crc_valid
    assert (batch.base_offset, batch.last_offset) == (1000, 1009)
    assert (batch.base_timestamp, batch.max_timestamp) == (-1, T0)
    assert batch.last_sequence == 49
    assert list(batch.records()) == []
    assert len(buf) == 61
    (kb,) = kp_batches(buf)
    assert kb.validate_crc()
    assert kb.records_count == 0 and kb.last_offset == 1009 and kb.last_sequence == 49
    assert list(kb) == []


def test_delete_horizon_batch_in_kafka_python():
    # bit 6: baseTimestamp holds the delete horizon and record deltas are relative to it, so a
    # reader that knows nothing about KIP-534 (kafka-python) still gets the right timestamps.
    recs = [Record(10, T0 + 5, b"k", None), Record(12, T0 + 9, b"j", b"v")]
    buf = v2.encode_batch(recs, delete_horizon_ms=T0 + 86_400_000)
    batch = only_batch(buf)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == T0 + 86_400_000
    assert [norm_record(r) for r in batch.records()] == [norm_record(r) for r in recs]
    (kb,) = kp_batches(buf)
    assert kb.validate_crc()
    assert [norm_record(r) for r in kb] == [norm_record(r) for r in recs]


def test_several_batches_in_one_buffer_both_ways():
    parts = [
        v2.encode_batch(as_records(sample(5), 0), compression=codecs.GZIP),
        v2.encode_batch([], base_offset=20, last_offset_delta=2, max_timestamp=T0),
        v2.encode_batch(as_records(sample(5), 23), compression=codecs.LZ4),
    ]
    buf = b"".join(parts)
    scanner = SegmentScanner(buf)
    ours = [norm_record(r) for b in scanner for r in b.records()]
    assert scanner.result.end == CLEAN and scanner.result.batches == 3
    theirs = []
    for kb in kp_batches(buf):
        assert kb.validate_crc()
        theirs += [norm_record(r) for r in kb]
    assert ours == theirs and len(ours) == 10


# -- encoder agrees with kafka-python's byte for byte ------------------------------------------
@pytest.mark.parametrize("codec", V2_CODECS, ids=CODEC_IDS)
def test_encoder_matches_kafka_python_bytes(codec):
    rows = sample()
    theirs = broker_assign(kp_build(codec, rows, pid=8, epoch=0, seq=3), 700, 4)
    batch = only_batch(bytes(theirs))
    if codec == codecs.NONE:
        # uncompressed: the rebuilt batch is the same bytes (header, records, CRC)
        assert v2.reencode(batch) == bytes(theirs)
    # compressed: compressor output differs (kafka-python gzip level 9 vs Kafka's default,
    # lz4 content-size flag...) but the records area must be identical
    ours = v2.reencode(batch, compression=codecs.NONE)
    assert ours[61:] == records_area(batch)
    assert ours[21:61] == bytes([0, theirs[22] & ~0x07]) + bytes(theirs[23:61])


def test_reencode_same_codec_keeps_header_fields():
    recs = as_records(sample(), 50)
    orig = v2.encode_batch(
        recs,
        compression=codecs.ZSTD,
        partition_leader_epoch=6,
        producer_id=1,
        producer_epoch=2,
        base_sequence=3,
        is_transactional=True,
    )
    batch = only_batch(orig)
    again = v2.reencode(batch)
    assert again == orig  # deterministic encoder, same codec and level


@pytest.mark.parametrize(
    "override",
    [{"delete_horizon_ms": 1 << 63}, {"base_timestamp": -(1 << 63) - 1}, {"base_offset": 1 << 63}],
)
def test_reencode_past_64_bits_is_the_python_encoders_error(override: dict) -> None:
    """An override that does not fit Kafka's 64-bit fields gets the Python encoder's error under
    both engines (the native re-encoder raised OverflowError: bench/fuzz.py, seed 1130)."""
    batch = only_batch(v2.encode_batch([Record(0, T0, b"k", b"v")]))

    def error() -> tuple[type, str] | None:
        try:
            v2.reencode(batch, **override)
        except (ValueError, struct.error) as e:
            return type(e), str(e)
        return None

    with engine.using(engine.PYTHON):
        expected = error()
    assert expected is not None and error() == expected


def test_timestamps_too_far_apart_for_a_64_bit_delta_are_unencodable() -> None:
    """Kafka's encoder wraps such a delta around 64 bits; klogtool refuses: a FormatError (code
    unencodable, the batch's position when re-encoding) that is a ValueError too."""
    far = [Record(0, -(1 << 63) + 1, b"a", b"x"), Record(1, (1 << 63) - 1, b"b", b"y")]
    with pytest.raises(UnencodableError, match="offset 1 has timestamp 9223372036854775807"):
        v2.encode_batch(far)
    batch = only_batch(v2.encode_batch(far[:1]))
    with pytest.raises(ValueError) as raised:
        v2.reencode(batch, base_timestamp=(1 << 63) - 1)
    assert isinstance(raised.value, UnencodableError) and raised.value.position == 0
    assert raised.value.code == "unencodable"


# -- structural errors are FormatErrors, positioned and coded ---------------------------------
def _patched(buf: bytes, pos: int, fmt: str, value: int, *, fix_crc: bool = True) -> bytes:
    out = bytearray(buf)
    struct.pack_into(fmt, out, pos, value)
    if fix_crc:
        struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def test_bad_record_counts_and_sizes():
    good = v2.encode_batch([Record(i, T0, b"k", b"v") for i in range(3)])
    for count, code in [
        (-1, "bad-record-count"),
        (4, "bad-record-count"),
        (2, "bad-record-count"),
        (10**6, "bad-record-count"),
    ]:
        batch = v2.DefaultBatch(memoryview(_patched(good, 57, ">i", count)))
        assert batch.crc_valid
        with pytest.raises(CorruptRecordError) as ei:
            list(batch.records())
        assert ei.value.code == code, count
    # record length varint that disagrees with the record body
    body = bytearray(good)
    body[61] += 2  # first record's length (zig-zag) grows by one
    with pytest.raises(FormatError) as ei:
        list(v2.DefaultBatch(memoryview(bytes(body))).records())
    assert ei.value.position == 61
    with pytest.raises(CorruptRecordError) as ei:
        v2.DefaultBatch(memoryview(good[:60]))
    assert ei.value.code == "batch-too-small"
    with pytest.raises(CorruptRecordError):
        v2.DefaultBatch(memoryview(good[:-1]))  # length field disagrees with the view
    with pytest.raises(CorruptRecordError):
        v2.DefaultBatch(memoryview(good + b"\0"))  # length field disagrees with the view


@pytest.mark.parametrize(
    "record_body",
    [
        # attrs, ts delta, offset delta, key len, key, value len, value, header count, ...
        b"\x00\x00\x00\x03\x00\x01\x01",  # key length -2
        b"\x00\x00\x00\x01\x05\x01",  # value length -3
        b"\x00\x00\x00\x01\x01\x01",  # header count -1
        b"\x00\x00\x00\x01\x01\x02\x01\x01",  # header key length -1
        b"\x00\x00\x00\x01\x01\x02\x00\x05",  # header value length -3
        b"\x00\x00\x00\x01\x01\x02\x00\x06a",  # header value runs past the record
        b"\x00\x00\x00\x01\x01\x7e",  # header count 63 cannot fit
        b"\x00\x00\x00\x01\x01\x00\x00",  # one byte too many in the record
        b"\x00\x00\x00\x01",  # record ends inside its value length
        b"\x00" + b"\x80" * 10 + b"\x01\x00\x01\x01\x00",  # ts delta varlong 11 bytes
        b"\x00\x00\xff\xff\xff\xff\xff\x01\x01\x01\x00",  # offset delta varint 6 bytes
    ],
)
def test_corrupt_record_bodies_raise_format_errors(record_body):
    rec = varint.encode_varint(len(record_body)) + record_body
    buf = bytearray(v2.encode_batch([Record(0, T0, None, None)]))
    buf = bytes(buf[:61]) + rec
    buf = _patched(buf, 8, ">i", len(buf) - 12)
    with pytest.raises(FormatError) as ei:
        list(v2.DefaultBatch(memoryview(buf), 1000).records())
    assert ei.value.position is not None and ei.value.position >= 1000


def test_v2_decoder_varints_follow_java_int_overflow():
    # A 5-byte varint whose last byte carries more than 4 bits: Java's ByteUtils.readVarint
    # shifts them out of the int (value & 0xFFFFFFFF); varint.py does the same. The record
    # decoder's inlined varints must agree with varint.py on such encodings.
    weird_delta = b"\x86\x80\x80\x80\x70"  # raw 6 | 0x70 << 28 -> int32 6 -> zig-zag 3
    assert varint.read_varint(weird_delta, 0) == (3, 5)
    body = b"\x00\x00" + weird_delta + b"\x01\x01\x00"
    buf = bytes(v2.encode_batch([Record(0, T0, None, None)])[:61]) + bytes([len(body) * 2]) + body
    buf = _patched(buf, 8, ">i", len(buf) - 12)
    (rec,) = v2.DefaultBatch(memoryview(buf)).records()
    assert rec.offset == 3


# -- varints ------------------------------------------------------------------------------------
@settings(deadline=None)
@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(n):
    enc = varint.encode_varint(n)
    assert len(enc) <= 5 and varint.size_of_varint(n) == len(enc)
    assert varint.read_varint(enc + b"\xff", 0) == (n, len(enc))
    assert varint.read_varint(b"\x00" + enc, 1) == (n, len(enc) + 1)


@settings(deadline=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(n):
    enc = varint.encode_varlong(n)
    assert len(enc) <= 10 and varint.size_of_varlong(n) == len(enc)
    assert varint.read_varlong(enc, 0) == (n, len(enc))
    # kafka-python's encoder is an independent reference for the zig-zag layout
    from kafka.record.util import decode_varint as kp_decode
    from kafka.record.util import encode_varint as kp_encode

    out = bytearray()
    kp_encode(n, out.append)
    assert bytes(out) == enc
    assert kp_decode(bytearray(enc), 0) == (n, len(enc))


@settings(deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_uvarint_round_trip(n):
    enc = varint.encode_uvarint(n)
    assert len(enc) <= 5
    assert varint.read_uvarint(enc, 0) == (n, len(enc))


def test_varint_range_edges():
    for n, enc in [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        (-(2**31), b"\xff\xff\xff\xff\x0f"),
    ]:
        assert varint.encode_varint(n) == enc
        assert varint.read_varint(enc, 0) == (n, len(enc))
    assert varint.encode_varlong(-(2**63)) == b"\xff" * 9 + b"\x01"
    for bad in (2**31, -(2**31) - 1):
        with pytest.raises(ValueError):
            varint.encode_varint(bad)
    for bad in (2**63, -(2**63) - 1):
        with pytest.raises(ValueError):
            varint.encode_varlong(bad)
    with pytest.raises(ValueError):
        varint.encode_uvarint(-1)


@settings(deadline=None)
@given(st.integers(0, 4), st.binary(min_size=0, max_size=3))
def test_varint_over_long_is_an_error(extra, tail):
    over = b"\x80" * (5 + extra) + b"\x00" + tail  # 6+ bytes for an int32
    with pytest.raises(CorruptRecordError) as ei:
        varint.read_varint(over, 0)
    assert ei.value.code == "bad-varint" and ei.value.position == 0
    with pytest.raises(CorruptRecordError):
        varint.read_uvarint(over, 0)
    with pytest.raises(CorruptRecordError):
        varint.read_varlong(b"\x80" * (10 + extra) + b"\x00" + tail, 0)


@settings(deadline=None)
@given(st.integers(-(2**63), 2**63 - 1), st.data())
def test_varint_truncated_is_an_error(n, data):
    enc = varint.encode_varlong(n)
    cut = data.draw(st.integers(0, len(enc) - 1))
    with pytest.raises(TruncatedError) as ei:
        varint.read_varlong(b"pad" + enc[:cut], 3)
    assert ei.value.position == 3
    if -(2**31) <= n < 2**31:
        enc = varint.encode_varint(n)
        with pytest.raises(TruncatedError):
            varint.read_varint(enc[: len(enc) - 1], 0)


# -- hypothesis: random batches round-trip ----------------------------------------------------
payload = st.one_of(st.none(), st.binary(max_size=40))
header = st.tuples(st.text(st.characters(blacklist_categories=("Cs",)), max_size=8), payload)


@st.composite
def batches(draw):
    n = draw(st.integers(0, 12))
    offset = draw(st.integers(0, 2**62))
    recs = []
    ts_base = draw(st.integers(-1, 2**45))
    for _ in range(n):
        recs.append(
            Record(
                offset,
                draw(st.integers(max(-1, ts_base - 10**6), ts_base + 10**9)),
                draw(payload),
                draw(payload),
                tuple(draw(st.lists(header, max_size=3))),
                attributes=draw(st.sampled_from([0, 0, 0, 0x7F, 0xFF])),
            )
        )
        offset += draw(st.sampled_from([1, 1, 1, 2, 17, 2**20]))
    kw = dict(
        compression=draw(st.sampled_from(V2_CODECS)),
        timestamp_type=draw(st.sampled_from([CREATE_TIME, LOG_APPEND_TIME])),
        is_transactional=draw(st.booleans()),
        is_control=draw(st.booleans()),
        producer_id=draw(st.one_of(st.just(-1), st.integers(0, 2**63 - 1))),
        producer_epoch=draw(st.integers(-1, 2**15 - 1)),
        base_sequence=draw(st.one_of(st.just(-1), st.integers(0, INT32_MAX))),
        partition_leader_epoch=draw(st.integers(-1, INT32_MAX)),
    )
    if kw["timestamp_type"] == LOG_APPEND_TIME:
        kw["max_timestamp"] = draw(st.integers(0, 2**45))
    if draw(st.booleans()) and recs:
        kw["delete_horizon_ms"] = draw(st.integers(ts_base, ts_base + 10**9))
    if not recs or draw(st.booleans()):
        # explicit header offsets (an emptied batch, or a compacted last record)
        kw["base_offset"] = recs[0].offset if recs else offset
        last = recs[-1].offset - kw["base_offset"] if recs else 0
        kw["last_offset_delta"] = last + draw(st.integers(0, 5))
    return recs, kw


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_random_batches_round_trip(case):
    recs, kw = case
    buf = v2.encode_batch(recs, **kw)
    batch = only_batch(buf)
    assert batch.crc_valid
    assert batch.compression == kw["compression"]
    assert batch.timestamp_type == kw["timestamp_type"]
    assert batch.is_transactional == kw["is_transactional"]
    assert batch.is_control == kw["is_control"]
    assert batch.producer_id == kw["producer_id"]
    assert batch.producer_epoch == kw["producer_epoch"]
    assert batch.base_sequence == kw["base_sequence"]
    assert batch.partition_leader_epoch == kw["partition_leader_epoch"]
    assert batch.delete_horizon_ms == kw.get("delete_horizon_ms")
    assert batch.count == len(recs)
    if "last_offset_delta" in kw:
        assert batch.last_offset == kw["base_offset"] + kw["last_offset_delta"]
    else:
        assert batch.last_offset == recs[-1].offset
    got = list(batch.records())
    assert [full_record(r) for r in got] == careful_records(batch)
    log_append = kw["timestamp_type"] == LOG_APPEND_TIME
    want = [
        (r.offset, kw["max_timestamp"] if log_append else r.timestamp, r.key, r.value, r.headers)
        for r in recs
    ]
    assert [norm_record(r) for r in got] == want
    assert [r.attributes for r in got] == [r.attributes for r in recs]
    base = batch.base_offset
    assert [r.sequence for r in got] == [
        v2.sequence_at(kw["base_sequence"], r.offset - base) for r in recs
    ]
    if not log_append:
        assert batch.max_timestamp == max((r.timestamp for r in recs), default=-1)
    # the reference reads it too (kafka-python reads record attributes as a varint and parses
    # control keys: only cross-check what it can read; it also ignores a 16-byte xerial stream
    # and cannot read an empty xerial snappy stream, which Kafka never writes anyway)
    kp_can_read = not (kw["compression"] == codecs.SNAPPY and not recs)
    if kp_can_read and not kw["is_control"] and all(r.attributes < 0x80 for r in recs):
        (kb,) = kp_batches(buf)
        assert kb.validate_crc()
        assert [norm_record(r) for r in kb] == want
    # and a rebuild of the decoded batch is the same batch
    if not log_append:
        assert v2.reencode(batch) == buf


# -- the fast decode loop against the careful one-record decoder --------------------------------
def _mixed_records(n: int) -> list[Record]:
    """Records whose varints take every width the fast loop meets: big values and keys
    (3-byte lengths), timestamp deltas of hours either way, offset gaps that push deltas past
    8191, many headers (a 2-byte count), nulls."""
    recs = []
    for i in range(n):
        ts = T0 + (i % 50) + (10**7 if i % 53 == 0 else 0) - (10**6 if i % 59 == 0 else 0)
        key = None if i % 7 == 0 else (b"k" * 200 if i % 101 == 0 else b"key-%d" % i)
        value = None if i % 11 == 0 else (b"v" * 9000 if i % 97 == 0 else b"value-%d" % i)
        headers: tuple = ()
        if i % 13 == 0:
            headers = (("h", b"x"), ("null", None))
        elif i % 17 == 0:  # an empty name, a 2-byte value length, a name past 63 bytes
            headers = (("", b"y" * 300), ("h", b""), ("k" * 70 if i % 34 else "h", None))
        if i == 1500:
            headers = tuple((f"h{j}", b"%d" % j) for j in range(70))
        recs.append(Record(i * 5, ts, key, value, headers))
    return recs


@pytest.mark.parametrize("codec", [codecs.NONE, codecs.GZIP])
@pytest.mark.parametrize("base_sequence", [-1, 7, INT32_MAX - 3000, INT32_MAX - 10])
def test_fast_decoder_matches_careful_decoder_and_kafka_python(codec, base_sequence):
    recs = _mixed_records(2600)  # three chunks of the fast loop
    buf = v2.encode_batch(
        recs, compression=codec, producer_id=9 if base_sequence >= 0 else -1,
        producer_epoch=0 if base_sequence >= 0 else -1, base_sequence=base_sequence,
    )  # fmt: skip
    batch = only_batch(buf)
    got = [full_record(r) for r in batch.records()]
    assert got == careful_records(batch)
    if codec == codecs.NONE:  # an area past the memory bound is not copied: the view is read
        assert [full_record(r) for r in batch.records(max_batch_bytes=4096)] == got
    assert [g[:5] for g in got] == [norm_record(r) for r in recs]
    assert [g[5] for g in got] == [v2.sequence_at(base_sequence, r.offset) for r in recs]
    (kb,) = kp_batches(buf)
    assert [norm_record(r) for r in kb] == [g[:5] for g in got]


def test_repeated_header_blocks_share_one_tuple_and_writable_views_read_too():
    recs = [Record(i, T0 + i, b"k", b"v%d" % i, (("a", b"1"), ("b", None))) for i in range(40)]
    recs[20] = recs[20]._replace(headers=(("a", b"2"),))
    buf = v2.encode_batch(recs)
    with engine.using(engine.PYTHON):  # the python decoder's cache (native rows are bytes)
        got = list(only_batch(buf).records())
    assert [norm_record(r) for r in got] == [norm_record(r) for r in recs]
    assert got[0].headers is got[39].headers  # decoded once
    # the area read in place (past the bound) from a writable buffer, whose views cannot key a
    # cache: the careful decoder reads each record with headers
    batch = v2.DefaultBatch(memoryview(bytearray(buf)), 0)
    assert [norm_record(r) for r in batch.records(max_batch_bytes=64)] == [
        norm_record(r) for r in recs
    ]


def _traced(i: int) -> tuple:
    """Headers that differ record to record in their last value (a trace id) and sometimes
    elsewhere: the first value (same length), the trace id's length, one more header."""
    headers: tuple = (("src", b"app-%d" % (i % 3 == 0)), ("trace", b"%032x" % (i * 7919)))
    if i % 50 == 7:
        headers = (headers[0], ("trace", b"short"))
    if i % 70 == 9:
        headers = (*headers, ("extra", None))
    return headers


def test_header_blocks_that_differ_only_in_their_last_value():
    recs = [Record(i, T0 + i, b"k", b"v%d" % i, _traced(i)) for i in range(300)]
    batch = only_batch(v2.encode_batch(recs))
    with engine.using(engine.PYTHON):
        got = [full_record(r) for r in batch.records()]
    assert got == careful_records(batch)
    assert [g[:5] for g in got] == [norm_record(r) for r in recs]
    # a record whose length grows by one: its block no longer parses to its end
    buf = bytearray(v2.encode_batch(recs))
    start = 61 + sum(
        len(v2.encode_record(r.offset, r.timestamp - T0, r.key, r.value, r.headers))
        for r in recs[:120]
    )
    buf[start] += 2
    seen = []
    with engine.using(engine.PYTHON), pytest.raises(CorruptRecordError) as ei:
        for r in v2.DefaultBatch(memoryview(bytes(buf)), 0).records():
            seen.append(r)
    assert len(seen) == 120 and ei.value.position == start


def test_corrupt_record_mid_chunk_yields_the_records_before_it():
    recs = [Record(i, T0 + i, b"k%d" % i, b"v%d" % i) for i in range(1500)]
    buf = bytearray(v2.encode_batch(recs))
    bad = 1200
    start = 61 + sum(
        len(v2.encode_record(r.offset, r.timestamp - T0, r.key, r.value)) for r in recs[:bad]
    )
    assert buf[start] < 0x80  # a one-byte length
    buf[start] += 2  # the length grows by one: the body no longer matches it
    for bound in (None, 4096):  # the area copied to bytes, or read as a view
        seen = []
        batch = v2.DefaultBatch(memoryview(bytes(buf)), 5000)
        with pytest.raises(CorruptRecordError) as ei:
            for r in batch.records() if bound is None else batch.records(bound):
                seen.append(r)
        assert [norm_record(r) for r in seen] == [norm_record(r) for r in recs[:bad]]
        assert ei.value.position == 5000 + start
        assert "Invalid record size" in str(ei.value)


def test_reencode_knows_every_keyword_of_encode_batch() -> None:
    """v2._ENCODE_FIELDS (the overrides the native re-encoder accepts) is encode_batch's
    keyword arguments: an argument added to one and not the other would be ignored."""
    import inspect

    params = set(inspect.signature(v2.encode_batch).parameters) - {"records"}
    assert v2._ENCODE_FIELDS == params

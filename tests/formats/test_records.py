"""The segment scanner: how a walk over a ``.log`` buffer ends, and where recovery would cut.

Kafka's rules (docs/kafka-rules.md: Record formats, Loading and recovery): fewer than 17 bytes left
ends the walk; a size below
14 is corruption; an entry running past EOF is a torn tail; a CRC mismatch is where recovery
truncates. klogtool adds "zero-fill" for preallocated zeros and, in strict mode, rejects what
recovery lets through but no broker writes (magic > 2, non-increasing offsets).
"""

from __future__ import annotations

import struct
import zlib

import crc32c
import pytest
from support.records import norm_record

from klogtool.formats import codecs, legacy, v2
from klogtool.formats.batch import Record
from klogtool.formats.errors import CorruptRecordError
from klogtool.formats.records import (
    CLEAN,
    CORRUPT,
    TORN_TAIL,
    ZERO_FILL,
    SegmentScanner,
    iter_batches,
    kafka_entry_heads,
    read_batch,
    sniff_magic,
)

T0 = 1_650_000_000_000
KINDS = [
    (2, codecs.NONE),
    (2, codecs.GZIP),
    (2, codecs.SNAPPY),
    (2, codecs.LZ4),
    (2, codecs.ZSTD),
    (1, codecs.NONE),
    (1, codecs.GZIP),
    (1, codecs.LZ4),
    (0, codecs.NONE),
    (0, codecs.SNAPPY),
    (0, codecs.LZ4),
]
KIND_IDS = [f"v{m}-{codecs.CODEC_NAMES[c]}" for m, c in KINDS]
BIG_BASE = 0x0102030405060708  # no zero byte anywhere in the offset field


def make_segment(magic: int, codec: int, *, n: int = 5, base: int = 1000) -> tuple[bytes, list]:
    """``n`` entries of three records each; returns the bytes and the entries' positions."""
    parts, positions, pos = [], [], 0
    for i in range(n):
        recs = [
            Record(base + 3 * i + j, T0 + 3 * i + j, b"key%d" % j, b"value %d %d" % (i, j))
            for j in range(3)
        ]
        if magic == 2:
            entry = v2.encode_batch(recs, compression=codec, partition_leader_epoch=0)
        elif codec == codecs.NONE:
            entry = legacy.encode_message(
                recs[0].offset, recs[0].key, recs[0].value, magic=magic, timestamp=T0 + i
            )
        else:
            entry = legacy.encode_wrapper(recs, magic=magic, compression=codec)
        positions.append(pos)
        parts.append(entry)
        pos += len(entry)
    return b"".join(parts), positions


def walk(buf: bytes, **kw):
    scanner = SegmentScanner(buf, **kw)
    seen = [(b.position, scanner.crc_valid) for b in scanner]
    return scanner.result, seen


def v2_fix_crc(buf: bytearray, pos: int) -> None:
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    end = pos + 12 + length
    struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(buf[pos + 21 : end])))


# -- clean ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("magic, codec", KINDS, ids=KIND_IDS)
def test_clean(magic, codec):
    buf, positions = make_segment(magic, codec)
    res, seen = walk(buf)
    assert res.end == CLEAN and res.error is None
    assert res.valid_bytes == res.stopped_at == res.size == len(buf)
    assert res.batches == len(positions) and res.invalid_bytes == 0
    assert [p for p, _ in seen] == positions and all(ok for _, ok in seen)
    assert res.last_offset == (1014 if (magic == 2 or codec != codecs.NONE) else 1012)
    # a legacy wrapper's first offset needs decompression: the scanner does not report it
    assert res.first_offset == (None if magic < 2 and codec != codecs.NONE else 1000)


def test_empty_buffer_is_clean():
    res, seen = walk(b"")
    assert (res.end, res.valid_bytes, res.batches, seen) == (CLEAN, 0, 0, [])


def test_mixed_magic_segment_after_format_upgrade():
    # a segment written before and after a message.format.version upgrade: v0, v1, then v2
    buf = (
        legacy.encode_message(0, b"a", b"1", magic=0)
        + legacy.encode_wrapper(
            [Record(1, T0, b"b", b"2"), Record(2, T0 + 1, None, b"3")],
            magic=1,
            compression=codecs.GZIP,
        )
        + v2.encode_batch([Record(3, T0 + 2, b"c", None, (("h", b"x"),))])
    )
    scanner = SegmentScanner(buf)
    got = [norm_record(r) for b in scanner for r in b.records()]
    assert scanner.result.end == CLEAN and scanner.result.batches == 3
    assert got == [
        (0, -1, b"a", b"1", ()),
        (1, T0, b"b", b"2", ()),
        (2, T0 + 1, None, b"3", ()),
        (3, T0 + 2, b"c", None, (("h", b"x"),)),
    ]


# -- torn tail ------------------------------------------------------------------------------------
@pytest.mark.parametrize("magic, codec", KINDS, ids=KIND_IDS)
def test_torn_tail_at_every_byte_of_the_last_entry(magic, codec):
    buf, positions = make_segment(magic, codec, base=BIG_BASE)
    last = positions[-1]
    for cut in range(last + 1, len(buf)):
        res, seen = walk(buf[:cut])
        assert res.end == TORN_TAIL, cut
        assert res.valid_bytes == res.stopped_at == last, cut
        assert res.error is None and res.batches == len(positions) - 1
        assert [p for p, _ in seen] == positions[:-1]
    # cut exactly at the boundary: clean
    assert walk(buf[:last])[0].end == CLEAN


def test_torn_tail_whose_bytes_so_far_are_zero():
    # Cut inside the high (zero) bytes of a small big-endian offset, the tail is all zeros
    # and indistinguishable from preallocation: the scanner calls it zero-fill. Either way
    # the valid prefix is the same.
    buf, positions = make_segment(2, codecs.NONE, base=5)
    last = positions[-1]
    for cut in range(last + 1, len(buf)):
        res, _ = walk(buf[:cut])
        tail_is_zero = not any(buf[last:cut])
        assert res.end == (ZERO_FILL if tail_is_zero else TORN_TAIL), cut
        assert res.valid_bytes == last and res.error is None


# -- zero fill ------------------------------------------------------------------------------------
@pytest.mark.parametrize("zeros", [1, 5, 16, 17, 26, 4096, 3 * 65536 + 7])
@pytest.mark.parametrize("magic, codec", [(2, codecs.LZ4), (1, codecs.NONE)], ids=["v2", "v1"])
def test_zero_fill(magic, codec, zeros):
    buf, positions = make_segment(magic, codec)
    res, seen = walk(buf + bytes(zeros))
    assert res.end == ZERO_FILL and res.error is None
    assert res.valid_bytes == res.stopped_at == len(buf)
    assert res.batches == len(positions)


def test_zeros_followed_by_data_are_corrupt():
    buf, _ = make_segment(2, codecs.NONE)
    res, _ = walk(buf + bytes(4096) + b"\x01")
    assert res.end == CORRUPT and res.valid_bytes == len(buf)
    assert res.error.code == "record-too-small" and res.error.position == len(buf)


# -- garbage after the last batch -----------------------------------------------------------------
def test_garbage_with_small_size_is_corrupt():
    buf, positions = make_segment(2, codecs.GZIP)
    junk = struct.pack(">qi", 77, 13) + b"\xab" * 40  # size 13 < 14
    res, seen = walk(buf + junk)
    assert res.end == CORRUPT
    assert res.error.code == "record-too-small" and res.error.position == len(buf)
    assert res.valid_bytes == res.stopped_at == len(buf) and res.batches == len(positions)


def test_garbage_whose_size_points_past_eof_is_a_torn_tail():
    buf, positions = make_segment(2, codecs.GZIP)
    junk = struct.pack(">qi", 77, 1_000_000) + b"\xab" * 4 + b"\x02" + b"\xab" * 35
    res, _ = walk(buf + junk)
    assert res.end == TORN_TAIL and res.error is None
    assert res.valid_bytes == len(buf)


def test_incomplete_entry_with_a_bad_magic_is_corrupt_not_torn():
    buf, positions = make_segment(2, codecs.GZIP)
    junk = struct.pack(">qi", 77, 1_000_000) + b"\xab" * 40
    res, _ = walk(buf + junk)
    assert res.end == CORRUPT and res.error is not None and res.error.code == "bad-magic"
    assert res.valid_bytes == len(buf)
    broker = SegmentScanner(buf + junk, strict=False).scan()
    assert broker.end == TORN_TAIL and broker.valid_bytes == len(buf)


def test_short_nonzero_garbage_is_a_torn_tail():
    buf, _ = make_segment(2, codecs.NONE)
    res, _ = walk(buf + b"\x00\x00\x07")
    assert res.end == TORN_TAIL and res.valid_bytes == len(buf)


@pytest.mark.parametrize(
    "junk, code",
    [
        # a framed entry with magic 2 but a length below the 49-byte v2 minimum
        (struct.pack(">qiib", 2000, 30, 0, 2) + bytes(30 - 5), "batch-too-small"),
        # a framed legacy message whose CRC is wrong
        (struct.pack(">qiIbb", 2000, 14, 123, 0, 0) + struct.pack(">ii", -1, -1), "crc-mismatch"),
        # a legacy message whose key length runs past the message
        (
            struct.pack(">qiIbb", 2000, 20, 0, 0, 0) + struct.pack(">ii", 50, -1) + bytes(6),
            "corrupt-record",
        ),
        # magic 9
        (struct.pack(">qiib", 2000, 60, 0, 9) + bytes(55), "bad-magic"),
    ],
    ids=["v2-too-small", "legacy-crc", "legacy-key", "magic-9"],
)
def test_framed_garbage_is_corrupt(junk, code):
    buf, positions = make_segment(2, codecs.NONE)
    res, _ = walk(buf + junk)
    assert res.end == CORRUPT and res.error.code == code
    assert res.valid_bytes == len(buf) and res.batches == len(positions)


# -- CRC mismatches -------------------------------------------------------------------------------
@pytest.mark.parametrize("magic, codec", KINDS, ids=KIND_IDS)
def test_crc_flip_in_a_middle_batch(magic, codec):
    buf, positions = make_segment(magic, codec)
    bad = positions[2]
    broken = bytearray(buf)
    broken[positions[3] - 3] ^= 0x40  # inside the records / value of entry 2
    broken = bytes(broken)

    res, seen = walk(broken)  # recovery: stop at the bad batch
    assert res.end == CORRUPT
    assert res.error.code == "crc-mismatch" and res.error.position == bad
    assert res.valid_bytes == res.stopped_at == bad and res.batches == 2
    assert [p for p, _ in seen] == positions[:2]

    res, seen = walk(broken, stop_on_crc=False)  # dump/verify: walk on, flag the batch
    assert seen == [(p, p != bad) for p in positions]
    assert res.end == CLEAN and res.stopped_at == len(buf) and res.batches == len(positions)
    assert res.error.code == "crc-mismatch" and res.valid_bytes == bad

    res, seen = walk(broken, check_crc=False)
    assert res.end == CLEAN and res.error is None and res.valid_bytes == len(buf)


def test_two_crc_mismatches_report_the_first():
    buf, positions = make_segment(2, codecs.NONE)
    broken = bytearray(buf)
    broken[positions[1] + 30] ^= 1
    broken[positions[3] + 30] ^= 1
    scanner = SegmentScanner(bytes(broken), stop_on_crc=False)
    flags = [scanner.crc_valid for _ in scanner]
    assert flags == [True, False, True, False, True]
    assert scanner.result.valid_bytes == positions[1]
    assert scanner.result.error.position == positions[1]


def test_fields_outside_the_crc():
    # v2: baseOffset and partitionLeaderEpoch are not covered by the CRC (the broker rewrites
    # them in place); legacy: the offset is not covered (docs/kafka-rules.md, Record formats).
    buf, positions = make_segment(2, codecs.NONE)
    out = bytearray(buf)
    for i, p in enumerate(positions):
        struct.pack_into(">q", out, p, 5000 + 100 * i)
        struct.pack_into(">i", out, p + 12, 42)
    res, seen = walk(bytes(out))
    assert res.end == CLEAN and res.error is None and all(ok for _, ok in seen)
    assert [b.base_offset for b in iter_batches(bytes(out))] == [5000 + 100 * i for i in range(5)]
    lbuf, lpos = make_segment(1, codecs.NONE)
    out = bytearray(lbuf)
    for i, p in enumerate(lpos):
        struct.pack_into(">q", out, p, 10 * i)
    res, seen = walk(bytes(out))
    assert res.end == CLEAN and all(ok for _, ok in seen)


# -- strict vs broker behaviour -------------------------------------------------------------------
def test_magic_3_strict_and_lenient():
    buf, positions = make_segment(2, codecs.NONE)
    out = bytearray(buf)
    out[positions[2] + 16] = 3  # the v2 CRC does not cover the magic byte
    res, _ = walk(bytes(out))
    assert res.end == CORRUPT and res.error.code == "bad-magic"
    assert res.valid_bytes == positions[2]
    res, seen = walk(bytes(out), strict=False)  # Kafka's file reader walks over it
    assert res.end == CLEAN and res.error is None and len(seen) == len(positions)
    assert all(ok for _, ok in seen)


@pytest.mark.parametrize("kind", ["equal", "decreasing"])
def test_non_increasing_offsets(kind):
    a = v2.encode_batch([Record(100 + i, T0, None, b"x") for i in range(3)])
    first = 102 if kind == "equal" else 50
    b = v2.encode_batch([Record(first + i, T0, None, b"y") for i in range(3)])
    res, _ = walk(a + b)
    assert res.end == CORRUPT and res.error.code == "offset-not-increasing"
    assert res.valid_bytes == len(a) and res.error.position == len(a)
    res, seen = walk(a + b, strict=False)
    assert res.end == CLEAN and len(seen) == 2


def test_non_increasing_legacy_offsets():
    a = legacy.encode_message(10, None, b"x", magic=1, timestamp=T0)
    b = legacy.encode_message(10, None, b"y", magic=1, timestamp=T0)
    assert walk(a + b)[0].error.code == "offset-not-increasing"
    assert walk(a + b, strict=False)[0].end == CLEAN


def test_negative_last_offset_delta_and_count():
    buf = bytearray(v2.encode_batch([Record(100, T0, None, b"x")]))
    struct.pack_into(">i", buf, 23, -1)
    v2_fix_crc(buf, 0)
    assert walk(bytes(buf))[0].error.code == "bad-offset-delta"
    assert walk(bytes(buf), strict=False)[0].end == CLEAN
    buf = bytearray(v2.encode_batch([Record(100, T0, None, b"x")]))
    struct.pack_into(">i", buf, 57, -5)
    v2_fix_crc(buf, 0)
    assert walk(bytes(buf))[0].error.code == "bad-record-count"
    res, _ = walk(bytes(buf), strict=False)
    assert res.end == CLEAN
    with pytest.raises(CorruptRecordError):  # the records themselves are still refused
        list(next(iter_batches(bytes(buf), strict=False)).records())


# -- positions, limits, helpers ------------------------------------------------------------------
def test_base_position_and_max_bytes():
    buf, positions = make_segment(2, codecs.NONE)
    broken = bytearray(buf)
    broken[positions[3] + 40] ^= 1
    scanner = SegmentScanner(bytes(broken), base_position=1 << 30)
    assert [b.position for b in scanner] == [(1 << 30) + p for p in positions[:3]]
    assert scanner.result.error.position == (1 << 30) + positions[3]
    assert scanner.result.valid_bytes == positions[3]  # relative to the buffer
    res, seen = walk(buf, max_bytes=positions[3])
    assert res.end == CLEAN and len(seen) == 3 and res.size == positions[3]
    res, _ = walk(buf, max_bytes=positions[3] + 20)
    assert res.end == TORN_TAIL and res.valid_bytes == positions[3]


@pytest.mark.parametrize("magic, codec", KINDS, ids=KIND_IDS)
def test_read_batch_and_sniff_magic(magic, codec):
    buf, positions = make_segment(magic, codec)
    view = memoryview(buf)
    scanned = list(iter_batches(buf))
    for p, s in zip(positions, scanned, strict=True):
        assert sniff_magic(buf, p) == magic
        b = read_batch(view, p, base_position=10)
        assert b.position == p + 10 and b.size == s.size and bytes(b.data) == bytes(s.data)
        assert [norm_record(r) for r in b.records()] == [norm_record(r) for r in s.records()]
    assert sniff_magic(buf[:16]) is None
    with pytest.raises(CorruptRecordError):
        read_batch(view[: positions[1] - 1], 0)
    with pytest.raises(CorruptRecordError):
        read_batch(view[:16], 0)


def test_legacy_crc_covers_magic_onwards():
    buf = bytearray(legacy.encode_message(0, b"k", b"v", magic=1, timestamp=T0))
    buf[17] |= 0x08  # flip to LogAppendTime without fixing the CRC
    res, _ = walk(bytes(buf))
    assert res.error.code == "crc-mismatch"
    struct.pack_into(">I", buf, 12, zlib.crc32(bytes(buf[16:])) & 0xFFFFFFFF)
    assert walk(bytes(buf))[0].error is None


def test_kafka_entry_heads_read_as_kafkas_reader_from_any_position() -> None:
    """From a batch start: the batches the scanner finds; from inside an entry: whatever the
    bytes there say, up to where Kafka's FileLogInputStream ends."""
    from support.paths import LOGDIR

    for log in sorted(LOGDIR.glob("*/0*.log")):
        buf = memoryview(log.read_bytes())
        want = [(b.position, b.last_offset) for b in SegmentScanner(buf)]
        assert list(kafka_entry_heads(buf, 0)) == want, log
        if len(want) > 1:
            assert list(kafka_entry_heads(buf, want[1][0])) == want[1:]
    # a v2 batch's last offset is its base offset + last offset delta, a v0/v1 entry's its offset
    one = v2.encode_batch([Record(5, T0, b"k", b"v"), Record(9, T0, b"k", b"v")])
    assert list(kafka_entry_heads(memoryview(one), 0)) == [(0, 9)]
    # a length under 14 (Kafka throws) or past the end, or 17 bytes or fewer left: no entry
    short, long_ = (struct.pack(">qi4xb", 0, n, 2) + bytes(60) for n in (13, 100))
    for bad in (short, long_, one[:17]):
        assert list(kafka_entry_heads(memoryview(bad), 0)) == []

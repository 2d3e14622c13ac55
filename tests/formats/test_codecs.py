"""Tests for klogtool.formats.codecs (docs/kafka-rules.md: Compression framings)."""

from __future__ import annotations

import gzip
import io
import random
import struct
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import kafka.codec as kcodec
import lz4.block
import lz4.frame
import pytest
import snappy
import xxhash
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from isal import isal_zlib

from klogtool.formats import codecs
from klogtool.formats.codecs import (
    CODEC_IDS,
    CODEC_NAMES,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    available_codecs,
    codec_name,
    compress,
    decompress,
    xxh32,
)
from klogtool.formats.errors import (
    DecompressionError,
    FormatError,
    LimitExceededError,
    UnsupportedError,
)

MiB = 1 << 20
BIG = 1 << 30  # a limit that never triggers

LZ4_HEADER_V0 = bytes.fromhex("04224d1860401a")
LZ4_HEADER_V1 = bytes.fromhex("04224d18604082")
XERIAL_HEADER = bytes.fromhex("82534e41505059000000000100000001")

# every legal (codec, magic) pair: zstd only exists in v2
PAIRS = [(c, m) for c in (NONE, GZIP, SNAPPY, LZ4, ZSTD) for m in (0, 1, 2) if c != ZSTD or m == 2]
COMPRESSED_PAIRS = [(c, m) for c, m in PAIRS if c != NONE]
SIZES = [0, 1, 100, 32 * 1024, 32 * 1024 + 1, 64 * 1024, 64 * 1024 + 1, 200_000]

fast = settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])


def sample(size: int, seed: int = 0) -> bytes:
    """Half random (incompressible), half repetitive (compressible) bytes."""
    rng = random.Random(seed * 1_000_003 + size)
    half = size // 2
    return rng.randbytes(half) + (b"kafka-record-" * (size // 13 + 1))[: size - half]


# ----------------------------------------------------------------------------------------------
# API surface


def test_codec_tables() -> None:
    assert (NONE, GZIP, SNAPPY, LZ4, ZSTD) == (0, 1, 2, 3, 4)
    assert CODEC_NAMES == {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    assert CODEC_IDS == {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    assert [codec_name(i) for i in range(5)] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert available_codecs() == ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_ids(codec_id: int) -> None:
    with pytest.raises(UnsupportedError, match=f"Unknown compression type id {codec_id}"):
        codec_name(codec_id)
    with pytest.raises(UnsupportedError):
        decompress(codec_id, b"x", magic=2, limit=BIG)
    with pytest.raises(UnsupportedError):
        compress(codec_id, b"x", magic=2)


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_only_in_v2(magic: int) -> None:
    frame = zstandard.ZstdCompressor().compress(b"abc")
    with pytest.raises(UnsupportedError, match="zstd is only valid in v2 batches"):
        decompress(ZSTD, frame, magic=magic, limit=BIG)
    with pytest.raises(UnsupportedError, match="zstd is only valid in v2 batches"):
        compress(ZSTD, b"abc", magic=magic)


def test_none_codec() -> None:
    data = b"hello world"
    assert compress(NONE, data, magic=2) == data
    assert decompress(NONE, memoryview(data)[6:], magic=1, limit=5) == b"world"
    with pytest.raises(LimitExceededError):
        decompress(NONE, data, magic=2, limit=len(data) - 1)


# ----------------------------------------------------------------------------------------------
# round trips


@pytest.mark.parametrize(("codec", "magic"), PAIRS)
@pytest.mark.parametrize("size", SIZES)
def test_round_trip(codec: int, magic: int, size: int) -> None:
    data = sample(size)
    packed = compress(codec, data, magic=magic)
    assert isinstance(packed, bytes)
    out = decompress(codec, packed, magic=magic, limit=size)
    assert type(out) is bytes
    assert out == data


@pytest.mark.parametrize(("codec", "magic"), PAIRS)
@fast
@given(data=st.binary(max_size=3000), pad=st.integers(0, 7))
def test_round_trip_hypothesis_memoryview(codec: int, magic: int, data: bytes, pad: int) -> None:
    buf = bytearray(b"\xee" * pad + data + b"\xee" * pad)
    view = memoryview(buf)[pad : pad + len(data)]
    packed = compress(codec, view, magic=magic)
    outer = b"\x00" * pad + packed + b"\xff" * pad
    assert decompress(
        codec, memoryview(outer)[pad : pad + len(packed)], magic=magic, limit=BIG
    ) == (data)


@pytest.mark.parametrize(("codec", "magic"), COMPRESSED_PAIRS)
def test_limit_is_exact(codec: int, magic: int) -> None:
    data = sample(150_000, seed=3)
    packed = compress(codec, data, magic=magic)
    assert decompress(codec, packed, magic=magic, limit=len(data)) == data
    with pytest.raises(LimitExceededError):
        decompress(codec, packed, magic=magic, limit=len(data) - 1)
    with pytest.raises(LimitExceededError):
        decompress(codec, packed, magic=magic, limit=0)


@pytest.mark.parametrize(
    ("codec", "levels"),
    [(GZIP, [-1, 1, 9]), (LZ4, [1, 9, 12, 17]), (ZSTD, [-5, 1, 3, 19])],
)
def test_levels(codec: int, levels: list[int]) -> None:
    data = sample(100_000, seed=5)
    for level in levels:
        packed = compress(codec, data, magic=2, level=level)
        assert decompress(codec, packed, magic=2, limit=BIG) == data
    with pytest.raises(UnsupportedError):
        compress(codec, data, magic=2, level=99)


# ----------------------------------------------------------------------------------------------
# lz4


def test_lz4_header_bytes() -> None:
    assert compress(LZ4, b"", magic=0) == LZ4_HEADER_V0 + b"\x00\x00\x00\x00"
    assert compress(LZ4, b"", magic=1) == LZ4_HEADER_V1 + b"\x00\x00\x00\x00"
    assert compress(LZ4, b"", magic=2) == LZ4_HEADER_V1 + b"\x00\x00\x00\x00"
    data = sample(70_000)
    assert compress(LZ4, data, magic=0)[:7] == LZ4_HEADER_V0
    assert compress(LZ4, data, magic=2)[:7] == LZ4_HEADER_V1
    # HC derivation: second byte of XXH32 over FLG..BD (v1+) or over magic+FLG+BD (v0)
    assert (xxhash.xxh32_intdigest(b"\x60\x40") >> 8) & 0xFF == 0x82
    assert (xxhash.xxh32_intdigest(LZ4_HEADER_V0[:6]) >> 8) & 0xFF == 0x1A


def _lz4_blocks(frame: bytes) -> list[tuple[int, bool]]:
    """(size, stored-uncompressed) of each block of a checksum-free frame with a 7-byte header."""
    pos, blocks = 7, []
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if word == 0:
            assert pos == len(frame)
            return blocks
        size = word & 0x7FFFFFFF
        blocks.append((size, bool(word & 0x80000000)))
        pos += size


def test_lz4_block_layout() -> None:
    rnd = random.Random(1).randbytes(64 * 1024 + 10)  # incompressible: stored blocks
    assert _lz4_blocks(compress(LZ4, rnd, magic=1)) == [(64 * 1024, True), (10, True)]
    zeros = compress(LZ4, bytes(3 * 64 * 1024), magic=1)
    blocks = _lz4_blocks(zeros)
    assert len(blocks) == 3 and not any(stored for _, stored in blocks)


@pytest.mark.parametrize("size", [0, 10, 70_000, 200_000])
def test_lz4_matches_lz4_frame(size: int) -> None:
    data = sample(size, seed=7)
    produced = lz4.frame.compress(
        data,
        block_linked=False,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        content_checksum=False,
    )
    assert decompress(LZ4, produced, magic=1, limit=BIG) == data  # with content size field
    plain = lz4.frame.compress(
        data,
        block_linked=False,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        content_checksum=False,
        store_size=False,
    )
    assert decompress(LZ4, plain, magic=2, limit=BIG) == data
    assert compress(LZ4, data, magic=1) == plain  # byte-for-byte the same framing
    assert lz4.frame.decompress(compress(LZ4, data, magic=2)) == data


@pytest.mark.parametrize(
    "block_size",
    [
        lz4.frame.BLOCKSIZE_MAX256KB,
        lz4.frame.BLOCKSIZE_MAX1MB,
        lz4.frame.BLOCKSIZE_MAX4MB,
    ],
)
def test_lz4_larger_block_sizes(block_size: int) -> None:
    data = sample(300_000, seed=2)
    frame = lz4.frame.compress(data, block_linked=False, block_size=block_size)
    assert decompress(LZ4, frame, magic=2, limit=BIG) == data
    with pytest.raises(LimitExceededError):
        decompress(LZ4, frame, magic=2, limit=1000)


def test_lz4_linked_blocks_rejected() -> None:
    data = sample(200_000, seed=4)
    frame = lz4.frame.compress(data, block_linked=True, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    for magic in (0, 1, 2):
        with pytest.raises(UnsupportedError, match="linked"):
            decompress(LZ4, frame, magic=magic, limit=BIG)


def test_lz4_header_checksum() -> None:
    data = sample(1000)
    v0 = compress(LZ4, data, magic=0)
    v1 = compress(LZ4, data, magic=1)
    wrong = bytearray(v1)
    wrong[6] ^= 0xFF
    # magic 0 ignores HC entirely
    assert decompress(LZ4, bytes(wrong), magic=0, limit=BIG) == data
    assert decompress(LZ4, v1, magic=0, limit=BIG) == data
    # magic >= 1 verifies it; a KAFKA-3160 (v0) header is wrong there
    for magic in (1, 2):
        with pytest.raises(DecompressionError, match="descriptor"):
            decompress(LZ4, bytes(wrong), magic=magic, limit=BIG)
        with pytest.raises(DecompressionError, match="descriptor"):
            decompress(LZ4, v0, magic=magic, limit=BIG)


def test_lz4_checksums() -> None:
    data = sample(150_000, seed=9)
    frame = lz4.frame.compress(
        data, block_linked=False, block_checksum=True, content_checksum=True, store_size=False
    )
    assert decompress(LZ4, frame, magic=1, limit=BIG) == data
    # the content checksum is read but not verified (as in Kafka)
    bad_content = frame[:-4] + bytes(b ^ 0xFF for b in frame[-4:])
    assert decompress(LZ4, bad_content, magic=1, limit=BIG) == data
    with pytest.raises(DecompressionError):
        decompress(LZ4, frame[:-2], magic=1, limit=BIG)
    # a block checksum is verified
    (first,) = struct.unpack_from("<I", frame, 7)
    sum_at = 7 + 4 + (first & 0x7FFFFFFF)
    bad_block = bytearray(frame)
    bad_block[sum_at] ^= 1
    with pytest.raises(DecompressionError, match="checksum"):
        decompress(LZ4, bytes(bad_block), magic=1, limit=BIG)


@pytest.mark.parametrize(
    ("offset", "value", "message"),
    [
        (0, 0x05, "magic"),
        (4, 0x61, "reserved"),  # FLG reserved bit
        (4, 0xA0, "version"),  # version 10
        (5, 0x41, "reserved"),  # BD reserved bit
        (5, 0xC0, "reserved"),  # BD high reserved bit
        (5, 0x30, "block size code"),  # size code 3
    ],
)
def test_lz4_bad_descriptor(offset: int, value: int, message: str) -> None:
    frame = bytearray(compress(LZ4, b"abc" * 100, magic=0))
    frame[offset] = value
    with pytest.raises(DecompressionError, match=message):
        decompress(LZ4, bytes(frame), magic=0, limit=BIG)


def test_lz4_structure_errors() -> None:
    data = sample(100_000, seed=11)
    frame = compress(LZ4, data, magic=2)
    for cut in (0, 3, 6, 7, 10, len(frame) // 2, len(frame) - 1):
        with pytest.raises(DecompressionError, match="prematurely"):
            decompress(LZ4, frame[:cut], magic=2, limit=BIG)
    # anything after the end mark is ignored
    assert decompress(LZ4, frame + b"trailing junk", magic=2, limit=BIG) == data
    # a block declaring more than the 64 KiB maximum
    oversized = LZ4_HEADER_V1 + struct.pack("<I", 0x80000000 | (64 * 1024 + 1))
    oversized += bytes(64 * 1024 + 1) + bytes(4)
    with pytest.raises(DecompressionError, match="exceeded max"):
        decompress(LZ4, oversized, magic=2, limit=BIG)
    # a corrupt compressed block
    corrupt = LZ4_HEADER_V1 + struct.pack("<I", 5) + b"\xff\xff\xff\xff\xff" + bytes(4)
    with pytest.raises(DecompressionError):
        decompress(LZ4, corrupt, magic=2, limit=BIG)


# ----------------------------------------------------------------------------------------------
# xxh32


@pytest.mark.parametrize("size", [0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 100, 4096 * 16 + 7])
def test_xxh32_fixed(size: int) -> None:
    data = random.Random(size).randbytes(size)
    assert xxh32(data) == xxhash.xxh32_intdigest(data)
    assert xxh32(memoryview(data)) == xxhash.xxh32_intdigest(data)


@settings(deadline=None, max_examples=100)
@given(data=st.binary(max_size=300), seed=st.integers(0, 0xFFFFFFFF))
def test_xxh32_hypothesis(data: bytes, seed: int) -> None:
    assert xxh32(data, seed) == xxhash.xxh32_intdigest(data, seed)


# ----------------------------------------------------------------------------------------------
# snappy


def _xerial_chunks(stream: bytes) -> list[bytes]:
    assert stream[:16] == XERIAL_HEADER
    pos, chunks = 16, []
    while pos < len(stream):
        (size,) = struct.unpack_from(">i", stream, pos)
        chunks.append(stream[pos + 4 : pos + 4 + size])
        pos += 4 + size
    assert pos == len(stream)
    return chunks


def test_snappy_xerial_layout() -> None:
    assert compress(SNAPPY, b"", magic=1) == XERIAL_HEADER
    data = sample(100 * 1024, seed=1)
    chunks = _xerial_chunks(compress(SNAPPY, data, magic=2))
    assert len(chunks) == 4
    assert [len(snappy.uncompress(c)) for c in chunks] == [32768, 32768, 32768, 4096]
    assert b"".join(snappy.uncompress(c) for c in chunks) == data


def test_snappy_raw_accepted() -> None:
    data = sample(50_000, seed=2)
    raw = snappy.compress(data)
    assert raw[:8] != XERIAL_HEADER[:8]
    assert decompress(SNAPPY, raw, magic=1, limit=BIG) == data
    assert decompress(SNAPPY, snappy.compress(b"x"), magic=1, limit=BIG) == b"x"
    with pytest.raises(LimitExceededError):
        decompress(SNAPPY, raw, magic=1, limit=len(data) - 1)


def test_snappy_concatenated_streams() -> None:
    a, b = sample(40_000, seed=1), sample(1000, seed=2)
    stream = compress(SNAPPY, a, magic=2) + compress(SNAPPY, b, magic=2)
    assert decompress(SNAPPY, stream, magic=2, limit=BIG) == a + b
    assert decompress(SNAPPY, stream + XERIAL_HEADER, magic=2, limit=BIG) == a + b
    # a "header" whose magic tail is wrong ends the stream quietly, like snappy-java
    not_header = XERIAL_HEADER[:4] + b"XXXX" + XERIAL_HEADER[8:]
    tail = compress(SNAPPY, b, magic=2)[16:]
    assert (
        decompress(SNAPPY, compress(SNAPPY, a, magic=2) + not_header + tail, magic=2, limit=BIG)
        == a
    )
    with pytest.raises(DecompressionError, match="concatenated"):
        decompress(SNAPPY, compress(SNAPPY, a, magic=2) + XERIAL_HEADER[:10], magic=2, limit=BIG)
    with pytest.raises(UnsupportedError):
        bad_version = XERIAL_HEADER[:8] + struct.pack(">ii", 0, 1)
        decompress(SNAPPY, compress(SNAPPY, a, magic=2) + bad_version, magic=2, limit=BIG)


def test_snappy_chunk_errors() -> None:
    good = compress(SNAPPY, b"hello" * 100, magic=2)
    with pytest.raises(DecompressionError, match="negative"):
        decompress(SNAPPY, XERIAL_HEADER + struct.pack(">i", -5) + bytes(10), magic=2, limit=BIG)
    with pytest.raises(DecompressionError, match="512 MiB"):
        decompress(SNAPPY, XERIAL_HEADER + struct.pack(">i", 512 * MiB + 1), magic=2, limit=BIG)
    with pytest.raises(DecompressionError, match="prematurely"):
        decompress(SNAPPY, good[:-1], magic=2, limit=BIG)
    with pytest.raises(DecompressionError):
        decompress(SNAPPY, XERIAL_HEADER + struct.pack(">i", 0), magic=2, limit=BIG)
    with pytest.raises(DecompressionError, match="empty"):
        decompress(SNAPPY, b"", magic=2, limit=BIG)
    # 1-3 trailing bytes cannot hold a chunk length: snappy-java stops quietly
    assert decompress(SNAPPY, good + b"\x00\x01", magic=2, limit=BIG) == b"hello" * 100
    # the official snappy framing format is not understood
    framed = snappy.StreamCompressor().compress(b"hello" * 100)
    with pytest.raises(DecompressionError):
        decompress(SNAPPY, framed, magic=2, limit=BIG)


def test_snappy_declared_length_checked_before_decompressing() -> None:
    # a raw block claiming 4 GiB - 1 of output must fail on the limit, not allocate
    huge = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x00" * 20
    with pytest.raises(LimitExceededError):
        decompress(SNAPPY, huge, magic=2, limit=MiB)
    with pytest.raises(LimitExceededError):
        decompress(SNAPPY, XERIAL_HEADER + struct.pack(">i", len(huge)) + huge, magic=2, limit=MiB)
    with pytest.raises(DecompressionError):  # an over-long varint
        decompress(SNAPPY, b"\xff" * 6, magic=2, limit=BIG)


# ----------------------------------------------------------------------------------------------
# gzip


def test_gzip_format() -> None:
    data = sample(10_000)
    packed = compress(GZIP, data, magic=1)
    assert packed[:4] == b"\x1f\x8b\x08\x00"  # no FNAME / FEXTRA / FCOMMENT
    assert gzip.decompress(packed) == data
    # default level: zlib -1 (= 6), like java.util.zip.GZIPOutputStream
    assert packed[10:-8] == zlib.compress(data, 6)[2:-4]


# gzip is inflated by python-isal when it is installed (a test dependency), else by zlib: the
# gzip tests run with each.
INFLATERS = {"isal": isal_zlib, "zlib": zlib}


@contextmanager
def inflating_with(name: str) -> Iterator[None]:
    with mock.patch.object(codecs, "gzip_inflater", lambda: INFLATERS[name]):
        yield


@pytest.fixture(params=list(INFLATERS))
def inflater(request: pytest.FixtureRequest) -> Iterator[str]:
    with inflating_with(request.param):
        yield request.param


def test_gzip_inflater_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    codecs.gzip_inflater.cache_clear()
    try:
        monkeypatch.delenv("KLOGTOOL_GZIP", raising=False)
        assert codecs.gzip_inflater() is isal_zlib
        codecs.gzip_inflater.cache_clear()
        monkeypatch.setenv("KLOGTOOL_GZIP", "zlib")
        assert codecs.gzip_inflater() is zlib
        codecs.gzip_inflater.cache_clear()
        monkeypatch.delenv("KLOGTOOL_GZIP")
        with mock.patch.dict("sys.modules", {"isal": None}):  # not installed
            assert codecs.gzip_inflater() is zlib
    finally:
        codecs.gzip_inflater.cache_clear()


def test_gzip_members_and_trailing_data(inflater: str) -> None:
    a, b = sample(5000, seed=1), sample(70_000, seed=2)
    two = compress(GZIP, a, magic=2) + gzip.compress(b, mtime=0)
    assert decompress(GZIP, two, magic=2, limit=BIG) == a + b
    with pytest.raises(LimitExceededError):
        decompress(GZIP, two, magic=2, limit=len(a) + len(b) - 1)
    # bytes after a member that do not start a gzip header are ignored (GZIPInputStream)
    assert decompress(GZIP, compress(GZIP, a, magic=2) + b"junk-junk-junk", magic=2, limit=BIG) == a
    # a member with FNAME (as Python's gzip module writes for files) is fine too
    buf = io.BytesIO()
    with gzip.GzipFile(filename="x.txt", mode="wb", fileobj=buf, mtime=0) as named:
        named.write(b)
    assert buf.getvalue()[3] == 0x08  # FNAME flag
    assert decompress(GZIP, buf.getvalue(), magic=0, limit=BIG) == b
    with pytest.raises(DecompressionError, match="prematurely"):
        decompress(GZIP, compress(GZIP, b, magic=2)[:-3], magic=2, limit=BIG)
    with pytest.raises(DecompressionError):
        decompress(GZIP, b"", magic=2, limit=BIG)
    bad_crc = bytearray(compress(GZIP, a, magic=2))
    bad_crc[-6] ^= 0xFF
    with pytest.raises(DecompressionError):
        decompress(GZIP, bytes(bad_crc), magic=2, limit=BIG)
    with pytest.raises(DecompressionError):  # zlib (not gzip) wrapper is rejected
        decompress(GZIP, zlib.compress(a), magic=2, limit=BIG)


# ----------------------------------------------------------------------------------------------
# zstd


def test_zstd_frames() -> None:
    a, b = sample(100_000, seed=1), sample(3000, seed=2)
    cctx = zstandard.ZstdCompressor(level=3)
    streamed = cctx.compressobj()
    unsized = streamed.compress(a) + streamed.flush()
    assert zstandard.frame_content_size(unsized) == -1
    assert decompress(ZSTD, unsized, magic=2, limit=len(a)) == a
    with pytest.raises(LimitExceededError):
        decompress(ZSTD, unsized, magic=2, limit=len(a) - 1)
    sized = cctx.compress(b)
    assert zstandard.frame_content_size(sized) == len(b)
    skippable = struct.pack("<II", 0x184D2A5E, 3) + b"xyz"
    multi = unsized + skippable + sized + cctx.compress(b"")
    assert decompress(ZSTD, multi, magic=2, limit=BIG) == a + b
    with pytest.raises(LimitExceededError):
        decompress(ZSTD, multi, magic=2, limit=len(a) + len(b) - 1)
    checked = zstandard.ZstdCompressor(write_checksum=True).compress(a)
    assert decompress(ZSTD, checked, magic=2, limit=BIG) == a
    bad = bytearray(checked)
    bad[-1] ^= 0xFF
    with pytest.raises(DecompressionError):
        decompress(ZSTD, bytes(bad), magic=2, limit=BIG)


def test_zstd_truncation_and_garbage() -> None:
    a = sample(100_000, seed=3)
    streamed = zstandard.ZstdCompressor().compressobj()
    unsized = streamed.compress(a) + streamed.flush()
    for frame in (unsized, compress(ZSTD, a, magic=2)):
        for cut in (1, 4, 5, 6, len(frame) // 2, len(frame) - 1):
            with pytest.raises(DecompressionError):
                decompress(ZSTD, frame[:cut], magic=2, limit=BIG)
        with pytest.raises(DecompressionError):
            decompress(ZSTD, frame + b"garbage!", magic=2, limit=BIG)
    with pytest.raises(DecompressionError):
        decompress(ZSTD, b"", magic=2, limit=BIG)


def test_zstd_window_limit() -> None:
    # frame header: magic, FHD 0 (no single segment), window descriptor for 2^28
    header = struct.pack("<I", 0xFD2FB528) + bytes([0x00, (28 - 10) << 3])
    frame = header + bytes([0x01, 0x00, 0x00])  # last, raw, empty block
    with pytest.raises(UnsupportedError, match="window"):
        decompress(ZSTD, frame, magic=2, limit=BIG)
    ok = struct.pack("<I", 0xFD2FB528) + bytes([0x00, (27 - 10) << 3, 0x01, 0x00, 0x00])
    assert decompress(ZSTD, ok, magic=2, limit=BIG) == b""


# ----------------------------------------------------------------------------------------------
# kafka-python cross-checks


@pytest.mark.parametrize("size", [1, 1000, 70_000, 200_000])
def test_kafka_python_interop(size: int) -> None:
    data = sample(size, seed=13)
    # gzip
    assert kcodec.gzip_decode(compress(GZIP, data, magic=1)) == data
    assert decompress(GZIP, kcodec.gzip_encode(data), magic=1, limit=BIG) == data
    # snappy (xerial framing, and raw)
    assert compress(SNAPPY, data, magic=1) == kcodec.snappy_encode(data)
    assert kcodec.snappy_decode(compress(SNAPPY, data, magic=1)) == data
    assert decompress(SNAPPY, kcodec.snappy_encode(data), magic=1, limit=BIG) == data
    raw = kcodec.snappy_encode(data, xerial_compatible=False)
    assert decompress(SNAPPY, raw, magic=1, limit=BIG) == data
    # lz4: magic >= 1 is the standard frame, magic 0 has the KAFKA-3160 header checksum
    assert kcodec.lz4_decode(compress(LZ4, data, magic=1)) == data
    assert decompress(LZ4, kcodec.lz4_encode(data), magic=1, limit=BIG) == data
    assert kcodec.lz4_decode_old_kafka(compress(LZ4, data, magic=0)) == data
    assert decompress(LZ4, kcodec.lz4_encode_old_kafka(data), magic=0, limit=BIG) == data
    # zstd
    assert kcodec.zstd_decode(compress(ZSTD, data, magic=2)) == data
    assert decompress(ZSTD, kcodec.zstd_encode(data), magic=2, limit=BIG) == data


# ----------------------------------------------------------------------------------------------
# decompression bombs: 100 MiB of zeros, limit 1 MiB


def _gzip_bomb(mib: int = 100) -> bytes:
    # a 1 MiB segment ending in a full flush is position-independent: repeat it
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(MiB)
    segment = deflater.compress(zeros) + deflater.flush(zlib.Z_FULL_FLUSH)
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty last block
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + segment * mib + final + struct.pack("<II", crc, mib * MiB)


def _zstd_bomb(sized: bool, blocks: int = 800) -> bytes:
    # 128 KiB RLE blocks of zeros; window 2^17; optionally a 4-byte frame content size
    header = struct.pack("<I", 0xFD2FB528)
    header += (
        bytes([0x80, 7 << 3]) + struct.pack("<I", blocks << 17) if sized else bytes([0, 7 << 3])
    )
    rle = struct.pack("<I", (1 << 17 << 3) | (1 << 1))[:3] + b"\x00"
    last = struct.pack("<I", (1 << 17 << 3) | (1 << 1) | 1)[:3] + b"\x00"
    return header + rle * (blocks - 1) + last


def test_bomb_builders_are_valid() -> None:
    assert gzip.decompress(_gzip_bomb(3)) == bytes(3 * MiB)
    for sized in (True, False):
        frame = _zstd_bomb(sized, blocks=3)
        assert zstandard.frame_content_size(frame) == (3 << 17 if sized else -1)
        assert zstandard.ZstdDecompressor().decompressobj().decompress(frame) == bytes(3 << 17)
        assert len(frame) < 20 + 4 * 3


def _lz4_bomb() -> bytes:
    block = lz4.block.compress(bytes(64 * 1024), store_size=False)
    return LZ4_HEADER_V1 + (struct.pack("<I", len(block)) + block) * 1600 + bytes(4)


def _snappy_bomb() -> bytes:
    block = snappy.compress(bytes(32 * 1024))
    return XERIAL_HEADER + (struct.pack(">i", len(block)) + block) * 3200


BOMBS = {
    "gzip": (GZIP, _gzip_bomb),
    "zstd-with-size": (ZSTD, lambda: _zstd_bomb(True)),
    "zstd-without-size": (ZSTD, lambda: _zstd_bomb(False)),
    "lz4": (LZ4, _lz4_bomb),
    "snappy": (SNAPPY, _snappy_bomb),
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_decompression_bomb(name: str) -> None:
    codec, build = BOMBS[name]
    bomb = build()
    for inflater in INFLATERS if codec == GZIP else ["zlib"]:
        with inflating_with(inflater):
            _check_bounded(codec, bomb)


def _check_bounded(codec: int, bomb: bytes) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(LimitExceededError):
            decompress(codec, bomb, magic=2, limit=MiB)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 1.0
    assert peak < 8 * MiB, f"peak traced allocation {peak} bytes"


# ----------------------------------------------------------------------------------------------
# garbage and corrupted input never raises anything but FormatError


def _try(codec: int, data: bytes, magic: int) -> None:
    try:
        out = decompress(codec, data, magic=magic, limit=MiB)
    except FormatError:
        return
    assert isinstance(out, bytes) and len(out) <= MiB


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    pair=st.sampled_from(COMPRESSED_PAIRS),
    data=st.one_of(
        st.binary(max_size=200),
        st.sampled_from(
            [LZ4_HEADER_V0, LZ4_HEADER_V1, XERIAL_HEADER, b"\x1f\x8b\x08", b"\x28\xb5\x2f\xfd"]
        ).flatmap(lambda head: st.binary(max_size=200).map(lambda tail: head + tail)),
    ),
)
def test_garbage_raises_format_error_only(pair: tuple[int, int], data: bytes) -> None:
    _try(pair[0], data, pair[1])


_CORPUS = {
    pair: compress(pair[0], sample(70_000, seed=21), magic=pair[1]) for pair in COMPRESSED_PAIRS
}


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    pair=st.sampled_from(COMPRESSED_PAIRS),
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), max_size=4),
    cut=st.one_of(st.none(), st.floats(0, 1)),
)
def test_corrupted_streams_raise_format_error_only(
    pair: tuple[int, int], edits: list[tuple[float, int]], cut: float | None
) -> None:
    data = bytearray(_CORPUS[pair])
    for where, value in edits:
        data[int(where * len(data))] = value
    if cut is not None:
        del data[int(cut * len(data)) :]
    _try(pair[0], bytes(data), pair[1])


def _outcome(data: bytes, inflater: str) -> bytes | type:
    with inflating_with(inflater):
        try:
            return decompress(GZIP, data, magic=2, limit=MiB)
        except FormatError as e:
            return type(e)


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), max_size=4),
    cut=st.one_of(st.none(), st.floats(0, 1)),
    members=st.integers(1, 3),
)
def test_isal_and_zlib_agree_on_damaged_gzip(
    edits: list[tuple[float, int]], cut: float | None, members: int
) -> None:
    """Whatever the damage, both inflaters return the same bytes or the same error class."""
    data = bytearray(_CORPUS[(GZIP, 2)] * members)
    for where, value in edits:
        data[int(where * len(data))] = value
    if cut is not None:
        del data[int(cut * len(data)) :]
    assert _outcome(bytes(data), "isal") == _outcome(bytes(data), "zlib")


@pytest.mark.parametrize("codec_id", sorted(codecs.CODECS))
def test_the_registry_levels_and_framings(codec_id: int) -> None:
    """Every level the registry offers (its bounds and Kafka's default) compresses, and the
    codec's own decompressor gives the data back."""
    c = codecs.CODECS[codec_id]
    assert codecs.CODEC_IDS[c.name] == c.id and codecs.codec_name(c.id) == c.name
    data = b"klogtool " * 5000
    levels = [None] if c.levels is None else [c.levels[0], c.default_level, c.levels[1]]
    assert c.levels is None or c.levels[0] <= c.default_level <= c.levels[1]  # type: ignore[operator]
    for magic in (0, 1, 2) if not c.v2_only else (2,):
        for level in levels:
            packed = codecs.compress(c.id, data, magic=magic, level=level)
            assert codecs.decompress(c.id, packed, magic=magic, limit=len(data)) == data
    if c.v2_only:
        with pytest.raises(UnsupportedError, match="only valid in v2"):
            codecs.compress(c.id, data, magic=1)

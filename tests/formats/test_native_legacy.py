"""v0/v1 compressed wrappers decompressed by the native engine (issue 25).

The native engine decompresses a wrapper's value (gzip, snappy raw or xerial-framed, lz4 with
v0's broken header checksum or v1's right one) exactly as ``codecs.decompress`` does, under the
same bound (``--max-batch-bytes`` bounds the decompressed inner set), and hands back anything
else (zstd is not a v0/v1 codec; a corrupt stream; output past the bound), for the python
engine to say what is wrong. A well-formed wrapper is read without a hand-back.
"""

from __future__ import annotations

import gzip
import random
import struct
from collections import Counter
from pathlib import Path

import lz4.block
import lz4.frame
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import run
from support.fuzz import fuzz

from klogtool.formats import codecs, engine, engine_stats, legacy
from klogtool.formats.batch import CREATE_TIME, LOG_APPEND_TIME, Record
from klogtool.formats.crc import crc32
from klogtool.formats.errors import FormatError, LimitExceededError
from klogtool.formats.records import SegmentScanner

needs_native = pytest.mark.skipif(not engine.native_available(), reason="no native engine")

T0 = 1_700_000_000_000


def _delta(before: dict[str, int]) -> dict[str, int]:
    after = engine_stats()
    return {r: n - before.get(r, 0) for r, n in after.items() if n != before.get(r, 0)}


def _inner_set(records: list[Record], magic: int, ts_type: int) -> bytes:
    first = records[0].offset
    return b"".join(
        legacy.encode_message(
            r.offset if magic == 0 else r.offset - first,
            r.key,
            r.value,
            magic=magic,
            timestamp=r.timestamp if ts_type == CREATE_TIME else T0,
            timestamp_type=ts_type,
        )
        for r in records
    )


def _lz4_frame(data: bytes, magic: int, variant: int) -> bytes:
    """lz4 frames as producers wrote them: klogtool's own (Kafka's), block checksums, a content
    size; v0's header checksum is the broken one (KAFKA-3160) or any byte at all."""
    if variant == 0:
        return codecs.compress(codecs.LZ4, data, magic=magic)
    frame = bytearray(
        lz4.frame.compress(
            data, block_linked=False, store_size=variant == 2, block_checksum=variant == 1
        )
    )
    end = 6 + (8 if frame[4] & 0x08 else 0)
    hashed = bytes(frame[:end]) if magic == 0 else bytes(frame[4:end])
    frame[end] = (codecs.xxh32(hashed) >> 8) & 0xFF
    if magic == 0 and variant == 3:
        frame[end] ^= 0x5A  # v0: the header checksum is not read at all
    return bytes(frame)


def _compressed(data: bytes, codec: int, magic: int, variant: int) -> bytes:
    if codec == codecs.GZIP:
        return (
            gzip.compress(data, mtime=0) if variant else codecs.compress(codec, data, magic=magic)
        )
    if codec == codecs.SNAPPY:
        if variant:  # a raw snappy block, as some clients wrote it
            import cramjam

            return bytes(cramjam.snappy.compress_raw(data))
        return codecs.compress(codec, data, magic=magic)  # xerial-framed, as Kafka writes it
    return _lz4_frame(data, magic, variant)


def _wrapper(records: list[Record], codec: int, magic: int, ts_type: int, variant: int) -> bytes:
    if magic == 0:
        ts_type = CREATE_TIME
    inner = _inner_set(records, magic, ts_type)
    value = _compressed(inner, codec, magic, variant)
    ts = (
        -1
        if magic == 0
        else (T0 if ts_type == LOG_APPEND_TIME else max(r.timestamp for r in records))
    )
    return legacy.encode_message(
        records[-1].offset,
        None,
        value,
        magic=magic,
        timestamp=ts,
        timestamp_type=ts_type,
        compression=codec,
    )


_payload = st.one_of(st.none(), st.binary(max_size=40), st.text(max_size=20).map(str.encode))


@st.composite
def _records(draw: st.DrawFn) -> list[Record]:
    n = draw(st.integers(1, 12))
    off = draw(st.integers(0, 1 << 40))
    out = []
    for _ in range(n):
        ts = draw(st.integers(-1, 1 << 42))
        out.append(Record(off, ts, draw(_payload), draw(_payload)))
        off += draw(st.sampled_from([1, 1, 1, 2, 7]))
    return out


def _read(data: bytes, name: str, max_batch_bytes: int) -> list[tuple] | tuple:
    out: list[tuple] = []
    try:
        with engine.using(name):
            for batch in SegmentScanner(data, stop_on_crc=False):
                for r in batch.records(max_batch_bytes):
                    out.append(
                        (r.offset, r.timestamp, r.key and bytes(r.key), r.value and bytes(r.value))
                        + (r.attributes, r.crc, r.crc_valid)
                    )
    except FormatError as e:
        return (type(e).__name__, e.code, str(e), e.position)
    return out


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=_records(),
    codec=st.sampled_from([codecs.GZIP, codecs.SNAPPY, codecs.LZ4]),
    magic=st.sampled_from([0, 1]),
    ts_type=st.sampled_from([CREATE_TIME, LOG_APPEND_TIME]),
    variant=st.integers(0, 3),
)
def test_generated_wrappers_decode_identically_without_a_handback(
    records: list[Record], codec: int, magic: int, ts_type: int, variant: int
) -> None:
    data = _wrapper(records, codec, magic, ts_type, variant)
    batch = next(iter(SegmentScanner(data)))
    value = bytes(batch.value)
    expected = codecs.decompress(codec, value, magic=magic, limit=64 << 20)
    before = engine_stats()
    with engine.using(engine.NATIVE):
        assert engine.legacy_decompress(codec, value, magic, 64 << 20, "t") == expected
    native = _read(data, engine.NATIVE, 64 << 20)
    assert _delta(before) == {}  # nothing handed back
    assert native == _read(data, engine.PYTHON, 64 << 20)
    assert isinstance(native, list) and len(native) == len(records)
    # every rendering natively, byte for byte the python renderers' lines
    stats: Counter = Counter()
    fuzz.compare_engines(batch, stats)
    assert stats["legacy-native-agreed"] == 1 and stats["decompress-native-agreed"] >= 1, stats
    assert all(stats[f"{r}-agreed"] == 1 for r in ("jsonl", "text", "kafka")), stats
    # (the oracle's second, small limit may be below the inner set's size: handed back)
    assert not any(k.endswith("handed-back") and "decompress" not in k for k in stats), stats


@needs_native
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=_records(),
    codec=st.sampled_from([codecs.GZIP, codecs.SNAPPY, codecs.LZ4]),
    magic=st.sampled_from([0, 1]),
    cut=st.integers(0, 1 << 16),
)
def test_max_batch_bytes_bounds_the_inner_set_alike(
    records: list[Record], codec: int, magic: int, cut: int
) -> None:
    """Under a limit below the inner set's size both engines fail with the same error (the
    native engine hands back: size-limit); at the size exactly both read it."""
    data = _wrapper(records, codec, magic, CREATE_TIME, 0)
    inner = len(_inner_set(records, magic, CREATE_TIME))
    limit = cut % (inner + 1)
    python = _read(data, engine.PYTHON, limit)
    assert _read(data, engine.NATIVE, limit) == python
    if limit < inner:
        assert python[0] == LimitExceededError.__name__, python
        batch = next(iter(SegmentScanner(data)))
        with engine.using(engine.NATIVE):
            assert engine.legacy_decompress(codec, batch.value, magic, limit, "t") is None
    else:
        assert isinstance(python, list)


@needs_native
def test_lz4_header_checksum_v0_any_v1_checked() -> None:
    """v0 frames: any header checksum byte (Kafka's v0 writers got it wrong); v1: the right one
    or a hand-back and the python engine's error."""
    records = [Record(i, T0 + i, b"k", b"v%d" % i) for i in range(5)]
    inner = _inner_set(records, 1, CREATE_TIME)
    frame = bytearray(codecs.compress(codecs.LZ4, inner, magic=1))
    frame[6] ^= 0xFF
    with engine.using(engine.NATIVE):
        assert engine.legacy_decompress(codecs.LZ4, bytes(frame), 0, 1 << 20, "t") == inner
        before = engine_stats()
        assert engine.legacy_decompress(codecs.LZ4, bytes(frame), 1, 1 << 20, "t") is None
        assert _delta(before) == {"malformed": 1}
    with pytest.raises(FormatError, match="header checksum"):
        codecs.decompress(codecs.LZ4, bytes(frame), magic=1, limit=1 << 20)
    # zstd is v2's only: handed back (the python engine refuses it, with its error)
    z = codecs.compress(codecs.ZSTD, inner, magic=2)
    with engine.using(engine.NATIVE):
        assert engine.legacy_decompress(codecs.ZSTD, z, 1, 1 << 20, "t") is None


@needs_native
def test_mutated_wrappers_agree_or_are_handed_back() -> None:
    """bench/fuzz.py's oracle on mutated v0/v1 wrappers of every codec (their compressed
    values mutated as bytes, and their inner sets mutated before compression): the native
    decompression is python's, byte for byte, or a hand-back; records and lines agree."""
    rng = random.Random(2025)
    seeds = [s for s in fuzz.build_seeds(rng) if s.magic < 2 and s.codec != codecs.NONE]
    assert {(s.magic, s.codec) for s in seeds} == {
        (m, c) for m in (0, 1) for c in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4)
    }
    stats: Counter = Counter()
    for i in range(900):
        seed = seeds[i % len(seeds)]
        data = fuzz.mutate(rng, seed) if i % 2 else fuzz._inner(rng, seed)
        for batch in SegmentScanner(data, stop_on_crc=False, strict=False):
            fuzz.compare_engines(batch, stats)
    assert stats["decompress-native-agreed"] > 500, stats
    assert stats["decompress-native-handed-back"] > 50, stats
    assert stats["legacy-native-agreed"] > 300 and stats["legacy-errors-agreed"] > 50, stats


def test_a_wrapper_segment_dumps_without_a_handback(tmp_path: Path, klogtool_engine: str) -> None:
    """dump-segments over v0 and v1 wrappers of every codec: no hand-back (each wrapper was
    a `v0v1-wrapper` hand-back before the native engine decompressed them)."""
    rng = random.Random(5)
    parts = []
    off = 0
    for magic in (0, 1):
        for codec in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4):
            recs = [Record(off + i, T0 + i, rng.randbytes(4), b"value %d" % i) for i in range(20)]
            off += 20
            parts.append(legacy.encode_wrapper(recs, magic=magic, compression=codec))
    part = tmp_path / "t-0"
    part.mkdir()
    seg = part / "00000000000000000000.log"
    seg.write_bytes(b"".join(parts))
    for fmt in ("text", "jsonl", "kafka"):
        before = engine_stats()
        code, out, _ = run("dump-segments", "--print-data", "--format", fmt, str(seg))
        assert code == 0, out
        assert _delta(before) == {}, fmt


@pytest.mark.parametrize("magic", [0, 1])
def test_a_bad_wrapper_is_still_the_python_engines_error(
    tmp_path: Path, klogtool_engine: str, magic: int
) -> None:
    """A corrupt gzip value: the native engine hands it back and the error is python's."""
    recs = [Record(i, T0, None, b"x" * 50) for i in range(10)]
    data = bytearray(legacy.encode_wrapper(recs, magic=magic, compression=codecs.GZIP))
    data[-12] ^= 0xFF  # inside the deflate stream or its trailer
    struct.pack_into(">I", data, 12, crc32(bytes(data[16:])))
    got = _read(bytes(data), klogtool_engine, 1 << 20)
    assert got == _read(bytes(data), engine.PYTHON, 1 << 20)
    assert isinstance(got, tuple), got

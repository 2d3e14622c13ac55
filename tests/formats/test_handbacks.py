"""The batches the native engine hands back to the python engine, and why.

Producers write framings beside the plain ones klogtool's own encoder writes: lz4 frames with a
content size (kafka-python) or block checksums, gzip members with header fields or several
members, concatenated xerial snappy streams. Each such well-formed batch must decode to the
python engine's records without a hand-back (``engine_stats`` says), and each malformed variant
must be handed back, for a reason that names it, and fail with the python engine's exact error.
``KLOGTOOL_ENGINE_STATS=1`` prints the counts at exit.
"""

from __future__ import annotations

import gzip
import random
import struct
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import lz4.frame
import pytest
from support.cli import run_subprocess
from support.fuzz import fuzz

import klogtool.formats
from klogtool.formats import codecs, engine, engine_stats, v2
from klogtool.formats.batch import Record
from klogtool.formats.crc import crc32c
from klogtool.formats.errors import FormatError
from klogtool.formats.records import SegmentScanner

MAX = 64 << 20

RECORDS = [
    Record(offset=i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"value %d " % i * 20)
    for i in range(300)
]
# incompressible values: lz4 stores such blocks uncompressed (the high bit of the size word)
NOISE = [
    Record(offset=i, timestamp=i, key=None, value=random.Random(i).randbytes(3000))
    for i in range(60)
]


def _area(records: list[Record]) -> bytes:
    return v2.encode_batch(records, base_offset=0)[61:]


def _batch(codec: int, payload: bytes, records: list[Record] = RECORDS) -> bytes:
    """A v2 batch of ``records`` whose compressed records area is ``payload``."""
    plain = v2.encode_batch(records, base_offset=0)
    out = bytearray(plain[:61]) + payload
    struct.pack_into(">i", out, 8, len(out) - 12)  # the batch length
    struct.pack_into(">h", out, 21, codec)  # the attributes
    struct.pack_into(">I", out, 17, crc32c(out[21:]))
    return bytes(out)


# -- lz4 ---------------------------------------------------------------------------------------


def _lz4(area: bytes, **options: object) -> bytes:
    """What lz4.frame writes with ``options`` (independent blocks, as Kafka reads them)."""
    return bytes(lz4.frame.compress(area, block_linked=False, **options))


def _lz4_descriptor_end(frame: bytes) -> int:
    return 6 + (8 if frame[4] & 0x08 else 0)


def _lz4_rehash(frame: bytearray) -> bytes:
    """``frame`` with its header checksum made right again."""
    end = _lz4_descriptor_end(bytes(frame))
    frame[end] = (codecs.xxh32(bytes(frame[4:end])) >> 8) & 0xFF
    return bytes(frame)


def _lz4_content_size(area: bytes, size: int) -> bytes:
    frame = bytearray(_lz4(area, store_size=True))
    struct.pack_into("<Q", frame, 6, size)
    return _lz4_rehash(frame)


def _lz4_bad_block_checksum(area: bytes) -> bytes:
    frame = bytearray(_lz4(area, store_size=True, block_checksum=True))
    start = _lz4_descriptor_end(bytes(frame)) + 1
    (word,) = struct.unpack_from("<I", frame, start)
    frame[start + 4 + (word & 0x7FFFFFFF)] ^= 1  # the first block's checksum
    return bytes(frame)


# -- gzip --------------------------------------------------------------------------------------


def _gzip_member(
    data: bytes,
    *,
    extra: bytes | None = None,
    name: bytes | None = None,
    comment: bytes | None = None,
    hcrc: bool = False,
    flags: int = 0,
    header_crc: int | None = None,
) -> bytes:
    """One gzip member with the optional header fields given (RFC 1952)."""
    flags |= (4 if extra is not None else 0) | (8 if name is not None else 0)
    flags |= (16 if comment is not None else 0) | (2 if hcrc else 0)
    head = b"\x1f\x8b\x08" + bytes([flags]) + b"\x00\x00\x00\x00\x00\xff"
    if extra is not None:
        head += struct.pack("<H", len(extra)) + extra
    if name is not None:
        head += name + b"\x00"
    if comment is not None:
        head += comment + b"\x00"
    if hcrc:
        crc = zlib.crc32(head) & 0xFFFF if header_crc is None else header_crc
        head += struct.pack("<H", crc)
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflater.compress(data) + deflater.flush()
    return head + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def _gzip_file(data: bytes) -> bytes:
    """What Python's gzip module writes for a named file (FNAME, an mtime)."""
    import io

    out = io.BytesIO()
    with gzip.GzipFile(filename="records.bin", mode="wb", fileobj=out, mtime=1) as f:
        f.write(data)
    return out.getvalue()


def _halves(area: bytes, make: Callable[[bytes], bytes]) -> bytes:
    half = len(area) // 2
    return make(area[:half]) + make(area[half:])


# -- snappy ------------------------------------------------------------------------------------


def _xerial(data: bytes) -> bytes:
    return codecs.compress(codecs.SNAPPY, data, magic=2)


def _xerial_header(version: int = 1) -> bytes:
    return codecs._XERIAL_MAGIC + struct.pack(">ii", version, 1)


# -- the shapes --------------------------------------------------------------------------------

Shape = Callable[[], bytes]

# well-formed: the python engine reads them, and so must the native engine, without a hand-back
WELL_FORMED: dict[str, Shape] = {
    # kafka-python's producer: FLG 0x68 (content size), 64 KiB blocks
    "lz4 content size": lambda: _batch(codecs.LZ4, _lz4(_area(RECORDS), store_size=True)),
    "lz4 block checksums": lambda: _batch(
        codecs.LZ4, _lz4(_area(RECORDS), store_size=False, block_checksum=True)
    ),
    "lz4 every option, 256 KiB blocks": lambda: _batch(
        codecs.LZ4,
        _lz4(
            _area(RECORDS),
            store_size=True,
            block_checksum=True,
            content_checksum=True,
            block_size=lz4.frame.BLOCKSIZE_MAX256KB,
        ),
    ),
    "lz4 uncompressed blocks with checksums": lambda: _batch(
        codecs.LZ4, _lz4(_area(NOISE), store_size=True, block_checksum=True), NOISE
    ),
    # Kafka (and the python engine) skip the content size without checking it
    "lz4 a content size that is wrong": lambda: _batch(
        codecs.LZ4, _lz4_content_size(_area(RECORDS), 12345)
    ),
    "gzip a file name (python's gzip module)": lambda: _batch(
        codecs.GZIP, _gzip_file(_area(RECORDS))
    ),
    "gzip every header field": lambda: _batch(
        codecs.GZIP,
        _gzip_member(
            _area(RECORDS), extra=b"AB\x02\x00xy", name=b"n", comment=b"a comment", hcrc=True
        ),
    ),
    "gzip FTEXT": lambda: _batch(codecs.GZIP, _gzip_member(_area(RECORDS), flags=1)),
    "gzip two members": lambda: _batch(codecs.GZIP, _halves(_area(RECORDS), gzip.compress)),
    "gzip the same member twice": lambda: _batch(
        codecs.GZIP, gzip.compress(_area(RECORDS[:150])) * 2, RECORDS[:150] * 2
    ),
    "gzip three members, with header fields": lambda: _batch(
        codecs.GZIP,
        _gzip_member(_area(RECORDS)[:100], name=b"a", hcrc=True)
        + _gzip_member(_area(RECORDS)[100:5000], comment=b"b")
        + _gzip_member(_area(RECORDS)[5000:], extra=b""),
    ),
    "gzip an empty member after one": lambda: _batch(
        codecs.GZIP, gzip.compress(_area(RECORDS)) + gzip.compress(b"")
    ),
    "gzip bytes after the members that do not start one": lambda: _batch(
        codecs.GZIP, _halves(_area(RECORDS), gzip.compress) + b"\x1f\x8b\x08 short"
    ),
    "snappy two xerial streams": lambda: _batch(codecs.SNAPPY, _halves(_area(RECORDS), _xerial)),
    "snappy a header again, then chunks": lambda: _batch(
        codecs.SNAPPY,
        _xerial(_area(RECORDS)[:999]) + _xerial_header(5) + _xerial(_area(RECORDS)[999:])[16:],
    ),
    "snappy a magic that stops the stream": lambda: _batch(
        codecs.SNAPPY, _xerial(_area(RECORDS)) + b"\x82SNAxxxxxxxxxxxx"
    ),
}

# The shapes the native engine still hands back, and the reason it gives: none.
HANDED_BACK: dict[str, str] = {}

# malformed: the python engine rejects them; the native engine hands them back, saying why
MALFORMED: dict[str, tuple[Shape, str]] = {
    "lz4 a block checksum that does not hold": (
        lambda: _batch(codecs.LZ4, _lz4_bad_block_checksum(_area(RECORDS))),
        "lz4-block-checksum",
    ),
    "lz4 a frame cut before its end mark": (
        lambda: _batch(codecs.LZ4, _lz4(_area(RECORDS), store_size=True)[:-4]),
        "malformed",
    ),
    "gzip a header CRC that does not hold": (
        lambda: _batch(codecs.GZIP, _gzip_member(_area(RECORDS), hcrc=True, header_crc=1)),
        "gzip-header-fields",
    ),
    "gzip a second member cut short": (
        lambda: _batch(codecs.GZIP, _halves(_area(RECORDS), gzip.compress)[:-3]),
        "gzip-multi-member",
    ),
    "gzip a second member whose CRC does not hold": (
        lambda: _batch(
            codecs.GZIP, _halves(_area(RECORDS), gzip.compress)[:-8] + b"\0\0\0\0" + b"\0\0\0\0"
        ),
        "gzip-multi-member",
    ),
    "snappy a concatenated header of an old version": (
        lambda: _batch(codecs.SNAPPY, _xerial(_area(RECORDS)) + _xerial_header(0)),
        "snappy-concatenated-xerial",
    ),
    "snappy a concatenated header cut short": (
        lambda: _batch(codecs.SNAPPY, _xerial(_area(RECORDS)) + _xerial_header()[:10]),
        "snappy-concatenated-xerial",
    ),
}


def _b(v: bytes | memoryview | None) -> bytes | None:
    return None if v is None else bytes(v)


def _records_then_error(data: bytes, limit: int = MAX) -> tuple[list[tuple], tuple | None]:
    """The records the batch's iteration yields under the engine in use, then its error."""
    (batch,) = SegmentScanner(memoryview(data))
    got: list[tuple] = []
    try:
        for r in batch.records(limit):
            got.append((r.offset, r.timestamp, _b(r.key), _b(r.value), tuple(r.headers)))
    except FormatError as e:
        return got, (type(e).__name__, e.code, str(e), e.position)
    return got, None


def _read(data: bytes, limit: int = MAX) -> list[tuple] | tuple:
    """The batch's records under the engine in use, or its error."""
    records, error = _records_then_error(data, limit)
    return records if error is None else error


def _delta(before: dict[str, int]) -> dict[str, int]:
    after = engine_stats()
    return {r: n - before.get(r, 0) for r, n in after.items() if n != before.get(r, 0)}


@pytest.mark.parametrize("shape", WELL_FORMED)
def test_a_producers_framing_reads_alike_without_a_handback(
    shape: str, klogtool_engine: str
) -> None:
    data = WELL_FORMED[shape]()
    with engine.using(engine.PYTHON):
        expected = _read(data)
    assert isinstance(expected, list) and expected, expected
    before = engine_stats()
    assert _read(data) == expected
    handed_back = _delta(before)
    if klogtool_engine == engine.PYTHON:
        assert handed_back == {}
    elif shape in HANDED_BACK:
        assert handed_back == {HANDED_BACK[shape]: 1}
    else:
        assert handed_back == {}, "a well-formed batch was handed back"
        stats: Counter = Counter()  # and its columns, lines and re-encoding agree too
        fuzz.compare_engines(next(iter(SegmentScanner(memoryview(data)))), stats)
        assert stats["native-agreed"] == 1, stats


@pytest.mark.parametrize("shape", MALFORMED)
def test_a_malformed_framing_is_handed_back_with_its_reason(
    shape: str, klogtool_engine: str
) -> None:
    make, reason = MALFORMED[shape]
    data = make()
    with engine.using(engine.PYTHON):
        expected = _read(data)
    assert isinstance(expected, tuple), "the python engine read it"
    before = engine_stats()
    assert _read(data) == expected  # the python engine's exact error, message and position
    assert _delta(before) == ({} if klogtool_engine == engine.PYTHON else {reason: 1})


def test_output_past_the_limit_is_handed_back_as_such(klogtool_engine: str) -> None:
    data = _batch(codecs.GZIP, gzip.compress(_area(RECORDS)))
    with engine.using(engine.PYTHON):
        expected = _read(data, limit=1000)
    assert expected[0] == "LimitExceededError"
    before = engine_stats()
    assert _read(data, limit=1000) == expected
    assert _delta(before) == ({} if klogtool_engine == engine.PYTHON else {"size-limit": 1})


def test_engine_stats_is_public() -> None:
    assert "engine_stats" in klogtool.formats.__all__
    assert klogtool.formats.engine_stats is engine.engine_stats


def _segment(tmp_path: Path, data: bytes) -> Path:
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(data)
    return part / "00000000000000000000.log"


def test_stats_are_printed_at_exit_when_asked(
    tmp_path: Path, klogtool_engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seg = _segment(tmp_path, _batch(codecs.GZIP, gzip.compress(_area(RECORDS))))
    args = ("dump-segments", "--deep-iteration", "--max-batch-bytes", "1000", str(seg))
    monkeypatch.delenv("KLOGTOOL_ENGINE_STATS", raising=False)
    assert "klogtool engine:" not in run_subprocess(*args).stderr
    monkeypatch.setenv("KLOGTOOL_ENGINE_STATS", "1")
    last = run_subprocess(*args).stderr.splitlines()[-1]
    if klogtool_engine == engine.NATIVE:
        assert last == "klogtool engine: 1 batch handed back: size-limit 1"
    else:
        assert last.startswith("klogtool engine: python")
    seg.write_bytes(_batch(codecs.GZIP, gzip.compress(_area(RECORDS))))
    last = run_subprocess("dump-segments", "--deep-iteration", str(seg)).stderr.splitlines()[-1]
    if klogtool_engine == engine.NATIVE:
        assert last == "klogtool engine: 0 batches handed back"


def test_nothing_is_counted_on_the_plain_framings(klogtool_engine: str) -> None:
    for codec in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD):
        data = v2.encode_batch(RECORDS, compression=codec)
        before = engine_stats()
        assert _read(data)
        assert _delta(before) == {}


@pytest.mark.parametrize("shape", WELL_FORMED)
def test_mutated_framings_agree_or_are_handed_back(shape: str, klogtool_engine: str) -> None:
    """Bytes of each framing flipped, cut or repeated: the native engine reads the result
    exactly as the python engine does, or hands it back (``compare_engines`` asserts it)."""
    if klogtool_engine != engine.NATIVE:
        pytest.skip("compares the engines: runs under the native engine")
    data = WELL_FORMED[shape]()
    rng = random.Random(shape)
    stats: Counter = Counter()
    for _ in range(150):
        payload = bytearray(data[61:])
        for _ in range(rng.choice((1, 1, 2, 3))):
            at = rng.randrange(len(payload))
            how = rng.random()
            if how < 0.6:
                payload[at] ^= 1 << rng.randrange(8)
            elif how < 0.8:
                del payload[at:]
                payload += bytes(rng.randrange(3))
                if not payload:
                    payload += b"\0"
            else:
                payload[at:at] = payload[max(0, at - 20) : at]
        batch = _batch(data[22] & 7, bytes(payload), _records_of(data))
        fuzz.compare_engines(next(iter(SegmentScanner(memoryview(batch)))), stats)
    assert stats["native-agreed"] + stats["native-handed-back"] == 150, stats


def _records_of(data: bytes) -> list[Record]:
    """Records whose uncompressed batch has ``data``'s header fields (count, deltas)."""
    (count,) = struct.unpack_from(">i", data, 57)
    return RECORDS if count == len(RECORDS) else NOISE if count == len(NOISE) else RECORDS[:150] * 2


def test_dump_segments_says_why_it_rendered_in_python(tmp_path: Path, klogtool_engine: str) -> None:
    """The json decoder (every batch) is counted; invalid UTF-8 is rendered natively (as
    python's backslashreplace and replace write it): nothing handed back."""
    from support.cli import run

    plain = v2.encode_batch(RECORDS[:10], base_offset=0)
    binary = v2.encode_batch(
        [Record(offset=10, timestamp=0, key=b"\xff\xfe", value=b"\x80")], base_offset=10
    )
    seg = _segment(tmp_path, plain + binary)
    before = engine_stats()
    code, _, _ = run("dump-segments", "--print-data", "--value-decoder", "json", str(seg))
    assert code == 0
    native = klogtool_engine == engine.NATIVE
    assert _delta(before) == ({"render-decoder": 2} if native else {})
    before = engine_stats()
    for fmt in ("text", "jsonl", "kafka"):  # backslashreplace, and kafka's U+FFFD
        code, _, _ = run("dump-segments", "--print-data", "--format", fmt, str(seg))
        assert code == 0
    assert _delta(before) == {}


def test_a_batch_past_the_native_renderers_bound_is_counted(
    tmp_path: Path, klogtool_engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dump-segments renders a batch of more than native_render.MAX_RECORDS records in Python (the
    native renderer holds a batch's text in one buffer): the same lines, and counted."""
    from support.cli import run

    from klogtool.log.read import native_render

    monkeypatch.setattr(native_render, "MAX_RECORDS", 100)
    records = [Record(o, o, b"k", b"v%d" % o) for o in range(201)]
    small, large = v2.encode_batch(records[:100]), v2.encode_batch(records[100:], base_offset=100)
    seg = _segment(tmp_path, small + large)
    outputs = set()
    for name in (engine.PYTHON, klogtool_engine):
        with engine.using(name):
            before = engine_stats()
            code, out, _ = run("dump-segments", "--print-data", "--format", "jsonl", str(seg))
            assert code == 0
            outputs.add(out)
    native = klogtool_engine == engine.NATIVE
    assert _delta(before) == ({"render-many-records": 1} if native else {})
    assert len(outputs) == 1


@pytest.mark.parametrize("count", [10_000, 65_537, 300_000])
def test_a_batch_of_many_records(count: int, klogtool_engine: str) -> None:
    """Real producers write batches of 10,000 small records and more (every client's 'large'
    capture in fixtures/producers); a batch of tiny records may hold millions. records_v2
    reads any count natively, 64 records at a time (it once stopped at 65,536)."""
    records = [Record(o, o, b"k", b"v") for o in range(count)]
    data = v2.encode_batch(records, compression=codecs.ZSTD)
    with engine.using(engine.PYTHON):
        expected = _read(data)
    before = engine_stats()
    assert _read(data) == expected and len(expected) == count
    assert _delta(before) == {}


@pytest.mark.parametrize("codec", sorted(codecs.CODEC_NAMES), ids=codecs.CODEC_NAMES.get)
@pytest.mark.parametrize("bad", ["record 250 cut", "bytes after the last"])
def test_a_batch_read_natively_up_to_a_bad_record(
    codec: int, bad: str, klogtool_engine: str
) -> None:
    """The native engine makes records until the first bad one (or bytes after the last), and
    the python engine reads on from there: the same records, then the same error, as the
    python engine's walk of the whole batch; one hand-back, `malformed`."""
    area = bytearray(_area(RECORDS))
    if bad == "record 250 cut":
        at = len(_area(RECORDS[:250]))  # record 250's length varint: one more than it holds
        assert area[at] & 0x7F < 0x7E
        area[at] += 2  # (zig-zag)
    else:
        area += b"\x00\x00"
    payload = bytes(area) if codec == codecs.NONE else codecs.compress(codec, area, magic=2)
    data = _batch(codec, payload)
    with engine.using(engine.PYTHON):
        expected = _records_then_error(data)
    assert len(expected[0]) == (250 if bad == "record 250 cut" else 300) and expected[1]
    before = engine_stats()
    assert _records_then_error(data) == expected
    native = klogtool_engine == engine.NATIVE
    assert _delta(before) == ({"malformed": 1} if native else {})

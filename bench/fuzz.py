#!/usr/bin/env python3
"""Mutation fuzzer for klogtool's record formats (v0, v1, v2; every codec).

Valid segments of each magic x codec, and batches real clients wrote (``fixtures/producers``),
are mutated (bit flips, byte overwrites, truncation, length/count fields rewritten with extreme
values, zero runs, inserted or deleted junk, and mutations *inside* compressed payloads or
record areas followed by re-compression and CRC repair, so the decoders behind the CRC get
exercised too). Each result is scanned in every scanner mode and every record decoded; the
only exceptions allowed are ``klogtool.formats.errors.FormatError`` subclasses. Anything else
is a bug.

    python bench/fuzz.py --iterations 100000 --seed 1

With the native engine active (the default where it is built) the fuzzer is also a
differential test: every v2 batch goes to both engines, and wherever the native engine decodes
a batch (rather than handing it back) its records, record count, offset check and largest
timestamp must equal the python engine's, which must not have raised; so must the records
find's native filter keeps (a random filter a batch) equal those ``RecordFilter.matches``
keeps.

Case ``i`` of seed ``S`` depends on nothing else, so ``--seed S --start i --iterations 1``
replays it (``--save DIR`` writes the failing input there). ``tests/formats/test_fuzz.py`` runs
the same fuzzer small.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import struct
import sys
import time
import traceback
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

try:
    import crc32c
except ImportError:  # pragma: no cover
    sys.exit("crc32c is required")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from array import array  # noqa: E402

from klogtool.commands.dump_segments import KafkaRenderer  # noqa: E402
from klogtool.formats import codecs, engine, legacy, v2  # noqa: E402
from klogtool.formats.batch import (  # noqa: E402
    CREATE_TIME,
    LOG_APPEND_TIME,
    TIMESTAMP_TYPE_NAMES,  # noqa: E402
    NativeWrapper,
    Record,
)
from klogtool.formats.errors import FormatError  # noqa: E402
from klogtool.formats.records import SegmentScanner, read_batch  # noqa: E402
from klogtool.log.context import ReadContext  # noqa: E402
from klogtool.log.export import native_columns  # noqa: E402
from klogtool.log.objects import batch_object  # noqa: E402
from klogtool.log.read import native_render  # noqa: E402
from klogtool.log.read.dumper import Dumper, DumpOptions  # noqa: E402
from klogtool.log.record_filter import RecordFilter  # noqa: E402
from klogtool.output import render_text, to_json  # noqa: E402

MAX_BATCH_BYTES = 1 << 20  # small, so a decompression bomb is cheap to detect
KINDS = [(2, c) for c in (0, 1, 2, 3, 4)] + [(m, c) for m in (1, 0) for c in (0, 1, 2, 3)]
INTERESTING_32 = [
    0,
    1,
    -1,
    -2,
    13,
    14,
    25,
    26,
    33,
    34,
    48,
    49,
    60,
    61,
    62,
    127,
    128,
    255,
    4096,
    65535,
    65536,
    2**24,
    2**31 - 1,
    -(2**31),
    -(2**31) + 1,
    2**30,
]
INTERESTING_8 = [0, 1, 2, 3, 4, 5, 7, 8, 0x10, 0x20, 0x40, 0x7F, 0x80, 0xFE, 0xFF]
T0 = 1_700_000_000_000


# -- seeds --------------------------------------------------------------------------------------
class Seed:
    """A valid segment plus what mutators need to know about it."""

    def __init__(self, name: str, data: bytes, magic: int, codec: int):
        self.name = name
        self.data = data
        self.magic = magic
        self.codec = codec
        self.entries = [(b.position, b.size) for b in SegmentScanner(data)]


def _records(rng: random.Random, base: int, n: int) -> list[Record]:
    out = []
    off = base
    for i in range(n):
        key = None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 12))
        value = None if rng.random() < 0.15 else (b"v%03d " % i) * rng.randrange(0, 20)
        headers = tuple(
            (f"h{j}", None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 6)))
            for j in range(rng.choice([0, 0, 1, 3]))
        )
        out.append(Record(off, T0 + rng.randrange(-50, 5000), key, value, headers))
        off += rng.choice([1, 1, 1, 2, 9])
    return out


def build_seeds(rng: random.Random) -> list[Seed]:
    seeds = []
    for magic, codec in KINDS:
        parts = []
        off = rng.randrange(0, 1 << 20)
        for i in range(4):
            recs = _records(rng, off, rng.randrange(1, 8))
            off = recs[-1].offset + 1
            if magic == 2:
                kw: dict = dict(
                    compression=codec,
                    partition_leader_epoch=rng.randrange(-1, 5),
                    producer_id=rng.choice([-1, 1234]),
                    producer_epoch=rng.choice([-1, 3]),
                    base_sequence=rng.choice([-1, 0, 2**31 - 3]),
                    is_transactional=rng.random() < 0.3,
                )
                if i == 1:
                    kw.update(timestamp_type=LOG_APPEND_TIME, max_timestamp=T0 + 10**6)
                if i == 2 and rng.random() < 0.5:
                    kw["delete_horizon_ms"] = T0 + 86_400_000
                parts.append(v2.encode_batch(recs, **kw))
                if i == 2:  # an emptied batch and a control marker
                    parts.append(
                        v2.encode_batch([], base_offset=off, last_offset_delta=2, max_timestamp=T0)
                    )
                    off += 3
                    parts.append(
                        v2.encode_batch(
                            [Record(off, T0, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5))],
                            is_control=True,
                            is_transactional=True,
                            producer_id=7,
                            producer_epoch=0,
                        )
                    )
                    off += 1
            elif codec == codecs.NONE:
                for r in recs:
                    ts_type = LOG_APPEND_TIME if magic == 1 and i == 1 else CREATE_TIME
                    parts.append(
                        legacy.encode_message(
                            r.offset,
                            r.key,
                            r.value,
                            magic=magic,
                            timestamp=r.timestamp,
                            timestamp_type=ts_type,
                        )
                    )
            else:
                ts_type = LOG_APPEND_TIME if magic == 1 and i == 1 else CREATE_TIME
                parts.append(
                    legacy.encode_wrapper(
                        recs,
                        magic=magic,
                        compression=codec,
                        timestamp_type=ts_type,
                        log_append_time=T0 + 10**6,
                    )
                )
        name = f"v{magic}-{codecs.CODEC_NAMES[codec]}"
        seeds.append(Seed(name, b"".join(parts), magic, codec))
    return seeds


PRODUCERS = Path(__file__).resolve().parents[1] / "fixtures" / "producers"
PRODUCER_SHARE = 0.4  # of the cases (bombs aside) that mutate a real client's batch
PRODUCER_FULL_WEIGHT_BYTES = 3000  # a larger seed is picked less, in proportion to its size


def producer_seeds() -> list[Seed]:
    """The smallest batch of each file in ``fixtures/producers`` (real clients' bytes: lz4
    frames with content sizes, librdkafka's and sarama's gzip, ...), the 10k-record ``large``
    shapes aside: their cases would cost seconds each."""
    seeds = []
    for path in sorted(PRODUCERS.glob("*/*.log")):
        if path.stem.startswith("large"):
            continue
        data = path.read_bytes()
        smallest = min(SegmentScanner(data), key=lambda b: b.size)
        one = data[smallest.position : smallest.position + smallest.size]
        name = f"{path.parent.name}:{path.stem}"
        seeds.append(Seed(name, one, smallest.magic, smallest.compression))
    return seeds


def build_bombs(size: int = 4 * MAX_BATCH_BYTES) -> list[Seed]:
    """Valid batches whose decompressed records exceed MAX_BATCH_BYTES."""
    big = Record(0, T0, None, bytes(size))
    out = []
    for magic, codec in KINDS:
        if codec == codecs.NONE:
            continue
        if magic == 2:
            data = v2.encode_batch([big], compression=codec)
        else:
            data = legacy.encode_wrapper([big], magic=magic, compression=codec)
        out.append(Seed(f"bomb-v{magic}-{codecs.CODEC_NAMES[codec]}", data, magic, codec))
    return out


# -- mutators -----------------------------------------------------------------------------------
def _pos(rng: random.Random, n: int) -> int:
    return rng.randrange(n) if n else 0


def _entry(rng: random.Random, seed: Seed) -> tuple[int, int]:
    return rng.choice(seed.entries) if seed.entries else (0, len(seed.data))


def _bytes_level(rng: random.Random, buf: bytearray, seed: Seed | None) -> None:
    """One raw mutation of ``buf`` in place."""
    n = len(buf)
    op = rng.randrange(11)
    if op == 0 and n:  # bit flips
        for _ in range(rng.randrange(1, 4)):
            p = _pos(rng, n)
            buf[p] ^= 1 << rng.randrange(8)
    elif op == 1 and n:  # byte overwrite
        p = _pos(rng, n)
        buf[p] = rng.choice(INTERESTING_8) if rng.random() < 0.6 else rng.randrange(256)
    elif op == 2 and n:  # truncation
        del buf[_pos(rng, n) :]
    elif op == 3 and n >= 4:  # an int32 anywhere gets an extreme value
        p = _pos(rng, n - 3)
        struct.pack_into(">i", buf, p, rng.choice(INTERESTING_32))
    elif op == 4 and seed is not None and seed.entries:  # a header field of an entry
        start, _size = _entry(rng, seed)
        if seed.magic == 2:
            field, fmt = rng.choice(
                [
                    (8, ">i"),
                    (57, ">i"),
                    (23, ">i"),
                    (12, ">i"),
                    (21, ">h"),
                    (53, ">i"),
                    (16, ">b"),
                    (0, ">q"),
                    (27, ">q"),
                ]
            )
        else:
            field, fmt = rng.choice(
                [(8, ">i"), (16, ">b"), (17, ">b"), (0, ">q")]
                + ([(26, ">i")] if seed.magic == 1 else [(18, ">i")])
            )
        if start + field + struct.calcsize(fmt) <= n:
            if fmt == ">i":
                value = rng.choice(INTERESTING_32)
            elif fmt == ">q":
                value = rng.choice([0, -1, 2**63 - 1, -(2**63), 1 << 40])
            elif fmt == ">h":
                value = rng.choice([0, 8, 0x10, 0x20, 0x40, 5, 6, 7, -1, 0x7FFF])
            else:
                value = rng.choice([-128, -1, 0, 1, 2, 3, 5, 7, 127])
            struct.pack_into(fmt, buf, start + field, value)
    elif op == 5 and n:  # a zero run
        p = _pos(rng, n)
        k = rng.choice([1, 4, 17, 64, 4096])
        buf[p : p + k] = bytes(min(k, n - p))
    elif op == 6:  # insert junk
        p = _pos(rng, n + 1)
        junk = rng.choice(
            [
                rng.randbytes(rng.randrange(1, 40)),
                bytes(rng.randrange(1, 30)),
                b"\xff" * rng.randrange(1, 12),
                b"\x80" * rng.randrange(1, 12),
            ]
        )
        buf[p:p] = junk
    elif op == 7 and n:  # delete a range
        p = _pos(rng, n)
        del buf[p : p + rng.randrange(1, 32)]
    elif op == 8 and n:  # duplicate a range (splice)
        p = _pos(rng, n)
        chunk = buf[p : p + rng.randrange(1, 200)]
        q = _pos(rng, n + 1)
        buf[q:q] = chunk
    elif op == 9 and n:  # an over-long varint
        p = _pos(rng, n)
        buf[p : p + 1] = b"\xff" * rng.randrange(5, 12) + b"\x01"
    elif n:  # a random byte
        buf[_pos(rng, n)] = rng.randrange(256)


def _fix_crcs(buf: bytearray) -> None:
    """Recompute the CRC of every entry that still frames, so decoding goes past the CRC."""
    pos = 0
    n = len(buf)
    while n - pos >= 17:
        size = struct.unpack_from(">i", buf, pos + 8)[0]
        end = pos + 12 + size
        if size < 14 or end > n:
            return
        magic = struct.unpack_from(">b", buf, pos + 16)[0]
        if magic >= 2 and size >= 49:
            struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(buf[pos + 21 : end])))
        elif magic < 2:
            struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16 : end])))
        pos = end


def _inner(rng: random.Random, seed: Seed) -> bytes:
    """Mutate the records area (v2) or the inner message set (legacy wrapper) of one entry
    *before* compression, then re-compress and repair length and CRC."""
    data = bytearray(seed.data)
    if not seed.entries:
        return bytes(data)
    start, size = _entry(rng, seed)
    entry = bytes(data[start : start + size])
    if seed.magic == 2:
        batch = v2.DefaultBatch(memoryview(entry))
        area = bytearray(batch.records_area())
        for _ in range(rng.randrange(1, 4)):
            _bytes_level(rng, area, None)
        body = codecs.compress(batch.compression, bytes(area), magic=2)
        new = bytearray(entry[:61]) + body
        struct.pack_into(">i", new, 8, len(new) - 12)
        if rng.random() < 0.3:
            struct.pack_into(">i", new, 57, rng.choice(INTERESTING_32))
        struct.pack_into(">I", new, 17, crc32c.crc32c(bytes(new[21:])))
    else:
        batch = legacy.LegacyBatch(memoryview(entry))
        if batch.compression == codecs.NONE or batch.value is None:
            return bytes(data)
        inner = bytearray(
            codecs.decompress(batch.compression, batch.value, magic=batch.magic, limit=1 << 24)
        )
        for _ in range(rng.randrange(1, 4)):
            _bytes_level(rng, inner, None)
        if rng.random() < 0.5:
            _fix_crcs(inner)
        value = codecs.compress(batch.compression, bytes(inner), magic=batch.magic)
        new = bytearray(
            legacy.encode_message(
                batch.last_offset,
                None,
                value,
                magic=batch.magic,
                timestamp=batch.max_timestamp,
                timestamp_type=max(batch.timestamp_type, 0),
                compression=batch.compression,
            )
        )
    data[start : start + size] = new
    return bytes(data)


def mutate(rng: random.Random, seed: Seed) -> bytes:
    if rng.random() < 0.3:
        data = bytearray(_inner(rng, seed))
        if rng.random() < 0.3:
            _bytes_level(rng, data, seed)
        return bytes(data)
    data = bytearray(seed.data)
    for _ in range(rng.choice([1, 1, 1, 2, 3, 6])):
        _bytes_level(rng, data, seed)
    if rng.random() < 0.5:
        _fix_crcs(data)
    return bytes(data)


# -- the oracle ---------------------------------------------------------------------------------
def _binary(cols: dict, name: str) -> list[bytes | None]:
    valid, offsets, data = (
        cols[f"{name}_validity"],
        array("i", cols[f"{name}_offsets"]),
        cols[f"{name}_data"],
    )
    return [
        data[offsets[i] : offsets[i + 1]] if valid and valid[i // 8] >> (i % 8) & 1 else None
        for i in range(cols[f"{name}_length"])
    ]


def native_records(
    data: memoryview | bytes, max_batch_bytes: int, wrapper: NativeWrapper | None = None
) -> list[tuple] | None:
    """The records of a whole v2 batch (or with ``wrapper``, of the v0/v1 message set ``data``)
    as the native engine's columns hold them, as ``(offset, timestamp, key, value,
    headers, sequence)`` tuples; None where it hands the batch back to the python engine."""
    builder = native_columns.record_columns(max_batch_bytes)
    assert builder is not None, "the native engine is not active"
    if wrapper is not None:
        added = builder.add_legacy(data, wrapper, 0, "fuzz")
    else:
        added = builder.add(memoryview(data), 0, "fuzz")
    if added is None:
        return None
    # the column buffers as bytes (the engine hands them over as buffer-protocol objects)
    cols = {k: v if isinstance(v, int) else bytes(v) for k, v in builder.take().items()}
    keys, values = _binary(cols, "key"), _binary(cols, "value")
    hkeys, hvalues = _binary(cols, "header_key"), _binary(cols, "header_value")
    hoffsets = array("i", cols["headers_offsets"])
    rows = []
    columns = (
        array("q", cols["offset"]),
        array("q", cols["timestamp"]),
        array("i", cols["sequence"]),
    )
    for i, (offset, ts, seq) in enumerate(zip(*columns, strict=True)):
        headers = tuple(
            (hkeys[j].decode(), hvalues[j]) for j in range(hoffsets[i], hoffsets[i + 1])
        )
        rows.append((offset, ts, keys[i], values[i], headers, seq))
    return rows


def _tuple(r) -> tuple:
    return (r.offset, r.timestamp, _b(r.key), _b(r.value),
            tuple((k, _b(v)) for k, v in r.headers), r.sequence, r.attributes)  # fmt: skip


def records_until_error(batch, name: str) -> tuple[list[tuple], tuple | None]:
    """``batch.records()`` under engine ``name``: the records it yields, then its error as
    ``(type, message, position)`` (None: it ended)."""
    got: list[tuple] = []
    with engine.using(name):
        try:
            for r in batch.records(MAX_BATCH_BYTES):
                got.append(_tuple(r))
        except FormatError as e:
            return got, (type(e), str(e), e.position)
    return got, None


def records_v2_made(batch) -> tuple[list[tuple], tuple[int, int] | None] | None:
    """The records ``records_v2`` makes itself, and where it stopped at a malformed one for
    the python engine to read on (None: it ended); None: it handed the batch back whole."""
    stops: list[tuple[int, int]] = []

    def rest(pos: int, done: int) -> Iterator:
        stops.append((pos, done))
        return iter(())

    rows = engine.records_v2(batch.data, MAX_BATCH_BYTES, batch.position, rest)
    return None if rows is None else ([_tuple(r) for r in rows], stops[0] if stops else None)


_DUMPER = Dumper(
    [], DumpOptions(print_data=True, key_decoder="hex", value_decoder="utf8", ctx=ReadContext.of())
)


def python_lines(batch, dumper: Dumper = _DUMPER, rendering: str = "jsonl") -> str:
    """``dump-segments`` record lines of a batch (``--format jsonl`` or text), as the python
    engine writes them (raises its FormatError)."""
    render = to_json if rendering == "jsonl" else render_text
    with engine.using(engine.PYTHON):
        return "".join(
            render(dumper._record(batch, r, None)) + "\n"
            for r in batch.records(dumper.opts.ctx.limits.max_batch_bytes)
        )


def _how(o: DumpOptions, rendering: str) -> native_render.Records:
    limit = o.ctx.limits.max_batch_bytes
    return native_render.Records(limit, o.print_data, o.key_decoder, o.value_decoder, rendering)


def _render(batch, o: DumpOptions, rendering: str) -> native_render.Rendered | None:
    full = f"{rendering}+{'raw-control' if o.decoder == 'none' else 'control'}"
    return native_render.render_records(batch, _how(o, full), "fuzz")


def python_batch_line(batch, crc_valid: bool, rendering: str) -> str:
    """The python renderers' line of ``batch`` in ``rendering`` (jsonl, text or kafka)."""
    obj = batch_object(batch, crc_valid)
    if rendering == "kafka":
        out = _Captured()
        KafkaRenderer(out)._batch(obj)  # type: ignore[arg-type]
        return out.parts[0]
    return (to_json(obj) if rendering == "jsonl" else render_text(obj)) + "\n"


def compare_batch_lines(batch, stats: Counter) -> None:
    """The native line of a v2 batch (its header alone: whatever its records hold) is the
    python renderers', in each rendering, with and without a valid CRC. (A batch with
    another magic, yielded by a lenient scan, is left to them.)"""
    for rendering in ("jsonl", "text", "kafka"):
        for crc_valid in (True, False):
            got = native_render.batch_line(batch, crc_valid, rendering, "fuzz")
            if batch.magic != 2:
                assert got is None, f"a native line of a magic {batch.magic} batch"
                stats["batch-lines-of-other-magic"] += 1
                return
            assert got is not None, "a v2 batch line handed back"
            expected = python_batch_line(batch, crc_valid, rendering)
            assert got.decode() == expected, f"the engines' {rendering} batch lines differ"
    stats["batch-lines-agreed"] += 1


# every payload as UTF-8: the fuzzer's random keys and header values are mostly invalid UTF-8,
# which the native renderer writes as python's backslashreplace (text, jsonl) and replace
# (kafka) do
_UTF8_DUMPER = Dumper(
    [], DumpOptions(print_data=True, key_decoder="utf8", value_decoder="utf8", ctx=ReadContext.of())
)
# dump-segments' own default for --format jsonl (the native renderer's SIMD base64)
_B64_DUMPER = Dumper(
    [],
    DumpOptions(
        print_data=True, key_decoder="base64", value_decoder="base64", ctx=ReadContext.of()
    ),
)
# --decoder none: control records shown as any record (their raw key and value)
_RAW_DUMPER = Dumper(
    [],
    DumpOptions(
        print_data=True,
        key_decoder="utf8",
        value_decoder="hex",
        decoder="none",
        ctx=ReadContext.of(),
    ),
)


def compare_lines(
    batch, stats: Counter, dumper: Dumper = _DUMPER, rendering: str = "jsonl", label: str = ""
) -> None:
    """The native record lines of a batch are the python engine's, byte for byte, or None."""
    got = _render(batch, dumper.opts, rendering)
    rendering_name = rendering
    rendering = rendering + label
    if got is None:
        stats[f"{rendering}-handed-back"] += 1
        return
    try:
        expected = python_lines(batch, dumper, rendering_name)
    except FormatError as e:
        raise AssertionError(f"native {rendering} rendered what python rejects: {e}") from e
    assert (str(got[0], "utf-8"), got[1]) == (expected, expected.count("\n")), (
        f"the engines rendered different {rendering}"
    )
    stats[f"{rendering}-agreed"] += 1


class _Captured:
    """Stands in for klogtool.output.Output: keeps what a renderer writes."""

    data_is_terminal = False  # a pipe: kafka-dump-log.sh's bytes

    def __init__(self) -> None:
        self.parts: list[str] = []

    def line(self, text: str) -> None:
        self.parts.append(text + "\n")

    def write_lines(self, data: object) -> None:
        self.parts.append(str(data, "utf-8"))  # type: ignore[call-overload]


_KAFKA_DUMPER = Dumper(
    [],
    DumpOptions(
        print_data=True,
        key_decoder="hex",
        value_decoder="utf8",
        kafka_text=True,
        ctx=ReadContext.of(),
    ),
)


def _kafka_renderer(out: _Captured, batch) -> KafkaRenderer:
    renderer = KafkaRenderer(out)  # type: ignore[arg-type]
    renderer.abs_path = "segment"
    renderer.ts_type = TIMESTAMP_TYPE_NAMES[batch.timestamp_type]
    renderer.magic = batch.magic
    return renderer


_UTF8_KAFKA_DUMPER = Dumper(
    [],
    DumpOptions(
        print_data=True,
        key_decoder="utf8",
        value_decoder="utf8",
        kafka_text=True,
        ctx=ReadContext.of(),
    ),
)
_RAW_KAFKA_DUMPER = Dumper(
    [],
    DumpOptions(
        print_data=True,
        key_decoder="hex",
        value_decoder="utf8",
        decoder="none",
        kafka_text=True,
        ctx=ReadContext.of(),
    ),
)


def compare_kafka(batch, stats: Counter, dumper: Dumper = _KAFKA_DUMPER, label: str = "") -> None:
    """``--format kafka`` lines of a batch: the native ones are the kafka renderer's, with
    the same offset breaks it reports, or None."""
    o = dumper.opts
    got = _render(batch, o, "kafka")
    if got is None:
        stats[f"kafka{label}-handed-back"] += 1
        return
    expected, native = _Captured(), _Captured()
    renderer = _kafka_renderer(expected, batch)
    try:
        with engine.using(engine.PYTHON):
            for r in batch.records(o.ctx.limits.max_batch_bytes):
                renderer.render(dumper._record(batch, r, None))
    except FormatError as e:
        raise AssertionError(f"native kafka lines for what python rejects: {e}") from e
    text, n, first, last, _breaks = got
    shadow = _kafka_renderer(native, batch)
    shadow.render({"type": "lines", "text": text, "first_offset": first,
                   "last_offset": last, "breaks": got[4]})  # fmt: skip
    assert native.parts == ["".join(expected.parts)] or (not n and not expected.parts)
    assert shadow.non_consecutive == renderer.non_consecutive
    assert shadow.last_record_offset == renderer.last_record_offset
    stats[f"kafka{label}-agreed"] += 1


def compare_renderings(batch, stats: Counter) -> None:
    """Every native rendering of a batch the native engine reads: the three renderings (control
    records decoded), again with every payload as UTF-8 (invalid UTF-8 included) and as
    base64, and under ``--decoder none`` (control records as any record)."""
    compare_lines(batch, stats, rendering="jsonl")
    compare_lines(batch, stats, rendering="text")
    compare_kafka(batch, stats)
    compare_lines(batch, stats, _UTF8_DUMPER, "jsonl", "-utf8")
    compare_lines(batch, stats, _UTF8_DUMPER, "text", "-utf8")
    compare_kafka(batch, stats, _UTF8_KAFKA_DUMPER, "-utf8")
    compare_lines(batch, stats, _B64_DUMPER, "jsonl", "-base64")
    compare_lines(batch, stats, _B64_DUMPER, "text", "-base64")
    compare_lines(batch, stats, _RAW_DUMPER, "jsonl", "-raw")
    compare_lines(batch, stats, _RAW_DUMPER, "text", "-raw")
    compare_kafka(batch, stats, _RAW_KAFKA_DUMPER, "-raw")


def compare_run(batches: list, stats: Counter) -> None:
    """``render_run`` of a scan's v2 batches (each with a CRC validity): its pieces are, one
    batch after the other, the python renderers' batch line and the batch's own
    ``render_records`` (which compare_lines holds to Python), a batch handed back exactly where
    ``render_records`` hands it back; in kafka, with the same breaks from batch to batch as the
    kafka renderer finds."""
    if engine.name() != engine.NATIVE:
        return
    run = [
        (b, bool(b.crc & 1))
        for b in batches
        if b.magic == 2 and b.count <= native_render.MAX_RECORDS
    ]
    if not run:
        return
    for dumper, rendering in ((_DUMPER, "jsonl"), (_DUMPER, "text"), (_KAFKA_DUMPER, "kafka")):
        o = dumper.opts
        full = f"{rendering}+control"
        how = _how(o, full)
        pieces = native_render.render_run(run, how, "fuzz")
        assert pieces is not None
        heads = native_render.batch_lines(run, rendering, "fuzz")  # (no --deep-iteration)
        want_heads = "".join(python_batch_line(b, valid, rendering) for b, valid in run)
        assert heads is not None and bytes(heads[0][0]).decode() == want_heads
        assert heads[0][1:] == (len(run), 0, None, None, [])
        expected, got = _Captured(), _Captured()
        want, have = _kafka_renderer(expected, run[0][0]), _kafka_renderer(got, run[0][0])
        i = 0
        for text, n_batches, records, first, last, breaks in pieces:
            assert n_batches >= 1 and i + n_batches <= len(run), "pieces past the run"
            part = run[i : i + n_batches]
            alone = [native_render.render_records(b, how, "fuzz") for b, _ in part]
            if text is None:
                assert n_batches == 1 and alone == [None], "render_run handed back another batch"
                stats[f"run-{rendering}-handed-back"] += 1
            else:
                assert None not in alone, "render_run rendered a batch render_records hands back"
                each = [
                    python_batch_line(b, valid, rendering).encode() + bytes(a[0])
                    for (b, valid), a in zip(part, alone, strict=True)
                ]
                assert bytes(text) == b"".join(each), "run lines differ"
                assert records == sum(a[1] for a in alone)
                for a in alone:
                    want.render({"type": "lines", "text": a[0], "first_offset": a[2],
                                 "last_offset": a[3], "breaks": a[4]})  # fmt: skip
                have.render({"type": "lines", "text": text, "first_offset": first,
                             "last_offset": last, "breaks": breaks})  # fmt: skip
                assert have.non_consecutive == want.non_consecutive, "run breaks differ"
                assert have.last_record_offset == want.last_record_offset
                stats[f"run-{rendering}-batches"] += n_batches
            i += n_batches
        assert i == len(run), "pieces short of the run"


def compare_engines(batch, stats: Counter) -> None:
    """Differential oracle for one batch: the native engine decodes it exactly as the python
    engine does, or hands it back; it never accepts what the python engine rejects."""
    if batch.magic < 2:
        if compare_legacy_paths(batch, stats):
            with engine.using(engine.NATIVE):
                compare_renderings(batch, stats)
        return
    if engine.name() != engine.NATIVE:
        return
    compare_batch_lines(batch, stats)
    python = records_until_error(batch, engine.PYTHON)
    expected, error = (python[0], None) if python[1] is None else (None, python[1])
    got = native_records(batch.data, MAX_BATCH_BYTES)
    made = records_v2_made(batch)
    checked = engine.check_v2(batch.data, MAX_BATCH_BYTES, "fuzz")
    if got is None:
        stats["native-handed-back"] += 1
    else:
        assert error is None, f"the native engine decoded what the python engine rejects: {error}"
        assert expected is not None
        assert got == [r[:6] for r in expected], "the engines decoded different records"
        assert made == (expected, None), "records_v2 decoded other records"
    # records() whole, as callers see it: the records and the error, wherever the native
    # engine stopped and the python engine read on
    if made is not None:
        rows, stopped = made
        assert rows == python[0][: len(rows)], "records_v2 made other records"
        assert stopped is None or stopped[1] == len(rows), stopped
        assert stopped is not None or python == (rows, None), "records_v2 ended elsewhere"
        stats["records-v2-stopped" if stopped else "records-v2-whole"] += 1
    assert records_until_error(batch, engine.NATIVE) == python, "records() differs"
    if checked is not None:
        assert error is None, f"check_v2 accepted what the python engine rejects: {error}"
        assert expected is not None
        offsets = [r[0] for r in expected]
        in_order = all(a < b for a, b in zip(offsets, offsets[1:], strict=False)) and all(
            batch.base_offset <= o <= batch.last_offset for o in offsets
        )
        assert checked == (len(expected), in_order, max([-1, *(r[1] for r in expected)])), checked
    compare_find(batch, stats, expected, error, random.Random(batch.crc))
    if got is None:
        return
    stats["native-agreed"] += 1
    compare_renderings(batch, stats)
    compare_reencode(batch, stats, random.Random(batch.crc))


_I64 = (-(1 << 63), (1 << 63) - 1)


def _clamp(v: int) -> int:
    return min(max(v, _I64[0]), _I64[1])


def _random_filter(rng: random.Random, recs: list[tuple]) -> RecordFilter:
    """find's native conditions, mostly taken from one of ``recs`` so that some match."""
    pick = rng.choice(recs) if recs else None
    kw: dict = {}
    if rng.random() < 0.5:
        key = pick[2] if pick is not None and rng.random() < 0.8 else None
        kw["key"] = key if key is not None else b"k"
    if pick is not None and pick[4] and rng.random() < 0.5:
        name, value = rng.choice(pick[4])
        kw["headers"] = ((name, value if rng.random() < 0.5 else None),)
    if pick is not None and rng.random() < 0.3:
        kw["offsets"] = (_clamp(pick[0] - rng.randint(0, 3)), _clamp(pick[0] + rng.randint(0, 3)))
    if pick is not None and rng.random() < 0.3:
        kw["from_time"] = _clamp(pick[1] - rng.randint(0, 1000))
    if pick is not None and rng.random() < 0.3:
        kw["to_time"] = _clamp(pick[1] + rng.randint(0, 1000))
    if rng.random() < 0.2:
        kw["min_size"] = rng.randint(0, 64)
    if rng.random() < 0.2:
        kw["max_size"] = rng.randint(0, 256)
    for field, index in (("key_regex", 2), ("value_regex", 3)):
        if rng.random() < 0.2:
            kw[field] = _random_regex(rng, pick[index] if pick is not None else None)
    return RecordFilter(**kw)


_REGEX_ATOMS = [".", r"\d", r"\w", r"\s", r"\W", "[a-k]", r"[^\x00-\x7f]", r"\b", "(?:v|k)"]
_REGEX_QUANTIFIERS = ["", "", "*", "+", "?", "{1,2}", "{,3}", "*?", "+?"]


def _random_regex(rng: random.Random, sample: bytes | None) -> str:
    """A ``re`` pattern of bytes from ``sample`` (a key or value, so that some match) and
    classes, repeats, anchors and alternation, all of which find decides natively."""
    atoms = list(_REGEX_ATOMS)
    if sample:
        i = rng.randrange(len(sample))
        atoms += [rf"\x{b:02x}" for b in sample[i : i + rng.randint(1, 4)]] * 3

    def piece() -> str:
        atom = rng.choice(atoms)
        return atom if atom == r"\b" else atom + rng.choice(_REGEX_QUANTIFIERS)  # \b* is no regex

    body = "".join(piece() for _ in range(rng.randint(1, 4)))
    if rng.random() < 0.3:
        body = "^" + body
    if rng.random() < 0.2:
        body += rng.choice(["$", r"\Z"])
    if rng.random() < 0.2:
        body = f"{body}|{piece()}"
    return body


def compare_find(
    batch, stats: Counter, expected: list[tuple] | None, error: tuple | None, rng
) -> None:
    """find's native filter (``engine.find_matcher``) on a v2 batch: the records
    ``RecordFilter.matches`` keeps of the python engine's records, with their indexes and the
    batch's record count, or a hand-back; never an answer where the python engine raised."""
    where = _random_filter(rng, expected or [])
    spec = where.native_spec()
    if spec is None:  # a regex native_regex does not translate: decided in Python only
        stats["find-regex-in-python"] += 1
        return
    matcher = engine.find_matcher(spec)
    assert matcher is not None, "the native engine is not active"
    found = matcher.matches(batch.data, MAX_BATCH_BYTES, batch.position)
    if found is None:
        stats["find-handed-back"] += 1
        return
    assert error is None, f"the find kernel accepted what the python engine rejects: {error}"
    assert expected is not None
    count, indexes, rows = found
    want = [(i, r) for i, r in enumerate(expected) if where.matches(Record(*r))]
    assert count == len(expected), "the find kernel counted other records"
    assert indexes == [i for i, _ in want], f"the find kernel matched other records: {where}"
    assert [r[:7] for r in rows] == [r for _, r in want], "the find kernel made other records"
    stats["find-agreed"] += 1
    stats["find-matched"] += len(rows)


def _legacy_read(batch, engine_name: str) -> list[tuple] | tuple:
    """A v0/v1 entry's records under ``engine_name``, fresh (nothing cached), CRCs judged; or
    its error."""
    fresh = legacy.LegacyBatch(batch.data, batch.position)
    try:
        with engine.using(engine_name):
            return [
                (r.offset, r.timestamp, _b(r.key), _b(r.value), r.attributes, r.crc, r.crc_valid)
                for r in fresh.records(MAX_BATCH_BYTES)
            ]
    except FormatError as e:
        return (type(e).__name__, e.code, str(e), e.position)


def compare_decompression(batch, stats: Counter) -> None:
    """A v0/v1 wrapper's value decompressed by the native engine is the python engine's
    output byte for byte (under a limit that is the fuzzer's, or just too small), or None;
    never output where the python engine raises."""
    codec, value, magic = batch.compression, batch.value, batch.magic
    if codec == codecs.NONE or value is None:
        return
    for limit in (MAX_BATCH_BYTES, len(value) * 2):
        with engine.using(engine.NATIVE):
            got = engine.legacy_decompress(codec, value, magic, limit, "fuzz")
        try:
            expected: bytes | None = codecs.decompress(codec, value, magic=magic, limit=limit)
        except FormatError:
            expected = None
        if got is None:
            stats["decompress-native-handed-back"] += 1
            continue
        assert expected is not None, "the native engine decompressed what python rejects"
        assert got == expected, "the engines decompressed a wrapper apart"
        stats["decompress-native-agreed"] += 1


def compare_legacy_paths(batch, stats: Counter) -> bool:
    """Differential oracle for one v0/v1 entry: for a compressed wrapper, the python engine's
    careful walk alone and its fast walk (records made as the set is checked) read it alike;
    and when built, the native engine (records and columns) reads the entry as python does.
    True if the native engine read it."""
    if batch.magic >= 2:
        return False
    if batch.compression == codecs.NONE:  # a plain message: one record, read in python
        careful = _legacy_read(batch, engine.PYTHON)
    else:
        walk = legacy._plain_walk
        legacy._plain_walk = lambda *args, **kwargs: None  # every set to the careful walk
        try:
            careful = _legacy_read(batch, engine.PYTHON)
        finally:
            legacy._plain_walk = walk
        fast = _legacy_read(batch, engine.PYTHON)
        assert fast == careful, "the fast and careful walks disagree"
    stats["legacy-agreed" if isinstance(careful, list) else "legacy-errors-agreed"] += 1
    if not engine.native_available():
        return False
    compare_decompression(batch, stats)
    assert _legacy_read(batch, engine.NATIVE) == careful, "the engines read a wrapper apart"
    with engine.using(engine.NATIVE):
        source = batch.native_input(MAX_BATCH_BYTES)
        if source is None:
            stats["legacy-native-handed-back"] += 1
            return False
        columns = native_records(source[0], MAX_BATCH_BYTES, source[1])
    assert isinstance(careful, list), "the native engine read a wrapper python rejects"
    if columns is None:  # a record's CRC fails, or a value past the native 64-bit integers
        magic, shift, _ = source[1]
        assert (
            not all(r[6] for r in careful)
            or max(r[0] for r in careful) >= 1 << 63
            or magic < 0
            or not -(1 << 63) <= shift < 1 << 63
        )
    else:
        assert columns == [(*r[:4], (), -1) for r in careful], "the columns differ"
    stats["legacy-native-agreed"] += 1
    return True


def _b(v: bytes | memoryview | None) -> bytes | None:
    return None if v is None else bytes(v)


def _reencoded(batch, keep: bytes | None, overrides: dict) -> bytes | str:
    """``v2.reencode`` of ``batch``'s own records, or the error it raised (type and text)."""
    try:
        return v2.reencode(batch, keep=keep, max_batch_bytes=MAX_BATCH_BYTES, **overrides)
    except (FormatError, ValueError, struct.error) as e:
        return f"{type(e).__name__}: {e}"


def compare_reencode(batch, stats: Counter, rng: random.Random) -> None:
    """The native re-encoder gives the python encoder's bytes (or the same error) for a batch
    the native decoder reads: all records or a random subset, a new codec, the first kept
    record's timestamp or a delete horizon as the base timestamp (what compact and
    convert-format ask of it)."""
    count = batch.count
    keep = None if rng.random() < 0.3 else bytes(rng.random() < 0.7 for _ in range(count))
    overrides: dict = {"compression": rng.choice(sorted(codecs.CODEC_NAMES))}
    choice = rng.random()
    if choice < 0.3:
        overrides["base_timestamp"] = None
    elif choice < 0.5:
        overrides["delete_horizon_ms"] = batch.max_timestamp + rng.randrange(1 << 20)
    got = _reencoded(batch, keep, overrides)
    with engine.using(engine.PYTHON):
        expected = _reencoded(batch, keep, overrides)
    assert got == expected, "the engines re-encoded the batch differently"
    stats["reencode-agreed"] += 1
    if engine.reencode_v2(batch.data, MAX_BATCH_BYTES, keep, batch.base_offset, None, 0):
        stats["reencode-native"] += 1


def _touch_batch(batch, stats: Counter, compared: set[tuple[int, bytes]]) -> None:
    """Every field and record of ``batch``; the engines compared on it unless ``compared``
    holds it already (the scanner modes of a case yield the same batches: comparing a batch
    again would repeat the same work)."""
    seen = (batch.position, bytes(batch.data))
    if seen not in compared:
        compared.add(seen)
        compare_engines(batch, stats)
    for name in (
        "position",
        "size",
        "magic",
        "crc",
        "attributes",
        "compression",
        "timestamp_type",
        "max_timestamp",
        "base_timestamp",
        "partition_leader_epoch",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
        "is_control",
        "delete_horizon_ms",
        "last_offset",
        "next_offset",
        "last_sequence",
        "crc_valid",
    ):
        getattr(batch, name)
    try:
        _base, count = batch.base_offset, batch.count  # a legacy wrapper decompresses here
        stats["declared-records"] += count
        for r in batch.records(MAX_BATCH_BYTES):
            stats["records"] += 1
            assert isinstance(r.offset + r.timestamp + r.sequence, int)
            if r.key is not None:
                bytes(r.key)
            if r.value is not None:
                bytes(r.value)
            assert r.crc_valid in (None, True, False)  # a legacy inner CRC is judged here
            for k, v in r.headers:
                assert isinstance(k, str)
                if v is not None:
                    bytes(v)
    except FormatError as e:
        assert isinstance(e.code, str) and e.code, e
        stats["record-error:" + e.code] += 1


MODES = [
    dict(),  # recovery: strict, stop at the first CRC mismatch
    dict(stop_on_crc=False, strict=False),  # dump: walk over everything Kafka would
    dict(check_crc=False, strict=False),
]


def check(data: bytes, stats: Counter | None = None) -> Counter:
    """Scan and decode ``data`` in every mode; raise if anything but a FormatError escapes."""
    stats = Counter() if stats is None else stats
    compared: set[tuple[int, bytes]] = set()
    for mode in MODES:
        scanner = SegmentScanner(data, **mode)
        walked = []
        for batch in scanner:
            stats["batches"] += 1
            _touch_batch(batch, stats, compared)
            walked.append(batch)
        if mode == MODES[1]:  # (dump's walk)
            compare_run(walked, stats)
        res = scanner.result
        assert res is not None and 0 <= res.valid_bytes <= res.stopped_at <= res.size == len(data)
        stats["end:" + res.end] += 1
        if res.error is not None:
            assert isinstance(res.error, FormatError)
            stats["scan-error:" + res.error.code] += 1
    try:
        _touch_batch(read_batch(memoryview(data), 0), stats, compared)
    except FormatError as e:
        stats["read-error:" + e.code] += 1
    return stats


def case(
    seed: int, i: int, seeds: list[Seed], bombs: list[Seed], producers: list[Seed]
) -> tuple[str, bytes]:
    """Case ``i`` of ``seed``: a mutated seed segment (a bomb once in 50 cases), a real
    client's batch in PRODUCER_SHARE of the rest."""
    rng = random.Random(f"{seed}:{i}")
    pick = rng.random()
    if bombs and pick < 0.02:
        s = rng.choice(bombs)
    elif producers and pick < 0.02 + PRODUCER_SHARE:
        weights = [min(1.0, PRODUCER_FULL_WEIGHT_BYTES / len(p.data)) for p in producers]
        s = rng.choices(producers, weights)[0]
    else:
        s = rng.choice(seeds)
    return s.name, mutate(rng, s)


def run(
    iterations: int,
    seed: int,
    start: int = 0,
    *,
    bombs: bool = True,
    save: Path | None = None,
    progress: bool = False,
) -> Counter:
    seeds = build_seeds(random.Random(seed))
    bomb_seeds = build_bombs() if bombs else []
    producers = producer_seeds()
    producer_names = {p.name for p in producers}
    stats: Counter = Counter()
    slowest = 0.0
    t_start = time.perf_counter()
    for i in range(start, start + iterations):
        name, data = case(seed, i, seeds, bomb_seeds, producers)
        t = time.perf_counter()
        try:
            check(data, stats)
        except Exception as e:
            if save is not None:
                save.mkdir(parents=True, exist_ok=True)
                (save / f"fuzz-{seed}-{i}-{name}.bin").write_bytes(data)
            raise AssertionError(
                f"case --seed {seed} --start {i} ({name}, {len(data)} bytes): "
                f"{type(e).__name__}: {e}"
            ) from e
        slowest = max(slowest, time.perf_counter() - t)
        stats["cases"] += 1
        stats["cases-of-producers"] += name in producer_names
        if progress and (i - start + 1) % 1000 == 0:
            rate = (i - start + 1) / (time.perf_counter() - t_start)
            print(f"  {i - start + 1} cases, {rate:.0f}/s", file=sys.stderr)
    stats["slowest-ms"] = round(slowest * 1000)
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "big"))
    ap.add_argument("--start", type=int, default=0, help="first case number (for replay)")
    ap.add_argument("--no-bombs", action="store_true", help="leave out decompression bombs")
    ap.add_argument("--save", type=Path, help="directory to write a failing input to")
    args = ap.parse_args(argv)
    if engine.native_available():
        engine.use(engine.NATIVE)
    print(
        f"fuzzing ({engine.name()} engine): seed {args.seed}, "
        f"cases {args.start}..{args.start + args.iterations - 1}"
    )
    t = time.perf_counter()
    try:
        stats = run(
            args.iterations,
            args.seed,
            args.start,
            bombs=not args.no_bombs,
            save=args.save,
            progress=True,
        )
    except AssertionError as e:
        traceback.print_exc()
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(
        f"ok: {stats['cases']} cases in {elapsed:.1f} s, max RSS {rss} MiB, "
        f"slowest case {stats['slowest-ms']} ms"
    )
    for key, value in sorted(stats.items()):
        if key not in ("cases", "slowest-ms"):
            print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

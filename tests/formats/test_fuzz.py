"""Hostile input: mutated segments of every magic x codec raise nothing but FormatErrors.

The fuzzer itself lives in ``bench/fuzz.py`` (run it large by hand); this runs it small, plus
systematic field rewrites, truncations, hypothesis-generated garbage and decompression bombs.
"""

from __future__ import annotations

import random
import struct
import time
import tracemalloc
from collections import Counter

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fuzz import fuzz

from klogtool.formats import codecs, legacy, v2
from klogtool.formats.batch import Record
from klogtool.formats.errors import FormatError, LimitExceededError
from klogtool.formats.records import SegmentScanner

SEEDS = fuzz.build_seeds(random.Random(2024))
SEED_IDS = [s.name for s in SEEDS]
PRODUCER_SEEDS = fuzz.producer_seeds()
CASE_BUDGET_S = 5.0  # per input: "terminates" (the slowest case is far below this)


def check(data: bytes, stats: Counter) -> None:
    t = time.perf_counter()
    fuzz.check(data, stats)
    assert time.perf_counter() - t < CASE_BUDGET_S


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_seed_is_valid(seed):
    scanner = SegmentScanner(seed.data)
    for batch in scanner:
        assert batch.crc_valid
        list(batch.records())
    assert scanner.result.end == "clean" and scanner.result.error is None
    assert len(seed.entries) >= 4


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_random_mutations(seed):
    stats: Counter = Counter()
    for i in range(40):
        rng = random.Random(f"test:{seed.name}:{i}")
        data = fuzz.mutate(rng, seed)
        try:
            check(data, stats)
        except Exception as e:
            raise AssertionError(f"{seed.name} case {i}: {type(e).__name__}: {e}") from e
    # the mutations really hurt: the fuzzer is not just re-reading valid data
    assert sum(v for k, v in stats.items() if k.startswith(("scan-error", "record-error"))) > 0


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_extreme_header_fields(seed):
    start, _ = seed.entries[1]
    if seed.magic == 2:
        fields = [(8, ">i"), (57, ">i"), (23, ">i"), (53, ">i")]
    else:
        fields = [(8, ">i"), (26 if seed.magic == 1 else 18, ">i")]
    stats: Counter = Counter()
    for pos, fmt in fields:
        for value in fuzz.INTERESTING_32:
            for fix_crc in (False, True):
                data = bytearray(seed.data)
                struct.pack_into(fmt, data, start + pos, value)
                if fix_crc:
                    fuzz._fix_crcs(data)
                check(bytes(data), stats)
    assert stats["batches"] > 0


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_truncations_and_zero_runs(seed):
    stats: Counter = Counter()
    n = len(seed.data)
    for cut in range(0, n, max(1, n // 60)):
        check(seed.data[:cut], stats)
        zeroed = bytearray(seed.data)
        zeroed[cut : cut + 17] = bytes(min(17, n - cut))
        check(bytes(zeroed), stats)
    check(seed.data + bytes(100), stats)
    assert stats["end:torn-tail"] and stats["end:zero-fill"]


def test_inner_mutations_reach_the_record_decoders():
    # mutate records areas / inner message sets before compression and repair the CRC
    stats: Counter = Counter()
    for i in range(60):
        rng = random.Random(f"inner:{i}")
        seed = SEEDS[i % len(SEEDS)]
        check(fuzz._inner(rng, seed), stats)
    assert stats["record-error:corrupt-record"] > 0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_arbitrary_bytes(data):
    fuzz.check(data)


@st.composite
def framed_garbage(draw):
    """A v2 header with hostile field values over a random body, with a correct CRC."""
    body = draw(st.binary(max_size=200))
    attrs = draw(st.integers(0, 0xFF))
    count = draw(st.sampled_from(fuzz.INTERESTING_32) | st.integers(-5, 40))
    buf = bytearray(61) + body
    struct.pack_into(
        ">qiibIhiqqqhii",
        buf,
        0,
        draw(st.integers(0, 2**40)),
        len(buf) - 12,
        -1,
        2,
        0,
        attrs,
        draw(st.integers(-3, 50)),
        0,
        0,
        -1,
        -1,
        -1,
        count,
    )
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(framed_garbage())
def test_framed_garbage(data):
    fuzz.check(data)


@st.composite
def compressed_garbage(draw):
    """Valid batch framing around a payload each codec will try to decompress."""
    codec = draw(st.sampled_from([codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]))
    good = codecs.compress(codec, draw(st.binary(max_size=300)), magic=2)
    junk = bytearray(good)
    for _ in range(draw(st.integers(0, 4))):
        if junk:
            junk[draw(st.integers(0, len(junk) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        junk = junk[: draw(st.integers(0, len(junk)))]
    buf = bytearray(v2.encode_batch([Record(0, 0, None, b"x")]))[:61] + junk
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    buf[22] = codec
    struct.pack_into(">i", buf, 57, draw(st.integers(0, 20)))
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(compressed_garbage())
def test_compressed_garbage(data):
    fuzz.check(data)


# -- decompression bombs ------------------------------------------------------------------------
BOMB = 8 << 20  # decompresses to 8 MiB


@pytest.fixture(scope="module")
def bombs():
    return fuzz.build_bombs(BOMB)


def test_decompression_bombs_are_limited(bombs):
    limit = 1 << 20
    assert len(bombs) == 10  # v2: 4 codecs, v1 and v0: 3 each
    for seed in bombs:
        (batch,) = SegmentScanner(seed.data)
        assert batch.crc_valid and len(seed.data) < BOMB // 8, seed.name
        tracemalloc.start()
        try:
            with pytest.raises(LimitExceededError):
                list(batch.records(limit))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # bounded by the limit (plus one lz4 block / codec slack), not by the 8 MiB output
        assert peak < 4 * limit + 2 * len(seed.data), (seed.name, peak)
    # and with a limit large enough, the same batches decode
    for seed in bombs[:2]:
        (batch,) = SegmentScanner(seed.data)
        (rec,) = batch.records(BOMB + 4096)
        assert len(rec.value) == BOMB


def test_producer_seeds_are_every_clients_every_codec():
    assert {s.name.split(":")[0] for s in PRODUCER_SEEDS} == {
        "aiokafka",
        "confluent-kafka",
        "kafka-python",
        "sarama",
    }
    assert {(s.magic, s.codec) for s in PRODUCER_SEEDS} == {(2, c) for c in range(5)}
    for seed in PRODUCER_SEEDS:
        (batch,) = SegmentScanner(seed.data)
        assert batch.crc_valid and len(list(batch.records())) >= 1


@pytest.mark.parametrize("seed", PRODUCER_SEEDS, ids=[s.name for s in PRODUCER_SEEDS])
def test_producer_batches_mutated(seed):
    stats: Counter = Counter()
    for i in range(6):
        data = fuzz.mutate(random.Random(f"test:{seed.name}:{i}"), seed)
        try:
            check(data, stats)
        except Exception as e:
            raise AssertionError(f"{seed.name} case {i}: {type(e).__name__}: {e}") from e


def test_bench_fuzz_runs_small():
    stats = fuzz.run(150, seed=7, bombs=False)
    assert stats["cases"] == 150
    assert 0 < stats["cases-of-producers"] < 150


def test_legacy_wrapper_of_wrappers_is_refused():
    inner = legacy.encode_wrapper([Record(0, 0, None, b"x")], magic=1, compression=codecs.GZIP)
    outer = legacy.encode_message(
        0, None, codecs.compress(codecs.GZIP, inner, magic=1), magic=1, compression=codecs.GZIP
    )
    (batch,) = SegmentScanner(outer)
    with pytest.raises(FormatError):
        list(batch.records())

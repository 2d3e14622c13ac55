"""``stats`` under the native engine (``klogtool/log/read/native_stats.py``,
``native/src/stats.rs``) against the python engine, the reference: every partition's
aggregates, the total, the what-if sample and the ``--format jsonl`` output are the same, number
for number, on the fixtures (every message format and codec, transactions, corrupt
partitions), on every real producer's capture, on generated data of every codec that drives the
sketches past their exact bounds, and on batches the native kernel refuses (the python engine
reads those and hands their records to the kernel)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.cli import jsonl, run
from support.rewrite import write_partition

from klogtool.formats import codecs, encode_batch, engine
from klogtool.formats.batch import CREATE_TIME, LOG_APPEND_TIME, Record
from klogtool.formats.legacy import encode_message, encode_wrapper
from klogtool.log.context import ReadContext
from klogtool.log.read import stats

pytestmark = pytest.mark.skipif(
    not engine.native_available(), reason="the native engine is not built"
)

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "fixtures" / "logs"
PRODUCERS = ROOT / "fixtures" / "producers"
NOW = 1_700_000_100_000
T0 = 1_700_000_000_000
# what the what-if measures of the machine, not of the data
TIMINGS = ("seconds", "mb_per_s")


def _both(paths: list[str], options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each engine's partitions (as objects), total, sample and what-if (timings left out)."""
    out: dict[str, Any] = {}
    for name in (engine.PYTHON, engine.NATIVE):
        with engine.using(name):
            opts = stats.StatsOptions(now=NOW, ctx=ReadContext.of(), **(options or {}))
            parts = list(stats.collect(stats.targets(paths), opts))
            tot = stats.total(parts)
            what_if = stats.what_if(tot, opts.sample_bytes)
            for row in (what_if or {}).get("codecs", []):
                for t in TIMINGS:
                    row.pop(t)
            out[name] = {
                "parts": [json.dumps(p.as_obj(), sort_keys=False) for p in parts],
                "total": json.dumps(tot.as_obj("total", what_if)),
                "sample": tot.sample,
            }
    return out


def _same(paths: list[str], options: dict[str, Any] | None = None) -> dict[str, Any]:
    got = _both(paths, options)
    py, native = got[engine.PYTHON], got[engine.NATIVE]
    assert len(py["parts"]) == len(native["parts"])
    for a, b in zip(py["parts"], native["parts"], strict=True):
        assert a == b
    assert py["total"] == native["total"]
    assert py["sample"] == native["sample"]
    return json.loads(py["total"])  # type: ignore[no-any-return]


def test_fixture_logdir_every_format_codec_and_transactions() -> None:
    total = _same([str(LOGS / "logdir")])
    assert total["volume"]["magics"].keys() == {"0", "1", "2"}
    assert total["keys"]["compaction"]["aborted"] > 0


@pytest.mark.parametrize("part", sorted(p.name for p in (LOGS / "corrupt").iterdir()))
def test_corrupt_fixtures(part: str) -> None:
    _same([str(LOGS / "corrupt" / part)])


def test_every_producer_capture(tmp_path: Path) -> None:
    files = sorted(PRODUCERS.glob("*/*.log"))
    assert files
    for i, f in enumerate(files):
        part = tmp_path / f"{f.parent.name}-{f.stem}-{i}"
        part.mkdir()
        shutil.copy(f, part / "00000000000000000000.log")
    _same([str(tmp_path)])


def _generated(part: Path, codec: int, seed: int, n: int = 3000) -> None:
    """Skewed keys (some non-UTF-8, some longer than a heavy key's label), keyless records,
    tombstones past and before their delete horizon, headers with non-ASCII names, out of order
    and future timestamps, LogAppendTime batches, two producers."""
    rng = random.Random(seed)
    batches = []
    offset = 0
    while offset < n:
        count = rng.randint(1, 200)
        recs = []
        for _ in range(count):
            r = rng.random()
            key: bytes | None
            if r < 0.05:
                key = None
            elif r < 0.1:
                key = b"\xff\xfe" + bytes([rng.randrange(256)])
            elif r < 0.12:
                key = b"long-" * 20 + b"%d" % rng.randrange(5)
            else:
                key = b"user-%d" % int(rng.paretovariate(1.2))
            value = None if rng.random() < 0.1 else rng.randbytes(rng.randint(0, 400))
            headers: tuple[tuple[str, bytes | None], ...] = ()
            if rng.random() < 0.3:
                headers = (("tracé", b"x" * rng.randint(0, 9)), ("n", None))[: rng.randint(1, 2)]
            ts = T0 + offset * 7 - (3000 if rng.random() < 0.05 else 0)
            if rng.random() < 0.01:
                ts = NOW + 10**6
            recs.append(Record(offset, ts, key, value, headers))
            offset += 1
        horizon = rng.choice([None, NOW - 1000, NOW + 1000])
        lat = rng.random() < 0.1
        batches.append(
            encode_batch(
                recs,
                compression=codec,
                timestamp_type=LOG_APPEND_TIME if lat else CREATE_TIME,
                max_timestamp=T0 + 10 * offset if lat else None,
                producer_id=7 + offset % 2,
                producer_epoch=0,
                base_sequence=recs[0].offset,
                delete_horizon_ms=horizon,
            )
        )
    write_partition(part, [(0, batches)])


@pytest.mark.parametrize("codec", sorted(codecs.CODEC_IDS))
def test_generated_data_of_every_codec_exact_and_past_the_bounds(
    tmp_path: Path, codec: str
) -> None:
    for seed in (1, 2):
        _generated(tmp_path / f"gen-{seed}", codecs.CODEC_IDS[codec], seed)
    paths = [str(tmp_path)]
    exact = _same(paths)
    assert exact["keys"]["distinct_exact"] and exact["keys"]["heaviest_exact"]
    # the HyperLogLog and space-saving past a small exact bound; few counters: evictions
    past = _same(paths, {"exact_keys": 40, "heavy_counters": 8, "sample_bytes": 50_000})
    assert not past["keys"]["distinct_exact"] and past["keys"]["heaviest_floor"] > 0
    assert past["what_if"]["sample"]["bytes"] == 50_000


def test_the_distinct_key_estimate_is_the_same_at_every_fill(tmp_path: Path) -> None:
    """Past the exact bound the native engine keeps the HyperLogLog's registers and Python
    reads them: the same estimate from a few keys to well past the estimator's old switch at
    40,960 (BLAKE2b, the switch from the exact set, the ranks, the float arithmetic)."""
    fills = (3_000, 20_000, 41_000, 60_000)
    for n in fills:
        batches = [
            encode_batch(
                [
                    Record(o, T0, b"fill-%d-%d" % (n, o), b"", ())
                    for o in range(b, min(n, b + 4096))
                ],
                base_offset=b,
            )
            for b in range(0, n, 4096)
        ]
        write_partition(tmp_path / f"fill-{n}", [(0, batches)])
    got = _both([str(tmp_path)], {"exact_keys": 1000, "sample_bytes": 0})
    assert got[engine.PYTHON] == got[engine.NATIVE]
    parts = [json.loads(p)["keys"] for p in got[engine.NATIVE]["parts"]]
    estimates = sorted(p["distinct"] for p in parts)
    assert not any(p["distinct_exact"] for p in parts)
    for n, estimate in zip(fills, estimates, strict=True):
        assert abs(estimate / n - 1) < 4 * stats.HLL_STANDARD_ERROR, (n, estimate)
    assert len(set(estimates)) == len(fills)  # each its own estimate, not one copied over


def _corrupted(part: Path) -> None:
    """Batches the native kernel refuses: a gzip stream cut inside, and an uncompressed batch
    whose fourth record's key length runs past the record (the python engine reads the three
    before it, and the whole batch is reported)."""
    good = [Record(i, T0 + i, b"k%d" % (i % 3), b"v" * i, ()) for i in range(5)]
    plain = bytearray(encode_batch(good))
    gz = bytearray(encode_batch([r._replace(offset=r.offset + 5) for r in good], base_offset=5,
                                compression=codecs.GZIP))  # fmt: skip
    gz[-12] ^= 0xFF  # inside the deflate stream (the batch CRC is not checked by stats)
    # the fourth record: length, attributes, timestamp delta, offset delta, then the key length
    area = 61
    for _ in range(3):
        area += 1 + plain[area] // 2
    plain[area + 4] = 0x7E  # key length 63: past the record
    tail = encode_batch([r._replace(offset=r.offset + 10) for r in good], base_offset=10)
    write_partition(part, [(0, [bytes(plain), bytes(gz), tail])])


def test_batches_the_kernel_refuses_are_read_in_python(tmp_path: Path) -> None:
    _corrupted(tmp_path / "bad-0")
    total = _same([str(tmp_path / "bad-0")])
    assert len(total["problems"]) == 2, total["problems"]
    assert total["sizes"]["value"]["count"] == 3 + 5  # the 3 before the bad record, the tail


def test_v0_v1_sets_read_in_python_are_handed_in_by_chunks(tmp_path: Path) -> None:
    """v0/v1 records are read in Python and handed to the kernel 4,096 at a time: a wrapper
    of 10,000 (its memory stays flat), plain v0 messages around it."""
    recs = [
        Record(i, T0 + i % 50, None if i % 7 == 0 else b"k%d" % (i % 900), b"v" * (i % 30), ())
        for i in range(1, 10_001)
    ]
    wrapper = encode_wrapper(recs, magic=1, compression=codecs.GZIP)
    plain = [encode_message(0, b"a", None, magic=0), encode_message(10_001, None, b"b", magic=0)]
    write_partition(tmp_path / "legacy-0", [(0, [plain[0], wrapper, plain[1]])])
    total = _same([str(tmp_path / "legacy-0")])
    assert total["volume"]["records"] == 10_002 and total["volume"]["magics"] == {"0": 2, "1": 1}


def test_cli_jsonl_is_the_same_under_both_engines(tmp_path: Path) -> None:
    """The command's lines, byte for byte but for the what-if's timings."""
    _generated(tmp_path / "gen-0", codecs.ZSTD, 3, n=1500)
    shutil.copytree(LOGS / "logdir" / "v1-gzip-0", tmp_path / "v1-gzip-0")
    lines = {}
    for name in (engine.PYTHON, engine.NATIVE):
        with engine.using(name):
            code, out, err = run(
                "stats", "--format", "jsonl", "--now", str(NOW), str(tmp_path), cwd=tmp_path
            )
        assert code == 0, err
        objs = jsonl(out)
        for row in objs[-1]["what_if"]["codecs"]:
            for t in TIMINGS:
                row[t] = None
        lines[name] = [json.dumps(o, ensure_ascii=False) for o in objs]
    assert lines[engine.PYTHON] == lines[engine.NATIVE]
    assert len(lines[engine.NATIVE]) == 3


def test_no_hand_backs_on_well_formed_batches(tmp_path: Path) -> None:
    for codec in sorted(codecs.CODEC_IDS):
        _generated(tmp_path / f"gen-{codec}", codecs.CODEC_IDS[codec], 4, n=800)
    before = engine.engine_stats()
    with engine.using(engine.NATIVE):
        list(
            stats.collect(
                stats.targets([str(tmp_path)]), stats.StatsOptions(ctx=ReadContext.of(), now=NOW)
            )
        )
    assert engine.engine_stats() == before

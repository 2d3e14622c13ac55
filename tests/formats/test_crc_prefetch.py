"""The CRCs computed ahead of a large segment's scan (``crc.CrcPrefetch``) change nothing the
scanner reports: the same batches, CRC verdicts, end and error on generated and mutated
segments, with the prefetch forced on (tiny chunks, so that it crosses many) and off."""

from __future__ import annotations

import mmap
import random
import threading
from pathlib import Path

import pytest
from support.fuzz import fuzz

from klogtool.formats import crc, engine
from klogtool.formats.records import SegmentScanner

pytestmark = pytest.mark.skipif(
    not engine.native_available(), reason="the native engine is not built"
)


def _scan(data: bytes, prefetch: bool, stop_on_crc: bool) -> tuple:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(crc, "PREFETCH_BYTES", 0 if prefetch else 1 << 62)
        mp.setattr(crc, "PREFETCH_CHUNK", 700)
        s = SegmentScanner(data, stop_on_crc=stop_on_crc)
        seen = [(b.position, s.crc_valid) for b in s]
        r = s.result
        assert r is not None
        return seen, r.end, r.valid_bytes, r.stopped_at, str(r.error)


def test_the_same_scan_with_and_without_the_prefetch() -> None:
    engine.use(engine.NATIVE)
    rng = random.Random(2026)
    seeds = fuzz.build_seeds(rng)
    crc_mismatches = 0
    for i in range(300):
        seed = seeds[i % len(seeds)]
        data = seed.data if i < len(seeds) else fuzz.mutate(rng, seed)
        for stop_on_crc in (True, False):
            on = _scan(data, True, stop_on_crc)
            assert on == _scan(data, False, stop_on_crc), (seed.name, i)
            crc_mismatches += any(not ok for _pos, ok in on[0])
    assert crc_mismatches > 10  # the mutations reach the CRC verdicts


def test_a_legacy_batch_stops_the_walk_ahead_and_later_crcs_still_count() -> None:
    engine.use(engine.NATIVE)
    seeds = {s.magic: s for s in fuzz.build_seeds(random.Random(3))}
    v2 = seeds[2].data
    data = bytearray(v2 + seeds[1].data + v2)
    data[-1] ^= 0xFF  # the last v2 batch, after the legacy one, is damaged
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(crc, "PREFETCH_BYTES", 0)
        s = SegmentScanner(bytes(data), stop_on_crc=False, strict=False)
        verdicts = [s.crc_valid for _ in s]
    assert verdicts[-1] is False and all(verdicts[:-1])


def test_an_abandoned_scan_stops_its_thread_and_lets_the_map_close(tmp_path: Path) -> None:
    engine.use(engine.NATIVE)
    seed = fuzz.build_seeds(random.Random(5))[0]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(seed.data * 50)
    before = threading.active_count()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(crc, "PREFETCH_BYTES", 0)
        mp.setattr(crc, "PREFETCH_CHUNK", 100)
        with open(path, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            it = iter(SegmentScanner(memoryview(m)))
            first = next(it)
            assert threading.active_count() == before + 1
            del first, it  # the generator's cleanup stops the thread and drops its view
            assert threading.active_count() == before
            m.close()  # no view of the map is left


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_failing_walk_ahead_leaves_the_crcs_to_the_scanner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine.use(engine.NATIVE)
    seed = fuzz.build_seeds(random.Random(9))[0]

    def broken(*_args: object) -> None:
        raise engine.NativeEngineError("byte 0", RuntimeError("a bug"))

    monkeypatch.setattr(engine, "crc_ahead", broken)
    assert _scan(seed.data, True, False) == _scan(seed.data, False, False)  # no traceback

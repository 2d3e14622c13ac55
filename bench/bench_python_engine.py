#!/usr/bin/env python3
"""The python engine (the fallback) against kafka-python on the two cases the engine issue
names: v2 records with two headers each (the same two on every record, and with one of them a
per-record trace id), and v1 gzip messages.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_python_engine.py [--records 200000] [--runs 5]

Each case is one segment built in memory with klogtool's encoders (~120-byte values, 500
records a batch or wrapper). Timed in this process, the runs interleaved, the garbage
collector off, CPU time: every record of every batch, reading offset, timestamp, key, value
and headers (the same loop for both), klogtool under ``KLOGTOOL_ENGINE=python`` reading the
bytes as the CLI does (a ``SegmentScanner`` over the buffer), kafka-python through
``MemoryRecords``; the native engine's records, when it is built, are timed through the same
loop for scale. Exit status 0 whatever the numbers say.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from kafka.record import MemoryRecords  # noqa: E402

from klogtool.formats import codecs, engine, legacy, v2  # noqa: E402
from klogtool.formats.batch import Record  # noqa: E402
from klogtool.formats.records import SegmentScanner  # noqa: E402

PER_BATCH = 500


def _records(n: int, headers: int, traced: bool = False) -> list[Record]:
    """``headers`` fixed headers a record; ``traced`` makes the last one a per-record id."""
    rng = random.Random(20261125)
    hdrs = tuple((f"header-{i}", b"value-%d" % i) for i in range(headers))
    out = []
    for i in range(n):
        key = b"user-%011d" % rng.randrange(10**6)
        if traced:
            hdrs = hdrs[:-1] + (("trace-id", rng.randbytes(16).hex().encode()),)
        out.append(Record(i, 1_700_000_000_000 + i, key, rng.randbytes(60).hex().encode(), hdrs))
    return out


def segment_v2_headers(n: int, traced: bool = False) -> bytes:
    recs = _records(n, headers=2, traced=traced)
    return b"".join(v2.encode_batch(recs[i : i + PER_BATCH]) for i in range(0, n, PER_BATCH))


def segment_v1_gzip(n: int) -> bytes:
    recs = [Record(r.offset, r.timestamp, r.key, r.value) for r in _records(n, headers=0)]
    return b"".join(
        legacy.encode_wrapper(recs[i : i + PER_BATCH], magic=1, compression=codecs.GZIP)
        for i in range(0, n, PER_BATCH)
    )


def klogtool_read(data: bytes, engine_name: str = engine.PYTHON) -> int:
    engine.use(engine_name)
    total = 0
    for batch in SegmentScanner(memoryview(data)):
        for r in batch.records():
            total += r.offset + len(r.value or b"") + len(r.key or b"") + len(r.headers)
    return total


def kafka_python_read(data: bytes) -> int:
    total = 0
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        for r in batch:
            total += r.offset + len(r.value or b"") + len(r.key or b"") + len(r.headers)
    return total


def cpu(fn: Callable[[bytes], int], data: bytes) -> tuple[float, int]:
    gc.disable()
    try:
        start = time.process_time()
        result = fn(data)
        return time.process_time() - start, result
    finally:
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args(argv)
    cases = {
        "v2, 2 headers a record": segment_v2_headers(a.records),
        "v2, 2 headers, 1 a trace id": segment_v2_headers(a.records, traced=True),
        "v1 gzip messages": segment_v1_gzip(a.records),
    }
    readers = {"klogtool python engine": klogtool_read, "kafka-python": kafka_python_read}
    if engine.native_available():  # for scale: the same loop over the native engine's records
        readers["klogtool native engine"] = partial(klogtool_read, engine_name=engine.NATIVE)
    print(f"{a.records:,} records a case; CPU ns per record, median of {a.runs} runs")
    for case, data in cases.items():
        times: dict[str, list[float]] = {name: [] for name in readers}
        results = set()
        for _ in range(a.runs):
            for name, fn in readers.items():
                t, result = cpu(fn, data)
                times[name].append(t)
                results.add(result)
        assert len(results) == 1, f"{case}: the readers disagree"
        ours, theirs, *native = (statistics.median(times[n]) for n in readers)
        line = (
            f"{case:28} klogtool {ours / a.records * 1e9:7,.0f}   kafka-python "
            f"{theirs / a.records * 1e9:7,.0f}   {theirs / ours:4.2f}x"
        )
        if native:
            line += f"   (native engine {native[0] / a.records * 1e9:,.0f})"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

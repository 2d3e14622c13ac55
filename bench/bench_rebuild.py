#!/usr/bin/env python3
"""rebuild-index throughput on a large generated partition, against plain read + CRC-32C.

Run by hand (it is not a test)::

    python bench/bench_rebuild.py [--size 1G] [--segment-bytes 128M] [--runs 5] [--out DIR]

It writes one partition directory (cached in ``--out``, default
``$TMPDIR/klogtool-bench/rebuild-<size>-<segment>``) of v2 segments: an idempotent producer's
uncompressed batches of 60-120 records (150-byte values; about 19 KB per batch, the size
``batch.size=16384`` producers write), then times, each as the median (and min) of ``--runs``
runs with the page cache warm:

``read+crc``
    every segment read in 1 MiB blocks and CRC-32C'd as one stream: the speed of the disk
    (here: the page cache) plus the checksum, with no per-batch work at all. The baseline.
``kafka-python``
    kafka-python's ``MemoryRecords`` walking the batches and validating each CRC (the Python
    peer; it has no index builder).
``rebuild --jobs 1`` / ``rebuild --jobs N``
    ``klogtool rebuild-index`` (the library: ``rebuild.run_rebuild``) over the partition: every
    batch header walked, its CRC checked, the .index/.timeindex/.txnindex built and written
    (the index files are deleted before each run so each run writes them).

The target (issue 3): rebuild-index at ≥ 50 % of read+CRC. Exit status is 0 whatever it says.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import klogtool  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, _REPO)

import crc32c  # noqa: E402

from klogtool.formats.batch import Record  # noqa: E402
from klogtool.formats.v2 import encode_batch  # noqa: E402
from klogtool.log import targets  # noqa: E402
from klogtool.log.atomic import FileOps  # noqa: E402
from klogtool.log.context import ReadContext  # noqa: E402
from klogtool.log.repair import rebuild  # noqa: E402

try:
    from kafka.record import MemoryRecords
except ImportError:  # the peer is optional
    MemoryRecords = None

SEED = 20240612
TEMPLATES = 64  # distinct batches, reused with new base offsets (the CRC does not cover them)
TARGET = 0.5


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("b")
    return int(t[:-1]) * units[t[-1]] if t[-1:] in units else int(t)


def _templates() -> list[tuple[bytes, int]]:
    """(batch bytes, record count) for TEMPLATES distinct batches."""
    rnd = random.Random(SEED)
    out = []
    offset = 0
    ts = 1_700_000_000_000
    for _ in range(TEMPLATES):
        n = rnd.randint(60, 120)
        records = [
            Record(
                offset + i,
                ts + i,
                b"user-%010d" % rnd.randrange(10**6),
                b'{"event":"click","v":"' + rnd.randbytes(60).hex().encode() + b'"}',
            )
            for i in range(n)
        ]
        batch = encode_batch(
            records,
            partition_leader_epoch=5,
            producer_id=4242,
            producer_epoch=0,
            base_sequence=offset,
        )
        out.append((batch, n))
        offset += n
        ts += n + 3
    return out


def generate(part: Path, size: int, segment_bytes: int) -> None:
    """Segments of about ``segment_bytes`` up to ``size`` bytes in all (only base offsets
    are rewritten when templates repeat: the batch CRC stays valid)."""
    part.mkdir(parents=True, exist_ok=True)
    templates = _templates()
    written = 0
    offset = 0
    i = 0
    while written < size:
        seg = part / f"{offset:020d}.log"
        seg_written = 0
        with open(seg, "wb") as f:
            while seg_written < segment_bytes and written < size:
                batch, n = templates[i % len(templates)]
                i += 1
                f.write(struct.pack(">q", offset) + batch[8:])
                offset += n
                seg_written += len(batch)
                written += len(batch)
    (part / ".complete").write_text(str(written))


def _timed(fn: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        gc.collect()
        gc.disable()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        gc.enable()
    return times


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--size", default="1G", help="partition size (default 1G)")
    ap.add_argument("--segment-bytes", default="128M", help="segment size (default 128M)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="for the parallel run")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "klogtool-bench")
    ns = ap.parse_args(argv)
    size, seg_bytes = parse_size(ns.size), parse_size(ns.segment_bytes)
    part = ns.out / f"rebuild-{size}-{seg_bytes}" / "bench-0"
    if not (part / ".complete").is_file():
        print(f"generating {size / 2**20:.0f} MiB in {part} ...", file=sys.stderr)
        generate(part, size, seg_bytes)
    logs = sorted(part.glob("*.log"))
    total = sum(p.stat().st_size for p in logs)

    def read_crc() -> None:
        for p in logs:
            c = 0
            with open(p, "rb", buffering=0) as f:
                while block := f.read(1 << 20):
                    c = crc32c.crc32c(block, c)

    def kafka_python() -> None:
        assert MemoryRecords is not None
        for p in logs:
            records = MemoryRecords(p.read_bytes())
            while (batch := records.next_batch()) is not None:
                if not batch.validate_crc():
                    raise SystemExit(f"bad CRC in {p}")

    def rebuild_with(jobs: int) -> Callable[[], None]:
        def go() -> None:
            for p in part.glob("*.*index"):
                p.unlink()
            stats = rebuild.run_rebuild(
                targets.resolve([str(part)]),
                rebuild.RebuildOptions(ctx=ReadContext.of(), jobs=jobs),
                FileOps(),
                lambda obj: None,
            )
            if stats.segments_skipped or stats.files_written < 2 * len(logs):
                raise SystemExit(f"unexpected rebuild result: {stats}")

        return go

    ops: list[tuple[str, Callable[[], None]]] = [("read+crc", read_crc)]
    if MemoryRecords is not None:
        ops.append(("kafka-python", kafka_python))
    ops.append(("rebuild --jobs 1", rebuild_with(1)))
    if ns.jobs > 1:
        ops.append((f"rebuild --jobs {ns.jobs}", rebuild_with(ns.jobs)))
    for _name, fn in ops:  # warm the page cache and the code paths
        fn()
    results: dict[str, list[float]] = {name: [] for name, _ in ops}
    for _ in range(ns.runs):  # interleaved, so that drifting machine load hits all alike
        for name, fn in ops:
            results[name] += _timed(fn, 1)
    print(
        f"klogtool {klogtool.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), crc32c "
        f"hardware_based={getattr(crc32c, 'hardware_based', '?')}"
    )
    print(f"partition: {len(logs)} segments, {total / 2**20:.0f} MiB, {ns.runs} runs each\n")
    base = statistics.median(results["read+crc"])
    head = ("operation", "MB/s (median)", "ms median", "ms min", "vs read+crc")
    print(f"{head[0]:<20} {head[1]:>14} {head[2]:>10} {head[3]:>8} {head[4]:>12}")
    for name, times in results.items():
        med = statistics.median(times)
        print(
            f"{name:<20} {total / 1e6 / med:>14.0f} {med * 1000:>10.0f} {min(times) * 1000:>8.0f}"
            f" {base / med:>11.0%}"
        )
    for name in results:
        if name.startswith("rebuild"):
            ratio = base / statistics.median(results[name])
            verdict = "PASS" if ratio >= TARGET else "FAIL"
            print(f"target {name} >= {TARGET:.0%} of read+crc: {verdict} ({ratio:.0%})")


if __name__ == "__main__":
    main()

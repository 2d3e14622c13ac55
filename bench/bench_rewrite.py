#!/usr/bin/env python3
"""Throughput of the rewriting commands: convert-format and compact, in records per second.

Run by hand (it is not a test)::

    python bench/bench_rewrite.py [--records 500000] [--runs 3] [--out DIR]

It writes one v2 partition (cached in ``--out``, default ``$TMPDIR/klogtool-bench-rewrite``):
``--records`` records in batches of 200-800, five segments (the last one, small, is the active
segment), 16-byte keys from 50k users (so compaction has plenty to remove), JSON-like values of
~100-200 bytes, 8% tombstones, an idempotent producer. Then, each timed ``--runs`` times on a
fresh copy (the copy is not timed), through the same library calls the CLI makes, real fsyncs
included:

``convert v2 none -> v2 lz4``, ``convert v2 none -> v1 gzip`` (lossy: headers, producer ids)
    ``plan_conversion`` (validates and decodes every record) + ``execute_conversion`` into a
    new directory, indexes included.
``compact``
    ``plan_compaction`` (scan, offset map over the dirty range) + ``execute_compaction``
    (every segment below the active one recopied, swapped in, checkpoint written).

The peer for conversion is kafka-python: ``MemoryRecords`` decoding every batch and
``MemoryRecordsBuilder`` re-encoding it with the target codec, in memory (no files, no
indexes, no validation) - a lower bound for what a Python tool built on it would take.
Rates are from the median run; records/s counts input records.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
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

from klogtool.formats import codecs  # noqa: E402
from klogtool.formats.batch import Record  # noqa: E402
from klogtool.formats.checkpoint import encode_offset_checkpoint  # noqa: E402
from klogtool.formats.index import encode_offset_index, encode_time_index  # noqa: E402
from klogtool.formats.records import SegmentScanner  # noqa: E402
from klogtool.formats.v2 import encode_batch  # noqa: E402
from klogtool.log.atomic import FileOps  # noqa: E402
from klogtool.log.context import ReadContext  # noqa: E402
from klogtool.log.indexer import build_indexes  # noqa: E402
from klogtool.log.partition import load_partition  # noqa: E402
from klogtool.log.rewrite.cleaner import execute_compaction, plan_compaction  # noqa: E402
from klogtool.log.rewrite.converter import (  # noqa: E402
    ConvertOptions,
    execute_conversion,
    plan_conversion,
)
from klogtool.log.topicconfig import TopicConfig  # noqa: E402

try:
    from kafka.record import MemoryRecords
    from kafka.record.memory_records import MemoryRecordsBuilder
except ImportError:
    MemoryRecords = None

GENERATOR_VERSION = 1
SEED = 4711
T0 = 1_700_000_000_000
USERS = 50_000


def generate(part: Path, n: int) -> None:
    rng = random.Random(SEED)
    part.mkdir(parents=True)
    bounds = [0, n * 30 // 100, n * 55 // 100, n * 80 // 100, n * 98 // 100, n]
    offset = 0
    seq = 0
    for s in range(5):
        base = offset
        chunks = []
        while offset < bounds[s + 1]:
            count = min(rng.randint(200, 800), bounds[s + 1] - offset)
            recs = []
            for o in range(offset, offset + count):
                key = b"user-%011d" % rng.randrange(USERS)
                if rng.random() < 0.08:
                    value = None
                else:
                    value = b'{"id":%d,"amount":%d.%02d,"currency":"EUR","note":"%s"}' % (
                        o,
                        rng.randrange(10**6),
                        rng.randrange(100),
                        b"x" * rng.randrange(40, 140),
                    )
                recs.append(Record(o, T0 + o // 20, key, value))
            chunks.append(encode_batch(recs, producer_id=77, producer_epoch=0, base_sequence=seq))
            seq += count
            offset += count
        data = b"".join(chunks)
        (part / f"{base:020d}.log").write_bytes(data)
        built = build_indexes(data, base)
        (part / f"{base:020d}.index").write_bytes(encode_offset_index(built.offsets, base))
        (part / f"{base:020d}.timeindex").write_bytes(encode_time_index(built.times, base))
    (part.parent / "replication-offset-checkpoint").write_bytes(
        encode_offset_checkpoint({("bench", 0): offset})
    )
    (part.parent / "meta.properties").write_text("version=0\nbroker.id=0\n")


def records_in(part: Path) -> int:
    n = 0
    for log in sorted(part.glob("*.log")):
        for b in SegmentScanner(log.read_bytes(), check_crc=False):
            n += b.count
    return n


def timed(runs: int, setup: Callable[[], object], fn: Callable[[object], object]) -> list[float]:
    out = []
    for _ in range(runs):
        arg = setup()
        t = time.perf_counter()
        fn(arg)
        out.append(time.perf_counter() - t)
    return out


def kafka_python_convert(part: Path, magic: int, codec: int) -> None:
    for log in sorted(part.glob("*.log")):
        mr = MemoryRecords(log.read_bytes())
        while mr.has_next():
            batch = mr.next_batch()
            b = MemoryRecordsBuilder(magic, codec, batch_size=1 << 30)
            for r in batch:
                b.append(r.timestamp, r.key, r.value, r.headers if magic >= 2 else [])
            b.close()
            b.buffer()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "klogtool-bench-rewrite"))
    args = ap.parse_args()
    root = Path(args.out)
    src = root / f"v{GENERATOR_VERSION}-{args.records}" / "logdir"
    part = src / "bench-0"
    if not part.is_dir():
        shutil.rmtree(src, ignore_errors=True)
        t = time.perf_counter()
        generate(part, args.records)
        print(f"generated {args.records:,} records in {time.perf_counter() - t:.1f} s")
    n = records_in(part)
    size = sum(p.stat().st_size for p in part.glob("*.log"))
    print(
        f"partition: {n:,} records, {size / 1e6:.1f} MB, {len(list(part.glob('*.log')))} segments"
    )
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; median of {args.runs} runs\n")
    work = root / "work"
    rows = []

    def fresh_dest() -> Path:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        return work / "out"

    for label, opts in (
        (
            "convert v2 none -> v2 lz4",
            ConvertOptions(ctx=ReadContext.of(), to_magic=2, compression=codecs.LZ4),
        ),
        (
            "convert v2 none -> v1 gzip",
            ConvertOptions(ctx=ReadContext.of(), to_magic=1, compression=codecs.GZIP),
        ),
    ):

        def convert(dest: object, opts: ConvertOptions = opts) -> None:
            plan = plan_conversion(part, opts)
            execute_conversion(FileOps(), plan, dest=dest)  # type: ignore[arg-type]

        times = timed(args.runs, fresh_dest, convert)
        peer = None
        if MemoryRecords is not None:
            magic, codec = opts.to_magic, opts.compression or 0
            peer = timed(
                args.runs,
                lambda: None,
                lambda _, m=magic, c=codec: kafka_python_convert(part, m, c),
            )
        rows.append((label, times, peer))

    def fresh_copy() -> Path:
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(src, work / "logdir")
        return work / "logdir" / "bench-0"

    def compact(p: object) -> None:
        view = load_partition(p)  # type: ignore[arg-type]
        plan = plan_compaction(
            view, TopicConfig(cleanup_policy=("compact",)), now=T0 + 60_000, ctx=ReadContext.of()
        )
        execute_compaction(FileOps(), plan)

    rows.append(("compact", timed(args.runs, fresh_copy, compact), None))
    shutil.rmtree(work, ignore_errors=True)
    print(
        f"{'operation':<30} {'klogtool rec/s':>15} {'median s':>9} "
        f"{'kafka-python rec/s':>19} {'ratio':>6}"
    )
    for label, times, peer in rows:
        med = statistics.median(times)
        line = f"{label:<30} {n / med:>15,.0f} {med:>9.2f}"
        if peer:
            pmed = statistics.median(peer)
            line += f" {n / pmed:>19,.0f} {pmed / med:>6.2f}"
        print(line)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Benchmark ``klogtool export``: Spark ``local[1]`` / ``local[2]`` and the local engine,
against the single-process ``dump-segments --format jsonl`` on the same generated log dir.

Run by hand (it is not a test)::

    python bench/bench_export.py [--size 1G] [--runs 1] [--codec none] [--out DIR]
                                 [--only dump,spark1,spark2,spark2-jsonl,local2]

The log dir (cached in ``--out``, default ``$TMPDIR/klogtool-bench-export``, keyed by the
parameters) has 2 topics x 2 partitions with segments of at most 128 MiB, filled with v2
batches of 500 records like ``bench_formats.py``'s (16-byte keys, JSON-like values of ~110-200
bytes, a header on 10% of the records, an idempotent producer). Generation writes a pool of
distinct batches and repeats it with patched offsets, timestamps and sequences (CRCs
recomputed), so a GiB takes seconds.

Every operation runs the CLI as a separate process (``python -m klogtool``), so the times
include what a user waits for: interpreter start and, for Spark, the JVM and session start.
A tiny export on ``local[2]`` is timed as well to show that fixed cost. Rates are records and
segment bytes per second of wall time, from the median of ``--runs`` runs.

Operations (``--only`` picks some):

``dump``          ``dump-segments DIR --deep-iteration --print-data --format jsonl`` to a file
``spark1``        ``export --engine spark --master local[1] --to parquet``
``spark2``        ``export --engine spark --master local[2] --to parquet``
``spark2-jsonl``  ``export --engine spark --master local[2] --to jsonl`` (the dump's format)
``local2``        ``export --engine local --jobs 2 --to parquet`` (no JVM)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import klogtool  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, _REPO)

from klogtool.formats import codecs, v2  # noqa: E402
from klogtool.formats.batch import Record  # noqa: E402
from klogtool.formats.crc import crc32c  # noqa: E402

GENERATOR_VERSION = 1
SEED = 20240612
BATCH_RECORDS = 500
POOL = 64  # distinct batches, repeated
USERS = 200_000
BASE_TIMESTAMP = 1_700_000_000_000
PRODUCER_ID = 4242
SEGMENT_BYTES = 128 << 20
TOPICS = ("orders", "payments")
PARTITIONS = 2
CODEC_IDS = {"none": codecs.NONE, "gzip": codecs.GZIP, "lz4": codecs.LZ4, "zstd": codecs.ZSTD}
OPS = ("dump", "spark1", "spark2", "spark2-jsonl", "local2")


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    return int(float(t[:-1]) * units[t[-1]]) if t[-1:] in units else int(t)


def make_pool(codec: int) -> list[bytes]:
    rnd = random.Random(SEED)
    pool = []
    for _ in range(POOL):
        records = []
        for i in range(BATCH_RECORDS):
            key = b"user-%011d" % rnd.randrange(USERS)
            note = "x" * rnd.randrange(20, 110)
            value = (
                f'{{"id":"{rnd.getrandbits(64):016x}","amount":{rnd.randrange(100000)}.'
                f'{rnd.randrange(100):02d},"currency":"EUR","items":{rnd.randrange(1, 9)},'
                f'"note":"{note}"}}'
            ).encode()
            headers: tuple = ()
            if rnd.random() < 0.1:
                headers = (("traceparent", b"00-%032x-%016x-01" % (rnd.getrandbits(128), 7)),)
            records.append(Record(i, BASE_TIMESTAMP + i // 20, key, value, headers))
        pool.append(
            v2.encode_batch(
                records,
                compression=codec,
                producer_id=PRODUCER_ID,
                producer_epoch=0,
                base_sequence=0,
                partition_leader_epoch=3,
            )
        )
    return pool


def generate(root: Path, total: int, codec: str) -> None:
    """``total`` bytes spread over TOPICS x PARTITIONS, segments of SEGMENT_BYTES at most."""
    pool = make_pool(CODEC_IDS[codec])
    per_partition = total // (len(TOPICS) * PARTITIONS)
    for t, topic in enumerate(TOPICS):
        for p in range(PARTITIONS):
            part = root / f"{topic}-{p}"
            part.mkdir(parents=True)
            offset, written, i = 0, 0, 0
            ts = BASE_TIMESTAMP + (t * PARTITIONS + p) * 1000
            seg = None
            seg_bytes = 0
            while written < per_partition:
                if seg is None or seg_bytes >= SEGMENT_BYTES:
                    if seg is not None:
                        seg.close()
                    seg = open(part / f"{offset:020d}.log", "wb")  # noqa: SIM115
                    seg_bytes = 0
                b = bytearray(pool[i % POOL])
                delta = struct.unpack_from(">i", b, 23)[0]
                struct.pack_into(">q", b, 0, offset)  # base offset (not under the CRC)
                struct.pack_into(">qq", b, 27, ts, ts + BATCH_RECORDS // 20)
                struct.pack_into(">i", b, 53, offset % (1 << 31))  # base sequence
                struct.pack_into(">I", b, 17, crc32c(memoryview(b)[21:]))
                seg.write(b)
                offset += delta + 1
                ts += 50
                written += len(b)
                seg_bytes += len(b)
                i += 1
            if seg is not None:
                seg.close()


def log_dir(out: Path, size: int, codec: str) -> Path:
    root = out / f"logdir-{codec}-{size}-v{GENERATOR_VERSION}"
    done = root / ".complete"
    if not done.exists():
        if root.exists():
            shutil.rmtree(root)
        print(f"generating {size / 2**30:.2f} GiB ({codec}) in {root} ...", file=sys.stderr)
        t = time.monotonic()
        generate(root, size, codec)
        done.touch()
        print(f"  {time.monotonic() - t:.1f} s", file=sys.stderr)
    return root


def run_cli(args: list[str], stdout=None) -> tuple[float, str]:
    env = {**os.environ, "NO_COLOR": "1", "PYSPARK_PYTHON": sys.executable}
    t = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "klogtool", "--no-progress", *args],
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    elapsed = time.monotonic() - t
    if r.returncode != 0:
        raise SystemExit(f"klogtool {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return elapsed, r.stdout if stdout is None else ""


def export(root: Path, dest: Path, extra: list[str]) -> tuple[float, dict]:
    if dest.exists():
        shutil.rmtree(dest)
    to = "jsonl" if "jsonl" in extra else "parquet"
    rest = [a for a in extra if a != "jsonl"]
    elapsed, out = run_cli(["export", str(root), "--to", to, str(dest), "--format", "jsonl", *rest])
    summary = json.loads(out.splitlines()[-1])
    shutil.rmtree(dest, ignore_errors=True)
    return elapsed, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="1G", help="log dir size (default 1G)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--codec", choices=sorted(CODEC_IDS), default="none")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "klogtool-bench-export"))
    ap.add_argument("--only", default=",".join(OPS), help=f"some of {','.join(OPS)}")
    args = ap.parse_args()
    ops = [o.strip() for o in args.only.split(",") if o.strip()]
    bad = [o for o in ops if o not in OPS]
    if bad:
        ap.error(f"unknown operations: {', '.join(bad)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    root = log_dir(out, parse_size(args.size), args.codec)
    size = sum(f.stat().st_size for f in root.rglob("*.log"))
    segments = len(list(root.rglob("*.log")))

    import pyspark

    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, pyspark "
        f"{pyspark.__version__}, log dir {size / 2**20:.0f} MiB in {segments} segments "
        f"({args.codec}), {args.runs} run(s) each"
    )
    # Spark's fixed cost: session start and one query, exporting a one-batch segment
    tiny = out / "tiny-0"
    tiny.mkdir(exist_ok=True)
    (tiny / "00000000000000000000.log").write_bytes(make_pool(CODEC_IDS[args.codec])[0])
    fixed, _ = export(tiny, out / "tiny-out", ["--master", "local[2]"])
    print(f"Spark local[2] fixed cost (tiny export, process wall time): {fixed:.1f} s\n")

    plans = {
        "dump": None,
        "spark1": ["--master", "local[1]"],
        "spark2": ["--master", "local[2]"],
        "spark2-jsonl": ["--master", "local[2]", "jsonl"],
        "local2": ["--engine", "local", "--jobs", "2"],
    }
    results: dict[str, tuple[float, int]] = {}
    for op in ops:
        times = []
        records = 0
        for _ in range(args.runs):
            if op == "dump":
                target = out / "dump.jsonl"
                with open(target, "w") as f:
                    t, _ = run_cli(
                        ["dump-segments", str(root), "--deep-iteration", "--print-data",
                         "--format", "jsonl"],
                        stdout=f,
                    )  # fmt: skip
                with open(target, "rb") as f:
                    records = sum(1 for line in f if line.startswith(b'{"type":"record"'))
                target.unlink()
            else:
                t, summary = export(root, out / f"out-{op}", plans[op] or [])
                records = summary["rows"]
            times.append(t)
            print(f"  {op}: {t:.1f} s", file=sys.stderr)
        results[op] = (statistics.median(times), records)

    print("| operation | wall s | records/s | MB/s | vs dump |")
    print("|---|---:|---:|---:|---:|")
    base = results.get("dump")
    for op, (t, n) in results.items():
        ratio = f"{base[0] / t:.2f}x" if base else "-"
        print(f"| {op} | {t:.1f} | {n / t:,.0f} | {size / t / 1e6:.1f} | {ratio} |")
    if "spark1" in results and "spark2" in results:
        s = results["spark1"][0] / results["spark2"][0]
        print(f"\nlocal[1] -> local[2] speed-up: {s:.2f}x (wall time, incl. the fixed cost)")
        adj = (results["spark1"][0] - fixed) / max(results["spark2"][0] - fixed, 1e-9)
        print(f"local[1] -> local[2] speed-up without the fixed cost: {adj:.2f}x")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""``dump-segments`` and ``verify --deep``: ``--jobs 1`` against ``--jobs N`` and the default,
by input size, on an idle machine and on one with cores taken: what the default parallelism is
chosen by.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_jobs.py [--command dump|verify] [--sizes 16M,64M,256M,1G] [--runs 5]
                               [--jobs 2] [--out DIR] [--loads 0,1]

Segments: ``bench_stats.py``'s generated partition (uncompressed batches of 500 ~138-byte
records), its batches from the start up to each ``--sizes`` (repeated, base offsets rewritten,
past its end), one segment each, cached in ``--out``. Each run is a separate process, stdout to
/dev/null: ``dump-segments --deep-iteration --print-data --format jsonl SEG``, or
``verify --deep LOGDIR`` on a log dir of four partitions of a quarter of the size each (links
to one segment), with ``--jobs 1``, ``--jobs N`` and no ``--jobs`` (the default), under the
native engine. ``--loads``: how many
busy processes (a Python loop each) run meanwhile; each load level's runs are interleaved,
``--runs`` rounds, median wall and CPU (the children's user + system), and the median of each
round's ratio to ``--jobs 1``; and the free CPUs the default saw (``free_cpus``, median).
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_stats import generated, parse_size  # noqa: E402

from klogtool.commands._options import free_cpus  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUSY = "while True: pass"


def segment(out: Path, size: int) -> Path:
    """A segment of ``size`` bytes (whole batches) from the generated partition's batches."""
    path = out / f"jobs-{size}" / "bench-0" / "00000000000000000000.log"
    if path.exists():
        return path
    part, _ = generated(out, 256 << 20, 128 << 20)
    source = sorted(part.glob("*.log"))[0].read_bytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        written = offset = pos = 0
        while written < size:
            if pos + 12 > len(source):
                pos = 0
            length = struct.unpack_from(">i", source, pos + 8)[0]
            batch = source[pos : pos + 12 + length]
            last_delta = struct.unpack_from(">i", batch, 23)[0]
            f.write(struct.pack(">q", offset) + batch[8:])
            offset += last_delta + 1
            written += len(batch)
            pos += len(batch)
    return path


def log_dir(out: Path, size: int) -> Path:
    """A log dir of four partitions, each a link to one segment of ``size / 4`` bytes."""
    seg = segment(out, size // 4)
    logdir = out / f"jobs-logdir-{size}"
    for i in range(4):
        path = logdir / f"bench-{i}" / seg.name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            os.link(seg, path)
    return logdir


def run(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``python -m klogtool`` process."""
    env = {**os.environ, "KLOGTOOL_ENGINE": "native"}
    start = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "klogtool", *args],
        cwd=ROOT,  # (-m puts the working directory first on the path: this checkout's code)
        env=env,
        stdout=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{args}: exit {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--command", choices=("dump", "verify"), default="dump")
    ap.add_argument("--sizes", default="16M,64M,256M,1G")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--loads", default="0,1")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "klogtool-bench")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    make = segment if args.command == "dump" else log_dir
    segs = [(text, make(args.out, parse_size(text))) for text in args.sizes.split(",")]
    cases = {"--jobs 1": ["--jobs", "1"], f"--jobs {args.jobs}": ["--jobs", str(args.jobs)]}
    cases["default"] = []
    line = ["dump-segments", "--deep-iteration", "--print-data", "--format", "jsonl"]
    if args.command == "verify":
        line = ["verify", "--deep"]
    print(f"{args.command}, {os.cpu_count()} CPUs")
    print("| load | input | case | wall s | CPU s | wall / --jobs 1 (per round) | free CPUs |")
    print("|---|---|---|---:|---:|---:|---:|")
    for load in (int(n) for n in args.loads.split(",")):
        busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(load)]
        try:
            if busy:
                time.sleep(30)  # the 1-minute load average the default reads catches up
            got: dict[tuple[str, str], list[tuple[float, float]]] = {}
            seen = []
            for _ in range(args.runs):
                for size, seg in segs:
                    for case, extra in cases.items():
                        seen.append(free_cpus())  # what the default reads as it starts
                        got.setdefault((size, case), []).append(run([*line, *extra, str(seg)]))
            for size, _seg in segs:
                one = got[(size, "--jobs 1")]
                for case in cases:
                    runs = got[(size, case)]
                    ratio = statistics.median(a[0] / b[0] for a, b in zip(runs, one, strict=True))
                    wall = statistics.median(r[0] for r in runs)
                    cpu = statistics.median(r[1] for r in runs)
                    print(
                        f"| {load} busy | {size} | {case} | {wall:.2f} | {cpu:.2f} | "
                        f"{ratio:.2f} | {statistics.median(seen):.2f} |",
                        flush=True,
                    )
        finally:
            for p in busy:
                p.kill()
                p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())

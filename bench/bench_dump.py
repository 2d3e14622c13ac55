#!/usr/bin/env python3
"""``dump-segments --format jsonl --print-data`` against the twenty-line script it replaces.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_dump.py [--records 1200000] [--runs 5] [--out DIR]

The segment is ``bench_engines.py``'s small uncompressed one (~120-byte records, cached in
``--out``). Each run is a separate process writing to /dev/null, the runs interleaved:

``klogtool``
    ``python -m klogtool dump-segments --format jsonl --print-data SEG`` under each engine
    (``--jobs 1``), and with ``--jobs 2`` (threads rendering ahead) under the native one.
``kafka-python + json.dumps``
    The script operators write today (:data:`PEER`): kafka-python's ``MemoryRecords`` over the
    file's bytes, one ``json.dumps`` per record with base64 key and value.

Reported: median wall and CPU time (user + system of the child) and records/s. Exit status 0
whatever the numbers say.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_engines import partition_dir, segment_file, write_segments  # noqa: E402

PEER = """
import base64, json, sys
from kafka.record import MemoryRecords
out = sys.stdout
b64 = lambda b: None if b is None else base64.b64encode(b).decode()
with open(sys.argv[1], "rb") as f:
    records = MemoryRecords(f.read())
while (batch := records.next_batch()) is not None:
    for r in batch:
        out.write(json.dumps({
            "offset": r.offset, "timestamp": r.timestamp, "key": b64(r.key),
            "value": b64(r.value), "headers": [[k, b64(v)] for k, v in r.headers],
        }) + "\\n")
"""


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``cmd`` with stdout to /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run(cmd, stdout=null, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--records", type=int, default=1_200_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "klogtool-bench-engines"))
    a = p.parse_args(argv)
    pdir = partition_dir(a.out, "small", "none", a.records)
    seg = segment_file(pdir)
    if not os.path.isfile(seg):
        write_segments(a.out, "small", ["none"], a.records)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=repo)
    dump = [sys.executable, "-m", "klogtool", "--no-progress", "dump-segments"]
    dump += ["--format", "jsonl", "--print-data"]
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        "klogtool, native engine": (
            dump + ["--jobs", "1", seg],
            dict(env, KLOGTOOL_ENGINE="native"),
        ),
        "klogtool --jobs 2, native": (
            dump + ["--jobs", "2", seg],
            dict(env, KLOGTOOL_ENGINE="native"),
        ),
        "klogtool, python engine": (dump + [seg], dict(env, KLOGTOOL_ENGINE="python")),
        "kafka-python + json.dumps": ([sys.executable, "-c", PEER, seg], env),
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(a.runs):
        for name, (cmd, case_env) in cases.items():
            times[name].append(timed(cmd, case_env))
    peer = statistics.median(w for w, _c in times["kafka-python + json.dumps"])
    print(f"{a.records:,} records ({os.path.getsize(seg):,} bytes); median of {a.runs} runs")
    print(f"{'':34} {'wall s':>8} {'CPU s':>8} {'records/s wall':>15} {'vs peer':>8}")
    for name, runs in times.items():
        wall = statistics.median(w for w, _c in runs)
        cpu = statistics.median(c for _w, c in runs)
        rate = a.records / wall
        print(f"{name:34} {wall:8.2f} {cpu:8.2f} {rate:15,.0f} {peer / wall:7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""``dump-segments --format jsonl --print-data`` against the twenty-line script it replaces.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_dump.py [--records 1200000] [--runs 5] [--out DIR] [--segment FILE]
        [--only native1,native2,python,peer]

The segment is ``bench_engines.py``'s small uncompressed one (~120-byte records, cached in
``--out``). Each run is a separate process writing to /dev/null, the runs interleaved:

``klogtool``
    ``python -m klogtool dump-segments --format jsonl --print-data SEG`` under each engine
    (``--jobs 1``), and with ``--jobs 2`` under the native one (worker processes writing the
    parts of a segment of 64 MiB or more in turn; threads rendering ahead below that).
    ``--segment FILE`` dumps that segment instead (issue 25's 2 GB one, say).
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
import struct
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


def v2_records(path: str) -> int:
    """The records of a segment of v2 batches, from their headers."""
    n = 0
    with open(path, "rb") as f:
        while len(head := f.read(61)) == 61:
            size, count = (
                struct.unpack_from(">i", head, 8)[0],
                struct.unpack_from(">i", head, 57)[0],
            )
            n += count
            f.seek(12 + size - 61, os.SEEK_CUR)
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--records", type=int, default=1_200_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "klogtool-bench-engines"))
    p.add_argument("--segment", help="dump this .log (v2 batches) instead of the generated one")
    p.add_argument(
        "--only",
        default="",
        help="comma-separated cases to run (native1, native2, python, peer) [default: all]",
    )
    a = p.parse_args(argv)
    if a.segment:
        seg = a.segment
        a.records = v2_records(seg)
    else:
        seg = segment_file(partition_dir(a.out, "small", "none", a.records))
        if not os.path.isfile(seg):
            write_segments(a.out, "small", ["none"], a.records)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=repo)
    dump = [sys.executable, "-m", "klogtool", "--no-progress", "dump-segments"]
    dump += ["--format", "jsonl", "--print-data"]
    every: dict[str, tuple[str, list[str], dict[str, str]]] = {
        "native1": (
            "klogtool, native engine",
            dump + ["--jobs", "1", seg],
            dict(env, KLOGTOOL_ENGINE="native"),
        ),
        "native2": (
            "klogtool --jobs 2, native",
            dump + ["--jobs", "2", seg],
            dict(env, KLOGTOOL_ENGINE="native"),
        ),
        "python": ("klogtool, python engine", dump + [seg], dict(env, KLOGTOOL_ENGINE="python")),
        "peer": ("kafka-python + json.dumps", [sys.executable, "-c", PEER, seg], env),
    }
    only = [c for c in a.only.split(",") if c] or list(every)
    cases = {every[c][0]: every[c][1:] for c in only}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(a.runs):
        for name, (cmd, case_env) in cases.items():
            times[name].append(timed(cmd, case_env))
    runs_of_peer = times.get("kafka-python + json.dumps")
    peer = statistics.median(w for w, _c in runs_of_peer) if runs_of_peer else float("nan")
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

#!/usr/bin/env python3
"""``dump-segments --format jsonl --print-data`` against the twenty-line script it replaces.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_dump.py [--records 1200000] [--runs 5] [--out DIR] [--segment FILE]
        [--batch-records N] [--only native1,native2,halves,python,peer]

The segment is ``bench_engines.py``'s small uncompressed one (~120-byte records, cached in
``--out``), its batches of ~500 records or, with ``--batch-records N``, of N. Each run is a
separate process writing to /dev/null, the runs interleaved:

``klogtool``
    ``python -m klogtool dump-segments --format jsonl --print-data SEG`` under each engine
    (``--jobs 1``), and with ``--jobs 2`` under the native one (worker processes writing the
    parts of a segment of 64 MiB or more in turn; threads rendering ahead below that).
    ``--segment FILE`` dumps that segment instead (issue 25's 2 GB one, say).
``2 x --jobs 1 on its halves``
    The ceiling ``--jobs 2`` is held to: the segment cut at the batch boundary nearest its
    middle into two segments (written once beside the generated ones, in ``--out``), dumped
    by two independent ``--jobs 1`` processes at the same time (what two cores give two
    processes that share nothing; on a 2-vCPU VM far less than 2x).
``kafka-python + json.dumps``
    The script operators write today (:data:`PEER`): kafka-python's ``MemoryRecords`` over the
    file's bytes, one ``json.dumps`` per record with base64 key and value.

Reported: median wall and CPU time (user + system of the children) and records/s; and the
median of each round's ``--jobs 1`` wall over the case's (the rounds interleave the cases, so a
round's ratio is of runs minutes apart at most). Exit status 0 whatever the numbers say.
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

ONE = "klogtool, native engine"
PEER_NAME = "kafka-python + json.dumps"
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


def timed(cmds: list[list[str]], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``cmds``, all at once, with stdout to /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        running = [subprocess.Popen(cmd, stdout=null, env=env) for cmd in cmds]
        if any(p.wait() != 0 for p in running):
            raise SystemExit(f"a run failed: {cmds}")
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


def halves(seg: str, out: str) -> list[str]:
    """``seg`` cut at the batch boundary nearest its middle into two segments (each a
    partition directory's ``00000000000000000000.log`` under ``out``), written once."""
    size = os.path.getsize(seg)
    name = f"halves-{os.path.basename(os.path.dirname(seg))}-{size}"
    paths = [os.path.join(out, name, half, "00000000000000000000.log") for half in "ab"]
    if all(os.path.isfile(p) for p in paths):
        return paths
    with open(seg, "rb") as f:
        cut = 0
        while cut < size // 2 and len(head := f.read(12)) == 12:
            length = struct.unpack_from(">i", head, 8)[0]
            if length < 0:
                break  # (not a segment of whole batches: cut here)
            cut += 12 + length
            f.seek(cut)
        for path, (start, end) in zip(paths, [(0, cut), (cut, size)], strict=True):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            f.seek(start)
            with open(path + ".part", "wb") as half:
                while start < end:
                    piece = f.read(min(end - start, 64 << 20))
                    half.write(piece)
                    start += len(piece)
            os.replace(path + ".part", path)
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--records", type=int, default=1_200_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "klogtool-bench-engines"))
    p.add_argument("--segment", help="dump this .log (v2 batches) instead of the generated one")
    p.add_argument(
        "--batch-records",
        type=int,
        default=0,
        help="generate batches of this many records (default: ~500, bench_engines' own)",
    )
    p.add_argument(
        "--only",
        default="",
        help="comma-separated cases to run (native1, native2, halves, python, peer) [default: all]",
    )
    a = p.parse_args(argv)
    if a.segment:
        seg = a.segment
        a.records = v2_records(seg)
    else:
        seg = segment_file(partition_dir(a.out, "small", "none", a.records, a.batch_records))
        if not os.path.isfile(seg):
            write_segments(a.out, "small", ["none"], a.records, a.batch_records)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=repo)
    dump = [sys.executable, "-m", "klogtool", "--no-progress", "dump-segments"]
    dump += ["--format", "jsonl", "--print-data"]
    native = dict(env, KLOGTOOL_ENGINE="native")
    only = [c for c in a.only.split(",") if c] or ["native1", "native2", "halves", "python", "peer"]
    every: dict[str, tuple[str, list[list[str]], dict[str, str]]] = {
        "native1": (ONE, [dump + ["--jobs", "1", seg]], native),
        "native2": ("klogtool --jobs 2, native", [dump + ["--jobs", "2", seg]], native),
        "python": ("klogtool, python engine", [dump + [seg]], dict(env, KLOGTOOL_ENGINE="python")),
        "peer": (PEER_NAME, [[sys.executable, "-c", PEER, seg]], env),
    }
    if "halves" in only:
        cmds = [dump + ["--jobs", "1", half] for half in halves(seg, a.out)]
        every["halves"] = ("2 x --jobs 1 on its halves", cmds, native)
    cases = {every[c][0]: every[c][1:] for c in only}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(a.runs):
        for name, (cmd, case_env) in cases.items():
            times[name].append(timed(cmd, case_env))
    runs_of_peer = times.get(PEER_NAME)
    peer = statistics.median(w for w, _c in runs_of_peer) if runs_of_peer else float("nan")
    print(f"{a.records:,} records ({os.path.getsize(seg):,} bytes); median of {a.runs} runs")
    print(
        f"{'':34} {'wall s':>8} {'CPU s':>8} {'records/s wall':>15} {'vs peer':>8} "
        f"{'--jobs 1 / it (each round)':>28}"
    )
    for name, runs in times.items():
        wall = statistics.median(w for w, _c in runs)
        cpu = statistics.median(c for _w, c in runs)
        rate = a.records / wall
        ratios = [one / w for (one, _c), (w, _c2) in zip(times.get(ONE, []), runs, strict=False)]
        vs_one = (
            f"{statistics.median(ratios):6.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
            if ratios and name != ONE
            else ""
        )
        vs_peer = f"{peer / wall:7.1f}x" if runs_of_peer else ""
        print(f"{name:34} {wall:8.2f} {cpu:8.2f} {rate:15,.0f} {vs_peer:>8} {vs_one:>28}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

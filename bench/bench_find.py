#!/usr/bin/env python3
"""``find --key``, ``--header`` and the regexes against ``verify --deep`` and a kafka-python
script.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_find.py [--records 1000000] [--runs 3] [--codecs none,zstd] [--out DIR]
        [--only "find --key-regex"]...

Inputs: one partition per codec of ``--records`` records of 200-byte values (keys of 1,000
distinct values, a ``trace`` header on every tenth record), written by klogtool's encoder
(``klogtool.formats.v2.encode_batch``) in batches of 500 (``bench_commands.generated``,
cached in ``--out``). Each run is a separate process (``python -m klogtool ...`` with
``KLOGTOOL_ENGINE`` set and ``KLOGTOOL_ENGINE_STATS=1``, output thrown away); the median of
``--runs`` wall times is printed, with the ratio to ``verify --deep`` under the same engine
(issue 25's target: find within 1.5x) and the kafka-python brute force over the time
(target: 10x or more). The brute force (:data:`PEER`) is the script an operator writes
today: kafka-python's ``MemoryRecords`` over the segment, each record's key compared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_commands import KEY, generated  # noqa: E402

PEER = """
import sys
from kafka.record import MemoryRecords
key = sys.argv[2].encode()
found = 0
with open(sys.argv[1], "rb") as f:
    records = MemoryRecords(f.read())
while (batch := records.next_batch()) is not None:
    for r in batch:
        if r.key == key:
            found += 1
print(found)
"""

COMMANDS = {
    "verify --deep": ["verify", "--deep"],
    "find --key": ["find", "--key", KEY.decode(), "--format", "jsonl"],
    "find --header N=V": ["find", "--header", "trace=t420", "--format", "jsonl"],
    "find --header N": ["find", "--header", "trace", "--format", "jsonl", "--limit", "10"],
    # 10 of the 1,000 keys; a value's number (translated to the regex crate's syntax)
    "find --key-regex": ["find", "--key-regex", r"^key-0004\d$", "--format", "jsonl"],
    "find --value-regex": ["find", "--value-regex", r"-42\d\d-x", "--format", "jsonl"],
}


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - start
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-500:]}")
    stats = [ln for ln in p.stderr.splitlines() if ln.startswith("klogtool engine:")]
    return took, (stats[-1].split(":", 1)[1].strip() if stats else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--codecs", default="none,zstd")
    ap.add_argument("--engines", default="native,python")
    ap.add_argument(
        "--only", action="append", help="these commands only (repeatable; verify --deep always)"
    )
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "klogtool-bench-cmd")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    engines = args.engines.split(",")
    print("| codec | command | engine | s (median) | / verify --deep | kafka-python / this "
          "| hand-backs |")  # fmt: skip
    print("|---|---|---|---:|---:|---:|---|")
    for codec in args.codecs.split(","):
        part, _n = generated(args.out, codec, args.records)
        log = str(part / "00000000000000000000.log")
        peer = [
            timed([sys.executable, "-c", PEER, log, KEY.decode()], dict(os.environ))[0]
            for _ in range(args.runs)
        ]
        brute = statistics.median(peer)
        print(f"| {codec} | kafka-python brute force (key) | - | {brute:.2f} | | 1.0 | |")
        for engine in engines:
            env = {**os.environ, "KLOGTOOL_ENGINE": engine, "KLOGTOOL_ENGINE_STATS": "1"}
            verify = None
            for label, cmd in COMMANDS.items():
                if args.only and label != "verify --deep" and label not in args.only:
                    continue
                runs = [
                    timed([sys.executable, "-m", "klogtool", *cmd, str(part)], env)
                    for _ in range(args.runs)
                ]
                took = statistics.median(t for t, _ in runs)
                handed = runs[-1][1].removeprefix("0 batches handed back") or "0"
                if verify is None:
                    verify = took
                print(
                    f"| {codec} | {label} | {engine} | {took:.2f} | {took / verify:.2f} | "
                    f"{brute / took:.1f} | {handed if engine == 'native' else '-'} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

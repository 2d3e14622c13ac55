#!/usr/bin/env python3
"""Whole commands under both engines, on every codec and on every real producer's bytes.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_commands.py [--records 200000] [--runs 3] [--codecs none,gzip,...]
                                   [--commands dump,find,stats,export,verify]
                                   [--no-producers] [--out DIR]

Inputs: one partition per codec of ``--records`` records (about 200-byte values, keys of 1,000
distinct values, a header on every tenth record), written by klogtool's encoder in batches of
500 (cached in ``--out``); and the largest file of each client in ``fixtures/producers``
(kafka-python, aiokafka, confluent-kafka, sarama: 10,000 records each) copied into a partition
dir. Each command is a separate ``python -m klogtool`` process with ``KLOGTOOL_ENGINE`` set
and ``KLOGTOOL_ENGINE_STATS=1``, its output thrown away; the median of ``--runs`` wall times
gives records/s (process start included: ``--version`` is printed as that fixed cost).

Commands: ``dump`` (dump-segments --format jsonl --print-data), ``find`` (find --key K
--format jsonl, K one key), ``stats`` (stats --format jsonl), ``export`` (export --engine
local --jobs 1 --to parquet), ``verify`` (verify --deep). The last column is the native
engine's hand-backs per reason, from the ``KLOGTOOL_ENGINE_STATS`` line (0 is what
well-formed input must give).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from klogtool.formats import codecs  # noqa: E402
from klogtool.formats.batch import Record  # noqa: E402
from klogtool.formats.v2 import encode_batch  # noqa: E402

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
KEY = b"key-00042"
COMMANDS = {
    "dump": lambda part, _tmp: ["dump-segments", "--format", "jsonl", "--print-data", part],
    "find": lambda part, _tmp: ["find", "--key", KEY.decode(), "--format", "jsonl", part],
    "stats": lambda part, _tmp: ["stats", "--format", "jsonl", part],
    "export": lambda part, tmp: [
        "export",
        "--engine",
        "local",
        "--jobs",
        "1",
        "--overwrite",
        "--to",
        "parquet",
        str(Path(tmp) / "out"),
        part,
    ],  # fmt: skip
    "verify": lambda part, _tmp: ["verify", "--deep", part],
}


def generated(out: Path, codec: str, n: int) -> tuple[Path, int]:
    part = out / f"gen-{codec}-{n}" / "bench-0"
    log = part / "00000000000000000000.log"
    if not log.exists():
        part.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as f:
            for base in range(0, n, 500):
                recs = [
                    Record(
                        o,
                        1_700_000_000_000 + o,
                        b"key-%05d" % (o % 1000),
                        (b"value-%d-" % o).ljust(200, b"x"),
                        (("trace", b"t%d" % o),) if o % 10 == 0 else (),
                    )
                    for o in range(base, min(n, base + 500))
                ]
                f.write(encode_batch(recs, compression=codecs.CODEC_IDS[codec]))
    return part, n


def producers(out: Path) -> list[tuple[str, Path, int]]:
    """The largest file of each client in fixtures/producers, as a partition dir."""
    files = json.loads((ROOT / "fixtures" / "producers" / "manifest.json").read_text())["files"]
    best: dict[str, tuple[int, str, int]] = {}
    for name, meta in files.items():
        client, size = meta["client"], meta["bytes"]
        if client not in best or size > best[client][0]:
            best[client] = (size, name, meta["records"])
    found = []
    for client, (_size, name, records) in sorted(best.items()):
        part = out / f"producer-{client}" / "bench-0"
        part.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "fixtures" / "producers" / name, part / "00000000000000000000.log")
        found.append((f"{client} ({Path(name).stem})", part, records))
    return found


def timed(args: list[str], engine: str) -> tuple[float, str]:
    env = {**os.environ, "KLOGTOOL_ENGINE": engine, "KLOGTOOL_ENGINE_STATS": "1"}
    start = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "klogtool", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    took = time.perf_counter() - start
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: exit {p.returncode}: {p.stderr[-500:]}")
    stats = [ln for ln in p.stderr.splitlines() if ln.startswith("klogtool engine:")]
    return took, (stats[-1].split(":", 1)[1].strip() if stats else "0")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--no-producers", action="store_true")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "klogtool-bench-cmd")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    inputs = [
        (f"generated {c}", *generated(args.out, c, args.records)) for c in args.codecs.split(",")
    ]
    if not args.no_producers:
        inputs += producers(args.out)
    start, _ = timed(["--version"], "native")
    print(f"process start (--version): {start:.2f} s\n")
    print("| input | command | records | native s | python s | native rec/s | python rec/s "
          "| speed-up | native hand-backs |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for label, part, records in inputs:
            for command in args.commands.split(","):
                cmd = COMMANDS[command](str(part), tmp)
                times: dict[str, list[float]] = {"native": [], "python": []}
                handed = "0"
                for _ in range(args.runs):  # interleaved: the machine's drift hits both
                    for engine in ("native", "python"):
                        took, stats = timed(cmd, engine)
                        times[engine].append(took)
                        if engine == "native":
                            handed = stats
                n, p = (statistics.median(times[e]) for e in ("native", "python"))
                print(
                    f"| {label} | {command} | {records:,} | {n:.2f} | {p:.2f} | "
                    f"{records / n:,.0f} | {records / p:,.0f} | {p / n:.1f}× | {handed} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""``stats`` against its floor, ``verify --deep``, on one generated partition and on partitions
of real producers' batches, in CPU and wall time.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_stats.py [--size 256M] [--segment-bytes 128M] [--runs 5]
                                [--records 1000000] [--no-producers] [--no-generated]
                                [--trees DIR,DIR] [--out DIR]

Inputs (cached in ``--out``):

* ``generated``: ``--size`` bytes of uncompressed v2 segments of at most ``--segment-bytes``,
  an idempotent producer's batches of 500 records of ~130 bytes on disk (16-byte keys, JSON-like
  values of 70-110 bytes, a header on one record in ten): 2.0 M records in 256 MiB. Keys: one
  record in ten takes one of 100 hot keys, the others one of 3 M, so a 256 MiB partition
  passes the exact key bound (1 M distinct keys) about two thirds of the way in, as a
  partition of a busy keyed topic does.
* the ``lz4`` and ``zstd`` captures of kafka-python and confluent-kafka (librdkafka) in
  ``fixtures/producers`` (300 records in 2 batches: the clients' default 16 KiB batches) and
  their ``large-lz4`` and ``large-zstd`` ones (one batch of 10,000 records), each repeated
  up to ``--records`` records in one segment, base offsets rewritten (the CRC does not cover
  them). Their keys: at most 1,000 distinct, one record in seven without.

Each command is a separate ``python -m klogtool`` process under the native engine (stdout to
/dev/null): ``stats --format jsonl``, the same with ``--sample 0`` (no what-if: its cost is
bounded by the sample, not the data) and ``verify --deep``, interleaved over inputs and
``--trees`` (checkouts put first on PYTHONPATH and run in, each with its built ``_native``: A/B in
one call), ``--runs`` rounds. CPU is the child's user + system time (``os.wait4``); the table
shows medians, the ratio stats/verify, and stats' CPU above verify's per record. With
``PYTHONDONTWRITEBYTECODE`` set, compile each tree first (``python -m compileall -q klogtool``):
else every process compiles ~170 modules, ~0.3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from klogtool.formats.batch import Record  # noqa: E402
from klogtool.formats.v2 import encode_batch  # noqa: E402

SEED = 20261129
BATCH = 500
HOT_KEYS = 100
KEY_SPACE = 3_000_000
PRODUCERS = ("kafka-python", "confluent-kafka")
SHAPES = ("lz4", "zstd", "large-lz4", "large-zstd")
COMMANDS = {
    "stats": ["stats", "--format", "jsonl"],
    # the per-record part alone: the what-if compresses a sample of at most 8 MiB with every
    # codec, a cost bounded by --sample, not by the data
    "stats0": ["stats", "--format", "jsonl", "--sample", "0"],
    "verify": ["verify", "--deep"],
}


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("b")
    return int(t[:-1]) * units[t[-1]] if t[-1:] in units else int(t)


def generated(out: Path, size: int, segment_bytes: int) -> tuple[Path, int]:
    """The generated partition (written once) and its record count."""
    part = out / f"stats-{size}-{segment_bytes}-{SEED}" / "bench-0"
    done = part.parent / "records"
    if done.exists():
        return part, int(done.read_text())
    part.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(SEED)
    written = offset = 0
    ts = 1_700_000_000_000
    while written < size:
        with open(part / f"{offset:020d}.log", "wb") as f:
            seg = 0
            while seg < segment_bytes and written < size:
                records = []
                for i in range(BATCH):
                    hot = rnd.random() < 0.1
                    k = rnd.randrange(HOT_KEYS) if hot else HOT_KEYS + rnd.randrange(KEY_SPACE)
                    value = b'{"user":%d,"event":"%s","n":%d,"v":"%s"}' % (
                        k,
                        rnd.choice((b"click", b"view", b"purchase")),
                        rnd.randrange(10**6),
                        rnd.randbytes(rnd.randint(20, 40)).hex().encode(),
                    )
                    headers = (("trace", rnd.randbytes(16)),) if i % 10 == 0 else ()
                    records.append(
                        Record(offset + i, ts + i // 4, b"user-%011d" % k, value, headers)
                    )
                batch = encode_batch(
                    records, producer_id=4242, producer_epoch=0, base_sequence=offset % (1 << 31)
                )
                f.write(batch)
                seg += len(batch)
                written += len(batch)
                offset += BATCH
                ts += BATCH // 4 + 7
    done.write_text(str(offset))
    return part, offset


def repeated(out: Path, client: str, shape: str, copies: int) -> tuple[Path, int]:
    """A capture's batches ``copies`` times over in one segment, offsets made to increase."""
    meta = json.loads((ROOT / "fixtures/producers/manifest.json").read_text())["files"]
    name = f"{client}/{shape}.log"
    records = meta[name]["records"] * copies
    part = out / f"producer-{client}-{shape}-x{copies}" / "bench-0"
    log = part / "00000000000000000000.log"
    if log.exists():
        return part, records
    data = (ROOT / "fixtures/producers" / name).read_bytes()
    batches = []
    pos = 0
    while pos + 12 <= len(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        batches.append(data[pos : pos + 12 + length])
        pos += 12 + length
    part.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as f:
        offset = 0
        for _ in range(copies):
            for b in batches:
                last_delta = struct.unpack_from(">i", b, 23)[0]
                f.write(struct.pack(">q", offset) + b[8:])
                offset += last_delta + 1
    return part, records


def run(tree: Path, args: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one ``python -m klogtool`` process on ``tree``'s code."""
    env = {**os.environ, "PYTHONPATH": str(tree), "KLOGTOOL_ENGINE": "native"}
    start = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "klogtool", *args],
        cwd=tree,  # (-m puts the working directory before PYTHONPATH)
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert p.stderr is not None
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {p.returncode}: {err[-500:]!r}")
    return wall, usage.ru_utime + usage.ru_stime


def medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The median wall and the median CPU seconds."""
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="256M")
    ap.add_argument("--segment-bytes", default="128M")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--no-producers", action="store_true")
    ap.add_argument("--no-generated", action="store_true")
    ap.add_argument("--trees", default=str(ROOT), help="checkouts to compare, comma-separated")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "klogtool-bench")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    inputs: list[tuple[str, Path, int]] = []
    if not args.no_generated:
        size = parse_size(args.size)
        part, n = generated(args.out, size, parse_size(args.segment_bytes))
        inputs.append((f"generated {args.size}", part, n))
    if not args.no_producers:
        meta = json.loads((ROOT / "fixtures/producers/manifest.json").read_text())["files"]
        for client in PRODUCERS:
            for shape in SHAPES:
                copies = max(1, args.records // meta[f"{client}/{shape}.log"]["records"])
                part, n = repeated(args.out, client, shape, copies)
                inputs.append((f"{client} {shape} x{copies}", part, n))
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    # (tree, input, command) -> [(wall, cpu)]
    got: dict[tuple[int, int, str], list[tuple[float, float]]] = {}
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs", flush=True)
    for r in range(args.runs):  # interleaved: the machine's drift hits every case alike
        for i, (_label, part, _n) in enumerate(inputs):
            for t, tree in enumerate(trees):
                for name, command in COMMANDS.items():
                    got.setdefault((t, i, name), []).append(run(tree, [*command, str(part)]))
        print(f"round {r + 1}/{args.runs} done", file=sys.stderr, flush=True)
    names = [c for c in COMMANDS if c != "verify"]
    head = " | ".join(f"{c} CPU s | {c} wall s | {c}/verify CPU | {c}/verify wall" for c in names)
    print(f"\n| input | tree | records | verify CPU s | verify wall s | {head} "
          "| stats ns/record above verify (CPU) |")  # fmt: skip
    print("|---|---|---:|---:|---:|" + "---:|" * (4 * len(names) + 1))
    for i, (label, _part, n) in enumerate(inputs):
        for t, tree in enumerate(trees):
            vw, vc = medians(got[(t, i, "verify")])
            cells = []
            for c in names:
                w, cpu = medians(got[(t, i, c)])
                cells.append(f"{cpu:.2f} | {w:.2f} | {cpu / vc:.2f}× | {w / vw:.2f}×")
            above = (medians(got[(t, i, "stats")])[1] - vc) / n * 1e9
            print(
                f"| {label} | {tree.name} | {n:,} | {vc:.2f} | {vw:.2f} | {' | '.join(cells)} "
                f"| {above:.0f} |"
            )
    print(f"\nload average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

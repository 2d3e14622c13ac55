#!/usr/bin/env python3
"""``export --jobs 1 --to parquet`` against its floor, in one run.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_export_floor.py [--size 256M] [--segment-bytes 128M] [--runs 5]
                                       [--out DIR] [--baseline DIR]

Input: ``bench_rebuild.generate``'s partition (v2, uncompressed ~16 KB batches of 60-120
records, 16-byte keys, ~150-byte values, cached in ``--out`` as ``bench_rebuild.py`` caches
it). The processes take turns, ``--runs`` rounds, the order reversed every other round:

``command``   ``python -m klogtool --no-progress export --jobs 1 --to parquet DEST PARTITION``
``floor``     this script as a child (``--floor-child``): one Python process that feeds every
              v2 batch of the same split plan (``plan_splits``, computed by the parent) to the
              same native column builder (``_native.Columns``, whole batches, the reader's
              flush rule: 16,384 rows or 32 MiB of payloads, and at a range's end), checks
              each batch's CRC-32C (the command verifies by default), makes the same Arrow
              columns (the batches' header fields taken per row, the timestamps to
              microseconds) and writes them with ``pq.ParquetWriter`` with the export's
              settings (:func:`klogtool.log.export.exporter.parquet_options`: snappy, the
              dictionary columns; one write, so one row group, per Arrow batch), one file per
              split; nothing else. It imports pyarrow and the native module only, and spares
              itself pandas as the export does (``pyarrow_without_pandas``).
``baseline``  with ``--baseline DIR``: the command of another checkout (a git worktree of the
              commit before a change, its native module built), for before/after in one run.

Each is timed as a process (interpreter start and imports included), run outside the working
directory with the klogtool this script imported first on ``PYTHONPATH``: wall time, and CPU
time (user + sys, from ``getrusage(RUSAGE_CHILDREN)``), so a busy machine shows in the wall
column more than in the CPU one. Printed: the median and min of each, and each command over
the floor. An untimed round first warms the page cache and checks that the floor writes the
same tables as the command(s) (``pyarrow`` reads both back: equal, file for file).
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
try:
    import klogtool
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))
    import klogtool

# v2 batch header: base offset, length, leader epoch, magic, crc, attributes, last offset
# delta, base and max timestamp, producer id and epoch, base sequence, record count (61 bytes)
HEADER = struct.Struct(">qiibIhiqqqhii")
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


# -- the floor (a child process) -------------------------------------------------------------
def floor_child(plan_file: str, dest: str) -> None:
    """Write the plan's ranges as the export's table, with as little as it takes."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from klogtool import _native  # (the package's __init__ imports nothing)
    from klogtool.commands._spark import pyarrow_without_pandas

    pyarrow_without_pandas()  # as the export's process (pandas: 0.27 s of imports)

    plan = json.loads(Path(plan_file).read_text())
    # the export's schema, writer options and flush rule, from the parent: the child imports
    # nothing of klogtool but the native module
    schema = pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(plan["schema"])))
    options = plan["parquet_options"]
    batch_rows, batch_payload_bytes = plan["batch_rows"], plan["batch_payload_bytes"]
    crc32c = _native.crc32c
    ts_type = pa.timestamp("us", tz="UTC")
    unpack = HEADER.unpack_from
    max_batch_bytes = plan["max_batch_bytes"]
    os.makedirs(dest, exist_ok=True)

    def binary(c: dict[str, Any], name: str, typ: pa.DataType) -> pa.Array:
        nulls = c[f"{name}_nulls"]
        bufs = [c[f"{name}_validity"] if nulls else None, c[f"{name}_offsets"], c[f"{name}_data"]]
        return pa.Array.from_buffers(
            typ,
            c[f"{name}_length"],
            [None if b is None else pa.py_buffer(b) for b in bufs],
            null_count=nulls,
        )

    def arrow_batch(cols: Any, heads: list[tuple[int, ...]], rng: dict[str, Any]) -> pa.RecordBatch:
        c = cols.take()
        n = c["length"]
        idx = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(c["batch_index"])])
        ms = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(c["timestamp"])])
        hv = schema.field("headers").type
        struct_arr = pa.StructArray.from_arrays(
            [binary(c, "header_key", pa.string()), binary(c, "header_value", pa.binary())],
            fields=list(hv.value_type),
        )
        hn = c["headers_nulls"]
        headers = pa.Array.from_buffers(
            hv,
            n,
            [
                pa.py_buffer(c["headers_validity"]) if hn else None,
                pa.py_buffer(c["headers_offsets"]),
            ],
            null_count=hn,
            children=[struct_arr],
        )
        # per batch: position, magic, attributes, leader epoch, producer id and epoch
        position, magic, attrs, epoch, pid, pepoch = zip(*heads, strict=True)
        per_batch = {
            "timestampType": pa.array([(a >> 3) & 1 for a in attrs], pa.int32()),
            "position": pa.array(position, pa.int64()),
            "magic": pa.array(magic, pa.int32()),
            "compression": pa.array([CODECS[a & 7] for a in attrs], pa.string()),
            "producer_id": pa.array(pid, pa.int64()),
            "producer_epoch": pa.array(pepoch, pa.int32()),
            "partition_leader_epoch": pa.array(epoch, pa.int32()),
            "is_transactional": pa.array([bool(a & 0x10) for a in attrs], pa.bool_()),
            "is_control": pa.array([bool(a & 0x20) for a in attrs], pa.bool_()),
        }
        columns = {
            "key": binary(c, "key", pa.binary()),
            "value": binary(c, "value", pa.binary()),
            "offset": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(c["offset"])]),
            "timestamp": pc.multiply_checked(ms, 1000).cast(ts_type),
            "headers": headers,
            "topic": pa.repeat(pa.scalar(rng["topic"], pa.string()), n),
            "partition": pa.repeat(pa.scalar(rng["partition"], pa.int32()), n),
            "segment": pa.repeat(pa.scalar(rng["segment"], pa.int64()), n),
            "sequence": pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(c["sequence"])]),
        }
        for name, arr in per_batch.items():
            columns[name] = arr.take(idx)
        return pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)

    for split in plan["splits"]:
        name = os.path.join(dest, f"part-{split['index']:05d}-floor-c000.snappy.parquet")
        with pq.ParquetWriter(name, schema, **options) as writer:
            for rng in split["ranges"]:
                cols = _native.Columns(max_batch_bytes)
                heads: list[tuple[int, ...]] = []
                with (
                    open(rng["path"], "rb") as f,
                    mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm,
                ):
                    buf = memoryview(mm)
                    pos, end, size = 0, rng["end"], len(buf)
                    while pos < end and pos + 61 <= size:
                        h = unpack(buf, pos)
                        nxt = pos + 12 + h[1]
                        if pos >= rng["start"]:
                            if crc32c(buf[pos + 21 : nxt]) != h[4]:
                                raise SystemExit(f"CRC mismatch at {rng['path']}:{pos}")
                            cols.add(buf[pos:nxt], len(heads), 0, 1 << 62)
                            heads.append((pos, h[3], h[5], h[2], h[9], h[10]))
                            if len(cols) >= batch_rows or cols.payload_bytes >= batch_payload_bytes:
                                writer.write_batch(arrow_batch(cols, heads, rng))
                                heads = []
                        pos = nxt
                    if heads:
                        writer.write_batch(arrow_batch(cols, heads, rng))
                    del buf


# -- the parent --------------------------------------------------------------------------------
def plan_of(part: Path, out: Path) -> Path:
    """The export's split plan of ``part`` (as ``--jobs 1`` makes it), as the child reads it."""
    from klogtool.log.context import ReadContext
    from klogtool.log.export.arrow_reader import BATCH_PAYLOAD_BYTES, BATCH_ROWS
    from klogtool.log.export.exporter import parquet_options
    from klogtool.log.export.spec import ReadOptions, arrow_schema
    from klogtool.log.splits import plan_splits

    ctx = ReadContext.of()
    schema = arrow_schema(ReadOptions(ctx=ctx))
    splits = plan_splits([str(part)])
    plan = {
        "schema": schema.serialize().to_pybytes().hex(),
        "parquet_options": parquet_options(schema),
        "batch_rows": BATCH_ROWS,
        "batch_payload_bytes": BATCH_PAYLOAD_BYTES,
        "max_batch_bytes": ctx.limits.max_batch_bytes,
        "splits": [
            {
                "index": s.index,
                "ranges": [
                    {
                        "path": r.path,
                        "start": r.start,
                        "end": r.end,
                        "topic": r.topic,
                        "partition": r.partition,
                        "segment": r.segment,
                    }
                    for r in s.ranges
                ],
            }
            for s in splits
        ],
    }
    path = out / "export-floor-plan.json"
    path.write_text(json.dumps(plan))
    return path


# the children import the klogtool this process imported, whatever their working directory
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(klogtool.__file__)), os.environ.get("PYTHONPATH", "")]
    ),
}


def timed(argv: list[str], env: dict[str, str] = ENV) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),  # (python -m puts the working directory first on the path)
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def tables(dest: Path) -> list[Any]:
    import pyarrow.parquet as pq

    files = sorted(dest.glob("part-*.parquet"), key=lambda p: p.name.split("-")[1])
    return [pq.read_table(f) for f in files]


def check_same(cmd_dest: Path, floor_dest: Path, label: str = "command") -> str:
    import pyarrow.parquet as pq

    a, b = tables(cmd_dest), tables(floor_dest)
    if len(a) != len(b):
        raise SystemExit(f"files: {label} {len(a)}, floor {len(b)}")
    for i, (ta, tb) in enumerate(zip(a, b, strict=True)):
        if not ta.equals(tb):
            raise SystemExit(f"file {i}: the floor's table differs from the {label}'s")
    groups = [pq.ParquetFile(f).metadata.num_row_groups for f in sorted(cmd_dest.glob("*.parquet"))]
    size = sum(f.stat().st_size for f in cmd_dest.glob("*.parquet"))
    fsize = sum(f.stat().st_size for f in floor_dest.glob("*.parquet"))
    rows = sum(t.num_rows for t in a)
    return (
        f"{label} and floor, the same tables: {len(a)} files, {rows:,} rows, row groups "
        f"{groups}; bytes: {label} {size:,}, floor {fsize:,}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="256M", help="partition size (default 256M)")
    ap.add_argument("--segment-bytes", default="128M")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "klogtool-bench")
    ap.add_argument(
        "--baseline",
        metavar="DIR",
        help="also time the command of another checkout (its native module built), e.g. a "
        "git worktree of the commit before a change, in the same rounds",
    )
    ap.add_argument("--floor-child", nargs=2, metavar=("PLAN", "DEST"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.floor_child:
        floor_child(*a.floor_child)
        return
    from bench_rebuild import generate, parse_size  # (not in the floor's process)

    size, seg_bytes = parse_size(a.size), parse_size(a.segment_bytes)
    part = a.out / f"rebuild-{size}-{seg_bytes}" / "bench-0"
    if not (part / ".complete").is_file():
        print(f"generating {size / 2**20:.0f} MiB in {part} ...", file=sys.stderr)
        generate(part, size, seg_bytes)
    work = Path(tempfile.mkdtemp(prefix="export-floor-", dir=a.out))
    try:
        run(a, part, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(a: argparse.Namespace, part: Path, work: Path) -> None:
    """The rounds, in ``work``, and the table."""
    plan = plan_of(part, work)
    dests = {op: work / op for op in ("command", "floor", "baseline")}
    export = [sys.executable, "-m", "klogtool", "--no-progress", "export", "--jobs", "1",
              "--to", "parquet"]  # fmt: skip
    argv = {
        "command": [*export, str(dests["command"]), str(part)],
        "floor": [sys.executable, __file__, "--floor-child", str(plan), str(dests["floor"])],
    }
    envs = {"command": ENV, "floor": ENV}
    if a.baseline:
        argv["baseline"] = [*export, str(dests["baseline"]), str(part)]
        envs["baseline"] = {**os.environ, "PYTHONPATH": os.path.abspath(a.baseline)}
    commit = subprocess.run(
        ["git", "-C", str(REPO), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    ).stdout.strip()
    logs = sorted(part.glob("*.log"))
    print(
        f"partition {part}: {sum(p.stat().st_size for p in logs) / 2**20:.0f} MiB in "
        f"{len(logs)} segments; {a.runs} rounds; commit {commit[:60]}; "
        f"load {os.getloadavg()[0]:.2f}; klogtool from {os.path.dirname(klogtool.__file__)}"
    )
    for op, args in argv.items():
        print(f"{op}: {' '.join(args)}")
    ops = list(argv)
    results: dict[str, list[tuple[float, float]]] = {op: [] for op in ops}
    for op in ops:  # untimed: the page cache, and the tables compared
        timed(argv[op], envs[op])
    print(check_same(dests["command"], dests["floor"]))
    if a.baseline:
        print(check_same(dests["baseline"], dests["floor"], "baseline"))
    for r in range(a.runs):
        for op in ops if r % 2 == 0 else ops[::-1]:
            shutil.rmtree(dests[op], ignore_errors=True)
            wall, cpu = timed(argv[op], envs[op])
            results[op].append((wall, cpu))
            print(f"  round {r + 1} {op}: wall {wall:.2f} s, cpu {cpu:.2f} s", file=sys.stderr)

    med = {op: [statistics.median(x[i] for x in v) for i in (0, 1)] for op, v in results.items()}
    low = {op: [min(x[i] for x in v) for i in (0, 1)] for op, v in results.items()}
    print("\n| | CPU s (median) | CPU s (min) | wall s (median) | wall s (min) |")
    print("|---|---:|---:|---:|---:|")
    for op in ops:
        print(
            f"| {op} | {med[op][1]:.2f} | {low[op][1]:.2f} | {med[op][0]:.2f} | {low[op][0]:.2f} |"
        )
    for op in (o for o in ops if o != "floor"):
        ratios = [f"{stat[op][k] / stat['floor'][k]:.2f}x" for k in (1, 0) for stat in (med, low)]
        print(f"| {op} / floor | {' | '.join(ratios)} |")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

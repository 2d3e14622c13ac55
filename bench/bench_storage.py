#!/usr/bin/env python3
"""What reading from object storage costs: requests, bytes and seconds of klogtool's commands
on a partition in a local S3 server, against the same commands on the local disk.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_storage.py [--size 1G] [--segment-bytes 128M] [--runs 3] [--out DIR]

Input: ``bench_rebuild.generate``'s partition (v2, uncompressed ~16 KB batches of 60-120
records, cached in ``--out``), its indexes built by ``klogtool rebuild-index``, uploaded to
moto's S3 server on 127.0.0.1 (the tests' server, tests/support/s3.py, which counts every
request and the bytes of every response). Each command runs as its own process; printed: the
median of ``--runs``, the largest peak RSS, the requests and bytes the S3 server saw (object
GETs, HEADs and listings) and the ratio of bytes fetched to the partition's size. Issue 26's
target: ``find --offsets`` on a 1 GB partition fetches far less than 1 GB.

The server is moto in this process, on the same two cores: its throughput (tens of MB/s),
not the network's, bounds the full-scan rows. Read them for requests and bytes.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from bench_rebuild import generate, parse_size  # noqa: E402
from support.s3 import BUCKET, S3Server  # noqa: E402


def _partition(out: Path, size: int, segment_bytes: int) -> Path:
    part = out / f"storage-{size}-{segment_bytes}" / "bench-0"
    if not (part / ".complete").is_file():
        generate(part, size, segment_bytes)
        subprocess.run([sys.executable, "-m", "klogtool", "rebuild-index", str(part)], check=True)
    return part


def _run(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Seconds and peak RSS (KiB) of one klogtool process. The RSS comes from /usr/bin/time,
    whose child is forked from a small process: a child forked from this one (which holds
    the S3 server's objects) would inherit its high-water mark."""
    started = time.perf_counter()
    p = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "klogtool", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seconds = time.perf_counter() - started
    if p.returncode not in (0, 1):
        raise SystemExit(f"klogtool {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return seconds, int(p.stderr.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--size", default="1G", type=parse_size)
    ap.add_argument("--segment-bytes", default="128M", type=parse_size)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "klogtool-bench")
    ap.add_argument("--no-export", dest="export", action="store_false", help="leave export out")
    ap.add_argument(
        "--s3s-fs",
        metavar="BIN",
        help="serve from s3s-fs (cargo install s3s-fs --features binary) instead of moto: a "
        "server that reads only the range asked for (no request counts then)",
    )
    a = ap.parse_args(argv)
    part = _partition(a.out, a.size, a.segment_bytes)
    logs = sorted(part.glob("*.log"))
    total = sum(p.stat().st_size for p in part.iterdir() if p.is_file() and p.name[0] != ".")
    # an offset in the middle segment, and the time of the last segment's middle
    mid = int(logs[len(logs) // 2].stem) + 1000

    server = S3Server().start() if a.s3s_fs is None else FileServer(a.s3s_fs, a.out).start()
    env = {**os.environ, **server.env, "NO_COLOR": "1"}
    server.client().create_bucket(Bucket=BUCKET)
    t0 = time.perf_counter()
    for f in sorted(part.iterdir()):
        if f.is_file() and not f.name.startswith("."):
            with open(f, "rb") as body:
                server.client().upload_fileobj(body, BUCKET, f"bench/bench-0/{f.name}")
    upload = time.perf_counter() - t0
    uri = f"s3://{BUCKET}/bench/bench-0"
    print(f"partition: {len(logs)} segments, {total:,} bytes (uploaded in {upload:.1f} s)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; moto's S3 server in process\n")

    commands = [
        (
            "find --offsets (10 records)",
            ["find", "--format", "jsonl", "--offsets", f"{mid}:{mid + 9}"],
        ),
        ("find --key (full scan)", ["find", "--format", "jsonl", "--jobs", "1", "--key", "nope"]),
        ("verify", ["verify", "--format", "jsonl", "--jobs", "1"]),
        ("describe", ["describe", "--format", "jsonl"]),
    ]
    if a.export:
        dest = a.out / "storage-export"
        commands.append(
            (
                "export --to jsonl",
                ["export", "--jobs", "1", "--overwrite", "--to", "jsonl", str(dest)],
            )
        )
    cols = ["command", "where", "seconds (median)", "peak RSS MiB", "GETs", "HEADs", "listings"]
    cols.append("bytes fetched")
    print("| " + " | ".join([*cols, "of the partition"]) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for name, args in commands:
        for where, path in (("local", str(part)), ("s3", uri)):
            times = []
            rss = 0
            for _ in range(a.runs):
                server.reset()
                seconds, peak = _run([*args, path], env)
                times.append(seconds)
                rss = max(rss, peak)
            reqs = server.requests
            gets = [r for r in reqs if r.method == "GET" and "list-type" not in r.query]
            heads = sum(1 for r in reqs if r.method == "HEAD")
            lists = sum(1 for r in reqs if "list-type" in r.query)
            fetched = sum(r.sent for r in gets)
            share = f"{fetched / total:.2%}" if where == "s3" else ""
            cells = [name, where, f"{statistics.median(times):.2f}", f"{rss / 1024:.0f}"]
            cells += [str(len(gets)), str(heads), str(lists)] if where == "s3" else ["", "", ""]
            cells += [f"{fetched:,}" if where == "s3" else "", share]
            print("| " + " | ".join(cells) + " |")
    # the floor of a full scan: every object of the partition in one GET each, read through
    floor = []
    for _ in range(a.runs):
        server.reset()
        floor.append(_whole_gets(server, "bench/bench-0/"))
    reqs = server.requests
    print(
        f"| whole-object GETs (the floor) | s3 | {statistics.median(floor):.2f} | | "
        f"{sum(r.method == 'GET' for r in reqs)} | | | {sum(r.sent for r in reqs):,} | |"
    )
    server.stop()


class FileServer(S3Server):
    """s3s-fs serving a directory on 127.0.0.1, as :class:`S3Server` is used here: it
    counts no request (``requests`` stays empty)."""

    def __init__(self, binary: str, out: Path):  # noqa: D107 (S3Server's moto is not started)
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        out.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="s3s-fs-", dir=out))  # its objects, its own
        self.requests = []
        self.args = [binary, "--host", "127.0.0.1", "--port", str(self.port)]
        self.args += ["--access-key", "klogtool-test-key", "--secret-key", "klogtool-test-secret"]

    def start(self) -> FileServer:
        self.proc = subprocess.Popen([*self.args, str(self.root)], stdout=subprocess.DEVNULL)
        time.sleep(1)
        return self

    def stop(self) -> None:
        import shutil

        self.proc.terminate()
        shutil.rmtree(self.root)

    def reset(self) -> None:
        pass


def _whole_gets(server: S3Server, prefix: str) -> float:
    """Seconds to GET every object under ``prefix`` once, whole, streamed and dropped (boto3,
    the listing is made before the clock starts)."""
    import boto3
    from botocore.config import Config

    # (moto's checksum of an object uploaded in parts is not the one boto3 computes)
    client = boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=server.env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=server.env["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
        config=Config(response_checksum_validation="when_required"),
    )
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]]
    server.reset()
    started = time.perf_counter()
    for key in keys:
        body = client.get_object(Bucket=BUCKET, Key=key)["Body"]
        while body.read(8 << 20):
            pass
    return time.perf_counter() - started


if __name__ == "__main__":
    main()

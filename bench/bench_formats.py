#!/usr/bin/env python3
"""Benchmark klogtool's v2 readers against kafka-python's, on the same bytes, in the same run.

Run by hand (it is not a test)::

    python bench/bench_formats.py [--records 500000] [--runs 5]
                                  [--codecs none,gzip,snappy,lz4,zstd] [--out DIR]

Per codec it writes one v2 segment (cached in ``--out``, default ``$TMPDIR/klogtool-bench``,
keyed by the parameters, so reruns skip generation), then times three operations, each as the
median (and min) of ``--runs`` runs, klogtool and kafka-python interleaved:

``scan``
    klogtool: ``SegmentScanner(view, check_crc=False)`` over the batches (headers only).
    kafka-python: ``MemoryRecords(data)`` over the batches.
``verify``
    klogtool: ``SegmentScanner(view)`` with CRC-32C checks (what ``klogtool verify`` does per
    batch). kafka-python: the same walk calling ``batch.validate_crc()``.
``decode``
    Every record of every batch, reading offset, timestamp, key, value and headers of each
    (the same consumer loop for both libraries; its aggregates are cross-checked).
    klogtool inflates gzip with python-isal when it is installed (as the CLI does); run with
    ``KLOGTOOL_GZIP=zlib`` for the standard library's zlib on both sides.

klogtool reads the segment through ``mmap`` (as the CLI does); kafka-python gets ``bytes``
(``MemoryRecords`` wants them). MB/s is segment file bytes / time. The garbage collector is off
during each timed run (as ``timeit`` does). Exit status is 0 whatever the targets say.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import mmap
import os
import platform
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import klogtool  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, _REPO)

from klogtool.formats import codecs, v2  # noqa: E402
from klogtool.formats.batch import Record  # noqa: E402
from klogtool.formats.records import CLEAN, SegmentScanner  # noqa: E402

try:
    from kafka.record import MemoryRecords
except ImportError:  # the peer is optional: klogtool's own numbers still print
    MemoryRecords = None

# Bump when the generated data changes, so stale cached segments are not reused.
GENERATOR_VERSION = 3
SEED = 20240611
BATCH_RECORDS = (500, 1000)  # records per batch, uniform
USERS = 200_000  # distinct keys
BASE_TIMESTAMP = 1_700_000_000_000
PRODUCER_ID = 4242
PARTITION_LEADER_EPOCH = 7

CODEC_IDS = {
    "none": codecs.NONE,
    "gzip": codecs.GZIP,
    "snappy": codecs.SNAPPY,
    "lz4": codecs.LZ4,
    "zstd": codecs.ZSTD,
}

TARGET_DECODE_RATIO = 3.0
TARGET_VERIFY_MBPS = 500.0

OPS = ("scan", "verify", "decode")


# -- data generation ------------------------------------------------------------------------
_EVENTS = (
    "page_view",
    "click",
    "add_to_cart",
    "purchase",
    "login",
    "logout",
    "search",
    "scroll",
)
_COUNTRIES = ("US", "DE", "FR", "GB", "IN", "BR", "JP", "NL", "SE", "ES", "CA", "PL")
_DEVICES = ("ios", "android", "web", "desktop")
_PATHS = ("/", "/cart", "/checkout", "/search", "/product", "/account", "/help")


def _value(rng: random.Random, user: int, ts: int) -> bytes:
    """A JSON-ish event of roughly 100-200 bytes: fixed field names, random numbers."""
    event = rng.choice(_EVENTS)
    session = rng.getrandbits(64)
    country = rng.choice(_COUNTRIES)
    amount = f"{rng.randrange(10_000)}.{rng.randrange(100):02d}"
    parts = [
        f'{{"user_id":{user},"event":"{event}","ts":{ts},"session":"{session:016x}",'
        f'"country":"{country}","amount":{amount}'
    ]
    extra = rng.randrange(4)
    if extra >= 1:
        parts.append(f',"item_id":{rng.randrange(10**7)},"qty":{rng.randrange(1, 9)}')
    if extra >= 2:
        parts.append(f',"device":"{rng.choice(_DEVICES)}","page":"{rng.choice(_PATHS)}"')
    if extra >= 3:
        parts.append(f',"ref":"/p/{rng.randrange(10**6)}"')
    parts.append("}")
    return "".join(parts).encode()


def generate_batches(n_records: int, seed: int = SEED) -> Iterator[list[Record]]:
    """Deterministic (per seed) batches of realistic records with consecutive offsets."""
    rng = random.Random(seed)
    offset = 0
    ts = BASE_TIMESTAMP
    while offset < n_records:
        size = min(rng.randint(*BATCH_RECORDS), n_records - offset)
        ts += rng.randrange(1, 200)  # the producer's linger / request gap between batches
        batch = []
        for _ in range(size):
            if rng.random() < 0.05:  # a busy producer: ~20 records per millisecond
                ts += 1
            user = rng.randrange(USERS)
            key = b"user-%011d" % user  # 16 bytes
            r = rng.random()
            if r < 0.10:
                headers: tuple = (
                    (
                        "traceparent",
                        b"00-%032x-%016x-01" % (rng.getrandbits(128), rng.getrandbits(64)),
                    ),
                )
                if r < 0.02:
                    headers += (("content-type", b"application/json"),)
            else:
                headers = ()
            batch.append(Record(offset, ts, key, _value(rng, user, ts), headers))
            offset += 1
        yield batch


def segment_path(out_dir: str, codec_name: str, n_records: int) -> str:
    return os.path.join(
        out_dir,
        f"v2-{codec_name}-{n_records}r-seed{SEED}-gen{GENERATOR_VERSION}.log",
    )


def write_segment(path: str, codec: int, n_records: int) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        for records in generate_batches(n_records):
            base = records[0].offset
            f.write(
                v2.encode_batch(
                    records,
                    compression=codec,
                    partition_leader_epoch=PARTITION_LEADER_EPOCH,
                    producer_id=PRODUCER_ID,
                    producer_epoch=0,
                    base_sequence=base & 0x7FFFFFFF,
                )
            )
    os.replace(tmp, path)


def cached_segment_ok(path: str, n_records: int) -> bool:
    """A cached file is reused only if it walks cleanly, CRCs included, to ``n_records``."""
    if not os.path.exists(path):
        return False
    with open(path, "rb") as f:
        data = f.read()
    try:
        scanner = SegmentScanner(data)
        total = sum(b.count for b in scanner)
    except Exception:
        return False
    res = scanner.result
    return res is not None and res.end == CLEAN and res.error is None and total == n_records


# -- the timed operations -------------------------------------------------------------------
# Each returns a tuple that the sanity pass compares between the two libraries.


def klog_scan(view: memoryview) -> tuple:
    n = 0
    for batch in SegmentScanner(view, check_crc=False):
        n += batch.count
    return (n,)


def peer_scan(data: bytes) -> tuple:
    n = 0
    for batch in MemoryRecords(data):
        n += batch.records_count
    return (n,)


def klog_verify(view: memoryview) -> tuple:
    n = bad = 0
    scanner = SegmentScanner(view, stop_on_crc=False)
    for batch in scanner:
        n += batch.count
        if not scanner.crc_valid:
            bad += 1
    return (n, bad)


def peer_verify(data: bytes) -> tuple:
    n = bad = 0
    for batch in MemoryRecords(data):
        n += batch.records_count
        if not batch.validate_crc():
            bad += 1
    return (n, bad)


def consume(records: Iterable, sums: list[int]) -> None:
    """The decode consumer both libraries are timed with: every field of every record."""
    n = checksum = nbytes = nheaders = 0
    for r in records:
        checksum += r.offset + r.timestamp
        key = r.key
        value = r.value
        headers = r.headers
        if key is not None:
            nbytes += len(key)
        if value is not None:
            nbytes += len(value)
        if headers:
            nheaders += len(headers)
        n += 1
    sums[0] += n
    sums[1] += checksum
    sums[2] += nbytes
    sums[3] += nheaders


def klog_decode(view: memoryview) -> tuple:
    sums = [0, 0, 0, 0]
    for batch in SegmentScanner(view, check_crc=False):
        consume(batch.records(), sums)
    return tuple(sums)


def peer_decode(data: bytes) -> tuple:
    sums = [0, 0, 0, 0]
    for batch in MemoryRecords(data):
        consume(batch, sums)
    return tuple(sums)


KLOG_OPS: dict[str, Callable[[memoryview], tuple]] = {
    "scan": klog_scan,
    "verify": klog_verify,
    "decode": klog_decode,
}
PEER_OPS: dict[str, Callable[[bytes], tuple]] = {
    "scan": peer_scan,
    "verify": peer_verify,
    "decode": peer_decode,
}


def _timed(fn: Callable, arg: object) -> float:
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        fn(arg)
        return time.perf_counter() - t0
    finally:
        gc.enable()


@dataclass
class Result:
    codec: str
    op: str
    records: int
    file_bytes: int
    klog_times: list[float] = field(default_factory=list)
    peer_times: list[float] = field(default_factory=list)
    peer_error: str | None = None

    @staticmethod
    def _med(times: list[float]) -> float | None:
        return statistics.median(times) if times else None

    @property
    def klog_med(self) -> float | None:
        return self._med(self.klog_times)

    @property
    def peer_med(self) -> float | None:
        return self._med(self.peer_times)

    def klog_rps(self) -> float:
        return self.records / self.klog_med

    def klog_mbps(self) -> float:
        return self.file_bytes / self.klog_med / 1e6

    def peer_rps(self) -> float | None:
        return None if self.peer_med is None else self.records / self.peer_med

    def ratio(self) -> float | None:
        return None if self.peer_med is None else self.peer_med / self.klog_med

    def ratio_best(self) -> float | None:
        return min(self.peer_times) / min(self.klog_times) if self.peer_times else None

    def ratio_paired(self) -> float | None:
        """Median over runs of each run's ratio: klogtool and kafka-python timed back to back,
        so a slow drift of the machine's speed cancels out within each pair."""
        if not self.peer_times:
            return None
        pairs = zip(self.peer_times, self.klog_times, strict=True)
        return statistics.median(peer / klog for peer, klog in pairs)


# -- per codec ------------------------------------------------------------------------------
@dataclass
class Segment:
    codec: str
    path: str
    file_bytes: int
    records: int
    batches: int
    raw_bytes: int  # uncompressed records-area bytes + headers


def describe_segment(codec: str, path: str, view: memoryview) -> Segment:
    records = batches = raw = 0
    for batch in SegmentScanner(view, check_crc=False):
        batches += 1
        records += batch.count
        raw += v2.RECORD_BATCH_OVERHEAD + len(batch.records_area())
    return Segment(codec, path, len(view), records, batches, raw)


def sanity_check(codec: str, view: memoryview, data: bytes) -> str | None:
    """Untimed pass (doubles as warm-up): both libraries must see the same records.

    Returns why kafka-python cannot be compared on this codec, or None.
    """
    scanner = SegmentScanner(view)
    for _ in scanner:
        if not scanner.crc_valid:
            raise SystemExit(f"{codec}: klogtool reports a CRC mismatch in the generated segment")
    if scanner.result is None or scanner.result.end != CLEAN:
        raise SystemExit(f"{codec}: klogtool's walk did not end cleanly: {scanner.result}")
    if MemoryRecords is None:
        return "kafka-python not installed"
    # Field-by-field on the first batches, aggregates everywhere.
    try:
        pairs = zip(SegmentScanner(view, check_crc=False), MemoryRecords(data), strict=False)
        for _, (kb, pb) in zip(range(3), pairs, strict=False):
            for kr, pr in zip(kb.records(), pb, strict=True):
                mine = (
                    kr.offset,
                    kr.timestamp,
                    _b(kr.key),
                    _b(kr.value),
                    [(k, _b(v)) for k, v in kr.headers],
                )
                theirs = (pr.offset, pr.timestamp, pr.key, pr.value, list(pr.headers))
                if mine != theirs:
                    raise SystemExit(f"{codec}: decoders disagree at offset {kr.offset}")
        for op in OPS:
            mine, theirs = KLOG_OPS[op](view), PEER_OPS[op](data)
            if mine != theirs:
                raise SystemExit(f"{codec} {op}: klogtool {mine} != kafka-python {theirs}")
    except SystemExit:
        raise
    except Exception as e:  # kafka-python may lack a codec or reject a framing
        return f"kafka-python failed: {type(e).__name__}: {e}"
    return None


def _b(v: memoryview | bytes | None) -> bytes | None:
    return None if v is None else bytes(v)


def bench_codec(codec: str, path: str, runs: int, profile: bool) -> tuple[Segment, list[Result]]:
    with open(path, "rb") as f:
        data = f.read()  # for kafka-python
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        view = memoryview(mm)
        try:
            seg = describe_segment(codec, path, view)
            peer_error = sanity_check(codec, view, data)
            results = []
            for op in OPS:
                res = Result(codec, op, seg.records, seg.file_bytes, peer_error=peer_error)
                for _ in range(runs):  # interleaved, so drift hits both alike
                    res.klog_times.append(_timed(KLOG_OPS[op], view))
                    if peer_error is None:
                        res.peer_times.append(_timed(PEER_OPS[op], data))
                results.append(res)
            if profile:
                print(f"\n--- cProfile: klogtool decode, codec {codec} ---")
                prof = cProfile.Profile()
                prof.runcall(klog_decode, view)
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
                print(out.getvalue())
        finally:
            view.release()
    finally:
        mm.close()
    return seg, results


# -- output ---------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(mod_name: str) -> str:
    try:
        from importlib.metadata import version

        return version(mod_name)
    except Exception:
        return "?"


def print_machine_info() -> None:
    import crc32c

    print("klogtool format benchmark")
    print(
        f"  python       {platform.python_implementation()} {platform.python_version()} "
        f"({platform.system()} {platform.machine()})"
    )
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(f"  cpus         {os.cpu_count()} (usable: {affinity}), {_cpu_model()}")
    print(f"  crc32c       {_version('crc32c')}, hardware_based={crc32c.hardware_based}")
    if MemoryRecords is not None:
        from kafka.record import util as kutil

        impl = getattr(kutil, "_crc32c", None)
        backend = "the crc32c package" if impl is crc32c.crc32c else "pure Python"
        print(f"  kafka-python {_version('kafka-python')} (CRC-32C via {backend})")
    else:
        print("  kafka-python not installed: peer columns are empty")
    libs = ", ".join(
        f"{name} {_version(dist)}"
        for name, dist in (("lz4", "lz4"), ("snappy", "python-snappy"), ("zstd", "zstandard"))
    )
    print(f"  codecs       zlib {__import__('zlib').ZLIB_RUNTIME_VERSION}, {libs}")
    inflater = codecs.gzip_inflater().__name__
    which = f"isal {_version('isal')}" if inflater.startswith("isal") else "zlib"
    print(f"  gzip inflate {which} (KLOGTOOL_GZIP=zlib forces zlib; kafka-python uses zlib)")
    sys.stdout.flush()  # before the progress lines on stderr


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def _fmt_rate(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.0f}"


def print_segments(segments: list[Segment]) -> None:
    print(
        "\nSegments (v2, CreateTime, idempotent producer, "
        f"{BATCH_RECORDS[0]}-{BATCH_RECORDS[1]} records/batch):"
    )
    print(
        f"  {'codec':<7} {'records':>9} {'batches':>7} {'file MB':>8} {'raw MB':>7} "
        f"{'ratio':>5} {'avg batch KB':>12}  path"
    )
    for s in segments:
        print(
            f"  {s.codec:<7} {s.records:>9,} {s.batches:>7,} {s.file_bytes / 1e6:>8.1f} "
            f"{s.raw_bytes / 1e6:>7.1f} {s.raw_bytes / s.file_bytes:>5.2f} "
            f"{s.file_bytes / s.batches / 1024:>12.1f}  {s.path}"
        )


def print_table(results: list[Result], runs: int) -> None:
    headers = (
        "codec",
        "op",
        "klogtool rec/s",
        "klogtool MB/s",
        "kafka-python rec/s",
        "ratio",
        "paired",
        "ratio of mins",
        "klogtool ms med/min",
        "kafka-python ms med/min",
    )
    rows = []
    for r in results:
        ratio = r.ratio()
        peer = (
            f"{_ms(r.peer_med)}/{_ms(min(r.peer_times))}"
            if r.peer_times
            else (r.peer_error or "n/a")[:40]
        )
        rows.append(
            (
                r.codec,
                r.op,
                _fmt_rate(r.klog_rps()),
                f"{r.klog_mbps():,.1f}",
                _fmt_rate(r.peer_rps()),
                "n/a" if ratio is None else f"{ratio:.2f}x",
                "n/a" if r.ratio_paired() is None else f"{r.ratio_paired():.2f}x",
                "n/a" if r.ratio_best() is None else f"{r.ratio_best():.2f}x",
                f"{_ms(r.klog_med)}/{_ms(min(r.klog_times))}",
                peer,
            )
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    left = {0, 1}

    def line(cells: tuple) -> str:
        return " | ".join(
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(
        f"\nResults (median of {runs} runs; rates from the median; ratio = klogtool speed / "
        "kafka-python speed,\nfrom the medians; paired = the median of each run's ratio (the two "
        "timed back to back);\nratio of mins = the same from each side's fastest run):"
    )
    print(line(headers))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


def print_targets(results: list[Result], codecs_run: list[str]) -> None:
    print("\nTargets (from the issue):")
    by = {(r.codec, r.op): r for r in results}
    for codec in codecs_run:
        r = by[(codec, "decode")]
        ratio = r.ratio()
        if ratio is None:
            verdict, shown = "N/A", "no kafka-python number"
        else:
            verdict = "PASS" if ratio >= TARGET_DECODE_RATIO else "FAIL"
            shown = (
                f"{ratio:.2f}x (paired {r.ratio_paired():.2f}x, ratio of mins "
                f"{r.ratio_best():.2f}x)"
            )
        print(
            f"  full decode >= {TARGET_DECODE_RATIO:.0f}x kafka-python  [{codec:<6}] "
            f"{shown}  {verdict}"
        )
    if "none" in codecs_run:
        mbps = by[("none", "verify")].klog_mbps()
        verdict = "PASS" if mbps >= TARGET_VERIFY_MBPS else "FAIL"
        print(
            f"  verify (batch CRC) >= {TARGET_VERIFY_MBPS:.0f} MB/s on uncompressed v2 "
            f"{mbps:>8,.1f} MB/s  {verdict}"
        )
    else:
        print(
            f"  verify (batch CRC) >= {TARGET_VERIFY_MBPS:.0f} MB/s on uncompressed v2: "
            "not measured (codec 'none' not selected)"
        )


# -- main -----------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--records", type=int, default=500_000, help="records per segment")
    p.add_argument("--runs", type=int, default=5, help="timed runs per measurement")
    p.add_argument(
        "--codecs",
        default="none,gzip,snappy,lz4,zstd",
        help="comma-separated subset of " + ",".join(CODEC_IDS),
    )
    p.add_argument(
        "--out",
        default=os.path.join(tempfile.gettempdir(), "klogtool-bench"),
        help="directory for the generated (cached) segments",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="also print a cProfile of one klogtool decode pass per codec",
    )
    args = p.parse_args(argv)
    args.codecs = [c.strip().lower() for c in args.codecs.split(",") if c.strip()]
    unknown = [c for c in args.codecs if c not in CODEC_IDS]
    if unknown:
        p.error(f"unknown codec(s): {', '.join(unknown)} (choose from {', '.join(CODEC_IDS)})")
    if args.records < 1 or args.runs < 1:
        p.error("--records and --runs must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print_machine_info()
    os.makedirs(args.out, exist_ok=True)

    paths = {}
    for codec in args.codecs:
        path = segment_path(args.out, codec, args.records)
        if cached_segment_ok(path, args.records):
            print(f"  using cached {path}", file=sys.stderr)
        else:
            t0 = time.perf_counter()
            write_segment(path, CODEC_IDS[codec], args.records)
            print(f"  generated {path} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        paths[codec] = path

    segments: list[Segment] = []
    results: list[Result] = []
    for codec in args.codecs:
        print(f"  timing {codec} ...", file=sys.stderr)
        seg, res = bench_codec(codec, paths[codec], args.runs, args.profile)
        segments.append(seg)
        results.extend(res)

    print_segments(segments)
    print_table(results, args.runs)
    print_targets(results, args.codecs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

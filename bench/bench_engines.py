#!/usr/bin/env python3
"""Benchmark klogtool's native (Rust) engine against its python engine and two peers.

Run by hand (it is not a test; nothing here asserts a timing)::

    python bench/bench_engines.py [--runs 5] [--cli-runs 5] [--codecs none,gzip,snappy,lz4,zstd]
                                  [--shapes small,large] [--small-records 300000]
                                  [--large-records 60000] [--skip-cli] [--cli-codecs LIST]
                                  [--ops "native records,aiokafka decode"] [--cpu-time]
                                  [--out DIR]

Two record shapes, each written once per codec as a v2 segment with klogtool's own encoder
(cached in ``--out``, default ``$TMPDIR/klogtool-bench-engines``): ``small`` records of about
120 bytes and ``large`` records of about 1 KB. On each segment, in the same process and with
the operations' runs interleaved (median of ``--runs``):

``native decode``
    ``SegmentScanner(view, stop_on_crc=False)`` (a CRC-32C per batch) and every batch through
    ``native_columns.record_columns(...).add(batch.data, i)``, ``take()`` every ~16k rows.
``python decode``
    The same walk, ``list(batch.records())`` per batch.
``native records`` / ``python records``
    The same walk, ``batch.records()`` per batch, reading offset, timestamp, key, value and
    headers of every record as the peers' loop below does (what every caller of records pays).
``native records-crc``
    ``native records`` without the CRC-32C of each batch (``check_crc=False``), as
    ``aiokafka decode`` reads.
``native records-crc bytes``
    The same over the ``bytes`` the peers read (the file read into memory before the timing)
    instead of the mapping: like for like with ``aiokafka decode``. The mapping's page faults
    (paid in every pass: the walk releases the pages behind it) cost ~80 ns a 1 KB record;
    the peers' ``read()`` of the file, not timed, costs about as much.
``kafka-python decode`` / ``aiokafka decode``
    ``MemoryRecords(bytes)`` batches and records, reading offset, timestamp, key, value and
    headers of every record (aiokafka with its C extension, ``aiokafka.record._crecords``).
``aiokafka decode+crc``
    The same, with ``batch.validate_crc()`` per batch first, as aiokafka's consumer does by
    default (``check_crcs``): the CRC-32C that klogtool's walk computes for every batch.
``native deep`` / ``python deep``
    What ``verify --deep`` does per batch after the CRC walk: ``engine.check_v2(batch.data,
    64 MiB)`` against ``list(batch.records())``.

Then whole-CLI timings, each a separate ``python -m klogtool`` process (so interpreter and
import time are included; a ``--version`` run shows that fixed cost): ``verify --deep SEG`` and
``export --engine local --jobs 1 --to parquet DEST PARTITION_DIR`` under
``KLOGTOOL_ENGINE=native`` and ``=python``, and ``--jobs 2`` under native.

Exit status is 0 whatever the numbers say.
"""

from __future__ import annotations

import argparse
import gc
import mmap
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import klogtool
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, _REPO)

from bench_formats import cached_segment_ok  # noqa: E402  (bench/ is on sys.path[0])

from klogtool.formats import codecs, engine, engine_stats, v2  # noqa: E402
from klogtool.formats.batch import Record  # noqa: E402
from klogtool.formats.records import SegmentScanner  # noqa: E402
from klogtool.log.export import native_columns  # noqa: E402

try:
    from kafka.record import MemoryRecords as KafkaMemoryRecords
except ImportError:
    KafkaMemoryRecords = None

try:  # bench-only dependency: pip install aiokafka
    from aiokafka.record import _crecords as _aiokafka_c  # noqa: F401
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords

    AIOKAFKA_C = AioMemoryRecords.__module__.startswith("aiokafka.record._crecords")
except ImportError:
    AioMemoryRecords = None
    AIOKAFKA_C = False

GENERATOR_VERSION = 1
SEED = 20240917
BATCH_RECORDS = (400, 600)  # records per batch, uniform: ~500
USERS = 200_000
BASE_TIMESTAMP = 1_700_000_000_000
PRODUCER_ID = 4242
PRODUCER_EPOCH = 3
PARTITION_LEADER_EPOCH = 7
MAX_BATCH_BYTES = 64 << 20
FLUSH_ROWS = 16_384  # take() the native columns every ~16k rows, as an Arrow batch would

CODEC_IDS = {
    "none": codecs.NONE,
    "gzip": codecs.GZIP,
    "snappy": codecs.SNAPPY,
    "lz4": codecs.LZ4,
    "zstd": codecs.ZSTD,
}
SHAPES = ("small", "large")


# -- data generation ------------------------------------------------------------------------
_EVENTS = ("page_view", "click", "add_to_cart", "purchase", "login", "logout", "search", "scroll")
_COUNTRIES = ("US", "DE", "FR", "GB", "IN", "BR", "JP", "NL", "SE", "ES", "CA", "PL")
_DEVICES = ("ios", "android", "web", "desktop")
_PATHS = ("/", "/cart", "/checkout", "/search", "/product", "/account", "/help")
_AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4_1) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.6367.82 Mobile Safari/537.36",
    "okhttp/4.12.0",
)
_CATEGORIES = ("books", "garden", "toys", "kitchen", "sports", "music", "games", "tools", "shoes")
_WORDS = (
    "red", "blue", "large", "small", "classic", "deluxe", "steel", "wooden", "organic", "smart",
    "lamp", "chair", "kettle", "shirt", "drill", "novel", "ball", "speaker", "boots", "tent",
)  # fmt: skip


def _small_value(rng: random.Random, user: int, ts: int) -> bytes:
    """A compact JSON event, 80-100 bytes: records of about 120 bytes with key and framing."""
    v = (
        f'{{"uid":{user},"ev":"{rng.choice(_EVENTS)}","ts":{ts},'
        f'"s":"{rng.getrandbits(32):08x}","c":"{rng.choice(_COUNTRIES)}",'
        f'"amt":{rng.randrange(10_000)}.{rng.randrange(100):02d}'
    )
    if rng.random() < 0.5:
        v += f',"qty":{rng.randrange(1, 9)}'
    return (v + "}").encode()


def _large_value(rng: random.Random, user: int, ts: int) -> bytes:
    """A JSON order/event with a user agent and 7-11 line items: about 1 KB."""
    parts = [
        f'{{"user_id":{user},"event":"{rng.choice(_EVENTS)}","ts":{ts},'
        f'"session":"{rng.getrandbits(64):016x}","country":"{rng.choice(_COUNTRIES)}",'
        f'"device":"{rng.choice(_DEVICES)}","page":"{rng.choice(_PATHS)}",'
        f'"ref":"/p/{rng.randrange(10**6)}","ua":"{rng.choice(_AGENTS)}","items":['
    ]
    for i in range(rng.randint(7, 11)):
        parts.append(
            f'{"," if i else ""}{{"sku":"SKU-{rng.randrange(10**8):08d}",'
            f'"name":"{rng.choice(_WORDS)} {rng.choice(_WORDS)}","qty":{rng.randrange(1, 6)},'
            f'"price":{rng.randrange(1000)}.{rng.randrange(100):02d},'
            f'"cat":"{rng.choice(_CATEGORIES)}"}}'
        )
    parts.append(f'],"total":{rng.randrange(100_000)}.{rng.randrange(100):02d}}}')
    return "".join(parts).encode()


_VALUES = {"small": _small_value, "large": _large_value}


def generate_batches(shape: str, n_records: int, seed: int = SEED) -> Iterator[list[Record]]:
    """Deterministic batches of ~500 records: 16-byte keys, JSON-like values, a traceparent
    header on 10% of the records (and a second header on 2%), CreateTime timestamps."""
    rng = random.Random(f"{seed}-{shape}")
    make_value = _VALUES[shape]
    offset = 0
    ts = BASE_TIMESTAMP
    while offset < n_records:
        size = min(rng.randint(*BATCH_RECORDS), n_records - offset)
        ts += rng.randrange(1, 200)
        batch = []
        for _ in range(size):
            if rng.random() < 0.05:
                ts += 1
            user = rng.randrange(USERS)
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
            key = b"user-%011d" % user  # 16 bytes
            batch.append(
                Record(offset, ts, key, make_value(rng, user, ts), headers, offset & 0x7FFFFFFF)
            )
            offset += 1
        yield batch


def partition_dir(out: str, shape: str, codec: str, n_records: int, per_batch: int = 0) -> str:
    # A partition directory (topic-partition) holding one segment, so that ``export`` can be
    # pointed at the directory and ``verify`` at the segment.
    cut = f"-{per_batch}rb" if per_batch else ""
    return os.path.join(
        out, f"gen{GENERATOR_VERSION}-seed{SEED}", f"eng-{shape}-{codec}-{n_records}r{cut}-0"
    )


def segment_file(pdir: str) -> str:
    return os.path.join(pdir, "00000000000000000000.log")


def write_segments(
    out: str, shape: str, codecs_: list[str], n_records: int, per_batch: int = 0
) -> None:
    """Generate the records once and encode them with every codec that needs a file
    (``per_batch``: each generated batch cut into batches of that many records)."""
    files = {}
    for codec in codecs_:
        pdir = partition_dir(out, shape, codec, n_records, per_batch)
        os.makedirs(pdir, exist_ok=True)
        path = segment_file(pdir)
        tmp = f"{path}.tmp{os.getpid()}"
        files[codec] = (path, tmp, open(tmp, "wb"))
    try:
        for generated in generate_batches(shape, n_records):
            step = per_batch or len(generated)
            for i in range(0, len(generated), step):
                _write_batch(files, generated[i : i + step])
    finally:
        for _, _, f in files.values():
            f.close()
    for path, tmp, _ in files.values():
        os.replace(tmp, path)


def _write_batch(files: dict, records: list[Record]) -> None:
    base = records[0].offset
    for codec, (_, _, f) in files.items():
        f.write(
            v2.encode_batch(
                records,
                compression=CODEC_IDS[codec],
                partition_leader_epoch=PARTITION_LEADER_EPOCH,
                producer_id=PRODUCER_ID,
                producer_epoch=PRODUCER_EPOCH,
                base_sequence=base & 0x7FFFFFFF,
            )
        )


# -- the timed operations -------------------------------------------------------------------
# Each returns (records, sum of offsets+timestamps, key+value bytes, headers, fallbacks):
# the sanity pass compares the first four between implementations; ``fallbacks`` counts
# batches the native engine answered None for (read with the python engine instead).


@dataclass
class Ctx:
    path: str
    view: memoryview  # the mmap, as the CLI reads segments
    data: bytes  # for the peers, whose MemoryRecords want bytes


def _sum_columns(cols: dict, acc: list[int]) -> None:
    n = cols["length"]
    offs = array("q")
    offs.frombytes(cols["offset"])
    tss = array("q")
    tss.frombytes(cols["timestamp"])
    hoff = array("i")
    hoff.frombytes(cols["headers_offsets"])
    acc[0] += n
    acc[1] += sum(offs) + sum(tss)
    acc[2] += len(cols["key_data"]) + len(cols["value_data"])
    acc[3] += hoff[-1] - hoff[0] if len(hoff) else 0


def native_decode(ctx: Ctx, check: bool = False) -> tuple:
    """CRC walk + the native record-columns builder (what ``export`` does per batch)."""
    engine.use("native")
    cols = native_columns.record_columns(MAX_BATCH_BYTES)
    add = cols.add
    take = cols.take
    path = ctx.path
    acc = [0, 0, 0, 0]
    n = pending = fallbacks = bad_crc = batches = 0
    scanner = SegmentScanner(ctx.view, stop_on_crc=False)
    for batch in scanner:
        if not scanner.crc_valid:
            bad_crc += 1
        got = add(batch.data, batches, f"{path}:{batch.position}")
        batches += 1
        if got is None:  # the reader would read this batch with the python engine
            fallbacks += 1
            recs = list(batch.records(MAX_BATCH_BYTES))
            n += len(recs)
            if check:
                _consume(recs, acc)
            continue
        rows = got[0]  # (rows appended, records in the batch)
        n += rows
        pending += rows
        if pending >= FLUSH_ROWS:
            # The buffers are dropped at once: holding a chunk while the next one is built
            # makes the builder's memory fresh pages (page faults), about 2x the time here
            # for 1 KB records. That is the consumer's cost, not the decoder's.
            if check:
                _sum_columns(take(), acc)
            else:
                take()
            pending = 0
    if pending:
        if check:
            _sum_columns(take(), acc)
        else:
            take()
    if check:
        return (*acc, fallbacks, bad_crc)
    return (n, None, None, None, fallbacks, bad_crc)


def python_decode(ctx: Ctx, check: bool = False) -> tuple:
    """CRC walk + ``list(batch.records())``."""
    engine.use("python")
    n = bad_crc = 0
    acc = [0, 0, 0, 0]
    scanner = SegmentScanner(ctx.view, stop_on_crc=False)
    for batch in scanner:
        if not scanner.crc_valid:
            bad_crc += 1
        recs = list(batch.records(MAX_BATCH_BYTES))
        n += len(recs)
        if check:
            _consume(recs, acc)
    if check:
        return (*acc, 0, bad_crc)
    return (n, None, None, None, 0, bad_crc)


def _consume(records, acc: list[int]) -> None:
    """Read offset, timestamp, key, value and headers of every record (the peers' loop)."""
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
    acc[0] += n
    acc[1] += checksum
    acc[2] += nbytes
    acc[3] += nheaders


def _records_walk(ctx: Ctx, engine_name: str, check_crc: bool = True, mapped: bool = True) -> tuple:
    """CRC walk + ``batch.records()`` per batch under ``engine_name``, reading offset,
    timestamp, key, value and headers of every record (the peers' loop, :func:`_consume`),
    over the mapping (else the file's bytes, as the peers read)."""
    engine.use(engine_name)
    acc = [0, 0, 0, 0]
    bad_crc = 0
    buf = ctx.view if mapped else memoryview(ctx.data)
    scanner = SegmentScanner(buf, check_crc=check_crc, stop_on_crc=False)
    for batch in scanner:
        if not scanner.crc_valid:
            bad_crc += 1
        _consume(batch.records(MAX_BATCH_BYTES), acc)
    return (*acc, 0, bad_crc)


def native_records(ctx: Ctx, check: bool = False) -> tuple:
    """``batch.records()`` under the native engine, every record read as the peers read theirs."""
    return _records_walk(ctx, "native")


def native_records_no_crc(ctx: Ctx, check: bool = False) -> tuple:
    """``native records`` without the CRC-32C of each batch, as ``aiokafka decode`` reads."""
    return _records_walk(ctx, "native", check_crc=False)


def native_records_no_crc_bytes(ctx: Ctx, check: bool = False) -> tuple:
    """``native records-crc`` over the bytes ``aiokafka decode`` reads (like for like)."""
    return _records_walk(ctx, "native", check_crc=False, mapped=False)


def python_records(ctx: Ctx, check: bool = False) -> tuple:
    """``batch.records()`` under the python engine, every record read as the peers read theirs."""
    return _records_walk(ctx, "python")


def kafka_decode(ctx: Ctx, check: bool = False) -> tuple:
    acc = [0, 0, 0, 0]
    for batch in KafkaMemoryRecords(ctx.data):
        _consume(batch, acc)
    return (*acc, 0, 0)


def aiokafka_decode(ctx: Ctx, check: bool = False, crc: bool = False) -> tuple:
    acc = [0, 0, 0, 0]
    bad_crc = 0
    mr = AioMemoryRecords(ctx.data)
    while mr.has_next():
        batch = mr.next_batch()
        if batch is None:
            break
        if crc and not batch.validate_crc():
            bad_crc += 1
        _consume(batch, acc)
    return (*acc, 0, bad_crc)


def aiokafka_decode_crc(ctx: Ctx, check: bool = False) -> tuple:
    return aiokafka_decode(ctx, check, crc=True)


def native_deep(ctx: Ctx, check: bool = False) -> tuple:
    """CRC walk + ``engine.check_v2`` per batch (``verify --deep``'s per-batch check)."""
    engine.use("native")
    check_v2 = engine.check_v2
    path = ctx.path
    n = fallbacks = bad_crc = 0
    max_ts = -1
    scanner = SegmentScanner(ctx.view, stop_on_crc=False)
    for batch in scanner:
        if not scanner.crc_valid:
            bad_crc += 1
        fast = check_v2(batch.data, MAX_BATCH_BYTES, f"{path}:{batch.position}")
        if fast is None or not fast[1]:  # the verifier would walk it in Python
            fallbacks += 1
            recs = list(batch.records(MAX_BATCH_BYTES))
            n += len(recs)
            continue
        n += fast[0]
        if fast[2] > max_ts:
            max_ts = fast[2]
    return (n, max_ts, None, None, fallbacks, bad_crc)


def python_deep(ctx: Ctx, check: bool = False) -> tuple:
    """CRC walk + ``list(batch.records())`` (the python side of the same check)."""
    engine.use("python")
    n = bad_crc = 0
    max_ts = -1
    scanner = SegmentScanner(ctx.view, stop_on_crc=False)
    for batch in scanner:
        if not scanner.crc_valid:
            bad_crc += 1
        recs = list(batch.records(MAX_BATCH_BYTES))
        n += len(recs)
        if check:
            for r in recs:
                if r.timestamp > max_ts:
                    max_ts = r.timestamp
    return (n, max_ts if check else None, None, None, 0, bad_crc)


OPS: dict[str, Callable[..., tuple]] = {
    "native decode": native_decode,
    "python decode": python_decode,
    "native records": native_records,
    "native records-crc": native_records_no_crc,
    "native records-crc bytes": native_records_no_crc_bytes,
    "python records": python_records,
    "kafka-python decode": kafka_decode,
    "aiokafka decode": aiokafka_decode,
    "aiokafka decode+crc": aiokafka_decode_crc,
    "native deep": native_deep,
    "python deep": python_deep,
}


def available_ops() -> tuple[list[str], dict[str, str]]:
    ops, skipped = [], {}
    for op in OPS:
        if op.startswith("native") and not engine.native_available():
            skipped[op] = "native engine not built"
        elif op.startswith("kafka-python") and KafkaMemoryRecords is None:
            skipped[op] = "kafka-python not installed"
        elif op.startswith("aiokafka") and AioMemoryRecords is None:
            skipped[op] = "aiokafka not installed (pip install aiokafka)"
        else:
            ops.append(op)
    return ops, skipped


CLOCK = time.perf_counter  # --cpu-time: time.process_time (on a machine others share)


def _timed(fn: Callable, ctx: Ctx) -> tuple[float, tuple]:
    gc.collect()
    gc.disable()
    try:
        t0 = CLOCK()
        out = fn(ctx)
        return CLOCK() - t0, out
    finally:
        gc.enable()


# -- results --------------------------------------------------------------------------------
@dataclass
class Segment:
    shape: str
    codec: str
    path: str
    file_bytes: int
    raw_bytes: int  # batch headers + uncompressed records areas
    records: int
    batches: int


@dataclass
class Result:
    seg: Segment
    op: str
    times: list[float] = field(default_factory=list)
    fallbacks: int = 0  # batches the native engine answered None for, summed over runs
    bad_crc: int = 0
    error: str | None = None

    @property
    def med(self) -> float:
        return statistics.median(self.times)

    def ns_per_record(self) -> float:
        return self.med / self.seg.records * 1e9

    def rps(self) -> float:
        return self.seg.records / self.med

    def mbps(self) -> float:
        return self.seg.file_bytes / self.med / 1e6

    def raw_mbps(self) -> float:
        return self.seg.raw_bytes / self.med / 1e6


def describe(shape: str, codec: str, path: str, view: memoryview) -> Segment:
    records = batches = raw = 0
    for batch in SegmentScanner(view, check_crc=False):
        batches += 1
        records += batch.count
        raw += v2.RECORD_BATCH_OVERHEAD + len(batch.records_area())
    return Segment(shape, codec, path, len(view), raw, records, batches)


def sanity(seg: Segment, ctx: Ctx, ops: list[str]) -> dict[str, str]:
    """Untimed pass (also the warm-up): every implementation must see the same records, and
    the native engine must decode every (well-formed) batch itself. Returns per-op errors."""
    errors: dict[str, str] = {}
    ref = python_decode(ctx, check=True)
    if ref[0] != seg.records or ref[5]:
        raise SystemExit(f"{seg.shape}/{seg.codec}: python engine read {ref} records/bad CRCs")
    max_ts = python_deep(ctx, check=True)[1]
    for op in ops:
        try:
            got = OPS[op](ctx, check=True)
        except Exception as e:  # a peer lacking a codec: report it, keep klogtool's numbers
            errors[op] = f"{type(e).__name__}: {e}"[:60]
            continue
        if op.endswith("deep"):
            want = (seg.records, max_ts)
            if got[:2] != want:
                raise SystemExit(f"{seg.shape}/{seg.codec} {op}: {got[:2]} != {want}")
        elif got[:4] != ref[:4]:
            raise SystemExit(f"{seg.shape}/{seg.codec} {op}: {got[:4]} != python engine {ref[:4]}")
    return errors


def bench_segment(seg: Segment, runs: int, ops: list[str]) -> list[Result]:
    with open(seg.path, "rb") as f:
        data = f.read()
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mm)
    try:
        ctx = Ctx(seg.path, view, data)
        errors = sanity(seg, ctx, ops)
        results = {op: Result(seg, op, error=errors.get(op)) for op in ops}
        live = [op for op in ops if op not in errors]
        for run in range(runs if live else 0):  # (every op failed: their errors are shown)
            k = run % len(live)  # rotate the order: no op always runs first or after another
            for op in live[k:] + live[:k]:
                t, out = _timed(OPS[op], ctx)
                if out[0] != seg.records:
                    raise SystemExit(f"{seg.shape}/{seg.codec} {op}: {out[0]} records")
                r = results[op]
                r.times.append(t)
                r.fallbacks += out[4]
                r.bad_crc += out[5]
        return [results[op] for op in ops]
    finally:
        view.release()
        mm.close()


# -- whole-CLI timings ----------------------------------------------------------------------
@dataclass
class CliResult:
    seg: Segment
    op: str
    argv: list[str]
    engine: str
    times: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def med(self) -> float:
        return statistics.median(self.times)


def cli_ops(seg: Segment, pdir: str, dest: str) -> list[tuple[str, str, list[str]]]:
    py = [sys.executable, "-m", "klogtool"]

    def export(jobs: int) -> list[str]:
        return py + ["export", "--engine", "local", "--jobs", str(jobs), "--to", "parquet",
                     dest, pdir]  # fmt: skip

    return [
        ("verify --deep", "native", py + ["verify", "--deep", seg.path]),
        ("verify --deep", "python", py + ["verify", "--deep", seg.path]),
        ("export --jobs 1", "native", export(1)),
        ("export --jobs 1", "python", export(1)),
        ("export --jobs 2", "native", export(2)),
    ]


def _run_cli(argv: list[str], eng: str, dest: str) -> tuple[float, int, str]:
    shutil.rmtree(dest, ignore_errors=True)  # untimed: export refuses a non-empty DEST
    env = dict(os.environ, KLOGTOOL_ENGINE=eng)
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t = time.perf_counter() - t0
    return t, p.returncode, p.stderr.decode(errors="replace").strip()


def _parquet_rows(dest: str) -> int:
    import pyarrow.parquet as pq

    rows = 0
    for root, _, files in os.walk(dest):
        for name in files:
            if name.endswith(".parquet"):
                rows += pq.ParquetFile(os.path.join(root, name)).metadata.num_rows
    return rows


def bench_cli(seg: Segment, pdir: str, runs: int, scratch: str) -> list[CliResult]:
    """Every command ``runs`` times, interleaved. The page cache is warm (the in-process part
    has just read the segment). Each export's Parquet row count is checked after its run
    (untimed); a command that fails is reported and dropped."""
    dest = os.path.join(scratch, "export-out")
    results = [CliResult(seg, op, argv, eng) for op, eng, argv in cli_ops(seg, pdir, dest)]
    for run in range(runs):
        live = [r for r in results if r.error is None]
        k = run % max(1, len(live))
        for r in live[k:] + live[:k]:
            t, rc, err = _run_cli(r.argv, r.engine, dest)
            if rc != 0:
                last = err.splitlines()[-1] if err else ""
                r.error = f"exit {rc}: {last}"[:70]
                continue
            if r.op.startswith("export"):
                rows = _parquet_rows(dest)
                if rows != seg.records:
                    r.error = f"exported {rows} rows, expected {seg.records}"
                    continue
            r.times.append(t)
    shutil.rmtree(dest, ignore_errors=True)
    return results


def startup_time(runs: int) -> float:
    argv = [sys.executable, "-m", "klogtool", "--version"]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# -- output ---------------------------------------------------------------------------------
def _version(dist: str) -> str:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return "not installed"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def provenance() -> str:
    """Which klogtool ran: its git commit, modified files, and the native module's mtime (the
    tree may change during a run; the CLI processes load whatever is there when they start)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(klogtool.__file__)))
    parts = [f"klogtool in {root}"]
    try:
        head = subprocess.run(
            ["git", "-C", root, "log", "-1", "--format=%h %cI"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        parts.append(f"git {head}, {len(dirty)} modified tracked files")
    except (OSError, subprocess.CalledProcessError):
        parts.append("git: unknown")
    native = getattr(engine, "_native", None)
    so = getattr(native, "__file__", None)
    if so and os.path.exists(so):
        mtime = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(so)))
        parts.append(f"{os.path.basename(so)} mtime {mtime}")
    return "; ".join(parts)


def print_header() -> None:
    print("klogtool engine benchmark")
    print(f"  python       {platform.python_implementation()} {platform.python_version()}")
    print(f"  code         {provenance()}")
    print(f"  cpus         {os.cpu_count()}, {_cpu_model()}")
    try:
        print(f"  loadavg      {' '.join(f'{x:.2f}' for x in os.getloadavg())} (at start)")
    except OSError:
        pass
    print(f"  native       {'built' if engine.native_available() else 'NOT BUILT'}")
    print(f"  kafka-python {_version('kafka-python')}")
    aio = _version("aiokafka")
    if AioMemoryRecords is not None:
        impl = f"{AioMemoryRecords.__module__}.{AioMemoryRecords.__name__}"
        print(f"  aiokafka     {aio} ({impl}; C extension: {AIOKAFKA_C})")
    else:
        print(f"  aiokafka     {aio}")
    inflater = codecs.gzip_inflater().__name__
    print(
        f"  gzip         klogtool python engine inflates with {inflater}; "
        f"cramjam {_version('cramjam')}, crc32c {_version('crc32c')}"
    )
    sys.stdout.flush()


def print_segments(segs: list[Segment]) -> None:
    print(
        "\nSegments (v2, CreateTime, idempotent producer, "
        f"{BATCH_RECORDS[0]}-{BATCH_RECORDS[1]} records/batch):"
    )
    print(
        f"  {'shape':<6} {'codec':<7} {'records':>8} {'batches':>7} {'B/record':>8} "
        f"{'file MB':>8} {'raw MB':>7} {'ratio':>5}  path"
    )
    for s in segs:
        print(
            f"  {s.shape:<6} {s.codec:<7} {s.records:>8,} {s.batches:>7,} "
            f"{s.raw_bytes / s.records:>8.1f} {s.file_bytes / 1e6:>8.2f} "
            f"{s.raw_bytes / 1e6:>7.2f} {s.raw_bytes / s.file_bytes:>5.2f}  {s.path}"
        )


def _table(headers: tuple, rows: list[tuple], left: set[int]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells) -> str:
        return " | ".join(
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(line(headers))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def print_results(results: list[Result], runs: int) -> None:
    print(
        f"\nIn-process (median of {runs} interleaved runs; MB/s = segment file bytes/s, "
        "raw MB/s = uncompressed;\nvs python = python engine's median time / this one's, "
        "for the same operation; fallbacks = batches\nthe native engine answered None for, "
        "summed over the timed runs):"
    )
    by = {(r.seg.shape, r.seg.codec, r.op): r for r in results}
    rows = []
    for r in results:
        if r.error or not r.times:
            rows.append((r.seg.shape, r.seg.codec, r.op, *(["-"] * 7), r.error or "no runs"))
            continue
        kind = r.op.split()[-1]
        base = by.get((r.seg.shape, r.seg.codec, f"python {kind}"))
        speedup = f"{base.med / r.med:.2f}x" if base and base.times else "-"
        rows.append(
            (
                r.seg.shape,
                r.seg.codec,
                r.op,
                f"{r.ns_per_record():,.0f}",
                f"{r.rps():,.0f}",
                f"{r.mbps():,.1f}",
                f"{r.raw_mbps():,.1f}",
                f"{r.med * 1e3:.1f}/{min(r.times) * 1e3:.1f}",
                speedup,
                str(r.fallbacks) if r.op.startswith("native") else "",
                "",
            )
        )
    _table(
        (
            "shape",
            "codec",
            "op",
            "ns/rec",
            "rec/s",
            "MB/s",
            "raw MB/s",
            "ms med/min",
            "vs python",
            "fallbacks",
            "note",
        ),
        rows,
        {0, 1, 2, 10},
    )


def print_cli(results: list[CliResult], runs: int, startup: float | None) -> None:
    print(
        f"\nWhole CLI (separate processes, median of {runs} interleaved runs; wall time "
        "includes start-up"
        + (f": `python -m klogtool --version` takes {startup * 1e3:.0f} ms" if startup else "")
        + ";\nMB/s = segment file bytes/s; vs python = KLOGTOOL_ENGINE=python's median time / "
        "this one's;\njobs 2 vs 1 = native --jobs 1 median / native --jobs 2 median):"
    )
    by = {(r.seg.shape, r.seg.codec, r.op, r.engine): r for r in results}
    rows = []
    for r in results:
        if r.error or not r.times:
            rows.append(
                (r.seg.shape, r.seg.codec, r.op, r.engine, *(["-"] * 5), r.error or "no runs")
            )
            continue
        s = r.seg
        base = by.get((s.shape, s.codec, r.op, "python"))
        note = ""
        if r.engine == "native" and base and base.times and base.error is None:
            note = f"vs python {base.med / r.med:.2f}x"
        if r.op == "export --jobs 2":
            j1 = by.get((s.shape, s.codec, "export --jobs 1", "native"))
            if j1 and j1.times:
                note = f"jobs 2 vs 1: {j1.med / r.med:.2f}x"
        rows.append(
            (
                s.shape,
                s.codec,
                r.op,
                r.engine,
                f"{r.med:.3f}/{min(r.times):.3f}",
                f"{r.med / s.records * 1e9:,.0f}",
                f"{s.records / r.med:,.0f}",
                f"{s.file_bytes / r.med / 1e6:,.1f}",
                f"{s.raw_bytes / r.med / 1e6:,.1f}",
                note,
            )
        )
    _table(
        (
            "shape",
            "codec",
            "command",
            "engine",
            "s med/min",
            "ns/rec",
            "rec/s",
            "MB/s",
            "raw MB/s",
            "note",
        ),
        rows,
        {0, 1, 2, 3, 9},
    )


# -- main -----------------------------------------------------------------------------------
def _stats_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {r: n - before.get(r, 0) for r, n in after.items() if n != before.get(r, 0)}


def print_handbacks(rows: list[tuple[str, str, dict[str, int]]]) -> None:
    """The batches the native engine handed back to the python engine while each segment's
    in-process operations ran (``klogtool.formats.engine_stats``), per reason."""
    print("\nHand-backs to the python engine during the in-process runs (per reason):")
    for shape, codec, delta in rows:
        total = sum(delta.values())
        reasons = ", ".join(f"{r} {n}" for r, n in sorted(delta.items(), key=lambda rn: -rn[1]))
        print(f"  {shape:<6} {codec:<7} {total:>7}{': ' + reasons if reasons else ''}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--runs", type=int, default=5, help="timed runs per in-process operation")
    p.add_argument("--cli-runs", type=int, default=5, help="timed runs per CLI command")
    p.add_argument("--codecs", default=",".join(CODEC_IDS))
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--small-records", type=int, default=300_000)
    p.add_argument("--large-records", type=int, default=60_000)
    p.add_argument("--skip-cli", action="store_true", help="in-process timings only")
    p.add_argument(
        "--cpu-time",
        action="store_true",
        help="time the in-process operations in CPU time (time.process_time), not wall time: "
        "steadier where other processes share the CPUs",
    )
    p.add_argument(
        "--ops",
        default=None,
        help="in-process operations to time, comma-separated (default: all available)",
    )
    p.add_argument(
        "--cli-codecs",
        default=None,
        help="codecs for the CLI part (default: as --codecs); it is most of the run time",
    )
    p.add_argument(
        "--out",
        default=os.path.join(tempfile.gettempdir(), "klogtool-bench-engines"),
        help="directory for the generated (cached) segments and the export scratch",
    )
    a = p.parse_args(argv)
    a.codecs = [c.strip() for c in a.codecs.split(",") if c.strip()]
    a.shapes = [s.strip() for s in a.shapes.split(",") if s.strip()]
    if a.cli_codecs is None:
        a.cli_codecs = list(a.codecs)
    else:
        a.cli_codecs = [c.strip() for c in a.cli_codecs.split(",") if c.strip()]
        if bad := [c for c in a.cli_codecs if c not in a.codecs]:
            p.error(f"--cli-codecs {bad} not in --codecs")
    if a.ops is not None:
        a.ops = [o.strip() for o in a.ops.split(",") if o.strip()]
        if bad := [o for o in a.ops if o not in OPS]:
            p.error(f"unknown op(s) {bad}")
    if bad := [c for c in a.codecs if c not in CODEC_IDS]:
        p.error(f"unknown codec(s) {bad}")
    if bad := [s for s in a.shapes if s not in SHAPES]:
        p.error(f"unknown shape(s) {bad}")
    if min(a.runs, a.cli_runs, a.small_records, a.large_records) < 1:
        p.error("counts must be positive")
    return a


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cpu_time:
        global CLOCK
        CLOCK = time.process_time
    t_start = time.perf_counter()
    print_header()
    counts = {"small": args.small_records, "large": args.large_records}

    for shape in args.shapes:
        n = counts[shape]
        stale = [
            c
            for c in args.codecs
            if not cached_segment_ok(segment_file(partition_dir(args.out, shape, c, n)), n)
        ]
        if stale:
            t0 = time.perf_counter()
            write_segments(args.out, shape, stale, n)
            print(
                f"  generated {shape} {','.join(stale)} in {time.perf_counter() - t0:.1f}s",
                file=sys.stderr,
            )
        else:
            print(f"  using cached {shape} segments", file=sys.stderr)

    ops, skipped = available_ops()
    if args.ops is not None:
        ops = [op for op in ops if op in args.ops]
        skipped = {op: why for op, why in skipped.items() if op in args.ops}
    segs: list[Segment] = []
    results: list[Result] = []
    handbacks: list[tuple[str, str, dict[str, int]]] = []
    for shape in args.shapes:
        for codec in args.codecs:
            path = segment_file(partition_dir(args.out, shape, codec, counts[shape]))
            with open(path, "rb") as f:
                seg = describe(shape, codec, path, memoryview(f.read()))
            segs.append(seg)
            print(f"  timing {shape} {codec} ...", file=sys.stderr)
            before = engine_stats()
            res = bench_segment(seg, args.runs, ops)
            handbacks.append((shape, codec, _stats_delta(before, engine_stats())))
            for op, why in skipped.items():
                res.append(Result(seg, op, error=why))
            results.extend(res)
    t_inproc = time.perf_counter() - t_start

    cli: list[CliResult] = []
    startup = None
    if not args.skip_cli:
        startup = startup_time(args.cli_runs)
        scratch = os.path.join(args.out, "scratch")
        os.makedirs(scratch, exist_ok=True)
        for seg in [s for s in segs if s.codec in args.cli_codecs]:
            print(f"  CLI {seg.shape} {seg.codec} ...", file=sys.stderr)
            cli.extend(bench_cli(seg, os.path.dirname(seg.path), args.cli_runs, scratch))

    print_segments(segs)
    print_results(results, args.runs)
    print_handbacks(handbacks)
    if cli:
        print_cli(cli, args.cli_runs, startup)
    total = time.perf_counter() - t_start
    print(f"\nWall time: {total:.0f} s ({t_inproc:.0f} s to the end of the in-process part).")
    try:
        print(f"loadavg at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    except OSError:
        pass
    print(f"code at the end: {provenance()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Helpers for the rewriting commands' tests (convert-format, compact, retention-sweep)."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafka.record.memory_records import MemoryRecords

from klogtool.formats.batch import Record
from klogtool.formats.checkpoint import encode_offset_checkpoint, parse_offset_checkpoint
from klogtool.formats.index import AbortedTxn, encode_txn_index
from klogtool.formats.payloads.control import ABORT, COMMIT, encode_end_txn_marker
from klogtool.formats.records import SegmentScanner
from klogtool.formats.v2 import encode_batch
from klogtool.log import layout
from support.cli import errors, findings, generator, run
from support.paths import LOGDIR
from support.records import norm_record

GEN = generator()
T0 = GEN.T0


def copy_logdir(tmp: Path, *partitions: str) -> Path:
    """A copy of fixtures/logs/logdir (only ``partitions`` if given) under ``tmp``."""
    dst = tmp / "logdir"
    if partitions:
        dst.mkdir(parents=True)
        keep = {layout.parse_partition_dir_name(p) for p in partitions}
        for f in LOGDIR.iterdir():
            if f.name in layout.OFFSET_CHECKPOINTS:  # only the partitions copied
                cp = parse_offset_checkpoint(f.read_bytes())
                entries = {tp: o for tp, o in cp.entries.items() if tp in keep}
                (dst / f.name).write_bytes(encode_offset_checkpoint(entries))
            elif f.is_file():
                shutil.copy2(f, dst / f.name)
        for p in partitions:
            shutil.copytree(LOGDIR / p, dst / p)
    else:
        shutil.copytree(LOGDIR, dst)
    return dst


def write_partition(
    part: Path,
    segments: Sequence[tuple[int, Sequence[bytes]]],
    *,
    txn_index: dict[int, bytes] | None = None,
    interval: int = 4096,
) -> None:
    """Segment files (``.log`` and indexes built by the broker's rule) in ``part``."""
    part.mkdir(parents=True, exist_ok=True)
    for base, batches in segments:
        GEN.write_segment_files(part, base, b"".join(batches), interval=interval)
        if txn_index and base in txn_index:
            (part / layout.segment_name(base, ".txnindex")).write_bytes(txn_index[base])


def write_checkpoints(logdir: Path, **per_name: dict[tuple[str, int], int]) -> None:
    """``write_checkpoints(d, replication_offset_checkpoint={("t", 0): 10})``."""
    for name, entries in per_name.items():
        (logdir / name.replace("_", "-")).write_bytes(encode_offset_checkpoint(entries))


def segment_logs(part: Path) -> list[Path]:
    return sorted(part.glob("*.log"))


def kp_records(part: Path, *, control: bool = False) -> list[tuple]:
    """Every data record of a partition (or one .log) as kafka-python reads it."""
    out = []
    for log in [part] if part.is_file() else segment_logs(part):
        mr = MemoryRecords(log.read_bytes())
        while mr.has_next():
            batch = mr.next_batch()
            if batch.magic >= 2 and batch.is_control_batch and not control:
                continue
            out += [norm_record(r) for r in batch]
        assert mr.valid_bytes() == log.stat().st_size, log
    return out


def kl_batches(part: Path) -> Iterator:
    for log in [part] if part.is_file() else segment_logs(part):
        data = log.read_bytes()
        scanner = SegmentScanner(data)
        yield from scanner
        assert scanner.result is not None and scanner.result.end == "clean", log


def kl_records(part: Path) -> list[tuple]:
    """Every data record of a partition as klogtool reads it."""
    return [norm_record(r) for b in kl_batches(part) if not b.is_control for r in b.records()]


def assert_verifies(path: Path, *, allow: Iterable[str] = ()) -> None:
    """``verify --deep`` finds nothing (but the warning codes in ``allow``)."""
    code, out, err = run("verify", "--deep", "--format", "jsonl", str(path), cwd=path.parent)
    allowed = set(allow)
    bad = [f for f in findings(out) if f["code"] not in allowed]
    assert not bad, bad
    if not errors(out):
        assert code == 0, (code, err)


def records(offsets: Iterable[int], key=lambda o: b"k%d" % o, value=lambda o: b"v%d" % o):
    return [Record(o, T0 + o, key(o), value(o)) for o in offsets]


def tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` but the broker's ``.lock``: relative name -> contents."""
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


# -- generated partitions for compaction ----------------------------------------------------
@dataclass
class Rec:
    offset: int
    key: bytes | None
    value: bytes | None
    kind: str  # plain | committed | aborted


@dataclass
class Generated:
    segments: list[tuple[int, list[bytes]]] = field(default_factory=list)
    records: list[Rec] = field(default_factory=list)
    txn_index: dict[int, list[AbortedTxn]] = field(default_factory=dict)
    offset: int = 0

    @property
    def active_base(self) -> int:
        return self.segments[-1][0]


def generate(
    seed: int, codec: int, *, segments: int = 5, batches_per_segment: int = 8
) -> Generated:
    """Plain, idempotent and transactional batches over ``segments`` segments (the last is the
    active one). Transactions may span segments; every one ends before the log does."""
    rng = random.Random(seed)
    g = Generated()
    open_txns: dict[int, tuple[int, list[int]]] = {}  # pid -> (first offset, data offsets)
    seqs: dict[int, int] = {}

    def data_batch(pid: int, kind: str) -> bytes:
        n = rng.randint(1, 6)
        recs = []
        for o in range(g.offset, g.offset + n):
            key = None if rng.random() < 0.05 else b"key-%d" % rng.randrange(40)
            value = None if rng.random() < 0.12 else b"value-%d" % o
            recs.append(Record(o, T0 + 10 * o, key, value, ()))
            g.records.append(Rec(o, key, value, kind))
        seq = seqs.get(pid, 0)
        buf = encode_batch(
            recs,
            compression=codec,
            producer_id=pid,
            producer_epoch=0 if pid >= 0 else -1,
            base_sequence=seq if pid >= 0 else -1,
            is_transactional=kind != "plain",
            partition_leader_epoch=3,
        )
        if pid >= 0:
            seqs[pid] = seq + n
        g.offset += n
        return buf

    def marker(pid: int, type_id: int, seg_base: int) -> bytes:
        first, _ = open_txns.pop(pid)
        o = g.offset
        key, value = encode_end_txn_marker(type_id, 5)
        buf = encode_batch(
            [Record(o, T0 + 10 * o, key, value)],
            is_control=True,
            is_transactional=True,
            producer_id=pid,
            producer_epoch=0,
            partition_leader_epoch=3,
        )
        if type_id == ABORT:
            others = [f for f, _ in open_txns.values()]
            lso = min(others) if others else o + 1
            g.txn_index.setdefault(seg_base, []).append(AbortedTxn(0, pid, first, o, lso))
        g.offset += 1
        return buf

    fate = {}  # pid -> COMMIT | ABORT, decided when the transaction starts
    for s in range(segments):
        base = g.offset
        out: list[bytes] = []
        for b in range(batches_per_segment):
            last_segment = s == segments - 1
            roll = rng.random()
            if s == 0 and b == batches_per_segment - 1:
                # an aborted transaction that starts here and ends in a later segment
                open_txns[204] = (g.offset, [])
                fate[204] = ABORT
                out.append(data_batch(204, "aborted"))
            elif open_txns and (roll < 0.3 or (last_segment and b >= batches_per_segment - 3)):
                pid = rng.choice(sorted(open_txns))
                out.append(marker(pid, fate[pid], base))
            elif roll < 0.55 and not (last_segment and b >= batches_per_segment - 4):
                pid = rng.choice([200, 201, 202, 203])
                if pid not in open_txns:
                    open_txns[pid] = (g.offset, [])
                    fate[pid] = ABORT if rng.random() < 0.4 else COMMIT
                kind = "aborted" if fate[pid] == ABORT else "committed"
                out.append(data_batch(pid, kind))
            elif roll < 0.75:
                out.append(data_batch(100, "plain"))  # an idempotent producer
            else:
                out.append(data_batch(-1, "plain"))
        while last_segment and open_txns:
            pid = sorted(open_txns)[0]
            out.append(marker(pid, fate[pid], base))
        g.segments.append((base, out))
    return g


def materialise(g: Generated, logdir: Path, name: str = "gen-0") -> Path:
    part = logdir / name
    write_partition(
        part,
        g.segments,
        txn_index={b: encode_txn_index(t) for b, t in g.txn_index.items()},
    )
    tp = (name.rsplit("-", 1)[0], 0)
    write_checkpoints(logdir, replication_offset_checkpoint={tp: g.offset})
    (logdir / "meta.properties").write_text("version=0\nbroker.id=0\n")
    return part

"""Format conversion: rewrite segments to message format 0, 1 or 2 and/or another codec
(docs/kafka-rules.md: Format conversion), keeping every offset.

The broker's conversion rules: down-conversion drops control batches, headers, producer
ids/epochs/sequences, the transactional flag and partition leader epochs (aborted data is
*not* filtered, so it becomes visible), and to v0 the timestamps; zstd does not exist before
v2. Up-conversion gives v0 records timestamp -1 under CreateTime and legacy batches no
producer state. Uncompressed legacy entries hold exactly one record, so an uncompressed v2
batch down-converts to one message per record and a compressed one to one wrapper (inner
offsets relative for v1, absolute for v0; the wrapper carries the last offset).

By default every input batch gives one output batch (or, for uncompressed legacy output, one
message per record); ``batch_bytes`` re-batches records of batches that carry no producer
state (no producer id, not transactional or control, not emptied, no delete horizon) into
batches of about that many bytes. Batches already in the target form are copied byte for
byte, so converting twice is a no-op.

:func:`plan_conversion` is pure: it reads and validates every segment (batch CRCs; records
wherever losses are counted), counts what the conversion would lose and returns a
:class:`ConversionPlan`. :func:`execute_conversion` writes it, to a new directory or in place
through the ``.cleaned``/``.swap`` protocol. :func:`convert` is the whole command: the
destination's checks, the writing session (locks, interrupted operations), the plan, the
refusal of a lossy conversion, the writing, and the notices about all of it, in order.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.formats import codecs, engine
from klogtool.formats.batch import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP_TYPE,
    Batch,
    Record,
)
from klogtool.formats.errors import FormatError, UnencodableError
from klogtool.formats.index import encode_offset_index, encode_time_index, encode_txn_index
from klogtool.formats.legacy import encode_message, encode_wrapper
from klogtool.formats.records import SegmentScanner
from klogtool.formats.v2 import DefaultBatch, encode_batch, reencode
from klogtool.log import layout
from klogtool.log.atomic import CLEANED, FileOps, read_range, swap_in_cleaned
from klogtool.log.context import ReadContext
from klogtool.log.indexer import DEFAULT_INDEX_INTERVAL_BYTES, build_indexes
from klogtool.log.partition import is_within
from klogtool.log.segment import mapped
from klogtool.log.targets import resolve
from klogtool.log.txnreplay import replay_aborted_txns
from klogtool.log.writing import (
    Notice,
    check_batch_offsets,
    completed_notices,
    left_alone,
    require_readable_end,
    unreadable,
    writing_session,
)

if TYPE_CHECKING:
    from klogtool import events

INT32_MAX = (1 << 31) - 1
SEGMENT, PARTITION, LOG_DIR = "segment", "partition", "log-dir"
COPY, CONVERT = "copy", "convert"
PARTIAL_MARK = ".klogtool-partial"


@dataclass(frozen=True)
class ConvertOptions:
    to_magic: int = 2
    compression: int | None = None  # None: keep each batch's codec
    compression_level: int | None = None
    batch_bytes: int | None = None  # None: one output batch per input batch
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    ctx: ReadContext = field(kw_only=True)


@dataclass
class Losses:
    """What a conversion drops. All but the delete horizon are lossy (refused without
    --allow-lossy): a consumer, the producer state or the leader-epoch history would see
    something else afterwards."""

    headers: int = 0  # records whose headers are dropped (into v0/v1)
    timestamps: int = 0  # records whose timestamp is dropped (into v0)
    control_batches: int = 0  # transaction markers and other control batches dropped
    transactional_batches: int = 0  # lose the flag: aborted data becomes visible
    zstd_batches: int = 0  # zstd does not exist before v2: written uncompressed
    producer_batches: int = 0  # producer id/epoch/sequence dropped: idempotence state lost
    empty_batches: int = 0  # emptied batches (producer state only) dropped
    leader_epoch_batches: int = 0  # partition leader epoch dropped: epoch history lost
    delete_horizon_batches: int = 0  # KIP-534 delete horizon dropped (informational)

    LOSSY = (
        "headers",
        "timestamps",
        "control_batches",
        "transactional_batches",
        "zstd_batches",
        "producer_batches",
        "empty_batches",
        "leader_epoch_batches",
    )

    def add(self, other: Losses) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def lossy(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.LOSSY if getattr(self, k)}

    def informational(self) -> dict[str, int]:
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in self.LOSSY and getattr(self, f.name)
        }

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_LOSS_TEXT = {
    "headers": "records {} their headers",
    "timestamps": "records {} their timestamp",
    "control_batches": "control batches (transaction markers) {} dropped",
    "transactional_batches": "transactional batches {} their transaction (aborted records "
    "become visible to every consumer)",
    "zstd_batches": "zstd batches {} written uncompressed (zstd needs magic 2)",
    "producer_batches": "batches {} their producer id, epoch and sequence",
    "empty_batches": "emptied batches (producer state only) {} dropped",
    "leader_epoch_batches": "batches {} their partition leader epoch",
    "delete_horizon_batches": "batches {} their delete horizon",
}
_VERBS = {True: {"lose": "lost", "be": "were"}, False: {"lose": "would lose", "be": "would be"}}


def describe_losses(counts: dict[str, int], *, done: bool = False) -> str:
    out = []
    for k, n in counts.items():
        text = _LOSS_TEXT[k]
        verb = _VERBS[done]["be" if "{} dropped" in text or "{} written" in text else "lose"]
        out.append(f"{n:,} " + text.format(verb))
    return "; ".join(out)


@dataclass
class SegmentPlan:
    source: Path
    base_offset: int
    size: int
    mtime_ns: int
    batches: int
    action: str  # COPY (already in the target form) | CONVERT
    losses: Losses
    txnindex: Path | None
    last_offset_in: int | None
    last_offset_out: int | None
    # filled by execute_conversion
    size_out: int | None = None
    batches_out: int | None = None

    def as_obj(self) -> events.ConvertFormatSegment:
        """The ``segment`` object: the plan for this segment."""
        return {
            "type": "segment",
            "path": str(self.source),
            "base_offset": self.base_offset,
            "size": self.size,
            "batches": self.batches,
            "action": self.action,
            "last_offset": self.last_offset_in,
            "last_offset_out": self.last_offset_out,
            "losses": self.losses.as_dict(),
        }


@dataclass
class PartitionPlan:
    source: Path
    segments: list[SegmentPlan]
    carried: list[Path]  # leader-epoch-checkpoint, partition.metadata, snapshots
    ignored: list[Path]  # other files, not carried

    @property
    def losses(self) -> Losses:
        total = Losses()
        for s in self.segments:
            total.add(s.losses)
        return total


@dataclass
class ConversionPlan:
    source: Path
    kind: str  # SEGMENT | PARTITION | LOG_DIR
    options: ConvertOptions
    partitions: list[PartitionPlan]
    root_files: list[Path] = field(default_factory=list)  # log dir files carried to DEST
    skipped: list[Path] = field(default_factory=list)  # symlinks out of SRC (in place)
    # partition dirs of a log dir SRC left alone, and why (writing.left_alone)
    left_alone: dict[Path, str] = field(default_factory=dict)

    @property
    def losses(self) -> Losses:
        total = Losses()
        for p in self.partitions:
            total.add(p.losses)
        return total

    @property
    def segments(self) -> list[SegmentPlan]:
        return [s for p in self.partitions for s in p.segments]


# ---------------------------------------------------------------------------------- planning
def plan_conversion(src: Path, opts: ConvertOptions, *, confine: bool = False) -> ConversionPlan:
    """Validate ``src`` (a segment, partition dir or log dir) and plan its conversion.
    ``confine`` (in place): partition dirs that are symlinks out of a log dir ``src`` are left
    out (listed in ``skipped``), never written through."""
    if not src.exists():
        raise InputError("no such file or directory", path=str(src), code=Code.NOT_FOUND)
    if src.is_file():
        if layout.file_kind(src) != layout.LOG:
            raise InputError(
                "convert-format takes a .log segment, a partition dir or a log dir",
                path=str(src),
                code=Code.NOT_A_SEGMENT,
            )
        base = layout.offset_from_name(src) or 0
        txn = src.with_name(layout.segment_name(base, ".txnindex"))
        seg = plan_segment(src, base, txn if txn.is_file() else None, opts)
        return ConversionPlan(src, SEGMENT, opts, [PartitionPlan(src.parent, [seg], [], [])])
    if layout.looks_like_partition_dir(src):
        return ConversionPlan(src, PARTITION, opts, [plan_partition(src, opts)])
    logdir = layout.scan_log_dir(src)
    if logdir is None:
        raise InputError(
            "not a segment, a partition directory or a log directory",
            path=str(src),
            code=Code.NOT_A_LOG_DIR,
        )
    root = [
        f
        for f in logdir.files
        if layout.file_kind(f) in (layout.OFFSET_CHECKPOINT, layout.META_PROPERTIES)
    ]
    skipped = [p for p in logdir.partitions if confine and not is_within(src, p)]
    alone = {p: why for p in logdir.partitions if (why := left_alone(p)) is not None}
    parts = [plan_partition(p, opts) for p in logdir.partitions if p not in skipped + [*alone]]
    return ConversionPlan(src, LOG_DIR, opts, parts, root, skipped, alone)


def plan_partition(path: Path, opts: ConvertOptions) -> PartitionPlan:
    part = layout.scan_partition_dir(path)
    segments: list[SegmentPlan] = []
    floor = 0
    for seg in part.segments:
        if seg.log is None:
            continue  # an orphan index: the broker deletes it, nothing to convert
        plan = plan_segment(seg.log, seg.base_offset, seg.txnindex, opts, floor=floor)
        segments.append(plan)
        if plan.last_offset_in is not None:
            floor = plan.last_offset_in + 1
    carried = list(part.snapshots) + list(part.kraft_snapshots)
    carried += [p for p in (part.leader_epoch_checkpoint, part.partition_metadata) if p]
    ignored = list(part.other) + list(part.leftovers)
    return PartitionPlan(path, segments, carried, ignored)


def plan_segment(
    path: Path, base: int, txnindex: Path | None, opts: ConvertOptions, *, floor: int = 0
) -> SegmentPlan:
    """Walk a segment like the conversion will, counting losses, without encoding. Every
    batch is validated the same way whatever the target (records decoded, offsets above
    ``floor`` and the segment's base), so a copied batch is as sound as a converted one."""
    losses = Losses()
    floor = max(floor, base)
    batches = 0
    action = COPY
    last_in: int | None = None
    last_out: int | None = None
    with mapped(path) as buf:
        scanner = SegmentScanner(buf)
        try:
            for batch in scanner:
                check_batch_offsets(batch, base, floor, path)
                floor = batch.last_offset + 1
                batches += 1
                last_in = batch.last_offset
                if _is_copy(batch, opts):
                    for _ in batch.records(opts.ctx.limits.max_batch_bytes):
                        pass  # undecodable records are refused, not copied through
                    last_out = batch.last_offset
                    continue
                action = CONVERT
                kept = _account(batch, opts, losses)
                if kept:
                    last_out = batch.last_offset
        except FormatError as e:
            raise unreadable(e, path) from None
        require_readable_end(scanner, path)
        size = len(buf)
    if opts.batch_bytes is not None and batches:
        action = CONVERT  # re-batching may merge or split: always rewritten
    return SegmentPlan(
        path,
        base,
        size,
        os.stat(path).st_mtime_ns,
        batches,
        action,
        losses,
        txnindex,
        last_in,
        last_out,
    )


def _target_codec(batch: Batch, opts: ConvertOptions) -> int:
    codec = batch.compression if opts.compression is None else opts.compression
    if opts.to_magic < 2 and codec == codecs.ZSTD:
        return codecs.NONE
    return codec


def _mergeable(batch: Batch) -> bool:
    """Re-batchable: carries no producer state, is not a marker, has no delete horizon."""
    if isinstance(batch, DefaultBatch):
        return (
            batch.producer_id < 0
            and not batch.is_transactional
            and not batch.is_control
            and batch.records_count > 0
            and batch.delete_horizon_ms is None
        )
    return True


def _is_copy(batch: Batch, opts: ConvertOptions) -> bool:
    """Already in the target form: copied byte for byte."""
    if opts.batch_bytes is not None and _mergeable(batch):
        return False
    if batch.magic != opts.to_magic:
        return False
    if isinstance(batch, DefaultBatch) and (batch.is_control or batch.records_count == 0):
        return True  # markers and emptied batches are never compressed
    return opts.compression is None or batch.compression == opts.compression


def _account(batch: Batch, opts: ConvertOptions, losses: Losses) -> bool:
    """Count what converting ``batch`` loses (decoding its records, which validates them, where
    the count needs them). Returns whether any of it is written."""
    target = opts.to_magic
    if isinstance(batch, DefaultBatch) and target < 2:
        if batch.is_control:
            losses.control_batches += 1
            return False
        if batch.records_count == 0:
            losses.empty_batches += 1
            return False
        if batch.is_transactional:
            losses.transactional_batches += 1
        if batch.producer_id >= 0:
            losses.producer_batches += 1
        if batch.partition_leader_epoch >= 0:
            losses.leader_epoch_batches += 1
        if batch.delete_horizon_ms is not None:
            losses.delete_horizon_batches += 1
        if opts.compression is None and batch.compression == codecs.ZSTD:
            losses.zstd_batches += 1
    elif isinstance(batch, DefaultBatch) and (batch.is_control or batch.records_count == 0):
        return True
    # decoded whatever the target: a batch that cannot be converted is refused while planning
    if target >= 2 and isinstance(batch, DefaultBatch):
        # nothing to count per record: the native engine's check is the decoding (None: it
        # hands the batch back, and the python engine decodes it or says what is wrong)
        if engine.check_v2(batch.data, opts.ctx.limits.max_batch_bytes, f"byte {batch.position}"):
            return True
    for r in batch.records(opts.ctx.limits.max_batch_bytes):
        if target < 2 and r.headers:
            losses.headers += 1
        if target == 0 and r.timestamp != -1:
            losses.timestamps += 1
    return True


# ---------------------------------------------------------------------------------- encoding
def _plain(records: Iterable[Record]) -> Iterator[Record]:
    """Records as plain (offset, timestamp, key, value, headers): no legacy attributes. A
    generator, so a batch is re-encoded record by record (memory bounded by its size)."""
    return (Record(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records)


def _group_key(batch: Batch, opts: ConvertOptions) -> tuple[Any, ...]:
    ts_type = batch.timestamp_type
    if ts_type == NO_TIMESTAMP_TYPE or opts.to_magic == 0:
        ts_type = CREATE_TIME
    lat = batch.max_timestamp if ts_type == LOG_APPEND_TIME else None
    epoch = batch.partition_leader_epoch if opts.to_magic >= 2 else -1
    return (ts_type, lat, epoch, _target_codec(batch, opts))


def _encode_group(
    records: Iterable[Record], key: tuple[Any, ...], opts: ConvertOptions
) -> Iterator[bytes]:
    ts_type, lat, epoch, codec = key
    magic = opts.to_magic
    level = opts.compression_level if opts.compression is not None else None
    if magic >= 2:
        yield encode_batch(
            records,
            partition_leader_epoch=epoch,
            compression=codec,
            compression_level=level,
            timestamp_type=ts_type,
            max_timestamp=lat,
        )
        return
    if codec == codecs.NONE:
        for r in records:
            yield encode_message(
                r.offset,
                r.key,
                r.value,
                magic=magic,
                timestamp=lat if lat is not None else r.timestamp,
                timestamp_type=ts_type,
            )
        return
    yield encode_wrapper(
        records,
        magic=magic,
        compression=codec,
        timestamp_type=ts_type,
        log_append_time=lat,
        compression_level=level,
    )


def _record_estimate(r: Record, magic: int) -> int:
    n = len(r.key or b"") + len(r.value or b"")
    if magic >= 2:
        return n + 12 + sum(len(k) + len(v or b"") + 4 for k, v in r.headers)
    return n + 12 + (14 if magic == 0 else 22)


class _Rebatcher:
    """Accumulates records of mergeable batches into output batches of ~batch_bytes."""

    def __init__(self, opts: ConvertOptions):
        self.opts = opts
        self.key: tuple[Any, ...] | None = None
        self.records: list[Record] = []
        self.size = 0

    def add(self, batch: Batch) -> Iterator[bytes]:
        key = _group_key(batch, self.opts)
        limit = self.opts.batch_bytes or 0
        overhead = 61 if self.opts.to_magic >= 2 else 34
        for r in _plain(batch.records(self.opts.ctx.limits.max_batch_bytes)):
            est = _record_estimate(r, self.opts.to_magic)
            if self.records and (
                key != self.key
                or self.size + est > limit
                or r.offset - self.records[0].offset > INT32_MAX
            ):
                yield from self.flush()
            if not self.records:
                self.key = key
                self.size = overhead
            self.records.append(r)
            self.size += est

    def flush(self) -> Iterator[bytes]:
        if self.records and self.key is not None:
            yield from _encode_group(self.records, self.key, self.opts)
        self.records = []
        self.key = None
        self.size = 0


def convert_batch(batch: Batch, opts: ConvertOptions) -> Iterator[bytes]:
    """The output of one input batch (keep-batching mode)."""
    if _is_copy(batch, opts):
        yield bytes(batch.data)
        return
    target = opts.to_magic
    if isinstance(batch, DefaultBatch):
        if batch.is_control or batch.records_count == 0:
            if target < 2:
                return  # dropped (counted by the plan)
            yield bytes(batch.data)
            return
        if target >= 2:
            level = opts.compression_level if opts.compression is not None else None
            yield reencode(
                batch,
                max_batch_bytes=opts.ctx.limits.max_batch_bytes,
                compression=_target_codec(batch, opts),
                compression_level=level,
            )
            return
    records = _plain(batch.records(opts.ctx.limits.max_batch_bytes))
    try:
        yield from _encode_group(records, _group_key(batch, opts), opts)
    except UnencodableError as e:
        raise e.at(batch.position) from None


def convert_segment(buf: memoryview, opts: ConvertOptions, path: Path) -> Iterator[bytes]:
    """Every output batch of one segment, in order (the plan validated the input)."""
    scanner = SegmentScanner(buf)
    rebatch = _Rebatcher(opts) if opts.batch_bytes is not None else None
    try:
        for batch in scanner:
            if rebatch is not None:
                if _mergeable(batch):
                    yield from rebatch.add(batch)
                    continue
                yield from rebatch.flush()
            yield from convert_batch(batch, opts)
        if rebatch is not None:
            yield from rebatch.flush()
    except FormatError as e:
        raise unreadable(e, path) from None
    require_readable_end(scanner, path)


# ---------------------------------------------------------------------------------- writing
@dataclass
class ConversionResult:
    segments_written: int = 0
    segments_unchanged: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    batches_out: int = 0
    indexes_rebuilt: int = 0  # missing indexes of unchanged segments, written in place
    files_carried: int = 0
    destination: Path | None = None


class _Counter:
    """Counts the bytes and batches of a stream of output batches."""

    def __init__(self, chunks: Iterator[bytes]):
        self.chunks = chunks
        self.bytes = 0
        self.batches = 0

    def __iter__(self) -> Iterator[bytes]:
        for c in self.chunks:
            self.bytes += len(c)
            self.batches += 1
            yield c


def _write_segment_files(
    ops: FileOps, out_dir: Path, seg: SegmentPlan, opts: ConvertOptions, suffix: str
) -> tuple[list[Path], _Counter]:
    """Write one converted segment into ``out_dir`` with ``suffix`` appended to every name
    (``.cleaned`` in place, nothing for a new directory): log, mtime, then its indexes."""
    base = seg.base_offset
    log_path = out_dir / (layout.segment_name(base, ".log") + suffix)
    written: list[Path] = []
    with mapped(seg.source) as buf:
        counter = _Counter(convert_segment(buf, opts, seg.source))
        ops.write(log_path, counter)
    written.append(log_path)
    ops.set_mtime(log_path, seg.mtime_ns)
    for path in _write_indexes(ops, log_path, base, opts.index_interval_bytes, suffix):
        written.append(path)
    if seg.txnindex is not None and opts.to_magic >= 2:
        data = seg.txnindex.read_bytes()
        if data:
            p = out_dir / (layout.segment_name(base, ".txnindex") + suffix)
            ops.write(p, [data])
            written.append(p)
    return written, counter


def _write_indexes(
    ops: FileOps, log_path: Path, base: int, interval: int, suffix: str
) -> list[Path]:
    if ops.dry_run:
        return []
    with mapped(log_path) as buf:
        built = build_indexes(buf, base, index_interval_bytes=interval)
    out = []
    for ext, data in (
        (".index", encode_offset_index(built.offsets, base)),
        (".timeindex", encode_time_index(built.times, base)),
    ):
        p = log_path.with_name(layout.segment_name(base, ext) + suffix)
        if p.exists() or p.is_symlink():
            ops.unlink(p)  # a stale file from an interrupted run
        ops.write(p, [data])
        out.append(p)
    return out


def execute_conversion(
    ops: FileOps, plan: ConversionPlan, *, dest: Path | None
) -> ConversionResult:
    """Write ``plan``: into the new directory ``dest``, or in place (``dest`` None)."""
    if dest is None:
        return _in_place(ops, plan)
    return _to_dest(ops, plan, dest)


def _in_place(ops: FileOps, plan: ConversionPlan) -> ConversionResult:
    res = ConversionResult()
    opts = plan.options
    for part in plan.partitions:
        written: list[Path] = []
        old_bases: list[int] = []
        try:
            for seg in part.segments:
                res.bytes_in += seg.size
                if seg.action == COPY:
                    res.segments_unchanged += 1
                    res.bytes_out += seg.size
                    res.indexes_rebuilt += _ensure_indexes(ops, seg, part, opts)
                    continue
                base = seg.base_offset
                written.append(part.source / (layout.segment_name(base, ".log") + CLEANED))
                files, counter = _write_segment_files(ops, part.source, seg, opts, CLEANED)
                seg.size_out, seg.batches_out = counter.bytes, counter.batches
                res.bytes_out += counter.bytes
                res.batches_out += counter.batches
                res.segments_written += 1
                written += files[1:]
                old_bases.append(base)
        except (InputError, FormatError):
            for p in written:  # a record the plan did not decode is bad: nothing is swapped in
                if p.exists():
                    ops.unlink(p)
            raise
        if written:
            swap_in_cleaned(ops, part.source, written, old_bases)
    return res


def _ensure_indexes(
    ops: FileOps, seg: SegmentPlan, part: PartitionPlan, opts: ConvertOptions
) -> int:
    """An unchanged segment keeps its indexes. Missing ones (the loader deletes the indexes of
    a segment whose interrupted swap it completes) are rebuilt as the broker's recovery of
    such a segment does: offset and time index, and the .txnindex from the log."""
    base = seg.base_offset
    d = seg.source.parent
    missing = [
        ext for ext in (".index", ".timeindex") if not (d / layout.segment_name(base, ext)).exists()
    ]
    if not missing:
        return 0
    with mapped(seg.source) as buf:
        built = build_indexes(buf, base, index_interval_bytes=opts.index_interval_bytes)
    data = {
        ".index": encode_offset_index(built.offsets, base),
        ".timeindex": encode_time_index(built.times, base),
    }
    if ".index" in missing and opts.to_magic >= 2:
        txns = replay_aborted_txns(
            [(s.base_offset, s.source) for s in part.segments], opts.ctx.limits
        )[base]
        txn_path = d / layout.segment_name(base, ".txnindex")
        if txns:
            missing.append(".txnindex")
            data[".txnindex"] = encode_txn_index(txns)
        elif txn_path.exists():
            ops.unlink(txn_path)
    for ext in missing:
        ops.replace_file(d / layout.segment_name(base, ext), [data[ext]])
    return len(missing)


PARTIAL_TEXT = b"klogtool convert-format output being written\n"


def partial_dir(dest: Path) -> Path:
    return dest.with_name(f".{dest.name}{PARTIAL_MARK}")


def partial_state(dest: Path) -> str:
    """``"none"``, ``"ours"`` (a partial output directory an interrupted run of klogtool left:
    a plain directory holding klogtool's marker, a plain file with klogtool's text), or
    ``"foreign"`` (anything else with that name, a link above all: never followed, never
    removed). Only checks that follow no link (lstat, O_NOFOLLOW) decide."""
    tmp = partial_dir(dest)
    if not os.path.lexists(tmp):
        return "none"
    if not stat.S_ISDIR(os.lstat(tmp).st_mode):
        return "foreign"
    mark = tmp / PARTIAL_MARK
    try:
        st = os.lstat(mark)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(PARTIAL_TEXT):
            return "foreign"
        if b"".join(read_range(mark, 0, st.st_size)) != PARTIAL_TEXT:
            return "foreign"
    except (OSError, RefusedError):
        return "foreign"
    return "ours"


def refuse_foreign_partial(dest: Path) -> None:
    if partial_state(dest) == "foreign":
        raise RefusedError(
            "something that klogtool did not write has the name klogtool uses for partial "
            "output (a link, or a directory without its marker): not touching it",
            path=str(partial_dir(dest)),
            code=Code.DESTINATION_NOT_EMPTY,
        )


def _to_dest(ops: FileOps, plan: ConversionPlan, dest: Path) -> ConversionResult:
    """Build everything in a hidden sibling of ``dest``, then rename it into place: a crash
    leaves no half-converted ``dest`` (the next run removes the partial directory)."""
    res = ConversionResult(destination=dest)
    tmp = partial_dir(dest)
    refuse_foreign_partial(dest)
    if partial_state(dest) == "ours":
        _remove_partial(ops, tmp)  # a stale one of an interrupted run
    ops.mkdir(tmp)
    ops.write(tmp / PARTIAL_MARK, [PARTIAL_TEXT])
    try:
        _fill_dest(ops, plan, tmp, res)
    except BaseException:
        # a bad record, a full disk, Ctrl-C: no output at all, nothing half-written left
        _remove_partial(ops, tmp)
        raise
    ops.unlink(tmp / PARTIAL_MARK)
    ops.fsync_dir(tmp)
    if dest.is_dir() and not dest.is_symlink():
        ops_rmdir(ops, dest)  # empty: checked by the caller
    ops.rename(tmp, dest)
    ops.fsync_dir(dest.parent)
    return res


def _fill_dest(ops: FileOps, plan: ConversionPlan, tmp: Path, res: ConversionResult) -> None:
    opts = plan.options
    for f in plan.root_files:
        ops.copy_range(f, 0, f.stat().st_size, tmp / f.name)
        res.files_carried += 1
    for part in plan.partitions:
        out_dir = tmp if plan.kind != LOG_DIR else tmp / part.source.name
        if out_dir != tmp:
            ops.mkdir(out_dir)
        for seg in part.segments:
            res.bytes_in += seg.size
            _files, counter = _write_segment_files(ops, out_dir, seg, opts, "")
            seg.size_out, seg.batches_out = counter.bytes, counter.batches
            res.bytes_out += counter.bytes
            res.batches_out += counter.batches
            res.segments_written += 1
        for f in part.carried:
            ops.copy_range(f, 0, f.stat().st_size, out_dir / f.name)
            res.files_carried += 1
        ops.fsync_dir(out_dir)


def ops_rmdir(ops: FileOps, path: Path) -> None:
    if ops.dry_run:
        ops.log.append(f"rmdir {path}")
        return
    os.rmdir(path)


def _remove_partial(ops: FileOps, tmp: Path) -> None:
    """Remove our partial output directory without following any link, its marker last (a
    removal cut short leaves a directory the next run still recognises as its own)."""
    if ops.dry_run:
        ops.remove_tree(tmp)
        return
    for child in sorted(tmp.iterdir()):
        if child.name == PARTIAL_MARK:
            continue
        if child.is_dir() and not child.is_symlink():
            ops.remove_tree(child)
        else:
            ops.unlink(child)  # a link is removed as a link
    ops.unlink(tmp / PARTIAL_MARK)
    ops.rmdir(tmp)


# -------------------------------------------------------------------------------- the command
class NestedDestination(ValueError):
    """DEST inside SRC's partition, or SRC inside DEST: a mistake in the command line."""


@dataclass(frozen=True)
class LossyRefusal:
    """The conversion would lose ``losses`` (:meth:`Losses.as_dict`) and was not allowed to:
    :func:`convert` yields this, then raises the :class:`RefusedError`."""

    losses: dict[str, int]

    def as_obj(self) -> events.ConvertFormatRefused:
        """The ``refused`` object."""
        return {"type": "refused", "reason": "lossy", "losses": self.losses}


@dataclass(frozen=True)
class Converted:
    """What :func:`convert` did: the plan, and its result (None in a dry run)."""

    plan: ConversionPlan
    result: ConversionResult | None

    def as_obj(self, dry_run: bool) -> events.ConvertFormatSummary:
        """The ``summary`` object: what was written only when something was (not with --dry-run),
        the destination only when there is one (not with --in-place)."""
        plan, result = self.plan, self.result
        losses = plan.losses.as_dict()
        segs = plan.segments
        partitions, segments = len(plan.partitions), len(segs)
        unchanged, bytes_in = sum(1 for s in segs if s.action == COPY), sum(s.size for s in segs)
        written: events.ConvertFormatWritten = {}
        if result is not None:
            written = {
                "segments_written": result.segments_written,
                "bytes_out": result.bytes_out,
                "batches_out": result.batches_out,
                "indexes_rebuilt": result.indexes_rebuilt,
                "files_carried": result.files_carried,
            }
            if result.destination is not None:
                written["destination"] = str(result.destination)
        return {
            "type": "summary",
            "dry_run": dry_run,
            "partitions": partitions,
            "segments": segments,
            "segments_unchanged": unchanged,
            "bytes_in": bytes_in,
            **written,
            "losses": losses,
        }


def check_destination(src: Path, dest: Path) -> None:
    """Refuse a DEST that is a link, a non-empty directory, something klogtool did not write
    under its partial name, or whose parent does not exist; :class:`NestedDestination` when
    one of SRC and DEST holds the other."""
    if dest.is_symlink():
        raise RefusedError(
            "the destination is a symlink (never written through)",
            path=str(dest),
            code=Code.DESTINATION_SYMLINK,
        )
    if dest.exists():
        if not dest.is_dir():
            raise RefusedError(
                "the destination exists and is not a directory",
                path=str(dest),
                code=Code.DESTINATION_NOT_EMPTY,
            )
        if any(dest.iterdir()):
            raise RefusedError(
                "the destination is not empty", path=str(dest), code=Code.DESTINATION_NOT_EMPTY
            )
    # a segment file's partition counts as SRC: DEST inside it would be a directory among
    # the partition's own files
    source = src.parent if src.is_file() else src
    if src.exists() and (is_within(source, dest) or is_within(dest, source)):
        raise NestedDestination("DEST must not be inside SRC's partition (or SRC inside DEST)")
    if not dest.parent.is_dir():  # an input that is not there (exit 3), as a missing SRC is
        raise InputError(
            "the directory that would hold DEST does not exist",
            path=str(dest.parent),
            code=Code.DESTINATION_PARENT_MISSING,
            hint="create it first (klogtool never creates a log directory itself)",
        )
    refuse_foreign_partial(dest)  # a link or a directory klogtool did not write: exit 4


def convert(
    src: Path,
    dest: Path | None,
    opts: ConvertOptions,
    *,
    allow_lossy: bool = False,
    force: bool = False,
    dry_run: bool = False,
) -> Iterator[Notice | ConversionPlan | LossyRefusal | Converted]:
    """convert-format: ``src`` (a segment, partition dir or log dir) into the new directory
    ``dest``, or in place (``dest`` None). Yields, in order: notices, the plan, then either a
    :class:`LossyRefusal` (and raises :class:`RefusedError`) or :class:`Converted`, and after
    a real run the notices of what the conversion dropped. A dry run writes nothing but
    converts in memory, so it foresees what the real run would refuse."""
    in_place = dest is None
    if dest is not None:
        check_destination(src, dest)
    partitions = [t.path for t in resolve([str(src)], files=(layout.LOG,)).partitions]
    with writing_session(
        partitions if in_place else [],
        force=force,
        dry_run=dry_run,
        read_only=[] if in_place else [src],
        # the log dir DEST is written into: a running broker there must not see it half-made
        log_dirs=[] if dest is None else [dest.parent],
    ) as session:
        yield from completed_notices(session, dry_run)
        if not in_place:
            for p in partitions:
                if any(c.name.endswith((".cleaned", ".swap")) for c in p.iterdir()):
                    yield Notice(
                        f"{p}: holds an interrupted swap (.cleaned/.swap files) that the "
                        f"broker would complete first; converting the segments as they are"
                    )
        plan = plan_conversion(src, opts, confine=in_place)
        for p in plan.skipped:
            yield Notice(
                f"{p}: skipped: a symlink out of {src} (never written through)", skipped=True
            )
        for p, why in plan.left_alone.items():
            yield Notice(f"{p}: skipped ({why}); name it to convert it")
        yield plan
        lossy = plan.losses.lossy()
        if lossy and not allow_lossy:
            yield LossyRefusal(plan.losses.as_dict())
            raise RefusedError(
                f"converting to magic {opts.to_magic} would lose data: {describe_losses(lossy)}",
                path=str(src),
                code=Code.LOSSY_CONVERSION,
                hint="--allow-lossy converts anyway and reports what was dropped",
            )
        result = execute_conversion(session.ops, plan, dest=dest)
        yield Converted(plan, None if dry_run else result)
    if not dry_run:
        yield from _dropped_notices(plan)


def _dropped_notices(plan: ConversionPlan) -> Iterator[Notice]:
    for part in plan.partitions:
        last = part.segments[-1] if part.segments else None
        if last is not None and last.last_offset_in is not None:
            was = last.last_offset_in + 1
            now = last.last_offset_out + 1 if last.last_offset_out is not None else None
            if now != was:
                yield Notice(
                    f"{part.source}: the log end offset moves back from {was} to "
                    f"{now if now is not None else 'the last segment base'}: its last batches "
                    f"were dropped (the broker caps the high watermark there and deletes "
                    f"producer snapshots beyond it)"
                )
    dropped = plan.losses.lossy() | plan.losses.informational()
    if dropped:
        yield Notice(f"dropped in the conversion: {describe_losses(dropped, done=True)}")

"""``find`` as a library: records across segments, partitions and log dirs (the offline kcat).

Records are selected by time (``from_time``/``to_time``), offset range, key (exact or regex),
value regex, headers, producer id, transactional state and control-ness, and come out as the
record objects ``dump-segments`` prints (:func:`klogtool.log.read.dumper.record_object`) with
``topic``, ``partition`` and ``segment`` added.

How the records are reached:

* Time: the broker's ``offsetsForTimes`` (``UnifiedLog.fetchOffsetByTimestamp``,
  ``LogSegment.findOffsetByTimestamp``): a segment whose largest timestamp (the last
  ``.timeindex`` entry) is below ``from_time`` holds no such record and is skipped; within a
  segment the time index gives the largest entry whose timestamp is at most ``from_time``, the
  offset index the position of the batch holding that entry's offset, and the walk starts
  there. Where an index is missing, fails the broker's sanity check, does not increase, or
  points at something that is not a batch of the right offsets, the segment is scanned from its
  start instead, and a warning finding says so. The last segment of a partition is never
  skipped on its index alone (an active segment's final entry is written only on roll).
* Offsets: segments entirely outside the range are skipped by their base offsets, and the offset
  index gives the start position (the broker's fetch rule).
* Batch headers decide offset range, producer id, control-ness and transactional state without
  decoding a record; a batch whose max timestamp is below ``from_time`` is skipped the same way.
* Transactional states (``committed``/``aborted``/``open``, ``none`` for records outside any
  transaction) come from a header pass over the partition first, through
  :func:`klogtool.log.txnstates.transaction_states` (only when that filter is used).

Memory stays flat: segments are mmapped and released behind the walk; ``newest_first`` keeps
only the positions of the candidate batches of one segment and reads them again backwards.
With ``jobs > 1`` partitions are searched by a process pool; each worker spools its matches
to a temporary file that the caller streams in partition order, so the output is the same as
with one process.
"""

from __future__ import annotations

import heapq
import os
import pickle
import tempfile
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypeAlias, TypedDict

from klogtool import events
from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import engine
from klogtool.formats.batch import HEADER_SIZE_UP_TO_MAGIC, Batch, Record
from klogtool.formats.errors import FormatError
from klogtool.formats.records import (
    CLEAN,
    CORRUPT,
    TORN_TAIL,
    ZERO_FILL,
    SegmentScanner,
    not_a_log,
    read_batch,
    sniff_magic,
)
from klogtool.formats.v2 import DefaultBatch
from klogtool.log import layout, storage
from klogtool.log.files import InputFile, detect_kind, partition_dirs_of
from klogtool.log.findings import Finding
from klogtool.log.objects import batch_object
from klogtool.log.pool import fork_context, processes, worker_deaths
from klogtool.log.read.dumper import (
    DumpOptions,
    internal_decoder,
    record_object,
    refused_payloads,
)
from klogtool.log.record_filter import (
    MAX_OFFSET,
    RecordFilter,
    past,
    record_size,
)
from klogtool.log.seek import Index, load_index
from klogtool.log.segment import fetcher, mapped, need, need_entry
from klogtool.log.txnstates import TransactionStates, transaction_states


class FindFile(TypedDict):
    """Opens the matches of a segment (for the text renderers: find writes only records)."""

    type: Literal["file"]
    path: str
    kind: str
    size: int
    base_offset: int
    topic: str | None
    partition: int | None


class FindFinding(events.FindingObject):
    """A finding, with the partition it was found in (written on stderr)."""

    topic: str | None
    partition: int | None


class FindSummary(TypedDict):
    """The last object: the counts (the command prints them on stderr)."""

    type: Literal["summary"]
    partitions: int
    segments: int
    segments_skipped: int
    segments_scanned: int
    batches: int
    batches_decoded: int
    records: int
    matches: int
    bytes: int
    errors: int
    warnings: int


# What Finder yields: the records find writes (events.FindRecord, its one registered object),
# and what its renderers read around them (the batch object is dump-segments').
FindObject: TypeAlias = (
    events.FindRecord | FindFile | events.DumpSegmentsBatch | FindFinding | FindSummary
)


class _Transaction(TypedDict):
    transaction: NotRequired[str]


# Unpacked into a record object without --transaction: mypy checks a TypedDict display with
# ** items only when every key it may lack comes from one of them (an empty dict: no cost).
_NO_TRANSACTION: _Transaction = {}

PROGRESS_STEP = 4 << 20  # bytes between progress updates inside one segment


if TYPE_CHECKING:
    from klogtool.log.remote_layouts import TieredReads


@dataclass(frozen=True)
class FindOptions:
    """What to find (``where``) and how to walk and show it."""

    where: RecordFilter = RecordFilter()
    newest_first: bool = False
    limit: int | None = None
    use_indexes: bool = True  # False: scan every batch header (no seeks)
    # how records are shown, and the read's context (dump.ctx)
    dump: DumpOptions = field(kw_only=True)
    # the N largest matches only (record_size), largest first, instead of every match
    largest: int | None = None
    # the partitions read side by side, their matches merged by timestamp (not by --jobs)
    merge: bool = False


@dataclass(frozen=True)
class Target:
    """One partition (or the segments named on the command line of one partition)."""

    display: str
    topic: str | None
    partition: int | None
    segments: tuple[layout.SegmentFiles, ...]
    seg_displays: tuple[str, ...]
    size: int  # bytes of its .log files
    whole: bool = True  # every segment of the partition (its last one may be active)
    directory: Path | None = None  # the partition dir of a whole one
    notes: tuple[str, ...] = ()  # of its remote tier: what could not be read


@dataclass
class Counts:
    partitions: int = 0
    segments: int = 0
    segments_skipped: int = 0  # by their index or base offsets
    segments_scanned: int = 0  # from their start, with no usable index
    batches: int = 0  # headers read
    batches_decoded: int = 0
    records: int = 0  # decoded
    matches: int = 0
    bytes: int = 0
    errors: int = 0
    warnings: int = 0

    def add(self, other: Counts) -> None:
        for k, v in vars(other).items():
            setattr(self, k, getattr(self, k) + v)

    def as_obj(self) -> FindSummary:
        return {
            "type": "summary",
            "partitions": self.partitions,
            "segments": self.segments,
            "segments_skipped": self.segments_skipped,
            "segments_scanned": self.segments_scanned,
            "batches": self.batches,
            "batches_decoded": self.batches_decoded,
            "records": self.records,
            "matches": self.matches,
            "bytes": self.bytes,
            "errors": self.errors,
            "warnings": self.warnings,
        }


# -- PATH arguments -----------------------------------------------------------------------------
def resolve_targets(paths: list[str], remote: TieredReads | None = None) -> list[Target]:
    """The partitions PATHs stand for: ``.log`` files, partition dirs and log dirs, in order.
    Raises :class:`InputError` (exit 3) for what is missing or not Kafka's. With ``remote``,
    a tiered partition dir's remote segments come before its local ones (one log)."""
    out: list[Target] = []
    for arg in paths:
        path = storage.path_of(arg)
        if not path.exists():
            raise InputError("no such file or directory", path=arg, code=Code.NOT_FOUND)
        if path.is_dir():
            out += [_dir_target(p, display, remote) for p, display in partition_dirs_of(path, arg)]
            continue
        kind = detect_kind(path)
        if kind not in (layout.LOG, layout.INDEX, layout.TIMEINDEX, layout.TXNINDEX):
            raise InputError(
                f"not a segment ({kind}): find reads .log files, partition directories and "
                "log directories",
                path=arg,
                code=Code.NOT_A_LOG,
            )
        seg = layout.segment_files(path, kind)
        log = seg.log
        if log is None:
            raise InputError("no .log beside this index", path=arg, code=Code.NOT_FOUND)
        parsed = layout.parse_partition_dir_name(log.resolve().parent.name)
        display = arg if kind == layout.LOG else str(storage.as_path(arg).with_name(log.name))
        out.append(
            Target(
                display,
                parsed[0] if parsed else None,
                parsed[1] if parsed else None,
                (seg,),
                (display,),
                log.stat().st_size,
                whole=False,
            )
        )
    return out


def _dir_target(path: Path, display: str, remote: TieredReads | None = None) -> Target:
    part = layout.scan_partition_dir(path)
    segs = tuple(s for s in part.segments if s.log is not None)
    local_start = segs[0].base_offset if segs else MAX_OFFSET
    before = remote.before(path, part.topic, part.partition, local_start) if remote else None
    return Target(
        display,
        part.topic,
        part.partition,
        (*(before.segments if before else ()), *segs),
        (
            *(before.shown if before else ()),
            *(storage.child(display, s.log.name) for s in segs if s.log is not None),
        ),
        (before.size if before else 0) + sum(s.log.stat().st_size for s in segs if s.log),
        directory=path,
        notes=tuple(before.notes) if before else (),
    )


def _magic(buf: memoryview) -> int | None:
    """The magic of a segment's first entry (fetched first, for a remote segment)."""
    need(buf, 0, HEADER_SIZE_UP_TO_MAGIC)
    return sniff_magic(buf)


# -- the search ---------------------------------------------------------------------------------
class _Stop(Exception):
    """The limit is reached, or the caller asked to stop."""


@dataclass
class _Segment:
    """One segment being searched: what is emitted lazily before its first match."""

    target: Target
    files: layout.SegmentFiles
    display: str
    decoder: str | None
    head_sent: bool = False
    past_range: bool = False  # a batch beyond the offset range was reached
    findings: list[FindFinding] = field(default_factory=list)

    def add(self, f: Finding) -> None:
        self.findings.append(
            {**f.as_obj(), "topic": self.target.topic, "partition": self.target.partition}
        )


class Finder:
    """Search targets; :meth:`objects` yields ``file`` and ``batch`` objects (before the first
    match in each), ``record`` objects, ``finding`` objects, and a closing ``summary``."""

    def __init__(
        self,
        options: FindOptions,
        *,
        should_stop: Callable[[], bool] | None = None,
    ):
        self.opts = options
        self.progress = options.dump.ctx.progress.advance
        self.should_stop = should_stop or (lambda: False)
        self.counts = Counts()
        self.remaining = options.limit
        self.where = options.where
        self._txns: TransactionStates | None = None
        self._records_reported = 0
        self._matcher: tuple[object, engine.FindMatcher | None] | None = None

    # -- entry points ---------------------------------------------------------------------------
    def objects(self, paths: list[str], *, jobs: int = 1) -> Iterator[FindObject]:
        """Everything PATHs hold that matches (see :func:`resolve_targets`)."""
        return self.run(resolve_targets(paths), jobs=jobs)

    def run(self, targets: list[Target], *, jobs: int = 1) -> Iterator[FindObject]:
        """The objects of ``targets``, in their order, then a ``summary``; with ``jobs > 1``
        partitions are searched in worker processes."""
        if self.opts.merge and len(targets) > 1:
            found = self._merged(targets)
        elif jobs > 1 and len(targets) > 1:
            found = self._parallel(targets, jobs)
        else:
            found = self._in_order(targets)
        if self.opts.largest is not None:
            found = self._largest(found, self.opts.largest)
        yield from found
        yield self.counts.as_obj()

    def _in_order(self, targets: list[Target]) -> Iterator[FindObject]:
        for t in targets:
            try:
                yield from self.search(t)
            except _Stop:
                break

    def search(self, target: Target) -> Iterator[FindObject]:
        """One partition's objects (raises :class:`_Stop` when the limit is reached)."""
        self.counts.partitions += 1
        opts = self.opts
        limits = opts.dump.ctx.limits
        self._txns = (
            transaction_states(target.segments, limits) if self.where.transactions else None
        )
        order = range(len(target.segments))
        for i in reversed(order) if opts.newest_first else order:
            files = target.segments[i]
            nxt = target.segments[i + 1].base_offset if i + 1 < len(target.segments) else None
            last = target.whole and nxt is None
            assert files.log is not None
            fake = InputFile(files.log, layout.LOG, target.seg_displays[i])
            decoder = internal_decoder(opts.dump.decoder, fake)
            seg = _Segment(target, files, target.seg_displays[i], decoder)
            self.counts.segments += 1
            stopped = False
            try:
                yield from self._segment(seg, nxt, last)
            except _Stop:
                stopped = True
            for f in seg.findings:
                self._count_finding(f)
            yield from seg.findings
            if stopped:
                raise _Stop()
            if seg.past_range and not opts.newest_first:
                return  # offsets only increase: nothing further is in the range

    # -- one segment ----------------------------------------------------------------------------
    def _segment(self, seg: _Segment, next_base: int | None, last: bool) -> Iterator[FindObject]:
        opts = self.opts
        base = seg.files.base_offset
        assert seg.files.log is not None
        if self.where.offsets is not None:
            lo, hi = self.where.offsets
            if base > hi or (next_base is not None and next_base <= lo):
                self.counts.segments_skipped += 1
                self._advance(seg.files.log.stat().st_size)
                return
        # a remote segment: only the chunks this walk reads are fetched
        with mapped(seg.files.log, lazy=True) as buf:
            self.counts.bytes += len(buf)
            start = self._start_position(seg, buf, next_base, last)
            if start is None:
                self.counts.segments_skipped += 1
                self._advance(len(buf))
                return
            self._advance(start)
            if opts.newest_first:
                yield from self._backwards(seg, buf, start)
            else:
                yield from self._forwards(seg, buf, start)

    def _start_position(
        self, seg: _Segment, buf: memoryview, next_base: int | None, last: bool
    ) -> int | None:
        """Where the walk over the segment starts, or None to skip it."""
        opts, where = self.opts, self.where
        if not opts.use_indexes or not len(buf):
            return 0 if len(buf) else None
        base = seg.files.base_offset
        start = 0
        offset_index: Index | str | None = None
        if where.from_time is not None:
            times = load_index(seg.files.timeindex, base, time=True)
            if isinstance(times, Index) and times.n == 0 and _magic(buf) != 0:
                times = "the .timeindex is empty"
            if isinstance(times, str):
                if _magic(buf) != 0:  # v0 data has no timestamps: nothing to seek by
                    self._scan_warning(seg, Code.TIMEINDEX_UNUSABLE, times)
                return 0
            if times.n:
                last_ts, last_rel = times.key(times.n - 1), times.value(times.n - 1)
                if next_base is not None and base + last_rel >= next_base:
                    self._scan_warning(
                        seg,
                        Code.TIMEINDEX_UNUSABLE,
                        f"the .timeindex's last offset {base + last_rel} is in the next segment",
                    )
                    return 0
                if last_ts < where.from_time and not last and not times.untrimmed:
                    return None  # the segment's largest timestamp is below from_time
                i = times.floor(where.from_time)
                if i >= 0:
                    target_offset = base + times.value(i)
                    offset_index = load_index(seg.files.index, base, time=False)
                    found = self._offset_position(seg, buf, offset_index, target_offset)
                    if found is None:
                        return 0
                    start = found
        if where.offsets is not None and where.offsets[0] > base:
            if offset_index is None:
                offset_index = load_index(seg.files.index, base, time=False)
            found = self._offset_position(seg, buf, offset_index, where.offsets[0])
            if found is None:
                return 0
            start = max(start, found)
        return start

    def _offset_position(
        self, seg: _Segment, buf: memoryview, idx: Index | str, offset: int
    ) -> int | None:
        """The offset index's position for ``offset``, checked against the log; None (and a
        warning) when the index cannot be used."""
        if isinstance(idx, str):
            self._scan_warning(seg, Code.INDEX_UNUSABLE, idx)
            return None
        base = seg.files.base_offset
        i = idx.floor(offset - base)
        if i < 0:
            return 0
        pos = idx.value(i)
        try:
            need_entry(buf, pos)
            batch = read_batch(buf, pos)
            first = batch.header_offset
        except FormatError as e:
            self._scan_warning(
                seg, Code.INDEX_UNUSABLE, f"the .index points at byte {pos}, not at a batch ({e})"
            )
            return None
        if not base <= first <= offset:
            self._scan_warning(
                seg,
                Code.INDEX_UNUSABLE,
                f"the .index entry for offset {base + idx.key(i)} points at a batch starting at "
                f"offset {first}",
            )
            return None
        return pos

    def _scan_warning(self, seg: _Segment, code: str, why: str) -> None:
        self.counts.segments_scanned += 1
        seg.add(
            Finding(
                "warning",
                code,
                seg.display,
                None,
                None,
                f"{why}: the segment is scanned from its start instead",
            )
        )

    # -- walks ------------------------------------------------------------------------------------
    def _candidates(self, seg: _Segment, buf: memoryview, start: int) -> Iterator[Batch]:
        """The batches from ``start`` that pass the header filters (raises _Stop past the
        offset range); findings for how the walk ended go to ``seg.findings``."""
        where = self.where
        hi = where.offsets[1] if where.offsets else MAX_OFFSET
        scanner = SegmentScanner(
            buf[start:],
            check_crc=False,
            stop_on_crc=False,
            base_position=start,
            need=fetcher(buf),
        )
        reported = start
        for batch in scanner:
            pos = batch.position
            if pos - reported >= PROGRESS_STEP:
                self._advance(pos - reported)
                reported = pos
                if self.should_stop():
                    raise _Stop()
            self.counts.batches += 1
            if past(batch, hi):
                seg.past_range = True  # offsets increase within a segment: nothing further
                break
            if where.skips_batch(batch):
                continue
            if self._txns is not None and self._txns.state(batch) not in where.transactions:
                continue
            yield batch
        self._advance(len(buf) - reported)
        result = scanner.result
        if result is not None and result.end not in (CLEAN, ZERO_FILL):
            why = not_a_log(result) if start == 0 else None
            invalid = result.size - result.stopped_at
            code: str
            if why:
                code = Code.NOT_A_LOG
            elif result.end == TORN_TAIL:
                code = TORN_TAIL
            else:
                code = result.error.code if result.error else CORRUPT
            message = (
                f"not a Kafka log segment: {why}"
                if why
                else f"the last {invalid} bytes cannot be read ({result.error or result.end}): "
                "records there are not searched"
            )
            seg.add(
                Finding(
                    "warning" if result.end == TORN_TAIL else "error",
                    code,
                    seg.display,
                    result.stopped_at,
                    None,
                    message,
                )
            )

    def _forwards(self, seg: _Segment, buf: memoryview, start: int) -> Iterator[FindObject]:
        for batch in self._candidates(seg, buf, start):
            yield from self._batch(seg, batch)

    def _backwards(self, seg: _Segment, buf: memoryview, start: int) -> Iterator[FindObject]:
        """Candidate positions first (headers only), then their records, newest first."""
        positions = array("q")
        for batch in self._candidates(seg, buf, start):
            positions.append(batch.position)
        for pos in reversed(positions):
            batch = read_batch(buf, pos)
            yield from self._batch(seg, batch, reverse=True)

    def _batch(self, seg: _Segment, batch: Batch, reverse: bool = False) -> Iterator[FindObject]:
        """The matching records of one candidate batch (newest first with ``reverse``)."""
        self.counts.batches_decoded += 1
        matched: list[events.FindRecord] = []
        first = True
        try:
            for rec in self._matching(batch):
                obj = self._record_obj(seg, batch, rec)
                if reverse:
                    matched.append(obj)
                    continue
                if first:
                    yield from self._heads(seg, batch)
                    first = False
                yield from self._emit(obj)
        except FormatError as e:
            seg.add(
                Finding(
                    "error",
                    e.code,
                    seg.display,
                    e.position,
                    batch.header_offset,
                    f"cannot decode the records of this batch: {e}",
                )
            )
        if reverse and matched:
            yield from self._heads(seg, batch)
            for obj in reversed(matched):
                yield from self._emit(obj)

    def _matching(self, batch: Batch) -> Iterator[Record]:
        """The records of ``batch`` that match, each counted (with the records before it) as it
        is reached. Under the native engine the record-level filters of a v2 batch are decided
        in Rust and only the matching records are made (``engine.find_matcher``); a batch it
        hands back, a v0/v1 batch and a regex filter go through :meth:`RecordFilter.matches`."""
        max_batch_bytes = self.opts.dump.ctx.limits.max_batch_bytes
        where = self.where
        if not where.record_level:
            for rec in batch.records(max_batch_bytes):
                self.counts.records += 1
                self._records_reported += 1
                yield rec
            return
        found = None
        if isinstance(batch, DefaultBatch):
            matcher = self._native_matcher()
            if matcher is not None:
                found = matcher.matches(batch.data, max_batch_bytes, batch.position)
        if found is None:
            for rec in batch.records(max_batch_bytes):
                self.counts.records += 1
                self._records_reported += 1
                if where.matches(rec):
                    yield rec
            return
        count, indexes, records = found
        counted = 0  # as the python path counts: each record when it is reached
        for i, r in zip(indexes, records, strict=True):
            self.counts.records += i + 1 - counted
            self._records_reported += i + 1 - counted
            counted = i + 1
            yield r
        self.counts.records += count - counted
        self._records_reported += count - counted

    def _native_matcher(self) -> engine.FindMatcher | None:
        """The native engine's matcher of ``where`` (made once per engine in use), or None."""
        module = engine.native_module()
        if module is None:
            return None
        if self._matcher is None or self._matcher[0] is not module:
            spec = self.where.native_spec()
            self._matcher = (module, None if spec is None else engine.find_matcher(spec))
        return self._matcher[1]

    def _heads(self, seg: _Segment, batch: Batch) -> list[FindFile | events.DumpSegmentsBatch]:
        """The ``file`` object (first match of the segment) and ``batch`` object to send."""
        out: list[FindFile | events.DumpSegmentsBatch] = []
        if not seg.head_sent:
            seg.head_sent = True
            assert seg.files.log is not None
            out.append(
                {
                    "type": "file",
                    "path": seg.display,
                    "kind": layout.LOG,
                    "size": seg.files.log.stat().st_size,
                    "base_offset": seg.files.base_offset,
                    "topic": seg.target.topic,
                    "partition": seg.target.partition,
                }
            )
        b = batch_object(batch, batch.crc_valid)
        if not b["crc_valid"]:
            seg.add(
                Finding(
                    "error",
                    Code.CRC_MISMATCH,
                    seg.display,
                    batch.position,
                    batch.header_offset,
                    f"batch {b['base_offset']}..{b['last_offset']}: CRC mismatch (its records "
                    "are shown as they are)",
                )
            )
        out.append(b)
        return out

    def _emit(self, obj: FindObject) -> Iterator[FindObject]:
        if obj["type"] == "record":
            self.counts.matches += 1
            if self.remaining is not None:
                self.remaining -= 1
        yield obj
        if self.remaining is not None and self.remaining <= 0 and obj["type"] == "record":
            raise _Stop()

    def _record_obj(self, seg: _Segment, batch: Batch, rec: Record) -> events.FindRecord:
        # where first, then dump-segments' record (its "type" keeps the first place)
        record = record_object(batch, rec, seg.decoder, self.opts.dump)
        for msg in refused_payloads(record):
            seg.add(
                Finding(
                    "warning", Code.PAYLOAD_REFUSED, seg.display, batch.position, rec.offset, msg
                )
            )
        txn: _Transaction = (
            _NO_TRANSACTION if self._txns is None else {"transaction": self._txns.state(batch)}
        )
        return {
            "type": "record",
            "topic": seg.target.topic,
            "partition": seg.target.partition,
            **record,
            "segment": seg.display,
            "size": record_size(rec),
            "producer_id": batch.producer_id,
            "producer_epoch": batch.producer_epoch,
            "partition_leader_epoch": batch.partition_leader_epoch,
            **txn,
        }

    # -- bookkeeping ------------------------------------------------------------------------------
    def _advance(self, nbytes: int) -> None:
        self.progress(nbytes, self._records_reported)
        self._records_reported = 0

    def _count_finding(self, f: FindFinding) -> None:
        if f["severity"] == "error":
            self.counts.errors += 1
        else:
            self.counts.warnings += 1

    # -- --merge and --largest ------------------------------------------------------------------
    def _merged(self, targets: list[Target]) -> Iterator[FindObject]:
        """A k-way merge: each partition searched by its own Finder (its own transaction states
        and offset order), one record of each held at a time, the earliest timestamp shown
        first (newest first: the latest). A partition whose timestamps go back (producers'
        clocks) keeps its own order. Findings pass through as they are met; the file and batch
        objects, which a merged stream cannot place, are left out."""
        sign = -1 if self.opts.newest_first else 1
        each = replace(self.opts, limit=None, largest=None)
        finders = [Finder(each, should_stop=self.should_stop) for _ in targets]
        streams = [f.search(t) for f, t in zip(finders, targets, strict=True)]
        heads: list[tuple[int, int, events.FindRecord]] = []

        def pull(i: int) -> Iterator[FindObject]:
            """Findings up to stream i's next record, which goes into ``heads``."""
            for obj in streams[i]:
                if obj["type"] == "record":
                    heapq.heappush(heads, (sign * obj["timestamp"], i, obj))
                    return
                if obj["type"] == "finding":
                    yield obj

        try:
            for i in range(len(streams)):
                yield from pull(i)
            while heads:
                _, i, rec = heapq.heappop(heads)
                yield from self._emit(rec)
                yield from pull(i)
        except _Stop:
            pass
        finally:
            for f in finders:
                f.counts.matches = 0  # counted here, as they are shown (the limit is global)
                self.counts.add(f.counts)

    def _largest(self, found: Iterator[FindObject], n: int) -> Iterator[FindObject]:
        """The ``n`` largest records of ``found`` by :func:`record_size` (the first met first
        among equals), largest first, after the findings met on the way; memory holds ``n``."""
        kept: list[tuple[int, int, events.FindRecord]] = []  # a min-heap: (size, -seq, record)
        for seq, obj in enumerate(found):
            if obj["type"] == "finding":
                yield obj
            elif obj["type"] == "record":
                item = (obj["size"], -seq, obj)
                if len(kept) < n:
                    heapq.heappush(kept, item)
                elif item[:2] > kept[0][:2]:
                    heapq.heapreplace(kept, item)
        for _size, _seq, rec in sorted(kept, key=lambda k: k[:2], reverse=True):
            yield rec

    # -- a process pool ---------------------------------------------------------------------------
    def _parallel(self, targets: list[Target], jobs: int) -> Iterator[FindObject]:
        stop = fork_context().Event()
        with (
            tempfile.TemporaryDirectory(prefix="klogtool-find-") as spool,
            processes(self.opts.dump.ctx, min(jobs, len(targets)), _init_worker, (stop,)) as pool,
        ):
            queue: deque[tuple[Target, Future[tuple[str, Counts]]]] = deque()
            todo = iter(enumerate(targets))

            def submit() -> None:
                nxt = next(todo, None)
                if nxt is not None:
                    i, t = nxt
                    out = os.path.join(spool, f"{i:08d}.pickle")
                    queue.append((t, pool.submit(_search_to_file, self.opts, t, out)))

            try:
                with worker_deaths(lambda: f"partition {queue[0][0].display}"):
                    for _ in range(2 * jobs):
                        submit()
                    while queue:
                        t, fut = queue[0]
                        out, counts = fut.result()
                        queue.popleft()
                        submit()
                        yield from self._spooled(t, out, counts)
            except _Stop:
                pass
            finally:
                stop.set()
                for _t, fut in queue:
                    fut.cancel()

    def _spooled(self, t: Target, out: str, counts: Counts) -> Iterator[FindObject]:
        """What a worker found in ``t`` (spooled to ``out``), read back in order."""
        counts.matches = 0  # counted here, as they are shown (the limit is global)
        self.counts.add(counts)
        self.progress(t.size, counts.records)
        with open(out, "rb") as f:
            while True:
                try:
                    obj: FindObject = pickle.load(f)
                except EOFError:
                    break
                yield from self._emit(obj)
        os.unlink(out)


_STOP_EVENT: Any = None


def _init_worker(stop: Any) -> None:
    global _STOP_EVENT
    _STOP_EVENT = stop


def _search_to_file(options: FindOptions, target: Target, out: str) -> tuple[str, Counts]:
    """In a worker: search one partition, spooling its objects (pickled) to ``out``."""
    stop = _STOP_EVENT
    finder = Finder(options, should_stop=(lambda: stop.is_set()) if stop is not None else None)
    with open(out, "wb") as f:
        try:
            for obj in finder.search(target):
                pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
        except _Stop:
            pass
    return out, finder.counts

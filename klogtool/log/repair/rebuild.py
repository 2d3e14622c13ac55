"""Rebuilding ``.index``, ``.timeindex`` and ``.txnindex`` exactly as ``LogSegment.recover`` does.

docs/kafka-rules.md: Loading and recovery, Index rebuild. One walk per segment over batch
headers (the records of data batches are never decoded; the single record of a transaction
marker is) gives:

* the offset and time index entries (:func:`klogtool.log.indexer.build_indexes`, the broker's
  rule, at ``index_interval_bytes``);
* the segment's transaction events: the first transactional data batch of each producer after
  its last marker (a transaction *may* start there), and every COMMIT/ABORT marker;
* where the valid bytes end (klogtool's strict scanner rules, see :func:`scan_segment`).

Segments are walked independently (in a process pool, see :func:`scan_segments`). The
``.txnindex`` needs what no single segment knows, the transactions still open when the segment
starts, so a cheap sequential pass (:func:`klogtool.log.txnreplay.chain`) replays the events
of the partition's segments in order, from the producer state of the newest valid producer
snapshot at or below the first segment walked (as the broker's recovery does), and yields per
segment its aborted transactions with their last stable offsets.

Checking existing index files (``rebuild-index --check``, and truncate-recovery deciding which
indexes to rewrite) runs the index checks verify runs (:mod:`klogtool.log.check.indexcheck`):
an index is *bad* when a lookup through it could skip records or the broker's sanity check
fails; one that is valid but not what a rebuild gives (live appends write such indexes) is
only *different*.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import engine, index
from klogtool.formats.batch import LOG_OVERHEAD, Batch
from klogtool.formats.crc import crc32c
from klogtool.formats.errors import CorruptRecordError, FormatError
from klogtool.formats.records import CLEAN, CORRUPT, ZERO_FILL, ScanResult
from klogtool.formats.v2 import (
    BATCH_HEADER,
    CONTROL_FLAG,
    CRC_START,
    MIN_LENGTH,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG,
    DefaultBatch,
)
from klogtool.log import layout, txnreplay
from klogtool.log.atomic import FileOps
from klogtool.log.check.indexcheck import check_segment_indexes, txn_entry_problems
from klogtool.log.findings import Finding, FindingCounts
from klogtool.log.indexer import DEFAULT_INDEX_INTERVAL_BYTES, build_indexes
from klogtool.log.pool import fork_context
from klogtool.log.segment import Walked, mapped
from klogtool.log.targets import PartitionTarget, Targets
from klogtool.log.txnreplay import TxnEvent, end_marker, event_of
from klogtool.log.writing import interrupted_obj, writing_session

INT32_MAX = (1 << 31) - 1
T = TypeVar("T")
R = TypeVar("R")
OFFSET_OVERFLOW = Code.OFFSET_OVERFLOW  # a ScanResult.error code: the broker splits the segment

# Segments smaller than this in total are walked in-process: forking workers costs more.
POOL_MIN_BYTES = 8 << 20

SUFFIX = {layout.INDEX: ".index", layout.TIMEINDEX: ".timeindex", layout.TXNINDEX: ".txnindex"}
ENTRY_SIZE = {
    layout.INDEX: index.OFFSET_INDEX_ENTRY_SIZE,
    layout.TIMEINDEX: index.TIME_INDEX_ENTRY_SIZE,
    layout.TXNINDEX: index.TXN_INDEX_ENTRY_SIZE,
}


@dataclass(frozen=True)
class SegmentScan:
    """What one walk over a segment found (picklable: it comes back from pool workers)."""

    path: str
    base_offset: int
    size: int
    valid_bytes: int  # where recovery truncates
    end: str  # records.CLEAN / TORN_TAIL / ZERO_FILL / CORRUPT
    error_code: str | None
    error: str | None
    batches: int
    records: int  # only counted with count_records (legacy wrappers are decompressed for it)
    first_offset: int | None
    last_offset: int | None
    max_timestamp: int
    index_bytes: bytes  # the rebuilt .index (trimmed) for the valid prefix
    timeindex_bytes: bytes
    events: tuple[TxnEvent, ...]

    @property
    def next_offset(self) -> int:
        """The log end offset if this were the last segment (its base when it is empty)."""
        return self.base_offset if self.last_offset is None else self.last_offset + 1

    @property
    def clean(self) -> bool:
        return self.end == CLEAN

    @property
    def not_a_log(self) -> bool:
        """No entry could be read from byte 0 (records.not_a_log): not a Kafka file."""
        return self.batches == 0 and self.end == CORRUPT and self.valid_bytes == 0

    def not_a_log_finding(self) -> Finding:
        return Finding(
            "error", Code.NOT_A_LOG, self.path, 0, None, f"not a Kafka log segment: {self.error}"
        )


class _Stop(Exception):
    def __init__(self, error: FormatError):
        super().__init__(error.message)
        self.error = error


class _EventCollector:
    """The producer-state side of the walk: transaction events, counts, offsets."""

    def __init__(
        self,
        base_offset: int,
        *,
        prev_last_offset: int | None = None,
        count_records: bool = False,
        check_range: bool = True,
        walked: Walked | None = None,
    ):
        self.walked = walked
        self.base_offset = base_offset
        self.prev_last = prev_last_offset
        self.count_records = count_records
        self.check_range = check_range
        self.events: list[TxnEvent] = []
        self.open: set[int] = set()  # producers with a transactional batch since their marker
        self.batches = 0
        self.records = 0
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.max_timestamp = -1

    def __call__(self, batch: Batch) -> None:
        if self.walked is not None:
            self.walked.at(batch.position)
        last = batch.last_offset
        if self.check_range and not 0 <= last - self.base_offset <= INT32_MAX:
            raise _Stop(
                CorruptRecordError(
                    f"last offset {last} is out of range for a segment with base offset "
                    f"{self.base_offset} (the broker splits such a segment on load)",
                    batch.position,
                    OFFSET_OVERFLOW,
                )
            )
        if self.batches == 0 and self.prev_last is not None:
            first = batch.header_offset
            if first <= self.prev_last:
                raise _Stop(
                    CorruptRecordError(
                        f"offset {first} does not increase (the previous segment ended at "
                        f"{self.prev_last})",
                        batch.position,
                        Code.OFFSET_NOT_INCREASING,
                    )
                )
        self.batches += 1
        if self.first_offset is None:
            self.first_offset = batch.header_offset
        self.last_offset = last
        if batch.max_timestamp > self.max_timestamp:
            self.max_timestamp = batch.max_timestamp
        if self.count_records:
            try:
                self.records += batch.count
            except FormatError:
                pass  # an unreadable legacy wrapper: its records cannot be counted
        ev = event_of(batch)
        if ev is None:
            return
        if not ev.begin:
            self.events.append(ev)
            self.open.discard(ev.producer_id)
        elif ev.producer_id not in self.open:
            self.events.append(ev)
            self.open.add(ev.producer_id)


_TIME_ENTRY = struct.Struct(">qi")


def _fast_scan(
    view: memoryview,
    base_offset: int,
    index_interval_bytes: int,
    prev_last_offset: int | None,
    path: str,
    count_records: bool,
    walked: Walked | None = None,
) -> SegmentScan | None:
    """:func:`scan_segment` for the common case, a segment of valid v2 batches to its end,
    in one tight loop over the batch headers (no batch objects, no scanner).

    Returns None at the first thing it does not handle (another magic, a bad size, CRC or
    offset, a torn or zero-filled tail, a position beyond 2^31-1): the caller then walks the
    segment again with the general scanner, which is the reference for every rule here
    (docs/kafka-rules.md: Loading and recovery, Index rebuild; the tests compare both walks).
    """
    n = len(view)
    unpack = BATCH_HEADER.unpack_from
    crc = crc32c
    limit = base_offset + INT32_MAX
    offsets: list[int] = []  # relative offset, position, relative offset, position, ...
    times: list[tuple[int, int]] = []
    events: list[TxnEvent] = []
    open_txns: set[int] = set()
    max_ts, max_ts_offset = -1, base_offset
    last_time_ts = -1
    bytes_at_last_entry = 0
    prev_last = prev_last_offset
    first_offset: int | None = None
    batches = records = 0
    pos = 0
    while pos < n:
        if walked is not None:
            walked.at(pos)
        if n - pos < RECORD_BATCH_OVERHEAD:
            return None
        (bo, length, _epoch, magic, stored_crc, attrs, delta, _bts, mts, pid, _pe, _seq,
         count) = unpack(view, pos)  # fmt: skip
        end = pos + LOG_OVERHEAD + length
        last = bo + delta
        if (
            magic != 2
            or length < MIN_LENGTH
            or end > n
            or delta < 0
            or count < 0
            or (prev_last is not None and bo <= prev_last)
            or not base_offset <= last <= limit
            or pos > INT32_MAX
            or crc(view[pos + CRC_START : end]) != stored_crc
        ):
            return None
        if pid >= 0 and attrs & (CONTROL_FLAG | TRANSACTIONAL_FLAG):
            if attrs & CONTROL_FLAG:
                aborted = end_marker(DefaultBatch(view[pos:end], pos))
                if aborted is not None:
                    events.append(TxnEvent(False, pid, last, aborted))
                    open_txns.discard(pid)
            elif pid not in open_txns:
                events.append(TxnEvent(True, pid, bo))
                open_txns.add(pid)
        if mts > max_ts:
            max_ts, max_ts_offset = mts, last
        if pos - bytes_at_last_entry > index_interval_bytes:
            offsets += (last - base_offset, pos)
            if max_ts > last_time_ts:
                times.append((max_ts, max_ts_offset - base_offset))
                last_time_ts = max_ts
            bytes_at_last_entry = pos
        if first_offset is None:
            first_offset = bo
        batches += 1
        if count_records:
            records += count
        prev_last = last
        pos = end
    if max_ts > last_time_ts:
        times.append((max_ts, max_ts_offset - base_offset))
    index_entries = array("i", offsets)
    if sys.byteorder == "little":
        index_entries.byteswap()
    return SegmentScan(
        path=path,
        base_offset=base_offset,
        size=n,
        valid_bytes=n,
        end=CLEAN,
        error_code=None,
        error=None,
        batches=batches,
        records=records,
        first_offset=first_offset,
        last_offset=prev_last if batches else None,
        max_timestamp=max_ts,
        index_bytes=index_entries.tobytes(),
        timeindex_bytes=b"".join([_TIME_ENTRY.pack(t, o) for t, o in times]),
        events=tuple(events),
    )


def scan_segment(
    buf: bytes | memoryview,
    base_offset: int,
    *,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    prev_last_offset: int | None = None,
    count_records: bool = False,
    path: str = "",
    fast: bool = True,
    walked: Walked | None = None,
) -> SegmentScan:
    """Walk one segment: rebuilt indexes, transaction events, where the valid bytes end.

    The walk is the broker's recovery walk (size, CRC, structure, zero fill, torn tail) made
    strict in what no broker writes but its recovery lets through: a magic outside 0..2,
    negative offset deltas or record counts, offsets that do not increase (within the segment,
    and from ``prev_last_offset``, the previous segment's last offset). A batch whose offset
    does not fit the segment (relative offset outside 0..2^31-1) also ends the walk, with
    error code ``offset-overflow``: the broker splits such a segment rather than truncating it.

    ``fast``: try :func:`_fast_scan` first (the same result, several times faster, for the
    common all-valid v2 segment); ``False`` walks with the general scanner only. ``walked``
    hears of the walk's position (progress inside one large segment).
    """
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    if len(view) > INT32_MAX:
        raise InputError(
            "larger than 2 GiB: not a Kafka segment (index positions are 32-bit)",
            path=path,
            code=Code.SEGMENT_TOO_LARGE,
        )
    if fast:
        quick = _fast_scan(
            view, base_offset, index_interval_bytes, prev_last_offset, path, count_records, walked
        )
        if quick is not None:
            return quick
    collector = _EventCollector(
        base_offset, prev_last_offset=prev_last_offset, count_records=count_records, walked=walked
    )
    try:
        built = build_indexes(
            view,
            base_offset,
            index_interval_bytes=index_interval_bytes,
            strict=True,
            on_batch=collector,
        )
        result = built.scan
    except _Stop as stop:
        pos = stop.error.position or 0
        built = build_indexes(
            view[:pos], base_offset, index_interval_bytes=index_interval_bytes, strict=True
        )
        result = ScanResult(
            size=len(view),
            valid_bytes=pos,
            stopped_at=pos,
            end=CORRUPT,
            error=stop.error,
            batches=collector.batches,
            first_offset=collector.first_offset,
            last_offset=collector.last_offset,
        )
    err = result.error
    return SegmentScan(
        path=path,
        base_offset=base_offset,
        size=len(view),
        valid_bytes=result.valid_bytes,
        end=result.end,
        error_code=err.code if err is not None else None,
        error=str(err) if err is not None else None,
        batches=collector.batches,
        records=collector.records,
        first_offset=collector.first_offset,
        last_offset=collector.last_offset,
        max_timestamp=collector.max_timestamp,
        index_bytes=index.encode_offset_index(built.offsets, base_offset),
        timeindex_bytes=index.encode_time_index(built.times, base_offset),
        events=tuple(collector.events),
    )


@dataclass(frozen=True)
class ScanTask:
    path: str
    base_offset: int
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    prev_last_offset: int | None = None
    count_records: bool = False


def run_scan_task(task: ScanTask, walked: Walked | None = None) -> SegmentScan:
    """:func:`scan_segment` over a file (the unit of work of the process pool)."""
    with mapped(task.path) as buf:
        return scan_segment(
            buf,
            task.base_offset,
            index_interval_bytes=task.index_interval_bytes,
            prev_last_offset=task.prev_last_offset,
            count_records=task.count_records,
            path=task.path,
            walked=walked,
        )


def run_parallel(
    fn: Callable[[T, Walked], R],
    tasks: Sequence[T],
    *,
    jobs: int,
    sizes: Sequence[int],
    progress: Callable[[int], None] | None = None,
) -> list[R]:
    """``[fn(t, walked) for t in tasks]``, across ``jobs`` worker processes when it pays off.

    Results come back in task order. ``progress`` hears of the bytes done, inside a task as
    ``fn`` reports them to its :class:`Walked` (from a worker through a shared counter that
    is read every 0.2 s), and all of a task's size when it ends. Workers only read files.
    """
    if jobs <= 1 or len(tasks) <= 1 or sum(sizes) < POOL_MIN_BYTES:
        out: list[R] = []
        for t, size in zip(tasks, sizes, strict=True):
            out.append(_walk_task(fn, t, size, Walked(progress)))
        return out
    ctx = fork_context()
    counter = ctx.Value("q", 0)
    results: dict[int, R] = {}
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(tasks)),
        mp_context=ctx,
        initializer=_share_progress,
        initargs=(counter, engine.name()),
    ) as pool:
        futures = {
            pool.submit(_walk_task, fn, t, size): i
            for i, (t, size) in enumerate(zip(tasks, sizes, strict=True))
        }
        pending = set(futures)
        shown = 0
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for fut in done:
                results[futures[fut]] = fut.result()
            if progress is not None and counter.value > shown:
                progress(counter.value - shown)
                shown = counter.value
    return [results[i] for i in range(len(tasks))]


_SHARED_PROGRESS: Any = None  # a worker's counter of bytes done (multiprocessing.Value)


def _share_progress(counter: Any, engine_name: str) -> None:
    global _SHARED_PROGRESS
    _SHARED_PROGRESS = counter
    engine.use(engine_name)


def _add_shared(n: int) -> None:
    with _SHARED_PROGRESS.get_lock():
        _SHARED_PROGRESS.value += n


def _walk_task(fn: Callable[[T, Walked], R], task: T, size: int, walked: Walked | None = None) -> R:
    """``fn(task, walked)``, then the rest of ``size`` reported (in a worker: to the shared
    counter)."""
    walked = walked or Walked(_add_shared if _SHARED_PROGRESS is not None else None)
    result = fn(task, walked)
    walked.done(size)
    return result


# -- checking existing index files ----------------------------------------------------------


@dataclass(frozen=True)
class CheckTask:
    base_offset: int
    log: str
    index: str | None
    timeindex: str | None
    txnindex: str | None
    active: bool
    open_txns: tuple[tuple[int, int], ...]


def run_check_task(task: CheckTask, walked: Walked | None = None) -> list[Finding]:
    seg = layout.SegmentFiles(
        task.base_offset,
        log=Path(task.log),
        index=Path(task.index) if task.index else None,
        timeindex=Path(task.timeindex) if task.timeindex else None,
        txnindex=Path(task.txnindex) if task.txnindex else None,
    )
    return check_segment_indexes(
        seg, active=task.active, open_txns=dict(task.open_txns), walked=walked
    )


def matches_rebuild(
    seg: layout.SegmentFiles, scan: SegmentScan, aborted: Sequence[index.AbortedTxn] | None
) -> bool:
    """Whether the segment's index files are byte for byte what a rebuild writes."""
    if aborted is None:
        return False
    want = {
        layout.INDEX: scan.index_bytes,
        layout.TIMEINDEX: scan.timeindex_bytes,
        layout.TXNINDEX: index.encode_txn_index(aborted),
    }
    for kind, data in want.items():
        path: Path | None = getattr(seg, kind)
        if path is None:
            if kind != layout.TXNINDEX or data:
                return False
        elif path.stat().st_size != len(data) or path.read_bytes() != data:
            return False
    return True


def decode_entries(kind: str, data: bytes, base_offset: int) -> list[tuple[int, ...]]:
    """Entries of an index file as tuples (a trailing partial slot is dropped)."""
    if kind == layout.INDEX:
        return [
            tuple(e) for e in index.iter_offset_index(data, base_offset, stop_at_zero_fill=False)
        ]
    if kind == layout.TIMEINDEX:
        return [tuple(e) for e in index.iter_time_index(data, base_offset, stop_at_zero_fill=False)]
    try:
        return [tuple(e)[1:] for e in index.iter_txn_index(data)]
    except FormatError:
        return []


def first_difference(kind: str, old: bytes, new: bytes, base_offset: int) -> dict[str, Any] | None:
    """The first entry where an existing index file and its rebuild differ."""
    a = decode_entries(kind, old, base_offset)
    b = decode_entries(kind, new, base_offset)
    fields = {
        layout.INDEX: ("offset", "position"),
        layout.TIMEINDEX: ("timestamp", "offset"),
        layout.TXNINDEX: ("producer_id", "first_offset", "last_offset", "last_stable_offset"),
    }[kind]
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x != y:
            return {
                "entry": i,
                "existing": dict(zip(fields, x, strict=True)) if x is not None else None,
                "rebuilt": dict(zip(fields, y, strict=True)) if y is not None else None,
            }
    if old != new:
        return {"entry": len(a), "existing": None, "rebuilt": None}
    return None


def entry_count(kind: str, data: bytes) -> int:
    return len(data) // ENTRY_SIZE[kind]


def is_tail_ok(scan: SegmentScan, *, last: bool) -> bool:
    """Indexes can be written for a segment that reads cleanly to its end, or (the active
    segment) whose tail is zero fill the broker's recovery would trim."""
    return scan.end == CLEAN or (last and scan.end == ZERO_FILL)


# -- rebuild-index ----------------------------------------------------------------------------


@dataclass
class RebuildOptions:
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    jobs: int = 1
    check: bool = False
    dry_run: bool = False
    force: bool = False


@dataclass
class RebuildStats(FindingCounts):
    partitions: int = 0
    segments: int = 0
    bytes: int = 0
    files_written: int = 0
    files_unchanged: int = 0
    files_differing: int = 0  # --check: valid, but not what a rebuild gives
    files_bad: int = 0  # --check: a lookup could skip records, or the sanity check fails
    segments_skipped: int = 0
    errors: int = 0
    warnings: int = 0
    operations: int = 0


@dataclass
class _Unit:
    target: PartitionTarget
    part: layout.PartitionDir
    logs: list[layout.SegmentFiles]
    selected: list[int]


Emit = Callable[[dict[str, Any]], None]


def run_rebuild(
    targets: Targets,
    opts: RebuildOptions,
    ops: FileOps,
    emit: Emit,
    progress: Callable[[int], None] | None = None,
) -> RebuildStats:
    """``rebuild-index`` (or ``--check``) over resolved PATHs; report objects go to ``emit``."""
    stats = RebuildStats()

    def finding(f: Finding) -> None:
        stats.count(f)
        emit(f.as_obj())

    for f in targets.findings:
        finding(f)
    for log_dir, group in targets.by_log_dir():
        session = (
            nullcontext(None)
            if opts.check
            else writing_session(
                [t.path for t in group], force=opts.force, dry_run=opts.dry_run, ops=ops
            )
        )
        with session as started:
            completed = started.completed if started is not None else {}
            for message in completed.get(log_dir, []):
                emit(interrupted_obj(str(log_dir), message, ops.dry_run))
            units: list[_Unit] = []
            for t in group:
                for message in completed.get(t.path, []):
                    emit(interrupted_obj(t.display, message, ops.dry_run))
                part = layout.scan_partition_dir(t.path)
                logs = [s for s in part.segments if s.log is not None]
                selected = list(range(len(logs)))
                if t.only_base is not None:
                    selected = [i for i, s in enumerate(logs) if s.base_offset == t.only_base]
                    if not selected:
                        finding(
                            Finding(
                                "error",
                                Code.LOG_MISSING,
                                t.display,
                                None,
                                t.only_base,
                                f"no .log for base offset {t.only_base}",
                            )
                        )
                        continue
                stats.partitions += 1
                units.append(_Unit(t, part, logs, selected))
            tasks = [
                ScanTask(str(u.logs[i].log), u.logs[i].base_offset, opts.index_interval_bytes)
                for u in units
                for i in u.selected
            ]
            sizes = [os.path.getsize(t.path) for t in tasks]
            scans: list[SegmentScan] = run_parallel(
                run_scan_task, tasks, jobs=opts.jobs, sizes=sizes, progress=progress
            )
            stats.segments += len(scans)
            stats.bytes += sum(sizes)
            k = 0
            for u in units:
                mine = scans[k : k + len(u.selected)]
                k += len(u.selected)
                _rebuild_unit(u, mine, opts, ops, emit, finding, stats, progress)
    stats.operations = ops.count
    return stats


def _rebuild_unit(
    u: _Unit,
    scans: list[SegmentScan],
    opts: RebuildOptions,
    ops: FileOps,
    emit: Emit,
    finding: Callable[[Finding], None],
    stats: RebuildStats,
    progress: Callable[[int], None] | None,
) -> None:
    state = txnreplay.state_before(u.part, u.logs[u.selected[0]].base_offset)
    open_at_start: list[dict[int, int]] = []
    aborted: list[list[index.AbortedTxn] | None] = []
    broken = False
    for scan, i in zip(scans, u.selected, strict=True):
        open_at_start.append(dict(state.open))
        txns = list(state.replay(scan.events))
        aborted.append(None if broken else txns)
        if not is_tail_ok(scan, last=i == len(u.logs) - 1):
            broken = True  # the transactions after a damaged stretch are unknown
    if opts.check:
        _check_unit(u, scans, open_at_start, aborted, opts, emit, finding, stats, progress)
        return
    for n, (scan, i) in enumerate(zip(scans, u.selected, strict=True)):
        seg = u.logs[i]
        active = i == len(u.logs) - 1
        if scan.not_a_log:
            stats.segments_skipped += 1
            finding(scan.not_a_log_finding())
            continue
        if scan.error_code == OFFSET_OVERFLOW or not is_tail_ok(scan, last=active):
            stats.segments_skipped += 1
            what = scan.error or f"{scan.end}: the last {scan.size - scan.valid_bytes} bytes"
            finding(
                Finding(
                    "error",
                    scan.error_code or scan.end,
                    scan.path,
                    scan.valid_bytes,
                    scan.last_offset,
                    f"{what}; indexes not rebuilt (truncate-recovery repairs the log)",
                )
            )
            continue
        if scan.end == ZERO_FILL:
            finding(
                Finding(
                    "warning",
                    Code.ZERO_FILL,
                    scan.path,
                    scan.valid_bytes,
                    scan.last_offset,
                    f"{scan.size - scan.valid_bytes} zero bytes after the last batch (a "
                    f"preallocated active segment): the indexes cover the batches before",
                )
            )
        new: dict[str, bytes | None] = {
            layout.INDEX: scan.index_bytes,
            layout.TIMEINDEX: scan.timeindex_bytes,
            layout.TXNINDEX: None
            if aborted[n] is None
            else index.encode_txn_index(aborted[n] or []),
        }
        for kind, data in new.items():
            existing: Path | None = getattr(seg, kind)
            path = existing or u.part.path / layout.segment_name(seg.base_offset, SUFFIX[kind])
            if data is None:
                finding(
                    Finding(
                        "warning",
                        Code.TXNINDEX_NOT_REBUILT,
                        str(path),
                        None,
                        seg.base_offset,
                        "an earlier segment of the partition is damaged, so the open "
                        "transactions at this segment's start are unknown",
                    )
                )
                continue
            if existing is None and kind == layout.TXNINDEX and not data:
                continue  # no aborted transaction: the broker creates no .txnindex either
            old = existing.read_bytes() if existing is not None else None
            obj = {
                "type": "index_file",
                "path": str(path),
                "kind": kind,
                "entries": entry_count(kind, data),
                "previous_entries": entry_count(kind, old) if old is not None else None,
                "dry_run": ops.dry_run,
            }
            if old == data:
                stats.files_unchanged += 1
                emit({**obj, "status": "unchanged"})
                continue
            ops.replace_file(path, [data])
            stats.files_written += 1
            verb = "rebuilt" if old is not None else "created"
            emit({**obj, "status": ("would-be-" + verb) if ops.dry_run else verb})


def _check_unit(
    u: _Unit,
    scans: list[SegmentScan],
    open_at_start: list[dict[int, int]],
    aborted: list[list[index.AbortedTxn] | None],
    opts: RebuildOptions,
    emit: Emit,
    finding: Callable[[Finding], None],
    stats: RebuildStats,
    progress: Callable[[int], None] | None,
) -> None:
    tasks = []
    todo: list[int] = []  # segments whose files are not all exactly the rebuild
    for n, (scan, i, at_start) in enumerate(zip(scans, u.selected, open_at_start, strict=True)):
        seg = u.logs[i]
        if is_tail_ok(scan, last=i == len(u.logs) - 1) and matches_rebuild(seg, scan, aborted[n]):
            continue  # a rebuild is always valid: nothing to check
        todo.append(n)
        tasks.append(
            CheckTask(
                seg.base_offset,
                str(seg.log),
                str(seg.index) if seg.index else None,
                str(seg.timeindex) if seg.timeindex else None,
                str(seg.txnindex) if seg.txnindex else None,
                i == len(u.logs) - 1,
                tuple(sorted(at_start.items())),
            )
        )
    checked = run_parallel(
        run_check_task,
        tasks,
        jobs=opts.jobs,
        sizes=[scans[n].size for n in todo],
        progress=progress,
    )
    if progress is not None:  # the segments with nothing to check count as done too
        progress(sum(s.size for s in scans) - sum(scans[n].size for n in todo))
    results: list[list[Finding]] = [[] for _ in scans]
    for n, found in zip(todo, checked, strict=True):
        results[n] = found
        seg = u.logs[u.selected[n]]
        if seg.txnindex is not None and aborted[n] is not None:
            found += txn_entry_problems(seg.txnindex, seg.txnindex.read_bytes(), aborted[n] or [])
    for scan, i, txns, found in zip(scans, u.selected, aborted, results, strict=True):
        seg = u.logs[i]
        active = i == len(u.logs) - 1
        if scan.not_a_log:
            finding(scan.not_a_log_finding())
            continue
        if not is_tail_ok(scan, last=active):
            finding(
                Finding(
                    "warning",
                    Code.LOG_DAMAGED,
                    scan.path,
                    scan.valid_bytes,
                    scan.last_offset,
                    f"{scan.error or scan.end}: indexes were compared with a rebuild of the "
                    f"{scan.valid_bytes} valid bytes only (verify reports the damage)",
                )
            )
        new: dict[str, bytes | None] = {
            layout.INDEX: scan.index_bytes,
            layout.TIMEINDEX: scan.timeindex_bytes,
            layout.TXNINDEX: None if txns is None else index.encode_txn_index(txns),
        }
        for kind, data in new.items():
            existing: Path | None = getattr(seg, kind)
            mine = [f for f in found if f.code.split("-", 1)[0] == kind]
            for f in mine:
                finding(f)
            errors = sorted(
                (f for f in mine if f.severity == "error"),
                key=lambda f: -1 if f.position is None else f.position,
            )
            old = existing.read_bytes() if existing is not None else None
            obj: dict[str, Any] = {
                "type": "index_check",
                "path": str(
                    existing or u.part.path / layout.segment_name(seg.base_offset, SUFFIX[kind])
                ),
                "kind": kind,
                "entries": entry_count(kind, old) if old is not None else None,
                "rebuilt_entries": entry_count(kind, data) if data is not None else None,
                "first_bad_entry": None,
                "first_difference": None,
            }
            if errors:
                status = "bad"
                stats.files_bad += 1
                first = errors[0]
                if first.position is not None:
                    obj["first_bad_entry"] = first.position // ENTRY_SIZE[kind]
                obj["message"] = first.message
            elif old is None:
                status = "absent" if kind == layout.TXNINDEX and not data else "missing"
            elif data is None:
                status = "unchecked"
            elif old == data:
                status = "ok"
            else:
                status = "differs"
                stats.files_differing += 1
            if status in ("bad", "differs") and old is not None and data is not None:
                obj["first_difference"] = first_difference(kind, old, data, seg.base_offset)
            if status in ("ok", "absent"):
                stats.files_unchanged += 1
            emit({**obj, "status": status})

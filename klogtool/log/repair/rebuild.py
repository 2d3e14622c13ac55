"""Rebuilding ``.index``, ``.timeindex`` and ``.txnindex`` exactly as ``LogSegment.recover`` does.

docs/kafka-rules.md: Loading and recovery, Index rebuild. One walk per segment over batch
headers (the records of data batches are never decoded; the single record of a transaction
marker is) gives:

* the offset and time index entries (:func:`klogtool.log.indexer.build_indexes`, the broker's
  rule, at ``index_interval_bytes``);
* the segment's transaction events: the first transactional data batch of each producer after
  its last marker (a transaction *may* start there), and every COMMIT/ABORT marker;
* where the valid bytes end (klogtool's strict scanner rules).

That walk is :mod:`klogtool.log.repair.headers`.

Segments are walked independently (in a process pool: :mod:`klogtool.log.repair.parallel`). The
``.txnindex`` needs what no single segment knows, the transactions still open when the segment
starts, so a cheap sequential pass (:func:`klogtool.log.txnreplay.chain`) replays the events
of the partition's segments in order, from the producer state of the newest valid producer
snapshot at or below the first segment walked (as the broker's recovery does), and yields per
segment its aborted transactions with their last stable offsets.

Checking existing index files (``rebuild-index --check``, and truncate-recovery deciding which
indexes to rewrite) runs the index checks verify runs (:mod:`klogtool.log.indexcheck`)
and compares with a rebuild (:mod:`klogtool.log.repair.index_diff`):
an index is *bad* when a lookup through it could skip records or the broker's sanity check
fails; one that is valid but not what a rebuild gives (live appends write such indexes) is
only *different*.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from klogtool.codes import Code
from klogtool.formats import index
from klogtool.formats.records import ZERO_FILL
from klogtool.log import layout, txnreplay
from klogtool.log.atomic import FileOps
from klogtool.log.context import ReadContext
from klogtool.log.findings import Finding, FindingCounts
from klogtool.log.indexcheck import txn_entry_problems
from klogtool.log.indexer import DEFAULT_INDEX_INTERVAL_BYTES
from klogtool.log.repair.headers import OFFSET_OVERFLOW, ScanTask, SegmentScan, run_scan_task
from klogtool.log.repair.index_diff import (
    ENTRY_SIZE,
    SUFFIX,
    CheckTask,
    entry_count,
    first_difference,
    is_tail_ok,
    matches_rebuild,
    run_check_task,
)
from klogtool.log.repair.parallel import run_parallel
from klogtool.log.targets import PartitionTarget, Targets
from klogtool.log.writing import writing_session

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.events import Emit


@dataclass
class RebuildOptions:
    ctx: ReadContext = field(kw_only=True)
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

    def as_obj(self, *, check: bool, dry_run: bool) -> events.RebuildIndexSummary:
        """The ``summary`` object."""
        return {
            "type": "summary",
            "partitions": self.partitions,
            "segments": self.segments,
            "bytes": self.bytes,
            "files_written": self.files_written,
            "files_unchanged": self.files_unchanged,
            "files_differing": self.files_differing,
            "files_bad": self.files_bad,
            "segments_skipped": self.segments_skipped,
            "errors": self.errors,
            "warnings": self.warnings,
            "operations": self.operations,
            "check": check,
            "dry_run": dry_run,
        }


def index_file_obj(
    path: Path, kind: str, data: bytes, old: bytes | None, *, dry_run: bool, status: str
) -> events.RebuildIndexIndexFile:
    """The ``index_file`` object: ``data`` written at ``path`` (or left, ``status`` says) where
    ``old`` was (None: no file)."""
    return {
        "type": "index_file",
        "path": str(path),
        "kind": kind,
        "entries": entry_count(kind, data),
        "previous_entries": entry_count(kind, old) if old is not None else None,
        "dry_run": dry_run,
        "status": status,
    }


class _Message(TypedDict, total=False):
    message: str


@dataclass
class IndexCheck:
    """One index file against the log and a rebuild (--check): the ``index_check`` object."""

    path: str
    kind: str
    entries: int | None
    rebuilt_entries: int | None
    status: str = ""
    first_bad_entry: int | None = None
    first_difference: dict[str, Any] | None = None
    message: str | None = None  # a bad file's first problem

    def as_obj(self) -> events.RebuildIndexIndexCheck:
        message: _Message = {} if self.message is None else {"message": self.message}
        return {
            "type": "index_check",
            "path": self.path,
            "kind": self.kind,
            "entries": self.entries,
            "rebuilt_entries": self.rebuilt_entries,
            "first_bad_entry": self.first_bad_entry,
            "first_difference": self.first_difference,
            **message,
            "status": self.status,
        }


@dataclass
class _Unit:
    target: PartitionTarget
    part: layout.PartitionDir
    logs: list[layout.SegmentFiles]
    selected: list[int]


def run_rebuild(
    targets: Targets,
    opts: RebuildOptions,
    ops: FileOps,
    emit: Emit,
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
            for f in started.busy_findings() if started is not None else []:
                finding(f)
            for obj in started.interrupted(log_dir, str(log_dir)) if started is not None else []:
                emit(obj)
            units: list[_Unit] = []
            for t in group:
                for obj in started.interrupted(t.path, t.display) if started is not None else []:
                    emit(obj)
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
                if selected:  # a partition of no segments (KRaft snapshots only) has no index
                    units.append(_Unit(t, part, logs, selected))
            tasks = [
                ScanTask(
                    str(u.logs[i].log),
                    u.logs[i].base_offset,
                    opts.ctx.limits,
                    opts.index_interval_bytes,
                )
                for u in units
                for i in u.selected
            ]
            sizes = [os.path.getsize(t.path) for t in tasks]
            scans: list[SegmentScan] = run_parallel(
                run_scan_task, tasks, jobs=opts.jobs, sizes=sizes, ctx=opts.ctx
            )
            stats.segments += len(scans)
            stats.bytes += sum(sizes)
            k = 0
            for u in units:
                mine = scans[k : k + len(u.selected)]
                k += len(u.selected)
                _rebuild_unit(u, mine, opts, ops, emit, finding, stats)
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
) -> None:
    state = txnreplay.state_before(u.part, u.logs[u.selected[0]].base_offset, opts.ctx.limits)
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
        _check_unit(u, scans, open_at_start, aborted, opts, emit, finding, stats)
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
                    scan.error_offset,
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
            if old == data:
                stats.files_unchanged += 1
                emit(index_file_obj(path, kind, data, old, dry_run=ops.dry_run, status="unchanged"))
                continue
            ops.replace_file(path, [data])
            stats.files_written += 1
            verb = "rebuilt" if old is not None else "created"
            status = ("would-be-" + verb) if ops.dry_run else verb
            emit(index_file_obj(path, kind, data, old, dry_run=ops.dry_run, status=status))


def _check_unit(
    u: _Unit,
    scans: list[SegmentScan],
    open_at_start: list[dict[int, int]],
    aborted: list[list[index.AbortedTxn] | None],
    opts: RebuildOptions,
    emit: Emit,
    finding: Callable[[Finding], None],
    stats: RebuildStats,
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
                opts.ctx.limits,
            )
        )
    checked = run_parallel(
        run_check_task,
        tasks,
        jobs=opts.jobs,
        sizes=[scans[n].size for n in todo],
        ctx=opts.ctx,
    )
    # the segments with nothing to check count as done too
    opts.ctx.progress.advance(sum(s.size for s in scans) - sum(scans[n].size for n in todo))
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
            report = IndexCheck(
                str(existing or u.part.path / layout.segment_name(seg.base_offset, SUFFIX[kind])),
                kind,
                entry_count(kind, old) if old is not None else None,
                entry_count(kind, data) if data is not None else None,
            )
            if errors:
                report.status = "bad"
                stats.files_bad += 1
                first = errors[0]
                if first.position is not None:
                    report.first_bad_entry = first.position // ENTRY_SIZE[kind]
                report.message = first.message
            elif old is None:
                report.status = "absent" if kind == layout.TXNINDEX and not data else "missing"
            elif data is None:
                report.status = "unchecked"
            elif old == data:
                report.status = "ok"
            else:
                report.status = "differs"
                stats.files_differing += 1
            if report.status in ("bad", "differs") and old is not None and data is not None:
                report.first_difference = first_difference(kind, old, data, seg.base_offset)
            if report.status in ("ok", "absent"):
                stats.files_unchanged += 1
            emit(report.as_obj())

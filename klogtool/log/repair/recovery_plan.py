"""truncate-recovery's plan of a partition, read-only: where each segment's valid bytes end,
what is cut or moved into the quarantine, and which indexes, snapshots, epochs and checkpoints
change (the overview is in :mod:`klogtool.log.repair.recovery`)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, Unpack

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import checkpoint, index
from klogtool.formats.errors import FormatError
from klogtool.formats.records import ZERO_FILL, SegmentScanner
from klogtool.formats.snapshot import parse_snapshot
from klogtool.log import indexcheck, layout, txnreplay
from klogtool.log.atomic import (
    Identity,
    identity,
    read_range,
)
from klogtool.log.context import ReadContext
from klogtool.log.findings import Finding
from klogtool.log.indexer import DEFAULT_INDEX_INTERVAL_BYTES
from klogtool.log.repair import headers, index_diff, parallel
from klogtool.log.segment import mapped, read_small
from klogtool.log.targets import PartitionTarget, symlinked_files

if TYPE_CHECKING:
    from klogtool import events

QUARANTINE_DIR = ".klogtool-quarantine"
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
IN_PROGRESS = "in-progress"
COMPLETE = "complete"
RESTORED = "restored"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
RECOVERY_POINT = "recovery-point-offset-checkpoint"

# Piece actions (one quarantine manifest entry each)
CUT = "cut"  # bytes [start, end) of a .log copied to the quarantine, then truncated away
ZEROS = "zeros"  # a zero-filled tail [start, end) truncated away (recorded, not copied)
MOVE = "move"  # a whole file moved into the quarantine
COPY = "copy"  # the previous contents of a file that was then rewritten
CREATED = "created"  # a file that did not exist before (restore deletes it)


@dataclass
class RecoveryOptions:
    ctx: ReadContext = field(kw_only=True)
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    from_recovery_point: bool = False
    quarantine: Path | None = None  # --quarantine DIR
    jobs: int = 1
    dry_run: bool = False


@dataclass
class Piece:
    """One entry of a quarantine manifest."""

    action: str
    source: str  # a file name in the partition dir (or the log dir, see ``where``)
    where: str = "partition"  # "partition" | "log_dir"
    stored: str | None = None  # the file name in the quarantine dir
    start: int = 0
    end: int = 0
    sha256: str | None = None
    kind: str = ""
    first_offset: int | None = None
    last_offset: int | None = None
    batches: int = 0
    records: int = 0
    seq: int = 0

    @classmethod
    def whole(cls, action: str, path: Path, kind: str, where: str = "partition") -> Piece:
        """The whole of the file ``path``, stored under its own name."""
        size = path.stat().st_size
        return cls(action, path.name, where, path.name, 0, size, _sha256(path), kind)

    def same(self, other: Piece) -> bool:
        return (self.action, self.source, self.where, self.start, self.end, self.sha256) == (
            other.action,
            other.source,
            other.where,
            other.start,
            other.end,
            other.sha256,
        )


@dataclass
class CheckpointChange:
    file: str  # name in the log dir
    topic: str
    partition: int
    old: int
    new: int


@dataclass
class Rewrite:
    path: Path
    kind: str
    data: bytes
    existed: bool
    entries: int


@dataclass
class PartitionPlan:
    path: Path
    display: str
    log_dir: Path
    status: str = "clean"  # clean | recovered | skipped | empty
    reason: str | None = None  # the error code of the first invalid batch
    message: str | None = None
    truncate: tuple[Path, int, int] | None = None  # (.log, valid bytes, size)
    truncate_id: Identity | None = None  # the .log's (device, inode) when planned
    truncated_base: int | None = None
    moves: list[Piece] = field(default_factory=list)  # in execution order
    cuts: list[Piece] = field(default_factory=list)
    copies: list[Piece] = field(default_factory=list)
    created: list[Piece] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    epochs: bytes | None = None  # the new leader-epoch-checkpoint
    epochs_dropped: list[tuple[int, int]] = field(default_factory=list)
    checkpoints: list[CheckpointChange] = field(default_factory=list)
    log_end_offset_before: int | None = None
    log_end_offset: int | None = None
    bytes_kept: int = 0
    records_kept: int = 0
    bytes_quarantined: int = 0
    records_quarantined: int = 0
    segments_recovered: int = 0
    segments_trusted: int = 0
    segments_removed: int = 0
    findings: list[Finding] = field(default_factory=list)
    quarantine: Path | None = None
    operations: int = 0

    @property
    def changes(self) -> bool:
        return bool(self.truncate or self.moves or self.rewrites or self.epochs or self.checkpoints)

    def skip(self, code: str, message: str, path: str | None = None, **kw: Any) -> None:
        self.status = "skipped"
        self.reason = code
        self.message = message
        self.findings.append(
            Finding(
                "error", code, path or str(self.path), kw.get("position"), kw.get("offset"), message
            )
        )

    def as_obj(self, dry_run: bool) -> events.TruncateRecoveryPartition:
        """The ``partition`` object: the outcome for this partition."""
        return {
            "type": "partition",
            "path": self.display,
            "status": self.status,
            "dry_run": dry_run,
            "reason": self.reason,
            "message": self.message,
            "truncated_segment": self.truncated_base,
            "truncated_at": self.truncate[1] if self.truncate else None,
            "segments_recovered": self.segments_recovered,
            "segments_trusted": self.segments_trusted,
            "segments_removed": self.segments_removed,
            "bytes_kept": self.bytes_kept,
            "records_kept": self.records_kept,
            "bytes_quarantined": self.bytes_quarantined,
            "records_quarantined": self.records_quarantined,
            "log_end_offset_before": self.log_end_offset_before,
            "log_end_offset": self.log_end_offset,
            "indexes_rebuilt": len(self.rewrites),
            "checkpoints_updated": len(self.checkpoints),
            "quarantine": str(self.quarantine) if self.quarantine else None,
        }


class StepFields(TypedDict, total=False):
    """The fields a step reports besides its op, path and message (each step its own): those of
    events.TruncateRecoveryAction and TruncateRecoveryPlanStep that are not always present (mypy
    checks them against both where step_obj unpacks them)."""

    start: int
    end: int
    to: str
    first_offset: int | None
    last_offset: int | None
    records: int
    sha256: str
    size: int
    log_end_offset: int
    entries: int
    dropped: list[Any]
    topic: str
    partition: int
    old: int
    new: int


def step_obj(
    dry_run: bool, partition_dir: str, op: str, path: str, message: str, fields: StepFields
) -> events.TruncateRecoveryAction | events.TruncateRecoveryPlanStep:
    """The object of one file operation of a recovery or a restore: ``action`` when carried
    out, ``plan_step`` when only reported (--dry-run)."""
    if dry_run:
        return {
            "type": "plan_step",
            "partition_dir": partition_dir,
            "op": op,
            "path": path,
            **fields,
            "message": message,
        }
    return {
        "type": "action",
        "partition_dir": partition_dir,
        "op": op,
        "path": path,
        **fields,
        "message": message,
    }


class Step(Protocol):
    """One step of a recovery or a restore, reported (step_obj) as it is carried out."""

    def __call__(
        self, op: str, path: Path | str, message: str, **fields: Unpack[StepFields]
    ) -> None: ...


# -- planning (read-only) -------------------------------------------------------------------


def _sha256(path: Path, start: int = 0, end: int | None = None) -> str:
    """SHA-256 of bytes ``[start, end)``, read without following a link."""
    h = hashlib.sha256()
    if end is None:
        end = os.lstat(path).st_size
    for block in read_range(path, start, end):
        h.update(block)
    return h.hexdigest()


def _readable(path: Path, start: int, end: int) -> tuple[int, int, int | None, int | None]:
    """(batches, records, first offset, last offset) of the intact batches in a byte range
    (framing readable, CRC valid), walking over bad CRCs like ``verify`` does."""
    batches = records = 0
    first = last = None
    with mapped(path) as buf:
        scanner = SegmentScanner(
            buf[start:end], stop_on_crc=False, strict=False, base_position=start
        )
        for batch in scanner:
            if not scanner.crc_valid:
                continue
            batches += 1
            try:
                records += batch.count
            except FormatError:
                pass
            if first is None:
                first = batch.header_offset
            last = batch.last_offset
        del scanner
    return batches, records, first, last


def _file_piece(path: Path, kind: str) -> Piece:
    piece = Piece.whole(MOVE, path, kind)
    if kind == layout.LOG:
        piece.batches, piece.records, piece.first_offset, piece.last_offset = _readable(
            path, 0, piece.end
        )
    return piece


def read_recovery_point(part_dir: Path) -> int:
    """The partition's entry in its log dir's recovery-point-offset-checkpoint (missing: 0,
    as for the broker)."""
    parsed = layout.parse_partition_dir_name(part_dir.name)
    cp = part_dir.parent / RECOVERY_POINT
    if parsed is None or not cp.is_file():
        return 0
    try:
        entries = checkpoint.parse_offset_checkpoint(read_small(cp)).entries
    except FormatError as e:
        raise InputError(
            f"cannot read the recovery point: {e}",
            path=str(cp),
            position=e.position,
            code=Code.CHECKPOINT_CORRUPT,
        ) from None
    return entries.get(parsed, 0)


def _checkpoint_key(part_dir: Path) -> tuple[str, int] | None:
    """(topic, partition) as checkpoints name it; None for -delete/-future/-stray dirs."""
    parsed = layout.parse_partition_dir_name(part_dir.name)
    if parsed is None or part_dir.name != f"{parsed[0]}-{parsed[1]}":
        return None
    return parsed


def plan_partition(
    target: PartitionTarget,
    opts: RecoveryOptions,
) -> PartitionPlan:
    """Everything truncate-recovery would do to one partition (nothing is changed)."""
    part_dir = target.path
    plan = PartitionPlan(part_dir, target.display, target.log_dir)
    links = symlinked_files(part_dir)
    if links:
        plan.skip(
            Code.SYMLINK,
            f"{links[0].name} is a symlink: klogtool does not write through links",
            str(links[0]),
        )
        return plan
    part = layout.scan_partition_dir(part_dir)
    logs = [s for s in part.segments if s.log is not None]
    if not logs:
        plan.status = "empty"
        plan.message = "no segments"
        return plan
    start = 0
    if target.only_base is not None:
        match = [i for i, s in enumerate(logs) if s.base_offset == target.only_base]
        if not match:
            plan.skip(Code.LOG_MISSING, f"no .log for base offset {target.only_base}")
            return plan
        start = match[0]
    elif opts.from_recovery_point:
        rp = read_recovery_point(part_dir)
        start = max([i for i, s in enumerate(logs) if s.base_offset <= rp], default=0)
    trusted = logs[:start]
    recovered = logs[start:]
    plan.segments_trusted = len(trusted)
    tasks = [
        headers.ScanTask(
            str(s.log),
            s.base_offset,
            opts.ctx.limits,
            opts.index_interval_bytes,
            count_records=True,
        )
        for s in recovered
    ]
    sizes = [os.path.getsize(t.path) for t in tasks]
    scans: list[headers.SegmentScan] = parallel.run_parallel(
        headers.run_scan_task, tasks, jobs=opts.jobs, sizes=sizes, ctx=opts.ctx
    )
    walked = _walk_scans(plan, recovered, scans, opts)
    if walked is False:
        return plan
    t_index = walked
    kept = scans if t_index is None else scans[: t_index + 1]
    plan.segments_recovered = len(kept)
    new_leo = kept[-1].next_offset
    plan.log_end_offset = new_leo
    plan.bytes_kept = sum(os.path.getsize(str(s.log)) for s in trusted)
    plan.bytes_kept += sum(s.valid_bytes for s in kept)
    plan.records_kept = sum(s.records for s in kept)
    quarantined_last: int | None = None
    if t_index is not None:
        _plan_cut(plan, part, recovered[t_index], scans[t_index])
    for piece in plan.cuts + plan.moves:
        if piece.kind == layout.LOG:
            plan.bytes_quarantined += piece.end - piece.start
            plan.records_quarantined += piece.records
            if piece.last_offset is not None:
                quarantined_last = max(quarantined_last or -1, piece.last_offset)
    plan.log_end_offset_before = max(
        new_leo, quarantined_last + 1 if quarantined_last is not None else new_leo
    )
    _plan_snapshots(plan, part, new_leo)
    _plan_indexes(plan, part, recovered, kept, t_index, opts)
    _plan_epochs(plan, part, new_leo)
    _plan_checkpoints(plan, part_dir, new_leo)
    _plan_clean_shutdown(plan, part_dir)
    if plan.changes:
        plan.status = "recovered"
    return plan


def _walk_scans(
    plan: PartitionPlan,
    recovered: list[layout.SegmentFiles],
    scans: list[headers.SegmentScan],
    opts: RecoveryOptions,
) -> int | None | Literal[False]:
    """Check the scans in order (a segment whose offsets do not follow the previous one's is
    scanned again with that bound): the index of the segment to truncate, None when all are
    clean, or False when the partition is skipped (``plan`` says why)."""
    prev_last: int | None = None
    for i, scan in enumerate(scans):
        seg = recovered[i]
        if (
            prev_last is not None
            and scan.first_offset is not None
            and scan.first_offset <= prev_last
        ):
            with mapped(str(seg.log)) as buf:
                scan = headers.scan_segment(
                    buf,
                    seg.base_offset,
                    limits=opts.ctx.limits,
                    index_interval_bytes=opts.index_interval_bytes,
                    prev_last_offset=prev_last,
                    count_records=True,
                    path=str(seg.log),
                )
            scans[i] = scan
        if scan.error_code == headers.OFFSET_OVERFLOW:
            plan.skip(
                headers.OFFSET_OVERFLOW,
                f"{scan.error}; klogtool does not split segments: let the broker load it",
                scan.path,
                position=scan.valid_bytes,
            )
            return False
        if not scan.clean:
            return i
        if i + 1 < len(recovered) and scan.last_offset is not None:
            nxt = recovered[i + 1].base_offset
            if scan.last_offset >= nxt:
                plan.skip(
                    Code.SEGMENT_OVERLAP,
                    f"segment {seg.base_offset} ends at offset {scan.last_offset}, not below the "
                    f"next segment's base offset {nxt}: truncation cannot repair overlapping "
                    f"segments",
                    scan.path,
                    offset=scan.last_offset,
                )
                return False
        if scan.last_offset is not None:
            prev_last = scan.last_offset
    return None


def _plan_cut(
    plan: PartitionPlan,
    part: layout.PartitionDir,
    t_seg: layout.SegmentFiles,
    t_scan: headers.SegmentScan,
) -> None:
    """The cut of the segment to truncate, and every later segment moved to the quarantine."""
    assert t_seg.log is not None
    plan.reason = t_scan.error_code or t_scan.end
    plan.message = f"{t_seg.log.name}: {t_scan.error or t_scan.end} at byte {t_scan.valid_bytes}"
    plan.truncated_base = t_seg.base_offset
    if t_scan.valid_bytes < t_scan.size:
        plan.truncate = (t_seg.log, t_scan.valid_bytes, t_scan.size)
        # checked again when copying and truncating: a file swapped in since is refused
        plan.truncate_id = identity(t_seg.log)
        if t_scan.end == ZERO_FILL:
            cut = Piece(
                ZEROS,
                t_seg.log.name,
                start=t_scan.valid_bytes,
                end=t_scan.size,
                kind=layout.LOG,
            )
        else:
            cut = Piece(
                CUT,
                t_seg.log.name,
                stored=f"{t_seg.log.name}.{t_scan.valid_bytes}-{t_scan.size}",
                start=t_scan.valid_bytes,
                end=t_scan.size,
                sha256=_sha256(t_seg.log, t_scan.valid_bytes, t_scan.size),
                kind=layout.LOG,
            )
            cut.batches, cut.records, cut.first_offset, cut.last_offset = _readable(
                t_seg.log, t_scan.valid_bytes, t_scan.size
            )
        plan.cuts.append(cut)
    # every later segment (and any index files left without their .log) goes, highest
    # first, indexes before their .log
    later = [s for s in part.segments if s.base_offset > t_seg.base_offset]
    for seg in sorted(later, key=lambda s: s.base_offset, reverse=True):
        for kind in (layout.TXNINDEX, layout.TIMEINDEX, layout.INDEX, layout.LOG):
            p = getattr(seg, kind)
            if p is not None:
                plan.moves.append(_file_piece(p, kind))
        if seg.log is not None:
            plan.segments_removed += 1


def _plan_snapshots(plan: PartitionPlan, part: layout.PartitionDir, new_leo: int) -> None:
    """Producer snapshots beyond the new end, and unreadable ones, to the quarantine."""
    # producer snapshots beyond the new end, and unreadable ones (the broker deletes both
    # on load; a corrupt one would otherwise hide the older snapshots it falls back to)
    for snap in part.snapshots:
        offset = layout.offset_from_name(snap)
        if offset is not None and offset > new_leo:
            plan.moves.append(_file_piece(snap, layout.SNAPSHOT))
            continue
        try:
            parse_snapshot(read_small(snap))
        except (FormatError, OSError) as e:
            plan.moves.append(_file_piece(snap, layout.SNAPSHOT))
            plan.findings.append(
                Finding(
                    "warning",
                    Code.SNAPSHOT_CORRUPT,
                    str(snap),
                    e.position if isinstance(e, FormatError) else None,
                    offset,
                    f"{e}: quarantined (the broker deletes it and rebuilds producer state from "
                    f"an older snapshot or the log)",
                )
            )


def _plan_indexes(
    plan: PartitionPlan,
    part: layout.PartitionDir,
    recovered: list[layout.SegmentFiles],
    kept: list[headers.SegmentScan],
    t_index: int | None,
    opts: RecoveryOptions,
) -> None:
    """Index files to rewrite: the truncated segment's, and those of recovered segments whose
    indexes the broker would rebuild (missing, or failing the checks)."""
    part_dir = part.path
    # indexes: the truncated segment's, and those of recovered segments that need recovery
    initial = txnreplay.state_before(part, recovered[0].base_offset, opts.ctx.limits)
    chained = txnreplay.chain(initial, [scan.events for scan in kept])
    check_tasks: list[index_diff.CheckTask] = []
    checked: list[int] = []
    needs: dict[int, bool] = {}
    for i in range(len(kept)):
        seg = recovered[i]
        if i == t_index or seg.index is None or seg.timeindex is None:
            needs[i] = True  # truncated, or the broker would recover it (missing index)
            continue
        if index_diff.matches_rebuild(seg, kept[i], chained[i][1]):
            continue  # exactly the rebuild
        checked.append(i)
        check_tasks.append(
            index_diff.CheckTask(
                seg.base_offset,
                str(seg.log),
                str(seg.index),
                str(seg.timeindex),
                str(seg.txnindex) if seg.txnindex else None,
                i == len(kept) - 1,
                tuple(sorted(chained[i][0].items())),
                opts.ctx.limits,
            )
        )
    results = parallel.run_parallel(
        index_diff.run_check_task,
        check_tasks,
        jobs=opts.jobs,
        sizes=[kept[i].size for i in checked],
        ctx=opts.ctx.quiet(),  # the bar counted these bytes while scanning
    )
    for i, found in zip(checked, results, strict=True):
        seg = recovered[i]
        if seg.txnindex is not None:
            found += indexcheck.txn_entry_problems(
                seg.txnindex, seg.txnindex.read_bytes(), chained[i][1]
            )
        needs[i] = any(f.severity == "error" for f in found)
    for i, scan in enumerate(kept):
        if not needs.get(i):
            continue
        seg = recovered[i]
        new = {
            layout.INDEX: scan.index_bytes,
            layout.TIMEINDEX: scan.timeindex_bytes,
            layout.TXNINDEX: index.encode_txn_index(chained[i][1]),
        }
        for kind, data in new.items():
            existing: Path | None = getattr(seg, kind)
            if existing is None and kind == layout.TXNINDEX and not data:
                continue
            if existing is not None and existing.read_bytes() == data:
                continue
            path = existing or part_dir / layout.segment_name(
                seg.base_offset, index_diff.SUFFIX[kind]
            )
            plan.rewrites.append(
                Rewrite(path, kind, data, existing is not None, index_diff.entry_count(kind, data))
            )
            if existing is not None:
                plan.copies.append(Piece.whole(COPY, existing, kind))
            else:
                # its size and SHA-256: --restore deletes it only while it is still this
                plan.created.append(
                    Piece(
                        CREATED,
                        path.name,
                        end=len(data),
                        sha256=hashlib.sha256(data).hexdigest(),
                        kind=kind,
                    )
                )


def _plan_epochs(plan: PartitionPlan, part: layout.PartitionDir, new_leo: int) -> None:
    """Leader epochs at or beyond the new end, when data was cut."""
    # leader epochs starting at or beyond the new end (LeaderEpochFileCache.truncateFromEnd),
    # when data was cut: where nothing was, the broker's own load does the same, and an entry
    # at the end of an untouched log (an empty partition's "0 0") is no reason for a quarantine
    data_cut = plan.truncate is not None or any(m.kind == layout.LOG for m in plan.moves)
    lec = part.leader_epoch_checkpoint
    if lec is not None and data_cut:
        try:
            entries = checkpoint.parse_leader_epoch_checkpoint(read_small(lec))
        except (FormatError, OSError) as e:
            plan.findings.append(
                Finding(
                    "warning",
                    Code.LEADER_EPOCH_CHECKPOINT_CORRUPT,
                    str(lec),
                    None,
                    None,
                    f"cannot read it ({e}): left as it is",
                )
            )
        else:
            keep = [e for e in entries if e.start_offset < new_leo]
            if len(keep) != len(entries):
                plan.epochs = checkpoint.encode_leader_epoch_checkpoint(keep)
                plan.epochs_dropped = [(e.epoch, e.start_offset) for e in entries if e not in keep]
                plan.copies.append(Piece.whole(COPY, lec, layout.LEADER_EPOCH_CHECKPOINT))


def _plan_checkpoints(plan: PartitionPlan, part_dir: Path, new_leo: int) -> None:
    """Log-dir offset checkpoints that point past the new end."""
    # log-dir checkpoints that point past the new end
    key = _checkpoint_key(part_dir)
    if key is not None:
        for name in layout.OFFSET_CHECKPOINTS:
            cp = part_dir.parent / name
            if not cp.is_file() or cp.is_symlink():
                continue
            try:
                values = checkpoint.parse_offset_checkpoint(read_small(cp)).entries
            except (FormatError, OSError) as e:
                plan.findings.append(
                    Finding(
                        "warning",
                        Code.CHECKPOINT_CORRUPT,
                        str(cp),
                        None,
                        None,
                        f"cannot read it ({e}): left as it is",
                    )
                )
                continue
            old = values.get(key)
            if old is not None and old > new_leo:
                plan.checkpoints.append(CheckpointChange(name, key[0], key[1], old, new_leo))


def _plan_clean_shutdown(plan: PartitionPlan, part_dir: Path) -> None:
    """The clean-shutdown marker goes when the log changes (the broker must recover it)."""
    # the broker must not skip recovery of a log changed under it
    marker = part_dir.parent / CLEAN_SHUTDOWN
    if (plan.truncate or plan.segments_removed) and marker.is_file() and not marker.is_symlink():
        plan.moves.insert(0, Piece.whole(MOVE, marker, layout.CLEAN_SHUTDOWN, "log_dir"))

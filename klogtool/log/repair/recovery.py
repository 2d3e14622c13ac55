"""``truncate-recovery`` as a library: the broker's log recovery, offline, losing no byte.

What the broker's ``LogLoader``/``LogSegment.recover`` does after an unclean shutdown
(docs/kafka-rules.md: Loading and recovery), per partition, from the recovery point (or from the
first segment):

1. walk each segment's batches; the first invalid one (size, CRC, structure, zero fill, torn
   tail) is where the segment is truncated, and every later segment of the partition goes;
2. the truncated segment's ``.index``/``.timeindex``/``.txnindex`` are rebuilt (so are those of
   any recovered segment whose index is missing or would mis-seek);
3. producer snapshots beyond the new log end offset go, leader-epoch entries starting at or
   beyond it go (``truncateFromEnd``), and log-dir checkpoints pointing past it are lowered
   to it (recovery point, high watermark, log start offset, cleaner offset).

**Where the truncation point is.** The walk is the broker's (a batch is invalid when its size
is below the minimum, its CRC does not match, it is torn or zero-filled) made strict in what no
broker ever writes but its recovery lets through: a magic outside 0..2 (the v2 CRC does not
cover it), negative offset deltas or record counts, and offsets that do not increase, within a
segment and from one segment to the next. The broker catches a decreasing offset only when its
offset-index append fails, and then empties the whole segment; klogtool truncates at the batch
instead, which keeps more. Either way, what klogtool cuts the broker would also have cut or
served wrongly. A batch whose offset does not fit its segment (the broker splits such a
segment, ``LogSegmentOffsetOverflowException``) is not something truncation repairs: that
partition is skipped with an error.

**Unlike the broker, nothing is deleted.** The cut tail, the removed segments and snapshots,
and the previous contents of every file rewritten go to a quarantine directory
(``<partition>/.klogtool-quarantine/<UTC timestamp>/``, or ``<DIR>/<partition>/<timestamp>/``)
with a ``manifest.json`` saying what came from where: byte ranges, offsets, record counts,
SHA-256. A zero-filled tail (a preallocated segment) is recorded, not copied. ``restore``
puts everything back, byte for byte.

**Crash safety.** Every change goes through :class:`~klogtool.log.atomic.FileOps` in an order
where a crash at any point leaves a log a re-run or the broker completes: the manifest is
written first (state ``in-progress``) and copies are fsynced before anything is changed; the
clean-shutdown marker goes first (a broker must not skip recovery of a half-repaired log);
checkpoints are lowered next (a lower recovery point only means more recovery); later segments
leave highest first (the log stays a prefix of itself); the truncation is one ``ftruncate``;
indexes are replaced atomically. A re-run resumes the interrupted quarantine instead of
starting a second one.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from klogtool import __version__
from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.formats import checkpoint, index
from klogtool.formats.errors import FormatError
from klogtool.formats.records import ZERO_FILL, SegmentScanner
from klogtool.formats.snapshot import parse_snapshot
from klogtool.log import layout, txnreplay
from klogtool.log.atomic import (
    CLEANED,
    FileOps,
    Identity,
    identity,
    read_range,
)
from klogtool.log.check import indexcheck
from klogtool.log.findings import Finding, FindingCounts
from klogtool.log.indexer import DEFAULT_INDEX_INTERVAL_BYTES
from klogtool.log.repair import rebuild
from klogtool.log.segment import mapped, read_small
from klogtool.log.targets import PartitionTarget, Targets, symlinked_files
from klogtool.log.writing import interrupted_obj, writing_session

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

Emit = Callable[[dict[str, Any]], None]


@dataclass
class RecoveryOptions:
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

    def report(self, dry_run: bool) -> dict[str, Any]:
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
    size = path.stat().st_size
    piece = Piece(MOVE, path.name, stored=path.name, end=size, sha256=_sha256(path), kind=kind)
    if kind == layout.LOG:
        piece.batches, piece.records, piece.first_offset, piece.last_offset = _readable(
            path, 0, size
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
    progress: Callable[[int], None] | None = None,
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
        rebuild.ScanTask(str(s.log), s.base_offset, opts.index_interval_bytes, count_records=True)
        for s in recovered
    ]
    sizes = [os.path.getsize(t.path) for t in tasks]
    scans: list[rebuild.SegmentScan] = rebuild.run_parallel(
        rebuild.run_scan_task, tasks, jobs=opts.jobs, sizes=sizes, progress=progress
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
    scans: list[rebuild.SegmentScan],
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
                scan = rebuild.scan_segment(
                    buf,
                    seg.base_offset,
                    index_interval_bytes=opts.index_interval_bytes,
                    prev_last_offset=prev_last,
                    count_records=True,
                    path=str(seg.log),
                )
            scans[i] = scan
        if scan.error_code == rebuild.OFFSET_OVERFLOW:
            plan.skip(
                rebuild.OFFSET_OVERFLOW,
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
    t_scan: rebuild.SegmentScan,
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
    kept: list[rebuild.SegmentScan],
    t_index: int | None,
    opts: RecoveryOptions,
) -> None:
    """Index files to rewrite: the truncated segment's, and those of recovered segments whose
    indexes the broker would rebuild (missing, or failing the checks)."""
    part_dir = part.path
    # indexes: the truncated segment's, and those of recovered segments that need recovery
    initial = txnreplay.state_before(part, recovered[0].base_offset)
    chained = txnreplay.chain(initial, [scan.events for scan in kept])
    check_tasks: list[rebuild.CheckTask] = []
    checked: list[int] = []
    needs: dict[int, bool] = {}
    for i in range(len(kept)):
        seg = recovered[i]
        if i == t_index or seg.index is None or seg.timeindex is None:
            needs[i] = True  # truncated, or the broker would recover it (missing index)
            continue
        if rebuild.matches_rebuild(seg, kept[i], chained[i][1]):
            continue  # exactly the rebuild
        checked.append(i)
        check_tasks.append(
            rebuild.CheckTask(
                seg.base_offset,
                str(seg.log),
                str(seg.index),
                str(seg.timeindex),
                str(seg.txnindex) if seg.txnindex else None,
                i == len(kept) - 1,
                tuple(sorted(chained[i][0].items())),
            )
        )
    results = rebuild.run_parallel(
        rebuild.run_check_task,
        check_tasks,
        jobs=opts.jobs,
        sizes=[kept[i].size for i in checked],
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
            path = existing or part_dir / layout.segment_name(seg.base_offset, rebuild.SUFFIX[kind])
            plan.rewrites.append(
                Rewrite(path, kind, data, existing is not None, rebuild.entry_count(kind, data))
            )
            if existing is not None:
                plan.copies.append(
                    Piece(
                        COPY,
                        path.name,
                        stored=path.name,
                        end=existing.stat().st_size,
                        sha256=_sha256(existing),
                        kind=kind,
                    )
                )
            else:
                plan.created.append(Piece(CREATED, path.name, kind=kind))


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
                plan.copies.append(
                    Piece(
                        COPY,
                        lec.name,
                        stored=lec.name,
                        end=lec.stat().st_size,
                        sha256=_sha256(lec),
                        kind=layout.LEADER_EPOCH_CHECKPOINT,
                    )
                )


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
        plan.moves.insert(
            0,
            Piece(
                MOVE,
                CLEAN_SHUTDOWN,
                where="log_dir",
                stored=CLEAN_SHUTDOWN,
                end=marker.stat().st_size,
                sha256=_sha256(marker),
                kind=layout.CLEAN_SHUTDOWN,
            ),
        )


# -- the quarantine ---------------------------------------------------------------------------


def quarantine_root(part_dir: Path, custom: Path | None) -> Path:
    return part_dir / QUARANTINE_DIR if custom is None else custom / part_dir.name


def _read_manifest_text(path: Path) -> str:
    """A manifest's text, read without following a link (a planted link is refused)."""
    size = os.lstat(path).st_size
    if size > 64 << 20:
        raise ValueError("too large for a manifest")
    return b"".join(read_range(path, 0, size)).decode("utf-8")


def load_manifest(qdir: Path) -> dict[str, Any]:
    path = qdir / MANIFEST
    try:
        data = json.loads(_read_manifest_text(path))
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            raise ValueError("not a klogtool quarantine manifest (version 1)")
        data["pieces"] = [Piece(**p) for p in data.get("pieces", [])]
        data["checkpoints"] = [CheckpointChange(**c) for c in data.get("checkpoints", [])]
    except (OSError, ValueError, TypeError, RefusedError) as e:
        raise InputError(
            f"cannot read the quarantine manifest: {e}", path=str(path), code=Code.BAD_MANIFEST
        ) from None
    check_manifest(data, path)
    return data


# what a manifest may name: only files klogtool itself moves, copies or creates
_PARTITION_KINDS = {
    layout.LOG,
    layout.INDEX,
    layout.TIMEINDEX,
    layout.TXNINDEX,
    layout.SNAPSHOT,
    layout.LEADER_EPOCH_CHECKPOINT,
}
_LOG_DIR_NAMES = {CLEAN_SHUTDOWN, *layout.OFFSET_CHECKPOINTS}
_ACTIONS = {CUT, ZEROS, MOVE, COPY, CREATED}


def _plain_name(name: object) -> bool:
    """A file name without any directory part (no ``/``, not ``.`` or ``..``)."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and "\0" not in name
    )


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_manifest(manifest: dict[str, Any], path: Path) -> None:
    """Refuse (exit 4) a manifest that names anything klogtool would not have written: a
    ``source`` that is not a plain name of a segment, index, snapshot or leader-epoch file
    of the partition (or a checkpoint / the clean-shutdown marker of the log dir), a
    ``stored`` name that is not a plain name inside the run dir, odd byte ranges."""

    def bad(what: str) -> RefusedError:
        return RefusedError(
            f"the quarantine manifest {what}: not acting on it",
            path=str(path),
            code=Code.BAD_MANIFEST,
            hint="klogtool writes plain file names only; this manifest was changed or is "
            "not klogtool's",
        )

    for p in manifest["pieces"]:
        if p.action not in _ACTIONS:
            raise bad(f"has an unknown action {p.action!r}")
        if not _plain_name(p.source):
            raise bad(f"names a source {p.source!r} outside its directory")
        if p.where == "partition":
            kind = layout.file_kind(Path(p.source))
            if kind not in _PARTITION_KINDS or kind != p.kind:
                raise bad(f"names {p.source!r}, not a file klogtool quarantines")
            if p.action in (CUT, ZEROS) and kind != layout.LOG:
                raise bad(f"cuts {p.source!r}, which is not a .log")
        elif p.where == "log_dir":
            if p.source not in _LOG_DIR_NAMES or p.action not in (MOVE, COPY):
                raise bad(f"names {p.source!r} in the log dir")
        else:
            raise bad(f"has an unknown place {p.where!r}")
        if p.action in (CUT, MOVE, COPY):
            if not _plain_name(p.stored) or p.stored == MANIFEST or p.stored.endswith(CLEANED):
                raise bad(f"names a stored file {p.stored!r} outside its run directory")
        elif p.stored is not None:
            raise bad(f"stores {p.stored!r} for a {p.action} piece")
        if not (_is_int(p.start) and _is_int(p.end) and 0 <= p.start <= p.end):
            raise bad(f"has a bad byte range for {p.source!r}")
        if p.sha256 is not None and not isinstance(p.sha256, str):
            raise bad(f"has a bad SHA-256 for {p.source!r}")
        if not _is_int(p.seq):
            raise bad("has a bad sequence number")
    for c in manifest["checkpoints"]:
        if c.file not in layout.OFFSET_CHECKPOINTS or not (
            isinstance(c.topic, str) and _is_int(c.partition) and _is_int(c.old) and _is_int(c.new)
        ):
            raise bad(f"has a bad checkpoint change {c.file!r}")
    if not isinstance(manifest.get("partition"), str):
        raise bad("names no partition")
    if manifest.get("truncated_segment") is not None and not _is_int(manifest["truncated_segment"]):
        raise bad("has a bad truncated segment")
    if manifest.get("state") not in (IN_PROGRESS, COMPLETE, RESTORED):
        raise bad("has an unknown state")


def _dump_manifest(manifest: dict[str, Any]) -> bytes:
    out = dict(manifest)
    out["pieces"] = [asdict(p) for p in manifest["pieces"]]
    out["checkpoints"] = [asdict(c) for c in manifest["checkpoints"]]
    return (json.dumps(out, indent=1) + "\n").encode()


def edit_checkpoint(data: bytes, changes: dict[tuple[str, int], tuple[int, int]]) -> bytes:
    """``data`` (an offset checkpoint) with each ``(topic, partition): (from, to)`` entry's
    offset changed where it is ``from``; every other byte kept (no re-sorting), so that
    restore gives back exactly the file the recovery changed."""
    checkpoint.parse_offset_checkpoint(data)  # refuse what is not a checkpoint
    lines = data.split(b"\n")
    for i, line in enumerate(lines[2:], start=2):
        fields = line.split(b" ")
        if len(fields) != 3:
            continue
        try:
            key = (fields[0].decode("utf-8"), int(fields[1]))
            offset = int(fields[2])
        except ValueError:
            continue
        change = changes.get(key)
        if change is not None and offset == change[0]:
            lines[i] = b" ".join([fields[0], fields[1], str(change[1]).encode()])
    return b"\n".join(lines)


def _resumable(root: Path) -> Path | None:
    """The newest quarantine of an interrupted run (its manifest says in-progress, or it has
    none: the run died right after creating it)."""
    if not root.is_dir():
        return None
    runs = sorted((p for p in root.iterdir() if p.is_dir() and not p.is_symlink()), reverse=True)
    for run in runs:
        if not (run / MANIFEST).is_file():
            return run
        try:
            state = json.loads((run / MANIFEST).read_text(encoding="utf-8")).get("state")
        except (OSError, ValueError):
            continue
        if state == IN_PROGRESS:
            return run
        return None  # only the newest run can be resumed
    return None


def _new_run_dir(root: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    run = root / stamp
    n = 1
    while os.path.lexists(run):  # a dangling link with the name is taken too
        n += 1
        run = root / f"{stamp}-{n}"
    return run


def _valid_copy(qdir: Path, piece: Piece) -> bool:
    stored = qdir / (piece.stored or "")
    return (
        piece.stored is not None
        and stored.is_file()
        and not stored.is_symlink()
        and stored.stat().st_size == piece.end - piece.start
        and _sha256(stored) == piece.sha256
    )


def _move(ops: FileOps, src: Path, dst: Path) -> None:
    """Rename, or copy + delete when the quarantine is on another file system."""
    try:
        ops.rename(src, dst)
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        ops.copy_range(src, 0, src.lstat().st_size, dst)
        ops.fsync_dir(dst.parent)
        ops.unlink(src)


# -- applying ---------------------------------------------------------------------------------


def apply_plan(plan: PartitionPlan, opts: RecoveryOptions, ops: FileOps, emit: Emit) -> None:
    """Carry out ``plan`` (with ``ops.dry_run``: only report each step). A quarantine left
    in progress by an interrupted run is resumed (and finished even when nothing else is
    left to do)."""
    part_dir = plan.path
    log_dir = part_dir.parent
    kind = "plan_step" if ops.dry_run else "action"

    def step(op: str, path: Path | str, message: str, **extra: Any) -> None:
        emit(
            {
                "type": kind,
                "partition_dir": plan.display,
                "op": op,
                "path": str(path),
                **extra,
                "message": message,
            }
        )

    root = quarantine_root(part_dir, opts.quarantine)
    if root.is_symlink() or (opts.quarantine is None and root.exists() and not root.is_dir()):
        if plan.changes:
            plan.skip(Code.SYMLINK, f"{root} is not a plain directory: not writing a quarantine")
        return
    resumed = _resumable(root)
    old: dict[str, Any] | None = None
    if resumed is not None and (resumed / MANIFEST).is_file():
        # resume only what this tool wrote for this partition: a manifest that fails the
        # checks, or names another partition, is left alone (nothing in it is touched)
        try:
            old = load_manifest(resumed)
            if Path(old["partition"]).name != part_dir.name:
                raise RefusedError(
                    f"the interrupted quarantine names another partition ({old['partition']})",
                    path=str(resumed / MANIFEST),
                    code=Code.BAD_MANIFEST,
                )
        except (InputError, RefusedError) as e:
            plan.skip(Code.BAD_MANIFEST, f"{e.message}: not resuming it", str(resumed / MANIFEST))
            return
    if not plan.changes and old is None:
        return
    if not plan.changes:
        plan.status = "recovered"
        plan.message = "finished the recovery an interrupted run had started"
    if old is None and not (plan.cuts or plan.moves or plan.copies or plan.checkpoints):
        # nothing is cut, moved or overwritten (only missing indexes are created): there is
        # nothing to keep, so no quarantine directory either
        for r in plan.rewrites:
            ops.replace_file(r.path, [r.data])
            step(
                "create",
                r.path,
                f"create {r.path.name} (rebuilt: {_n(r.entries, 'entry', 'entries')})",
                entries=r.entries,
            )
        plan.operations = ops.count
        return
    qdir = resumed or _new_run_dir(root)
    plan.quarantine = qdir
    pieces: list[Piece] = []
    changes: list[CheckpointChange] = []
    if resumed is not None:
        step("resume", qdir, f"resume the interrupted recovery recorded in {qdir}")
    if old is not None:
        pieces = _surviving_pieces(old["pieces"], qdir, part_dir, ops, step)
        changes = list(old["checkpoints"])
    new_pieces = _new_pieces(plan, pieces, qdir)
    pieces += new_pieces
    for c in plan.checkpoints:
        if not any(
            (o.file, o.topic, o.partition) == (c.file, c.topic, c.partition) for o in changes
        ):
            changes.append(c)
    manifest: dict[str, Any] = {
        "type": "klogtool-quarantine",
        "version": MANIFEST_VERSION,
        "state": IN_PROGRESS,
        "tool": f"klogtool {__version__}",
        "created": (old or {}).get("created") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "partition": str(part_dir),
        "log_dir": str(log_dir),
        "reason": plan.message if old is None else old.get("reason"),
        "truncated_segment": plan.truncated_base
        if old is None or old.get("truncated_segment") is None
        else old["truncated_segment"],
        "log_end_offset_before": (old or {}).get(
            "log_end_offset_before", plan.log_end_offset_before
        ),
        "log_end_offset": plan.log_end_offset,
        "pieces": pieces,
        "checkpoints": changes,
    }

    # 1. the quarantine and its manifest, then copies of every byte about to change
    if not qdir.exists() or ops.dry_run:
        ops.mkdir(qdir)
        step("mkdir", qdir, f"create the quarantine directory {qdir}")
    ops.replace_file(qdir / MANIFEST, [_dump_manifest(manifest)])
    _copy_pieces(plan, new_pieces, qdir, ops, step)
    ops.fsync_dir(qdir)
    # 2. moves: the clean-shutdown marker first, then checkpoints, then whole files
    _apply_moves(plan, new_pieces, qdir, ops, step)
    # 3. the truncation
    if plan.truncate is not None:
        log, valid, size = plan.truncate
        ops.truncate(log, valid, expect=plan.truncate_id)
        step(
            "truncate",
            log,
            f"truncate {log.name} from {size} to {valid} bytes",
            start=valid,
            end=size,
            log_end_offset=plan.log_end_offset,
        )
    # 4. rebuilt indexes, leader epochs
    for r in plan.rewrites:
        ops.replace_file(r.path, [r.data])
        verb = "rewrite" if r.existed else "create"
        step(
            verb,
            r.path,
            f"{verb} {r.path.name} (rebuilt: {_n(r.entries, 'entry', 'entries')})",
            entries=r.entries,
        )
    if plan.epochs is not None:
        lec = part_dir / "leader-epoch-checkpoint"
        ops.replace_file(lec, [plan.epochs])
        dropped = ", ".join(f"epoch {e} from {s}" for e, s in plan.epochs_dropped)
        step(
            "epochs",
            lec,
            f"drop leader epochs at or beyond offset {plan.log_end_offset}: {dropped}",
            dropped=[list(x) for x in plan.epochs_dropped],
        )
    # 5. done
    manifest["state"] = COMPLETE
    ops.replace_file(qdir / MANIFEST, [_dump_manifest(manifest)])
    plan.operations = ops.count


Step = Callable[..., None]  # (op, path, message, **fields): one step of a recovery, reported


def _surviving_pieces(
    old: list[Piece], qdir: Path, part_dir: Path, ops: FileOps, step: Step
) -> list[Piece]:
    """What an interrupted run's manifest lists and really did: copies that are whole, moved
    files that are in the quarantine, zeros recorded before the truncation, created files.
    A copy cut short by the crash is deleted."""
    pieces: list[Piece] = []
    for p in old:
        if p.action in (CUT, COPY):
            if _valid_copy(qdir, p):
                pieces.append(p)
            elif p.stored and os.path.lexists(qdir / p.stored):
                ops.unlink(qdir / p.stored)  # a copy cut short by the crash
                step(
                    "delete",
                    qdir / p.stored,
                    f"delete {qdir / p.stored}, a copy the interrupted run did not finish",
                )
        elif p.action == MOVE:
            if p.stored and (qdir / p.stored).exists():
                pieces.append(p)
        elif p.action == ZEROS:
            src = part_dir / p.source
            if src.is_file() and src.stat().st_size == p.start:
                pieces.append(p)
        elif p.action == CREATED and (part_dir / p.source).exists():
            pieces.append(p)
    return pieces


def _new_pieces(plan: PartitionPlan, pieces: list[Piece], qdir: Path) -> list[Piece]:
    """The plan's pieces not already done by an interrupted run, numbered after ``pieces``,
    each stored under a name free in the quarantine."""
    taken = {p.stored for p in pieces if p.stored}
    seq = max((p.seq for p in pieces), default=0)
    new_pieces: list[Piece] = []
    for p in plan.cuts + plan.copies + plan.moves + plan.created:
        match = next((q for q in pieces if q.same(p)), None)
        if match is not None and p.action != MOVE:
            continue  # already done by the interrupted run
        if p.stored is not None:
            name = p.stored
            n = 1
            while name in taken or os.path.lexists(qdir / name):
                n += 1
                name = f"{p.stored}.{n}"
            p.stored = name
            taken.add(name)
        seq += 1
        p.seq = seq
        new_pieces.append(p)
    return new_pieces


def _copy_pieces(
    plan: PartitionPlan, new_pieces: list[Piece], qdir: Path, ops: FileOps, step: Step
) -> None:
    """Step 1: a copy in the quarantine of every byte about to change (zeros only recorded)."""
    part_dir = plan.path
    for p in new_pieces:
        if p.action in (CUT, COPY):
            assert p.stored is not None
            ops.copy_range(
                part_dir / p.source,
                p.start,
                p.end,
                qdir / p.stored,
                expect=plan.truncate_id if p.action == CUT else None,
            )
            step(
                "copy",
                part_dir / p.source,
                f"copy bytes {p.start}..{p.end} of {p.source}{_offsets(p)} to {qdir / p.stored}",
                start=p.start,
                end=p.end,
                to=str(qdir / p.stored),
                first_offset=p.first_offset,
                last_offset=p.last_offset,
                records=p.records,
                sha256=p.sha256,
            )
        elif p.action == ZEROS:
            step(
                "record",
                part_dir / p.source,
                f"record (not copy) the {p.end - p.start} zero bytes {p.start}..{p.end} of "
                f"{p.source} in the manifest",
                start=p.start,
                end=p.end,
            )


def _apply_moves(
    plan: PartitionPlan, new_pieces: list[Piece], qdir: Path, ops: FileOps, step: Step
) -> None:
    """Step 2: the clean-shutdown marker first, then the checkpoints, then whole files."""
    part_dir = plan.path
    log_dir = part_dir.parent
    moves = [p for p in new_pieces if p.action == MOVE]
    for p in [m for m in moves if m.where == "log_dir"]:
        assert p.stored is not None
        _move(ops, log_dir / p.source, qdir / p.stored)
        ops.fsync_dir(log_dir)
        step(
            "move",
            log_dir / p.source,
            "move the clean-shutdown marker to the quarantine "
            "(the broker must run its recovery on a log changed after its shutdown)",
            to=str(qdir / p.stored),
        )
    for name in sorted({c.file for c in plan.checkpoints}):
        cp = log_dir / name
        edits: dict[tuple[str, int], tuple[int, int]] = {}
        for c in plan.checkpoints:
            if c.file == name:
                edits[(c.topic, c.partition)] = (c.old, c.new)
                step(
                    "checkpoint",
                    cp,
                    f"{name}: {c.topic}-{c.partition}: {c.old} -> {c.new}",
                    topic=c.topic,
                    partition=c.partition,
                    old=c.old,
                    new=c.new,
                )
        # only the changed lines: the file keeps its order and bytes otherwise
        ops.replace_file(cp, [edit_checkpoint(_read_nofollow(cp), edits)])
    for p in [m for m in moves if m.where == "partition"]:
        assert p.stored is not None
        _move(ops, part_dir / p.source, qdir / p.stored)
        step(
            "move",
            part_dir / p.source,
            f"move {p.source} ({p.end} bytes{_offsets(p)}) to {qdir / p.stored}",
            to=str(qdir / p.stored),
            size=p.end,
            first_offset=p.first_offset,
            last_offset=p.last_offset,
            records=p.records,
            sha256=p.sha256,
        )
    if moves:
        ops.fsync_dir(part_dir)


def _n(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _offsets(p: Piece) -> str:
    if p.kind != layout.LOG:
        return ""
    if p.first_offset is None:
        return ", no intact batch"
    records = _n(p.records, "intact record", "intact records")
    return f", offsets {p.first_offset}..{p.last_offset} in {records}"


# -- restoring --------------------------------------------------------------------------------


def _read_nofollow(path: Path, limit: int = 16 << 20) -> bytes:
    size = os.lstat(path).st_size
    if size > limit:
        raise InputError(f"larger than {limit} bytes", path=str(path), code=Code.TOO_LARGE)
    return b"".join(read_range(path, 0, size))


def _runs(root: Path) -> list[Path]:
    """Run dirs (plain directories holding a manifest.json) under a quarantine root, newest
    first."""
    if root.is_symlink() or not root.is_dir():
        return []
    return [
        p
        for p in sorted(root.iterdir(), reverse=True)
        if p.is_dir() and not p.is_symlink() and (p / MANIFEST).is_file()
    ]


def find_quarantine(path: Path, custom: Path | None) -> Path:
    """A quarantine run dir from a --restore PATH: the run dir itself, or a partition dir (its
    newest run not yet restored; the newest run when all are)."""
    if (path / MANIFEST).is_file():
        return path
    runs = _runs(quarantine_root(path, custom))
    for run in runs:
        if load_manifest(run).get("state") != RESTORED:
            return run
    if runs:
        return runs[0]  # all restored: the newest one reports that
    raise InputError(
        "no quarantine to restore here (name a quarantine directory holding manifest.json, "
        "a partition directory with an unrestored one, or a log directory)",
        path=str(path),
        code=Code.NO_QUARANTINE,
    )


def partition_of(qdir: Path, manifest: dict[str, Any], given: Path | None = None) -> Path:
    """The partition a quarantine belongs to: the directory it sits in (default place), or
    the partition PATH given; only a run dir in a --quarantine DIR is placed by its manifest,
    and then only in a partition of the name its own directory has. Never the manifest's
    word alone: a changed manifest must not redirect a restore."""
    if qdir.parent.name == QUARANTINE_DIR:
        part = qdir.parent.parent
    elif given is not None:
        part = given
    else:
        part = Path(manifest["partition"])
        if not part.is_absolute() or part.name != qdir.parent.name:
            raise RefusedError(
                f"the manifest names the partition {part}, not one named like the directory "
                f"the quarantine sits in ({qdir.parent.name})",
                path=str(qdir / MANIFEST),
                code=Code.BAD_MANIFEST,
            )
    if Path(manifest["partition"]).name != part.name:
        raise RefusedError(
            f"the quarantine is of {manifest['partition']}, not of {part}",
            path=str(qdir / MANIFEST),
            code=Code.BAD_MANIFEST,
        )
    if part.is_symlink() or layout.parse_partition_dir_name(part.name) is None:
        raise RefusedError(
            "not a plain partition directory: not restoring into it",
            path=str(part),
            code=Code.BAD_MANIFEST,
        )
    return part


def _zeros(n: int) -> Iterator[bytes]:
    block = bytes(1 << 20)
    while n > 0:
        yield block[: min(n, len(block))]
        n -= len(block)


def restore(qdir: Path, ops: FileOps, emit: Emit, part_dir: Path | None = None) -> dict[str, Any]:
    """Put back everything a truncate-recovery moved to ``qdir``; returns the report object.

    Refuses (exit 4) when the partition has changed since in a way that restoring would break:
    a truncated segment that grew or shrank, segments after it that the recovery did not
    remove (the broker appended since), a file to restore that exists with other contents.
    Re-runnable after a crash: every step checks whether it is already done.
    """
    manifest = load_manifest(qdir)
    if part_dir is None:
        part_dir = partition_of(qdir, manifest)
    log_dir = part_dir.parent
    report: dict[str, Any] = {
        "type": "restore",
        "path": str(qdir),
        "partition": str(part_dir),
        "status": "restored",
        "dry_run": ops.dry_run,
        "files_restored": 0,
        "bytes_restored": 0,
    }
    if manifest["state"] == RESTORED:
        # a restore that died before removing its run dir: finish that
        _remove_run(ops, qdir)
        report["status"] = "already-restored"
        return report
    kind = "plan_step" if ops.dry_run else "action"

    def step(op: str, path: Path, message: str, **extra: Any) -> None:
        emit(
            {
                "type": kind,
                "partition_dir": str(part_dir),
                "op": op,
                "path": str(path),
                **extra,
                "message": message,
            }
        )

    pieces: list[Piece] = manifest["pieces"]

    def where(p: Piece) -> Path:
        return (log_dir if p.where == "log_dir" else part_dir) / p.source

    _check_restore(qdir, manifest, part_dir, where)
    tails = [p for p in pieces if p.action in (CUT, ZEROS)]

    # 1. data tails, so that the log is whole again before later segments come back
    for p in tails:
        src = where(p)
        if src.lstat().st_size == p.end:
            continue
        if p.action == ZEROS:
            chunks: Iterator[bytes] = _zeros(p.end - p.start)
        else:
            assert p.stored is not None
            chunks = read_range(qdir / p.stored, 0, p.end - p.start)
        head = read_range(src, 0, p.start)
        ops.replace_file(src, _chain(head, chunks))
        report["bytes_restored"] += p.end - p.start
        report["files_restored"] += 1
        step(
            "restore",
            src,
            f"put bytes {p.start}..{p.end} back into {p.source}",
            start=p.start,
            end=p.end,
        )
    # 2. moved files, lowest offset first, each .log before its indexes
    order = {layout.LOG: 0, layout.INDEX: 1, layout.TIMEINDEX: 2, layout.TXNINDEX: 3}
    moves = sorted(
        (p for p in pieces if p.action == MOVE),
        key=lambda p: (
            p.where != "partition",
            layout.offset_from_name(Path(p.source)) or 0,
            order.get(p.kind, 4),
        ),
    )
    moved = False
    for p in moves:
        assert p.stored is not None
        stored = qdir / p.stored
        if not os.path.lexists(stored):
            continue  # already back (or never moved)
        _move(ops, stored, where(p))
        moved = True
        report["files_restored"] += 1
        if p.kind == layout.LOG:
            report["bytes_restored"] += p.end
        step("restore", where(p), f"move {p.source} back from the quarantine")
    if moved:
        ops.fsync_dir(part_dir)
        ops.fsync_dir(log_dir)
    # 3. previous contents of rewritten files (newest first, so the oldest wins), then the
    # files the recovery created
    for p in sorted((p for p in pieces if p.action == COPY), key=lambda p: -p.seq):
        assert p.stored is not None
        if not _valid_copy(qdir, p):
            continue  # never taken (a crash before the copy), so the file was not rewritten
        dst = where(p)
        if dst.is_file() and _sha256(dst) == p.sha256:
            continue
        ops.replace_file(dst, read_range(qdir / p.stored, 0, p.end))
        report["files_restored"] += 1
        step("restore", dst, f"restore the previous {p.source}")
    for p in pieces:
        if p.action == CREATED and os.path.lexists(where(p)):
            ops.unlink(where(p))
            step("delete", where(p), f"delete {p.source}, which the recovery created")
    # 4. checkpoint values the recovery lowered
    _restore_checkpoints(manifest["checkpoints"], log_dir, ops, step)
    manifest["state"] = RESTORED
    ops.replace_file(qdir / MANIFEST, [_dump_manifest(manifest)])
    # everything is back: the run dir goes (marked restored first, so that a crash in
    # between leaves a run that the next --restore recognises and removes)
    _remove_run(ops, qdir)
    step("remove", qdir, f"remove the restored quarantine {qdir}")
    if ops.dry_run:
        report["status"] = "would-restore"
    return report


def _restore_checkpoints(
    changes: list[CheckpointChange], log_dir: Path, ops: FileOps, step: Step
) -> None:
    """Checkpoint values a recovery lowered, raised back where they still hold its value."""
    for name in sorted({c.file for c in changes}):
        cp = log_dir / name
        if not cp.is_file() or cp.is_symlink():
            continue
        data = _read_nofollow(cp)
        values = dict(checkpoint.parse_offset_checkpoint(data).entries)
        edits: dict[tuple[str, int], tuple[int, int]] = {}
        for c in changes:
            key = (c.topic, c.partition)
            if c.file == name and values.get(key) == c.new and c.new != c.old:
                edits[key] = (c.new, c.old)
                step(
                    "checkpoint",
                    cp,
                    f"{name}: {c.topic}-{c.partition}: {c.new} -> {c.old}",
                    topic=c.topic,
                    partition=c.partition,
                    old=c.new,
                    new=c.old,
                )
        if edits:
            # only those lines: the file comes back byte for byte
            ops.replace_file(cp, [edit_checkpoint(data, edits)])


def _restore_conflict(message: str, path: Path) -> RefusedError:
    return RefusedError(
        message,
        path=str(path),
        code=Code.RESTORE_CONFLICT,
        hint="the partition changed after the truncation; restore by hand "
        "from the quarantine if you must (see its manifest.json)",
    )


def _check_restore(
    qdir: Path, manifest: dict[str, Any], part_dir: Path, where: Callable[[Piece], Path]
) -> None:
    """The checks of :func:`restore`, all made before anything changes: raises RefusedError
    where restoring would break the partition as it is now."""
    refuse = _restore_conflict
    pieces: list[Piece] = manifest["pieces"]
    tails = [p for p in pieces if p.action in (CUT, ZEROS)]
    for p in tails:
        src = where(p)
        if src.is_symlink():
            raise refuse(f"{p.source} is a symlink: klogtool does not write through links", src)
        size = src.lstat().st_size if src.is_file() else -1
        if size not in (p.start, p.end):
            raise refuse(
                f"{p.source} is {size} bytes, neither the {p.start} left by the truncation nor "
                f"the original {p.end}",
                src,
            )
        if size == p.start and p.action == CUT and not _valid_copy(qdir, p):
            raise refuse(f"the stored tail {p.stored} is missing or damaged", qdir)
    for p in pieces:
        if p.action != MOVE or p.stored is None or not os.path.lexists(qdir / p.stored):
            continue
        if os.path.lexists(where(p)):
            raise refuse(f"{p.source} exists again: not overwriting it", where(p))
        if p.sha256 and _sha256(qdir / p.stored) != p.sha256:
            raise refuse(f"{p.stored} does not match its SHA-256 in the manifest", qdir / p.stored)
    truncated = manifest.get("truncated_segment")
    if truncated is not None and part_dir.is_dir():
        pending = {
            p.source
            for p in pieces
            if p.action == MOVE
            and p.kind == layout.LOG
            and p.stored
            and os.path.lexists(qdir / p.stored)
        }
        back = {p.source for p in pieces if p.action == MOVE and p.kind == layout.LOG} - pending
        for seg in layout.scan_partition_dir(part_dir).segments:
            if seg.log is not None and seg.base_offset > truncated and seg.log.name not in back:
                raise refuse(
                    f"{seg.log.name} was not there when the partition was truncated (the "
                    f"broker has appended since)",
                    seg.log,
                )


def _remove_run(ops: FileOps, qdir: Path) -> None:
    """Remove a restored run dir (its manifest last: until then a re-run knows the run as
    restored), and the default quarantine root once it is empty."""
    if ops.dry_run:
        ops.remove_tree(qdir)
        return
    for child in sorted(qdir.iterdir()):
        if child.name == MANIFEST:
            continue
        if child.is_dir() and not child.is_symlink():
            ops.remove_tree(child)
        else:
            ops.unlink(child)  # a link is removed as a link
    ops.unlink(qdir / MANIFEST)
    ops.rmdir(qdir)
    _remove_empty_root(ops, qdir.parent)


def _remove_empty_root(ops: FileOps, root: Path) -> None:
    if root.name == QUARANTINE_DIR and not root.is_symlink() and not any(root.iterdir()):
        ops.rmdir(root)


def _sweep_finished(ops: FileOps, root: Path) -> bool:
    """Remove empty run dirs (left by a restore that died right after deleting the
    manifest); True when there were any."""
    if root.is_symlink() or not root.is_dir():
        return False
    empty = [
        p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not any(p.iterdir())
    ]
    for p in empty:
        ops.rmdir(p)
    if ops.dry_run:
        return bool(empty)
    finished = bool(empty) or (root.name == QUARANTINE_DIR and not any(root.iterdir()))
    _remove_empty_root(ops, root)  # an empty root alone: the crash came after the run's rmdir
    return finished


def _chain(*parts: Iterator[bytes]) -> Iterator[bytes]:
    for part in parts:
        yield from part


# -- the command's driver ---------------------------------------------------------------------


@dataclass
class RecoveryStats(FindingCounts):
    partitions: int = 0
    recovered: int = 0
    clean: int = 0
    skipped: int = 0
    bytes_kept: int = 0
    records_kept: int = 0
    bytes_quarantined: int = 0
    records_quarantined: int = 0
    errors: int = 0
    warnings: int = 0
    operations: int = 0


def run_recovery(
    targets: Targets,
    opts: RecoveryOptions,
    ops: FileOps,
    emit: Emit,
    *,
    force: bool = False,
    progress: Callable[[int], None] | None = None,
) -> RecoveryStats:
    """truncate-recovery over resolved PATHs: per log dir, its lock; per partition, the
    completion of interrupted operations, the plan, and (unless dry-run) its execution."""
    stats = RecoveryStats()

    def finding(f: Finding) -> None:
        stats.count(f)
        emit(f.as_obj())

    for f in targets.findings:
        finding(f)
        stats.skipped += 1
    _recover_groups(targets, opts, ops, emit, stats, finding, force, progress)
    stats.operations = ops.count
    return stats


def _recover_groups(
    targets: Targets,
    opts: RecoveryOptions,
    ops: FileOps,
    emit: Emit,
    stats: RecoveryStats,
    finding: Callable[[Finding], None],
    force: bool,
    progress: Callable[[int], None] | None,
) -> None:
    for log_dir, group in targets.by_log_dir():
        paths = [t.path for t in group]
        with writing_session(paths, force=force, dry_run=opts.dry_run, ops=ops) as session:
            for message in session.completed.get(log_dir, []):
                emit(interrupted_obj(str(log_dir), message, ops.dry_run))
            for t in group:
                stats.partitions += 1
                done = session.completed.get(t.path, [])
                for message in done:
                    emit(interrupted_obj(t.display, message, ops.dry_run))
                if done and ops.dry_run:
                    emit(
                        {
                            "type": "note",
                            "path": t.display,
                            "message": "the plan below is computed on the directory as it is "
                            "now, before that completion: run without --dry-run to apply both",
                        }
                    )
                plan = plan_partition(t, opts, progress)
                if plan.status != "skipped":
                    apply_plan(plan, opts, ops, emit)
                for f in plan.findings:
                    finding(f)
                if plan.status == "skipped":
                    stats.skipped += 1
                elif plan.status == "recovered":
                    stats.recovered += 1
                else:
                    stats.clean += 1
                stats.bytes_kept += plan.bytes_kept
                stats.records_kept += plan.records_kept
                stats.bytes_quarantined += plan.bytes_quarantined
                stats.records_quarantined += plan.records_quarantined
                emit(plan.report(opts.dry_run))


def _restore_targets(path: Path, custom: Path | None) -> list[tuple[Path, Path | None]]:
    """(run dir, partition PATH given or None) for one --restore PATH: a run dir, a
    partition dir, or a log dir (the newest run of each partition that has one)."""
    if (path / MANIFEST).is_file() or layout.parse_partition_dir_name(path.name) is not None:
        given = None if (path / MANIFEST).is_file() else path
        return [(find_quarantine(path, custom), given)]
    out: list[tuple[Path, Path | None]] = []
    for child in sorted(path.iterdir()):
        if (
            child.is_symlink()
            or not child.is_dir()
            or layout.parse_partition_dir_name(child.name) is None
        ):
            continue
        runs = _runs(quarantine_root(child, custom))
        if runs:
            out.append((find_quarantine(child, custom), child))
    if not out:
        raise InputError(
            "no quarantine to restore here (name a quarantine directory holding manifest.json, "
            "a partition directory with an unrestored one, or a log directory)",
            path=str(path),
            code=Code.NO_QUARANTINE,
        )
    return out


def run_restore(
    paths: list[str],
    custom: Path | None,
    ops: FileOps,
    emit: Emit,
    *,
    force: bool = False,
) -> list[dict[str, Any]]:
    """``--restore``: each PATH a quarantine dir, a partition dir (its newest one), or a log
    dir (the newest one of each of its partitions)."""
    reports = []
    for arg in paths:
        path = Path(arg)
        if not path.exists():
            raise InputError("no such file or directory", path=arg, code=Code.NOT_FOUND)
        path = path.absolute()
        root = quarantine_root(path, custom)
        if (
            not (path / MANIFEST).is_file()
            and layout.parse_partition_dir_name(path.name) is not None
            and not _runs(root)
            and _sweep_finished(ops, root)
        ):
            # the restore was done; only its empty run dir was left
            report = {
                "type": "restore",
                "path": str(root),
                "partition": str(path),
                "status": "already-restored",
                "dry_run": ops.dry_run,
                "files_restored": 0,
                "bytes_restored": 0,
            }
            emit(report)
            reports.append(report)
            continue
        for qdir, given in _restore_targets(path, custom):
            manifest = load_manifest(qdir)
            part_dir = partition_of(qdir, manifest, given)
            if not part_dir.is_dir():
                raise InputError(
                    "the partition directory of this quarantine is gone",
                    path=str(part_dir),
                    code=Code.NOT_FOUND,
                )
            with writing_session([part_dir], force=force, dry_run=ops.dry_run, ops=ops) as session:
                for where, done in session.completed.items():
                    for message in done:
                        emit(interrupted_obj(str(where), message, ops.dry_run))
                report = restore(qdir, ops, emit, part_dir)
            emit(report)
            reports.append(report)
    return reports

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

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.log import layout
from klogtool.log.atomic import (
    FileOps,
)
from klogtool.log.findings import Finding, FindingCounts
from klogtool.log.repair.quarantine import load_manifest, quarantine_root
from klogtool.log.repair.recovery_apply import apply_plan
from klogtool.log.repair.recovery_plan import MANIFEST, RecoveryOptions, plan_partition
from klogtool.log.repair.restore import (
    RestoreReport,
    _runs,
    _sweep_finished,
    find_quarantine,
    partition_of,
    restore,
)
from klogtool.log.targets import Targets
from klogtool.log.writing import writing_session

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.events import Emit

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

    def as_obj(self, dry_run: bool) -> events.TruncateRecoverySummary:
        """The ``summary`` object of a recovery."""
        return {
            "type": "summary",
            "partitions": self.partitions,
            "recovered": self.recovered,
            "clean": self.clean,
            "skipped": self.skipped,
            "bytes_kept": self.bytes_kept,
            "records_kept": self.records_kept,
            "bytes_quarantined": self.bytes_quarantined,
            "records_quarantined": self.records_quarantined,
            "errors": self.errors,
            "warnings": self.warnings,
            "operations": self.operations,
            "dry_run": dry_run,
        }


def restore_summary_obj(
    reports: list[RestoreReport], operations: int, dry_run: bool
) -> events.TruncateRecoverySummary:
    """The ``summary`` object of ``--restore``."""
    return {
        "type": "summary",
        "restored": len(reports),
        "operations": operations,
        "dry_run": dry_run,
    }


def note_obj(path: str, message: str) -> events.TruncateRecoveryNote:
    """A ``note`` on the plan that follows."""
    return {"type": "note", "path": path, "message": message}


def run_recovery(
    targets: Targets,
    opts: RecoveryOptions,
    ops: FileOps,
    emit: Emit,
    *,
    force: bool = False,
) -> RecoveryStats:
    """truncate-recovery over resolved PATHs: per log dir, its lock; per partition, the
    completion of interrupted operations, the plan, and (unless dry-run) its execution."""
    stats = RecoveryStats()

    def finding(f: Finding) -> None:
        stats.count(f)
        emit(f.as_obj())

    for f in targets.findings:
        finding(f)
        if f.code != Code.NOT_LIVE_PARTITION:  # left out on purpose, not a failure (exit 1)
            stats.skipped += 1
    _recover_groups(targets, opts, ops, emit, stats, finding, force)
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
) -> None:
    for log_dir, group in targets.by_log_dir():
        paths = [t.path for t in group]
        with writing_session(paths, force=force, dry_run=opts.dry_run, ops=ops) as session:
            for f in session.busy_findings():
                finding(f)
            for obj in session.interrupted(log_dir, str(log_dir)):
                emit(obj)
            for t in group:
                stats.partitions += 1
                done = session.interrupted(t.path, t.display)
                for obj in done:
                    emit(obj)
                if done and ops.dry_run:
                    emit(
                        note_obj(
                            t.display,
                            "the plan below is computed on the directory as it is now, before "
                            "that completion: run without --dry-run to apply both",
                        )
                    )
                plan = plan_partition(t, opts)
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
                emit(plan.as_obj(opts.dry_run))


def _restore_targets(path: Path, custom: Path | None) -> list[tuple[Path, Path | None]]:
    """(run dir, partition PATH given or None) for one --restore PATH: a run dir, a
    partition dir, or a log dir (the newest run of each partition that has one)."""
    if (path / MANIFEST).is_file() or layout.looks_like_partition_dir(path):
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
) -> list[RestoreReport]:
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
            and layout.looks_like_partition_dir(path)
            and not _runs(root)
            and _sweep_finished(ops, root)
        ):
            # the restore was done; only its empty run dir was left
            report = RestoreReport(str(root), str(path), ops.dry_run, "already-restored")
            emit(report.as_obj())
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
                for where in list(session.completed):
                    for obj in session.interrupted(where, str(where)):
                        emit(obj)
                report = restore(qdir, ops, emit, part_dir)
            emit(report.as_obj())
            reports.append(report)
    return reports

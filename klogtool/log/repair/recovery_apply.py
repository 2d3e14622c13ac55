"""Applying a truncate-recovery plan, in the crash-safe order the overview in
:mod:`klogtool.log.repair.recovery` describes."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from klogtool import __version__
from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.log import layout
from klogtool.log.atomic import (
    FileOps,
)
from klogtool.log.repair.quarantine import (
    _dump_manifest,
    _move,
    _new_run_dir,
    _resumable,
    _valid_copy,
    byte_range,
    edit_checkpoint,
    load_manifest,
    quarantine_root,
    read_nofollow,
)
from klogtool.log.repair.recovery_plan import (
    COMPLETE,
    COPY,
    CREATED,
    CUT,
    IN_PROGRESS,
    MANIFEST,
    MANIFEST_VERSION,
    MOVE,
    ZEROS,
    CheckpointChange,
    PartitionPlan,
    Piece,
    RecoveryOptions,
    Step,
    StepFields,
    step_obj,
)

if TYPE_CHECKING:
    from klogtool.events import Emit

# -- applying ---------------------------------------------------------------------------------


def apply_plan(plan: PartitionPlan, opts: RecoveryOptions, ops: FileOps, emit: Emit) -> None:
    """Carry out ``plan`` (with ``ops.dry_run``: only report each step). A quarantine left
    in progress by an interrupted run is resumed (and finished even when nothing else is
    left to do)."""
    part_dir = plan.path
    log_dir = part_dir.parent

    def step(op: str, path: Path | str, message: str, **fields: Unpack[StepFields]) -> None:
        emit(step_obj(ops.dry_run, plan.display, op, str(path), message, fields))

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
    # even where nothing is cut, moved or overwritten (only missing indexes are created),
    # the quarantine holds a manifest naming the files created: --restore deletes them
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
        assert plan.log_end_offset is not None  # planned with the truncation
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
            assert p.stored is not None and p.sha256 is not None  # as the plan made them
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
                f"copy bytes {byte_range(p.start, p.end)} of {p.source}{_offsets(p)} to "
                f"{qdir / p.stored}",
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
                f"record (not copy) the zero bytes {byte_range(p.start, p.end)} of "
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
        ops.replace_file(cp, [edit_checkpoint(read_nofollow(cp), edits)])
    for p in [m for m in moves if m.where == "partition"]:
        assert p.stored is not None and p.sha256 is not None  # as the plan made them
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

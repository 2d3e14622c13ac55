"""``truncate-recovery --restore``: put a quarantine back, byte for byte, when the partition
has not changed since."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.formats import checkpoint
from klogtool.log import layout
from klogtool.log.atomic import (
    FileOps,
    read_range,
)
from klogtool.log.repair.quarantine import (
    _dump_manifest,
    _move,
    _valid_copy,
    byte_range,
    edit_checkpoint,
    load_manifest,
    quarantine_root,
    read_nofollow,
)
from klogtool.log.repair.recovery_plan import (
    COPY,
    CREATED,
    CUT,
    MANIFEST,
    MOVE,
    QUARANTINE_DIR,
    RESTORED,
    ZEROS,
    CheckpointChange,
    Piece,
    Step,
    StepFields,
    _sha256,
    step_obj,
)

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.events import Emit

# -- restoring --------------------------------------------------------------------------------


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


@dataclass
class RestoreReport:
    """One quarantine put back (or that would be): the ``restore`` object."""

    path: str  # the quarantine (run) dir
    partition: str  # the partition dir
    dry_run: bool
    status: str = "restored"  # restored | would-restore | already-restored
    files_restored: int = 0
    bytes_restored: int = 0

    def as_obj(self) -> events.TruncateRecoveryRestore:
        return {
            "type": "restore",
            "path": self.path,
            "partition": self.partition,
            "status": self.status,
            "dry_run": self.dry_run,
            "files_restored": self.files_restored,
            "bytes_restored": self.bytes_restored,
        }


def restore(qdir: Path, ops: FileOps, emit: Emit, part_dir: Path | None = None) -> RestoreReport:
    """Put back everything a truncate-recovery moved to ``qdir``; returns the report.

    Refuses (exit 4) when the partition has changed since in a way that restoring would break:
    a truncated segment that grew or shrank, segments after it that the recovery did not
    remove (the broker appended since), a file to restore that exists with other contents.
    Re-runnable after a crash: every step checks whether it is already done.
    """
    manifest = load_manifest(qdir)
    if part_dir is None:
        part_dir = partition_of(qdir, manifest)
    log_dir = part_dir.parent
    report = RestoreReport(str(qdir), str(part_dir), ops.dry_run)
    if manifest["state"] == RESTORED:
        # a restore that died before removing its run dir: finish that
        _remove_run(ops, qdir)
        report.status = "already-restored"
        return report

    def step(op: str, path: Path | str, message: str, **fields: Unpack[StepFields]) -> None:
        emit(step_obj(ops.dry_run, str(part_dir), op, str(path), message, fields))

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
        report.bytes_restored += p.end - p.start
        report.files_restored += 1
        step(
            "restore",
            src,
            f"put bytes {byte_range(p.start, p.end)} back into {p.source}",
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
        report.files_restored += 1
        if p.kind == layout.LOG:
            report.bytes_restored += p.end
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
        report.files_restored += 1
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
        report.status = "would-restore"
    return report


def _restore_checkpoints(
    changes: list[CheckpointChange], log_dir: Path, ops: FileOps, step: Step
) -> None:
    """Checkpoint values a recovery lowered, raised back where they still hold its value."""
    for name in sorted({c.file for c in changes}):
        cp = log_dir / name
        if not cp.is_file() or cp.is_symlink():
            continue
        data = read_nofollow(cp)
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
    for p in pieces:
        # a file the recovery created goes only while it is what the recovery wrote (older
        # manifests recorded no SHA-256 for it)
        if p.action != CREATED or p.sha256 is None or not os.path.lexists(where(p)):
            continue
        path = where(p)
        if path.is_symlink() or not path.is_file():
            raise refuse(f"{p.source} is no longer the file the recovery created", path)
        if path.lstat().st_size != p.end or _sha256(path) != p.sha256:
            raise refuse(f"{p.source} changed since the recovery created it: not deleting it", path)
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

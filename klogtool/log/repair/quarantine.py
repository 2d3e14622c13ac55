"""The quarantine: where truncate-recovery keeps what it cuts, and its ``manifest.json``
(written first, checked before it is trusted: docs/security.md)."""

from __future__ import annotations

import errno
import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.formats import checkpoint
from klogtool.log import layout
from klogtool.log.atomic import (
    CLEANED,
    FileOps,
    read_range,
)
from klogtool.log.repair.recovery_plan import (
    CLEAN_SHUTDOWN,
    COMPLETE,
    COPY,
    CREATED,
    CUT,
    IN_PROGRESS,
    MANIFEST,
    MANIFEST_VERSION,
    MOVE,
    QUARANTINE_DIR,
    RESTORED,
    ZEROS,
    CheckpointChange,
    Piece,
    _sha256,
)

# -- the quarantine ---------------------------------------------------------------------------


def byte_range(start: int, end: int) -> str:
    """Bytes ``start`` up to ``end`` (exclusive) for people: ``116..417 (302 bytes)``, an
    inclusive a..b as every range klogtool prints."""
    n = end - start
    if n <= 0:
        return f"none at {start}"
    return f"{start}..{end - 1} ({n:,} byte{'' if n == 1 else 's'})"


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
    # a recovery lowers only its own partition's checkpoint entries: a manifest naming another
    # partition's (planted, or copied from elsewhere) would edit that partition on --restore
    own = layout.parse_partition_dir_name(Path(manifest["partition"]).name)
    for c in manifest["checkpoints"]:
        if (c.topic, c.partition) != own:
            raise bad(f"changes another partition's checkpoint entry ({c.topic}-{c.partition})")
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


def read_nofollow(path: Path, limit: int = 16 << 20) -> bytes:
    size = os.lstat(path).st_size
    if size > limit:
        raise InputError(f"larger than {limit} bytes", path=str(path), code=Code.TOO_LARGE)
    return b"".join(read_range(path, 0, size))

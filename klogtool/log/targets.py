"""What a writing command works on: PATH arguments resolved to partition dirs, grouped by the
log dir whose lock covers them.

A PATH is a segment file (``.log``, or one of its index files: the command then works on that
segment of its partition), a partition dir, or a log dir (every partition dir in it).
Partition dirs inside a log dir that are symlinks to somewhere outside it are not written to
(docs/security.md: never follow a link out of the given directory when writing); they come back
as findings.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.log import atomic, layout, storage
from klogtool.log.files import classify_dir, detect_kind
from klogtool.log.findings import Finding


@dataclass
class PartitionTarget:
    path: Path  # the partition dir
    display: str  # as the user named it (or under the log dir they named)
    only_base: int | None = None  # a single segment was named
    named: bool = False  # the PATH was this partition (or a segment of it), not its log dir

    @property
    def log_dir(self) -> Path:
        return atomic.log_dir_of(self.path)


@dataclass
class Targets:
    partitions: list[PartitionTarget] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # inputs that are skipped

    def by_log_dir(self) -> list[tuple[Path, list[PartitionTarget]]]:
        groups: dict[Path, list[PartitionTarget]] = {}
        for t in self.partitions:
            groups.setdefault(t.log_dir, []).append(t)
        return list(groups.items())


SEGMENT_KINDS = (layout.LOG, layout.INDEX, layout.TIMEINDEX, layout.TXNINDEX)


def resolve(
    paths: Iterable[str], *, files: tuple[str, ...] = SEGMENT_KINDS, skip_not_live: bool = False
) -> Targets:
    """Resolve the PATH arguments of a writing command: partition dirs, log dirs, and files
    of the kinds in ``files`` (a segment of a partition: ``only_base``). Raises InputError
    (exit 3) for one that is not a Kafka path. With ``skip_not_live``, a log dir's partition
    dirs the broker marked -delete, -future or -stray are left out, each with a warning (a
    partition dir named is always taken)."""
    out = Targets()
    seen: set[tuple[Path, int | None]] = set()
    for arg in paths:
        path = Path(arg)
        if not path.exists():
            raise InputError("no such file or directory", path=arg, code=Code.NOT_FOUND)
        # absolute, not resolved: "." keeps its name (topic and partition), and the log dir
        # (and its lock) is the one the user's path names, even through a symlink
        found: list[PartitionTarget] = []
        if path.is_file():
            found.append(_file_target(path, arg, files))
        elif (logdir := classify_dir(path, arg)) is None:
            if path.is_symlink():  # refused before anything changes (it failed half-way)
                raise RefusedError(
                    f"is a symlink to {path.resolve()}: klogtool does not write through links",
                    path=arg,
                    code=Code.SYMLINK,
                    hint=f"stop the broker that holds {atomic.log_dir_of(path)}, then name "
                    f"{path.resolve()} itself",
                )
            found.append(
                PartitionTarget(Path(os.path.abspath(path)), storage.named(arg), named=True)
            )
        else:
            root = path.resolve()
            for p in logdir.partitions:
                display = str(Path(arg) / p.name)
                state = layout.partition_dir_state(p.name)
                if skip_not_live and state is not None:
                    out.findings.append(
                        Finding(
                            "warning",
                            Code.NOT_LIVE_PARTITION,
                            display,
                            None,
                            None,
                            f"{layout.DIR_STATES[state]}: skipped, not written to (name the "
                            "directory itself to include it)",
                        )
                    )
                    continue
                if p.is_symlink() and not _inside(p.resolve(), root):
                    out.findings.append(
                        Finding(
                            "error",
                            Code.SYMLINK_OUTSIDE,
                            display,
                            None,
                            None,
                            f"a symlink to {p.resolve()}, outside the log directory: not "
                            f"written to (name the partition directory itself to repair it)",
                        )
                    )
                    continue
                found.append(PartitionTarget(Path(os.path.abspath(p)), display))
        for t in found:
            layout.check_partition_name(t.path)
            key = (t.path, t.only_base)
            if key not in seen:
                seen.add(key)
                out.partitions.append(t)
    return out


def _file_target(path: Path, arg: str, kinds: tuple[str, ...]) -> PartitionTarget:
    if not kinds:
        raise InputError(
            "expected a partition directory or a log directory", path=arg, code=Code.NOT_A_DIR
        )
    base = layout.offset_from_name(path)
    if detect_kind(path) not in kinds or base is None:
        names = " or ".join(", ".join(f".{k}" for k in kinds).rsplit(", ", 1))
        raise InputError(
            f"not a segment file (<base offset>{names})", path=arg, code=Code.NOT_A_SEGMENT
        )
    return PartitionTarget(Path(os.path.abspath(path)).parent, arg, base, named=True)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def symlinked_files(part_dir: Path) -> list[Path]:
    """Files of a partition dir that are symlinks (never written through)."""
    return sorted(p for p in part_dir.iterdir() if p.is_symlink())

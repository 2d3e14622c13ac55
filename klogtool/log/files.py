"""Resolving PATH arguments into the files they stand for, with each file's kind.

A PATH is a file, a partition dir or a log dir (docs/architecture.md). A file's kind comes from its
name, and from its contents when the name says nothing (``-`` is stdin, read as a segment).
"""

from __future__ import annotations

import shutil
import struct
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import checkpoint
from klogtool.formats.errors import FormatError
from klogtool.formats.snapshot import parse_snapshot
from klogtool.log import layout, storage
from klogtool.log.segment import STDIN


@dataclass(frozen=True)
class InputFile:
    path: Path
    kind: str
    display: str  # the path as the user gave it (kafka-dump-log prints it so)


STDIN_KINDS = (
    layout.LOG,
    layout.INDEX,
    layout.TIMEINDEX,
    layout.TXNINDEX,
    layout.SNAPSHOT,
    layout.KRAFT_SNAPSHOT,
    layout.LEADER_EPOCH_CHECKPOINT,
    layout.OFFSET_CHECKPOINT,
    layout.PARTITION_METADATA,
)


def expand(paths: list[str], *, stdin_kind: str = layout.LOG) -> Iterator[InputFile]:
    """Every file the PATH arguments stand for, in dump order. ``-`` is stdin, read as
    ``stdin_kind``: spooled to a temporary file first, so that it is sized, mapped and
    checked exactly like a file (the temporary file is removed when the caller moves on)."""
    for arg in paths:
        if arg == STDIN:
            with tempfile.NamedTemporaryFile(prefix="klogtool-stdin-") as spool:
                shutil.copyfileobj(sys.stdin.buffer, spool, 1 << 20)
                spool.flush()
                yield InputFile(Path(spool.name), stdin_kind, STDIN)
            continue
        path = storage.path_of(arg)
        if not path.exists():
            raise InputError("no such file or directory", path=arg, code=Code.NOT_FOUND)
        if path.is_dir():
            yield from _expand_dir(path, arg)
        else:
            yield InputFile(path, detect_kind(path), arg)


def classify_dir(path: Path, display: str | None = None) -> layout.LogDir | None:
    """A directory PATH: None for a partition dir, its :class:`~layout.LogDir` for a log dir;
    anything else is an input error (exit 3)."""
    if layout.looks_like_partition_dir(path):
        return None
    logdir = layout.scan_log_dir(path)
    if logdir is None:
        raise InputError(
            "not a partition directory or a log directory (no segments, partition "
            "directories or broker checkpoint files in it)",
            path=display if display is not None else str(path),
            code=Code.NOT_A_LOG_DIR,
        )
    return logdir


@dataclass(frozen=True)
class KafkaDir:
    """A directory a PATH stands for: a partition dir (``logdir`` None) or a log dir."""

    path: Path
    display: str  # as the user named it, or under the directory they named
    logdir: layout.LogDir | None


def kafka_dirs(path: Path, display: str) -> Iterator[KafkaDir]:
    """What a directory PATH stands for: itself, a partition dir or a log dir, or the log
    dirs under it (:func:`~klogtool.log.layout.log_dirs_under`). Raises InputError (exit 3)
    for a directory that is none of these. Every reading command resolves directories here."""
    below = layout.log_dirs_under(path)
    if below:
        for d in below:
            yield from kafka_dirs(d, storage.child(display, d.relative_to(path)))
        return
    logdir = classify_dir(path, display)
    if logdir is None and not layout.scan_partition_dir(path).files():
        # one rule for every command: a directory with nothing of Kafka's in it is an error
        raise InputError(
            "no Kafka files in it: nothing to read", path=display, code=Code.NO_KAFKA_FILES
        )
    yield KafkaDir(path, display if logdir is not None else storage.named(display), logdir)


def live(partitions: list[Path]) -> list[Path]:
    """A log dir's partition dirs but those the broker marked -delete, -future or -stray:
    copies that are not the partition's live data (read only when named)."""
    return [p for p in partitions if layout.partition_dir_state(p.name) is None]


def not_live(paths: Iterable[str]) -> list[str]:
    """How to show the partition dirs :func:`live` leaves out of the log dirs PATHs stand
    for (one notice for them all)."""
    found: list[str] = []
    for arg in paths:
        try:
            path = storage.path_of(arg)
            dirs = list(kafka_dirs(path, arg)) if path.is_dir() else []
        except (InputError, OSError):
            continue  # the command says what is wrong with it
        for d in dirs:
            if d.logdir is not None:
                left = set(d.logdir.partitions) - set(live(d.logdir.partitions))
                found += [storage.child(d.display, p.name) for p in sorted(left)]
    return found


def partition_dirs_of(
    path: Path, display: str, *, every: bool = False
) -> Iterator[tuple[Path, str]]:
    """The partition dirs a directory PATH stands for (:func:`kafka_dirs`), each with how to
    show it: of a log dir its :func:`live` ones (``every``: all of them)."""
    for d in kafka_dirs(path, display):
        if d.logdir is None:
            yield d.path, d.display
        else:
            parts = d.logdir.partitions if every else live(d.logdir.partitions)
            yield from ((p, storage.child(d.display, p.name)) for p in parts)


def _expand_dir(path: Path, display: str) -> Iterator[InputFile]:
    for d in kafka_dirs(path, display):
        if d.logdir is None:
            part = layout.scan_partition_dir(d.path)
            for f in part.files():
                yield InputFile(f, layout.file_kind(f), storage.child(d.display, f.name))
            continue
        for f in d.logdir.files:
            kind = layout.file_kind(f)
            if kind not in (layout.LOCK, layout.LEFTOVER):
                yield InputFile(f, kind, storage.child(d.display, f.name))
        for p in live(d.logdir.partitions):
            yield from _expand_dir(p, storage.child(d.display, p.name))


_PREFIX = struct.Struct(">qi4xb")


def detect_kind(path: Path) -> str:
    """The kind of a file: by name, else by sniffing its first bytes."""
    kind = layout.file_kind(path)
    if kind not in (layout.UNKNOWN, layout.LEFTOVER):
        return kind
    if path.name.endswith(".log"):
        return layout.LOG  # a renamed segment (kafka-dump-log too goes by the suffix)
    if kind == layout.LEFTOVER:
        inner = layout.file_kind(path.with_name(path.name.rsplit(".", 1)[0]))
        if inner != layout.UNKNOWN:
            return inner
    try:
        with path.open("rb") as f:
            head = f.read(1 << 16)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=str(path), code=Code.UNREADABLE) from e
    if len(head) >= 17:
        _offset, size, magic = _PREFIX.unpack_from(head)
        if magic in (0, 1, 2) and size >= 14:
            return layout.LOG
    if len(head) >= 10:
        try:
            parse_snapshot(head)
            return layout.SNAPSHOT
        except FormatError:
            pass
    text_kind = checkpoint.sniff_checkpoint_kind(path.name, head)
    if text_kind is not None:
        return text_kind  # checkpoint.KIND_* strings are the layout kinds
    raise InputError(
        "not a Kafka log file: its name and its first bytes match no known kind",
        path=str(path),
        position=0,
        code=Code.UNKNOWN_FILE,
    )


def log_sizes(paths: list[str]) -> Iterator[int]:
    """The size of each .log file under PATHs (of each file named)."""
    for arg in paths:
        p = storage.path_of(arg)
        if p.is_file():
            yield p.stat().st_size
        elif p.is_dir():
            yield from (f.stat().st_size for f in p.rglob("*.log") if f.is_file())


def total_log_bytes(paths: list[str]) -> int:
    """Bytes of the .log files under PATHs (for progress bars); 0 where unknown."""
    return sum(log_sizes(paths))

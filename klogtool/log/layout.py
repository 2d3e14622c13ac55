"""Kafka's on-disk naming: which file is what, and how partition and log dirs are laid out.

See docs/kafka-rules.md: Partition directory files. Names are parsed like the broker parses them;
contents are checked by
the callers that open the files (a name alone is never trusted to mean a valid file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.log import storage

LOG = "log"
INDEX = "index"
TIMEINDEX = "timeindex"
TXNINDEX = "txnindex"
SNAPSHOT = "snapshot"  # producer state
KRAFT_SNAPSHOT = "kraft-snapshot"  # <offset>-<epoch>.checkpoint and bootstrap.checkpoint
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition-metadata"
OFFSET_CHECKPOINT = "offset-checkpoint"
META_PROPERTIES = "meta-properties"
QUORUM_STATE = "quorum-state"
CLEAN_SHUTDOWN = "clean-shutdown"
LOCK = "lock"
LEFTOVER = "leftover"  # .deleted / .cleaned / .swap
UNKNOWN = "unknown"

SEGMENT_SUFFIXES = {".log": LOG, ".index": INDEX, ".timeindex": TIMEINDEX, ".txnindex": TXNINDEX}
TEMP_SUFFIXES = (".deleted", ".cleaned", ".swap")
OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
_KRAFT_SNAPSHOT_RE = re.compile(r"^\d{20}-\d{10}\.checkpoint$")
_OFFSET_NAME_RE = re.compile(r"^\d+$")
_PARTITION_DIR_RE = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.[0-9a-f]{32}-(?P<state>delete|future|stray)"
    r"|-(?P<stray>stray))?$"
)
# What the broker's suffixes on a partition dir say (docs/broker-host.md)
DIR_STATES = {
    "delete": "deleted, awaiting the broker's removal",
    "future": "future: a replica being moved here by alter-replica-log-dirs",
    "stray": "stray: no longer assigned to this broker, KIP-858",
}


def file_kind(path: Path) -> str:
    """The kind of a file from its name (docs/kafka-rules.md: Partition directory files)."""
    name = path.name
    if name.endswith(TEMP_SUFFIXES):
        return LEFTOVER
    if name in OFFSET_CHECKPOINTS:
        return OFFSET_CHECKPOINT
    fixed = {
        "leader-epoch-checkpoint": LEADER_EPOCH_CHECKPOINT,
        "partition.metadata": PARTITION_METADATA,
        "meta.properties": META_PROPERTIES,
        "quorum-state": QUORUM_STATE,
        ".kafka_cleanshutdown": CLEAN_SHUTDOWN,
        ".lock": LOCK,
        "bootstrap.checkpoint": KRAFT_SNAPSHOT,
    }
    if name in fixed:
        return fixed[name]
    if _KRAFT_SNAPSHOT_RE.match(name):
        return KRAFT_SNAPSHOT
    stem, dot, suffix = name.partition(".")
    if dot and _OFFSET_NAME_RE.match(stem):
        if "." + suffix in SEGMENT_SUFFIXES:
            return SEGMENT_SUFFIXES["." + suffix]
        if suffix == "snapshot":
            return SNAPSHOT
    return UNKNOWN


def offset_from_name(path: Path) -> int | None:
    """The base offset in a segment/snapshot file name (the text before the first dot)."""
    stem = path.name.split(".", 1)[0].split("-", 1)[0]
    return int(stem) if _OFFSET_NAME_RE.match(stem) else None


def segment_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


# Kafka's legal topic names (org.apache.kafka.common.internals.Topic.validate).
_LEGAL_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def check_partition_name(path: Path) -> None:
    """Refuse (exit 3) a partition dir whose topic no broker could have created: writing
    commands name the topic in checkpoint files, so they check it before changing anything."""
    parsed = parse_partition_dir_name(path.name)
    if parsed is not None and (not _LEGAL_TOPIC_RE.match(parsed[0]) or parsed[0] in (".", "..")):
        raise InputError(
            f"{parsed[0]!r} is not a legal Kafka topic name (letters, digits, '.', '_', '-'; "
            "at most 249): not a partition directory a broker wrote; nothing was changed",
            path=str(path),
            code=Code.BAD_PARTITION_NAME,
        )


def partition_dir_state(name: str) -> str | None:
    """``delete``, ``future`` or ``stray`` for a partition dir the broker marked so (a
    ``-delete`` dir awaiting removal, a ``-future`` replica being moved in, a KIP-858
    ``-stray``); None for a live partition or another name."""
    m = _PARTITION_DIR_RE.match(name)
    if m is None:
        return None
    return m.group("state") or m.group("stray")


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` from ``<topic>-<partition>`` (split at the last dash), or None."""
    m = _PARTITION_DIR_RE.match(name)
    if m is None:
        return None
    return m.group("topic"), int(m.group("partition"))


@dataclass
class SegmentFiles:
    base_offset: int
    log: Path | None = None
    index: Path | None = None
    timeindex: Path | None = None
    txnindex: Path | None = None


def segment_files(path: Path, kind: str) -> SegmentFiles:
    """The segment one of its files stands for (``kind``: LOG, INDEX, TIMEINDEX or TXNINDEX):
    that file and those of the four beside it. A file not named by its base offset (a
    renamed ``.log``) stands alone, at base offset 0."""
    base = offset_from_name(path)
    seg = SegmentFiles(base or 0)
    setattr(seg, kind, path)
    if base is not None:
        for suffix, k in SEGMENT_SUFFIXES.items():
            sibling = path.with_name(segment_name(base, suffix))
            if k != kind and sibling.is_file():
                setattr(seg, k, sibling)
    return seg


@dataclass
class PartitionDir:
    path: Path
    topic: str | None
    partition: int | None
    segments: list[SegmentFiles] = field(default_factory=list)
    snapshots: list[Path] = field(default_factory=list)
    kraft_snapshots: list[Path] = field(default_factory=list)
    leader_epoch_checkpoint: Path | None = None
    partition_metadata: Path | None = None
    leftovers: list[Path] = field(default_factory=list)
    other: list[Path] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name

    def files(self) -> list[Path]:
        """Every file, in the order a dump shows them."""
        out: list[Path] = []
        for seg in self.segments:
            out += [p for p in (seg.log, seg.index, seg.timeindex, seg.txnindex) if p]
        out += self.snapshots + self.kraft_snapshots
        out += [p for p in (self.leader_epoch_checkpoint, self.partition_metadata) if p]
        return out


def scan_partition_dir(path: Path) -> PartitionDir:
    # the name of the directory itself: "." or "sub/.." named from inside keep theirs
    parsed = parse_partition_dir_name(Path(storage.absolute(path)).name)
    part = PartitionDir(path, *(parsed or (None, None)))
    segments: dict[int, SegmentFiles] = {}
    for child in sorted(path.iterdir()):
        if not child.is_file():
            continue  # e.g. a .klogtool-quarantine directory
        kind = file_kind(child)
        if kind in (LOG, INDEX, TIMEINDEX, TXNINDEX):
            base = offset_from_name(child) or 0  # numeric: file_kind checked the name
            seg = segments.setdefault(base, SegmentFiles(base))
            setattr(seg, kind, child)
        elif kind == SNAPSHOT:
            part.snapshots.append(child)
        elif kind == KRAFT_SNAPSHOT:
            part.kraft_snapshots.append(child)
        elif kind == LEADER_EPOCH_CHECKPOINT:
            part.leader_epoch_checkpoint = child
        elif kind == PARTITION_METADATA:
            part.partition_metadata = child
        elif kind == LEFTOVER:
            part.leftovers.append(child)
        else:
            part.other.append(child)
    part.segments = [segments[k] for k in sorted(segments)]
    part.snapshots.sort(key=lambda p: offset_from_name(p) or 0)
    return part


def holds_segments(path: Path) -> bool:
    """Whether the directory ``path`` holds a ``<offset>.log`` file."""
    try:
        return any(file_kind(c) == LOG and c.is_file() for c in path.iterdir())
    except OSError:
        return False


# What a directory's files say it is (never its name: JBOD log dirs are named like
# partitions, ``kafka-logs-1``, ``data-0``): a log dir holds the broker's files, a partition
# dir segments and the files beside them.
LOG_DIR_KINDS = frozenset({META_PROPERTIES, OFFSET_CHECKPOINT, LOCK, CLEAN_SHUTDOWN})
PARTITION_KINDS = frozenset(
    {
        LOG,
        INDEX,
        TIMEINDEX,
        TXNINDEX,
        SNAPSHOT,
        KRAFT_SNAPSHOT,
        LEADER_EPOCH_CHECKPOINT,
        PARTITION_METADATA,
        QUORUM_STATE,
    }
)


def looks_like_partition_dir(path: Path) -> bool:
    """Decided by contents: a log dir holds partition dirs, or else ``meta.properties``, the
    log-dir checkpoints or the broker's ``.lock``; a partition dir holds segments, snapshots,
    ``partition.metadata`` or ``leader-epoch-checkpoint`` (a stray ``.lock`` beside them does
    not make it a log dir). Only a directory holding none of these is taken by its name
    (``<topic>-<partition>``)."""
    children = list(path.iterdir())
    if any(_is_partition_child(c) for c in children):
        return False
    kinds = {file_kind(c) for c in children if c.is_file()}
    if kinds & PARTITION_KINDS:
        return True
    if kinds & LOG_DIR_KINDS:
        return False
    return parse_partition_dir_name(path.name) is not None


def _is_partition_child(path: Path) -> bool:
    """A subdirectory named like a partition that holds a partition's files."""
    if not path.is_dir() or parse_partition_dir_name(path.name) is None:
        return False
    try:
        return any(file_kind(c) in PARTITION_KINDS for c in path.iterdir())
    except OSError:
        return False


@dataclass
class LogDir:
    path: Path
    partitions: list[Path]
    files: list[Path]  # checkpoint files, meta.properties, ... at the root
    remote_index_cache: Path | None = None  # tiered storage's (is_remote_index_cache)


# Tiered storage's cache of remote segments' indexes (RemoteIndexCache): in the log dir,
# <start offset>_<segment id>.index / .timeindex / .txnindex, .tmp while written, .deleted
# while removed.
REMOTE_INDEX_CACHE = "remote-log-index-cache"
REMOTE_INDEX_RE = re.compile(
    r"^(?P<offset>\d+)_(?P<segment_id>[A-Za-z0-9_-]{22})\."
    r"(?P<kind>index|timeindex|txnindex)(?P<temp>\.tmp|\.deleted)?$"
)


def is_remote_index_cache(path: Path) -> bool:
    """A ``remote-log-index-cache`` directory holding only what the broker's cache writes."""
    if path.name != REMOTE_INDEX_CACHE or not path.is_dir() or path.is_symlink():
        return False
    try:
        return all(REMOTE_INDEX_RE.match(c.name) for c in path.iterdir())
    except OSError:
        return False


def scan_log_dir(path: Path) -> LogDir | None:
    """A log dir holds partition dirs and/or broker files; None when it holds neither."""
    partitions: list[Path] = []
    files: list[Path] = []
    cache = None
    for child in sorted(path.iterdir()):
        if child.is_dir():
            if _is_partition_child(child):  # named like one, and holding a partition's files
                partitions.append(child)
            elif is_remote_index_cache(child):
                cache = child
        elif file_kind(child) not in (UNKNOWN, LOG):
            files.append(child)
    if not partitions and not files:
        return None
    return LogDir(path, partitions, files, cache)


def log_dirs_under(path: Path, depth: int = 6) -> list[Path]:
    """The log dirs a directory that is none itself stands for: its subdirectories, down to
    ``depth`` levels, that are log dirs (``/var/lib/kafka`` holding ``data1/`` and ``data2/``,
    or a tree of broker directories copied for an incident). Empty when ``path`` holds Kafka
    files of its own: it is then a partition dir or a log dir."""
    try:
        children = sorted(path.iterdir())
    except OSError:
        return []
    if any(c.is_file() and file_kind(c) != UNKNOWN for c in children):
        return []
    partitions = (c for c in children if c.is_dir() and parse_partition_dir_name(c.name))
    if any(_holds_segments(c) for c in partitions):
        return []  # a log dir of partitions only: the caller lists them (one listing here)
    return _log_dirs_among(children, depth)


def _holds_segments(path: Path) -> bool:
    try:
        return any(file_kind(f) == LOG for f in path.iterdir())
    except OSError:
        return False


def _log_dirs_among(children: list[Path], depth: int) -> list[Path]:
    out: list[Path] = []
    for c in children:
        try:
            if not c.is_dir():
                continue
            inside = sorted(c.iterdir())
        except OSError:
            continue
        kinds = {file_kind(f) for f in inside if f.is_file()}
        named_partition = parse_partition_dir_name(c.name) is not None
        if LOG in kinds and named_partition:
            continue  # a partition dir of this directory
        holds_partitions = any(
            f.is_dir() and parse_partition_dir_name(f.name) is not None for f in inside
        )
        if LOG in kinds or holds_partitions or kinds & {META_PROPERTIES, OFFSET_CHECKPOINT}:
            # a log dir (even named like a partition: ``data-1``), or segments in a directory
            # not named like a partition, which the caller takes as a partition dir
            out.append(c)
        elif depth > 1:
            out += _log_dirs_among(inside, depth - 1)
    return out

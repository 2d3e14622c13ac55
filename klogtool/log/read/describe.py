"""An offline ``kafka-log-dirs.sh --describe``: one line per partition, cheaply.

What an operator runs first on a broker's disk: per partition its size, segment count, offset
range, newest timestamp and index health. Only what the broker reads when it loads a
partition is read: the file sizes, the indexes (the broker's sanity checks) and the batch
headers of the last segment (for the log end offset); no record is decoded. The leader-epoch
timeline (``epochs``) reads every batch header.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import index
from klogtool.formats.errors import FormatError
from klogtool.log import layout, metadata, storage
from klogtool.log.epochs import EpochTimeline, partition_timeline
from klogtool.log.files import partition_dirs_of
from klogtool.log.partition import SegmentInfo, load_partition
from klogtool.log.remote_tier import TierCache, TierSummary
from klogtool.log.segment import read_small

if TYPE_CHECKING:
    from klogtool import events

OK = "ok"


@dataclass
class PartitionSummary:
    path: str  # as the user named it (or under the log dir they named)
    topic: str | None
    partition: int | None
    size: int  # bytes of every file in the partition dir
    log_bytes: int
    segments: int
    log_start_offset: int
    log_end_offset: int
    newest_timestamp: int | None  # the last segment's largest timestamp (ms)
    timestamp_source: str | None  # timeindex | records | mtime
    indexes: str  # "ok", or what is missing or fails the broker's sanity check
    log_end_clean: bool  # the last segment ends on a whole batch
    state: str | None  # delete / future / stray (layout.partition_dir_state), None when live
    epochs: EpochTimeline | None = None  # with describe(epochs=True)
    remote: TierSummary | None = None  # a tiered partition's remote tier

    def as_obj(self) -> events.DescribePartition:
        """The ``partition`` object."""
        return {
            "type": "partition",
            "path": self.path,
            "topic": self.topic,
            "partition": self.partition,
            "size": self.size,
            "log_bytes": self.log_bytes,
            "segments": self.segments,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "newest_timestamp": self.newest_timestamp,
            "timestamp_source": self.timestamp_source,
            "indexes": self.indexes,
            "log_end_clean": self.log_end_clean,
            "state": self.state,
        }


def describe(paths: list[str], *, epochs: bool = False) -> Iterator[PartitionSummary]:
    """A summary of every partition PATHs stand for (partition dirs, log dirs, or a directory
    of log dirs), in the order given. Raises InputError (exit 3) for a PATH with none. With
    ``epochs``, each one's leader-epoch timeline too (every batch header is read). A partition
    the broker's ``__remote_log_metadata`` partitions describe gets its remote tier."""
    tiers = TierCache(metadata.log_dirs_named(paths))
    for arg in paths:
        found = list(_partitions(storage.path_of(arg), arg))
        if not found:
            raise InputError("no partition directories in it", path=arg, code=Code.NO_KAFKA_FILES)
        for path, display in found:
            summary = summarise(path, display, tiers)
            if epochs:
                summary.epochs = partition_timeline(path)
            yield summary


def _partitions(path: Path, display: str) -> Iterator[tuple[Path, str]]:
    if not path.exists():
        raise InputError("no such file or directory", path=display, code=Code.NOT_FOUND)
    if not path.is_dir():
        raise InputError("expected a partition or log directory", path=display, code=Code.NOT_A_DIR)
    yield from partition_dirs_of(path, display, every=True)  # each said to be what it is


def summarise(path: Path, display: str, tiers: TierCache | None = None) -> PartitionSummary:
    view = load_partition(path)
    files = [p for p in path.iterdir() if p.is_file()]
    last = view.segments[-1] if view.segments else None
    return PartitionSummary(
        path=display,
        topic=view.topic,
        partition=view.partition,
        size=sum(p.stat().st_size for p in files),
        log_bytes=sum(s.size for s in view.segments),
        segments=len(view.segments),
        log_start_offset=view.log_start_offset,
        log_end_offset=view.log_end_offset,
        newest_timestamp=last.largest_timestamp if last is not None else None,
        timestamp_source=last.timestamp_source if last is not None else None,
        indexes=_index_health(view.segments),
        log_end_clean=view.log_end_clean,
        state=layout.partition_dir_state(path.name),
        remote=None if tiers is None else tiers.summary_of(view),
    )


def _index_health(segments: list[SegmentInfo]) -> str:
    """ "ok", or counts of what is missing or fails the broker's sanity check."""
    missing = bad = 0
    for s in segments:
        for kind, check in (
            (layout.INDEX, index.sanity_check_offset_index),
            (layout.TIMEINDEX, index.sanity_check_time_index),
        ):
            f: Path | None = getattr(s.files, kind)
            if f is None:
                missing += 1
                continue
            try:
                check(read_small(f, 1 << 31), s.base_offset)
            except (FormatError, OSError):
                bad += 1
    parts = [f"{missing} missing"] if missing else []
    parts += [f"{bad} bad"] if bad else []
    return ", ".join(parts) or OK

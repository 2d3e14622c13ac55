"""A partition as the broker's ``UnifiedLog`` sees it after loading: segments with their sizes,
largest timestamps and modification times, the log end offset, and the log dir's checkpoints
(high watermark, log start offset, cleaner offset). Read-only; used by the retention and
compaction planners. Batch headers only: records are never decoded here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import checkpoint, index
from klogtool.formats.errors import FormatError
from klogtool.formats.records import CLEAN, ZERO_FILL, SegmentScanner
from klogtool.log import layout, storage
from klogtool.log.atomic import FileOps, log_dir_of
from klogtool.log.segment import fetcher, mapped, read_small, refuse_not_a_log
from klogtool.log.topicconfig import (
    EXPLAINED_KEYS,
    ConfigSource,
    TopicConfig,
    config_sources,
    refuse_assumed,
)

if TYPE_CHECKING:
    from klogtool.log.metadata import ClusterConfigs
    from klogtool.log.remote_tier import TierCache, TierSummary

HIGH_WATERMARK = "replication-offset-checkpoint"
LOG_START = "log-start-offset-checkpoint"
CLEANER = "cleaner-offset-checkpoint"
RECOVERY_POINT = "recovery-point-offset-checkpoint"

# the source of a high watermark the log dir does not know: what the broker starts from
NO_HW_ENTRY = "the log start offset, where the broker starts"
TIMEINDEX = "timeindex"  # where a segment's largest timestamp came from
RECORDS = "records"  # an index is missing: the broker recovers the segment and takes the max
MTIME = "mtime"


@dataclass
class SegmentInfo:
    base_offset: int
    files: layout.SegmentFiles
    size: int
    mtime_ns: int
    largest_timestamp: int  # the time index's last entry, else the .log mtime (ms)
    timestamp_source: str  # TIMEINDEX | RECORDS | MTIME
    index_bytes: int
    timeindex_bytes: int
    next_offset: int | None = None  # filled for the last segment (and by full scans)

    @property
    def log(self) -> Path:
        assert self.files.log is not None
        return self.files.log


@dataclass
class PartitionView:
    path: Path
    topic: str | None
    partition: int | None
    log_dir: Path
    segments: list[SegmentInfo]
    orphans: list[Path]  # index files whose .log is gone (the broker deletes them on load)
    snapshots: list[Path]
    leader_epoch_checkpoint: Path | None
    log_end_offset: int
    log_end_clean: bool  # the last segment ends cleanly (no torn tail or corruption)
    checkpoints: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)

    @property
    def tp(self) -> tuple[str, int] | None:
        if self.topic is None or self.partition is None:
            return None
        return self.topic, self.partition

    @property
    def name(self) -> str:
        return self.path.name

    def checkpointed(self, name: str) -> int | None:
        tp = self.tp
        if tp is None:
            return None
        return self.checkpoints.get(name, {}).get(tp)

    @property
    def first_base(self) -> int:
        return self.segments[0].base_offset if self.segments else self.log_end_offset

    @property
    def log_start_offset(self) -> int:
        """max(log-start-offset-checkpoint, first segment base), as the loader sets it."""
        cp = self.checkpointed(LOG_START)
        return max(cp if cp is not None else 0, self.first_base)

    def high_watermark(self, override: int | str | None = None) -> tuple[int, str]:
        """(high watermark, where it came from), between the log start and end offsets as
        ``UnifiedLog.updateHighWatermark`` keeps it. Without a checkpoint entry the broker
        starts from 0, raised to the log start offset."""
        leo = self.log_end_offset
        if override == "log-end":
            return leo, "--high-watermark log-end"
        if isinstance(override, int):
            return min(override, leo), "--high-watermark"
        cp = self.checkpointed(HIGH_WATERMARK)
        hw = max(self.log_start_offset, min(cp or 0, leo))
        if cp is None:
            return hw, f"no {HIGH_WATERMARK} entry: {NO_HW_ENTRY}"
        if cp < self.log_start_offset:
            return hw, f"{HIGH_WATERMARK} ({cp}), raised to the log start offset"
        return hw, HIGH_WATERMARK

    def upper_bound(self, i: int) -> int:
        """The offset below which segment ``i`` lies: the next base, or the log end offset."""
        if i + 1 < len(self.segments):
            return self.segments[i + 1].base_offset
        return self.log_end_offset


@dataclass(frozen=True)
class PlanInputs:
    """What compact, retention-sweep and explain judge every partition by, from their command
    line: the topic configs (``overrides``: the command's own config options, field name ->
    value, None = not given), the time and the high watermark to respect."""

    configs: ConfigSource
    now: int
    high_watermark: int | str | None = None
    overrides: Mapping[str, object] = field(default_factory=dict)
    # --metadata-dir; else the __cluster_metadata-0 of each partition's log dir, or of another
    # log dir of the same broker (metadata.metadata_dir_for): one of ``given`` or one nearby
    metadata_dir: Path | None = None
    given: tuple[Path, ...] = ()  # the log dirs of the command's PATH arguments
    assume_defaults: bool = False  # --assume-defaults: decide by Kafka's defaults where unknown
    _hosts: dict[Path, ClusterConfigs | None] = field(default_factory=dict, compare=False)
    _tiers: dict[tuple[Path, ...], TierCache] = field(default_factory=dict, compare=False)

    def remote_tier(self, view: PartitionView) -> TierSummary | None:
        """A partition's remote tier from the host's ``__remote_log_metadata`` partitions
        (those of its log dir and of the same broker's others), None when none describes it."""
        from klogtool.log.remote_tier import TierCache

        if self.given not in self._tiers:
            self._tiers[self.given] = TierCache(self.given)
        return self._tiers[self.given].summary_of(view)

    def uploaded_up_to(self, view: PartitionView) -> tuple[int, str]:
        """A tiered partition's highest offset in remote storage, as the broker finds it, and
        where from; -1 (nothing local counts as uploaded) without a remote tier."""
        from klogtool.log.remote_tier import uploaded_bound

        return uploaded_bound(self.remote_tier(view))

    def host_of(self, partition_dir: Path | None) -> ClusterConfigs | None:
        """The replayed KRaft metadata that holds for a partition dir (cached per log dir);
        None on a ZooKeeper host (no ``__cluster_metadata-0``) or without a partition dir."""
        from klogtool.log.metadata import load_for

        if partition_dir is None and self.metadata_dir is None:
            return None
        log_dir = (
            storage.as_path(storage.absolute(partition_dir)).parent if partition_dir else Path(".")
        )
        if log_dir not in self._hosts:
            self._hosts[log_dir] = load_for(log_dir, self.metadata_dir, self.given)
        return self._hosts[log_dir]

    def config_of(self, topic: str | None, partition_dir: Path | None = None) -> TopicConfig:
        return self.configs.for_topic(topic, self.overrides, self.host_of(partition_dir))

    def sources_of(self, topic: str | None, partition_dir: Path | None = None) -> dict[str, str]:
        """Topic config name -> where its value came from (missing: Kafka's default)."""
        return self.configs.resolve(topic, self.overrides, self.host_of(partition_dir))[1]

    def explained(
        self, topic: str | None, partition_dir: Path | None = None, keys: Iterable[str] = ()
    ) -> list[dict[str, object]]:
        """:func:`~klogtool.log.topicconfig.config_sources` of the topic (``keys``, else the
        ones explain reports): each value, where it came from, whether it is assumed."""
        host = self.host_of(partition_dir)
        cfg, sources = self.configs.resolve(topic, self.overrides, host)
        return config_sources(topic, cfg, sources, host, tuple(keys) or EXPLAINED_KEYS)

    def require_known(self, topic: str | None, partition_dir: Path, keys: Iterable[str]) -> None:
        """Refuse (:func:`~klogtool.log.topicconfig.refuse_assumed`) a rewrite that decides by
        ``keys`` when one of them would only be assumed, unless --assume-defaults."""
        keys = list(keys)
        if self.assume_defaults or not keys:
            return
        assumed = [
            str(c["key"]) for c in self.explained(topic, partition_dir, keys) if c["assumed"]
        ]
        if assumed:
            raise refuse_assumed(topic, assumed, self.host_of(partition_dir), str(partition_dir))


@dataclass
class PartitionContext:
    """What a writing command's plan of a partition starts from: the partition, its topic's
    configuration, the time it is judged at and its offsets as the broker would load them.
    ``CompactionPlan`` and ``RetentionPlan`` extend it."""

    path: Path
    topic: str | None
    partition: int | None
    log_dir: Path
    config: TopicConfig
    now: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    high_watermark_source: str

    @classmethod
    def load(
        cls,
        view: PartitionView,
        config: TopicConfig,
        *,
        now: int,
        high_watermark: int | str | None = None,
    ) -> PartitionContext:
        hw, hw_source = view.high_watermark(high_watermark)
        return cls(
            path=view.path,
            topic=view.topic,
            partition=view.partition,
            log_dir=view.log_dir,
            config=config,
            now=now,
            log_start_offset=view.log_start_offset,
            log_end_offset=view.log_end_offset,
            high_watermark=hw,
            high_watermark_source=hw_source,
        )

    def context_fields(self) -> dict[str, Any]:
        """This context's fields by name, to build a plan that extends it."""
        return {f.name: getattr(self, f.name) for f in fields(PartitionContext)}


def read_offset_checkpoint(log_dir: Path, name: str) -> dict[tuple[str, int], int]:
    path = log_dir / name
    if not path.is_file():
        return {}
    try:
        return dict(checkpoint.parse_offset_checkpoint(read_small(path)).entries)
    except FormatError as e:
        raise InputError(
            f"{e} (fix or remove the checkpoint file)",
            path=str(path),
            position=e.position,
            code=e.code,
        ) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=str(path), code=Code.UNREADABLE) from e


def _largest_timestamp(seg: layout.SegmentFiles, mtime_ns: int) -> tuple[int, str, int]:
    """The broker's ``LogSegment.largestTimestamp``: the time index's last entry when it is
    >= 0, else the .log's mtime. A segment missing its .index or .timeindex is recovered when
    the broker loads it, which rebuilds the time index from the batches: then it is the
    largest batch timestamp. Returns (timestamp, source, time index bytes)."""
    if seg.log is not None and (seg.timeindex is None or seg.index is None):
        largest = _largest_batch_timestamp(seg.log)
        if largest >= 0:
            return largest, RECORDS, 0
        return mtime_ns // 1_000_000, MTIME, 0
    if seg.timeindex is not None:
        try:
            buf = read_small(seg.timeindex, 1 << 31)
        except OSError:
            buf = b""
        slots = index.time_index_slots(buf)
        real = slots - index.time_index_zero_tail(buf)
        if real > 0:
            entries = list(
                index.iter_time_index(
                    buf[(real - 1) * 12 : real * 12], seg.base_offset, stop_at_zero_fill=False
                )
            )
            if entries and entries[-1].timestamp >= 0:
                return entries[-1].timestamp, TIMEINDEX, real * 12
        return mtime_ns // 1_000_000, MTIME, real * 12
    return mtime_ns // 1_000_000, MTIME, 0


def _largest_batch_timestamp(path: Path) -> int:
    """The largest batch timestamp of a segment's valid prefix (headers only), or -1."""
    largest = -1
    try:
        with mapped(path) as buf:
            for batch in SegmentScanner(buf):
                largest = max(largest, batch.max_timestamp)
    except (OSError, FormatError):
        pass  # what recovery could not read does not count
    return largest


def _index_bytes(seg: layout.SegmentFiles) -> int:
    if seg.index is None:
        return 0
    try:
        buf = read_small(seg.index, 1 << 31)
    except OSError:
        return 0
    return (index.offset_index_slots(buf) - index.offset_index_zero_tail(buf)) * 8


def scan_next_offset(path: Path, base: int) -> tuple[int, bool]:
    """(next offset after the segment's last valid batch, or ``base`` if none; whether the
    segment ends cleanly)."""
    with mapped(path) as buf:
        result = SegmentScanner(buf, check_crc=False, strict=False).scan()
    end = result.last_offset + 1 if result.last_offset is not None else base
    return max(end, base), result.end in (CLEAN, ZERO_FILL)


def _refuse_non_kafka(log: Path) -> None:
    """A ``.log`` from which no entry can be read (a PNG under a segment's name) is no Kafka
    file: every command ends with exit 3 there (records.not_a_log's rule)."""
    with mapped(log, lazy=True) as buf:  # in object storage: its first batch is fetched
        scanner = SegmentScanner(
            buf, check_crc=False, stop_on_crc=False, need=fetcher(buf, ahead=False)
        )
        if next(iter(scanner), None) is not None:
            return
    refuse_not_a_log(scanner.result, str(log))


def load_partition(path: Path, *, scan_all: bool = False) -> PartitionView:
    """Load ``path`` (a partition dir) and its log dir's checkpoints."""
    part = layout.scan_partition_dir(path)
    segments: list[SegmentInfo] = []
    orphans: list[Path] = []
    for seg in part.segments:
        if seg.log is None:
            orphans += [p for p in (seg.index, seg.timeindex, seg.txnindex) if p is not None]
            continue
        try:
            st = seg.log.stat()
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror}", path=str(seg.log)) from e
        _refuse_non_kafka(seg.log)
        ts, source, ti_bytes = _largest_timestamp(seg, st.st_mtime_ns)
        segments.append(
            SegmentInfo(
                seg.base_offset,
                seg,
                st.st_size,
                st.st_mtime_ns,
                ts,
                source,
                _index_bytes(seg),
                ti_bytes,
            )
        )
    leo = 0
    clean = True
    for i, s in enumerate(segments):
        if scan_all or i == len(segments) - 1:
            s.next_offset, ok = scan_next_offset(s.log, s.base_offset)
            clean = clean and (ok or i < len(segments) - 1)
    if segments:
        last = segments[-1]
        assert last.next_offset is not None
        leo = last.next_offset
    log_dir = log_dir_of(path)
    checkpoints = {
        name: read_offset_checkpoint(log_dir, name) for name in (HIGH_WATERMARK, LOG_START, CLEANER)
    }
    if not segments:
        # An empty partition: its log start offset checkpoint says where the log starts; a
        # KRaft log whose segments its snapshots replaced starts where the latest one ends
        # (KafkaMetadataLog truncates to it)
        if part.topic is not None and part.partition is not None:
            leo = checkpoints[LOG_START].get((part.topic, part.partition), 0)
        ends = [layout.offset_from_name(p) for p in part.kraft_snapshots]
        leo = max([leo, *(e for e in ends if e is not None)])
    return PartitionView(
        path=path,
        topic=part.topic,
        partition=part.partition,
        log_dir=log_dir,
        segments=segments,
        orphans=orphans,
        snapshots=part.snapshots,
        leader_epoch_checkpoint=part.leader_epoch_checkpoint,
        log_end_offset=leo,
        log_end_clean=clean,
        checkpoints=checkpoints,
    )


def update_offset_checkpoint(
    ops: FileOps, log_dir: Path, name: str, tp: tuple[str, int], offset: int | None
) -> bool:
    """Set (or with None remove) ``tp``'s entry in the log dir's checkpoint ``name``, through
    the atomic protocol. Returns whether anything changed."""
    path = log_dir / name
    entries = read_offset_checkpoint(log_dir, name)
    if offset is None:
        if tp not in entries:
            return False
        del entries[tp]
    else:
        if entries.get(tp) == offset:
            return False
        entries[tp] = offset
    ops.replace_file(path, [checkpoint.encode_offset_checkpoint(entries)])
    return True


def is_within(root: Path, path: Path) -> bool:
    """Whether ``path`` resolves (symlinks followed) to ``root`` or something inside it."""
    r = root.resolve()
    p = path.resolve()
    return p == r or r in p.parents

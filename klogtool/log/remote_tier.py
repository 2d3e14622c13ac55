"""A tiered partition's remote tier, from the ``__remote_log_metadata`` partitions of a host,
replayed as the broker's ``RemoteLogMetadataCache`` loads them (docs/tiered-storage.md).

Every event of a remote segment's life is a record of the metadata topic (keyed by nothing;
all of one user partition's events in one metadata partition, :func:`metadata_partition`):
an upload starts (``COPY_SEGMENT_STARTED``), finishes (``COPY_SEGMENT_FINISHED``), a deletion
starts and finishes. The replay keeps Kafka's rules:

* a segment enters only by its ``COPY_SEGMENT_STARTED`` record; an update for a segment the
  replay does not know is dropped (the broker drops it while it loads), and so is an update
  whose state does not follow the current one (``RemoteLogSegmentState.isValidTransition``);
* per leader epoch, a finished upload takes its start offset's place and pushes out earlier
  entries at or above it (a new leader's upload of the same offsets): those become
  *unreferenced*, as every upload in progress and deletion in progress is;
* ``DELETE_SEGMENT_FINISHED`` forgets a segment; ``DELETE_PARTITION_FINISHED`` forgets the
  whole partition.

What the remote log of a partition is: its *referenced* segments (finished uploads that hold
their epoch's offsets), in offset order; the rest are findings (uploads never finished,
deletions never finished, unreferenced copies, dropped events).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from klogtool.formats import checkpoint
from klogtool.formats.errors import FormatError
from klogtool.formats.limits import DEFAULT_LIMITS
from klogtool.formats.payloads.remote_log_metadata import (
    PARTITION_DELETE_STATES,
    SEGMENT_STATES,
    RemoteLogMetadataType,
    check_values,
    decode_remote_log_metadata,
    leader_epochs,
)
from klogtool.formats.payloads.schema import uuid_from_text
from klogtool.formats.records import SegmentScanner
from klogtool.log import layout
from klogtool.log.segment import mapped, read_small

if TYPE_CHECKING:
    from klogtool import events


class LocalLog(Protocol):
    """What the remote tier is set beside: a loaded partition (partition.PartitionView)."""

    @property
    def path(self) -> Path: ...
    @property
    def topic(self) -> str | None: ...
    @property
    def partition(self) -> int | None: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def leader_epoch_checkpoint(self) -> Path | None: ...


TOPIC = "__remote_log_metadata"
DEFAULT_PARTITIONS = 50  # remote.log.metadata.topic.num.partitions

COPY_STARTED, COPY_FINISHED, DELETE_STARTED, DELETE_FINISHED = (SEGMENT_STATES[i] for i in range(4))
_NEXT_STATES = {  # RemoteLogSegmentState.isValidTransition (a state may follow itself)
    None: {COPY_STARTED},
    COPY_STARTED: {COPY_STARTED, COPY_FINISHED, DELETE_STARTED},
    COPY_FINISHED: {COPY_FINISHED, DELETE_STARTED},
    DELETE_STARTED: {DELETE_STARTED, DELETE_FINISHED},
    DELETE_FINISHED: {DELETE_FINISHED},
}


@dataclass
class RemoteSegment:
    """One remote segment as the replay last left it."""

    segment_id: str
    start_offset: int
    end_offset: int
    leader_epochs: dict[int, int]  # leader epoch -> its first offset in the segment
    size: int
    max_timestamp: int
    broker_id: int  # of the latest event
    state: str
    started: int  # event time (ms) of the upload's start
    updated: int  # event time (ms) of the latest event
    custom_metadata: int | None  # bytes of the plugin's custom metadata, None when absent
    where: str  # the metadata record of the latest event: "__remote_log_metadata-7@12"

    def fields(self, referenced: bool) -> dict[str, Any]:
        """The segment's fields of a ``remote_segment`` object."""
        return {
            "segment_id": self.segment_id,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "size": self.size,
            "state": self.state,
            "referenced": referenced,
            "leader_epochs": [[e, o] for e, o in self.leader_epochs.items()],
            "max_timestamp": self.max_timestamp,
            "broker_id": self.broker_id,
            "started": self.started,
            "updated": self.updated,
            "custom_metadata_bytes": self.custom_metadata,
            "where": self.where,
        }


@dataclass
class _EpochState:
    """``RemoteLogLeaderEpochState``: one leader epoch's segments by start offset."""

    offset_to_id: dict[int, str] = field(default_factory=dict)
    unreferenced: set[str] = field(default_factory=set)
    highest: int | None = None

    def finished(self, start: int, segment_id: str, epoch_end: int) -> None:
        # a later upload of offsets this epoch already holds replaces the entries at or above
        # its start (Kafka: while the last entry's key >= start and highest <= epoch_end)
        for key in sorted(self.offset_to_id, reverse=True):
            if key < start or self.highest is None or self.highest > epoch_end:
                break
            self.unreferenced.add(self.offset_to_id.pop(key))
        self.offset_to_id[start] = segment_id
        self.unreferenced.discard(segment_id)
        if self.highest is None or epoch_end > self.highest:
            self.highest = epoch_end


@dataclass
class RemotePartition:
    """The remote tier of one user partition (topic id + partition)."""

    topic: str
    topic_id: str
    partition: int
    metadata_partition: str  # the __remote_log_metadata-N its events are in
    segments: dict[str, RemoteSegment] = field(default_factory=dict)
    epochs: dict[int, _EpochState] = field(default_factory=dict)
    deleted_segments: int = 0  # DELETE_SEGMENT_FINISHED: gone from the bucket
    deleted_bytes: int = 0
    delete_state: str | None = None  # the partition's own deletion (topic deleted)
    dropped: list[str] = field(default_factory=list)  # events the broker drops, and why

    @property
    def referenced(self) -> set[str]:
        return {i for e in self.epochs.values() for i in e.offset_to_id.values()}

    def remote_log(self) -> list[RemoteSegment]:
        """The segments a consumer reads from the bucket, in offset order."""
        ids = self.referenced
        return sorted(
            (s for s in self.segments.values() if s.segment_id in ids),
            key=lambda s: (s.start_offset, s.end_offset),
        )

    def in_state(self, state: str) -> list[RemoteSegment]:
        return sorted(
            (s for s in self.segments.values() if s.state == state), key=lambda s: s.start_offset
        )

    def unreferenced(self) -> list[RemoteSegment]:
        """Finished uploads no epoch holds: a newer upload of their offsets replaced them."""
        ids = self.referenced
        return [s for s in self.in_state(COPY_FINISHED) if s.segment_id not in ids]

    def offsets(self) -> tuple[int, int] | None:
        """(first, last) offset the remote log holds, None when it holds none."""
        log = self.remote_log()
        if not log:
            return None
        return min(s.start_offset for s in log), max(s.end_offset for s in log)

    def gaps(self) -> list[tuple[int, int]]:
        """Offset ranges between the remote log's first and last offset no segment holds."""
        out = []
        reach: int | None = None
        for s in self.remote_log():
            if reach is not None and s.start_offset > reach + 1:
                out.append((reach + 1, s.start_offset - 1))
            reach = s.end_offset if reach is None else max(reach, s.end_offset)
        return out

    def highest_offset_for_epoch(self, epoch: int) -> int | None:
        state = self.epochs.get(epoch)
        return None if state is None else state.highest

    def highest_uploaded_offset(
        self, local_epochs: list[checkpoint.EpochEntry] | None, log_end_offset: int
    ) -> int:
        """The broker's ``findHighestRemoteOffset``: the newest local leader epoch that has
        remote data gives the last uploaded offset, bounded by where that epoch ends locally;
        -1 when none (nothing local counts as uploaded)."""
        entries = sorted(local_epochs or [], key=lambda e: e.epoch)
        for i in range(len(entries) - 1, -1, -1):
            highest = self.highest_offset_for_epoch(entries[i].epoch)
            if highest is not None:
                end = entries[i + 1].start_offset if i + 1 < len(entries) else log_end_offset
                return min(end - 1, highest)
        return -1

    # the replay (RemoteLogMetadataCache)

    def _segment_started(self, data: dict[str, Any], where: str) -> None:
        seg_id = data["remoteLogSegmentId"]["id"]
        existing = self.segments.get(seg_id)
        state = SEGMENT_STATES[data["remoteLogSegmentState"]]
        if state != COPY_STARTED:  # (Kafka refuses it: IllegalArgumentException)
            self.dropped.append(f"{where}: segment {seg_id} cannot start as {state}")
            return
        if not self._valid(existing, state, seg_id, where):
            return
        custom = data.get("customMetadata")
        self.segments[seg_id] = RemoteSegment(
            segment_id=seg_id,
            start_offset=data["startOffset"],
            end_offset=data["endOffset"],
            leader_epochs=leader_epochs(data),
            size=data["segmentSizeInBytes"],
            max_timestamp=data["maxTimestampMs"],
            broker_id=data["brokerId"],
            state=state,
            started=data["eventTimestampMs"],
            updated=data["eventTimestampMs"],
            custom_metadata=_size(custom),
            where=where,
        )
        for epoch in self.segments[seg_id].leader_epochs:
            self.epochs.setdefault(epoch, _EpochState()).unreferenced.add(seg_id)

    def _segment_updated(self, data: dict[str, Any], where: str) -> None:
        seg_id = data["remoteLogSegmentId"]["id"]
        state = SEGMENT_STATES[data["remoteLogSegmentState"]]
        seg = self.segments.get(seg_id)
        if seg is None:
            self.dropped.append(
                f"{where}: {state} of segment {seg_id}, whose upload never started here "
                "(no COPY_SEGMENT_STARTED before it)"
            )
            return
        if state == COPY_STARTED:  # (Kafka refuses it: IllegalArgumentException)
            self.dropped.append(f"{where}: an update may not start a segment ({seg_id})")
            return
        if not self._valid(seg, state, seg_id, where):
            return
        # (RemoteLogSegmentMetadata.createWithUpdates: the update's custom metadata, even none)
        seg.state, seg.updated, seg.broker_id, seg.custom_metadata, seg.where = (
            state,
            data["eventTimestampMs"],
            data["brokerId"],
            _size(data.get("customMetadata")),
            where,
        )
        epochs = list(seg.leader_epochs.items())
        for i, (epoch, start) in enumerate(epochs):
            es = self.epochs.setdefault(epoch, _EpochState())
            if state == COPY_FINISHED:
                epoch_end = epochs[i + 1][1] - 1 if i + 1 < len(epochs) else seg.end_offset
                es.finished(start, seg_id, epoch_end)
            elif state == DELETE_STARTED:
                if es.offset_to_id.get(start) == seg_id:
                    del es.offset_to_id[start]
                es.unreferenced.add(seg_id)
            else:  # DELETE_SEGMENT_FINISHED
                es.unreferenced.discard(seg_id)
        if state == DELETE_FINISHED:
            del self.segments[seg_id]
            self.deleted_segments += 1
            self.deleted_bytes += seg.size

    def _valid(self, seg: RemoteSegment | None, state: str, seg_id: str, where: str) -> bool:
        current = None if seg is None else seg.state
        if state in _NEXT_STATES[current]:
            return True
        self.dropped.append(f"{where}: segment {seg_id} cannot go from {current} to {state}")
        return False


@dataclass
class RemoteTier:
    """Every user partition the metadata partitions read describe, and what they held."""

    partitions: dict[tuple[str, int], RemotePartition] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # records that did not decode
    snapshots: int = 0  # snapshot records (only in snapshot files; not replayed)

    def find(self, topic_id: str, partition: int) -> RemotePartition | None:
        return self.partitions.get((topic_id, partition))

    def by_name(self, topic: str, partition: int) -> list[RemotePartition]:
        """Every topic id a topic name had (a topic deleted and created again has two)."""
        return [p for p in self.partitions.values() if (p.topic, p.partition) == (topic, partition)]

    def apply(self, value: Any, where: str, metadata_partition: str) -> None:
        """Replay one record value (raises FormatError for one that does not decode)."""
        rec = decode_remote_log_metadata(value)
        refused = check_values(rec)
        if refused is not None:
            raise FormatError(f"{rec.type_name}: {refused}", None)
        data = rec.data
        if data is None:
            raise FormatError(f"unknown record type {rec.api_key}", None)
        if rec.api_key == RemoteLogMetadataType.SEGMENT_SNAPSHOT:
            self.snapshots += 1
            return
        if rec.api_key == RemoteLogMetadataType.PARTITION_DELETE:
            tip = data["topicIdPartition"]
            key = (tip["id"], tip["partition"])
            part = self._partition(tip, metadata_partition)
            part.delete_state = PARTITION_DELETE_STATES[data["remotePartitionDeleteState"]]
            if part.delete_state == "DELETE_PARTITION_FINISHED":
                del self.partitions[key]  # the broker forgets the partition
            return
        tip = data["remoteLogSegmentId"]["topicIdPartition"]
        part = self._partition(tip, metadata_partition)
        if rec.api_key == RemoteLogMetadataType.SEGMENT:
            part._segment_started(data, where)
        else:
            part._segment_updated(data, where)

    def _partition(self, tip: dict[str, Any], metadata_partition: str) -> RemotePartition:
        key = (tip["id"], tip["partition"])
        part = self.partitions.get(key)
        if part is None:
            part = RemotePartition(tip["name"], tip["id"], tip["partition"], metadata_partition)
            self.partitions[key] = part
        return part


def _values(path: Path) -> Iterator[tuple[int, bytes | memoryview | None]]:
    with mapped(path) as buf:
        for batch in SegmentScanner(buf, strict=False):
            if batch.is_control:
                continue
            for rec in batch.records(DEFAULT_LIMITS.max_batch_bytes):
                yield rec.offset, rec.value


def replay(dirs: Iterable[Path]) -> RemoteTier:
    """Replay ``__remote_log_metadata-N`` partition directories, each in offset order."""
    tier = RemoteTier()
    for d in dirs:
        for seg in sorted(p for p in d.iterdir() if layout.file_kind(p) == layout.LOG):
            for offset, value in _values(seg):
                where = f"{d.name}@{offset}"
                if value is None:
                    continue  # a tombstone (KIP-1266 compaction): nothing to replay
                try:
                    tier.apply(value, where, d.name)
                except FormatError as e:
                    tier.problems.append(f"{where}: {e}")
    return tier


def metadata_dirs(log_dirs: Iterable[Path]) -> list[Path]:
    """The live ``__remote_log_metadata-N`` partition directories of the given log dirs."""
    found: dict[Path, None] = {}
    for log_dir in log_dirs:
        try:
            children = sorted(log_dir.iterdir())
        except OSError:
            continue
        for child in children:
            parsed = layout.parse_partition_dir_name(child.name)
            if (
                parsed is not None
                and parsed[0] == TOPIC
                and layout.partition_dir_state(child.name) is None
                and child.is_dir()
            ):
                found[Path(os.path.abspath(child))] = None
    return list(found)


def _size(b64: str | None) -> int | None:
    return None if b64 is None else len(base64.b64decode(b64))


def metadata_partition(topic_id: str, partition: int, partitions: int = DEFAULT_PARTITIONS) -> int:
    """The ``__remote_log_metadata`` partition of a user partition's events
    (``RemoteLogMetadataTopicPartitioner``: murmur2 of ``Objects.hash(lsb, msb, partition)``
    as 4 big-endian bytes)."""
    raw = uuid_from_text(topic_id)
    msb, lsb = int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")
    h = 1
    for v in (lsb ^ (lsb >> 32), msb ^ (msb >> 32), partition):  # Long.hashCode, Integer's
        h = (31 * h + v) & 0xFFFFFFFF
    return (_murmur2_4(h.to_bytes(4, "big")) & 0x7FFFFFFF) % partitions


def _murmur2_4(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` of 4 bytes (as an unsigned 32-bit value)."""
    m = 0x5BD1E995
    k = (int.from_bytes(data, "little") * m) & 0xFFFFFFFF
    k = ((k ^ (k >> 24)) * m) & 0xFFFFFFFF
    h = (((0x9747B28C ^ 4) * m) & 0xFFFFFFFF) ^ k
    h = ((h ^ (h >> 13)) * m) & 0xFFFFFFFF
    return h ^ (h >> 15)


def metadata_dirs_for(log_dir: Path, given: Iterable[Path] = ()) -> list[Path]:
    """The ``__remote_log_metadata-N`` partitions a broker holds: in ``log_dir`` and in the
    other log dirs of the same broker (same cluster.id and node id: one of ``given``, or one
    nearby), where the broker put them."""
    from klogtool.log.metadata import broker_of, nearby_log_dirs

    dirs = [log_dir]
    broker = broker_of(log_dir)
    if broker is not None:
        dirs += [d for d in [*given, *nearby_log_dirs(log_dir)] if broker_of(d) == broker]
    return metadata_dirs(dirs)


def topic_id_of(partition_dir: Path) -> str | None:
    """The topic id in a partition dir's ``partition.metadata``, None when it has none."""
    try:
        data = read_small(partition_dir / checkpoint.PARTITION_METADATA_NAME)
        return checkpoint.parse_partition_metadata(data).topic_id
    except (OSError, FormatError):
        return None


@dataclass
class TierSummary:
    """A partition's remote tier beside its local one (describe's ``remote_tier``)."""

    remote: RemotePartition
    local_start_offset: int
    local_end_offset: int  # the next offset (exclusive)
    highest_uploaded_offset: int  # -1: nothing local counts as uploaded
    # records of its metadata partition that do not decode (they may have been its events)
    metadata_problems: list[str] = field(default_factory=list)

    @property
    def overlap(self) -> tuple[int, int] | None:
        """Offsets held both remotely and locally."""
        span = self.remote.offsets()
        if span is None:
            return None
        lo, hi = max(span[0], self.local_start_offset), min(span[1], self.local_end_offset - 1)
        return (lo, hi) if lo <= hi else None

    @property
    def gap(self) -> tuple[int, int] | None:
        """Offsets between the remote log's end and the local log's start that neither holds."""
        span = self.remote.offsets()
        if span is None or self.local_start_offset <= span[1] + 1:
            return None
        return span[1] + 1, self.local_start_offset - 1

    def as_obj(self, path: str) -> events.DescribeRemoteTier:
        r = self.remote
        log = r.remote_log()
        span = r.offsets()
        return {
            "type": "remote_tier",
            "path": path,
            "topic": r.topic,
            "partition": r.partition,
            "topic_id": r.topic_id,
            "metadata_partition": r.metadata_partition,
            "segments": len(log),
            "bytes": sum(s.size for s in log),
            "start_offset": None if span is None else span[0],
            "end_offset": None if span is None else span[1],
            "highest_uploaded_offset": self.highest_uploaded_offset,
            "local_start_offset": self.local_start_offset,
            "local_end_offset": self.local_end_offset,
            "overlap": None if self.overlap is None else list(self.overlap),
            "gap": None if self.gap is None else list(self.gap),
            "remote_gaps": [list(g) for g in r.gaps()],
            "uploads_unfinished": len(r.in_state(COPY_STARTED)),
            "deletions_unfinished": len(r.in_state(DELETE_STARTED)),
            "unreferenced": len(r.unreferenced()),
            "deleted_segments": r.deleted_segments,
            "deleted_bytes": r.deleted_bytes,
            "delete_state": r.delete_state,
            "dropped_events": list(r.dropped),
            "metadata_problems": list(self.metadata_problems),
        }

    def segment_objs(self, path: str) -> Iterator[events.DescribeRemoteSegment]:
        """Every remote segment the replay knows (describe --remote-segments), offset order."""
        referenced = self.remote.referenced
        for s in sorted(self.remote.segments.values(), key=lambda s: (s.start_offset, s.updated)):
            yield {
                "type": "remote_segment",
                "path": path,
                "topic": self.remote.topic,
                "partition": self.remote.partition,
                **s.fields(s.segment_id in referenced),  # type: ignore[typeddict-item]
            }

    def findings(self) -> list[str]:
        """What an operator should look at, one line each."""
        r, out = self.remote, []
        for state, what in (
            (COPY_STARTED, "upload never finished"),
            (DELETE_STARTED, "deletion never finished"),
        ):
            for s in r.in_state(state):
                out.append(
                    f"{what}: segment {s.segment_id} (offsets {s.start_offset}-{s.end_offset})"
                )
        for s in r.unreferenced():
            out.append(
                f"unreferenced copy: segment {s.segment_id} (offsets {s.start_offset}-"
                f"{s.end_offset}; a later upload holds them)"
            )
        out += [f"remote gap: offsets {a}-{b} are in no remote segment" for a, b in r.gaps()]
        if self.gap is not None:
            out.append(f"gap: offsets {self.gap[0]}-{self.gap[1]} are neither remote nor local")
        if r.delete_state is not None:
            out.append(f"partition deletion: {r.delete_state}")
        out += [f"dropped event: {d}" for d in r.dropped]
        out += [f"metadata record that does not decode: {p}" for p in self.metadata_problems]
        return out


def uploaded_bound(summary: TierSummary | None) -> tuple[int, str]:
    """A partition's highest offset in remote storage as the broker finds it, and where that
    was found; -1 (nothing local counts as uploaded) without a remote tier."""
    if summary is None:
        return -1, "no __remote_log_metadata partition of this broker describes it"
    return summary.highest_uploaded_offset, summary.remote.metadata_partition


class TierCache:
    """Replays of the metadata partitions, once per set of them (describe, explain, sweeps)."""

    def __init__(self, given: Iterable[Path] = ()) -> None:
        self.given = tuple(given)
        self._tiers: dict[tuple[Path, ...], RemoteTier] = {}
        self._dirs: dict[Path, tuple[Path, ...]] = {}  # log dir -> its metadata partitions

    def tier_for(self, log_dir: Path) -> RemoteTier | None:
        # the same broker's log dirs are looked for once per log dir, not once per partition
        if log_dir not in self._dirs:
            self._dirs[log_dir] = tuple(metadata_dirs_for(log_dir, self.given))
        dirs = self._dirs[log_dir]
        if not dirs:
            return None
        if dirs not in self._tiers:
            self._tiers[dirs] = replay(dirs)
        return self._tiers[dirs]

    def partition(
        self, partition_dir: Path, topic: str | None, partition: int | None
    ) -> RemotePartition | None:
        """The remote tier of a partition dir: by its topic id, else by its name when only
        one topic id of that name has remote segments."""
        if topic is None or partition is None or topic == TOPIC:
            return None
        tier = self.tier_for(partition_dir.parent)
        if tier is None:
            return None
        topic_id = topic_id_of(partition_dir)
        if topic_id is not None:
            return tier.find(topic_id, partition)
        named = tier.by_name(topic, partition)
        return named[0] if len(named) == 1 else None

    def summary_of(self, view: LocalLog) -> TierSummary | None:
        """The remote tier of a loaded partition beside its local log, None when the host's
        metadata describes none."""
        remote = self.partition(view.path, view.topic, view.partition)
        if remote is None:
            return None
        tier = self.tier_for(view.path.parent)
        return TierSummary(
            remote,
            view.log_start_offset,
            view.log_end_offset,
            remote.highest_uploaded_offset(_local_epochs(view), view.log_end_offset),
            [p for p in tier.problems if p.startswith(f"{remote.metadata_partition}@")]
            if tier is not None
            else [],
        )


def _local_epochs(view: LocalLog) -> list[checkpoint.EpochEntry] | None:
    if view.leader_epoch_checkpoint is None:
        return None
    try:
        return checkpoint.parse_leader_epoch_checkpoint(read_small(view.leader_epoch_checkpoint))
    except (OSError, FormatError):
        return None  # (nothing local then counts as uploaded)

"""``restore-tier``: a partition directory the broker can load, written from the segments a
tiered partition copied to remote storage (docs/tiered-storage.md: Restoring).

The remote segments are read in either layout :mod:`klogtool.log.remote_layouts` knows
(Kafka's LocalTieredStorage, Aiven's plugin), from a directory or an object-storage URI.

Which segments: with the remote-log metadata (:mod:`klogtool.log.remote_tier`), the remote log
the broker reads (finished uploads that hold their offsets, no unfinished or unreferenced
copy); without it, every segment of the directory, refused when two overlap (only the
metadata can tell which copy holds the offsets). An offset range takes the whole segments it
touches. Each segment is read whole and held to its offsets before anything is written.

Written like every writer here: into ``<topic>-<partition>.<hex>-delete`` in the log dir (a
name the broker loads as a directory to delete, so an interrupted restore is never taken for
data), each file fsynced, then renamed to ``<topic>-<partition>`` and the log dir fsynced. A
run that finds its own unfinished staging directory removes it and starts again.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.formats import checkpoint
from klogtool.formats.checkpoint import EpochEntry
from klogtool.formats.errors import FormatError
from klogtool.formats.records import CLEAN, SegmentScanner
from klogtool.log import layout
from klogtool.log.atomic import FileOps
from klogtool.log.epochs import truncate_epochs_from_start
from klogtool.log.remote_layouts import RemoteFileset, RemoteLayout
from klogtool.log.segment import mapped, read_small

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.log.remote_tier import RemotePartition

REQUIRED = ("log", "index", "timeindex", "epochs", "snapshot")  # .txnindex is optional
MARKER = "klogtool-restore-in-progress"  # in a staging directory until it is complete
_STAGING = re.compile(r"^(?P<name>.+-\d+)\.[0-9a-f]{32}-delete$")
_COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class RestoreSegment:
    start_offset: int
    end_offset: int  # inclusive
    fileset: RemoteFileset
    size: int


@dataclass
class RestorePlan:
    source: Path
    dest: Path  # the partition dir to write
    topic: str
    partition: int
    topic_id: str
    segments: list[RestoreSegment]
    epochs: list[EpochEntry]
    chosen_by: str  # "remote-log metadata (__remote_log_metadata-N)" or "the files"
    layout: str  # LocalTieredStorage.name or AivenLayout.name
    notes: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def segment_objs(self) -> Iterator[events.RestoreTierSegment]:
        for s in self.segments:
            yield {
                "type": "segment",
                "partition": str(self.dest),
                "segment_id": s.fileset.segment_id,
                "start_offset": s.start_offset,
                "end_offset": s.end_offset,
                "size": s.size,
                "source": str(s.fileset.files["log"]),
            }

    def as_obj(self, dry_run: bool) -> events.RestoreTierSummary:
        return {
            "type": "summary",
            "dry_run": dry_run,
            "source": str(self.source),
            "partition": str(self.dest),
            "topic": self.topic,
            "topic_id": self.topic_id,
            "segments": len(self.segments),
            "bytes": self.bytes,
            "start_offset": self.segments[0].start_offset,
            "end_offset": self.segments[-1].end_offset,
            "leader_epochs": [[e.epoch, e.start_offset] for e in self.epochs],
            "chosen_by": self.chosen_by,
            "layout": self.layout,
            "notes": self.notes,
        }


def _checked_segment(fs: RemoteFileset, end: int | None) -> RestoreSegment:
    """Read a remote segment whole: its batches must be intact, start at its start offset and
    (when the metadata says) end at its end offset."""
    missing = [k for k in REQUIRED if k not in fs.files]
    if missing:
        raise InputError(
            f"remote segment {fs.segment_id} lacks its "
            f"{', '.join('.' + k.replace('epochs', 'leader_epoch_checkpoint') for k in missing)}",
            path=str(next(iter(fs.files.values()), "")),
            code=Code.REMOTE_SEGMENT_MISSING,
        )
    log = fs.files["log"]
    first = last = None
    with mapped(log) as buf:
        scanner = SegmentScanner(buf, strict=True, stop_on_crc=True)
        for batch in scanner:
            first = batch.base_offset if first is None else first
            last = batch.last_offset
        result = scanner.result
        size = len(buf)
    assert result is not None
    if result.end != CLEAN:
        raise InputError(
            f"remote segment {fs.segment_id} is damaged: {result.error or result.end}",
            path=str(log),
            position=result.valid_bytes,
            code=result.error.code if result.error is not None else Code.CORRUPT,
        )
    if (
        first is None
        or last is None
        or first < fs.start_offset
        or (end is not None and last != end)
    ):
        raise InputError(
            f"remote segment {fs.segment_id} holds offsets {first}..{last}, not "
            f"{fs.start_offset}..{end if end is not None else ''}",
            path=str(log),
            code=Code.CORRUPT,
        )
    return RestoreSegment(fs.start_offset, last, fs, size)


def _chosen(
    remote: RemoteLayout, tier: RemotePartition | None
) -> tuple[list[tuple[str, int, int | None]], str]:
    """(segment id, start offset, end offset when known) of the segments to restore, in
    offset order, and what chose them."""
    starts = remote.starts()
    if tier is None:
        ordered = sorted(starts.items(), key=lambda kv: kv[1])
        return [(i, o, None) for i, o in ordered], "the files"
    out: list[tuple[str, int, int | None]] = []
    for seg in tier.remote_log():
        if seg.segment_id not in starts:
            raise InputError(
                f"remote segment {seg.segment_id} (offsets {seg.start_offset}.."
                f"{seg.end_offset}) of the remote log has no files here",
                path=str(remote.path),
                code=Code.REMOTE_SEGMENT_MISSING,
            )
        out.append((seg.segment_id, seg.start_offset, seg.end_offset))
    return out, f"remote-log metadata ({tier.metadata_partition})"


def plan_restore(
    remote: RemoteLayout,
    log_dir: Path,
    *,
    tier: RemotePartition | None = None,
    from_offset: int | None = None,
    to_offset: int | None = None,
    topic: str | None = None,
    topic_id: str | None = None,
) -> RestorePlan:
    """What :func:`apply_restore` writes: the remote segments of ``remote`` (see
    :func:`open_layout`) that hold ``from_offset``..``to_offset`` (all), as
    ``log_dir/<topic>-<partition>`` (the source's topic and topic id unless given)."""
    partition = remote.partition
    topic, topic_id = topic or remote.topic, topic_id or remote.topic_id
    dest = log_dir / f"{topic}-{partition}"
    if dest.exists() or dest.is_symlink():
        raise RefusedError(
            "exists: restore-tier writes a new partition directory, never into one",
            path=str(dest),
            code=Code.DESTINATION_NOT_EMPTY,
        )
    picked, chosen_by = _chosen(remote, tier)
    notes: list[str] = []
    segments = []
    for segment_id, start, end in picked:
        if from_offset is not None and end is not None and end < from_offset:
            continue
        if to_offset is not None and start > to_offset:
            continue
        fs = remote.fileset(segment_id)
        assert fs is not None  # (chosen among its segments)
        seg = _checked_segment(fs, end)
        if from_offset is not None and seg.end_offset < from_offset:
            continue
        segments.append(seg)
    if not segments:
        raise InputError(
            "no remote segment holds the offsets asked for",
            path=str(remote.path),
            code=Code.REMOTE_SEGMENT_MISSING,
        )
    for a, b in zip(segments, segments[1:], strict=False):
        if b.start_offset <= a.end_offset:
            raise RefusedError(
                f"remote segments {a.fileset.segment_id} ({a.start_offset}..{a.end_offset}) "
                f"and {b.fileset.segment_id} ({b.start_offset}..{b.end_offset}) overlap: only "
                "the remote-log metadata tells which copy holds the offsets (--metadata-log-dir)",
                path=str(remote.path),
                code=Code.REMOTE_SEGMENTS_OVERLAP,
            )
        if b.start_offset > a.end_offset + 1:
            notes.append(f"offsets {a.end_offset + 1}..{b.start_offset - 1} are in no segment")
    if from_offset is not None and segments[0].start_offset < from_offset:
        notes.append(f"whole segments: the log starts at {segments[0].start_offset}")
    return RestorePlan(
        remote.path,
        dest,
        topic,
        partition,
        topic_id,
        segments,
        _epochs(segments),
        chosen_by,
        remote.name,
        notes,
    )


def _epochs(segments: list[RestoreSegment]) -> list[EpochEntry]:
    """The leader epochs of the restored log: the last segment's checkpoint (it holds every
    epoch up to its end, as the broker's cache did when it uploaded), from the first offset."""
    data = read_small(segments[-1].fileset.files["epochs"])
    try:
        entries = checkpoint.parse_leader_epoch_checkpoint(data)
    except FormatError as e:
        raise InputError(
            str(e),
            path=str(segments[-1].fileset.files["epochs"]),
            position=e.position,
            code=e.code,
        ) from None
    entries = [e for e in entries if e.start_offset <= segments[-1].end_offset]
    return truncate_epochs_from_start(entries, segments[0].start_offset)


def _chunks(path: Path) -> Iterator[memoryview]:
    with mapped(path) as buf:
        for i in range(0, len(buf), _COPY_CHUNK):
            yield buf[i : i + _COPY_CHUNK]


def staging_dirs(log_dir: Path, name: str) -> list[Path]:
    """Unfinished restores of partition ``name`` in ``log_dir``: staging directories that
    still hold the marker (another ``-delete`` directory is the broker's, never touched)."""
    out = []
    for d in sorted(log_dir.iterdir()):
        m = _STAGING.match(d.name)
        if m and m["name"] == name and d.is_dir() and not d.is_symlink():
            if (d / MARKER).is_file():
                out.append(d)
    return out


def apply_restore(ops: FileOps, plan: RestorePlan) -> list[Path]:
    """Write the plan's partition directory (see the module docstring); returns the unfinished
    staging directories of an earlier run it removed."""
    log_dir = plan.dest.parent
    removed = staging_dirs(log_dir, plan.dest.name)
    for d in removed:
        ops.remove_tree(d)
    staging = log_dir / f"{plan.dest.name}.{uuid.uuid4().hex}-delete"
    ops.mkdir(staging)
    ops.write(staging / MARKER, [str(plan.source).encode()])
    for seg in plan.segments:
        for kind, suffix in (
            ("log", ".log"),
            ("index", ".index"),
            ("timeindex", ".timeindex"),
            ("txnindex", ".txnindex"),
        ):
            src = seg.fileset.files.get(kind)
            if src is not None:
                dst = staging / layout.segment_name(seg.start_offset, suffix)
                ops.write(dst, _chunks(src))
    last = plan.segments[-1]
    snapshot = layout.segment_name(last.end_offset + 1, ".snapshot")
    ops.write(staging / snapshot, _chunks(last.fileset.files["snapshot"]))
    ops.write(
        staging / "leader-epoch-checkpoint",
        [checkpoint.encode_leader_epoch_checkpoint(plan.epochs)],
    )
    ops.write(
        staging / checkpoint.PARTITION_METADATA_NAME,
        [checkpoint.encode_partition_metadata(plan.topic_id)],
    )
    ops.unlink(staging / MARKER)
    ops.fsync_dir(staging)
    ops.rename(staging, plan.dest)
    ops.fsync_dir(log_dir)
    return removed

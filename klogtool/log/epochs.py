"""A partition's leader-epoch timeline: which leader wrote which offsets, told twice.

The ``leader-epoch-checkpoint`` says where each epoch started (the broker's
``LeaderEpochFileCache``); every v2 batch carries the epoch of the leader that appended it
(``partitionLeaderEpoch``). The two normally agree; after an unclean election, a truncation
or a lost checkpoint write they may not, and that is when an operator needs both side by
side. :class:`EpochRuns` collects the batches' side from any walk of the batch headers;
:func:`timeline` puts it beside the checkpoint's, one :class:`EpochRow` per epoch run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from klogtool.formats import checkpoint
from klogtool.formats.batch import LOG_APPEND_TIME, Batch
from klogtool.formats.errors import FormatError
from klogtool.formats.records import SegmentScanner
from klogtool.log.partition import load_partition
from klogtool.log.record_filter import first_offset
from klogtool.log.segment import mapped, read_small

if TYPE_CHECKING:
    from klogtool import events

NO_EPOCH = -1  # message format 0/1, or a v2 batch written without one


@dataclass
class EpochRun:
    """Consecutive batches with the same partition leader epoch."""

    epoch: int
    start_offset: int  # the first batch's base offset
    last_offset: int
    first_timestamp: int  # the first batch's time: its append time, or its first record's
    batches: int = 0
    records: int = 0
    bytes: int = 0


@dataclass
class EpochRuns:
    """The batches' own epochs, run by run, in the order a walk meets the batches."""

    runs: list[EpochRun] = field(default_factory=list)

    def add(self, batch: Batch, base_offset: int) -> None:
        epoch = batch.partition_leader_epoch if batch.magic >= 2 else NO_EPOCH
        run = self.runs[-1] if self.runs else None
        if run is None or run.epoch != epoch:
            ts = batch.max_timestamp
            if batch.magic >= 2 and batch.timestamp_type != LOG_APPEND_TIME:
                ts = batch.base_timestamp
            run = EpochRun(epoch, base_offset, batch.last_offset, ts)
            self.runs.append(run)
        run.last_offset = batch.last_offset
        run.batches += 1
        try:
            run.records += batch.count
        except FormatError:  # a v0/v1 wrapper that does not decompress: its offsets, then
            run.records += batch.last_offset - base_offset + 1
        run.bytes += batch.size


@dataclass
class EpochRow:
    """One epoch: where the checkpoint starts it, and what its batches hold."""

    epoch: int
    checkpoint_start_offset: int | None  # None: the checkpoint has no entry for it
    start_offset: int | None  # its first batch; None: no batch of it is in the log
    last_offset: int | None
    first_timestamp: int | None
    batches: int
    records: int
    bytes: int
    # the checkpoint's start is the first batch's offset; None where there is nothing to
    # compare (no checkpoint, no batch, or batches without an epoch)
    same_start: bool | None

    def as_obj(self, path: str, topic: str | None, partition: int | None) -> events.DescribeEpoch:
        return {
            "type": "epoch",
            "path": path,
            "topic": topic,
            "partition": partition,
            "epoch": self.epoch,
            "checkpoint_start_offset": self.checkpoint_start_offset,
            "start_offset": self.start_offset,
            "last_offset": self.last_offset,
            "first_timestamp": self.first_timestamp,
            "batches": self.batches,
            "records": self.records,
            "bytes": self.bytes,
            "same_start": self.same_start,
        }


def timeline(entries: list[checkpoint.EpochEntry] | None, runs: list[EpochRun]) -> list[EpochRow]:
    """The checkpoint's ``entries`` (None: there is no readable checkpoint) beside the batches'
    ``runs``, in offset order: one row per run, and one per checkpoint epoch with no batch."""
    starts = {} if entries is None else {e.epoch: e.start_offset for e in entries}
    rows: list[tuple[int, EpochRow]] = []
    for run in runs:
        ckpt = starts.get(run.epoch)
        same = None
        if entries is not None and run.epoch != NO_EPOCH:
            same = ckpt == run.start_offset
        rows.append(
            (
                run.start_offset,
                EpochRow(
                    run.epoch,
                    ckpt,
                    run.start_offset,
                    run.last_offset,
                    run.first_timestamp,
                    run.batches,
                    run.records,
                    run.bytes,
                    same,
                ),
            )
        )
    seen = {run.epoch for run in runs}
    for epoch, start in starts.items():
        if epoch not in seen:
            rows.append((start, EpochRow(epoch, start, None, None, None, 0, 0, 0, None)))
    rows.sort(key=lambda r: r[0])  # stable: a run before the empty epoch starting with it
    return [row for _, row in rows]


@dataclass
class EpochTimeline:
    """A partition's timeline, and what its checkpoint was (``present``, ``missing``, or
    ``unreadable: why``)."""

    rows: list[EpochRow]
    checkpoint: str


def read_checkpoint(path: Path | None) -> tuple[list[checkpoint.EpochEntry] | None, str]:
    """A partition's ``leader-epoch-checkpoint`` entries (None when there are none to trust)
    and what the file was."""
    if path is None:
        return None, "missing"
    try:
        return checkpoint.parse_leader_epoch_checkpoint(read_small(path)), "present"
    except FileNotFoundError:
        return None, "missing"
    except (OSError, FormatError) as e:
        return None, f"unreadable: {e}"


def partition_timeline(path: Path) -> EpochTimeline:
    """Walk the batch headers of the partition dir ``path`` (no record is decoded) and set them
    beside its checkpoint. A segment's walk ends where its batches cannot be read."""
    view = load_partition(path)
    runs = EpochRuns()
    for seg in view.segments:
        with mapped(seg.log) as buf:
            for batch in SegmentScanner(buf, check_crc=False):
                runs.add(batch, first_offset(batch))
    entries, state = read_checkpoint(view.leader_epoch_checkpoint)
    return EpochTimeline(timeline(entries, runs.runs), state)


def truncate_epochs_from_start(
    entries: list[checkpoint.EpochEntry], start: int
) -> list[checkpoint.EpochEntry]:
    """``LeaderEpochFileCache.truncateFromStart``: entries starting at or before ``start``
    collapse into the latest of them, moved to ``start``."""
    before = [e for e in entries if e.start_offset <= start]
    after = [e for e in entries if e.start_offset > start]
    if not before:
        return list(entries)
    return [checkpoint.EpochEntry(before[-1].epoch, start)] + after

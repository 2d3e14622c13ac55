"""Planning a read: PATH arguments to segment files, segment files to splits of about
``target_split_bytes`` (whole segments packed, large ones cut at byte ranges the reader aligns
to batches), and segments a record filter's offsets or times rule out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.log import layout, storage
from klogtool.log.files import expand
from klogtool.log.record_filter import RecordFilter
from klogtool.log.segment import STDIN

DEFAULT_TARGET_SPLIT_BYTES = 128 << 20


OPEN_COST_BYTES = 1 << 20  # what one more file costs a split (Spark's openCostInBytes idea)


# -- planning -------------------------------------------------------------------------------
@dataclass(frozen=True)
class SegmentRange:
    """Batches of one segment that start in ``[start, end)``; ``size`` is the file size at
    planning time (a growing active segment is read up to there)."""

    path: str  # absolute
    topic: str | None
    partition: int | None
    segment: int | None  # base offset from the file name
    start: int
    end: int
    size: int
    rolled: bool = False  # a later segment of the same partition dir exists


@dataclass(frozen=True)
class Split:
    index: int
    ranges: tuple[SegmentRange, ...]

    @property
    def bytes(self) -> int:
        return sum(r.end - r.start for r in self.ranges)

    def described(self) -> str:
        """What the split reads, for a message: its segments' byte ranges."""
        return (
            "split "
            + str(self.index)
            + " ("
            + ", ".join(f"bytes {r.start}..{r.end} of {r.path}" for r in self.ranges)
            + ")"
        )


@dataclass(frozen=True)
class SegmentFile:
    path: str  # absolute
    display: str
    topic: str | None
    partition: int | None
    base: int | None
    next_base: int | None  # the next segment's base offset in the same partition dir
    size: int


@dataclass
class Prune:
    """Pushed-down predicates used at planning: whole segments are left out."""

    topics: set[str | None] | None = None
    partitions: set[int | None] | None = None
    partition_min: int | None = None
    partition_max: int | None = None
    min_offset: int | None = None
    max_offset: int | None = None

    def keeps(self, seg: SegmentFile) -> bool:
        if self.topics is not None and seg.topic not in self.topics:
            return False
        if self.partitions is not None and seg.partition not in self.partitions:
            return False
        if self.partition_min is not None or self.partition_max is not None:
            if seg.partition is None:
                return False
            if self.partition_min is not None and seg.partition < self.partition_min:
                return False
            if self.partition_max is not None and seg.partition > self.partition_max:
                return False
        if self.min_offset is not None and seg.next_base is not None:
            if seg.next_base - 1 < self.min_offset:
                return False
        if self.max_offset is not None and seg.base is not None and seg.base > self.max_offset:
            return False
        return True


def where_prune(where: RecordFilter | None) -> Prune:
    """The segments a record filter's offsets leave out (by file name)."""
    if where is None or where.offsets is None:
        return Prune()
    return Prune(min_offset=where.offsets[0], max_offset=where.offsets[1])


def list_segments(paths: Sequence[str]) -> list[SegmentFile]:
    """The ``.log`` segments PATHs stand for (files, partition dirs, log dirs), in dump order.

    Raises :class:`InputError` for a missing path, a directory that is not a Kafka dir, or a
    file given by name that is not a segment.
    """
    found: list[SegmentFile] = []
    for arg in paths:
        if arg == STDIN:
            raise InputError(
                "reading a segment from stdin is not supported here", path=arg, code=Code.STDIN
            )
        is_file = storage.path_of(arg).is_file()
        for f in expand([arg]):
            # KRaft snapshots (<offset>-<epoch>.checkpoint) are record batches too: exported
            if f.kind not in (layout.LOG, layout.KRAFT_SNAPSHOT):
                if is_file:
                    raise InputError(
                        f"not a log segment (a {f.kind} file); give .log files, partition "
                        "directories or log directories",
                        path=arg,
                        code=Code.NOT_A_SEGMENT,
                    )
                continue
            path = storage.absolute(f.path)
            parsed = layout.parse_partition_dir_name(f.path.parent.name)
            found.append(
                SegmentFile(
                    path=path,
                    display=f.display,
                    topic=parsed[0] if parsed else None,
                    partition=parsed[1] if parsed else None,
                    # a snapshot's name is no segment base: it takes no part in pruning
                    base=layout.offset_from_name(f.path) if f.kind == layout.LOG else None,
                    next_base=None,
                    size=f.path.stat().st_size,
                )
            )
    # next_base: the following segment of the same directory
    out: list[SegmentFile] = []
    for i, seg in enumerate(found):
        nxt = found[i + 1] if i + 1 < len(found) else None
        same_dir = nxt is not None and Path(nxt.path).parent == Path(seg.path).parent
        next_base = nxt.base if same_dir and nxt is not None else None
        if next_base is not None and seg.base is not None and next_base <= seg.base:
            next_base = None  # misnamed segments: no pruning by name
        out.append(
            SegmentFile(
                seg.path, seg.display, seg.topic, seg.partition, seg.base, next_base, seg.size
            )
        )
    return out


def plan_splits(
    paths: Sequence[str],
    *,
    target_split_bytes: int = DEFAULT_TARGET_SPLIT_BYTES,
    min_splits: int = 1,
    prune: Prune | None = None,
) -> list[Split]:
    """Bin-pack the segments of PATHs into splits of about ``target_split_bytes``.

    With ``min_splits`` > 1 the target shrinks so that there are enough splits to keep that
    many cores busy. Segments larger than the target are cut into equal
    byte ranges (batch boundaries are found by the reader). Planning reads no segment bytes.
    """
    segs = [s for s in list_segments(paths) if s.size > 0]
    if prune is not None:
        segs = [s for s in segs if prune.keeps(s)]
    return pack(segs, target_split_bytes=target_split_bytes, min_splits=min_splits)


def pack(segs: Sequence[SegmentFile], *, target_split_bytes: int, min_splits: int) -> list[Split]:
    """Spark's file-source packing: each file costs its size plus an open cost; with
    ``min_splits`` the target shrinks to the cost per core (not below the open cost)."""
    total = sum(s.size + OPEN_COST_BYTES for s in segs)
    target = max(1, target_split_bytes)
    if min_splits > 1 and total:
        target = min(target, max(OPEN_COST_BYTES, math.ceil(total / min_splits)))
    items: list[SegmentRange] = []
    for s in segs:
        n = max(1, math.ceil(s.size / target))
        step = math.ceil(s.size / n)
        for k in range(n):
            start = k * step
            end = s.size if k == n - 1 else (k + 1) * step
            rolled = s.next_base is not None
            items.append(
                SegmentRange(s.path, s.topic, s.partition, s.base, start, end, s.size, rolled)
            )
    splits: list[Split] = []
    current: list[SegmentRange] = []
    current_bytes = 0
    for r in items:
        if current and current_bytes + (r.end - r.start) > target:
            splits.append(Split(len(splits), tuple(current)))
            current, current_bytes = [], 0
        current.append(r)
        current_bytes += (r.end - r.start) + OPEN_COST_BYTES
    if current:
        splits.append(Split(len(splits), tuple(current)))
    return splits

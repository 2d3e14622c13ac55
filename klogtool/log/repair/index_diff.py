"""Existing index files against a rebuild: the checks that decide which files rebuild-index
and truncate-recovery rewrite, and where an existing file first differs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klogtool.formats import index
from klogtool.formats.errors import FormatError
from klogtool.formats.limits import ReadLimits
from klogtool.formats.records import CLEAN, ZERO_FILL
from klogtool.log import layout
from klogtool.log.findings import Finding
from klogtool.log.indexcheck import check_segment_indexes
from klogtool.log.repair.headers import SegmentScan
from klogtool.log.segment import Walked

SUFFIX = {layout.INDEX: ".index", layout.TIMEINDEX: ".timeindex", layout.TXNINDEX: ".txnindex"}


ENTRY_SIZE = {
    layout.INDEX: index.OFFSET_INDEX_ENTRY_SIZE,
    layout.TIMEINDEX: index.TIME_INDEX_ENTRY_SIZE,
    layout.TXNINDEX: index.TXN_INDEX_ENTRY_SIZE,
}


@dataclass(frozen=True)
class CheckTask:
    base_offset: int
    log: str
    index: str | None
    timeindex: str | None
    txnindex: str | None
    active: bool
    open_txns: tuple[tuple[int, int], ...]
    limits: ReadLimits


def run_check_task(task: CheckTask, walked: Walked | None = None) -> list[Finding]:
    seg = layout.SegmentFiles(
        task.base_offset,
        log=Path(task.log),
        index=Path(task.index) if task.index else None,
        timeindex=Path(task.timeindex) if task.timeindex else None,
        txnindex=Path(task.txnindex) if task.txnindex else None,
    )
    return check_segment_indexes(
        seg, active=task.active, open_txns=dict(task.open_txns), limits=task.limits, walked=walked
    )


def matches_rebuild(
    seg: layout.SegmentFiles, scan: SegmentScan, aborted: Sequence[index.AbortedTxn] | None
) -> bool:
    """Whether the segment's index files are byte for byte what a rebuild writes."""
    if aborted is None:
        return False
    want = {
        layout.INDEX: scan.index_bytes,
        layout.TIMEINDEX: scan.timeindex_bytes,
        layout.TXNINDEX: index.encode_txn_index(aborted),
    }
    for kind, data in want.items():
        path: Path | None = getattr(seg, kind)
        if path is None:
            if kind != layout.TXNINDEX or data:
                return False
        elif path.stat().st_size != len(data) or path.read_bytes() != data:
            return False
    return True


def decode_entries(kind: str, data: bytes, base_offset: int) -> list[tuple[int, ...]]:
    """Entries of an index file as tuples (a trailing partial slot is dropped)."""
    if kind == layout.INDEX:
        return [
            tuple(e) for e in index.iter_offset_index(data, base_offset, stop_at_zero_fill=False)
        ]
    if kind == layout.TIMEINDEX:
        return [tuple(e) for e in index.iter_time_index(data, base_offset, stop_at_zero_fill=False)]
    try:
        return [tuple(e)[1:] for e in index.iter_txn_index(data)]
    except FormatError:
        return []


def first_difference(kind: str, old: bytes, new: bytes, base_offset: int) -> dict[str, Any] | None:
    """The first entry where an existing index file and its rebuild differ."""
    a = decode_entries(kind, old, base_offset)
    b = decode_entries(kind, new, base_offset)
    fields = {
        layout.INDEX: ("offset", "position"),
        layout.TIMEINDEX: ("timestamp", "offset"),
        layout.TXNINDEX: ("producer_id", "first_offset", "last_offset", "last_stable_offset"),
    }[kind]
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x != y:
            return {
                "entry": i,
                "existing": dict(zip(fields, x, strict=True)) if x is not None else None,
                "rebuilt": dict(zip(fields, y, strict=True)) if y is not None else None,
            }
    if old != new:
        return {"entry": len(a), "existing": None, "rebuilt": None}
    return None


def entry_count(kind: str, data: bytes) -> int:
    return len(data) // ENTRY_SIZE[kind]


def is_tail_ok(scan: SegmentScan, *, last: bool) -> bool:
    """Indexes can be written for a segment that reads cleanly to its end, or (the active
    segment) whose tail is zero fill the broker's recovery would trim."""
    return scan.end == CLEAN or (last and scan.end == ZERO_FILL)

"""Share groups' delivery state (KIP-932) as the share coordinator loads ``__share_group_state``.

Per share partition (group, topic id, partition), in offset order (``ShareCoordinatorShard``,
Kafka 4.1/4.2): a ``ShareSnapshot`` (record type 0) replaces the state whole, its tombstone
deletes it; a ``ShareUpdate`` (type 1) applies on top of it: its start offset and leader
epoch where set (-1: unchanged), its delivery-complete count, and its state batches combined
with those held (``PersisterStateBatchCombiner``): batches below the start offset are cut
away, and where batches overlap the one with the higher delivery count wins, then the higher
delivery state (Available 0 < Acquired 1 < Acknowledged 2 < Archiving 3 < Archived 4), so each
offset ends with the largest (count, state) any batch gave it; neighbours alike are joined.

Records below the start offset are done with; an offset above it in no batch is available
(not yet delivered). An ``Archived`` batch holds records the group will never deliver again:
acknowledged as rejected, or delivered as many times as the group allows
(``group.share.delivery.count.limit``, 5 unless configured): the "poison messages".
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from klogtool.codes import Code
from klogtool.formats.errors import FormatError
from klogtool.formats.payloads.share_state import DELIVERY_STATES, decode_share_group_state
from klogtool.formats.records import SegmentScanner
from klogtool.log import storage
from klogtool.log.context import ReadContext
from klogtool.log.findings import Finding
from klogtool.log.partition import load_partition
from klogtool.log.segment import mapped

SHARE_GROUP_STATE = "__share_group_state"
SNAPSHOT, UPDATE = 0, 1
ARCHIVED = 4
DEFAULT_DELIVERY_LIMIT = 5  # group.share.delivery.count.limit's default


@dataclass(frozen=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    @property
    def info(self) -> tuple[int, int]:
        """What decides an overlap: the delivery count, then the state."""
        return self.delivery_count, self.delivery_state

    def as_obj(self) -> dict[str, Any]:
        return {
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "state": DELIVERY_STATES.get(self.delivery_state, str(self.delivery_state)),
            "delivery_count": self.delivery_count,
        }


@dataclass
class SharePartition:
    """One share partition's state: where the group stands in a topic partition."""

    group: str
    topic_id: str
    partition: int
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    batches: list[StateBatch] = field(default_factory=list)

    @property
    def archived(self) -> list[StateBatch]:
        return [b for b in self.batches if b.delivery_state == ARCHIVED]


def combined(batches: Iterable[StateBatch], start_offset: int) -> list[StateBatch]:
    """``batches`` as one non-overlapping list: below ``start_offset`` cut away, each offset
    the largest (count, state) a batch gives it, neighbours alike joined. A sweep over the
    batches' bounds: O(n log n) whatever their offset ranges."""
    live = []
    for b in batches:
        if start_offset != -1 and b.last_offset < start_offset:
            continue
        if start_offset != -1 and b.first_offset < start_offset:
            b = StateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        live.append(b)
    starts = sorted(live, key=lambda b: b.first_offset)
    bounds = sorted({b.first_offset for b in live} | {b.last_offset + 1 for b in live})
    out: list[StateBatch] = []
    heap: list[tuple[tuple[int, int], int, int, StateBatch]] = []  # (-info, end, n, batch)
    i = 0
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        while i < len(starts) and starts[i].first_offset <= lo:
            b = starts[i]
            heapq.heappush(heap, ((-b.delivery_count, -b.delivery_state), b.last_offset, i, b))
            i += 1
        while heap and heap[0][1] < lo:
            heapq.heappop(heap)  # (a batch ends before this stretch: stale at the top)
        if not heap:
            continue
        top = heap[0][3]
        last = hi - 1
        if out and out[-1].last_offset + 1 == lo and out[-1].info == top.info:
            prev = out.pop()
            out.append(
                StateBatch(prev.first_offset, last, prev.delivery_state, prev.delivery_count)
            )
        else:
            out.append(StateBatch(lo, last, top.delivery_state, top.delivery_count))
    return out


def _batches(value: dict[str, Any]) -> list[StateBatch]:
    return [
        StateBatch(b["firstOffset"], b["lastOffset"], b["deliveryState"], b["deliveryCount"])
        for b in value.get("stateBatches") or ()
    ]


@dataclass
class ShareStates:
    """Every share partition of the ``__share_group_state`` partitions replayed."""

    partitions: dict[tuple[str, str, int], SharePartition] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    records: int = 0

    def of_group(self, group: str) -> list[SharePartition]:
        return sorted(
            (p for (g, _t, _p), p in self.partitions.items() if g == group),
            key=lambda p: (p.topic_id, p.partition),
        )

    def apply(self, record_type: int, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        k = (key["groupId"], str(key["topicId"]), key["partition"])
        if value is None:
            if record_type == SNAPSHOT:
                self.partitions.pop(k, None)
            return
        self.records += 1
        held = self.partitions.get(k)
        if record_type == SNAPSHOT or held is None:
            self.partitions[k] = SharePartition(
                *k,
                value.get("snapshotEpoch", -1),
                value.get("stateEpoch", held.state_epoch if held is not None else -1),
                value.get("leaderEpoch", -1),
                value.get("startOffset", -1),
                value.get("deliveryCompleteCount", -1),
                _batches(value),
            )
            return
        start = value["startOffset"] if value["startOffset"] != -1 else held.start_offset
        held.start_offset = start
        if value["leaderEpoch"] != -1:
            held.leader_epoch = value["leaderEpoch"]
        held.delivery_complete_count = value.get("deliveryCompleteCount", -1)
        held.batches = combined([*held.batches, *_batches(value)], start)


def share_states(dirs: Iterable[tuple[Path, str]], ctx: ReadContext) -> ShareStates:
    """Replay the ``__share_group_state`` partition dirs ``dirs`` (path, how to show it)."""
    states = ShareStates()
    for path, display in dirs:
        for seg_display, position, rec in _records(path, display, ctx):
            try:
                cr = decode_share_group_state(rec.key, rec.value)
            except FormatError as e:
                states.findings.append(
                    Finding(
                        "warning",
                        Code.BAD_COORDINATOR_RECORD,
                        seg_display,
                        position,
                        rec.offset,
                        f"a {SHARE_GROUP_STATE} record that does not decode is left out: {e}",
                    )
                )
                continue
            if not cr.is_unknown and cr.key is not None:
                states.apply(cr.record_type, cr.key, cr.value)
    return states


def _records(path: Path, display: str, ctx: ReadContext) -> Iterator[tuple[str, int, Any]]:
    for seg in load_partition(path).segments:
        seg_display = storage.child(display, seg.log.name)
        with mapped(seg.log) as buf:
            for batch in SegmentScanner(buf, check_crc=False):
                if batch.is_control:
                    continue
                for rec in batch.records(ctx.limits.max_batch_bytes):
                    yield seg_display, batch.position, rec

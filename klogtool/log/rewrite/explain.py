"""``explain``: one partition as the broker sees it, and why it is (not) compacted, deleted or
slow to load — read-only.

Nothing here decides anything on its own: the per-segment answers come from the dry-run
planners of the writing commands (:func:`klogtool.log.rewrite.cleaner.plan_compaction` with
``simulate``, :func:`klogtool.log.rewrite.retention.plan_retention`), index health from the
verifier's own segment walk (:meth:`klogtool.log.segment_checks.SegmentChecks.verify_segment`, index
findings only, like ``rebuild-index --check``), and leftover temporary files from
:func:`klogtool.log.atomic.complete_interrupted` run with a dry-run :class:`FileOps` (it
reports what the broker's loader would do and changes nothing). No lock is taken and no file
is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from klogtool.codes import Code
from klogtool.errors import InputError, KlogtoolError
from klogtool.formats.errors import FormatError
from klogtool.log import layout
from klogtool.log.atomic import FileOps, complete_interrupted
from klogtool.log.context import ReadContext
from klogtool.log.findings import Finding
from klogtool.log.indexcheck import about_index
from klogtool.log.partition import PartitionView, load_partition
from klogtool.log.remote_tier import uploaded_bound
from klogtool.log.rewrite.cleaner import CompactionPlan, SegmentStats, plan_compaction
from klogtool.log.rewrite.retention import RetentionPlan, SegmentDecision, plan_retention
from klogtool.log.segment_checks import SegmentChecks, SegmentSummary
from klogtool.log.topicconfig import TopicConfig
from klogtool.log.txnreplay import TxnReplay

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.log.remote_tier import TierSummary


@dataclass
class SegmentExplain:
    base_offset: int
    upper_bound: int  # next segment's base offset, or the log end offset
    size: int
    largest_timestamp: int
    timestamp_source: str  # timeindex | mtime
    active: bool
    # compaction (plan_compaction); None when it could not be planned
    compaction: SegmentStats | None
    # retention (plan_retention); None when it could not be planned
    retention: SegmentDecision | None
    index_findings: list[Finding] = field(default_factory=list)
    log_findings: list[Finding] = field(default_factory=list)
    snapshot_at_end: bool = False  # a producer snapshot at the upper bound (written on roll)

    @property
    def index_health(self) -> str:
        if any(f.severity == "error" for f in self.index_findings):
            return "bad"
        if self.index_findings:
            return "warning"
        return "ok"

    def as_obj(self, partition: str) -> events.ExplainSegmentExplain:
        """The ``segment_explain`` object (``partition``: its partition dir)."""
        c, r = self.compaction, self.retention
        return {
            "type": "segment_explain",
            "partition": partition,
            "base_offset": self.base_offset,
            "upper_bound": self.upper_bound,
            "size": self.size,
            "largest_timestamp": self.largest_timestamp,
            "timestamp_source": self.timestamp_source,
            "active": self.active,
            "compaction_status": c.status if c else None,
            "compaction_why": c.why if c else None,
            "compaction_group": c.group if c else None,
            "compaction": (dict(c.counts()) if c and c.group is not None else None),
            "bytes_after_compaction": c.bytes_after if c and c.group is not None else None,
            "retention_action": r.action if r else None,
            "retention_rule": r.rule if r else None,
            "retention_reason": r.reason if r else None,
            "index_health": self.index_health,
            "index_findings": [_finding(f) for f in self.index_findings],
            "log_findings": [_finding(f) for f in self.log_findings],
            "snapshot_at_end": self.snapshot_at_end,
        }


@dataclass
class PartitionExplain:
    path: Path
    topic: str | None
    partition: int | None
    now: int
    config: TopicConfig
    log_start_offset: int
    log_end_offset: int
    log_end_clean: bool
    high_watermark: int
    high_watermark_source: str
    segments: list[SegmentExplain]
    compaction: CompactionPlan | None
    retention: RetentionPlan | None
    snapshots: list[int]  # offsets of the producer snapshots
    snapshot_problems: list[Finding]
    leftovers: list[str]  # file names
    on_load: list[str]  # what the broker's loader would do about them (nothing is done here)
    orphans: list[str]
    notes: list[str] = field(default_factory=list)
    remote_tier: TierSummary | None = None  # a tiered partition's

    @property
    def latest_snapshot(self) -> int | None:
        below = [o for o in self.snapshots if o <= self.log_end_offset]
        return max(below) if below else None

    @property
    def producer_state_scan_bytes(self) -> int:
        """Bytes the broker reads to rebuild producer state above the latest snapshot."""
        start = self.latest_snapshot
        if start is None:
            start = -1
        return sum(s.size for s in self.segments if s.upper_bound > start)

    def as_obj(self, config_sources: list[dict[str, object]]) -> events.ExplainPartitionExplain:
        """The ``partition_explain`` object, with the topic configs' sources
        (:func:`klogtool.log.topicconfig.config_sources`) last."""
        c, r, t = self.compaction, self.retention, self.remote_tier
        return {
            "type": "partition_explain",
            "partition": str(self.path),
            "topic": self.topic,
            "now": self.now,
            "cleanup_policy": ",".join(self.config.cleanup_policy),
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "log_end_clean": self.log_end_clean,
            "high_watermark": self.high_watermark,
            "high_watermark_source": self.high_watermark_source,
            "segments": len(self.segments),
            "bytes": sum(s.size for s in self.segments),
            "dirty_ratio": round(c.dirty_ratio, 6) if c else None,
            "first_dirty_offset": c.first_dirty_offset if c else None,
            "first_uncleanable_offset": c.first_uncleanable_offset if c else None,
            "uncleanable_reason": c.uncleanable_reason if c else None,
            "compaction_eligible": c.eligible if c else None,
            "compaction_eligibility": c.eligibility if c else None,
            "compaction_why_not": c.why_not if c else None,
            "retention_ms": self.config.retention_ms,
            "retention_bytes": self.config.retention_bytes,
            "retention_new_log_start_offset": r.new_log_start_offset if r else None,
            "retention_segments_deleted": len(r.deleted) if r else None,
            "retention_bytes_deleted": r.deleted_bytes if r else None,
            "index_problems": sum(1 for s in self.segments if s.index_health != "ok"),
            "snapshots": self.snapshots,
            "latest_snapshot": self.latest_snapshot,
            "producer_state_scan_bytes": self.producer_state_scan_bytes,
            "snapshot_problems": [_finding(f) for f in self.snapshot_problems],
            "leftovers": self.leftovers,
            "on_load": self.on_load,
            "orphan_indexes": self.orphans,
            "notes": self.notes,
            "remote_tier": None if t is None else dict(t.as_obj(str(self.path))),
            "config_sources": config_sources,
        }


def _finding(f: Finding) -> dict[str, Any]:
    return {"severity": f.severity, "code": f.code, "position": f.position, "message": f.message}


def explain_partition(
    path: Path,
    config: TopicConfig,
    *,
    now: int,
    high_watermark: int | str | None = None,
    ctx: ReadContext,
    remote_tier: Callable[[PartitionView], TierSummary | None] | None = None,
) -> PartitionExplain:
    """Explain the partition dir ``path`` at time ``now`` (ms). Never writes. ``ctx.progress``
    hears of the compaction dry run's phases (see :func:`plan_compaction`). ``remote_tier``
    finds a partition's remote tier (:meth:`~klogtool.log.partition.PlanInputs.remote_tier`):
    it is shown, and a tiered topic's retention holds back what is not uploaded (without it,
    nothing counts as uploaded)."""
    if not path.exists():
        raise InputError("no such file or directory", path=str(path), code=Code.NOT_FOUND)
    if not path.is_dir() or not layout.looks_like_partition_dir(path):
        raise InputError(
            "not a partition directory (<topic>-<partition>)",
            path=str(path),
            code=Code.NOT_A_PARTITION_DIR,
        )
    if not layout.scan_partition_dir(path).files():
        raise InputError(
            "no Kafka files in it: nothing to read", path=str(path), code=Code.NO_KAFKA_FILES
        )
    view = load_partition(path)
    notes: list[str] = []
    compaction: CompactionPlan | None = None
    try:
        compaction = plan_compaction(
            view,
            config,
            now=now,
            high_watermark=high_watermark,
            simulate=True,
            ctx=ctx,
        )
    except (KlogtoolError, FormatError) as e:
        notes.append(f"compaction cannot be planned: {e}")
    tier = None if remote_tier is None else remote_tier(view)
    if tier is not None:
        notes += [f"remote tier: {f}" for f in tier.findings()]
    retention: RetentionPlan | None = None
    try:
        retention = plan_retention(
            view,
            config,
            now=now,
            high_watermark=high_watermark,
            uploaded_up_to=uploaded_bound(tier),
        )
    except (KlogtoolError, FormatError, ValueError) as e:
        notes.append(f"retention cannot be planned: {e}")
    hw, hw_source = view.high_watermark(high_watermark)
    if not config.compact:
        notes.append(
            f"cleanup.policy={','.join(config.cleanup_policy)}: the broker never compacts this "
            f"topic (the compaction columns say what `klogtool compact` on this directory would do)"
        )
    if compaction is not None:
        notes += [f"compaction: {n}" for n in compaction.notes]
    if retention is not None:
        notes += [f"retention: {n}" for n in retention.notes]
    if not view.log_end_clean:
        notes.append(
            "the last segment does not end cleanly (torn or corrupt tail): the broker's "
            "recovery truncates it on load"
        )
    segments = _segments(view, compaction, retention, ctx)
    snapshot_offsets = sorted(
        o for p in view.snapshots if (o := layout.offset_from_name(p)) is not None
    )
    snap_set = set(snapshot_offsets)
    for s in segments:
        s.snapshot_at_end = s.upper_bound in snap_set
    snapshot_problems: list[Finding] = []
    checker = SegmentChecks(ctx.quiet())
    for p in view.snapshots:
        snapshot_problems += list(checker.check_snapshot(p, view.log_end_offset))
    part = layout.scan_partition_dir(path)
    leftovers = [p.name for p in part.leftovers]
    on_load = complete_interrupted(FileOps(dry_run=True), path) if leftovers else []
    if leftovers:
        notes.append(
            "leftover temporary files from an interrupted clean, split or delete: the broker "
            "finishes or rolls back the operation when it loads the partition (the plans "
            "above are of the files as they are now)"
        )
    return PartitionExplain(
        path=path,
        topic=view.topic,
        partition=view.partition,
        now=now,
        config=config,
        log_start_offset=view.log_start_offset,
        log_end_offset=view.log_end_offset,
        log_end_clean=view.log_end_clean,
        high_watermark=hw,
        high_watermark_source=hw_source,
        segments=segments,
        compaction=compaction,
        retention=retention,
        snapshots=snapshot_offsets,
        snapshot_problems=snapshot_problems,
        leftovers=leftovers,
        on_load=on_load,
        orphans=[p.name for p in view.orphans],
        notes=notes,
        remote_tier=tier,
    )


def _segments(
    view: PartitionView,
    compaction: CompactionPlan | None,
    retention: RetentionPlan | None,
    ctx: ReadContext,
) -> list[SegmentExplain]:
    by_base_c = {s.base_offset: s for s in compaction.segments} if compaction else {}
    by_base_r = {d.base_offset: d for d in retention.decisions} if retention else {}
    verifier = SegmentChecks(ctx.quiet())
    txns = TxnReplay()  # transactions open across segments, as verify carries them
    prev_last: int | None = None
    out: list[SegmentExplain] = []
    n = len(view.segments)
    for i, seg in enumerate(view.segments):
        active = i == n - 1
        summary = SegmentSummary(seg.base_offset)
        found = list(
            verifier.verify_segment(seg.files, summary, txns, active=active, prev_last=prev_last)
        )
        if summary.last_offset is not None:
            prev_last = summary.last_offset
        out.append(
            SegmentExplain(
                base_offset=seg.base_offset,
                upper_bound=view.upper_bound(i),
                size=seg.size,
                largest_timestamp=seg.largest_timestamp,
                timestamp_source=seg.timestamp_source,
                active=active,
                compaction=by_base_c.get(seg.base_offset),
                retention=by_base_r.get(seg.base_offset),
                index_findings=[f for f in found if about_index(f.code)],
                log_findings=[f for f in found if not about_index(f.code)],
            )
        )
    return out

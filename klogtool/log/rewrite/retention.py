"""Retention, offline: the broker's ``UnifiedLog.deleteOldSegments`` (docs/kafka-rules.md:
Retention).

:func:`plan_retention` is pure (it reads, never writes) and returns a :class:`RetentionPlan`:
one :class:`SegmentDecision` per segment saying which rule deletes or keeps it and why.
:func:`apply_retention` carries a plan out through :class:`~klogtool.log.atomic.FileOps`.

The broker's rules, in its order: the log start offset (a segment goes when the next
segment's base offset is at or below it), then, only if ``cleanup.policy`` contains
``delete``, size (``retention.bytes``: the oldest segments go while the partition stays at or
above the limit without them) and time (``retention.ms``: a segment goes when ``now`` minus
its largest timestamp exceeds it; the largest timestamp is the time index's last entry, else
the ``.log`` mtime). Each rule walks from the oldest segment and stops at the first it keeps;
a segment is only deletable when the high watermark has reached its upper bound (the next
segment's base, or the log end offset); the last segment is kept only when it is empty: when
every segment goes, a new empty active segment is rolled at the log end offset first.
Deleted files are renamed ``.deleted`` first (producer snapshots at deleted base offsets
too), then removed; the log start offset becomes the first remaining base offset (or a
higher requested one), the leader epoch cache is truncated from the start, and
``log-start-offset-checkpoint`` records it when it is above the first base offset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from klogtool.codes import Code
from klogtool.errors import InputError, RefusedError
from klogtool.formats import checkpoint
from klogtool.formats.checkpoint import EpochEntry
from klogtool.formats.errors import FormatError
from klogtool.log import layout
from klogtool.log.atomic import DELETED, FileOps
from klogtool.log.epochs import truncate_epochs_from_start
from klogtool.log.partition import (
    LOG_START,
    PartitionContext,
    PartitionView,
    PlanInputs,
    SegmentInfo,
    load_partition,
    update_offset_checkpoint,
)
from klogtool.log.segment import read_small
from klogtool.log.topicconfig import TopicConfig
from klogtool.log.writing import Notice, SkipPartition

if TYPE_CHECKING:
    from klogtool import events

DELETE = "delete"
KEEP = "keep"

# rules (stable, part of the JSON output)
RULE_LOG_START = "log-start-offset"
RULE_SIZE = "retention.bytes"
RULE_TIME = "retention.ms"
RULE_LOCAL_SIZE = "local.retention.bytes"  # a tiered topic's, for its disk
RULE_LOCAL_TIME = "local.retention.ms"
RULE_HIGH_WATERMARK = "high-watermark"
RULE_NOT_UPLOADED = "not-uploaded"  # a tiered topic's segment not yet in remote storage
RULE_ACTIVE_EMPTY = "active-empty"
RULE_NOT_BREACHED = "not-breached"
RULE_AFTER_KEPT = "after-kept-segment"

# How a segment's largest timestamp was found (partition.TIMEINDEX, RECORDS, MTIME), in words.
TIMESTAMP_SOURCES = {
    "timeindex": "time index",
    "records": "from the batches: an index is missing, and the broker rebuilds it from them",
    "mtime": ".log mtime",
}


@dataclass(frozen=True)
class SegmentDecision:
    base_offset: int
    upper_bound: int  # next base offset, or the log end offset
    size: int
    largest_timestamp: int
    timestamp_source: str
    action: str  # DELETE | KEEP
    rule: str
    reason: str

    def as_obj(self, partition: str) -> events.RetentionSweepSegment:
        """The ``segment`` object (``partition``: its partition dir)."""
        return {
            "type": "segment",
            "partition": partition,
            "base_offset": self.base_offset,
            "upper_bound": self.upper_bound,
            "largest_timestamp": self.largest_timestamp,
            "timestamp_source": self.timestamp_source,
            "size": self.size,
            "action": self.action,
            "rule": self.rule,
            "reason": self.reason,
        }


@dataclass
class RetentionPlan(PartitionContext):
    """What retention does to a partition (``log_start_offset``: the one before)."""

    new_log_start_offset: int
    decisions: list[SegmentDecision]
    roll: bool  # a new empty active segment is created at the log end offset first
    snapshots: list[Path]  # producer snapshots at deleted base offsets, or below the start
    orphans: list[Path]  # index files without a .log, which the broker deletes on load
    missing_indexes: list[Path]  # of an empty last segment, created empty
    epochs_before: list[EpochEntry] | None
    epochs_after: list[EpochEntry] | None
    checkpoint_before: int | None
    checkpoint_after: int | None
    notes: list[str] = field(default_factory=list)
    uploaded_up_to: int | None = None  # a tiered topic's highest offset in remote storage

    @property
    def deleted(self) -> list[SegmentDecision]:
        return [d for d in self.decisions if d.action == DELETE]

    @property
    def deleted_bytes(self) -> int:
        return sum(d.size for d in self.deleted)

    @property
    def decided_by(self) -> list[str]:
        """The topic configs its deletions rest on: the policy, and each limit that deleted a
        segment (the log start offset rule rests on none)."""
        rules = {d.rule for d in self.deleted}
        limits = sorted(rules & {RULE_SIZE, RULE_TIME, RULE_LOCAL_SIZE, RULE_LOCAL_TIME})
        # a local limit of -2 is the whole log's
        for local, whole, value in (
            (RULE_LOCAL_SIZE, RULE_SIZE, self.config.local_retention_bytes),
            (RULE_LOCAL_TIME, RULE_TIME, self.config.local_retention_ms),
        ):
            if local in rules and value == -2 and whole not in limits:
                limits.append(whole)
        return ["cleanup.policy", "remote.storage.enable", *limits] if limits else []

    @property
    def changes(self) -> bool:
        return bool(
            self.deleted
            or self.roll
            or self.orphans
            or self.missing_indexes
            or self.epochs_after != self.epochs_before
            or self.checkpoint_after != self.checkpoint_before
        )

    def as_obj(self) -> events.RetentionSweepPartition:
        """The ``partition`` object: the outcome for this partition."""
        return {
            "type": "partition",
            "partition": str(self.path),
            "topic": self.topic,
            "now": self.now,
            "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark,
            "high_watermark_source": self.high_watermark_source,
            "log_start_offset": self.log_start_offset,
            "new_log_start_offset": self.new_log_start_offset,
            "roll": self.roll,
            "segments_deleted": len(self.deleted),
            "bytes_deleted": self.deleted_bytes,
            "snapshots_deleted": [p.name for p in self.snapshots],
            "orphan_indexes_deleted": [p.name for p in self.orphans],
            "retention_ms": self.config.retention_ms,
            "retention_bytes": self.config.retention_bytes,
            "cleanup_policy": ",".join(self.config.cleanup_policy),
            "tiered": self.config.tiered,
            "local_retention_ms": self.config.local_retention_ms,
            "local_retention_bytes": self.config.local_retention_bytes,
            "uploaded_up_to": self.uploaded_up_to,
            "notes": self.notes,
        }


class RetentionRefused(ValueError):
    """A requested log start offset the broker would refuse (beyond the high watermark)."""


# a retention rule's test of segment i (and the index of the one after it): (delete?, why)
Predicate = Callable[[int, int | None], tuple[bool, str]]


def plan_retention(
    view: PartitionView,
    config: TopicConfig,
    *,
    now: int,
    log_start_offset: int | None = None,
    high_watermark: int | str | None = None,
    uploaded_up_to: tuple[int, str] = (-1, "not known"),
) -> RetentionPlan:
    """What ``deleteOldSegments`` would do to ``view`` at time ``now`` (ms). A tiered topic's
    disk keeps what is not in remote storage: ``uploaded_up_to`` is its highest offset there
    and where that was found (:meth:`~klogtool.log.partition.PlanInputs.uploaded_up_to`)."""
    segs = view.segments
    tiered = config.tiered
    ctx = PartitionContext.load(view, config, now=now, high_watermark=high_watermark)
    leo, hw, lso_before = ctx.log_end_offset, ctx.high_watermark, ctx.log_start_offset
    hw_source = ctx.high_watermark_source
    lso = lso_before
    notes: list[str] = _tiered_notes(view, config, uploaded_up_to, log_start_offset)
    if log_start_offset is not None:
        if log_start_offset > hw:
            raise RetentionRefused(
                f"requested log start offset {log_start_offset} is beyond the high watermark "
                f"{hw} ({hw_source}); the broker refuses that"
            )
        if log_start_offset <= lso:
            notes.append(
                f"requested log start offset {log_start_offset} is not above the current "
                f"{lso}: nothing to do for it"
            )
        lso = max(lso, log_start_offset)
    decided: dict[int, tuple[str, str]] = {}  # index -> (rule, reason) for deleted segments
    remaining = list(range(len(segs)))
    roll = False
    # index -> [(rule, reason)] from every walk that stopped on it
    kept_reason: dict[int, list[tuple[str, str]]] = {}

    def walk(rule: str, predicate: Predicate) -> None:
        nonlocal remaining, roll, lso
        deletable: list[int] = []
        for pos, i in enumerate(remaining):
            is_last = pos == len(remaining) - 1
            seg = segs[i]
            nxt = None if is_last else remaining[pos + 1]
            upper = leo if nxt is None else segs[nxt].base_offset
            held = _not_uploaded(config, upper, uploaded_up_to)
            if held is not None:
                kept_reason.setdefault(i, []).append((RULE_NOT_UPLOADED, f"{rule}: {held}"))
                break
            if hw < upper:
                kept_reason.setdefault(i, []).append(
                    (
                        RULE_HIGH_WATERMARK,
                        f"{rule}: the high watermark {hw} ({hw_source}) is below the "
                        f"segment's upper bound {upper}",
                    )
                )
                break
            if is_last and seg.size == 0:
                # the broker evaluates the rule first, but keeps an empty last segment anyway
                reasons = kept_reason.setdefault(i, [])
                empty = (RULE_ACTIVE_EMPTY, "the last segment is empty: never deleted")
                if empty not in reasons:
                    reasons.append(empty)
                break
            ok, why = predicate(i, nxt)
            if not ok:
                kept_reason.setdefault(i, []).append((RULE_NOT_BREACHED, f"{rule}: {why}"))
                break
            decided[i] = (rule, why)
            deletable.append(i)
        if not deletable:
            return
        if len(deletable) == len(remaining):
            roll = True  # the broker rolls a new empty active segment at the log end offset
        remaining = [i for i in remaining if i not in deletable]
        first = segs[remaining[0]].base_offset if remaining else leo
        lso = max(lso, first)

    # the disk's limits: a tiered topic's local ones (KIP-405), named so
    rule_size, limit_bytes = (RULE_LOCAL_SIZE if tiered else RULE_SIZE), config.disk_retention_bytes
    rule_time, limit_ms = (RULE_LOCAL_TIME if tiered else RULE_TIME), config.disk_retention_ms

    def age_of(i: int) -> tuple[bool, str]:
        seg = segs[i]
        age = now - seg.largest_timestamp
        src = TIMESTAMP_SOURCES.get(seg.timestamp_source, seg.timestamp_source)
        if age > limit_ms:
            return True, (
                f"largest timestamp {seg.largest_timestamp} ({src}) is {age} ms "
                f"({human_ms(age)}) old, more than {rule_time} {limit_ms}"
            )
        return False, (
            f"largest timestamp {seg.largest_timestamp} ({src}) is {age} ms ({human_ms(age)}) "
            f"old, within {rule_time} {limit_ms}"
        )

    walk(RULE_LOG_START, _by_start(segs, lso))
    if config.delete:
        if limit_bytes >= 0:
            size = sum(segs[i].size for i in remaining)
            if size >= limit_bytes:
                walk(rule_size, _by_size([s.size for s in segs], size, limit_bytes, rule_size))
        if limit_ms >= 0:

            def by_time(i: int, _nxt: int | None) -> tuple[bool, str]:
                return age_of(i)

            walk(rule_time, by_time)
        else:
            notes.append(f"{rule_time} < 0: time retention is off")
    else:
        notes.append(
            f"cleanup.policy={','.join(config.cleanup_policy)}: only the log start offset rule "
            f"applies"
        )
    past_time = config.delete and limit_ms >= 0
    decisions = _decisions(
        view, decided, kept_reason, lambda i: past_time and age_of(i)[0], rule_time
    )
    deleted_bases = {segs[i].base_offset for i in decided}
    # the broker's logStartOffset only grows; after deletion it is at least the first base
    new_first = segs[remaining[0]].base_offset if remaining else leo
    new_lso = max(lso, new_first)
    # producer snapshots at the deleted base offsets go with their segments; strays below
    # the log start offset too (the broker's loader deletes them)
    snapshots = [
        p
        for p in view.snapshots
        if (o := layout.offset_from_name(p)) is not None and (o in deleted_bases or o < new_lso)
    ]
    epochs_before = _read_epochs(view)
    epochs_after = epochs_before
    # a tiered topic's epochs and log start offset hold for its remote segments too: only its
    # local log start moves (UnifiedLog.maybeIncrementLocalLogStartOffset)
    if epochs_before is not None and not tiered:
        # as the broker does when the log start offset moves (and when it loads the log)
        epochs_after = truncate_epochs_from_start(epochs_before, new_lso)
    # an empty last segment without its indexes (a roll cut short): the broker creates them
    missing: list[Path] = []
    if remaining and not roll and segs[remaining[-1]].size == 0:
        missing = _missing_indexes(view, segs[remaining[-1]])
    cp_before = view.checkpointed(LOG_START)
    cp_after = cp_before
    if not tiered and (new_lso != lso_before or decided):
        cp_after = _checkpointed_start(view, new_lso, new_first)
    return RetentionPlan(
        **ctx.context_fields(),
        new_log_start_offset=new_lso,
        decisions=decisions,
        roll=roll,
        snapshots=snapshots,
        orphans=list(view.orphans),
        missing_indexes=missing,
        epochs_before=epochs_before,
        epochs_after=epochs_after,
        checkpoint_before=cp_before,
        checkpoint_after=cp_after,
        notes=notes,
        uploaded_up_to=uploaded_up_to[0] if tiered else None,
    )


def _checkpointed_start(view: PartitionView, new_lso: int, new_first: int) -> int | None:
    """The log-start-offset-checkpoint entry after retention: the broker checkpoints only a
    partition whose log start is above its first base offset. (Not a tiered topic's: only its
    local log start moves, UnifiedLog.maybeIncrementLocalLogStartOffset.)"""
    return new_lso if view.tp is not None and new_lso > new_first else None


def _by_start(segs: list[SegmentInfo], lso: int) -> Predicate:
    """The log start offset rule's predicate: a segment goes when the next one starts at or
    below the log start offset."""

    def by_start(i: int, nxt: int | None) -> tuple[bool, str]:
        if nxt is None:
            return False, "the last segment is never deleted by the log start offset"
        nb = segs[nxt].base_offset
        if nb <= lso:
            return True, f"the next segment starts at {nb}, at or below the log start offset {lso}"
        return False, f"the next segment starts at {nb}, above the log start offset {lso}"

    return by_start


def _not_uploaded(config: TopicConfig, upper: int, uploaded_up_to: tuple[int, str]) -> str | None:
    """Why a tiered topic's segment below ``upper`` stays on the disk: not all of it is in
    remote storage yet (the broker's deleteOldSegments); None when it may go."""
    uploaded, source = uploaded_up_to
    if not config.tiered or 0 < upper <= uploaded + 1:
        return None
    return (
        f"offsets up to {upper - 1} are not all in remote storage (uploaded up to {uploaded}: "
        f"{source})"
    )


def _tiered_notes(
    view: PartitionView,
    config: TopicConfig,
    uploaded_up_to: tuple[int, str],
    log_start_offset: int | None,
) -> list[str]:
    """What a plan says of a tiered topic; a requested log start offset is refused (the
    broker's moves the remote tier's start too)."""
    if not config.tiered:
        return []
    if log_start_offset is not None:
        raise RefusedError(
            "a tiered topic's log start offset holds for its remote segments too, and "
            "klogtool deletes nothing from remote storage",
            path=str(view.path),
            code=Code.TIERED_TOPIC,
        )
    return [
        f"tiered (remote.storage.enable=true): the disk keeps local.retention.ms "
        f"{config.disk_retention_ms} and local.retention.bytes {config.disk_retention_bytes}, "
        f"and only segments in remote storage go (uploaded up to {uploaded_up_to[0]}: "
        f"{uploaded_up_to[1]})"
    ]


def _by_size(sizes: list[int], size: int, retention_bytes: int, rule: str) -> Predicate:
    """The size rule's predicate: delete oldest segments while the excess over
    ``rule`` (retention.bytes, or a tiered topic's local.retention.bytes) holds them."""
    excess = size - retention_bytes

    def by_size(i: int, _nxt: int | None) -> tuple[bool, str]:
        nonlocal excess
        s = sizes[i]
        if excess - s >= 0:
            excess -= s
            return True, (
                f"the partition is {size} bytes, {rule} {retention_bytes}: {s} bytes "
                f"fit in the excess"
            )
        return False, (
            f"deleting these {s} bytes would take the partition below {rule} {retention_bytes}"
        )

    return by_size


def _decisions(
    view: PartitionView,
    decided: dict[int, tuple[str, str]],
    kept_reason: dict[int, list[tuple[str, str]]],
    past_retention: Callable[[int], bool],
    rule_time: str,
) -> list[SegmentDecision]:
    """One decision per segment: deleted by the rule that took it, or kept, and why (the
    first kept segment says which walks stopped on it)."""
    decisions: list[SegmentDecision] = []
    first_kept: int | None = None
    for i, seg in enumerate(view.segments):
        if i in decided:
            action = DELETE
            rule, why = decided[i]
        elif first_kept is None:
            first_kept = i
            action = KEEP
            reasons = kept_reason.get(i) or [(RULE_NOT_BREACHED, "no rule applies")]
            rule = reasons[-1][0]
            why = "; ".join(r for _, r in reasons)
        elif i in kept_reason and kept_reason[i][-1][0] == RULE_ACTIVE_EMPTY:
            action = KEEP
            rule, why = kept_reason[i][-1]
        else:
            action = KEEP
            rule = RULE_AFTER_KEPT
            why = "an older segment is kept (retention deletes only a prefix of the log)"
            if past_retention(i):
                why += f"; on its own it is past {rule_time}"
        decisions.append(
            SegmentDecision(
                seg.base_offset,
                view.upper_bound(i),
                seg.size,
                seg.largest_timestamp,
                seg.timestamp_source,
                action,
                rule,
                why,
            )
        )
    return decisions


def _missing_indexes(view: PartitionView, seg: SegmentInfo) -> list[Path]:
    """The index files an empty last segment lacks (the broker creates them)."""
    files = seg.files
    return [
        view.path / layout.segment_name(seg.base_offset, suffix)
        for suffix, have in ((".index", files.index), (".timeindex", files.timeindex))
        if have is None
    ]


def human_ms(ms: int) -> str:
    """``3d 4h``, ``2h 5m``, ``12s``; negative ages (timestamps in the future) keep their sign."""
    sign = "-" if ms < 0 else ""
    s = abs(ms) // 1000
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{sign}{d}d {h}h"
    if h:
        return f"{sign}{h}h {m}m"
    if m:
        return f"{sign}{m}m {s}s"
    return f"{sign}{s}s"


def _read_epochs(view: PartitionView) -> list[EpochEntry] | None:
    path = view.leader_epoch_checkpoint
    if path is None:
        return None
    try:
        return checkpoint.parse_leader_epoch_checkpoint(read_small(path))
    except (FormatError, OSError):
        return None  # left alone: verify reports it


@dataclass
class RetentionResult:
    deleted_files: list[Path] = field(default_factory=list)  # renamed to .deleted
    removed: list[Path] = field(default_factory=list)  # .deleted files removed
    rolled: Path | None = None
    checkpoint_updated: bool = False
    epochs_updated: bool = False


def apply_retention(ops: FileOps, plan: RetentionPlan, *, keep_deleted: bool) -> RetentionResult:
    """Carry out ``plan``: roll, rename to ``.deleted``, update checkpoints, remove."""
    res = RetentionResult()
    part = plan.path
    for p in plan.orphans:
        ops.unlink(p)
    if plan.orphans:
        ops.fsync_dir(part)
    for p in plan.missing_indexes:
        ops.write(p, [])
    if plan.roll:
        # the new empty active segment: log and indexes (trimmed, as after a clean shutdown)
        for suffix in (".log", ".index", ".timeindex"):
            p = part / layout.segment_name(plan.log_end_offset, suffix)
            if not p.exists():
                ops.write(p, [])
        res.rolled = part / layout.segment_name(plan.log_end_offset, ".log")
        ops.fsync_dir(part)
    renamed: list[Path] = []
    for d in plan.deleted:
        # the broker's order: log, offset index, time index, txn index
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            p = part / layout.segment_name(d.base_offset, suffix)
            if p.exists() or p.is_symlink():
                target = p.with_name(p.name + DELETED)
                ops.rename(p, target)
                renamed.append(target)
    for p in plan.snapshots:
        if p.exists():
            target = p.with_name(p.name + DELETED)
            ops.rename(p, target)
            renamed.append(target)
    if renamed:
        ops.fsync_dir(part)
    res.deleted_files = renamed
    if plan.epochs_after is not None and plan.epochs_after != plan.epochs_before:
        ops.replace_file(
            part / "leader-epoch-checkpoint",
            [checkpoint.encode_leader_epoch_checkpoint(plan.epochs_after)],
        )
        res.epochs_updated = True
    if plan.topic is not None and plan.partition is not None:
        res.checkpoint_updated = update_offset_checkpoint(
            ops,
            plan.log_dir,
            LOG_START,
            (plan.topic, plan.partition),
            plan.checkpoint_after,
        )
    if not keep_deleted:
        for p in renamed:
            ops.unlink(p)
            res.removed.append(p)
        if renamed:
            ops.fsync_dir(part)
    return res


def sweep_partition(
    path: Path,
    ops: FileOps,
    *,
    inputs: PlanInputs,
    log_start_offset: int | None,
    dry_run: bool,
    keep_deleted: bool,
) -> Iterator[RetentionPlan | RetentionResult | Notice]:
    """The partition step of ``retention-sweep`` (for
    :func:`klogtool.log.writing.each_partition`): the plan (to show before anything changes),
    then, unless ``dry_run`` or nothing changes, what applying it did."""
    view = load_partition(path)
    try:
        config = inputs.config_of(view.topic, view.path)
        plan = plan_retention(
            view,
            config,
            now=inputs.now,
            log_start_offset=log_start_offset,
            high_watermark=inputs.high_watermark,
            uploaded_up_to=inputs.uploaded_up_to(view) if config.tiered else (-1, "not tiered"),
        )
        inputs.require_known(view.topic, view.path, plan.decided_by)
    except RetentionRefused as e:
        refused = InputError(str(e), path=str(path), code=Code.BEYOND_HIGH_WATERMARK)
        raise SkipPartition(path, refused) from None
    except RefusedError as e:
        raise SkipPartition(path, e) from None
    if not view.log_end_clean:
        yield Notice(
            f"{path}: the last segment does not end cleanly (torn or corrupt tail); "
            f"the log end offset {view.log_end_offset} is that of its valid batches"
        )
    yield plan
    if not dry_run and plan.changes:
        yield apply_retention(ops, plan, keep_deleted=keep_deleted)

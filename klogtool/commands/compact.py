"""``klogtool compact``: the LogCleaner's compaction of a partition, offline."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import click

from klogtool import events
from klogtool.commands._options import (
    local_paths_argument,
    partition_plan_options,
    read_limits_option,
    size_option,
    writing_options,
)
from klogtool.commands._writing import WritingRun
from klogtool.formats import ReadLimits
from klogtool.log.context import ReadContext
from klogtool.log.labels import log_offsets
from klogtool.log.rewrite.cleaner import (
    CompactionPass,
    CompactionPlan,
    compact_partition,
    selected_for_compaction,
)
from klogtool.output import Output, format_ts, groups_text

if TYPE_CHECKING:
    from klogtool.log.partition import PlanInputs

# compact's own topic config options (TopicConfig's field names)
_OVERRIDES = (
    "delete_retention_ms",
    "min_compaction_lag_ms",
    "max_compaction_lag_ms",
    "min_cleanable_dirty_ratio",
    "segment_bytes",
    "segment_index_bytes",
    "index_interval_bytes",
    "producer_id_expiration_ms",
    "dedupe_buffer_size",
)


@click.command("compact")
@local_paths_argument
@click.option(
    "--delete-retention-ms",
    type=int,
    metavar="MS",
    help="delete.retention.ms: how long tombstones and transaction markers live on after a "
    "cleaning gives them a delete horizon [default: the topic's, else 86400000].",
)
@click.option(
    "--min-compaction-lag-ms",
    type=int,
    metavar="MS",
    help="min.compaction.lag.ms: segments with newer records are not cleaned [default: 0].",
)
@click.option(
    "--max-compaction-lag-ms",
    type=int,
    metavar="MS",
    help="max.compaction.lag.ms: makes the broker pick the log whatever its dirty ratio "
    "[default: off].",
)
@click.option(
    "--min-cleanable-dirty-ratio",
    type=click.FloatRange(0, 1),
    metavar="RATIO",
    help="min.cleanable.dirty.ratio: whether the broker would pick the log [default: 0.5].",
)
@size_option(
    "--segment-bytes",
    help="segment.bytes: the size limit when grouping segments into one cleaned segment "
    "[default: 1G].",
)
@size_option(
    "--segment-index-bytes",
    help="segment.index.bytes: the index size limit when grouping segments [default: 10M].",
)
@click.option(
    "--index-interval-bytes",
    type=int,
    metavar="N",
    help="index.interval.bytes of the cleaned segments' indexes [default: 4096].",
)
@click.option(
    "--producer-id-expiration-ms",
    type=int,
    metavar="MS",
    help="producer.id.expiration.ms: the last batch of a producer idle for less (or with an "
    "open transaction) survives as an empty batch [default: 86400000].",
)
@size_option(
    "--dedupe-buffer-size",
    help="log.cleaner.dedupe.buffer.size: the offset map's memory in the broker (24 bytes a "
    "key, filled to 90%). When the dirty range has more keys, a pass cleans up to where the "
    "map filled and compact runs further passes, like the broker's next cleanings. klogtool "
    "holds a key in about 150 bytes of RAM [default: 128M].",
)
@click.option(
    "--only-eligible",
    is_flag=True,
    help="Only compact logs the broker's cleaner would pick now (dirty ratio above "
    "min.cleanable.dirty.ratio, or max.compaction.lag.ms passed).",
)
@partition_plan_options(*_OVERRIDES, rewrites=True)
@writing_options
@read_limits_option
def command(
    paths: tuple[str, ...],
    inputs: PlanInputs,
    only_eligible: bool,
    run: WritingRun,
    limits: ReadLimits,
) -> None:
    """Compact partitions the way the broker's log cleaner does.

    PATH is a partition directory (compacted whatever its topic's cleanup.policy) or a log
    directory (its partitions whose cleanup.policy contains compact: the internal topics,
    topics configured so in the KRaft metadata log (the __cluster_metadata-0 of the log dir,
    of another log dir of the same broker, or --metadata-dir) and with --config, which beats
    it). A partition is not compacted by a config only assumed (no metadata log holds the
    topic, no option gives it): its cleanup.policy, min.compaction.lag.ms and
    delete.retention.ms; it is refused, unless --assume-defaults. A tiered topic
    (remote.storage.enable=true) is refused: Kafka never compacts one.

    The cleaner's rules: the active segment is never cleaned; the dirty range runs from the
    cleaner-offset-checkpoint (else the log start offset) to the first uncleanable offset:
    the last stable offset (open transactions, the high watermark), the active segment, and
    segments younger than min.compaction.lag.ms. A key -> last offset map over the dirty
    range decides which records survive in every segment below it: the latest record per
    key; keyless records go; aborted transactional data goes; tombstones and transaction
    markers get a delete horizon (now + delete.retention.ms, the KIP-534 batch bit) and go
    on a later run past it. Offsets, producer ids, sequences and codecs are kept; the last
    batch of each active producer stays as an empty batch. Segments are grouped like the
    cleaner does (segment.bytes, segment.index.bytes, the int32 offset range) and swapped in
    through the .cleaned/.swap protocol; cleaner-offset-checkpoint is updated.

    Every segment is reported with its status, the records kept and removed and why
    (superseded, tombstone expired, aborted, keyless), and its bytes before and after;
    --dry-run reports only that: the answer to "why is this not compacting".

    Exit status: 0 done, 1 some partitions were skipped, 3 an input cannot be read, 4 a
    broker holds the log directory, or the one partition named would be rewritten by an
    assumed config or is a tiered topic.
    """
    out, dry_run = run.out, run.dry_run

    totals: events.CompactSummary = {
        "type": "summary",
        "dry_run": dry_run,
        "partitions": 0,
        "partitions_compacted": 0,
        "segments_replaced": 0,
        "bytes_before": 0,
        "bytes_after": 0,
    }

    def show(done: CompactionPass) -> None:
        plan, first = done.plan, done.n_pass == 1
        totals["partitions"] += first
        if done.result is not None:
            totals["partitions_compacted"] += first
            totals["segments_replaced"] += done.result.segments_replaced
            totals["bytes_before"] += done.result.bytes_before
            totals["bytes_after"] += done.result.bytes_after
        elif dry_run:  # what a real run would do
            totals["partitions_compacted"] += first and any(
                s.group is not None for s in plan.segments
            )
            for s in plan.segments:
                if s.group is not None:
                    totals["bytes_before"] += s.size
                    totals["bytes_after"] += s.bytes_after or 0
                    totals["segments_replaced"] += 1
        _show(out, plan, dry_run=dry_run, ran=done.ran, n_pass=done.n_pass)

    with out.phases() as bar:
        step = partial(
            compact_partition,
            inputs=inputs,
            dry_run=dry_run,
            only_eligible=only_eligible,
            ctx=ReadContext.of(limits, bar),
        )
        run.partitions(paths, step, show, totals, include=selected_for_compaction(inputs))


_REMOVED = ("superseded", "tombstones_expired", "aborted", "keyless", "markers_removed")


def _show(out: Output, plan: CompactionPlan, *, dry_run: bool, ran: bool, n_pass: int) -> None:
    name = plan.path.name if n_pass == 1 else f"{plan.path.name} (pass {n_pass})"
    measured = plan.simulated or ran
    if out.fmt != "text":
        for s in plan.segments:
            out.emit(s.as_obj(str(plan.path), measured=measured))
        out.emit(plan.as_obj(n_pass=n_pass, ran=ran))
        return
    lines = [
        f"{name}: dirty range {plan.first_dirty_offset} ({plan.first_dirty_source}) to "
        f"{plan.first_uncleanable_offset} ({plan.uncleanable_reason}); log "
        f"{log_offsets(plan.log_start_offset, plan.log_end_offset)}, now {format_ts(plan.now)}",
    ]
    if plan.why_not:  # one line says why (the eligibility and the title would repeat it)
        lines.append(f"{name}: nothing to clean: {plan.why_not}")
    else:
        lines.append(f"{name}: {plan.eligibility}")
        lines.append(
            f"{name}: {plan.map_size:,} keys mapped; new cleaner checkpoint {plan.end_offset}; "
            f"each group of segments becomes one cleaned segment: {groups_text(plan.groups)}"
        )
    lines += [f"{name}: {n}" for n in plan.notes]
    for line in lines:
        out.line(line)
    rows = []
    for s in plan.segments:
        cleaned = s.group is not None and measured
        removed = ", ".join(
            f"{k.replace('_', ' ')} {v}" for k in _REMOVED if cleaned and (v := getattr(s, k))
        )
        note = s.why
        if cleaned and s.tombstones_kept and s.delete_horizon_ms is not None:
            note += f"; {s.tombstones_kept} tombstones kept until {format_ts(s.delete_horizon_ms)}"
        if cleaned and s.empty_batches_kept:
            note += f"; {s.empty_batches_kept} empty batches kept (producer state)"
        rows.append(
            [
                str(s.base_offset),
                s.status,
                f"{s.records_in:,}" if cleaned else "-",
                f"{s.kept:,}" if cleaned else "-",
                removed or ("-" if cleaned else ""),
                f"{s.size:,}",
                f"{s.bytes_after:,}" if cleaned and s.bytes_after is not None else "-",
                note,
            ]
        )
    out.table(
        f"{name}: "
        + (
            "segments"
            if plan.nothing_to_clean
            else ("would compact" if dry_run else ("compacted" if ran else "not compacted"))
        ),
        ["segment", "status", "records", "kept", "removed", "bytes", "after", "why"],
        rows,
        left=frozenset({"status", "removed", "why"}),
    )


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "What the log cleaner would do at a given time, then do it:",
        [
            "klogtool compact --dry-run --now 2024-05-01T12:00:00Z /var/lib/kafka/data/orders-3",
            "klogtool compact /var/lib/kafka/data --config orders=delete.retention.ms=3600000",
        ],
    ),
]

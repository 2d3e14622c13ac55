"""``klogtool retention-sweep``: the broker's time / size / log-start-offset retention, offline."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import click

from klogtool import events
from klogtool.commands._options import local_paths_argument, partition_plan_options, writing_options
from klogtool.commands._writing import WritingRun
from klogtool.log.rewrite.retention import RetentionPlan, RetentionResult, sweep_partition
from klogtool.output import Output, format_ts, plural

if TYPE_CHECKING:
    from klogtool.log.partition import PlanInputs


@click.command("retention-sweep")
@local_paths_argument
@click.option(
    "--retention-ms",
    type=int,
    metavar="MS",
    help="retention.ms for every topic; -1 = off [default: 604800000, 7 days].",
)
@click.option(
    "--retention-bytes",
    type=int,
    metavar="BYTES",
    help="retention.bytes, per partition; -1 = off [default: -1].",
)
@click.option(
    "--log-start-offset",
    type=click.IntRange(min=0),
    metavar="OFFSET",
    help="Raise the log start offset of every partition given, like DeleteRecords "
    "[default: log-start-offset-checkpoint].",
)
@partition_plan_options("retention_ms", "retention_bytes", rewrites=True)
@click.option(
    "--keep-deleted",
    is_flag=True,
    help="Leave the renamed *.deleted files in place (the broker, or the next klogtool run, "
    "removes them when it loads the partition).",
)
@writing_options
def command(
    paths: tuple[str, ...],
    inputs: PlanInputs,
    log_start_offset: int | None,
    keep_deleted: bool,
    run: WritingRun,
) -> None:
    """Delete old segments the way the broker's retention does.

    PATH is a partition directory or a log directory. The broker's rules, in its order: the
    log start offset (--log-start-offset, else log-start-offset-checkpoint), then, for topics
    whose cleanup.policy contains delete, size (retention.bytes) and time (retention.ms,
    judged by each segment's largest timestamp: the time index's last entry, else the .log
    modification time). Each rule deletes a prefix of the log, never beyond the high
    watermark (replication-offset-checkpoint); the active segment goes too, after a new
    empty one is rolled at the log end offset, unless it is empty.

    Deleted files are renamed *.deleted first, like the broker, then removed (kept with
    --keep-deleted); producer snapshots at deleted base offsets go with them;
    log-start-offset-checkpoint and leader-epoch-checkpoint are updated. Every segment is
    listed with its largest timestamp, size and the rule that keeps or deletes it
    (--dry-run: only that).

    Topic configs: Kafka's defaults (retention.ms 7 days, retention.bytes off), then
    --config files, then the KRaft metadata log (the __cluster_metadata-0 of the log dir, of
    another log dir of the same broker, or --metadata-dir: a compacted topic such as _schemas
    keeps its segments), then --retention-ms/--retention-bytes, then --config
    TOPIC=KEY=VALUE. A partition the time or size rule would delete from by a
    cleanup.policy, remote.storage.enable or retention only assumed (no metadata log holds
    the topic, no option gives it) is refused, unless --assume-defaults.

    A tiered topic (remote.storage.enable=true, tiered storage) keeps on the disk what the
    broker keeps: its local limits (local.retention.ms and local.retention.bytes; -2 takes
    retention.ms and retention.bytes), and a segment goes only when all its offsets are in
    remote storage, as the broker's remote-log metadata says (the __remote_log_metadata
    partitions of this broker's log dirs; without them nothing counts as uploaded and
    nothing goes). Only the local log start moves: log-start-offset-checkpoint and the
    leader epochs hold for the remote segments too and are kept; --log-start-offset is
    refused.

    Exit status: 0 done, 1 some partitions were skipped, 3 an input cannot be read, 4 a
    broker holds the log directory, or the one partition named would be rewritten by an
    assumed config or is a tiered topic given --log-start-offset.
    """
    out, dry_run = run.out, run.dry_run
    totals: events.RetentionSweepSummary = {
        "type": "summary",
        "dry_run": dry_run,
        "partitions": 0,
        "segments_deleted": 0,
        "bytes_deleted": 0,
        "files_changed": 0,
    }

    def show(done: RetentionPlan | RetentionResult) -> None:
        if isinstance(done, RetentionResult):
            totals["files_changed"] += len(done.deleted_files)
            return
        _show(out, done, dry_run)
        totals["partitions"] += 1
        totals["segments_deleted"] += len(done.deleted)
        totals["bytes_deleted"] += done.deleted_bytes

    step = partial(
        sweep_partition,
        inputs=inputs,
        log_start_offset=log_start_offset,
        dry_run=dry_run,
        keep_deleted=keep_deleted,
    )
    run.partitions(paths, step, show, totals)


def _show(out: Output, plan: RetentionPlan, dry_run: bool) -> None:
    name = plan.path.name
    if out.fmt != "text":
        for d in plan.decisions:
            out.emit(d.as_obj(str(plan.path)))
        out.emit(plan.as_obj())
        return
    verb = "would delete" if dry_run else "deleted"
    rows = [
        [
            f"{d.base_offset}",
            format_ts(d.largest_timestamp)
            + {"mtime": " mtime", "records": " from batches"}.get(d.timestamp_source, ""),
            f"{d.size:,}",
            d.action,
            d.rule,
            d.reason,
        ]
        for d in plan.decisions
    ]
    title = (
        f"{name}: now {format_ts(plan.now)}, high watermark {plan.high_watermark} "
        f"({plan.high_watermark_source}), log end {plan.log_end_offset}, log start "
        f"{plan.log_start_offset} -> {plan.new_log_start_offset}"
    )
    out.table(
        title,
        ["segment", "largest timestamp", "size", "action", "rule", "why"],
        rows,
        left=frozenset({"action", "rule", "why", "largest timestamp"}),
    )
    if plan.roll:
        out.line(f"  {name}: every segment goes: a new empty segment at {plan.log_end_offset}")
    for n in plan.notes:
        out.line(f"  {name}: {n}")
    if plan.deleted:
        out.line(
            f"  {name}: {verb} {plural(len(plan.deleted), 'segment')}, {plan.deleted_bytes:,} bytes"
            + (f", snapshots {', '.join(p.name for p in plan.snapshots)}" if plan.snapshots else "")
        )


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "What one day of retention would delete; then a new log start offset:",
        [
            "klogtool retention-sweep --dry-run --retention-ms 86400000 /var/lib/kafka/data",
            "klogtool retention-sweep --log-start-offset 1200000 /var/lib/kafka/data/orders-3",
        ],
    ),
]

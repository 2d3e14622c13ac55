"""``klogtool retention-sweep``: the broker's time / size / log-start-offset retention, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from klogtool.codes import Code
from klogtool.commands._options import (
    dry_run_option,
    force_option,
    format_option,
    high_watermark_option,
    now_option,
    paths_argument,
    topic_config_option,
)
from klogtool.errors import EXIT_FINDINGS, EXIT_OK, InputError
from klogtool.log.partition import load_partition, partition_dirs
from klogtool.log.retention import RetentionPlan, RetentionRefused, apply_retention, plan_retention
from klogtool.log.topicconfig import parse_config_args
from klogtool.log.writing import format_ts, is_special_partition_dir, now_ms, writing_session
from klogtool.output import Output, label


@click.command("retention-sweep")
@paths_argument
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
@now_option
@topic_config_option
@high_watermark_option
@click.option(
    "--keep-deleted",
    is_flag=True,
    help="Leave the renamed *.deleted files in place (the broker, or the next klogtool run, "
    "removes them when it loads the partition).",
)
@dry_run_option
@force_option
@format_option()
@click.pass_obj
def command(
    settings: Any,
    paths: tuple[str, ...],
    retention_ms: int | None,
    retention_bytes: int | None,
    log_start_offset: int | None,
    now: int | None,
    configs: tuple[str, ...],
    high_watermark: int | str | None,
    keep_deleted: bool,
    dry_run: bool,
    force: bool,
    fmt: str,
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
    --config files, then --retention-ms/--retention-bytes, then --config TOPIC=KEY=VALUE.

    Exit status: 0 done, 1 some partitions were skipped, 3 an input cannot be read, 4 a
    broker holds the log directory.
    """
    out = Output(fmt, progress=False, color=settings.color, verbosity=settings.verbosity)
    source = parse_config_args(configs)
    overrides = {"retention_ms": retention_ms, "retention_bytes": retention_bytes}
    now = now_ms(now)
    parts: list[Path] = []
    skipped = 0
    for arg in paths:
        found, warnings = partition_dirs(Path(arg))
        for w in warnings:
            out.warn(w)
            skipped += 1
        for p in found:
            if is_special_partition_dir(p):
                out.info(f"{p}: skipped (a partition directory being deleted or moved)")
                continue
            parts.append(p)
    totals = {"partitions": 0, "segments_deleted": 0, "bytes_deleted": 0, "files_changed": 0}
    with writing_session(parts, force=force, dry_run=dry_run) as session:
        for p, done in session.completed.items():
            verb = "would complete" if dry_run else "completed"
            for what in done:
                out.warn(f"{p}: {verb} an interrupted operation first: {what}")
        for p in parts:
            view = load_partition(p)
            cfg = source.for_topic(view.topic, overrides)
            try:
                plan = plan_retention(
                    view,
                    cfg,
                    now=now,
                    log_start_offset=log_start_offset,
                    high_watermark=high_watermark,
                )
            except RetentionRefused as e:
                if len(parts) == 1:
                    raise InputError(str(e), path=str(p), code=Code.BEYOND_HIGH_WATERMARK) from None
                out.warn(f"{p}: skipped: {e}")
                skipped += 1
                continue
            if not view.log_end_clean:
                out.warn(
                    f"{p}: the last segment does not end cleanly (torn or corrupt tail); "
                    f"the log end offset {view.log_end_offset} is that of its valid batches"
                )
            _show(out, plan, dry_run)
            totals["partitions"] += 1
            totals["segments_deleted"] += len(plan.deleted)
            totals["bytes_deleted"] += plan.deleted_bytes
            if not dry_run and plan.changes:
                res = apply_retention(session.ops, plan, keep_deleted=keep_deleted)
                totals["files_changed"] += len(res.deleted_files)
    if fmt == "text":
        title = "klogtool retention-sweep: " + ("dry run, nothing changed" if dry_run else "done")
        out.table(title, ["", "count"], [[label(k), f"{v:,}"] for k, v in totals.items()])
    else:
        out.emit({"type": "summary", "dry_run": dry_run, **totals})
    out.close()
    click.get_current_context().exit(EXIT_FINDINGS if skipped else EXIT_OK)


def _show(out: Output, plan: RetentionPlan, dry_run: bool) -> None:
    name = plan.path.name
    if out.fmt != "text":
        for d in plan.decisions:
            out.emit(
                {
                    "type": "segment",
                    "partition": str(plan.path),
                    "base_offset": d.base_offset,
                    "upper_bound": d.upper_bound,
                    "largest_timestamp": d.largest_timestamp,
                    "timestamp_source": d.timestamp_source,
                    "size": d.size,
                    "action": d.action,
                    "rule": d.rule,
                    "reason": d.reason,
                }
            )
        out.emit(
            {
                "type": "partition",
                "partition": str(plan.path),
                "topic": plan.topic,
                "now": plan.now,
                "log_end_offset": plan.log_end_offset,
                "high_watermark": plan.high_watermark,
                "high_watermark_source": plan.high_watermark_source,
                "log_start_offset": plan.log_start_offset,
                "new_log_start_offset": plan.new_log_start_offset,
                "roll": plan.roll,
                "segments_deleted": len(plan.deleted),
                "bytes_deleted": plan.deleted_bytes,
                "snapshots_deleted": [p.name for p in plan.snapshots],
                "orphan_indexes_deleted": [p.name for p in plan.orphans],
                "retention_ms": plan.config.retention_ms,
                "retention_bytes": plan.config.retention_bytes,
                "cleanup_policy": ",".join(plan.config.cleanup_policy),
                "notes": plan.notes,
            }
        )
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
            f"  {name}: {verb} {len(plan.deleted)} segments, {plan.deleted_bytes:,} bytes"
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

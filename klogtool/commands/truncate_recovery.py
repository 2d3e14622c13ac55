"""``klogtool truncate-recovery``: the broker's log recovery offline, with a quarantine."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from klogtool.commands._options import (
    index_interval_option,
    jobs_option,
    local_paths_argument,
    read_limits_option,
    writing_options,
)
from klogtool.commands._writing import WritingRun
from klogtool.errors import EXIT_FINDINGS, EXIT_OK
from klogtool.formats import ReadLimits
from klogtool.log import targets
from klogtool.log.atomic import FileOps
from klogtool.log.context import ReadContext
from klogtool.log.files import total_log_bytes
from klogtool.log.repair import recovery
from klogtool.log.repair.recovery_plan import RecoveryOptions
from klogtool.output import Output

if TYPE_CHECKING:
    from klogtool import events


@click.command("truncate-recovery")
@local_paths_argument
@click.option(
    "--from-recovery-point",
    is_flag=True,
    help="Recover only from the segment holding the partition's entry in the log dir's "
    "recovery-point-offset-checkpoint (as the broker does); default: every segment.",
)
@click.option(
    "--quarantine",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Keep what is cut in DIR/<partition>/<timestamp>/ "
    "[default: <partition>/.klogtool-quarantine/<timestamp>/].",
)
@click.option(
    "--restore",
    is_flag=True,
    help="Put back what an earlier run quarantined, then remove that quarantine. Each PATH "
    "is a quarantine directory (holding manifest.json), a partition directory (its newest "
    "unrestored quarantine) or a log directory (that of each of its partitions).",
)
@index_interval_option
@jobs_option
@writing_options
@read_limits_option
def command(
    paths: tuple[str, ...],
    from_recovery_point: bool,
    quarantine: Path | None,
    restore: bool,
    index_interval_bytes: int,
    jobs: int,
    run: WritingRun,
    limits: ReadLimits,
) -> None:
    """Truncate damaged logs where the broker's recovery would, keeping every byte cut.

    For each partition (PATH: a segment file, a partition directory or a log directory):
    complete or roll back leftover .cleaned/.swap files as the broker does, then walk each
    segment from the recovery point on (--from-recovery-point) or from the start; at the
    first invalid batch (bad size, CRC or structure, zero fill, torn tail; also a magic
    outside 0..2 and offsets that do not increase, which the broker's recovery lets
    through), truncate the segment there and remove every later segment. The truncated
    segment's indexes are rebuilt, as are those of any recovered segment whose index is
    missing or would mis-seek; producer snapshots beyond the new log end offset, and leader
    epochs starting at or beyond it, are dropped; log-dir checkpoints pointing past it are
    lowered to it. The clean-shutdown marker is removed when bytes are cut, so that the
    broker runs its own recovery.

    Nothing is deleted: the cut tail, removed segments and snapshots, and the previous
    contents of rewritten files go to a quarantine directory with a manifest.json (sources,
    byte ranges, offsets, record counts, SHA-256, and the index files it created);
    --restore puts them back byte for byte, deletes the files the recovery created (unless
    they changed since), and removes the quarantine. Where only missing indexes are created,
    the quarantine holds just the manifest naming them. A manifest naming anything klogtool
    does not write (a path, a link, another partition) is refused, not followed. A crash at
    any point leaves a directory that a re-run (which resumes the same quarantine) or the
    broker completes.

    Exit status: 0 done, 1 some partitions skipped (e.g. overlapping segments), 3 an input
    cannot be read, 4 a broker holds the log directory's lock (--force overrides).
    """
    out, dry_run = run.out, run.dry_run
    ops = FileOps(dry_run=dry_run)
    text = out.fmt == "text"
    emit = _text_emitter(out) if text else out.emit
    if restore:
        reports = recovery.run_restore(list(paths), quarantine, ops, emit, force=run.force)
        if text:
            out.table(
                "klogtool truncate-recovery --restore" + (" (dry run)" if dry_run else ""),
                ["quarantine", "status", "files", "log bytes"],
                [
                    [r.path, r.status, str(r.files_restored), f"{r.bytes_restored:,}"]
                    for r in reports
                ],
            )
        else:
            out.emit(recovery.restore_summary_obj(reports, ops.count, dry_run))
        out.close()
        click.get_current_context().exit(EXIT_OK)
    resolved = targets.resolve(list(paths), skip_not_live=True)
    partitions: list[Mapping[str, Any]] = []  # for the text summary, read by field name

    def collect(obj: events.Event) -> None:
        if obj["type"] == "partition":
            partitions.append(obj)
        emit(obj)

    with out.progress(total_log_bytes(list(paths)), "recovering") as bar:
        opts = RecoveryOptions(
            ctx=ReadContext.of(limits, bar),
            index_interval_bytes=index_interval_bytes,
            from_recovery_point=from_recovery_point,
            quarantine=quarantine,
            jobs=jobs,
            dry_run=dry_run,
        )
        stats = recovery.run_recovery(resolved, opts, ops, collect, force=run.force)
    if text:
        _text_summary(out, partitions, stats, dry_run)
    else:
        out.emit(stats.as_obj(dry_run))
    out.close()
    click.get_current_context().exit(EXIT_FINDINGS if stats.skipped else EXIT_OK)


def _text_emitter(out: Output) -> events.Emit:
    def emit(obj: events.Event) -> None:
        if obj["type"] == "partition":
            return  # in the table at the end
        if obj["type"] == "action" or obj["type"] == "plan_step":
            prefix = "would " if obj["type"] == "plan_step" else ""
            # the message says what is done in words ("create the quarantine directory ..."):
            # the op is for machines
            out.line(f"{obj['partition_dir']}: {prefix}{obj['message']}")
        elif obj["type"] == "interrupted_operation":
            out.line(f"{obj['path']}: interrupted operation {obj['message']}")
        elif obj["type"] == "finding":
            where = obj["path"] + (f":{obj['position']}" if obj["position"] is not None else "")
            out.line(f"{obj['severity']}: {obj['code']}: {where}: {obj['message']}")
        elif obj["type"] == "note":
            out.line(f"{obj['path']}: note: {obj['message']}")
        elif obj["type"] == "restore":
            if obj["status"] == "already-restored":
                out.line(f"{obj['path']}: already restored")
        else:
            out.emit(obj)

    return emit


def _text_summary(
    out: Output,
    partitions: list[Mapping[str, Any]],
    stats: recovery.RecoveryStats,
    dry_run: bool,
) -> None:
    for p in partitions:
        status = p["status"]
        head = f"{p['path']}: {'would be ' if dry_run and status == 'recovered' else ''}{status}"
        if p["message"]:
            head += f" ({p['message']})"
        before, after = p["log_end_offset_before"], p["log_end_offset"]
        if after is not None:
            head += (
                f"; log end offset {before} -> {after}"
                if before != after
                else (f"; log end offset {after}")
            )
        out.line(head)
        if status in ("recovered", "clean"):
            read = " (in the segments read)" if p["segments_trusted"] else ""
            line = f"  kept {p['bytes_kept']:,} bytes, {p['records_kept']:,} records{read}"
            if p["quarantine"]:
                line += (
                    f"; quarantined {p['bytes_quarantined']:,} log bytes, "
                    f"{p['records_quarantined']:,} intact records, in {p['quarantine']}"
                )
            out.line(line)
    title = "klogtool truncate-recovery" + (" (dry run: nothing changed)" if dry_run else "")
    rows = [
        ("partitions", stats.partitions),
        ("recovered" if not dry_run else "to recover", stats.recovered),
        ("clean", stats.clean),
        ("skipped", stats.skipped),
        ("bytes kept", stats.bytes_kept),
        ("records kept", stats.records_kept),
        ("bytes quarantined", stats.bytes_quarantined),
        ("records quarantined", stats.records_quarantined),
        ("file operations", stats.operations),
    ]
    out.table(title, ["", "count"], [[k, f"{v:,}"] for k, v in rows])


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "See the plan, apply it, and put everything back:",
        [
            "klogtool truncate-recovery --dry-run /var/lib/kafka/data",
            "klogtool truncate-recovery /var/lib/kafka/data",
            "klogtool truncate-recovery --restore /var/lib/kafka/data/orders-3",
        ],
    ),
]

"""``klogtool restore-tier``: a partition directory from a tiered partition's remote segments."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from klogtool.codes import Code
from klogtool.commands._options import (
    rsa_keys,
    rsa_private_key_option,
    warn_if_a_broker_runs,
    writing_options,
)
from klogtool.errors import EXIT_OK, InputError
from klogtool.log import remote_tier, storage
from klogtool.log.atomic import FileOps, log_dir_lock
from klogtool.log.remote_layouts import open_layout
from klogtool.log.repair.restore_tier import apply_restore, plan_restore

if TYPE_CHECKING:
    from klogtool.commands._writing import WritingRun
    from klogtool.log.repair.restore_tier import RestorePlan


@click.command("restore-tier")
@click.argument("source")
@click.argument("log_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--metadata-log-dir",
    "metadata_log_dirs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    metavar="DIR",
    help="A log dir holding __remote_log_metadata partitions: the remote log they describe "
    "is restored (no unfinished or unreferenced copy) [default: LOG_DIR's and those of the "
    "same broker's other log dirs; without any, every segment of SOURCE].",
)
@click.option("--from-offset", type=click.IntRange(min=0), help="Restore from this offset.")
@click.option("--to-offset", type=click.IntRange(min=0), help="Restore up to this offset.")
@click.option("--topic", help="Write the partition under this topic name [default: SOURCE's].")
@click.option(
    "--topic-id",
    metavar="UUID",
    help="The topic id for partition.metadata: a topic created again has a new one, and the "
    "broker takes a partition of another id for a stray [default: SOURCE's].",
)
@rsa_private_key_option
@writing_options
def command(
    source: str,
    log_dir: Path,
    metadata_log_dirs: tuple[Path, ...],
    from_offset: int | None,
    to_offset: int | None,
    topic: str | None,
    topic_id: str | None,
    rsa_private_keys: tuple[str, ...],
    run: WritingRun,
) -> None:
    """Write a partition directory the broker can load from a tiered partition's remote
    segments.

    The way back for a topic deleted or created again while remote storage still holds its
    data. SOURCE is the partition's directory in the remote storage of Kafka's LocalTieredStorage
    plugin (<topic>-<partition>-<topic id>, holding <offset>-<segment id>.log and its index,
    leader-epoch and producer-snapshot files), a local directory or an object-storage URI
    (s3://bucket/prefix/...; docs/storage.md). LOG_DIR is the log directory to write
    <topic>-<partition> into; it must not exist.

    The segments are the remote log the broker's remote-log metadata describes (the
    __remote_log_metadata partitions of LOG_DIR and of the same broker's other log dirs, or
    --metadata-log-dir): uploads never finished and copies a later upload replaced are left
    out. Without metadata every segment of SOURCE is taken, and two that overlap are
    refused. --from-offset and --to-offset take the whole segments they touch. Each segment
    is read whole and checked (intact batches, its offsets) before anything is written.

    Written: the segments and their indexes, the producer snapshot at the log end,
    leader-epoch-checkpoint (the last segment's, from the first offset) and
    partition.metadata, into a <topic>-<partition>.<hex>-delete directory first (the broker
    deletes such a directory, so an interrupted run is never loaded as data), every file
    fsynced, then renamed into place. A rerun removes its own unfinished directory and
    starts again. The files take the log dir's owner, group and mode.

    Exit status: 0 restored, 3 SOURCE cannot be read or a segment is missing or damaged, 4 a
    broker holds LOG_DIR, the partition exists, or remote segments overlap without metadata.
    """
    out, dry_run = run.out, run.dry_run
    warn_if_a_broker_runs(out, [str(log_dir)])
    src = storage.path_of(source)
    if not src.exists():
        raise InputError("no such file or directory", path=source, code=Code.NOT_FOUND)
    keys, default_key = rsa_keys(rsa_private_keys)
    with tempfile.TemporaryDirectory(prefix="klogtool-restore-") as spool:
        remote = open_layout(src, keys=keys, default_key=default_key, spool=Path(spool))
        dirs = remote_tier.metadata_dirs(metadata_log_dirs) or remote_tier.metadata_dirs_for(
            log_dir
        )
        tier = remote_tier.replay(dirs).find(remote.topic_id, remote.partition) if dirs else None
        if dirs and tier is None:
            out.warn(
                f"the remote-log metadata read ({', '.join(d.name for d in dirs)}) does not "
                f"describe {remote.topic}-{remote.partition} (topic id {remote.topic_id}): "
                "every segment of SOURCE is taken"
            )
        with log_dir_lock(log_dir, force=run.force, dry_run=dry_run):
            plan = plan_restore(
                remote,
                log_dir,
                tier=tier,
                from_offset=from_offset,
                to_offset=to_offset,
                topic=topic,
                topic_id=topic_id,
            )
            removed = [] if dry_run else apply_restore(FileOps(), plan)
    for d in removed:
        out.warn(f"removed the unfinished restore {d}")
    _show(run, plan)
    out.close()
    click.get_current_context().exit(EXIT_OK)


def _show(run: WritingRun, plan: RestorePlan) -> None:
    out = run.out
    if out.fmt != "text":
        for obj in plan.segment_objs():
            out.emit(obj)
        out.emit(plan.as_obj(run.dry_run))
        return
    out.table(
        f"klogtool restore-tier: {plan.dest}"
        + (" (dry run, nothing written)" if run.dry_run else ""),
        ["segment id", "offsets", "bytes"],
        [
            [s.fileset.segment_id, f"{s.start_offset:,}..{s.end_offset:,}", f"{s.size:,}"]
            for s in plan.segments
        ],
    )
    out.line(
        f"  {len(plan.segments)} segments, {plan.bytes:,} bytes, offsets "
        f"{plan.segments[0].start_offset:,}..{plan.segments[-1].end_offset:,}, chosen by "
        f"{plan.chosen_by}; topic id {plan.topic_id}"
    )
    for note in plan.notes:
        out.warn(note)


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "See what would be restored of orders-3 from the remote storage, then restore it "
        "into the broker's (stopped) log dir:",
        [
            "klogtool restore-tier --dry-run /mnt/tiered/kafka-tiered-storage/"
            "orders-3-vDzTTxSXR6ydDIlnN4dr-g /var/lib/kafka/data",
            "klogtool restore-tier /mnt/tiered/kafka-tiered-storage/"
            "orders-3-vDzTTxSXR6ydDIlnN4dr-g /var/lib/kafka/data",
        ],
    ),
    (
        "The topic was created again (a new topic id): restore offsets from 5000 under it:",
        [
            "klogtool restore-tier --from-offset 5000 --topic-id AAAAAAAAAAAAAAAAAAAAAg "
            "/mnt/tiered/kafka-tiered-storage/orders-3-vDzTTxSXR6ydDIlnN4dr-g "
            "/var/lib/kafka/data",
        ],
    ),
]

"""``klogtool describe``: per partition, what ``kafka-log-dirs.sh --describe`` tells, offline."""

from __future__ import annotations

from typing import Any

import click

from klogtool.commands._options import format_option, paths_argument, warn_if_a_broker_runs
from klogtool.formats import NO_TIMESTAMP
from klogtool.log import layout
from klogtool.log.epochs import NO_EPOCH, EpochTimeline
from klogtool.log.labels import REMOTE_TIER_COLUMNS, log_offsets, remote_tier_row
from klogtool.log.read.describe import describe
from klogtool.log.remote_tier import TierSummary
from klogtool.output import Output, with_iso


@click.command("describe")
@paths_argument
@format_option()
@click.option(
    "--epochs",
    is_flag=True,
    help="Also each partition's leader-epoch timeline: every epoch's start in the "
    "leader-epoch-checkpoint beside its batches' own (first and last offset, first "
    "timestamp, batches, records, bytes). Reads every batch header.",
)
@click.option(
    "--remote-segments",
    is_flag=True,
    help="Also every remote segment of a tiered partition: its offsets, size, state and "
    "leader epochs, and whether the remote log holds it.",
)
@click.pass_obj
def command(
    settings: Any, paths: tuple[str, ...], fmt: str, epochs: bool, remote_segments: bool
) -> None:
    """One line per partition: size, segments, offset range, newest timestamp, index health.

    PATH is a log directory, a partition directory, or a directory of log directories. Only
    what the broker reads when it loads a partition is read (file sizes, the indexes with
    the broker's sanity checks, the batch headers of the last segment): fast on any size.
    The newest timestamp is the last segment's largest timestamp, from its time index (or
    its batches when an index is missing, as the broker rebuilds it; else the file's
    modification time, marked mtime).

    --epochs adds each partition's leader epochs, from the leader-epoch-checkpoint and from
    the partition leader epoch every v2 batch carries: they disagree after some failures (an
    unclean election, a lost checkpoint write), and both are shown; "≠" marks an epoch whose
    checkpoint start is not its first batch's offset.

    A tiered partition (tiered storage, KIP-405) gets its remote tier beside the local one,
    from the __remote_log_metadata partitions of the broker's log dirs replayed as the broker
    loads them: the remote segments and bytes, the offsets held remotely, where the tiers
    overlap or the gap between them, and what an operator should look at (uploads or
    deletions never finished, copies no epoch holds, events the broker drops).
    --remote-segments lists every remote segment.

    Exit status: 0 described, 3 a PATH holds no partition or cannot be read.
    """
    out = settings.output(fmt, progress=False)
    warn_if_a_broker_runs(out, paths)
    rows = []
    timelines = []
    tiers = []
    for s in describe(list(paths), epochs=epochs):
        if fmt != "text":
            out.emit(s.as_obj())
            for e in s.epochs.rows if s.epochs is not None else ():
                out.emit(e.as_obj(s.path, s.topic, s.partition))
            if s.remote is not None:
                out.emit(s.remote.as_obj(s.path))
                for seg in s.remote.segment_objs(s.path) if remote_segments else ():
                    out.emit(seg)
            continue
        if s.epochs is not None:
            timelines.append((s.path, s.epochs))
        if s.remote is not None:
            tiers.append((s.path, s.remote))
        newest = "-" if s.newest_timestamp is None else with_iso(s.newest_timestamp)
        if s.timestamp_source == "mtime":
            newest += " mtime"
        rows.append(
            [
                s.path if s.state is None else f"{s.path} ({layout.DIR_STATES[s.state]})",
                f"{s.size:,}",
                f"{s.segments:,}",
                log_offsets(s.log_start_offset, s.log_end_offset, commas=True),
                newest,
                s.indexes + ("" if s.log_end_clean else "; log tail damaged (verify)"),
            ]
        )
    if fmt == "text":
        out.table(
            f"klogtool describe: {len(rows)} partition" + ("" if len(rows) == 1 else "s"),
            ["partition", "bytes", "segments", "offsets", "newest timestamp", "indexes"],
            rows,
            left=frozenset({"newest timestamp", "indexes"}),
        )
    for path, timeline in timelines:
        _show_epochs(out, path, timeline)
    if tiers:
        _show_tiers(out, tiers)
    for path, tier in tiers if remote_segments else ():
        _show_remote_segments(out, path, tier)
    out.close()


def _show_tiers(out: Output, tiers: list[tuple[str, TierSummary]]) -> None:
    out.table(
        f"remote tiers: {len(tiers)} tiered partition" + ("" if len(tiers) == 1 else "s"),
        REMOTE_TIER_COLUMNS,
        [remote_tier_row(path, t.as_obj(path)) for path, t in tiers],
        left=frozenset({"between", "look at"}),
        lesser=("look at", "uploaded to"),
    )
    for path, t in tiers:
        for finding in t.findings():
            out.warn(f"{path}: {finding}")


def _show_remote_segments(out: Output, path: str, tier: TierSummary) -> None:
    rows = [
        [
            o["segment_id"],
            f"{o['start_offset']:,}",
            f"{o['end_offset']:,}",
            f"{o['size']:,}",
            o["state"] + ("" if o["referenced"] else " (unreferenced)"),
            ", ".join(f"{e}@{s:,}" for e, s in o["leader_epochs"]),
            with_iso(o["updated"]),
        ]
        for o in tier.segment_objs(path)
    ]
    out.table(
        f"{path}: remote segments ({tier.remote.metadata_partition})",
        ["segment id", "start", "end", "bytes", "state", "epochs", "last event"],
        rows,
        left=frozenset({"segment id", "state", "epochs", "last event"}),
    )


def _show_epochs(out: Output, path: str, timeline: EpochTimeline) -> None:
    rows = [
        [
            "-" if e.epoch == NO_EPOCH else str(e.epoch),
            "-" if e.checkpoint_start_offset is None else f"{e.checkpoint_start_offset:,}",
            ("-" if e.start_offset is None else f"{e.start_offset:,}")
            + (" ≠" if e.same_start is False else ""),
            "-" if e.last_offset is None else f"{e.last_offset:,}",
            # batches without a time (v0/v1 ones, -1): none, not the number or a date of 1969
            "-" if e.first_timestamp in (None, NO_TIMESTAMP) else with_iso(e.first_timestamp),
            f"{e.batches:,}",
            f"{e.records:,}",
            f"{e.bytes:,}",
        ]
        for e in timeline.rows
    ]
    out.table(
        f"{path}: leader epochs (checkpoint {timeline.checkpoint})",
        [
            "epoch",
            "checkpoint start",
            "first batch",
            "last offset",
            "first timestamp",
            "batches",
            "records",
            "bytes",
        ],  # fmt: skip
        rows,
        left=frozenset({"first timestamp"}),
    )


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Every partition of a broker's log dirs, then as JSON Lines:",
        [
            "klogtool describe /var/lib/kafka/data",
            "klogtool describe --format jsonl /var/lib/kafka > partitions.jsonl",
        ],
    ),
    (
        "Which leader wrote which offsets of a partition, on two replicas after an unclean "
        "election:",
        [
            "klogtool describe --epochs /data/broker1/orders-3 /data/broker2/orders-3",
        ],
    ),
    (
        "A tiered partition: what is in the bucket, what is on the disk, and every remote "
        "segment with its state (the broker's __remote_log_metadata partitions are read from "
        "its log dirs):",
        [
            "klogtool describe --remote-segments /var/lib/kafka/data/orders-3",
        ],
    ),
]

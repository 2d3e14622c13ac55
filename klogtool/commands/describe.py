"""``klogtool describe``: per partition, what ``kafka-log-dirs.sh --describe`` tells, offline."""

from __future__ import annotations

from typing import Any

import click

from klogtool.commands._options import format_option, paths_argument, warn_if_a_broker_runs
from klogtool.commands._text import log_offsets
from klogtool.log import layout
from klogtool.log.read.describe import describe
from klogtool.output import with_iso


@click.command("describe")
@paths_argument
@format_option()
@click.pass_obj
def command(settings: Any, paths: tuple[str, ...], fmt: str) -> None:
    """One line per partition: size, segments, offset range, newest timestamp, index health.

    PATH is a log directory, a partition directory, or a directory of log directories. Only
    what the broker reads when it loads a partition is read (file sizes, the indexes with
    the broker's sanity checks, the batch headers of the last segment): fast on any size.
    The newest timestamp is the last segment's largest timestamp, from its time index (or
    its batches when an index is missing, as the broker rebuilds it; else the file's
    modification time, marked mtime).

    Exit status: 0 described, 3 a PATH holds no partition or cannot be read.
    """
    out = settings.output(fmt, progress=False)
    warn_if_a_broker_runs(out, paths)
    rows = []
    for s in describe(list(paths)):
        if fmt != "text":
            out.emit(s.as_obj())
            continue
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
    out.close()


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Every partition of a broker's log dirs, then as JSON Lines:",
        [
            "klogtool describe /var/lib/kafka/data",
            "klogtool describe --format jsonl /var/lib/kafka > partitions.jsonl",
        ],
    ),
]

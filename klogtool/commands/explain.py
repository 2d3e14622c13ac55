"""``klogtool explain``: why a partition is (not) compacted, deleted, or slow to load."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from klogtool.commands._options import (
    format_option,
    partition_plan_options,
    read_limits_option,
    warn_if_a_broker_runs,
)
from klogtool.errors import EXIT_OK
from klogtool.formats import ReadLimits
from klogtool.log import layout, storage
from klogtool.log.context import ReadContext
from klogtool.log.labels import log_offsets
from klogtool.log.rewrite.explain import PartitionExplain, explain_partition
from klogtool.log.rewrite.retention import human_ms
from klogtool.output import Output, format_ts, offsets_text, plural
from klogtool.shown import click_callback as shown_paths

if TYPE_CHECKING:
    from klogtool.cli import Settings
    from klogtool.log.partition import PlanInputs


_REMOVED = ("superseded", "tombstones_expired", "aborted", "keyless", "markers_removed")


@click.command("explain")
@click.argument("path", metavar="PARTITION_DIR", callback=shown_paths)
@partition_plan_options()
@format_option()
@read_limits_option
@click.pass_obj
def command(
    settings: Settings,
    path: str,
    inputs: PlanInputs,
    fmt: str,
    limits: ReadLimits,
) -> None:
    """Explain one partition: why it is not being compacted or deleted, and what makes the
    broker slow to load it. Read-only: nothing is written, no lock is taken.

    Per segment: its offsets, size, largest timestamp, whether it is the active segment; what
    compaction would do to it (the dry run of `klogtool compact`: status in the dirty range
    and the records it would remove); what retention would do (the dry run of `klogtool
    retention-sweep`: keep or delete, and the rule); the health of its indexes (the checks of
    `klogtool verify`); whether a producer snapshot covers it. For the partition: the dirty
    ratio and whether the cleaner would pick the log, the high watermark, the producer
    snapshots and how many bytes the broker scans to rebuild producer state, and leftover
    temporary files with what the broker's loader would do about them (only reported).

    Topic configs (as for compact and retention-sweep): Kafka's defaults, the defaults of a
    --config properties file, the KRaft metadata log of the host (the log dir's
    __cluster_metadata-0, or --metadata-dir: dynamic cluster and broker defaults, then the
    topic's own configs), the command's options, --config TOPIC=KEY=VALUE. Each value is
    reported with its source (metadata log at offset N, a snapshot, a flag, a properties
    file, Kafka's default); without a metadata log Kafka's defaults are marked assumed.

    Output: text (tables and notes), or jsonl/json: one "segment_explain" object per segment
    then a "partition_explain" summary.

    Exit status: 0 explained, 3 PARTITION_DIR is not a partition directory or cannot be read.
    """
    out = settings.output(fmt)
    warn_if_a_broker_runs(out, [path])
    p = storage.path_of(path)
    name = Path(storage.absolute(p)).name  # "." from inside the partition dir: its own name
    parsed = layout.parse_partition_dir_name(name)
    topic = parsed[0] if parsed else None
    with out.phases(f"explaining {name}") as bar:
        ex = explain_partition(
            p,
            inputs.config_of(topic, p),
            now=inputs.now,
            high_watermark=inputs.high_watermark,
            ctx=ReadContext.of(limits, bar),
            remote_tier=inputs.remote_tier,
        )
    sources = inputs.explained(topic, p)
    policy = sources[0]
    if policy["assumed"]:  # the note states the policy: say it is assumed
        ex.notes[:] = [
            f"{n} ({policy['source']})" if n.startswith("cleanup.policy=") else n for n in ex.notes
        ]
    if fmt == "text":
        _text(out, ex)
        for c in sources:
            out.line(f"  {name}: config {c['key']}={c['value']} ({c['source']})")
    else:
        for s in ex.segments:
            out.emit(s.as_obj(str(ex.path)))
        out.emit(ex.as_obj(sources))
    out.close()
    click.get_current_context().exit(EXIT_OK)


def _iso(ms: int) -> str:
    if ms < 0:
        return str(ms)
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _text(out: Output, ex: PartitionExplain) -> None:
    name = Path(storage.absolute(ex.path)).name
    rows = []
    details: list[str] = []
    for s in ex.segments:
        sc, sr = s.compaction, s.retention
        if sc is None:
            comp = "?"
        else:
            comp = sc.status
            if sc.group is not None:
                comp += f" -{sc.removed}/{sc.records_in}"
                removed = ", ".join(
                    f"{k.replace('_', ' ')} {v}" for k in _REMOVED if (v := getattr(sc, k))
                )
                if removed:
                    details.append(f"segment {s.base_offset}: compaction would remove {removed}")
        idx = s.index_health
        if s.log_findings:
            idx += ", log bad" if any(f.severity == "error" for f in s.log_findings) else ""
        for f in s.index_findings + s.log_findings:
            details.append(f"segment {s.base_offset}: {f.severity} {f.code}: {f.message}")
        rows.append(
            [
                f"{s.base_offset}" + (" (active)" if s.active else ""),
                f"{s.upper_bound - 1}" if s.upper_bound > s.base_offset else "-",
                f"{s.size:,}",
                _iso(s.largest_timestamp)
                + {"mtime": " (mtime)", "records": " (batches)"}.get(s.timestamp_source, ""),
                human_ms(ex.now - s.largest_timestamp),
                comp,
                f"{sr.action} {sr.rule}" if sr else "?",
                idx,
                "yes" if s.snapshot_at_end else "",
            ]
        )
    out.table(
        f"{name}: log {log_offsets(ex.log_start_offset, ex.log_end_offset)}, high watermark "
        f"{ex.high_watermark} ({ex.high_watermark_source}), now {format_ts(ex.now)}",
        [
            "segment",
            "last",
            "bytes",
            "largest timestamp",
            "age",
            "compaction",
            "retention",
            "indexes",
            "snapshot",
        ],
        rows,
        left=frozenset({"largest timestamp", "compaction", "retention", "indexes"}),
        # on a narrow terminal: the notes below name every index problem and the snapshots
        lesser=("snapshot", "indexes", "last", "age"),
    )
    lines: list[str] = []
    c = ex.compaction
    if c is not None:
        lines.append(
            f"compaction: dirty range {c.first_dirty_offset} ({c.first_dirty_source}) to "
            f"{c.first_uncleanable_offset} ({c.uncleanable_reason}); {c.eligibility}"
        )
        if c.why_not:
            lines.append(f"compaction: nothing to clean: {c.why_not}")
    r = ex.retention
    if r is not None:
        if r.deleted:
            lines.append(
                f"retention: would delete {plural(len(r.deleted), 'segment')}, {r.deleted_bytes:,} "
                f"bytes; log start {r.log_start_offset} -> {r.new_log_start_offset}"
            )
        else:
            first = r.decisions[0] if r.decisions else None
            why = f": {first.reason}" if first else ""
            lines.append(f"retention: nothing to delete{why}")
    lines += details
    latest = ex.latest_snapshot
    lines.append(
        (
            offsets_text(ex.snapshots, "producer snapshot")
            if ex.snapshots
            else "producer snapshots: none"
        )
        + "; loading rebuilds producer state from "
        + (f"offset {latest}" if latest is not None else "the log start")
        + f", scanning {ex.producer_state_scan_bytes:,} bytes"
    )
    for f in ex.snapshot_problems:
        lines.append(f"snapshot {Path(f.path).name}: {f.code}: {f.message}")
    if ex.leftovers:
        lines.append("leftover files: " + ", ".join(ex.leftovers))
        lines += [f"  on load the broker would have: {w}" for w in ex.on_load]
    if ex.orphans:
        lines.append("index files without a .log (deleted on load): " + ", ".join(ex.orphans))
    lines += ex.notes
    for line in lines:
        out.line(f"  {name}: {line}")


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Why a partition is not compacted or deleted, at a fixed time:",
        [
            "klogtool explain --now 2024-05-01T12:00:00Z /var/lib/kafka/data/orders-3",
        ],
    ),
]

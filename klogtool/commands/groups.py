"""``klogtool groups``: where every consumer group was when the disk was copied."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import click

from klogtool.commands._options import (
    format_option,
    parse_now,
    paths_argument,
    read_limits_option,
    warn_if_a_broker_runs,
    warn_if_not_live_skipped,
)
from klogtool.errors import EXIT_FINDINGS, EXIT_OK
from klogtool.formats import ReadLimits
from klogtool.log.context import ReadContext
from klogtool.log.read.groups import (
    CLASSIC,
    NEW,
    GroupOptions,
    consumer_groups,
    group_obj,
    offsets_of,
)
from klogtool.log.read.transactions import format_duration
from klogtool.output import Output, diagnostic_line, plural, with_iso

if TYPE_CHECKING:
    from klogtool.cli import Settings
    from klogtool.log.read.groups import Group, GroupsResult


def _regex(_c: click.Context, _p: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    for v in values:
        try:
            re.compile(v)
        except re.error as e:
            raise click.BadParameter(f"not a regular expression: {e}") from None
    return values


@click.command("groups")
@paths_argument
@click.option(
    "--group",
    "groups",
    multiple=True,
    metavar="REGEX",
    callback=_regex,
    help="Only groups whose whole name matches REGEX (repeatable: any may match).",
)
@click.option(
    "--at",
    metavar="TIME",
    callback=lambda _c, _p, v: parse_now(v),
    help="Replay the commits written up to TIME (milliseconds since the epoch or ISO-8601), "
    "and measure lag against the records written up to then.",
)
@click.option(
    "--coordinator",
    type=click.Choice([NEW, CLASSIC]),
    help="Replay by this group coordinator's rules [default: the broker's: new for Kafka 4.x "
    "(metadata.version of the KRaft metadata log) or a log holding KIP-848 records, else "
    "classic].",
)
@format_option()
@read_limits_option
@click.pass_obj
def command(
    settings: Settings,
    paths: tuple[str, ...],
    groups: tuple[str, ...],
    at: int | None,
    coordinator: str | None,
    fmt: str,
    limits: ReadLimits,
) -> None:
    """Consumer groups as a broker's disk left them: kafka-consumer-groups.sh --describe, offline.

    PATH is a log directory, a partition directory or a directory of log directories; the
    __consumer_offsets partitions among them are replayed as the group coordinator loads them
    (offset commits and their tombstones; group metadata: protocol, generation, members and
    their assignments, for classic and KIP-848 consumer groups, share groups and streams
    groups; share groups' delivery state from __share_group_state, with the records they
    archived; transactional offset commits
    applied at their COMMIT marker, dropped at ABORT, shown as pending without one; offsets
    whose expire timestamp has passed marked expired).

    For each committed offset whose data partition is in the log dirs given: the lag (its
    high watermark from replication-offset-checkpoint, as the tool's LOG-END-OFFSET, minus the
    committed offset) and the time lag (the newest record's timestamp minus the timestamp of
    the record at the committed offset). With --at, only what was written up to that moment
    is replayed, and lag is measured against the records written up to then.

    Exit status: 0 groups shown; 1 none found (or none matches --group); 3 an input cannot be
    read, or holds no __consumer_offsets (or __share_group_state) partition.
    """
    out = settings.output(fmt, progress=False)
    warn_if_a_broker_runs(out, paths)
    warn_if_not_live_skipped(out, paths)
    result = consumer_groups(
        list(paths),
        GroupOptions(ReadContext.of(limits), groups=groups, at=at, coordinator=coordinator),
    )
    out.info(
        f"replayed by the {result.coordinator} coordinator's rules ({result.coordinator_source})"
    )
    for f in result.findings:
        if fmt == "text":
            out.stderr_line(diagnostic_line(f.as_obj()))
        else:
            out.emit(f.as_obj())
    every = [(g, c) for g in result.groups for c in offsets_of(g)]
    pending = sum(c.pending for _, c in every)
    total_lag = sum(max(0, c.lag or 0) for _, c in every if not c.pending)
    if fmt != "text":
        for g in result.groups:
            out.emit(group_obj(g, result.topic_ids))
            for c in offsets_of(g):
                out.emit(result.offset_obj(g, c))
    if fmt == "text":
        for g in result.groups:
            _show_group(out, result, g)
        out.line(
            f"klogtool groups: {plural(len(result.groups), 'group')}, "
            f"{plural(len(every) - pending, 'committed offset')}"
            + (f", {pending} pending in open transactions" if pending else "")
            + f", total lag {total_lag:,}"
        )
    else:
        out.emit(
            {
                "type": "summary",
                "groups": len(result.groups),
                "offsets": len(every) - pending,
                "pending_offsets": pending,
                "offsets_partitions": result.offsets_partitions,
                "records": result.records,
                "total_lag": total_lag,
                "warnings": len(result.findings),
                "coordinator": result.coordinator,
                "coordinator_source": result.coordinator_source,
            }
        )
    out.close()
    click.get_current_context().exit(EXIT_OK if result.groups else EXIT_FINDINGS)


def _show_group(out: Output, result: GroupsResult, g: Group) -> None:
    what = [g.kind]
    if g.protocol_type:
        what.append(f"protocol type {g.protocol_type}")
    if g.protocol:
        what.append(f"assignor {g.protocol}")
    if g.generation is not None:
        what.append(f"{'generation' if g.kind == 'classic' else 'epoch'} {g.generation}")
    what.append(plural(len(g.members), "member"))
    if g.state_timestamp is not None and g.state_timestamp >= 0:
        what.append(f"state since {with_iso(g.state_timestamp)}")
    if g.metadata_deleted:
        what.append("metadata deleted")
    table = []
    for c in offsets_of(g):
        owner = result.owner(g, c.topic, c.partition)
        notes = [n for n, on in (("expired", c.expired), ("pending", c.pending)) if on]
        if c.end_source is not None and c.end_source.startswith("no "):
            notes.append("high watermark not known: the log start offset")
        table.append(
            [
                c.topic,
                str(c.partition),
                f"{c.offset:,}",
                "-" if c.end_offset is None else f"{c.end_offset:,}",
                "-" if c.lag is None else f"{c.lag:,}",
                format_duration(c.time_lag_ms),
                "-" if owner is None else owner.member_id,
                "-" if owner is None or owner.client_host is None else owner.client_host,
                "-" if owner is None or owner.client_id is None else owner.client_id,
                " ".join(notes),
            ]
        )
    title = {"share": "Share group", "streams": "Streams group"}.get(g.kind, "Consumer group")
    out.table(
        f"{title} '{g.group}' ({', '.join(what)})",
        [
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "TIME-LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
            "NOTE",
        ],  # fmt: skip
        table,
        left=frozenset({"CONSUMER-ID", "HOST", "CLIENT-ID", "NOTE"}),
        lesser=("NOTE", "HOST", "CONSUMER-ID", "CLIENT-ID"),
    )
    for sub, topics in g.topology.items():
        out.line(f"  subtopology {sub}: source topics {', '.join(topics) or '-'}")
    if g.share_partitions:
        _show_share_partitions(out, result, g)


def _show_share_partitions(out: Output, result: GroupsResult, g: Group) -> None:
    """Where a share group stands in each partition, and what it will never deliver."""
    rows = []
    poison = []
    for sp in g.share_partitions:
        topic = result.topic_ids.get(sp.topic_id, sp.topic_id)
        archived = sp.archived
        rows.append(
            [
                topic,
                str(sp.partition),
                f"{sp.start_offset:,}",
                str(sp.state_epoch),
                plural(len(sp.batches), "range"),
                f"{sum(b.last_offset - b.first_offset + 1 for b in archived):,}",
                str(max((b.delivery_count for b in sp.batches), default=0)),
            ]
        )
        poison += [
            f"  {topic}-{sp.partition}: offsets {b.first_offset}..{b.last_offset} archived "
            f"after {b.delivery_count} {'delivery' if b.delivery_count == 1 else 'deliveries'}"
            for b in archived
        ]
    out.table(
        f"Share group '{g.group}': delivery state",
        ["TOPIC", "PARTITION", "START-OFFSET", "STATE-EPOCH", "IN-FLIGHT", "ARCHIVED"]
        + ["MAX-DELIVERIES"],
        rows,
    )
    for line in poison:
        out.line(line)


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Every group of a broker's log dirs, with its lag against the partitions there:",
        ["klogtool groups /var/lib/kafka/data"],
    ),
    (
        "One group as it was at a moment, as JSON Lines:",
        ["klogtool groups --group 'billing-.*' --at 2024-05-01T12:00:00Z --format jsonl /data"],
    ),
]

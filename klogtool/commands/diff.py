"""``klogtool diff A B``: replica divergence between two copies of a partition (or log dir)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from klogtool.commands._options import (
    format_option,
    jobs_option,
    read_limits_option,
    warn_if_a_broker_runs,
    warn_if_not_live_skipped,
)
from klogtool.errors import EXIT_FINDINGS, EXIT_OK
from klogtool.formats import ReadLimits
from klogtool.log.context import ReadContext
from klogtool.log.export.exporter import (
    FORMATS,
    Destination,
    ExportRange,
    LocalJob,
    check_local_dest,
    export_ranges,
)
from klogtool.log.export.spec import ReadOptions
from klogtool.log.labels import log_offsets
from klogtool.log.read.diff import (
    CHANGED,
    DIFFERENT_START,
    DIVERGED,
    MODULO_COMPACTION,
    ONLY_A,
    ONLY_B,
    ONLY_IN_A,
    ONLY_IN_B,
    PREFIX,
    Difference,
    DiffOptions,
    DiffSummary,
    PartitionDiff,
    accepted,
    diff,
)
from klogtool.output import Output, plural, to_json
from klogtool.shown import click_callback as shown_paths

if TYPE_CHECKING:
    from klogtool.cli import Settings


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Where a follower's copy diverged from the leader's, and where it would truncate:",
        [
            "klogtool diff /mnt/broker1/data/orders-3 /mnt/broker2/data/orders-3",
            "klogtool diff --leader b --deep leader-copy/orders-3 follower-copy/orders-3",
        ],
    ),
    (
        "Two log dirs, every partition; a lagging or compacted copy is fine:",
        [
            "klogtool diff --allow-lag --allow-compaction /data/kafka /backup/kafka",
            "klogtool diff --format jsonl /data/kafka /backup/kafka > diff.jsonl",
        ],
    ),
    (
        "After an unclean election: three replicas against the new leader (b), and the "
        "records the others lose written out for the application team:",
        [
            "klogtool diff --leader b --export-lost parquet lost/ r1/orders-3 r2/orders-3 "
            "r3/orders-3",
        ],
    ),
]


def _epilog(examples: list[tuple[str, list[str]]]) -> str:
    """The EXAMPLES of the man page as the end of --help (lines kept as they are)."""
    parts = ["Examples:"]
    for what, lines in examples:
        parts.append(what)
        parts.append("\b\n" + "\n".join(f"  {line}" for line in lines))
    return "\n\n".join(parts)


@click.command("diff", epilog=_epilog(EXAMPLES))
@click.argument("replicas", nargs=-1, required=True, metavar="A B [C...]", callback=shown_paths)
@click.option(
    "--leader",
    default="a",
    show_default=True,
    metavar="a|b|c...",
    help="The replica treated as the leader (a: the first named, b: the second, ...) when "
    "working out where the followers truncate.",
)
@click.option("--deep", is_flag=True, help="Name the record fields that differ in changed batches.")
@click.option(
    "--allow-lag",
    is_flag=True,
    help="Exit 0 when the follower (the side not --leader) is a prefix of the leader. A "
    "lagging leader is never accepted: the follower would discard what it holds past the "
    "leader's end.",
)
@click.option(
    "--allow-compaction",
    is_flag=True,
    help="Exit 0 when one side equals the other modulo compaction.",
)
@click.option(
    "--max-differences",
    type=click.IntRange(min=0),
    default=100,
    show_default=True,
    metavar="N",
    help="Show at most N differences per partition (all are counted); 0 shows every one.",
)
@click.option(
    "--export-lost",
    "export_lost",
    type=(click.Choice(FORMATS), str),
    default=None,
    metavar="parquet|jsonl DEST",
    help="Write the records each follower loses (those the leader does not hold: truncated, "
    "or kept past a truncation that misses the divergence) and those it truncates but "
    "re-fetches (the leader holds them the same) to DEST, as export writes them (offsets, "
    "timestamps, keys, values, headers, producer ids), each row with its follower (replica) "
    "and outcome (lost or re-fetched). DEST must be empty or new.",
)
@format_option()
@read_limits_option
@jobs_option
@click.pass_obj
def command(
    settings: Settings,
    replicas: tuple[str, ...],
    leader: str,
    deep: bool,
    allow_lag: bool,
    allow_compaction: bool,
    max_differences: int,
    export_lost: tuple[str, str] | None,
    fmt: str,
    limits: ReadLimits,
    jobs: int,
) -> None:
    """Compare two copies of a partition, or two log dirs, and say where they diverge.

    A and B are two partition directories (the leader's and a follower's copy after an
    unclean leader election, or a partition before and after a repair), or two log
    directories (their partitions are paired by name). Read-only. With three or more
    replicas, the leader (--leader) is compared with each of the others, and a table says
    where each follower truncates against it.

    Per partition the verdict is one of: identical; prefix (one side lags: by how many
    offsets, records and bytes); diverged at offset X, with each side's leader epoch there
    (from the batches and the leader-epoch-checkpoint) and the offset the follower would
    truncate to by the broker's rule (the OffsetsForLeaderEpoch exchange of KIP-101 and
    KIP-279: the end offset of the largest epoch both sides have); equal-modulo-compaction
    (one side's records are the other's minus superseded keys, tombstones, keyless records,
    aborted transactions and markers, at the same offsets with the same contents); or
    different-start-offsets (retention ran on one side; or a tiered topic's replica started
    from the tiered offset, its head in remote storage, said in a note). Then the
    differences: batches only in A, only in B, and pairs with the same offsets but different
    bytes (the header fields that differ; with --deep the record fields: key, value,
    headers, timestamp, producer id, epoch and sequence).

    Batch headers and CRCs are compared first, then bytes; records are decoded only where
    batches differ. A torn tail (which the broker's recovery cuts) is reported but the
    verdict is made on whole batches. Partitions of two log dirs are compared by --jobs
    processes; the output is in partition order either way.

    Output: text, or jsonl/json: one "difference" object per difference, one
    "partition-diff" object per partition, and a final "summary" (docs/diff.md).

    A lagging follower is a replica catching up; a lagging leader means the follower
    discards the records past the leader's end (a note says how many). To check a backup,
    give the live copy as the leader (A by default) and the backup as the follower.

    Exit status: 0 identical (also prefix with --allow-lag when the follower lags,
    equal-modulo-compaction with --allow-compaction), 1 diverged, truncated (the leader
    lags) or otherwise different, 3 an input cannot be read.
    """
    names = [chr(ord("a") + i) for i in range(len(replicas))]
    if len(replicas) < 2 or len(replicas) > 26:
        raise click.UsageError("give 2 to 26 replicas: A B [C...]")
    if leader not in names:
        raise click.BadParameter(
            f"{leader!r}: one of {', '.join(names)} (the replicas named)", param_hint="--leader"
        )
    out = settings.output(fmt, progress=False)
    warn_if_a_broker_runs(out, list(replicas))
    warn_if_not_live_skipped(out, list(replicas))
    lead = names.index(leader)
    summary = DiffSummary()
    losing: list[PartitionDiff] = []  # the pairs whose follower loses or re-fetches records
    # the leader against each follower; within a pair the replica named first is side a
    for other in (i for i in range(len(replicas)) if i != lead):
        first, second = sorted((lead, other))
        if len(replicas) > 2 and fmt == "text":
            out.line(
                f"=== leader {leader}: {replicas[lead]}  follower {names[other]}: {replicas[other]}"
            )
        options = DiffOptions(
            leader="a" if first == lead else "b",
            deep=deep,
            max_differences=max_differences,
            names=(names[first], names[second]),
            ctx=ReadContext.of(limits),
        )
        items = diff(replicas[first], replicas[second], options, jobs=jobs)
        for item in _show(items, out, fmt, summary, allow_lag, allow_compaction):
            if item.lost is not None or item.refetched is not None:
                losing.append(item)
    if len(replicas) > 2 and fmt == "text":
        _truncation_points(out, leader, losing)
    exported = None
    if export_lost is not None:
        exported = _export_lost(export_lost, losing, list(replicas), limits)
    if fmt == "text":
        if exported is not None:
            out.line(
                f"{plural(exported['lost'], 'record')} that the leader does not hold and "
                f"{exported['refetched']:,} that the followers re-fetch written to "
                f"{exported['dest']} ({exported['format']}, "
                f"{plural(exported['partitions'], 'partition')})"
            )
        counts = ", ".join(f"{n} {v}" for v, n in summary.by_verdict.items() if n)
        noun = "partition" if summary.partitions == 1 else "partitions"
        out.line(f"klogtool diff: {summary.partitions} {noun}" + (f": {counts}" if counts else ""))
    else:
        obj = summary.as_obj()
        if exported is not None:
            obj["lost_export"] = exported
        out.emit(obj)
    out.close()
    click.get_current_context().exit(EXIT_OK if summary.ok else EXIT_FINDINGS)


def _show(
    items: Iterator[Difference | PartitionDiff],
    out: Output,
    fmt: str,
    summary: DiffSummary,
    allow_lag: bool,
    allow_compaction: bool,
) -> Iterator[PartitionDiff]:
    """Print one pair's differences and verdicts; the verdicts come back to the caller."""
    current: str | None = None
    for item in items:
        if isinstance(item, Difference):
            if fmt != "text":
                out.emit(item.as_obj())
                continue
            if item.partition != current:
                current = item.partition
                out.line(f"== {item.partition}")
            for line in difference_text(item):
                out.line(line)
            continue
        ok = accepted(item, allow_lag=allow_lag, allow_compaction=allow_compaction)
        summary.count(item, ok)
        if fmt != "text":
            out.emit(item.as_obj(ok=ok))
        else:
            if item.partition != current:
                out.line(f"== {item.partition}")
            current = None
            for line in partition_text(item):
                out.line(line)
        yield item


def _truncation_points(out: Output, leader: str, losing: list[PartitionDiff]) -> None:
    rows = []
    for p in losing:
        lost, again = p.lost, p.refetched
        some = lost if lost is not None else again
        assert some is not None
        rows.append(
            [
                some["replica"],
                some["path"],
                "" if lost is None else f"{lost['from_offset']:,}",
                "0" if lost is None else f"{lost['offsets']:,}",
                "0" if again is None else f"{again['offsets']:,}",
            ]
        )
    out.table(
        f"against leader {leader}: what each follower holds that the leader does not",
        ["follower", "partition", "from offset", "offsets", "re-fetched"],
        rows,
        left=frozenset({"partition"}),
    )


# the columns --export-lost adds to export's
LOST_COLUMNS = ("replica", "outcome")
LOST, REFETCHED = "lost", "re-fetched"


def _export_lost(
    to_dest: tuple[str, str],
    losing: list[PartitionDiff],
    inputs: list[str],
    limits: ReadLimits,
) -> dict[str, Any]:
    """The records each follower loses or re-fetches, written as export writes them (one
    dataset, all partitions), each row with its follower and outcome."""
    to, dest = to_dest
    decoder = "binary" if to == "parquet" else "base64"
    destination = Destination(dest, inputs=inputs)
    check_local_dest(destination)
    destination.prepare()
    read = ReadOptions(
        ctx=ReadContext.of(limits),
        on_corrupt="report",
        key_decoder=decoder,
        value_decoder=decoder,
    )
    ranges = [
        (outcome, ExportRange(r["path"], r["from_offset"], r["to_offset"], (r["replica"], outcome)))
        for p in losing
        for outcome, r in ((LOST, p.lost), (REFETCHED, p.refetched))
        if r is not None
    ]
    labels = tuple((name, "") for name in LOST_COLUMNS)
    try:
        rows = export_ranges(
            [r for _, r in ranges], LocalJob(to, destination.work, read, labels=labels)
        )
    except BaseException:
        destination.abort()
        raise
    destination.commit()
    by = {outcome: sum(n for (o, _), n in zip(ranges, rows, strict=True) if o == outcome)
          for outcome in (LOST, REFETCHED)}  # fmt: skip
    return {
        "dest": dest,
        "format": to,
        "records": sum(rows),
        "lost": by[LOST],
        "refetched": by[REFETCHED],
        "partitions": len(losing),
    }


def _batch_text(info: dict[str, Any]) -> str:
    n = info["records"]
    return (
        f"offsets {info['base_offset']}..{info['last_offset']} ({n} record{'' if n == 1 else 's'}"
        f", {info['size']} bytes, leader epoch {info['leader_epoch']}) at "
        f"{info['path']}:{info['position']}"
    )


def _crc_text(d: Difference) -> list[str]:
    """A batch of the difference that fails its CRC: that copy is corrupt, which is not the
    divergence of two histories."""
    return [
        f"    {side}: CRC mismatch at {info['path']}:{info['position']}, a corrupt copy, not a "
        "divergence"
        for side, info in (("a", d.a), ("b", d.b))
        if info is not None and info.get("crc_valid") is False
    ]


def difference_text(d: Difference) -> list[str]:
    why = " (compaction)" if d.explained_by else ""
    if d.kind in (ONLY_A, ONLY_B):
        info = d.a if d.kind == ONLY_A else d.b
        assert info is not None
        side = "a" if d.kind == ONLY_A else "b"
        return [f"  only in {side}: {_batch_text(info)}{why}", *_crc_text(d)]
    if d.kind == CHANGED:
        assert d.a is not None and d.b is not None
        fields = ", ".join(f"{f} {d.a.get(f, '?')} vs {d.b.get(f, '?')}" for f in _shown(d.fields))
        first = (
            f"; records differ from offset {d.first_differing_offset}"
            if d.first_differing_offset is not None
            else ""
        )
        lines = [
            f"  changed: offsets {d.base_offset}..{d.last_offset}: {fields or 'bytes'}{first}{why}",
            *_crc_text(d),
        ]
        for r in d.records or []:
            if "only_in" in r:
                lines.append(f"    offset {r['offset']}: only in {r['only_in']}")
            elif "decode_error" in r:
                lines.append(f"    cannot decode: {r['decode_error']}")
            else:
                shown = "; ".join(
                    f"{f['field']} {_value(f['a'])} vs {_value(f['b'])}" for f in r["fields"]
                )
                lines.append(f"    offset {r['offset']}: {shown}")
        return lines
    info = d.a if d.a is not None else d.b
    assert info is not None
    side = "a" if d.a is not None else "b"
    what = "torn tail" if d.kind == "torn-tail" else "corrupt"
    message = f": {info['message']}" if info.get("message") and d.kind != "torn-tail" else ""
    return [
        f"  {what} in {side}: {info['path']}:{info['position']} ({info['bytes']} bytes not "
        f"compared){message}"
    ]


_FIELD_KEYS = {"partition_leader_epoch": "leader_epoch", "count": "records"}


def _shown(fields: list[str]) -> list[str]:
    return [_FIELD_KEYS.get(f, f) for f in fields]


def _value(v: Any) -> str:
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, list):
        return to_json({"h": v})[5:-1]
    return "null" if v is None else str(v)


def _fate_text(
    follower: str, leader: str, lost: dict[str, Any] | None, again: dict[str, Any] | None
) -> str:
    """``b loses 10 offsets (15..24) that a does not hold; it re-fetches 3 (12..14) that a
    holds the same``."""
    parts = []
    if lost is not None:
        parts.append(
            f"loses {plural(lost['offsets'], 'offset')} ({lost['from_offset']}.."
            f"{lost['to_offset']}) that {leader} does not hold"
        )
    if again is not None:
        n = f"{again['offsets']:,}" if parts else plural(again["offsets"], "offset")
        parts.append(
            f"{'it ' if parts else ''}re-fetches {n} ({again['from_offset']}.."
            f"{again['to_offset']}) that {leader} holds the same"
        )
    return f"{follower} " + "; ".join(parts)


def _timeline_text(rows: list[dict[str, Any]], most: int = 8) -> str:
    """``3 from 120 (40 records)`` per epoch, the checkpoint's start where it differs, the
    first and last few when there are more than ``most``."""
    parts = []
    for r in rows:
        epoch = "no epoch" if r["epoch"] < 0 else str(r["epoch"])
        if r["start_offset"] is None:
            parts.append(f"{epoch} at {r['checkpoint_start_offset']} (no batch)")
            continue
        part = f"{epoch} from {r['start_offset']} ({plural(r['records'], 'record')})"
        if r["same_start"] is False:
            ckpt = r["checkpoint_start_offset"]
            part += " not in the checkpoint" if ckpt is None else f" ≠ checkpoint {ckpt}"
        parts.append(part)
    if len(parts) > most:
        parts = [*parts[:3], f"… {len(parts) - 6} more …", *parts[-3:]]
    return ", ".join(parts)


def partition_text(p: PartitionDiff) -> list[str]:
    v = p.verdict
    if v in (ONLY_IN_A, ONLY_IN_B):
        return [f"{p.partition}: only in {'a' if v == ONLY_IN_A else 'b'} ({p.a or p.b})"]
    head = {
        DIVERGED: f"diverged at offset {p.diverged_at}",
        PREFIX: f"{p.lagging} is a prefix of {'b' if p.lagging == 'a' else 'a'}",
        MODULO_COMPACTION: f"equal modulo compaction ({p.compacted} is compacted)",
        DIFFERENT_START: "different start offsets (retention ran on one side, or one is in "
        "remote storage)",
    }.get(v, v)
    lines = [f"{p.partition}: {head}"]
    for side, path in (("a", p.a), ("b", p.b)):
        start, end = p.start_offsets[side], p.end_offsets[side]
        epochs = p.epochs.get(side, {})
        where = ""
        if p.epochs_at_divergence is not None:
            at = p.epochs_at_divergence[side]
            where = f"; leader epoch at {p.diverged_at}: batch {at['batch']}, cache {at['cache']}"
        lines.append(
            f"  {side}: {path}  offsets {log_offsets(start, end)}  epochs from "
            f"{epochs.get('source')}{where}"
        )
        if epochs.get("timeline"):
            lines.append(f"     leader epochs: {_timeline_text(epochs['timeline'])}")
    if p.lagging is not None:
        lines.append(
            f"  {p.lagging} lags by {p.lag_offsets:,} offsets ({p.lag_records:,} records, "
            f"{p.lag_bytes:,} bytes)"
        )
    t = p.truncation
    if t is not None:
        how = (
            "by its leader epochs"
            if t["rule"] == "leader-epoch"
            else "to its high watermark (no leader epoch answer)"
        )
        lines.append(
            f"  leader {t['leader']}: follower {t['follower']} truncates {how} to offset "
            f"{t['offset']} ({t['offsets_truncated']:,} offsets cut)"
        )
        e = t.get("election")
        if e is not None:
            why = (
                "as its leader-epoch-checkpoint shows"
                if e["source"] == "leader-epoch-checkpoint"
                else "assumed: above either side's epochs"
            )
            lines.append(
                f"    {t['leader']} becomes leader in epoch {e['epoch']} at its log end offset "
                f"{e['start_offset']} ({why})"
            )
        for s in t["steps"]:
            step = (
                f"    {t['follower']} asks for epoch {s['follower_epoch']}; {t['leader']} "
                f"answers epoch {s['leader_epoch']} ending at {s['leader_end_offset']}"
            )
            if "follower_end_offset" in s:
                step += f"; {t['follower']}'s ends at {s['follower_end_offset']}"
            if "truncate_to" in s:
                step += f": truncate to {s['truncate_to']}"
            lines.append(step)
    if t is not None and (p.lost is not None or p.refetched is not None):
        lines.append(f"  {_fate_text(t['follower'], t['leader'], p.lost, p.refetched)}")
    if p.differences:
        shown = "" if p.differences_shown == p.differences else f", {p.differences_shown} shown"
        lines.append(
            f"  {plural(p.differences, 'difference')}{shown}; {p.common_batches:,} identical"
        )
    lines += [f"  note: {n}" for n in p.notes]
    return lines

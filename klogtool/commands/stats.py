"""``klogtool stats``: what is in these partitions, in tables and charts (docs/stats.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from klogtool.codes import Code
from klogtool.commands._options import (
    format_option,
    jobs_option,
    metadata_dir_option,
    now_option,
    paths_argument,
    read_limits_option,
    remote_storage_options,
    size_option,
    warn_if_a_broker_runs,
    warn_if_not_live_skipped,
)
from klogtool.errors import InputError
from klogtool.formats import ReadLimits
from klogtool.log import layout, storage
from klogtool.log.context import ReadContext
from klogtool.log.labels import REMOTE_TIER_COLUMNS, remote_tier_row
from klogtool.log.metadata import log_dirs_named
from klogtool.log.partition import PlanInputs
from klogtool.log.read import stats as lib
from klogtool.log.read.groups import (
    CONSUMER_OFFSETS,
    GroupOptions,
    consumer_groups,
    offsets_of,
)
from klogtool.log.read.stats_html import (
    display_key,
    heavy_count,
    heavy_note,
    human_bytes,
    iso,
    pct,
    render,
)
from klogtool.log.remote_tier import TierCache
from klogtool.log.topicconfig import ConfigSource
from klogtool.output import Output

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.cli import Settings
    from klogtool.log.remote_layouts import TieredReads


_BLOCKS = " ▏▎▍▌▋▊▉█"
# A table's bar chart: its column has no header; on a narrow terminal it is left out first
# (the numbers beside it say the same) rather than folded.
_CHART = ("",)
_SPARK = "▁▂▃▄▅▆▇█"


def bar(value: float, top: float, width: int = 30) -> str:
    """A bar of block characters, ``value / top`` of ``width`` cells (eighths of a cell)."""
    if top <= 0 or value <= 0:
        return ""
    eighths = max(1, round(8 * width * value / top))
    return "█" * (eighths // 8) + (_BLOCKS[eighths % 8] if eighths % 8 else "")


def sparkline(counts: list[int]) -> str:
    top = max(counts, default=0)
    if top <= 0:
        return ""
    return "".join(" " if c == 0 else _SPARK[min(7, (c * 8 - 1) // top)] for c in counts)


@click.command("stats")
@paths_argument
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="NAME",
    help="Only the partitions of this topic (repeatable) in the log dirs named.",
)
@format_option()
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE",
    help="Also write one self-contained HTML report (inline SVG charts, no script) to FILE.",
)
@click.option(
    "--per-partition/--no-per-partition",
    default=True,
    help="Text: a table row per partition, when there are several [default: on].",
)
@click.option(
    "--exact-keys",
    type=int,
    default=lib.EXACT_KEYS,
    show_default=True,
    metavar="N",
    help="Distinct keys counted exactly per partition up to N, then estimated (HyperLogLog).",
)
@size_option(
    "--sample",
    default="8M",
    help="Uncompressed records compressed with each codec for the what-if sizes (0: none).",
)
@now_option
@metadata_dir_option
@jobs_option
@read_limits_option
@remote_storage_options
@click.pass_obj
def command(
    settings: Settings,
    paths: tuple[str, ...],
    topics: tuple[str, ...],
    fmt: str,
    html_file: str | None,
    per_partition: bool,
    exact_keys: int,
    sample: int,
    now: int | None,
    metadata_dir: str | None,
    jobs: int,
    limits: ReadLimits,
    remote: TieredReads | None,
) -> None:
    """What is in these partitions: volume, sizes, time, producers, keys, what-if codecs.

    PATH is a segment (.log), a partition directory or a log directory (--topic narrows it to
    one topic's partitions). Every record is read once, with memory that does not grow with
    the data: sizes go into log2 buckets (percentiles are interpolated inside a bucket),
    distinct keys are exact up to --exact-keys per partition and then a HyperLogLog estimate
    (standard error 0.81 %), the heaviest keys come from a space-saving counter (1,024 keys
    per partition): exact counts while the keys are counted exactly, afterwards a range
    (min..max) that holds the true count, off by at most keyed records / 1,024.

    "Out of order" counts the records whose timestamp is below the previous record's in the
    same partition, in offset order (records without a timestamp are skipped): one
    future-dated record among ordered ones counts once, for the record after it, however
    many follow. "In the future" counts timestamps after --now.

    The compaction potential is the share of a partition's data records a compaction of its
    whole log would remove at --now: keyless records, records whose key appears again later,
    tombstones past their delete horizon and records of aborted transactions (transaction
    markers and the cleaner's bounds are not counted; see docs/stats.md). The what-if sizes
    compress a sample of batches with gzip, snappy, lz4 and zstd (levels 1, 3, 9, 19), and
    time it.

    Output: tables and block-character charts on stdout, or one "stats" object per partition
    and one for the total with --format jsonl; --html FILE writes a report to attach to a
    ticket.

    Exit status: 0 done (problems in the data are listed, not fatal), 3 a PATH holds no
    partition or cannot be read.
    """
    out = settings.output(fmt)
    warn_if_a_broker_runs(out, paths)
    warn_if_not_live_skipped(out, paths)
    clock = now if now is not None else int(time.time() * 1000)
    found = lib.targets(list(paths), topics, remote)
    for t in found:
        for note in t.notes:
            out.warn(f"{t.display}: {note}")
    if not found:
        raise InputError(
            "no partition of the topics named", path=" ".join(paths), code=Code.NO_KAFKA_FILES
        )
    parts: list[lib.PartitionStats] = []
    meta = Path(metadata_dir) if metadata_dir is not None else None
    inputs = PlanInputs(ConfigSource(), now=clock, metadata_dir=meta, given=log_dirs_named(paths))
    with out.progress(sum(t.size for t in found), "stats", records=True) as bar:
        options = lib.StatsOptions(
            now=clock, exact_keys=exact_keys, sample_bytes=sample, ctx=ReadContext.of(limits, bar)
        )
        # the replays --remote-storage made already, else the host's for the remote tiers
        tiers = remote.tiers if remote is not None else TierCache(inputs.given)
        for t, st in zip(found, lib.collect(found, options, jobs=jobs), strict=True):
            _cleanup_policy(st, inputs)
            lib.attach_remote_tier(st, t, tiers)
            parts.append(st)
            if fmt != "text":
                st.sample = st.sample if sample else []
                out.emit(st.as_obj())
    tot = lib.total(parts, " ".join(paths))
    if len(parts) == 1:
        tot.topic, tot.partition = parts[0].topic, parts[0].partition
        tot.cleanup_policy = parts[0].cleanup_policy
        tot.cleanup_policy_source = parts[0].cleanup_policy_source
    what_if: dict[str, Any] | None = None
    if sample:
        with out.status("compressing the sample with every codec"):
            what_if = lib.what_if(tot, sample)
    total_obj = tot.as_obj("total", what_if)
    if fmt != "text":
        out.emit(total_obj)
    else:
        _text(out, total_obj, [p.as_obj() for p in parts], what_if, per_partition)
    if html_file is not None:
        title = (
            "klogtool stats: "
            + " ".join(paths)
            + (f" (topic {', '.join(topics)})" if topics else "")
        )
        groups = None
        if any(p.topic == CONSUMER_OFFSETS for p in parts):  # where the groups stood
            found_groups = consumer_groups(list(paths), GroupOptions(ReadContext.of(limits)))
            groups = [found_groups.offset_obj(g, c) for g in found_groups.groups
                      for c in offsets_of(g)]  # fmt: skip
        page = render(
            total_obj,
            [p.as_obj() for p in parts],
            what_if,
            groups=groups,
            title=title,
            generated=f"generated {iso(int(time.time() * 1000))} for now = {iso(clock)} "
            f"by klogtool stats",
        )
        with open(html_file, "w", encoding="utf-8") as f:
            f.write(page)
        out.info(f"wrote {html_file}")
    out.close()


def _text(
    out: Output,
    t: events.StatsStats,
    parts: list[events.StatsStats],
    what_if: Any,
    per_partition: bool,
) -> None:
    v, s, tm, p, k = t["volume"], t["sizes"], t["time"], t["producers"], t["keys"]
    comp = k["compaction"]
    for problem in t["problems"]:
        out.warn(problem)
    approx = "" if k["distinct_exact"] else "≈"
    out.table(
        f"klogtool stats: {t['partitions']:,} partition" + ("" if t["partitions"] == 1 else "s"),
        ["volume", "value"],
        [
            ["records", f"{v['records']:,}"],
            ["batches", f"{v['batches']:,}"],
            ["bytes on disk", f"{v['bytes_on_disk']:,} ({human_bytes(v['bytes_on_disk'])})"],
            [
                "bytes uncompressed",
                f"{v['bytes_uncompressed']:,} ({human_bytes(v['bytes_uncompressed'])})",
            ],
            ["compression ratio", f"{v['compression_ratio'] or 0:.2f}"],
            [
                "codecs",
                ", ".join(f"{n} {c['records']:,}" for n, c in v["codecs"].items()) or "-",
            ],
            ["control records", f"{v['control_records']:,}"],
        ],
        left=frozenset({"value"}),
    )
    rows = []
    for name in ("key", "value", "headers"):
        d = s[name]
        rows.append(
            [name]
            + [_n(d[x]) for x in ("count", "nulls", "min", "p50", "p90", "p99", "max", "mean")]
        )
    out.table(
        "sizes (bytes; percentiles from log2 buckets)",
        ["", "count", "null", "min", "p50", "p90", "p99", "max", "mean"],
        rows,
        # on a narrow terminal (large sizes): these go before the max and the p99
        lesser=("mean", "p90", "null", "min"),
    )
    out.table(
        "value sizes (records per log2 bucket)",
        ["bytes", "records", ""],
        _histogram_rows(s["value"]),
        left=frozenset({""}),
        lesser=_CHART,
    )
    spark = sparkline(tm["buckets"])
    out.table(
        "time",
        ["", "value"],
        [
            ["first timestamp", iso(tm["first_timestamp"])],
            ["last timestamp", iso(tm["last_timestamp"])],
            ["records over time", spark or "-"],
            ["bucket", f"{tm['bucket_ms']:,} ms"],
            ["out of order (below the previous record)", f"{tm['out_of_order']:,}"],
            ["in the future", f"{tm['future']:,}"],
            ["CreateTime / LogAppendTime", f"{tm['create_time']:,} / {tm['log_append_time']:,}"],
        ],
        left=frozenset({"value"}),
    )
    largest = p["largest"]
    top = max((x["records"] for x in largest), default=0)
    out.table(
        f"producers: {p['count']:,}{'+' if p['count_truncated'] else ''}, idempotent "
        f"{pct(p['idempotent_share'])}, transactional {pct(p['transactional_share'])}",
        ["producer", "records", ""],
        [[str(x["producer_id"]), f"{x['records']:,}", bar(x["records"], top)] for x in largest],
        left=frozenset({""}),
        lesser=_CHART,
    )
    err = k["distinct_standard_error"]
    out.table(
        "keys",
        ["", "value"],
        [
            [
                "distinct",
                f"{approx}{k['distinct']:,}"
                + ("" if err is None else f" (HyperLogLog, ±{100 * err:.2f} % std. error)"),
            ],
            ["keyless", pct(k["keyless_share"])],
            ["tombstones", pct(k["tombstone_share"])],
            [
                "compaction potential",
                f"{pct(comp['share'])} ({comp['removable']:,} records: {comp['superseded']:,} "
                f"superseded, {comp['keyless']:,} keyless, {comp['tombstones_expired']:,} "
                f"expired tombstones, {comp['aborted']:,} aborted)"
                + (" estimated" if comp["estimated"] else "")
                + _policy_note(comp),
            ],
        ],
        left=frozenset({"value"}),
    )
    heavy = k["heaviest"]
    top = max((x["records"] for x in heavy), default=0)
    out.table(
        "heaviest keys" + ("" if k["heaviest_exact"] else f" ({heavy_note(k)})"),
        ["key", "records", ""],
        [[display_key(x), heavy_count(x), bar(x["records"], top)] for x in heavy],
        left=frozenset({""}),
        lesser=_CHART,
    )
    if what_if is not None:
        rows_w = what_if["codecs"]
        smp = what_if["sample"]
        top = max((r["estimated_bytes"] for r in rows_w), default=0)
        out.table(
            f"what if: each codec (sample of {smp['batches']:,} batches, "
            f"{human_bytes(smp['bytes'])})",
            ["codec", "ratio", "seconds", "estimated size", ""],
            [
                [
                    r["codec"],
                    f"{r['ratio']:.2f}",
                    f"{r['seconds']:.3f}",
                    human_bytes(r["estimated_bytes"]) if not r["error"] else r["error"],
                    bar(r["estimated_bytes"], top, 24),
                ]
                for r in rows_w
            ],
            left=frozenset({""}),
            lesser=(*_CHART, "seconds"),
        )
    tiered = [(o["path"], o["remote_tier"]) for o in parts if "remote_tier" in o]
    if tiered:
        out.table(
            "remote tiers",
            REMOTE_TIER_COLUMNS,
            [remote_tier_row(path, t) for path, t in tiered],
            left=frozenset({"between", "look at"}),
            lesser=("look at", "uploaded to"),
        )
    if per_partition and len(parts) > 1:
        out.table(
            "partitions",
            ["partition", "records", "bytes", "distinct keys", "compaction"],
            [
                [
                    _with_state(o["path"]),
                    f"{o['volume']['records']:,}",
                    f"{o['volume']['bytes_on_disk']:,}",
                    ("" if o["keys"]["distinct_exact"] else "≈") + f"{o['keys']['distinct']:,}",
                    pct(o["keys"]["compaction"]["share"]),
                ]
                for o in parts
            ],
            # the partition (the row's name) is never left out: it wraps
            lesser=("compaction", "distinct keys"),
        )


def _histogram_rows(hist: dict[str, Any]) -> list[list[str]]:
    buckets = hist["buckets"]
    top = max((b["count"] for b in buckets), default=0)
    return [
        [f"{b['from']:,}..{b['to']:,}", f"{b['count']:,}", bar(b["count"], top)] for b in buckets
    ]


def _n(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:,.1f}"
    return f"{int(x):,}"


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "What is in a partition; one topic of a log dir as a report for a ticket:",
        [
            "klogtool stats /var/lib/kafka/data/orders-3",
            "klogtool stats --topic orders --html orders.html /var/lib/kafka/data",
        ],
    ),
    (
        "Every partition as JSON Lines (one object per partition, then the total):",
        ["klogtool stats --format jsonl /var/lib/kafka/data > stats.jsonl"],
    ),
]


def _with_state(path: str) -> str:
    """A partition's path, with what the broker's suffix says of a -delete/-future/-stray dir."""
    state = layout.partition_dir_state(Path(path).name)
    return path if state is None else f"{path} ({layout.DIR_STATES[state]})"


def _cleanup_policy(st: lib.PartitionStats, inputs: PlanInputs) -> None:
    """The topic's cleanup.policy from the host's KRaft metadata log (or Kafka's default, said
    to be assumed where there is none): the compaction potential means little for a topic the
    broker never compacts."""
    part = storage.as_path(st.path) if st.topic is not None else None  # a URI stays one
    (policy,) = inputs.explained(st.topic, part, ["cleanup.policy"])
    st.cleanup_policy = str(policy["value"])
    st.cleanup_policy_source = str(policy["source"])


def _policy_note(comp: dict[str, Any]) -> str:
    """``; cleanup.policy=delete (assumed): never compacted`` after the compaction potential."""
    policy = comp.get("cleanup_policy")
    if policy is None:
        return ""
    assumed = " (assumed)" if "assumed" in (comp.get("cleanup_policy_source") or "") else ""
    never = "" if "compact" in policy else ": the broker never compacts this topic"
    return f"; cleanup.policy={policy}{assumed}{never}"

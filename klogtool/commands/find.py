"""``klogtool find``: records across segments, partitions and log dirs (the offline kcat)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from klogtool.commands._options import (
    confluent_notice,
    confluent_schemas,
    format_option,
    internal_decoder_option,
    jobs_option,
    paths_argument,
    payload_decoder_options,
    read_limits_option,
    record_filter_options,
    remote_storage_options,
    warn_if_a_broker_runs,
    warn_if_not_live_skipped,
)
from klogtool.commands.dump_segments import KafkaRenderer
from klogtool.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK
from klogtool.formats import ReadLimits
from klogtool.log.context import ReadContext
from klogtool.log.read.dumper import DumpOptions
from klogtool.log.read.finder import Finder, FindObject, FindOptions, resolve_targets
from klogtool.log.record_filter import RecordFilter
from klogtool.output import Output, diagnostic_line, plural, render_text

if TYPE_CHECKING:
    from klogtool.cli import Settings
    from klogtool.log.remote_layouts import TieredReads


@click.command("find")
@paths_argument
@record_filter_options
@click.option(
    "--newest-first/--oldest-first",
    default=False,
    show_default=True,
    help="Within each partition, the newest offsets first.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    metavar="N",
    help="Stop after N records.",
)
@click.option(
    "--largest",
    type=click.IntRange(min=1),
    metavar="N",
    help="Only the N largest matching records (bytes of key, value and headers), largest "
    "first: what to chase after a RecordTooLargeException. Memory holds N records.",
)
@click.option(
    "--merge",
    is_flag=True,
    help="Read the partitions side by side and print their records in timestamp order (a "
    "streaming merge; each partition keeps its own order where its timestamps go back).",
)
@click.option(
    "--scan",
    is_flag=True,
    help="Ignore .index and .timeindex: walk every batch header (brute force).",
)
@click.option(
    "--print-data/--no-print-data",
    default=True,
    help="Show keys, values and header values, or only their sizes [default: --print-data].",
)
@payload_decoder_options
@internal_decoder_option
@format_option("kafka")
@read_limits_option
@jobs_option
@remote_storage_options
@click.pass_obj
def command(
    settings: Settings,
    paths: tuple[str, ...],
    where: RecordFilter,
    newest_first: bool,
    limit: int | None,
    largest: int | None,
    merge: bool,
    scan: bool,
    print_data: bool,
    key_decoder: str | None,
    value_decoder: str | None,
    schemas: str | None,
    decoder: str,
    fmt: str,
    limits: ReadLimits,
    jobs: int,
    remote: TieredReads | None,
) -> None:
    """Find records across segments, partitions or whole log dirs: the offline kcat.

    PATH is a .log segment, a partition directory or a log directory. Records are selected by
    time, offsets, key, value, headers, producer id, transactional state and control-ness (all
    given filters must match) and printed as dump-segments prints them, with their topic,
    partition and segment: --format text one line per record, jsonl/json record objects,
    kafka the kafka-dump-log.sh lines (each segment's and batch's line before its records).

    --from-time seeks the way the broker answers offsetsForTimes: segments whose largest
    timestamp (the last .timeindex entry) is earlier are skipped, and the walk starts at the
    batch the .timeindex and .index point at. Where an index is missing, fails the broker's
    sanity check or points at the wrong place, the segment is scanned from its start and a
    warning says so. Problems met on the way are reported on stderr.

    Partitions are searched by --jobs processes; the output is in PATH order either way.
    --merge reads them side by side in one process instead (no --jobs), all their records in
    timestamp order (newest first with --newest-first). --largest N prints only the N
    largest matches, largest first, after the whole search; --min-size and --max-size
    select records by the same size (the bytes of key, value and headers).

    Exit status: 0 when records were found; 1 when none were; 3 when an input cannot be read
    (missing, not a Kafka file) or a segment is damaged where records could be (a corrupt
    batch or tail, a CRC mismatch; a torn tail, as a crash leaves it, is only a warning).
    """
    if fmt == "kafka" and (merge or largest):
        raise click.UsageError("--merge and --largest print records only: not --format kafka")
    if largest and limit:
        raise click.UsageError("--largest N keeps the N largest of all matches: no --limit")
    default = "base64" if fmt in ("json", "jsonl") else "utf8"
    kd = key_decoder or default
    vd = value_decoder or kd
    registry = confluent_schemas(paths, schemas, (kd, vd), limits)
    out = settings.output("text" if fmt == "kafka" else fmt)
    warn_if_a_broker_runs(out, paths)
    warn_if_not_live_skipped(out, paths)
    confluent_notice(out, registry, (kd, vd))
    renderer = KafkaRenderer(out) if fmt == "kafka" else None
    targets = resolve_targets(list(paths), remote)
    for t in targets:
        for note in t.notes:
            out.warn(f"{t.display}: {note}")
    # a bar only when the records go to a file or a pipe: on a terminal they are the progress
    total = 0 if out.data_is_terminal else sum(t.size for t in targets)
    with out.progress(total, "finding", records=True) as bar:
        options = FindOptions(
            where=where,
            newest_first=newest_first,
            limit=limit,
            largest=largest,
            merge=merge,
            use_indexes=not scan,
            dump=DumpOptions(
                deep=True,
                print_data=print_data,
                key_decoder=kd,
                value_decoder=vd,
                decoder=decoder,
                kafka_text=fmt == "kafka",
                ctx=ReadContext.of(limits, bar),
                schemas=registry,
            ),
        )
        finder = Finder(options)
        for obj in finder.run(targets, jobs=jobs):
            _show(obj, out, fmt, renderer)
    out.close()
    c = finder.counts
    searched = (
        f"{plural(c.partitions, 'partition')}, "
        f"{plural(c.segments, 'segment')} ({c.segments_skipped:,} skipped by index or offsets, "
        f"{c.segments_scanned:,} scanned without an index), "
        f"{plural(c.batches, 'batch header')} read, {plural(c.records, 'record')} decoded"
    )
    if c.matches or c.errors:  # errors: said already, each on its line
        out.info(f"{plural(c.matches, 'record')} found; {searched}")
    elif not c.segments:  # a KRaft metadata log of snapshots only, say: nothing was read
        out.note(f"no record matched: no segments to search in {plural(c.partitions, 'partition')}")
    else:
        out.note(f"no record matched; {searched}")
    if c.errors:
        code = EXIT_BAD_INPUT
    else:
        code = EXIT_OK if c.matches else EXIT_FINDINGS
    click.get_current_context().exit(code)


def _show(obj: FindObject, out: Output, fmt: str, renderer: KafkaRenderer | None) -> None:
    if obj["type"] == "finding":
        if obj["severity"] == "error" or out.verbosity >= 0:
            out.stderr_line(diagnostic_line(obj))
    elif obj["type"] == "summary":
        return
    elif renderer is not None:
        renderer.render(obj)
    elif obj["type"] != "record":
        return
    elif fmt == "text":
        where = obj["segment"] if obj["topic"] is None else f"{obj['topic']}-{obj['partition']}"
        txn = f"  transaction {obj['transaction']}" if "transaction" in obj else ""
        out.line(f"{where}{render_text(obj)}{txn}")
    else:
        out.emit(obj)


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Records of one partition written since a moment, oldest first, at most 20:",
        [
            "klogtool find --from-time 2024-05-01T12:00:00Z --limit 20 /data/kafka/orders-3",
        ],
    ),
    (
        "One key across a whole log dir as JSON Lines; the last 5 records with a header:",
        [
            "klogtool find --format jsonl --key customer-42 /var/lib/kafka/data",
            "klogtool find --newest-first --limit 5 --header trace-id=abc123 orders-3",
        ],
    ),
    (
        "The records of aborted transactions, and the transaction markers, in kafka-dump-log's "
        "lines:",
        [
            "klogtool find --transaction aborted orders-3",
            "klogtool find --control --format kafka orders-3",
        ],
    ),
    (
        "Offsets 1000 to 1999 whose value matches a pattern, with no index trusted:",
        [
            "klogtool find --offsets 1000:1999 --value-regex 'status\":\"FAILED' --scan orders-3",
        ],
    ),
    (
        "Values in Confluent's wire format (Avro, Protobuf, JSON Schema) as JSON, with the "
        "schemas of the _schemas topic in the same log dir, or of a file of schema objects:",
        [
            "klogtool find --value-decoder confluent --key 'cust-42' /var/lib/kafka/data",
            "klogtool find --value-decoder confluent --schemas schemas.jsonl orders-3",
        ],
    ),
    (
        "The 10 largest records of a topic (after a RecordTooLargeException), and every "
        "partition's records of the last hour merged in time order:",
        [
            "klogtool find --largest 10 --min-size 512K /var/lib/kafka/data",
            "klogtool find --merge --from-time 2024-05-01T11:00:00Z orders-0 orders-1 orders-2",
        ],
    ),
]

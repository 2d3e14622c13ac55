"""``klogtool export``: segments to Parquet or JSON Lines, through Spark or a process pool."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from klogtool.commands._options import (
    chosen_engine,
    confluent_notice,
    confluent_schemas,
    dry_run_option,
    format_option,
    paths_argument,
    read_limits_option,
    schemas_option,
    size_option,
    spark_options,
    warn_if_a_broker_runs,
    warn_if_not_live_skipped,
    where_option,
)
from klogtool.commands._spark import (
    check_target,
    pyarrow_without_pandas,
    require_pyarrow,
    spark_session,
)
from klogtool.errors import EXIT_FINDINGS, EXIT_OK
from klogtool.formats import ReadLimits
from klogtool.log.context import ReadContext
from klogtool.log.export.arrow_reader import CorruptSegmentError
from klogtool.log.export.exporter import (
    FORMATS,
    PARTITION_COLUMNS,
    Destination,
    LocalJob,
    OutputCount,
    check_local_dest,
    count_output,
    export_local,
    local_min_splits,
    split_obj,
    summary_obj,
)
from klogtool.log.export.spec import LEVELS, ON_CORRUPT, PAYLOAD_DECODERS, ReadOptions
from klogtool.log.record_filter import parse_where
from klogtool.log.splits import list_segments, pack, where_prune
from klogtool.output import Output, label

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.cli import Settings


def _partition_by(_c: click.Context, _p: click.Parameter, value: str) -> tuple[str, ...]:
    if value in ("", "none"):
        return ()
    cols = tuple(c.strip() for c in value.split(","))
    bad = [c for c in cols if c not in PARTITION_COLUMNS] or len(set(cols)) != len(cols)
    if bad:
        raise click.BadParameter("expected topic, partition or topic,partition (or none)")
    return cols


@click.command("export")
@paths_argument
@click.option(
    "--to",
    "to_dest",
    type=(click.Choice(FORMATS), str),
    required=True,
    metavar="parquet|jsonl DEST",
    help="Output format and destination directory: a local path; s3://, gs://, abfs://, "
    "hdfs:// (each task writes its files there, _SUCCESS last); or, with Spark, any URI "
    "its executors write to (s3a://...).",
)
@spark_options(
    "spark: a Spark job (local[*] unless --master/--remote); local: the same reader in a "
    "process pool with pyarrow's writers, no JVM (small jobs).",
)
@click.option(
    "--partition-by",
    default="none",
    show_default=True,
    callback=_partition_by,
    metavar="COLUMNS",
    help="Hive-style directories: topic, partition or topic,partition.",
)
@click.option(
    "--key-decoder",
    type=click.Choice(PAYLOAD_DECODERS),
    default=None,
    help="How keys are written: binary bytes, or text (utf8, base64, hex); none leaves "
    "them out. JSON has no bytes: binary is written as base64 there "
    "[default: binary for parquet, base64 for jsonl].",
)
@click.option(
    "--value-decoder",
    type=click.Choice(PAYLOAD_DECODERS),
    default=None,
    help="How values and header values are written [default: as --key-decoder]; "
    "confluent writes the raw bytes and beside them value_decoded (key_decoded for "
    "--key-decoder confluent): the payload decoded from Confluent's wire format, as JSON "
    "text (--engine local); internal does the same for the internal topics "
    "(__consumer_offsets, __transaction_state, __share_group_state, __cluster_metadata): "
    "each record decoded as kafka-dump-log decodes it.",
)
@schemas_option
@click.option(
    "--level",
    type=click.Choice(LEVELS),
    default="records",
    show_default=True,
    help="One row per record, or one row per batch (headers only, nothing decompressed).",
)
@where_option
@click.option(
    "--verify/--no-verify",
    default=True,
    help="Check batch CRCs while reading (the default), or trust them.",
)
@click.option(
    "--on-corrupt",
    type=click.Choice(ON_CORRUPT),
    default="fail",
    show_default=True,
    help="Unreadable data (CRC mismatch, undecodable records, torn or garbage tail): fail "
    "(exit 3, nothing written), skip it, or report it as rows with error_code and "
    "error_message (exit 1 when there are any).",
)
@size_option(
    "--target-split-bytes",
    default="128M",
    help="Work per task: small segments are packed together, large ones cut at batch boundaries.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes for --engine local [default: the number of CPUs].",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace a destination that is not empty (only once the export has succeeded).",
)
@dry_run_option
@format_option()
@read_limits_option
@click.pass_obj
def command(
    settings: Settings,
    paths: tuple[str, ...],
    to_dest: tuple[str, str],
    engine: str | None,
    master: str | None,
    remote: str | None,
    spark_conf: dict[str, str],
    partition_by: tuple[str, ...],
    key_decoder: str | None,
    value_decoder: str | None,
    schemas: str | None,
    level: str,
    where: str | None,
    verify: bool,
    on_corrupt: str,
    target_split_bytes: int,
    jobs: int | None,
    overwrite: bool,
    dry_run: bool,
    fmt: str,
    limits: ReadLimits,
) -> None:
    """Export the records (or batches) of Kafka segments to Parquet or JSON Lines files.

    PATH is a .log segment, a partition directory or a log directory. The rows are those of
    the kafka-segments Spark data source: Spark's Kafka source columns first (key, value,
    topic, partition, offset, timestamp, timestampType, headers), then klogtool's (segment,
    position, magic, compression, producer_id, producer_epoch, sequence,
    partition_leader_epoch, is_transactional, is_control). Parquet timestamps are INT64
    microseconds (UTC); JSON Lines carry them as milliseconds, payloads as base64 text.

    The files appear in DEST only when the whole export succeeded: a local DEST is written
    in a hidden temporary beside it (.DEST.klogtool-tmp-XXXXXXXX), renamed into place at the
    end. What an export killed mid-run left there is removed by the next export of the same
    DEST, which says so (a temporary an export still running holds is kept). A DEST that is
    not empty is refused unless --overwrite.

    Exit status: 0 written; 1 written, but --on-corrupt report wrote error rows; 3 an input
    cannot be read; 4 the destination is refused.
    """
    to, dest = to_dest
    check_target(master, remote)
    engine = chosen_engine(engine, master, remote, spark_conf)
    default = "binary" if to == "parquet" else "base64"
    kd = key_decoder or default
    vd = value_decoder or (key_decoder if key_decoder is not None else default)
    if to == "jsonl":  # JSON has no bytes: raw payloads become base64 text
        kd, vd = ("base64" if d == "binary" else d for d in (kd, vd))
    if where is not None and level != "records":
        raise click.BadOptionUsage("where", "--where selects records: it needs --level records")
    if "confluent" in (kd, vd) and engine != "local":
        raise click.UsageError("--key-decoder/--value-decoder confluent runs with --engine local")
    registry = confluent_schemas(paths, schemas, (kd, vd), limits)
    read = ReadOptions(
        where=parse_where(where) if where is not None else None,
        level=level,
        verify=verify,
        ctx=ReadContext.of(limits),
        on_corrupt=on_corrupt,
        key_decoder=kd,
        value_decoder=vd,
        schemas=registry,
    )
    out = settings.output(fmt)
    warn_if_a_broker_runs(out, paths)
    warn_if_not_live_skipped(out, paths)
    confluent_notice(out, registry, (kd, vd))
    segments = list_segments(list(paths))
    input_bytes = sum(s.size for s in segments)
    destination = Destination(
        dest, overwrite=overwrite, inputs=list(paths), direct=remote is not None
    )
    ncpu = os.cpu_count() or 1
    if dry_run:
        prune = where_prune(read.where)
        splits = pack(
            [s for s in segments if s.size > 0 and prune.keeps(s)],
            target_split_bytes=target_split_bytes,
            min_splits=local_min_splits(jobs or ncpu) if engine == "local" else 1,
        )
        for s in splits:
            out.emit(split_obj(s))
        plan = summary_obj(
            destination=dest,
            to=to,
            written=None,
            rows=None,
            report=False,
            segments=len(segments),
            input_bytes=input_bytes,
            splits=len(splits),
            seconds=0.0,
        )
        _summary(out, fmt, plan, planned=True)
        out.close()
        return
    require_pyarrow()
    destination.prepare()
    for path, size in destination.removed:
        out.warn(f"removed {path} ({size:,} bytes): what an interrupted export of {dest} left")
    started = time.monotonic()
    nsplits = 0
    rows_remote: int | None = None
    counted: OutputCount | None = None
    try:
        with out.progress(input_bytes, "exporting") as bar:
            heard = replace(read, ctx=read.ctx.reporting_to(bar))  # the bar hears of the splits
            job = LocalJob(to, destination.work, heard, partition_by, tag=destination.tag or None)
            if engine == "local":
                check_local_dest(destination)
                pyarrow_without_pandas()
                try:
                    done, written = export_local(
                        list(paths),
                        job,
                        jobs=jobs or ncpu,
                        target_split_bytes=target_split_bytes,
                    )
                except CorruptSegmentError as e:
                    raise e.to_input_error() from None
                nsplits = len(done)
                counted = written if destination.tasks_write else None
            else:
                with spark_session(master, remote, spark_conf, settings.verbosity) as (spark, sj):
                    # Spark schedules the splits and its tasks write as the local engine does,
                    # but over Spark Connect (no RDDs) and to a URI only Spark writes (s3a://)
                    if destination.tasks_write or (destination.local and remote is None):
                        nsplits, counted = sj.export_tasks(
                            spark,
                            list(paths),
                            job,
                            target_split_bytes=target_split_bytes,
                            total_bytes=input_bytes,
                            progress=bar.advance,
                        )
                    else:
                        nsplits, rows_remote = _through_the_source(
                            spark,
                            sj,
                            list(paths),
                            destination,
                            job,
                            where=where,
                            target_split_bytes=target_split_bytes,
                            overwrite=overwrite,
                            total_bytes=input_bytes,
                            progress=bar.advance,
                        )
        if destination.local:
            counted = count_output(destination.work, to, report=on_corrupt == "report")
        destination.commit()
    except BaseException:
        destination.abort()
        raise
    seconds = time.monotonic() - started
    error_rows = counted.error_rows if counted is not None else 0
    summary = summary_obj(
        destination=dest,
        to=to,
        written=counted,
        rows=counted.rows if counted is not None else rows_remote,
        report=on_corrupt == "report",
        segments=len(segments),
        input_bytes=input_bytes,
        splits=nsplits,
        seconds=seconds,
    )
    _summary(out, fmt, summary, planned=False)
    out.close()
    click.get_current_context().exit(EXIT_FINDINGS if error_rows else EXIT_OK)


def _through_the_source(
    spark: Any,
    sj: Any,
    paths: list[str],
    destination: Destination,
    job: LocalJob,
    *,
    where: str | None,
    target_split_bytes: int,
    overwrite: bool,
    total_bytes: int,
    progress: Callable[[int], None],
) -> tuple[int, int | None]:
    """Export through the kafka-segments data source and Spark's writer; the tasks, and the
    rows Spark counts in a DEST it wrote on its own file system (else None)."""
    read = job.read
    options = {
        "level": read.level,
        "verify": str(read.verify).lower(),
        "maxBatchBytes": str(read.ctx.limits.max_batch_bytes),
        "onCorrupt": read.on_corrupt,
        "keyDecoder": read.key_decoder,
        "valueDecoder": read.value_decoder,
        "targetSplitBytes": str(target_split_bytes),
    }
    if where is not None:
        options["where"] = where
    nsplits: int = sj.export(
        spark,
        paths,
        destination.work,
        to=job.to,
        options=options,
        partition_by=job.partition_by,
        overwrite=overwrite and not destination.local,
        total_bytes=total_bytes,
        progress=progress,
    )
    if destination.local:
        sj.drop_checksums(destination.work)
        return nsplits, None
    reader = spark.read.parquet if job.to == "parquet" else spark.read.json
    return nsplits, int(reader(destination.final).count())


def _summary(out: Output, fmt: str, obj: events.ExportSummary, *, planned: bool) -> None:
    if fmt != "text":
        out.emit(obj)
        return
    title = "klogtool export: plan (nothing written)" if planned else "klogtool export"
    shown = {k: v for k, v in obj.items() if k != "type" and v is not None}
    out.table(
        title,
        ["", "value"],
        [[label(k), f"{v:,}" if isinstance(v, int) else str(v)] for k, v in shown.items()],
    )


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "A log dir to Parquet (a process pool, no JVM), or to JSON Lines by topic and partition:",
        [
            "klogtool export /var/lib/kafka/data --to parquet /backup/kafka-parquet",
            "klogtool export orders-0 orders-1 --to jsonl out/ --partition-by topic,partition",
        ],
    ),
    (
        "The same on a Spark cluster (paths every node sees):",
        [
            "klogtool export /mnt/kafka --to parquet hdfs:///backup/kafka --master yarn",
        ],
    ),
    (
        "Confluent-framed values decoded to JSON text in a value_decoded column, beside the "
        "raw bytes (the schemas from the _schemas topic in the same log dir):",
        [
            "klogtool export orders-0 --to parquet out/ --value-decoder confluent",
        ],
    ),
]

"""``klogtool verify``: check files, partition dirs and log dirs; exit 1 on errors."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

import click

from klogtool.codes import Code
from klogtool.commands._options import (
    chosen_engine,
    format_option,
    jobs_for,
    paths_argument,
    read_limits_option,
    sized_jobs_option,
    spark_options,
    warn_if_a_broker_runs,
)
from klogtool.commands._spark import check_target, spark_session
from klogtool.errors import EXIT_FINDINGS, EXIT_OK, InputError
from klogtool.formats import ReadLimits
from klogtool.log.check.verifier import Verifier
from klogtool.log.context import ReadContext
from klogtool.log.files import total_log_bytes
from klogtool.log.findings import Finding

if TYPE_CHECKING:
    from klogtool.cli import Settings


if TYPE_CHECKING:
    from klogtool.log.check.fleet_verify import FleetVerifier


@click.command("verify")
@paths_argument
@click.option(
    "--deep",
    is_flag=True,
    help="Also decompress and decode every record (offsets, timestamps, inner CRCs).",
)
@spark_options(
    "local: this process; spark: the same verifier on Spark, one task per group of "
    "partitions (local[*] unless --master/--remote), findings printed the same way.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Warnings fail the run too (exit 1), for CI jobs that keep fixture logs spotless.",
)
@click.option(
    "--ignore",
    "ignored_codes",
    multiple=True,
    metavar="CODE",
    callback=lambda _ctx, _param, value: _known_codes(value),
    help="Neither print nor count findings with this code (an expected one, such as "
    "index-missing on fixture logs); repeatable. The summary counts them as ignored.",
)
@format_option()
@read_limits_option
@sized_jobs_option("Worker processes for the partitions of a log dir")
@click.pass_obj
def command(
    settings: Settings,
    paths: tuple[str, ...],
    deep: bool,
    engine: str | None,
    master: str | None,
    remote: str | None,
    spark_conf: dict[str, str],
    strict: bool,
    ignored_codes: tuple[str, ...],
    fmt: str,
    limits: ReadLimits,
    jobs: int | None,
) -> None:
    """Check Kafka log files the way a demanding broker would.

    Per batch: size, magic, CRC, offsets, record counts (and with --deep every record and
    timestamp). Per segment: torn tails, zero fill, .index/.timeindex/.txnindex against the
    log. Per partition: segment continuity, leader-epoch-checkpoint, producer snapshots,
    leftover .cleaned/.swap/.deleted files, partition.metadata. Per log dir: the checkpoint
    files against the partitions.

    Indexes written by live appends differ from rebuilt ones and are accepted when every
    lookup through them is correct; a missing index is a warning (the broker rebuilds it).

    With the global -q only errors are printed (no summary); warnings are still counted.
    The partitions of a log dir are verified by --jobs processes; the output is in partition
    order either way.

    Exit status: 0 nothing wrong (warnings allowed, unless --strict), 1 errors found (or
    warnings, with --strict), 3 an input cannot be read.
    """
    check_target(master, remote)
    engine = chosen_engine(engine, master, remote, spark_conf)
    out = settings.output(fmt)
    warn_if_a_broker_runs(out, paths)
    verifier: Verifier | FleetVerifier
    not_kafka: Finding | None = None  # a file that is not a Kafka file at all: exit 3
    input_bytes = total_log_bytes(list(paths))
    ignored: dict[str, int] = {}  # severity -> findings left out by --ignore
    with ExitStack() as stack, out.progress(input_bytes, "verifying") as bar:
        ctx = ReadContext.of(limits, bar)
        if engine == "spark":
            # the fleet verifier and the Spark reader load only when Spark runs (start-up time)
            from klogtool.log.splits import DEFAULT_TARGET_SPLIT_BYTES

            spark, spark_jobs = stack.enter_context(
                spark_session(master, remote, spark_conf, settings.verbosity)
            )
            verifier = spark_jobs.spark_verifier(
                spark,
                ctx,
                deep=deep,
                target_split_bytes=DEFAULT_TARGET_SPLIT_BYTES,
            )
        else:
            verifier = Verifier(ctx, deep=deep, jobs=jobs_for(jobs, input_bytes))
        for f in verifier.verify(list(paths)):
            if f.code in ignored_codes:
                ignored[f.severity] = ignored.get(f.severity, 0) + 1
                continue
            if f.code == Code.NOT_A_LOG:
                not_kafka = not_kafka or f
                if fmt == "text":
                    continue  # said once, as the one-line error at the end
            if fmt == "text":
                if f.severity != "error" and settings.verbosity < 0:
                    continue  # -q: errors only
                out.line(
                    f"{f.severity}: {f.code}: {f.path}"
                    + (f":{f.position}" if f.position is not None else "")
                    + (f" (offset {f.offset})" if f.offset is not None else "")
                    + f": {f.message}"
                )
            else:
                out.emit(f.as_obj())
    st = verifier.stats
    if st.files == 0:  # never "OK" about nothing (the local verifier says it per PATH)
        raise InputError(
            "no Kafka files in it: nothing was checked",
            path=" ".join(paths),
            code=Code.NO_KAFKA_FILES,
        )
    summary = st.as_obj(deep=deep, ignored=ignored if ignored_codes else None)
    failed = summary["errors"] > 0 or (strict and summary["warnings"] > 0)
    if fmt != "text":
        out.emit(summary)
    elif settings.verbosity >= 0:  # -q: the errors, and nothing else
        verdict = "OK"
        if failed:
            verdict = "errors found" if summary["errors"] else "warnings found (--strict)"
        out.table(
            f"klogtool verify: {verdict}",
            ["checked", "count"],
            [[k, f"{v:,}"] for k, v in summary.items() if k != "type"],
        )
    out.close()
    if not_kafka is not None:
        raise InputError(
            not_kafka.message, path=not_kafka.path, position=not_kafka.position, code=Code.NOT_A_LOG
        )
    click.get_current_context().exit(EXIT_FINDINGS if failed else EXIT_OK)


def _known_codes(value: tuple[str, ...]) -> tuple[str, ...]:
    """--ignore's codes, each one the registry knows (a typo would silently ignore nothing)."""
    known = {c.value for c in Code}
    for code in value:
        if code not in known:
            raise click.BadParameter(
                f"{code!r} is not a finding code (docs/codes.md lists them)", param_hint="--ignore"
            )
    return value


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Check a whole log dir; only errors, then every record too:",
        [
            "klogtool verify /var/lib/kafka/data",
            "klogtool -q verify --deep /var/lib/kafka/data",
        ],
    ),
    (
        "Findings as JSON Lines for a CI job, or on a Spark cluster:",
        [
            "klogtool verify --format jsonl fixtures/logs/logdir > findings.jsonl",
            "klogtool verify --master spark://host:7077 /mnt/backup/kafka",
        ],
    ),
]

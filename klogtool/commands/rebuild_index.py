"""``klogtool rebuild-index``: rebuild (or --check) .index, .timeindex and .txnindex files."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from klogtool.codes import Code
from klogtool.commands._options import (
    index_interval_option,
    jobs_option,
    local_paths_argument,
    read_limits_option,
    writing_options,
)
from klogtool.errors import EXIT_FINDINGS, EXIT_OK, InputError
from klogtool.formats import ReadLimits
from klogtool.log import targets
from klogtool.log.atomic import FileOps
from klogtool.log.context import ReadContext
from klogtool.log.files import total_log_bytes
from klogtool.log.indexcheck import about_index
from klogtool.log.repair import rebuild
from klogtool.output import Output

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.cli import Settings
    from klogtool.commands._writing import WritingRun


@click.command("rebuild-index")
@local_paths_argument
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing: check the existing index files against the log and a rebuild.",
)
@index_interval_option
@jobs_option
@writing_options
@read_limits_option
@click.pass_obj
def command(
    settings: Settings,
    paths: tuple[str, ...],
    check: bool,
    index_interval_bytes: int,
    jobs: int,
    run: WritingRun,
    limits: ReadLimits,
) -> None:
    """Rebuild .index, .timeindex and .txnindex exactly as the broker's recovery does.

    PATH: a segment (its .log or an index file), a partition directory or a log directory.
    Offset-index entries (batch last offset, batch position) whenever more than
    --index-interval-bytes were written since the last entry; time-index entries of the
    running max timestamp, and the final one; aborted transactions with their last stable
    offsets, tracking the transactions open across the partition's segments. Batch headers
    only (plus the one record of each transaction marker), in parallel across segments.
    Files that would not change are not rewritten; every write is atomic. A segment whose
    log is damaged is skipped (truncate-recovery repairs it).

    --check changes nothing. An index file is bad when a lookup through it could skip
    records (an entry off a batch boundary, offsets or timestamps out of order, an entry
    past the log) or the broker's sanity check fails: the first bad entry is named and the
    exit status is 1. A valid index that differs from a rebuild (live appends write such
    indexes) is reported as different, exit status 0.

    Exit status: 0 done, 1 segments skipped (or --check found a bad index), 3 an input cannot
    be read, 4 a broker holds the log directory's lock (--force overrides).
    """
    out, dry_run = run.out, run.dry_run
    ops = FileOps(dry_run=dry_run or check)
    resolved = targets.resolve(list(paths), skip_not_live=True)
    verbose = settings.verbosity >= 1
    not_kafka: list[events.RebuildIndexFinding] = []  # not Kafka files at all: exit 3

    def emit(obj: events.Event) -> None:
        if obj["type"] == "finding" and obj["code"] == Code.NOT_A_LOG:
            not_kafka.append(obj)
            if out.fmt == "text":
                return  # said once, as the one-line error at the end
        render(obj)

    render = _text_emitter(out, verbose) if out.fmt == "text" else out.emit
    total = total_log_bytes(list(paths)) * (2 if check else 1)
    with out.progress(total, "checking indexes" if check else "rebuilding indexes") as bar:
        opts = rebuild.RebuildOptions(
            ctx=ReadContext.of(limits, bar),
            index_interval_bytes=index_interval_bytes,
            jobs=jobs,
            check=check,
            dry_run=dry_run,
            force=run.force,
        )
        stats = rebuild.run_rebuild(resolved, opts, ops, emit)
    if out.fmt == "text":
        title = "klogtool rebuild-index" + (
            " --check" if check else " (dry run: nothing changed)" if dry_run else ""
        )
        rows: list[tuple[str, int]] = [
            ("partitions", stats.partitions),
            ("segments", stats.segments),
            ("log bytes", stats.bytes),
        ]
        if check:
            rows += [
                ("index files as rebuilt", stats.files_unchanged),
                ("valid but different", stats.files_differing),
                ("bad", stats.files_bad),
            ]
        else:
            rows += [
                ("index files to write" if dry_run else "index files written", stats.files_written),
                ("index files unchanged", stats.files_unchanged),
                ("segments skipped", stats.segments_skipped),
            ]
        rows += [("errors", stats.errors), ("warnings", stats.warnings)]
        out.table(title, ["", "count"], [[k, f"{v:,}"] for k, v in rows])
    else:
        out.emit(stats.as_obj(check=check, dry_run=dry_run))
    out.close()
    if not_kafka:
        first = not_kafka[0]
        raise InputError(
            first["message"], path=first["path"], position=first["position"], code=Code.NOT_A_LOG
        )
    failed = stats.files_bad if check else stats.segments_skipped
    click.get_current_context().exit(EXIT_FINDINGS if failed or stats.errors else EXIT_OK)


def _text_emitter(out: Output, verbose: bool) -> events.Emit:
    def emit(obj: events.Event) -> None:
        if obj["type"] == "index_file":
            if obj["status"] == "unchanged" and not verbose:
                return
            was = obj["previous_entries"]
            out.line(
                f"{obj['status']}: {obj['path']} ({obj['entries']} "
                + ("entry" if obj["entries"] == 1 else "entries")
                + (f", was {was}" if was is not None and obj["status"] != "unchanged" else "")
                + ")"
            )
        elif obj["type"] == "index_check":
            status = obj["status"]
            if status in ("ok", "absent") and not verbose:
                return
            line = f"{status}: {obj['path']}"
            if status == "bad" and obj["first_bad_entry"] is not None:
                line += f": first bad entry {obj['first_bad_entry']}: {obj.get('message', '')}"
            elif status == "bad":
                line += f": {obj.get('message', '')}"
            elif status == "differs" and obj["first_difference"]:
                d = obj["first_difference"]
                line += (
                    f": valid, but differs from a rebuild from entry {d['entry']} "
                    f"(existing {_entry(d['existing'])}, rebuilt {_entry(d['rebuilt'])})"
                )
            elif status == "missing":
                line += (
                    ": no such file (the broker rebuilds a missing .index by recovering the "
                    "segment)"
                    if obj["path"].endswith(".index")
                    else ": no such file (the broker rebuilds it when it loads the segment)"
                )
            out.line(line)
        elif obj["type"] == "interrupted_operation":
            out.line(f"{obj['path']}: interrupted operation {obj['message']}")
        elif obj["type"] == "finding":
            if about_index(obj["code"]) and obj["severity"] == "error":
                return  # the index_check line names it
            where = obj["path"] + (f":{obj['position']}" if obj["position"] is not None else "")
            out.line(f"{obj['severity']}: {obj['code']}: {where}: {obj['message']}")
        else:
            out.emit(obj)

    return emit


def _entry(e: dict[str, int] | None) -> str:
    if e is None:
        return "none"
    return "(" + ", ".join(f"{k} {v}" for k, v in e.items()) + ")"


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Check every index against a rebuild, then rebuild one partition's on 8 cores:",
        [
            "klogtool rebuild-index --check /var/lib/kafka/data",
            "klogtool rebuild-index --jobs 8 /var/lib/kafka/data/orders-3",
        ],
    ),
]

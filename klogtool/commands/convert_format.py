"""``klogtool convert-format``: rewrite segments to another message format and/or codec."""

from __future__ import annotations

from pathlib import Path

import click

from klogtool.commands._options import (
    index_interval_option,
    local_paths,
    parse_size,
    read_limits_option,
    writing_options,
)
from klogtool.commands._writing import WritingRun
from klogtool.formats import CODEC_IDS, CODEC_NAMES, CODECS, ReadLimits
from klogtool.log.context import ReadContext
from klogtool.log.rewrite.converter import (
    COPY,
    ConversionPlan,
    Converted,
    ConvertOptions,
    LossyRefusal,
    NestedDestination,
    convert,
)
from klogtool.output import Output, label


@click.command("convert-format")
@click.argument("src", metavar="SRC", callback=local_paths)
@click.argument("dest", metavar="DEST", required=False, callback=local_paths)
@click.option(
    "--to-magic",
    type=click.IntRange(0, 2),
    default=2,
    show_default=True,
    help="Message format of the output: 0, 1 or 2.",
)
@click.option(
    "--compression",
    type=click.Choice(list(CODEC_NAMES.values())),
    default=None,
    help="Codec of every rewritten batch [default: keep each batch's codec].",
)
@click.option(
    "--compression-level",
    type=int,
    default=None,
    metavar="N",
    help="Codec level: "
    + ", ".join(f"{c.name} {c.levels[0]}..{c.levels[1]}" for c in CODECS.values() if c.levels)
    + " [default: Kafka's, "
    + ", ".join(f"{c.name} {c.default_level}" for c in CODECS.values() if c.levels)
    + "].",
)
@click.option(
    "--keep-batching",
    is_flag=True,
    help="One output batch per input batch (the default; uncompressed v0/v1 output always "
    "holds one record per message).",
)
@click.option(
    "--batch-bytes",
    metavar="SIZE",
    default=None,
    help="Re-batch records of batches without producer state into batches of about SIZE "
    "bytes (e.g. one-message-per-entry v0/v1 data into v2 batches).",
)
@click.option(
    "--in-place", is_flag=True, help="Rewrite SRC itself, atomically, instead of into DEST."
)
@click.option(
    "--allow-lossy",
    is_flag=True,
    help="Go ahead when the target format cannot hold everything (and report what was lost).",
)
@index_interval_option
@writing_options
@read_limits_option
def command(
    src: str,
    dest: str | None,
    to_magic: int,
    compression: str | None,
    compression_level: int | None,
    keep_batching: bool,
    batch_bytes: str | None,
    in_place: bool,
    allow_lossy: bool,
    index_interval_bytes: int,
    run: WritingRun,
    limits: ReadLimits,
) -> None:
    """Rewrite SRC to message format 0, 1 or 2 and/or another codec, keeping every offset.

    SRC is a .log segment, a partition directory or a log directory. The output goes to
    DEST, a new (or empty) directory that becomes the converted copy of SRC (for a segment:
    the directory that receives it), or with --in-place replaces SRC through the broker's
    .cleaned/.swap protocol. Every output segment gets a .index and .timeindex built by the
    broker's rule (and its .txnindex when it has aborted transactions);
    leader-epoch-checkpoint, partition.metadata and producer snapshots are carried over, and
    for a log directory meta.properties and the offset checkpoints.

    The broker's conversion rules apply: v0 records get timestamp -1 in v2, LogAppendTime
    stays LogAppendTime, producer ids, sequences and transactional/control flags are kept
    in v2. Batches already in the target form are copied byte for byte. Anything the target
    cannot hold - headers or transactional/control batches in v0/v1, timestamps in v0, zstd
    in v0/v1 - is refused (exit 4) with a count of what would be lost, unless
    --allow-lossy, which reports what was dropped.

    Exit status: 0 done, 2 bad options, 3 an input cannot be read (nothing is written), 4
    refused: lossy conversion, destination not empty, or a broker holds the log directory.
    """
    out, dry_run = run.out, run.dry_run
    if in_place == (dest is not None):
        raise click.UsageError("give either DEST or --in-place")
    if keep_batching and batch_bytes is not None:
        raise click.UsageError("--keep-batching and --batch-bytes exclude each other")
    target = CODECS[CODEC_IDS[compression]] if compression is not None else None
    if target is not None and target.v2_only and to_magic < 2:
        raise click.BadParameter(f"{target.name} needs --to-magic 2", param_hint="--compression")
    if compression_level is not None:
        if target is None:
            raise click.UsageError("--compression-level needs --compression")
        if target.levels is None:
            raise click.BadParameter(
                f"{target.name} takes no level", param_hint="--compression-level"
            )
        lo, hi = target.levels
        if not lo <= compression_level <= hi:
            raise click.BadParameter(
                f"{target.name} levels are {lo}..{hi}", param_hint="--compression-level"
            )
    rebatch = None
    if batch_bytes is not None:
        try:
            rebatch = parse_size(batch_bytes)
        except click.BadParameter as e:
            raise click.BadParameter(e.message, param_hint="--batch-bytes") from None
        if rebatch <= 0:
            raise click.BadParameter("must be positive", param_hint="--batch-bytes")
    opts = ConvertOptions(
        to_magic=to_magic,
        compression=target.id if target is not None else None,
        compression_level=compression_level,
        batch_bytes=rebatch,
        index_interval_bytes=index_interval_bytes,
        ctx=ReadContext.of(limits),
    )

    def show(item: ConversionPlan | LossyRefusal | Converted) -> None:
        if isinstance(item, ConversionPlan):
            _show_plan(out, item, dry_run)
        elif isinstance(item, LossyRefusal):
            if out.fmt != "text":
                out.emit(item.as_obj())
            out.close()
        else:
            _summary(run, item)

    src_path, dest_path = Path(src), Path(dest) if dest is not None else None
    try:
        conversion = convert(
            src_path, dest_path, opts, allow_lossy=allow_lossy, force=run.force, dry_run=dry_run
        )
        run.results(conversion, show)
    except NestedDestination as e:
        raise click.UsageError(str(e)) from None
    run.exit()


def _show_plan(out: Output, plan: ConversionPlan, dry_run: bool) -> None:
    opts = plan.options
    target = f"magic {opts.to_magic}, " + (
        CODEC_NAMES[opts.compression] if opts.compression is not None else "codecs kept"
    )
    if out.fmt != "text":
        for part in plan.partitions:
            for s in part.segments:
                out.emit(s.as_obj())
        return
    rows = []
    for part in plan.partitions:
        for s in part.segments:
            lost = s.losses.lossy() | s.losses.informational()
            rows.append(
                [
                    s.source.parent.name,
                    str(s.base_offset),
                    f"{s.batches:,}",
                    f"{s.size:,}",
                    "unchanged" if s.action == COPY else "convert",
                    ", ".join(f"{_SHORT.get(k, k)} {v:,}" for k, v in lost.items()) or "-",
                ]
            )
    out.table(
        f"convert-format {plan.source} to {target}" + (" (dry run)" if dry_run else ""),
        ["partition", "segment", "batches", "bytes", "action", "lost"],
        rows,
        left=frozenset({"action", "lost"}),
    )


_SHORT = {
    "control_batches": "markers",
    "transactional_batches": "txn batches",
    "zstd_batches": "zstd batches",
    "producer_batches": "producer ids",
    "empty_batches": "empty batches",
    "leader_epoch_batches": "leader epochs",
    "delete_horizon_batches": "delete horizons",
}


# text labels that say more than the JSON key
_LABELS = {"indexes_rebuilt": "missing indexes created (unchanged segments)"}


def _summary(run: WritingRun, done: Converted) -> None:
    lost = [[f"lost: {label(k)}", f"{v:,}"] for k, v in done.plan.losses.as_dict().items() if v]
    run.summary(done.as_obj(run.dry_run), lost, labels=_LABELS, hidden={"losses"})


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "A log dir to message format 2 with zstd, into a new directory:",
        [
            "klogtool convert-format /data /backup/data-v2 --to-magic 2 --compression zstd",
        ],
    ),
    (
        "Old v0/v1 messages into ~1 MB v2 batches, in place:",
        [
            "klogtool convert-format old-topic-0 --in-place --batch-bytes 1M",
        ],
    ),
]

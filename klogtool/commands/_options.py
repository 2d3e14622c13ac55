"""Options shared by several commands."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from klogtool.codes import Code
from klogtool.errors import InputError
from klogtool.formats import ReadLimits
from klogtool.log import record_filter
from klogtool.output import FORMATS
from klogtool.shown import click_callback as shown_paths

if TYPE_CHECKING:
    from klogtool.cli import Settings
    from klogtool.formats import SchemaRegistry
    from klogtool.output import Output

F = Callable[..., Any]


def paths_argument(f: F) -> F:
    return click.argument(
        "paths", nargs=-1, required=True, metavar="PATH...", callback=shown_paths
    )(f)


def local_paths(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A writing command's PATH callback: object storage is read, never written (exit 2)."""
    from klogtool.log.storage import is_remote

    for v in [value] if isinstance(value, str) else value or ():
        if is_remote(v):
            raise click.BadParameter(
                f"{v}: klogtool changes only local files; the reading commands take URIs "
                "(copy the directory to a local disk to repair or rewrite it)"
            )
    return shown_paths(ctx, param, value)


def local_paths_argument(f: F) -> F:
    """PATH... of a command that changes files: local paths only."""
    return click.argument(
        "paths", nargs=-1, required=True, metavar="PATH...", callback=local_paths
    )(f)


def warn_if_a_broker_runs(out: Output, paths: Iterable[str]) -> None:
    """A read-only command on a log dir whose ``.lock`` a running broker holds: say so once
    per log dir (its active segments may change while they are read). What every reading
    command says of its PATHs first: also the object keys under them that it leaves out."""
    from klogtool.log.atomic import lock_holder, log_dir_of
    from klogtool.log.storage import keys_left_out

    paths = list(paths)
    for shown in keys_left_out(paths):
        out.warn(
            f"{shown}: not read: an object key with an empty, '.' or '..' path segment (a "
            f"disk could hold no file of that name) ({Code.BAD_OBJECT_KEY})"
        )
    seen: set[Path] = set()
    for p in paths:
        if p == "-" or "://" in p or not os.path.exists(p):
            continue
        log_dir = log_dir_of(Path(p))
        if log_dir in seen:
            continue
        seen.add(log_dir)
        pid = lock_holder(log_dir)
        if pid is not None:
            out.warn(
                f"{log_dir}: a running broker (process {pid}) holds this log dir's .lock: its "
                "active segments may change while they are read"
            )


def warn_if_not_live_skipped(out: Output, paths: Iterable[str]) -> None:
    """A reading command leaves out a log dir's partition dirs the broker marked -delete,
    -future or -stray (copies, not the live data): say so once, naming them."""
    from klogtool.log.files import not_live

    skipped = not_live(paths)
    if skipped:
        out.warn(
            f"not read: {len(skipped)} partition "
            f"{'directory' if len(skipped) == 1 else 'directories'} the broker marked -delete, "
            f"-future or -stray, not the live data ({', '.join(skipped)}): name one to read it"
        )


def format_option(*extra: str) -> Callable[[F], F]:
    choices = FORMATS + extra
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default="text",
        show_default=True,
        help="Output format: text for people, jsonl/json for machines"
        + (", kafka for kafka-dump-log.sh's exact lines." if "kafka" in extra else "."),
    )


def parse_size(text: str) -> int:
    """``64M``, ``1G``, ``4096`` → bytes (record_filter.parse_size, as click's error)."""
    try:
        return record_filter.parse_size(text)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _size(_c: click.Context, _p: click.Parameter, v: str | None) -> int | None:
    return None if v is None else parse_size(v)


def size_option(*decls: str, default: str | None = None, help: str) -> Callable[[F], F]:
    """An option taking a size (``4096``, ``64M``, ``1G``), handed over in bytes."""
    return click.option(
        *decls,
        default=default,
        show_default=default is not None,
        metavar="SIZE",
        callback=_size,
        help=help,
    )


def payload_decoder_options(f: F) -> F:
    """--key-decoder and --value-decoder, as dump-segments and find show payloads, and
    --schemas for the confluent decoder."""
    from klogtool.formats import BYTE_DECODERS

    choices = BYTE_DECODERS + ("confluent",)
    f = schemas_option(f)
    f = click.option(
        "--value-decoder",
        type=click.Choice(choices),
        default=None,
        help="How to render values and header values [default: as --key-decoder]; "
        "confluent: Confluent's wire format, decoded with the schema registry's schemas "
        "(header values then in base64).",
    )(f)
    return click.option(
        "--key-decoder",
        type=click.Choice(choices),
        default=None,
        help="How to render keys [default: utf8 for text/kafka, base64 for json].",
    )(f)


def schemas_option(f: F) -> F:
    """--schemas DIR|FILE: where the confluent decoder's schemas are."""
    return click.option(
        "--schemas",
        metavar="DIR|FILE",
        default=None,
        help="The schemas of --key-decoder/--value-decoder confluent: a _schemas partition "
        "dir, a log dir holding one, or a JSON/JSON Lines file of schema objects, on a disk "
        "or in object storage (s3://...) [default: "
        "the _schemas partition in the log dirs of the PATHs].",
    )(f)


def confluent_schemas(
    paths: Sequence[str], schemas: str | None, decoders: Sequence[str], limits: ReadLimits
) -> SchemaRegistry | None:
    """The schema registry's schemas when a decoder is confluent (klogtool.log.schemas), else
    None; --schemas without the confluent decoder is a usage error."""
    if "confluent" not in decoders:
        if schemas is not None:
            raise click.UsageError("--schemas is for --key-decoder/--value-decoder confluent")
        return None
    from klogtool.log.schemas import load_schemas

    return load_schemas(list(paths), schemas, limits)


def confluent_notice(out: Output, registry: SchemaRegistry | None, decoders: Sequence[str]) -> None:
    """Where the confluent decoder's schemas came from (-v), or a warning that none were
    found."""
    if "confluent" not in decoders:
        return
    if registry is None:
        out.warn(
            "no _schemas partition found beside the PATHs (--schemas names one): Confluent "
            "payloads show their schema id and raw bytes"
        )
    else:
        out.info(f"{len(registry)} schemas from {registry.source}")


def internal_decoder_option(f: F) -> F:
    """--decoder: how internal topics' records are decoded (dump-segments, find)."""
    from klogtool.formats import INTERNAL_DECODERS, UNIMPLEMENTED_DECODERS

    available = tuple(d for d in INTERNAL_DECODERS if d not in UNIMPLEMENTED_DECODERS)
    return click.option(
        "--decoder",
        type=click.Choice(("auto", "none") + available),
        default="auto",
        show_default=True,
        help="Decoder for internal topics; auto picks it from the partition directory "
        "name (__consumer_offsets-*, __transaction_state-*, __share_group_state-*, "
        "__cluster_metadata-*) and uses "
        "cluster-metadata for KRaft snapshots (*.checkpoint); none decodes nothing, not "
        "even control records (transaction markers, ...): their raw key and value show like "
        "any record's.",
    )(f)


def read_limits_option(f: F) -> F:
    """The read bounds (``--max-batch-bytes``), handed to the command as one ``limits``: a
    ReadLimits (klogtool/formats/limits.py). A new bound is a field there and an option here."""

    @functools.wraps(f)
    def command(*args: Any, max_batch_bytes: int, **kwargs: Any) -> Any:
        return f(*args, limits=ReadLimits(max_batch_bytes=max_batch_bytes), **kwargs)

    return size_option(
        "--max-batch-bytes",
        default="64M",
        help="Refuse to decompress a batch beyond this size (decompression-bomb guard).",
    )(command)


def parse_offsets(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> tuple[int, int] | None:
    """``--offsets FROM:TO`` (either end may be left out) as an inclusive range."""
    if value is None:
        return None
    try:
        return record_filter.parse_offset_range(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


# -- writing commands (convert-format, compact, retention-sweep, ...) ---------------------------
def dry_run_option(f: F) -> F:
    return click.option("--dry-run", is_flag=True, help="Print the plan and change nothing.")(f)


def force_option(f: F) -> F:
    return click.option(
        "--force",
        is_flag=True,
        help="Go ahead even though the log dir's .lock is held (a running broker!).",
    )(f)


def writing_options(f: F) -> F:
    """--dry-run, --force and --format, the options of every command that changes a log,
    handed to it as one ``run``: a :class:`klogtool.commands._writing.WritingRun`."""

    @functools.wraps(f)
    def command(*args: Any, dry_run: bool, force: bool, fmt: str, **kwargs: Any) -> Any:
        from klogtool.commands._writing import WritingRun

        ctx = click.get_current_context()
        settings: Settings = ctx.obj
        out = settings.output(fmt)
        run = WritingRun(out, ctx.command.name or "", dry_run=dry_run, force=force)
        return f(*args, run=run, **kwargs)

    return dry_run_option(force_option(format_option()(command)))


def now_ms(now: int | None) -> int:
    return int(time.time() * 1000) if now is None else now


def parse_now(text: str | None) -> int | None:
    """``--now``: milliseconds since the epoch, or an ISO-8601 date-time (UTC if no zone)."""
    if text is None:
        return None
    try:
        return record_filter.parse_time(text)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def now_option(f: F) -> F:
    return click.option(
        "--now",
        metavar="TIME",
        callback=lambda _c, _p, v: parse_now(v),
        help="The current time for the broker's rules: milliseconds since the epoch or an "
        "ISO-8601 date-time [default: the clock].",
    )(f)


def topic_config_option(f: F) -> F:
    return click.option(
        "--config",
        "configs",
        multiple=True,
        metavar="TOPIC=KEY=VALUE|FILE",
        help="A topic config (e.g. orders=retention.ms=86400000), or a properties file of "
        "broker defaults (log.retention.hours=168, ...) and TOPIC=KEY=VALUE lines. "
        "Repeatable; a topic's own setting beats the command's options, which beat the "
        "KRaft metadata log (--metadata-dir), which beats the file's defaults.",
    )(f)


def metadata_dir_option(f: F) -> F:
    return click.option(
        "--metadata-dir",
        metavar="DIR",
        type=click.Path(exists=True, file_okay=False),
        help="The KRaft __cluster_metadata-0 directory whose topic configs (ConfigRecords, "
        "replayed from the latest snapshot) hold [default: the __cluster_metadata-0 of the "
        "partition's log dir, if any]. --config and the command's options beat it; it beats "
        "the defaults of a properties file.",
    )(f)


def _parse_high_watermark(
    _c: click.Context, _p: click.Parameter, v: str | None
) -> int | str | None:
    if v is None or v == "log-end":
        return v
    if not v.isdigit():
        raise click.BadParameter("expected an offset or log-end")
    return int(v)


def high_watermark_option(f: F) -> F:
    return click.option(
        "--high-watermark",
        metavar="OFFSET|log-end",
        callback=_parse_high_watermark,
        help="The high watermark to respect [default: the log dir's "
        "replication-offset-checkpoint; without an entry the broker assumes 0].",
    )(f)


# -- Spark (export, verify --engine spark) --------------------------------------------------------
def assume_defaults_option(f: F) -> F:
    return click.option(
        "--assume-defaults",
        is_flag=True,
        help="Delete and compact by Kafka's defaults where a topic's config is not known (no "
        "KRaft metadata log holds the topic, no --config gives it). Without it such a "
        "partition is refused, never rewritten by a guess.",
    )(f)


def partition_plan_options(*overrides: str, rewrites: bool = False) -> Callable[[F], F]:
    """--now, --config, --metadata-dir and --high-watermark (and --assume-defaults for a
    command that ``rewrites``), handed to the command as one ``inputs``
    (:class:`klogtool.log.partition.PlanInputs`), with the command's own config options
    named in ``overrides`` (its parameters, named like ``TopicConfig``'s fields)."""

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def command(
            *args: Any,
            now: int | None,
            configs: tuple[str, ...],
            high_watermark: int | str | None,
            **kwargs: Any,
        ) -> Any:
            from klogtool.log.metadata import log_dirs_named
            from klogtool.log.partition import PlanInputs
            from klogtool.log.topicconfig import parse_config_args

            options = {k: kwargs.pop(k) for k in overrides}
            meta = kwargs.pop("metadata_dir")
            named = kwargs.get("paths") or [kwargs["path"]]
            inputs = PlanInputs(
                parse_config_args(configs),
                now_ms(now),
                high_watermark,
                options,
                Path(meta) if meta else None,
                given=log_dirs_named(named),
                assume_defaults=kwargs.pop("assume_defaults", False),
            )
            return f(*args, inputs=inputs, **kwargs)

        decorated = now_option(
            topic_config_option(metadata_dir_option(high_watermark_option(command)))
        )
        return assume_defaults_option(decorated) if rewrites else decorated

    return decorate


def _parse_confs(_c: click.Context, _p: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    confs: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, not {v!r}")
        confs[key.strip()] = value
    return confs


def spark_options(engine_help: str) -> Callable[[F], F]:
    """``--engine``, ``--master``, ``--remote`` and ``--conf``."""

    def decorate(f: F) -> F:
        f = click.option(
            "--conf",
            "spark_conf",
            multiple=True,
            metavar="KEY=VALUE",
            callback=_parse_confs,
            help="A Spark setting, e.g. spark.executor.memory=4g (repeatable).",
        )(f)
        f = click.option(
            "--remote",
            metavar="sc://HOST:PORT",
            help="Run on a Spark Connect server instead of starting Spark here.",
        )(f)
        f = click.option(
            "--master",
            metavar="URL",
            help="Spark master: local[*] (the default: Spark inside this process), local[N], "
            "spark://HOST:PORT, yarn, k8s://...",
        )(f)
        return click.option(
            "--engine",
            type=click.Choice(("local", "spark")),
            default=None,
            help=engine_help
            + " [default: spark when --master, --remote or --conf is given, else local]",
        )(f)

    return decorate


# -- index rebuilding (rebuild-index, truncate-recovery) ------------------------------------------
def index_interval_option(f: F) -> F:
    return size_option(
        "--index-interval-bytes",
        default="4096",
        help="The topic's index.interval.bytes: an offset-index entry whenever more than this "
        "many bytes were written since the last one (as the broker's recovery builds them).",
    )(f)


# Less than this runs in one process unless --jobs says otherwise: verify --deep of a log dir of
# four partitions with --jobs 2 took 1.12-1.27x the time of --jobs 1 at 64 and 256 MiB, 0.89x
# (7 % more CPU) at 1 GiB, on two idle cores (bench/bench_jobs.py --command verify).
SMALL_INPUT_BYTES = 1 << 30


def _jobs_option(help: str, callback: Any = None) -> Callable[[F], F]:
    return click.option(
        "--jobs", "-j", type=click.IntRange(min=1), metavar="N", callback=callback, help=help
    )


def _size_text(n: int) -> str:
    return f"{n >> 30} GiB" if n % (1 << 30) == 0 else f"{n >> 20} MiB"


def sized_jobs_option(
    workers: str, small: int = SMALL_INPUT_BYTES, one: str = "for less than {size} of segments"
) -> Callable[[F], F]:
    """``--jobs`` (``workers``: what they are, for the help), None unless given:
    :func:`jobs_for` chooses by the input's size (``small``: less runs in one process, ``one``
    says when, for the help) and the free CPUs."""
    return _jobs_option(
        f"{workers}; the output keeps its order [default: the free CPUs (those neither the "
        f"1-minute load average nor the tasks running now take), or 1 "
        f"{one.format(size=_size_text(small))}]."
    )


def _runnable_now() -> int | None:
    """The tasks running or waiting for a CPU now, this process among them (Linux's
    ``/proc/loadavg``: ``0.87 1.44 1.84 2/345 12345``, runnable/all); None where unknown."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def free_cpus() -> int:
    """The CPUs this process may run on (its affinity) less the busy ones, at least 1: a
    worker more than the idle cores costs CPU and, with the cores taken, time
    (bench/bench_jobs.py). Busy: the smaller of the 1-minute load average and the other tasks
    runnable now, so that neither a load just gone (the last command's own workers) nor a
    passing spike counts; rounded."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        busy = os.getloadavg()[0]
    except OSError:  # (no load average on this system)
        busy = 0.0
    runnable = _runnable_now()
    if runnable is not None:
        busy = min(busy, runnable - 1)
    return max(1, round((usable or 1) - busy))


def jobs_for(jobs: int | None, input_bytes: int, small: int = SMALL_INPUT_BYTES) -> int:
    """The processes to use: as given; else the free CPUs, or one for an input of less than
    ``small`` bytes (where starting processes costs more than it saves)."""
    if jobs is not None:
        return jobs
    return 1 if input_bytes < small else free_cpus()


def jobs_option(f: F) -> F:
    """``--jobs``: worker processes, the CPU count unless given."""
    import os

    return _jobs_option(
        "Worker processes walking segments in parallel [default: the CPU count].",
        callback=lambda _c, _p, v: v or os.cpu_count() or 1,
    )(f)


def chosen_engine(engine: str | None, master: str | None, remote: str | None, conf: Any) -> str:
    """``--engine`` as given, else spark when a Spark target or setting is named, else local
    (the process pool: on one machine it needs no JVM and is usually faster)."""
    if engine is None:
        return "spark" if master or remote or conf else "local"
    if engine == "local" and (master or remote or conf):
        raise click.UsageError("--master, --remote and --conf need --engine spark")
    return engine


# -- record filters (find, and the --where of export and the Spark source) ---------------------
def _filter_option(opt: record_filter.FilterOption) -> Callable[[F], F]:
    """find's click option for one record filter option (klogtool/log/record_filter.py)."""
    if opt.switch:
        return click.option(f"{opt.flag}/{opt.negation}", opt.field, default=None, help=opt.help)

    def parse(_c: click.Context, _p: click.Parameter, v: Any) -> Any:
        try:
            if opt.multiple:
                return tuple(opt.value(text) for text in v)
            return None if v is None else opt.value(v)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None

    choice = click.Choice(opt.choices) if opt.choices else None
    return click.option(
        opt.flag,
        opt.field,
        type=choice,
        multiple=opt.multiple,
        metavar=opt.metavar,
        callback=parse,
        help=opt.help,
    )


def record_filter_options(f: F) -> F:
    """find's record filters, handed to the command as one ``where``: a RecordFilter."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {o.field: kwargs.pop(o.field) for o in record_filter.FILTER_OPTIONS}
        return f(*args, where=record_filter.filter_of(values), **kwargs)

    decorated: Any = wrapper
    for opt in reversed(record_filter.FILTER_OPTIONS):
        decorated = _filter_option(opt)(decorated)
    return decorated  # type: ignore[no-any-return]


def where_option(f: F) -> F:
    """``--where FILTERS``: checked here, kept as given (the Spark source parses it again)."""

    def check(_c: click.Context, _p: click.Parameter, v: str | None) -> str | None:
        if v is not None:
            try:
                record_filter.parse_where(v)
            except ValueError as e:
                raise click.BadParameter(str(e).removeprefix("--where: ")) from None
        return v

    return click.option(
        "--where",
        metavar="FILTERS",
        callback=check,
        help="Only records that find's filters select, given as find's options in one quoted "
        "argument, e.g. --where '--key customer-42 --from-time 2024-05-01'. Every filter of "
        "find works: times, offsets, key, value, headers, producer ids, transactional state, "
        "control records.",
    )(f)


def rsa_private_key_option(f: F) -> F:
    return click.option(
        "--rsa-private-key",
        "rsa_private_keys",
        multiple=True,
        metavar="[KEY_ID=]FILE",
        help="The RSA private key (PEM) that unwraps the data keys of encrypted remote "
        "segments in Aiven's layout: of the key pair id KEY_ID, or of any id without one. "
        "Repeatable.",
    )(f)


def rsa_keys(given: Iterable[str]) -> tuple[dict[str, bytes], bytes | None]:
    """--rsa-private-key values: (key id -> PEM, the key for any other id)."""
    keys: dict[str, bytes] = {}
    default: bytes | None = None
    for value in given:
        key_id, _, file = value.rpartition("=")
        try:
            pem = Path(file).read_bytes()
        except OSError as e:
            raise InputError(
                f"cannot read the RSA private key: {e.strerror}", path=file, code=Code.UNREADABLE
            ) from None
        if key_id:
            keys[key_id] = pem
        else:
            default = pem
    return keys, default


def remote_storage_options(f: F) -> F:
    """--remote-storage and --rsa-private-key of a reading command: handed to it as
    ``remote``, the :class:`~klogtool.log.remote_layouts.TieredReads` (None without
    --remote-storage), whose spool directory lasts as long as the command."""

    @functools.wraps(f)
    def command(
        *args: Any, remote_storage: str | None, rsa_private_keys: tuple[str, ...], **kwargs: Any
    ) -> Any:
        if remote_storage is None:
            return f(*args, remote=None, **kwargs)
        import tempfile

        from klogtool.log import storage
        from klogtool.log.metadata import log_dirs_named
        from klogtool.log.remote_layouts import TieredReads
        from klogtool.log.remote_tier import TierCache

        root = storage.path_of(remote_storage)
        if not root.is_dir():
            raise InputError(
                "no such directory or prefix", path=remote_storage, code=Code.NOT_FOUND
            )
        keys, default = rsa_keys(rsa_private_keys)
        with tempfile.TemporaryDirectory(prefix="klogtool-remote-") as spool:
            tiers = TierCache(log_dirs_named(kwargs["paths"]))
            remote = TieredReads(root, Path(spool), tiers, keys, default)
            return f(*args, remote=remote, **kwargs)

    return click.option(
        "--remote-storage",
        metavar="LOCATION",
        help="Read each tiered partition as one log: its remote segments (the remote log its "
        "broker's __remote_log_metadata describes) from LOCATION, a directory or an "
        "object-storage URI holding Kafka's LocalTieredStorage or Aiven's layout, then its "
        "local ones (docs/tiered-storage.md).",
    )(rsa_private_key_option(command))

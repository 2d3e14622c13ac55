"""``klogtool dump-segments``: print batches, records, index entries, snapshots, checkpoints."""

from __future__ import annotations

import functools
import os
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import click
from click.core import ParameterSource

from klogtool.codes import Code
from klogtool.commands._options import (
    confluent_notice,
    confluent_schemas,
    format_option,
    internal_decoder_option,
    jobs_for,
    parse_offsets,
    payload_decoder_options,
    read_limits_option,
    sized_jobs_option,
    warn_if_a_broker_runs,
    warn_if_not_live_skipped,
)
from klogtool.errors import EXIT_FINDINGS, EXIT_OK, InputError
from klogtool.formats import ReadLimits
from klogtool.log import layout, storage
from klogtool.log.context import ReadContext
from klogtool.log.files import STDIN_KINDS, log_sizes
from klogtool.log.read.dumper import PARALLEL_MIN_BYTES, Dumper, DumpOptions
from klogtool.log.read.dumper import Obj as DumpObject
from klogtool.output import TERMINAL_ESCAPES, Output, object_bytes, plural, to_json, with_iso
from klogtool.shown import click_callback as shown_paths

if TYPE_CHECKING:
    from klogtool import events
    from klogtool.cli import Settings

# What the renderers read: dump-segments' objects (DumpObject) and find's, alike.
Obj: TypeAlias = Mapping[str, Any]


# kafka-dump-log.sh's decoder flags (Kafka's DumpLogSegments): klogtool's --decoder
_KAFKA_DECODER_FLAGS: dict[str, tuple[str, str]] = {
    "offsets_decoder": ("--offsets-decoder", "consumer-offsets"),
    "transaction_log_decoder": ("--transaction-log-decoder", "transaction-state"),
    "cluster_metadata_decoder": ("--cluster-metadata-decoder", "cluster-metadata"),
    "remote_log_metadata_decoder": ("--remote-log-metadata-decoder", "remote-log-metadata"),
    "share_group_state_decoder": ("--share-group-state-decoder", "share-group-state"),
}
# kafka-dump-log.sh's default --key-decoder-class / --value-decoder-class (old and new names)
_STRING_DECODERS = frozenset(
    {
        "org.apache.kafka.tools.api.StringDecoder",
        "kafka.serializer.StringDecoder",
        "kafka.tools.StringDecoder",
        "StringDecoder",
    }
)


def kafka_dump_log_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The option names of kafka-dump-log.sh (Kafka's DumpLogSegments) that klogtool's own do
    not already spell alike (--deep-iteration, --max-bytes, --index-sanity-check,
    --verify-index-only), hidden, handed to the command as klogtool's options: a script
    written for kafka-dump-log.sh keeps working. What has no equivalent is accepted and noted
    on stderr (``notes``)."""

    @functools.wraps(f)
    def command(
        *args: Any,
        files: tuple[str, ...],
        print_data_log: bool,
        key_decoder_class: str | None,
        value_decoder_class: str | None,
        max_message_size: int | None,
        skip_record_metadata: bool,
        **kwargs: Any,
    ) -> Any:
        notes: list[str] = []
        flags = {k: kwargs.pop(k) for k in _KAFKA_DECODER_FLAGS}
        paths = kwargs["paths"] + tuple(p for v in files for p in v.split(",") if p)
        if not paths:
            raise click.UsageError("Missing argument 'PATH...'.")
        kwargs["paths"] = paths
        decoders = (
            any(flags.values()) or key_decoder_class is not None or value_decoder_class is not None
        )
        # kafka-dump-log.sh: any decoder option prints the payloads, and prints them alone
        # with --skip-record-metadata
        kwargs["print_data"] = (
            kwargs["print_data"] or print_data_log or skip_record_metadata or decoders
        )
        # a command line written for kafka-dump-log.sh gets its lines (unless --format is given)
        theirs = files or print_data_log or skip_record_metadata or decoders
        if theirs or max_message_size is not None:
            if click.get_current_context().get_parameter_source("fmt") is ParameterSource.DEFAULT:
                kwargs["fmt"] = "kafka"
        given = [name for name, on in flags.items() if on]
        if len(given) > 1:
            names = " and ".join(_KAFKA_DECODER_FLAGS[n][0] for n in given)
            raise click.UsageError(f"{names} exclude each other")
        if given:
            flag, decoder = _KAFKA_DECODER_FLAGS[given[0]]
            if kwargs["decoder"] not in ("auto", decoder):
                raise click.UsageError(f"{flag} contradicts --decoder {kwargs['decoder']}")
            else:
                kwargs["decoder"] = decoder
        for flag, cls, name in (
            ("--key-decoder-class", key_decoder_class, "key_decoder"),
            ("--value-decoder-class", value_decoder_class, "value_decoder"),
        ):
            if cls is None or kwargs[name] is not None:
                continue  # klogtool's own --key-decoder / --value-decoder wins
            if cls in _STRING_DECODERS:
                kwargs[name] = "utf8"
            else:
                notes.append(
                    f"{flag} {cls}: klogtool loads no decoder classes; shown as UTF-8 text "
                    f"(--{name.replace('_', '-')} utf8|base64|hex|json)"
                )
                kwargs[name] = "utf8"
        if max_message_size is not None:
            notes.append(
                "--max-message-size: ignored, klogtool reads batches of any size "
                "(--max-batch-bytes bounds their decompression)"
            )
        return f(*args, payloads_only=skip_record_metadata, notes=notes, **kwargs)

    hidden: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.option("--files", multiple=True, metavar="FILE,...", hidden=True),
        click.option("--print-data-log", is_flag=True, hidden=True),
        *(
            click.option(flag, name, is_flag=True, hidden=True)
            for name, (flag, _) in _KAFKA_DECODER_FLAGS.items()
        ),
        # an optional class name: without one, kafka-dump-log.sh's StringDecoder
        click.option(
            "--key-decoder-class",
            is_flag=False,
            flag_value="org.apache.kafka.tools.api.StringDecoder",
            default=None,
            hidden=True,
        ),
        click.option(
            "--value-decoder-class",
            is_flag=False,
            flag_value="org.apache.kafka.tools.api.StringDecoder",
            default=None,
            hidden=True,
        ),
        click.option("--max-message-size", type=int, default=None, hidden=True),
        click.option("--skip-record-metadata", is_flag=True, hidden=True),
    ]
    for option in reversed(hidden):
        command = option(command)
    return command


@click.command("dump-segments")
@click.argument("paths", nargs=-1, metavar="PATH...", callback=shown_paths)  # or --files
@click.option(
    "--deep-iteration", "deep", is_flag=True, help="Decode every record, not only batch headers."
)
@click.option(
    "--print-data",
    is_flag=True,
    help="Print keys, values and header values (implies --deep-iteration).",
)
@payload_decoder_options
@internal_decoder_option
@click.option(
    "--max-bytes",
    type=int,
    default=None,
    metavar="N",
    help="Only dump batches that lie entirely within the first N bytes of a .log.",
)
@click.option(
    "--offsets",
    callback=parse_offsets,
    metavar="FROM:TO",
    help="Only batches and records with offsets in FROM..TO (inclusive).",
)
@click.option(
    "--index-sanity-check",
    is_flag=True,
    help="Run the broker's sanity check on index files instead of dumping them.",
)
@click.option(
    "--verify-index-only",
    is_flag=True,
    help="Check index entries against the log; print only the problems.",
)
@click.option(
    "--kind",
    "stdin_kind",
    type=click.Choice(STDIN_KINDS),
    default=layout.LOG,
    show_default=True,
    help="What a PATH of - (stdin) holds; files and directories are recognised by name.",
)
@format_option("kafka")
@read_limits_option
@sized_jobs_option(
    "Threads rendering the records of --deep-iteration (native engine); for a segment of 64 "
    "MiB or more in jsonl or text, worker processes that write its parts in turn",
    PARALLEL_MIN_BYTES,
    "when the largest segment is under {size}",
)
@kafka_dump_log_options
@click.pass_obj
def command(
    settings: Settings,
    paths: tuple[str, ...],
    deep: bool,
    print_data: bool,
    key_decoder: str | None,
    value_decoder: str | None,
    schemas: str | None,
    decoder: str,
    max_bytes: int | None,
    offsets: tuple[int, int] | None,
    index_sanity_check: bool,
    verify_index_only: bool,
    stdin_kind: str,
    fmt: str,
    limits: ReadLimits,
    jobs: int | None,
    payloads_only: bool,
    notes: list[str],
) -> None:
    """Print the contents of Kafka log files: batches by default, records with
    --deep-iteration, payloads with --print-data.

    PATH is a file of any kind a partition directory holds, a partition directory, a log
    directory, or - for a segment on stdin. Output goes to stdout; problems found on the way
    are reported as findings. --format kafka prints the lines kafka-dump-log.sh prints.

    Exit status: 0 when everything was dumped; 1 when the dump met errors in the data
    (records that do not decode, a CRC mismatch, a torn or corrupt tail: everything readable
    was printed, and the errors are in the output); 3 when an input is not a Kafka file.

    kafka-dump-log.sh's options are accepted too, for scripts written for it: --files F1,F2
    (the PATHs), --print-data-log (--print-data), --offsets-decoder,
    --transaction-log-decoder, --share-group-state-decoder, --cluster-metadata-decoder and
    --remote-log-metadata-decoder (--decoder), --key-decoder-class and --value-decoder-class
    (their StringDecoder: utf8), --skip-record-metadata (payloads only), --max-message-size
    and other decoder classes (ignored, with a note). Any of
    them switches the output to --format kafka, kafka-dump-log.sh's lines, unless --format is
    given.
    """
    sizes = list(log_sizes(list(paths)))
    log_bytes = sum(sizes)
    default = "base64" if fmt in ("json", "jsonl") else "utf8"
    kd = key_decoder or default
    out = settings.output("text" if fmt == "kafka" else fmt)
    warn_if_a_broker_runs(out, paths)
    warn_if_not_live_skipped(out, paths)
    for note in notes:
        out.warn(note)
    if payloads_only and fmt in ("json", "jsonl"):
        out.warn("--skip-record-metadata: record objects keep all their fields in " + fmt)
    # kafka-dump-log.sh prints payloads raw; on a terminal their control characters would drive
    # it and CR/LF forge record lines, so KafkaRenderer escapes them there (a pipe keeps the
    # exact bytes) and the native renderer, which cannot, is not used
    native_render = fmt in ("jsonl", "text") or (fmt == "kafka" and not out.data_is_terminal)
    # --skip-record-metadata: the payloads alone, from the record objects
    native_render = native_render and not payloads_only
    vd = value_decoder or kd
    registry = confluent_schemas(paths, schemas, (kd, vd), limits)
    confluent_notice(out, registry, (kd, vd))
    first_bad: events.DumpSegmentsFinding | None = None
    renderer = KafkaRenderer(out, payloads_only) if fmt == "kafka" else None
    # a bar only when the dump goes to a file or a pipe: on a terminal the lines are the progress
    total = 0 if out.data_is_terminal else log_bytes
    with out.progress(total, "dumping") as bar:
        opts = DumpOptions(
            deep=deep or print_data,
            print_data=print_data,
            key_decoder=kd,
            value_decoder=vd,
            decoder=decoder,
            kafka_text=fmt == "kafka",
            max_bytes=max_bytes,
            offsets=offsets,
            index_sanity_check=index_sanity_check,
            verify_index_only=verify_index_only,
            ctx=ReadContext.of(limits, bar),
            stdin_kind=stdin_kind,
            # control records as --decoder shows them: decoded, or (none) as any record
            rendered_records=f"{fmt}+{'raw-control' if decoder == 'none' else 'control'}"
            if native_render
            else None,
            # a v2 batch's own line too (it has no payload: a terminal takes it as it is)
            rendered_batches=fmt if fmt in ("jsonl", "text", "kafka") else None,
            # by default in parallel only for a segment of PARALLEL_MIN_BYTES, the unit split
            threads=jobs_for(jobs, max(sizes, default=0), PARALLEL_MIN_BYTES),
            # (worker processes write a large segment's objects as emit would)
            write_object=functools.partial(object_bytes, fmt) if fmt in ("jsonl", "text") else None,
            schemas=registry,
        )
        dumper = Dumper(list(paths), opts, output=out.descriptor)
        for obj in dumper.objects():
            first_bad = _show(obj, out, fmt, renderer, first_bad, payloads_only)
    if renderer is not None:
        renderer.finish()
    out.close()
    n = dumper.counts
    out.info(
        f"{plural(n['files'], 'file')}, {n['batches']:,} batch{'' if n['batches'] == 1 else 'es'}, "
        f"{plural(n['records'], 'record')}"
    )
    if first_bad is not None:
        raise InputError(
            first_bad["message"],
            path=first_bad["path"],
            position=first_bad["position"],
            code=Code.NOT_A_LOG,
        )
    click.get_current_context().exit(EXIT_FINDINGS if dumper.counts["errors"] else EXIT_OK)


def _show(
    obj: DumpObject,
    out: Output,
    fmt: str,
    renderer: KafkaRenderer | None,
    first_bad: events.DumpSegmentsFinding | None,
    payloads_only: bool = False,
) -> events.DumpSegmentsFinding | None:
    """Render one dump object; returns the first not-a-log finding seen so far."""
    if obj["type"] == "finding" and obj["code"] == Code.NOT_A_LOG:
        first_bad = first_bad or obj
        if fmt not in ("jsonl", "json"):
            return first_bad  # said once, as the one-line error at the end
    if renderer is not None:
        renderer.render(obj)
    elif fmt == "text" and obj["type"] in ENTRY_TEXT:
        out.line(ENTRY_TEXT[obj["type"]](obj).translate(TERMINAL_ESCAPES))
    elif payloads_only and fmt == "text" and obj["type"] == "record":
        if "control" not in obj:  # as kafka-dump-log.sh, control records are left out
            line = f"  key: {_payload(obj.get('key'))}  value: {_payload(obj.get('value'))}"
            out.line(line.translate(TERMINAL_ESCAPES))
    elif obj["type"] == "lines":
        out.write_lines(obj["text"])
    elif not (obj["type"] == "summary" and fmt == "text"):  # text: counts go to stderr (-v)
        out.emit(obj)
    return first_bad


def _opt_long(v: int | None) -> str:
    return "OptionalLong.empty" if v is None or v < 0 else f"OptionalLong[{v}]"


def _bool(v: bool | None) -> str:
    return "true" if v else "false"


EMPTY_INDEX = "empty-index"  # KafkaRenderer.kind of an offset index under 8 bytes


class KafkaRenderer:
    """kafka-dump-log.sh's exact stdout lines and end-of-run stderr blocks (docs/kafka-rules.md,
    kafka-dump-log output)."""

    def __init__(self, out: Output, payloads_only: bool = False):
        self.out = out
        self.payloads_only = payloads_only  # --skip-record-metadata
        self.path = ""
        self.abs_path = ""
        self.kind = ""
        self.base = 0
        self.ts_type = ""
        self.magic = 2
        self.last_record_offset = -1
        self.index_mismatch: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.ts_mismatch: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.ts_order: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.not_found: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.non_consecutive: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.escapes = TERMINAL_ESCAPES if out.data_is_terminal else {}
        out.raw_lines = not out.data_is_terminal  # kafka-dump-log prints names and data raw

    def render(self, obj: Obj) -> None:
        getattr(self, "_" + obj["type"], self._ignore)(obj)

    def _ignore(self, obj: Obj) -> None:
        pass

    def _file(self, obj: Obj) -> None:
        self.path = obj["path"]
        self.abs_path = storage.absolute(self.path)
        self.kind = obj["kind"]
        self.base = obj.get("base_offset", 0)
        self.last_record_offset = -1
        out = self.out
        out.line(f"Dumping {self.path}")
        name = os.path.basename(self.path)
        if self.kind == layout.LOG:
            out.line(f"Log starting offset: {self.base}")
        elif self.kind == layout.KRAFT_SNAPSHOT:
            if name == "bootstrap.checkpoint":
                out.line("KRaft bootstrap snapshot")
            else:
                offset, _, epoch = name.split(".", 1)[0].partition("-")
                out.line(f"Snapshot end offset: {int(offset)}, epoch: {int(epoch)}")
        elif self.kind == layout.INDEX and obj["size"] < 8:
            # and nothing more: kafka-dump-log.sh checks no sanity of an empty index
            out.line(f"{self.path} is empty.")
            self.kind = EMPTY_INDEX
        elif self.kind not in (layout.INDEX, layout.TIMEINDEX, layout.TXNINDEX, layout.SNAPSHOT):
            self.out.stderr_line(f"Ignoring unknown file {self.path}")
            self.kind = layout.UNKNOWN

    def _batch(self, b: Obj) -> None:
        self.ts_type = b["timestamp_type"]
        self.magic = b["magic"]
        if b["magic"] >= 2:
            head = (
                f"baseOffset: {b['base_offset']} lastOffset: {b['last_offset']} count: "
                f"{b['count']} baseSequence: {b['base_sequence']} lastSequence: "
                f"{b['last_sequence']} producerId: {b['producer_id']} producerEpoch: "
                f"{b['producer_epoch']} partitionLeaderEpoch: {b['partition_leader_epoch']} "
                f"isTransactional: {_bool(b['is_transactional'])} isControl: "
                f"{_bool(b['is_control'])} deleteHorizonMs: {_opt_long(b['delete_horizon_ms'])}"
            )
        else:
            head = f"offset: {b['last_offset']}"
        self.out.line(
            f"{head} position: {b['position']} {b['timestamp_type']}: {b['max_timestamp']} "
            f"size: {b['size']} magic: {b['magic']} compresscodec: {b['compression']} crc: "
            f"{b['crc']} isvalid: {_bool(b['crc_valid'])}"
        )

    def _lines(self, obj: Obj) -> None:
        """A batch's record lines, rendered natively (see ``_record``)."""
        first = obj["first_offset"]
        if first is not None:
            if self.last_record_offset != -1 and first != self.last_record_offset + 1:
                self.non_consecutive[self.abs_path].append((self.last_record_offset, first))
            if obj["breaks"]:
                self.non_consecutive[self.abs_path].extend(obj["breaks"])
            self.last_record_offset = obj["last_offset"]
        self.out.write_lines(obj["text"])

    def _record(self, r: Obj) -> None:
        offset = r["offset"]
        if self.last_record_offset != -1 and offset != self.last_record_offset + 1:
            self.non_consecutive[self.abs_path].append((self.last_record_offset, offset))
        self.last_record_offset = offset
        if self.payloads_only:
            self._payloads(r)
            return
        line = (
            f"| offset: {offset} {self.ts_type}: {r['timestamp']} keySize: {r['key_size']} "
            f"valueSize: {r['value_size']}"
        )
        if self.magic >= 2:
            keys = ",".join(h["key"] for h in r["headers"])
            line += f" sequence: {r['sequence']} headerKeys: [{keys}]"
        if "crc" in r:
            line += f" isValid: {_bool(r['crc_valid'])} crc: {r['crc']}}}"
        ctl = r.get("control")
        if ctl is not None:
            line += _control_text(ctl)
        else:
            if r.get("key") is not None:
                line += f" key: {_text(r['key'])}"
            if r.get("value") is not None:
                line += f" payload: {_text(r['value'])}"
        self.out.line(line.translate(self.escapes))

    def _payloads(self, r: Obj) -> None:
        """kafka-dump-log.sh --skip-record-metadata: ``| key: K payload: V``, or an empty
        line (a control record, a record without key and value)."""
        parts = []
        if r.get("control") is None:
            if r.get("key") is not None:
                parts.append(f"key: {_text(r['key'])}")
            if r.get("value") is not None:
                parts.append(f"payload: {_text(r['value'])}")
        line = "| " + " ".join(parts) if parts else ""
        self.out.line(line.translate(self.escapes))

    def _index_entry(self, e: Obj) -> None:
        self.out.line(f"offset: {e['offset']} position: {e['position']}")

    def _timeindex_entry(self, e: Obj) -> None:
        self.out.line(f"timestamp: {e['timestamp']} offset: {e['offset']}")

    def _txn_entry(self, e: Obj) -> None:
        self.out.line(
            f"version: {e['version']} producerId: {e['producer_id']} firstOffset: "
            f"{e['first_offset']} lastOffset: {e['last_offset']} lastStableOffset: "
            f"{e['last_stable_offset']}"
        )

    def _producer_entry(self, e: Obj) -> None:
        line = (
            f"producerId: {e['producer_id']} producerEpoch: {e['producer_epoch']} "
            f"coordinatorEpoch: {e['coordinator_epoch']} currentTxnFirstOffset: "
            f"{_opt_long(e['current_txn_first_offset'])} lastTimestamp: {e['timestamp']} "
        )
        if e["last_offset"] >= 0:
            line += (
                f"firstSequence: {e['first_sequence']} lastSequence: {e['last_sequence']} "
                f"lastOffset: {e['last_offset']} offsetDelta: {e['offset_delta']} timestamp: "
                f"{e['timestamp']}"
            )
        self.out.line(line)

    def _sanity_check(self, e: Obj) -> None:
        if self.kind != EMPTY_INDEX:
            self.out.line(f"{self.path} passed sanity check.")

    def _finding(self, f: Obj) -> None:
        code = f["code"]
        if code == Code.INDEX_MISMATCH:
            self.index_mismatch[self.abs_path].append((f["index_offset"], f["log_offset"]))
        elif code == Code.TIMEINDEX_TIMESTAMP_MISMATCH:
            self.ts_mismatch[self.abs_path].append((f["index_timestamp"], f["log_timestamp"]))
        elif code == Code.TIMEINDEX_OUT_OF_ORDER:
            self.ts_order[self.abs_path].append((f["index_timestamp"], f["previous_timestamp"]))
        elif code == Code.TIMEINDEX_OFFSET_NOT_FOUND:
            self.not_found[self.abs_path].append((f["index_offset"], f["log_offset"]))
        elif code in (Code.TORN_TAIL, Code.ZERO_FILL, Code.NOT_A_LOG) or (
            "invalid_bytes" in f and self.kind in (layout.LOG, layout.KRAFT_SNAPSHOT)
        ):
            self.out.line(
                f"Found {f['invalid_bytes']} invalid bytes at the end of "
                f"{os.path.basename(self.path)}"
            )
        else:
            self.out.stderr_line(f"{f['path']}: {f['message']}")

    def finish(self) -> None:
        err = self.out.stderr_line
        for path, pairs in self.index_mismatch.items():
            err(f"Mismatches in :{path}")
            for a, b in reversed(pairs):
                err(f"  Index offset: {a}, log offset: {b}")
        for path, pairs in self.ts_mismatch.items():
            err(f"Found timestamp mismatch in :{path}")
            for a, b in pairs:
                err(f"  Index timestamp: {a}, log timestamp: {b}")
        for path, pairs in self.ts_order.items():
            err(f"Found out of order timestamp in :{path}")
            for a, b in pairs:
                err(f"  Index timestamp: {a}, Previously indexed timestamp: {b}")
        for pairs in self.not_found.values():
            err("The following indexed offsets are not found in the log.")
            for a, b in pairs:
                err(f"Indexed offset: {a}, found log offset: {b}")
        for path, pairs in self.non_consecutive.items():
            err(f"Non-consecutive offsets in {path}")
            for a, b in reversed(pairs):
                err(f"  {a} is followed by {b}")


def _text(v: Any) -> str:
    return v if isinstance(v, str) else to_json(v)


def _payload(v: Any) -> str:
    return "null" if v is None else _text(v)


# -- the text format of index, snapshot and checkpoint entries ----------------------------------
def _index_entry_text(e: Obj) -> str:
    return f"  offset {e['offset']} → position {e['position']}"


def _timeindex_entry_text(e: Obj) -> str:
    return f"  timestamp {with_iso(e['timestamp'])} → offset {e['offset']}"


def _txn_entry_text(e: Obj) -> str:
    return (
        f"  aborted transaction of producer {e['producer_id']}: offsets "
        f"{e['first_offset']}..{e['last_offset']}, last stable offset "
        f"{e['last_stable_offset']} (version {e['version']})"
    )


def _producer_entry_text(e: Obj) -> str:
    parts = [f"  producer {e['producer_id']} epoch {e['producer_epoch']}"]
    if e["last_offset"] >= 0:
        first = e["last_offset"] - e["offset_delta"]
        parts.append(
            f"last batch offsets {first}..{e['last_offset']} "
            f"seq {e['first_sequence']}..{e['last_sequence']}"
        )
    else:
        parts.append("no batch")
    parts.append(f"last write {with_iso(e['timestamp'])}")
    if e["coordinator_epoch"] >= 0:
        parts.append(f"coordinator epoch {e['coordinator_epoch']}")
    if e["current_txn_first_offset"] >= 0:
        parts.append(f"open transaction from offset {e['current_txn_first_offset']}")
    return "  ".join(parts)


def _checkpoint_entry_text(e: Obj) -> str:
    return f"  {e['topic']}-{e['partition']}  offset {e['offset']}"


def _epoch_entry_text(e: Obj) -> str:
    return f"  leader epoch {e['epoch']} from offset {e['start_offset']}"


def _partition_metadata_text(e: Obj) -> str:
    return f"  topic id {e['topic_id']}  (version {e['version']})"


def _fields_text(e: Obj) -> str:
    """Every field but the type, ``name value`` (names in words), nulls and blanks left out."""
    parts = []
    for k, v in e.items():
        if k == "type" or v is None or v == "":
            continue
        name = "".join(f" {c.lower()}" if c.isupper() else c for c in k).replace("_", " ")
        parts.append(f"{name} {_text(v) if isinstance(v, str) else to_json(v)}")
    return "  " + ("  ".join(parts) if parts else "(empty)")


def _sanity_check_text(e: Obj) -> str:
    return f"  sanity check: {'passed' if e['passed'] else 'FAILED'}"


# dump-segments' own objects, in words (klogtool.output renders batches, records, findings)
ENTRY_TEXT: dict[str, Callable[[Obj], str]] = {
    "index_entry": _index_entry_text,
    "timeindex_entry": _timeindex_entry_text,
    "txn_entry": _txn_entry_text,
    "producer_entry": _producer_entry_text,
    "checkpoint_entry": _checkpoint_entry_text,
    "epoch_entry": _epoch_entry_text,
    "partition_metadata": _partition_metadata_text,
    "meta_properties": _fields_text,
    "quorum_state": _fields_text,
    "clean_shutdown": _fields_text,
    "sanity_check": _sanity_check_text,
}


_CONTROL_JSON_NAMES = {
    "SNAPSHOT_HEADER": "SnapshotHeader",
    "SNAPSHOT_FOOTER": "SnapshotFooter",
    "KRAFT_VERSION": "KRaftVersion",
    "KRAFT_VOTERS": "KRaftVoters",
}


def _control_text(ctl: Obj) -> str:
    name = ctl["type"]
    if name in ("ABORT", "COMMIT"):
        return f" endTxnMarker: {name} coordinatorEpoch: {ctl.get('coordinatorEpoch')}"
    if name in _CONTROL_JSON_NAMES:
        fields = {k: v for k, v in ctl.items() if k not in ("type", "type_id")}
        return f" {_CONTROL_JSON_NAMES[name]} {to_json(fields)}"
    return f" controlType: {name}({ctl.get('type_id', -1)})"


# Shown in the man page's EXAMPLES section: (what it does, the command lines).
EXAMPLES: list[tuple[str, list[str]]] = [
    (
        "Batches of one segment, then every record with keys and values:",
        [
            "klogtool dump-segments /var/lib/kafka/data/orders-3/00000000000000000000.log",
            "klogtool dump-segments --deep-iteration --print-data orders-3",
        ],
    ),
    (
        "Exactly what kafka-dump-log.sh prints, for scripts written for it; its own command "
        "line (its option names choose --format kafka):",
        [
            "klogtool dump-segments --format kafka --deep-iteration orders-3",
            "klogtool dump-segments --files orders-3/00000000000000000000.log --print-data-log",
        ],
    ),
    (
        "Offsets 1000 to 1999 as JSON Lines; a segment piped in on stdin; an index piped in:",
        [
            "klogtool dump-segments --format jsonl --offsets 1000:1999 orders-3",
            "cat 00000000000000000000.log | klogtool dump-segments -",
            "cat 00000000000000000000.index | klogtool dump-segments --kind index -",
        ],
    ),
    (
        "Values in Confluent's wire format as JSON (schema id, subject, the decoded Avro, "
        "Protobuf or JSON Schema payload), with the _schemas topic of another copy:",
        [
            "klogtool dump-segments --print-data --value-decoder confluent orders-3",
            "klogtool dump-segments --print-data --value-decoder confluent "
            "--schemas /copy/broker1/_schemas-0 orders-3",
        ],
    ),
]

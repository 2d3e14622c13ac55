"""What the Arrow reader reads: its options (level, payload decoders, columns, what to do with a
corrupt segment, a record filter), the columns they give, and their Arrow schema. The Spark
data source derives its Spark schema from the same column kinds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from klogtool.formats.payloads.confluent import CONFLUENT_DECODER, SchemaRegistry
from klogtool.log.column_kinds import (
    BINARY,
    BOOLEAN,
    HEADERS_BINARY,
    HEADERS_STRING,
    INT,
    LONG,
    STRING,
    TIMESTAMP,
    arrow_type,
)
from klogtool.log.context import ReadContext
from klogtool.log.record_filter import RecordFilter

if TYPE_CHECKING:
    import pyarrow as pa

LEVELS = ("records", "batches")


ON_CORRUPT = ("fail", "skip", "report")


# How keys and values leave the reader: raw bytes, or text rendered by a payload decoder;
# ``none`` drops the column; ``confluent`` keeps the raw bytes and adds ``key_decoded`` /
# ``value_decoded`` beside them: the JSON text of the payload decoded from Confluent's wire
# format with ReadOptions.schemas (klogtool.formats.payloads.confluent.decode_confluent).
# ``internal`` is the same for the internal topics (__consumer_offsets, __transaction_state,
# __share_group_state, __cluster_metadata): key and value decoded together into
# kafka-dump-log's JSON, by the partition's topic (null for another topic).
INTERNAL_DECODER = "internal"
PAYLOAD_DECODERS = ("binary", "utf8", "base64", "hex", "none", CONFLUENT_DECODER, INTERNAL_DECODER)
RAW_DECODERS = ("binary", CONFLUENT_DECODER, INTERNAL_DECODER)  # the column holds the bytes
DECODED = (CONFLUENT_DECODER, INTERNAL_DECODER)  # with a *_decoded column beside the bytes


_EXTRAS = [
    ("segment", LONG),
    ("position", LONG),
    ("magic", INT),
    ("compression", STRING),
    ("producer_id", LONG),
    ("producer_epoch", INT),
    ("sequence", INT),
    ("partition_leader_epoch", INT),
    ("is_transactional", BOOLEAN),
    ("is_control", BOOLEAN),
]


BATCH_COLUMNS = [
    ("topic", STRING),
    ("partition", INT),
    ("segment", LONG),
    ("position", LONG),
    ("base_offset", LONG),
    ("last_offset", LONG),
    ("count", INT),
    ("magic", INT),
    ("compression", STRING),
    ("crc", LONG),
    ("crc_valid", BOOLEAN),
    ("size", INT),
    ("partition_leader_epoch", INT),
    ("timestamp_type", STRING),
    ("base_timestamp", LONG),
    ("max_timestamp", LONG),
    ("producer_id", LONG),
    ("producer_epoch", INT),
    ("base_sequence", INT),
    ("last_sequence", INT),
    ("is_transactional", BOOLEAN),
    ("is_control", BOOLEAN),
    ("delete_horizon_ms", LONG),
]


ERROR_COLUMNS = [("error_code", STRING), ("error_message", STRING)]


@dataclass(frozen=True)
class ReadOptions:
    """What a reader emits and how it treats bad data (the data source's options)."""

    level: str = "records"
    verify: bool = True  # check batch CRCs (and legacy inner CRCs) while reading
    ctx: ReadContext = field(kw_only=True, compare=False)
    on_corrupt: str = "fail"
    key_decoder: str = "binary"
    value_decoder: str = "binary"
    # pushed-down bounds (rows outside them may still be emitted: Spark re-checks them)
    min_offset: int | None = None
    max_offset: int | None = None
    min_timestamp_us: int | None = None
    where: RecordFilter | None = None  # find's filters: only the records they select
    # the schema registry's schemas for the confluent decoder (None: schema ids only)
    schemas: SchemaRegistry | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {self.level!r}")
        if self.on_corrupt not in ON_CORRUPT:
            raise ValueError(
                f"onCorrupt must be one of {', '.join(ON_CORRUPT)}, not {self.on_corrupt!r}"
            )
        for d in (self.key_decoder, self.value_decoder):
            if d not in PAYLOAD_DECODERS:
                raise ValueError(f"decoder must be one of {', '.join(PAYLOAD_DECODERS)}, not {d!r}")
        if self.where is not None and self.where.active and self.level != "records":
            raise ValueError("where selects records: it needs level records")


def columns(opts: ReadOptions) -> list[tuple[str, str]]:
    """``(name, kind)`` of every column the options produce, in order."""
    if opts.level == "batches":
        cols = list(BATCH_COLUMNS)
    else:
        cols = []
        for name, decoder in (("key", opts.key_decoder), ("value", opts.value_decoder)):
            if decoder != "none":
                cols.append((name, BINARY if decoder in RAW_DECODERS else STRING))
            if decoder in DECODED:
                cols.append((f"{name}_decoded", STRING))
        cols += [
            ("topic", STRING),
            ("partition", INT),
            ("offset", LONG),
            ("timestamp", TIMESTAMP),
            ("timestampType", INT),
            (
                "headers",
                HEADERS_BINARY if opts.value_decoder in ("none", *RAW_DECODERS) else HEADERS_STRING,
            ),
        ]
        cols += _EXTRAS
    if opts.on_corrupt == "report":
        cols += ERROR_COLUMNS
    return cols


def arrow_schema(opts: ReadOptions, names: Sequence[str] | None = None) -> pa.Schema:
    """The Arrow schema of the reader's output (optionally only ``names``, in that order)."""
    import pyarrow as pa

    kinds = dict(columns(opts))
    selected = list(kinds) if names is None else list(names)
    unknown = [n for n in selected if n not in kinds]
    if unknown:
        raise ValueError(
            f"unknown column(s) {', '.join(unknown)}; the columns are {', '.join(kinds)}"
        )
    return pa.schema([pa.field(n, arrow_type(kinds[n])) for n in selected])

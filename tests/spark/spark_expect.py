"""Expected rows for the Spark tests, from the pure-Python dump (an independent path: the
Dumper's JSON objects), and the normalisation that makes both sides comparable."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

from support.paths import CORPUS

from klogtool.log import layout
from klogtool.log.context import ReadContext
from klogtool.log.read.dumper import Dumper, DumpOptions
from klogtool.log.splits import list_segments

TS_TYPES = {"NoTimestampType": -1, "CreateTime": 0, "LogAppendTime": 1}

# (topic, partition, segment, offset, timestamp ms, timestampType, key, value, headers,
#  sequence, position, magic, compression, producer_id, producer_epoch, partition_leader_epoch,
#  is_transactional, is_control)
Row = tuple[Any, ...]


def corpus_dirs() -> list[str]:
    """Every directory of the real corpus that holds segments (read in place)."""
    return sorted({str(p.parent) for p in CORPUS.rglob("*.log")})


def b64(x: Any) -> str | None:
    return None if x is None else base64.b64encode(bytes(x)).decode("ascii")


def _key_value(record: dict[str, Any], control: bool) -> tuple[Any, Any]:
    """A record's key and value as the rows hold them: a control record's as ("control",
    type), None (``--decoder none`` shows its raw bytes: their type is decoded here)."""
    if not control:
        return record.get("key"), record.get("value")
    from klogtool.formats.payloads.control import decode_control_record

    key, value = record.get("key"), record.get("value")
    if key is None or value is None:
        return ("control", None), None
    ctl = decode_control_record(base64.b64decode(key), base64.b64decode(value))
    return ("control", ctl.type_name), None


def dump_rows(paths: Sequence[str], *, allow_findings: bool = False) -> list[Row]:
    """The records of every segment of PATHs as ``dump-segments --deep-iteration
    --print-data --format jsonl --decoder none`` sees them."""
    files = [s.path for s in list_segments(paths)]
    opts = DumpOptions(
        ctx=ReadContext.of(),
        deep=True,
        print_data=True,
        key_decoder="base64",
        value_decoder="base64",
        decoder="none",
    )
    rows: list[Row] = []
    batch: dict[str, Any] = {}
    where: tuple[Any, ...] = (None, None, None)
    for obj in Dumper(files, opts).objects():
        kind = obj["type"]
        if kind == "file":
            parsed = layout.parse_partition_dir_name(Path(obj["path"]).parent.name)
            where = (*(parsed or (None, None)), layout.offset_from_name(Path(obj["path"])))
        elif kind == "batch":
            batch = obj
        elif kind == "record":
            headers = tuple((h["key"], h["value"]) for h in obj["headers"])
            rows.append(
                (
                    *where,
                    obj["offset"],
                    obj["timestamp"],
                    TS_TYPES[batch["timestamp_type"]],
                    *_key_value(obj, batch["is_control"]),
                    headers or None,
                    obj["sequence"],
                    obj["position"],
                    batch["magic"],
                    batch["compression"],
                    batch["producer_id"],
                    batch["producer_epoch"],
                    batch["partition_leader_epoch"],
                    batch["is_transactional"],
                    batch["is_control"],
                )
            )
        elif kind == "finding" and not allow_findings:
            raise AssertionError(f"the dump found a problem: {obj}")
    return rows


def table_rows(table: Any) -> list[Row]:
    """Rows of an Arrow table with the kafka-segments record schema, normalised like
    :func:`dump_rows` (built column by column: the corpus has ~90k rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    i = table.schema.get_field_index("timestamp")
    if pa.types.is_timestamp(table.schema.field(i).type):
        ms = pc.divide(table.column(i).cast(pa.int64()), 1000)
        table = table.set_column(i, "timestamp", ms)
    c = table.to_pydict()
    n = table.num_rows

    def text(col: list[Any]) -> list[Any]:
        return [v if v is None or isinstance(v, str) else b64(v) for v in col]

    keys = text(c.get("key", [None] * n))
    values = text(c.get("value", [None] * n))
    headers = [
        None if h is None else tuple((x["key"], text([x["value"]])[0]) for x in h)
        for h in c["headers"]
    ]
    cols = [c[name] for name in _NAMES]
    rows: list[Row] = []
    for j, r in enumerate(zip(*cols, strict=True)):
        key, value = keys[j], values[j]
        if r[-1]:  # is_control: the control type, as the dump shows it
            from klogtool.formats.payloads.control import decode_control_record

            raw_key, raw_value = c.get("key", [None] * n)[j], c.get("value", [None] * n)[j]
            raw = isinstance(raw_key, bytes) and isinstance(raw_value, bytes)
            key = ("control", decode_control_record(raw_key, raw_value).type_name if raw else None)
            value = None
        rows.append((*r[:6], key, value, headers[j], *r[6:]))
    return rows


_NAMES = (
    "topic",
    "partition",
    "segment",
    "offset",
    "timestamp",
    "timestampType",
    "sequence",
    "position",
    "magic",
    "compression",
    "producer_id",
    "producer_epoch",
    "partition_leader_epoch",
    "is_transactional",
    "is_control",
)


def _norm(r: dict[str, Any], control_payloads: bool) -> Row:
    ts = r["timestamp"]
    if ts is not None and not isinstance(ts, int):
        from datetime import datetime, timedelta

        ts = (ts - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    key, value = r.get("key"), r.get("value")
    if r["is_control"] and not control_payloads:
        from klogtool.formats.payloads.control import decode_control_record

        if isinstance(key, str) and isinstance(value, str):  # base64 text (JSON Lines)
            key, value = base64.b64decode(key), base64.b64decode(value)
        raw = isinstance(key, bytes) and isinstance(value, bytes)
        ctl = decode_control_record(key, value).type_name if raw else None
        key, value = ("control", ctl), None
    if not isinstance(key, (str, type(None), tuple)):
        key = b64(key)
    if not isinstance(value, (str, type(None))):
        value = b64(value)
    headers = r["headers"]
    if headers is not None:
        headers = tuple(
            (h["key"], h["value"] if isinstance(h["value"], (str, type(None))) else b64(h["value"]))
            for h in headers
        )
    return (
        r["topic"],
        r["partition"],
        r["segment"],
        r["offset"],
        ts,
        r["timestampType"],
        key,
        value,
        headers,
        r["sequence"],
        r["position"],
        r["magic"],
        r["compression"],
        r["producer_id"],
        r["producer_epoch"],
        r["partition_leader_epoch"],
        r["is_transactional"],
        r["is_control"],
    )


def norm_dicts(rows: Iterable[dict[str, Any]]) -> list[Row]:
    return [_norm(r, False) for r in rows]


def dump_rows_for_compare(paths: Sequence[str], *, allow_findings: bool = False) -> list[Row]:
    """:func:`dump_rows` with control records as the dump decodes them: ("control", type)."""
    return dump_rows(paths, allow_findings=allow_findings)


def assert_int64_micros(parquet_file: Path) -> None:
    """The timestamp column is INT64 microseconds adjusted to UTC (not Spark's INT96)."""
    import pyarrow.parquet as pq

    schema = pq.ParquetFile(parquet_file).schema
    col = next(schema.column(i) for i in range(len(schema)) if schema.column(i).name == "timestamp")
    assert col.physical_type == "INT64", col
    logical = str(col.logical_type)
    assert "timeUnit=microseconds" in logical and "isAdjustedToUTC=true" in logical, logical

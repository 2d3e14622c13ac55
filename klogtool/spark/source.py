"""The ``kafka-segments`` PySpark data source (the README's Export section).

``spark.read.format("kafka-segments").load(path)`` over segment files, partition dirs or log
dirs (``.load([p1, p2])`` for several). The reading is :mod:`klogtool.log.export.arrow_reader`'s:
this module only maps options, schemas and pushed filters, and hands splits to tasks.

Options (all optional):

- ``level``: ``records`` (default, one row per record) | ``batches`` (one row per batch) |
  ``findings`` (``verify``'s findings, one summary row per unit: what ``verify --engine
  spark`` runs);
- ``verify``: ``true`` (default: check CRCs while reading) | ``false``;
- ``maxBatchBytes``: decompression limit per batch (default 64 MiB; ``64M`` style sizes too);
- ``onCorrupt``: ``fail`` (default) | ``skip`` | ``report`` (adds ``error_code`` and
  ``error_message`` columns and one row per problem);
- ``targetSplitBytes``: bin-packing target (default 128 MiB); ``minSplits``: at least this
  many splits when there is enough data (default 1);
- ``keyDecoder`` / ``valueDecoder``: ``binary`` (default) | ``utf8`` | ``base64`` | ``hex`` |
  ``none`` (a text decoder makes the column a string; ``none`` drops it) | ``confluent``
  (the bytes, and ``key_decoded``/``value_decoded`` beside them: here with no schemas, so
  each shows its schema id and an error; ``klogtool export --engine local`` decodes them,
  docs/confluent.md);
- ``deep``: with ``level=findings``, ``verify --deep``;
- ``where``: only the records ``klogtool find`` would select, as find's options in one
  string (``--key customer-42 --from-time 2024-05-01``); with ``level=records``.

A user-supplied schema selects columns (by name, in its order; types must match). Filters on
``topic`` and ``partition`` prune whole segments at planning and are fully handled; filters on
``offset`` skip segments (by file name) and batches (by header), filters ``timestamp >= / >``
skip v2 batches by their max timestamp; those two are handed back to Spark, which re-checks
every row. Pushdown needs ``spark.sql.python.filterPushdown.enabled=true``:
:func:`klogtool.spark.register` sets it.

Everything the reader keeps is small and picklable (options and PATH strings); the file lists
travel in the splits. Give absolute paths: planning runs in a Python worker started by the JVM,
whose working directory is the JVM's (:func:`klogtool.spark.jobs.read` makes them absolute).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from klogtool.formats import DEFAULT_MAX_BATCH_BYTES, ReadLimits
from klogtool.log import column_kinds, splits
from klogtool.log.context import ReadContext
from klogtool.log.export import arrow_reader as core
from klogtool.log.export import spec
from klogtool.log.record_filter import parse_size, parse_where

_DEFAULT_SPLIT = str(splits.DEFAULT_TARGET_SPLIT_BYTES)
NAME = "kafka-segments"
FINDINGS = "findings"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Pushed timestamps are compared with this much slack: a batch is skipped only when it is
# certainly too old, whatever time zone a naive datetime literal was meant in.
_TIMESTAMP_SLACK_US = 2 * 86_400 * 1_000_000


def spark_type(kind: str) -> DataType:
    simple: dict[str, DataType] = {
        column_kinds.BINARY: BinaryType(),
        column_kinds.STRING: StringType(),
        column_kinds.INT: IntegerType(),
        column_kinds.LONG: LongType(),
        column_kinds.TIMESTAMP: TimestampType(),
        column_kinds.BOOLEAN: BooleanType(),
    }
    if kind in simple:
        return simple[kind]
    value = BinaryType() if kind == column_kinds.HEADERS_BINARY else StringType()
    return ArrayType(StructType([StructField("key", StringType()), StructField("value", value)]))


def struct_type(cols: Sequence[tuple[str, str]]) -> StructType:
    return StructType([StructField(name, spark_type(kind)) for name, kind in cols])


def _bool(text: str, name: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1", "yes"):
        return True
    if t in ("false", "0", "no"):
        return False
    raise ValueError(f"{name} must be true or false, not {text!r}")


def _options(options: Any) -> dict[str, str]:
    """Spark lower-cases option keys; so do we."""
    return {str(k).lower(): str(v) for k, v in dict(options).items()}


def _context(options: dict[str, str]) -> ReadContext:
    """The reads' context of a task: ``maxBatchBytes``, the engine of the process it runs
    in (an executor chooses its own when it starts)."""
    size = parse_size(options.get("maxbatchbytes", str(DEFAULT_MAX_BATCH_BYTES)))
    if size <= 0:
        raise ValueError("maxBatchBytes must be positive")
    return ReadContext.of(ReadLimits(size))


def read_options(options: dict[str, str]) -> spec.ReadOptions:
    return spec.ReadOptions(
        level=options.get("level", "records"),
        verify=_bool(options.get("verify", "true"), "verify"),
        ctx=_context(options),
        on_corrupt=options.get("oncorrupt", "fail"),
        key_decoder=options.get("keydecoder", "binary"),
        value_decoder=options.get("valuedecoder", "binary"),
        where=parse_where(options["where"]) if options.get("where") else None,
    )


def paths_of(options: dict[str, str]) -> list[str]:
    if "paths" in options:
        paths = json.loads(options["paths"])
        if "path" in options:
            paths = [options["path"], *paths]
        return [str(p) for p in paths]
    if "path" in options:
        return [options["path"]]
    raise ValueError("kafka-segments needs a path: .load(path) or .load([path, ...])")


class KafkaSegmentsDataSource(DataSource):
    """``format("kafka-segments")``: Kafka segments as records, batches or verify findings."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        opts = _options(self.options)
        if opts.get("level") == FINDINGS:
            from klogtool.log.check import fleet_verify

            return struct_type(fleet_verify.FINDINGS_COLUMNS)
        return struct_type(spec.columns(read_options(opts)))

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = _options(self.options)
        if opts.get("level") == FINDINGS:
            return FindingsReader(opts, schema)
        return KafkaSegmentsReader(opts, schema)


class SplitPartition(InputPartition):
    """One task's work: a :class:`~klogtool.log.export.arrow_reader.Split` (or a verify split)."""


def _check_schema(schema: StructType, cols: Sequence[tuple[str, str]]) -> None:
    kinds = dict(cols)
    for f in schema.fields:
        if f.name not in kinds:
            raise ValueError(
                f"kafka-segments has no column {f.name!r}; its columns are {', '.join(kinds)}"
            )
        want = spark_type(kinds[f.name])
        if f.dataType != want:
            raise ValueError(
                f"column {f.name!r} is {want.simpleString()}, not {f.dataType.simpleString()}"
            )


def _micros(value: Any) -> int | None:
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.astimezone()
        return (aware - _EPOCH) // timedelta(microseconds=1)
    return None


class KafkaSegmentsReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType):
        self.paths = paths_of(options)
        self.opts = read_options(options)
        _check_schema(schema, spec.columns(self.opts))
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.target = parse_size(
            options.get("targetsplitbytes", str(splits.DEFAULT_TARGET_SPLIT_BYTES))
        )
        self.min_splits = int(options.get("minsplits", "1"))
        self.prune = splits.where_prune(self.opts.where)

    # -- pushdown ------------------------------------------------------------------------
    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802 (pyspark API)
        kept: list[Filter] = []
        for f in filters:
            if not self._push(f):
                kept.append(f)
        return kept

    def _push(self, f: Filter) -> bool:
        """Apply ``f`` where it helps; True when it is fully handled (Spark drops it)."""
        attr = getattr(f, "attribute", None)
        if attr is None or len(attr) != 1:
            return False
        col = attr[0]
        value = getattr(f, "value", None)
        p = self.prune
        if col == "topic" and isinstance(f, (EqualTo, In)):
            values: set[Any] = set(f.value) if isinstance(f, In) else {value}
            p.topics = values if p.topics is None else p.topics & values
            return True
        if col == "partition" and isinstance(f, (EqualTo, In)):
            values = set(f.value) if isinstance(f, In) else {value}
            p.partitions = values if p.partitions is None else p.partitions & values
            return True
        if col == "partition" and isinstance(value, int):
            lo, hi = _bounds(f, value)
            if lo is not None:
                p.partition_min = lo if p.partition_min is None else max(p.partition_min, lo)
            if hi is not None:
                p.partition_max = hi if p.partition_max is None else min(p.partition_max, hi)
            return lo is not None or hi is not None
        if col == "offset":
            if isinstance(f, In) and value and all(isinstance(v, int) for v in value):
                self._offsets(min(value), max(value))
            elif isinstance(value, int) and not isinstance(value, bool):
                self._offsets(*_bounds(f, value))
            return False  # Spark re-checks the rows
        if col == "timestamp" and isinstance(f, (GreaterThan, GreaterThanOrEqual, EqualTo)):
            us = _micros(value)
            if us is not None:
                lo_us = us - _TIMESTAMP_SLACK_US
                cur = self.opts.min_timestamp_us
                self._replace(min_timestamp_us=lo_us if cur is None else max(cur, lo_us))
            return False
        return False

    def _offsets(self, lo: int | None, hi: int | None) -> None:
        o = self.opts
        if lo is not None and o.min_offset is not None:
            lo = max(lo, o.min_offset)
        if hi is not None and o.max_offset is not None:
            hi = min(hi, o.max_offset)
        lo = o.min_offset if lo is None else lo
        hi = o.max_offset if hi is None else hi
        self.prune.min_offset, self.prune.max_offset = lo, hi
        self._replace(min_offset=lo, max_offset=hi)

    def _replace(self, **changes: Any) -> None:
        self.opts = replace(self.opts, **changes)

    # -- planning and reading --------------------------------------------------------------
    def partitions(self) -> list[InputPartition]:
        planned = splits.plan_splits(
            self.paths,
            target_split_bytes=self.target,
            min_splits=self.min_splits,
            prune=self.prune,
        )
        return [SplitPartition(s) for s in planned]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if partition.value is None:  # no splits: Spark still runs one task, without a value
            return
        yield from core.read_split(partition.value, self.opts, self.arrow_schema)


def _bounds(f: Filter, value: int) -> tuple[int | None, int | None]:
    """Inclusive (low, high) bounds a comparison puts on an integer column."""
    if isinstance(f, EqualTo):
        return value, value
    if isinstance(f, GreaterThan):
        return value + 1, None
    if isinstance(f, GreaterThanOrEqual):
        return value, None
    if isinstance(f, LessThan):
        return None, value - 1
    if isinstance(f, LessThanOrEqual):
        return None, value
    return None, None


class FindingsReader(DataSourceReader):
    """``level=findings``: verify units bin-packed into splits, the verifier run per unit."""

    def __init__(self, options: dict[str, str], schema: StructType):
        from klogtool.log.check import fleet_verify

        self.options = {k: v for k, v in options.items() if k == "splits"}
        self.paths = paths_of(options) if "splits" not in options else []
        self.deep = _bool(options.get("deep", "false"), "deep")
        self.ctx = _context(options)
        self.target = parse_size(
            options.get("targetsplitbytes", str(splits.DEFAULT_TARGET_SPLIT_BYTES))
        )
        self.min_splits = int(options.get("minsplits", "1"))
        _check_schema(schema, fleet_verify.FINDINGS_COLUMNS)
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")

    def partitions(self) -> list[InputPartition]:
        from klogtool.log.check import fleet_verify

        if "splits" in self.options:  # planned by the driver (verify --engine spark)
            splits = fleet_verify.splits_from_json(self.options["splits"])
        else:
            plan = fleet_verify.plan(self.paths)
            if plan.error is not None:
                raise plan.error
            splits = plan.splits(self.target, self.min_splits)
        return [SplitPartition(s) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa

        from klogtool.log.check import fleet_verify

        if partition.value is None:  # nothing to verify
            return
        for unit in partition.value.units:
            res = fleet_verify.run_unit(unit, self.ctx, deep=self.deep)
            rows = fleet_verify.result_rows(unit, res)
            yield pa.RecordBatch.from_pylist(rows, schema=self.arrow_schema)

"""The ``kafka-segments`` data source on a real ``local[2]`` SparkSession: rows equal the
pure-Python dump's records (fixtures and the real corpus), schema, user schemas, levels,
pushdown, and corrupt inputs under each ``onCorrupt`` mode.

Spark queries cost seconds here, so each test asks few of them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from spark_env import require_spark
from spark_expect import dump_rows_for_compare, table_rows
from support.paths import CORRUPT, LOGDIR

require_spark()

from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, LessThan  # noqa: E402
from pyspark.sql.pandas.types import to_arrow_schema  # noqa: E402

from klogtool.errors import InputError  # noqa: E402
from klogtool.log.check import fleet_verify  # noqa: E402
from klogtool.log.context import ReadContext  # noqa: E402
from klogtool.log.export import arrow_reader as ar  # noqa: E402
from klogtool.log.export import spec  # noqa: E402
from klogtool.spark import jobs, source  # noqa: E402

KAFKA_SOURCE = (
    "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
    "timestamp:timestamp,timestampType:int,headers:array<struct<key:string,value:binary>>"
)


def test_spark_and_arrow_schemas_agree() -> None:
    for opts in (
        spec.ReadOptions(ctx=ReadContext.of()),
        spec.ReadOptions(
            ctx=ReadContext.of(), on_corrupt="report", key_decoder="utf8", value_decoder="hex"
        ),
        spec.ReadOptions(ctx=ReadContext.of(), level="batches"),
        spec.ReadOptions(ctx=ReadContext.of(), value_decoder="none"),
    ):
        spark_schema = source.struct_type(spec.columns(opts))
        assert to_arrow_schema(spark_schema, timezone="UTC") == spec.arrow_schema(opts)
    findings = source.struct_type(fleet_verify.FINDINGS_COLUMNS)
    assert to_arrow_schema(findings, timezone="UTC").names[:3] == ["type", "unit", "seq"]


def test_rows_equal_the_dump(spark) -> None:
    paths = [str(LOGDIR), str(CORRUPT / "zero-fill-0")]
    df = jobs.read(spark, paths, {})
    assert df.schema.simpleString().startswith(KAFKA_SOURCE + ",segment:bigint,position:bigint")
    assert table_rows(df.toArrow()) == dump_rows_for_compare(paths, allow_findings=True)


def test_corpus_rows_equal_the_dump(spark, corpus) -> None:
    dirs, expected = corpus
    df = jobs.read(spark, dirs, {"targetSplitBytes": str(4 << 20)})
    assert table_rows(df.toArrow()) == expected


def test_user_schema_batch_level_and_no_data(spark, tmp_path) -> None:
    df = (
        spark.read.format("kafka-segments")
        .schema("offset long, topic string")
        .load(str(LOGDIR / "v2-lz4-0"))
    )
    assert [tuple(r) for r in df.collect()] == [(o, "v2-lz4") for o in range(27)]
    batches = jobs.read(spark, [str(LOGDIR)], {"level": "batches"})
    rows = batches.select("topic", "base_offset", "count", "crc_valid").collect()
    assert len(rows) == 88 and all(r.crc_valid for r in rows)
    empty = tmp_path / "empty-0"
    empty.mkdir()
    (empty / "00000000000000000000.log").write_bytes(b"")
    assert jobs.read(spark, [str(empty)], {}).count() == 0  # no splits at all
    with pytest.raises(Exception, match="no column 'nope'"):
        spark.read.format("kafka-segments").schema("nope long").load(str(LOGDIR)).collect()


def test_pushdown(spark) -> None:
    # planning-side effects, without Spark: topic/partition prune segments and are consumed,
    # offset and timestamp bounds are kept for Spark to re-check
    reader = source.KafkaSegmentsReader(
        {"path": str(LOGDIR)},
        source.struct_type(spec.columns(spec.ReadOptions(ctx=ReadContext.of()))),
    )
    ts = datetime(2023, 11, 14, 22, 13, 20, 10_000, tzinfo=UTC)
    filters = [
        In(("topic",), ("v2-none", "v2-zstd")),
        EqualTo(("partition",), 0),
        GreaterThanOrEqual(("offset",), 20),
        LessThan(("offset",), 25),
        GreaterThanOrEqual(("timestamp",), ts),
    ]
    kept = list(reader.pushFilters(filters))
    assert kept == filters[2:]
    splits = reader.partitions()
    ranges = [r for s in splits for r in s.value.ranges]
    assert [(r.topic, r.segment) for r in ranges] == [("v2-none", 17), ("v2-zstd", 17)]
    assert (reader.opts.min_offset, reader.opts.max_offset) == (20, 24)

    # and through Spark (the conf set by register() makes pushFilters legal)
    where = (
        "topic IN ('v2-none', 'v2-zstd') AND partition = 0 AND offset >= 20 AND offset < 25 "
        "AND timestamp >= timestamp'2023-11-14 22:13:20.010'"
    )
    df = jobs.read(spark, [str(LOGDIR)], {})
    got = sorted(tuple(r) for r in df.where(where).select("topic", "offset").collect())
    everything = table_rows(ar_table([str(LOGDIR)]))
    cut = 1_700_000_000_010
    want = sorted(
        (r[0], r[3])
        for r in everything
        if r[0] in ("v2-none", "v2-zstd") and 20 <= r[3] < 25 and r[4] >= cut
    )
    assert got == want and got


def ar_table(paths):
    import pyarrow as pa

    opts = spec.ReadOptions(ctx=ReadContext.of())
    return pa.Table.from_batches(list(ar.read_paths(paths, opts)), schema=spec.arrow_schema(opts))


def test_on_corrupt_modes(spark) -> None:
    path = str(CORRUPT / "torn-tail-0")
    with pytest.raises(InputError) as info, jobs.failures():
        jobs.read(spark, [path], {}).count()
    assert (info.value.code, info.value.position) == ("torn-tail", 341)
    assert info.value.path.endswith("torn-tail-0/00000000000000000017.log")
    report = jobs.read(spark, [str(CORRUPT)], {"onCorrupt": "report"})
    errors = sorted(
        tuple(r)
        for r in report.where("error_code IS NOT NULL")
        .select("topic", "segment", "position", "error_code")
        .collect()
    )
    assert errors == [
        ("crc-flip", 0, 242, "crc-mismatch"),
        ("garbage-tail", 17, 499, "record-too-small"),
        ("torn-tail", 17, 341, "torn-tail"),
    ]
    skipped = jobs.read(spark, [str(CORRUPT / "crc-flip-0")], {"onCorrupt": "skip"})
    offsets = [r.offset for r in skipped.select("offset").collect()]
    assert offsets == [o for o in range(27) if not 4 <= o <= 7]


def test_where_option_selects_what_find_finds(spark) -> None:
    from klogtool.log.read.dumper import DumpOptions
    from klogtool.log.read.finder import Finder, FindOptions
    from klogtool.log.record_filter import parse_where

    text = "--transaction committed --transaction none --value-regex '-[0-3]$' --offsets 1:"
    df = jobs.read(spark, [str(LOGDIR)], {"where": text})
    got = sorted(tuple(r) for r in df.select("topic", "partition", "offset").collect())
    finder = Finder(
        FindOptions(
            dump=DumpOptions(deep=True, print_data=True, ctx=ReadContext.of()),
            where=parse_where(text),
        )
    )
    want = sorted(
        (o["topic"], o["partition"], o["offset"])
        for o in finder.objects([str(LOGDIR)])
        if o["type"] == "record"
    )
    assert got == want and got
    with pytest.raises(ValueError, match="No such option"):
        source.read_options({"where": "--newest-first"})

"""The split reader behind the Spark source and ``export --engine local`` (pyarrow only, no
JVM): rows equal the pure-Python dump's records, whatever the split size, for every fixture
partition and the real corpus; corrupt inputs under each ``on_corrupt`` mode; pushdown."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from spark_env import require_pyarrow
from spark_expect import dump_rows_for_compare, table_rows
from support.paths import CORRUPT, LOGDIR

from klogtool.formats import ReadLimits, codecs, payloads, v2
from klogtool.formats.batch import Record
from klogtool.log import column_kinds, splits
from klogtool.log.context import ReadContext
from klogtool.log.export import arrow_reader as ar
from klogtool.log.export import spec

pa = require_pyarrow()

PARTITIONS = sorted(p.name for p in LOGDIR.iterdir() if p.is_dir())


def read(paths, opts=None, **plan):
    opts = opts or spec.ReadOptions(ctx=ReadContext.of())
    schema = spec.arrow_schema(opts)
    batches = [
        b
        for s in splits.plan_splits([str(p) for p in paths], **plan)
        for b in ar.read_split(s, opts)
    ]
    for b in batches:
        assert b.schema == schema
    return pa.Table.from_batches(batches, schema=schema)


@pytest.mark.parametrize("name", PARTITIONS)
def test_every_fixture_partition_equals_the_dump(name: str) -> None:
    path = LOGDIR / name
    expected = dump_rows_for_compare([str(path)])
    assert expected, "every fixture partition has records"
    assert table_rows(read([path])) == expected
    assert (
        table_rows(read([path], spec.ReadOptions(ctx=ReadContext.of(), verify=False))) == expected
    )
    # cut into ranges of ~100 bytes: the same rows, each exactly once
    assert table_rows(read([path], target_split_bytes=100)) == expected


def test_the_real_corpus_equals_the_dump(corpus) -> None:
    dirs, expected = corpus
    assert len(expected) > 80_000
    assert table_rows(read(dirs)) == expected
    # a partition of many segments, cut small and packed across splits
    many = [d for d in dirs if d.endswith("test_topic_a-0")]
    assert many
    assert table_rows(read(many, target_split_bytes=16 << 10, min_splits=4)) == (
        dump_rows_for_compare(many)
    )


def test_columns_start_with_the_spark_kafka_source() -> None:
    cols = spec.columns(spec.ReadOptions(ctx=ReadContext.of()))
    assert cols[:8] == [
        ("key", column_kinds.BINARY),
        ("value", column_kinds.BINARY),
        ("topic", column_kinds.STRING),
        ("partition", column_kinds.INT),
        ("offset", column_kinds.LONG),
        ("timestamp", column_kinds.TIMESTAMP),
        ("timestampType", column_kinds.INT),
        ("headers", column_kinds.HEADERS_BINARY),
    ]
    assert [n for n, _ in cols[8:]] == [
        "segment",
        "position",
        "magic",
        "compression",
        "producer_id",
        "producer_epoch",
        "sequence",
        "partition_leader_epoch",
        "is_transactional",
        "is_control",
    ]
    report = spec.columns(spec.ReadOptions(ctx=ReadContext.of(), on_corrupt="report"))
    assert [n for n, _ in report[-2:]] == ["error_code", "error_message"]


def test_batch_level_equals_the_dump_batches() -> None:
    from klogtool.log.read.dumper import Dumper, DumpOptions

    opts = spec.ReadOptions(ctx=ReadContext.of(), level="batches")
    table = read([LOGDIR], opts)
    files = [s.path for s in splits.list_segments([str(LOGDIR)])]
    dumper = Dumper(files, DumpOptions(ctx=ReadContext.of()))
    expected = [o for o in dumper.objects() if o["type"] == "batch"]
    rows = table.to_pylist()
    assert len(rows) == len(expected)
    for r, e in zip(rows, expected, strict=True):
        assert {k: r[k] for k in e if k != "type"} == {k: v for k, v in e.items() if k != "type"}
    no_crc = read([LOGDIR], spec.ReadOptions(ctx=ReadContext.of(), level="batches", verify=False))
    assert set(no_crc.column("crc_valid").to_pylist()) == {None}


@pytest.mark.parametrize("decoder", ["utf8", "base64", "hex"])
def test_text_decoders(decoder: str) -> None:
    path = LOGDIR / "v2-none-0"
    raw = read([path]).to_pylist()
    opts = spec.ReadOptions(ctx=ReadContext.of(), key_decoder=decoder, value_decoder=decoder)
    text = read([path], opts)
    assert text.schema.field("key").type == pa.string()
    assert text.schema.field("headers").type.value_type.field("value").type == pa.string()
    for r, t in zip(raw, text.to_pylist(), strict=True):
        assert t["key"] == payloads.decode_bytes(decoder, r["key"])
        assert t["value"] == payloads.decode_bytes(decoder, r["value"])
        for h, th in zip(r["headers"] or [], t["headers"] or [], strict=True):
            assert th["value"] == payloads.decode_bytes(decoder, h["value"])
    dropped = read(
        [path], spec.ReadOptions(ctx=ReadContext.of(), key_decoder="none", value_decoder="none")
    )
    assert "key" not in dropped.schema.names and "value" not in dropped.schema.names


# -- corruption ------------------------------------------------------------------------------
# scenario -> (code, position in the damaged segment, that segment's base offset)
DAMAGE = {
    "crc-flip-0": ("crc-mismatch", 242, 0),
    "torn-tail-0": ("torn-tail", 341, 17),
    "garbage-tail-0": ("record-too-small", 499, 17),
}


@pytest.mark.parametrize("scenario", sorted(DAMAGE))
def test_on_corrupt_fail_skip_report(scenario: str) -> None:
    code, position, segment = DAMAGE[scenario]
    path = CORRUPT / scenario
    with pytest.raises(ar.CorruptSegmentError) as info:
        read([path])
    err = info.value
    assert (err.code, err.position) == (code, position)
    assert err.path.endswith(f"{segment:020d}.log")
    again = pickle.loads(pickle.dumps(err))  # crosses process pools and Spark intact
    assert (again.path, again.position, again.code) == (err.path, err.position, err.code)
    found = ar.CorruptSegmentError.find(f"PythonException: ... {err} ...")
    assert found is not None and found.code == code

    dump = dump_rows_for_compare([str(path)], allow_findings=True)
    # skip: the dump's records without those of the bad batch (the dump walks over a CRC
    # mismatch; a torn or garbage tail holds no records)
    expected = [r for r in dump if not (r[2] == segment and r[10] == position)]
    skipped = read([path], spec.ReadOptions(ctx=ReadContext.of(), on_corrupt="skip"))
    assert table_rows(skipped) == expected
    report = read([path], spec.ReadOptions(ctx=ReadContext.of(), on_corrupt="report")).to_pylist()
    errors = [r for r in report if r["error_code"] is not None]
    assert [(e["error_code"], e["position"], e["segment"]) for e in errors] == [
        (code, position, segment)
    ]
    assert errors[0]["topic"] == scenario.rsplit("-", 1)[0] and errors[0]["error_message"]
    data = [r for r in report if r["error_code"] is None]
    assert [r for r in table_rows(pa.Table.from_pylist(data, schema=skipped.schema))] == expected
    # any split size gives the same rows and problems
    small = read(
        [path], spec.ReadOptions(ctx=ReadContext.of(), on_corrupt="report"), target_split_bytes=64
    )
    assert small.to_pylist() == report


def test_zero_fill_is_not_corruption() -> None:
    path = CORRUPT / "zero-fill-0"
    assert table_rows(read([path])) == dump_rows_for_compare([str(path)], allow_findings=True)


def test_a_decompression_bomb_is_a_problem_not_an_oom() -> None:
    path = LOGDIR / "v2-zstd-0"
    with pytest.raises(ar.CorruptSegmentError) as info:
        read([path], spec.ReadOptions(ctx=ReadContext.of(ReadLimits(16))))
    assert info.value.code == "limit-exceeded"


# -- planning and pushdown -------------------------------------------------------------------
def _segment(tmp: Path, batches: int = 40, per_batch: int = 25) -> Path:
    part = tmp / "big-3"
    part.mkdir()
    data = bytearray()
    for b in range(batches):
        recs = [
            Record(b * per_batch + i, 1_700_000_000_000 + b * 1000 + i, b"k%d" % i, b"v" * 50)
            for i in range(per_batch)
        ]
        data += v2.encode_batch(recs, compression=codecs.GZIP if b % 2 else codecs.NONE)
    (part / "00000000000000000000.log").write_bytes(data)
    return part


def test_large_segments_are_cut_and_read_once(tmp_path: Path) -> None:
    part = _segment(tmp_path)
    size = (part / "00000000000000000000.log").stat().st_size
    planned = splits.plan_splits([str(part)], target_split_bytes=size // 7)
    assert len(planned) >= 7
    assert all(len(s.ranges) == 1 for s in planned)
    assert planned[0].ranges[0].start == 0 and planned[-1].ranges[-1].end == size
    whole = read([part])
    assert whole.column("offset").to_pylist() == list(range(1000))
    assert read([part], target_split_bytes=size // 7).equals(whole)
    assert all(
        b.num_rows <= ar.BATCH_ROWS
        for b in ar.read_split(planned[0], spec.ReadOptions(ctx=ReadContext.of()))
    )


def test_small_segments_are_packed() -> None:
    planned = splits.plan_splits([str(LOGDIR)])
    assert len(planned) == 1 and len(planned[0].ranges) == 17
    assert len(splits.plan_splits([str(LOGDIR)], min_splits=2)) >= 2
    assert pickle.loads(pickle.dumps(planned[0])) == planned[0]


def test_pushdown_prunes_segments_and_skips_batches(tmp_path: Path) -> None:
    segs = splits.list_segments([str(LOGDIR)])
    prune = splits.Prune(topics={"v2-none", "v2-gzip"}, partitions={0}, min_offset=20)
    kept = [s for s in segs if prune.keeps(s)]
    # segment 0 of each (offsets 0-16) is left out by its name and the next segment's base
    assert [(s.topic, s.base) for s in kept] == [("v2-gzip", 17), ("v2-none", 17)]
    assert splits.Prune(partition_min=1).keeps(segs[0]) is False
    assert splits.Prune(max_offset=16).keeps(kept[0]) is False

    part = _segment(tmp_path)
    opts = spec.ReadOptions(ctx=ReadContext.of(), min_offset=510, max_offset=560)
    offsets = read([part], opts).column("offset").to_pylist()
    assert set(range(510, 561)) <= set(offsets)  # a superset, batch-aligned
    assert offsets == list(range(500, 575))
    ts = read(
        [part], spec.ReadOptions(ctx=ReadContext.of(), min_timestamp_us=1_700_000_030_000 * 1000)
    )
    assert min(ts.column("offset").to_pylist()) == 750


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    from klogtool.errors import InputError

    with pytest.raises(InputError, match="no such file"):
        splits.list_segments([str(tmp_path / "nope")])
    with pytest.raises(InputError) as info:
        splits.list_segments([str(LOGDIR / "v2-none-0" / "00000000000000000000.index")])
    assert info.value.code == "not-a-segment"
    with pytest.raises(InputError):
        splits.list_segments(["-"])
    with pytest.raises(ValueError, match="onCorrupt"):
        spec.ReadOptions(ctx=ReadContext.of(), on_corrupt="ignore")
    with pytest.raises(ValueError, match="unknown column"):
        spec.arrow_schema(spec.ReadOptions(ctx=ReadContext.of()), ["offset", "nope"])

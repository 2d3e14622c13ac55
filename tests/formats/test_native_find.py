"""find's record filters in Rust (``engine.find_matcher``, ``native/src/find.rs``): on generated
batches of every codec and random filters the native kernel keeps exactly the records
``RecordFilter.matches`` keeps of the python engine's records; the finder's native path hands
nothing back on well-formed batches; what it cannot decide (a regex ``native_regex`` does not
translate, what the kernel refuses) goes to the python path. The translation itself is tested
against ``re`` in test_native_regex.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import generator

from klogtool.formats import codecs, engine, v2
from klogtool.formats.batch import CREATE_TIME, LOG_APPEND_TIME, Record
from klogtool.formats.payloads.control import COMMIT
from klogtool.formats.records import SegmentScanner
from klogtool.log.context import ReadContext
from klogtool.log.read.dumper import DumpOptions
from klogtool.log.read.finder import Finder, FindOptions
from klogtool.log.record_filter import RecordFilter, record_size

pytestmark = pytest.mark.skipif(
    not engine.native_available(), reason="the native engine is not built"
)

T0 = 1_700_000_000_000
MAX = 1 << 26
KEYS = [None, b"", b"a", b"b", b"ab", "é".encode()]
NAMES = ["h", "g", "é", ""]
VALUES = [None, b"", b"x", b"y"]

records_strategy = st.lists(
    st.tuples(
        st.integers(0, 3),  # offset gap
        st.integers(-50, 50),  # timestamp delta
        st.sampled_from(KEYS) | st.binary(max_size=6),
        st.sampled_from(VALUES) | st.binary(max_size=12),
        st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)), max_size=3),
    ),
    min_size=1,
    max_size=30,
)
maybe_time = st.none() | st.integers(T0 - 60, T0 + 60)
maybe_size = st.none() | st.integers(0, 30)
# translated regexes (native_regex), "" (no filter) and ones left to Python (a lookahead, $ not
# at the end): the kernel decides the first, native_spec is None for the last
REGEXES = ["", "a", "^a", "a$", "b|\\xff", "^$", "\\w\\b", "[^ab]", ".", "é", "h(?=x)", "y$|$y"]
filter_strategy = st.builds(
    RecordFilter,
    key=st.none() | st.sampled_from(KEYS[1:]),
    headers=st.lists(
        st.tuples(st.sampled_from(NAMES), st.none() | st.sampled_from(VALUES[1:])), max_size=2
    ).map(tuple),
    offsets=st.none() | st.tuples(st.integers(0, 40), st.integers(0, 40)).map(sorted).map(tuple),
    from_time=maybe_time,
    to_time=maybe_time,
    min_size=maybe_size,
    max_size=maybe_size,
    key_regex=st.none() | st.sampled_from(REGEXES),
    value_regex=st.none() | st.sampled_from(REGEXES),
)


def _batch(recs: list[Any], codec: int, ts_type: int) -> v2.DefaultBatch:
    records, offset = [], -1
    for gap, ts, key, value, headers in recs:
        offset += gap + 1
        records.append(Record(offset, T0 + ts, key, value, tuple(headers)))
    data = v2.encode_batch(
        records,
        compression=codec,
        timestamp_type=ts_type,
        max_timestamp=T0 + 7 if ts_type == LOG_APPEND_TIME else None,
    )
    batch = next(iter(SegmentScanner(data)))
    assert isinstance(batch, v2.DefaultBatch)
    return batch


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    recs=records_strategy,
    where=filter_strategy,
    codec=st.sampled_from(sorted(codecs.CODEC_NAMES)),
    ts_type=st.sampled_from([CREATE_TIME, LOG_APPEND_TIME]),
)
def test_native_matches_are_record_filter_matches(recs, where, codec, ts_type) -> None:
    batch = _batch(recs, codec, ts_type)
    with engine.using(engine.PYTHON):
        every = list(batch.records(MAX))
    want = [(i, r) for i, r in enumerate(every) if where.matches(r)]
    spec = where.native_spec()
    if spec is None:
        assert any(p in ("h(?=x)", "y$|$y") for p in (where.key_regex, where.value_regex))
        return
    with engine.using(engine.NATIVE):
        matcher = engine.find_matcher(spec)
        assert matcher is not None
        found = matcher.matches(batch.data, MAX, batch.position)
    assert found is not None, "a well-formed batch was handed back"
    count, indexes, rows = found
    assert count == len(every)
    assert indexes == [i for i, _ in want]
    assert all(type(row) is Record for row in rows)  # made by the kernel, as batch.records()
    assert rows == [r for _, r in want]
    for row, (_, r) in zip(rows, want, strict=True):
        assert record_size(row) == record_size(r)


def test_what_the_kernel_does_not_decide_has_no_spec() -> None:
    assert RecordFilter(key_regex="(?i)a").native_spec() is None
    assert RecordFilter(value_regex="a(?=b)", key=b"k").native_spec() is None
    assert RecordFilter(key_regex="a", value_regex="a\\1").native_spec() is None
    assert RecordFilter(headers=(("\udcff", None),)).native_spec() is None
    assert RecordFilter(from_time=1 << 63).native_spec() is None
    assert RecordFilter(min_size=1 << 64).native_spec() is None
    spec = RecordFilter(key=b"k", headers=(("h", b"v"),), offsets=(1, 2), max_size=9)
    assert spec.native_spec() == (b"k", [("h", b"v")], (1, 2), None, None, None, 9, None, None)
    rx = RecordFilter(key_regex="a", value_regex="").native_spec()
    assert rx == (None, [], None, None, None, None, None, "(?-u)\\x61", None)


def test_a_cut_or_legacy_batch_is_handed_back() -> None:
    batch = _batch([(0, 0, b"a", b"x", [])], codecs.NONE, CREATE_TIME)
    spec = RecordFilter(key=b"a").native_spec()
    assert spec is not None
    with engine.using(engine.NATIVE):
        matcher = engine.find_matcher(spec)
        assert matcher is not None
        assert matcher.matches(batch.data[:-1], MAX, 0) is None
        v1 = bytes(batch.data[:16]) + b"\x01" + bytes(batch.data[17:])
        assert matcher.matches(v1, MAX, 0) is None


def _partition(root: Path) -> Path:
    """Batches of every codec (one of 10,000 records: more than records_v2 lists at once) and a
    control batch."""
    d = root / "t-0"
    d.mkdir(parents=True)
    data, offset = b"", 0
    for codec in sorted(codecs.CODEC_NAMES) + [codecs.ZSTD]:
        n = 10_000 if offset == 0 else 50
        recs = [
            Record(
                o,
                T0 + o,
                b"key-%d" % (o % 7),
                b"v" * (o % 13),
                (("trace", b"t%d" % (o % 5)),) if o % 3 == 0 else (),
            )
            for o in range(offset, offset + n)
        ]
        data += v2.encode_batch(recs, compression=codec, producer_id=5, producer_epoch=0)
        offset += n
    gen = generator()
    data += gen._marker(5, offset, COMMIT)
    gen.write_segment_files(d, 0, data)
    return d


@pytest.mark.parametrize(
    "where",
    [
        RecordFilter(key=b"key-3"),
        RecordFilter(headers=(("trace", b"t2"),)),
        RecordFilter(headers=(("trace", None),), min_size=8),
        RecordFilter(offsets=(9_990, 10_020), to_time=T0 + 10_010),
        RecordFilter(key_regex="^key-[35]$"),
        RecordFilter(value_regex="^v{3,5}\\Z", headers=(("trace", None),)),
        RecordFilter(key_regex="\\d", value_regex="v$"),
    ],
    ids=["key", "header-value", "header-size", "offsets-time", "key-regex", "value-regex", "both"],
)
def test_the_native_find_path_hands_nothing_back(tmp_path: Path, where: RecordFilter) -> None:
    d = _partition(tmp_path)
    with engine.using(engine.PYTHON):
        want = list(
            Finder(
                FindOptions(
                    dump=DumpOptions(deep=True, print_data=True, ctx=ReadContext.of()), where=where
                )
            ).objects([str(d)])
        )
    with engine.using(engine.NATIVE):
        before = engine.engine_stats()
        finder = Finder(
            FindOptions(
                dump=DumpOptions(deep=True, print_data=True, ctx=ReadContext.of()), where=where
            )
        )
        got = list(finder.objects([str(d)]))
        assert engine.engine_stats() == before
    assert got == want
    assert any(o["type"] == "record" for o in got)


@pytest.mark.parametrize(
    "where", [RecordFilter(key=b"key-3"), RecordFilter(key_regex="-3$")], ids=["key", "regex"]
)
def test_the_native_find_path_makes_only_matching_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: RecordFilter
) -> None:
    d = _partition(tmp_path)
    with engine.using(engine.PYTHON):
        want = list(
            Finder(
                FindOptions(
                    dump=DumpOptions(deep=True, print_data=True, ctx=ReadContext.of()),
                    where=where,
                )
            ).objects([str(d)])
        )

    def refuse(*_a: object) -> bool:
        raise AssertionError("a record was judged in Python")

    monkeypatch.setattr(RecordFilter, "matches", refuse)
    with engine.using(engine.NATIVE):
        got = list(
            Finder(
                FindOptions(
                    dump=DumpOptions(deep=True, print_data=True, ctx=ReadContext.of()),
                    where=where,
                )
            ).objects([str(d)])
        )
    assert got == want


def test_a_limit_counts_records_as_the_python_path_does(tmp_path: Path) -> None:
    d = _partition(tmp_path)
    counts = {}
    for name in (engine.PYTHON, engine.NATIVE):
        with engine.using(name):
            finder = Finder(
                FindOptions(
                    dump=DumpOptions(deep=True, print_data=True, ctx=ReadContext.of()),
                    where=RecordFilter(key=b"key-3"),
                    limit=3,
                )
            )
            objs = list(finder.objects([str(d)]))
            counts[name] = (finder.counts, objs)
    assert counts[engine.PYTHON] == counts[engine.NATIVE]

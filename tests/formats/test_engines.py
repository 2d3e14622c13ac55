"""The two engines against each other: on generated batches the native engine decodes exactly
the records the python engine decodes; on mutated ones (generated and real-broker segments) it
either agrees or hands the batch back, never accepting what the python engine rejects.

The oracle is ``bench/fuzz.py``'s ``compare_engines``, which the large fuzz runs use too."""

from __future__ import annotations

import gzip
import pickle
import random
import struct
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fuzz import fuzz
from support.paths import CORPUS, needs_corpus

from klogtool.formats import codecs, engine, v2
from klogtool.formats.batch import CREATE_TIME, LOG_APPEND_TIME, Record
from klogtool.formats.crc import crc32c
from klogtool.formats.records import SegmentScanner
from klogtool.log.context import ReadContext
from klogtool.log.export import native_columns
from klogtool.log.read.dumper import Dumper, DumpOptions

pytestmark = pytest.mark.skipif(
    not engine.native_available(), reason="the native engine is not built"
)


payload = st.none() | st.binary(max_size=40)
records_strategy = st.lists(
    st.tuples(
        st.integers(0, 3),  # offset gap
        st.integers(-(1 << 40), 1 << 40),  # timestamp delta
        payload,
        payload,
        st.lists(st.tuples(st.text(max_size=8), payload), max_size=3),
    ),
    max_size=40,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    recs=records_strategy,
    base_offset=st.integers(0, (1 << 62)),
    codec=st.sampled_from(sorted(codecs.CODEC_NAMES)),
    ts_type=st.sampled_from([CREATE_TIME, LOG_APPEND_TIME]),
    base_sequence=st.sampled_from([-1, 0, 1000, (1 << 31) - 5]),
)
def test_generated_batches_decode_identically(recs, base_offset, codec, ts_type, base_sequence):
    records, offset = [], base_offset
    for gap, ts, key, value, headers in recs:
        offset += gap + 1
        records.append(Record(offset, 1_700_000_000_000 + ts, key, value, tuple(headers)))
    if not records:
        records = [Record(base_offset, 0, None, None)]
    data = v2.encode_batch(
        records,
        compression=codec,
        timestamp_type=ts_type,
        max_timestamp=1_700_000_000_999 if ts_type == LOG_APPEND_TIME else None,
        producer_id=7 if base_sequence >= 0 else -1,
        producer_epoch=0 if base_sequence >= 0 else -1,
        base_sequence=base_sequence,
    )
    batch = next(iter(SegmentScanner(data)))
    stats: Counter = Counter()
    fuzz.compare_engines(batch, stats)
    assert stats["native-agreed"] == 1, "a well-formed batch was handed back to python"
    assert stats["reencode-agreed"] == stats["reencode-native"] == 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    recs=st.lists(
        st.tuples(
            st.none() | st.binary(max_size=20) | st.text(max_size=20).map(str.encode),
            st.none() | st.binary(max_size=20) | st.text(max_size=20).map(str.encode),
            st.lists(st.tuples(st.text(max_size=8), payload), max_size=3),
        ),
        min_size=1,
        max_size=20,
    ),
    key_decoder=st.sampled_from(["base64", "hex", "utf8", "none", "json"]),
    value_decoder=st.sampled_from(["base64", "hex", "utf8", "none", "json"]),
    print_data=st.booleans(),
    codec=st.sampled_from(sorted(codecs.CODEC_NAMES)),
    rendering=st.sampled_from(["jsonl", "text", "kafka"]),
)
def test_generated_batches_render_identical_lines(
    recs, key_decoder, value_decoder, print_data, codec, rendering
):
    records = [
        Record(i, 1_700_000_000_000 + i, key, value, tuple(headers))
        for i, (key, value, headers) in enumerate(recs)
    ]
    batch = next(iter(SegmentScanner(v2.encode_batch(records, compression=codec))))
    opts = DumpOptions(
        ctx=ReadContext.of(),
        deep=True,
        print_data=print_data,
        key_decoder=key_decoder,
        value_decoder=value_decoder,
        kafka_text=rendering == "kafka",
    )
    stats: Counter = Counter()
    if rendering == "kafka":
        fuzz.compare_kafka(batch, stats, Dumper([], opts))
    else:
        fuzz.compare_lines(batch, stats, Dumper([], opts), rendering)
    if print_data and "json" in (key_decoder, value_decoder):
        assert stats[f"{rendering}-handed-back"] == 1  # the json decoder is python's alone
    elif not print_data:
        assert stats[f"{rendering}-agreed"] == 1


def test_mutated_generated_segments() -> None:
    stats = fuzz.run(1500, seed=20261125)
    assert stats["native-agreed"] > 1000 and stats["native-handed-back"] > 100, stats


def _corpus_v2_seeds(magic: int = 2) -> list:
    """The first batches of each real-broker segment of ``magic`` (2, or 0/1: compressed
    wrappers), as fuzz seeds."""
    if not (CORPUS / "MANIFEST.md").is_file():
        return []
    seeds = []
    for path in sorted(CORPUS.rglob("*.log")):
        data = path.read_bytes()[: 256 << 10]
        batches = list(SegmentScanner(data, stop_on_crc=False))
        if not batches or (batches[0].magic == 2) != (magic == 2):
            continue
        if magic < 2 and batches[0].compression == codecs.NONE:
            continue
        end = batches[min(len(batches), 8) - 1]
        head = data[: end.position + end.size]
        seeds.append(
            fuzz.Seed(str(path.relative_to(CORPUS)), head, batches[0].magic, batches[0].compression)
        )
    return seeds


def _compare_mutated(seeds: list, cases: int, seed: int) -> Counter:
    """Both engines on every seed as it is, then on mutated copies: the fuzzer's counts."""
    rng = random.Random(seed)
    stats: Counter = Counter()
    for i in range(cases):
        data = seeds[i].data if i < len(seeds) else fuzz.mutate(rng, seeds[i % len(seeds)])
        for batch in SegmentScanner(data, stop_on_crc=False, strict=False):
            fuzz.compare_engines(batch, stats)
    return stats


@needs_corpus
def test_mutated_real_broker_segments() -> None:
    seeds = _corpus_v2_seeds()
    assert seeds
    stats = _compare_mutated(seeds, 1000, seed=7)
    assert stats["native-agreed"] > 1000, stats
    # every unmutated real-broker batch is decoded natively
    for seed in seeds:
        for batch in SegmentScanner(seed.data):
            assert fuzz.native_records(batch.data, fuzz.MAX_BATCH_BYTES) is not None, seed.name


@needs_corpus
def test_mutated_real_broker_wrappers() -> None:
    """v0 gzip and snappy wrappers a real broker wrote, mutated (inside too): the native
    engine reads their inner sets exactly as both walks of the python engine do."""
    seeds = _corpus_v2_seeds(magic=0)
    assert {s.codec for s in seeds} == {codecs.GZIP, codecs.SNAPPY}, [s.name for s in seeds]
    stats = _compare_mutated(seeds, 300, seed=11)
    assert stats["legacy-native-agreed"] > 500 and stats["kafka-agreed"] > 500, stats


def test_mutated_wrappers_read_alike_by_every_path() -> None:
    """bench/fuzz.py's oracle on 800 mutated v0/v1 segments of every codec (wrappers' inner
    message sets mutated before compression, CRCs repaired or not): both walks of the python
    engine and the native engine's records, columns and lines agree."""
    rng = random.Random(1125)
    seeds = [s for s in fuzz.build_seeds(rng) if s.magic < 2]
    stats: Counter = Counter()
    for i in range(800):
        seed = seeds[i % len(seeds)]  # plain messages mutated too
        data = fuzz.mutate(rng, seed) if seed.codec == codecs.NONE else fuzz._inner(rng, seed)
        for batch in SegmentScanner(data, stop_on_crc=False, strict=False):
            fuzz.compare_engines(batch, stats)
    assert stats["legacy-agreed"] > 100 and stats["legacy-errors-agreed"] > 50, stats
    if engine.native_available():  # records, columns and the three renderings
        assert stats["legacy-native-agreed"] > 100, stats
        assert min(stats[f"{r}-agreed"] for r in ("jsonl", "text", "kafka")) > 50, stats


@needs_corpus
def test_real_broker_segments_decode_natively() -> None:
    """Every batch a real broker wrote: decoded natively, exactly as in python (the handed-back
    ones are counted; real files should need none)."""
    stats: Counter = Counter()
    wrappers: Counter = Counter()
    plain: Counter = Counter()
    for path in sorted(CORPUS.rglob("*.log")):
        for batch in SegmentScanner(path.read_bytes(), stop_on_crc=False):
            if batch.magic == 2:
                fuzz.compare_engines(batch, stats)
            else:
                fuzz.compare_engines(batch, plain if batch.compression == codecs.NONE else wrappers)
    assert stats["native-agreed"] > 100 and not stats["native-handed-back"], stats
    # the 44 compressed v0 wrappers (gzip, snappy): records, columns and every rendering
    assert wrappers["legacy-native-agreed"] == 44 == wrappers["kafka-agreed"], wrappers
    assert wrappers["jsonl-agreed"] == 44 == wrappers["text-agreed"], wrappers
    # and the plain v0/v1 messages (their non-UTF-8 values are rendered in python)
    assert plain["legacy-native-agreed"] == plain["legacy-agreed"] > 30_000, plain
    assert plain["kafka-agreed"] > 30_000 and not plain["legacy-native-handed-back"], plain


def test_a_native_panic_is_an_internal_error(monkeypatch, capsys) -> None:
    """A Rust panic (PyO3's PanicException, a BaseException) never crashes klogtool: it is an
    internal error, exit 70, naming the file and byte position."""
    from klogtool import cli

    class PanicException(BaseException):
        pass

    class Panicking:
        def check_v2(self, *_args: object) -> None:
            raise PanicException("index out of bounds")

        def crc32c(self, data: bytes) -> int:
            import crc32c

            return int(crc32c.crc32c(data))

    monkeypatch.setattr(engine, "_active", Panicking())
    target = Path(__file__).resolve().parents[2] / "fixtures/logs/logdir/v2-none-0"
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["verify", "--deep", str(target)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 70, err
    assert "internal error" in err and "native engine failed at" in err, err
    assert f"{target}/00000000000000000000.log:0" in err, err
    assert "Traceback" not in err


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=5000), cut=st.integers(0, 7))
def test_crc32c_is_the_crc32c_packages(data: bytes, cut: int) -> None:
    import crc32c

    view = memoryview(data)[cut:]  # unaligned starts too
    with engine.using(engine.NATIVE):
        native = engine.crc32c(view)
    with engine.using(engine.PYTHON):
        python = engine.crc32c(view)
    assert native == python == crc32c.crc32c(bytes(view))


def test_crc32c_of_a_large_buffer() -> None:
    import crc32c

    data = bytes(range(256)) * 4096  # past the size where the GIL is released
    with engine.using(engine.NATIVE):
        assert engine.crc32c(data) == crc32c.crc32c(data) == engine.crc32c(bytearray(data))


def test_columns_move_to_arrow_without_a_copy() -> None:
    """``take()`` hands each column's memory over whole: read-only, wrapped by Arrow in place,
    alive as long as Arrow holds it, and the builder starts afresh."""
    pa = pytest.importorskip("pyarrow")
    records = [
        Record(offset=i, timestamp=i, key=b"k%d" % i, value=b"v" * 100, headers=(("h", b"x"),))
        for i in range(50)
    ]
    batch = v2.encode_batch(records, base_offset=0, compression=codecs.NONE)
    builder = native_columns.record_columns(1 << 20)
    assert builder is not None
    assert builder.add(memoryview(batch), 0, "test") == (50, 50)
    cols = builder.take()
    data = cols["value_data"]
    assert not isinstance(data, bytes)  # the engine's own memory, not copied into a bytes
    view = memoryview(data)
    assert view.readonly and bytes(view) == b"v" * 5000
    with pytest.raises(TypeError):
        view[0] = 0
    wrapped = pa.py_buffer(data)
    assert wrapped.address == pa.py_buffer(data).address  # the same memory: no copy
    del cols, data, view
    assert wrapped.to_pybytes() == b"v" * 5000  # kept alive by Arrow's reference
    assert len(builder.take()["value_data"]) == 0  # emptied
    assert builder.add(memoryview(batch), 1, "test") == (50, 50)  # and refilled from offset 0
    again = builder.take()
    assert bytes(again["value_offsets"])[:8] == bytes(4) + (100).to_bytes(4, "little")


def _gzip_batch(records: list[Record], payload: Callable[[bytes], bytes]) -> memoryview:
    """A v2 gzip batch of ``records`` whose compressed payload is ``payload(records area)``."""
    plain = v2.encode_batch(records, base_offset=0)
    out = bytearray(plain[:61]) + payload(plain[61:])
    struct.pack_into(">i", out, 8, len(out) - 12)  # the batch length
    struct.pack_into(">h", out, 21, codecs.GZIP)  # the attributes
    struct.pack_into(">I", out, 17, crc32c(out[21:]))
    return memoryview(bytes(out))


def test_gzip_payloads_that_are_not_one_plain_member() -> None:
    """The native engine inflates one gzip member that fills the payload with libdeflate;
    two members (the last ISIZE right for the first alone when they are the same), bytes after
    the member, or a header with a name go to its streaming inflater, and both engines read
    every shape alike (tests/formats/test_handbacks.py has more shapes)."""
    records = [
        Record(offset=i, timestamp=i, key=b"k%d" % i, value=b"value %d " % i * 20, headers=())
        for i in range(200)
    ]
    half = len(v2.encode_batch(records[:100], base_offset=0)) - 61
    shapes: dict[str, tuple[Callable[[bytes], bytes], str]] = {
        "one member": (gzip.compress, "native-agreed"),
        "two members": (
            lambda a: gzip.compress(a[:half]) + gzip.compress(a[half:]),
            "native-agreed",
        ),
        # twice the records area for the batch's record count: records past the count, which
        # the python engine judges (test_handbacks.py reads a well-formed batch of this shape)
        "the same member twice": (lambda a: gzip.compress(a) * 2, "native-handed-back"),
        "bytes after the member": (lambda a: gzip.compress(a) + b"trailing", "native-agreed"),
        "a file name": (  # the FNAME flag and a name after the 10-byte header
            lambda a: (gz := gzip.compress(a))[:3] + b"\x08" + gz[4:10] + b"n\0" + gz[10:],
            "native-agreed",
        ),
    }
    for name, (payload, verdict) in shapes.items():
        stats: Counter = Counter()
        fuzz.compare_engines(next(iter(SegmentScanner(_gzip_batch(records, payload)))), stats)
        assert stats[verdict] == 1, (name, stats)
    with engine.using(engine.NATIVE):
        (batch,) = SegmentScanner(_gzip_batch(records, shapes["two members"][0]))
        assert [r.value for r in batch.records()] == [r.value for r in records]


def test_a_dropped_column_buffer_is_reused_for_the_next_rows() -> None:
    """Memory Python has finished with goes back to the builder (fresh memory costs a page
    fault every 4 KiB); memory still held is never reused."""
    pa = pytest.importorskip("pyarrow")
    records = [Record(offset=i, timestamp=i, key=None, value=bytes(1000)) for i in range(100)]
    batch = memoryview(v2.encode_batch(records, base_offset=0))
    builder = native_columns.record_columns(1 << 20)
    assert builder is not None

    def chunk() -> tuple[dict, int]:
        assert builder.add(batch, 0, "test") == (100, 100)
        cols = builder.take()
        return cols, pa.py_buffer(cols["value_data"]).address

    held, first = chunk()
    kept, second = chunk()  # the builder has had room for the next rows since the first take
    del held
    _third, third = chunk()  # ... so the first's memory serves the rows after those
    _fourth, fourth = chunk()
    assert len({first, second, third}) == 3 and fourth == first
    assert bytes(kept["value_data"]) == bytes(100_000)  # the held ones are intact


@pytest.mark.parametrize("codec", sorted(codecs.CODEC_NAMES), ids=codecs.CODEC_NAMES.get)
@pytest.mark.parametrize("ts_type", [CREATE_TIME, LOG_APPEND_TIME], ids=["create", "append"])
def test_both_engines_make_one_record_type(codec: int, ts_type: int) -> None:
    """``batch.records()`` gives records of the one ``Record`` type under either engine (the
    native engine makes them in Rust, the python engine through ``make_record``), and they
    compare equal field by field, hash alike and pickle back to ``Record``."""
    records = [
        Record(10 + i, 1_700_000_000_000 + i, b"k%d" % i if i % 3 else None, b"v" * i,
               (("h", b"1"), ("n", None)) if i % 2 else (), 5 + i, 0)
        for i in range(50)
    ]  # fmt: skip
    data = v2.encode_batch(
        records,
        compression=codec,
        base_sequence=5,
        timestamp_type=ts_type,
        producer_id=7,
        max_timestamp=1_800_000_000_000,
    )
    (batch,) = SegmentScanner(memoryview(data))
    made = {}
    for name in engine.ENGINES:
        with engine.using(name):
            made[name] = list(batch.records())
    native, python = made[engine.NATIVE], made[engine.PYTHON]
    assert {type(r) for r in native} == {type(r) for r in python} == {Record}
    assert native == python and [hash(r) for r in native] == [hash(r) for r in python]
    assert [tuple(r) for r in native] == [tuple(r) for r in python]
    if ts_type == LOG_APPEND_TIME:
        assert {r.timestamp for r in python} == {batch.max_timestamp}
    assert [r.offset for r in native] == [r.offset for r in records]
    assert all(isinstance(r.key, bytes | None) for r in native)  # the native engine's bytes
    assert [pickle.loads(pickle.dumps(r)) for r in native] == python


def _records_and_error(batch: v2.DefaultBatch, name: str) -> tuple[list, object]:
    """The records ``batch.records()`` yields under engine ``name`` and what it raises then."""
    got: list = []
    with engine.using(name):
        try:
            for r in batch.records():
                got.append(r)
        except Exception as e:  # noqa: BLE001 (compared below)
            return got, (type(e), str(e), getattr(e, "position", None))
    return got, None


@pytest.mark.parametrize("codec", sorted(codecs.CODEC_NAMES), ids=codecs.CODEC_NAMES.get)
@pytest.mark.parametrize("base_sequence", [-1, 0, 77])
def test_native_records_are_made_as_they_are_iterated(codec: int, base_sequence: int) -> None:
    """The native engine's records come a chunk at a time (more records than one chunk here,
    timestamps shared by neighbours, sequences that are or are not the offsets): every one, in
    order, is the python engine's, however far the iteration goes."""
    records = [
        Record(i, 1_700_000_000_000 + i // 7, b"k%d" % i, b"v" * (i % 5),
               (("h", b"%d" % i),) if i % 11 == 0 else (),
               base_sequence + i if base_sequence >= 0 else -1)
        for i in range(200)
    ]  # fmt: skip
    data = v2.encode_batch(
        records,
        compression=codec,
        base_sequence=base_sequence,
        producer_id=7 if base_sequence >= 0 else -1,
        producer_epoch=0 if base_sequence >= 0 else -1,
    )
    (batch,) = SegmentScanner(memoryview(data))
    with engine.using(engine.NATIVE):
        assert engine.records_v2(batch.data, 1 << 20, batch.position, _no_rest) is not None
        it = batch.records()
        assert not isinstance(it, list)
        head = [next(it) for _ in range(70)]  # past the first chunk
        rest = list(it)
    native, error = _records_and_error(batch, engine.NATIVE)
    python, _ = _records_and_error(batch, engine.PYTHON)
    assert error is None and head + rest == native == python
    assert [tuple(r) for r in native] == [tuple(r) for r in python]


def _no_rest(pos: int, done: int) -> Iterator[Record]:
    raise AssertionError(f"records_v2 stopped at byte {pos} of the area, after {done} records")


def test_a_bad_record_late_in_a_batch_fails_at_the_same_record_under_both_engines() -> None:
    """The native engine checks each record as it makes it: at a bad record near the end it
    stops, the python engine reads on from there, and the records before it, then the error
    (message and position), are the python engine's walk of the whole batch (every codec:
    test_handbacks)."""
    records = [
        Record(i, 1_700_000_000_000, b"k", b"v", (("hkey", b"x"),) if i == 180 else ())
        for i in range(200)
    ]
    data = bytearray(v2.encode_batch(records))
    at = bytes(data).index(b"hkey")
    assert data[at - 1] == 8  # the header key's length, 4: now past the record's end
    data[at - 1] = 0x7E
    (batch,) = SegmentScanner(memoryview(bytes(data)), stop_on_crc=False)
    stops: list[tuple[int, int]] = []
    with engine.using(engine.NATIVE):
        made = engine.records_v2(
            batch.data, 1 << 20, batch.position, lambda p, d: iter(stops.append((p, d)) or ())
        )
        assert made is not None and len(list(made)) == 180
    # where record 180 starts: after the area of the 180 before it
    assert stops == [(len(v2.encode_batch(records[:180])) - v2.RECORD_BATCH_OVERHEAD, 180)]
    native = _records_and_error(batch, engine.NATIVE)
    python = _records_and_error(batch, engine.PYTHON)
    assert native == python
    assert len(python[0]) == 180 and python[1] is not None

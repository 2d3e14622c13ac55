"""dump-segments' batch lines, rendered by the native engine (``native/src/render.rs``,
``batch_line``) byte for byte as the python renderers write ``klogtool.log.objects``' batch
object: ``--format jsonl``, text and kafka, alone or at the head of the batch's record lines.
"""

from __future__ import annotations

import functools
import mmap
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import run, run_subprocess
from support.fuzz import fuzz

from klogtool.formats import codecs, engine, engine_stats, v2
from klogtool.formats.batch import LOG_APPEND_TIME, Record
from klogtool.formats.crc import crc32c
from klogtool.log.read import dumper, native_render

needs_native = pytest.mark.skipif(not engine.native_available(), reason="no native engine")

T0 = 1_700_000_000_000
RENDERINGS = ("jsonl", "text", "kafka")


def _int(bits: int, signed: bool = True) -> st.SearchStrategy[int]:
    """Any value of the field, its ends and the values around 0 more often."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, -1 if signed else 1, 0, 1]))


@st.composite
def _batches(draw: st.DrawFn) -> v2.DefaultBatch:
    """A v2 batch of any header (records area: a few arbitrary bytes, never decoded here)."""
    area = draw(st.binary(max_size=12))
    magic = draw(st.sampled_from([2, 2, 2, 0, 1, 3, -1]))
    header = v2.BATCH_HEADER.pack(
        draw(_int(64)),  # base offset
        v2.RECORD_BATCH_OVERHEAD - 12 + len(area),
        draw(_int(32)),  # partition leader epoch
        magic,
        draw(_int(32, signed=False)),  # crc
        draw(_int(16)),  # attributes: every flag, codec ids 5-7
        draw(_int(32)),  # last offset delta
        draw(_int(64)),  # base timestamp
        draw(_int(64)),  # max timestamp: before 1970, past 9999
        draw(_int(64)),  # producer id
        draw(_int(16)),  # producer epoch
        draw(st.one_of(_int(32), st.integers((1 << 31) - 50, (1 << 31) - 1))),  # wraps
        draw(_int(32)),  # record count
    )
    return v2.DefaultBatch(memoryview(header + area), draw(st.integers(0, (1 << 63) - 1)))


@needs_native
@settings(max_examples=600, deadline=None)
@given(_batches(), st.booleans())
def test_batch_lines_are_the_python_renderers(batch: v2.DefaultBatch, crc_valid: bool) -> None:
    for rendering in RENDERINGS:
        with engine.using(engine.NATIVE):
            got = native_render.batch_line(batch, crc_valid, rendering, "test")
        if batch.magic != 2:  # (a lenient scan's batch of another magic: Python's to show)
            assert got is None
            continue
        assert got is not None
        assert got.decode() == fuzz.python_batch_line(batch, crc_valid, rendering)


def test_batch_lines_are_python_s_under_the_python_engine() -> None:
    batch = v2.DefaultBatch(memoryview(v2.encode_batch([Record(0, T0, b"k", b"v")])))
    with engine.using(engine.PYTHON):
        assert native_render.batch_line(batch, True, "jsonl", "test") is None


def _segment(tmp_path: Path) -> Path:
    """Batches of every kind of header line: CreateTime and LogAppendTime, transactional, a
    control batch, a delete horizon, no producer, a negative leader epoch, one record, a
    compressed batch, and one whose CRC does not hold."""
    recs = [Record(i, T0 + i, b"k%d" % i, b"v%d" % i) for i in range(3)]
    data = v2.encode_batch(
        recs,
        partition_leader_epoch=5,
        producer_id=9,
        producer_epoch=2,
        base_sequence=(1 << 31) - 2,  # the last sequence wraps to 0
    )
    data += v2.encode_batch(
        [Record(3, T0, b"k", b"v")],
        base_offset=3,
        timestamp_type=LOG_APPEND_TIME,
        max_timestamp=T0 + 9,
    )
    data += v2.encode_batch(
        [Record(4, T0, None, b"v")], base_offset=4, is_transactional=True, producer_id=7
    )
    data += v2.encode_batch(
        [Record(5, T0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")],
        base_offset=5,
        is_control=True,
        is_transactional=True,
        producer_id=7,
    )
    data += v2.encode_batch(
        [Record(6, T0, b"k", None)], base_offset=6, delete_horizon_ms=T0 + 86_400_000
    )
    data += v2.encode_batch(
        [Record(7 + i, T0, b"k", b"v" * 50) for i in range(4)], compression=codecs.ZSTD
    )
    bad = bytearray(v2.encode_batch([Record(11, T0, b"k", b"v")], base_offset=11))
    bad[17] ^= 0xFF  # the stored CRC no longer holds (the records still decode)
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    seg.write_bytes(data + bad)
    return seg


@needs_native
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("depth", [None, "--deep-iteration", "--print-data"])
@pytest.mark.parametrize("fmt", RENDERINGS)
def test_dump_batch_lines_are_native_and_the_python_engines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, depth: str | None, jobs: str
) -> None:
    seg = _segment(tmp_path)
    args = ["dump-segments", "--format", fmt, "--jobs", jobs, str(seg)]
    if depth is not None:
        args.insert(1, depth)
    with engine.using(engine.PYTHON):
        code, expected, _ = run(*args)
    assert code == 1  # the batch whose CRC does not hold
    assert "isvalid: false" in expected or "INVALID" in expected or '"crc_valid":false' in expected

    def python_object(batch: object, crc_valid: bool) -> object:
        raise AssertionError("a v2 batch's line was made in Python")

    monkeypatch.setattr(dumper, "batch_object", python_object)
    before = engine_stats()
    with engine.using(engine.NATIVE):
        code, out, _ = run(*args)
    assert (code, out) == (1, expected)
    assert engine_stats() == before  # nothing handed back


@needs_native
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("depth", ["--deep-iteration", "--print-data"])
@pytest.mark.parametrize("fmt", RENDERINGS)
def test_a_batch_handed_back_inside_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, depth: str, jobs: str
) -> None:
    """A run of batches goes to the engine in one call (Dumper._walk, RUN_BYTES); a batch in it
    that the engine hands back (records that do not decode) is shown by Python between the
    lines of the batches around it, and counted once: also when a rendering thread refused it
    (--jobs 2) and the main thread then asks for its records (it was counted twice)."""
    good = [Record(i, T0 + i, b"k%d" % i, b"v%d" % i) for i in range(3)]
    bad = bytearray(v2.encode_batch([Record(5, T0, b"k", b"v")], base_offset=5))
    bad[-3] = 0x7F  # the record's value length runs past the batch: a malformed record
    bad[17:21] = crc32c(bytes(bad[21:])).to_bytes(4, "big")  # (its CRC holds)
    after = [Record(9 + i, T0, b"k", b"v") for i in range(2)]
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    seg.write_bytes(v2.encode_batch(good) + bad + v2.encode_batch(after))
    args = ["dump-segments", depth, "--format", fmt, "--jobs", jobs, str(seg)]
    with engine.using(engine.PYTHON):
        code, expected, _ = run(*args)
    assert code == 1  # the records that do not decode
    monkeypatch.setenv("KLOGTOOL_ENGINE", engine.NATIVE)
    monkeypatch.setenv("KLOGTOOL_ENGINE_STATS", "1")
    done = run_subprocess(*args)
    assert (done.returncode, done.stdout) == (1, expected)
    assert done.stderr.splitlines()[-1] == "klogtool engine: 1 batch handed back: malformed 1"


@needs_native
def test_a_run_under_a_decoder_only_python_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--value-decoder json``: the engine hands back every batch of a run, each counted once
    (render-decoder), and Python shows them all."""
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    seg.write_bytes(
        b"".join(
            v2.encode_batch([Record(3 * b + i, T0, b"k", b'{"n": %d}' % i) for i in range(3)])
            for b in range(4)
        )
    )
    args = ["dump-segments", "--print-data", "--value-decoder", "json", str(seg)]
    with engine.using(engine.PYTHON):
        code, expected, _ = run(*args)
    assert code == 0 and '{"n":2}' in expected
    monkeypatch.setenv("KLOGTOOL_ENGINE", engine.NATIVE)
    monkeypatch.setenv("KLOGTOOL_ENGINE_STATS", "1")
    done = run_subprocess(*args)
    assert (done.returncode, done.stdout) == (0, expected)
    assert done.stderr.splitlines()[-1] == (
        "klogtool engine: 4 batches handed back: render-decoder 4"
    )


@needs_native
def test_a_released_mapping_s_hand_backs_are_forgotten(tmp_path: Path) -> None:
    """A batch one kernel refused and another then reads counts once; but once the mapping is
    released (``engine.watched`` ends) its hand-backs are forgotten: the next mapping at that
    address (a second dump in the process) holds other batches, which must count (they were
    taken for the batch refused before)."""
    bad = bytearray(v2.encode_batch([Record(5, T0, b"k", b"v")], base_offset=5))
    bad[-3] = 0x7F  # a malformed record
    bad[17:21] = crc32c(bytes(bad[21:])).to_bytes(4, "big")
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(bytes(bad))
    with open(seg, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(m)
    _refuse_then_release(view, str(seg))
    view.release()
    m.close()


def _refusals(refuse: Callable[[], object]) -> int:
    before = engine_stats().get("malformed", 0)
    assert refuse() is None
    return engine_stats().get("malformed", 0) - before


def _refuse_then_release(view: memoryview, path: str) -> None:
    batch = v2.DefaultBatch(view, 0)
    how = native_render.Records(64 << 20, True, "hex", "utf8", "jsonl+control")
    render = functools.partial(native_render.render_records, batch, how, "test")
    check = functools.partial(engine.check_v2, batch.data, 64 << 20, "test")
    with engine.using(engine.NATIVE):
        with engine.watched(view, path):  # a dump
            assert _refusals(render) == 1
            assert _refusals(check) == 0  # the batch the renderer refused
            assert _refusals(render) == 1
        with engine.watched(view, path):  # another, its mapping where the first one was
            assert _refusals(check) == 1

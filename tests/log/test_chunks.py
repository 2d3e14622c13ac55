"""cut_part: the native engine's walk of batch headers (``chunk_cut`` over the mapping,
``chunk_cut_file`` reading the file itself) cuts a segment into exactly the parts the python
walk, the reference, does: whatever the headers hold."""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klogtool.formats import engine
from klogtool.formats.v2 import MIN_LENGTH
from klogtool.log.read.chunks import Chunk, cut_part

needs_native = pytest.mark.skipif(not engine.native_available(), reason="no native engine")

_I64 = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(0, 1000))
_I32 = st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(-2, 20))


def _entry(offset: int, size: int, magic: int, delta: int, body: int) -> bytes:
    """An entry's first 27 bytes as a v2 batch has them (offset, length, magic at 16, last
    offset delta at 23), then bytes up to ``12 + body`` in all, whatever its length says."""
    head = struct.pack(">qi4xb6xi", offset, size, magic, delta)
    return head + bytes(max(12 + body - len(head), 0))


@st.composite
def _v2(draw: st.DrawFn) -> bytes:
    body = draw(st.integers(MIN_LENGTH, MIN_LENGTH + 200))
    delta = draw(st.one_of(st.integers(0, 50), _I32))
    return _entry(draw(_I64), body, 2, delta, body)


@st.composite
def _odd(draw: st.DrawFn) -> bytes:
    """A v2 batch but for one thing the walk stops at (or, for a length that runs on into
    the entries after, goes on from): another magic (v0/v1), a length that cannot be, a
    negative last offset delta."""
    body = draw(st.integers(MIN_LENGTH, MIN_LENGTH + 100))
    size, magic, delta = body, 2, 0
    what = draw(st.sampled_from(["magic", "size", "delta"]))
    if what == "magic":
        magic = draw(st.sampled_from([0, 1, 3, -1]))
    elif what == "size":
        size = draw(st.one_of(st.integers(MIN_LENGTH - 2, MIN_LENGTH + 300), _I32))
    else:
        delta = draw(st.integers(-(2**31), -1))
    return _entry(draw(_I64), size, magic, delta, body)


_segments = st.lists(st.one_of(_v2(), _v2(), _v2(), _odd()), max_size=30).map(b"".join)


def _plan(name: str, data: bytes, chunk_bytes: int, path: str | None = None) -> list[Chunk]:
    """All the parts of ``data`` under engine ``name``: each cut from where the one before
    ended, as the workers of ``dump-segments --jobs`` cut them in turn."""
    buf, start, last, parts = memoryview(data), 0, None, []
    with engine.using(name):
        while not parts or parts[-1].end < len(buf):
            part, last = cut_part(buf, start, last, chunk_bytes, path)
            parts.append(part)
            start = part.end
    return parts


def _plan_from_file(data: bytes, chunk_bytes: int) -> list[Chunk]:
    """The native walk reading the headers from a file holding ``data``."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "00000000000000000000.log")
        Path(path).write_bytes(data)
        return _plan(engine.NATIVE, data, chunk_bytes, path)


@needs_native
@settings(max_examples=400, deadline=None)
@given(data=_segments, torn=st.integers(0, 100), chunk_bytes=st.integers(-2, 600))
def test_native_chunks_are_the_python_walks(data: bytes, torn: int, chunk_bytes: int) -> None:
    data = data[: max(len(data) - torn, 0)]  # a torn tail (or none)
    python = _plan(engine.PYTHON, data, chunk_bytes)
    assert _plan(engine.NATIVE, data, chunk_bytes) == python
    assert _plan_from_file(data, chunk_bytes) == python


@needs_native
def test_a_file_shorter_than_its_mapping_ends_the_walk_where_it_ends(tmp_path: Path) -> None:
    # (a segment cut short after it was mapped: the walk stops at the first header it cannot
    # read whole, and the last part's walk says what is there)
    data = b"".join(_entry(o, 100, 2, 0, 100) for o in range(6))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data[: 112 * 3 + 20])
    chunks = _plan(engine.NATIVE, data, 1, str(path))
    assert chunks == [Chunk(0, 112, None), Chunk(112, 224, 0), Chunk(224, len(data), 1)]


@needs_native
def test_a_file_that_cannot_be_read_is_an_os_error_naming_it(tmp_path: Path) -> None:
    missing = str(tmp_path / "gone.log")
    with pytest.raises(FileNotFoundError) as e:
        _plan(engine.NATIVE, bytes(200), 1, missing)
    assert e.value.filename == missing and e.value.strerror == os.strerror(e.value.errno)


@needs_native
def test_native_chunks_of_clean_batches_and_huge_offsets() -> None:
    top = 2**63 - 1
    data = b"".join(_entry(o, 100, 2, d, 100) for o, d in [(0, 9), (10, 0), (top, 2**31 - 1)])
    for chunk_bytes in (1, 112, 113, 2**70):
        chunks = _plan(engine.NATIVE, data, chunk_bytes)
        assert chunks == _plan(engine.PYTHON, data, chunk_bytes)
    assert _plan(engine.NATIVE, data, 1) == [
        Chunk(0, 112, None),
        Chunk(112, 224, 9),
        Chunk(224, 336, 10),
    ]


@needs_native
@pytest.mark.parametrize("size", [MIN_LENGTH - 1, MIN_LENGTH])
def test_native_chunks_at_the_smallest_length(size: int) -> None:
    # whole batches after it: only the length check tells whether the walk goes on
    data = _entry(0, size, 2, 0, size) + _entry(1, 100, 2, 0, 100) * 3
    chunks = _plan(engine.NATIVE, data, 1)
    assert chunks == _plan(engine.PYTHON, data, 1)
    assert len(chunks) == (1 if size < MIN_LENGTH else 4)

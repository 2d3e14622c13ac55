"""``Record``: a ``__slots__`` class that keeps the named-tuple behaviour callers rely on."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from klogtool.formats import codecs, legacy, v2
from klogtool.formats.batch import LOG_APPEND_TIME, PyRecord, Record
from klogtool.formats.records import SegmentScanner

FIELDS = (
    "offset",
    "timestamp",
    "key",
    "value",
    "headers",
    "sequence",
    "attributes",
    "crc",
    "crc_valid",
)


def test_defaults_and_fields() -> None:
    r = Record(7, 1_700_000_000_000, b"k", None)
    assert Record._fields == FIELDS
    assert Record.__match_args__ == FIELDS
    assert r._astuple() == (7, 1_700_000_000_000, b"k", None, (), -1, 0, None, None)
    assert Record(**dict(zip(FIELDS, range(9), strict=True)))._astuple() == tuple(range(9))
    with pytest.raises(TypeError):
        Record(1, 2, None)  # value is required
    with pytest.raises(AttributeError):
        r.colour = "red"  # type: ignore[attr-defined]  # slots: no stray attributes


def test_behaves_as_a_named_tuple() -> None:
    r = Record(7, 100, b"k", b"v", (("h", b"1"),), 3, 16)
    offset, timestamp, key, *rest = r
    assert (offset, timestamp, key) == (7, 100, b"k")
    assert rest == [b"v", (("h", b"1"),), 3, 16, None, None]
    assert len(r) == 9
    assert r[0] == 7 and r[-1] is None and r[2:4] == (b"k", b"v")
    assert list(r) == list(r._astuple())
    assert r._asdict() == dict(zip(FIELDS, r._astuple(), strict=True))
    assert r._replace(offset=8, value=None)._astuple() == (8, 100, b"k", None) + r[4:]
    assert r._astuple() == (7, 100, b"k", b"v", (("h", b"1"),), 3, 16, None, None)  # unchanged
    assert repr(r) == (
        "Record(offset=7, timestamp=100, key=b'k', value=b'v', headers=(('h', b'1'),), "
        "sequence=3, attributes=16, crc=None, crc_valid=None)"
    )
    match r:
        case Record(offset, timestamp):
            assert (offset, timestamp) == (7, 100)


def test_equality_and_hash() -> None:
    r = Record(7, 100, b"k", b"v")
    same = Record(7, 100, b"k", b"v", (), -1, 0, None, None)
    assert r == same and hash(r) == hash(same)
    assert r == r._astuple() and r._astuple() == r  # both ways, like a named tuple
    assert r != Record(8, 100, b"k", b"v")
    assert r != r._astuple()[:4]
    assert r != "not a record"
    assert len({r, same, Record(8, 100, b"k", b"v")}) == 2
    # zero-copy fields compare by content, as they did in the named tuple
    assert Record(7, 100, memoryview(b"k"), b"v") == r


def test_copy_and_pickle() -> None:
    r = Record(7, 100, b"k", b"v", (("h", None),), 3, 16, 99, True)
    for clone in (copy.copy(r), copy.deepcopy(r), pickle.loads(pickle.dumps(r))):
        assert clone == r and clone is not r and type(clone) is Record


def test_decoded_records_are_independent_and_complete() -> None:
    """The fast decode loop fills every slot; no record shares state with another."""
    records = [Record(i, 1000 + i, b"k%d" % i, b"v" * i) for i in range(3)]
    batch_bytes = v2.encode_batch(records, compression=codecs.NONE)
    decoded = list(v2.DefaultBatch(memoryview(batch_bytes)).records())
    for r in decoded:
        assert all(hasattr(r, name) for name in FIELDS)
    assert [(r.offset, r.timestamp, bytes(r.key), bytes(r.value)) for r in decoded] == [
        (r.offset, r.timestamp, r.key, r.value) for r in records
    ]
    assert len({id(r) for r in decoded}) == 3


def test_fields_are_read_only() -> None:
    """The native class cannot assign a field (type checkers reject it for both classes):
    ``_replace`` makes a changed copy."""
    r = Record(7, 100, b"k", b"v")
    if Record is not PyRecord:
        with pytest.raises(AttributeError):
            r.offset = 8  # type: ignore[misc]
    assert r._replace(offset=8).offset == 8 and r.offset == 7


@pytest.mark.parametrize("cls", [Record, PyRecord], ids=["Record", "PyRecord"])
def test_the_pure_python_class_behaves_the_same(cls: Any) -> None:
    """``PyRecord`` (``Record`` without the native module) and ``Record`` agree on every
    method (a process has one of them: records of the two are not compared)."""
    fields = (7, 100, b"k", memoryview(b"v"), (("h", b"1"),), 3, 16, 99, True)
    r = cls(*fields)
    assert r == cls(*fields) and hash(r) == hash(cls(*fields)) == hash(fields)
    assert r == fields and tuple(r) == fields and r._astuple() == fields and len(r) == 9
    assert r[1:3] == fields[1:3] and r[-1] is True
    assert r._asdict() == dict(zip(FIELDS, fields, strict=True))
    assert type(r._replace(offset=1)) is cls and r._replace(offset=1)[0] == 1
    assert repr(r) == repr(Record(*fields)) and cls._fields == cls.__match_args__ == FIELDS
    assert type(pickle.loads(pickle.dumps(Record(*fields[:3], b"v")))) is Record
    assert cls(1, 2, None, None) == (1, 2, None, None, (), -1, 0, None, None)
    assert r != fields[:8] and r != "x" and not (r == [*fields])
    with pytest.raises(TypeError):
        cls(1, 2, b"k", b"v", nope=1)


def test_without_the_native_module_records_are_pure_python() -> None:
    """With ``klogtool._native`` absent (a pure-Python install), ``Record`` is ``PyRecord``
    and the python engine decodes every codec's batch, LogAppendTime and v1 wrappers included,
    into records equal to the native build's."""
    code = textwrap.dedent(
        """
        import pickle, sys
        sys.modules["klogtool._native"] = None  # as if it were not built
        from klogtool.formats import codecs, engine, legacy, v2
        from klogtool.formats.batch import LOG_APPEND_TIME, PyRecord, Record
        from klogtool.formats.records import SegmentScanner
        assert Record is PyRecord and not engine.native_available() and engine.name() == "python"
        recs = [Record(i, 1000 + i, b"k%d" % i, b"v" * i, (("h", b"%d" % i),)) for i in range(20)]
        out = []
        for codec in sorted(codecs.CODEC_NAMES):
            for ts_type in (0, LOG_APPEND_TIME):
                data = v2.encode_batch(
                    recs, compression=codec, timestamp_type=ts_type, max_timestamp=5000
                )
                (batch,) = SegmentScanner(memoryview(data))
                got = list(batch.records())
                assert all(type(r) is Record for r in got)
                out.append([tuple(r) for r in got])
        plain = [Record(r.offset, r.timestamp, r.key, r.value) for r in recs]
        data = legacy.encode_wrapper(plain, magic=1, compression=codecs.GZIP)
        (wrapper,) = SegmentScanner(memoryview(data))
        out.append([tuple(r) for r in wrapper.records()])
        out = tuple(tuple(rs) for rs in out)
        def norm(f):
            if isinstance(f, memoryview):
                return bytes(f)
            return tuple(map(norm, f)) if isinstance(f, tuple) else f
        sys.stdout.buffer.write(pickle.dumps(norm(out)))
        """
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "KLOGTOOL_ENGINE": ""}
    p = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, timeout=120, check=False
    )
    assert p.returncode == 0, p.stderr.decode()
    pure = pickle.loads(p.stdout)
    recs = [Record(i, 1000 + i, b"k%d" % i, b"v" * i, (("h", b"%d" % i),)) for i in range(20)]
    want = []
    for codec in sorted(codecs.CODEC_NAMES):
        for ts_type in (0, LOG_APPEND_TIME):
            data = v2.encode_batch(
                recs, compression=codec, timestamp_type=ts_type, max_timestamp=5000
            )
            (batch,) = SegmentScanner(memoryview(data))
            want.append([tuple(r) for r in batch.records()])
    plain = [Record(r.offset, r.timestamp, r.key, r.value) for r in recs]
    (wrapper,) = SegmentScanner(memoryview(legacy.encode_wrapper(plain, magic=1, compression=1)))
    want.append([tuple(r) for r in wrapper.records()])
    assert pure == _norm(tuple(tuple(rs) for rs in want))


def _norm(f: Any) -> Any:
    """Views as bytes, in nested lists and tuples."""
    if isinstance(f, memoryview):
        return bytes(f)
    return type(f)(map(_norm, f)) if isinstance(f, list | tuple) else f

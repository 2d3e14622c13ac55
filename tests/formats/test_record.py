"""``Record``: a ``__slots__`` class that keeps the named-tuple behaviour callers rely on."""

from __future__ import annotations

import copy
import pickle

import pytest

from klogtool.formats import codecs, v2
from klogtool.formats.batch import Record

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
    decoded[0].offset = 99
    assert [r.offset for r in decoded] == [99, 1, 2]

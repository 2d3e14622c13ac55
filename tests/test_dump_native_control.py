"""dump-segments' native renderer writes control batches (issue 25).

Under ``--decoder auto`` a control record shows decoded (``control COMMIT {...}`` and the like,
no payloads); under ``--decoder none`` as any record, its raw key and value. The native
renderer is told which (the rendering ``text+control`` or ``text+raw-control``) and writes both
byte for byte as the python renderer does, in every format and with every payload decoder,
without a hand-back; a control record it does not decode (a malformed key or value, a tagged
field, a KRAFT_VOTERS string other than printable ASCII) sends the batch back to Python,
counted as ``control-batch``.
"""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import run
from support.fuzz import fuzz

from klogtool.formats import engine, engine_stats, v2
from klogtool.formats.batch import Record
from klogtool.formats.payloads import control
from klogtool.formats.records import SegmentScanner

needs_native = pytest.mark.skipif(not engine.native_available(), reason="no native engine")

T0 = 1_700_000_000_000

_COMMIT_KEY, _COMMIT_VALUE = control.encode_end_txn_marker(control.COMMIT, 5)


def _voters(*hosts: str, version: int = 0) -> tuple[bytes, bytes]:
    """A KRAFT_VOTERS record of one voter a host (voter 2 with no endpoint)."""
    voters = [
        {
            "voterId": i,
            "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAQ" if i % 2 else "_____________________w",
            "endpoints": [{"name": "CONTROLLER", "host": h, "port": 65535 - 30000 * i}]
            if h
            else [],
            "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": i},
        }
        for i, h in enumerate(hosts)
    ]
    return control.encode_control_record(
        control.KRAFT_VOTERS, {"version": version, "voters": voters}
    )


# (key, value) of control records of every kind the native renderer decodes
WELL_FORMED = [
    control.encode_end_txn_marker(control.COMMIT, 5),
    control.encode_end_txn_marker(control.ABORT, -3),
    control.encode_leader_change(1, [1, 2, 3], [1, 2]),
    control.encode_leader_change(7, [], []),
    control.encode_snapshot_header(T0),
    control.encode_snapshot_footer(),
    control.encode_kraft_version(1),
    _voters("localhost", "", "kafka-2.example.com"),
    _voters("x" * 200, version=1),  # a length past one varint byte
    _voters(),
    (struct.pack(">hh", 0, 99), None),  # a type Kafka does not know: no fields
    (struct.pack(">hh", 3, -2), b"anything"),
    (_COMMIT_KEY, _COMMIT_VALUE + b"more"),
]
# ... and records it leaves to Python (errors the reference words, tagged fields, strings it
# does not write)
HANDED_BACK = [
    (None, _COMMIT_VALUE),
    (b"\x00\x00\x00", _COMMIT_VALUE),
    (struct.pack(">hh", -1, 1), _COMMIT_VALUE),
    (control.encode_control_key(control.COMMIT), None),
    (control.encode_control_key(control.COMMIT), b"\x00\x00\x00"),
    (control.encode_control_key(control.LEADER_CHANGE), bytes.fromhex("00000000000101010100")),
    (control.encode_control_key(control.KRAFT_VOTERS), b"\x00\x00\x01\x01\x00\x00"),  # a tag
    _voters('a"b'),
    _voters("caf\u00e9"),
    _voters("tab\there"),
]


def _batch(pairs: list[tuple[bytes | None, bytes | None]], headers: tuple = ()) -> bytes:
    records = [Record(i, T0 + i, k, v, headers) for i, (k, v) in enumerate(pairs)]
    return v2.encode_batch(
        records,
        base_offset=0,
        is_control=True,
        is_transactional=True,
        producer_id=7,
        producer_epoch=0,
    )


def _compare(data: bytes) -> Counter:
    stats: Counter = Counter()
    batch = next(iter(SegmentScanner(data, stop_on_crc=False)))
    with engine.using(engine.NATIVE):
        fuzz.compare_renderings(batch, stats)
    return stats


RENDERINGS = (
    "jsonl",
    "text",
    "kafka",
    "jsonl-utf8",
    "text-utf8",
    "kafka-utf8",
    "jsonl-base64",
    "text-base64",
)
RAW = ("jsonl-raw", "text-raw", "kafka-raw")


@needs_native
@pytest.mark.parametrize("pair", WELL_FORMED, ids=range(len(WELL_FORMED)))
def test_control_records_render_natively_as_python_does(pair: tuple) -> None:
    before = engine_stats()
    stats = _compare(_batch([pair, pair], headers=(("h", b"\xff v"),)))
    assert engine_stats() == before  # nothing handed back
    assert all(stats[f"{r}-agreed"] == 1 for r in RENDERINGS + RAW), stats


@needs_native
@pytest.mark.parametrize("pair", HANDED_BACK, ids=range(len(HANDED_BACK)))
def test_control_records_it_does_not_decode_go_to_python(pair: tuple) -> None:
    """Decoded: handed back (control-batch); as any record (--decoder none): rendered."""
    before = engine_stats()
    stats = _compare(_batch([WELL_FORMED[0], pair]))
    assert all(stats[f"{r}-handed-back"] == 1 for r in RENDERINGS), stats
    assert all(stats[f"{r}-agreed"] == 1 for r in RAW), stats
    after = engine_stats()
    assert {r: n - before.get(r, 0) for r, n in after.items() if n != before.get(r, 0)} == {
        "control-batch": len(RENDERINGS)
    }


_bytes = st.none() | st.binary(max_size=30)


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.sampled_from(WELL_FORMED + HANDED_BACK),
            st.tuples(
                st.integers(-2, 8).map(lambda t: struct.pack(">hh", 0, t)) | _bytes,
                _bytes,
            ),
            st.tuples(
                st.sampled_from([0, 1, 2, 3, 4, 5, 6]).map(lambda t: struct.pack(">hh", 0, t)),
                st.binary(max_size=30),
            ),
            st.lists(st.text(max_size=12), max_size=3).map(lambda hosts: _voters(*hosts)),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_generated_control_records_agree_or_go_to_python(pairs: list) -> None:
    stats = _compare(_batch(pairs))
    for r in RENDERINGS + RAW:
        assert stats[f"{r}-agreed"] + stats[f"{r}-handed-back"] == 1, stats
    assert all(stats[f"{r}-agreed"] == 1 for r in RAW), stats


@pytest.mark.parametrize("decoder", ["auto", "none"])
@pytest.mark.parametrize("fmt", ["text", "jsonl", "kafka"])
@pytest.mark.parametrize("print_data", [True, False])
def test_dump_of_control_batches_is_the_python_engines(
    tmp_path: Path, klogtool_engine: str, fmt: str, decoder: str, print_data: bool
) -> None:
    """The CLI's lines of a transactional partition (records, a COMMIT marker, a LEADER_CHANGE)
    under both engines, and no hand-back."""
    records = [Record(i, T0 + i, b"k%d" % i, b"v\xff%d" % i) for i in range(3)]
    data = v2.encode_batch(
        records, base_offset=0, is_transactional=True, producer_id=7, producer_epoch=0
    )
    commit = Record(3, T0, *control.encode_end_txn_marker(control.COMMIT, 0))
    data += v2.encode_batch(
        [commit], base_offset=3, is_control=True, is_transactional=True, producer_id=7
    )
    key, value = control.encode_leader_change(1, [1], [1])
    data += v2.encode_batch([Record(4, T0, key, value)], base_offset=4, is_control=True)
    part = tmp_path / "t-0"
    part.mkdir()
    seg = part / "00000000000000000000.log"
    seg.write_bytes(data)
    args = ["dump-segments", "--format", fmt, "--decoder", decoder, str(seg)]
    args.insert(1, "--print-data" if print_data else "--deep-iteration")
    before = engine_stats()
    code, out, _ = run(*args)
    assert code == 0
    assert engine_stats() == before
    with engine.using(engine.PYTHON):
        code, expected, _ = run(*args)
    assert out == expected
    assert ("COMMIT" in out) == (decoder == "auto")

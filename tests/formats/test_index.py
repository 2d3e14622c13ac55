"""Tests for klogtool.formats.index (.index, .timeindex, .txnindex)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import CORPUS

from klogtool.formats.errors import FormatError, UnsupportedError
from klogtool.formats.index import (
    AbortedTxn,
    OffsetIndexEntry,
    TimeIndexEntry,
    encode_offset_index,
    encode_time_index,
    encode_txn_index,
    iter_offset_index,
    iter_time_index,
    iter_txn_index,
    offset_index_lookup,
    offset_index_slots,
    offset_index_zero_tail,
    sanity_check_offset_index,
    sanity_check_time_index,
    sanity_check_txn_index,
    time_index_slots,
    time_index_zero_tail,
    txn_index_trailing_bytes,
)


def _corpus(suffix: str) -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob(f"*{suffix}") if p.is_file() and p.suffix == suffix)


def _id(p: Path) -> str:
    return str(p.relative_to(CORPUS))


def _base(p: Path) -> int:
    return int(p.name.split(".", 1)[0])


INDEX_FILES = _corpus(".index")
TIME_INDEX_FILES = _corpus(".timeindex")
TXN_INDEX_FILES = _corpus(".txnindex")

INT64 = st.integers(-(2**63), 2**63 - 1)


def test_corpus_present() -> None:
    if not CORPUS.is_dir():
        pytest.skip("corpus not available")
    assert len(INDEX_FILES) >= 50
    assert len(TIME_INDEX_FILES) >= 50
    assert any(p.stat().st_size == 0 for p in INDEX_FILES)  # empty index files are legal


# ------------------------------------------------------------------------------------------
# corpus


@pytest.mark.parametrize("path", INDEX_FILES, ids=_id)
def test_corpus_offset_index(path: Path) -> None:
    data = path.read_bytes()
    base = _base(path)
    sanity_check_offset_index(data, base)
    sanity_check_offset_index(memoryview(data), base)
    all_slots = list(iter_offset_index(data, base, stop_at_zero_fill=False))
    dump_view = list(iter_offset_index(memoryview(data), base, stop_at_zero_fill=True))
    assert len(all_slots) == offset_index_slots(data) == len(data) // 8
    # broker-written inactive indexes are trimmed: no zero tail, both readings agree
    assert offset_index_zero_tail(data) == 0
    assert dump_view == all_slots
    offsets = [e.offset for e in all_slots]
    assert offsets == sorted(set(offsets))
    assert all(e.offset >= base and e.position > 0 for e in all_slots)
    assert encode_offset_index(all_slots, base) == data


@pytest.mark.parametrize("path", TIME_INDEX_FILES, ids=_id)
def test_corpus_time_index(path: Path) -> None:
    data = path.read_bytes()
    base = _base(path)
    sanity_check_time_index(data, base)
    entries = list(iter_time_index(data, base, stop_at_zero_fill=False))
    assert len(entries) == time_index_slots(data) == len(data) // 12
    assert list(iter_time_index(data, base, stop_at_zero_fill=True)) == entries
    assert time_index_zero_tail(data) == 0
    timestamps = [e.timestamp for e in entries]
    assert timestamps == sorted(set(timestamps))
    assert encode_time_index(entries, base) == data


@pytest.mark.parametrize("path", TXN_INDEX_FILES, ids=_id)
def test_corpus_txn_index(path: Path) -> None:  # none in the corpus today
    data = path.read_bytes()
    sanity_check_txn_index(data, _base(path))
    entries = list(iter_txn_index(data))
    assert encode_txn_index(entries) == data[: len(entries) * 34]


# ------------------------------------------------------------------------------------------
# .index


def test_offset_index_exact_bytes() -> None:
    entries = [OffsetIndexEntry(105, 4200), OffsetIndexEntry(230, 9000)]
    data = encode_offset_index(entries, 100)
    assert data == bytes.fromhex("00000005000010680000008200002328")
    assert list(iter_offset_index(data, 100, stop_at_zero_fill=True)) == entries


def test_offset_index_zero_fill() -> None:
    real = encode_offset_index([OffsetIndexEntry(10, 4100), OffsetIndexEntry(20, 8300)], 0)
    data = real + bytes(8 * 5)
    assert offset_index_slots(data) == 7
    assert offset_index_zero_tail(data) == 5
    assert list(iter_offset_index(data, 0, stop_at_zero_fill=True)) == [(10, 4100), (20, 8300)]
    everything = list(iter_offset_index(data, 0, stop_at_zero_fill=False))
    assert len(everything) == 7
    assert everything[2:] == [OffsetIndexEntry(0, 0)] * 5
    sanity_check_offset_index(data, 0)  # the broker's check passes on a padded index


def test_offset_index_all_zero_preallocated() -> None:
    data = bytes(10 * 1024 * 1024)  # the default preallocated size
    assert offset_index_zero_tail(data) == len(data) // 8
    # DumpLogSegments prints slot 0 and stops at slot 1
    assert list(iter_offset_index(data, 500, stop_at_zero_fill=True)) == [(500, 0)]
    sanity_check_offset_index(data, 500)


def test_offset_index_zero_tail_spanning_chunks() -> None:
    data = bytearray(8 * 20000)
    struct.pack_into(">ii", data, 8 * 3, 7, 123)
    assert offset_index_zero_tail(bytes(data)) == 20000 - 4
    assert offset_index_zero_tail(memoryview(data)) == 20000 - 4


def test_offset_index_stop_needs_i_gt_0() -> None:
    # a first entry with relative offset 0 is kept, later ones stop the dump
    data = struct.pack(">ii", 0, 0) + struct.pack(">ii", 3, 5000) + struct.pack(">ii", 0, 77)
    assert list(iter_offset_index(data, 9, stop_at_zero_fill=True)) == [(9, 0), (12, 5000)]


def test_offset_index_partial_slot_ignored_by_iterator_flagged_by_sanity() -> None:
    data = encode_offset_index([OffsetIndexEntry(5, 4097)], 0) + b"\x00\x01\x02"
    assert list(iter_offset_index(data, 0, stop_at_zero_fill=False)) == [(5, 4097)]
    with pytest.raises(FormatError) as ei:
        sanity_check_offset_index(data, 0)
    assert ei.value.code == "index-sanity"
    assert ei.value.position == 8
    assert "11 bytes" in ei.value.message and "multiple of 8" in ei.value.message


def test_offset_index_sanity_last_offset_below_base() -> None:
    data = struct.pack(">ii", 4, 100) + struct.pack(">ii", -1, 200)
    with pytest.raises(FormatError) as ei:
        sanity_check_offset_index(data, 1000)
    err = ei.value
    assert err.code == "index-sanity"
    assert err.position == 8
    assert err.message == (
        "Corrupt index found, index file has non-zero size but the last offset is 999 "
        "which is less than the base offset 1000"
    )


def test_offset_index_sanity_ignores_earlier_entries() -> None:
    # the broker only looks at the last slot
    data = struct.pack(">ii", -5, 100) + struct.pack(">ii", 4, 200)
    sanity_check_offset_index(data, 10)


def test_offset_index_empty() -> None:
    sanity_check_offset_index(b"", 0)
    assert list(iter_offset_index(b"", 0, stop_at_zero_fill=True)) == []
    assert offset_index_zero_tail(b"") == 0
    assert encode_offset_index([], 42) == b""


@pytest.mark.parametrize(
    "entries",
    [
        [OffsetIndexEntry(99, 0)],  # below base
        [OffsetIndexEntry(100 + 2**31, 0)],  # relative offset overflows int32
        [OffsetIndexEntry(101, -1)],  # negative position
        [OffsetIndexEntry(101, 2**31)],
        [OffsetIndexEntry(105, 10), OffsetIndexEntry(105, 20)],  # not strictly increasing
        [OffsetIndexEntry(106, 10), OffsetIndexEntry(105, 20)],
    ],
)
def test_offset_index_encoder_rejects(entries: list[OffsetIndexEntry]) -> None:
    with pytest.raises(ValueError):
        encode_offset_index(entries, 100)


@settings(max_examples=40, deadline=None)
@given(
    base=st.integers(0, 2**62),
    rels=st.lists(st.integers(0, 2**31 - 1), unique=True, max_size=50),
    positions=st.lists(st.integers(0, 2**31 - 1), min_size=50, max_size=50),
)
def test_offset_index_round_trip(base: int, rels: list[int], positions: list[int]) -> None:
    pairs = zip(sorted(rels), positions[: len(rels)], strict=True)
    entries = [OffsetIndexEntry(base + r, p) for r, p in pairs]
    data = encode_offset_index(entries, base)
    assert len(data) == 8 * len(entries)
    assert list(iter_offset_index(data, base, stop_at_zero_fill=False)) == entries
    sanity_check_offset_index(data, base)


# ------------------------------------------------------------------------------------------
# .timeindex


def test_time_index_exact_bytes() -> None:
    entries = [TimeIndexEntry(1700000000000, 57), TimeIndexEntry(1700000000500, 57)]
    data = encode_time_index(entries, 50)
    assert data == bytes.fromhex("0000018bcfe56800000000070000018bcfe569f400000007")
    assert list(iter_time_index(data, 50, stop_at_zero_fill=True)) == entries


def test_time_index_zero_fill() -> None:
    real = encode_time_index([TimeIndexEntry(1000, 3), TimeIndexEntry(2000, 9)], 0)
    data = real + bytes(12 * 4)
    assert time_index_zero_tail(data) == 4
    assert list(iter_time_index(data, 0, stop_at_zero_fill=True)) == [(1000, 3), (2000, 9)]
    assert len(list(iter_time_index(data, 0, stop_at_zero_fill=False))) == 6
    # the broker's sanity check: last (zero) timestamp < first timestamp
    with pytest.raises(FormatError) as ei:
        sanity_check_time_index(data, 0)
    assert ei.value.code == "index-sanity"
    assert ei.value.position == 12 * 5
    assert "last timestamp is 0 which is less than the first timestamp 1000" in str(ei.value)


def test_time_index_stop_rule_ignores_timestamp() -> None:
    data = struct.pack(">qi", 10, 2) + struct.pack(">qi", 99, 0)
    assert list(iter_time_index(data, 5, stop_at_zero_fill=True)) == [(10, 7)]


def test_time_index_sanity_last_offset_below_base() -> None:
    data = struct.pack(">qi", 10, 2) + struct.pack(">qi", 20, -3)
    with pytest.raises(FormatError) as ei:
        sanity_check_time_index(data, 100)
    assert ei.value.position == 12
    assert "last offset is 97 which is less than the first offset 100" in str(ei.value)


def test_time_index_sanity_length() -> None:
    data = struct.pack(">qi", 10, 2) + b"\x00" * 5
    with pytest.raises(FormatError) as ei:
        sanity_check_time_index(data, 0)
    assert ei.value.position == 12
    assert "17 bytes" in str(ei.value) and "multiple of 12" in str(ei.value)
    assert list(iter_time_index(data, 0, stop_at_zero_fill=False)) == [(10, 2)]


@pytest.mark.parametrize(
    "entries",
    [
        [TimeIndexEntry(5, 9)],  # below base
        [TimeIndexEntry(5, 10 + 2**31)],
        [TimeIndexEntry(5, 11), TimeIndexEntry(5, 12)],  # timestamp not increasing
        [TimeIndexEntry(5, 11), TimeIndexEntry(6, 10)],  # offset decreasing
        [TimeIndexEntry(2**63, 11)],
    ],
)
def test_time_index_encoder_rejects(entries: list[TimeIndexEntry]) -> None:
    with pytest.raises(ValueError):
        encode_time_index(entries, 10)


@settings(max_examples=40, deadline=None)
@given(
    base=st.integers(0, 2**62),
    timestamps=st.lists(INT64, unique=True, max_size=40),
    rels=st.lists(st.integers(0, 2**31 - 1), min_size=40, max_size=40),
)
def test_time_index_round_trip(base: int, timestamps: list[int], rels: list[int]) -> None:
    offsets = sorted(rels)[: len(timestamps)]
    entries = [
        TimeIndexEntry(t, base + r) for t, r in zip(sorted(timestamps), offsets, strict=True)
    ]
    data = encode_time_index(entries, base)
    assert list(iter_time_index(data, base, stop_at_zero_fill=False)) == entries
    sanity_check_time_index(data, base)


# ------------------------------------------------------------------------------------------
# .txnindex


def test_txn_index_exact_bytes() -> None:
    txn = AbortedTxn(0, 7, 100, 110, 111)
    data = encode_txn_index([txn])
    assert data == bytes.fromhex(
        "000000000000000000070000000000000064000000000000006e000000000000006f"
    )
    assert list(iter_txn_index(data)) == [txn]


def test_txn_index_partial_tail() -> None:
    data = encode_txn_index([AbortedTxn(0, 1, 5, 6, 7)]) + b"\x00" * 20
    assert txn_index_trailing_bytes(data) == 20
    assert list(iter_txn_index(data)) == [AbortedTxn(0, 1, 5, 6, 7)]
    sanity_check_txn_index(data, 0)


def test_txn_index_version_reads_first_byte_only() -> None:
    good = encode_txn_index([AbortedTxn(0, 1, 5, 6, 7)])
    low = b"\x00\x01" + good[2:]  # int16 1, but Kafka reads only the high byte: 0
    assert list(iter_txn_index(low))[0].version == 0
    negative = b"\xff\x00" + good[2:]  # signed byte -1 is not > 0: accepted
    assert list(iter_txn_index(negative))[0].version == -1
    bad = good + b"\x01\x00" + good[2:]
    it = iter_txn_index(bad)
    assert next(it) == AbortedTxn(0, 1, 5, 6, 7)
    with pytest.raises(UnsupportedError) as ei:
        next(it)
    assert ei.value.position == 34
    assert "version 1" in str(ei.value)
    with pytest.raises(UnsupportedError):
        sanity_check_txn_index(bad, 0)


def test_txn_index_sanity() -> None:
    data = encode_txn_index([AbortedTxn(0, 1, 90, 120, 121), AbortedTxn(0, 2, 95, 130, 131)])
    sanity_check_txn_index(data, 120)
    with pytest.raises(FormatError) as ei:
        sanity_check_txn_index(data, 125)
    assert ei.value.code == "index-sanity"
    assert ei.value.position == 0
    assert "lastOffset=120" in str(ei.value) and "start offset 125" in str(ei.value)


@pytest.mark.parametrize(
    "entries",
    [
        [AbortedTxn(1, 1, 2, 3, 4)],
        [AbortedTxn(0, 1, 2, 3, 4), AbortedTxn(0, 1, 2, 3, 4)],
        [AbortedTxn(0, 2**63, 2, 3, 4)],
    ],
)
def test_txn_index_encoder_rejects(entries: list[AbortedTxn]) -> None:
    with pytest.raises(ValueError):
        encode_txn_index(entries)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(INT64, INT64, INT64, INT64), max_size=30, unique_by=lambda t: t[2]).map(
        lambda ts: [AbortedTxn(0, *t) for t in sorted(ts, key=lambda t: t[2])]
    )
)
def test_txn_index_round_trip(entries: list[AbortedTxn]) -> None:
    data = encode_txn_index(entries)
    assert len(data) == 34 * len(entries)
    assert txn_index_trailing_bytes(data) == 0
    assert list(iter_txn_index(data)) == entries


def test_offset_index_lookup_is_the_largest_entry_at_or_below() -> None:
    """OffsetIndex.lookup: the entry with the largest offset at or below the target (position
    0 below the first), across the warm section (the last 1,024 slots) and the rest."""
    entries = [OffsetIndexEntry(100 + 3 * i, 40 * i + 7) for i in range(1, 3000)]
    buf = encode_offset_index(entries, 100)
    for target in (0, 100, 102, 103, 104, 105, 5000, 6000, 100 + 3 * 1975, 100 + 3 * 1976 - 1,
                   100 + 3 * 2999, 10**9):  # fmt: skip
        below = [e.position for e in entries if e.offset <= target]
        assert offset_index_lookup(buf, 100, target) == (below[-1] if below else 0), target
    assert offset_index_lookup(b"", 100, 150) == 0
    # zero-filled slots are entries (offset = base) to the broker's search, as here: it ends
    # on the last slot, (100, 0), not on (103, 47)
    padded = encode_offset_index(entries[:3], 100) + bytes(8 * 5)
    assert offset_index_lookup(padded, 100, 104) == 0
    assert offset_index_lookup(padded[:24], 100, 104) == 47

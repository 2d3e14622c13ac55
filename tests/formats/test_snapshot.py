"""Tests for klogtool.formats.snapshot (producer state .snapshot files)."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import CORPUS

from klogtool.formats.errors import CrcMismatchError, FormatError, TruncatedError, UnsupportedError
from klogtool.formats.snapshot import (
    ProducerEntry,
    ProducerSnapshot,
    encode_snapshot,
    first_sequence,
    parse_snapshot,
)

SNAPSHOTS = sorted(p for p in CORPUS.rglob("*.snapshot") if p.is_file()) if CORPUS.is_dir() else []

EMPTY_SNAPSHOT = bytes.fromhex("000148674bc700000000")
ENTRY = ProducerEntry(
    producer_id=0x0102030405060708,
    producer_epoch=7,
    last_sequence=41,
    last_offset=1000,
    offset_delta=3,
    timestamp=1700000000000,
    coordinator_epoch=5,
    current_txn_first_offset=-1,
)
ONE_ENTRY = bytes.fromhex(
    "0001"  # version
    "cd2a5a0e"  # crc32c over everything after it
    "00000001"  # count
    "0102030405060708"  # producer_id
    "0007"  # producer_epoch
    "00000029"  # last_sequence
    "00000000000003e8"  # last_offset
    "00000003"  # offset_delta
    "0000018bcfe56800"  # timestamp
    "00000005"  # coordinator_epoch
    "ffffffffffffffff"  # current_txn_first_offset
)


def _id(p: Path) -> str:
    return str(p.relative_to(CORPUS))


def test_corpus_present() -> None:
    if not CORPUS.is_dir():
        pytest.skip("corpus not available")
    assert len(SNAPSHOTS) >= 50
    assert any(p.stat().st_size > 10 for p in SNAPSHOTS)


@pytest.mark.parametrize("path", SNAPSHOTS, ids=_id)
def test_corpus_snapshot(path: Path) -> None:
    data = path.read_bytes()
    snap = parse_snapshot(data)
    assert snap.version == 1
    assert snap.crc_valid and snap.crc == snap.computed_crc
    assert snap.trailing_bytes == 0
    assert len(data) == 10 + 46 * len(snap.entries)
    for entry in snap.entries:
        assert entry.producer_id >= 0 and entry.producer_epoch >= 0
        if entry.has_batch_metadata:
            assert 0 <= entry.first_sequence <= entry.last_sequence
    assert encode_snapshot(snap.entries) == data
    assert parse_snapshot(memoryview(data), check_crc=False) == snap


def test_exact_layout_empty() -> None:
    assert encode_snapshot([]) == EMPTY_SNAPSHOT
    assert crc32c.crc32c(b"\x00" * 4) == 0x48674BC7
    snap = parse_snapshot(EMPTY_SNAPSHOT)
    assert snap == ProducerSnapshot(1, 0x48674BC7, 0x48674BC7, ())


def test_exact_layout_one_entry() -> None:
    assert encode_snapshot([ENTRY]) == ONE_ENTRY
    assert crc32c.crc32c(ONE_ENTRY[6:]) == 0xCD2A5A0E
    snap = parse_snapshot(ONE_ENTRY)
    assert snap.entries == (ENTRY,)
    assert snap.entries[0].first_sequence == 38


def test_first_sequence_wraps() -> None:
    assert first_sequence(41, 3) == 38
    assert first_sequence(0, 0) == 0
    # sequences 2147483645, 2147483646, 2147483647, 0, 1, 2
    assert first_sequence(2, 5) == 2147483645
    assert ENTRY._replace(last_sequence=2, offset_delta=5).first_sequence == 2147483645
    assert not ENTRY._replace(last_offset=-1).has_batch_metadata


@pytest.mark.parametrize("size", [0, 1, 5, 9])
def test_truncated_header(size: int) -> None:
    with pytest.raises(TruncatedError) as ei:
        parse_snapshot(ONE_ENTRY[:size])
    assert ei.value.position == size


def test_truncated_entries() -> None:
    data = ONE_ENTRY[:-1]
    with pytest.raises(TruncatedError) as ei:
        parse_snapshot(data, check_crc=False)
    assert ei.value.position == 10
    assert isinstance(ei.value, FormatError)


def test_huge_count_rejected_before_allocating() -> None:
    data = bytearray(EMPTY_SNAPSHOT)
    struct.pack_into(">i", data, 6, 2**31 - 1)
    with pytest.raises(TruncatedError) as ei:
        parse_snapshot(bytes(data), check_crc=False)
    assert "2147483647" in str(ei.value)


def test_negative_count() -> None:
    data = bytearray(EMPTY_SNAPSHOT)
    struct.pack_into(">i", data, 6, -1)
    with pytest.raises(FormatError) as ei:
        parse_snapshot(bytes(data), check_crc=False)
    assert ei.value.code == "bad-count"
    assert ei.value.position == 6


@pytest.mark.parametrize("version", [0, 2, -1])
def test_bad_version(version: int) -> None:
    data = struct.pack(">h", version) + ONE_ENTRY[2:]
    with pytest.raises(UnsupportedError) as ei:
        parse_snapshot(data, check_crc=False)
    assert ei.value.position == 0
    assert str(ei.value) == f"Snapshot contained an unknown file version {version}"


def test_bad_crc() -> None:
    data = bytearray(ONE_ENTRY)
    data[20] ^= 0x01  # flip a bit inside the first entry
    with pytest.raises(CrcMismatchError) as ei:
        parse_snapshot(bytes(data))
    assert ei.value.position == 2
    assert ei.value.code == "crc-mismatch"
    assert "Stored crc: 3442104846" in str(ei.value)
    snap = parse_snapshot(bytes(data), check_crc=False)
    assert not snap.crc_valid
    assert snap.crc == 0xCD2A5A0E
    assert snap.computed_crc == crc32c.crc32c(bytes(data[6:]))


def test_crc_covers_count() -> None:
    # an extra valid-looking entry with the count bumped but the old CRC: caught by the CRC
    data = bytearray(ONE_ENTRY + ONE_ENTRY[10:])
    struct.pack_into(">i", data, 6, 2)
    with pytest.raises(CrcMismatchError):
        parse_snapshot(bytes(data))
    assert len(parse_snapshot(bytes(data), check_crc=False).entries) == 2


def test_trailing_bytes_reported_not_rejected() -> None:
    body = ONE_ENTRY[6:] + b"\x00\x00\x00"
    data = ONE_ENTRY[:2] + struct.pack(">I", crc32c.crc32c(body)) + body
    snap = parse_snapshot(data)
    assert snap.trailing_bytes == 3
    assert snap.entries == (ENTRY,)


@pytest.mark.parametrize(
    "bad",
    [ENTRY._replace(producer_epoch=2**15), ENTRY._replace(producer_id=2**63)],
)
def test_encoder_rejects_out_of_range(bad: ProducerEntry) -> None:
    with pytest.raises(ValueError):
        encode_snapshot([bad])


ENTRIES = st.builds(
    ProducerEntry,
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(ENTRIES, max_size=20))
def test_round_trip(entries: list[ProducerEntry]) -> None:
    data = encode_snapshot(entries)
    assert len(data) == 10 + 46 * len(entries)
    snap = parse_snapshot(data)
    assert snap.entries == tuple(entries)
    assert snap.crc_valid and snap.version == 1 and snap.trailing_bytes == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(ENTRIES, min_size=1, max_size=5), st.data())
def test_any_single_bit_flip_is_caught(entries: list[ProducerEntry], data: st.DataObject) -> None:
    raw = bytearray(encode_snapshot(entries))
    bit = data.draw(st.integers(0, len(raw) * 8 - 1))
    raw[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(FormatError):
        parse_snapshot(bytes(raw))

"""Hostile input that is not a memory bomb (issue 22): each ends in one line and a documented
exit code, or in a complete answer, never in an internal error or a signal."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import crc32c
from support.cli import run
from support.rewrite import tree, write_partition

from klogtool.formats.batch import Record
from klogtool.formats.v2 import CRC_START, encode_batch

LONG_MAX = (1 << 63) - 1


def _past_long_max(root: Path) -> Path:
    """A partition whose batch has a base timestamp 2 below 2^63 - 1 and a record 4 ms past it:
    base plus delta is 2^63 + 1, which Kafka's reader wraps around 64 bits. Two records share
    a key, so compact rewrites the batch."""
    part = root / "t-0"
    recs = [Record(0, LONG_MAX - 5, b"k", b"v"), Record(1, LONG_MAX - 1, b"k", b"w")]
    raw = bytearray(encode_batch(recs))
    struct.pack_into(">q", raw, 27, LONG_MAX - 2)  # the base timestamp
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[CRC_START:])))
    write_partition(part, [(0, [bytes(raw)]), (2, [])])
    return part


def test_export_of_a_timestamp_past_64_bits_is_a_null_timestamp(tmp_path: Path) -> None:
    """export gives such a record a null timestamp, as it does any timestamp its column (64-bit
    microseconds) cannot hold, like its neighbour's (it was an internal error, exit 70, under
    both engines)."""
    part = _past_long_max(tmp_path)
    code, _out, err = run("export", "--to", "jsonl", str(tmp_path / "out"), str(part))
    assert code == 0, err
    rows = [json.loads(line) for f in (tmp_path / "out").rglob("*.json*") for line in f.open()]
    assert sorted((r["offset"], r["timestamp"]) for r in rows) == [(0, None), (1, None)]


def test_compact_of_a_timestamp_past_64_bits_is_one_line(tmp_path: Path) -> None:
    """compact cannot write the record back (a batch's max timestamp is 64 bits): one line
    naming the segment, the unencodable code, exit 3, nothing changed (it was exit 70)."""
    part = _past_long_max(tmp_path)
    before = tree(part)
    code, _out, err = run("compact", str(part), "--high-watermark", "log-end", cwd=tmp_path)
    assert code == 3, err
    assert err.count("\n") == 1 and "00000000000000000000.log:0:" in err
    assert "(unencodable)" in err and "offset 1 has timestamp 9223372036854775809" in err
    assert tree(part) == before

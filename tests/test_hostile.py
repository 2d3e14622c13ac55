"""Hostile input that is not a memory bomb (issue 22): each ends in one line and a documented
exit code, or in a complete answer, never in an internal error or a signal."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import crc32c
import pytest
from support.cli import run
from support.extras import needs_pyarrow
from support.rewrite import tree, write_partition

from klogtool.formats import engine
from klogtool.formats.batch import Record
from klogtool.formats.records import SegmentScanner
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


@needs_pyarrow
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
    code, _out, err = run(
        "compact", "--assume-defaults", str(part), "--high-watermark", "log-end", cwd=tmp_path
    )
    assert code == 3, err
    assert err.count("\n") == 1 and "00000000000000000000.log:0:" in err
    assert "(unencodable)" in err and "offset 1 has timestamp 9223372036854775809" in err
    assert tree(part) == before


def _big_segment(part: Path) -> Path:
    """A 3 MB segment (30 batches of 100 1-KB records)."""
    recs = [Record(i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * 1000) for i in range(3000)]
    data = b"".join(encode_batch(recs[i : i + 100]) for i in range(0, 3000, 100))
    write_partition(part, [(0, [data])])
    return part / "00000000000000000000.log"


SHRINK_UNDER_A_MAPPING = (
    "import os, sys\n"
    "from klogtool.log.segment import mapped\n"
    "with mapped(sys.argv[1]) as view:\n"
    "    os.truncate(sys.argv[1], 4096)\n"
    "    view[100_000]\n"
)


@pytest.mark.skipif(not engine.native_available(), reason="the SIGBUS guard is native code")
def test_a_file_that_shrinks_under_its_mapping_is_one_line_and_exit_3(tmp_path: Path) -> None:
    """Reading a page past the new end of a mapped file raises SIGBUS: the native guard names
    the file and the byte position, exit 3 (the process died by the signal, no word)."""
    log = _big_segment(tmp_path / "t-0")
    p = subprocess.run(
        [sys.executable, "-c", SHRINK_UNDER_A_MAPPING, str(log)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 3, p.stderr
    assert p.stderr == (
        f"klogtool: error: {log}:100000: the file shrank while klogtool read it (another "
        "process truncated or replaced it); run the command again (file-shrank)\n"
    )


@pytest.fixture(scope="module")
def big_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 96 MB segment: 32 copies of the 3 MB one, offsets moved on (the python engine's
    verify --deep walked 24 MB in ~50 ms on a fast machine: done before the truncation)."""
    root = tmp_path_factory.mktemp("big")
    one = _big_segment(root / "one-0").read_bytes()
    out = bytearray()
    for n in range(32):
        for b in SegmentScanner(memoryview(one)):
            raw = bytearray(b.data)
            struct.pack_into(">q", raw, 0, b.base_offset + 3000 * n)
            out += raw
    path = root / "big.log"
    path.write_bytes(bytes(out))
    return path


@pytest.mark.skipif(not engine.native_available(), reason="the SIGBUS guard is native code")
@pytest.mark.parametrize(
    "command",
    [
        ["dump-segments", "--deep-iteration", "--print-data"],
        ["find", "--value-regex", "v", "--format", "jsonl"],
        ["verify", "--deep"],
    ],
    ids=lambda c: c[0],
)
def test_a_segment_truncated_while_a_command_reads_it(
    tmp_path: Path, big_copy: Path, command: list[str], klogtool_engine: str
) -> None:
    """Another process truncates the segment while the command walks it: one line naming the
    segment, exit 3 (the process died by SIGBUS). The walk is the python engine's, slow enough
    to be caught in the middle; the guard is the same under both."""
    if klogtool_engine == engine.NATIVE:
        pytest.skip("the native engine's walk is too quick to be caught in the middle")
    target = tmp_path / "t-0" / "00000000000000000000.log"
    target.parent.mkdir()
    shutil.copy(big_copy, target)
    p = subprocess.Popen(
        [sys.executable, "-m", "klogtool", *command, str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    maps = Path(f"/proc/{p.pid}/maps")
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        if str(target) in maps.read_text():  # the command has mapped the segment
            break
        time.sleep(0.001)
    time.sleep(0.01)  # and walked into it
    os.truncate(target, 4096)
    _out, raw_err = p.communicate(timeout=120)
    err = raw_err.decode()
    assert p.returncode == 3, err
    assert err.count("\n") == 1 and "(file-shrank)" in err and str(target) in err, err

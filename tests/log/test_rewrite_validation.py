"""The rewrite commands validate every batch before they write anything (issue 11 items 8 and
13; issue 10: dropping producer state or leader epochs is lossy; a --max-batch-bytes refusal
does not send the operator to repair a sound segment)."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import crc32c
import pytest
from support.cli import run
from support.paths import LOGS
from support.rewrite import tree

LOGDIR = LOGS / "logdir"
SEG0 = "00000000000000000000.log"
SEG17 = "00000000000000000017.log"

REWRITES = [
    ["convert-format", "--in-place", "--compression", "gzip"],
    ["convert-format", "--in-place", "--compression", "none", "--to-magic", "2"],
    ["convert-format", "DEST"],
    ["convert-format", "DEST", "--to-magic", "1", "--allow-lossy"],
    [
        "compact",
        "--assume-defaults",
        "--min-cleanable-dirty-ratio",
        "0",
        "--high-watermark",
        "log-end",
    ],
]


def _partition(tmp_path: Path) -> Path:
    logdir = tmp_path / "data"
    shutil.copytree(LOGDIR / "v2-none-0", logdir / "v2-none-0")
    return logdir / "v2-none-0"


def _set_base_offset(seg: Path, position: int, base: int) -> None:
    """The v2 base offset is not under the CRC: changing it keeps the batch 'valid'."""
    buf = bytearray(seg.read_bytes())
    struct.pack_into(">q", buf, position, base)
    seg.write_bytes(bytes(buf))


def _run(tmp_path: Path, command: list[str], part: Path) -> tuple[int, str]:
    dest = tmp_path / "out"
    args = [str(dest) if a == "DEST" else a for a in command]
    code, _out, err = run(*args[:1], str(part), *args[1:], cwd=tmp_path)
    if "DEST" in command:
        assert not dest.exists() or not any(dest.iterdir()), "nothing written to DEST"
        assert not [p for p in tmp_path.iterdir() if "partial" in p.name]
    return code, err


@pytest.mark.parametrize("command", REWRITES, ids=" ".join)
def test_a_batch_below_its_segment_base_is_refused_before_writing(
    tmp_path: Path, command: list[str]
) -> None:
    part = _partition(tmp_path)
    _set_base_offset(part / SEG17, 0, 3)  # segment 17's first batch claims offset 3
    before = tree(part.parent)
    code, err = _run(tmp_path, command, part)
    assert code == 3, err
    assert "(offset-below-segment-base)" in err and f"{SEG17}:0" in err
    assert "truncate-recovery" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2
    assert tree(part.parent) == before  # no .cleaned left behind, nothing changed


@pytest.mark.parametrize("command", REWRITES, ids=" ".join)
def test_offsets_that_overlap_the_previous_segment_are_refused(
    tmp_path: Path, command: list[str]
) -> None:
    part = _partition(tmp_path)
    _set_base_offset(part / SEG0, 693, 20)  # segment 0's last batch now ends at 21 > 17
    before = tree(part.parent)
    code, err = _run(tmp_path, command, part)
    assert code == 3, err
    assert "(offset-not-increasing)" in err and SEG17 in err
    assert tree(part.parent) == before


def _break_records_keep_crc(seg: Path, position: int) -> None:
    """Garbage where the first record starts, with a recomputed (matching) CRC."""
    buf = bytearray(seg.read_bytes())
    size = struct.unpack_from(">i", buf, position + 8)[0]
    end = position + 12 + size
    buf[position + 61 : position + 66] = b"\xff" * 5  # an over-long varint
    struct.pack_into(">I", buf, position + 17, crc32c.crc32c(bytes(buf[position + 21 : end])))
    seg.write_bytes(bytes(buf))


@pytest.mark.parametrize("command", REWRITES, ids=" ".join)
def test_undecodable_records_are_refused_whatever_the_target(
    tmp_path: Path, command: list[str]
) -> None:
    part = _partition(tmp_path)
    _break_records_keep_crc(part / SEG0, 147)
    before = tree(part.parent)
    code, err = _run(tmp_path, command, part)
    assert code == 3, err
    assert f"{SEG0}:" in err and "Traceback" not in err
    assert tree(part.parent) == before


def test_dropping_producer_ids_and_leader_epochs_needs_allow_lossy(tmp_path: Path) -> None:
    # v2-none-0 has no headers a v1 target would lose, only producer state and epochs
    part = _partition(tmp_path)
    code, _out, err = run(
        "convert-format", str(part), str(tmp_path / "v1"), "--to-magic", "1", cwd=tmp_path
    )
    assert code == 4, err
    assert "producer id" in err and "leader epoch" in err and "(lossy-conversion)" in err
    assert not (tmp_path / "v1").exists()
    code, _out, err = run(
        "convert-format",
        str(part),
        str(tmp_path / "v1"),
        "--to-magic",
        "1",
        "--allow-lossy",
        cwd=tmp_path,
    )
    assert code == 0, err


def test_a_batch_over_max_batch_bytes_is_not_sent_to_repair(tmp_path: Path) -> None:
    part = tmp_path / "v2-gzip-0"
    shutil.copytree(LOGDIR / "v2-gzip-0", part)
    code, _out, err = run(
        "convert-format", str(part), str(tmp_path / "out"), "--max-batch-bytes", "100"
    )
    assert code == 3, err
    assert "--max-batch-bytes" in err and "truncate-recovery" not in err


def test_a_missing_directory_for_dest_is_an_input_error_not_a_usage_error(tmp_path: Path) -> None:
    """The command line is right; the directory that would hold DEST is missing: an input
    that is not there, exit 3 as for a missing SRC (README's table: 4 is refused for safety),
    with the destination's code and a hint (it was a usage error, exit 2, then exit 4)."""
    src = tmp_path / "v1-gzip-0"
    shutil.copytree(LOGS / "logdir" / "v1-gzip-0", src)
    code, _out, err = run("convert-format", str(src), str(tmp_path / "no" / "such" / "t-0"))
    assert code == 3, err
    assert err.splitlines()[0].endswith("does not exist (destination-parent-missing)")
    assert not (tmp_path / "no").exists()

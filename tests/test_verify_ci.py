"""verify for CI jobs and scripts (issue 22): --strict (warnings fail), --ignore CODE (an
expected finding), -q (errors only), and a JSON summary that claims no record count it did
not make."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from support.cli import run
from support.paths import LOGDIR


def _without_indexes(tmp_path: Path) -> Path:
    part = tmp_path / "t-0"
    shutil.copytree(LOGDIR / "v2-none-0", part)
    for p in part.glob("*index"):
        p.unlink()
    return part


def test_strict_makes_warnings_fail(tmp_path: Path) -> None:
    part = _without_indexes(tmp_path)
    code, out, err = run("verify", str(part), cwd=tmp_path)
    assert code == 0 and "warning: index-missing" in out, err
    code, out, err = run("verify", "--strict", str(part), cwd=tmp_path)
    assert code == 1, err
    assert "klogtool verify: warnings found (--strict)" in out


def test_ignore_leaves_an_expected_finding_out(tmp_path: Path) -> None:
    part = _without_indexes(tmp_path)
    args = ["--ignore", "index-missing", "--ignore", "timeindex-missing"]
    code, out, err = run("verify", "--strict", *args, "--format", "jsonl", str(part))
    assert code == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    assert [o for o in objs if o["type"] == "finding"] == []
    summary = objs[-1]
    segments = len(list(part.glob("*.log")))  # an index-missing and a timeindex-missing each
    assert (summary["warnings"], summary["ignored"]) == (0, 2 * segments)


def test_ignore_takes_only_known_codes() -> None:
    code, _out, err = run("verify", "--ignore", "index-mising", str(LOGDIR))
    assert code == 2 and "'index-mising' is not a finding code" in err


def test_quiet_prints_errors_only(tmp_path: Path) -> None:
    part = _without_indexes(tmp_path)
    log = next(part.glob("*.log"))
    data = bytearray(log.read_bytes())
    data[-1] ^= 1  # the last batch's CRC fails
    log.write_bytes(bytes(data))
    code, out, err = run("-q", "verify", str(part), cwd=tmp_path)
    assert code == 1, err
    lines = out.splitlines()
    assert lines and all(line.startswith("error: ") for line in lines), out


def test_the_summary_counts_records_only_when_it_decoded_them() -> None:
    _code, out, _err = run("verify", "--format", "jsonl", str(LOGDIR / "v2-none-0"))
    assert "records" not in json.loads(out.splitlines()[-1])
    _code, out, _err = run("verify", "--deep", "--format", "jsonl", str(LOGDIR / "v2-none-0"))
    assert json.loads(out.splitlines()[-1])["records"] > 0

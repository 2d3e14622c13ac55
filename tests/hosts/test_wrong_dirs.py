"""One rule for every reading command (issue 23): a directory with nothing of Kafka's in it, and
a ``.log`` that is no Kafka file, end the run with one line and exit 3 (describe, stats,
transactions, explain, dump-segments and export answered such input with exit 0 or 1, and
``describe /etc`` listed ``dbus-1`` as a partition); a partition named ``.`` from inside keeps
its name, so its topic's configs and high watermark are found."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.cli import jsonl, run
from support.extras import skip_unless_pyarrow
from support.paths import LOGDIR

READERS = [
    ["describe"],
    ["stats"],
    ["transactions"],
    ["dump-segments"],
    ["verify"],
    ["find", "--key", "k"],
    ["export", "--to", "jsonl", "{out}"],
]


def _etc_like(root: Path) -> Path:
    """Directories named like partitions holding files of other programs (/etc's dbus-1)."""
    etc = root / "etc"
    (etc / "dbus-1").mkdir(parents=True)
    (etc / "dbus-1" / "system.conf").write_text("<busconfig/>")
    (etc / "rc0.d").mkdir()
    (etc / "hosts").write_text("127.0.0.1 localhost\n")
    return etc


def _png_log(root: Path) -> Path:
    part = root / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    return part


@pytest.mark.parametrize("case", ["empty", "etc", "png"])
@pytest.mark.parametrize("command", READERS + [["explain"]], ids=lambda c: c[0])
def test_no_kafka_files_is_one_line_and_exit_3(
    tmp_path: Path, command: list[str], case: str
) -> None:
    if case == "empty":
        target = tmp_path / "x-0"
        target.mkdir()
    elif case == "etc":
        target = _etc_like(tmp_path)
    else:
        target = _png_log(tmp_path)
    argv = [a.replace("{out}", str(tmp_path / "out")) for a in command]
    skip_unless_pyarrow(argv)
    code, _out, err = run(*argv, str(target), cwd=tmp_path)
    assert code == 3, (code, err)
    first, *more = err.splitlines()
    assert first.startswith("klogtool: error: ") and all(m.startswith("hint: ") for m in more)
    err = first
    codes = {"empty": "(no-kafka-files)", "png": "(not-a-log)"}
    if case in codes:
        assert err.rstrip().endswith(codes[case]), err
    else:  # etc: not a partition or log dir (explain: not a partition dir)
        assert "not a partition directory" in err, err


def test_explain_dot_inside_a_partition_keeps_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logdir = tmp_path / "logdir"
    shutil.copytree(LOGDIR, logdir)
    part = logdir / "v2-none-0"
    _code, far, _err = run("explain", "--format", "jsonl", str(part), cwd=tmp_path)
    code, near, err = run("explain", "--format", "jsonl", ".", cwd=part)
    assert code == 0, err
    far_obj, near_obj = jsonl(far)[-1], jsonl(near)[-1]
    assert near_obj["topic"] == "v2-none" and near_obj["high_watermark"] is not None
    assert {k: v for k, v in near_obj.items() if k not in ("partition", "now")} == {
        k: v for k, v in far_obj.items() if k not in ("partition", "now")
    }
    _code, out, _err = run("find", "--key", "key-1", "--format", "jsonl", ".", cwd=part)
    assert {o["topic"] for o in jsonl(out) if o["type"] == "record"} == {"v2-none"}

"""The directories a real host has besides live partitions (issue 23): ``-delete`` (a deleted
partition awaiting removal), ``-future`` (an alter-replica-log-dirs move), ``-stray`` (KIP-858,
both spellings). describe says what each is; a writing command names and skips them unless
the user names one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.cli import jsonl, run
from support.extras import needs_pyarrow, skip_unless_pyarrow
from support.paths import LOGDIR

UUID = "0123456789abcdef0123456789abcdef"
SPECIAL = {
    f"orders-1.{UUID}-delete": "delete",
    f"orders-2.{UUID}-future": "future",
    f"orders-3.{UUID}-stray": "stray",
    "orders-4-stray": "stray",
}


def _host(tmp_path: Path) -> Path:
    logdir = tmp_path / "kafka-logs-1"
    logdir.mkdir()
    shutil.copy(LOGDIR / "meta.properties", logdir)
    shutil.copytree(LOGDIR / "v2-none-0", logdir / "orders-0")
    for name in SPECIAL:
        shutil.copytree(LOGDIR / "v2-none-0", logdir / name)
    (logdir / "remote-log-index-cache").mkdir()
    (logdir / ".kafka_cleanshutdown").write_bytes(b"")
    return logdir


def test_describe_says_what_each_directory_is(tmp_path: Path) -> None:
    logdir = _host(tmp_path)
    code, out, err = run("describe", "--format", "jsonl", str(logdir), cwd=tmp_path)
    assert code == 0, err
    states = {Path(o["path"]).name: o["state"] for o in jsonl(out)}
    assert states == {"orders-0": None, **SPECIAL}
    code, out, err = run("describe", str(logdir), cwd=tmp_path)
    assert "orders-4-stray (stray: no longer assigned to this broker, KIP-858)" in out


def test_a_writing_command_skips_them_by_name_unless_named(tmp_path: Path) -> None:
    logdir = _host(tmp_path)
    args = ["retention-sweep", "--assume-defaults", "--retention-ms", "1", "--high-watermark"]
    args.append("log-end")
    before = {n: sorted(p.name for p in (logdir / n).iterdir()) for n in SPECIAL}
    code, _out, err = run(*args, str(logdir), cwd=tmp_path)
    assert code == 0, err
    for name in SPECIAL:
        assert f"{name}: skipped (" in err and "name it to include it" in err
        assert sorted(p.name for p in (logdir / name).iterdir()) == before[name]
    named = logdir / "orders-4-stray"
    code, _out, err = run(*args, str(named), cwd=tmp_path)
    assert code == 0 and "skipped" not in err, err
    assert sorted(p.name for p in named.iterdir()) != before["orders-4-stray"]


def test_verify_says_what_each_directory_is(tmp_path: Path) -> None:
    logdir = _host(tmp_path)
    code, out, err = run("verify", "--format", "jsonl", str(logdir), cwd=tmp_path)
    assert code == 0, err
    marked = {Path(o["path"]).name for o in jsonl(out) if o.get("code") == "not-live-partition"}
    assert marked == set(SPECIAL)


READERS = [
    ["stats", "--format", "jsonl"],
    ["find", "--format", "jsonl"],
    ["dump-segments", "--deep-iteration", "--format", "jsonl"],
    ["export", "--to", "jsonl", "{out}"],
    ["transactions", "--format", "jsonl"],
]


@pytest.mark.parametrize("command", READERS, ids=lambda c: c[0])
def test_a_reading_command_reads_only_the_live_partitions(
    tmp_path: Path, command: list[str]
) -> None:
    """export, find and stats of a log dir read the -delete/-future/-stray copies as live
    data (67 rows for 50 distinct offsets): they are left out, said once, unless named."""
    logdir = _host(tmp_path)
    argv = [a.replace("{out}", str(tmp_path / "out")) for a in command]
    skip_unless_pyarrow(argv)
    code, out, err = run(*argv, str(logdir), cwd=tmp_path)
    assert code in (0, 1), err
    (warning,) = [line for line in err.splitlines() if "not read:" in line]
    assert "4 partition directories the broker marked -delete, -future or -stray" in warning
    assert all(name in warning for name in SPECIAL)
    if command[0] == "export":
        rows = [json.loads(x) for f in (tmp_path / "out").rglob("*.json*") for x in f.open()]
        assert {r["partition"] for r in rows} == {0}  # orders-1..4 are the copies
    else:
        assert "orders-0" in out
        assert not any(name in out for name in SPECIAL)
    named = logdir / "orders-4-stray"
    code, out, err = (
        run(*argv[:-1], str(tmp_path / "out2"), str(named), cwd=tmp_path)
        if (command[0] == "export")
        else run(*argv, str(named), cwd=tmp_path)
    )
    assert code in (0, 1) and "not read:" not in err, err


@needs_pyarrow
def test_export_of_a_log_dir_has_each_offset_once(tmp_path: Path) -> None:
    logdir = _host(tmp_path)
    code, _out, err = run("export", "--to", "jsonl", str(tmp_path / "out"), str(logdir))
    assert code == 0, err
    rows = [
        json.loads(line)
        for f in (tmp_path / "out").rglob("*.json*")
        for line in f.read_text().splitlines()
    ]
    offsets = [r["offset"] for r in rows]
    assert offsets and len(offsets) == len(set(offsets))


@pytest.mark.parametrize("command", [["truncate-recovery"], ["rebuild-index"]], ids=lambda c: c[0])
def test_the_repair_commands_write_only_into_live_partitions(
    tmp_path: Path, command: list[str]
) -> None:
    """truncate-recovery and rebuild-index wrote indexes and a quarantine into -delete and
    -future dirs of a log dir: they are skipped with a warning, unless named."""
    logdir = _host(tmp_path)
    for d in [logdir / n for n in SPECIAL]:
        for p in d.glob("*index"):
            p.unlink()  # something a repair would write
    before = {n: sorted(p.name for p in (logdir / n).iterdir()) for n in SPECIAL}
    code, out, err = run(*command, "--format", "jsonl", str(logdir), cwd=tmp_path)
    assert code == 0, err
    assert {n: sorted(p.name for p in (logdir / n).iterdir()) for n in SPECIAL} == before
    skipped = {Path(o["path"]).name for o in jsonl(out) if o.get("code") == "not-live-partition"}
    assert skipped == set(SPECIAL)
    named = logdir / f"orders-2.{UUID}-future"
    code, _out, err = run(*command, str(named), cwd=tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in named.iterdir()) != before[named.name]


def test_convert_format_of_a_log_dir_leaves_them_and_the_metadata_log_alone(
    tmp_path: Path,
) -> None:
    """convert-format --in-place over a log dir converted the -delete/-future/-stray dirs and
    the KRaft metadata log with the rest."""
    from hosts.build import _metadata

    logdir = _host(tmp_path)
    _metadata(logdir / "__cluster_metadata-0")
    alone = [*SPECIAL, "__cluster_metadata-0"]
    before = {n: {p.name: p.read_bytes() for p in (logdir / n).iterdir()} for n in alone}
    code, _out, err = run("convert-format", "--in-place", "--compression", "gzip", str(logdir))
    assert code == 0, err
    for name in alone:
        assert f"{name}: skipped (" in err
        assert {p.name: p.read_bytes() for p in (logdir / name).iterdir()} == before[name]

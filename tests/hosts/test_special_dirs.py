"""The directories a real host has besides live partitions (issue 23): ``-delete`` (a deleted
partition awaiting removal), ``-future`` (an alter-replica-log-dirs move), ``-stray`` (KIP-858,
both spellings). describe says what each is; a writing command names and skips them unless
the user names one."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.cli import jsonl, run
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


def test_verify_and_stats_say_what_each_directory_is(tmp_path: Path) -> None:
    logdir = _host(tmp_path)
    code, out, err = run("verify", "--format", "jsonl", str(logdir), cwd=tmp_path)
    assert code == 0, err
    marked = {Path(o["path"]).name for o in jsonl(out) if o.get("code") == "not-live-partition"}
    assert marked == set(SPECIAL)
    code, out, err = run("stats", str(logdir), cwd=tmp_path)
    assert code == 0, err
    assert f"orders-1.{UUID}-delete (deleted, awaiting the broker's removal)" in out


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

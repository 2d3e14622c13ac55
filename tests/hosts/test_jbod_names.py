"""A production broker host's log dirs (issue 23): JBOD log dirs are named like partitions
(``kafka-logs-1``, ``data-0``), so what a directory is comes from its contents, never its name.
Every command that takes a directory, reading or writing, resolves it the same way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.cli import jsonl, run
from support.paths import LOGDIR
from support.processes import lock_held_by_another_process
from support.repair import copy_scenario, files

from klogtool.log import layout
from klogtool.log.atomic import log_dir_of


def _jbod(root: Path, name: str) -> Path:
    """A log dir named like a partition: the fixtures' broker files, two clean partitions
    and a torn one (the torn-tail scenario)."""
    logdir = root / name
    logdir.mkdir(parents=True)
    shutil.copy(LOGDIR / "meta.properties", logdir)
    for p in ("v2-gzip-0", "v2-none-0"):
        shutil.copytree(LOGDIR / p, logdir / p)
    copy_scenario("torn-tail", logdir)
    return logdir


@pytest.mark.parametrize("name", ["kafka-logs-1", "data-0", "disk-2"])
def test_a_log_dir_named_like_a_partition_is_a_log_dir(tmp_path: Path, name: str) -> None:
    logdir = _jbod(tmp_path, name)
    assert not layout.looks_like_partition_dir(logdir)
    code, out, err = run("describe", "--format", "jsonl", str(logdir), cwd=tmp_path)
    assert code == 0, err
    parts = sorted(Path(o["path"]).name for o in jsonl(out) if o["type"] == "partition")
    assert parts == ["torn-tail-0", "v2-gzip-0", "v2-none-0"]
    code, out, _err = run("verify", "--format", "jsonl", str(logdir), cwd=tmp_path)
    assert code == 1 and any(o.get("code") == "torn-tail" for o in jsonl(out))


def test_truncate_recovery_of_a_jbod_log_dir_repairs_the_torn_partition(tmp_path: Path) -> None:
    """It said "1 partition, clean", exit 0, and left the torn partition as it was."""
    logdir = _jbod(tmp_path, "kafka-logs-1")
    torn = logdir / "torn-tail-0"
    before = files(torn)
    code, _out, err = run("truncate-recovery", str(logdir), cwd=tmp_path)
    assert code == 0, err
    assert files(torn) != before
    code, _out, err = run("verify", str(torn), cwd=tmp_path)
    assert code == 0, err


def test_rebuild_index_of_a_jbod_log_dir(tmp_path: Path) -> None:
    """It ended with an internal error (IndexError, exit 70)."""
    logdir = _jbod(tmp_path, "data-0")
    shutil.rmtree(logdir / "torn-tail-0")
    for p in logdir.glob("*/*.index"):
        p.unlink()
    code, _out, err = run("rebuild-index", str(logdir), cwd=tmp_path)
    assert code == 0, err
    assert len(list(logdir.glob("*/*.index"))) == len(list(logdir.glob("*/*.log")))


def test_the_broker_lock_of_a_jbod_log_dir_is_checked(tmp_path: Path) -> None:
    logdir = _jbod(tmp_path, "kafka-logs-2")
    with lock_held_by_another_process(logdir):
        code, _out, err = run("truncate-recovery", str(logdir), cwd=tmp_path)
    assert code == 4 and "(broker-lock-held)" in err, err


def test_contents_decide_even_against_the_name(tmp_path: Path) -> None:
    """Segments in a directory with any name are a partition; a directory of partitions named
    like one is a log dir; only a directory holding nothing Kafka's goes by its name."""
    odd = tmp_path / "segments"
    shutil.copytree(LOGDIR / "v2-none-0", odd)
    assert layout.looks_like_partition_dir(odd)
    assert layout.looks_like_partition_dir(tmp_path) is False
    empty = tmp_path / "orders-3"
    empty.mkdir()
    assert layout.looks_like_partition_dir(empty)


def test_convert_format_locks_the_log_dir_dest_is_written_into(tmp_path: Path) -> None:
    """It wrote a new partition into a log dir a running broker holds."""
    src = _jbod(tmp_path, "kafka-logs-1") / "v2-none-0"
    dest_dir = tmp_path / "kafka-logs-2"
    dest_dir.mkdir()
    shutil.copy(LOGDIR / "meta.properties", dest_dir)
    with lock_held_by_another_process(dest_dir):
        code, _out, err = run("convert-format", str(src), str(dest_dir / "v2-none-0"))
    assert code == 4 and "(broker-lock-held)" in err, err
    assert not (dest_dir / "v2-none-0").exists()


def test_convert_format_of_a_segment_refuses_dest_inside_its_partition(tmp_path: Path) -> None:
    part = _jbod(tmp_path, "kafka-logs-1") / "v2-none-0"
    seg = sorted(part.glob("*.log"))[0]
    code, _out, err = run("convert-format", str(seg), str(part / "converted"))
    assert code == 2 and "inside SRC's partition" in err, err
    assert not (part / "converted").exists()


def test_log_dir_of_a_jbod_log_dir_is_itself(tmp_path: Path) -> None:
    logdir = _jbod(tmp_path, "kafka-logs-1")
    assert log_dir_of(logdir) == logdir
    assert log_dir_of(logdir / "v2-none-0") == logdir


@pytest.mark.parametrize("command", ["truncate-recovery", "rebuild-index", "compact"])
def test_a_symlinked_partition_named_directly_is_refused_before_anything_changes(
    tmp_path: Path, command: str
) -> None:
    """``logdir/p-0 -> /disk2/p-0``: truncate-recovery created its quarantine, then failed
    with "Not a directory (io-error)", half done."""
    logdir = _jbod(tmp_path, "kafka-logs-1")
    (logdir / ".kafka_cleanshutdown").write_bytes(b"")
    disk2 = tmp_path / "disk2"
    disk2.mkdir()
    (logdir / "torn-tail-0").rename(disk2 / "torn-tail-0")
    (logdir / "torn-tail-0").symlink_to(disk2 / "torn-tail-0")
    before = {**files(logdir), **files(disk2 / "torn-tail-0")}
    code, _out, err = run(command, str(logdir / "torn-tail-0"), cwd=tmp_path)
    assert code == 4 and "(symlink)" in err and err.startswith("klogtool: error: "), err
    assert {**files(logdir), **files(disk2 / "torn-tail-0")} == before
    assert sorted(p.name for p in (disk2 / "torn-tail-0").iterdir() if p.is_dir()) == []

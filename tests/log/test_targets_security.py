"""Which log dir a writing command locks, and which partition dirs it accepts (issue 11, items
4, 5, 9, 10 and 14; issue 10: an unreadable .lock is an I/O error). Each test builds the
hostile tree in a temp dir and checks that nothing outside it changed and the broker's lock
held."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import run
from support.paths import LOGS
from support.processes import lock_held_by_another_process
from support.rewrite import tree

from klogtool.errors import InputError, RefusedError
from klogtool.log import atomic
from klogtool.log.atomic import log_dir_lock, log_dir_of
from klogtool.log.partition import load_partition
from klogtool.log.writing import select_partitions, writing_session

LOGDIR = LOGS / "logdir"
WRITERS = [
    ["truncate-recovery"],
    ["rebuild-index"],
    ["compact"],
    ["retention-sweep", "--assume-defaults", "--retention-ms", "1"],
    ["convert-format", "--in-place", "--compression", "gzip"],
]


def _linked_partition(tmp_path: Path) -> tuple[Path, Path]:
    """A broker's log dir whose partition dir is a symlink to another disk."""
    logdir = tmp_path / "data"
    logdir.mkdir()
    (logdir / "meta.properties").write_bytes((LOGDIR / "meta.properties").read_bytes())
    disk2 = tmp_path / "disk2"
    disk2.mkdir()
    shutil.copytree(LOGDIR / "v2-none-0", disk2 / "v2-none-0")
    (logdir / "v2-none-0").symlink_to(disk2 / "v2-none-0")
    return logdir, disk2


@pytest.mark.parametrize("command", WRITERS, ids=lambda c: c[0])
def test_a_symlinked_partition_dir_named_directly_is_refused(
    tmp_path: Path, command: list[str]
) -> None:
    """Refused before anything changes, lock held or not (every writer failed half-way with
    "Not a directory", exit 3: file operations never go through a link)."""
    logdir, disk2 = _linked_partition(tmp_path)
    before = tree(disk2)
    with lock_held_by_another_process(logdir):
        code, _out, err = run(*command, str(logdir / "v2-none-0"), cwd=tmp_path)
    assert code == 4, err
    assert "(symlink)" in err and f"stop the broker that holds {logdir}" in err
    assert tree(disk2) == before  # nothing changed, and no stray .lock beside the target
    assert not (disk2 / ".lock").exists()
    code, _out, err = run(*command, str(logdir / "v2-none-0"), cwd=tmp_path)
    assert code == 4 and "(symlink)" in err, err


def test_log_dir_of_a_linked_partition_is_the_named_parent(tmp_path: Path) -> None:
    logdir, _disk2 = _linked_partition(tmp_path)
    assert log_dir_of(logdir / "v2-none-0") == logdir
    assert log_dir_of(logdir / "v2-none-0" / "00000000000000000000.log") == logdir


@pytest.mark.parametrize("stray", [".lock", "meta.properties"])
@pytest.mark.parametrize("command", WRITERS, ids=lambda c: c[0])
def test_a_stray_lock_or_meta_properties_in_a_partition_dir_does_not_make_it_a_log_dir(
    tmp_path: Path, command: list[str], stray: str
) -> None:
    logdir = tmp_path / "data"
    shutil.copytree(LOGDIR / "v2-none-0", logdir / "v2-none-0")
    (logdir / "v2-none-0" / stray).write_bytes(b"")
    assert log_dir_of(logdir / "v2-none-0") == logdir
    before = tree(logdir / "v2-none-0")
    with lock_held_by_another_process(logdir):
        code, _out, err = run(*command, str(logdir / "v2-none-0"), cwd=tmp_path)
    assert code == 4, err
    assert tree(logdir / "v2-none-0") == before


def test_a_directory_holding_segments_belongs_to_its_parent(tmp_path: Path) -> None:
    part = tmp_path / "copied-segments"
    shutil.copytree(LOGDIR / "v2-none-0", part)
    (part / ".lock").write_bytes(b"")
    assert log_dir_of(part) == tmp_path


@pytest.mark.parametrize(
    "command",
    [
        ["compact"],
        ["retention-sweep", "--assume-defaults", "--retention-ms", "1"],
        ["truncate-recovery"],
    ],
    ids=lambda c: c[0],
)
def test_an_illegal_topic_name_is_refused_before_anything_changes(
    tmp_path: Path, command: list[str]
) -> None:
    logdir = tmp_path / "data"
    shutil.copytree(LOGDIR, logdir, ignore=shutil.ignore_patterns("v0-*", "v1-*", "__*", "txn-*"))
    shutil.copytree(LOGDIR / "v2-none-0", logdir / "or ders-0")
    before = tree(logdir)
    code, _out, err = run(*command, str(logdir), cwd=tmp_path)
    assert code == 3, err
    assert "bad-partition-name" in err and "or ders" in err
    assert tree(logdir) == before
    code, _out, err = run(*command, str(logdir / "or ders-0"), cwd=tmp_path)
    assert code == 3 and "bad-partition-name" in err
    assert tree(logdir) == before


def test_path_dot_keeps_the_partition_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logdir = tmp_path / "data"
    shutil.copytree(LOGDIR / "v2-none-0", logdir / "v2-none-0")
    (logdir / "replication-offset-checkpoint").write_text("0\n1\nv2-none 0 3\n")
    monkeypatch.chdir(logdir / "v2-none-0")
    for arg in (".", "./"):
        found, _ = select_partitions([arg])
        assert [p.name for p in found] == ["v2-none-0"]
        view = load_partition(found[0])
        assert (view.topic, view.partition) == ("v2-none", 0)
        assert view.high_watermark() == (3, "replication-offset-checkpoint")


def _try_exclusive_lock_elsewhere(log_dir: Path) -> int:
    """Exit status of another process taking ``log_dir``'s lock as a klogtool writer would."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from klogtool.errors import RefusedError\n"
        "from klogtool.log.atomic import log_dir_lock\n"
        "try:\n"
        f"    with log_dir_lock(Path({str(log_dir)!r})):\n"
        "        pass\n"
        "except RefusedError:\n"
        "    sys.exit(4)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode


def test_a_read_only_source_is_locked_shared_against_writers(tmp_path: Path) -> None:
    logdir = tmp_path / "data"
    shutil.copytree(LOGDIR / "v2-none-0", logdir / "v2-none-0")
    assert not (logdir / ".lock").exists()
    with writing_session([], force=False, dry_run=False, read_only=[logdir / "v2-none-0"]):
        assert _try_exclusive_lock_elsewhere(logdir) == 4  # a writer cannot start meanwhile
    assert not (logdir / ".lock").exists()  # the .lock klogtool made is gone again
    assert _try_exclusive_lock_elsewhere(logdir) == 0


def test_two_readers_share_the_lock(tmp_path: Path) -> None:
    with log_dir_lock(tmp_path, shared=True), log_dir_lock(tmp_path, shared=True):
        assert _try_exclusive_lock_elsewhere(tmp_path) == 4
    assert not (tmp_path / ".lock").exists()


def test_a_lock_file_that_cannot_be_opened_is_an_io_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def denied(path: object, flags: int, *args: object) -> int:
        if str(path).endswith(".lock"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(atomic.os, "open", denied)
    with pytest.raises(InputError) as exc, log_dir_lock(tmp_path):
        pass
    assert exc.value.exit_code == 3 and exc.value.code == "io-error"
    assert exc.value.path == str(tmp_path / ".lock") and "Permission denied" in exc.value.message
    assert not isinstance(exc.value, RefusedError)

"""A broker that is running (issue 23): a dry run changes nothing, so it is allowed beside
the broker's lock (it was refused, exit 4, which blocked planning during an incident), with a
warning that the files may change under it; the real run is still refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.cli import jsonl, run
from support.paths import LOGDIR
from support.processes import lock_held_by_another_process
from support.repair import copy_scenario, files


def _log_dir_with_a_torn_partition(tmp_path: Path) -> tuple[Path, Path]:
    logdir = tmp_path / "kafka-logs-1"
    logdir.mkdir()
    shutil.copy(LOGDIR / "meta.properties", logdir)
    return logdir, copy_scenario("torn-tail", logdir)


@pytest.mark.parametrize("command", ["truncate-recovery", "rebuild-index"])
def test_a_dry_run_beside_a_running_broker_is_allowed_with_a_warning(
    tmp_path: Path, command: str
) -> None:
    logdir, part = _log_dir_with_a_torn_partition(tmp_path)
    before = files(part)
    with lock_held_by_another_process(logdir):
        code, out, err = run(command, "--dry-run", "--format", "jsonl", str(logdir))
        assert code in (0, 1), err
        warned = [o for o in jsonl(out) if o.get("code") == "broker-running"]
        assert [o["path"] for o in warned] == [str(logdir)]
        assert files(part) == before and not (part / ".klogtool-quarantine").exists()
        code, _out, err = run(command, str(logdir))
        assert code == 4 and "(broker-lock-held)" in err


def test_a_compact_dry_run_beside_a_running_broker_warns(tmp_path: Path) -> None:
    logdir = tmp_path / "data"
    shutil.copytree(LOGDIR / "v2-none-0", logdir / "v2-none-0")
    with lock_held_by_another_process(logdir):
        code, _out, err = run("compact", "--dry-run", str(logdir / "v2-none-0"))
    assert code == 0, err
    assert "holds its .lock: this dry run reads files that may change under it" in err


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_broker_whose_lock_file_was_deleted_or_replaced_is_still_seen(
    tmp_path: Path, how: str
) -> None:
    """The broker keeps its lock on the old .lock; klogtool locked the new file and wrote.
    /proc/locks and the holder's open files show it: refused, exit 4."""
    logdir, part = _log_dir_with_a_torn_partition(tmp_path)
    before = files(part)
    with lock_held_by_another_process(logdir):
        (logdir / ".lock").unlink()
        if how == "replaced":
            (logdir / ".lock").write_bytes(b"")
        code, _out, err = run("truncate-recovery", str(logdir))
    assert code == 4 and "former .lock" in err and "(broker-lock-held)" in err, err
    assert files(part) == before


@pytest.mark.parametrize(
    "command",
    [
        ["describe"],
        ["verify"],
        ["dump-segments"],
        ["find", "--key", "k"],
        ["transactions"],
        ["stats"],
    ],
    ids=lambda c: c[0],
)
def test_reading_beside_a_running_broker_warns_once(tmp_path: Path, command: list[str]) -> None:
    """The active segments may change under the read: said once per log dir (it said
    nothing)."""
    logdir = tmp_path / "kafka-logs-1"
    shutil.copytree(LOGDIR, logdir)
    with lock_held_by_another_process(logdir):
        _code, _out, err = run(*command, str(logdir), str(logdir / "v2-none-0"))
    assert err.count("holds this log dir's .lock: its active segments may change") == 1, err
    _code, _out, err = run(*command, str(logdir))
    assert ".lock" not in err

"""Crash safety of truncate-recovery, --restore and rebuild-index: for EVERY N up to the number
of file operations a run makes, the command is SIGKILLed after its N-th operation
(``KLOGTOOL_CRASH_AFTER_OPS=N``, in a forked child process), then run again. Afterwards every
record that was readable before is readable or in the quarantine, ``verify`` is clean, the
log is exactly what an uninterrupted run leaves, and a --restore gives the original back."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support.cli import jsonl, run
from support.paths import CORRUPT, LOGDIR
from support.processes import KILLED, run_crashing
from support.repair import (
    INTERVAL,
    copy_scenario,
    files,
    intact_records,
    manifest,
    middle_crc_logdir,
    partition_records,
    quarantine_runs,
    quarantined_records,
)

from klogtool.log.atomic import CRASH_ENV


def _tree(logdir: Path) -> dict[str, bytes]:
    """Every file of a log dir and its partitions (quarantines and the lock left out)."""
    out = {f"./{k}": v for k, v in files(logdir).items()}
    for d in sorted(p for p in logdir.iterdir() if p.is_dir()):
        out |= {f"{d.name}/{k}": v for k, v in files(d).items()}
    return out


def _logs(tree: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in tree.items() if k.endswith(".log")}


def _verify_clean(path: Path) -> None:
    code, out, _ = run("verify", "--format", "jsonl", str(path))
    found = [o for o in jsonl(out) if o["type"] == "finding"]
    assert code == 0 and found == [], found


def _operations(args: list[str], cwd: Path) -> int:
    code, out, err = run(*args, "--format", "jsonl", cwd=cwd)
    assert code == 0, err
    return [o for o in jsonl(out) if o["type"] == "summary"][0]["operations"]


def _nothing_lost(logdir: Path, original: dict[str, bytes], n: int) -> None:
    """Every record readable in the original partitions is readable now, or quarantined."""
    for d in sorted(p for p in logdir.iterdir() if p.is_dir()):
        before: set[tuple] = set()
        for k, v in original.items():
            if k.startswith(d.name + "/") and k.endswith(".log"):
                before |= intact_records(v)
        now = partition_records(d)
        for swap in d.glob("*.log.swap"):  # mid-way through completing a swap, as the broker
            now |= intact_records(swap.read_bytes())  # (and a re-run) goes on to do
        lost = before - now - quarantined_records(d)
        assert not lost, (n, d.name, sorted(lost)[:3])


def _crash_every_op(
    tmp_path: Path,
    make: Callable[[Path], Path],
    args: Callable[[Path], list[str]],
    check: Callable[[Path, dict, dict, int], None],
    done_rerun: tuple[int, str] | None = None,
) -> int:
    """Run ``args`` uninterrupted on one copy, then killed after op N (for every N) on fresh
    copies, each followed by a re-run; ``check(logdir, original, uninterrupted, n)``. At the
    instant of each kill already, no readable record may be missing from both the partition
    and its quarantine."""
    clean = make(tmp_path / "clean")
    original = _tree(clean)
    total = _operations(args(clean), tmp_path)
    uninterrupted = _tree(clean)
    assert total >= 8
    for n in range(1, total + 1):
        logdir = make(tmp_path / f"crash{n}")
        status = run_crashing(args(logdir), tmp_path, n)
        assert status == KILLED, (n, status)
        _nothing_lost(logdir, original, n)
        code, out, err = run(*args(logdir), cwd=tmp_path)
        if n == total and done_rerun is not None:
            # killed after its last operation, the run was complete: the re-run is one of a
            # finished run (for --restore: nothing left to restore)
            assert (code, done_rerun[1] in err) == (done_rerun[0], True), (n, out, err)
        else:
            assert code == 0, (n, out, err)
        tree = _tree(logdir)
        assert not [k for k in tree if k.endswith((".cleaned", ".swap", ".deleted"))], n
        check(logdir, original, uninterrupted, n)
    # one more than the run needs: it completes
    logdir = make(tmp_path / "complete")
    assert run_crashing(args(logdir), tmp_path, total + 1) >= 0
    return total


def _middle(dst: Path) -> Path:
    dst.mkdir(parents=True)
    return middle_crc_logdir(dst).parent


def _recover_args(logdir: Path) -> list[str]:
    return ["truncate-recovery", "--index-interval-bytes", INTERVAL, str(logdir)]


def test_truncate_recovery_survives_a_crash_at_every_operation(tmp_path: Path) -> None:
    part_name = "v2-none-0"

    def check(logdir: Path, original: dict, uninterrupted: dict, n: int) -> None:
        part = logdir / part_name
        tree = _tree(logdir)
        assert tree == uninterrupted, n  # the same log, indexes, checkpoints as a clean run
        runs = quarantine_runs(part)
        assert len(runs) == 1, n  # the interrupted run's quarantine was resumed
        assert manifest(runs[0])["state"] == "complete"
        before = set()
        for k, v in original.items():
            if k.startswith(part_name) and k.endswith(".log"):
                before |= intact_records(v)
        assert before <= partition_records(part) | quarantined_records(part), n
        _verify_clean(logdir)
        code, _, err = run("truncate-recovery", "--restore", str(part))
        assert code == 0, (n, err)
        assert _tree(logdir) == original, n

    total = _crash_every_op(tmp_path, _middle, _recover_args, check)
    assert total > 30


@pytest.mark.parametrize("scenario", ["torn-tail", "leftover-swap"])
def test_truncate_recovery_crash_small_scenarios(tmp_path: Path, scenario: str) -> None:
    def make(dst: Path) -> Path:
        dst.mkdir(parents=True)
        copy_scenario(scenario, dst)
        return dst

    def check(logdir: Path, original: dict, uninterrupted: dict, n: int) -> None:
        part = logdir / f"{scenario}-0"
        assert _tree(logdir) == uninterrupted, n
        before = partition_records(CORRUPT / f"{scenario}-0")
        assert before <= partition_records(part) | quarantined_records(part)
        _verify_clean(part)

    _crash_every_op(tmp_path, make, _recover_args, check)


def test_restore_survives_a_crash_at_every_operation(tmp_path: Path) -> None:
    def make(dst: Path) -> Path:
        logdir = _middle(dst)
        code, _, err = run(*_recover_args(logdir))
        assert code == 0, err
        return logdir

    originals: dict[str, dict] = {}

    def restore_args(logdir: Path) -> list[str]:
        return ["truncate-recovery", "--restore", str(logdir / "v2-none-0")]

    def check(logdir: Path, recovered: dict, restored: dict, n: int) -> None:
        if "damaged" not in originals:
            fresh = _middle(logdir.parent / "pristine")
            originals["damaged"] = _tree(fresh)
        assert _tree(logdir) == originals["damaged"] == restored, n
        assert quarantine_runs(logdir / "v2-none-0") == []  # removed once restored

    _crash_every_op(tmp_path, make, restore_args, check, done_rerun=(3, "no-quarantine"))


def test_rebuild_index_survives_a_crash_at_every_operation(tmp_path: Path) -> None:
    """leftover-swap-0 at the default interval: the swap's completion, then four indexes."""

    def make(dst: Path) -> Path:
        dst.mkdir(parents=True)
        copy_scenario("leftover-swap", dst)
        return dst

    def args(logdir: Path) -> list[str]:
        return ["rebuild-index", str(logdir / "leftover-swap-0")]

    def check(logdir: Path, original: dict, uninterrupted: dict, n: int) -> None:
        assert _tree(logdir) == uninterrupted, n
        pristine = {k: v for k, v in files(LOGDIR / "v2-none-0").items() if k.endswith(".log")}
        assert {k.split("/")[1]: v for k, v in _logs(uninterrupted).items()} == pristine
        _verify_clean(logdir / "leftover-swap-0")

    total = _crash_every_op(tmp_path, make, args, check)
    assert total >= 12


def test_crash_hook_in_a_real_subprocess(tmp_path: Path) -> None:
    """The same hook through ``python -m klogtool``: killed, then the re-run completes."""
    part = copy_scenario("crc-flip", tmp_path)
    env = {**os.environ, CRASH_ENV: "12", "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "klogtool", *_recover_args(part)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == -9, r.stderr
    env.pop(CRASH_ENV)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "resume" in r.stdout
    _verify_clean(part)

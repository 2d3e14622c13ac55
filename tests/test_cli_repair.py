"""truncate-recovery and rebuild-index from the command line: the broker's lock (a real fcntl
lock held by another process), outputs in each format, exit codes, one-line errors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import ERROR_LINE, jsonl, run
from support.processes import lock_held_by_another_process
from support.repair import INTERVAL, copy_scenario, files, middle_crc_logdir


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[Path]:
    """A log dir whose .lock another process holds with fcntl, as a running broker does."""
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    copy_scenario("torn-tail", logdir)
    with lock_held_by_another_process(logdir):
        yield logdir


@pytest.mark.parametrize(
    "args",
    # (a dry run is allowed, with a warning: tests/hosts/test_running_broker.py)
    [["truncate-recovery"], ["rebuild-index"]],
)
def test_a_held_broker_lock_is_refused(held_lock: Path, args: list[str]) -> None:
    part = held_lock / "torn-tail-0"
    before = files(part)
    code, out, err = run(*args, str(part))
    assert code == 4
    assert re.match(ERROR_LINE, err.splitlines()[0])
    assert "broker-lock-held" in err and str(held_lock / ".lock") in err
    assert "hint: stop the broker first" in err
    assert files(part) == before and not (part / ".klogtool-quarantine").exists()


def test_force_goes_ahead_and_check_needs_no_lock(held_lock: Path) -> None:
    part = held_lock / "torn-tail-0"
    code, _, _ = run("rebuild-index", "--check", str(part))
    assert code == 0
    code, out, err = run("truncate-recovery", "--force", "--format", "jsonl", str(part))
    assert code == 0, err
    assert [o["status"] for o in jsonl(out) if o["type"] == "partition"] == ["recovered"]


def test_truncate_recovery_text_output(tmp_path: Path) -> None:
    part = middle_crc_logdir(tmp_path)
    code, out, err = run("truncate-recovery", "--index-interval-bytes", INTERVAL, str(part.parent))
    assert code == 0 and err == ""
    assert f"{part.parent}/txn-0: clean; log end offset 15" in out
    assert f"{part}: recovered (00000000000000000008.log: Record is corrupt" in out
    assert "log end offset 27 -> 10" in out
    assert "kept 514 bytes, 10 records; quarantined 801 log bytes, 12 intact records" in out
    assert ": truncate 00000000000000000008.log from 418 to 116 bytes" in out  # not "op: op"
    assert "truncate: truncate" not in out
    assert "klogtool truncate-recovery" in out  # the summary table


def test_truncate_recovery_reports_completing_leftovers(tmp_path: Path) -> None:
    part = copy_scenario("leftover-swap", tmp_path)
    code, out, _ = run("truncate-recovery", str(part))
    assert code == 0
    assert (
        "interrupted operation completed: deleted unfinished 00000000000000000017.log.cleaned"
        in out
    )
    code, out, _ = run(
        "truncate-recovery", "--dry-run", str(copy_scenario("leftover-swap", tmp_path / "b"))
    )
    assert "interrupted operation would complete: completed swap" in out
    assert "note: the plan below is computed on the directory as it is now" in out


def test_json_output_is_one_array_of_typed_objects(tmp_path: Path) -> None:
    part = copy_scenario("garbage-tail", tmp_path)
    code, out, _ = run("truncate-recovery", "--format", "json", str(part))
    assert code == 0
    objs = json.loads(out)
    assert all("type" in o for o in objs)
    assert objs[-1]["type"] == "summary" and objs[-1]["recovered"] == 1
    assert objs[-1]["bytes_quarantined"] == 100


def test_restore_output(tmp_path: Path) -> None:
    part = copy_scenario("crc-flip", tmp_path)
    original = files(part)
    run("truncate-recovery", str(part))
    code, out, _ = run(
        "truncate-recovery", "--restore", "--dry-run", "--format", "jsonl", str(part)
    )
    assert code == 0
    objs = jsonl(out)
    assert [o["status"] for o in objs if o["type"] == "restore"] == ["would-restore"]
    assert "restore" in {o["op"] for o in objs if o["type"] == "plan_step"}
    code, out, _ = run("truncate-recovery", "--restore", str(part))
    assert code == 0 and "restored" in out
    assert files(part) == original


@pytest.mark.parametrize("command", ["truncate-recovery", "rebuild-index"])
def test_bad_inputs_are_one_line_errors(tmp_path: Path, command: str) -> None:
    code, _, err = run(command, str(tmp_path / "missing"))
    assert code == 3 and re.match(ERROR_LINE, err) and err.count("\n") == 1
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "a.txt").write_text("x")
    code, _, err = run(command, str(junk))
    assert code == 3 and "not-a-log-dir" in err and "Traceback" not in err
    code, _, err = run(command, "--jobs", "0", str(junk))
    assert code == 2


def test_restore_of_a_damaged_manifest_is_a_one_line_error(tmp_path: Path) -> None:
    part = copy_scenario("crc-flip", tmp_path)
    run("truncate-recovery", str(part))
    (qrun,) = (part / ".klogtool-quarantine").iterdir()
    (qrun / "manifest.json").write_text("{not json")
    code, _, err = run("truncate-recovery", "--restore", str(qrun))
    assert code == 3 and "bad-manifest" in err and err.count("\n") == 1


def test_help_pages_list_the_options() -> None:
    code, out, _ = run("truncate-recovery", "--help")
    assert code == 0
    for opt in (
        "--from-recovery-point",
        "--quarantine",
        "--restore",
        "--dry-run",
        "--force",
        "--index-interval-bytes",
        "--jobs",
    ):
        assert opt in out
    code, out, _ = run("rebuild-index", "--help")
    assert code == 0 and "--check" in out and "--jobs" in out


def test_byte_ranges_are_inclusive_with_their_size(tmp_path: Path) -> None:
    """Bytes 116 up to the file's end 418: '116..417 (302 bytes)' (was '116..418')."""
    part = middle_crc_logdir(tmp_path)
    code, out, _ = run("truncate-recovery", "--index-interval-bytes", INTERVAL, str(part.parent))
    assert code == 0
    assert ": copy bytes 116..417 (302 bytes) of 00000000000000000008.log, offsets" in out
    assert ": copy bytes 0..7 (8 bytes) of 00000000000000000008.index" in out
    code, out, _ = run("truncate-recovery", "--restore", "--dry-run", str(part.parent))
    assert "put bytes 116..417 (302 bytes) back into 00000000000000000008.log" in out

"""truncate-recovery against hostile trees (security review, issue 11; user testing, issue 10).

Each test builds the hostile tree in a temp dir and checks that a victim file OUTSIDE the log
dir is unchanged (and that klogtool refuses instead of acting)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import jsonl, run
from support.processes import KILLED, run_crashing
from support.repair import (
    INTERVAL,
    copy_scenario,
    files,
    manifest,
    middle_crc_logdir,
    quarantine_runs,
)

from klogtool.errors import RefusedError
from klogtool.formats.checkpoint import parse_offset_checkpoint
from klogtool.log.atomic import FileOps
from klogtool.log.context import ReadContext
from klogtool.log.repair.recovery_apply import apply_plan
from klogtool.log.repair.recovery_plan import RecoveryOptions, plan_partition
from klogtool.log.targets import PartitionTarget

S0 = "00000000000000000000"
PRECIOUS = b"precious data outside the log dir\n" * 10


def _victim(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    victim = outside / "victim"
    victim.write_bytes(PRECIOUS)
    return victim


def _recovered(tmp_path: Path) -> tuple[Path, Path]:
    """A crc-flip partition after truncate-recovery: (partition, its quarantine run)."""
    part = copy_scenario("crc-flip", tmp_path / "logs")
    code, _, err = run("truncate-recovery", "--index-interval-bytes", INTERVAL, str(part))
    assert code == 0, err
    (qrun,) = quarantine_runs(part)
    return part, qrun


def _edit(qrun: Path, change: Any) -> None:
    m = manifest(qrun)
    change(m)
    (qrun / "manifest.json").write_text(json.dumps(m))


def _piece(m: dict, action: str, source: str | None = None) -> dict:
    return next(p for p in m["pieces"] if p["action"] == action and source in (None, p["source"]))


@pytest.mark.parametrize(
    "change",
    [
        # a cut tail "put back" into a file outside
        lambda m, v: _piece(m, "cut").update(source=f"../../outside/{v.name}"),
        lambda m, v: _piece(m, "cut").update(source=str(v)),
        # a stored file pulled in from outside
        lambda m, v: _piece(m, "move", f"{'0' * 18}17.log").update(stored=str(v)),
        lambda m, v: _piece(m, "move", f"{'0' * 18}17.log").update(
            stored=f"../../../outside/{v.name}"
        ),
        # a file "created by the recovery" outside, to be deleted
        lambda m, v: m["pieces"].append(
            dict(_piece(m, "cut"), action="created", source=f"../../outside/{v.name}", stored=None)
        ),
        # a rewritten file restored over an outside one
        lambda m, v: _piece(m, "copy").update(source=f"../../outside/{v.name}"),
        # a name klogtool never writes
        lambda m, v: _piece(m, "copy").update(source="partition.metadata"),
        lambda m, v: m["pieces"].append(
            dict(_piece(m, "cut"), action="created", source="..", stored=None)
        ),
        lambda m, v: m["checkpoints"].append(
            {"file": "../outside/victim", "topic": "t", "partition": 0, "old": 1, "new": 0}
        ),
    ],
)
def test_restore_refuses_a_manifest_naming_files_outside(tmp_path: Path, change: Any) -> None:
    victim = _victim(tmp_path)
    part, qrun = _recovered(tmp_path)
    _edit(qrun, lambda m: change(m, victim))
    before = files(part)
    code, _, err = run("truncate-recovery", "--restore", str(part))
    assert code == 4 and "bad-manifest" in err, err
    assert victim.read_bytes() == PRECIOUS
    assert files(part) == before


def test_restore_ignores_a_manifest_redirecting_the_partition(tmp_path: Path) -> None:
    """With --quarantine DIR the restore goes to the PATH given (or a partition named like the
    quarantine's directory), never to where the manifest's ``partition`` points."""
    victim_part = copy_scenario("crc-flip", tmp_path / "victimlogs")
    other_name = victim_part.with_name("other-0")
    os.rename(victim_part, other_name)
    victim_before = files(other_name)
    part = copy_scenario("crc-flip", tmp_path / "logs")
    q = tmp_path / "q"
    code, _, err = run(
        "truncate-recovery", "--index-interval-bytes", INTERVAL, "--quarantine", str(q), str(part)
    )
    assert code == 0, err
    (qrun,) = quarantine_runs(part, q / part.name)
    _edit(qrun, lambda m: m.update(partition=str(other_name)))
    # the run dir named: the manifest's partition is not where the quarantine sits
    code, _, err = run("truncate-recovery", "--restore", str(qrun))
    assert code == 4 and "bad-manifest" in err, err
    # the partition named: its name is not the manifest's, so the quarantine is not its own
    code, _, err = run("truncate-recovery", "--restore", "--quarantine", str(q), str(part))
    assert code == 4 and "bad-manifest" in err, err
    assert files(other_name) == victim_before


def test_a_planted_in_progress_manifest_is_not_resumed(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    part = copy_scenario("v2-none-0", tmp_path / "logs")  # a clean partition
    before = files(part)
    run_dir = part / ".klogtool-quarantine" / "20000101T000000Z"
    run_dir.mkdir(parents=True)
    piece = {
        "action": "copy",
        "source": f"{S0}.index",
        "where": "partition",
        "stored": f"../../../../outside/{victim.name}",
        "start": 0,
        "end": 1,
        "sha256": "0" * 64,
        "kind": "index",
    }
    planted = {
        "type": "klogtool-quarantine",
        "version": 1,
        "state": "in-progress",
        "partition": str(part),
        "pieces": [piece],
        "checkpoints": [],
    }
    (run_dir / "manifest.json").write_text(json.dumps(planted))
    for extra in ([], ["--dry-run"]):
        code, out, _ = run("truncate-recovery", "--format", "jsonl", *extra, str(part))
        assert code == 1
        assert [o["code"] for o in jsonl(out) if o["type"] == "finding"] == ["bad-manifest"]
        assert victim.read_bytes() == PRECIOUS and files(part) == before
    # plain names, but another partition's run: not resumed either
    piece["stored"] = f"{S0}.index"
    (run_dir / f"{S0}.index").write_bytes(b"x")
    planted["partition"] = str(tmp_path / "elsewhere" / "other-0")
    (run_dir / "manifest.json").write_text(json.dumps(planted))
    code, out, _ = run("truncate-recovery", "--format", "jsonl", str(part))
    assert code == 1 and (run_dir / f"{S0}.index").read_bytes() == b"x"


def test_the_dry_run_of_a_resume_shows_every_deletion(tmp_path: Path) -> None:
    part = copy_scenario("crc-flip", tmp_path)
    args = ["truncate-recovery", "--index-interval-bytes", INTERVAL, str(part)]
    assert run_crashing(args, tmp_path, 5) == KILLED  # right after copying the cut tail
    (qrun,) = quarantine_runs(part)
    stored = qrun / f"{S0}.log.242-816"
    stored.write_bytes(b"half a cop")
    code, out, _ = run(
        "truncate-recovery",
        "--dry-run",
        "--format",
        "jsonl",
        "--index-interval-bytes",
        INTERVAL,
        str(part),
    )
    steps = [o for o in jsonl(out) if o["type"] == "plan_step"]
    assert {"op": "delete", "path": str(stored)} in [
        {"op": s["op"], "path": s["path"]} for s in steps
    ]
    assert stored.read_bytes() == b"half a cop"


def test_a_segment_swapped_for_a_link_after_planning_is_not_truncated(tmp_path: Path) -> None:
    """Time of check, time of use: the plan is made, then the segment becomes a link to a
    file outside; truncation and the quarantine copy refuse it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    part = copy_scenario("crc-flip", tmp_path / "logs")
    log = part / f"{S0}.log"
    victim = outside / "victim.log"
    victim.write_bytes(log.read_bytes())
    original = victim.read_bytes()
    opts = RecoveryOptions(ctx=ReadContext.of(), index_interval_bytes=int(INTERVAL))
    plan = plan_partition(PartitionTarget(part, str(part)), opts)
    assert plan.truncate is not None
    os.rename(log, part / "moved-away")
    log.symlink_to(victim)
    with pytest.raises(RefusedError):
        apply_plan(plan, opts, FileOps(), lambda obj: None)
    assert victim.read_bytes() == original
    (qrun,) = quarantine_runs(part)
    assert not (qrun / f"{S0}.log.242-816").exists()  # nothing of the victim copied
    # a regular file swapped in (another inode) is refused the same way
    log.unlink()
    log.write_bytes(original)
    before = log.read_bytes()
    plan = plan_partition(PartitionTarget(part, str(part)), opts)
    os.rename(log, part / "planned")
    (part / "planned").rename(part / "planned2")
    log.write_bytes(before)  # same bytes, another file
    with pytest.raises(RefusedError):
        apply_plan(plan, opts, FileOps(), lambda obj: None)
    assert log.read_bytes() == before


def test_a_dangling_link_with_the_next_run_dir_name_is_skipped(tmp_path: Path) -> None:
    part = copy_scenario("crc-flip", tmp_path / "logs")
    root = part / ".klogtool-quarantine"
    root.mkdir()
    now = time.time()
    for dt in range(-2, 30):
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now + dt))
        (root / stamp).symlink_to(tmp_path / "outside" / stamp)
    code, _, err = run("truncate-recovery", "--index-interval-bytes", INTERVAL, str(part))
    assert code == 0, err
    runs = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    assert len(runs) == 1 and manifest(runs[0])["state"] == "complete"
    assert not (tmp_path / "outside").exists()


def test_restore_gives_back_checkpoints_byte_for_byte(tmp_path: Path) -> None:
    """Lines in another order than klogtool would write them stay in that order."""
    part = middle_crc_logdir(tmp_path)
    logdir = part.parent
    unsorted = b"0\n2\ntxn 0 15\nv2-none 0 27\n"
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (logdir / name).write_bytes(unsorted)
    original_dir, original = files(logdir), files(part)
    code, _, err = run("truncate-recovery", "--index-interval-bytes", INTERVAL, str(part))
    assert code == 0, err
    cp = (logdir / "recovery-point-offset-checkpoint").read_bytes()
    assert cp == b"0\n2\ntxn 0 15\nv2-none 0 10\n"  # only the changed line
    assert parse_offset_checkpoint(cp).entries[("v2-none", 0)] == 10
    code, _, err = run("truncate-recovery", "--restore", str(logdir))  # a whole log dir
    assert code == 0, err
    assert files(logdir) == original_dir and files(part) == original
    # the restored run is gone, and klogtool left no .lock where the broker had none
    assert not (part / ".klogtool-quarantine").exists()
    assert not (logdir / ".lock").exists()


def test_no_quarantine_where_nothing_was_cut(tmp_path: Path) -> None:
    """An empty partition whose epoch entry starts at its end (as a broker writes it): nothing
    changes, so there is no quarantine directory; a partition missing its indexes: nothing
    is cut, so its quarantine holds only the manifest naming the indexes created."""
    logdir = tmp_path / "logdir"
    empty = logdir / "t-0"
    empty.mkdir(parents=True)
    for suffix in (".log", ".index", ".timeindex"):
        (empty / f"{S0}{suffix}").write_bytes(b"")
    (empty / "leader-epoch-checkpoint").write_bytes(b"0\n1\n0 0\n")
    part = copy_scenario("missing-index", logdir)
    code, out, err = run(
        "truncate-recovery", "--index-interval-bytes", INTERVAL, "--format", "jsonl", str(logdir)
    )
    assert code == 0, err
    assert (empty / "leader-epoch-checkpoint").read_bytes() == b"0\n1\n0 0\n"
    assert not (empty / ".klogtool-quarantine").exists()
    (run_dir,) = (part / ".klogtool-quarantine").iterdir()
    assert [p.name for p in run_dir.iterdir()] == ["manifest.json"]
    assert (part / f"{S0}.index").exists()
    assert not (logdir / ".lock").exists()


def test_a_full_disk_names_the_file_in_one_line_and_leaves_no_cleaned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    from klogtool.cli import main

    part = copy_scenario("crc-flip", tmp_path / "logs")
    before = files(part)
    real_write = os.write
    calls: list[int] = []

    def full(fd: int, data: Any) -> int:
        calls.append(1)
        if len(calls) > 1:  # the manifest is written; the copy of the cut tail fills the disk
            real_write(fd, bytes(data)[:10])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(SystemExit) as e:
        main(["truncate-recovery", "--index-interval-bytes", INTERVAL, str(part)])
    monkeypatch.setattr(os, "write", real_write)
    code = e.value.code
    err = capsys.readouterr().err
    (qrun,) = quarantine_runs(part)
    stored = qrun / f"{S0}.log.242-816"
    assert code == 3
    assert err == f"klogtool: error: {stored}: No space left on device (io-error)\n"
    assert not stored.exists() and files(part) == before
    assert not [p for p in qrun.iterdir() if p.name.endswith(".cleaned")]


def test_a_manifest_may_only_change_its_own_partitions_checkpoint_entries(
    tmp_path: Path,
) -> None:
    """A checkpoint entry of another partition planted in a manifest: the restore is refused
    and the other partition's entry stays (it raised another partition's log start offset
    from 0 to 299)."""
    part, qrun = _recovered(tmp_path)
    logdir = part.parent
    cp = logdir / "log-start-offset-checkpoint"
    cp.write_bytes(b"0\n2\ncrc-flip 0 0\nother 0 0\n")
    planted = {"file": cp.name, "topic": "other", "partition": 0, "old": 299, "new": 0}
    _edit(qrun, lambda m: m["checkpoints"].append(planted))
    code, _, err = run("truncate-recovery", "--restore", str(part))
    assert code == 4 and "bad-manifest" in err and "another partition's" in err, err
    assert dict(parse_offset_checkpoint(cp.read_bytes()).entries)[("other", 0)] == 0

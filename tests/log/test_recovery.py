"""truncate-recovery: every damage scenario ends in exact files, an exact quarantine, a clean
verify, and a --restore that gives the damaged directory back byte for byte."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from support.cli import generator, jsonl, run
from support.paths import LOGDIR
from support.processes import KILLED, run_crashing
from support.repair import (
    INTERVAL,
    copy_scenario,
    files,
    manifest,
    middle_crc_logdir,
    partition_records,
    quarantine_runs,
    quarantined_records,
    reference_indexes,
)

from klogtool.formats.checkpoint import (
    EpochEntry,
    encode_leader_epoch_checkpoint,
    encode_offset_checkpoint,
    parse_offset_checkpoint,
)

GEN = generator()
PRISTINE = LOGDIR / "v2-none-0"
S0, S17 = "00000000000000000000", "00000000000000000017"


def _recover(*args: str, cwd: Path) -> tuple[int, list[dict], str]:
    code, out, err = run(
        "truncate-recovery",
        "--index-interval-bytes",
        INTERVAL,
        "--format",
        "jsonl",
        *args,
        cwd=cwd,
    )
    return code, jsonl(out), err


def _partition_obj(objs: list[dict]) -> dict:
    (p,) = [o for o in objs if o["type"] == "partition"]
    return p


def _verify_clean(path: Path) -> None:
    code, out, _ = run("verify", "--format", "jsonl", str(path))
    found = [o for o in jsonl(out) if o["type"] == "finding"]
    assert code == 0 and found == [], found


def _expected(scenario: str, original: dict[str, bytes]) -> tuple[dict, dict]:
    """(partition files, quarantined files) after the recovery of a scenario."""
    pristine = files(PRISTINE)
    if scenario == "torn-tail":
        after = dict(original)
        after[f"{S17}.log"] = original[f"{S17}.log"][:341]
        del after["00000000000000000027.snapshot"]
        return after, {
            f"{S17}.log.341-420": original[f"{S17}.log"][341:],
            "00000000000000000027.snapshot": original["00000000000000000027.snapshot"],
        }
    if scenario == "garbage-tail":
        return pristine, {f"{S17}.log.499-599": original[f"{S17}.log"][499:]}
    if scenario == "crc-flip":
        kept = original[f"{S0}.log"][:242]
        index, timeindex = reference_indexes(kept, 0, int(INTERVAL))
        after = {k: v for k, v in original.items() if not k.startswith(("000000000000000000", "l"))}
        after |= {f"{S0}.log": kept, f"{S0}.index": index, f"{S0}.timeindex": timeindex}
        after["leader-epoch-checkpoint"] = encode_leader_epoch_checkpoint([EpochEntry(1, 0)])
        moved = [
            f"{S17}.log",
            f"{S17}.index",
            f"{S17}.timeindex",
            f"{S17}.snapshot",
            "00000000000000000027.snapshot",
            f"{S0}.index",
            f"{S0}.timeindex",
            "leader-epoch-checkpoint",
        ]
        return after, {f"{S0}.log.242-816": original[f"{S0}.log"][242:]} | {
            m: original[m] for m in moved
        }
    if scenario in ("bad-index", "untrimmed-index"):
        return pristine, {f"{S0}.index": original[f"{S0}.index"]}
    if scenario == "bad-snapshot":
        return {k: v for k, v in original.items() if k != f"{S17}.snapshot"}, {
            f"{S17}.snapshot": original[f"{S17}.snapshot"]
        }
    # zero-fill (zeros recorded, not copied), missing-index (created), leftover-swap
    return pristine, {}


SCENARIOS = [
    ("torn-tail", "torn-tail", 23, 0),
    ("garbage-tail", "record-too-small", 27, 0),
    ("zero-fill", "zero-fill", 27, 0),
    ("crc-flip", "crc-mismatch", 4, 19),
    ("bad-index", None, 27, 0),
    ("untrimmed-index", None, 27, 0),
    ("missing-index", None, 27, 0),
    ("leftover-swap", None, 27, 0),
    ("bad-snapshot", None, 27, 0),
]


@pytest.mark.parametrize(("scenario", "reason", "leo", "records_quarantined"), SCENARIOS)
def test_recovery_scenario(
    tmp_path: Path, scenario: str, reason: str | None, leo: int, records_quarantined: int
) -> None:
    part = copy_scenario(scenario, tmp_path)
    original = files(part)
    before = partition_records(part)
    code, objs, err = _recover(str(part), cwd=tmp_path)
    assert code == 0, err
    p = _partition_obj(objs)
    assert p["status"] == "recovered" and p["reason"] == reason
    assert p["log_end_offset"] == leo
    assert p["records_quarantined"] == records_quarantined
    assert p["records_kept"] == len(partition_records(part))
    expected_files, expected_quarantine = _expected(scenario, original)
    assert files(part) == expected_files
    (qrun,) = quarantine_runs(part)
    if scenario in ("missing-index", "leftover-swap"):
        # nothing was cut, moved or overwritten (indexes only created): the quarantine holds
        # only the manifest naming them, for --restore to delete
        assert {p["action"] for p in manifest(qrun)["pieces"]} == {"created"}
    assert files(qrun).keys() - {"manifest.json"} == expected_quarantine.keys()
    for name, data in expected_quarantine.items():
        assert (qrun / name).read_bytes() == data, name
    m = manifest(qrun)
    assert m["state"] == "complete" and m["log_end_offset"] == leo
    for piece in m["pieces"]:
        if piece["stored"]:
            assert (qrun / piece["stored"]).stat().st_size == piece["end"] - piece["start"]
    # nothing that was readable is lost
    assert before <= partition_records(part) | quarantined_records(part)
    _verify_clean(part)
    # a second run has nothing left to do
    code, objs, _ = _recover(str(part), cwd=tmp_path)
    assert code == 0 and _partition_obj(objs)["status"] == "clean"
    assert len(quarantine_runs(part)) == 1
    # and --restore gives the damaged directory back (a completed swap stays completed)
    code, out, err = run("truncate-recovery", "--restore", str(part))
    assert code == 0, err
    restored = original if scenario != "leftover-swap" else files(PRISTINE)
    if scenario == "leftover-swap":  # its indexes were deleted by the swap's completion
        restored = {k: v for k, v in restored.items() if not k.startswith(S0 + ".")}
        restored[f"{S0}.log"] = original[f"{S0}.log.swap"]
    assert files(part) == restored
    assert not qrun.exists() and not (part / ".klogtool-quarantine").exists()  # removed


def _tree(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every entry under ``root`` (relative path: (mode, contents of a file)), links not
    followed: the file set, the contents and the modes."""
    out: dict[str, tuple[int, bytes | None]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
            out[str(path.relative_to(root))] = (st.st_mode, data)
    return out


def test_restore_of_a_log_dir_gives_back_every_partition_byte_for_byte(tmp_path: Path) -> None:
    """A log dir of torn, corrupt and healthy partitions, some lacking index files, with
    checkpoints, a clean-shutdown marker and odd modes: truncate-recovery, then --restore of
    the log dir, gives back the whole tree: no index the repair created is left behind (in a
    partition where it only created indexes there used to be no quarantine to say so)."""
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    torn = copy_scenario("torn-tail", logdir)
    crc = copy_scenario("crc-flip", logdir)
    copy_scenario("missing-index", logdir)
    gzip = copy_scenario("v2-gzip-0", logdir)
    txn = copy_scenario("txn-0", logdir)
    for index in gzip.glob("*.timeindex"):
        index.unlink()
    (txn / f"{S0}.index").unlink()
    (torn / f"{S17}.log").chmod(0o600)
    (crc / f"{S0}.index").chmod(0o640)
    (gzip / f"{S0}.log").chmod(0o444)
    tp = {("torn-tail", 0): 27, ("crc-flip", 0): 27, ("v2-gzip", 0): 27, ("txn", 0): 15}
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (logdir / name).write_bytes(encode_offset_checkpoint(tp))
    (logdir / "recovery-point-offset-checkpoint").chmod(0o600)
    (logdir / ".kafka_cleanshutdown").write_bytes(b'{"version":0,"brokerEpoch":12}')
    before = _tree(logdir)

    code, objs, err = _recover("logdir", cwd=tmp_path)
    assert code == 0, err
    statuses = {o["path"]: o["status"] for o in objs if o["type"] == "partition"}
    assert set(statuses.values()) == {"recovered"} and len(statuses) == 5
    # the repair created them
    assert (gzip / f"{S0}.timeindex").exists() and (txn / f"{S0}.index").exists()

    code, out, err = run("truncate-recovery", "--restore", "logdir", cwd=tmp_path)
    assert code == 0, err
    assert _tree(logdir) == before


def test_restore_leaves_a_created_index_that_changed_since(tmp_path: Path) -> None:
    part = copy_scenario("missing-index", tmp_path)
    _recover(str(part), cwd=tmp_path)
    index = part / f"{S0}.index"
    index.write_bytes(index.read_bytes() + bytes(8))  # the broker appended since
    code, _, err = run("truncate-recovery", "--restore", str(part))
    assert code == 4 and "restore-conflict" in err and "changed since" in err
    assert index.exists() and len(quarantine_runs(part)) == 1


def test_zero_fill_is_recorded_not_copied(tmp_path: Path) -> None:
    part = copy_scenario("zero-fill", tmp_path)
    _recover(str(part), cwd=tmp_path)
    (qrun,) = quarantine_runs(part)
    (piece,) = manifest(qrun)["pieces"]
    assert piece["action"] == "zeros" and piece["stored"] is None
    assert (piece["start"], piece["end"]) == (499, 499 + 4096)


def test_middle_segment_with_checkpoints_and_marker(tmp_path: Path) -> None:
    """A flipped CRC in the middle segment of three: truncated there, the last segment and
    both snapshots quarantined, log-dir checkpoints lowered, the clean-shutdown marker taken
    away (the broker must recover), the neighbour partition untouched."""
    part = middle_crc_logdir(tmp_path)
    logdir = part.parent
    original, original_dir = files(part), files(logdir)
    neighbour = files(logdir / "txn-0")
    before = partition_records(part)
    code, objs, err = _recover(str(logdir), cwd=tmp_path)
    assert code == 0, err
    (p,) = [o for o in objs if o["type"] == "partition" and o["status"] == "recovered"]
    assert (p["truncated_segment"], p["truncated_at"], p["log_end_offset"]) == (8, 116, 10)
    assert p["segments_removed"] == 1 and p["records_kept"] == 10
    kept = original["00000000000000000008.log"][:116]
    index, timeindex = reference_indexes(kept, 8, int(INTERVAL))
    after = files(part)
    assert after["00000000000000000008.log"] == kept
    assert after["00000000000000000008.index"] == index
    assert after["00000000000000000008.timeindex"] == timeindex
    assert {k: v for k, v in after.items() if k.startswith(S0)} == {
        k: v for k, v in original.items() if k.startswith(S0)
    }
    assert not [k for k in after if k.startswith(S17) or k.endswith(".snapshot")]
    assert after["leader-epoch-checkpoint"] == original["leader-epoch-checkpoint"]  # 2 from 8
    cps = {
        name: parse_offset_checkpoint((logdir / name).read_bytes()).entries
        for name in (
            "recovery-point-offset-checkpoint",
            "replication-offset-checkpoint",
            "cleaner-offset-checkpoint",
        )
    }
    assert cps["recovery-point-offset-checkpoint"] == {("v2-none", 0): 10, ("txn", 0): 15}
    assert cps["replication-offset-checkpoint"] == {("v2-none", 0): 10, ("txn", 0): 15}
    assert cps["cleaner-offset-checkpoint"] == {("v2-none", 0): 10}
    assert not (logdir / ".kafka_cleanshutdown").exists()
    assert files(logdir / "txn-0") == neighbour
    (qrun,) = quarantine_runs(part)
    m = manifest(qrun)
    assert {(c["file"], c["old"], c["new"]) for c in m["checkpoints"]} == {
        ("recovery-point-offset-checkpoint", 27, 10),
        ("replication-offset-checkpoint", 27, 10),
        ("cleaner-offset-checkpoint", 20, 10),
    }
    assert (qrun / ".kafka_cleanshutdown").read_bytes() == original_dir[".kafka_cleanshutdown"]
    assert before <= partition_records(part) | quarantined_records(part)
    _verify_clean(logdir)
    code, _, err = run("truncate-recovery", "--restore", str(qrun))
    assert code == 0, err
    assert files(part) == original and files(logdir) == original_dir


def test_from_recovery_point_trusts_segments_below_it(tmp_path: Path) -> None:
    part = middle_crc_logdir(tmp_path)
    logdir = part.parent
    cp = logdir / "recovery-point-offset-checkpoint"
    cp.write_bytes(GEN.encode_offset_checkpoint({("v2-none", 0): 17, ("txn", 0): 15}))
    code, objs, _ = _recover("--from-recovery-point", str(part), cwd=tmp_path)
    assert code == 0
    p = _partition_obj(objs)
    assert p["status"] == "clean" and p["segments_trusted"] == 2 and p["records_kept"] == 10
    cp.write_bytes(GEN.encode_offset_checkpoint({("v2-none", 0): 9, ("txn", 0): 15}))
    code, objs, _ = _recover("--from-recovery-point", str(part), cwd=tmp_path)
    p = _partition_obj(objs)
    assert p["status"] == "recovered" and p["segments_trusted"] == 1
    assert p["log_end_offset"] == 10 and p["records_kept"] == 2  # 8-9 in segment 8


def test_segment_file_path_recovers_from_that_segment(tmp_path: Path) -> None:
    part = copy_scenario("crc-flip", tmp_path)
    code, objs, _ = _recover(str(part / f"{S17}.log"), cwd=tmp_path)
    assert code == 0 and _partition_obj(objs)["status"] == "clean"
    code, objs, _ = _recover(str(part / f"{S0}.log"), cwd=tmp_path)
    assert _partition_obj(objs)["log_end_offset"] == 4


def test_custom_quarantine_dir_and_restore(tmp_path: Path) -> None:
    part = copy_scenario("crc-flip", tmp_path / "logs")
    original = files(part)
    q = tmp_path / "q"
    code, objs, _ = _recover("--quarantine", str(q), str(part), cwd=tmp_path)
    assert code == 0
    (qrun,) = quarantine_runs(part, q / part.name)
    assert _partition_obj(objs)["quarantine"] == str(qrun)
    assert not (part / ".klogtool-quarantine").exists()
    code, _, err = run("truncate-recovery", "--restore", "--quarantine", str(q), str(part))
    assert code == 0, err
    assert files(part) == original
    # the restored run is removed: nothing left to restore, whichever way it is named
    assert not qrun.exists()
    code, _, err = run("truncate-recovery", "--restore", "--quarantine", str(q), str(part))
    assert code == 3 and "no quarantine to restore" in err
    code, _, err = run("truncate-recovery", "--restore", str(part))  # not in the default place
    assert code == 3 and "no quarantine to restore" in err


def test_restore_refuses_when_the_broker_appended_since(tmp_path: Path) -> None:
    part = copy_scenario("crc-flip", tmp_path)
    _recover(str(part), cwd=tmp_path)
    log = part / f"{S0}.log"
    log.write_bytes(log.read_bytes() + (PRISTINE / f"{S0}.log").read_bytes()[242:400])
    before = files(part)
    code, _, err = run("truncate-recovery", "--restore", str(part))
    assert code == 4 and "restore-conflict" in err
    assert files(part) == before


def test_dry_run_prints_every_step_and_changes_nothing(tmp_path: Path) -> None:
    part = middle_crc_logdir(tmp_path)
    logdir = part.parent
    before, before_dir = files(part), files(logdir)
    code, plan, _ = _recover("--dry-run", str(logdir), cwd=tmp_path)
    assert code == 0
    assert files(part) == before and files(logdir) == before_dir
    assert not (part / ".klogtool-quarantine").exists()
    cut = [o for o in plan if o["type"] == "plan_step" and o["op"] == "copy"][0]
    assert (cut["start"], cut["end"], cut["first_offset"], cut["last_offset"]) == (116, 418, 15, 16)
    code, done, _ = _recover(str(logdir), cwd=tmp_path)

    def steps(objs: list[dict[str, Any]], kind: str) -> list[tuple[str, str]]:
        # The quarantine dir is named after the wall clock of each run; the two runs
        # may straddle a second boundary, so only its shape is compared.
        out = [(o["op"], Path(o["path"]).name) for o in objs if o["type"] == kind]
        stamp = re.compile(r"\d{8}T\d{6}Z")
        return [(op, "<stamp>" if stamp.fullmatch(name) else name) for op, name in out]

    assert steps(plan, "plan_step")[0] == ("mkdir", "<stamp>")
    assert steps(plan, "plan_step") == steps(done, "action")


def test_overlapping_segments_are_skipped(tmp_path: Path) -> None:
    part = copy_scenario("overlap", tmp_path)
    before = files(part)
    code, objs, _ = _recover(str(part), cwd=tmp_path)
    assert code == 1
    assert _partition_obj(objs)["status"] == "skipped"
    assert [o["code"] for o in objs if o["type"] == "finding"] == ["segment-overlap"]
    assert files(part) == before and not quarantine_runs(part)


def test_legacy_partitions(tmp_path: Path) -> None:
    """A torn compressed magic-0 wrapper and a torn magic-1 message."""
    for name, leo, kept in (("v0-snappy-0", 5, 5), ("v1-none-0", 7, 7)):
        part = copy_scenario(name, tmp_path)
        log = part / f"{S0}.log"
        data = log.read_bytes()
        log.write_bytes(data[:-7])
        code, objs, err = _recover(str(part), cwd=tmp_path)
        assert code == 0, err
        p = _partition_obj(objs)
        assert (p["log_end_offset"], p["records_kept"], p["reason"]) == (leo, kept, "torn-tail")
        _verify_clean(part)


def test_symlinks_are_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = copy_scenario("torn-tail", outside)
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    (logdir / "torn-tail-0").symlink_to(target)
    (logdir / "recovery-point-offset-checkpoint").write_bytes(GEN.encode_offset_checkpoint({}))
    before = files(target)
    code, objs, _ = _recover(str(logdir), cwd=tmp_path)
    assert code == 1
    assert [o["code"] for o in objs if o["type"] == "finding"] == ["symlink-outside"]
    assert files(target) == before
    # a segment file that is a link: the partition is skipped
    part = copy_scenario("torn-tail", tmp_path)
    real = outside / "real.log"
    os.rename(part / f"{S17}.log", real)
    (part / f"{S17}.log").symlink_to(real)
    real_before = real.read_bytes()
    code, objs, _ = _recover(str(part), cwd=tmp_path)
    assert code == 1 and _partition_obj(objs)["reason"] == "symlink"
    assert real.read_bytes() == real_before


def test_interrupted_quarantine_is_resumed(tmp_path: Path) -> None:
    """A run killed right after copying the cut tail (before any change) is resumed by the
    next run into the same quarantine; a stored copy found damaged is taken again."""
    part = copy_scenario("crc-flip", tmp_path)
    args = ["truncate-recovery", "--index-interval-bytes", INTERVAL, str(part)]
    # ops: mkdir (the quarantine root, then the run's dir), manifest (write, rename, fsync
    # dir), copy of the tail
    assert run_crashing(args, tmp_path, 6) == KILLED
    (qrun,) = quarantine_runs(part)
    assert manifest(qrun)["state"] == "in-progress"
    stored = qrun / f"{S0}.log.242-816"
    assert stored.stat().st_size == 816 - 242
    stored.write_bytes(b"half a cop")
    assert files(part) == files(GEN.LOGS / "corrupt" / "crc-flip-0")  # nothing changed yet
    code, objs, _ = _recover(str(part), cwd=tmp_path)
    assert code == 0
    assert [o["op"] for o in objs if o["type"] == "action"][0] == "resume"
    assert quarantine_runs(part) == [qrun]
    assert stored.read_bytes() == files(GEN.LOGS / "corrupt" / "crc-flip-0")[f"{S0}.log"][242:]
    assert manifest(qrun)["state"] == "complete"
    _verify_clean(part)

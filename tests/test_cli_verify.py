"""``klogtool verify`` end to end: good fixtures, every corrupt scenario, the real corpus."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from support.cli import errors, findings, generator, jsonl, run
from support.paths import CORPUS, CORRUPT, LOGS, needs_corpus

from klogtool.log import layout
from klogtool.log.check import fleet_verify

GEN = generator()

# scenario -> (exit code, {(severity, code, file name, position, offset)}): every finding
# verify reports for the damaged copy of v2-none-0 (segments 0..16 and 17..26).
EXPECTED_FINDINGS: dict[str, tuple[int, set[tuple]]] = {
    "torn-tail": (
        1,
        {
            # the last batch (offsets 23..26) starts at 341 and was cut in half
            ("error", "torn-tail", "00000000000000000017.log", 341, 22),
            # the clean-shutdown snapshot at 27 is now beyond the log end (23)
            ("warning", "snapshot-beyond-log-end", "00000000000000000027.snapshot", None, 27),
        },
    ),
    "zero-fill": (
        0,  # a preallocated active segment: the broker's recovery truncates the zeros
        {("warning", "zero-fill", "00000000000000000017.log", 499, 26)},
    ),
    "crc-flip": (
        1,
        {
            ("error", "crc-mismatch", "00000000000000000000.log", 242, 4)
        },  # batch 4..7: its base offset (issue 10)
    ),
    "garbage-tail": (
        1,
        {("error", "record-too-small", "00000000000000000017.log", 499, 26)},
    ),
    "bad-index": (
        1,
        {
            ("error", "index-not-on-batch", "00000000000000000000.index", 8, 9),
            ("error", "index-not-increasing", "00000000000000000000.index", 16, 8),
        },
    ),
    "untrimmed-index": (
        1,  # an inactive segment: the broker would read every zero slot as an entry
        {("error", "index-not-trimmed", "00000000000000000000.index", 24, None)},
    ),
    "missing-index": (
        0,  # the broker rebuilds a missing index by recovering the segment
        {("warning", "index-missing", "00000000000000000000.log", None, 0)},
    ),
    "bad-snapshot": (
        1,
        {("error", "snapshot-crc-mismatch", "00000000000000000017.snapshot", 2, None)},
    ),
    "leftover-swap": (
        0,  # the broker completes or removes interrupted swaps on load
        {
            ("warning", "leftover-file", "00000000000000000000.log.swap", None, None),
            ("warning", "leftover-file", "00000000000000000017.log.cleaned", None, None),
        },
    ),
    "overlap": (
        1,
        {("error", "segment-overlap", "00000000000000000015.log", 0, 15)},
    ),
}


def _key(f: dict) -> tuple:
    return (f["severity"], f["code"], Path(f["path"]).name, f["position"], f["offset"])


def test_every_scenario_is_covered() -> None:
    assert set(EXPECTED_FINDINGS) == set(GEN.CORRUPT_SCENARIOS)
    assert sorted(p.name for p in CORRUPT.iterdir()) == sorted(
        f"{s}-0" for s in GEN.CORRUPT_SCENARIOS
    )


# -- good fixtures --------------------------------------------------------------------------------
@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_logdir_is_clean(deep: bool) -> None:
    args = ["verify", "--format", "jsonl", "logdir"] + (["--deep"] if deep else [])
    code, out, err = run(*args)
    assert (code, err) == (0, "")
    assert findings(out) == []  # not even a warning
    summary = jsonl(out)[-1]
    assert summary["type"] == "summary"
    assert summary["partitions"] == len(GEN.GOOD_PARTITIONS)
    assert summary["segments"] == 17 and summary["errors"] == summary["warnings"] == 0
    if deep:
        assert summary["records"] == 5 * 27 + 8 + 10 + 7 + 7 + 13 + 5 + 5


@pytest.mark.parametrize("part", GEN.GOOD_PARTITIONS)
@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_good_partition_is_clean(part: str, deep: bool) -> None:
    code, out, err = run("verify", "--format", "jsonl", *(["--deep"] * deep), f"logdir/{part}")
    assert (code, err) == (0, "")
    assert findings(out) == []


@pytest.mark.parametrize(
    "path",
    [
        "logdir/v2-zstd-0/00000000000000000000.log",
        "logdir/v2-zstd-0/00000000000000000017.index",
        "logdir/txn-0/00000000000000000000.txnindex",
        "logdir/txn-0/00000000000000000015.snapshot",
        "logdir/v1-gzip-0/00000000000000000000.timeindex",
        "logdir/meta.properties",
        "logdir/recovery-point-offset-checkpoint",
        "logdir/v2-none-0/leader-epoch-checkpoint",
        "logdir/v2-none-0/partition.metadata",
    ],
)
def test_single_good_files_verify(path: str) -> None:
    code, out, err = run("verify", "--format", "jsonl", "--deep", path)
    assert (code, err, errors(out)) == (0, "", [])


# -- corrupt fixtures -----------------------------------------------------------------------------
@pytest.mark.parametrize("scenario", sorted(EXPECTED_FINDINGS))
def test_corrupt_scenario(scenario: str) -> None:
    exit_code, expected = EXPECTED_FINDINGS[scenario]
    code, out, err = run("verify", "--format", "jsonl", f"corrupt/{scenario}-0")
    got = {_key(f) for f in findings(out)}
    assert got == expected
    assert (code, err) == (exit_code, "")
    for f in findings(out):
        assert f["path"].startswith(f"corrupt/{scenario}-0/") and f["message"]
    summary = jsonl(out)[-1]
    assert summary["errors"] == sum(e[0] == "error" for e in expected)


def test_crc_flip_is_found_from_the_segment_file_alone() -> None:
    code, out, _ = run("verify", "--format", "jsonl", "corrupt/crc-flip-0/00000000000000000000.log")
    assert code == 1
    assert [(f["code"], f["position"]) for f in errors(out)] == [("crc-mismatch", 242)]


def test_bad_index_is_found_from_the_index_file_alone() -> None:
    code, out, _ = run(
        "verify", "--format", "jsonl", "corrupt/bad-index-0/00000000000000000000.index"
    )
    assert code == 1
    assert {(f["code"], f["position"]) for f in errors(out)} == {
        ("index-not-on-batch", 8),
        ("index-not-increasing", 16),
    }


def test_zero_fill_in_an_inactive_segment_is_an_error(tmp_path: Path) -> None:
    """Zeros after the last batch of a segment that is not the last one: the broker trimmed it
    at roll time, so the bytes were damaged later (and recovery may never look at them)."""
    d = tmp_path / "z-0"
    shutil.copytree(LOGS / "logdir/v2-none-0", d)
    seg = d / "00000000000000000000.log"
    size = seg.stat().st_size
    seg.write_bytes(seg.read_bytes() + bytes(4096))
    code, out, _ = run("verify", "--format", "jsonl", str(d), cwd=tmp_path)
    assert code == 1
    assert [(f["code"], f["position"]) for f in errors(out)] == [("zero-fill", size)]


def test_corrupt_deep_finds_at_least_the_same(tmp_path: Path) -> None:
    for scenario, (exit_code, expected) in EXPECTED_FINDINGS.items():
        code, out, _ = run("verify", "--format", "jsonl", "--deep", f"corrupt/{scenario}-0")
        assert code == exit_code, scenario
        assert expected <= {_key(f) for f in findings(out)}, scenario


# -- output formats -------------------------------------------------------------------------------
def test_text_mode_prints_findings_and_the_summary_table() -> None:
    code, out, err = run("verify", "logdir")
    assert (code, err) == (0, "")
    assert "klogtool verify: OK" in out
    assert re.search(r"^checked +count$", out, re.M)  # the table (plain when piped), not JSON
    for row, value in (("partitions", 12), ("segments", 17), ("errors", 0), ("warnings", 0)):
        assert re.search(rf"^{row} +{value}$", out, re.M), row
    code, out, _ = run("verify", "corrupt/crc-flip-0")
    assert code == 1
    assert "klogtool verify: errors found" in out
    assert (
        "error: crc-mismatch: corrupt/crc-flip-0/00000000000000000000.log:242 (offset 4): "
        "batch 4..7: " in out
    )


def test_json_is_a_valid_array() -> None:
    code, out, _ = run("verify", "--format", "json", "logdir", "corrupt/crc-flip-0")
    assert code == 1
    objs = json.loads(out)
    assert isinstance(objs, list) and all("type" in o for o in objs)
    assert objs[-1]["type"] == "summary" and objs[-1]["errors"] == 1
    code, out, _ = run("verify", "--format", "json", "logdir")
    assert code == 0 and [o["type"] for o in json.loads(out)] == ["summary"]


def test_jsonl_finding_objects_follow_the_schema() -> None:
    keys = {"type", "severity", "code", "path", "position", "offset", "message"}
    for scenario in EXPECTED_FINDINGS:
        _, out, _ = run("verify", "--format", "jsonl", f"corrupt/{scenario}-0")
        for f in findings(out):
            assert keys <= set(f)
            assert f["severity"] in ("error", "warning")
            assert f["position"] is None or isinstance(f["position"], int)


# -- the real-broker corpus -----------------------------------------------------------------------
def _corpus_partitions() -> list[Path]:
    out = []
    for root, _dirs, files in os.walk(CORPUS):
        here = Path(root)
        if any(layout.file_kind(here / f) in (layout.LOG, layout.KRAFT_SNAPSHOT) for f in files):
            out.append(here)
    return sorted(out)


def _snapshot_tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()
    }


@needs_corpus
@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_real_corpus_verifies_clean(deep: bool) -> None:
    parts = _corpus_partitions()
    assert len(parts) >= 40
    before = _snapshot_tree(CORPUS)
    bad = {}
    for p in parts:
        code, out, err = run("verify", "--format", "jsonl", *(["--deep"] * deep), str(p))
        if code != 0 or err or errors(out):
            bad[str(p.relative_to(CORPUS))] = (code, err, errors(out)[:3])
    assert not bad
    assert _snapshot_tree(CORPUS) == before  # verify never writes


# -- never OK about nothing; directories of log dirs (issue 10) --------------------------------
def test_an_empty_partition_named_dir_is_not_ok(tmp_path: Path) -> None:
    (tmp_path / "x-0").mkdir()
    code, out, err = run("verify", str(tmp_path / "x-0"), cwd=tmp_path)
    assert code == 3, out
    assert err.strip().endswith("no Kafka files in it: nothing to read (no-kafka-files)")
    assert "OK" not in out


@pytest.mark.parametrize("parent", ["kafka-0", "kafka"])  # named like a partition, or not
def test_a_directory_of_log_dirs_verifies_each(tmp_path: Path, parent: str) -> None:
    for d in ("data1", "data2"):
        shutil.copytree(LOGS / "logdir", tmp_path / parent / d)
    code, out, err = run("verify", "--format", "jsonl", str(tmp_path / parent), cwd=tmp_path)
    single = jsonl(run("verify", "--format", "jsonl", str(LOGS / "logdir"))[1])[-1]
    summary = jsonl(out)[-1]
    assert code == 0, err
    assert summary["files"] == 2 * single["files"] > 0
    assert summary["partitions"] == 2 * single["partitions"]
    plan = fleet_verify.plan([str(tmp_path / parent)])
    assert len(plan.units) == 2 * single["partitions"] and plan.error is None


# -- output a person reads (issue 10) -----------------------------------------------------------
BOX = set("┏┓┗┛━┃│─┡┩╇┳┻╋")


def test_piped_tables_are_plain_text() -> None:
    code, out, _err = run("verify", "corrupt/crc-flip-0")
    assert code == 1
    assert not BOX & set(out)
    assert "bytes       1,315" in out


@pytest.mark.parametrize("columns", ["80", "40", "20"])
def test_numbers_in_tables_are_never_cut(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    code, out, _err = run("--color", "verify", "corrupt/crc-flip-0")
    assert code == 1
    assert BOX & set(out)  # a terminal (forced) gets the boxed table
    for number in ("1,315", "10", "9"):
        assert any(number == cell.strip() for line in out.splitlines() for cell in line.split("│"))


def test_quiet_shows_errors_only() -> None:
    code, out, _err = run("-q", "verify", "corrupt/missing-index-0")
    assert code == 0 and "warning:" not in out
    code, out, _err = run("verify", "corrupt/missing-index-0")
    assert "warning: index-missing" in out


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_jobs_give_the_same_output(fmt: str) -> None:
    """Partitions of a log dir verified by two processes: the same findings, in the same
    order, the same summary and exit code (fixtures: clean and damaged partitions)."""
    args = ("verify", "--deep", "--format", fmt, "logdir", str(CORRUPT))
    one, two = (run(*args, "--jobs", j) for j in ("1", "2"))
    assert one == two
    assert one[0] == 1 and "crc" in one[1].lower()


@needs_corpus
def test_jobs_on_the_real_corpus() -> None:
    logdirs = sorted(
        {
            p.parent
            for p in _corpus_partitions()
            if p.parent != CORPUS and layout.scan_log_dir(p.parent) is not None
        }
    )
    assert len(logdirs) >= 10
    args = ("verify", "--format", "jsonl", *map(str, logdirs))
    one, two = (run(*args, "--jobs", j) for j in ("1", "2"))
    assert one == two and one[0] == 0
    assert json.loads(one[1].splitlines()[-1])["partitions"] >= 40


def test_one_partition_missing_from_a_checkpoint_is_singular(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    shutil.copytree(LOGS / "logdir", logdir)
    cp = logdir / "recovery-point-offset-checkpoint"
    lines = cp.read_text().splitlines()
    lines[1] = str(int(lines[1]) + 1)
    cp.write_text("\n".join([*lines, "ghost 0 5"]) + "\n")
    code, out, _ = run("verify", "--format", "jsonl", str(logdir), cwd=tmp_path)
    (f,) = [o for o in jsonl(out) if o.get("code") == "checkpoint-partition-missing"]
    assert f["message"].startswith(
        "1 partition named in recovery-point-offset-checkpoint has no directory here (ghost-0)"
    ), f["message"]

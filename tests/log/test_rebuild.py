"""rebuild-index: the broker's recovery index rule on every real segment (cross-checked with
kafka-python), .txnindex with last stable offsets across segments, --check, --jobs, dry runs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from support.cli import generator, jsonl, run
from support.paths import CORPUS, LOGDIR, needs_corpus
from support.progress import Steps
from support.repair import INTERVAL, copy_scenario, files, reference_indexes, txn_entry

from klogtool.formats import DEFAULT_LIMITS
from klogtool.formats.batch import Record
from klogtool.formats.snapshot import ProducerEntry, encode_snapshot
from klogtool.formats.v2 import encode_batch
from klogtool.log.context import ReadContext
from klogtool.log.repair import headers, parallel

GEN = generator()


def _objs(out: str, kind: str) -> list[dict]:
    return [o for o in jsonl(out) if o["type"] == kind]


def _corpus_partitions() -> list[Path]:
    return sorted({p.parent for p in CORPUS.rglob("*.log")})


# -- golden: the real corpus -------------------------------------------------------------------


@needs_corpus
def test_rebuilt_corpus_indexes_follow_the_recovery_rule(tmp_path: Path) -> None:
    """Every segment of the corpus, rebuilt (in a copy), gets exactly the .index/.timeindex of
    the broker's recovery rule, computed independently with kafka-python's batch reader."""
    parts = _corpus_partitions()
    copies = []
    for n, part in enumerate(parts):
        dst = tmp_path / str(n) / part.name
        shutil.copytree(part, dst)
        copies.append(dst)
    code, out, err = run("rebuild-index", "--format", "jsonl", *map(str, copies), cwd=tmp_path)
    assert code == 0, err
    summary = _objs(out, "summary")[0]
    assert summary["segments"] == 84 and summary["segments_skipped"] == 0
    assert summary["errors"] == 0
    checked = 0
    for part in copies:
        for log in sorted(part.glob("*.log")):
            base = int(log.stem)
            index, timeindex = reference_indexes(log.read_bytes(), base)
            assert log.with_suffix(".index").read_bytes() == index, log
            assert log.with_suffix(".timeindex").read_bytes() == timeindex, log
            assert not log.with_suffix(".txnindex").exists()  # no ABORT in the corpus
            checked += 1
    assert checked == 84
    # a second run finds nothing to change
    code, out, _ = run("rebuild-index", "--format", "jsonl", *map(str, copies), cwd=tmp_path)
    assert code == 0
    assert _objs(out, "summary")[0]["files_written"] == 0
    assert {o["status"] for o in _objs(out, "index_file")} == {"unchanged"}


@needs_corpus
def test_broker_written_corpus_indexes_pass_check() -> None:
    """The broker's own .index/.timeindex files pass --check (read-only, on the corpus
    itself); live appends make some valid-but-different, which is not an error."""
    parts = _corpus_partitions()
    code, out, err = run("rebuild-index", "--check", "--format", "jsonl", *map(str, parts))
    assert code == 0, err
    checks = _objs(out, "index_check")
    assert not [c for c in checks if c["status"] == "bad"]
    by_status = {}
    for c in checks:
        by_status.setdefault((c["kind"], c["status"]), 0)
        by_status[(c["kind"], c["status"])] += 1
    assert by_status[("index", "ok")] >= 50  # most broker indexes are exactly the rebuild
    assert by_status[("timeindex", "differs")] >= 40  # live appends index record offsets
    assert not [o for o in _objs(out, "finding") if o["severity"] == "error"]


# -- fixtures ----------------------------------------------------------------------------------


def test_fixture_indexes_are_what_a_rebuild_gives() -> None:
    code, out, _ = run(
        "rebuild-index",
        "--check",
        "--index-interval-bytes",
        INTERVAL,
        "--format",
        "jsonl",
        str(LOGDIR),
    )
    assert code == 0
    statuses = {(o["kind"], o["status"]) for o in _objs(out, "index_check")}
    assert statuses <= {
        ("index", "ok"),
        ("timeindex", "ok"),
        ("txnindex", "ok"),
        ("txnindex", "absent"),
    }
    assert ("txnindex", "ok") in statuses  # txn-0's


def test_txnindex_is_rebuilt_with_its_last_stable_offset(tmp_path: Path) -> None:
    part = copy_scenario("txn-0", tmp_path)
    original = files(part)
    (part / "00000000000000000000.txnindex").unlink()
    (part / "00000000000000000000.index").unlink()
    code, out, err = run("rebuild-index", "--index-interval-bytes", INTERVAL, str(part))
    assert code == 0, err
    assert "created" in out
    # producer 2001's transaction 4..8 aborted while 2000's (from offset 2) was open
    assert (part / "00000000000000000000.txnindex").read_bytes() == txn_entry(2001, 4, 8, 2)
    assert files(part) == original


def _txn_partition(logdir: Path) -> Path:
    """Transactions across segments: segment 0 holds the first data of producers 2000
    (offsets 0-1) and 2001 (2-3); segment 4 holds 2001's data 4-5, its ABORT at 6 (2000 still
    open, from 0), 2000's COMMIT at 7, then 2001's next transaction 8 and its ABORT at 9."""
    seg0 = [
        GEN._txn_data(2000, 0, 2, 0, transactional=True),
        GEN._txn_data(2001, 2, 2, 0, transactional=True),
    ]
    seg4 = [
        GEN._txn_data(2001, 4, 2, 2, transactional=True),
        GEN._marker(2001, 6, GEN.ABORT),
        GEN._marker(2000, 7, GEN.COMMIT),
        GEN._txn_data(2001, 8, 1, 4, transactional=True),
        GEN._marker(2001, 9, GEN.ABORT),
    ]
    p = GEN.Partition("tx", 0, [GEN.Segment(0, seg0), GEN.Segment(4, seg4)], 10)
    return GEN.write_partition(logdir, p)


EXPECTED_SEG4_TXN = txn_entry(2001, 2, 6, 0) + txn_entry(2001, 8, 9, 10)


def test_aborted_transactions_across_segments(tmp_path: Path) -> None:
    part = _txn_partition(tmp_path)
    code, _, err = run("rebuild-index", str(part))
    assert code == 0, err
    assert (part / "00000000000000000004.txnindex").read_bytes() == EXPECTED_SEG4_TXN
    assert not (part / "00000000000000000000.txnindex").exists()
    # one segment named alone: the open transactions come from replaying segment 0
    (part / "00000000000000000004.txnindex").unlink()
    code, _, _ = run("rebuild-index", str(part / "00000000000000000004.log"))
    assert code == 0
    assert (part / "00000000000000000004.txnindex").read_bytes() == EXPECTED_SEG4_TXN
    code, out, _ = run("verify", "--format", "jsonl", str(part))
    assert code == 0, out


def test_open_transactions_come_from_a_producer_snapshot(tmp_path: Path) -> None:
    """Segment 0 deleted (retention): the producer snapshot at 4 says which transactions were
    open, as the broker's recovery reads it."""
    part = _txn_partition(tmp_path)
    for p in part.glob("00000000000000000000.*"):
        p.unlink()
    code, _, _ = run("rebuild-index", str(part))
    assert code == 0
    # without the snapshot, 2001's transaction seems to start at 4 and nothing else is open
    assert (part / "00000000000000000004.txnindex").read_bytes() == (
        txn_entry(2001, 4, 6, 7) + txn_entry(2001, 8, 9, 10)
    )
    snapshot = [
        ProducerEntry(2000, 1, 1, 1, 1, 0, -1, 0),  # transaction open since offset 0
        ProducerEntry(2001, 1, 1, 3, 1, 0, -1, 2),  # transaction open since offset 2
    ]
    (part / "00000000000000000004.snapshot").write_bytes(encode_snapshot(snapshot))
    code, _, _ = run("rebuild-index", str(part))
    assert code == 0
    assert (part / "00000000000000000004.txnindex").read_bytes() == EXPECTED_SEG4_TXN


def test_check_catches_a_missing_abort_begun_in_an_earlier_segment(tmp_path: Path) -> None:
    part = _txn_partition(tmp_path)
    run("rebuild-index", str(part))
    (part / "00000000000000000004.txnindex").write_bytes(txn_entry(2001, 8, 9, 10))
    code, out, _ = run("rebuild-index", "--check", "--format", "jsonl", str(part))
    assert code == 1
    bad = [o for o in _objs(out, "index_check") if o["status"] == "bad"]
    assert [(Path(o["path"]).name, o["kind"]) for o in bad] == [
        ("00000000000000000004.txnindex", "txnindex")
    ]
    missing = [o for o in _objs(out, "finding") if o["code"] == "txnindex-missing-abort"]
    assert [o["offset"] for o in missing] == [6]


# -- --check ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "entry", "code"),
    [("bad-index", 1, "index-not-on-batch"), ("untrimmed-index", 3, "index-not-trimmed")],
)
def test_check_names_the_first_bad_entry(scenario: str, entry: int, code: str) -> None:
    path = GEN.LOGS / "corrupt" / f"{scenario}-0"
    rc, out, _ = run(
        "rebuild-index",
        "--check",
        "--index-interval-bytes",
        INTERVAL,
        "--format",
        "jsonl",
        str(path),
    )
    assert rc == 1
    bad = [o for o in _objs(out, "index_check") if o["status"] == "bad"]
    assert len(bad) == 1 and bad[0]["kind"] == "index"
    assert bad[0]["first_bad_entry"] == entry
    assert Path(bad[0]["path"]).name == "00000000000000000000.index"
    assert any(o["code"] == code for o in _objs(out, "finding"))
    rc, text, _ = run("rebuild-index", "--check", str(path))
    assert rc == 1
    assert f"bad: {path}/00000000000000000000.index: first bad entry {entry}:" in text


def test_check_reports_valid_but_different_with_exit_0() -> None:
    """The fixtures were indexed every 128 bytes: against the default 4096 they differ."""
    rc, out, _ = run("rebuild-index", "--check", "--format", "jsonl", str(LOGDIR / "v2-none-0"))
    assert rc == 0
    checks = _objs(out, "index_check")
    differs = [o for o in checks if o["status"] == "differs"]
    assert differs and not [o for o in checks if o["status"] == "bad"]
    d = [o for o in differs if o["path"].endswith("00000000000000000000.index")][0]
    assert d["first_difference"]["entry"] == 0
    assert d["first_difference"]["rebuilt"] is None  # 816 bytes: no entry at 4096


def test_check_changes_nothing_and_needs_no_lock(tmp_path: Path) -> None:
    part = copy_scenario("bad-index", tmp_path)
    before = files(part)
    run("rebuild-index", "--check", str(part))
    assert files(part) == before
    assert not (tmp_path / ".lock").exists()


# -- writing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["bad-index", "untrimmed-index", "missing-index"])
def test_rebuild_repairs_bad_indexes(tmp_path: Path, scenario: str) -> None:
    part = copy_scenario(scenario, tmp_path)
    rc, out, err = run("rebuild-index", "--index-interval-bytes", INTERVAL, str(part))
    assert rc == 0, err
    assert files(part) == files(LOGDIR / "v2-none-0")
    rc, out, _ = run("verify", "--format", "jsonl", str(part))
    assert rc == 0 and not [o for o in jsonl(out) if o["type"] == "finding"]


def test_rebuild_completes_a_leftover_swap_and_says_so(tmp_path: Path) -> None:
    part = copy_scenario("leftover-swap", tmp_path)
    rc, out, _ = run("rebuild-index", "--index-interval-bytes", INTERVAL, str(part))
    assert rc == 0
    assert "interrupted operation completed: completed swap of 00000000000000000000.log.swap" in out
    assert files(part) == files(LOGDIR / "v2-none-0")


def test_damaged_segment_is_skipped_with_exit_1(tmp_path: Path) -> None:
    part = copy_scenario("torn-tail", tmp_path)
    before = files(part)
    rc, out, _ = run("rebuild-index", "--format", "jsonl", str(part))
    assert rc == 1
    errs = [o for o in _objs(out, "finding") if o["severity"] == "error"]
    assert [(o["code"], Path(o["path"]).name, o["position"]) for o in errs] == [
        ("torn-tail", "00000000000000000017.log", 341)
    ]
    assert {Path(o["path"]).name for o in _objs(out, "index_file")} == {
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    }
    assert files(part)["00000000000000000017.index"] == before["00000000000000000017.index"]


@pytest.mark.parametrize("damaged", [0, 1])
def test_a_crc_mismatch_is_one_finding_wherever_the_batch_is(tmp_path: Path, damaged: int) -> None:
    """A CRC mismatch in the first batch is corruption, as in any later one (it was not-a-log,
    exit 3), and the finding names the damaged batch's base offset as verify does (it named
    the last good offset: 199 for batch 200..399)."""
    part = tmp_path / "t-0"
    part.mkdir()
    batches = [
        bytearray(
            encode_batch([Record(o, 1_700_000_000_000 + o, b"k", b"v") for o in range(b, b + 200)])
        )
        for b in (0, 200, 400)
    ]
    batches[damaged][-1] ^= 1
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    rc, out, _ = run("rebuild-index", "--format", "jsonl", str(part))
    errs = [(o["code"], o["position"], o["offset"]) for o in _objs(out, "finding")]
    assert rc == 1
    assert errs == [("crc-mismatch", damaged * len(batches[0]), damaged * 200)]
    _rc, out, _ = run("verify", "--format", "jsonl", str(part))
    found = [(o["code"], o["position"], o["offset"]) for o in _objs(out, "finding")]
    assert errs[0] in found


def test_zero_filled_active_segment_is_indexed_with_a_warning(tmp_path: Path) -> None:
    part = copy_scenario("zero-fill", tmp_path)
    (part / "00000000000000000017.index").unlink()
    rc, out, _ = run(
        "rebuild-index", "--index-interval-bytes", INTERVAL, "--format", "jsonl", str(part)
    )
    assert rc == 0
    assert [o["code"] for o in _objs(out, "finding")] == ["zero-fill"]
    pristine = LOGDIR / "v2-none-0" / "00000000000000000017.index"
    assert (part / "00000000000000000017.index").read_bytes() == pristine.read_bytes()


def test_unchanged_files_are_not_rewritten(tmp_path: Path) -> None:
    part = copy_scenario("v2-none-0", tmp_path)
    inodes = {p.name: p.stat().st_ino for p in part.iterdir()}
    rc, out, _ = run(
        "rebuild-index", "--index-interval-bytes", INTERVAL, "--format", "jsonl", str(part)
    )
    assert rc == 0
    assert _objs(out, "summary")[0]["operations"] == 0
    assert {p.name: p.stat().st_ino for p in part.iterdir() if p.name != ".lock"} == inodes


def test_dry_run_prints_the_plan_and_changes_nothing(tmp_path: Path) -> None:
    part = copy_scenario("v2-none-0", tmp_path)
    before = files(part)
    rc, out, _ = run("rebuild-index", "--dry-run", "--format", "jsonl", str(part))
    assert rc == 0
    assert files(part) == before
    assert not (tmp_path / ".lock").exists()
    written = _objs(out, "index_file")
    assert {o["status"] for o in written} == {"would-be-rebuilt"}
    assert len(written) == 4 and all(o["dry_run"] for o in written)
    assert _objs(out, "summary")[0]["files_written"] == 4


def test_parallel_jobs_give_the_same_files(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)  # use the process pool for tiny inputs
    one, two = tmp_path / "one", tmp_path / "two"
    shutil.copytree(LOGDIR, one)
    shutil.copytree(LOGDIR, two)
    rc1, out1, _ = run("rebuild-index", "--jobs", "1", "--format", "jsonl", str(one))
    rc2, out2, _ = run("rebuild-index", "--jobs", "2", "--format", "jsonl", str(two))
    assert rc1 == rc2 == 0
    for part in sorted(p.name for p in one.iterdir() if p.is_dir()):
        assert files(one / part) == files(two / part), part
    strip = [{k: v for k, v in o.items() if k != "path"} for o in jsonl(out1)]
    assert strip == [{k: v for k, v in o.items() if k != "path"} for o in jsonl(out2)]


def test_bad_paths_are_one_line_errors(tmp_path: Path) -> None:
    rc, _, err = run("rebuild-index", str(tmp_path / "nope"))
    assert rc == 3 and err.startswith("klogtool: error: ") and err.count("\n") == 1
    (tmp_path / "notes.txt").write_text("hello")
    rc, _, err = run("rebuild-index", str(tmp_path / "notes.txt"))
    assert rc == 3 and "notes.txt" in err and "Traceback" not in err


def test_scan_segment_stops_at_non_increasing_offsets() -> None:
    data = (LOGDIR / "v2-none-0" / "00000000000000000000.log").read_bytes()
    # the same batches again: offsets go back
    scan = headers.scan_segment(data + data, 0, limits=DEFAULT_LIMITS)
    assert scan.end == "corrupt" and scan.error_code == "offset-not-increasing"
    assert scan.valid_bytes == len(data) and scan.last_offset == 16
    scan = headers.scan_segment(data, 0, limits=DEFAULT_LIMITS, prev_last_offset=5)
    assert scan.valid_bytes == 0 and scan.error_code == "offset-not-increasing"
    # offsets below the segment's base
    scan = headers.scan_segment(data, 100, limits=DEFAULT_LIMITS)
    assert scan.error_code == headers.OFFSET_OVERFLOW and scan.valid_bytes == 0


# -- the fast path ---------------------------------------------------------------------------


def _variants(buf: bytes) -> list[bytes]:
    """The segment, and damaged copies of it: torn, zero-filled, garbage, a flipped byte, a
    magic 3 (which the v2 CRC does not cover), the same batches twice."""
    import random

    rnd = random.Random(len(buf))
    out = [buf, buf[:-5], buf + bytes(100), buf + b"\x7f" * 30, buf + buf]
    if len(buf) > 17:
        b = bytearray(buf)
        b[rnd.randrange(len(b))] ^= 0x10
        out.append(bytes(b))
        b = bytearray(buf)
        b[16] = 3
        out.append(bytes(b))
    return out


def _same(buf: bytes, base: int, interval: int) -> bool:
    fast = headers.scan_segment(
        buf, base, limits=DEFAULT_LIMITS, index_interval_bytes=interval, count_records=True
    )
    slow = headers.scan_segment(
        buf,
        base,
        limits=DEFAULT_LIMITS,
        index_interval_bytes=interval,
        count_records=True,
        fast=False,
    )
    assert fast == slow, (base, interval)
    return (
        headers._fast_scan(memoryview(buf), base, interval, None, "", True, DEFAULT_LIMITS)
        is not None
    )


def test_fast_path_gives_what_the_general_scanner_gives() -> None:
    taken = 0
    for log in sorted(GEN.LOGS.glob("*/*/*.log")):  # every fixture, damaged in every way
        for variant in _variants(log.read_bytes()):
            for interval in (0, 128, 4096):
                taken += _same(variant, int(log.stem), interval)
    assert taken >= 60  # the fast path did the work for the clean v2 segments


@needs_corpus
def test_fast_path_on_the_corpus() -> None:
    taken = 0
    for log in sorted(CORPUS.rglob("*.log")):
        buf = log.read_bytes()
        if len(buf) < 17 or buf[16] != 2:
            continue  # legacy segments never take the fast path
        taken += _same(buf, int(log.stem), 4096)
        taken += _same(buf[: len(buf) // 2], int(log.stem), 4096)
    assert taken >= 70


def test_fast_path_applies_the_strict_rules() -> None:
    """Batches whose CRC is valid but that no broker writes (a negative last offset delta or
    record count, offsets going back) end the walk in both paths."""
    from klogtool.formats.batch import Record
    from klogtool.formats.v2 import encode_batch

    good = encode_batch([Record(0, 1, b"k", b"v")])
    for bad in (
        encode_batch([Record(1, 1, b"k", b"v")], last_offset_delta=-1),
        encode_batch([Record(0, 1, b"k", b"v")]),
        encode_batch([Record(5, 1, b"k", b"v")], base_offset=3, last_offset_delta=-2),
    ):
        for fast in (True, False):
            scan = headers.scan_segment(good + bad, 0, limits=DEFAULT_LIMITS, fast=fast)
            assert (scan.end, scan.valid_bytes, scan.last_offset) == ("corrupt", len(good), 0)


@pytest.mark.parametrize(
    ("entry", "code", "status"),
    [
        (txn_entry(2001, 2, 6, 5), 1, "bad"),  # LSO above the log's 0: could mis-serve
        (txn_entry(2001, 3, 6, 0), 1, "bad"),  # first offset above the log's 2
        (txn_entry(2001, 2, 6, 0), 0, "ok"),
    ],
)
def test_check_txnindex_values_above_the_log_are_bad(
    tmp_path: Path, entry: bytes, code: int, status: str
) -> None:
    part = _txn_partition(tmp_path)
    run("rebuild-index", str(part))
    txn = part / "00000000000000000004.txnindex"
    txn.write_bytes(entry + txn.read_bytes()[34:])
    rc, out, _ = run("rebuild-index", "--check", "--format", "jsonl", str(part))
    assert rc == code
    (check,) = [o for o in _objs(out, "index_check") if o["kind"] == "txnindex" and o["entries"]]
    assert check["status"] == status
    if status == "bad":
        assert check["first_bad_entry"] == 0
        # truncate-recovery rebuilds such an index (the log itself is fine)
        rc, out, _ = run("truncate-recovery", "--format", "jsonl", str(part))
        assert rc == 0
        assert txn.read_bytes() == EXPECTED_SEG4_TXN


def test_check_txnindex_lso_below_the_log_is_only_different(tmp_path: Path) -> None:
    part = _txn_partition(tmp_path)
    run("rebuild-index", str(part))
    txn = part / "00000000000000000004.txnindex"
    txn.write_bytes(txn.read_bytes()[:34] + txn_entry(2001, 8, 9, 3))  # 3 < 10: conservative
    rc, out, _ = run("rebuild-index", "--check", "--format", "jsonl", str(part))
    assert rc == 0
    (check,) = [o for o in _objs(out, "index_check") if o["path"] == str(txn)]
    assert check["status"] == "differs"
    assert check["first_difference"]["entry"] == 1


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("fast", [True, False])
def test_progress_moves_inside_a_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int, fast: bool
) -> None:
    """issue 10: the bar moved only when a whole segment was scanned (a 1.6 GB segment said
    nothing for its whole scan). Now it moves every PHASE_STEP bytes, from worker processes
    too, and adds up to the segments' sizes."""
    from klogtool.formats.batch import Record
    from klogtool.formats.v2 import encode_batch
    from klogtool.log import segment

    monkeypatch.setattr(segment, "PHASE_STEP", 2048)
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    if not fast:  # the general scanner's walk reports too
        monkeypatch.setattr(headers, "_fast_scan", lambda *a, **k: None)
    logs = []
    for seg in range(2):  # two segments of ~60 KB: 40 batches of 20 records each
        base = seg * 800
        data = b"".join(
            encode_batch(
                [Record(o, 1_700_000_000_000 + o, b"k%d" % o, b"v" * 50) for o in range(b, b + 20)]
            )
            for b in range(base, base + 800, 20)
        )
        logs.append(tmp_path / f"{base:020d}.log")
        logs[-1].write_bytes(data)
    tasks = [headers.ScanTask(str(p), int(p.stem), DEFAULT_LIMITS) for p in logs]
    sizes = [p.stat().st_size for p in logs]
    calls = Steps()
    scans = parallel.run_parallel(
        headers.run_scan_task, tasks, jobs=jobs, sizes=sizes, ctx=ReadContext.of(progress=calls)
    )
    assert [s.size for s in scans] == sizes
    assert sum(calls) == sum(sizes)
    if jobs == 1:  # each segment reports many steps (one per ~2 KB batch) before its end
        assert len(calls) >= 30


def test_progress_loses_no_bytes_a_worker_adds_between_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI stop 29: the parent read the shared counter twice per poll (report ``value - shown``,
    then ``shown = value``), so bytes a worker added between the two reads were never shown
    (100408 of 102970). A counter that grows after each of the parent's reads makes the race
    happen on every poll."""
    import os

    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    parent = os.getpid()
    returned: list[int] = []

    class RacingCounter:
        def __init__(self, real: Any) -> None:
            self.real = real

        def get_lock(self) -> Any:
            return self.real.get_lock()

        @property
        def value(self) -> int:
            v = int(self.real.value)
            if os.getpid() == parent:  # a worker adds 7 bytes right after the parent's read
                with self.real.get_lock():
                    self.real.value += 7
                returned.append(v)
            return v

        @value.setter
        def value(self, v: int) -> None:
            self.real.value = v

    real_context = parallel.fork_context()

    class Context:
        def Value(self, *args: Any) -> RacingCounter:  # noqa: N802 (multiprocessing's name)
            return RacingCounter(real_context.Value(*args))

    monkeypatch.setattr(parallel, "fork_context", Context)
    logs = []
    for base in (0, 100):
        logs.append(tmp_path / f"{base:020d}.log")
        logs[-1].write_bytes(encode_batch([Record(base, 0, b"k", b"v" * 50)]))
    tasks = [headers.ScanTask(str(p), int(p.stem), DEFAULT_LIMITS) for p in logs]
    sizes = [p.stat().st_size for p in logs]
    calls = Steps()
    parallel.run_parallel(
        headers.run_scan_task, tasks, jobs=2, sizes=sizes, ctx=ReadContext.of(progress=calls)
    )
    assert returned[-1] >= sum(sizes)
    assert sum(calls) == returned[-1]  # every byte read from the counter was reported once

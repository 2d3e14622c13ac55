"""The writing commands end to end: a SIGKILL after every file operation of convert-format
--in-place, compact and retention-sweep leaves a directory the broker (and a re-run) completes
without losing a record; a broker's lock is refused; bad input is one line."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from support.cli import run
from support.paths import LOGDIR
from support.processes import KILLED, lock_held_by_another_process, run_crashing
from support.rewrite import (
    T0,
    assert_verifies,
    copy_logdir,
    generate,
    kl_batches,
    kp_records,
    materialise,
    tree,
    write_checkpoints,
    write_partition,
)

from klogtool.formats import codecs
from klogtool.formats.batch import Record
from klogtool.formats.checkpoint import EpochEntry, encode_leader_epoch_checkpoint
from klogtool.formats.legacy import encode_wrapper
from klogtool.formats.snapshot import encode_snapshot
from klogtool.formats.v2 import encode_batch
from klogtool.log.atomic import FileOps, complete_interrupted

pytestmark = pytest.mark.usefixtures("no_fsync")

DAY = 86_400_000


def _convert_setup(root: Path) -> Path:
    return copy_logdir(root, "v2-none-0", "txn-0")


def _compact_setup(root: Path) -> Path:
    g = generate(seed=21, codec=codecs.GZIP, segments=3, batches_per_segment=5)
    logdir = root / "logdir"
    materialise(g, logdir)
    return logdir


def _retention_setup(root: Path) -> Path:
    logdir = root / "logdir"
    part = logdir / "r-0"
    segs = []
    for i, base in enumerate((0, 5, 10)):
        recs = [Record(o, T0 + 1000 * o, b"k%d" % o, b"v%d" % o) for o in range(base, base + 5)]
        segs.append((base, [encode_batch(recs, partition_leader_epoch=i)]))
    write_partition(part, segs)
    (part / "00000000000000000005.snapshot").write_bytes(encode_snapshot([]))
    (part / "leader-epoch-checkpoint").write_bytes(
        encode_leader_epoch_checkpoint([EpochEntry(i, b) for i, b in enumerate((0, 5, 10))])
    )
    write_checkpoints(logdir, replication_offset_checkpoint={("r", 0): 15})
    (logdir / "meta.properties").write_text("version=0\nbroker.id=0\n")
    return logdir


NOW = str(T0 + 3_600_000)
CASES: dict[str, tuple[Callable[[Path], Path], Callable[[Path], list[str]]]] = {
    "convert-in-place": (
        _convert_setup,
        lambda d: ["convert-format", str(d), "--in-place", "--compression", "lz4"],
    ),
    "compact": (
        _compact_setup,
        lambda d: ["compact", "--assume-defaults", str(d / "gen-0"), "--now", NOW],
    ),
    "retention-sweep": (
        _retention_setup,
        # everything is past retention: a roll, every segment renamed and removed, the
        # snapshot, the leader epochs
        lambda d: ["retention-sweep", "--assume-defaults", str(d), "--now", str(T0 + 30 * DAY)],
    ),
}


def _logs(logdir: Path) -> dict[str, dict[str, bytes]]:
    """Per partition, the bytes of each .log."""
    return {
        p.name: {f.name: f.read_bytes() for f in sorted(p.glob("*.log"))}
        for p in sorted(logdir.iterdir())
        if p.is_dir()
    }


def _data(logdir: Path) -> dict[str, list[tuple]]:
    return {p.name: kp_records(p) for p in sorted(logdir.iterdir()) if p.is_dir()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_crash_after_every_file_operation_then_rerun(tmp_path: Path, case: str) -> None:
    setup, args = CASES[case]
    clean = setup(tmp_path / "clean")
    old_data = _data(clean)
    code = run_crashing(args(clean), tmp_path, None)
    assert code == 0
    new_tree = tree(clean)
    new_data = _data(clean)
    old_logs = _logs(setup(tmp_path / "old"))
    new_logs = _logs(clean)
    assert new_data != old_data or case == "convert-in-place"
    # how many operations a complete run takes: crash after each of them
    from klogtool.log import atomic

    counter: list[int] = []
    real_init = atomic.FileOps.__init__

    def counting_init(self, *a, **kw):  # type: ignore[no-untyped-def]
        real_init(self, *a, **kw)
        counter.append(0)
        counter_ops.append(self)

    counter_ops: list[FileOps] = []
    again = setup(tmp_path / "count")
    atomic.FileOps.__init__ = counting_init  # type: ignore[method-assign]
    try:
        assert run(*args(again), cwd=tmp_path)[0] == 0
    finally:
        atomic.FileOps.__init__ = real_init  # type: ignore[method-assign]
    total = sum(ops.count for ops in counter_ops)
    assert total > 10
    outcomes = set()
    for n in range(1, total + 1):
        root = tmp_path / f"n{n}"
        logdir = setup(root)
        assert run_crashing(args(logdir), root, n) == KILLED, n
        # what a broker starting now would see: its loader completes or rolls back the swap
        loaded = root / "loaded"
        shutil.copytree(logdir, loaded, symlinks=True)
        for p in loaded.iterdir():
            if p.is_dir():
                complete_interrupted(FileOps(), p)
        data = _data(loaded)
        if case == "retention-sweep":
            # a prefix of the segments is gone, the rest is intact
            for name, recs in data.items():
                assert recs == old_data[name][len(old_data[name]) - len(recs) :], n
        else:
            assert data in (old_data, new_data), n
            # each partition is swapped as a whole: all of its segments old, or all new
            for name, logs in _logs(loaded).items():
                assert logs in (old_logs[name], new_logs[name]), (n, name)
                outcomes.add("old" if logs == old_logs[name] else "new")
        # the loader deletes the indexes of a segment whose swap it completes; a missing
        # .index makes the broker recover that segment, which rebuilds all three indexes
        # (and so the .txnindex entries of its aborted transactions)
        assert_verifies(
            loaded,
            allow=(
                "index-missing",
                "timeindex-missing",
                "orphan-index",
                "txnindex-missing-abort",
                "leftover-file",  # a checkpoint's temporary file in the log dir
            ),
        )
        # and a re-run finishes the job: the same result as an uninterrupted run
        code = run_crashing(args(logdir), root, None)
        assert code == 0, n
        assert _data(logdir) == new_data, n
        assert_verifies(logdir)
        if case != "compact":  # a compaction re-run may clean a second time (markers)
            assert tree(logdir) == new_tree, n
        assert not [f for f in tree(logdir) if f.endswith((".cleaned", ".swap", ".deleted"))]
        shutil.rmtree(root)
    if case != "retention-sweep":
        assert outcomes == {"old", "new"}


# -- the broker's lock ---------------------------------------------------------------------------
@pytest.fixture
def locked_logdir(tmp_path: Path):
    logdir = copy_logdir(tmp_path, "v2-none-0")
    with lock_held_by_another_process(logdir):
        yield logdir


@pytest.mark.parametrize(
    "args",
    [
        ["convert-format", "{p}", "--in-place", "--compression", "gzip"],
        ["convert-format", "{p}", "{out}"],
        ["compact", "--assume-defaults", "{p}", "--now", NOW],
        # (a dry run is allowed, with a warning: tests/hosts/test_running_broker.py)
        ["retention-sweep", "--assume-defaults", "{p}", "--now", str(T0 + 30 * DAY)],
    ],
    ids=["convert-in-place", "convert-dest", "compact", "retention"],
)
def test_broker_lock_is_refused(locked_logdir: Path, tmp_path: Path, args: list[str]) -> None:
    part = locked_logdir / "v2-none-0"
    before = tree(locked_logdir)
    argv = [a.format(p=part, out=tmp_path / "out") for a in args]
    code, _out, err = run(*argv, cwd=tmp_path)
    assert code == 4, err
    assert "(broker-lock-held)" in err and "--force" in err
    assert tree(locked_logdir) == before
    assert not (tmp_path / "out").exists()
    if "--dry-run" not in argv and "{out}" not in args:
        code, _out, err = run(*argv, "--force", cwd=tmp_path)
        assert code == 0, err


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["compact", "--assume-defaults", "{missing}"],
        ["retention-sweep", "--assume-defaults", "{missing}"],
        ["compact", "--assume-defaults", "{file}"],
        ["retention-sweep", "--assume-defaults", "{tmp}", "--now", "yesterday"],
        ["retention-sweep", "--assume-defaults", "{tmp}", "--config", "x=retention.ms=soon"],
        ["retention-sweep", "--assume-defaults", "{tmp}", "--config", "x=no.such.config=1"],
        ["compact", "--assume-defaults", "{corrupt}", "--now", NOW, "--high-watermark", "log-end"],
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str]) -> None:
    from support.paths import CORRUPT

    corrupt = copy_logdir(tmp_path / "c") / "v2-none-0"
    shutil.copy2(CORRUPT / "crc-flip-0" / "00000000000000000000.log", corrupt)
    (tmp_path / "logdir").mkdir(exist_ok=True)
    write_partition(tmp_path / "logdir" / "x-0", [(0, [])])
    argv = [
        a.format(
            missing=tmp_path / "nope",
            file=LOGDIR / "v2-none-0" / "00000000000000000000.log",
            tmp=tmp_path / "logdir",
            corrupt=corrupt,
        )
        for a in args
    ]
    code, out, err = run(*argv, cwd=tmp_path)
    assert code in (2, 3), (code, err)
    assert "Traceback" not in err and "internal error" not in err
    if code == 3:
        assert err.startswith("klogtool: error: ") and len(err.strip().splitlines()) <= 2


LONG_MIN = -(1 << 63)


def _far_timestamps(root: Path, *, v1: bool) -> Path:
    """A partition whose records' timestamps are more than 2^63 - 1 ms apart (or from now), and a
    tombstone that makes compact rewrite their batch."""
    part = root / "logdir" / "t-0"
    if v1:
        recs = [Record(0, LONG_MIN + 1, b"a", b"x"), Record(1, (1 << 63) - 1, b"b", b"y")]
        write_partition(part, [(0, [encode_wrapper(recs, magic=1, compression=codecs.GZIP)])])
        return part
    old = [Record(i, T0 + i, b"k%d" % (i % 3), b"v%d" % i) for i in range(3)]
    far = [Record(i, LONG_MIN + i, b"k%d" % (i % 3), None if i == 4 else b"v") for i in (3, 4, 5)]
    write_partition(part, [(0, [encode_batch(old)]), (3, [encode_batch(far)]), (6, [])])
    write_checkpoints(root / "logdir", replication_offset_checkpoint={("t", 0): 6})
    return part


@pytest.mark.parametrize(
    "args",
    [
        ["convert-format", "--in-place"],
        ["compact", "--assume-defaults", "--now", NOW, "--high-watermark", "log-end"],
        # the dry run cleans in memory, so it foresees the refusal (it said it would compact)
        ["compact", "--assume-defaults", "--now", NOW, "--high-watermark", "log-end", "--dry-run"],
        ["convert-format", "--in-place", "--dry-run"],
    ],
)
def test_a_batch_that_cannot_be_written_is_one_line_and_changes_nothing(
    tmp_path: Path, args: list[str]
) -> None:
    """A rewrite whose record timestamps are too far from their new batch's base timestamp for
    a 64-bit delta (Kafka's encoder wraps it): the unencodable code, the segment and its batch,
    no file changed (it was an internal error)."""
    part = _far_timestamps(tmp_path, v1=args[0] == "convert-format")
    before = tree(part)
    code, _out, err = run(args[0], str(part), *args[1:], cwd=tmp_path)
    assert code == 3, err
    assert err.startswith("klogtool: error: ") and len(err.strip().splitlines()) == 1
    seg = "00000000000000000000.log:0:" if args[0] == "convert-format" else "03.log:0:"
    assert seg in err and "(unencodable)" in err and "2^63 - 1 ms" in err
    assert tree(part) == before


def test_a_delete_retention_past_the_largest_timestamp_keeps_the_tombstones(
    tmp_path: Path,
) -> None:
    """now + delete.retention.ms past 2^63 - 1: the horizon is the largest timestamp (Kafka's
    sum wraps around to a horizon long past, which drops the tombstones at the next clean; it
    was an internal error here)."""
    part = tmp_path / "logdir" / "t-0"
    recs = [Record(i, T0 + i, b"k%d" % (i % 3), None if i == 4 else b"v") for i in range(6)]
    write_partition(part, [(0, [encode_batch(recs[:3])]), (3, [encode_batch(recs[3:])]), (6, [])])
    write_checkpoints(tmp_path / "logdir", replication_offset_checkpoint={("t", 0): 6})
    argv = ["compact", "--assume-defaults", str(part), "--now", NOW, "--high-watermark", "log-end"]
    code, _out, err = run(*argv, "--delete-retention-ms", str((1 << 63) - 1), cwd=tmp_path)
    assert code == 0, err
    horizons = [b.delete_horizon_ms for b in kl_batches(part) if b.count]
    assert horizons == [(1 << 63) - 1]
    code, _out, err = run(*argv, "--delete-retention-ms", str((1 << 63) - 1), cwd=tmp_path)
    assert code == 0, err
    assert None in [r.value for b in kl_batches(part) for r in b.records()]  # still there


def test_man_pages_cover_the_new_commands() -> None:
    man = Path(__file__).resolve().parent.parent / "man"
    for cmd in ("convert-format", "compact", "retention-sweep"):
        assert (man / f"klogtool-{cmd}.1").is_file()


def test_compact_text_describes_its_groups_of_segments(tmp_path: Path) -> None:
    """The text printed the groups as a Python list ('[[0, 16, 31, 47, 63]]'): now how many
    groups, each one's first and last segment and its size. Fails before the change."""
    g = generate(seed=21, codec=codecs.GZIP, segments=6, batches_per_segment=5)
    part = materialise(g, tmp_path / "logdir")
    argv = [
        "compact",
        "--assume-defaults",
        "--dry-run",
        str(part),
        "--now",
        NOW,
        "--high-watermark",
        "log-end",
    ]
    code, out, err = run(*argv, cwd=tmp_path)
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if "keys mapped" in x]
    assert "[" not in line
    assert line.endswith(
        "each group of segments becomes one cleaned segment: 1 group: 0..63 (5 segments)"
    )
    code, out, err = run(*argv, "--segment-bytes", "600", cwd=tmp_path)  # one segment each
    (line,) = [x for x in out.splitlines() if "keys mapped" in x]
    assert line.endswith(
        ": 5 groups: 0 (1 segment), 16 (1 segment), 31 (1 segment), 47 (1 segment), 63 (1 segment)"
    )

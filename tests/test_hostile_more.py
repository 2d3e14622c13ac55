"""More hostile input (issue 43): whoever can write a file into a log dir, produce to a
topic, write a bucket's objects or kill a process gets a one-line answer with a documented
exit code, never an internal error (exit 70), a hang, or text that is not what it says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.cli import run
from support.paths import LOGDIR
from support.s3 import S3Server, s3_server  # noqa: F401  (the fixture)

pytestmark = pytest.mark.usefixtures("no_fsync")

HUGE = "9" * 4400  # past Python's int-string limit (4,300 digits): int() raises
ZEROS = "0" * 4400 + "5"  # Java's parseLong takes it: 5


def _huge_checkpoints(root: Path, which: str) -> Path:
    """A log dir whose checkpoint ``which`` holds a number of 4,400 digits."""
    logdir = root / "logdir"
    shutil.copytree(LOGDIR, logdir)
    entry = {
        "leader-epoch-checkpoint": f"0\n1\n1 {HUGE}\n",
        "partition.metadata": f"version: {HUGE}\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n",
    }
    if which in entry:
        (logdir / "v2-none-0" / which).write_text(entry[which])
    else:
        (logdir / which).write_text(f"0\n1\nv2-none 0 {HUGE}\n")
    return logdir


CHECKPOINTS = [
    "leader-epoch-checkpoint",
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
    "partition.metadata",
]
COMMANDS = [
    ["verify"],
    ["dump-segments"],
    ["stats"],
    ["describe", "--epochs"],
    ["explain"],
    ["diff", "{part}"],
    ["truncate-recovery"],
    ["retention-sweep", "--assume-defaults"],
    ["compact", "--assume-defaults"],
]


@pytest.mark.parametrize("which", CHECKPOINTS)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_checkpoint_number_of_thousands_of_digits_is_refused_in_one_line(
    tmp_path: Path, which: str, command: list[str]
) -> None:
    """Such a number was checked against a digits pattern, then converted unguarded: every
    command ended with an internal error (exit 70) on a 4.4 KB file."""
    part = _huge_checkpoints(tmp_path, which) / "v2-none-0"
    argv = [a.replace("{part}", str(part)) for a in command]
    code, _out, err = run(*argv, str(part), cwd=tmp_path)
    assert code in (0, 1, 3), err
    assert "internal error" not in err and "Traceback" not in err
    assert all(len(line) < 600 for line in err.splitlines()), err


def test_leading_zeros_are_a_number_as_java_reads_them() -> None:
    from klogtool.formats import checkpoint

    (entry,) = checkpoint.parse_leader_epoch_checkpoint(f"0\n1\n1 {ZEROS}\n".encode())
    assert (entry.epoch, entry.start_offset) == (1, 5)
    with pytest.raises(checkpoint.FormatError, match=r"\(4,402 characters\)"):
        checkpoint.parse_leader_epoch_checkpoint(f"0\n1\n1 {HUGE}\n".encode())


# -- names with control characters ----------------------------------------------------------------
TITLE = "\x1b]0;pwned\x07\x1b[2J\x9b31m"  # retitle the window, clear the screen, colour
EVIL = TITLE + "\r\nklogtool verify: OK"  # and forge a line


def _raw_controls(text: str) -> list[str]:
    """Control characters a terminal would act on (all but line ends and tabs)."""
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]


def _evil_log_dir(root: Path) -> Path:
    """A log dir whose name and one partition's topic carry terminal control sequences, one
    partition with a torn tail (so verify names it in a finding)."""
    logdir = root / f"logs{EVIL}"
    shutil.copytree(LOGDIR, logdir)
    evil_part = logdir / f"ev{TITLE}il-0"  # no line break: a partition name is one line
    (logdir / "v2-gzip-0").rename(evil_part)
    log = evil_part / "00000000000000000017.log"
    log.write_bytes(log.read_bytes()[:-7])  # a torn tail
    return logdir


@pytest.mark.parametrize(
    "command",
    [
        ["verify"],
        ["describe"],
        ["describe", "--epochs"],
        ["stats"],
        ["find", "--key", "key-1"],
        ["dump-segments"],
        ["transactions"],
        ["groups"],
        ["explain", "{part}"],
        ["verify", "{missing}"],
    ],
    ids=lambda c: "-".join(c),
)
def test_no_name_drives_the_terminal(tmp_path: Path, command: list[str]) -> None:
    """verify's findings, describe's and stats' tables and find's record lines printed a
    directory's name raw (ESC sequences that retitle the window or clear the screen, CR/LF
    that forge a line): every name shown is escaped by one rule."""
    logdir = _evil_log_dir(tmp_path)
    part = logdir / f"ev{TITLE}il-0"
    places = {"{part}": str(part), "{missing}": str(logdir / f"no{EVIL}such")}
    argv = [places.get(a, a) for a in command]
    if not any(a in places for a in command):
        argv.append(str(logdir))
    code, out, err = run(*argv, cwd=tmp_path)
    assert code in (0, 1, 3), err
    assert _raw_controls(out) == [] and _raw_controls(err) == [], (out, err)
    if command[0] != "groups":  # it names groups, not directories
        assert "\\x1b]0;pwned\\x07" in out + err


@pytest.mark.parametrize("command", [["verify"], ["describe"], ["stats"]], ids=lambda c: c[0])
def test_no_object_key_drives_the_terminal(
    tmp_path: Path,
    s3_server: S3Server,  # noqa: F811
    command: list[str],
) -> None:
    pytest.importorskip("pyarrow.fs", reason="object storage needs pyarrow")
    logdir = _evil_log_dir(tmp_path)
    s3_server.reset()  # (each engine's run uploads its own prefix: no listing of another's)
    uri = s3_server.upload(logdir, f"evil-{tmp_path.name}/logs{TITLE}")
    code, out, err = run(*command, uri, cwd=tmp_path)
    assert code in (0, 1), err
    assert _raw_controls(out) == [] and _raw_controls(err) == [], (out, err)
    assert "\\x1b]0;pwned\\x07" in out + err


# -- a killed export's temporaries ----------------------------------------------------------------
def _stale_temporary(root: Path, name: str, token: str) -> Path:
    tmp = root / f".{name}.klogtool-tmp-{token}"
    (tmp / "topic=t" / "partition=0").mkdir(parents=True)
    (tmp / "topic=t" / "partition=0" / "part-00000.json").write_bytes(b"x" * 1000)
    return tmp


def test_an_export_removes_what_a_killed_export_of_its_dest_left(tmp_path: Path) -> None:
    """A local export killed mid-run left its partial output in a hidden temporary beside
    DEST that no later run removed (a new random name each time): the next export of the
    same DEST removes it and says so; a temporary an export still running holds is kept."""
    import fcntl
    import os

    pytest.importorskip("pyarrow")
    stale = _stale_temporary(tmp_path, "out", "0badc0de")
    old = tmp_path / ".out.klogtool-old-00c0ffee"
    old.mkdir()
    running = _stale_temporary(tmp_path, "out", "feedface")
    other = _stale_temporary(tmp_path, "elsewhere", "0badc0de")  # another DEST's
    fd = os.open(f"{running}.lock", os.O_WRONLY | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as the export writing it holds it
    try:
        code, _out, err = run(
            "export", "--to", "jsonl", str(tmp_path / "out"), str(LOGDIR / "v2-none-0")
        )
    finally:
        os.close(fd)
    assert code == 0, err
    assert not stale.exists() and not old.exists()
    assert running.is_dir() and other.is_dir()
    assert err.count("what an interrupted export of") == 2, err
    assert f"removed {stale} (1,000 bytes)" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["out", running.name, f"{running.name}.lock", other.name]
    )


def test_a_killed_export_is_cleaned_up_by_the_next(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    pytest.importorskip("pyarrow")
    from support.rewrite import write_partition

    from klogtool.formats.batch import Record
    from klogtool.formats.v2 import encode_batch

    part = tmp_path / "data" / "big-0"
    batches = [
        encode_batch([Record(b * 500 + i, 0, b"k%d" % i, b"v" * 200) for i in range(500)])
        for b in range(300)
    ]
    write_partition(part, [(0, batches)])
    dest = tmp_path / "out"
    argv = [sys.executable, "-m", "klogtool", "export", "--jobs", "1", "--to", "parquet"]
    argv += [str(dest), str(part)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not list(tmp_path.glob(".out.klogtool-tmp-*[0-9a-f]")) and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = list(tmp_path.glob(".out.klogtool-tmp-*[0-9a-f]"))
    assert left, "the export ended before it was killed: nothing to clean"
    code, _out, err = run("export", "--to", "parquet", str(dest), str(part))
    assert code == 0, err
    assert not any(p.exists() for p in left)
    assert list(tmp_path.glob(".out.*")) == [], list(tmp_path.iterdir())
    assert f"removed {left[0]}" in err


# -- a --jobs worker killed -----------------------------------------------------------------------
POOLS = [
    (["stats", "--jobs", "2"], "klogtool.log.read.stats", "partition_stats"),
    (["find", "--key", "k", "--jobs", "2"], "klogtool.log.read.finder", "_search_to_file"),
    (
        ["export", "--jobs", "2", "--to", "jsonl", "{out}"],
        "klogtool.log.export.exporter",
        "write_split_counted",
    ),  # noqa: E501
    (["diff", "--jobs", "2", "{logdir}"], "klogtool.log.read.diff", "diff_partition"),
    (["verify", "--jobs", "2"], "klogtool.log.check.logdir_checks", "_partition_job"),
    (["rebuild-index", "--check", "--jobs", "2"], "klogtool.log.repair.rebuild", "run_scan_task"),
]


@pytest.mark.parametrize(
    "command,module,name", POOLS, ids=lambda c: c[0] if isinstance(c, list) else ""
)
def test_a_worker_killed_is_one_line_naming_what_was_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], module: str, name: str
) -> None:
    """A worker killed by SIGKILL (the OOM killer picks the largest process) ended export's,
    diff's and the other pools' commands with "internal error: BrokenProcessPool" (exit 70):
    one line saying a worker died and which part was lost, exit 3."""
    import importlib
    import os
    import signal

    if command[0] == "export":
        pytest.importorskip("pyarrow")
    logdir = tmp_path / "logdir"
    shutil.copytree(LOGDIR, logdir)
    target = importlib.import_module(module)
    real = getattr(target, name)
    parent = os.getpid()

    def dies(*args: object, **kwargs: object) -> object:
        if os.getpid() != parent:  # in a worker: killed, as by the OOM killer
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)

    dies.__module__, dies.__qualname__ = module, name  # pickled by reference, as the real one
    monkeypatch.setattr(target, name, dies)
    monkeypatch.setattr("klogtool.log.repair.parallel.POOL_MIN_BYTES", 0)
    places = {"{out}": str(tmp_path / "out"), "{logdir}": str(logdir)}
    code, _out, err = run(*[places.get(a, a) for a in command], str(logdir), cwd=tmp_path)
    assert code == 3, err
    last = err.strip().splitlines()[-1]
    assert "a worker process died" in last and last.endswith("(worker-died)"), err
    assert "internal error" not in err

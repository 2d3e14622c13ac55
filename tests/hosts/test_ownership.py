"""Run as root on the broker user's files (issue 23): every file klogtool creates or replaces
keeps the owner, group and mode of the file it replaces (a new file: those of its siblings or
its directory). A segment that came back root:root 0644 could not be appended to by the broker,
and made the data world-readable."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from support.cli import run
from support.paths import LOGDIR
from support.repair import copy_scenario

KAFKA_UID = KAFKA_GID = 4242  # a user the machine need not know: ownership is numbers

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="giving files to another user needs root (as on a broker host)"
)


def _broker_owned(root: Path) -> Path:
    """A log dir whose every file and directory is the broker user's: files 0640, dirs 0750."""
    logdir = root / "kafka-logs-1"
    logdir.mkdir()
    for name in ("meta.properties", "replication-offset-checkpoint", "cleaner-offset-checkpoint"):
        shutil.copy(LOGDIR / name, logdir)
    for p in ("v2-none-0", "v1-gzip-0"):
        shutil.copytree(LOGDIR / p, logdir / p)
    copy_scenario("torn-tail", logdir)
    for p in [logdir, *logdir.rglob("*")]:
        os.chown(p, KAFKA_UID, KAFKA_GID)
        os.chmod(p, 0o750 if p.is_dir() else 0o640)
    return logdir


def _foreign(logdir: Path) -> list[str]:
    """Every entry that is not the broker user's with the broker's modes."""
    bad = []
    for p in [logdir, *logdir.rglob("*")]:
        st = os.lstat(p)
        want = 0o750 if stat.S_ISDIR(st.st_mode) else 0o640
        if (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) != (KAFKA_UID, KAFKA_GID, want):
            bad.append(f"{p.relative_to(logdir)} {st.st_uid}:{st.st_gid} {oct(st.st_mode)}")
    return bad


@pytest.mark.parametrize(
    "args",
    [
        ["truncate-recovery", "{logdir}"],
        ["rebuild-index", "{logdir}"],
        ["convert-format", "--in-place", "--to-magic", "2", "{logdir}/v1-gzip-0"],
        ["compact", "--high-watermark", "log-end", "--min-cleanable-dirty-ratio", "0", "{logdir}"],
        ["retention-sweep", "--retention-ms", "1", "--high-watermark", "log-end", "{logdir}"],
    ],
    ids=lambda a: a[0],
)
def test_a_rewrite_keeps_the_broker_users_files(tmp_path: Path, args: list[str]) -> None:
    logdir = _broker_owned(tmp_path)
    for p in logdir.glob("*/*.index"):
        p.unlink()  # rebuild-index and truncate-recovery then create files too
    argv = [a.replace("{logdir}", str(logdir)) for a in args]
    code, _out, err = run(*argv, cwd=tmp_path)
    assert code in (0, 1), err
    assert _foreign(logdir) == []


def test_restore_keeps_the_broker_users_files(tmp_path: Path) -> None:
    logdir = _broker_owned(tmp_path)
    code, _out, err = run("truncate-recovery", str(logdir / "torn-tail-0"), cwd=tmp_path)
    assert code == 0, err
    code, _out, err = run("truncate-recovery", "--restore", str(logdir / "torn-tail-0"))
    assert code == 0, err
    assert _foreign(logdir) == []


@pytest.mark.parametrize("command", ["rebuild-index", "truncate-recovery"])
def test_a_first_index_takes_the_segments_mode_not_the_directorys(
    tmp_path: Path, command: str
) -> None:
    """A partition with no index file at all: the new ones take the owner and mode of its
    segments (0600 here), not its directory's (0755 less execute: 0644, readable by all)."""
    logdir = _broker_owned(tmp_path)
    part = logdir / "v2-none-0"
    for p in part.iterdir():
        if p.suffix in (".index", ".timeindex"):
            p.unlink()
        else:
            os.chmod(p, 0o600)
    os.chmod(part, 0o755)
    code, _out, err = run(command, str(part), cwd=tmp_path)
    assert code == 0, err
    made = sorted(part.glob("*index"))
    assert made, "no index was written"
    for p in made:
        st = os.lstat(p)
        assert (st.st_uid, st.st_gid, oct(stat.S_IMODE(st.st_mode))) == (
            KAFKA_UID,
            KAFKA_GID,
            oct(0o600),
        ), p

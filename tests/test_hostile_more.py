"""More hostile input (issue 43): whoever can write a file into a log dir, produce to a
topic, write a bucket's objects or kill a process gets a one-line answer with a documented
exit code, never an internal error (exit 70), a hang, or text that is not what it says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.cli import run
from support.paths import LOGDIR

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
